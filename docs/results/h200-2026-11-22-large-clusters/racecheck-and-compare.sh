#!/usr/bin/env bash
# Racecheck of the random u32 trial up to 140,000 keys with clusters for
# one-launch sorts only (the default) and up to 2^18 (where ncu-and-checks.sh found 3 hazards), in
# parallel, hazard reports kept; then the full comparison (the README's table).
cd "$(dirname "$0")/.."
o=$OUT
for f in .device/bitonic.gz .device/suite.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export BITONIC_TEST_BACKENDS=cuda BITONIC_REQUIRE=cuda BITONIC_TEST_MAX_N=140000
for m in 16 18; do
  BITONIC_CUDA_CLUSTER_MAX_LOG=$m timeout 290 compute-sanitizer --tool racecheck --print-limit 20 --error-exitcode 3 .device/suite --exact "cuda0::u32::random::asc::keys" > /tmp/race-$m.txt 2>&1 &
done
wait
unset BITONIC_TEST_BACKENDS BITONIC_REQUIRE BITONIC_TEST_MAX_N
for m in 16 18; do head -c 60000 /tmp/race-$m.txt > $o/race-max$m.txt; echo "race max $m: $(grep '^test result' /tmp/race-$m.txt) | $(grep -E 'RACECHECK SUMMARY' /tmp/race-$m.txt)"; done
timeout 280 .device/bitonic bench --compare --cases u32,kv,u64,rows --sizes 2^10,2^12,2^13,2^14,2^15,2^16,2^18,2^20,2^22,2^24,2^26,2^28 --cpu-max-log 24 --skip skylake --roundtrip-runs 3 --csv $o/compare.csv --plot $o/compare.svg > $o/compare.txt 2>&1
echo "compare rc=$?"
grep -iE "error|mismatch|fail" $o/compare.txt | head -5
python3 .device/summ.py $o/compare.csv
