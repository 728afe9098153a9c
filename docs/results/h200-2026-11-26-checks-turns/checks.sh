#!/usr/bin/env bash
# Checks of the tree whose rayon threads holding one of the crate's locks wait without running
# other work (src/turns.rs): tests/threads.rs's rayon-tasks trial four times and the whole
# test once, each with a time limit (a run still going at its limit has every thread's stack
# printed by cuda-gdb before it is killed); then the suite on every backend, fault injection
# on CUDA, the OpenCL unit tests on the first OpenCL GPU, bit-identical results to the CPU
# backend and the merge kernels' test on CUDA, pinned and device buffers, and the OpenCL
# staged copies' enqueue times. Summary in $OUT/checks.txt, threads in $OUT/threads.txt.
# Binaries from scripts/build-device.sh (threads not stripped).
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/checks.txt" 2>&1
attempt() {
    local name=$1 limit=$2; shift 2
    local start=$SECONDS
    BITONIC_REQUIRE=cuda,opencl,cpu .device/threads "$@" > "/tmp/$name.log" 2>&1 &
    local pid=$!
    while kill -0 $pid 2>/dev/null && (( SECONDS - start < limit )); do sleep 0.2; done
    if kill -0 $pid 2>/dev/null; then
        echo "== $name: still running after $limit s; stacks:" >> "$out/threads.txt"
        timeout 60 cuda-gdb -q -batch -p $pid -ex "thread apply all bt 30" 2>&1 \
            | grep -E "^Thread|^#" | sed -E 's/ \(.*\) at / at /' | cut -c1-180 | head -600 >> "$out/threads.txt"
        kill -9 $pid
        grep -E "^test " "/tmp/$name.log" | cut -c1-120 >> "$out/threads.txt"
    else
        wait $pid
        echo "== $name: exit $? after $(( SECONDS - start )) s" >> "$out/threads.txt"
        grep -E "^test result|FAILED|panicked" "/tmp/$name.log" | cut -c1-200 >> "$out/threads.txt"
    fi
}
for i in 1 2 3 4; do attempt "rayon-tasks-$i" 40 rayon_tasks; done
attempt threads-all 60
run() {
    local name=$1 limit=$2; shift 2
    echo "== $name: $*" >> "$out/checks.txt"
    (time timeout "$limit" env BITONIC_REQUIRE=cuda,opencl,cpu "$@") > "/tmp/$name.log" 2>&1
    local status=$?
    echo "$name exit $status" >> "$out/checks.txt"
    grep -hE "^test result|FAILED|panicked|^real|SKIPPED" "/tmp/$name.log" | cut -c1-300 | head -30 >> "$out/checks.txt"
    [ $status -eq 0 ] || tail -30 "/tmp/$name.log" | cut -c1-300 >> "$out/checks.txt"
}
run suite 150 .device/suite
run faults-cuda 140 .device/faults cuda
run unit-opencl 90 .device/unit --ignored opencl::
run gpu-tests 60 .device/unit --ignored gpu_matches_cpu merge_kernels_are_stable_merges
run pinned 40 .device/pinned
run device_buffers 30 .device/device_buffers
timeout 60 .device/unit --ignored opencl_staged_copy_enqueue_times --nocapture > "$out/enqueue-times.txt" 2>&1
echo "exit $?" >> "$out/enqueue-times.txt"
cat "$out/threads.txt" | grep -E "^==|result|FAILED" ; cat "$out/checks.txt"; tail -40 "$out/enqueue-times.txt"
