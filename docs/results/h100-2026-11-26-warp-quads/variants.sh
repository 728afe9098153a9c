#!/usr/bin/env bash
# Warp sorts whose lanes move their 32 keys in 16-byte accesses (.device/bitonic; lanes past
# the row touch no memory) against the build before, 32 4-byte accesses a lane
# (.device/bitonic-base), taking turns twice;
# device-resident medians of 15 after warm-up, random keys, every result checked; CUB in the
# second round. Then the suite and the device buffers of the new build. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
skip=opencl,oblivious,torch,rayon,cpu,rust,pocl,skylake,epyc,xeon
for round in 1 2; do
    for v in base quads; do
        bin=.device/bitonic; [ $v = base ] && bin=.device/bitonic-base
        extra=",cub"; [ $round = 2 ] && extra=""
        echo "== $v, round $round" >> "$out/variants.txt"
        timeout 90 "$bin" bench --compare --cases u32 --sizes 2^5,2^8,2^9,2^10,1000 \
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
    grep -hE "^test result|FAILED|panicked|^real" "/tmp/$name.log" | cut -c1-300 | head -30 >> "$out/checks.txt"
    [ $status -eq 0 ] || tail -30 "/tmp/$name.log" | cut -c1-300 >> "$out/checks.txt"
}
run suite 150 .device/suite
run device_buffers 40 .device/device_buffers
run properties 120 .device/properties
grep -E "^==|^exit|^ *(2\^[0-9]+|1000) +(bitonic|cub)" "$out/variants.txt" | sed 's/  */ /g'
cat "$out/checks.txt"
