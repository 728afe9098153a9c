#!/usr/bin/env bash
# Host round trips on an NVIDIA GPU machine, over binaries from scripts/build-device.sh and
# examples/host_roundtrip (built with --features cuda,opencl), gzipped in .device/.
# Ours (CUDA and NVIDIA OpenCL), the crate's CPU path, rayon, and torch (pageable and pinned
# tensors) in one run; then `bitonic bench --compare` for device-resident times with CUB and
# torch beside our round trips. Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")"
for f in *.gz; do gunzip -f "$f"; done; chmod +x ./*
out="${OUT:-.}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
BITONIC_BACKEND=cuda ./host_roundtrip 28 5 2>&1 | tee "$out/roundtrip-cuda.txt"
BITONIC_BACKEND=opencl BITONIC_DEVICE=nvidia ./host_roundtrip 24 5 2>&1 | tee "$out/roundtrip-opencl.txt"
python3 torch_roundtrip.py --max-log 28 --runs 5 2>&1 | tee "$out/torch-roundtrip.txt"
python3 torch_roundtrip.py --min-log 28 --max-log 28 --runs 5 --pairs 2>&1 | tee -a "$out/torch-roundtrip.txt"
timeout 300 ./bitonic bench --compare --cases u32,kv --sizes 2^10,2^14,2^16,2^20,2^24,2^28 \
    --roundtrip-runs 5 --cpu-max-log 24 --skip skylake --csv "$out/compare.csv" > "$out/compare.txt" 2>&1
tail -n 40 "$out/compare.txt"
