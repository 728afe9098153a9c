#!/usr/bin/env bash
# The comparison behind the tables of README.md and docs/performance.md, in parts named as
# arguments (default: both):
#
#   compare   one `bitonic bench --compare` of u32 keys, u32 keys with u32 values, u64 keys
#             and 16384 rows of 1024 u32 keys, 2^10 to 2^28, with CUB's radix and merge
#             sorts, torch.sort and rayon (rayon up to 2^24) in the same run: device-resident
#             times and host round trips, every result checked;
#   patterns  sorted, reversed, few-distinct and organ-pipe u32 keys at 2^24 and 2^28 beside
#             random ones, our CUDA backend and CUB only (merge-path sorts depend on the input).
#   topk      top-k of f32 and bf16 rows beside torch.topk and full rows sorts, the five
#             shapes of at most 2^24 keys; topk-large the two larger ones (2^26 and 2^28 keys);
#   bf16      bf16 keys, 2^10 to 2^28, beside our u32 keys and torch.sort on bfloat16;
#   arrow     Arrow sort_to_indices (Float64, 10% nulls, 2^20 to 2^26) and lexsort_to_indices
#             (Int32, Float64; 2^24) beside arrow-ord, our argsort and rayon;
#   scaling-30, scaling-34, scaling-pairs
#             host-slice sorts over the first 1, 2 and 4 GPUs (--gpus 1,2,4) beside rayon:
#             u32 keys at 2^30, u32 keys at 2^34 (64 GiB, past one GPU's memory; rayon timed
#             at 2^30 and scaled by n log n), u32 keys with u32 values at 2^32 and u64 keys
#             with u64 values at 2^32 (scaling-pairs: both); `scaling` runs all three. Host memory: about three copies of the data (2^34: ~192 GiB).
# Each part fits one command of at most 10 minutes; `compare patterns` is the default.
#
# Run it on the GPU machine from the repository root, with the `bitonic` binary that
# scripts/build-device.sh builds into .device/ (CUDA, OpenCL and CUB linked in), or any
# other build named by BITONIC, e.g.
#   BITONIC="cargo run --release -p bitonic-bench --features cuda --" bench/scripts/compare.sh
# torch.sort takes part when python3 has torch with CUDA. Outputs (tables, CSV, SVG plots)
# go to $OUT (default gpu-logs/).
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
bitonic="${BITONIC:-.device/bitonic}"
if [ -z "${BITONIC:-}" ]; then
    for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
    chmod +x .device/* 2>/dev/null || true
fi
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current \
    --format=csv > "$out/device.txt" 2>&1
parts=("$@"); [ ${#parts[@]} -eq 0 ] && parts=(compare patterns)
for part in "${parts[@]}"; do
    case $part in
        compare)
            timeout 570 $bitonic bench --compare --cases u32,kv,u64,rows \
                --sizes 2^10,2^11,2^12,2^13,2^14,2^16,2^20,2^22,2^24,2^26,2^28 --cpu-max-log 24 \
                --skip pocl,skylake,epyc,xeon --roundtrip-runs 5 \
                --csv "$out/compare.csv" --plot "$out/compare.svg" > "$out/compare.txt" 2>&1
            echo "exit $?" >> "$out/compare.txt"
            grep -E "^== case|^ *2\^[0-9]+ +|^exit" "$out/compare.txt" | sed 's/  */ /g' ;;
        patterns)
            : > "$out/patterns.txt"
            for p in random sorted reversed few organ; do
                echo "== pattern $p" >> "$out/patterns.txt"
                timeout 100 $bitonic bench --compare --cases u32 --sizes 2^24,2^28 \
                    --pattern $p --runs 7 --roundtrip-runs 1 \
                    --skip pocl,skylake,epyc,xeon,torch,rayon,cpu,rust,opencl \
                    --csv "$out/patterns-$p.csv" --plot "$out/patterns-$p.svg" >> "$out/patterns.txt" 2>&1
                echo "exit $?" >> "$out/patterns.txt"
            done
            grep -E "^== pattern|^ *2\^[0-9]+ +|^exit" "$out/patterns.txt" | sed 's/  */ /g' ;;
        topk|topk-large|bf16|arrow)
            case $part in
                topk) cases=topk1x2^24:100,topk64x131072:50,topk4x131072:2048,topk16384x1024:32,topk8x2^20:16384 ;;
                topk-large) cases=topk256x262144:256,topk2048x131072:1024 ;;
                *) cases=$part ;;
            esac
            timeout 570 $bitonic bench --compare --cases "$cases" \
                --skip pocl,skylake,epyc,xeon --roundtrip-runs 5 \
                --csv "$out/$part.csv" --plot "$out/$part.svg" > "$out/$part.txt" 2>&1
            echo "exit $?" >> "$out/$part.txt"
            grep -E "^== case|^-- |^ *2\^[0-9]+ +|^exit" "$out/$part.txt" | sed 's/  */ /g' ;;
        scaling|scaling-30|scaling-34|scaling-pairs)
            case $part in
                scaling) subs=(scaling-30 scaling-34 scaling-pairs) ;;
                *) subs=("$part") ;;
            esac
            for sub in "${subs[@]}"; do
                case $sub in
                    scaling-30) spec="--cases u32 --sizes 2^30" ;;
                    scaling-34) spec="--cases u32 --sizes 2^34" ;;
                    scaling-pairs) spec="--cases kv,kv64 --sizes 2^32" ;;
                esac
                timeout 570 $bitonic bench --compare $spec --gpus 1,2,4 \
                    --skip pocl,skylake,epyc,xeon,opencl,cub,torch,oblivious --roundtrip-runs 5 \
                    --csv "$out/$sub.csv" --plot "$out/$sub.svg" > "$out/$sub.txt" 2>&1
                echo "exit $?" >> "$out/$sub.txt"
                grep -E "^== case|^note|^ *2\^[0-9]+ +|^exit" "$out/$sub.txt" | sed 's/  */ /g'
            done ;;
        *) echo "unknown part $part (compare, patterns, topk, topk-large, bf16, arrow, scaling, scaling-30, scaling-34, scaling-pairs)"; exit 2 ;;
    esac
done
