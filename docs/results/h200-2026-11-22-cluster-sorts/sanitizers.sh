#!/usr/bin/env bash
# Sanitizers on the changed kernels (memcheck over every CUDA trial
# up to 20,000 keys; racecheck over u32 trials up to 70,000 keys, the cluster sizes, in four
# processes), device buffers, threads.
cd "$(dirname "$0")/.."
o=$OUT
for f in .device/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
export BITONIC_TEST_BACKENDS=cuda BITONIC_REQUIRE=cuda
BITONIC_TEST_MAX_N=20000 timeout 170 compute-sanitizer --tool memcheck --error-exitcode 3 .device/suite > $o/memcheck.txt 2>&1; echo "memcheck rc=$?: $(grep -E '^test result' $o/memcheck.txt) $(grep 'ERROR SUMMARY' $o/memcheck.txt | tail -1)"
for t in "random::asc::keys" "random::desc::pairs_u32" "few3::asc::keys" "reversed::asc::pairs_u32"; do
  n=$(echo $t | tr ':' '_')
  BITONIC_TEST_MAX_N=70000 timeout 330 compute-sanitizer --tool racecheck --error-exitcode 3 .device/suite --exact "cuda0::u32::$t" > $o/race-$n.txt 2>&1 &
done
wait
for f in $o/race-*.txt; do echo "$(basename $f): $(grep '^test result' $f) | $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $f | tr '\n' ' ')"; done
unset BITONIC_TEST_BACKENDS BITONIC_REQUIRE
BITONIC_REQUIRE=cuda,opencl timeout 60 .device/device_buffers > $o/device_buffers.txt 2>&1; echo "device_buffers: $(grep '^test result' $o/device_buffers.txt)"
timeout 60 .device/threads > $o/threads.txt 2>&1; echo "threads: $(grep '^test result' $o/threads.txt)"
