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

// keys: raw keys of at most 32 bits (K: u32, or u16 for 16-bit keys, ordered at 16 bits in a
// 32-bit word), rows of `len` (from_keys != 0); words: the previous
// pass's runs (from_keys == 0). out: `rows * tiles` runs of K words.
template <typename K>
__device__ __forceinline__ void top_k_tiles(const K *__restrict__ keys, const u64 *__restrict__ words,
                                            u64 *__restrict__ out, const TopKArgs &a) {
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
                    w = ((u64)encode_as<K>((u32)keys[row * a.len + col], a.encoding) << 32) | col;
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

extern "C" __global__ void __launch_bounds__(TOP_K_THREADS)
    top_k_tiles_u32(const u32 *__restrict__ keys, const u64 *__restrict__ words, u64 *__restrict__ out,
                    TopKArgs a) {
    top_k_tiles<u32>(keys, words, out, a);
}

extern "C" __global__ void __launch_bounds__(TOP_K_THREADS)
    top_k_tiles_u16(const u16 *__restrict__ keys, const u64 *__restrict__ words, u64 *__restrict__ out,
                    TopKArgs a) {
    top_k_tiles<u16>(keys, words, out, a);
}

// The sort path (k past the on-chip tile), as in kernels/top_k.clh, which describes it: each
// row's elements become words that sort in the wanted order, the rows are sorted on the
// device, and top_k_take keeps each row's first k. Every kernel visits its elements in a
// loop over the whole grid.

// words[i] = ordered key << 32 | position in its row (keys of at most 32 bits).
template <typename K>
__device__ __forceinline__ void top_k_compose(const K *__restrict__ keys, u64 *__restrict__ words, u64 n,
                                              u64 row_len, u32 encoding) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        words[i] = ((u64)encode_as<K>((u32)keys[i], encoding) << 32) | (i % row_len);
    }
}

// Wider keys: a copy of the keys, to sort with their positions as values.
extern "C" __global__ void top_k_positions_u64(const u64 *__restrict__ keys, u64 *__restrict__ copy,
                                               u32 *__restrict__ positions, u64 n, u64 row_len) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        copy[i] = keys[i];
        positions[i] = (u32)(i % row_len);
    }
}

// After that sort: (elements of the row ordered before the key) << 32 | position, by a
// binary search of the sorted row; a second sort of these words puts equal keys in position
// order.
extern "C" __global__ void top_k_rank_u64(const u64 *__restrict__ sorted, const u32 *__restrict__ positions,
                                          u64 *__restrict__ words, u64 n, u64 row_len, u32 encoding) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u64 base = i - i % row_len;
        const u64 key = encode_key<u64>(sorted[i], encoding);
        u64 lo = 0;
        u64 hi = i - base;
        while (lo < hi) {
            const u64 mid = lo + ((hi - lo) >> 1);
            if (encode_key<u64>(sorted[base + mid], encoding) < key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        words[i] = (lo << 32) | positions[i];
    }
}

// The answer: each of `rows` rows of sorted words (`stride` apart) gives its first k
// positions (the low halves) and the keys at those positions of its row of `row_len` keys.
template <typename K>
__device__ __forceinline__ void top_k_take(const u64 *__restrict__ words, const K *__restrict__ keys,
                                           K *__restrict__ values, u32 *__restrict__ indices, u64 rows,
                                           u64 stride, u64 row_len, u32 k) {
    const u64 n = rows * k;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u64 row = i / k;
        const u32 position = (u32)words[row * stride + (i - row * k)];
        indices[i] = position;
        values[i] = keys[row * row_len + position];
    }
}

#define TOP_K_COMPOSE_KERNEL(KNAME, K)                                                            \
    extern "C" __global__ void top_k_compose_##KNAME(const K *keys, u64 *words, u64 n, u64 row_len, \
                                                     u32 encoding) {                             \
        top_k_compose<K>(keys, words, n, row_len, encoding);                                     \
    }

#define TOP_K_TAKE_KERNEL(KNAME, K)                                                              \
    extern "C" __global__ void top_k_take_##KNAME(const u64 *words, const K *keys, K *values,    \
                                                  u32 *indices, u64 rows, u64 stride,            \
                                                  u64 row_len, u32 k) {                          \
        top_k_take<K>(words, keys, values, indices, rows, stride, row_len, k);                   \
    }

TOP_K_COMPOSE_KERNEL(u32, u32)
TOP_K_COMPOSE_KERNEL(u16, u16)
TOP_K_TAKE_KERNEL(u32, u32)
TOP_K_TAKE_KERNEL(u64, u64)
TOP_K_TAKE_KERNEL(u16, u16)
