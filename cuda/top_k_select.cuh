// Radix selects of the CUDA top-k (src/cuda/top_k/select.rs, src/schedule/top_k/select.rs):
// the select a warp or a block runs over keys in shared memory, which the sample and the
// candidates of the filter (cuda/top_k_filter.cuh) use too, and the top-k of short rows,
// one warp per row.

#pragma once

#include "top_k.cuh"

// Loads a thread of the radix selects' kernels issues before it stores any.
#define LOADS_IN_FLIGHT 8u

// Copies elements 0 .. count - 1 into shared memory, element j read by `load(j)` and written
// by `store(j, value)`; the calling thread takes j = first, first + stride, ... and issues
// LOADS_IN_FLIGHT loads before it stores any: one load at a time leaves the group waiting on
// each round trip to memory; eight hide most of that latency at a few registers' cost.
template <typename T, typename Load, typename Store>
__device__ __forceinline__ void copy_loads_in_flight(u32 count, u32 first, u32 stride, Load load, Store store) {
    for (u32 base = 0; base < count; base += stride * LOADS_IN_FLIGHT) {
        T loaded[LOADS_IN_FLIGHT];
#pragma unroll
        for (u32 i = 0; i < LOADS_IN_FLIGHT; ++i) {
            const u32 j = base + stride * i + first;
            loaded[i] = j < count ? load(j) : T(0);
        }
#pragma unroll
        for (u32 i = 0; i < LOADS_IN_FLIGHT; ++i) {
            const u32 j = base + stride * i + first;
            if (j < count) {
                store(j, loaded[i]);
            }
        }
    }
}

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

// Short rows (TopKSelect in src/schedule/top_k/select.rs, which describes it): one warp per
// row, in blocks of several warps, each warp with `warp_bytes` of the dynamic shared memory laid out
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
        // The radix passes, not the loads, bound a row here.
        copy_loads_in_flight<u32>(
            len, lane, 32u, [&](u32 c) { return (u32)row_keys[c]; },
            [&](u32 c, u32 raw) { ordered[c] = encode_as<K>(raw, encoding); });
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

#define TOP_K_SELECT_KERNEL(KNAME, K)                                                             \
    extern "C" __global__ void __launch_bounds__(TOP_K_THREADS)                                   \
        top_k_select_##KNAME(const K *__restrict__ keys, K *__restrict__ values,                  \
                             u32 *__restrict__ indices, u64 rows, u32 len, u32 k, u32 log_k,      \
                             u32 warp_bytes, u32 encoding) {                                      \
        top_k_select<K>(keys, values, indices, rows, len, k, log_k, warp_bytes, encoding);        \
    }

TOP_K_SELECT_KERNEL(u32, u32)
TOP_K_SELECT_KERNEL(u16, u16)
