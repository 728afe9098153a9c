#!/usr/bin/env bash
# Three builds taking turns twice (A B C C B A): the commit before (.device/bitonic-base;
# 2^11..2^12 on one block's shared-memory rounds, 2^13 on a cluster), the first build of
# sorts by a block of warps (.device/bitonic-warps; one kernel for one warp and several) and
# the kept one (.device/bitonic; one warp's kernel without the exchanges between warps),
# u32 keys from 2^8 to 2^13 and lengths between 2^12 and 2^13, to choose where the block of
# warps stops; device-resident medians of 15 after warm-up, random keys, CUB in the same
# runs. Then the suite, device buffers, gpu_matches_cpu and racecheck of the kept build.
# Binaries from scripts/build-device.sh. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/device.txt"
skip=opencl,oblivious,torch,rayon,cpu,rust,pocl,skylake,epyc,xeon
sizes=2^8,2^10,2^11,2^12,5000,6000,7000,7600,2^13
for v in base warps kept kept warps base; do
    bin=.device/bitonic; [ $v = base ] && bin=.device/bitonic-base; [ $v = warps ] && bin=.device/bitonic-warps
    echo "== $v" >> "$out/split.txt"
    timeout 90 "$bin" bench --compare --cases u32 --sizes $sizes \
        --skip "$skip" --runs 15 --roundtrip-runs 1 \
        --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/split.txt" 2>&1
    echo "exit $?" >> "$out/split.txt"
done
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/split-checks.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/split-checks.txt"
    grep -hE "^test result|FAILED|panicked|^real|ERROR SUMMARY|RACECHECK SUMMARY" "/tmp/$name.log" | cut -c1-300 | head -30 >> "$out/split-checks.txt"
    [ $status -eq 0 ] || tail -30 "/tmp/$name.log" | cut -c1-300 >> "$out/split-checks.txt"
}
run suite 150 .device/suite
run unit-gpu 60 .device/unit --ignored gpu_matches_cpu
run device_buffers 40 .device/device_buffers
run racecheck-u32 100 env BITONIC_TEST_BACKENDS=cuda BITONIC_TEST_MAX_N=16384 \
    compute-sanitizer --tool racecheck --print-limit 20 .device/suite cuda0::u32::random
run memcheck-f32 100 env BITONIC_TEST_BACKENDS=cuda BITONIC_TEST_MAX_N=16384 \
    compute-sanitizer --tool memcheck --print-limit 20 .device/suite cuda0::f32
grep -E "^==|^exit|^ *(2\^[0-9]+|[0-9]+) +(bitonic|cub)" "$out/split.txt" | sed 's/  */ /g'
cat "$out/split-checks.txt"
