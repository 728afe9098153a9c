#!/usr/bin/env bash
# The build before (.device/bitonic-base: every host-slice sort below 2048 elements on the
# host) and the build that sends one row of pairs whose keys repeat to the device from 512
# elements on (.device/bitonic), taking turns A B B A: host round trips of u32 pairs with few
# distinct keys and with random keys from 256 to 2047 elements (medians of 15 after 3
# untimed), CUDA, rayon in the same runs. Then the fault-injection test's check of where
# short sorts run, on every backend. Binaries from scripts/build-device.sh. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt"
skip=pocl,skylake,epyc,xeon,oblivious,torch,opencl,cub
sizes=256,511,512,768,1024,1500,2047
for pattern in few random; do
    for v in base new new base; do
        bin=.device/bitonic; [ $v = base ] && bin=.device/bitonic-base
        echo "== $pattern $v" >> "$out/tied.txt"
        timeout 60 "$bin" bench --compare --cases kv --sizes $sizes --pattern $pattern \
            --skip "$skip" --runs 15 --roundtrip-runs 15 \
            --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/tied.txt" 2>&1
        echo "exit $?" >> "$out/tied.txt"
    done
done
timeout 120 env BITONIC_REQUIRE=cuda,opencl,cpu .device/faults faults::host_below > "$out/faults.txt" 2>&1
echo "exit $?" >> "$out/faults.txt"
awk '/^== (few|random)/{h=$2" "$3} /^ *[0-9^]+ +(bitonic|rust-cpu)/{print h, $1, $2, $(NF-1)}' "$out/tied.txt"
grep -E "^test |test result|exit" "$out/faults.txt"
