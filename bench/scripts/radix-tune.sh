#!/usr/bin/env bash
# Builds bench/scripts/radix_tune.cu with the GPU machine's nvcc and runs it: the CUDA radix
# sort's digit-pass variants beside CUB's radix sort, each result checked against CUB's.
# Arguments: log2 sizes (default 24 28). Run from the repository root on the GPU machine; no
# Rust build is needed. Output goes to stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
bin="${TMPDIR:-/tmp}/radix_tune"
"$nvcc" -arch="${ARCH:-sm_90}" -std=c++17 -O3 -Icuda -Ikernels -o "$bin" bench/scripts/radix_tune.cu
"$bin" "$@"
