#!/usr/bin/env bash
# Builds, on a machine with Rust, the binaries a GPU machine without Rust runs, into .device/:
# the `bitonic` command with CUDA and OpenCL (not the test-only fault injection), and, with
# every feature, the test suite, the 2^32+3 test, properties, threads, the fault-injection
# test (faults), Arrow, top-k, scaling (sorts in ranges), spread (device-resident sorts over
# several GPUs) and the library's unit tests; the candle crate's device tests and bench; and the
# argsort timing example.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
mkdir -p .device
cargo build --release -p bitonic-bench --features cuda,opencl --bin bitonic
cp "$CARGO_TARGET_DIR"/release/bitonic .device/bitonic
# `cargo test --no-run` names the test executables in its JSON messages.
cargo test -p bitonic --release --all-features --no-run --message-format=json --test suite --test huge --test properties --test threads --test faults --test device_buffers --test pinned --test arrow --test top_k --test scaling --test spread --lib \
    | python3 -c '
import json, shutil, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        name = m["target"]["name"] if m["target"]["kind"] == ["test"] else "unit"
        shutil.copy(m["executable"], ".device/" + name)
        print("built", name, file=sys.stderr)
'
# candle tensors sorted on the device (candle/tests/cuda.rs; `gpu-check.sh candle`).
cargo test -p bitonic-candle --release --features cuda --no-run --message-format=json --test cuda \
    | python3 -c '
import json, shutil, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        shutil.copy(m["executable"], ".device/candle_cuda")
        print("built candle_cuda", file=sys.stderr)
'
# The candle bench (candle/examples/bench.rs): our argsort and top-k against candle's and
# torch's at vocabulary shapes, run with the CUDA 13 libraries as `gpu-check.sh candle` finds them.
cargo build --release -p bitonic-candle --features cuda --example bench
cp "$CARGO_TARGET_DIR"/release/examples/bench .device/candle_bench
# The argsort timing (examples/stable_roundtrip.rs), on CUDA.
cargo build --release -p bitonic --features cuda --example stable_roundtrip
cp "$CARGO_TARGET_DIR"/release/examples/stable_roundtrip .device/stable_roundtrip
strip .device/* 2>/dev/null || true
ls -la .device
