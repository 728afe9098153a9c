#!/usr/bin/env bash
# The OpenCL trials of the suite and of the device-resident calls on Mesa's rusticl (on
# llvmpipe): a third OpenCL implementation beside PoCL and NVIDIA's, with a compiler of its
# own and 32 KiB of local memory, where the radix kernels do not fit and the plans must fall
# back. Installs mesa-opencl-icd where it is missing; rusticl is the only OpenCL platform the
# trials see (OCL_ICD_VENDORS). Run after scripts/test.sh, whose build it reuses; extra
# arguments go to the trials, after the skips below.
#
# The oblivious targets are skipped: they run the same network kernels as the default
# targets' short sorts, on llvmpipe at about the cost of the rest together (their 2^23-key
# sorts of 16-bit keys take minutes each), and PoCL runs them in scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
icd=/etc/OpenCL/vendors/rusticl.icd
if [ ! -e "$icd" ]; then
    echo "test-rusticl: installing Mesa's OpenCL (rusticl)" >&2
    export DEBIAN_FRONTEND=noninteractive
    sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq >&2
    $sudo_cmd apt-get install -y -qq mesa-opencl-icd >&2
fi
export OCL_ICD_VENDORS="$icd" RUSTICL_ENABLE=llvmpipe
# The trials must find rusticl's device: a run without it would pass having tested nothing.
export BITONIC_TEST_BACKENDS=opencl BITONIC_REQUIRE=opencl
cargo test --workspace --exclude bitonic-datafusion --exclude bitonic-candle --all-features \
    --test suite --test device_buffers -- --skip=-oblivious:: "$@"
