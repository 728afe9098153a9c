// Merge passes of the CUDA kernels (cuda/bitonic.cu): sorted runs merged two by two, the
// design of src/schedule/merge_path.rs. A pass reads runs of 2^log_run words from one buffer
// and writes runs twice as long to another.
//
// Each block writes 2^tile_bits consecutive outputs. Where its part of the two input runs
// starts is found beforehand by `merge_split` (one thread per block, a binary search along
// the merge path's cross diagonal in global memory); where it ends is the next block's start.
// The block loads both parts, about 2^tile_bits words, into shared memory; each thread then
// finds its own diagonal there by a second binary search and merges E outputs serially;
// the outputs go through shared memory once more so that the stores are coalesced.
//
// Every merge is stable (ties take the first run's word), so the order of equal keys is the
// tile sort's, kept through every pass.

#pragma once

#include "words.cuh"

// (tile_smem, the dynamic shared memory, is declared by cuda/bitonic.cu before it includes
// this file.)

// The pair of runs that output index x belongs to: where it starts and how long each run is,
// both clipped at n (the last run of the array may be short or missing).
struct RunPair {
    u64 start;
    u64 len_a;
    u64 len_b;
};

__device__ __forceinline__ RunPair run_pair(const MergeArgs &a, u64 x) {
    RunPair p;
    p.start = (x >> (a.log_run + 1)) << (a.log_run + 1);
    const u64 left = a.n - p.start;
    p.len_a = min(1ull << a.log_run, left);
    p.len_b = min(1ull << a.log_run, left - p.len_a);
    return p;
}

// How many of the first `diag` outputs of the stable merge of runs A and B come from A:
// `a_first(i, j)` says whether A[i] goes before B[j] (A[i] <= B[j]).
template <typename I, typename F>
__device__ __forceinline__ I split_diagonal(F a_first, I len_a, I len_b, I diag) {
    I lo = diag > len_b ? diag - len_b : 0;
    I hi = diag < len_a ? diag : len_a;
    while (lo < hi) {
        const I mid = (lo + hi) >> 1;
        if (a_first(mid, diag - 1 - mid)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// splits[t] = how many words of its run pair's first run precede output tile t.
template <typename K>
__device__ __forceinline__ void merge_split(const K *__restrict__ keys, u64 *__restrict__ splits, const MergeArgs &a) {
    const u64 tiles = (a.n + (1ull << a.tile_bits) - 1) >> a.tile_bits;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x; t < tiles; t += stride) {
        const u64 x = t << a.tile_bits;
        const RunPair p = run_pair(a, x);
        const K *ka = keys + p.start;
        const K *kb = ka + p.len_a;
        splits[t] = split_diagonal<u64>([&](u64 i, u64 j) { return ka[i] <= kb[j]; }, p.len_a, p.len_b, x - p.start);
    }
}

// Where one output tile's inputs lie: outputs x .. x + m - 1 merge the first run's words
// from_a .. from_a + len_a - 1 with the second's from_b .. from_b + (m - len_a) - 1.
struct MergeTile {
    u64 x;
    u64 from_a;
    u64 from_b;
    u32 len_a;
    u32 m;
};

__device__ __forceinline__ MergeTile merge_tile(const MergeArgs &a, const u64 *__restrict__ splits, u64 t) {
    const u64 x = t << a.tile_bits;
    const RunPair p = run_pair(a, x);
    const u64 pair_len = p.len_a + p.len_b;
    const u64 diag = x - p.start;
    const u64 diag_end = min(diag + (1ull << a.tile_bits), pair_len);
    // A tile that ends its pair ends with all of the first run; any other ends where the
    // next tile starts.
    const u64 a0 = splits[t];
    const u64 a1 = diag_end == pair_len ? p.len_a : splits[t + 1];
    MergeTile g;
    g.x = x;
    g.from_a = p.start + a0;
    g.from_b = p.start + p.len_a + (diag - a0);
    g.len_a = (u32)(a1 - a0);
    g.m = (u32)(diag_end - diag);
    return g;
}

// Issues every load of a tile's inputs into registers: word i of the tile (A's part, then
// B's) is thread (i mod blockDim.x)'s register i / blockDim.x.
template <typename K, typename V, u32 E>
__device__ __forceinline__ void load_merge_inputs(const K *__restrict__ src_keys, const V *__restrict__ src_values,
                                                  const MergeTile &g, K (&lk)[E], V (&lv)[E]) {
#pragma unroll
    for (u32 r = 0; r < E; ++r) {
        const u32 i = threadIdx.x + r * blockDim.x;
        if (i < g.m) {
            const u64 at = i < g.len_a ? g.from_a + i : g.from_b + (i - g.len_a);
            lk[r] = src_keys[at];
            if constexpr (HasValues<V>::value) {
                lv[r] = src_values[at];
            }
        }
    }
}

// One merge pass: output tiles of 2^tile_bits, E outputs per thread, each block taking
// tiles blockIdx.x, blockIdx.x + gridDim.x, ... (the grid is a few blocks per
// multiprocessor). A block issues the loads of its next tile before it merges the current
// one, so that its memory traffic overlaps its shared-memory work: with the loads issued
// only after the previous tile's stores, a pass ran at about 60% of the copy's bandwidth.
template <typename K, typename V, u32 E>
__device__ __forceinline__ void merge_pass(const K *__restrict__ src_keys, const V *__restrict__ src_values,
                                           K *__restrict__ dst_keys, V *__restrict__ dst_values,
                                           const u64 *__restrict__ splits, const MergeArgs &a) {
    constexpr bool HAS_V = HasValues<V>::value;
    K *sk = reinterpret_cast<K *>(tile_smem);
    V *sv = reinterpret_cast<V *>(tile_smem + (size_t)padded_words(a.tile_bits) * sizeof(K));
    const bool decode = (a.transform & DECODE_ON_STORE) != 0;
    const u64 tiles = (a.n + (1ull << a.tile_bits) - 1) >> a.tile_bits;
    u64 t = blockIdx.x;
    if (t >= tiles) {
        return;
    }
    K lk[E];
    V lv[E];
    MergeTile g = merge_tile(a, splits, t);
    load_merge_inputs<K, V, E>(src_keys, src_values, g, lk, lv);
    for (; t < tiles; t += gridDim.x) {
        const u32 len_a = g.len_a;
        const u32 m = g.m;
        const u32 len_b = m - len_a;
        const u64 x = g.x;
#pragma unroll
        for (u32 r = 0; r < E; ++r) {
            const u32 i = threadIdx.x + r * blockDim.x;
            if (i < m) {
                sk[pad(i)] = lk[r];
                if constexpr (HAS_V) {
                    sv[pad(i)] = lv[r];
                }
            }
        }
        __syncthreads();
        const u64 next = t + gridDim.x;
        if (next < tiles) {
            g = merge_tile(a, splits, next);
            load_merge_inputs<K, V, E>(src_keys, src_values, g, lk, lv);
        }

        // This thread's outputs first .. first + E - 1 (those below m).
        const u32 first = threadIdx.x * E;
        K k[E];
        u32 source[E];
        if (first < m) {
            // A's words are in slots pad(0 .. len_a - 1), B's in pad(len_a .. m - 1).
            u32 i = split_diagonal<u32>([&](u32 ia, u32 jb) { return sk[pad(ia)] <= sk[pad(len_a + jb)]; },
                                        len_a, len_b, first);
            u32 j = first - i;
            K ka = i < len_a ? sk[pad(i)] : K(0);
            K kb = j < len_b ? sk[pad(len_a + j)] : K(0);
#pragma unroll
            for (u32 e = 0; e < E; ++e) {
                const bool take_a = j >= len_b || (i < len_a && ka <= kb);
                k[e] = take_a ? ka : kb;
                source[e] = take_a ? i : len_a + j;
                if (take_a) {
                    ++i;
                    if (i < len_a) {
                        ka = sk[pad(i)];
                    }
                } else {
                    ++j;
                    if (j < len_b) {
                        kb = sk[pad(len_a + j)];
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
        // Slots pad(first + e): E consecutive words per thread, which the padding spreads
        // over distinct banks across a warp.
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
        for (u32 i = threadIdx.x; i < m; i += blockDim.x) {
            const K w = sk[pad(i)];
            dst_keys[x + i] = decode ? decode_key(w, a.encoding) : w;
            if constexpr (HAS_V) {
                dst_values[x + i] = sv[pad(i)];
            }
        }
        // The next tile's words, stored to shared memory at the top of the loop, overwrite
        // what these stores read.
        __syncthreads();
    }
}
