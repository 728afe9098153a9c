#!/usr/bin/env bash
# The checks of the kept build (streaming stores, 16 MiB slots), as run on the H100 machine:
# the fault-injection test and the suite on every backend, CUDA and OpenCL in both modes, with
# limits that fit the H100 (the fault-injection test took 309 s there). Outputs go to $OUT.
# (unit, threads, pinned and device_buffers ran on the 8 MiB build of the same code, through
# docs/results/h200-2026-11-25-four-way-merges/checks.sh: checks-unit-threads-pinned-device_buffers.txt.)
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
(time timeout 450 env BITONIC_REQUIRE=cuda,opencl,cpu .device/faults) > "$out/faults.txt" 2>&1
echo "faults exit $?" >> "$out/faults.txt"
(time timeout 200 env BITONIC_REQUIRE=cuda,opencl,cpu .device/suite) > "$out/suite.txt" 2>&1
echo "suite exit $?" >> "$out/suite.txt"
grep -hE "^test result|exit|^real|FAILED|panicked" "$out/faults.txt" "$out/suite.txt"
