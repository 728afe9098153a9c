#!/usr/bin/env bash
# The rest of the checks of the kept build (commit 90dc2de's code): the 2^32 + 3 test (whose
# u32 keys, an odd power of two, now sort tiles of 2^15 before 18 merge passes with 64-bit
# indices), fault injection on CUDA, pinned buffers and the thread test, all with
# BITONIC_REQUIRE=cuda,opencl,cpu. Binaries from scripts/build-device.sh. Summary in
# $OUT/more-checks.txt.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt" 2>&1
log="$out/more-checks.txt"; : > "$log"
req=(env BITONIC_REQUIRE=cuda,opencl,cpu)
run() {
    local name=$1 limit=$2; shift 2
    local start=$SECONDS
    timeout "$limit" "$@" > "$out/$name.out" 2>&1
    local status=$?
    { echo "== $name: $* (exit $status, $(( SECONDS - start )) s)"
      grep -E "^test result|^test .*FAILED|panicked|^failures:" "$out/$name.out" | head -20; } >> "$log"
    rm -f "$out/$name.out"
}
run huge 300 .device/huge --ignored --test-threads 1
run faults-cuda 150 "${req[@]}" .device/faults cuda
run pinned 60 "${req[@]}" .device/pinned
run threads 60 "${req[@]}" .device/threads
cat "$log"
