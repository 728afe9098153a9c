#!/usr/bin/env bash
# The benchmark crate's device-resident timing (public device-buffer calls, its own events,
# CUDA graph and hold kernel) next to CUB and torch, and the library's checks, on a GPU
# machine. Its compare.* was saved as compare-opencl-unheld.* (a binary from before the
# OpenCL queue was held); compare.* comes from the command in summary.md. Binaries from scripts/build-device.sh; outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi -L | tee "$out/gpu.txt"
.device/bitonic devices 2>&1 | tee "$out/devices.txt"
timeout 200 .device/bitonic bench --compare --cases u32,kv --sizes 2^10,2^12,2^16,2^20,2^24 \
    --skip pocl,skylake,epyc,xeon --roundtrip-runs 5 \
    --csv "$out/compare.csv" --plot "$out/compare.svg" > "$out/compare.txt" 2>&1
echo "compare exit $?" | tee -a "$out/compare.txt"
timeout 60 .device/bitonic bench --compare --cases u32 --sizes 2^10,2^16,2^20 --no-graph \
    --skip pocl,skylake,epyc,xeon,torch,cub --roundtrip-runs 3 \
    --csv "$out/compare-no-graph.csv" --plot "$out/compare-no-graph.svg" > "$out/compare-no-graph.txt" 2>&1
echo "no-graph exit $?" | tee -a "$out/compare-no-graph.txt"
BITONIC_REQUIRE=cuda,opencl,cpu timeout 150 .device/suite > "$out/suite.txt" 2>&1
echo "suite exit $?" | tee -a "$out/suite.txt"
BITONIC_REQUIRE=cuda,opencl timeout 150 .device/faults --skip opencl0 > "$out/faults.txt" 2>&1
echo "faults exit $?" | tee -a "$out/faults.txt"
timeout 120 .device/unit --include-ignored --skip cuda_pass_profile > "$out/unit.txt" 2>&1
echo "unit exit $?" | tee -a "$out/unit.txt"
BITONIC_REQUIRE=cuda,opencl timeout 120 .device/device_buffers > "$out/device_buffers.txt" 2>&1
echo "device_buffers exit $?" | tee -a "$out/device_buffers.txt"
tail -n 3 "$out"/*.txt
