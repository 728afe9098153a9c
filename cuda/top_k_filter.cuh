// The candidate filter of the CUDA top-k's long rows (src/cuda/top_k/filter.rs; the plan is
// TopKFilter in src/schedule/top_k/filter.rs): the sample that gives each row its threshold,
// the pass that keeps the words at or below it, the exact select of the rows it could not
// serve, and the select of the candidates in shared memory.

#pragma once

#include "top_k_select.cuh"

// The candidate filter of long rows (TopKFilter in src/schedule/top_k/filter.rs, which
// describes it). First the threshold of each row, the rank-th smallest of 2^log_sample
// sampled words, one at a hashed position of each stratum (sample_position there), taken by
// 2^log_blocks blocks a row. Block b loads strata b * size .. (b + 1) * size - 1 as ordered
// keys into shared memory (dynamic: the keys, the radix select's TOP_K_RADIX_WORDS, and three
// words of the block's own). Its radix select finds the key of its rank `rank` and how many
// of its equals the rank takes, and its warps find, in stratum order, which is position
// order, the sampled key equal to it that completes the rank. With one block a row,
// that key and position are the threshold. With several, each block writes its `rank`
// smallest words to `picks`, and the row's last block to arrive (counted in `arrivals`, zero
// before the launch) finds the rank-th smallest of the row's picks: no block holds more than
// `rank` of the sample's rank smallest words, so they are all among the picks. The picks of
// a row fit over the block's keys in shared memory (TopKFilter's bound: 8 * blocks * rank <=
// 4 * size).
__device__ __forceinline__ u64 sample_position(u64 row, u64 j, u64 len, u32 log_sample) {
    const u64 lo = (j * len) >> log_sample;
    const u64 hi = ((j + 1) * len) >> log_sample;
    u32 h = (u32)row * 0x9e3779b9u ^ (u32)(row >> 32) ^ (u32)j * 0x85ebca6bu;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    // The hash scaled to the stratum's length (at most 2^32 positions) by a multiply, where a
    // 64-bit remainder takes dozens of instructions.
    return lo + (((u64)h * min(hi - lo, (u64)1 << 32)) >> 32);
}

template <typename K>
__device__ __forceinline__ void top_k_sample(const K *__restrict__ keys, u64 *__restrict__ thresholds,
                                             u64 *__restrict__ picks, u32 *__restrict__ arrivals, u64 rows,
                                             u64 len, u32 log_sample, u32 log_blocks, u32 rank, u32 encoding) {
    constexpr u32 FULL = 0xffffffffu;
    const u32 size = 1u << (log_sample - log_blocks);
    const u32 blocks = 1u << log_blocks;
    u32 *ordered = reinterpret_cast<u32 *>(top_k_smem);
    u32 *hist = ordered + size;
    u32 &end = hist[TOP_K_RADIX_WORDS];       // the block's sampled word that completes its rank
    u32 &taken = hist[TOP_K_RADIX_WORDS + 1]; // the block's picks written so far
    u32 &last = hist[TOP_K_RADIX_WORDS + 2];  // whether the block is its row's last to arrive
    for (u64 task = blockIdx.x; task < (rows << log_blocks); task += gridDim.x) {
        const u64 row = task >> log_blocks;
        const u32 first = (u32)(task & (blocks - 1u)) * size;
        const auto word = [&](u32 x, u32 j) {
            return ((u64)x << 32) | sample_position(row, first + j, len, log_sample);
        };
        copy_loads_in_flight<u32>(
            size, threadIdx.x, blockDim.x,
            [&](u32 j) { return (u32)keys[row * len + sample_position(row, first + j, len, log_sample)]; },
            [&](u32 j, u32 raw) { ordered[j] = encode_as<K>(raw, encoding); });
        __syncthreads();
        u32 need;
        const u32 key = radix_select<true, false>(
            [&](u32 j, u32 &x) {
                x = ordered[j];
                return true;
            },
            size, rank, 8 * (int)sizeof(K), hist, need);
        // Each warp counts the keys equal to `key` in its slice of the sampled words; the
        // warp whose slice holds the need-th finds it.
        const u32 lane = threadIdx.x & 31u;
        const u32 warp = threadIdx.x >> 5;
        const u32 span = max(32u, size / (blockDim.x >> 5));
        const u32 from = min(warp * span, size);
        const u32 to = min(from + span, size);
        u32 equals_here = 0;
        for (u32 base = from; base < to; base += 32u) {
            equals_here += __popc(__ballot_sync(FULL, base + lane < to && ordered[base + lane] == key));
        }
        if (lane == 0) {
            hist[warp] = equals_here; // the radix select is done with its counts
        }
        if (threadIdx.x == 0) {
            taken = 0;
        }
        __syncthreads();
        u32 seen = 0;
        for (u32 w = 0; w < warp; ++w) {
            seen += hist[w];
        }
        if (seen < need && seen + equals_here >= need) {
            for (u32 base = from; base < to; base += 32u) {
                const bool equal = base + lane < to && ordered[base + lane] == key;
                const u32 equals = __ballot_sync(FULL, equal);
                if (equal && seen + __popc(equals & ((1u << lane) - 1u)) + 1u == need) {
                    end = base + lane;
                }
                seen += __popc(equals);
                if (seen >= need) {
                    break;
                }
            }
        }
        __syncthreads();
        if (blocks == 1u) {
            if (threadIdx.x == 0) {
                thresholds[row] = word(key, end);
            }
        } else {
            u64 *mine = picks + task * rank;
            for (u32 j = threadIdx.x; j < size; j += blockDim.x) {
                const u32 x = ordered[j];
                if (x < key || (x == key && j <= end)) {
                    mine[atomicAdd(&taken, 1u)] = word(x, j);
                }
            }
            // The picks reach the device's memory before the block counts itself in.
            __threadfence();
            __syncthreads();
            if (threadIdx.x == 0) {
                last = atomicAdd(&arrivals[row], 1u) == blocks - 1u;
            }
            __syncthreads();
            if (last) {
                __threadfence();
                const u32 n = blocks * rank;
                u64 *all = reinterpret_cast<u64 *>(top_k_smem); // over the keys, read above
                for (u32 i = threadIdx.x; i < n; i += blockDim.x) {
                    all[i] = __ldcg(picks + row * n + i); // other blocks' writes: from L2
                }
                __syncthreads();
                // The picks are distinct words: the threshold has rank - 1 below it.
                for (u32 i = threadIdx.x; i < n; i += blockDim.x) {
                    const u64 w = all[i];
                    u32 below = 0;
                    for (u32 m = 0; m < n; ++m) {
                        below += all[m] < w ? 1u : 0u;
                    }
                    if (below == rank - 1u) {
                        thresholds[row] = w;
                    }
                }
            }
        }
        __syncthreads(); // the keys are read before the next task's are stored
    }
}

// The column of a thread's i-th key of the chunk at `chunk`: every TOP_K_THREADS-th key, or
// with `vector` key i % E of every TOP_K_THREADS-th vector of E keys (16 bytes).
template <typename K>
__device__ __forceinline__ u64 filter_col(u64 chunk, u32 i, u32 vector) {
    constexpr u32 FILTER_VECTOR_KEYS = 16u / sizeof(K);
    return vector ? chunk + (u64)((i / FILTER_VECTOR_KEYS) * TOP_K_THREADS + threadIdx.x) * FILTER_VECTOR_KEYS +
                        i % FILTER_VECTOR_KEYS
                  : chunk + i * TOP_K_THREADS + threadIdx.x;
}

// A thread's keys of the chunk at `chunk` of a row (top_k_filter), packed into 32-bit words
// (two 16-bit keys a word, the lower first): every TOP_K_THREADS-th key, or with `vector`
// every TOP_K_THREADS-th vector of 16 bytes; zero past the row.
template <typename K, u32 PER_THREAD, u32 WORDS>
__device__ __forceinline__ void filter_load(const K *__restrict__ row_keys, u64 chunk, u64 len, u32 vector,
                                            u32 (&packed)[WORDS]) {
    constexpr u32 FILTER_VECTOR_KEYS = 16u / sizeof(K);
    if (vector) {
        const uint4 *vectors = reinterpret_cast<const uint4 *>(row_keys + chunk);
#pragma unroll
        for (u32 j = 0; j < PER_THREAD / FILTER_VECTOR_KEYS; ++j) {
            const u32 v = j * TOP_K_THREADS + threadIdx.x;
            // A row's length is a whole number of vectors: each lies in it or past it.
            const bool inside = chunk + (u64)v * FILTER_VECTOR_KEYS < len;
            const uint4 q = inside ? vectors[v] : make_uint4(0u, 0u, 0u, 0u);
            packed[4 * j] = q.x;
            packed[4 * j + 1] = q.y;
            packed[4 * j + 2] = q.z;
            packed[4 * j + 3] = q.w;
        }
    } else {
#pragma unroll
        for (u32 w = 0; w < WORDS; ++w) {
            packed[w] = 0u;
        }
#pragma unroll
        for (u32 i = 0; i < PER_THREAD; ++i) {
            const u64 col = filter_col<K>(chunk, i, vector);
            const u32 key = col < len ? (u32)row_keys[col] : 0u;
            packed[i * sizeof(K) / 4u] |= key << (8u * sizeof(K) * (i % (4u / sizeof(K))));
        }
    }
}

// A thread's i-th key of the chunk from filter_load's words.
template <typename K, u32 WORDS> __device__ __forceinline__ u32 filter_key(const u32 (&packed)[WORDS], u32 i) {
    return sizeof(K) == 4 ? packed[i] : (packed[i / 2u] >> (16u * (i & 1u))) & 0xffffu;
}

// A kept key as the filter stages it in shared memory: for 32-bit keys its word; for 16-bit
// keys its ordered key and offset in the chunk in 32 bits, so that a chunk of twice the keys
// stages in the same 32 KiB.
template <typename K> struct FilterStaged {
    typedef u64 type;
    __device__ static u64 stage(u32 key, u32 chunk_col, u32 at) { return ((u64)key << 32) | (chunk_col + at); }
    __device__ static u64 word(u64 s, u32) { return s; }
};
template <> struct FilterStaged<u16> {
    typedef u32 type;
    __device__ static u32 stage(u32 key, u32, u32 at) { return (key << 16) | at; }
    __device__ static u64 word(u32 s, u32 chunk_col) { return ((u64)(s >> 16) << 32) | (chunk_col + (s & 0xffffu)); }
};

// Blocks of the filter a multiprocessor keeps resident at least: more blocks keep more loads
// in flight, and five leave 48 registers a thread with no spill in the loop.
#define TOP_K_FILTER_BLOCKS 5

// The key encoding of a launch as two masks, so that a key is ordered without a branch:
// ordered = raw ^ flip ^ (raw's sign set ? negative : 0), at the key's width. Signed keys
// flip their sign bit, floats their sign bit or, when negative, every bit (total_cmp order),
// and a descending order flips every bit after that: the same map as encode_as, which
// branches on the kind, at a few instructions a key for the filter's pass over every key.
struct FilterEncoding {
    u32 flip;
    u32 negative;
};

template <typename K> __device__ __forceinline__ FilterEncoding filter_encoding(u32 encoding) {
    constexpr u32 mask = sizeof(K) == 4 ? 0xffffffffu : 0xffffu;
    constexpr u32 sign = sizeof(K) == 4 ? 0x80000000u : 0x8000u;
    const u32 kind = encoding & ENCODING_KIND_MASK;
    u32 flip = kind == KIND_UNSIGNED ? 0u : sign;
    if (encoding & ENCODING_DESCENDING) {
        flip ^= mask;
    }
    return FilterEncoding{flip, kind == KIND_FLOAT ? mask ^ sign : 0u};
}

template <typename K> __device__ __forceinline__ u32 filter_order(u32 raw, FilterEncoding e) {
    constexpr u32 shift = 32u - 8u * sizeof(K);
    const u32 negative = (u32)((int)(raw << shift) >> 31);
    return raw ^ e.flip ^ (negative & e.negative);
}

// Then one pass over the keys appends each word at or below its row's threshold to the
// row's `capacity` slots, counting them all in `counts` (zeroed before): slots past the
// capacity are not written, and a count outside [k, capacity] sends the row to the exact
// select. A block of TOP_K_THREADS takes chunks of TOP_K_FILTER_CHUNK_BYTES of a row's keys
// (`chunks` per row), each thread every TOP_K_THREADS-th key of the chunk (filter_load);
// where every row starts on 16 bytes and holds whole 16-byte vectors (`vector`), every
// TOP_K_THREADS-th vector instead, so that 16-bit keys too load whole sectors with few
// instructions. A thread holds 64 bytes of keys in 16 registers whatever their width, so a
// chunk of 16-bit keys is twice as many keys for the same registers and one round of the
// loop below.
// Each warp stages its kept words in shared memory (a ballot per key places them), and the
// block reserves their slots in the row with one atomic for the chunk: an atomic per warp
// and key, on a counter the row's other blocks contend for, leaves the warps waiting on its
// round trip. Blocks loop over chunks, and the staging frees a thread's registers for the
// next chunk's keys, whose loads go out before the block waits on this chunk's atomic: a
// block of one chunk has its loads in flight only until it starts counting. The pass is
// bound by its instructions per key as much as by its bytes (16-bit keys took as long as
// 32-bit ones), so a key is compared in 32 bits (filter_order, then the position only where
// it equals the threshold's key) and 64-bit words are formed only for the kept keys.
template <typename K>
__device__ __forceinline__ void top_k_filter(const K *__restrict__ keys, const u64 *__restrict__ thresholds,
                                             u32 *__restrict__ counts, u64 *__restrict__ candidates,
                                             u64 rows, u64 len, u64 chunks, u64 capacity, u32 encoding,
                                             u32 vector) {
    constexpr u32 CHUNK = TOP_K_FILTER_CHUNK_BYTES / sizeof(K);
    constexpr u32 PER_THREAD = CHUNK / TOP_K_THREADS;
    constexpr u32 WORDS = PER_THREAD * sizeof(K) / 4u;
    constexpr u32 WARPS = TOP_K_THREADS / 32u;
    constexpr u32 WARP_KEYS = 32u * PER_THREAD;
    constexpr u32 FILTER_VECTOR_KEYS = 16u / sizeof(K);
    typedef FilterStaged<K> Staging;
    typedef typename Staging::type Staged;
    static_assert(PER_THREAD % FILTER_VECTOR_KEYS == 0u, "a thread's keys are whole vectors");
    static_assert(PER_THREAD * TOP_K_THREADS == CHUNK && CHUNK <= 65536u, "the block's keys are the chunk");
    __shared__ Staged staged[CHUNK];
    __shared__ u32 warp_first[WARPS];
    __shared__ u32 block_first;
    const u32 lane = threadIdx.x & 31u;
    const u32 warp = threadIdx.x >> 5;
    Staged *warp_staged = staged + warp * WARP_KEYS;
    const FilterEncoding order = filter_encoding<K>(encoding);
    // Chunks of the launch, fewer than 2^32 (a row holds at most 2^32 keys and a launch at
    // most the device's memory), so a chunk's row is a 32-bit division.
    const u32 groups = (u32)(rows * chunks);
    const u32 per_row = (u32)chunks;
    u32 g = blockIdx.x;
    if (g >= groups) {
        return;
    }
    u32 row = g / per_row;
    u32 packed[WORDS];
    filter_load<K, PER_THREAD>(keys + (u64)row * len, (u64)(g - row * per_row) * CHUNK, len, vector, packed);
    u64 threshold = thresholds[row];
    while (true) {
        const u64 chunk = (u64)(g - row * per_row) * CHUNK;
        // Keys of the chunk inside the row, and the threshold's key and position.
        const u32 inside = (u32)min(len - chunk, (u64)CHUNK);
        const u32 last_key = (u32)(threshold >> 32);
        const u32 last_col = (u32)threshold;
        u32 warp_count = 0;
#pragma unroll
        for (u32 i = 0; i < PER_THREAD; ++i) {
            const u32 at = (u32)(filter_col<K>(0, i, vector));
            const u32 key = filter_order<K>(filter_key<K>(packed, i), order);
            const u32 col = (u32)chunk + at;
            const bool keep = at < inside && (key < last_key || (key == last_key && col <= last_col));
            const u32 ballot = __ballot_sync(0xffffffffu, keep);
            if (keep) {
                warp_staged[warp_count + __popc(ballot & ((1u << lane) - 1u))] = Staging::stage(key, (u32)chunk, at);
            }
            warp_count += __popc(ballot);
        }
        if (lane == 0) {
            warp_first[warp] = warp_count;
        }
        __syncthreads();
        // The next chunk's loads go out before this chunk waits on its atomic.
        const u32 next = g + gridDim.x;
        const u32 next_row = next < groups ? next / per_row : 0u;
        u64 next_threshold = 0;
        if (next < groups) {
            filter_load<K, PER_THREAD>(keys + (u64)next_row * len, (u64)(next - next_row * per_row) * CHUNK, len,
                                       vector, packed);
            next_threshold = thresholds[next_row];
        }
        if (threadIdx.x == 0) {
            u32 total = 0;
            for (u32 w = 0; w < WARPS; ++w) {
                const u32 c = warp_first[w];
                warp_first[w] = total;
                total += c;
            }
            block_first = total > 0u ? atomicAdd(&counts[row], total) : 0u;
        }
        __syncthreads();
        const u64 first = (u64)block_first + warp_first[warp];
        for (u32 j = lane; j < warp_count; j += 32u) {
            if (first + j < capacity) {
                candidates[(u64)row * capacity + first + j] = Staging::word(warp_staged[j], (u32)chunk);
            }
        }
        if (next >= groups) {
            break;
        }
        g = next;
        row = next_row;
        threshold = next_threshold;
        // The next chunk's words and counts must not overwrite this one's before every warp
        // has read them.
        __syncthreads();
    }
}

#define TOP_K_FILTER_KERNELS(KNAME, K)                                                                \
    extern "C" __global__ void __launch_bounds__(TOP_K_THREADS)                                       \
        top_k_sample_##KNAME(const K *__restrict__ keys, u64 *__restrict__ thresholds,                \
                             u64 *__restrict__ picks, u32 *__restrict__ arrivals, u64 rows, u64 len,  \
                             u32 log_sample, u32 log_blocks, u32 rank, u32 encoding) {                \
        top_k_sample<K>(keys, thresholds, picks, arrivals, rows, len, log_sample, log_blocks, rank,   \
                        encoding);                                                                    \
    }                                                                                                 \
    extern "C" __global__ void __launch_bounds__(TOP_K_THREADS, TOP_K_FILTER_BLOCKS)                  \
        top_k_filter_##KNAME(const K *__restrict__ keys, const u64 *__restrict__ thresholds,          \
                             u32 *__restrict__ counts, u64 *__restrict__ candidates, u64 rows,        \
                             u64 len, u64 chunks, u64 capacity, u32 encoding, u32 vector) {           \
        top_k_filter<K>(keys, thresholds, counts, candidates, rows, len, chunks, capacity, encoding,  \
                        vector);                                                                      \
    }

TOP_K_FILTER_KERNELS(u32, u32)
TOP_K_FILTER_KERNELS(u16, u16)

// A row the filter could not serve (its count outside [k, capacity]) selects its k best
// words exactly, into its candidate slots, before the candidates' select, tiles or sort: one
// block per row finds the k-th smallest word `key << 32 | position` by a radix select of
// eight 8-bit digits (a pass over the row each, counting the words whose higher digits match
// in shared memory), then a ninth pass writes every word at or below it (exactly k: the
// words are distinct) and the slots past k are padded with u64::MAX. A row the filter served
// costs one read of its count; rescued rows are rare (the sample's margins), so one block's
// passes are fast enough for them.
template <typename K>
__device__ __forceinline__ void top_k_exact(const K *__restrict__ keys, const u32 *__restrict__ counts,
                                            u64 *__restrict__ candidates, u64 rows, u64 len, u64 capacity,
                                            u32 k, u32 encoding) {
    __shared__ u32 hist[256];
    __shared__ u64 chosen[2]; // the prefix found, and the rank still wanted among its words
    __shared__ u32 written;
    for (u64 row = blockIdx.x; row < rows; row += gridDim.x) {
        if (!filter_rescued(counts[row], k, (u32)min(capacity, (u64)0xffffffffu))) {
            continue;
        }
        const K *row_keys = keys + row * len;
        u64 *slots = candidates + row * capacity;
        u64 prefix = 0;
        u64 mask = 0;
        u64 need = k; // the rank (from 1) of the wanted word among those matching the prefix
        for (int shift = 56; shift >= 0; shift -= 8) {
            for (u32 d = threadIdx.x; d < 256; d += blockDim.x) {
                hist[d] = 0;
            }
            __syncthreads();
            for (u64 col = threadIdx.x; col < len; col += blockDim.x) {
                const u64 w = ((u64)encode_as<K>((u32)row_keys[col], encoding) << 32) | col;
                if ((w & mask) == prefix) {
                    atomicAdd(&hist[(w >> shift) & 255u], 1u);
                }
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                u64 below = 0;
                u32 d = 0;
                while (below + hist[d] < need) {
                    below += hist[d];
                    ++d;
                }
                chosen[0] = prefix | ((u64)d << shift);
                chosen[1] = need - below;
            }
            __syncthreads();
            prefix = chosen[0];
            need = chosen[1];
            mask |= 255ull << shift;
            __syncthreads();
        }
        // `prefix` is now the k-th smallest word.
        if (threadIdx.x == 0) {
            written = 0;
        }
        __syncthreads();
        for (u64 col = threadIdx.x; col < len; col += blockDim.x) {
            const u64 w = ((u64)encode_as<K>((u32)row_keys[col], encoding) << 32) | col;
            if (w <= prefix) {
                slots[atomicAdd(&written, 1u)] = w;
            }
        }
        for (u64 slot = k + threadIdx.x; slot < capacity; slot += blockDim.x) {
            slots[slot] = ~0ull;
        }
        __syncthreads();
    }
}

#define TOP_K_EXACT_KERNEL(KNAME, K)                                                                  \
    extern "C" __global__ void __launch_bounds__(TOP_K_THREADS)                                       \
        top_k_exact_##KNAME(const K *__restrict__ keys, const u32 *__restrict__ counts,               \
                            u64 *__restrict__ candidates, u64 rows, u64 len, u64 capacity, u32 k,     \
                            u32 encoding) {                                                           \
        top_k_exact<K>(keys, counts, candidates, rows, len, capacity, k, encoding);                   \
    }

TOP_K_EXACT_KERNEL(u32, u32)
TOP_K_EXACT_KERNEL(u16, u16)

// The filtered route's last step where the candidates fit the block's shared memory
// (TopKCandidates in src/schedule/top_k/filter.rs): one block per row loads the row's candidate
// words (its count of them, or for a row that top_k_exact rescued its first k) into shared
// memory, finds the k-th smallest word by radix selects, first of the keys (the high
// halves) and, where equal keys straddle it, of the positions of the keys equal to it, takes
// every word at or below it (exactly k: words are distinct) into K = 2^log_k slots padded
// with the largest word, sorts them with the network and writes the first k values (read
// back from the row) and positions. Dynamic shared memory: `capacity` words, the K slots
// (padded), the radix select's counts and the count of slots taken.
template <typename K>
__device__ __forceinline__ void top_k_candidates(const K *__restrict__ keys, const u32 *__restrict__ counts,
                                                 const u64 *__restrict__ candidates, K *__restrict__ values,
                                                 u32 *__restrict__ indices, u64 rows, u64 len, u32 capacity,
                                                 u32 k, u32 log_k) {
    u64 *words = reinterpret_cast<u64 *>(top_k_smem);
    u64 *best = words + capacity;
    u32 *hist = reinterpret_cast<u32 *>(best + padded_words(log_k));
    // The slots taken so far, after the counts: dynamic, so that the launch's shared memory
    // is all the host asked for.
    u32 &taken = hist[TOP_K_RADIX_WORDS];
    const u32 size = 1u << log_k;
    for (u64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const u32 n = candidate_words(counts[row], k, capacity);
        const u64 *slots = candidates + row * capacity;
        copy_loads_in_flight<u64>(
            n, threadIdx.x, blockDim.x, [&](u32 j) { return slots[j]; },
            [&](u32 j, u64 w) { words[j] = w; });
        if (threadIdx.x == 0) {
            taken = 0;
        }
        __syncthreads();
        u32 need;
        const u32 key = radix_select<true, true>(
            [&](u32 i, u32 &x) {
                x = (u32)(words[i] >> 32);
                return true;
            },
            n, k, 32, hist, need);
        u64 last = ((u64)key << 32) | 0xffffffffu;
        if (need != 0xffffffffu) {
            // `need` of the words with this key: the positions' radix select among them.
            u32 unused;
            const u32 position = radix_select<true, true>(
                [&](u32 i, u32 &x) {
                    x = (u32)words[i];
                    return (u32)(words[i] >> 32) == key;
                },
                n, need, 32, hist, unused);
            last = ((u64)key << 32) | position;
        }
        // Exactly k words are at or below `last`; each warp reserves its slots with one
        // atomic.
        for (u32 base = 0; base < n; base += blockDim.x) {
            const u32 i = base + threadIdx.x;
            const bool take = i < n && words[i] <= last;
            const u32 takes = __ballot_sync(0xffffffffu, take);
            u32 first = 0;
            if ((threadIdx.x & 31u) == 0 && takes != 0u) {
                first = atomicAdd(&taken, (u32)__popc(takes));
            }
            first = __shfl_sync(0xffffffffu, first, 0);
            if (take) {
                best[pad(first + __popc(takes & ((1u << (threadIdx.x & 31u)) - 1u)))] = words[i];
            }
        }
        for (u32 i = k + threadIdx.x; i < size; i += blockDim.x) {
            best[pad(i)] = ~0ull;
        }
        __syncthreads();
        tile_select(best, size, log_k);
        for (u32 i = threadIdx.x; i < k; i += blockDim.x) {
            const u32 position = (u32)best[pad(i)];
            indices[row * k + i] = position;
            values[row * k + i] = keys[row * len + position];
        }
        __syncthreads(); // the slots are read before the next row's words are stored
    }
}

#define TOP_K_CANDIDATES_KERNEL(KNAME, K)                                                         \
    extern "C" __global__ void __launch_bounds__(TOP_K_THREADS)                                   \
        top_k_candidates_##KNAME(const K *__restrict__ keys, const u32 *__restrict__ counts,      \
                                 const u64 *__restrict__ candidates, K *__restrict__ values,      \
                                 u32 *__restrict__ indices, u64 rows, u64 len, u32 capacity,      \
                                 u32 k, u32 log_k) {                                              \
        top_k_candidates<K>(keys, counts, candidates, values, indices, rows, len, capacity, k,   \
                            log_k);                                                               \
    }

TOP_K_CANDIDATES_KERNEL(u32, u32)
TOP_K_CANDIDATES_KERNEL(u16, u16)
