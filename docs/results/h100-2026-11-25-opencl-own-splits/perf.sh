#!/usr/bin/env bash
# OpenCL merge passes of few tiles without the splitter launch, and merge path on OpenCL
# GPUs from 128 KiB of keys, measured on the GPU machine with the binaries of
# scripts/build-device.sh: the parts named as arguments (default: unit compare), each into
# $OUT/<part>.txt.
#   unit      the OpenCL merge-path tests (keys and pairs; on the first OpenCL GPU)
#   compare   `bitonic bench --compare`, u32, u64 and u32 + u32 values, nine sizes from 2^14
#             to 2^28: CUDA and NVIDIA OpenCL, each by default and oblivious (the network
#             alone), CUB
#   before    NVIDIA OpenCL alone, 2^16..2^28: .device/bitonic-before and .device/bitonic,
#             one after the other. bitonic-before is the `bitonic` command of commit 0103ba1
#             (splitter kernel before every merge pass, merge path from 8 MiB of keys), built
#             like scripts/build-device.sh builds it
#   checks    the suite and the property tests on the OpenCL backend alone (required to run)
set -uo pipefail
out="${OUT:-gpu-logs}"; mkdir -p "$out"
for f in .device/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x .device/*
parts=("$@"); [ ${#parts[@]} -eq 0 ] && parts=(unit compare)
for part in "${parts[@]}"; do
    case $part in
        unit) timeout 200 .device/unit --ignored --nocapture merge_path_sorts lists_devices_and_reports_tiles 2>&1 ;;
        compare) timeout 240 .device/bitonic bench --compare --skip pocl,skylake,epyc,xeon,torch,rayon,cpu \
                --plot /dev/null --csv /dev/null --roundtrip-runs 1 --cases u32,u64,kv \
                --sizes 2^14,2^16,2^17,2^18,2^20,2^21,2^22,2^24,2^28 2>&1
            echo "exit $?" ;;
        before) for b in bitonic-before bitonic; do
                echo "== .device/$b"
                timeout 120 .device/$b bench --compare --skip pocl,skylake,epyc,xeon,torch,rayon,cpu,cuda \
                    --plot /dev/null --csv /dev/null --roundtrip-runs 1 --cases u32,u64,kv \
                    --sizes 2^16,2^17,2^18,2^20,2^21,2^22,2^24,2^28 2>&1
                echo "exit $?"
            done ;;
        checks) for t in suite properties; do
                echo "== $t"
                BITONIC_TEST_BACKENDS=opencl BITONIC_REQUIRE=opencl timeout 150 .device/$t 2>&1 | tail -5
                echo "$t exit ${PIPESTATUS[0]}"
            done ;;
        *) echo "unknown part $part" ;;
    esac > "$out/$part.txt"
    echo "#### $part"; grep -E "^==|^ *2\^[0-9]+ |exit|^test .*(ok|FAILED)$|test result|panicked|OpenCL tests run" "$out/$part.txt" | grep -vE "^test .* ok$" | grep -vE "^ *2\^[0-9]+ +cub-(radix|segmented)" | head -150
done
