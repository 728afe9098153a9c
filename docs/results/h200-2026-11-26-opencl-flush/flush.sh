#!/usr/bin/env bash
# OpenCL host round trips with the staged path's marks flushed (.device/bitonic-flush: each
# marker after a piece's copy is followed by clFlush) against the build before
# (.device/bitonic), taking turns A B B A; CUDA in the same runs. Outputs in $OUT.
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/gpu.txt" 2>&1
for v in kept flush flush kept; do
    bin=.device/bitonic; [ $v = flush ] && bin=.device/bitonic-flush
    echo "== $v" >> "$out/flush.txt"
    timeout 140 "$bin" bench --compare --cases u32,kv --sizes 2^20,2^24,2^26,2^28 \
        --skip oblivious,cub,torch,rust,pocl,skylake,epyc,xeon --runs 3 --roundtrip-runs 5 \
        --csv /tmp/f-$v.csv --plot /tmp/f-$v.svg >> "$out/flush.txt" 2>&1
    echo "exit $?" >> "$out/flush.txt"
done
cat "$out/gpu.txt"
grep -E "^==|^exit|^== case|^ *2\^[0-9]+ +bitonic" "$out/flush.txt" | sed 's/  */ /g'
