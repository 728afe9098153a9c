#!/usr/bin/env bash
# The closing checks, those named as arguments: suite, properties, device_buffers, threads,
# pinned, faults (every backend, CUDA in both modes), faults-cuda (CUDA alone; all of these
# with BITONIC_REQUIRE=cuda,opencl,cpu),
# unit (the library's unit tests), unit-gpu (the merge kernels' test and gpu_matches_cpu),
# unit-opencl (the OpenCL unit tests on NVIDIA's OpenCL), huge (2^32 + 3 keys), memcheck
# (compute-sanitizer over the merge kernels' test, then over the suite's CUDA trials of random
# u32 keys ascending, up to 3,000,001 keys, and of random i64 keys with u64 values
# ascending, whose 2^21 + 1 pairs take merge path) and racecheck (over the merge kernels' test,
# then the suite's CUDA trial of random u32 keys ascending up to 2^16 + 1 keys: warp, cluster
# and tile sorts). Binaries from scripts/build-device.sh; summaries in
# $OUT/checks-<first name>.txt.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt" 2>&1
log="$out/checks-$1.txt"; : > "$log"
merge_test=(.device/unit --ignored merge_kernels_are_stable_merges)
cuda=(env BITONIC_TEST_BACKENDS=cuda)
run() {
    local name=$1 limit=$2; shift 2
    local start=$SECONDS
    timeout "$limit" "$@" > "$out/$name.part" 2>&1
    local status=$?
    { echo "== $name: $* (exit $status, $(( SECONDS - start )) s)"
      grep -E "^test result|ERROR SUMMARY|RACECHECK SUMMARY|^test .*FAILED|panicked|^failures:" "$out/$name.part" | head -40
      [ $status -eq 0 ] || tail -20 "$out/$name.part" | cut -c1-300; } >> "$log"
    rm -f "$out/$name.part"
}
req=(env BITONIC_REQUIRE=cuda,opencl,cpu)
for name in "$@"; do
    case $name in
        suite|properties|device_buffers|threads|pinned) run $name 200 "${req[@]}" .device/$name ;;
        faults) run faults 330 "${req[@]}" .device/faults ;;
        faults-cuda) run faults-cuda 250 "${req[@]}" .device/faults cuda ;;
        unit) run unit 60 .device/unit ;;
        unit-gpu) run unit-gpu 120 .device/unit --ignored merge_kernels_are_stable_merges gpu_matches_cpu ;;
        unit-opencl) run unit-opencl 120 .device/unit --ignored opencl:: ;;
        huge) run huge 300 .device/huge --ignored --test-threads 1 ;;
        memcheck)
            run memcheck-merge 120 compute-sanitizer --tool memcheck --print-limit 20 "${merge_test[@]}"
            run memcheck-keys 150 "${cuda[@]}" compute-sanitizer --tool memcheck --print-limit 20 .device/suite cuda0::u32::random::asc::keys
            run memcheck-pairs 150 "${cuda[@]}" compute-sanitizer --tool memcheck --print-limit 20 .device/suite cuda0::i64::random::asc::pairs_u64 ;;
        racecheck)
            run racecheck-merge 150 compute-sanitizer --tool racecheck --print-limit 20 "${merge_test[@]}"
            run racecheck-keys 150 "${cuda[@]}" BITONIC_TEST_MAX_N=65537 compute-sanitizer --tool racecheck --print-limit 20 .device/suite cuda0::u32::random::asc::keys ;;
        *) echo "unknown check $name" >> "$log" ;;
    esac
done
cat "$log"
