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

// Digits of a key of K: one per byte.
template <typename K> __device__ __forceinline__ constexpr u32 radix_digits() { return sizeof(K) * 8 / RADIX_DIGIT_BITS; }

// Words of the state before the look-back (RadixPlan::header_words).
template <typename K> __device__ __forceinline__ constexpr u64 radix_header_words() {
    return ((u64)radix_digits<K>() * RADIX_BINS + 2 * radix_digits<K>() + 3) & ~3ull;
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

// A key's ordered bits (encode_key) from three masks computed once per launch, so that each
// key costs a shift and four logic operations instead of a branch on the kind:
// ordered = raw ^ (((raw's sign spread over the word) & spread) | sign) ^ flip. Floats flip
// every bit of negative keys and the sign of the others (spread and sign set), signed keys
// their sign (sign set), and descending order complements the result (flip set).
template <typename K> struct RadixEncoding {
    K spread;
    K sign;
    K flip;
    __device__ __forceinline__ explicit RadixEncoding(u32 encoding) {
        const u32 kind = encoding & ENCODING_KIND_MASK;
        spread = kind == KIND_FLOAT ? ~K(0) : K(0);
        sign = kind == KIND_UNSIGNED ? K(0) : K(1) << (sizeof(K) * 8 - 1);
        flip = (encoding & ENCODING_DESCENDING) ? ~K(0) : K(0);
    }
    __device__ __forceinline__ K ordered(K raw) const {
        K fill;
        if constexpr (sizeof(K) == 4) {
            fill = (K)((int)raw >> 31);
        } else {
            fill = (K)((long long)raw >> 63);
        }
        return raw ^ (((fill & spread) | sign) ^ flip);
    }
    // The bin of `raw` at bit `shift` of its ordered bits.
    __device__ __forceinline__ u32 bin(K raw, u32 shift) const { return (u32)(ordered(raw) >> shift) & (RADIX_BINS - 1); }
};

// Copies of a histogram block's counts, interleaved by bin, so that the lanes of a warp,
// spread over them by lane, rarely meet in one shared-memory bank.
template <typename K> __device__ __forceinline__ constexpr u32 radix_histogram_copies() { return sizeof(K) == 4 ? 8 : 4; }

// The histogram: blocks stride over the row, each thread four consecutive keys at a time,
// and count every digit of every key in shared memory (copy lane % copies of the counts),
// then add their block's counts to the state's. A run of equal digits among a thread's four
// keys costs one atomic: in sorted or narrow-ranged keys the lanes of a warp share a few
// bins, and one atomic a key would serialize on them.
template <typename K> __device__ __forceinline__ void radix_histogram(const K *__restrict__ keys, u32 *state, const RadixArgs &a) {
    constexpr u32 DIGITS = radix_digits<K>();
    constexpr u32 COPIES = radix_histogram_copies<K>();
    constexpr u32 PER_LOAD = 4;
    __shared__ u32 counts[DIGITS * RADIX_BINS * COPIES];
    for (u32 i = threadIdx.x; i < DIGITS * RADIX_BINS * COPIES; i += blockDim.x) {
        counts[i] = 0;
    }
    __syncthreads();
    const RadixEncoding<K> enc(a.encoding);
    u32 *mine = counts + (threadIdx.x & 31) % COPIES;
    auto count = [&](K raw) {
        const K w = enc.ordered(raw);
#pragma unroll
        for (u32 d = 0; d < DIGITS; ++d) {
            const u32 bin = (u32)(w >> (d * RADIX_DIGIT_BITS)) & (RADIX_BINS - 1);
            atomicAdd(&mine[(d * RADIX_BINS + bin) * COPIES], 1u);
        }
    };
    auto count4 = [&](const K *raw) {
        K w[PER_LOAD];
#pragma unroll
        for (u32 e = 0; e < PER_LOAD; ++e) {
            w[e] = enc.ordered(raw[e]);
        }
#pragma unroll
        for (u32 d = 0; d < DIGITS; ++d) {
            u32 run = 1;
            u32 prev = (u32)(w[0] >> (d * RADIX_DIGIT_BITS)) & (RADIX_BINS - 1);
#pragma unroll
            for (u32 e = 1; e < PER_LOAD; ++e) {
                const u32 bin = (u32)(w[e] >> (d * RADIX_DIGIT_BITS)) & (RADIX_BINS - 1);
                if (bin != prev) {
                    atomicAdd(&mine[(d * RADIX_BINS + prev) * COPIES], run);
                    run = 0;
                }
                prev = bin;
                ++run;
            }
            atomicAdd(&mine[(d * RADIX_BINS + prev) * COPIES], run);
        }
    };
    // Keys before the first 16-byte boundary, and after the last whole load, one at a time;
    // between them, load4's 16-byte loads.
    const u64 head = min(a.n, (u64)((16 - (reinterpret_cast<size_t>(keys) & 15)) & 15) / sizeof(K));
    const u64 loads = (a.n - head) / PER_LOAD;
    const u64 threads = (u64)gridDim.x * blockDim.x;
    const u64 me = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (me < head) {
        count(keys[me]);
    }
    const u64 tail = head + loads * PER_LOAD;
    if (me < a.n - tail) {
        count(keys[tail + me]);
    }
    const K *aligned = keys + head;
    u64 i = me;
    for (; i + threads < loads; i += 2 * threads) {
        K w0[4], w1[4];
        load4(aligned + i * PER_LOAD, w0);
        load4(aligned + (i + threads) * PER_LOAD, w1);
        count4(w0);
        count4(w1);
    }
    if (i < loads) {
        K w0[4];
        load4(aligned + i * PER_LOAD, w0);
        count4(w0);
    }
    __syncthreads();
    for (u32 j = threadIdx.x; j < DIGITS * RADIX_BINS; j += blockDim.x) {
        u32 sum = 0;
#pragma unroll
        for (u32 c = 0; c < COPIES; ++c) {
            sum += counts[j * COPIES + c];
        }
        if (sum != 0) {
            atomicAdd(&state[j], sum);
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

// The lanes of the warp whose `bin` equals this lane's, from one ballot per bit: bins are
// RADIX_DIGIT_BITS bits, and RADIX_BINS (bit RADIX_DIGIT_BITS) marks a lane without a key,
// which only a tile's last warp may have (`full` false).
__device__ __forceinline__ u32 radix_peers(u32 bin, bool full) {
    u32 peers = 0xffffffffu;
#pragma unroll
    for (u32 bit = 0; bit < RADIX_DIGIT_BITS; ++bit) {
        const bool set = (bin >> bit) & 1u;
        const u32 lanes = __ballot_sync(0xffffffffu, set);
        peers &= set ? lanes : ~lanes;
    }
    if (!full) {
        const bool none = bin >= RADIX_BINS;
        const u32 lanes = __ballot_sync(0xffffffffu, none);
        peers &= none ? lanes : ~lanes;
    }
    return peers;
}

// One digit pass over the tiles of RADIX_THREADS * KPT keys. A block takes the next tile
// number from the digit's counter, so every tile before it belongs to a block that has
// started. Warp w holds keys [32 KPT w, 32 KPT (w + 1)) of the tile, lane l the keys at
// 32 e + l of those for e < KPT.
//  1. count: each warp counts its keys of each bin (a warp whose 32 keys share a bin adds
//     them at once); thread b sums bin b over the warps, publishes the tile's count of b
//     at once, so that the tiles after it wait as little as possible, and the block scans
//     the counts into the bins' starts within the tile; each warp's count of b becomes
//     the place of its first key of b in the tile;
//  2. rank: for each e in turn, the lanes whose keys share a bin find each other, the
//     highest of them takes as many places from its warp's place of the bin, and each key
//     goes to the tile's shared memory at its place: a stable order of the tile by digit;
//  3. look back: thread b adds up the counts of bin b of the tiles before, walking back
//     from the previous one, until one covers every tile before it (a prefix), and
//     publishes the prefix of its own tile. The ranking gave the tiles before time to
//     publish theirs;
//  4. scatter: from shared memory to their places, consecutive threads writing
//     consecutive places of a bin.
//  5. values: loaded once the keys are in shared memory (the keys' registers are free by
//     then, so no thread spills to hold both), in flight while the keys scatter; they then
//     take the keys' shared memory at the keys' places and scatter in a second round, each
//     thread keeping the bin of each key it scattered in a byte. One tile's worth of shared
//     memory for keys or values leaves room for more blocks a multiprocessor.
template <typename K, typename V, u32 KPT>
__device__ __forceinline__ void radix_pass(K *keys, V *values, K *scratch_keys, V *scratch_values, u32 *state, const RadixArgs &a) {
    constexpr bool HAS_V = HasValues<V>::value;
    constexpr u32 DIGITS = radix_digits<K>();
    constexpr u32 TILE = RADIX_THREADS * KPT;
    static_assert(TILE <= 65536, "a key's place in a tile must fit 16 bits");
    __shared__ u32 warp_places[RADIX_WARPS][RADIX_BINS];
    __shared__ u32 bin_base[RADIX_BINS];
    __shared__ u32 sums[RADIX_WARPS];
    __shared__ u32 tile_number;
    extern __shared__ __align__(16) unsigned char radix_smem[];
    K *tile_keys = reinterpret_cast<K *>(radix_smem);
    V *tile_values = reinterpret_cast<V *>(radix_smem);

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

    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) {
        tile_number = atomicAdd(&state[(u64)DIGITS * RADIX_BINS + DIGITS + a.digit], 1u);
    }
#pragma unroll
    for (u32 w = 0; w < RADIX_WARPS; ++w) {
        warp_places[w][threadIdx.x] = 0;
    }
    __syncthreads();
    const u32 tile = tile_number;
    const u64 tile_first = (u64)tile * TILE;
    const bool full = tile_first + TILE <= a.n;
    const u64 warp_first = tile_first + (u64)warp * 32 * KPT + lane;

    K k[KPT];
    if (full) {
#pragma unroll
        for (u32 e = 0; e < KPT; ++e) {
            k[e] = src_k[warp_first + 32 * e];
        }
    } else {
#pragma unroll
        for (u32 e = 0; e < KPT; ++e) {
            const u64 i = warp_first + 32 * e;
            k[e] = i < a.n ? src_k[i] : K(0);
        }
    }
    const RadixEncoding<K> enc(a.encoding);
    const u32 shift = a.digit * RADIX_DIGIT_BITS;
    // The bin of key e, RADIX_BINS where the lane has none.
    auto bin_of = [&](u32 e) -> u32 {
        const u32 d = enc.bin(k[e], shift);
        return full || warp_first + 32 * e < a.n ? d : RADIX_BINS;
    };

    // 1. count.
#pragma unroll
    for (u32 e = 0; e < KPT; ++e) {
        const u32 b = bin_of(e);
        const u32 first = __shfl_sync(0xffffffffu, b, 0);
        if (__all_sync(0xffffffffu, b == first)) {
            if (lane == 0 && b < RADIX_BINS) {
                atomicAdd(&warp_places[warp][b], 32u);
            }
        } else if (b < RADIX_BINS) {
            atomicAdd(&warp_places[warp][b], 1u);
        }
    }
    __syncthreads();
    const u32 b = threadIdx.x;
    u32 count = 0;
    u32 of_warp[RADIX_WARPS];
#pragma unroll
    for (u32 w = 0; w < RADIX_WARPS; ++w) {
        of_warp[w] = count;
        count += warp_places[w][b];
    }
    if (radix_delayed(tile, a.delay)) {
        for (u32 i = 0; i < 8; ++i) {
            __nanosleep(a.delay);
        }
    }
    u32 *mine = my_region + (u64)tile * RADIX_BINS + b;
    radix_store_word(mine, (tile == 0 ? RADIX_FLAG_PREFIX : RADIX_FLAG_AGGREGATE) | count);
    const u32 start = radix_block_exclusive_sum(count, sums);
#pragma unroll
    for (u32 w = 0; w < RADIX_WARPS; ++w) {
        warp_places[w][b] = start + of_warp[w];
    }
    __syncthreads();

    // 2. rank, into shared memory in the tile's order.
    // A key's place in the tile is below 2^16: two places a word, kept for the values.
    u32 places[HAS_V ? (KPT + 1) / 2 : 1] = {};
    const u32 lanes_to_mine = (2u << lane) - 1;
#pragma unroll
    for (u32 e = 0; e < KPT; ++e) {
        const u32 bin = bin_of(e);
        const u32 peers = radix_peers(bin, full);
        const u32 leader = 31 - __clz(peers);
        const u32 upto = __popc(peers & lanes_to_mine);
        u32 place = 0;
        if (lane == leader && bin < RADIX_BINS) {
            place = atomicAdd(&warp_places[warp][bin], upto);
        }
        place = __shfl_sync(0xffffffffu, place, leader) + upto - 1;
        if (bin < RADIX_BINS) {
            tile_keys[place] = k[e];
        }
        if constexpr (HAS_V) {
            places[e / 2] = (e & 1) ? places[e / 2] | (place << 16) : place;
        }
    }

    // 3. look back, one tile at a time, from the nearest back, each waited for until it
    // has published.
    u32 before = 0;
    if (tile > 0) {
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
    }
    // The place of the key at tile position p of bin b is bin_base[b] + p (mod 2^32: the
    // sum is a place below 2^RADIX_COUNT_BITS).
    bin_base[b] = state[(u64)a.digit * RADIX_BINS + b] + before - start;
    __syncthreads();

    // 4. scatter.
    const u32 in_tile = full ? TILE : (u32)(a.n - tile_first);
    // 5. values: their loads run while the keys scatter.
    V v[HAS_V ? KPT : 1];
    if constexpr (HAS_V) {
#pragma unroll
        for (u32 e = 0; e < KPT; ++e) {
            const u64 i = warp_first + 32 * e;
            if (full || i < a.n) {
                v[e] = src_v[i];
            }
        }
    }
    // The bin of the key at tile position threadIdx.x + e RADIX_THREADS, a byte each.
    u32 bins[HAS_V ? (KPT + 3) / 4 : 1];
#pragma unroll
    for (u32 e = 0; e < KPT; ++e) {
        const u32 p = threadIdx.x + e * RADIX_THREADS;
        if (full || p < in_tile) {
            const K key = tile_keys[p];
            const u32 bin = enc.bin(key, shift);
            const u64 to = (u64)(bin_base[bin] + p);
            dst_k[to] = key;
            if constexpr (HAS_V) {
                bins[e / 4] = (e & 3) ? bins[e / 4] | (bin << ((e & 3) * 8)) : bin;
            }
        }
    }
    if constexpr (HAS_V) {
        // Every key has left the shared memory the values now take.
        __syncthreads();
#pragma unroll
        for (u32 e = 0; e < KPT; ++e) {
            if (full || warp_first + 32 * e < a.n) {
                tile_values[(places[e / 2] >> ((e & 1) * 16)) & 0xffffu] = v[e];
            }
        }
        __syncthreads();
#pragma unroll
        for (u32 e = 0; e < KPT; ++e) {
            const u32 p = threadIdx.x + e * RADIX_THREADS;
            if (full || p < in_tile) {
                const u32 bin = (bins[e / 4] >> ((e & 3) * 8)) & 0xffu;
                dst_v[(u64)(bin_base[bin] + p)] = tile_values[p];
            }
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

// MIN_BLOCKS: the blocks a multiprocessor must hold at once, which caps the registers of a
// thread; more blocks hide more of the look-back's and the scatter's latency.
#define RADIX_KERNELS(KNAME, K, VNAME, V, KPT, MIN_BLOCKS)                                                             \
    extern "C" __global__ void __launch_bounds__(RADIX_THREADS, MIN_BLOCKS)                                            \
        radix_pass_##KNAME##_##VNAME(K *keys, V *values, K *scratch_keys, V *scratch_values, u32 *state, RadixArgs a) { \
        radix_pass<K, V, KPT>(keys, values, scratch_keys, scratch_values, state, a);                                        \
    }                                                                                                                  \
    extern "C" __global__ void __launch_bounds__(RADIX_THREADS) radix_copy_back_##KNAME##_##VNAME(                     \
        K *keys, V *values, const K *scratch_keys, const V *scratch_values, const u32 *state, RadixArgs a) {          \
        radix_copy_back<K, V>(keys, values, scratch_keys, scratch_values, state, a);                                   \
    }

RADIX_KEY_KERNELS(u32, u32)
RADIX_KEY_KERNELS(u64, u64)
RADIX_KERNELS(u32, u32, none, NoValue, RADIX_CUDA_KPT_U32_NONE, 4)
RADIX_KERNELS(u32, u32, u32, u32, RADIX_CUDA_KPT_U32_U32, 4)
RADIX_KERNELS(u32, u32, u64, u64, RADIX_CUDA_KPT_U32_U64, 3)
RADIX_KERNELS(u64, u64, none, NoValue, RADIX_CUDA_KPT_U64_NONE, 3)
RADIX_KERNELS(u64, u64, u32, u32, RADIX_CUDA_KPT_U64_U32, 3)
RADIX_KERNELS(u64, u64, u64, u64, RADIX_CUDA_KPT_U64_U64, 3)
