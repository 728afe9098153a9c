#!/usr/bin/env bash
# The build before (.device/bitonic-base: OpenCL merge kernels of one row carrying the rows'
# arithmetic) and the build whose one-row OpenCL merge kernels take rows = 1 as a constant
# (.device/bitonic) taking turns A B B A: u32 keys, u32 pairs and u64 keys from 2^20 to
# 2^28, NVIDIA's OpenCL and our CUDA, device-resident medians of 15 after warm-up, random
# keys. Then the suite, the device buffers and the OpenCL unit tests of the new build.
# Binaries from scripts/build-device.sh. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt"
skip=pocl,skylake,epyc,xeon,oblivious,torch,rayon,cpu,rust,cub
for v in base new new base; do
    bin=.device/bitonic; [ $v = base ] && bin=.device/bitonic-base
    echo "== $v" >> "$out/variants.txt"
    timeout 100 "$bin" bench --compare --cases u32,kv,u64 --sizes 2^20,2^22,2^24,2^26,2^28 \
        --skip "$skip" --runs 15 --roundtrip-runs 1 \
        --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/variants.txt" 2>&1
    echo "exit $?" >> "$out/variants.txt"
done
run() {
    local name=$1 limit=$2; shift 2
    local start=$SECONDS
    timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@" > "/tmp/$name.log" 2>&1
    local status=$?
    { echo "== $name: $* (exit $status, $(( SECONDS - start )) s)"
      grep -hE "^test result|FAILED|panicked" "/tmp/$name.log" | cut -c1-300 | head -30
      [ $status -eq 0 ] || tail -20 "/tmp/$name.log" | cut -c1-300; } >> "$out/checks.txt"
}
run suite 150 .device/suite
run device_buffers 40 .device/device_buffers
run unit-opencl 120 .device/unit --ignored opencl::
grep -E "^==|^exit|^ *2\^[0-9]+ +bitonic" "$out/variants.txt" | sed 's/  */ /g'
cat "$out/checks.txt"
