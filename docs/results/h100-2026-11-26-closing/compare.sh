#!/usr/bin/env bash
# The closing measurement of the targets, parts named as arguments: `compare` is one
# `bitonic bench --compare` of u32 keys, u32 pairs, u64 keys and 16384 rows of 1024 u32 keys,
# 2^10 to 2^28, with CUB, torch and rayon (up to 2^24) in the same run; `patterns` the
# adversarial inputs (sorted, reversed, few distinct, organ pipe) of u32 keys at 2^24 and
# 2^28 beside random ones, CUB in the same runs. Binary from scripts/build-device.sh.
# Outputs, CSV and plots in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/device.txt" 2>&1
for part in "$@"; do
    case $part in
        compare)
            timeout 570 .device/bitonic bench --compare --cases u32,kv,u64,rows \
                --sizes 2^10,2^11,2^12,2^13,2^14,2^16,2^20,2^22,2^24,2^26,2^28 --cpu-max-log 24 \
                --skip pocl,skylake,epyc,xeon --roundtrip-runs 5 \
                --csv "$out/compare.csv" --plot "$out/compare.svg" > "$out/compare.txt" 2>&1
            echo "exit $?" >> "$out/compare.txt"
            grep -E "^== case|^ *2\^[0-9]+ +|^ *16384|^exit" "$out/compare.txt" | sed 's/  */ /g' ;;
        patterns)
            for p in random sorted reversed few organ; do
                echo "== pattern $p" >> "$out/patterns.txt"
                timeout 100 .device/bitonic bench --compare --cases u32 --sizes 2^24,2^28 \
                    --pattern $p --runs 7 --roundtrip-runs 1 \
                    --skip pocl,skylake,epyc,xeon,torch,rayon,cpu,rust,opencl \
                    --csv /tmp/p.csv --plot /tmp/p.svg >> "$out/patterns.txt" 2>&1
                echo "exit $?" >> "$out/patterns.txt"
            done
            grep -E "^== pattern|^ *2\^[0-9]+ +|^exit" "$out/patterns.txt" | sed 's/  */ /g' ;;
        *) echo "unknown part $part" ;;
    esac
done
