#!/usr/bin/env bash
# Sorting while uploading on the GPU machine: first the timing of host-slice sorts that sort
# their chunks while the rest uploads against the same sorts uploading everything first,
# taking turns in one process (unit test cuda_sorting_while_uploading, to
# $OUT/while-uploading.txt); then the checks of that build: bit-identical results to the CPU
# backend at lengths that sort while uploading (gpu_matches_cpu) and the merge kernels' test,
# the unit tests, threads, and the fault injection on the CUDA targets (to $OUT/checks.txt;
# full logs in /tmp). Binaries from scripts/build-device.sh.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/while-uploading.txt" 2>&1
timeout 200 .device/unit --ignored cuda_sorting_while_uploading --nocapture >> "$out/while-uploading.txt" 2>&1
echo "exit $?" >> "$out/while-uploading.txt"
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/checks.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/checks.txt"
    grep -hE "^test result|FAILED|panicked|^real|SKIPPED" "/tmp/$name.log" >> "$out/checks.txt"
    [ $status -eq 0 ] || tail -40 "/tmp/$name.log" >> "$out/checks.txt"
}
run gpu-tests 120 .device/unit --ignored gpu_matches_cpu merge_kernels_are_stable_merges
run faults-cuda 150 .device/faults cuda
run unit 40 .device/unit
run threads 60 .device/threads
cat "$out/while-uploading.txt" "$out/checks.txt"
