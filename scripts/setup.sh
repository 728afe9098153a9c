#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine, idempotently, and prints the
# environment to use (meant to be sourced: `source scripts/setup.sh`).
#  - PoCL, so the OpenCL kernels run for real on the CPU;
#  - nvcc 13.0 from PyPI, so the `cuda` feature compiles its kernels (13.0: the GPU
#    machine's driver refuses PTX from newer compilers);
#  - link-only stubs of libcuda and of the CUDA libraries that candle's `cuda` feature links
#    (scripts/cuda-stub.sh), so `cust` and cudarc link where no NVIDIA driver is installed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if ! ldconfig -p | grep 'libpocl\.so' >/dev/null || ! command -v clinfo >/dev/null; then
    echo "setup: installing PoCL (OpenCL on the CPU)" >&2
    export DEBIAN_FRONTEND=noninteractive
    sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq >&2
    $sudo_cmd apt-get install -y -qq ocl-icd-libopencl1 ocl-icd-opencl-dev pocl-opencl-icd clinfo >&2
fi

nvcc_path() {
    python3 - <<'PY' 2>/dev/null
import os
try:
    import nvidia
    print(os.path.join(os.path.dirname(list(nvidia.__path__)[0]), "nvidia", "cu13", "bin", "nvcc"))
except Exception:
    pass
PY
}
if [ -z "${NVCC:-}" ]; then
    NVCC="$(nvcc_path)"
    if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
        echo "setup: installing nvcc 13.0 from PyPI" >&2
        python3 -m pip install -q nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 \
            nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 >&2
        NVCC="$(nvcc_path)"
    fi
fi
export NVCC
# cudarc's build script (under candle's `cuda` feature) reads the CUDA version from
# `nvcc --version` on PATH (candle-kernels' build script takes NVCC).
case ":$PATH:" in
*":$(dirname "$NVCC"):"*) ;;
*) export PATH="$(dirname "$NVCC"):$PATH" ;;
esac
# candle-kernels compiles for the GPU's compute capability, which it asks nvidia-smi for; without
# one, that of the GPU machine (H200, 9.0).
if ! command -v nvidia-smi >/dev/null; then
    export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}"
fi

stub="$root/target/cuda-stub"
if [ ! -e "$stub/lib64/libcuda.so" ] || [ ! -e "$stub/lib64/libcudart.so" ]; then
    echo "setup: building the CUDA link stubs in $stub" >&2
    (cd "$root" && cargo fetch -q >&2)
    "$root/scripts/cuda-stub.sh" "$stub" >&2
fi
# cust_raw's build script looks for lib64/ here, and its link search path serves cudarc's
# libraries too. The stubs go on the library path only where no driver is installed (they only
# answer "no device").
export CUDA_LIBRARY_PATH="$stub"
if ! ldconfig -p | grep 'libcuda\.so\.1' >/dev/null; then
    export LD_LIBRARY_PATH="$stub/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
