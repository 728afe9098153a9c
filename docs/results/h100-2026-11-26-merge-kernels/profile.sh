#!/usr/bin/env bash
# Per-launch device times of merge-path sorts (the tile sort, then each merge pass) for two
# builds: `prof-head` (tiles of at most 2^14, one smaller where the passes would be odd) and
# `prof-s15` (u32 keys: tiles up to 2^15, one block of them per multiprocessor), from the
# unit test `cuda_merge_profile`; then CUB merge sort's own kernels under Nsight Compute
# (device time of each launch) at 2^24 and 2^28 u32 keys. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/device.txt" 2>&1
for round in 1 2; do
    for v in prof-head prof-s15; do
        echo "== $v round $round" >> "$out/profile.txt"
        timeout 120 .device/unit-$v --ignored --nocapture cuda_merge_profile >> "$out/profile.txt" 2>&1
        echo "exit $?" >> "$out/profile.txt"
    done
done
grep -E "^==|tile sort|in all|^exit" "$out/profile.txt"
for s in 2^24 2^28; do
    echo "== CUB merge sort $s" >> "$out/cub-ncu.txt"
    timeout 150 ncu --clock-control none --target-processes all -k regex:DeviceMergeSort \
        --metrics gpu__time_duration.sum --launch-count 40 \
        .device/bitonic bench --compare --cases u32 --sizes $s --runs 1 --warmup 0 --roundtrip-runs 1 \
        --skip bitonic,pocl,skylake,epyc,xeon,torch,rayon,cpu,rust,opencl,radix \
        --csv /tmp/c.csv --plot /tmp/c.svg >> "$out/cub-ncu.txt" 2>&1
    echo "exit $?" >> "$out/cub-ncu.txt"
done
grep -E "^==|DeviceMergeSort|gpu__time_duration|^exit" "$out/cub-ncu.txt" | sed 's/  */ /g' | head -120
