#!/usr/bin/env bash
# Rows of keys longer than a tile merged each on its own. (1) The build before
# (.device/bitonic-base) and this one (.device/bitonic) taking turns twice on one-row sorts,
# whose merge kernels changed (u32 and u64 keys, 2^20..2^28). (2) Rows on CUDA and NVIDIA's
# OpenCL against the network in the same run (the `bitonic-oblivious` rows) and torch.sort,
# random keys, then the worst patterns. (3) Checks: the suite on every backend, the merge
# kernels' test and gpu_matches_cpu, the OpenCL unit tests, device buffers, and
# compute-sanitizer memcheck and racecheck over the suite's rows trials of u32 keys on CUDA.
# Binaries from scripts/build-device.sh. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/gpu.txt" 2>&1
skip=opencl,oblivious,torch,rayon,cpu,rust,pocl,skylake,epyc,xeon,cub
for round in 1 2; do
    for v in base rows; do
        bin=.device/bitonic; [ $v = base ] && bin=.device/bitonic-base
        echo "== $v, round $round" >> "$out/variants.txt"
        timeout 100 "$bin" bench --compare --cases u32,u64 --sizes 2^20,2^24,2^26,2^28 \
            --skip "$skip" --runs 15 --roundtrip-runs 1 \
            --csv /tmp/v.csv --plot /tmp/v.svg >> "$out/variants.txt" 2>&1
        echo "exit $?" >> "$out/variants.txt"
    done
done
timeout 200 .device/bitonic bench --compare \
    --cases rows2x2^24,rows4x2^22,rows16x2^20,rows64x2^18,rows256x2^16,rows3x20001 \
    --skip pocl,skylake,epyc,xeon,rayon,cpu --runs 15 --roundtrip-runs 3 \
    --csv "$out/rows.csv" --plot "$out/rows.svg" > "$out/rows.txt" 2>&1
echo "exit $?" >> "$out/rows.txt"
for p in sorted reversed few organ; do
    echo "== $p" >> "$out/patterns.txt"
    timeout 60 .device/bitonic bench --compare --cases rows16x2^20,rows2x2^24 --pattern $p \
        --skip pocl,skylake,epyc,xeon,rayon,cpu,torch --runs 7 --roundtrip-runs 1 \
        --csv /tmp/p.csv --plot /tmp/p.svg >> "$out/patterns.txt" 2>&1
    echo "exit $?" >> "$out/patterns.txt"
done
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/checks.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/checks.txt"
    grep -hE "^test result|FAILED|panicked|^real|SKIPPED|ERROR SUMMARY|RACECHECK SUMMARY" "/tmp/$name.log" | cut -c1-300 | head -30 >> "$out/checks.txt"
    case $name in *check*) grep -E "^test " "/tmp/$name.log" | cut -c1-200 >> "$out/checks.txt" ;; esac
    [ $status -eq 0 ] || tail -30 "/tmp/$name.log" | cut -c1-300 >> "$out/checks.txt"
}
run suite 150 .device/suite
run unit-gpu 90 .device/unit --ignored merge_kernels_are_stable_merges gpu_matches_cpu
run unit-opencl 90 .device/unit --ignored opencl::
run device_buffers 40 .device/device_buffers
run memcheck-rows 150 env BITONIC_TEST_BACKENDS=cuda compute-sanitizer --tool memcheck --print-limit 20 .device/suite rows::u32::random
run racecheck-rows 150 env BITONIC_TEST_BACKENDS=cuda compute-sanitizer --tool racecheck --print-limit 20 .device/suite rows::u32::random::asc::keys
cat "$out/gpu.txt"
grep -E "^==|^exit|^ *2\^[0-9]+ +bitonic" "$out/variants.txt" | sed 's/  */ /g'
grep -E "^==|^exit|^ *[0-9]+ rows|bitonic|cub|torch" "$out/rows.txt" | sed 's/  */ /g' | cut -c1-160
grep -E "^==|^exit|bitonic|cub" "$out/patterns.txt" | sed 's/  */ /g' | cut -c1-160
cat "$out/checks.txt"
