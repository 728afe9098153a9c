#!/usr/bin/env bash
# Host round trips (host slice in, host slice out) with sorting while uploading, peers in the
# same run: one `bitonic bench --compare` of u32 keys and u32 keys + u32 values from 2^10 to
# 2^28, five round trips each after one untimed, CUB, rayon and torch (pageable and pinned
# tensors). Binary from scripts/build-device.sh; output in $OUT/compare.{txt,csv,svg}.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/gpu.txt" 2>&1
nproc >> "$out/gpu.txt"
timeout 500 .device/bitonic bench --compare --cases u32,kv --sizes 2^10,2^12,2^14,2^16,2^20,2^24,2^28 \
    --skip pocl,skylake,epyc,xeon --roundtrip-runs 5 \
    --csv "$out/compare.csv" --plot "$out/compare.svg" > "$out/compare.txt" 2>&1
echo "compare exit $?" >> "$out/compare.txt"
grep -E "^ *2\^(10|12|14|16|20|24|28) " "$out/compare.txt" | grep -vE "cub-(radix|segmented)"
tail -2 "$out/compare.txt"
