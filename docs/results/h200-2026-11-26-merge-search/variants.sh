#!/usr/bin/env bash
# Merge passes that find their tiles' parts in the merge kernel where a pass has no more
# tiles than the grid's blocks (.device/bitonic) against the build before, which launches the
# splitter before every pass (.device/bitonic-base), taking turns A B B A: device-resident
# medians of 15 after warm-up, random keys, every result checked, CUB in the same runs.
# Then the patterns, and the checks of the new build: the merge kernels' test (the merge
# kernel searching, and the splitter by threads and by warps) and gpu_matches_cpu, the
# suite, the device buffers, the CUDA fault injection, and compute-sanitizer memcheck and
# racecheck over the merge kernels' test. Binaries from scripts/build-device.sh. Outputs in
# $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/device.txt"
skip=opencl,oblivious,torch,rayon,cpu,rust,pocl,skylake,epyc,xeon
for v in base search search base; do
    bin=.device/bitonic; [ $v = base ] && bin=.device/bitonic-base
    echo "== $v" >> "$out/variants.txt"
    timeout 120 "$bin" bench --compare --cases u32,u64 --sizes 2^17,2^18,2^19,2^20,2^21,2^22 \
        --skip "$skip" --runs 15 --roundtrip-runs 1 \
        --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/variants.txt" 2>&1
    echo "exit $?" >> "$out/variants.txt"
done
for p in sorted reversed few organ; do
    echo "== search, $p" >> "$out/patterns.txt"
    timeout 60 .device/bitonic bench --compare --cases u32 --sizes 2^20 --pattern $p \
        --skip "$skip,cub" --runs 7 --roundtrip-runs 1 --csv /tmp/p.csv --plot /tmp/p.svg >> "$out/patterns.txt" 2>&1
    echo "exit $?" >> "$out/patterns.txt"
done
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/checks.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/checks.txt"
    grep -hE "^test result|FAILED|panicked|^real|ERROR SUMMARY|RACECHECK SUMMARY" "/tmp/$name.log" | cut -c1-300 | head -30 >> "$out/checks.txt"
    [ $status -eq 0 ] || tail -30 "/tmp/$name.log" | cut -c1-300 >> "$out/checks.txt"
}
run unit-gpu 90 .device/unit --ignored merge_kernels_are_stable_merges gpu_matches_cpu
run suite 150 .device/suite
run device_buffers 40 .device/device_buffers
run faults-cuda 140 .device/faults cuda
run memcheck-merge 120 compute-sanitizer --tool memcheck --print-limit 20 .device/unit --ignored merge_kernels_are_stable_merges
run racecheck-merge 150 compute-sanitizer --tool racecheck --print-limit 20 .device/unit --ignored merge_kernels_are_stable_merges
grep -E "^==|^exit|^ *(2\^[0-9]+|[0-9]+) +(bitonic|cub)" "$out/variants.txt" | sed 's/  */ /g'
grep -E "^==|^exit|^ *(2\^[0-9]+) +bitonic" "$out/patterns.txt" | sed 's/  */ /g'
cat "$out/checks.txt"
