#!/usr/bin/env bash
# Checks of the tree with sorting while uploading on both GPU backends: the OpenCL unit tests
# on the first OpenCL GPU (sorts_while_uploading_as_after among them), bit-identical results
# to the CPU backend and the merge kernels' test on CUDA, fault injection on NVIDIA OpenCL and
# on CUDA, threads, pinned buffers, device buffers and the suite on every backend. Summary in
# $OUT/checks.txt, full logs in /tmp. Binaries from scripts/build-device.sh.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/checks.txt" 2>&1
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/checks.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/checks.txt"
    grep -hE "^test result|FAILED|panicked|^real|SKIPPED" "/tmp/$name.log" | cut -c1-300 | head -30 >> "$out/checks.txt"
    [ $status -eq 0 ] || tail -30 "/tmp/$name.log" | cut -c1-300 >> "$out/checks.txt"
}
run unit-opencl 90 .device/unit --ignored opencl::
run gpu-tests 60 .device/unit --ignored gpu_matches_cpu merge_kernels_are_stable_merges
run faults-opencl1 200 .device/faults opencl1
run faults-cuda 140 .device/faults cuda
run threads 30 .device/threads
run pinned 40 .device/pinned
run device_buffers 30 .device/device_buffers
run suite 150 .device/suite
cat "$out/checks.txt"
