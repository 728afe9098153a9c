#!/usr/bin/env bash
# The checks of the merge-path sorts: the suite, properties, device buffers, threads, faults
# and pinned-buffer tests on every backend (CUDA in both modes), the unit tests, 2^32 + 3 keys,
# and compute-sanitizer memcheck and racecheck over the merge kernels' test. Binaries from
# scripts/build-device.sh; outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
run() { local name=$1 limit=$2; shift 2; timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "$name exit $?" >> "$out/$name.txt"; }
export BITONIC_REQUIRE=cuda,opencl,cpu
run suite 200 .device/suite
run properties 100 .device/properties
run device_buffers 60 .device/device_buffers
run threads 50 .device/threads
run faults 100 .device/faults
run pinned 60 .device/pinned
unset BITONIC_REQUIRE
run unit 30 .device/unit
run huge 100 .device/huge --ignored --test-threads 1
run memcheck 60 compute-sanitizer --tool memcheck --print-limit 20 .device/unit --ignored merge_kernels_are_stable_merges
run racecheck 120 compute-sanitizer --tool racecheck --print-limit 20 .device/unit --ignored merge_kernels_are_stable_merges
for f in suite properties device_buffers threads faults pinned unit huge memcheck racecheck; do
    grep -E "^test result|ERROR SUMMARY|RACECHECK SUMMARY| exit " "$out/$f.txt" | sed "s/^/$f: /"
done
grep -h -A3 "^failures:" "$out"/*.txt | head -30
