#!/usr/bin/env bash
# After the copy and the mark after it became separate link calls: the fault injection, the
# pinned-buffer tests, threads and memcheck again, then perf.sh's measurements. Binaries from
# scripts/build-device.sh; outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
run() { local name=$1 limit=$2; shift 2; timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "$name exit $?" >> "$out/$name.txt"; }
export BITONIC_REQUIRE=cuda,opencl,cpu
run faults 140 .device/faults
run pinned 60 .device/pinned
run threads 40 .device/threads
unset BITONIC_REQUIRE
run memcheck 50 compute-sanitizer --tool memcheck --print-limit 20 .device/pinned cuda0::
for f in faults pinned threads memcheck; do
    grep -E "^test result|ERROR SUMMARY| exit " "$out/$f.txt" | sed "s/^/$f: /"
done
grep -A3 "^failures:" "$out/faults.txt" | head -20
bash "$(dirname "$0")/perf.sh"
