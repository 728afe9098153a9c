#!/usr/bin/env bash
# Fault injection on NVIDIA's OpenCL alone (both modes: every driver call of the host-slice
# sorts failed in turn, change 53's merge kernels among them), and how long the suite's CUDA
# trial of random u32 keys takes under compute-sanitizer memcheck with its lengths up to
# 3,000,001 keys against up to 2^16 + 1 (so that the long, merge-path lengths are seen to
# run under it). Binaries from scripts/build-device.sh. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt"
(time timeout 420 env BITONIC_REQUIRE=cuda,opencl,cpu .device/faults opencl1) > "$out/opencl-faults.log" 2>&1
echo "exit $?" >> "$out/opencl-faults.log"
grep -E "^test result|FAILED|panicked|^real|^exit" "$out/opencl-faults.log" > "$out/opencl-faults.txt"
for max in 3000001 65537; do
    echo "== BITONIC_TEST_MAX_N=$max" >> "$out/memcheck-lengths.txt"
    (time timeout 200 env BITONIC_TEST_BACKENDS=cuda BITONIC_TEST_MAX_N=$max compute-sanitizer --tool memcheck \
        .device/suite cuda0::u32::random::asc::keys) >> "$out/memcheck-lengths.txt" 2>&1
done
cat "$out/opencl-faults.txt"
grep -E "^==|test result|ERROR SUMMARY|^real" "$out/memcheck-lengths.txt"
