#!/usr/bin/env bash
# The host's fixed costs of a parallel copy (host_copy_fixed_costs), the staged transfers
# timed apart (cuda_transfer_profile), short u32 pairs on the host against rayon
# (cpu_short_pairs_against_rayon), all to $OUT/host.txt; then the 2^32 + 3 test and refusals
# of inputs larger than device memory (tests/huge.rs, $OUT/huge.txt), and compute-sanitizer
# memcheck over the CUDA results-match test, whose lengths include sorts while uploading
# ($OUT/memcheck.txt); before those, the fault injection's sort-while-uploading case on NVIDIA
# OpenCL alone ($OUT/faults.txt), since every OpenCL case together takes more than 200 s.
# Binaries from scripts/build-device.sh.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
{ nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv; nproc; } > "$out/host.txt" 2>&1
for t in host_copy_fixed_costs cuda_transfer_profile cpu_short_pairs_against_rayon; do
    timeout 60 .device/unit --ignored "$t" --nocapture > "/tmp/$t.log" 2>&1
    echo "$t exit $?" >> "$out/host.txt"
    grep -vE "^running|^$|^test result" /tmp/$t.log | cut -c1-200 | head -30 >> "$out/host.txt"
done
(time timeout 150 .device/faults opencl1::faults::u32_keys_pipelined) > /tmp/faults.log 2>&1
echo "faults opencl1 pipelined exit $?" > "$out/faults.txt"
grep -E "pipelined|^test result|FAILED|panicked|^real" /tmp/faults.log | cut -c1-400 >> "$out/faults.txt"
(time timeout 180 env BITONIC_REQUIRE=cuda,opencl,cpu .device/huge --ignored --test-threads 1 --nocapture) > "$out/huge.txt" 2>&1
echo "huge exit $?" >> "$out/huge.txt"
(time timeout 190 compute-sanitizer --tool memcheck --print-limit 20 .device/unit --ignored gpu_matches_cpu) > /tmp/memcheck.log 2>&1
echo "memcheck exit $?" > "$out/memcheck.txt"
grep -E "ERROR SUMMARY|test result|FAILED|panicked|^real|Invalid|========= " /tmp/memcheck.log | cut -c1-200 | head -40 >> "$out/memcheck.txt"
cat "$out/host.txt" "$out/faults.txt"; cut -c1-200 "$out/huge.txt" | grep -vE "^$" | tail -12; cat "$out/memcheck.txt"
