#!/usr/bin/env bash
# How many tiles per resident block a one-row merge pass may have and still find its tiles'
# parts in the merge kernel: 1 (.device/bitonic-r1), 2 (.device/bitonic-r2) and 4
# (.device/bitonic-r4), the same kernels, taking turns A B C C B A; device-resident medians
# of 15 after warm-up, random keys, every result checked. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/device.txt"
skip=opencl,oblivious,torch,rayon,cpu,rust,pocl,skylake,epyc,xeon,cub
for v in r1 r2 r4 r4 r2 r1; do
    echo "== $v" >> "$out/rounds.txt"
    timeout 90 .device/bitonic-$v bench --compare --cases u32,u64 --sizes 2^21,2^22,2^23,2^24 \
        --skip "$skip" --runs 15 --roundtrip-runs 1 \
        --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/rounds.txt" 2>&1
    echo "exit $?" >> "$out/rounds.txt"
done
grep -E "^==|^exit|^ *(2\^[0-9]+|[0-9]+) +(bitonic|cub)" "$out/rounds.txt" | sed 's/  */ /g'
