#!/usr/bin/env bash
# `bitonic bench --compare` after the kernel contract and the kernel split: our CUDA and
# NVIDIA OpenCL device-resident times and host round trips next to CUB, torch and rayon, at
# the cluster sizes (2^13..2^16) and around them. Binaries from scripts/build-device.sh;
# outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
.device/bitonic devices > "$out/devices.txt" 2>&1
timeout 420 .device/bitonic bench --compare --cases u32,kv --sizes 2^10,2^12,2^13,2^14,2^16,2^20,2^24,2^28 \
    --skip pocl,skylake,epyc,xeon --roundtrip-runs 5 \
    --csv "$out/compare.csv" --plot "$out/compare.svg" > "$out/compare.txt" 2>&1
echo "compare exit $?" >> "$out/compare.txt"
cat "$out/compare.txt" | tail -60
