#!/usr/bin/env bash
# Runs on the GPU machine, over the binaries that scripts/build-device.sh builds into .device/
# on a machine with Rust (gzipped copies are unpacked first). Logs go to $OUT (or gpu-logs).
#
#   scripts/gpu-check.sh tests      every test binary, every backend required (CUDA, NVIDIA's
#                                   OpenCL, PoCL, CPU), and the library's ignored device tests
#   scripts/gpu-check.sh memcheck   compute-sanitizer memcheck over the suite's CUDA trials
#   scripts/gpu-check.sh huge       2^32 + 3 keys on every GPU (64-bit indexing)
#   scripts/gpu-check.sh bench      `bitonic bench` on every device
#   scripts/gpu-check.sh scaling    host slices past device memory and over every GPU, timed
#                                   (2^30 and 2^34 u32, 2^32 u64 pairs: 200 GiB of host memory)
#   scripts/gpu-check.sh spread     2^30 u32 in device memory: one GPU, then spread over 2 and 4
#   scripts/gpu-check.sh candle     candle tensors sorted on the device (candle/tests/cuda.rs) and
#                                   the candle bench (candle/examples/bench.rs), with
#                                   the CUDA libraries candle links found in Python's nvidia
#                                   packages (torch's), CUDA required
#
# With no argument: tests, memcheck and bench. Exit status 0 only if every part passed.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/* 2>/dev/null || true
status=0
step() { echo; echo "=== $*"; }
# Runs one test binary with every backend required; prints its summary lines.
run_test() {
    local name=$1; shift
    [ -x ".device/$name" ] || { echo "$name: not built"; status=1; return; }
    BITONIC_REQUIRE="${REQUIRE:-cuda,opencl,cpu}" timeout "${LIMIT:-240}" ".device/$name" "$@" \
        > "$out/$name.txt" 2>&1 || status=1
    echo "$name: $(grep -E '^test result' "$out/$name.txt" | tail -n 1)"
    grep -E "FAILED|panicked|did not run" "$out/$name.txt" | head -n 10
}
parts=("$@"); [ ${#parts[@]} -eq 0 ] && parts=(tests memcheck bench)
for part in "${parts[@]}"; do
    case $part in
        tests)
            step "devices"; nvidia-smi -L; .device/bitonic devices 2>&1 | tee "$out/devices.txt"
            step "tests"
            # The graph capture runs alone: work on the legacy stream from another trial's
            # thread during the capture would end it with an error that is not ours.
            REQUIRE= run_test unit --include-ignored --skip cuda_throughput --skip profile \
                --skip cudarc_calls_are_captured_into_a_graph
            timeout 60 .device/unit --ignored --exact \
                cuda::tests::cudarc_buffers::cudarc_calls_are_captured_into_a_graph \
                > "$out/unit-capture.txt" 2>&1 || status=1
            echo "unit (graph capture): $(grep -E '^test result' "$out/unit-capture.txt" | tail -n 1)"
            for t in suite properties threads device_buffers pinned faults arrow top_k scaling spread; do
                # faults fails every driver call of each case in turn: about 6 minutes on an H200.
                limit=${LIMIT:-240}; [ "$t" = faults ] && limit=${FAULTS_LIMIT:-600}
                [ -x ".device/$t" ] && LIMIT=$limit run_test "$t"
            done ;;
        memcheck)
            step "compute-sanitizer memcheck (CUDA trials, n <= ${SAN_MAX_N:-70000})"
            BITONIC_TEST_BACKENDS=cuda BITONIC_TEST_MAX_N="${SAN_MAX_N:-70000}" BITONIC_REQUIRE=cuda \
                timeout 300 compute-sanitizer --tool memcheck --error-exitcode 3 .device/suite \
                > "$out/memcheck.txt" 2>&1 || status=1
            grep -E "^test result|ERROR SUMMARY" "$out/memcheck.txt" | tail -n 3 ;;
        huge)
            step "2^32 + 3 u32 keys on every GPU"
            timeout 300 .device/huge --ignored --nocapture > "$out/huge.txt" 2>&1 || status=1
            grep -E "sorted|refused|panicked|^test result" "$out/huge.txt" ;;
        scaling)
            step "sorts in ranges: one GPU against every GPU"
            for case in "30 0" "34 0" "32 1"; do
                set -- $case
                BITONIC_SCALING_LOG2=$1 BITONIC_SCALING_PAIRS=$2 timeout 900 .device/scaling \
                    --ignored --exact measure::host_u32 >> "$out/scaling.txt" 2>&1 || status=1
            done
            grep -E "^measure|panicked|^test result" "$out/scaling.txt" ;;
        spread)
            step "device-resident keys spread over GPUs: one GPU against 2 and 4"
            BITONIC_SPREAD_LOG2="${SPREAD_LOG2:-30}" timeout 600 .device/spread --ignored --exact \
                measure::spread_u32 --nocapture > "$out/spread.txt" 2>&1 || status=1
            grep -E "^measure|panicked|^test result" "$out/spread.txt" ;;
        candle)
            step "candle tensors on the device"
            # The binary links libcublas.so.13 and its siblings by name: take them from the
            # Python packages that torch installs, or from a CUDA toolkit.
            libs=$(python3 - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia
    roots = [os.path.dirname(p) for p in nvidia.__path__]
except Exception:
    roots = []
def dirs_of(name):
    return sorted({os.path.dirname(f) for r in roots + ["/usr/local/cuda"]
                   for f in glob.glob(os.path.join(r, "**", name), recursive=True)})
if dirs_of("libcublas.so.13"):
    names = ("libcublas.so.13", "libcublasLt.so.13", "libcurand.so.10", "libnvrtc.so.13",
             "libcudart.so.13")
    print(":".join(dict.fromkeys(d for name in names for d in dirs_of(name))))
PY
)
            if [ ! -x .device/candle_cuda ]; then
                echo "candle_cuda: not built"; status=1
            elif [ -z "$libs" ]; then
                echo "candle: no libcublas.so.13 found (Python's nvidia packages, /usr/local/cuda): not run"
                status=1
            else
                LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" BITONIC_REQUIRE=cuda \
                    timeout 300 .device/candle_cuda > "$out/candle.txt" 2>&1 || status=1
                grep -E "^test result|FAILED|panicked|did not run" "$out/candle.txt" | head -n 10 \
                    || tail -n 3 "$out/candle.txt"
                if [ -x .device/candle_bench ]; then
                    # Ours against candle's kernel, candle's host path and torch (python3).
                    LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
                        timeout 400 .device/candle_bench > "$out/candle_bench.txt" 2>&1 || status=1
                    cat "$out/candle_bench.txt"
                else
                    echo "candle_bench: not built"; status=1
                fi
            fi ;;
        bench)
            step "bench"
            timeout 120 .device/bitonic bench --sizes 2^10,2^16,2^20,2^24 2>&1 \
                | tee "$out/bench.txt" || status=1 ;;
        *) echo "unknown part $part"; status=1 ;;
    esac
done
echo; echo "gpu-check status: $status"
exit $status
