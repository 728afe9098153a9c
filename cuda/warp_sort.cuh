// Warp sorts of the CUDA kernels (cuda/bitonic.cu): one row of at most 2^WARP_SORT_LOG
// 4-byte keys per warp, in one block of at most 2^WARP_SORT_MAX_WARPS_LOG warps
// (kernels/contract.h), sorted in registers. A small sort on shared-memory rounds pays for
// every round a barrier that all its warps must reach; here thread
// t holds the tile's elements 32t .. 32t + 31 in its registers, the network's levels on bits
// 0..4 run inside each thread, those on bits 5..9 are exchanges between the lanes of a warp
// by shuffles, and only those on bits 10 and up (between warps) go through shared memory,
// one barrier before and one after each. The comparators are the network's (the flip form:
// every stage's first level compares x with x ^ (2^stage - 1)), so the result is the tile
// sort's; keys alone, so that no value order is involved.

#pragma once

#include "rounds.cuh"

static_assert((1u << WARP_SORT_LOG) == 32u * 32u, "32 keys in each of a warp's 32 lanes");
static_assert(4u << (WARP_SORT_LOG + WARP_SORT_MAX_WARPS_LOG) <= 48u * 1024u,
              "the largest warp sort's exchange buffer fits without an opt-in");

// One level across lanes: register r of this lane against register r of lane
// lane ^ lane_mask, or its register 31 - r for the flip; where `lower`, this lane keeps the
// minimum.
template <typename K, bool FLIP>
__device__ __forceinline__ void lane_level(K (&v)[32], u32 lane_mask, bool lower) {
#pragma unroll
    for (u32 r = 0; r < (FLIP ? 16u : 32u); ++r) {
        if constexpr (FLIP) {
            // The flip pairs (lane, r) with (lane ^ lane_mask, 31 - r): registers r and
            // 31 - r trade with the partner's 31 - r and r.
            const K from_high = __shfl_xor_sync(0xffffffffu, v[31 - r], lane_mask);
            const K from_low = __shfl_xor_sync(0xffffffffu, v[r], lane_mask);
            v[r] = lower ? min(v[r], from_high) : max(v[r], from_high);
            v[31 - r] = lower ? min(v[31 - r], from_low) : max(v[31 - r], from_low);
        } else {
            const K other = __shfl_xor_sync(0xffffffffu, v[r], lane_mask);
            v[r] = lower ? min(v[r], other) : max(v[r], other);
        }
    }
}

// One level across warps, through `shared` (32 words per thread): this thread's registers
// against those of thread `partner`, register r against the partner's r, or its 31 - r for
// the flip. Each thread's eight 16-byte quads are stored in an order rotated by its index's
// low three bits, so that the eight threads of a quarter warp, which share the memory's
// banks in one 16-byte access, hit distinct banks when they store and when they load.
template <typename K, bool FLIP>
__device__ __forceinline__ void warps_level(K (&v)[32], K *shared, u32 t, u32 partner, bool lower) {
    __syncthreads(); // every thread has read the previous level's words
#pragma unroll
    for (u32 q = 0; q < 8; ++q) {
        K w[4] = {v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]};
        store4(shared + 32u * t + 4u * (q ^ (t & 7u)), w);
    }
    __syncthreads();
#pragma unroll
    for (u32 q = 0; q < 8; ++q) {
        K w[4];
        load4(shared + 32u * partner + 4u * (q ^ (partner & 7u)), w);
#pragma unroll
        for (u32 j = 0; j < 4; ++j) {
            // The partner's register 4q + j meets this thread's same register, or, for the
            // flip, register 31 - (4q + j).
            const u32 r = FLIP ? 31u - (4u * q + j) : 4u * q + j;
            v[r] = lower ? min(v[r], w[j]) : max(v[r], w[j]);
        }
    }
}

// Sorts the row of a.row_len keys (a virtual tile of 2^max(tile_bits, 5), padding reading as
// the largest word) in one block of 2^max(tile_bits - WARP_SORT_LOG, 0) warps, encoding on
// load and decoding on store as `transform` says. Only WARPS instances sort more than one
// warp's keys; their `shared` holds 2^tile_bits words (one warp's instance keeps the
// registers and the code of a kernel with no exchanges between warps).
template <typename K, bool WARPS>
__device__ __forceinline__ void warp_sort(K *__restrict__ keys, K *shared, const PassArgs &a) {
    static_assert(sizeof(K) == 4, "32 registers of keys a lane");
    const u32 t = threadIdx.x;
    const u32 lane = t & 31u;
    const bool encode = (a.transform & ENCODE_ON_LOAD) != 0;
    const bool decode = (a.transform & DECODE_ON_STORE) != 0;
    const u64 n = a.row_len;
    const u64 first = (u64)t * 32u;
    // A thread whose 32 keys all lie in the row moves them in 16-byte accesses where the
    // array is 16-byte aligned (its 32 keys start at a multiple of 128 bytes from it); a
    // thread past the row holds padding and touches no memory (but takes part in every
    // level); only the thread that holds the row's end, if it is not whole, goes key by key
    // (lanes that take different branches run one after the other).
    const bool quads = first + 32 <= n && ((unsigned long long)keys & 15ull) == 0;
    const bool past = first >= n;
    K v[32];
    NoValue none[32];
    if (past) {
#pragma unroll
        for (u32 r = 0; r < 32; ++r) {
            v[r] = ~K(0);
        }
    } else if (quads) {
#pragma unroll
        for (u32 q = 0; q < 8; ++q) {
            K w[4];
            load4(keys + first + 4 * q, w);
#pragma unroll
            for (u32 j = 0; j < 4; ++j) {
                v[4 * q + j] = encode ? encode_key(w[j], a.encoding) : w[j];
            }
        }
    } else {
#pragma unroll
        for (u32 r = 0; r < 32; ++r) {
            const u64 i = first + r;
            v[r] = i < n ? (encode ? encode_key(keys[i], a.encoding) : keys[i]) : ~K(0);
        }
    }
    sort_registers<K, NoValue, 32, 5>(v, none);
    for (u32 stage = 6; stage <= a.tile_bits; ++stage) {
        // The stage's top level (its flip) is on thread bit `high` (element bit stage - 1);
        // its half-cleaners below run on thread bits high - 1 .. 0, those from bit
        // WARP_SORT_LOG - 5 up between warps, the others between lanes; `bit` counts them
        // down.
        const u32 high = stage - 6;
        u32 bit = high;
        if (!WARPS || stage <= WARP_SORT_LOG) {
            lane_level<K, true>(v, (1u << (high + 1)) - 1u, ((lane >> high) & 1u) == 0);
        } else {
            warps_level<K, true>(v, shared, t, t ^ ((1u << (high + 1)) - 1u), ((t >> high) & 1u) == 0);
            for (; bit-- > WARP_SORT_LOG - 5;) {
                warps_level<K, false>(v, shared, t, t ^ (1u << bit), ((t >> bit) & 1u) == 0);
            }
            bit = WARP_SORT_LOG - 5;
        }
        while (bit-- > 0) {
            lane_level<K, false>(v, 1u << bit, ((lane >> bit) & 1u) == 0);
        }
        round_network<K, NoValue, 5, false>(v, none);
    }
    if (past) {
        return;
    }
    if (quads) {
#pragma unroll
        for (u32 q = 0; q < 8; ++q) {
            K w[4];
#pragma unroll
            for (u32 j = 0; j < 4; ++j) {
                w[j] = decode ? decode_key(v[4 * q + j], a.encoding) : v[4 * q + j];
            }
            store4(keys + first + 4 * q, w);
        }
    } else {
#pragma unroll
        for (u32 r = 0; r < 32; ++r) {
            const u64 i = first + r;
            if (i < n) {
                keys[i] = decode ? decode_key(v[r], a.encoding) : v[r];
            }
        }
    }
}
