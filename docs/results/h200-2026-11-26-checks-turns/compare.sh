#!/usr/bin/env bash
# One `bitonic bench --compare` of u32 keys and u32 pairs from 2^10 to 2^28 with CUB, torch
# and rayon, then the 2^32 + 3 test. Binaries from scripts/build-device.sh. Outputs in $OUT.
mkdir -p $OUT; cd .device && gunzip -f *.gz; chmod +x *; cd ..; nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/compare.txt; timeout 420 .device/bitonic bench --compare --cases u32,kv --sizes 2^10,2^12,2^14,2^16,2^20,2^24,2^28 --skip pocl,skylake,epyc,xeon --roundtrip-runs 7 --csv $OUT/compare.csv --plot $OUT/compare.svg >> $OUT/compare.txt 2>&1; echo "exit $?" >> $OUT/compare.txt; (time timeout 150 .device/huge --ignored --test-threads 1) > $OUT/huge.txt 2>&1; echo "huge exit $?" >> $OUT/huge.txt; tail -60 $OUT/compare.txt; tail -5 $OUT/huge.txt
