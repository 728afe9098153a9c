// Merge passes of the CUDA kernels (cuda/bitonic.cu): sorted runs merged two by two, the
// design of src/schedule/merge_path.rs. A pass reads runs of 2^log_run words from one buffer
// and writes runs twice as long to another.
//
// Rows (`rows` > 1) are merged each on its own: row r's n elements start at r * n, its runs
// and tiles count from there, and tile t is tile t % tiles_per_row of row t / tiles_per_row.
// The kernels for rows are separate instances (ROWS = true), so that a plain sort's carry
// none of that arithmetic.
//
// Each block writes 2^tile_bits consecutive outputs (a tile). Where a tile's part of the two
// input runs starts is found beforehand by `merge_split` (a search along the merge path's
// cross diagonal in global memory, by a thread or a warp per tile); where it ends is the next
// tile's start. The block copies both parts, 2^tile_bits words, into shared memory; each
// thread then finds its own diagonal there by a second binary search and merges E outputs
// serially; the outputs go through shared memory once more so that the stores are coalesced.
//
// Every merge is stable (ties take the first run's word), so the order of equal keys is the
// tile sort's, kept through every pass.
//
// Keys are stored as S and merged as K = RegisterWord<S>::type (cuda/words.cuh): 16-bit
// ordered keys compare as they are stored, so the searches in global memory read them
// directly, and shared memory holds them widened.

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

// Output tiles of one row, and of the whole pass.
__device__ __forceinline__ u64 tiles_per_row(const MergeArgs &a) {
    return (a.n + (1ull << a.tile_bits) - 1) >> a.tile_bits;
}
template <bool ROWS> __device__ __forceinline__ u64 merge_tiles(const MergeArgs &a) {
    return ROWS ? tiles_per_row(a) * a.rows : tiles_per_row(a);
}

// Where tile t lies: the index of its row's first element, and its first output in the row.
struct TilePlace {
    u64 row_start;
    u64 x;
};

template <bool ROWS> __device__ __forceinline__ TilePlace tile_place(const MergeArgs &a, u64 t) {
    TilePlace p;
    if constexpr (!ROWS) {
        p.row_start = 0;
        p.x = t << a.tile_bits;
    } else {
        const u64 per_row = tiles_per_row(a);
        const u64 row = t / per_row;
        p.row_start = row * a.n;
        p.x = (t - row * per_row) << a.tile_bits;
    }
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

// How many of the first `diag` outputs of the stable merge of runs A and B come from A, found
// by the 32 lanes of a warp together: each round the lanes test 32 evenly spaced candidates
// at once (one ballot) and keep the stretch between the last that passes and the first that
// fails, so a search over 2^20 candidates takes 4 rounds of loads instead of 20 dependent
// ones. Every lane returns the answer; all 32 lanes must call it together.
template <typename K>
__device__ __forceinline__ u64 warp_split_diagonal(const K *__restrict__ ka, const K *__restrict__ kb, u64 len_a,
                                                   u64 len_b, u64 diag) {
    const u32 lane = threadIdx.x & 31u;
    u64 lo = diag > len_b ? diag - len_b : 0;
    u64 hi = diag < len_a ? diag : len_a;
    // The answer is in lo ..= hi: the first i in lo .. hi at which A[i] goes after
    // B[diag - 1 - i], or hi if there is none.
    while (lo < hi) {
        const u64 step = (hi - lo + 31) >> 5;
        const u64 i = lo + (lane + 1) * step - 1;
        const bool a_first = i < hi && ka[i] <= kb[diag - 1 - i];
        const u32 passed = __popc(__ballot_sync(0xffffffffu, a_first));
        const u64 next_lo = lo + passed * step;
        hi = min(hi, next_lo + step - 1);
        lo = next_lo;
    }
    return lo;
}

// splits[t] = how many words of its run pair's first run precede output tile t. A launch
// with 32 threads per tile searches with a warp per tile (`warp_split_diagonal`); one with
// fewer, with a thread per tile. The plan chooses (src/cuda/plan.rs, `WARP_SPLIT_MAX_TILES`):
// warps where a pass has few tiles and the searches' chains of dependent loads set the time,
// threads where the 64 scattered loads a warp issues per round cost more memory traffic than
// the chains cost in latency.
template <typename K, bool ROWS>
__device__ __forceinline__ void merge_split(const K *__restrict__ keys, u64 *__restrict__ splits, const MergeArgs &a) {
    const u64 tiles = merge_tiles<ROWS>(a);
    const u64 threads = (u64)gridDim.x * blockDim.x;
    const u64 thread = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (threads >= tiles * 32) {
        // Warp-uniform: t is the same for the 32 lanes of a warp.
        const u64 t = thread >> 5;
        if (t < tiles) {
            const TilePlace at = tile_place<ROWS>(a, t);
            const RunPair p = run_pair(a, at.x);
            const K *ka = keys + at.row_start + p.start;
            const u64 split = warp_split_diagonal<K>(ka, ka + p.len_a, p.len_a, p.len_b, at.x - p.start);
            if ((threadIdx.x & 31u) == 0) {
                splits[t] = split;
            }
        }
        return;
    }
    for (u64 t = thread; t < tiles; t += threads) {
        const TilePlace at = tile_place<ROWS>(a, t);
        const RunPair p = run_pair(a, at.x);
        const K *ka = keys + at.row_start + p.start;
        const K *kb = ka + p.len_a;
        splits[t] = split_diagonal<u64>([&](u64 i, u64 j) { return ka[i] <= kb[j]; }, p.len_a, p.len_b, at.x - p.start);
    }
}

// Where one output tile's inputs lie: outputs x .. x + m - 1 merge the first run's words
// from_a .. from_a + len_a - 1 with the second's from_b .. from_b + (m - len_a) - 1 (indices
// of the whole array).
struct MergeTile {
    u64 x;
    u64 from_a;
    u64 from_b;
    u32 len_a;
    u32 m;
};

// The inputs of the tile at `at` of run pair `p`, outputs diag .. diag_end - 1 of the pair's
// merge, whose part of the first run is its words a0 .. a1 - 1.
__device__ __forceinline__ MergeTile merge_tile_between(const TilePlace &at, const RunPair &p, u64 diag, u64 diag_end,
                                                        u64 a0, u64 a1) {
    const u64 start = at.row_start + p.start;
    MergeTile g;
    g.x = at.row_start + at.x;
    g.from_a = start + a0;
    g.from_b = start + p.len_a + (diag - a0);
    g.len_a = (u32)(a1 - a0);
    g.m = (u32)(diag_end - diag);
    return g;
}

template <bool ROWS>
__device__ __forceinline__ MergeTile merge_tile(const MergeArgs &a, const u64 *__restrict__ splits, u64 t) {
    const TilePlace at = tile_place<ROWS>(a, t);
    const RunPair p = run_pair(a, at.x);
    const u64 pair_len = p.len_a + p.len_b;
    const u64 diag = at.x - p.start;
    const u64 diag_end = min(diag + (1ull << a.tile_bits), pair_len);
    // A tile that ends its pair ends with all of the first run; any other ends where the
    // next tile (of the same row: a row's last tile ends its pair) starts.
    const u64 a0 = splits[t];
    const u64 a1 = diag_end == pair_len ? p.len_a : splits[t + 1];
    return merge_tile_between(at, p, diag, diag_end, a0, a1);
}

// merge_tile for a pass without a splitter launch (`merge_search_pass`, one row): the
// block's first two warps find where tile t starts and ends in its run pair, each with
// `warp_split_diagonal`, and the block shares the two answers through shared memory. Where
// a pass has few tiles for the grid's blocks (`SEARCH_MAX_ROUNDS` in src/cuda/plan.rs), this
// costs each block about the time the splitter launch would have taken, and saves the launch
// and the wait between the two kernels. Every thread of the block must call it (it has a barrier).
template <typename K>
__device__ __forceinline__ MergeTile searched_merge_tile(const K *__restrict__ keys, const MergeArgs &a, u64 t) {
    __shared__ u64 found[2];
    const TilePlace at = tile_place<false>(a, t);
    const RunPair p = run_pair(a, at.x);
    const u64 diag = at.x - p.start;
    const u64 diag_end = min(diag + (1ull << a.tile_bits), p.len_a + p.len_b);
    // Warp w finds answer w (a block of one warp finds both).
    for (u32 w = threadIdx.x >> 5; w < 2; w += blockDim.x >> 5) {
        const K *ka = keys + p.start;
        const u64 split = warp_split_diagonal<K>(ka, ka + p.len_a, p.len_a, p.len_b, w == 0 ? diag : diag_end);
        if ((threadIdx.x & 31u) == 0) {
            found[w] = split;
        }
    }
    __syncthreads();
    return merge_tile_between(at, p, diag, diag_end, found[0], found[1]);
}

// Starts the copies of a tile's inputs into a shared buffer: word i of the tile (A's part,
// then B's) goes to slot pad(i), keys in `sk`, values in `sv`. Thread t copies words t,
// t + blockDim.x, ...; blockDim.x is a multiple of 32, so its slots are pad(t) plus a
// multiple of the padded stride. On sm_80+ the copies are asynchronous (cp.async) and the
// caller waits with `merge_inputs_arrived`; before, they are plain loads and stores. 16-bit
// keys (no cp.async size, and widened) are plain loads on every architecture, all issued
// before the first is stored.
template <typename S, typename V, u32 E, typename K = typename RegisterWord<S>::type>
__device__ __forceinline__ void copy_merge_inputs(const S *__restrict__ src_keys, const V *__restrict__ src_values,
                                                  const MergeTile &g, K *sk, V *sv) {
    // Word i of the tile is at a_keys[i] (i < len_a) or b_keys[i]: one select of a base per
    // word, not 64-bit index arithmetic.
    const S *a_keys = src_keys + g.from_a;
    const S *b_keys = src_keys + (g.from_b - g.len_a);
    const V *a_values = src_values + g.from_a;
    const V *b_values = src_values + (g.from_b - g.len_a);
    const u32 stride = blockDim.x + (blockDim.x >> PAD_SHIFT);
    const u32 slot0 = pad(threadIdx.x);
    if constexpr (sizeof(S) != sizeof(K)) {
        K w[E];
#pragma unroll
        for (u32 r = 0; r < E; ++r) {
            const u32 i = threadIdx.x + r * blockDim.x;
            if (i < g.m) {
                w[r] = (i < g.len_a ? a_keys : b_keys)[i];
            }
        }
#pragma unroll
        for (u32 r = 0; r < E; ++r) {
            const u32 i = threadIdx.x + r * blockDim.x;
            if (i < g.m) {
                sk[slot0 + r * stride] = w[r];
#if __CUDA_ARCH__ >= 800
                if constexpr (HasValues<V>::value) {
                    copy_async(&sv[slot0 + r * stride], (i < g.len_a ? a_values : b_values) + i);
                }
#else
                if constexpr (HasValues<V>::value) {
                    sv[slot0 + r * stride] = (i < g.len_a ? a_values : b_values)[i];
                }
#endif
            }
        }
    } else {
#pragma unroll
        for (u32 r = 0; r < E; ++r) {
            const u32 i = threadIdx.x + r * blockDim.x;
            if (i < g.m) {
                const bool in_a = i < g.len_a;
                const u32 slot = slot0 + r * stride;
#if __CUDA_ARCH__ >= 800
                copy_async(&sk[slot], (in_a ? a_keys : b_keys) + i);
                if constexpr (HasValues<V>::value) {
                    copy_async(&sv[slot], (in_a ? a_values : b_values) + i);
                }
#else
                sk[slot] = (in_a ? a_keys : b_keys)[i];
                if constexpr (HasValues<V>::value) {
                    sv[slot] = (in_a ? a_values : b_values)[i];
                }
#endif
            }
        }
    }
}

// Waits for this thread's copies of `copy_merge_inputs`; a barrier must follow before other
// threads' words are read.
__device__ __forceinline__ void merge_inputs_arrived() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// The whole-tile output path: each thread's E outputs of type T are C 16-byte chunks. Thread
// t puts its chunk q at chunk t*C + (q ^ swizzle(t)) of shared memory, then the block reads
// chunk g (= thread g % blockDim.x's round g / blockDim.x) from where its owner put it and
// stores it to global chunk g. A 16-byte access serves eight threads per shared-memory
// wavefront, and the swizzle gives those eight distinct banks both ways: 4 stores, 4 loads
// and 4 global stores per thread of u32 keys instead of 16 of each with padded addresses.
template <u32 C> __device__ __forceinline__ u32 chunk_swizzle(u32 owner) {
    static_assert(C == 1 || C == 2 || C == 4 || C == 8, "a thread's outputs are 1, 2, 4 or 8 chunks");
    return (owner / (8 / C)) & (C - 1);
}

template <typename T, u32 E> __device__ __forceinline__ void stage_chunks(unsigned char *smem, const T (&w)[E]) {
    constexpr u32 C = E * sizeof(T) / 16;
    constexpr u32 PER = 16 / sizeof(T);
    uint4 *s = reinterpret_cast<uint4 *>(smem) + threadIdx.x * C;
    const u32 f = chunk_swizzle<C>(threadIdx.x);
#pragma unroll
    for (u32 q = 0; q < C; ++q) {
        T part[PER];
#pragma unroll
        for (u32 i = 0; i < PER; ++i) {
            part[i] = w[q * PER + i];
        }
        uint4 c;
        memcpy(&c, part, 16);
        s[q ^ f] = c;
    }
}

// Stores the block's staged chunks to dst (16-byte aligned), decoding keys if asked.
template <typename T, u32 E>
__device__ __forceinline__ void store_chunks(const unsigned char *smem, T *dst, bool decode, u32 encoding) {
    constexpr u32 C = E * sizeof(T) / 16;
    constexpr u32 PER = 16 / sizeof(T);
    const uint4 *s = reinterpret_cast<const uint4 *>(smem);
#pragma unroll
    for (u32 r = 0; r < C; ++r) {
        const u32 g = threadIdx.x + r * blockDim.x;
        const u32 owner = g / C;
        uint4 c = s[owner * C + ((g % C) ^ chunk_swizzle<C>(owner))];
        if (decode) {
            T part[PER];
            memcpy(part, &c, 16);
#pragma unroll
            for (u32 i = 0; i < PER; ++i) {
                part[i] = decode_key(part[i], encoding);
            }
            memcpy(&c, part, 16);
        }
        reinterpret_cast<uint4 *>(dst)[g] = c;
    }
}

// One merge pass: output tiles of 2^tile_bits, E outputs per thread, each block taking
// tiles blockIdx.x, blockIdx.x + gridDim.x, ... (the grid is a few blocks per
// multiprocessor). Shared memory holds two input buffers: while a block merges one tile, the
// copies of its next tile into the other buffer are in flight, so that its memory traffic
// overlaps its shared-memory work (with the loads issued only after the previous tile's
// stores, a pass ran at about 60% of the copy's bandwidth). Copying into shared memory
// directly rather than through registers leaves the registers to the merge. SEARCH
// instances (one row only) find their tiles' parts themselves (`searched_merge_tile`) and
// ignore `splits`.
template <typename S, typename V, u32 E, bool ROWS, bool SEARCH = false>
__device__ __forceinline__ void merge_pass(const S *__restrict__ src_keys, const V *__restrict__ src_values,
                                           S *__restrict__ dst_keys, V *__restrict__ dst_values,
                                           const u64 *__restrict__ splits, const MergeArgs &a) {
    typedef typename RegisterWord<S>::type K;
    constexpr bool HAS_V = HasValues<V>::value;
    const size_t buffer_bytes = merge_buffer_bytes(a.tile_bits, sizeof(K), HAS_V ? sizeof(V) : 0);
    const size_t values_offset = (size_t)padded_words(a.tile_bits) * sizeof(K);
    const bool decode = (a.transform & DECODE_ON_STORE) != 0;
    // Whole tiles go out in 16-byte chunks where the arrays are 16-byte aligned and so is
    // every row (a row's tiles start anywhere when its length is not a multiple of 16 bytes).
    const bool aligned = ((unsigned long long)dst_keys & 15ull) == 0 &&
                         (!HAS_V || ((unsigned long long)dst_values & 15ull) == 0) &&
                         (!ROWS || (((a.n * sizeof(S)) & 15ull) == 0 && (!HAS_V || ((a.n * sizeof(V)) & 15ull) == 0)));
    const u64 tiles = merge_tiles<ROWS>(a);
    u64 t = blockIdx.x;
    if (t >= tiles) {
        return;
    }
    const auto tile_at = [&](u64 tile) {
        if constexpr (SEARCH) {
            return searched_merge_tile<S>(src_keys, a, tile);
        } else {
            return merge_tile<ROWS>(a, splits, tile);
        }
    };
    MergeTile g = tile_at(t);
    copy_merge_inputs<S, V, E>(src_keys, src_values, g, reinterpret_cast<K *>(tile_smem),
                               reinterpret_cast<V *>(tile_smem + values_offset));
    for (u32 buffer = 0; t < tiles; t += gridDim.x, buffer ^= 1) {
        unsigned char *keys_smem = tile_smem + buffer * buffer_bytes;
        unsigned char *values_smem = keys_smem + values_offset;
        const K *sk = reinterpret_cast<const K *>(keys_smem);
        const V *sv = reinterpret_cast<const V *>(values_smem);
        const u32 len_a = g.len_a;
        const u32 m = g.m;
        const u32 len_b = m - len_a;
        const u64 x = g.x;
        merge_inputs_arrived();
        // This tile's words are in; every thread is past the previous tile, whose buffer the
        // next copies overwrite.
        __syncthreads();
        const u64 next = t + gridDim.x;
        if (next < tiles) {
            g = tile_at(next);
            unsigned char *other = tile_smem + (buffer ^ 1) * buffer_bytes;
            copy_merge_inputs<S, V, E>(src_keys, src_values, g, reinterpret_cast<K *>(other),
                                       reinterpret_cast<V *>(other + values_offset));
        }

        // This thread's outputs first .. first + E - 1 (those below m). A's words are in
        // slots pad(0 .. len_a - 1), B's in pad(len_a .. m - 1); `ia` and `ib` are the
        // positions of the next word of each, so the merge reads one slot per output and
        // chooses with selects, not branches: with branches nvcc made every output a
        // divergent if-else around its load, and the pass issued about three times the
        // instructions. A position past its part reads a word it never takes: at most slot
        // pad(2^tile_bits), in this buffer's values or its 16 bytes of slack
        // (`MERGE_BUFFER_BYTES`), never in the other buffer, where the next tile's copies
        // are arriving (compute-sanitizer's racecheck reports such a read as a race).
        const u32 first = threadIdx.x * E;
        K k[E];
        u32 source[E];
        if (first < m) {
            u32 ia = split_diagonal<u32>([&](u32 i, u32 j) { return sk[pad(i)] <= sk[pad(len_a + j)]; }, len_a,
                                         len_b, first);
            u32 ib = len_a + (first - ia);
            K ka = sk[pad(ia)];
            K kb = sk[pad(ib)];
#pragma unroll
            for (u32 e = 0; e < E; ++e) {
                const bool take_a = ib >= m || (ia < len_a && ka <= kb);
                k[e] = take_a ? ka : kb;
                source[e] = take_a ? ia : ib;
                if (e + 1 < E) {
                    ia += take_a ? 1 : 0;
                    ib += take_a ? 0 : 1;
                    const K w = sk[pad(take_a ? ia : ib)];
                    ka = take_a ? w : ka;
                    kb = take_a ? kb : w;
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
        if (m == (1u << a.tile_bits) && aligned) {
            // A whole tile to 16-byte aligned arrays: 16-byte chunks through shared memory,
            // the keys at their stored width.
            S ks[E];
#pragma unroll
            for (u32 e = 0; e < E; ++e) {
                ks[e] = S(k[e]);
            }
            stage_chunks<S, E>(keys_smem, ks);
            if constexpr (HAS_V) {
                stage_chunks<V, E>(values_smem, v);
            }
            __syncthreads();
            store_chunks<S, E>(keys_smem, dst_keys + x, decode, a.encoding);
            if constexpr (HAS_V) {
                store_chunks<V, E>(values_smem, dst_values + x, false, 0);
            }
        } else {
            // Slots pad(first + e): E consecutive words per thread, which the padding spreads
            // over distinct banks across a warp.
            K *out_k = reinterpret_cast<K *>(keys_smem);
            V *out_v = reinterpret_cast<V *>(values_smem);
#pragma unroll
            for (u32 e = 0; e < E; ++e) {
                if (first + e < m) {
                    out_k[pad(first + e)] = k[e];
                    if constexpr (HAS_V) {
                        out_v[pad(first + e)] = v[e];
                    }
                }
            }
            __syncthreads();
            for (u32 i = threadIdx.x; i < m; i += blockDim.x) {
                const K w = sk[pad(i)];
                dst_keys[x + i] = S(decode ? decode_as<S>(w, a.encoding) : w);
                if constexpr (HAS_V) {
                    dst_values[x + i] = sv[pad(i)];
                }
            }
        }
    }
}
