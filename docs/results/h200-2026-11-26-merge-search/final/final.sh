#!/usr/bin/env bash
# The kept build (merge passes of up to two tiles per resident block search in the merge
# kernel; sorts of fewer than 2^13 u32 keys by a block of warps): the suite, the merge
# kernels' test and gpu_matches_cpu, compute-sanitizer racecheck over the merge kernels' test
# and memcheck over the suite's u32 random ascending trial (up to 3,000,001 keys under the
# default BITONIC_TEST_MAX_N, where merge blocks search up to two tiles each), then one
# comparison with CUB, torch and rayon.
# Binaries from scripts/build-device.sh. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/device.txt"
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/checks.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/checks.txt"
    grep -hE "^test result|FAILED|panicked|^real|ERROR SUMMARY|RACECHECK SUMMARY" "/tmp/$name.log" | cut -c1-300 | head -30 >> "$out/checks.txt"
    [ $status -eq 0 ] || tail -30 "/tmp/$name.log" | cut -c1-300 >> "$out/checks.txt"
}
run suite 150 .device/suite
run unit-gpu 60 .device/unit --ignored merge_kernels_are_stable_merges gpu_matches_cpu
run racecheck-merge 90 compute-sanitizer --tool racecheck --print-limit 20 .device/unit --ignored merge_kernels_are_stable_merges
run memcheck-u32 90 env BITONIC_TEST_BACKENDS=cuda compute-sanitizer --tool memcheck --print-limit 20 .device/suite cuda0::u32::random::asc::keys
timeout 150 .device/bitonic bench --compare --cases u32,u64 --sizes 2^11,2^12,2^16,2^17,2^20,2^21,2^22,2^24 \
    --skip pocl,skylake,epyc,xeon,opencl --runs 15 --roundtrip-runs 5 \
    --csv "$out/compare.csv" --plot "$out/compare.svg" > "$out/compare.txt" 2>&1
echo "compare exit $?" >> "$out/checks.txt"
grep -E "^==|^ *(2\^[0-9]+) +" "$out/compare.txt" | sed 's/  */ /g' | head -120
cat "$out/checks.txt"
