#!/usr/bin/env bash
# The checks of the final tree (after changes 53 and 54), with checks.sh of this directory:
# the suite, properties, device buffers, threads, pinned buffers, the merge kernels' test and
# gpu_matches_cpu, the OpenCL unit tests on NVIDIA's OpenCL, the 2^32 + 3 test, fault
# injection on CUDA, and the check of where short sorts run on every backend. Binaries
# from scripts/build-device.sh; summaries in $OUT.
set -uo pipefail
here="$(dirname "$0")"
bash "$here/checks.sh" suite properties device_buffers threads pinned unit-gpu unit-opencl huge faults-cuda
out="${OUT:-gpu-logs}"
timeout 120 env BITONIC_REQUIRE=cuda,opencl,cpu .device/faults faults::host_below > "$out/host-below.txt" 2>&1
echo "exit $?" >> "$out/host-below.txt"
grep -E "^test |test result|exit" "$out/host-below.txt"
