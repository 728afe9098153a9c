#!/usr/bin/env bash
# Small sorts with fewer elements per thread: the build before (.device/bitonic-base, every
# round 16 elements a thread) against builds whose local sorts of one block or one cluster
# take up to 512 threads with at least 2 (r1), 4 (r2) or 8 (r3) elements a thread, and one
# (w2) that does so in every local sort of at most one wave of blocks (the tile sort of a
# merge-path sort of 2^20 keys too). Taking turns twice, device-resident medians of 15 after
# warm-up, random keys, every result checked; CUB in the base runs. Then the suite, the
# merge kernels' test, gpu_matches_cpu and the device-buffer tests of the w2 tree
# (.device/suite, .device/unit, .device/device_buffers). Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
skip=opencl,oblivious,torch,rayon,cpu,rust,pocl,skylake,epyc,xeon
for round in 1 2; do
    order="base r1 r2 r3 w2"; [ $round = 2 ] && order="w2 r3 r2 r1 base"
    for v in $order; do
        extra=",cub"; [ $v = base ] && extra=""
        echo "== $v, round $round" >> "$out/variants.txt"
        timeout 90 ".device/bitonic-$v" bench --compare --cases u32,kv \
            --sizes 2^10,2^11,2^12,2^13,2^14,2^15,2^16,2^18,2^20 \
            --skip "$skip$extra" --runs 15 --roundtrip-runs 1 \
            --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/variants.txt" 2>&1
        echo "exit $?" >> "$out/variants.txt"
    done
done
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/checks.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/checks.txt"
    grep -hE "^test result|FAILED|panicked|^real|SKIPPED" "/tmp/$name.log" | cut -c1-300 | head -30 >> "$out/checks.txt"
    [ $status -eq 0 ] || tail -30 "/tmp/$name.log" | cut -c1-300 >> "$out/checks.txt"
}
run suite 150 .device/suite
run unit-gpu 90 .device/unit --ignored merge_kernels_are_stable_merges gpu_matches_cpu
run device_buffers 40 .device/device_buffers
cat "$out/gpu.txt"
grep -E "^==|^exit|^ *2\^[0-9]+ +(bitonic|cub)" "$out/variants.txt" | sed 's/  */ /g'
cat "$out/checks.txt"
