#!/usr/bin/env bash
# Change 22 as committed (host copies above 256 KiB in even pieces over every rayon thread,
# at least 64 KiB each): `host_roundtrip 24 9` against the build before it, taking turns three
# times (roundtrip-piece256k-chunk2m is pieces.sh's first variant; roundtrip-even-pieces is
# `cargo build --release --example host_roundtrip --features cuda,opencl` at this commit),
# then the suite on every backend and `bitonic bench --compare` as in perf.sh. Binaries from
# scripts/build-device.sh; outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
for round in 1 2 3; do
    for v in piece256k-chunk2m even-pieces; do
        echo "== $v, round $round" >> "$out/even-pieces.txt"
        timeout 60 .device/roundtrip-$v 24 9 >> "$out/even-pieces.txt" 2>&1
    done
done
BITONIC_REQUIRE=cuda,opencl,cpu timeout 120 .device/suite > "$out/suite-even-pieces.txt" 2>&1
echo "suite exit $?" >> "$out/suite-even-pieces.txt"
timeout 330 .device/bitonic bench --compare --cases u32,kv --sizes 2^10,2^12,2^14,2^16,2^20,2^24,2^28 \
    --skip pocl,skylake,epyc,xeon --roundtrip-runs 5 \
    --csv "$out/compare-even-pieces.csv" --plot "$out/compare-even-pieces.svg" > "$out/compare-even-pieces.txt" 2>&1
echo "compare exit $?" >> "$out/compare-even-pieces.txt"
grep -E "^==|^ +(262144|1048576|4194304|16777216) " "$out/even-pieces.txt"
grep -E "^test result| exit " "$out/suite-even-pieces.txt"
grep -E "^ *2\^(16|20|24|28) +bitonic " "$out/compare-even-pieces.txt"
tail -1 "$out/compare-even-pieces.txt"
