#!/usr/bin/env bash
# Merge path above the tile (CUDA, keys alone): `bitonic bench --compare` on random u32 keys
# with CUB, torch and CUDA's oblivious mode (the network alone) in the same run, u64 keys, and
# the adversarial patterns at 2^24 and 2^28 (named as arguments: u32 u64 sorted reversed few
# organ; default all). Binaries from scripts/build-device.sh; outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
compare() { local name=$1 limit=$2; shift 2
    timeout "$limit" .device/bitonic bench --compare --skip pocl,skylake,epyc,xeon,opencl \
        --roundtrip-runs 3 --csv "$out/$name.csv" --plot /dev/null "$@" > "$out/$name.txt" 2>&1
    echo "$name exit $?" >> "$out/$name.txt"
    grep -E "^ *2\^[0-9]+ " "$out/$name.txt" | head -80; tail -2 "$out/$name.txt"; }
names=("$@"); [ ${#names[@]} -eq 0 ] && names=(u32 u64 sorted reversed few organ)
for name in "${names[@]}"; do
    case $name in
        u32) compare u32 200 --cases u32 --sizes 2^10,2^12,2^14,2^16,2^18,2^20,2^22,2^24,2^26,2^28 ;;
        u64) compare u64 120 --cases u64 --sizes 2^20,2^24,2^26 ;;
        *) compare "u32-$name" 60 --cases u32 --sizes 2^24,2^28 --pattern "$name" --runs 7 ;;
    esac
done
