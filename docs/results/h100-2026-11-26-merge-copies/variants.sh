#!/usr/bin/env bash
# Merge kernels that copy each part of a tile as one contiguous range (`copy`) against the
# build before (`before`, commit 90dc2de's code), taking turns twice (A B B A): device-resident
# u32 keys, u32 pairs and u64 keys at 2^20..2^28 with CUB merge sort in the same runs; then
# checks of the `copy` build: the merge kernels' test and gpu_matches_cpu, the suite on every
# backend (BITONIC_REQUIRE=cuda,opencl,cpu), compute-sanitizer memcheck over the merge
# kernels' test and over sorts of 2^22 + 1 u32 keys, pairs and u64 keys, and racecheck over
# the merge kernels' test. Binaries from scripts/build-device.sh gzipped in .device/. Outputs
# in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/device.txt" 2>&1
skip=pocl,skylake,epyc,xeon,torch,rayon,cpu,rust,opencl,oblivious,radix
for v in before copy copy before; do
    echo "== $v" >> "$out/variants.txt"
    timeout 100 .device/bitonic-$v bench --compare --cases u32,kv,u64 --sizes 2^20,2^22,2^24,2^26,2^28 \
        --roundtrip-runs 1 --skip $skip --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/variants.txt" 2>&1
    echo "exit $?" >> "$out/variants.txt"
done
grep -E "^==|^ *[0-9^]+ +bitonic|^exit" "$out/variants.txt" | sed 's/  */ /g' | cut -c1-60
log="$out/checks.txt"; : > "$log"
run() {
    local name=$1 limit=$2; shift 2
    local start=$SECONDS
    timeout "$limit" "$@" > "$out/$name.out" 2>&1
    local status=$?
    { echo "== $name: $* (exit $status, $(( SECONDS - start )) s)"
      grep -E "^test result|ERROR SUMMARY|RACECHECK SUMMARY|^test .*FAILED|panicked|^failures:|^ *[0-9]+ +bitonic" "$out/$name.out" | head -20; } >> "$log"
    rm -f "$out/$name.out"
}
san=(compute-sanitizer --error-exitcode 3 --print-limit 20)
run unit-gpu 100 .device/unit --ignored merge_kernels_are_stable_merges gpu_matches_cpu
run suite 150 env BITONIC_REQUIRE=cuda,opencl,cpu .device/suite
run memcheck-merge-test 60 "${san[@]}" --tool memcheck .device/unit --ignored merge_kernels_are_stable_merges
run memcheck-bench 60 "${san[@]}" --tool memcheck .device/bitonic-copy bench --compare --cases u32,kv,u64 \
    --sizes 4194305 --runs 1 --warmup 0 --roundtrip-runs 1 --skip $skip,cub --csv /tmp/s.csv --plot /tmp/s.svg
run racecheck-merge-test 100 "${san[@]}" --tool racecheck .device/unit --ignored merge_kernels_are_stable_merges
cat "$log"
