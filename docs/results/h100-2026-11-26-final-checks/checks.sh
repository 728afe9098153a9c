#!/usr/bin/env bash
# The final tree of 2026-11-26 (block-of-warps sorts, merge passes searching in the merge
# kernel, downloads waking the copiers first): the suite on every backend (CUDA and NVIDIA
# OpenCL in both modes, PoCL, the CPU) and the CUDA fault injection. Binaries from
# scripts/build-device.sh. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/device.txt"
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/checks.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/checks.txt"
    grep -hE "^test result|FAILED|panicked|^real" "/tmp/$name.log" | cut -c1-300 | head -30 >> "$out/checks.txt"
    [ $status -eq 0 ] || tail -30 "/tmp/$name.log" | cut -c1-300 >> "$out/checks.txt"
}
run suite 110 .device/suite
run faults-cuda 100 .device/faults cuda
cat "$out/checks.txt"
