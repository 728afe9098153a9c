#!/usr/bin/env bash
# Merge path for key-value pairs (past 8 MiB of pairs, every backend), measured on the GPU
# machine with the binaries of scripts/build-device.sh: the parts named as arguments
# (default: unit compare patterns), each into $OUT/<part>.txt.
#   unit      CUDA against the CPU bit for bit (pairs past the threshold included), the CUDA
#             merge kernels of every width, and the OpenCL pairs test on the first OpenCL GPU
#   compare   `bitonic bench --compare`, u32 keys + u32 values (kv) and u32 keys, 2^20..2^28:
#             CUDA and NVIDIA OpenCL, each by default (merge path for pairs past 8 MiB) and
#             oblivious (the network alone, the path pairs took before), CUB and torch
#   patterns  kv at 2^24 and 2^28 on sorted, reversed, few-distinct and organ-pipe keys
#   roundtrip the host round trips of u32 and kv, 2^10..2^28, five each, torch and rayon
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
compare() { local limit=$1; shift
    timeout "$limit" .device/bitonic bench --compare --skip pocl,skylake,epyc,xeon,rayon,cpu \
        --plot /dev/null --csv /dev/null --roundtrip-runs 1 "$@" 2>&1
    echo "exit $?"; }
parts=("$@"); [ ${#parts[@]} -eq 0 ] && parts=(unit compare patterns)
for part in "${parts[@]}"; do
    case $part in
        unit) timeout 240 .device/unit --ignored --nocapture gpu_matches_cpu merge_kernels_are_stable_merges merge_path_sorts_pairs 2>&1 ;;
        compare) compare 200 --cases kv,u32 --sizes 2^20,2^21,2^22,2^24,2^26,2^28 ;;
        patterns) for p in sorted reversed few organ; do
                echo "== pattern $p"; compare 60 --cases kv --sizes 2^24,2^28 --pattern $p --runs 7
            done ;;
        roundtrip) timeout 420 .device/bitonic bench --compare --cases u32,kv --sizes 2^10,2^12,2^14,2^16,2^20,2^24,2^28 \
                --skip pocl,skylake,epyc,xeon --roundtrip-runs 5 --csv "$out/roundtrip.csv" --plot "$out/roundtrip.svg" 2>&1
            echo "exit $?" ;;
        *) echo "unknown part $part" ;;
    esac > "$out/$part.txt"
    echo "#### $part"; grep -E "^==|^ *2\^[0-9]+ |exit|^test .*(ok|FAILED)$|test result|panicked|OpenCL tests run" "$out/$part.txt" | grep -vE "^test .* ok$" | grep -vE "^ *2\^[0-9]+ +cub-(radix|segmented)" | head -120
done
