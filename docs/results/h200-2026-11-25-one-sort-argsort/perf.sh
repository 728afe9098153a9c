#!/usr/bin/env bash
# Stable argsort of keys up to 32 bits as one sort, measured and checked on the GPU machine
# with the binaries of scripts/build-device.sh (plus examples/stable_roundtrip built with
# `cargo build --release --features cuda,opencl --example stable_roundtrip`); each part into
# $OUT/<part>.txt.
#   timing   examples/stable_roundtrip up to 2^26, 5 timed runs (the default device: CUDA)
#   derived  the suite's argsort, stable and segment trials on every backend, both modes,
#            and the property tests
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
parts=("$@"); [ ${#parts[@]} -eq 0 ] && parts=(timing derived)
for part in "${parts[@]}"; do
    case $part in
        timing) timeout 400 .device/stable_roundtrip 26 5 2>&1; echo "exit $?" ;;
        derived) for f in ::argsort ::stable ::segments; do
                echo "== suite $f"; timeout 100 env BITONIC_REQUIRE=cuda,opencl,cpu .device/suite $f 2>&1 | grep -E "test result|FAILED|panicked"
            done
            echo "== properties"; timeout 200 env BITONIC_REQUIRE=cuda,opencl,cpu .device/properties 2>&1 | grep -E "test result|FAILED|panicked" ;;
        *) echo "unknown part $part" ;;
    esac > "$out/$part.txt"
    echo "#### $part"; cat "$out/$part.txt" | head -60
done
