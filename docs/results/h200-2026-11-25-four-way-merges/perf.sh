#!/usr/bin/env bash
# Four-way merge passes with sampled block boundaries (CUDA, keys alone), measured against
# the two builds before them in the same machine session: two-way passes whose blocks load
# their next tile while merging (bitonic-prefetch) and two-way passes without that
# (bitonic-before). Binaries from scripts/build-device.sh (and `bitonic` of the two earlier
# commits, as .device/bitonic-prefetch and .device/bitonic-before). The parts named as
# arguments run (default: all), each writing $OUT/<part>.txt:
#   profile   the merge kernels' own test, then per-pass device times (CUDA events);
#   u32       `bitonic bench --compare` on random u32 keys with CUB and torch (and u32.csv);
#   variants  the two earlier builds, u32 and u64;
#   u64       u64 keys with CUB and torch;
#   patterns  sorted, reversed, few-distinct and organ-pipe u32 keys, with CUB;
#   final     u32 and u64 keys with CUB, and the patterns, in one run (final.txt).
# profile and u32 ran with the four-way build as .device/bitonic; final with the build whose
# two-way passes load ahead (the one kept) as .device/bitonic.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
compare() { local bin=$1 limit=$2; shift 2
    timeout "$limit" .device/$bin bench --compare --skip pocl,skylake,epyc,xeon,opencl --plot /dev/null "$@" 2>&1
    echo "exit $?"; }
parts=("$@"); [ ${#parts[@]} -eq 0 ] && parts=(profile u32 variants u64 patterns final)
for part in "${parts[@]}"; do
    case $part in
        profile)
            { timeout 120 .device/unit --ignored merge_kernels_are_stable_merges gpu_matches_cpu 2>&1 | grep -E "^test |test result|panicked"
              timeout 90 .device/unit --ignored --nocapture cuda_merge_profile 2>&1 | grep -vE "^running|^$"; } ;;
        u32) compare bitonic 240 --cases u32 --sizes 2^10,2^12,2^14,2^16,2^18,2^20,2^22,2^24,2^26,2^28 \
                 --roundtrip-runs 3 --csv "$out/u32.csv" ;;
        variants) for bin in bitonic-prefetch bitonic-before; do
                echo "== $bin"; compare $bin 100 --cases u32,u64 --sizes 2^20,2^24,2^26,2^28 --skip torch,rayon,cpu,cub --roundtrip-runs 1 --csv /dev/null
            done ;;
        u64) compare bitonic 100 --cases u64 --sizes 2^20,2^24,2^26 --roundtrip-runs 3 --csv /dev/null ;;
        patterns) for p in sorted reversed few organ; do
                echo "== pattern $p"; compare bitonic 50 --cases u32 --sizes 2^24,2^28 --pattern $p --runs 7 --skip torch,rayon,cpu --roundtrip-runs 1 --csv /dev/null
            done ;;
        final) compare bitonic 200 --cases u32,u64 --sizes 2^20,2^22,2^24,2^26,2^28 --skip torch,rayon,cpu --roundtrip-runs 1 --csv /dev/null
            for p in sorted reversed few organ; do
                echo "== pattern $p"; compare bitonic 50 --cases u32 --sizes 2^24,2^28 --pattern $p --runs 7 --skip torch,rayon,cpu --roundtrip-runs 1 --csv /dev/null
            done ;;
        *) echo "unknown part $part" ;;
    esac > "$out/$part.txt"
    echo "#### $part"; grep -E "^==|^ *2\^[0-9]+ |exit|^test |test result|panicked|merge run|tile sort|in all" "$out/$part.txt" | head -80
done
