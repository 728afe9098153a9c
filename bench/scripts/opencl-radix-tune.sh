#!/usr/bin/env bash
# Builds bench/scripts/opencl_radix_tune.cpp and runs it: the OpenCL radix sort
# (kernels/radix.clh) timed kernel by kernel through queue profiling, each result checked
# against std::stable_sort. Arguments: log2 sizes (default 20 24 28; a CPU device stops at
# 22). Run from anywhere in the repository; no Rust build is needed. Output goes to stdout.
#   OPENCL_PLATFORM      substring of the platform's name (default: the first with a GPU)
#   RADIX_CL_SOURCE_DIR  the kernel folder(s), ':' between them (default kernels): to time
#                        a change, copy kernels/ aside, edit radix.clh there and pass both,
#                        e.g. RADIX_CL_SOURCE_DIR=kernels:/tmp/kernels-b
#   RADIX_CL_PATTERN     the keys: 0 random (default), 1 ascending, 2 sixteen distinct,
#                        3 descending, 4 random below 2^24
#   CXX                  the C++ compiler (default g++)
# On the GPU machine: bench/scripts/opencl-radix-tune.sh 24 28
set -euo pipefail
cd "$(dirname "$0")/../.."
cxx="${CXX:-g++}"
bin="${TMPDIR:-/tmp}/opencl_radix_tune"
flags=()
# The CUDA toolkit's OpenCL headers and loader, where there is one; else the system's.
if [[ -d /usr/local/cuda/include/CL ]]; then flags+=(-I/usr/local/cuda/include); fi
if [[ -d /usr/local/cuda/lib64 ]]; then flags+=(-L/usr/local/cuda/lib64); fi
"$cxx" -std=c++17 -O2 -pthread "${flags[@]}" -o "$bin" bench/scripts/opencl_radix_tune.cpp -lOpenCL
"$bin" "$@"
