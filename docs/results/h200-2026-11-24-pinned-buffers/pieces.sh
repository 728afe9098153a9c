#!/usr/bin/env bash
# The staged (`Vec`) round trip with three settings of the transfer engine's constants in
# src/host_transfer.rs, each built from this commit by `cargo build --release --example
# host_roundtrip --features cuda,opencl` with the constants edited:
#   roundtrip-piece256k-chunk2m  PIECE_BYTES = 256 KiB, MIN_CHUNK_BYTES = 2 MiB (as committed)
#   roundtrip-piece64k-chunk2m   PIECE_BYTES = 64 KiB
#   roundtrip-piece64k-chunk4m   PIECE_BYTES = 64 KiB, MIN_CHUNK_BYTES = 4 MiB
# Each runs `host_roundtrip 24 9` three times, the variants taking turns. Outputs go to $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
for round in 1 2 3; do
    for v in piece256k-chunk2m piece64k-chunk2m piece64k-chunk4m; do
        echo "== $v, round $round" >> "$out/pieces.txt"
        timeout 60 .device/roundtrip-$v 24 9 >> "$out/pieces.txt" 2>&1
    done
done
cat "$out/pieces.txt"
