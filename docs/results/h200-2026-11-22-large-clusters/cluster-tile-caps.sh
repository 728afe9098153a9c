#!/usr/bin/env bash
# Cluster tiles of 2^13..2^17 (BITONIC_CUDA_LOG_TILE caps the slice) at
# 2^18..2^28, and per-pass profiles at 2^20 with slices of 2^11.
cd "$(dirname "$0")/.."
o=$OUT
for f in .device/bitonic.gz .device/unit.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
C="--cpu-max-log 0 --skip skylake --skip torch --skip opencl --skip cub --roundtrip-runs 1"
for cap in 10 11 12 13; do
BITONIC_CUDA_LOG_TILE=$cap timeout 100 .device/bitonic bench --compare --cases u32,kv --sizes 2^18,2^20,2^22,2^24,2^28 $C --csv $o/cap$cap.csv --plot /tmp/c.svg > /tmp/cap$cap.txt 2>&1; echo "cap $cap rc=$?"
done
grep -iE "error|mismatch|fail" /tmp/cap*.txt | head -5
python3 .device/summ.py $o/cap1*.csv
for cap in 11 13; do BITONIC_CUDA_LOG_TILE=$cap BITONIC_PROFILE_LOG_N=20 timeout 60 .device/unit cuda_pass_profile --ignored --nocapture 2>&1 | grep -E "pass mode|launches"; done
BITONIC_CUDA_CLUSTER_MAX_LOG=16 BITONIC_PROFILE_LOG_N=18 timeout 60 .device/unit cuda_pass_profile --ignored --nocapture 2>&1 | grep -E "pass mode|launches"
BITONIC_PROFILE_LOG_N=18 timeout 60 .device/unit cuda_pass_profile --ignored --nocapture 2>&1 | grep -E "pass mode|launches"
