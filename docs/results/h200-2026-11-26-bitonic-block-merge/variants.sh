#!/usr/bin/env bash
# Merge passes whose blocks merge by a bitonic merge in shared memory (.device/bitonic-bmerge,
# keys alone of 4 bytes) against the serial per-thread merge (.device/bitonic, the build
# before), taking turns twice; then the bitonic build on sorted, reversed, few-distinct and
# organ-pipe keys, its per-pass profile (cuda_merge_profile), its merge kernels' test and
# gpu_matches_cpu, and the OpenCL staged copies' enqueue and host-copy times. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$out/gpu.txt" 2>&1
skip=opencl,oblivious,torch,rust,pocl,skylake,epyc,xeon
for round in 1 2; do
    for v in kept bmerge; do
        bin=.device/bitonic; [ $v = bmerge ] && bin=.device/bitonic-bmerge
        extra=""; [ $round = 2 ] && extra=",cub"
        echo "== $v, round $round" >> "$out/variants.txt"
        timeout 120 "$bin" bench --compare --cases u32,u64 --sizes 2^20,2^22,2^24,2^26,2^28 \
            --skip "$skip$extra" --runs 15 --roundtrip-runs 1 \
            --csv /tmp/v-$v-$round.csv --plot /tmp/v-$v-$round.svg >> "$out/variants.txt" 2>&1
        echo "exit $?" >> "$out/variants.txt"
    done
done
for p in sorted reversed few organ; do
    echo "== bmerge, $p" >> "$out/patterns.txt"
    timeout 60 .device/bitonic-bmerge bench --compare --cases u32 --sizes 2^24,2^28 --pattern $p \
        --skip "$skip,cub" --runs 7 --roundtrip-runs 1 --csv /tmp/p.csv --plot /tmp/p.svg >> "$out/patterns.txt" 2>&1
    echo "exit $?" >> "$out/patterns.txt"
done
timeout 90 .device/unit --ignored cuda_merge_profile --nocapture > "$out/profile.txt" 2>&1
echo "exit $?" >> "$out/profile.txt"
timeout 60 .device/unit --ignored merge_kernels_are_stable_merges gpu_matches_cpu > "$out/tests.txt" 2>&1
echo "exit $?" >> "$out/tests.txt"
timeout 60 .device/unit --ignored opencl_staged_copy_enqueue_times --nocapture > "$out/enqueue-times.txt" 2>&1
echo "exit $?" >> "$out/enqueue-times.txt"
cat "$out/gpu.txt"
grep -E "^==|^exit|^ *2\^[0-9]+ +(bitonic|cub)" "$out/variants.txt" "$out/patterns.txt" | sed 's/  */ /g'
grep -E "result|exit" "$out/tests.txt"; tail -25 "$out/profile.txt"; tail -8 "$out/enqueue-times.txt"
