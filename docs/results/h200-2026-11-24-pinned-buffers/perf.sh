#!/usr/bin/env bash
# Host round trips with and without pinned buffers: `bitonic bench` (Vec, pinned buffer,
# rayon) and `bitonic bench --compare` (device-resident times, round trips of ours and of
# torch from pageable and pinned memory, rayon, CUB). Binaries from scripts/build-device.sh;
# outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/gpu.txt" 2>&1
nproc >> "$out/gpu.txt"
timeout 150 .device/bitonic bench --sizes 2^10,2^14,2^16,2^20,2^24 --runs 5 > "$out/bench.txt" 2>&1
echo "bench exit $?" >> "$out/bench.txt"
timeout 400 .device/bitonic bench --compare --cases u32,kv --sizes 2^10,2^12,2^14,2^16,2^20,2^24,2^28 \
    --skip pocl,skylake,epyc,xeon --roundtrip-runs 5 \
    --csv "$out/compare.csv" --plot "$out/compare.svg" > "$out/compare.txt" 2>&1
echo "compare exit $?" >> "$out/compare.txt"
cat "$out/bench.txt"
grep -E "^ *2\^(10|20|24|28) " "$out/compare.txt"
tail -2 "$out/compare.txt"
