// Bitonic top-k for the CUDA backend (src/cuda/top_k.rs; the plan is src/schedule/top_k.rs),
// the same algorithm as kernels/top_k.clh, which describes it.
//
// Words are `ordered key << 32 | position`: the smaller word is the better one, and equal
// keys go to the lower position. Padding is the largest word. Each block takes a tile of
// 2^log_tile words of one row into shared memory (dynamic, PADDED_WORDS(log_tile) words of 8
// bytes), sorts runs of K = 2^log_k, then merges pairs of runs keeping K (word i of the first
// against word K-1-i of the second, the smaller kept in the first run's place: a bitonic
// sequence, which the half-cleaners sort) until one run is left, and writes it to `out` at
// (row * tiles + tile) * K.

#pragma once

#include "words.cuh"

// The lower index of comparator j of a level of stride 2^h: j with a zero bit inserted at h.
__device__ __forceinline__ u32 tk_lower(u32 j, u32 h) {
    return ((j >> h) << (h + 1)) | (j & ((1u << h) - 1u));
}

__device__ __forceinline__ void tk_cmpx(u64 *t, u32 a, u32 b) {
    const u64 x = t[pad(a)];
    const u64 y = t[pad(b)];
    if (x > y) {
        t[pad(a)] = y;
        t[pad(b)] = x;
    }
}

extern __shared__ __align__(16) unsigned char top_k_smem[];

extern "C" __global__ void __launch_bounds__(TOP_K_THREADS)
    top_k_tiles(const u32 *__restrict__ keys, const u64 *__restrict__ words, u64 *__restrict__ out,
                TopKArgs a) {
    u64 *t = reinterpret_cast<u64 *>(top_k_smem);
    const u32 size = 1u << a.log_tile;
    const u32 pairs = size >> 1;
    const u32 log_k = a.log_k;
    const u32 k = 1u << log_k;
    const u64 groups = a.rows * a.tiles;
    for (u64 g = blockIdx.x; g < groups; g += gridDim.x) {
        const u64 row = g / a.tiles;
        const u64 first = (g - row * a.tiles) << a.log_tile;
        for (u32 i = threadIdx.x; i < size; i += blockDim.x) {
            const u64 col = first + i;
            u64 w = ~0ull;
            if (col < a.len) {
                if (a.from_keys) {
                    w = ((u64)encode_key<u32>(keys[row * a.len + col], a.encoding) << 32) | col;
                } else {
                    w = words[row * a.len + col];
                }
            }
            t[pad(i)] = w;
        }
        __syncthreads();
        // Runs of K: stage s merges sorted halves of 2^s into sorted blocks of 2^(s+1).
        for (u32 s = 0; s < log_k; ++s) {
            for (u32 j = threadIdx.x; j < pairs; j += blockDim.x) {
                const u32 lo = tk_lower(j, s);
                tk_cmpx(t, lo, lo ^ ((2u << s) - 1u));
            }
            __syncthreads();
            for (u32 h = s; h-- > 0;) {
                for (u32 j = threadIdx.x; j < pairs; j += blockDim.x) {
                    const u32 lo = tk_lower(j, h);
                    tk_cmpx(t, lo, lo + (1u << h));
                }
                __syncthreads();
            }
        }
        // Merge levels: at level m the runs lie 2^m * K apart; each pair keeps its best K in
        // the first run's place.
        for (u32 m = 0; ((size >> log_k) >> m) > 1; ++m) {
            const u32 runs = (size >> log_k) >> (m + 1);
            for (u32 j = threadIdx.x; j < (runs << log_k); j += blockDim.x) {
                const u32 p = j >> log_k;
                const u32 i = j & (k - 1u);
                const u32 first_run = p << (log_k + m + 1);
                const u32 second_run = first_run + (k << m);
                const u64 x = t[pad(first_run + i)];
                const u64 y = t[pad(second_run + k - 1u - i)];
                t[pad(first_run + i)] = x < y ? x : y;
            }
            __syncthreads();
            for (u32 h = log_k; h-- > 0;) {
                for (u32 j = threadIdx.x; j < (runs << (log_k - 1)); j += blockDim.x) {
                    const u32 p = j >> (log_k - 1);
                    const u32 lo = (p << (log_k + m + 1)) + tk_lower(j & ((k >> 1) - 1u), h);
                    tk_cmpx(t, lo, lo + (1u << h));
                }
                __syncthreads();
            }
        }
        for (u32 i = threadIdx.x; i < k; i += blockDim.x) {
            out[g * k + i] = t[pad(i)];
        }
        // The next tile's loads must not overwrite words still being stored.
        __syncthreads();
    }
}
