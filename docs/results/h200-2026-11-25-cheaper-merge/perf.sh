#!/usr/bin/env bash
# The merge passes with a branch-free serial merge, asynchronous copies into two shared
# buffers and 16-byte output stores (CUDA, keys alone), against the build before them
# (.device/bitonic-before) in the same machine session. Binaries from
# scripts/build-device.sh. The parts named as arguments run (default: all), each writing
# $OUT/<part>.txt:
#   profile   the merge kernels' own test, then per-pass device times (CUDA events);
#   variants  both builds, u32 and u64, device-resident only;
#   final     u32 and u64 keys with CUB, then sorted, reversed, few-distinct and organ-pipe
#             u32 keys with CUB;
#   crossover u32 and u64 keys from 2^17 to 2^22 with CUB (merge path against the network,
#             bitonic-oblivious, where both are possible);
#   ncu       Nsight Compute on the first six merge kernels (splitter and pass) of the
#             per-pass profile's first sort (2^24 u32 keys).
# The outputs in this folder are of the change that adds the branch-free merge
# (.device/bitonic-before being the build before it); those in warp-splitter/ of the next
# change, the splitter's warp search (.device/bitonic-before being the branch-free merge):
# warp-splitter/all-warps/ of its first build, which searched with a warp per tile in every
# pass, warp-splitter/ itself of the build kept. ncu.txt's per-pass times are taken under
# the profiler and mean nothing.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
compare() { local bin=$1 limit=$2; shift 2
    timeout "$limit" .device/$bin bench --compare --skip pocl,skylake,epyc,xeon,opencl --plot /dev/null "$@" 2>&1
    echo "exit $?"; }
parts=("$@"); [ ${#parts[@]} -eq 0 ] && parts=(profile variants final)
for part in "${parts[@]}"; do
    case $part in
        profile)
            { timeout 120 .device/unit --ignored merge_kernels_are_stable_merges gpu_matches_cpu 2>&1 | grep -E "^test |test result|panicked"
              timeout 90 .device/unit --ignored --nocapture cuda_merge_profile 2>&1 | grep -vE "^running|^$"; } ;;
        variants) for bin in bitonic bitonic-before; do
                echo "== $bin"; compare $bin 100 --cases u32,u64 --sizes 2^20,2^24,2^26,2^28 --skip torch,rayon,cpu,cub --roundtrip-runs 1 --csv /dev/null
            done ;;
        final) compare bitonic 200 --cases u32,u64 --sizes 2^20,2^22,2^24,2^26,2^28 --skip torch,rayon,cpu --roundtrip-runs 1 --csv /dev/null
            for p in sorted reversed few organ; do
                echo "== pattern $p"; compare bitonic 60 --cases u32 --sizes 2^24,2^28 --pattern $p --runs 7 --skip torch,rayon,cpu --roundtrip-runs 1 --csv /dev/null
            done ;;
        crossover) compare bitonic 120 --cases u32,u64 --sizes 2^17,2^18,2^19,2^20,2^21,2^22 --skip torch,rayon,cpu --roundtrip-runs 1 --csv /dev/null ;;
        ncu) /usr/local/cuda/bin/ncu --clock-control none -k regex:merge --launch-count 6 --section SpeedOfLight \
                 --section Occupancy --section WarpStateStats --section InstructionStats \
                 .device/unit --ignored --nocapture cuda_merge_profile 2>&1 | grep -vE "^(test |running|    ---)" ;;
        *) echo "unknown part $part" ;;
    esac > "$out/$part.txt"
    echo "#### $part"; grep -E "^==|^ *2\^[0-9]+ |exit|^test |test result|panicked|merge run|tile sort|in all" "$out/$part.txt" | head -80
done
