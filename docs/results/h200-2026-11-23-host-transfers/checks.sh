#!/usr/bin/env bash
# Checks of the pinned transfer engine on an NVIDIA GPU machine, over binaries from
# scripts/build-device.sh (gzipped in .device/): the suite on every backend, injected driver
# faults (both copy-back modes), device buffers, threads, compute-sanitizer memcheck over the
# CUDA suite and fault trials, and 2^32 + 3 keys. Summaries on stdout, logs in $OUT.
set -uo pipefail
cd "$(dirname "$0")"
for f in *.gz; do gunzip -f "$f"; done; chmod +x ./*
out="${OUT:-.}"; status=0
step() { echo; echo "=== $*"; }
step devices; ./bitonic devices 2>&1 | tail -n 6
step unit; timeout 60 ./unit --include-ignored --skip cuda_throughput > "$out/unit.txt" 2>&1 || status=1
grep -E "^test result|FAILED" "$out/unit.txt" | head
step suite; BITONIC_REQUIRE=cuda,opencl,cpu timeout 200 ./suite > "$out/suite.txt" 2>&1 || status=1
grep -E "^test result|FAILED|did not run" "$out/suite.txt" | head
step faults; BITONIC_REQUIRE=cuda,opencl timeout 120 ./faults > "$out/faults.txt" 2>&1 || status=1
grep -E "^test result|FAILED" "$out/faults.txt" | head; grep -E "^cuda0::faults::u32_keys_u64_values::n70000" "$out/faults.txt" | cut -c1-400
step device_buffers; BITONIC_REQUIRE=cuda,opencl timeout 60 ./device_buffers 2>&1 | grep -E "^test result|FAILED" | head
step threads; timeout 60 ./threads 2>&1 | grep -E "^test result|FAILED" | head
step memcheck suite; BITONIC_TEST_BACKENDS=cuda BITONIC_TEST_MAX_N=70000 BITONIC_REQUIRE=cuda \
    timeout 110 compute-sanitizer --tool memcheck --error-exitcode 3 ./suite > "$out/memcheck-suite.txt" 2>&1 || status=1
grep -E "^test result|ERROR SUMMARY" "$out/memcheck-suite.txt" | tail -n 2
step memcheck faults; BITONIC_TEST_BACKENDS=cuda BITONIC_REQUIRE=cuda \
    timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 ./faults > "$out/memcheck-faults.txt" 2>&1 || status=1
grep -E "^test result|ERROR SUMMARY" "$out/memcheck-faults.txt" | tail -n 2
step "2^32 + 3 keys"; timeout 100 ./huge --ignored --nocapture > "$out/huge.txt" 2>&1 || status=1
grep -E "sorted|refused|panicked|^test result" "$out/huge.txt" | head
echo; echo "status: $status"
