#!/usr/bin/env bash
# Probe: where do the local sort at 2^20 and the small sorts spend their time?
cd "$(dirname "$0")/.."
o=$OUT
for f in .device/unit.gz .device/bitonic.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
for l in 10 12 14 20; do BITONIC_PROFILE_LOG_N=$l .device/unit cuda_pass_profile --ignored --nocapture 2>&1 | grep -E "pass mode|launches" ; done > $o/passes-small.txt 2>&1
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats --section ComputeWorkloadAnalysis"
for l in 20 10; do
BITONIC_PROFILE_LOG_N=$l timeout 150 ncu --kernel-name regex:tile_pass --launch-skip 0 --launch-count 2 $S .device/unit cuda_pass_profile --ignored --nocapture > $o/ncu-$l.txt 2>&1
echo "ncu $l rc=$?"
done
grep -E "Duration|Registers Per|Block Size|Grid Size|Stall|Achieved Occ|Issue Slots Busy|Warp Cycles Per Issued|SM Busy|Shared" $o/ncu-20.txt | head -60
grep -E "^  pass|launches" $o/passes-small.txt
