// Register rounds of the CUDA kernels (cuda/bitonic.cu): a round applies up to LOG_E
// levels of the network on a tile in shared memory, each thread taking groups of 2^levels
// elements into registers; `run_levels` chains rounds over a stage's levels and `sort_tile`
// sorts a whole tile.

#pragma once

#include "words.cuh"

// ---------------------------------------------------------------------------------------
// Rounds: LEVELS levels on tile bits [lo, lo+LEVELS), the first a flip when FLIP.
// ---------------------------------------------------------------------------------------

// A group of R <= 16 aligned consecutive tile elements lies inside one 32-word padding
// period: its slots are first + r (first = pad of its first element).
template <typename K, typename V, u32 R>
__device__ __forceinline__ void read_group(const K *sk, const V *sv, u32 first, K (&k)[R], V (&v)[R]) {
#pragma unroll
    for (u32 r = 0; r < R; ++r) {
        k[r] = sk[first + r];
        if constexpr (HasValues<V>::value) {
            v[r] = sv[first + r];
        }
    }
}

template <typename K, typename V, u32 R>
__device__ __forceinline__ void write_group(K *sk, V *sv, u32 first, const K (&k)[R], const V (&v)[R]) {
#pragma unroll
    for (u32 r = 0; r < R; ++r) {
        sk[first + r] = k[r];
        if constexpr (HasValues<V>::value) {
            sv[first + r] = v[r];
        }
    }
}

// The register network of a round of LEVELS levels on R = 2^LEVELS registers from k and v:
// with FLIP the first level compares r with R-1-r (the stage's flip), then half-cleaners
// r vs r + d. Every comparator of the kernels is one of these; the offsets are constants
// once the callers' loops unroll, so the registers stay registers.
template <typename K, typename V, u32 LEVELS, bool FLIP>
__device__ __forceinline__ void round_network(K *k, V *v) {
    constexpr u32 R = 1u << LEVELS;
#pragma unroll
    for (u32 s = 0; s < LEVELS; ++s) {
        const u32 d = R >> (s + 1);
#pragma unroll
        for (u32 r = 0; r < R; ++r) {
            if ((r & d) == 0) {
                const u32 partner = (FLIP && s == 0) ? (R - 1 - r) : (r + d);
                exchange(k[r], k[partner], v[r], v[partner]);
            }
        }
    }
}

// LO4: the round's bits start at 4 and the tile has at least 2^10 elements. Such a round
// straddles the padding's 32-word period, and with the plain numbering of groups the two
// half-warps were 2^(4+LEVELS) elements apart, which padding maps to overlapping banks
// (2-way conflicts). Here the group number's bit 4 and bit 9-LEVELS trade places, so that
// the half-warps lie 512 elements (528 slots: 16 banks) apart, and the registers' slot
// offsets are constants: pad(base | r << 4) = pad(base) + 16r + r/2.
//
// REV: a fused tail's round (bits below the columns, no flip) in a pass whose upper half of
// rows is mirrored, stored with its columns reversed. A group lies inside one row; in a
// mirrored row register r takes the slot of register R-1-r, so that the lower register
// still holds the lower index (reversal maps each half-cleaner pair onto a pair).
// A compile-time flag as a type, for generic lambdas.
template <bool B> struct Flag {
    static constexpr bool value = B;
};

template <typename K, typename V, u32 LEVELS, bool FLIP, bool LO4, bool REV>
__device__ __forceinline__ void round_levels(K *sk, V *sv, u32 tile_bits, u32 lo, u32 mirror_low) {
    static_assert(!(FLIP && REV), "a tail round has no flip");
    constexpr bool HAS_V = HasValues<V>::value;
    constexpr u32 R = 1u << LEVELS;
    constexpr u32 HALF = R >> 1;
    const u32 groups = 1u << (tile_bits - LEVELS);
    const u32 low_mask = (1u << lo) - 1u;
    // The flip's partner of x is x ^ ones[mirror_low, hi]; the bits [mirror_low, lo) of that
    // belong to the group, so the upper half of the registers reads the mirrored group.
    const u32 mirror = low_mask & ~((1u << mirror_low) - 1u);
    // pad(base + (r << lo)) = pad(base) + r * step when the round's bits lie above the
    // padding's 32-word period (lo >= 5) or inside one period (lo + LEVELS <= 5): one add
    // per register instead of the whole index computation.
    const u32 step = lo >= 5 ? (1u << lo) + (1u << (lo - 5)) : (lo + LEVELS <= 5 ? (1u << lo) : 0u);
    for (u32 g = threadIdx.x; g < groups; g += blockDim.x) {
        u32 h = g;
        if constexpr (LO4) {
            constexpr u32 OTHER = 9 - LEVELS;
            const u32 trade = ((g >> 4) ^ (g >> OTHER)) & 1u;
            h = g ^ ((trade << 4) | (trade << OTHER));
        }
        const u32 base = ((h >> lo) << (lo + LEVELS)) | (h & low_mask);
        const u32 first = pad(base);
        const u32 first_mirrored = FLIP ? pad(base ^ mirror) : first;
        // The group's body, with the register order reversed when REVERSED: the slots stay
        // constant offsets from `first` (immediates of the shared-memory accesses, not
        // registers: computing reversed slots at run time spilled the u32-pair kernel).
        const auto run_group = [&](auto reversed) {
            constexpr bool REVERSED = decltype(reversed)::value;
            // The shared-memory slot of register r, for the loads and the stores alike.
            const auto slot_of = [&](u32 r_in_order) -> u32 {
                const u32 r = REVERSED ? R - 1u - r_in_order : r_in_order;
                const bool mirrored = FLIP && r >= HALF;
                const u32 x = (mirrored ? (base ^ mirror) : base) | (r << lo);
                return LO4 ? (mirrored ? first_mirrored : first) + 16u * r + (r >> 1)
                       : step != 0 ? (mirrored ? first_mirrored : first) + r * step
                                   : pad(x);
            };
            K k[R];
            V v[R];
#pragma unroll
            for (u32 r = 0; r < R; ++r) {
                const u32 slot = slot_of(r);
                k[r] = sk[slot];
                if constexpr (HAS_V) {
                    v[r] = sv[slot];
                }
            }
            round_network<K, V, LEVELS, FLIP>(k, v);
#pragma unroll
            for (u32 r = 0; r < R; ++r) {
                const u32 slot = slot_of(r);
                sk[slot] = k[r];
                if constexpr (HAS_V) {
                    sv[slot] = v[r];
                }
            }
        };
        // The warps of large tiles take groups of one half of the rows each; where a warp's
        // groups straddle both halves (small tiles, or LO4 in tiles of 2^10), both run.
        if (REV && ((base >> (tile_bits - 1)) & 1u) != 0) {
            run_group(Flag<true>{});
        } else {
            run_group(Flag<false>{});
        }
    }
}

// How a round's registers map to its group: plain, the stage's flip first, or a fused
// tail's round with mirrored rows reversed.
enum RoundKind { PLAIN_ROUND, FLIP_ROUND, REVERSED_TAIL_ROUND };

template <typename K, typename V, u32 LEVELS>
__device__ __forceinline__ void round_flip(K *sk, V *sv, u32 tile_bits, u32 lo, RoundKind kind, u32 mirror_low) {
    const bool lo4 = lo == 4 && tile_bits >= 10;
    if (kind == FLIP_ROUND) {
        if (lo4) {
            round_levels<K, V, LEVELS, true, true, false>(sk, sv, tile_bits, 4, mirror_low);
        } else {
            round_levels<K, V, LEVELS, true, false, false>(sk, sv, tile_bits, lo, mirror_low);
        }
    } else if (kind == REVERSED_TAIL_ROUND) {
        if (lo4) {
            round_levels<K, V, LEVELS, false, true, true>(sk, sv, tile_bits, 4, mirror_low);
        } else {
            round_levels<K, V, LEVELS, false, false, true>(sk, sv, tile_bits, lo, mirror_low);
        }
    } else if (lo4) {
        round_levels<K, V, LEVELS, false, true, false>(sk, sv, tile_bits, 4, mirror_low);
    } else {
        round_levels<K, V, LEVELS, false, false, false>(sk, sv, tile_bits, lo, mirror_low);
    }
}

template <typename K, typename V>
__device__ __forceinline__ void run_round(K *sk, V *sv, u32 tile_bits, u32 lo, u32 levels, RoundKind kind,
                                          u32 mirror_low) {
    switch (levels) {
    case 1:
        round_flip<K, V, 1>(sk, sv, tile_bits, lo, kind, mirror_low);
        break;
    case 2:
        round_flip<K, V, 2>(sk, sv, tile_bits, lo, kind, mirror_low);
        break;
    case 3:
        round_flip<K, V, 3>(sk, sv, tile_bits, lo, kind, mirror_low);
        break;
    default:
        round_flip<K, V, 4>(sk, sv, tile_bits, lo, kind, mirror_low);
        break;
    }
}
static_assert(LOG_E == 4, "run_round dispatches 1..=4 levels");

// A whole contiguous tile of a local sort in global memory, 16-byte aligned: its first
// register groups can be loaded straight from it and its last round stored straight to it,
// saving a shared-memory round trip and a barrier at each end of the pass. Its keys are
// stored as S (16 bits for 16-bit keys, else the register word K).
template <typename K, typename V, typename S = K> struct Direct {
    S *keys;
    V *values;
    u64 origin;
    bool encode;
    bool decode;
    u32 encoding;
};

// The last round of a local pass (bits 3..0, four levels, no flip) with its groups of 16
// consecutive elements stored from registers to global memory, four 16-byte stores each.
template <typename K, typename V, typename S>
__device__ __forceinline__ void final_round_direct(const Direct<K, V, S> &out, const K *sk, const V *sv, u32 tile_bits) {
    constexpr bool HAS_V = HasValues<V>::value;
    constexpr u32 R = 16;
    const u32 groups = 1u << (tile_bits - 4);
    for (u32 g = threadIdx.x; g < groups; g += blockDim.x) {
        K k[R];
        V v[R];
        read_group(sk, sv, pad(g * R), k, v);
        round_network<K, V, 4, false>(k, v);
        const u64 at = out.origin + (u64)g * R;
#pragma unroll
        for (u32 q = 0; q < R / 4; ++q) {
            K kq[4];
            V vq[4];
#pragma unroll
            for (u32 j = 0; j < 4; ++j) {
                kq[j] = out.decode ? decode_as<S>(k[4 * q + j], out.encoding) : k[4 * q + j];
                if constexpr (HAS_V) {
                    vq[j] = v[4 * q + j];
                }
            }
            store_quad(out.keys + at + 4 * q, kq);
            if constexpr (HAS_V) {
                store4(out.values + at + 4 * q, vq);
            }
        }
    }
}

// The levels on tile bits top..bottom (a stage's levels from its highest bit down), in
// rounds of LOG_E bits counted from the bottom, the top round taking the remainder and the
// flip when `flip`. A barrier precedes every round. With `reversed_rows` (a fused tail),
// every round reverses the registers of groups in the tile's upper (mirrored) half.
// With `direct`, a last round on bits 3..0 stores straight to global memory.
template <typename K, typename V, typename S = K>
__device__ __forceinline__ void run_levels(K *sk, V *sv, u32 tile_bits, u32 top, u32 bottom, bool flip,
                                           u32 mirror_low, const Direct<K, V, S> &direct, bool to_global,
                                           bool reversed_rows = false) {
    const u32 bits = top - bottom + 1;
    u32 levels = bits % LOG_E;
    if (levels == 0) {
        levels = LOG_E;
    }
    u32 hi = top;
    while (true) {
        const u32 lo = hi + 1 - levels;
        __syncthreads();
        if (to_global && lo == 0 && levels == 4 && !flip) {
            final_round_direct<K, V, S>(direct, sk, sv, tile_bits);
            break;
        }
        const RoundKind kind = flip ? FLIP_ROUND : (reversed_rows ? REVERSED_TAIL_ROUND : PLAIN_ROUND);
        run_round<K, V>(sk, sv, tile_bits, lo, levels, kind, mirror_low);
        if (lo == bottom) {
            break;
        }
        flip = false;
        hi = lo - 1;
        levels = LOG_E;
    }
}

// Stages 1..STAGE of the sort on every 2^STAGE consecutive registers of R: stage s is the
// network of an s-level round, its flip first, on each run of 2^s registers.
template <typename K, typename V, u32 R, u32 STAGE>
__device__ __forceinline__ void sort_registers(K (&k)[R], V (&v)[R]) {
    if constexpr (STAGE > 1) {
        sort_registers<K, V, R, STAGE - 1>(k, v);
    }
#pragma unroll
    for (u32 run = 0; run < R; run += 1u << STAGE) {
        round_network<K, V, STAGE, true>(k + run, v + run);
    }
}

// Stages 1..STAGES inside groups of 2^STAGES consecutive tile elements, all in registers.
// With `direct` (STAGES = 4), the groups come straight from global memory.
template <typename K, typename V, u32 STAGES, typename S>
__device__ __forceinline__ void sort_groups(K *sk, V *sv, u32 tile_bits, const Direct<K, V, S> &direct,
                                            bool from_global) {
    constexpr bool HAS_V = HasValues<V>::value;
    constexpr u32 R = 1u << STAGES;
    const u32 groups = 1u << (tile_bits - STAGES);
    for (u32 g = threadIdx.x; g < groups; g += blockDim.x) {
        const u32 first = pad(g * R);
        K k[R];
        V v[R];
        bool loaded = false;
        if constexpr (STAGES == 4) {
            if (from_global) {
                const u64 at = direct.origin + (u64)g * R;
#pragma unroll
                for (u32 q = 0; q < R / 4; ++q) {
                    K kq[4];
                    V vq[4];
                    load_quad(direct.keys + at + 4 * q, kq);
                    if constexpr (HAS_V) {
                        load4(direct.values + at + 4 * q, vq);
                    }
#pragma unroll
                    for (u32 j = 0; j < 4; ++j) {
                        k[4 * q + j] = direct.encode ? encode_as<S>(kq[j], direct.encoding) : kq[j];
                        if constexpr (HAS_V) {
                            v[4 * q + j] = vq[j];
                        }
                    }
                }
                loaded = true;
            }
        }
        if (!loaded) {
            read_group(sk, sv, first, k, v);
        }
        sort_registers<K, V, R, STAGES>(k, v);
        write_group(sk, sv, first, k, v);
    }
}

// With `load_direct`, the first register groups come from global memory; with
// `store_direct`, the last round goes there (tiles of at least 2^5 elements).
template <typename K, typename V, typename S>
__device__ __forceinline__ void sort_tile(K *sk, V *sv, u32 tile_bits, const Direct<K, V, S> &direct, bool load_direct,
                                          bool store_direct) {
    const u32 first = tile_bits < LOG_E ? tile_bits : LOG_E;
    switch (first) {
    case 1:
        sort_groups<K, V, 1>(sk, sv, tile_bits, direct, false);
        break;
    case 2:
        sort_groups<K, V, 2>(sk, sv, tile_bits, direct, false);
        break;
    case 3:
        sort_groups<K, V, 3>(sk, sv, tile_bits, direct, false);
        break;
    default:
        sort_groups<K, V, 4>(sk, sv, tile_bits, direct, load_direct);
        break;
    }
    for (u32 stage = first + 1; stage <= tile_bits; ++stage) {
        run_levels<K, V, S>(sk, sv, tile_bits, stage - 1, 0, true, 0, direct, store_direct && stage == tile_bits);
    }
}
