#!/usr/bin/env bash
# Every pass of large u32 sorts on clusters. Correctness first (CUDA suite,
# unit tests, memcheck and racecheck past 2^16), then the comparison with clusters on
# (default) and kept to one-launch sorts (BITONIC_CUDA_CLUSTER_MAX_LOG=16, as in change 15), and
# per-pass profiles.
cd "$(dirname "$0")/.."
o=$OUT
for f in .device/bitonic.gz .device/suite.gz .device/unit.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export BITONIC_TEST_BACKENDS=cuda BITONIC_REQUIRE=cuda
timeout 150 .device/suite > $o/suite.txt 2>&1; echo "suite: $(grep '^test result' $o/suite.txt)"
grep -E "FAILED|panicked" $o/suite.txt | head -5
timeout 100 .device/unit --include-ignored --skip cuda_throughput --skip cuda_pass_profile cuda > $o/unit.txt 2>&1; echo "unit: $(grep '^test result' $o/unit.txt)"
grep -E "FAILED|panicked" $o/unit.txt | head -5
BITONIC_TEST_MAX_N=140000 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 .device/suite cuda0::u32 > $o/memcheck.txt 2>&1; echo "memcheck rc=$?: $(grep -E '^test result' $o/memcheck.txt) $(grep 'ERROR SUMMARY' $o/memcheck.txt | tail -1)"
unset BITONIC_TEST_BACKENDS BITONIC_REQUIRE
C="--cpu-max-log 0 --skip skylake --skip torch --roundtrip-runs 1"
S=2^13,2^16,2^17,2^18,2^20,2^22,2^24,2^26,2^28
timeout 150 .device/bitonic bench --compare --cases u32,kv --sizes $S $C --csv $o/on.csv --plot /tmp/on.svg > $o/on.txt 2>&1; echo "on rc=$?"
BITONIC_CUDA_CLUSTER_MAX_LOG=16 timeout 120 .device/bitonic bench --compare --cases u32,kv --sizes $S $C --skip cub --skip opencl --csv $o/max16.csv --plot /tmp/m.svg > $o/max16.txt 2>&1; echo "max16 rc=$?"
grep -iE "error|mismatch|fail" $o/on.txt $o/max16.txt | head -5
python3 .device/summ.py $o/on.csv $o/max16.csv
for l in 20 24 28; do BITONIC_PROFILE_LOG_N=$l timeout 60 .device/unit cuda_pass_profile --ignored --nocapture 2>&1 | grep -E "pass mode|launches"; done > $o/passes.txt 2>&1
cat $o/passes.txt
