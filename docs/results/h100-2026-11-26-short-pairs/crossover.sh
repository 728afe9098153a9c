#!/usr/bin/env bash
# The build before (.device/bitonic-base: host-slice sorts below 2048 elements on the host)
# and the build that keeps one row of u32 pairs with distinct keys on the host below 8192
# (.device/bitonic) taking turns A B B A: host round trips of u32 keys and u32 pairs from
# 1024 to 16384 elements (medians of 15 after 3 untimed), CUDA, rayon in the same runs;
# then few-distinct pairs (whose keys repeat) the same way. Then the fault-injection test's
# check of where short sorts run, on CUDA, and tests/threads.rs. Binaries from scripts/build-device.sh. Outputs
# in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt"
skip=pocl,skylake,epyc,xeon,oblivious,torch,opencl,cub
sizes=1024,2048,3000,4096,6000,8191,8192,12000,16384
for pattern in random few; do
    for v in base new new base; do
        bin=.device/bitonic; [ $v = base ] && bin=.device/bitonic-base
        echo "== $pattern $v" >> "$out/crossover.txt"
        timeout 60 "$bin" bench --compare --cases u32,kv --sizes $sizes --pattern $pattern \
            --skip "$skip" --runs 15 --roundtrip-runs 15 \
            --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/crossover.txt" 2>&1
        echo "exit $?" >> "$out/crossover.txt"
    done
done
(time timeout 120 env BITONIC_REQUIRE=cuda,opencl,cpu .device/faults host_below) > "$out/faults.txt" 2>&1
(time timeout 60 env BITONIC_REQUIRE=cuda,opencl,cpu .device/threads) >> "$out/faults.txt" 2>&1
echo "exit $?" >> "$out/faults.txt"
grep -E "^==|^exit|^== case|^ *[0-9^]+ +(bitonic|rust)" "$out/crossover.txt" | sed 's/  */ /g' | awk '{print $1,$2,$3,$(NF-1),$NF}'
grep -E "^test |test result|exit|real" "$out/faults.txt"
