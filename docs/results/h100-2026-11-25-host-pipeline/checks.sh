#!/usr/bin/env bash
# The pipeline of pieces timed against chunk-by-chunk copies in one process (the unit test
# cuda_pipeline_against_chunks, to $OUT/against-chunks.txt), then the checks of the
# pipeline build on the GPU machine: the suite on every backend (CUDA and
# NVIDIA OpenCL in both modes, PoCL, the CPU), threads (8 threads sharing one Sorter), pinned
# buffers, device buffers, the unit tests, and the limits (2^32 + 3 keys; more keys or pairs
# than device memory refused, inputs untouched, the sorter usable afterwards). Output goes to
# $OUT/checks.txt (the full logs to /tmp).
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/checks.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/checks.txt"
    grep -hE "^test result|FAILED|panicked|^real|refused|sorted|SKIPPED" "/tmp/$name.log" >> "$out/checks.txt"
    [ $status -eq 0 ] || tail -40 "/tmp/$name.log" >> "$out/checks.txt"
}
# First the pipeline against chunk-by-chunk copies, taking turns in one process.
timeout 150 .device/unit --ignored cuda_pipeline_against_chunks --nocapture > "$out/against-chunks.txt" 2>&1
echo "exit $?" >> "$out/against-chunks.txt"
run suite 150 .device/suite
run unit 60 .device/unit
run threads 60 .device/threads
run pinned 60 .device/pinned
run device_buffers 60 .device/device_buffers
run huge 330 .device/huge --ignored --test-threads 1 --nocapture
cat "$out/against-chunks.txt" "$out/checks.txt"
