#!/usr/bin/env bash
# Checks of the tree that merges rows of keys longer than a tile (OpenCL GPUs up to 3 rows):
# threads, the suite on every backend, fault injection on CUDA, pinned and device buffers,
# the OpenCL unit tests, the merge kernels' test and gpu_matches_cpu, the 2^32 + 3 test;
# then the long-rows comparison again (OpenCL now merging 2 and 3 rows only) and the host's
# short-pairs timing against rayon. Binaries from scripts/build-device.sh. Summary in
# $OUT/checks.txt, rows in $OUT/rows.txt.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/checks.txt" 2>&1
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/checks.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/checks.txt"
    grep -hE "^test result|FAILED|panicked|^real|SKIPPED" "/tmp/$name.log" | cut -c1-300 | head -30 >> "$out/checks.txt"
    [ $status -eq 0 ] || tail -30 "/tmp/$name.log" | cut -c1-300 >> "$out/checks.txt"
}
run threads 90 .device/threads
run suite 150 .device/suite
run faults-cuda 140 .device/faults cuda
run pinned 40 .device/pinned
run device_buffers 30 .device/device_buffers
run unit-gpu 90 .device/unit --ignored merge_kernels_are_stable_merges gpu_matches_cpu
run unit-opencl 90 .device/unit --ignored opencl::
run huge 150 .device/huge --ignored --test-threads 1
timeout 150 .device/bitonic bench --compare \
    --cases rows2x2^24,rows4x2^22,rows16x2^20,rows64x2^18,rows256x2^16,rows3x20001 \
    --skip pocl,skylake,epyc,xeon,rayon,cpu,torch,cub --runs 15 --roundtrip-runs 3 \
    --csv "$out/rows.csv" --plot "$out/rows.svg" > "$out/rows.txt" 2>&1
echo "exit $?" >> "$out/rows.txt"
timeout 60 .device/unit --ignored cpu_short_pairs_against_rayon --nocapture > "$out/short-pairs.txt" 2>&1
echo "exit $?" >> "$out/short-pairs.txt"
cat "$out/checks.txt"
grep -E "^== case|^exit|bitonic" "$out/rows.txt" | sed 's/  */ /g' | cut -c1-120
grep -E "pairs|exit" "$out/short-pairs.txt"
