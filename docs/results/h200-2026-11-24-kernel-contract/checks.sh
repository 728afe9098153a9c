#!/usr/bin/env bash
# The library's checks on a GPU machine after the kernel contract and the kernel split:
# the suite on every backend, faults, unit tests, device buffers, and compute-sanitizer's
# memcheck and racecheck on CUDA trials that cover the cluster sorts (2^13..2^16) and the
# block sorts around them. Binaries from scripts/build-device.sh; outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi -L | tee "$out/gpu.txt"
# The sanitizers run beside the plain checks (their timing does not matter).
(BITONIC_TEST_MAX_N=70000 timeout 420 compute-sanitizer --tool memcheck --error-exitcode 3 \
    .device/suite cuda0::u32 > "$out/memcheck.txt" 2>&1; echo "memcheck exit $?" >> "$out/memcheck.txt") &
for t in random::asc::keys reversed::desc::pairs_u32; do
  (BITONIC_TEST_MAX_N=70000 timeout 420 compute-sanitizer --tool racecheck --error-exitcode 3 \
      .device/suite --exact "cuda0::u32::$t" > "$out/racecheck-${t//::/-}.txt" 2>&1
   echo "racecheck exit $?" >> "$out/racecheck-${t//::/-}.txt") &
done
BITONIC_REQUIRE=cuda,opencl,cpu timeout 200 .device/suite > "$out/suite.txt" 2>&1
echo "suite exit $?" >> "$out/suite.txt"
BITONIC_REQUIRE=cuda,opencl timeout 150 .device/faults --skip opencl0 > "$out/faults.txt" 2>&1
echo "faults exit $?" >> "$out/faults.txt"
timeout 150 .device/unit --include-ignored > "$out/unit.txt" 2>&1
echo "unit exit $?" >> "$out/unit.txt"
BITONIC_REQUIRE=cuda,opencl timeout 150 .device/device_buffers > "$out/device_buffers.txt" 2>&1
echo "device_buffers exit $?" >> "$out/device_buffers.txt"
wait
for f in "$out"/*.txt; do echo "== $f"; grep -E "^test result|ERROR SUMMARY|RACECHECK SUMMARY| exit " "$f" | tail -4; done
grep -E "^2\^|launches" "$out/unit.txt" | tail -8
