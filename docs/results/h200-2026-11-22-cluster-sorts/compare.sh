#!/usr/bin/env bash
# The full comparison (the command of the README's table), small sizes unheld.
cd "$(dirname "$0")/.."
o=$OUT
for f in .device/bitonic.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 400 .device/bitonic bench --compare --cases u32,kv,u64,rows --sizes 2^10,2^12,2^13,2^14,2^15,2^16,2^18,2^20,2^22,2^24,2^26,2^28 --cpu-max-log 24 --skip skylake --roundtrip-runs 3 --csv $o/compare.csv --plot $o/compare.svg > $o/compare.txt 2>&1
echo "compare rc=$?"
BITONIC_HOLD_STREAM=0 timeout 80 .device/bitonic bench --compare --cases u32 --max-log 16 --cpu-max-log 0 --skip skylake --skip torch --roundtrip-runs 1 --csv /tmp/nohold.csv --plot /tmp/nohold.svg > $o/compare-nohold.txt 2>&1
echo "nohold rc=$?"
grep -iE "error|mismatch|fail" $o/compare.txt | head -5
python3 .device/summ.py $o/compare.csv /tmp/nohold.csv
