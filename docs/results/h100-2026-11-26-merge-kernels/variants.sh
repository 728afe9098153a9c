#!/usr/bin/env bash
# Two builds taking turns twice (A B B A): `head` (merge blocks compiled for five per
# multiprocessor) and `m6` (six per multiprocessor, 40 registers a thread), device-resident
# u32, u32 pairs and u64 at 2^20..2^28 with CUB in the same runs; then the per-pass profile
# of m6 (`cuda_merge_profile`). Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/device.txt" 2>&1
for v in head m6 m6 head; do
    echo "== $v" >> "$out/variants.txt"
    timeout 130 .device/bitonic-$v bench --compare --cases u32,kv,u64 --sizes 2^20,2^22,2^24,2^26,2^28 \
        --roundtrip-runs 1 --skip pocl,skylake,epyc,xeon,torch,rayon,cpu,rust,opencl,oblivious,radix \
        --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/variants.txt" 2>&1
    echo "exit $?" >> "$out/variants.txt"
done
grep -E "^==|^ *2\^[0-9]+ +|^exit" "$out/variants.txt" | sed 's/  */ /g' | cut -c1-80
timeout 100 .device/unit-m6 --ignored --nocapture cuda_merge_profile > "$out/profile-m6.txt" 2>&1
grep -E "tile sort|in all" "$out/profile-m6.txt"
