// Kernels of sorts spread over several devices (src/cuda/spread.rs): each device's part is
// sorted on its own first, so these only count and merge sorted runs. The runs hold the
// caller's keys as they are (not ordered words): every comparison encodes both sides with
// `encode_key`, so that a failure between two steps never leaves words the caller cannot read.

#pragma once

#include "words.cuh"

// Outputs of one merge block: SPREAD_THREADS threads of 2^SPREAD_LOG_E(K) outputs each.
#define SPREAD_THREADS 256u

// counts[j] = how many keys of the sorted run keys[0 .. n) have an ordered word <= probes[j]
// (one binary search per probe; a probe is an ordered word, widened to 64 bits).
template <typename K>
__device__ __forceinline__ void spread_count(const K *__restrict__ keys, u64 n, const u64 *__restrict__ probes,
                                             u64 m, u32 encoding, u64 *__restrict__ counts) {
    const u64 threads = (u64)gridDim.x * blockDim.x;
    for (u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x; j < m; j += threads) {
        const u64 probe = probes[j];
        u64 lo = 0;
        u64 hi = n;
        while (lo < hi) {
            const u64 mid = lo + ((hi - lo) >> 1);
            if ((u64)encode_key<K>(keys[mid], encoding) <= probe) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        counts[j] = lo;
    }
}

// splits[t] = how many of the first min(t * tile, len_a + len_b) outputs of the stable merge
// of runs a and b come from a, for t = 0 ..= tiles (a thread per entry).
template <typename K>
__device__ __forceinline__ void spread_split(const K *__restrict__ a, u64 len_a, const K *__restrict__ b, u64 len_b,
                                             u64 tile, u64 tiles, u32 encoding, u64 *__restrict__ splits) {
    const u64 threads = (u64)gridDim.x * blockDim.x;
    const u64 total = len_a + len_b;
    for (u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x; t <= tiles; t += threads) {
        const u64 diag = min(t * tile, total);
        splits[t] = split_diagonal<u64>(
            [&](u64 i, u64 j) { return encode_key<K>(a[i], encoding) <= encode_key<K>(b[j], encoding); }, len_a,
            len_b, diag);
    }
}

// dst[0 .. len_a + len_b) = the stable merge of runs a and b (ties take a's key), which do
// not overlap dst. Block tiles of blockDim.x * E outputs, their parts of a and b from
// `splits` (spread_split): the block copies both parts into shared memory, each thread finds
// its first output's diagonal there and merges E outputs, and the block stores the tile.
template <typename K, u32 E>
__device__ __forceinline__ void spread_merge(const K *__restrict__ a, u64 len_a, const K *__restrict__ b, u64 len_b,
                                             K *__restrict__ dst, const u64 *__restrict__ splits, u32 encoding) {
    K *sk = reinterpret_cast<K *>(tile_smem);
    const u32 tile = blockDim.x * E;
    const u64 total = len_a + len_b;
    const u64 tiles = (total + tile - 1) / tile;
    for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        const u64 diag = t * tile;
        const u32 m = (u32)min((u64)tile, total - diag);
        const u64 a0 = splits[t];
        const u32 la = (u32)(splits[t + 1] - a0);
        const u64 b0 = diag - a0;
        for (u32 i = threadIdx.x; i < m; i += blockDim.x) {
            sk[pad(i)] = i < la ? a[a0 + i] : b[b0 + (i - la)];
        }
        __syncthreads();
        const u32 first = threadIdx.x * E;
        K out[E];
        if (first < m) {
            u32 ia = split_diagonal<u32>(
                [&](u32 i, u32 j) {
                    return encode_key<K>(sk[pad(i)], encoding) <= encode_key<K>(sk[pad(la + j)], encoding);
                },
                la, m - la, first);
            u32 ib = la + (first - ia);
#pragma unroll
            for (u32 e = 0; e < E; ++e) {
                if (first + e < m) {
                    // Only words of the tile's m loaded ones are read.
                    bool take_a = ia < la;
                    if (take_a && ib < m) {
                        take_a = encode_key<K>(sk[pad(ia)], encoding) <= encode_key<K>(sk[pad(ib)], encoding);
                    }
                    if (take_a) {
                        out[e] = sk[pad(ia)];
                        ++ia;
                    } else {
                        out[e] = sk[pad(ib)];
                        ++ib;
                    }
                }
            }
        }
        __syncthreads();
#pragma unroll
        for (u32 e = 0; e < E; ++e) {
            if (first + e < m) {
                sk[pad(first + e)] = out[e];
            }
        }
        __syncthreads();
        for (u32 i = threadIdx.x; i < m; i += blockDim.x) {
            dst[diag + i] = sk[pad(i)];
        }
        // The next tile's loads overwrite what these stores read.
        __syncthreads();
    }
}

#define SPREAD_KERNELS(KNAME, K, E)                                                              \
    extern "C" __global__ void spread_count_##KNAME(const K *keys, u64 n, const u64 *probes, u64 m, \
                                                    u32 encoding, u64 *counts) {                 \
        spread_count<K>(keys, n, probes, m, encoding, counts);                                   \
    }                                                                                            \
    extern "C" __global__ void spread_split_##KNAME(const K *a, u64 len_a, const K *b, u64 len_b, \
                                                    u64 tile, u64 tiles, u32 encoding,          \
                                                    u64 *splits) {                               \
        spread_split<K>(a, len_a, b, len_b, tile, tiles, encoding, splits);                      \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(SPREAD_THREADS)                                 \
        spread_merge_##KNAME(const K *a, u64 len_a, const K *b, u64 len_b, K *dst,               \
                             const u64 *splits, u32 encoding) {                                  \
        spread_merge<K, E>(a, len_a, b, len_b, dst, splits, encoding);                           \
    }

// 8 outputs per thread for 4-byte keys, 4 for 8-byte ones: tiles of 2^11 and 2^10 keys,
// 8 KiB of shared memory (and padding) either way. src/cuda/spread.rs agrees.
SPREAD_KERNELS(u32, u32, 8u)
SPREAD_KERNELS(u64, u64, 4u)
