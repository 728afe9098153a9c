#!/usr/bin/env bash
# Builds of `bitonic` (scripts/build-device.sh's first binary) taking turns in one machine
# session, twice each:
#   host part: bitonic-base (ordinary stores in the staged path's host copies), bitonic-nt
#   (streaming stores; .device/bitonic where that file is missing), bitonic-nt16 (streaming
#   stores, 16 MiB slots instead of 8 MiB):
#   our CUDA sorts' host round trips (Vec and pinned buffer) of u32 keys and u32 pairs;
#   kernel part: bitonic-base (merge blocks of 256 threads x 16 u32 outputs, 5 per
#   multiprocessor), bitonic-e32x128 (128 threads x 32 outputs, 6 per multiprocessor),
#   bitonic-e32x256 (256 threads x 32 outputs, 3 per multiprocessor): device-resident sorts.
#   opencl part: bitonic-base and .device/bitonic (the kept build: streaming stores and 16 MiB
#   slots) on NVIDIA's OpenCL: host round trips as in the host part.
# Usage: variants.sh [host] [kernels] [opencl] [rounds]. Outputs go to $OUT/host.txt and
# $OUT/kernels.txt (the tables' CSV and SVG files to /tmp).
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv > "$out/gpu.txt" 2>&1
nproc >> "$out/gpu.txt"
skip=opencl,oblivious,torch,rust-cpu,pocl,skylake,epyc,xeon
rounds=2
for a in "$@"; do [[ "$a" =~ ^[0-9]+$ ]] && rounds=$a; done
for part in "$@"; do
    [[ "$part" =~ ^[0-9]+$ ]] && continue
    for round in $(seq "$rounds"); do
        if [ "$part" = opencl ]; then
            for v in base kept; do
                echo "== $v, round $round" >> "$out/opencl.txt"
                bin=.device/bitonic-$v; [ $v = kept ] && bin=.device/bitonic
                timeout 150 "$bin" bench --compare --cases u32,kv --sizes 2^20,2^22,2^24,2^26,2^28 \
                    --skip cuda,oblivious,torch,rust-cpu,pocl,skylake,epyc,xeon --runs 3 --warmup 1 --roundtrip-runs 7 \
                    --csv /tmp/opencl-$v-$round.csv --plot /tmp/opencl-$v-$round.svg >> "$out/opencl.txt" 2>&1
                echo "exit $?" >> "$out/opencl.txt"
            done
        elif [ "$part" = host ]; then
            for v in base nt nt16; do
                echo "== $v, round $round" >> "$out/host.txt"
                bin=.device/bitonic-$v; [ -e "$bin" ] || bin=.device/bitonic
                timeout 150 "$bin" bench --compare --cases u32,kv --sizes 2^20,2^22,2^24,2^26,2^28 \
                    --skip $skip,cub --runs 3 --warmup 1 --roundtrip-runs 7 \
                    --csv /tmp/host-$v-$round.csv --plot /tmp/host-$v-$round.svg >> "$out/host.txt" 2>&1
                echo "exit $?" >> "$out/host.txt"
            done
        else
            for v in base e32x128 e32x256; do
                echo "== $v, round $round" >> "$out/kernels.txt"
                timeout 150 .device/bitonic-$v bench --compare --cases u32,u64 --sizes 2^20,2^22,2^24,2^26,2^28 \
                    --skip $skip,cub-radix --runs 15 --roundtrip-runs 1 \
                    --csv /tmp/kernels-$v-$round.csv --plot /tmp/kernels-$v-$round.svg >> "$out/kernels.txt" 2>&1
                echo "exit $?" >> "$out/kernels.txt"
            done
        fi
    done
done
for f in host kernels opencl; do
    [ -e "$out/$f.txt" ] && grep -E "^==|^exit|^ *2\^[0-9]+ +(bitonic|cub)" "$out/$f.txt"
done
