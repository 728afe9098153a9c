#!/usr/bin/env bash
# Merge path above the tile (CUDA, keys alone): the merge kernels' own test, then
# `bitonic bench --compare` on random u32 keys with CUB, torch and the oblivious network in
# the same run, u64 keys, and the adversarial patterns at 2^24 and 2^28. Binaries from
# scripts/build-device.sh; outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version --format=csv > "$out/gpu.txt" 2>&1
timeout 120 .device/unit --ignored merge_kernels_are_stable_merges gpu_matches_cpu > "$out/unit-gpu.txt" 2>&1
echo "unit-gpu exit $?" >> "$out/unit-gpu.txt"
grep -E "^test |test result" "$out/unit-gpu.txt"
compare() { local name=$1 limit=$2; shift 2
    timeout "$limit" .device/bitonic bench --compare --skip pocl,skylake,epyc,xeon,opencl \
        --roundtrip-runs 3 --csv "$out/$name.csv" --plot "$out/$name.svg" "$@" > "$out/$name.txt" 2>&1
    echo "$name exit $?" >> "$out/$name.txt"
    grep -E "^ *2\^[0-9]+ " "$out/$name.txt" | head -80; tail -2 "$out/$name.txt"; }
compare u32 200 --cases u32 --sizes 2^10,2^12,2^14,2^16,2^18,2^20,2^22,2^24,2^26,2^28
compare u64 120 --cases u64 --sizes 2^20,2^24,2^26
for p in sorted reversed few organ; do
    compare "u32-$p" 60 --cases u32 --sizes 2^24,2^28 --pattern "$p" --runs 7
done
