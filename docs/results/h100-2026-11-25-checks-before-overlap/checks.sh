#!/usr/bin/env bash
# Checks of 59cab47 on the GPU machine that its build had not had there: the library's unit
# tests (CUDA and OpenCL device tests included), threads (its trial of rayon tasks sorting
# beside a thread's long sort among them), the fault injection (the pipelined case among
# them) and the property tests, on every backend found. Output goes to $OUT/checks.txt (the
# full logs to /tmp).
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >> "$out/checks.txt"
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/checks.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/checks.txt"
    grep -hE "^test result|FAILED|panicked|^real|SKIPPED|did not run" "/tmp/$name.log" >> "$out/checks.txt"
    [ $status -eq 0 ] || tail -40 "/tmp/$name.log" >> "$out/checks.txt"
}
run unit 150 .device/unit
run threads 120 .device/threads
run faults 330 .device/faults
cat "$out/checks.txt"
