#!/usr/bin/env bash
# One machine session (before the pipeline of pieces): the staged host path timed apart (the unit test cuda_transfer_profile:
# the Vec's upload and download through the pinned ring, the bus alone from a pinned buffer,
# and the host copies alone), device-resident sorts of two builds taking turns twice
# (.device/bitonic, the kept build; .device/bitonic-2chain, merge threads producing their 16
# outputs as two interleaved chains of 8), and the 2^32 + 3 test. Outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/gpu.txt" 2>&1
nproc >> "$out/gpu.txt"
timeout 150 .device/unit --ignored cuda_transfer_profile --nocapture > "$out/profile.txt" 2>&1
echo "exit $?" >> "$out/profile.txt"
for round in 1 2; do
    for v in kept 2chain; do
        bin=.device/bitonic; [ $v = 2chain ] && bin=.device/bitonic-2chain
        echo "== $v, round $round" >> "$out/kernels.txt"
        timeout 120 "$bin" bench --compare --cases u32,kv,u64 --sizes 2^20,2^24,2^26,2^28 \
            --skip opencl,oblivious,torch,rust-cpu,pocl,cub --runs 15 --roundtrip-runs 1 \
            --csv /tmp/kernels-$v-$round.csv --plot /tmp/kernels-$v-$round.svg >> "$out/kernels.txt" 2>&1
        echo "exit $?" >> "$out/kernels.txt"
    done
done
(time timeout 150 .device/huge --ignored --test-threads 1) > "$out/huge.txt" 2>&1
echo "huge exit $?" >> "$out/huge.txt"
cat "$out/gpu.txt" "$out/profile.txt"
grep -E "^==|^exit|^ *2\^[0-9]+ +bitonic" "$out/kernels.txt"
grep -E "^test result|exit|^real" "$out/huge.txt"
