#!/usr/bin/env bash
# Builds, here, the binaries the GPU machine runs (it has no Rust toolchain): the test suite,
# the 2^32+3 test, the library's unit tests and the `bitonic` command, with every feature, into .device/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
mkdir -p .device
cargo build --release --all-features --bin bitonic
cp "$CARGO_TARGET_DIR"/release/bitonic .device/bitonic
# `cargo test --no-run` names the test executables in its JSON messages.
cargo test --release --all-features --no-run --message-format=json --test suite --test huge --test properties --test threads --lib \
    | python3 -c '
import json, shutil, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        name = m["target"]["name"] if m["target"]["kind"] == ["test"] else "unit"
        shutil.copy(m["executable"], ".device/" + name)
        print("built", name, file=sys.stderr)
'
strip .device/* 2>/dev/null || true
ls -la .device
