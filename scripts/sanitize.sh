#!/usr/bin/env bash
# Runs on the GPU machine, over the suite binary that scripts/build-device.sh builds into
# .device/ on a machine with Rust: the suite's CUDA trials under compute-sanitizer, once per tool
# (memcheck, racecheck, synccheck, initcheck), one log per tool in $OUT (default gpu-logs).
# Prints each tool's summary line and the suite's result; exits 1 if any tool reports an
# error, a trial fails, a run does not finish, or a summary is missing.
#
#   scripts/sanitize.sh [max-n] [tool...]
#
# max-n: the largest length the suite sorts (BITONIC_TEST_MAX_N), default 70000; racecheck,
# much slower, uses at most RACECHECK_MAX_N (default 20000). Tools: all four by default.
# Environment: SANITIZE_TIMEOUT (seconds per tool, default 540, so that one tool
# finishes within 10 minutes), RACECHECK_MAX_N, SUITE (default .device/suite), and SANITIZE_FILTER
# (a libtest filter to run fewer trials, e.g. "cuda0::u32").
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-logs}"
mkdir -p "$out"
max_n="${1:-70000}"
shift || true
tools=("$@")
[ ${#tools[@]} -eq 0 ] && tools=(memcheck racecheck synccheck initcheck)
race_n="${RACECHECK_MAX_N:-20000}"
[ "$race_n" -gt "$max_n" ] && race_n="$max_n"
limit="${SANITIZE_TIMEOUT:-540}"
suite="${SUITE:-.device/suite}"
filter=()
[ -n "${SANITIZE_FILTER:-}" ] && filter=("$SANITIZE_FILTER")

if ! command -v compute-sanitizer >/dev/null; then
    for dir in /usr/local/cuda/bin /usr/local/cuda/compute-sanitizer /opt/cuda/bin; do
        [ -x "$dir/compute-sanitizer" ] && PATH="$dir:$PATH"
    done
fi
if ! command -v compute-sanitizer >/dev/null; then
    echo "sanitize: compute-sanitizer not found (PATH, /usr/local/cuda/bin)" >&2
    exit 2
fi
if [ ! -x "$suite" ]; then
    echo "sanitize: $suite not found: run scripts/build-device.sh first" >&2
    exit 2
fi
compute-sanitizer --version | tail -n 1

status=0
for tool in "${tools[@]}"; do
    case "$tool" in
        memcheck | synccheck | initcheck) n="$max_n" ;;
        racecheck) n="$race_n" ;;
        *)
            echo "sanitize: unknown tool $tool (memcheck, racecheck, synccheck, initcheck)" >&2
            status=1
            continue
            ;;
    esac
    log="$out/sanitize-$tool.txt"
    echo
    echo "=== $tool (cuda trials, n <= $n, at most $limit s): $log"
    start=$(date +%s)
    BITONIC_TEST_BACKENDS=cuda BITONIC_TEST_MAX_N="$n" BITONIC_REQUIRE=cuda \
        timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 3 \
        "$suite" "${filter[@]}" >"$log" 2>&1
    rc=$?
    secs=$(($(date +%s) - start))
    # memcheck, synccheck, initcheck: "ERROR SUMMARY: N errors";
    # racecheck: "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)".
    summary=$(grep -E "(ERROR|RACECHECK) SUMMARY" "$log" | tail -n 1)
    result=$(grep -E "^test result" "$log" | tail -n 1)
    echo "${summary:-no summary line}"
    echo "${result:-no test result line}"
    errors=$(sed -nE 's/.*ERROR SUMMARY: ([0-9]+) error.*/\1/p; s/.*RACECHECK SUMMARY:.*\(([0-9]+) error.*/\1/p' <<<"$summary")
    if [ $rc -eq 124 ]; then
        echo "$tool: TIMED OUT after $limit s (lower max-n, or set SANITIZE_FILTER)"
        status=1
    elif [ $rc -ne 0 ] || [ -z "$summary" ] || [ -z "$result" ] || [ "${errors:-1}" != 0 ]; then
        echo "$tool: FAILED (exit $rc, ${errors:-unknown} errors) after $secs s; first reports:"
        grep -E "^========= (Invalid|Error|Race|Barrier|Uninitialized|Warning)|FAILED|panicked" "$log" | head -n 15
        status=1
    else
        echo "$tool: ok, 0 errors, $secs s"
    fi
done
echo
echo "sanitize status: $status"
exit $status
