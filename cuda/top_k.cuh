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

// Which rows a tile launch serves, by the counts of the candidate filter (top_k_filter):
// every row with its whole `len` (ROWS_ALL); every row, reading only its first
// min(count, len) words (ROWS_COUNTED: the candidates); or only the rows whose count lies
// outside [lo, hi], which the full plan selects instead (ROWS_RESCUED).
#define ROWS_ALL 0u
#define ROWS_COUNTED 1u
#define ROWS_RESCUED 2u

struct RowFilter {
    const u32 *counts;
    u32 lo;
    u32 hi;
    u32 mode;
};

__device__ __forceinline__ bool row_rescued(const u32 *counts, u32 lo, u32 hi, u64 row) {
    const u32 c = counts[row];
    return c < lo || c > hi;
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
        if (f.mode == ROWS_RESCUED && !row_rescued(f.counts, f.lo, f.hi, row)) {
            continue; // uniform across the block
        }
        const u64 len = f.mode == ROWS_COUNTED ? min((u64)f.counts[row], a.len) : a.len;
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
                            u32 lo, u32 hi, u32 mode) {                                             \
        top_k_tiles<K>(keys, words, out, a, RowFilter{counts, lo, hi, mode});                       \
    }

TOP_K_TILES_KERNEL(u32, u32)
TOP_K_TILES_KERNEL(u16, u16)

// A barrier of the group that runs a radix select: its warp, or with BLOCK its block.
template <bool BLOCK> __device__ __forceinline__ void group_sync() {
    if (BLOCK) {
        __syncthreads();
    } else {
        __syncwarp();
    }
}

// The `rank`-th smallest (from 1) of a set of `key_bits`-bit keys, found by a group (a warp,
// or with BLOCK the block) with the TOP_K_RADIX_WORDS counts at `hist` in shared memory:
// `load(i, x)` for i < len stores element i's key in x and says whether the element belongs
// to the set. Eight bits a pass from the top, each pass counts the keys that match the
// digits chosen so far, and the first warp's scan of the counts picks the digit where the
// rank falls. Returns that key and in `need` how many keys equal to it the rank takes (the
// keys below it make up the rest). With SETTLE a pass whose chosen digit holds exactly the
// keys still wanted stops early: every key of the digit is wanted, the return is the top of
// the digit's range and `need` is 0xffffffff. Every thread of the group calls it; the group
// may overwrite `hist` when it returns.
template <bool BLOCK, bool SETTLE, typename Load>
__device__ __forceinline__ u32 radix_select(Load load, u32 len, u32 rank, int key_bits, u32 *hist, u32 &need) {
    constexpr u32 FULL = 0xffffffffu;
    const u32 t = BLOCK ? threadIdx.x : (threadIdx.x & 31u);
    const u32 threads = BLOCK ? blockDim.x : 32u;
    u32 *chosen = hist + 256;
    u32 prefix = 0;
    u32 mask = 0;
    need = rank;
    for (int shift = key_bits - 8; shift >= 0; shift -= 8) {
        for (u32 d = t; d < 256u; d += threads) {
            hist[d] = 0u;
        }
        group_sync<BLOCK>(); // the keys are stored and the counts zeroed
        for (u32 c = t; c < len; c += threads) {
            u32 x;
            if (load(c, x) && (x & mask) == prefix) {
                atomicAdd(&hist[(x >> shift) & 255u], 1u);
            }
        }
        group_sync<BLOCK>();
        if (t < 32u) {
            // Lane l holds digits 8l .. 8l + 7; the first lane whose inclusive sum reaches
            // `need` holds the digit.
            u32 bins[8];
            u32 sum = 0;
#pragma unroll
            for (u32 b = 0; b < 8u; ++b) {
                bins[b] = hist[8u * t + b];
                sum += bins[b];
            }
            u32 inclusive = sum;
#pragma unroll
            for (u32 o = 1; o < 32u; o <<= 1) {
                const u32 y = __shfl_up_sync(FULL, inclusive, o);
                if (t >= o) {
                    inclusive += y;
                }
            }
            const u32 src = __ffs(__ballot_sync(FULL, inclusive >= need)) - 1u;
            u32 before = inclusive - sum;
            u32 d = 0;
#pragma unroll
            for (u32 b = 0; b < 8u; ++b) {
                if (d == b && before + bins[b] < need) {
                    before += bins[b];
                    d = b + 1u;
                }
            }
            u32 count = 0;
#pragma unroll
            for (u32 b = 0; b < 8u; ++b) {
                count = d == b ? bins[b] : count;
            }
            if (t == src) {
                chosen[0] = 8u * t + d;
                chosen[1] = before;
                chosen[2] = count;
            }
        }
        group_sync<BLOCK>();
        const u32 digit = chosen[0];
        const u32 count = chosen[2];
        need -= chosen[1];
        prefix |= digit << shift;
        mask |= 255u << shift;
        group_sync<BLOCK>(); // every thread has read the choice before the next pass counts
        if (SETTLE && count == need) {
            need = FULL;
            return prefix | ((1u << shift) - 1u);
        }
    }
    return prefix;
}

// The candidate filter of long rows (TopKFilter in src/schedule/top_k.rs, which describes
// it). First the threshold of each row, the sample's rank-th smallest word: one block per
// row loads 2^log_sample ordered keys, one at a hashed position of each stratum
// (sample_position there), into shared memory (dynamic: the keys, then the radix select's
// TOP_K_RADIX_WORDS); the block's radix select finds the key of rank `rank` and how many of its equals
// the rank takes, and the first warp finds, in stratum order, which is position order, the
// sampled key equal to it that completes the rank. The threshold is that key and position.
__device__ __forceinline__ u64 sample_position(u64 row, u64 j, u64 len, u32 log_sample) {
    const u64 lo = (j * len) >> log_sample;
    const u64 hi = ((j + 1) * len) >> log_sample;
    u32 h = (u32)row * 0x9e3779b9u ^ (u32)(row >> 32) ^ (u32)j * 0x85ebca6bu;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return lo + h % (hi - lo);
}

template <typename K>
__device__ __forceinline__ void top_k_sample(const K *__restrict__ keys, u64 *__restrict__ thresholds,
                                             u64 rows, u64 len, u32 log_sample, u32 rank, u32 encoding) {
    constexpr u32 FULL = 0xffffffffu;
    const u32 size = 1u << log_sample;
    u32 *ordered = reinterpret_cast<u32 *>(top_k_smem);
    u32 *hist = ordered + size;
    for (u64 row = blockIdx.x; row < rows; row += gridDim.x) {
        for (u32 j = threadIdx.x; j < size; j += blockDim.x) {
            const u64 col = sample_position(row, j, len, log_sample);
            ordered[j] = encode_as<K>((u32)keys[row * len + col], encoding);
        }
        __syncthreads();
        u32 need;
        const u32 key = radix_select<true, false>(
            [&](u32 j, u32 &x) {
                x = ordered[j];
                return true;
            },
            size, rank, 8 * (int)sizeof(K), hist, need);
        if (threadIdx.x < 32u) {
            const u32 lane = threadIdx.x;
            u32 seen = 0;
            for (u32 base = 0; base < size; base += 32u) {
                const bool equal = base + lane < size && ordered[base + lane] == key;
                const u32 equals = __ballot_sync(FULL, equal);
                if (equal && seen + __popc(equals & ((1u << lane) - 1u)) + 1u == need) {
                    thresholds[row] = ((u64)key << 32) | sample_position(row, base + lane, len, log_sample);
                }
                seen += __popc(equals);
                if (seen >= need) {
                    break;
                }
            }
        }
        __syncthreads(); // the keys are read before the next row's are stored
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

// Then one pass over the keys appends each word at or below its row's threshold to the
// row's `capacity` slots, counting them all in `counts` (zeroed before): slots past the
// capacity are not written, and a count outside [k, capacity] sends the row to the full
// plan. A block of TOP_K_THREADS takes chunks of TOP_K_FILTER_CHUNK keys of a row (`chunks`
// per row), each thread every TOP_K_THREADS-th key of the chunk, all loaded before any is
// kept; where every row starts on 16 bytes and holds whole 16-byte vectors (`vector`), every
// TOP_K_THREADS-th vector instead, so that 16-bit keys too load whole sectors with few
// instructions. The block counts its kept words (a ballot per warp and key) and reserves
// their slots with one atomic for the chunk: an atomic per warp and key, on a counter the
// row's other blocks contend for, leaves the warps waiting on its round trip and the pass
// far from the memory's speed.
template <typename K>
__device__ __forceinline__ void top_k_filter(const K *__restrict__ keys, const u64 *__restrict__ thresholds,
                                             u32 *__restrict__ counts, u64 *__restrict__ candidates,
                                             u64 rows, u64 len, u64 chunks, u64 capacity, u32 encoding,
                                             u32 vector) {
    constexpr u32 PER_THREAD = TOP_K_FILTER_CHUNK / TOP_K_THREADS;
    constexpr u32 WARPS = TOP_K_THREADS / 32u;
    constexpr u32 FILTER_VECTOR_KEYS = 16u / sizeof(K);
    static_assert(PER_THREAD % FILTER_VECTOR_KEYS == 0u, "a thread's keys are whole vectors");
    static_assert(PER_THREAD * TOP_K_THREADS == TOP_K_FILTER_CHUNK && PER_THREAD <= 32u,
                  "a thread's keys of a chunk fit a 32-bit mask");
    __shared__ u32 warp_first[WARPS];
    __shared__ u32 block_first;
    const u32 lane = threadIdx.x & 31u;
    const u32 warp = threadIdx.x >> 5;
    for (u64 g = blockIdx.x; g < rows * chunks; g += gridDim.x) {
        const u64 row = g / chunks;
        const u64 threshold = thresholds[row];
        const K *row_keys = keys + row * len;
        const u64 chunk = (g - row * chunks) * TOP_K_FILTER_CHUNK;
        u32 raw[PER_THREAD];
        if (vector) {
            const uint4 *vectors = reinterpret_cast<const uint4 *>(row_keys + chunk);
#pragma unroll
            for (u32 j = 0; j < PER_THREAD / FILTER_VECTOR_KEYS; ++j) {
                const u32 v = j * TOP_K_THREADS + threadIdx.x;
                // A row's length is a whole number of vectors: each lies in it or past it.
                const bool inside = chunk + (u64)v * FILTER_VECTOR_KEYS < len;
                const uint4 q = inside ? vectors[v] : make_uint4(0u, 0u, 0u, 0u);
                const u32 parts[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
                for (u32 e = 0; e < FILTER_VECTOR_KEYS; ++e) {
                    raw[j * FILTER_VECTOR_KEYS + e] =
                        sizeof(K) == 4 ? parts[e] : (parts[e / 2u] >> (16u * (e & 1u))) & 0xffffu;
                }
            }
        } else {
#pragma unroll
            for (u32 i = 0; i < PER_THREAD; ++i) {
                const u64 col = filter_col<K>(chunk, i, vector);
                raw[i] = col < len ? (u32)row_keys[col] : 0u;
            }
        }
        // Bit i: this thread keeps its i-th key.
        u32 kept = 0;
        u32 warp_count = 0;
#pragma unroll
        for (u32 i = 0; i < PER_THREAD; ++i) {
            const u64 col = filter_col<K>(chunk, i, vector);
            const u64 w = ((u64)encode_as<K>(raw[i], encoding) << 32) | col;
            const bool keep = col < len && w <= threshold;
            kept |= (u32)keep << i;
            warp_count += __popc(__ballot_sync(0xffffffffu, keep));
        }
        if (lane == 0) {
            warp_first[warp] = warp_count;
        }
        __syncthreads();
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
        u64 slot = (u64)block_first + warp_first[warp];
#pragma unroll
        for (u32 i = 0; i < PER_THREAD; ++i) {
            const bool keep = (kept >> i) & 1u;
            const u32 ballot = __ballot_sync(0xffffffffu, keep);
            const u64 at = slot + __popc(ballot & ((1u << lane) - 1u));
            if (keep && at < capacity) {
                const u64 col = filter_col<K>(chunk, i, vector);
                candidates[row * capacity + at] = ((u64)encode_as<K>(raw[i], encoding) << 32) | col;
            }
            slot += __popc(ballot);
        }
        // The next chunk's counts must not overwrite this one's offsets before every warp
        // has read them.
        __syncthreads();
    }
}

#define TOP_K_FILTER_KERNELS(KNAME, K)                                                                \
    extern "C" __global__ void __launch_bounds__(TOP_K_THREADS)                                       \
        top_k_sample_##KNAME(const K *__restrict__ keys, u64 *__restrict__ thresholds, u64 rows,      \
                             u64 len, u32 log_sample, u32 rank, u32 encoding) {                       \
        top_k_sample<K>(keys, thresholds, rows, len, log_sample, rank, encoding);                     \
    }                                                                                                 \
    extern "C" __global__ void __launch_bounds__(TOP_K_THREADS)                                       \
        top_k_filter_##KNAME(const K *__restrict__ keys, const u64 *__restrict__ thresholds,          \
                             u32 *__restrict__ counts, u64 *__restrict__ candidates, u64 rows,        \
                             u64 len, u64 chunks, u64 capacity, u32 encoding, u32 vector) {           \
        top_k_filter<K>(keys, thresholds, counts, candidates, rows, len, chunks, capacity, encoding,  \
                        vector);                                                                      \
    }

TOP_K_FILTER_KERNELS(u32, u32)
TOP_K_FILTER_KERNELS(u16, u16)

// Where the candidates are sorted (k past the tile), a row the filter could not serve (its
// count outside [k, capacity]) selects its k best words exactly, into its candidate slots,
// before the sort: one block per row finds the k-th smallest word `key << 32 | position` by
// a radix select of eight 8-bit digits (a pass over the row each, counting the words whose
// higher digits match in shared memory), then a ninth pass writes every word at or below it
// (exactly k: the words are distinct) and the slots past k are padded with u64::MAX. A row
// the filter served costs one read of its count; rescued rows are rare (the sample's
// margins), so one block's passes are fast enough for them.
template <typename K>
__device__ __forceinline__ void top_k_exact(const K *__restrict__ keys, const u32 *__restrict__ counts,
                                            u64 *__restrict__ candidates, u64 rows, u64 len, u64 capacity,
                                            u32 k, u32 encoding) {
    __shared__ u32 hist[256];
    __shared__ u64 chosen[2]; // the prefix found, and the rank still wanted among its words
    __shared__ u32 written;
    for (u64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const u32 count = counts[row];
        if (count >= k && count <= capacity) {
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
// With `counts` (the candidate filter's), a row whose count lies outside [lo, hi] takes its
// words from `rescued` instead, at the same stride.
template <typename K>
__device__ __forceinline__ void top_k_take(const u64 *__restrict__ words, const K *__restrict__ keys,
                                           K *__restrict__ values, u32 *__restrict__ indices, u64 rows,
                                           u64 stride, u64 row_len, u32 k, const u64 *__restrict__ rescued,
                                           const u32 *__restrict__ counts, u32 lo, u32 hi) {
    const u64 n = rows * k;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u64 row = i / k;
        const u64 *from = counts != nullptr && row_rescued(counts, lo, hi, row) ? rescued : words;
        const u32 position = (u32)from[row * stride + (i - row * k)];
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
                                                  u64 row_len, u32 k, const u64 *rescued,        \
                                                  const u32 *counts, u32 lo, u32 hi) {           \
        top_k_take<K>(words, keys, values, indices, rows, stride, row_len, k, rescued, counts,   \
                      lo, hi);                                                                   \
    }

TOP_K_COMPOSE_KERNEL(u32, u32)
TOP_K_COMPOSE_KERNEL(u16, u16)
TOP_K_TAKE_KERNEL(u32, u32)
TOP_K_TAKE_KERNEL(u64, u64)
TOP_K_TAKE_KERNEL(u16, u16)


// Short rows (TopKSelect in src/schedule/top_k.rs, which describes it): one warp per row, in
// blocks of several warps, each warp with `warp_bytes` of the dynamic shared memory laid out
// as the row's K = 2^log_k selected words (u64), the radix select's counts (u32) and the
// row's ordered keys (u32). The warp's radix select finds the k-th smallest key; one pass in
// position order then takes every key below it and, of those equal to it, the first ones
// (ties go to the lower position), ballots giving each taken key its slot; the network sorts
// the K words, and the first k give the values (read back from the row, so that every bit is
// the caller's) and the positions. Only warp barriers: a warp's row is its own.
template <typename K>
__device__ __forceinline__ void top_k_select(const K *__restrict__ keys, K *__restrict__ values,
                                             u32 *__restrict__ indices, u64 rows, u32 len, u32 k,
                                             u32 log_k, u32 warp_bytes, u32 encoding) {
    constexpr u32 FULL = 0xffffffffu;
    const u32 lane = threadIdx.x & 31u;
    const u32 warps = blockDim.x >> 5;
    unsigned char *mine = top_k_smem + (threadIdx.x >> 5) * warp_bytes;
    const u32 size = 1u << log_k;
    u64 *words = reinterpret_cast<u64 *>(mine);
    u32 *hist = reinterpret_cast<u32 *>(mine + 8u * size);
    u32 *ordered = hist + TOP_K_RADIX_WORDS;
    const u32 lanes_below = (1u << lane) - 1u;
    for (u64 row = (u64)blockIdx.x * warps + (threadIdx.x >> 5); row < rows; row += (u64)gridDim.x * warps) {
        const K *row_keys = keys + row * len;
        for (u32 c = lane; c < len; c += 32u) {
            ordered[c] = encode_as<K>((u32)row_keys[c], encoding);
        }
        __syncwarp();
        // The selection: keys below `last` and the first `need` keys equal to it.
        u32 need;
        const u32 last = radix_select<false, true>(
            [&](u32 c, u32 &x) {
                x = ordered[c];
                return true;
            },
            len, k, 8 * (int)sizeof(K), hist, need);
        u32 taken = 0;
        u32 equal_seen = 0;
        for (u32 base = 0; base < len && taken < k; base += 32u) {
            const u32 c = base + lane;
            const bool valid = c < len;
            const u32 x = valid ? ordered[c] : 0u;
            const bool equal = valid && x == last;
            const u32 equals = __ballot_sync(FULL, equal);
            const bool take = valid && (x < last || (equal && equal_seen + __popc(equals & lanes_below) < need));
            const u32 takes = __ballot_sync(FULL, take);
            const u32 slot = taken + __popc(takes & lanes_below);
            if (take && slot < size) {
                words[slot] = ((u64)x << 32) | c;
            }
            taken += __popc(takes);
            equal_seen += __popc(equals);
        }
        for (u32 i = k + lane; i < size; i += 32u) {
            words[i] = ~0ull;
        }
        __syncwarp();
        // The network on the K words, the smaller to the lower index.
        for (u32 s = 0; s < log_k; ++s) {
            for (u32 h = s + 1; h-- > 0;) {
                for (u32 j = lane; j < (size >> 1); j += 32u) {
                    const u32 lo = tk_lower(j, h);
                    const u32 hi = h == s ? lo ^ ((2u << s) - 1u) : lo + (1u << h);
                    const u64 x = words[lo];
                    const u64 y = words[hi];
                    if (x > y) {
                        words[lo] = y;
                        words[hi] = x;
                    }
                }
                __syncwarp();
            }
        }
        for (u32 i = lane; i < k; i += 32u) {
            const u32 position = (u32)words[i];
            indices[row * k + i] = position;
            values[row * k + i] = row_keys[position];
        }
        __syncwarp(); // the words are read before the next row's keys are stored
    }
}

// The filtered route's last step where the candidates fit the block's shared memory
// (TopKCandidates in src/schedule/top_k.rs): one block per row loads the row's candidate
// words (its count of them, or for a row that top_k_exact rescued its first k) into shared
// memory, finds the k-th smallest word by radix selects, first of the keys (the high
// halves) and, where equal keys straddle it, of the positions of the keys equal to it, takes
// every word at or below it (exactly k: words are distinct) into K = 2^log_k slots padded
// with the largest word, sorts them with the network and writes the first k values (read
// back from the row) and positions. Dynamic shared memory: `capacity` words, the K slots
// (padded) and the radix select's counts.
template <typename K>
__device__ __forceinline__ void top_k_candidates(const K *__restrict__ keys, const u32 *__restrict__ counts,
                                                 const u64 *__restrict__ candidates, K *__restrict__ values,
                                                 u32 *__restrict__ indices, u64 rows, u64 len, u32 capacity,
                                                 u32 k, u32 log_k) {
    u64 *words = reinterpret_cast<u64 *>(top_k_smem);
    u64 *best = words + capacity;
    u32 *hist = reinterpret_cast<u32 *>(best + padded_words(log_k));
    __shared__ u32 taken;
    const u32 size = 1u << log_k;
    for (u64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const u32 count = counts[row];
        const u32 n = count < k || count > capacity ? k : count;
        const u64 *slots = candidates + row * capacity;
        for (u32 i = threadIdx.x; i < n; i += blockDim.x) {
            words[i] = slots[i];
        }
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

#define TOP_K_SELECT_KERNELS(KNAME, K)                                                            \
    extern "C" __global__ void __launch_bounds__(TOP_K_THREADS)                                   \
        top_k_select_##KNAME(const K *__restrict__ keys, K *__restrict__ values,                  \
                             u32 *__restrict__ indices, u64 rows, u32 len, u32 k, u32 log_k,      \
                             u32 warp_bytes, u32 encoding) {                                      \
        top_k_select<K>(keys, values, indices, rows, len, k, log_k, warp_bytes, encoding);        \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(TOP_K_THREADS)                                   \
        top_k_candidates_##KNAME(const K *__restrict__ keys, const u32 *__restrict__ counts,      \
                                 const u64 *__restrict__ candidates, K *__restrict__ values,      \
                                 u32 *__restrict__ indices, u64 rows, u64 len, u32 capacity,      \
                                 u32 k, u32 log_k) {                                              \
        top_k_candidates<K>(keys, counts, candidates, values, indices, rows, len, capacity, k,   \
                            log_k);                                                               \
    }

TOP_K_SELECT_KERNELS(u32, u32)
TOP_K_SELECT_KERNELS(u16, u16)
