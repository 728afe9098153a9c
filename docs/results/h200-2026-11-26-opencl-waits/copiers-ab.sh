#!/usr/bin/env bash
# Host round trips of the build whose staged path copies on three quarters of rayon's
# threads less one (.device/bitonic-copiers: 11 of 16) against the build before
# (.device/bitonic: 15 of 16), taking turns A B B A, CUDA and NVIDIA's OpenCL, u32 keys and
# u32 pairs where the pipeline runs (32 MiB and more). Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
for v in kept copiers copiers kept; do
    bin=.device/bitonic; [ $v = copiers ] && bin=.device/bitonic-copiers
    echo "== $v" >> "$out/copiers-ab.txt"
    timeout 130 "$bin" bench --compare --cases u32,kv --sizes 2^24,2^26,2^28 \
        --skip oblivious,cub,torch,rust,pocl,skylake,epyc,xeon --runs 3 --roundtrip-runs 7 \
        --csv /tmp/c.csv --plot /tmp/c.svg >> "$out/copiers-ab.txt" 2>&1
    echo "exit $?" >> "$out/copiers-ab.txt"
done
grep -E "^==|^exit|^ *2\^[0-9]+ +bitonic" "$out/copiers-ab.txt" | sed 's/  */ /g'
