#!/usr/bin/env bash
# Sorts of 2^11..2^13 u32 keys by one block of two to eight warps (keys in registers, only
# the levels between warps through shared memory; .device/bitonic) against the build before,
# which sorts them by one block's shared-memory rounds (2^11, 2^12) or one cluster (2^13)
# (.device/bitonic-base), taking turns twice: device-resident medians of 15 after warm-up,
# random keys, every result checked, CUB in the same runs. Then the patterns, the suite,
# gpu_matches_cpu and the device buffers of the new build, and compute-sanitizer memcheck
# and racecheck over the suite's 4-byte key trials on CUDA up to 2^14 keys. Binaries from
# scripts/build-device.sh (the base: `bitonic` of the commit before). Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/device.txt"
skip=opencl,oblivious,torch,rayon,cpu,rust,pocl,skylake,epyc,xeon
sizes=2^8,2^10,2^11,3000,2^12,5000,2^13,2^14
for v in base warps warps base; do
    bin=.device/bitonic; [ $v = base ] && bin=.device/bitonic-base
    echo "== $v" >> "$out/variants.txt"
    timeout 90 "$bin" bench --compare --cases u32 --sizes $sizes \
        --skip "$skip" --runs 15 --roundtrip-runs 1 \
        --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/variants.txt" 2>&1
    echo "exit $?" >> "$out/variants.txt"
done
for p in sorted reversed few organ; do
    echo "== warps, $p" >> "$out/patterns.txt"
    timeout 60 .device/bitonic bench --compare --cases u32 --sizes 2^11,2^12,2^13 --pattern $p \
        --skip "$skip,cub" --runs 15 --roundtrip-runs 1 --csv /tmp/p.csv --plot /tmp/p.svg >> "$out/patterns.txt" 2>&1
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
run suite 150 .device/suite
run unit-gpu 60 .device/unit --ignored gpu_matches_cpu
run device_buffers 40 .device/device_buffers
for tool in memcheck racecheck; do
    for k in u32 i32 f32; do
        run $tool-$k 100 env BITONIC_TEST_BACKENDS=cuda BITONIC_TEST_MAX_N=16384 \
            compute-sanitizer --tool $tool --print-limit 20 .device/suite cuda0::$k::random
    done
done
grep -E "^==|^exit|^ *(2\^[0-9]+|[0-9]+) +(bitonic|cub)" "$out/variants.txt" | sed 's/  */ /g'
grep -E "^==|^exit|^ *(2\^[0-9]+) +bitonic" "$out/patterns.txt" | sed 's/  */ /g'
cat "$out/checks.txt"
