#!/usr/bin/env bash
# Merge kernels of 256 threads, five blocks per multiprocessor (48 registers, tiles of 2^12
# u32 or 2^11 u64 keys), as .device/bitonic-occupancy, against the build before them (two
# blocks of 512 threads, 64 registers) as .device/bitonic, taking turns twice in one machine
# session; device-resident medians of 15 runs, random keys. Binaries from
# scripts/build-device.sh; the output is compare.txt.
set -uo pipefail
for f in .device/bitonic*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
for round in 1 2; do
    for b in bitonic bitonic-occupancy; do
        echo "== $b round $round"
        timeout 100 .device/$b bench --compare --skip pocl,skylake,epyc,xeon,opencl,torch,rayon,cpu,cub \
            --plot /dev/null --csv /dev/null --roundtrip-runs 1 --cases u32,u64 --sizes 2^20,2^22,2^24,2^26,2^28 2>&1 \
            | grep -E "  2\^[0-9]+  bitonic  "
    done
done
