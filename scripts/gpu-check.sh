#!/usr/bin/env bash
# Runs on the GPU machine, over the binaries that scripts/build-device.sh builds into .device/
# on a machine with Rust: devices, the whole suite (CUDA, NVIDIA OpenCL, PoCL, CPU), compute-sanitizer
# memcheck over the CUDA trials, 2^32+3 keys on every GPU, and `bitonic bench`. Logs go to $OUT (or ./gpu-logs).
# Usage: scripts/gpu-check.sh [sanitizer-max-n]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-logs}"; mkdir -p "$out"
san_max_n="${1:-70000}"
status=0
step() { echo; echo "=== $*"; }
step "devices";   nvidia-smi -L; .device/bitonic devices 2>&1 | tee "$out/devices.txt"
step "unit tests"
.device/unit --include-ignored --skip cuda_throughput > "$out/unit.txt" 2>&1 || status=1
tail -n 3 "$out/unit.txt"
step "suite (every backend, cuda and opencl required)"
BITONIC_REQUIRE=cuda,opencl,cpu timeout 240 .device/suite > "$out/suite.txt" 2>&1 || status=1
grep -E "^test result|FAILED|failed|panicked|did not run" "$out/suite.txt" | head -n 40
step "compute-sanitizer memcheck (cuda trials, n <= $san_max_n)"
BITONIC_TEST_BACKENDS=cuda BITONIC_TEST_MAX_N="$san_max_n" BITONIC_REQUIRE=cuda \
    timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 .device/suite > "$out/memcheck.txt" 2>&1 || status=1
grep -E "^test result|ERROR SUMMARY" "$out/memcheck.txt" | tail -n 3
step "2^32 + 3 u32 keys on every GPU (64-bit indexing)"
timeout 300 .device/huge --ignored --nocapture > "$out/huge.txt" 2>&1 || status=1
grep -E "sorted|refused|panicked|^test result" "$out/huge.txt"
step "bench"
timeout 120 .device/bitonic bench --sizes 2^10,2^16,2^20,2^24 2>&1 | tee "$out/bench.txt" || status=1
echo; echo "gpu-check status: $status"
exit $status
