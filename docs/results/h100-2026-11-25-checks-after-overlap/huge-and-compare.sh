#!/usr/bin/env bash
# The 2^32 + 3 test and the refusals of inputs larger than device memory (tests/huge.rs),
# with the host's free memory logged every 2 s beside it ($OUT/huge.txt, $OUT/huge-memory.txt);
# then host round trips on CUDA and OpenCL with peers in the same run: `bitonic bench
# --compare` of u32 keys and u32 keys + u32 values at 2^10, 2^16, 2^20, 2^24 and 2^28, five
# round trips each after one untimed, CUB, rayon and torch (pageable and pinned tensors)
# ($OUT/compare.{txt,csv,svg}). Binaries from scripts/build-device.sh.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
{ nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv; nproc; } > "$out/gpu.txt" 2>&1
( while true; do echo "$(date +%T) $(free -g | awk '/Mem:/ {print "used " $3 " GiB, available " $7 " GiB"}')"; sleep 2; done ) > "$out/huge-memory.txt" 2>&1 &
logger=$!
(time timeout 170 env BITONIC_REQUIRE=cuda,opencl,cpu .device/huge --ignored --test-threads 1 --nocapture) > "$out/huge.txt" 2>&1
echo "huge exit $?" >> "$out/huge.txt"
kill $logger
cut -c1-200 "$out/huge.txt" | grep -vE "^$"
timeout 380 .device/bitonic bench --compare --cases u32,kv --sizes 2^10,2^16,2^20,2^24,2^28 \
    --skip pocl,skylake,epyc,xeon --roundtrip-runs 5 \
    --csv "$out/compare.csv" --plot "$out/compare.svg" > "$out/compare.txt" 2>&1
echo "compare exit $?" >> "$out/compare.txt"
grep -E "^ *2\^(10|16|20|24|28) " "$out/compare.txt" | grep -vE "cub-(radix|segmented)|oblivious"
tail -2 "$out/compare.txt"
