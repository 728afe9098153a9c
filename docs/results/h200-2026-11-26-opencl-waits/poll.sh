#!/usr/bin/env bash
# OpenCL waits: the unit test opencl_staged_copy_enqueue_times (pieces each waited for, by
# polling the event's status first and by clWaitForEvents alone; host copies into and out of
# mapped memory), then host round trips of the build whose staged path polls a mark's status
# before sleeping in clWaitForEvents (.device/bitonic-poll) against the build before
# (.device/bitonic), taking turns A B B A, CUDA in the same runs. .device/unit is the polling
# build's unit tests, whose version of the enqueue test timed the pieces waited for both ways
# (the kept version times clWaitForEvents alone). Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/gpu.txt" 2>&1
timeout 60 .device/unit --ignored opencl_staged_copy_enqueue_times --nocapture > "$out/waits.txt" 2>&1
echo "exit $?" >> "$out/waits.txt"
for v in kept poll poll kept; do
    bin=.device/bitonic; [ $v = poll ] && bin=.device/bitonic-poll
    echo "== $v" >> "$out/poll.txt"
    timeout 120 "$bin" bench --compare --cases u32,kv --sizes 2^20,2^24,2^26,2^28 \
        --skip oblivious,cub,torch,rust,pocl,skylake,epyc,xeon --runs 3 --roundtrip-runs 5 \
        --csv /tmp/f-$v.csv --plot /tmp/f-$v.svg >> "$out/poll.txt" 2>&1
    echo "exit $?" >> "$out/poll.txt"
done
cat "$out/gpu.txt"; grep -E "MiB|exit" "$out/waits.txt"
grep -E "^==|^exit|^== case|^ *2\^[0-9]+ +bitonic" "$out/poll.txt" | sed 's/  */ /g'
