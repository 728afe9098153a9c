#!/usr/bin/env bash
# After the key encoding went back to a branch on the kind in both kernel languages: the
# suite on every backend, the unit tests, and `bitonic bench --compare` as in compare.sh.
# Binaries (bitonic, suite, unit) from scripts/build-device.sh; outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
timeout 420 .device/bitonic bench --compare --cases u32,kv --sizes 2^10,2^12,2^13,2^14,2^16,2^20,2^24,2^28 \
    --skip pocl,skylake,epyc,xeon --roundtrip-runs 5 \
    --csv "$out/compare.csv" --plot "$out/compare.svg" > "$out/compare.txt" 2>&1
echo "compare exit $?" >> "$out/compare.txt"
BITONIC_REQUIRE=cuda,opencl,cpu timeout 200 .device/suite > "$out/suite-recheck.txt" 2>&1
echo "suite exit $?" >> "$out/suite-recheck.txt"
timeout 150 .device/unit --include-ignored > "$out/unit-recheck.txt" 2>&1
echo "unit exit $?" >> "$out/unit-recheck.txt"
grep -E "bitonic +(cuda|opencl)" "$out/compare.txt"
for f in "$out"/*-recheck.txt; do echo "== $f"; grep -E "^test result| exit " "$f"; done
