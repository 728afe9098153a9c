#!/usr/bin/env bash
# The candle adapter (bitonic-candle): lints, docs and tests, once, under its default features.
# The core's lints and tests leave it out, so that candle builds once per CI run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo clippy -p bitonic-candle --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc -p bitonic-candle --no-deps
cargo test -p bitonic-candle "$@"
