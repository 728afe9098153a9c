#!/usr/bin/env bash
# The test command: sets up a fresh machine (PoCL, nvcc, libcuda stub) and runs every test
# of the library and of the benchmark crate (bench/) with every feature (the DataFusion adapter
# has its own script, scripts/test-datafusion.sh). Without a GPU the suite runs the CPU backend and the OpenCL kernels on
# PoCL, and reports the CUDA trials as ignored (not passed). Extra arguments go to the first
# cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --workspace --exclude bitonic-datafusion --exclude bitonic-candle --all-features --all-targets
cargo test --workspace --exclude bitonic-datafusion --exclude bitonic-candle --all-features "$@"
# The OpenCL backend's own tests (small tiles, build logs) need a device, so a plain
# `cargo test` lists them as ignored; PoCL is one, so run them for real here.
cargo test --workspace --exclude bitonic-datafusion --exclude bitonic-candle --all-features --lib -- --ignored opencl::
