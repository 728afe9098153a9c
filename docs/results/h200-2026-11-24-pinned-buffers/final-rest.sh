#!/usr/bin/env bash
# The one fault trial that final.sh's time limit cut (NVIDIA OpenCL, 6 MiB of keys in
# chunks: every point of both copy-back modes), the suite on every backend and the unit tests,
# on final.sh's binaries. Outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
run() { local name=$1 limit=$2; shift 2; timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "$name exit $?" >> "$out/$name.txt"; }
run faults-chunked 400 .device/faults opencl1::faults::u32_keys_chunked
BITONIC_REQUIRE=cuda,opencl,cpu run suite 120 .device/suite
run unit 40 .device/unit
for f in faults-chunked suite unit; do
    grep -E "^test result| exit " "$out/$f.txt" | sed "s/^/$f: /"
done
grep "u32_keys_chunked" "$out/faults-chunked.txt"
