#!/usr/bin/env bash
# After pinned buffers became zero-filled by PinnedBuffer::new rather than by each driver
# layer: the pinned-buffer tests on every backend, the pinned fault cases on CUDA and NVIDIA
# OpenCL, and memcheck over the pinned-buffer tests' CUDA trials. Binaries from
# `cargo test --release --all-features --no-run --test pinned --test faults`; outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
BITONIC_REQUIRE=cuda,opencl,cpu timeout 90 .device/pinned > "$out/pinned-zero-fill.txt" 2>&1
echo "pinned exit $?" >> "$out/pinned-zero-fill.txt"
timeout 120 .device/faults pinned > "$out/faults-zero-fill.txt" 2>&1
echo "faults exit $?" >> "$out/faults-zero-fill.txt"
timeout 60 compute-sanitizer --tool memcheck .device/pinned cuda0:: > "$out/memcheck-zero-fill.txt" 2>&1
echo "memcheck exit $?" >> "$out/memcheck-zero-fill.txt"
grep -hE "^test result|ERROR SUMMARY| exit " "$out"/*-zero-fill.txt
