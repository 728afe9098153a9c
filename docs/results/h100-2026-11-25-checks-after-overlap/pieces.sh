#!/usr/bin/env bash
# OpenCL's staged (`Vec`) round trips with pipeline pieces of at most 1 MiB (as before), 2 MiB
# and 4 MiB: three builds of `bitonic` taking turns A B C C B A, each `bitonic bench --compare
# --cases u32,kv --sizes 2^24,2^26,2^28` on our CUDA and NVIDIA OpenCL backends (CUDA's pieces
# are 1 MiB in all three), median of 5 round trips after one untimed. Output in
# $OUT/pieces.txt. Binaries: .device/bitonic-pieces-{1m,2m,4m}, the `bitonic` command built
# with OpenCL's `MAX_PIECE_BYTES` at each size.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
for v in 1m 2m 4m 4m 2m 1m; do
    echo "== pieces of at most ${v/m/ MiB}" >> "$out/pieces.txt"
    timeout 90 .device/bitonic-pieces-$v bench --compare --cases u32,kv --sizes 2^24,2^26,2^28 \
        --skip oblivious,cub,torch,rust,pocl,skylake,epyc,xeon --runs 3 --roundtrip-runs 5 > /tmp/pieces.txt 2>&1
    echo "exit $?" >> "$out/pieces.txt"
    grep -E "^ *2\^(24|26|28) " /tmp/pieces.txt >> "$out/pieces.txt"
done
cat "$out/pieces.txt"
