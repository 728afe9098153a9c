#!/usr/bin/env bash
# Fuzzes with cargo-fuzz (libFuzzer) for SECONDS per target (default 300), one target after
# the other, and prints each one's time, executions and result. Not part of CI (too long).
#
#   scripts/fuzz.sh [seconds] [target...]      targets: schedule api_cpu (default: both)
#
# - schedule: random n <= 100_000, tile parameters (log_tile 1..=13, max_global_levels
#   1..=10) and data; `schedule::emulate` must equal sort_unstable, keys and key-value.
# - api_cpu: random bytes become a key type, an order, values and keys; the Sorter on the
#   CPU backend must equal Rust's sort, keep every pair, and reject bad calls cleanly.
#
# Installs what is missing: a nightly toolchain (or, if rustup cannot install one, stable
# with RUSTC_BOOTSTRAP=1) and cargo-fuzz. Environment:
#   FUZZ_SANITIZER=none|address   default none: the CPU path has no `unsafe`, so ASan only
#                                 slows it down; debug assertions and overflow checks stay on.
#   FUZZ_JOBS=N                   libFuzzer workers per target (default 1; N > 1 uses -fork=N).
#   OUT=dir                       logs (default fuzz/logs); the corpus stays in fuzz/corpus/,
#                                 failing inputs go to fuzz/artifacts/<target>/.
# Replay a failure: cargo +nightly fuzz run -s none <target> fuzz/artifacts/<target>/<file>
set -uo pipefail
cd "$(dirname "$0")/.."
secs="${1:-300}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(schedule api_cpu)
out="${OUT:-fuzz/logs}"
mkdir -p "$out"
sanitizer="${FUZZ_SANITIZER:-none}"
jobs="${FUZZ_JOBS:-1}"
fork=()
[ "$jobs" -gt 1 ] && fork=(-fork="$jobs")

toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    toolchain=(+nightly)
elif rustup toolchain install nightly --profile minimal >&2; then
    toolchain=(+nightly)
else
    echo "fuzz: no nightly toolchain; using stable with RUSTC_BOOTSTRAP=1" >&2
    export RUSTC_BOOTSTRAP=1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked >&2 || exit 1
fi
echo "fuzz: $(cargo "${toolchain[@]}" --version), $(cargo fuzz --version), sanitizer $sanitizer"

status=0
for target in "${targets[@]}"; do
    log="$out/$target.log"
    echo "=== $target: $secs s (log $log)"
    start=$(date +%s)
    cargo "${toolchain[@]}" fuzz run -s "$sanitizer" "$target" -- \
        -max_total_time="$secs" -timeout=60 -print_final_stats=1 \
        "${fork[@]}" >"$log" 2>&1
    rc=$?
    end=$(date +%s)
    # libFuzzer's own summary: "Done N runs in S second(s)" and the final stats.
    grep -E "^Done [0-9]+ runs|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added|stat::peak_rss_mb" "$log"
    grep -E "INFO: fuzzed for|corp: " "$log" | tail -n 1
    if [ $rc -ne 0 ]; then
        status=1
        echo "$target: FAILED (exit $rc) after $((end - start)) s:"
        grep -E "panicked|ERROR|SUMMARY|artifact_prefix|Test unit written" "$log" | head -n 20
    else
        echo "$target: ok, $((end - start)) s wall clock (build included), $(ls fuzz/corpus/"$target" 2>/dev/null | wc -l) corpus entries"
    fi
done
exit $status
