#!/usr/bin/env bash
# More checks of the kept tree (the binaries of checks.sh): the property tests on every
# backend, the pipelined fault case on NVIDIA's OpenCL, and compute-sanitizer over every
# rows trial of the suite on CUDA (memcheck) and over the u32 random-key rows trials
# (racecheck), with each trial's time. Summary in $OUT/more-checks.txt.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/more-checks.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/more-checks.txt"
    grep -hE "^test result|FAILED|panicked|^real|ERROR SUMMARY|RACECHECK SUMMARY" "/tmp/$name.log" | cut -c1-300 | head -30 >> "$out/more-checks.txt"
    [ $status -eq 0 ] || tail -30 "/tmp/$name.log" | cut -c1-300 >> "$out/more-checks.txt"
    case $name in *check*) grep -E "^test |took|ms$" "/tmp/$name.log" | cut -c1-200 | head -80 >> "$out/more-checks.txt" ;; esac
}
run properties 120 .device/properties
run faults-opencl1-pipelined 120 .device/faults opencl1::faults::u32_keys_pipelined
run memcheck-rows 200 env BITONIC_TEST_BACKENDS=cuda BITONIC_TEST_TIMES=1 compute-sanitizer --tool memcheck --print-limit 20 .device/suite ::rows::
run racecheck-rows 200 env BITONIC_TEST_BACKENDS=cuda BITONIC_TEST_TIMES=1 compute-sanitizer --tool racecheck --print-limit 20 .device/suite rows::u32::random
cat "$out/more-checks.txt"
