#!/usr/bin/env bash
# Sorts of at most 2^10 u32 keys in one warp (.device/bitonic) against the build before,
# whose one block sorts them in register rounds (.device/bitonic-base), taking turns twice;
# device-resident medians of 15 after warm-up, random keys, every result checked; CUB in the
# second round. Then the patterns at 2^10, and the suite, gpu_matches_cpu and the device
# buffers of the warp build. Binaries from scripts/build-device.sh. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
skip=opencl,oblivious,torch,rayon,cpu,rust,pocl,skylake,epyc,xeon
for round in 1 2; do
    for v in base warp; do
        bin=.device/bitonic; [ $v = base ] && bin=.device/bitonic-base
        extra=",cub"; [ $round = 2 ] && extra=""
        echo "== $v, round $round" >> "$out/variants.txt"
        timeout 90 "$bin" bench --compare --cases u32 --sizes 2^5,2^6,2^8,2^9,2^10,1000,2^11,2^12 \
            --skip "$skip$extra" --runs 15 --roundtrip-runs 1 \
            --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/variants.txt" 2>&1
        echo "exit $?" >> "$out/variants.txt"
    done
done
for p in sorted reversed few organ; do
    echo "== warp, $p" >> "$out/patterns.txt"
    timeout 60 .device/bitonic bench --compare --cases u32 --sizes 2^10 --pattern $p \
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
run memcheck-small 120 env BITONIC_TEST_BACKENDS=cuda compute-sanitizer --tool memcheck --print-limit 20 .device/suite cuda0::u32::random
grep -E "^==|^exit|^ *(2\^[0-9]+|1000) +(bitonic|cub)" "$out/variants.txt" | sed 's/  */ /g'
grep -E "^==|^exit|^ *2\^[0-9]+ +bitonic" "$out/patterns.txt" | sed 's/  */ /g'
cat "$out/checks.txt"
