#!/usr/bin/env bash
# The second build of sorting while uploading (a chunk shorter than a tile sorted and
# encoded, one hand-over per chunk, from 32 MiB): sorting while uploading against uploading
# first, taking turns in one process (unit test cuda_sorting_while_uploading, to
# $OUT/while-uploading-2.txt); then bit-identical results to the CPU backend at lengths that
# sort while uploading (gpu_matches_cpu), the merge kernels' test, the fault injection on the
# CUDA targets, and pinned buffers on every backend (to $OUT/checks-2.txt; full logs in
# /tmp). Binaries from scripts/build-device.sh.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/while-uploading-2.txt" 2>&1
timeout 200 .device/unit --ignored cuda_sorting_while_uploading --nocapture >> "$out/while-uploading-2.txt" 2>&1
echo "exit $?" >> "$out/while-uploading-2.txt"
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/checks-2.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/checks-2.txt"
    grep -hE "^test result|FAILED|panicked|^real|SKIPPED" "/tmp/$name.log" | cut -c1-300 >> "$out/checks-2.txt"
    [ $status -eq 0 ] || tail -40 "/tmp/$name.log" | cut -c1-300 >> "$out/checks-2.txt"
}
run gpu-tests 120 .device/unit --ignored gpu_matches_cpu merge_kernels_are_stable_merges
run faults-cuda 170 .device/faults cuda
run pinned 60 .device/pinned
cat "$out/while-uploading-2.txt" "$out/checks-2.txt"
