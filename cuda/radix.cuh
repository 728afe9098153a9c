// The LSD radix sort of one row of 32- or 64-bit keys, alone or with values
// (src/schedule/radix.rs): a histogram of every digit from one read, the digits' starts and
// skip flags, one pass per digit whose tiles learn the counts of the tiles before them by
// decoupled look-back, and a copy back where the keys end in the scratch.
//
// Every pass reads raw keys and writes raw keys, encoding each in registers to find its
// digit, so that a pass does not depend on which passes before it were skipped. Which of
// the row and the scratch a pass reads follows from the skip flags of the digits below it.
//
// The state (u32 words, RadixPlan in src/schedule/radix.rs): counts, then starts,
// [digits][RADIX_BINS]; a skip flag per digit; a tile counter per digit; padding to 16 bytes;
// then two look-back regions of [tiles][RADIX_BINS] words.

#pragma once

#include "words.cuh"

#define RADIX_WARPS (RADIX_THREADS / 32)
// Tiles whose look-back words a digit pass loads at once.
#define RADIX_LOOK_BACK 16
// Consecutive keys a histogram thread reads at a time: two 16-byte loads of u32 keys, four
// of u64.
#define RADIX_HISTOGRAM_KEYS 8

// Digits of a key of K: one per byte.
template <typename K> __device__ __forceinline__ constexpr u32 radix_digits() { return sizeof(K) * 8 / RADIX_DIGIT_BITS; }

// Words of the state before the look-back (RadixPlan::header_words).
template <typename K> __device__ __forceinline__ constexpr u64 radix_header_words() {
    return ((u64)radix_digits<K>() * RADIX_BINS + 2 * radix_digits<K>() + 3) & ~3ull;
}

template <typename K> __device__ __forceinline__ u32 radix_digit(K ordered, u32 digit) {
    return (u32)(ordered >> (digit * RADIX_DIGIT_BITS)) & (RADIX_BINS - 1);
}

// The exclusive sum of x over the block's RADIX_THREADS threads; `sums` holds RADIX_WARPS
// words of shared memory. Every thread of the block must call it; it ends with a barrier,
// so `sums` may be reused after it.
__device__ __forceinline__ u32 radix_block_exclusive_sum(u32 x, u32 *sums) {
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u32 inclusive = x;
#pragma unroll
    for (u32 o = 1; o < 32; o <<= 1) {
        const u32 y = __shfl_up_sync(0xffffffffu, inclusive, o);
        if (lane >= o) {
            inclusive += y;
        }
    }
    if (lane == 31) {
        sums[warp] = inclusive;
    }
    __syncthreads();
    u32 before = 0;
    for (u32 w = 0; w < warp; ++w) {
        before += sums[w];
    }
    __syncthreads();
    return before + inclusive - x;
}

// Adds the keys of one thread's `m` consecutive ordered words to the block's counts of every
// digit: each run of equal digits with one shared-memory atomic, so that sorted rows and rows
// of one repeated key do not serialize on one counter.
template <typename K>
__device__ __forceinline__ void radix_count_run(const K (&w)[RADIX_HISTOGRAM_KEYS], u32 m, u32 *counts) {
#pragma unroll
    for (u32 d = 0; d < radix_digits<K>(); ++d) {
        u32 run = 0, bin = 0;
#pragma unroll
        for (u32 e = 0; e < RADIX_HISTOGRAM_KEYS; ++e) {
            if (e < m) {
                const u32 b = radix_digit(w[e], d);
                if (run > 0 && b != bin) {
                    atomicAdd(&counts[d * RADIX_BINS + bin], run);
                    run = 0;
                }
                bin = b;
                ++run;
            }
        }
        if (run > 0) {
            atomicAdd(&counts[d * RADIX_BINS + bin], run);
        }
    }
}

// The histogram: blocks stride over the row, each thread RADIX_HISTOGRAM_KEYS consecutive keys
// at a time, and add their block's counts of every digit to the state's.
template <typename K> __device__ __forceinline__ void radix_histogram(const K *__restrict__ keys, u32 *state, const RadixArgs &a) {
    __shared__ u32 counts[radix_digits<K>() * RADIX_BINS];
    for (u32 i = threadIdx.x; i < radix_digits<K>() * RADIX_BINS; i += blockDim.x) {
        counts[i] = 0;
    }
    __syncthreads();
    const bool aligned = (reinterpret_cast<size_t>(keys) & 15) == 0;
    const u64 step = (u64)gridDim.x * blockDim.x * RADIX_HISTOGRAM_KEYS;
    for (u64 first = ((u64)blockIdx.x * blockDim.x + threadIdx.x) * RADIX_HISTOGRAM_KEYS; first < a.n; first += step) {
        K w[RADIX_HISTOGRAM_KEYS];
        u32 m = 0;
        if (aligned && first + RADIX_HISTOGRAM_KEYS <= a.n) {
#pragma unroll
            for (u32 q = 0; q < RADIX_HISTOGRAM_KEYS; q += 4) {
                K quad[4];
                load4(keys + first + q, quad);
#pragma unroll
                for (u32 i = 0; i < 4; ++i) {
                    w[q + i] = quad[i];
                }
            }
            m = RADIX_HISTOGRAM_KEYS;
        } else {
#pragma unroll
            for (u32 e = 0; e < RADIX_HISTOGRAM_KEYS; ++e) {
                w[e] = first + e < a.n ? keys[first + e] : K(0);
            }
            m = (u32)min((u64)RADIX_HISTOGRAM_KEYS, a.n - first);
        }
#pragma unroll
        for (u32 e = 0; e < RADIX_HISTOGRAM_KEYS; ++e) {
            w[e] = encode_key(w[e], a.encoding);
        }
        radix_count_run(w, m, counts);
    }
    __syncthreads();
    for (u32 i = threadIdx.x; i < radix_digits<K>() * RADIX_BINS; i += blockDim.x) {
        if (counts[i] != 0) {
            atomicAdd(&state[i], counts[i]);
        }
    }
}

// Block d turns digit d's counts into starts and sets its skip flag where one bin holds
// every key.
extern "C" __global__ void __launch_bounds__(RADIX_THREADS) radix_starts(u32 *state, RadixArgs a) {
    __shared__ u32 sums[RADIX_WARPS];
    const u32 d = blockIdx.x;
    u32 *counts = state + (u64)d * RADIX_BINS;
    const u32 c = counts[threadIdx.x];
    const int one_bin = __syncthreads_or(c == a.n);
    const u32 start = radix_block_exclusive_sum(c, sums);
    counts[threadIdx.x] = start;
    if (threadIdx.x == 0) {
        state[(u64)a.digits * RADIX_BINS + d] = one_bin ? 1u : 0u;
    }
}

// Digit passes before `digit` that moved the keys: the number of unskipped digits below it.
__device__ __forceinline__ u32 radix_moves_before(const u32 *state, u32 digits, u32 digit) {
    const u32 *skip = state + (u64)digits * RADIX_BINS;
    u32 moves = 0;
    for (u32 d = 0; d < digit; ++d) {
        moves += skip[d] == 0 ? 1u : 0u;
    }
    return moves;
}

__device__ __forceinline__ void radix_store_word(u32 *p, u32 v) { *reinterpret_cast<volatile u32 *>(p) = v; }
__device__ __forceinline__ u32 radix_load_word(const u32 *p) { return *reinterpret_cast<const volatile u32 *>(p); }

// Tests only: whether tile `tile` waits before it publishes its counts (one tile in eight,
// scattered), so that its successors find it unpublished and wait in their look-back.
__device__ __forceinline__ bool radix_delayed(u32 tile, u32 delay) { return delay != 0 && ((tile * 2654435761u) >> 29) == 3; }

// One digit pass over the tiles of RADIX_THREADS * keys_per_thread keys. A block takes the
// next tile number from the digit's counter, so every tile before it belongs to a block that
// has started. Warp w holds keys [32 kpt w, 32 kpt (w + 1)) of the tile, lane l the keys at
// 32 e + l of those for e < kpt.
//  1. rank: for each e in turn, the lanes whose keys share a digit find each other
//     (__match_any_sync), each takes the warp's count of the digit so far plus the peers on
//     lower lanes, and the lowest of them adds the peers to the count: a stable rank within
//     the warp;
//  2. count: thread b sums bin b over the warps (each warp's count becomes its start within
//     the tile's bin), publishes the tile's count of b, and the block scans the counts into
//     the bins' starts within the tile;
//  3. look back: thread b adds up the counts of bin b of the tiles before, walking back from
//     the previous one, until one covers every tile before it (a prefix), and publishes the
//     prefix of its own tile;
//  4. scatter: the keys go to shared memory in the tile's sorted order, then from there to
//     their places, consecutive threads writing consecutive places of a bin.
template <typename K, typename V>
__device__ __forceinline__ void radix_pass(K *keys, V *values, K *scratch_keys, V *scratch_values, u32 *state, const RadixArgs &a) {
    constexpr bool HAS_V = HasValues<V>::value;
    constexpr u32 DIGITS = radix_digits<K>();
    __shared__ u32 warp_counts[RADIX_WARPS][RADIX_BINS];
    __shared__ u32 bin_start[RADIX_BINS];
    __shared__ u32 bin_base[RADIX_BINS];
    __shared__ u32 sums[RADIX_WARPS];
    __shared__ u32 tile_number;
    extern __shared__ __align__(16) unsigned char radix_smem[];
    K *tile_keys = reinterpret_cast<K *>(radix_smem);
    V *tile_values = reinterpret_cast<V *>(radix_smem + (size_t)RADIX_THREADS * a.keys_per_thread * sizeof(K));

    u32 *lookback = state + radix_header_words<K>();
    const u64 region = a.tiles * RADIX_BINS;
    // The other region: the pass before this one used it and has ended, the pass after
    // this one needs it cleared.
    u32 *next_region = lookback + ((a.digit + 1) & 1) * region;
    next_region[(u64)blockIdx.x * RADIX_BINS + threadIdx.x] = 0;
    if (state[(u64)DIGITS * RADIX_BINS + a.digit] != 0) {
        return;
    }
    u32 *my_region = lookback + (a.digit & 1) * region;
    const bool from_scratch = (radix_moves_before(state, DIGITS, a.digit) & 1) != 0;
    const K *src_k = from_scratch ? scratch_keys : keys;
    K *dst_k = from_scratch ? keys : scratch_keys;
    const V *src_v = from_scratch ? scratch_values : values;
    V *dst_v = from_scratch ? values : scratch_values;
    const u32 *starts = state + (u64)a.digit * RADIX_BINS;

    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) {
        tile_number = atomicAdd(&state[(u64)DIGITS * RADIX_BINS + DIGITS + a.digit], 1u);
    }
    for (u32 w = 0; w < RADIX_WARPS; ++w) {
        warp_counts[w][threadIdx.x] = 0;
    }
    __syncthreads();
    const u32 tile = tile_number;
    const u32 kpt = a.keys_per_thread;
    const u64 tile_first = (u64)tile * RADIX_THREADS * kpt;
    const u64 warp_first = tile_first + (u64)warp * 32 * kpt;

    // 1. rank within the warp.
    K k[RADIX_MAX_KEYS_PER_THREAD];
    V v[HAS_V ? RADIX_MAX_KEYS_PER_THREAD : 1];
    u32 bin[RADIX_MAX_KEYS_PER_THREAD];
    u32 rank[RADIX_MAX_KEYS_PER_THREAD];
#pragma unroll
    for (u32 e = 0; e < RADIX_MAX_KEYS_PER_THREAD; ++e) {
        if (e < kpt) {
            const u64 i = warp_first + 32 * e + lane;
            const bool valid = i < a.n;
            k[e] = valid ? src_k[i] : K(0);
            if constexpr (HAS_V) {
                if (valid) {
                    v[e] = src_v[i];
                }
            }
            bin[e] = valid ? radix_digit(encode_key(k[e], a.encoding), a.digit) : RADIX_BINS;
        }
    }
    const u32 below_lane = (1u << lane) - 1;
#pragma unroll
    for (u32 e = 0; e < RADIX_MAX_KEYS_PER_THREAD; ++e) {
        if (e < kpt) {
            const bool valid = bin[e] < RADIX_BINS;
            const u32 active = __ballot_sync(0xffffffffu, valid);
            if (valid) {
                const u32 peers = __match_any_sync(active, bin[e]);
                const u32 lower = __popc(peers & below_lane);
                const u32 so_far = warp_counts[warp][bin[e]];
                rank[e] = so_far + lower;
                __syncwarp(active);
                if (lower == 0) {
                    warp_counts[warp][bin[e]] = so_far + __popc(peers);
                }
            }
            __syncwarp();
        }
    }
    __syncthreads();

    // 2. count.
    const u32 b = threadIdx.x;
    u32 count = 0;
#pragma unroll
    for (u32 w = 0; w < RADIX_WARPS; ++w) {
        const u32 c = warp_counts[w][b];
        warp_counts[w][b] = count;
        count += c;
    }
    if (radix_delayed(tile, a.delay)) {
        for (u32 i = 0; i < 8; ++i) {
            __nanosleep(a.delay);
        }
    }
    u32 *mine = my_region + (u64)tile * RADIX_BINS + b;
    radix_store_word(mine, (tile == 0 ? RADIX_FLAG_PREFIX : RADIX_FLAG_AGGREGATE) | count);
    const u32 start = radix_block_exclusive_sum(count, sums);
    bin_start[b] = start;

    // 3. look back, one tile at a time or RADIX_LOOK_BACK at once (`look_back`): then their
    // words are loaded together, and the walk takes every published one from the nearest
    // back, so that a tile far from the last prefix reaches it in a few rounds of loads
    // instead of one load per tile.
    u32 before = 0;
    if (tile > 0 && a.look_back <= 1) {
        // One tile at a time, from the nearest back, each waited for until it has published.
        for (u32 t = tile - 1;; --t) {
            const u32 *word_at = my_region + (u64)t * RADIX_BINS + b;
            u32 word = radix_load_word(word_at);
            while ((word & (RADIX_FLAG_AGGREGATE | RADIX_FLAG_PREFIX)) == 0) {
                // A short sleep leaves the issue slots to the warps that have work.
                __nanosleep(32);
                word = radix_load_word(word_at);
            }
            before += word & ((1u << RADIX_COUNT_BITS) - 1);
            if ((word & RADIX_FLAG_PREFIX) != 0 || t == 0) {
                break;
            }
        }
        radix_store_word(mine, RADIX_FLAG_PREFIX | (before + count));
    } else if (tile > 0) {
        u32 next = tile; // the nearest tile not yet added is next - 1
        for (;;) {
            u32 words[RADIX_LOOK_BACK];
#pragma unroll
            for (u32 i = 0; i < RADIX_LOOK_BACK; ++i) {
                words[i] = i < next ? radix_load_word(my_region + (u64)(next - 1 - i) * RADIX_BINS + b) : 0u;
            }
            bool found = false;
            u32 taken = 0;
#pragma unroll
            for (u32 i = 0; i < RADIX_LOOK_BACK; ++i) {
                const u32 word = words[i];
                if (!found && taken == i && i < next && (word & (RADIX_FLAG_AGGREGATE | RADIX_FLAG_PREFIX)) != 0) {
                    before += word & ((1u << RADIX_COUNT_BITS) - 1);
                    found = (word & RADIX_FLAG_PREFIX) != 0;
                    taken = i + 1;
                }
            }
            // Tile 0 always holds a prefix, so the walk ends before `next` reaches 0.
            if (found) {
                break;
            }
            if (taken == 0) {
                __nanosleep(32);
            }
            next -= taken;
        }
        radix_store_word(mine, RADIX_FLAG_PREFIX | (before + count));
    }
    // The place of the key at tile position p of bin b is bin_base[b] + p (mod 2^32: the
    // sum is a place below 2^RADIX_COUNT_BITS).
    bin_base[b] = starts[b] + before - start;
    __syncthreads();

    // 4. scatter, through shared memory in the tile's order.
#pragma unroll
    for (u32 e = 0; e < RADIX_MAX_KEYS_PER_THREAD; ++e) {
        if (e < kpt && bin[e] < RADIX_BINS) {
            const u32 p = bin_start[bin[e]] + warp_counts[warp][bin[e]] + rank[e];
            tile_keys[p] = k[e];
            if constexpr (HAS_V) {
                tile_values[p] = v[e];
            }
        }
    }
    __syncthreads();
    const u32 in_tile = (u32)min((u64)RADIX_THREADS * kpt, a.n - tile_first);
    for (u32 p = threadIdx.x; p < in_tile; p += RADIX_THREADS) {
        const K key = tile_keys[p];
        const u64 to = (u64)(bin_base[radix_digit(encode_key(key, a.encoding), a.digit)] + p);
        dst_k[to] = key;
        if constexpr (HAS_V) {
            dst_v[to] = tile_values[p];
        }
    }
}

// Where an odd number of digit passes moved the keys, they are in the scratch: copy them
// (and the values) back, blocks striding over the row.
template <typename K, typename V>
__device__ __forceinline__ void radix_copy_back(K *keys, V *values, const K *scratch_keys, const V *scratch_values, const u32 *state, const RadixArgs &a) {
    if ((radix_moves_before(state, radix_digits<K>(), radix_digits<K>()) & 1) == 0) {
        return;
    }
    const u64 step = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += step) {
        keys[i] = scratch_keys[i];
        if constexpr (HasValues<V>::value) {
            values[i] = scratch_values[i];
        }
    }
}

#define RADIX_KEY_KERNELS(KNAME, K)                                                                                    \
    extern "C" __global__ void __launch_bounds__(RADIX_THREADS) radix_histogram_##KNAME(const K *keys, u32 *state,    \
                                                                                        RadixArgs a) {                 \
        radix_histogram<K>(keys, state, a);                                                                            \
    }

#define RADIX_KERNELS(KNAME, K, VNAME, V)                                                                              \
    extern "C" __global__ void __launch_bounds__(RADIX_THREADS)                                                        \
        radix_pass_##KNAME##_##VNAME(K *keys, V *values, K *scratch_keys, V *scratch_values, u32 *state, RadixArgs a) { \
        radix_pass<K, V>(keys, values, scratch_keys, scratch_values, state, a);                                        \
    }                                                                                                                  \
    extern "C" __global__ void __launch_bounds__(RADIX_THREADS) radix_copy_back_##KNAME##_##VNAME(                     \
        K *keys, V *values, const K *scratch_keys, const V *scratch_values, const u32 *state, RadixArgs a) {          \
        radix_copy_back<K, V>(keys, values, scratch_keys, scratch_values, state, a);                                   \
    }

RADIX_KEY_KERNELS(u32, u32)
RADIX_KEY_KERNELS(u64, u64)
RADIX_KERNELS(u32, u32, none, NoValue)
RADIX_KERNELS(u32, u32, u32, u32)
RADIX_KERNELS(u32, u32, u64, u64)
RADIX_KERNELS(u64, u64, none, NoValue)
RADIX_KERNELS(u64, u64, u32, u32)
RADIX_KERNELS(u64, u64, u64, u64)
