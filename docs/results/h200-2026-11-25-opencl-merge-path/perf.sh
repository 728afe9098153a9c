#!/usr/bin/env bash
# Merge path on OpenCL (keys alone), measured on the GPU machine with the binaries of
# scripts/build-device.sh: the parts named as arguments (default: all), each into
# $OUT/<part>.txt.
#   unit      the OpenCL merge-path test (on the first OpenCL GPU)
#   compare   `bitonic bench --compare`, u32 and u64, 2^14..2^28: CUDA and NVIDIA OpenCL, each
#             by default (merge path) and oblivious (the network alone, the path before), CUB
#   threshold the same around the GPU threshold of merge path (2^20, 2^21, 2^22)
#   patterns  the same for sorted, reversed, few-distinct and organ-pipe u32 keys at 2^24, 2^28
#   faults    the fault-injection test (every backend, both modes), with a longer limit than
#             docs/results/h200-2026-11-25-four-way-merges/checks.sh gives it
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
compare() { local limit=$1; shift
    timeout "$limit" .device/bitonic bench --compare --skip pocl,skylake,epyc,xeon,torch,rayon,cpu \
        --plot /dev/null --csv /dev/null --roundtrip-runs 1 "$@" 2>&1
    echo "exit $?"; }
parts=("$@"); [ ${#parts[@]} -eq 0 ] && parts=(unit compare patterns)
for part in "${parts[@]}"; do
    case $part in
        unit) timeout 200 .device/unit --ignored --nocapture merge_path_sorts_keys lists_devices_and_reports_tiles 2>&1 ;;
        compare) compare 240 --cases u32,u64 --sizes 2^14,2^16,2^17,2^18,2^20,2^22,2^24,2^26,2^28 ;;
        threshold) compare 120 --cases u32,u64 --sizes 2^20,2^21,2^22 ;;
        patterns) for p in sorted reversed few organ; do
                echo "== pattern $p"; compare 60 --cases u32 --sizes 2^24,2^28 --pattern $p --runs 7
            done ;;
        faults) timeout 400 env BITONIC_REQUIRE=cuda,opencl,cpu .device/faults 2>&1; echo "faults exit $?" ;;
        *) echo "unknown part $part" ;;
    esac > "$out/$part.txt"
    echo "#### $part"; grep -E "^==|^ *2\^[0-9]+ |exit|^test .*(ok|FAILED)$|test result|panicked|OpenCL tests run" "$out/$part.txt" | grep -vE "^test .* ok$" | grep -vE "^ *2\^[0-9]+ +cub-(radix|segmented)" | head -90
done
