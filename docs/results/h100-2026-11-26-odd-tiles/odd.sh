#!/usr/bin/env bash
# Tiles of 2^15 for u32 keys at odd powers of two (change 56): the build before it (`head`)
# and with it (`s15`) taking turns twice (A B B A), device-resident u32 keys at sizes whose
# log2 is odd (2^23, 2^25, 3 x 2^23, 2^27, 10^8) and even (2^24, 2^28, unchanged), CUB merge
# sort in the same runs; then the GPU checks of the s15 build: `gpu_matches_cpu` (2^22 + 1
# and 2^24 + 3 keys take 2^15 tiles) and the merge kernels' test, and compute-sanitizer's
# memcheck and racecheck over a sort of 2^22 + 1 keys (tiles of 2^15, eight merge passes).
# Binaries: `bitonic` and the library's unit tests (scripts/build-device.sh) of each build,
# gzipped in .device/. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/device.txt" 2>&1
skip=pocl,skylake,epyc,xeon,torch,rayon,cpu,rust,opencl,oblivious,radix
for v in head s15 s15 head; do
    echo "== $v" >> "$out/variants.txt"
    timeout 100 .device/bitonic-$v bench --compare --cases u32 \
        --sizes 2^23,2^24,2^25,25165824,2^27,100000000,2^28 --roundtrip-runs 3 --skip $skip \
        --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/variants.txt" 2>&1
    echo "exit $?" >> "$out/variants.txt"
done
grep -E "^==|^ *[0-9^]+ +bitonic|^exit" "$out/variants.txt" | sed 's/  */ /g' | cut -c1-90
BITONIC_REQUIRE=cuda timeout 150 .device/unit-s15 --ignored gpu_matches_cpu merge_kernels_are_stable_merges \
    > "$out/checks.txt" 2>&1
echo "exit $?" >> "$out/checks.txt"
for tool in memcheck racecheck; do
    timeout 70 compute-sanitizer --tool $tool --error-exitcode 3 .device/bitonic-s15 bench --compare \
        --cases u32 --sizes 4194305 --runs 1 --warmup 0 --roundtrip-runs 1 --skip $skip,cub \
        --csv /tmp/s.csv --plot /tmp/s.svg > "$out/$tool.txt" 2>&1
    echo "exit $?" >> "$out/$tool.txt"
done
tail -4 "$out/checks.txt" "$out/memcheck.txt" "$out/racecheck.txt"
