#!/usr/bin/env bash
# Cluster sorts and the held OpenCL queue: correctness (suite on every
# backend, unit tests, memcheck and racecheck over the cluster sizes), then small sizes with
# clusters on and off, and OpenCL held and unheld at 2^20..2^24.
cd "$(dirname "$0")/.."
o=$OUT
for f in .device/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
BITONIC_REQUIRE=cuda,opencl,cpu timeout 250 .device/suite > $o/suite.txt 2>&1; echo "suite: $(grep '^test result' $o/suite.txt)"
grep -E "FAILED|panicked" $o/suite.txt | head -5
.device/unit --include-ignored --skip cuda_throughput --skip cuda_pass_profile > $o/unit.txt 2>&1; echo "unit: $(grep '^test result' $o/unit.txt)"
grep -E "FAILED|panicked" $o/unit.txt | head -5
export BITONIC_TEST_BACKENDS=cuda BITONIC_REQUIRE=cuda
BITONIC_TEST_MAX_N=40000 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 .device/suite cuda0::u32 > $o/memcheck.txt 2>&1; echo "memcheck rc=$?: $(grep -E '^test result' $o/memcheck.txt) $(grep 'ERROR SUMMARY' $o/memcheck.txt | tail -1)"
BITONIC_TEST_MAX_N=40000 timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 .device/suite cuda0::u32 > $o/racecheck.txt 2>&1; echo "racecheck rc=$?: $(grep -E '^test result' $o/racecheck.txt) $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $o/racecheck.txt | tail -2 | tr '\n' ' ')"
unset BITONIC_TEST_BACKENDS BITONIC_REQUIRE
C="--cpu-max-log 0 --skip skylake --skip torch --roundtrip-runs 1"
timeout 100 .device/bitonic bench --compare --cases u32,kv --sizes 2^10,2^11,2^12,2^13,2^14,2^15,2^16,2^17 $C --csv $o/on.csv --plot /tmp/on.svg > /tmp/on.txt 2>&1; echo "on rc=$?"
BITONIC_CUDA_CLUSTER_MAX_LOG=0 timeout 100 .device/bitonic bench --compare --cases u32,kv --sizes 2^10,2^11,2^12,2^13,2^14,2^15,2^16,2^17 $C --skip cub --csv $o/off.csv --plot /tmp/off.svg > /tmp/off.txt 2>&1; echo "off rc=$?"
BITONIC_CUDA_CLUSTER_MAX_LOG=16 timeout 100 .device/bitonic bench --compare --cases u32 --sizes 2^16 $C --skip cub --csv $o/max16.csv --plot /tmp/m.svg > /tmp/m.txt 2>&1; echo "max16 rc=$?"
timeout 100 .device/bitonic bench --compare --cases u32 --sizes 2^20,2^22,2^24 $C --csv $o/held.csv --plot /tmp/h.svg > /tmp/h.txt 2>&1; echo "held rc=$?"
BITONIC_HOLD_STREAM=0 timeout 100 .device/bitonic bench --compare --cases u32 --sizes 2^10,2^20,2^22,2^24 $C --csv /tmp/nohold.csv --plot /tmp/n.svg > /tmp/n.txt 2>&1; echo "nohold rc=$?"
grep -iE "error|fail" /tmp/on.txt /tmp/off.txt /tmp/h.txt | head -5
python3 .device/summ.py $o/on.csv $o/off.csv $o/max16.csv $o/held.csv /tmp/nohold.csv
