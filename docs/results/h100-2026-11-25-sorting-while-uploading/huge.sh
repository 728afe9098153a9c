#!/usr/bin/env bash
# The limits with sorting while uploading: 2^32 + 3 keys (257 chunks of 2^24 on CUDA), and
# more keys, and more pairs, than device memory refused with the input untouched and the
# sorter usable afterwards (tests/huge.rs). Output in $OUT/huge.txt.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
(time timeout 250 env BITONIC_REQUIRE=cuda,opencl,cpu .device/huge --ignored --test-threads 1 --nocapture) > "$out/huge.txt" 2>&1
echo "huge exit $?" >> "$out/huge.txt"
cut -c1-300 "$out/huge.txt" | tail -40
