#!/usr/bin/env bash
# Why cluster passes are slow (ncu of one cluster merge pass and one
# block merge pass at 2^24), then correctness: the suite on every
# backend, memcheck over every CUDA trial up to 140,000 keys and racecheck over four u32
# trials up to 140,000 keys (clusters of 2^13..2^17, merges on clusters at 100,003) in
# parallel, unit tests, device buffers, threads.
cd "$(dirname "$0")/.."
o=$OUT
for f in .device/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis"
BITONIC_CUDA_CLUSTER_MAX_LOG=63 BITONIC_PROFILE_LOG_N=24 timeout 90 ncu --kernel-name regex:cluster_pass --launch-skip 3 --launch-count 1 $S .device/unit cuda_pass_profile --ignored --nocapture > $o/ncu-cluster-merge-2pow24.txt 2>&1; echo "ncu cluster rc=$?"
BITONIC_PROFILE_LOG_N=24 timeout 90 ncu --kernel-name regex:tile_pass --launch-skip 3 --launch-count 1 $S .device/unit cuda_pass_profile --ignored --nocapture > $o/ncu-block-merge-2pow24.txt 2>&1; echo "ncu block rc=$?"
for f in $o/ncu-*.txt; do echo "== $f"; grep -E "pass mode|Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Block Limit|Cluster|Warp Cycles Per Issued|Stall" $f | head -24; done
(BITONIC_REQUIRE=cuda,opencl,cpu timeout 300 .device/suite > $o/suite.txt 2>&1; echo "suite rc=$?" >> $o/suite.txt) &
export BITONIC_TEST_BACKENDS=cuda BITONIC_REQUIRE=cuda
(BITONIC_TEST_MAX_N=140000 timeout 380 compute-sanitizer --tool memcheck --error-exitcode 3 .device/suite > $o/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $o/memcheck.txt) &
for t in "random::asc::keys" "random::desc::pairs_u32" "few3::asc::keys" "reversed::asc::pairs_u32"; do
  n=$(echo $t | tr ':' '_')
  BITONIC_TEST_MAX_N=140000 timeout 380 compute-sanitizer --tool racecheck --error-exitcode 3 .device/suite --exact "cuda0::u32::$t" > /tmp/race-$n.txt 2>&1 &
done
wait
unset BITONIC_TEST_BACKENDS BITONIC_REQUIRE
echo "suite: $(grep -E '^test result|suite rc' $o/suite.txt | tr '\n' ' ')"; grep -E "FAILED|panicked" $o/suite.txt | head -5
echo "memcheck: $(grep -E '^test result|memcheck rc' $o/memcheck.txt | tr '\n' ' ') $(grep 'ERROR SUMMARY' $o/memcheck.txt | tail -1)"
for f in /tmp/race-*.txt; do echo "$(basename $f): $(grep '^test result' $f) | $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $f | tr '\n' ' ')"; done > $o/racecheck.txt; cat $o/racecheck.txt
timeout 60 .device/unit --include-ignored --skip cuda_throughput --skip cuda_pass_profile > $o/unit.txt 2>&1; echo "unit: $(grep '^test result' $o/unit.txt)"
BITONIC_REQUIRE=cuda,opencl timeout 40 .device/device_buffers > /tmp/db.txt 2>&1; echo "device_buffers: $(grep '^test result' /tmp/db.txt)" | tee -a $o/unit.txt
timeout 40 .device/threads > /tmp/th.txt 2>&1; echo "threads: $(grep '^test result' /tmp/th.txt)" | tee -a $o/unit.txt
