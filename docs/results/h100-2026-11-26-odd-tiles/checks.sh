#!/usr/bin/env bash
# Checks of the build with tiles of 2^15 at odd powers of two and a slack after each CUDA
# merge buffer: compute-sanitizer's racecheck and memcheck (both with --error-exitcode 3)
# over `bitonic bench` sorts that take merge path (u32 keys, u32 pairs and u64 keys of
# 2^22 + 1, whose passes search their own tiles and whose u32 keys sort tiles of 2^15; u32
# keys of 2^24 + 3, whose passes take the splitter launch) and over the merge kernels' test;
# then the GPU unit tests, the suite, the properties and the device-buffer tests on every
# backend (BITONIC_REQUIRE=cuda,opencl,cpu). Binaries from scripts/build-device.sh. Outputs
# in $OUT: checks.txt (a summary), and the tail of each sanitizer run.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt" 2>&1
log="$out/checks.txt"; : > "$log"
skip=pocl,skylake,epyc,xeon,torch,rayon,cpu,rust,opencl,oblivious,cub
run() {
    local name=$1 limit=$2; shift 2
    local start=$SECONDS
    timeout "$limit" "$@" > "$out/$name.out" 2>&1
    local status=$?
    { echo "== $name: $* (exit $status, $(( SECONDS - start )) s)"
      grep -E "^test result|ERROR SUMMARY|RACECHECK SUMMARY|^test .*FAILED|panicked|^failures:|^ *[0-9]+ +bitonic" "$out/$name.out" | head -20; } >> "$log"
    if [[ $name == *check* ]]; then tail -25 "$out/$name.out" > "$out/$name.tail.txt"; fi
    rm -f "$out/$name.out"
}
bench=(.device/bitonic bench --compare --runs 1 --warmup 0 --roundtrip-runs 1 --skip $skip --csv /tmp/s.csv --plot /tmp/s.svg)
for tool in racecheck memcheck; do
    san=(compute-sanitizer --tool $tool --error-exitcode 3 --print-limit 20)
    run $tool-bench-2pow22 150 "${san[@]}" "${bench[@]}" --cases u32,kv,u64 --sizes 4194305
    run $tool-bench-2pow24 150 "${san[@]}" "${bench[@]}" --cases u32 --sizes 16777219
    run $tool-merge-test 150 "${san[@]}" .device/unit --ignored merge_kernels_are_stable_merges
done
req=(env BITONIC_REQUIRE=cuda,opencl,cpu)
run unit-gpu 150 .device/unit --ignored merge_kernels_are_stable_merges gpu_matches_cpu
run suite 200 "${req[@]}" .device/suite
run properties 100 "${req[@]}" .device/properties
run device_buffers 60 "${req[@]}" .device/device_buffers
cat "$log"
