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

#include "warp_sort.cuh"

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

// The network on a tile of `size` words in shared memory (a power of two of at least K):
// afterwards its first K words are its K best, in order. The caller synchronizes before.
__device__ __forceinline__ void tile_select(u64 *t, u32 size, u32 log_k) {
    const u32 pairs = size >> 1;
    const u32 k = 1u << log_k;
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
}

// The half-cleaners of a tile held 32 words a thread (tile_select_registers): those on
// thread bits high - 1 .. 0 (between warps through `shared`, else between lanes), then those
// in registers; lower halves keep the smaller word.
__device__ __forceinline__ void tk_clean_below(u64 (&v)[32], u64 *shared, u32 high) {
    const u32 tid = threadIdx.x;
    NoValue none[32];
    for (u32 bit = high; bit-- > 0;) {
        if (bit >= 5u) {
            warps_level<u64, false>(v, shared, tid, tid ^ (1u << bit), ((tid >> bit) & 1u) == 0);
        } else {
            lane_level<u64, false>(v, 1u << bit, (((tid & 31u) >> bit) & 1u) == 0);
        }
    }
    round_network<u64, NoValue, 5, false>(v, none);
}

// A flip level on thread mask `mask`, registers reversed; `lower` keeps the smaller word.
__device__ __forceinline__ void tk_flip(u64 (&v)[32], u64 *shared, u32 mask, bool lower) {
    if (mask >= 32u) {
        warps_level<u64, true>(v, shared, threadIdx.x, threadIdx.x ^ mask, lower);
    } else {
        lane_level<u64, true>(v, mask, lower);
    }
}

// The same selection in registers, for tiles of 2^log_size >= 2^TOP_K_REGISTER_LOG_TILE words
// and blocks of exactly 2^(log_size - 5) threads (kernels/contract.h): a network in shared
// memory pays a barrier and two shared loads for every comparator, where here thread t holds
// the tile's words 32t .. 32t + 31 in registers, as the warp sort does (cuda/warp_sort.cuh),
// and only levels between warps go through shared memory. The runs are K' = max(K, 32)
// words, each on G = K'/32 consecutive threads: a thread's best 32 hold any K < 32 in order.
// 1. Each thread sorts its 32 words, then stages 6 .. log K' sort runs of K' across threads.
// 2. Merge level m pairs every run with the run G << m threads away, word i against word
//    K'-1-i (thread mask (G-1) | G << m, registers reversed), and both keep the smaller:
//    each pair of runs then holds the best K' of the two twice over, as a bitonic sequence,
//    which the half-cleaners across the run's threads and in registers sort. After log(T/G)
//    levels every run holds the tile's best K'.
// Reads the tile from `t` (padded) and leaves the best K' in order at its start; the caller
// synchronizes before.
__device__ __forceinline__ void tile_select_registers(u64 *t, u32 log_size, u32 log_k) {
    const u32 tid = threadIdx.x;
    const u32 threads = 1u << (log_size - 5);
    const u32 log_run = log_k > 5u ? log_k : 5u;
    const u32 group = 1u << (log_run - 5);
    u64 v[32];
    NoValue none[32];
#pragma unroll
    for (u32 r = 0; r < 32; ++r) {
        v[r] = t[pad(32u * tid + r)];
    }
    sort_registers<u64, NoValue, 32, 5>(v, none);
    for (u32 stage = 6; stage <= log_run; ++stage) {
        const u32 high = stage - 6;
        tk_flip(v, t, (1u << (high + 1)) - 1u, ((tid >> high) & 1u) == 0);
        tk_clean_below(v, t, high);
    }
    for (u32 far = group; far < threads; far <<= 1) {
        tk_flip(v, t, (group - 1u) | far, true);
        tk_clean_below(v, t, log_run - 5);
    }
    __syncthreads(); // every thread has read the last exchange's words
    if (tid < group) {
#pragma unroll
        for (u32 r = 0; r < 32; ++r) {
            t[pad(32u * tid + r)] = v[r];
        }
    }
    __syncthreads();
}

// The best K of the tile at the start of `t`: in registers where the tile and the block are
// those of tile_select_registers, else by the network in shared memory.
__device__ __forceinline__ void tile_best(u64 *t, u32 log_size, u32 log_k) {
    if (log_size >= TOP_K_REGISTER_LOG_TILE && blockDim.x == (1u << (log_size - 5))) {
        tile_select_registers(t, log_size, log_k);
    } else {
        tile_select(t, 1u << log_size, log_k);
    }
}

// Which words a tile launch's rows hold, by the candidate filter (top_k_filter): with no
// counts, each row's whole `len`; with them, the filter's candidates, each row's first
// `count` words, or, for a row whose count lies outside [k, capacity], the first k, which
// top_k_exact wrote (its best k exactly).
struct RowFilter {
    const u32 *counts;
    u32 k;
    u32 capacity;
};

// Whether the filter could not serve a row that kept `count` words: fewer than k, or more
// than its slots hold (TopKFilter::rescues in src/schedule/top_k/filter.rs). top_k_exact
// then writes the row's best k into its first slots, which every candidates' step reads.
__device__ __forceinline__ bool filter_rescued(u32 count, u32 k, u32 capacity) {
    return count < k || count > capacity;
}

// The candidate words a row of the filter holds: its count, or the k that top_k_exact wrote.
__device__ __forceinline__ u32 candidate_words(u32 count, u32 k, u32 capacity) {
    return filter_rescued(count, k, capacity) ? k : count;
}

__device__ __forceinline__ u64 row_words(const RowFilter f, u64 row, u64 len) {
    return f.counts == nullptr ? len : candidate_words(f.counts[row], f.k, f.capacity);
}

// keys: raw keys of at most 32 bits (K: u32, or u16 for 16-bit keys, ordered at 16 bits in a
// 32-bit word), rows of `len` (from_keys != 0); words: the previous
// pass's runs (from_keys == 0). out: `rows * tiles` runs of K words.
template <typename K>
__device__ __forceinline__ void top_k_tiles(const K *__restrict__ keys, const u64 *__restrict__ words,
                                            u64 *__restrict__ out, const TopKArgs &a, const RowFilter f) {
    u64 *t = reinterpret_cast<u64 *>(top_k_smem);
    const u32 size = 1u << a.log_tile;
    const u32 k = 1u << a.log_k;
    const u64 groups = a.rows * a.tiles;
    for (u64 g = blockIdx.x; g < groups; g += gridDim.x) {
        const u64 row = g / a.tiles;
        const u64 len = row_words(f, row, a.len);
        const u64 first = (g - row * a.tiles) << a.log_tile;
        for (u32 i = threadIdx.x; i < size; i += blockDim.x) {
            const u64 col = first + i;
            u64 w = ~0ull;
            if (col < len) {
                if (a.from_keys) {
                    w = ((u64)encode_as<K>((u32)keys[row * a.len + col], a.encoding) << 32) | col;
                } else {
                    w = words[row * a.len + col];
                }
            }
            t[pad(i)] = w;
        }
        __syncthreads();
        tile_best(t, a.log_tile, a.log_k);
        for (u32 i = threadIdx.x; i < k; i += blockDim.x) {
            out[g * k + i] = t[pad(i)];
        }
        // The next tile's loads must not overwrite words still being stored.
        __syncthreads();
    }
}

#define TOP_K_TILES_KERNEL(KNAME, K)                                                                \
    extern "C" __global__ void __launch_bounds__(TOP_K_THREADS)                                     \
        top_k_tiles_##KNAME(const K *__restrict__ keys, const u64 *__restrict__ words,              \
                            u64 *__restrict__ out, TopKArgs a, const u32 *__restrict__ counts,      \
                            u32 k, u32 capacity) {                                                  \
        top_k_tiles<K>(keys, words, out, a, RowFilter{counts, k, capacity});                        \
    }

TOP_K_TILES_KERNEL(u32, u32)
TOP_K_TILES_KERNEL(u16, u16)

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

// A copy of the keys, to sort with their positions as values: wider keys, and a full sort
// of one row of 32- or 64-bit keys, whose stable radix sort of the pairs is the result.
template <typename K>
__device__ __forceinline__ void top_k_positions(const K *__restrict__ keys, K *__restrict__ copy,
                                                u32 *__restrict__ positions, u64 n, u64 row_len) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        copy[i] = keys[i];
        positions[i] = (u32)(i % row_len);
    }
}
extern "C" __global__ void top_k_positions_u32(const u32 *keys, u32 *copy, u32 *positions, u64 n, u64 row_len) {
    top_k_positions<u32>(keys, copy, positions, n, row_len);
}
extern "C" __global__ void top_k_positions_u64(const u64 *keys, u64 *copy, u32 *positions, u64 n, u64 row_len) {
    top_k_positions<u64>(keys, copy, positions, n, row_len);
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
