#!/usr/bin/env bash
# After OpenCL's register network went back to loops with fixed trip counts: `bitonic bench
# --compare` as in compare.sh, and the suite on every backend. Binaries (bitonic, suite) from
# scripts/build-device.sh; outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
timeout 420 .device/bitonic bench --compare --cases u32,kv --sizes 2^10,2^12,2^13,2^14,2^16,2^20,2^24,2^28 \
    --skip pocl,skylake,epyc,xeon --roundtrip-runs 5 \
    --csv "$out/compare.csv" --plot "$out/compare.svg" > "$out/compare.txt" 2>&1
echo "compare exit $?" >> "$out/compare.txt"
BITONIC_REQUIRE=cuda,opencl,cpu timeout 200 .device/suite > "$out/suite-final.txt" 2>&1
echo "suite exit $?" >> "$out/suite-final.txt"
grep -E "bitonic +(cuda|opencl)" "$out/compare.txt"
grep -E "^test result| exit " "$out/suite-final.txt"
