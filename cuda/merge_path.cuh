// Merge passes of the CUDA kernels (cuda/bitonic.cu), the design of
// src/schedule/merge_path.rs: a pass reads groups of W = 2^log_ways sorted runs of 2^log_run
// words (W is 2 or 4; the last run of the array may be short) from one buffer and writes
// each group, merged into one run, to another.
//
// Where each block's part of the runs starts is found beforehand by `merge_split`, from a
// regular sample of the runs: every S-th word of every run (S = 2^log_sample). A sample's
// rank among its group's samples is its index in its run plus, for each other run, how many
// of that run's samples precede it (a binary search over the samples). Every sample whose
// rank is a multiple of k (`samples_per_tile`) starts a block: the block's part of each run
// begins at the sample's exact rank in that run (one more search, confined to the S words
// between two samples), and ends where the next block's begins. Between two such samples a
// run holds at most (its samples there + 1) * S - 1 words, so a block merges fewer than
// (k + W) * S words, which the plan keeps within 2^tile_bits. Finding the exact split of a
// W-way merge at a fixed output rank would cost a search per candidate per run; the sample
// costs one search per run, at the price of blocks about k / (k + W) full.
//
// A block loads its W parts into shared memory, merges them two by two (one level for W = 2,
// two for W = 4: parts 0 and 1 beside parts 2 and 3, then the two results), each thread
// finding its own diagonal by a binary search and merging E outputs serially, and stores the
// result with coalesced writes.
//
// Ties: a sample precedes equal words of higher runs and follows those of lower runs, and
// every merge takes the lower run's word first, so each pass is stable and the order of equal
// keys is the tile sort's.

#pragma once

#include "words.cuh"

// (tile_smem, the dynamic shared memory, is declared by cuda/bitonic.cu before it includes
// this file.)

// The most runs one pass merges.
#define MAX_WAYS 4u

// One group of runs: where it starts and each run's length, clipped at n.
struct RunGroup {
    u64 start;
    u64 len[MAX_WAYS];
};

__device__ __forceinline__ RunGroup run_group(const MergeArgs &a, u64 g) {
    RunGroup G;
    G.start = g << (a.log_run + a.log_ways);
    u64 left = a.n - G.start;
#pragma unroll
    for (u32 r = 0; r < MAX_WAYS; ++r) {
        const u64 len = r < (1u << a.log_ways) ? min(1ull << a.log_run, left) : 0;
        G.len[r] = len;
        left -= len;
    }
    return G;
}

// Samples of a run of `len` words.
__device__ __forceinline__ u64 samples_of(const MergeArgs &a, u64 len) {
    return (len + (1ull << a.log_sample) - 1) >> a.log_sample;
}

// Blocks of a full group; the grid, and the splitter buffer, give every group this many
// (the last group may use fewer).
__device__ __forceinline__ u64 blocks_per_group(const MergeArgs &a) {
    const u64 samples = 1ull << (a.log_run - a.log_sample + a.log_ways);
    return (samples + a.samples_per_tile - 1) / a.samples_per_tile;
}

// The first index in [lo, hi) where `before(i)` is false (hi if none), for a `before` that is
// true up to some index and false after it.
template <typename F> __device__ __forceinline__ u64 first_not_before(F before, u64 lo, u64 hi) {
    while (lo < hi) {
        const u64 mid = (lo + hi) >> 1;
        if (before(mid)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// splits[4 * b + r] = how many words of run r of its group precede block b's part: one thread
// per sample, the samples whose rank in their group is a multiple of k writing.
template <typename K>
__device__ __forceinline__ void merge_split(const K *__restrict__ keys, u64 *__restrict__ splits, const MergeArgs &a) {
    const u32 ways = 1u << a.log_ways;
    const u32 run_samples_bits = a.log_run - a.log_sample;
    const u64 per_group = 1ull << (run_samples_bits + a.log_ways);
    const u64 groups = (a.n + (1ull << (a.log_run + a.log_ways)) - 1) >> (a.log_run + a.log_ways);
    const u64 blocks = blocks_per_group(a);
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 s = (u64)blockIdx.x * blockDim.x + threadIdx.x; s < groups * per_group; s += stride) {
        const u64 g = s / per_group;
        const u32 r = (u32)((s % per_group) >> run_samples_bits);
        const u64 j = s & ((1ull << run_samples_bits) - 1);
        const RunGroup G = run_group(a, g);
        const u64 at = j << a.log_sample;
        if (at >= G.len[r]) {
            continue;
        }
        const K *base = keys + G.start;
        const K v = base[((u64)r << a.log_run) + at];
        // Samples of the other runs that precede this one.
        u64 before[MAX_WAYS];
        u64 rank = j;
#pragma unroll
        for (u32 o = 0; o < MAX_WAYS; ++o) {
            before[o] = 0;
            if (o < ways && o != r) {
                const K *run = base + ((u64)o << a.log_run);
                const bool lower = o < r;
                before[o] = first_not_before(
                    [&](u64 i) {
                        const K w = run[i << a.log_sample];
                        return lower ? w <= v : w < v;
                    },
                    0, samples_of(a, G.len[o]));
                rank += before[o];
            }
        }
        if (rank % a.samples_per_tile != 0) {
            continue;
        }
        u64 *out = splits + (g * blocks + rank / a.samples_per_tile) * MAX_WAYS;
#pragma unroll
        for (u32 o = 0; o < MAX_WAYS; ++o) {
            u64 split = 0;
            if (o == r) {
                split = at;
            } else if (o < ways && before[o] > 0) {
                // Sample before[o] - 1 of run o precedes, sample before[o] does not.
                const K *run = base + ((u64)o << a.log_run);
                const bool lower = o < r;
                split = first_not_before(
                    [&](u64 i) {
                        const K w = run[i];
                        return lower ? w <= v : w < v;
                    },
                    ((before[o] - 1) << a.log_sample) + 1, min(before[o] << a.log_sample, G.len[o]));
            }
            out[o] = split;
        }
    }
}

// Where one block's inputs lie: part r is run r's words from[r] .. from[r] + len[r] - 1, and
// the block writes outputs x .. x + m - 1 (m = 0: no part, a block past its group's last).
struct MergeTile {
    u64 x;
    u64 from[MAX_WAYS];
    u32 len[MAX_WAYS];
    u32 m;
};

__device__ __forceinline__ MergeTile merge_tile(const MergeArgs &a, const u64 *__restrict__ splits, u64 b) {
    const u64 blocks = blocks_per_group(a);
    const u64 g = b / blocks;
    const u64 q = b % blocks;
    const RunGroup G = run_group(a, g);
    u64 samples = 0;
#pragma unroll
    for (u32 r = 0; r < MAX_WAYS; ++r) {
        samples += samples_of(a, G.len[r]);
    }
    const u64 used = (samples + a.samples_per_tile - 1) / a.samples_per_tile;
    MergeTile t;
    t.x = G.start;
    t.m = 0;
#pragma unroll
    for (u32 r = 0; r < MAX_WAYS; ++r) {
        const u64 begin = q < used ? splits[b * MAX_WAYS + r] : 0;
        // The group's last block ends with all of every run; any other where the next starts.
        const u64 end = q >= used ? 0 : q + 1 == used ? G.len[r] : splits[(b + 1) * MAX_WAYS + r];
        t.from[r] = G.start + ((u64)r << a.log_run) + begin;
        t.len[r] = (u32)(end - begin);
        t.x += begin;
        t.m += t.len[r];
    }
    return t;
}

// Issues every load of a block's inputs into registers: word i of the block (the parts one
// after another) is thread (i mod blockDim.x)'s register i / blockDim.x.
template <typename K, typename V, u32 E>
__device__ __forceinline__ void load_merge_inputs(const K *__restrict__ src_keys, const V *__restrict__ src_values,
                                                  const MergeTile &t, K (&lk)[E], V (&lv)[E]) {
    const u32 end0 = t.len[0];
    const u32 end1 = end0 + t.len[1];
    const u32 end2 = end1 + t.len[2];
#pragma unroll
    for (u32 e = 0; e < E; ++e) {
        const u32 i = threadIdx.x + e * blockDim.x;
        if (i < t.m) {
            const u64 at = i < end0   ? t.from[0] + i
                           : i < end1 ? t.from[1] + (i - end0)
                           : i < end2 ? t.from[2] + (i - end1)
                                      : t.from[3] + (i - end2);
            lk[e] = src_keys[at];
            if constexpr (HasValues<V>::value) {
                lv[e] = src_values[at];
            }
        }
    }
}

// How many of the first `diag` outputs of the stable merge of runs A and B come from A:
// `a_first(i, j)` says whether A[i] goes before B[j] (A[i] <= B[j]).
template <typename F> __device__ __forceinline__ u32 split_diagonal(F a_first, u32 len_a, u32 len_b, u32 diag) {
    u32 lo = diag > len_b ? diag - len_b : 0;
    u32 hi = diag < len_a ? diag : len_a;
    while (lo < hi) {
        const u32 mid = (lo + hi) >> 1;
        if (a_first(mid, diag - 1 - mid)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// One level of in-block merging, in place over slots pad(0 .. m - 1): the runs in slots
// [0, la) and [la, la + lb) merge into [0, la + lb), and beside them the runs in
// [lx, lx + lc) and [lx + lc, m) into [lx, m), where lx = la + lb. Each thread writes
// outputs first .. first + E - 1, crossing from the first merge to the second where they
// straddle lx.
template <typename K, typename V, u32 E>
__device__ __forceinline__ void merge_level(K *sk, V *sv, u32 la, u32 lb, u32 lc, u32 m) {
    constexpr bool HAS_V = HasValues<V>::value;
    const u32 lx = la + lb;
    const u32 first = threadIdx.x * E;
    K k[E];
    u32 source[E];
    if (first < m) {
        const bool second = first >= lx;
        u32 base_a = second ? lx : 0;
        u32 len_a = second ? lc : la;
        u32 base_b = base_a + len_a;
        u32 len_b = second ? m - lx - lc : lb;
        const u32 diag = second ? first - lx : first;
        u32 i = split_diagonal([&](u32 ia, u32 jb) { return sk[pad(base_a + ia)] <= sk[pad(base_b + jb)]; },
                               len_a, len_b, diag);
        u32 j = diag - i;
        K ka = i < len_a ? sk[pad(base_a + i)] : K(0);
        K kb = j < len_b ? sk[pad(base_b + j)] : K(0);
#pragma unroll
        for (u32 e = 0; e < E; ++e) {
            const u32 o = first + e;
            if (o == lx && !second) {
                base_a = lx;
                len_a = lc;
                base_b = lx + lc;
                len_b = m - lx - lc;
                i = 0;
                j = 0;
                ka = len_a > 0 ? sk[pad(base_a)] : K(0);
                kb = len_b > 0 ? sk[pad(base_b)] : K(0);
            }
            const bool take_a = j >= len_b || (i < len_a && ka <= kb);
            k[e] = take_a ? ka : kb;
            source[e] = take_a ? base_a + i : base_b + j;
            if (take_a) {
                ++i;
                if (i < len_a) {
                    ka = sk[pad(base_a + i)];
                }
            } else {
                ++j;
                if (j < len_b) {
                    kb = sk[pad(base_b + j)];
                }
            }
        }
    }
    V v[E];
    if constexpr (HAS_V) {
#pragma unroll
        for (u32 e = 0; e < E; ++e) {
            if (first + e < m) {
                v[e] = sv[pad(source[e])];
            }
        }
    }
    __syncthreads();
    // Slots pad(first + e): E consecutive words per thread, which the padding spreads over
    // distinct banks across a warp.
#pragma unroll
    for (u32 e = 0; e < E; ++e) {
        if (first + e < m) {
            sk[pad(first + e)] = k[e];
            if constexpr (HAS_V) {
                sv[pad(first + e)] = v[e];
            }
        }
    }
    __syncthreads();
}

// One merge pass, E outputs per thread, each block taking blocks' worth of work blockIdx.x,
// blockIdx.x + gridDim.x, ... (the grid is what the multiprocessors hold at once). A block
// issues the loads of its next part before it merges the current one, so that its memory
// traffic overlaps its shared-memory work.
template <typename K, typename V, u32 E>
__device__ __forceinline__ void merge_pass(const K *__restrict__ src_keys, const V *__restrict__ src_values,
                                           K *__restrict__ dst_keys, V *__restrict__ dst_values,
                                           const u64 *__restrict__ splits, const MergeArgs &a) {
    constexpr bool HAS_V = HasValues<V>::value;
    K *sk = reinterpret_cast<K *>(tile_smem);
    V *sv = reinterpret_cast<V *>(tile_smem + (size_t)padded_words(a.tile_bits) * sizeof(K));
    const bool decode = (a.transform & DECODE_ON_STORE) != 0;
    const u64 groups = (a.n + (1ull << (a.log_run + a.log_ways)) - 1) >> (a.log_run + a.log_ways);
    const u64 tiles = groups * blocks_per_group(a);
    u64 b = blockIdx.x;
    if (b >= tiles) {
        return;
    }
    K lk[E];
    V lv[E];
    MergeTile t = merge_tile(a, splits, b);
    load_merge_inputs<K, V, E>(src_keys, src_values, t, lk, lv);
    for (; b < tiles; b += gridDim.x) {
        const MergeTile cur = t;
#pragma unroll
        for (u32 e = 0; e < E; ++e) {
            const u32 i = threadIdx.x + e * blockDim.x;
            if (i < cur.m) {
                sk[pad(i)] = lk[e];
                if constexpr (HAS_V) {
                    sv[pad(i)] = lv[e];
                }
            }
        }
        __syncthreads();
        if (b + gridDim.x < tiles) {
            t = merge_tile(a, splits, b + gridDim.x);
            load_merge_inputs<K, V, E>(src_keys, src_values, t, lk, lv);
        }
        if (a.log_ways == 1) {
            merge_level<K, V, E>(sk, sv, cur.len[0], cur.len[1], 0, cur.m);
        } else {
            const u32 l01 = cur.len[0] + cur.len[1];
            merge_level<K, V, E>(sk, sv, cur.len[0], cur.len[1], cur.len[2], cur.m);
            merge_level<K, V, E>(sk, sv, l01, cur.m - l01, 0, cur.m);
        }
        for (u32 i = threadIdx.x; i < cur.m; i += blockDim.x) {
            const K w = sk[pad(i)];
            dst_keys[cur.x + i] = decode ? decode_key(w, a.encoding) : w;
            if constexpr (HAS_V) {
                dst_values[cur.x + i] = sv[pad(i)];
            }
        }
        // The next part's words, stored to shared memory at the top of the loop, overwrite
        // what these stores read.
        __syncthreads();
    }
}
