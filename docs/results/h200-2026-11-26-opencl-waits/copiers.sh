#!/usr/bin/env bash
# Host round trips of u32 keys on CUDA and NVIDIA's OpenCL with 16, 12 and 8 rayon threads
# (the staged path copies on all but one of them), twice each: whether OpenCL's Vec round
# trips, 1.3-1.5x CUDA's where pinned ones are 1.05-1.2x, lose to host threads competing with
# the driver's. Binary: .device/bitonic. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nproc > "$out/copiers-host.txt"
for threads in 16 12 8 16 12 8; do
    echo "== RAYON_NUM_THREADS=$threads" >> "$out/copiers.txt"
    RAYON_NUM_THREADS=$threads timeout 100 .device/bitonic bench --compare --cases u32 --sizes 2^24,2^26,2^28 \
        --skip oblivious,cub,torch,rust,pocl,skylake,epyc,xeon --runs 3 --roundtrip-runs 5 \
        --csv /tmp/c.csv --plot /tmp/c.svg >> "$out/copiers.txt" 2>&1
    echo "exit $?" >> "$out/copiers.txt"
done
grep -E "^==|^exit|^ *2\^[0-9]+ +bitonic" "$out/copiers.txt" | sed 's/  */ /g'
