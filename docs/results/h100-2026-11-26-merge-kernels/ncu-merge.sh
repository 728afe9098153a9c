#!/usr/bin/env bash
# Nsight Compute on one merge pass of ours and one of CUB merge sort, random u32 keys of 2^24
# (the fourth merge launch of each sort): speed of light, occupancy, warp states (stall
# reasons), scheduler statistics and memory workload. Ours from the unit test
# `cuda_merge_profile` (plain launches), CUB's from `bitonic bench --compare`. Binaries from
# scripts/build-device.sh (bitonic, unit) gzipped in .device/. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/device.txt" 2>&1
sections=(--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats)
timeout 200 ncu --clock-control none "${sections[@]}" -k regex:merge_pass_u32_none --launch-skip 3 --launch-count 1 \
    .device/unit --ignored --nocapture cuda_merge_profile > "$out/ncu-ours.txt" 2>&1
echo "exit $?" >> "$out/ncu-ours.txt"
timeout 200 ncu --clock-control none --target-processes all "${sections[@]}" -k regex:DeviceMergeSortMergeKernel \
    --launch-skip 3 --launch-count 1 \
    .device/bitonic bench --compare --cases u32 --sizes 2^24 --runs 1 --warmup 0 --roundtrip-runs 1 \
    --skip bitonic,pocl,skylake,epyc,xeon,torch,rayon,cpu,rust,opencl,radix \
    --csv /tmp/c.csv --plot /tmp/c.svg > "$out/ncu-cub.txt" 2>&1
echo "exit $?" >> "$out/ncu-cub.txt"
for f in ncu-ours ncu-cub; do
    echo "== $f"
    grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issued Warp|No Eligible|Warp Cycles Per Issued|Block Limit|Shared Memory Configuration|Dynamic Shared|Active Warps Per|Eligible Warps|Stall|Mem Busy|L1/TEX Hit|L2 Hit|Max Bandwidth|One or More|exit" "$out/$f.txt" | sed 's/  */ /g' | head -45
done
