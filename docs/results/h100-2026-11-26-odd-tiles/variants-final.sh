#!/usr/bin/env bash
# The kept build (tiles of 2^15 at odd powers of two, a slack after each CUDA merge buffer;
# `final`) against the build before (13dc135; `head`), taking turns twice (A B B A):
# device-resident u32 keys, u32 pairs and u64 keys at 2^20..2^28 with CUB merge sort in the
# same runs. Binaries (`bitonic` of each build) gzipped in .device/. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/device.txt" 2>&1
for v in head final final head; do
    echo "== $v" >> "$out/variants-final.txt"
    timeout 130 .device/bitonic-$v bench --compare --cases u32,kv,u64 \
        --sizes 2^20,2^22,2^24,2^25,2^26,2^28 --roundtrip-runs 1 \
        --skip pocl,skylake,epyc,xeon,torch,rayon,cpu,rust,opencl,oblivious,radix \
        --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/variants-final.txt" 2>&1
    echo "exit $?" >> "$out/variants-final.txt"
done
grep -E "^==|^ *[0-9^]+ +bitonic|^exit" "$out/variants-final.txt" | sed 's/  */ /g' | cut -c1-70
