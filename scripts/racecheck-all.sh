#!/usr/bin/env bash
# Runs on the GPU machine: compute-sanitizer racecheck over every CUDA trial of the suite
# (n <= RACECHECK_MAX_N, default 4096) in seven parallel processes: one racecheck process over
# all 450 trials takes longer than 10 minutes. Logs in $OUT (or gpu-logs).
#   scripts/racecheck-all.sh
cd "$(dirname "$0")/.."
OUT="${OUT:-gpu-logs}"; mkdir -p "$OUT"
export BITONIC_TEST_BACKENDS=cuda BITONIC_TEST_MAX_N="${RACECHECK_MAX_N:-4096}" BITONIC_REQUIRE=cuda
big="f32 f64 i64 u8 u32 argsort"
for f in $big; do
  timeout 480 compute-sanitizer --tool racecheck --error-exitcode 3 .device/suite cuda0::$f > $OUT/race-$f.txt 2>&1 &
done
skips=""; for f in $big; do skips="$skips --skip cuda0::$f"; done
timeout 480 compute-sanitizer --tool racecheck --error-exitcode 3 .device/suite $skips > $OUT/race-rest.txt 2>&1 &
wait
total=0
for f in $OUT/race-*.txt; do n=$(grep -c '\.\.\. ok' $f); total=$((total+n)); echo "$(basename $f): $n ok | $(grep '^test result' $f) | $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $f | tr '\n' ' ')"; done
echo "total trials ok under racecheck: $total"
! grep -L "RACECHECK SUMMARY: 0 hazards" $OUT/race-*.txt | grep -q .
