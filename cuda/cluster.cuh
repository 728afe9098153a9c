// Thread-block cluster sorts of the CUDA kernels (cuda/bitonic.cu, compute capability 9.0).

#pragma once

#include "rounds.cuh"
#include "tile_io.cuh"

// ---------------------------------------------------------------------------------------
// Cluster sorts (compute capability 9.0, in the sm_90 PTX only): one row of 2^tile_bits
// elements spread over the CLUSTER_BLOCKS blocks of a thread-block cluster, block `rank`
// holding the slice of tile elements from rank * 2^slice_bits in its shared memory. A sort
// of 2^13..2^16 keys then runs in one launch on eight multiprocessors instead of one block
// on one (compute-bound) or a chain of launches (latency-bound). Levels on the tile's top
// LOG_CLUSTER bits are cluster rounds (through distributed shared memory, between two
// cluster barriers); the rest run in each block's own slice as in tile_pass.
// ---------------------------------------------------------------------------------------

#define LOG_CLUSTER 3
#define CLUSTER_BLOCKS (1u << LOG_CLUSTER)

__device__ __forceinline__ u32 cluster_rank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// Every thread of the cluster arrives; its shared-memory writes before are visible to every
// block's reads after.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// The distributed-shared-memory address of this block's shared `address` in block `rank`.
__device__ __forceinline__ u32 in_block(u32 address, u32 rank) {
    u32 r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(address), "r"(rank));
    return r;
}

template <typename T> __device__ __forceinline__ T load_cluster(u32 address) {
    if constexpr (sizeof(T) == 4) {
        u32 w;
        asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(w) : "r"(address) : "memory");
        return T(w);
    } else {
        u64 w;
        asm volatile("ld.shared::cluster.u64 %0, [%1];" : "=l"(w) : "r"(address) : "memory");
        return T(w);
    }
}

template <typename T> __device__ __forceinline__ void store_cluster(u32 address, T value) {
    if constexpr (sizeof(T) == 4) {
        asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(address), "r"((u32)value) : "memory");
    } else {
        asm volatile("st.shared::cluster.u64 [%0], %1;" ::"r"(address), "l"((u64)value) : "memory");
    }
}

// Levels on the cluster bits [slice_bits, slice_bits + L), the tile's top bits: the stage's
// flip first, then half-cleaners. A group is 2^L elements at one slice position
// p in 2^L consecutive slices; the flip pairs x with x ^ (2^tile_bits - 1), so the upper half
// of the registers takes the mirrored position p ^ (2^slice_bits - 1) (as in a tile's flip
// round). The groups are dealt out to the blocks in order of p, so a warp reads consecutive
// slots of each slice.
template <typename K, typename V, u32 L>
__device__ __forceinline__ void cluster_round(K *sk, V *sv, u32 slice_bits) {
    constexpr bool HAS_V = HasValues<V>::value;
    constexpr u32 R = 1u << L;
    const u32 mask = (1u << slice_bits) - 1u;
    const u32 per_block = 1u << (slice_bits - L);
    const u32 rank = cluster_rank();
    const u32 keys_at = (u32)__cvta_generic_to_shared(sk);
    const u32 values_at = HAS_V ? (u32)__cvta_generic_to_shared(sv) : 0u;
    for (u32 t = threadIdx.x; t < per_block; t += blockDim.x) {
        const u32 group = rank * per_block + t;
        const u32 p = group & mask;
        const u32 run = group >> slice_bits;
        const u32 slot_low = pad(p);
        const u32 slot_high = pad(p ^ mask);
        // Register r: block (run << L) | r, slot slot_low (lower half) or slot_high.
        const auto key_at = [&](u32 r) {
            return in_block(keys_at + (r < R / 2 ? slot_low : slot_high) * (u32)sizeof(K), (run << L) | r);
        };
        const auto value_at = [&](u32 r) {
            return in_block(values_at + (r < R / 2 ? slot_low : slot_high) * (u32)sizeof(V), (run << L) | r);
        };
        K k[R];
        V v[R];
#pragma unroll
        for (u32 r = 0; r < R; ++r) {
            k[r] = load_cluster<K>(key_at(r));
            if constexpr (HAS_V) {
                v[r] = load_cluster<V>(value_at(r));
            }
        }
        round_network<K, V, L, true>(k, v);
#pragma unroll
        for (u32 r = 0; r < R; ++r) {
            store_cluster<K>(key_at(r), k[r]);
            if constexpr (HAS_V) {
                store_cluster<V>(value_at(r), v[r]);
            }
        }
    }
}

// One cluster round between two cluster barriers: the first makes every block's
// shared-memory writes visible, the second lets each block go on in its own slice once every
// block is done with it. The round takes `levels` (1..=LOG_CLUSTER) levels, the first the
// stage's flip (a sort's stages above the slice take fewer than LOG_CLUSTER).
template <typename K, typename V>
__device__ __forceinline__ void cluster_levels(K *sk, V *sv, u32 slice_bits, u32 levels) {
    cluster_sync();
    switch (levels) {
    case 1:
        cluster_round<K, V, 1>(sk, sv, slice_bits);
        break;
    case 2:
        cluster_round<K, V, 2>(sk, sv, slice_bits);
        break;
    default:
        cluster_round<K, V, 3>(sk, sv, slice_bits);
        break;
    }
    cluster_sync();
}
static_assert(LOG_CLUSTER == 3, "cluster_levels dispatches rounds of 1..=3 cluster levels");

// A sort of one row in one tile of 2^tile_bits elements, spread over the CLUSTER_BLOCKS
// blocks of one cluster: block `rank` holds the contiguous slice of tile elements from
// rank << slice_bits. Each block sorts its slice as tile_pass would; every stage above the
// slice then runs its levels on the cluster bits as a cluster round and the rest inside each
// slice.
template <typename K, typename V>
__device__ __forceinline__ void cluster_pass(K *__restrict__ keys, V *__restrict__ values, const PassArgs &a) {
    constexpr bool HAS_V = HasValues<V>::value;
    const u32 slice_bits = a.tile_bits - LOG_CLUSTER;
    const u32 size = 1u << slice_bits;
    K *sk = reinterpret_cast<K *>(tile_smem);
    V *sv = reinterpret_cast<V *>(tile_smem + (size_t)padded_words(slice_bits) * sizeof(K));
    const bool encode = (a.transform & ENCODE_ON_LOAD) != 0;
    const bool decode = (a.transform & DECODE_ON_STORE) != 0;
    // A block's view of its slice: a tile of its own (the load and store paths read the
    // tile size from here). A slice past the data loads as padding (the largest word): every
    // block takes part in the cluster's rounds.
    PassArgs local = a;
    local.tile_bits = slice_bits;
    TileMap map = tile_map(a, 0);
    map.origin += (u64)cluster_rank() << slice_bits;
    map.c = slice_bits;
    const u32 quads = whole_tiles_apply(keys, values, local) ? whole_tile_quads(size) : 0u;
    const bool whole = quads != 0 && tile_is_whole(local, map, size);
    const bool direct = sizeof(K) == 4 && !HAS_V && whole;
    const Direct<K, V> out{keys, values, map.origin, encode, decode, a.encoding};
    if (!direct) {
        load_tile<K, V>(keys, values, sk, sv, local, map, whole, quads, encode);
        __syncthreads();
    }
    sort_tile<K, V>(sk, sv, slice_bits, out, direct, false);
    for (u32 stage = slice_bits + 1; stage <= a.tile_bits; ++stage) {
        cluster_levels<K, V>(sk, sv, slice_bits, stage - slice_bits);
        run_levels<K, V>(sk, sv, slice_bits, slice_bits - 1, 0, false, 0, out, false);
    }
    __syncthreads();
    store_tile<K, V>(keys, values, sk, sv, local, map, whole, quads, decode);
}
