#!/usr/bin/env bash
# The build before (.device/bitonic-base: 4097..8191 u32 keys on one block of warps, 2^13..2^16
# on the cluster's shared-memory rounds) and the build with cluster warp sorts
# (.device/bitonic) taking turns A B B A: u32 keys from 2^11 to 2^17, device-resident
# medians of 15 after warm-up, random keys, CUB in the same runs. Then the suite, the device
# buffers, and compute-sanitizer memcheck and racecheck over the suite's u32 random-key
# trials up to 2^16 + 1 keys on CUDA. Binaries from scripts/build-device.sh. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/device.txt"
skip=opencl,oblivious,torch,rayon,cpu,rust,pocl,skylake,epyc,xeon
sizes=2^11,2^12,4097,6000,2^13,12345,2^14,2^15,2^16,2^17
for v in base new new base; do
    bin=.device/bitonic; [ $v = base ] && bin=.device/bitonic-base
    echo "== $v" >> "$out/variants.txt"
    timeout 70 "$bin" bench --compare --cases u32 --sizes $sizes \
        --skip "$skip" --runs 15 --roundtrip-runs 1 \
        --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/variants.txt" 2>&1
    echo "exit $?" >> "$out/variants.txt"
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
run device_buffers 40 .device/device_buffers
run memcheck-u32 70 env BITONIC_TEST_BACKENDS=cuda BITONIC_TEST_MAX_N=65537 \
    compute-sanitizer --tool memcheck --print-limit 20 .device/suite cuda0::u32::random
run racecheck-u32 70 env BITONIC_TEST_BACKENDS=cuda BITONIC_TEST_MAX_N=65537 \
    compute-sanitizer --tool racecheck --print-limit 20 .device/suite cuda0::u32::random
grep -E "^==|^exit|^ *(2\^[0-9]+|[0-9]+) +(bitonic|cub)" "$out/variants.txt" | sed 's/  */ /g'
cat "$out/checks.txt"
