#!/usr/bin/env bash
# The candle adapter (bitonic-candle): lints, docs and tests, once, with the `cuda` feature beside
# the default ones, so that the device path (candle/src/cuda.rs) is built and its trials listed
# (ignored without a CUDA GPU). candle-core's `cuda` feature compiles candle's kernels with nvcc
# and links the CUDA libraries: scripts/setup.sh puts nvcc on PATH and provides link-only stubs
# where CUDA is not installed. The core's lints and tests leave the adapter out, so that candle
# builds once per CI run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo clippy -p bitonic-candle --all-targets --features cuda -- -D warnings
# `--examples` resolves features with the dev-dependencies, as clippy's `--all-targets` and
# `cargo test` do: without it the dependencies' features differ (libtest-mimic's clap asks syn
# for more), and candle-core, candle's kernels and bitonic's PTX would all be built again.
RUSTDOCFLAGS="-D warnings" cargo doc -p bitonic-candle --no-deps --features cuda --lib --examples
cargo test -p bitonic-candle --features cuda "$@"
