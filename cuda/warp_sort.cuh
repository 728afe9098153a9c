// Warp sorts of the CUDA kernels (cuda/bitonic.cu): one row of at most 2^WARP_SORT_LOG
// (kernels/contract.h) 4-byte keys sorted by one warp with no shared memory and no block barrier. A small sort
// on a block pays for every register round a barrier that all its warps must reach
// (docs/perf.md, change 45); here lane l holds the tile's elements 32l .. 32l + 31 in its
// registers, the network's levels on bits 0..4 run inside each lane, and those on bits 5
// and up are exchanges between lanes by shuffles. The comparators are the network's (the
// flip form: every stage's first level compares x with x ^ (2^stage - 1)), so the result
// is the tile sort's; keys alone, so that no value order is involved.

#pragma once

#include "rounds.cuh"

static_assert((1u << WARP_SORT_LOG) == 32u * 32u, "32 keys in each of a warp's 32 lanes");

// One level across lanes: register r of this lane against register `partner_r(r)` of lane
// lane ^ lane_mask; the lower element (this lane's bit `lower_bit` clear) keeps the minimum.
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

// Sorts the row of a.row_len <= 2^WARP_SORT_LOG keys (a virtual tile of 2^max(tile_bits, 5),
// padding reading as the largest word) in one warp, encoding on load and decoding on store
// as `transform` says.
template <typename K> __device__ __forceinline__ void warp_sort(K *__restrict__ keys, const PassArgs &a) {
    static_assert(sizeof(K) == 4, "32 registers of keys a lane");
    const u32 lane = threadIdx.x & 31u;
    const bool encode = (a.transform & ENCODE_ON_LOAD) != 0;
    const bool decode = (a.transform & DECODE_ON_STORE) != 0;
    const u64 n = a.row_len;
    const u64 first = (u64)lane * 32u;
    // A lane whose 32 keys all lie in the row moves them in 16-byte accesses where the
    // array is 16-byte aligned (its 32 keys start at a multiple of 128 bytes from it); a
    // lane past the row holds padding and touches no memory; only the lane that holds the
    // row's end, if it is not whole, goes key by key (lanes that take different branches
    // run one after the other).
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
        const u32 high = stage - 6; // the lane bit of the stage's top level
        lane_level<K, true>(v, (1u << (high + 1)) - 1u, ((lane >> high) & 1u) == 0);
        for (u32 bit = high; bit-- > 0;) {
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
