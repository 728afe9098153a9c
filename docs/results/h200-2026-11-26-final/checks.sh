#!/usr/bin/env bash
# Checks of the final tree of 2026-11-26 (warp sorts, launches naming their kernel): the
# suite and the properties on every backend, the merge kernels' test and gpu_matches_cpu,
# device buffers, pinned buffers; then u32 keys from 2^5 to 2^12 with CUB in the same run.
# Binaries from scripts/build-device.sh. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version --format=csv > "$out/checks.txt" 2>&1
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/checks.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/checks.txt"
    grep -hE "^test result|FAILED|panicked|^real" "/tmp/$name.log" | cut -c1-300 | head -30 >> "$out/checks.txt"
    [ $status -eq 0 ] || tail -30 "/tmp/$name.log" | cut -c1-300 >> "$out/checks.txt"
}
run suite 150 .device/suite
run properties 120 .device/properties
run unit-gpu 90 .device/unit --ignored merge_kernels_are_stable_merges gpu_matches_cpu
run device_buffers 40 .device/device_buffers
run pinned 40 .device/pinned
timeout 90 .device/bitonic bench --compare --cases u32 --sizes 2^5,2^8,2^10,1000,2^12,2^20 \
    --skip opencl,oblivious,torch,rayon,cpu,rust,pocl,skylake,epyc,xeon --runs 15 --roundtrip-runs 1 \
    --csv "$out/small.csv" --plot "$out/small.svg" > "$out/small.txt" 2>&1
echo "exit $?" >> "$out/small.txt"
cat "$out/checks.txt"
grep -E "^exit|^ *(2\^[0-9]+|1000) +(bitonic|cub)" "$out/small.txt" | sed 's/  */ /g'
