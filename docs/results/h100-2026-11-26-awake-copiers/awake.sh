#!/usr/bin/env bash
# Downloads that wake rayon's threads before they wait for the sort (.device/bitonic) against
# the build before (.device/bitonic-base), taking turns A B B A: host round trips of u32
# keys and u32 pairs from a Vec, median of 15 after one untimed run, every result checked.
# Then tests/threads.rs on the new build. Binaries from scripts/build-device.sh. Outputs in
# $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/device.txt"
skip=opencl,oblivious,torch,rayon,cpu,rust,pocl,skylake,epyc,xeon,cub
for v in base awake awake base; do
    bin=.device/bitonic; [ $v = base ] && bin=.device/bitonic-base
    echo "== $v" >> "$out/awake.txt"
    timeout 60 "$bin" bench --compare --cases u32,kv --sizes 2^16,2^18,2^20,2^22 \
        --skip "$skip" --runs 3 --roundtrip-runs 15 \
        --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/awake.txt" 2>&1
    echo "exit $?" >> "$out/awake.txt"
done
echo "== threads" >> "$out/checks.txt"
(time timeout 90 env BITONIC_REQUIRE=cuda,opencl,cpu .device/threads) > /tmp/threads.log 2>&1
echo "threads exit $?" >> "$out/checks.txt"
grep -hE "^test result|FAILED|panicked|^real" /tmp/threads.log >> "$out/checks.txt"
grep -E "^==|^exit|^ *(2\^[0-9]+) +bitonic" "$out/awake.txt" | sed 's/  */ /g'
cat "$out/checks.txt"
