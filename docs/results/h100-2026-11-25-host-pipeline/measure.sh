#!/usr/bin/env bash
# Host round trips of two builds of `bitonic` (scripts/build-device.sh's first binary) taking
# turns in one machine session, A B B A: .device/bitonic-base (the staged path copying chunk
# by chunk, 3e8afba) and .device/bitonic (the pipeline of pieces). CUDA and NVIDIA OpenCL,
# u32 keys and u32 pairs, Vec and pinned-buffer round trips (median of 7 after one untimed),
# device-resident sorts (median of 3) beside them. Then the staged upload and download timed
# apart (the unit test cuda_transfer_profile) on the pipeline build. Outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/gpu.txt" 2>&1
nproc >> "$out/gpu.txt"
round=0
for v in base pipeline pipeline base; do
    round=$((round + 1))
    bin=.device/bitonic; [ $v = base ] && bin=.device/bitonic-base
    echo "== $v, run $round" >> "$out/host.txt"
    timeout 140 "$bin" bench --compare --cases u32,kv --sizes 2^20,2^22,2^24,2^26,2^28 \
        --skip oblivious,torch,rust-cpu,pocl,skylake,epyc,xeon,cub --runs 3 --warmup 1 --roundtrip-runs 7 \
        --csv /tmp/host-$v-$round.csv --plot /tmp/host-$v-$round.svg >> "$out/host.txt" 2>&1
    echo "exit $?" >> "$out/host.txt"
done
timeout 60 .device/unit --ignored cuda_transfer_profile --nocapture > "$out/profile.txt" 2>&1
echo "exit $?" >> "$out/profile.txt"
grep -E "^==|^exit|^ *2\^[0-9]+ +bitonic" "$out/host.txt"
cat "$out/profile.txt"
