#!/usr/bin/env bash
# tests/threads.rs's rayon-tasks trial six times, then the whole test once, each with a time
# limit; a run still going at its limit has every thread's stack printed (cuda-gdb attached
# to it) before it is killed. Output in $OUT/threads-repeat.txt. Binary: the threads test
# from scripts/build-device.sh, not stripped.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
log="$out/threads-repeat.txt"
attempt() {
    local name=$1 limit=$2; shift 2
    local start=$SECONDS
    BITONIC_REQUIRE=cuda,opencl,cpu .device/threads "$@" > "/tmp/$name.log" 2>&1 &
    local pid=$!
    while kill -0 $pid 2>/dev/null && (( SECONDS - start < limit )); do sleep 0.5; done
    if kill -0 $pid 2>/dev/null; then
        echo "== $name: still running after $limit s; stacks:" >> "$log"
        timeout 60 cuda-gdb -q -batch -p $pid -ex "thread apply all bt 30" 2>&1 \
            | grep -E "^Thread|^#" | sed -E 's/ \(.*\) at / at /' | cut -c1-180 | head -400 >> "$log"
        kill -9 $pid
        grep -E "^test " "/tmp/$name.log" | cut -c1-120 >> "$log"
    else
        wait $pid
        echo "== $name: exit $? after $(( SECONDS - start )) s" >> "$log"
        grep -E "^test result|FAILED|panicked" "/tmp/$name.log" | cut -c1-200 >> "$log"
    fi
}
for i in 1 2 3 4 5 6; do attempt "rayon-tasks-$i" 45 rayon_tasks; done
attempt all 60
cat "$log"
