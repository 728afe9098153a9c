#!/usr/bin/env bash
# One merge pass of ours beside one of CUB merge sort, under Nsight Compute: random u32 keys
# of 2^24, the fourth merge launch of each sort. Sections: speed of light, occupancy, warp
# states (stall reasons), scheduler statistics, memory workload and launch statistics. This
# is where the gap between our merge-path sort and CUB merge sort lies
# (docs/performance.md, "Pass counts and memory floors").
#
# Ours comes from the library's ignored unit test `cuda_merge_profile` (plain launches), CUB's
# from `bitonic bench --compare`. Run it on the GPU machine from the repository root, with
# the binaries that scripts/build-device.sh builds into .device/ (`bitonic` and `unit`) and
# `ncu` on PATH:
#   bench/scripts/ncu-merge.sh
# Full reports go to $OUT (default gpu-logs/) as ncu-ours.txt and ncu-cub.txt; the main
# lines of each are printed.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/* 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/device.txt" 2>&1
sections=(--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats)
timeout 200 ncu --clock-control none "${sections[@]}" -k regex:merge_pass_u32_none --launch-skip 3 --launch-count 1 \
    .device/unit --ignored --nocapture cuda_merge_profile > "$out/ncu-ours.txt" 2>&1
echo "exit $?" >> "$out/ncu-ours.txt"
timeout 200 ncu --clock-control none --target-processes all "${sections[@]}" -k regex:DeviceMergeSortMergeKernel \
    --launch-skip 3 --launch-count 1 \
    .device/bitonic bench --compare --cases u32 --sizes 2^24 --runs 1 --warmup 0 --roundtrip-runs 1 \
    --skip bitonic,pocl,skylake,epyc,xeon,torch,rayon,cpu,rust,opencl,radix \
    --csv "$out/ncu-cub.csv" --plot "$out/ncu-cub.svg" > "$out/ncu-cub.txt" 2>&1
echo "exit $?" >> "$out/ncu-cub.txt"
for f in ncu-ours ncu-cub; do
    echo "== $f"
    grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issued Warp|No Eligible|Warp Cycles Per Issued|Block Limit|Shared Memory Configuration|Dynamic Shared|Active Warps Per|Eligible Warps|Stall|Mem Busy|L1/TEX Hit|L2 Hit|Max Bandwidth|One or More|exit" "$out/$f.txt" | sed 's/  */ /g' | head -45
done
