#!/usr/bin/env bash
# The checks of the merge-path sorts (the build whose two-way passes load ahead), those named
# as arguments (default: all): suite, properties, device_buffers, threads, faults, pinned (every backend, CUDA in both modes),
# unit, unit-gpu (the merge kernels' own test and gpu_matches_cpu), huge (2^32 + 3 keys),
# memcheck and racecheck (compute-sanitizer over the merge kernels' test). Binaries from
# scripts/build-device.sh; all output goes to $OUT/checks-<first name>.txt.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
names=("$@"); [ ${#names[@]} -eq 0 ] && names=(suite properties device_buffers threads faults pinned unit unit-gpu huge memcheck racecheck)
log="$out/checks-${names[0]}.txt"; : > "$log"
merge_test=(.device/unit --ignored merge_kernels_are_stable_merges)
for name in "${names[@]}"; do
    case $name in
        suite|properties|device_buffers|threads|faults|pinned) cmd=(env BITONIC_REQUIRE=cuda,opencl,cpu .device/$name); limit=200 ;;
        unit) cmd=(.device/unit); limit=30 ;;
        unit-gpu) cmd=(.device/unit --ignored merge_kernels_are_stable_merges gpu_matches_cpu); limit=120 ;;
        huge) cmd=(.device/huge --ignored --test-threads 1); limit=540 ;;
        memcheck) cmd=(compute-sanitizer --tool memcheck --print-limit 20 "${merge_test[@]}"); limit=120 ;;
        racecheck) cmd=(compute-sanitizer --tool racecheck --print-limit 20 "${merge_test[@]}"); limit=200 ;;
        *) echo "unknown check $name" >> "$log"; continue ;;
    esac
    timeout "$limit" "${cmd[@]}" > "$out/$name.part" 2>&1
    echo "$name exit $?" >> "$out/$name.part"
    { echo "== $name: ${cmd[*]}"; grep -E "^test result|ERROR SUMMARY|RACECHECK SUMMARY| exit |^test .*(FAILED|ok)$|panicked|^failures:" "$out/$name.part" | grep -v "^test .* ok$" | head -40; } >> "$log"
    rm -f "$out/$name.part"
done
cat "$log"
