#!/usr/bin/env bash
# The checks of the pinned-buffer path on every backend: the pinned-buffer tests, the fault
# injection (pinned cases included), threads, the suite, the unit tests, 2^32 + 3 keys, and
# compute-sanitizer memcheck over the CUDA trials of the pinned-buffer tests. Binaries from
# scripts/build-device.sh; outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
run() { local name=$1 limit=$2; shift 2; timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "$name exit $?" >> "$out/$name.txt"; }
export BITONIC_REQUIRE=cuda,opencl,cpu
run pinned 80 .device/pinned
run threads 50 .device/threads
run faults 140 .device/faults
run suite 140 .device/suite
unset BITONIC_REQUIRE
run unit 30 .device/unit
run huge 80 .device/huge --ignored --test-threads 1
run memcheck 60 compute-sanitizer --tool memcheck --print-limit 20 .device/pinned cuda0::
for f in pinned threads faults suite unit huge memcheck; do
    grep -E "^test result|ERROR SUMMARY| exit " "$out/$f.txt" | sed "s/^/$f: /"
done
