// Bitonic sorting network kernels for the CUDA backend (src/cuda.rs).
//
// These kernels execute exactly the network that src/schedule.rs describes and emulates:
// the same tiles, the same comparator numbering (`tile_comparator`), the same register
// groups of the global passes (`global_index`, `register_network`). Keep them in step.
//
// Every kernel exists for 32- and 64-bit key words and for no values, 32-bit or 64-bit
// values (six instantiations each), under extern "C" names `<kernel>_<key>_<value>`:
//
//   local_sort_K_V   (K *keys, V *values, u64 n, u32 log_tile, u32 encoding, u32 transform)
//   local_merge_K_V  (K *keys, V *values, u64 n, u32 log_tile, u32 encoding, u32 transform)
//   global_merge_K_V (K *keys, V *values, u64 n, u32 stage, u32 first_level, u32 levels,
//                     u32 encoding, u32 transform)
//
// with K, V in {u32, u64} and V = none (the `values` pointer is then ignored, pass 0).
// `encoding` is KeyEncoding::code() (bits 0-1 kind, bit 2 descending); `transform` bit 0
// encodes keys as they are loaded, bit 1 decodes them as they are stored.
//
// Indices `>= n` are padding: they load as the all-ones word (the largest), are never
// stored, and never move, because a comparator swaps only when its lower element is
// strictly greater than its upper one.

typedef unsigned int u32;
typedef unsigned long long u64;

// The most levels one global pass applies; src/cuda.rs has the same constant.
#define MAX_GLOBAL_LEVELS 4

#define TRANSFORM_ENCODE_ON_LOAD 1u
#define TRANSFORM_DECODE_ON_STORE 2u

// The value type of key-only sorts.
struct NoValue {};

template <typename V> struct HasValues {
    static constexpr bool value = true;
};
template <> struct HasValues<NoValue> {
    static constexpr bool value = false;
};

template <typename K> __device__ __forceinline__ K sign_bit() {
    return K(1) << (sizeof(K) * 8 - 1);
}

// Raw key word to ordered word: mirror of KeyEncoding::encode.
template <typename K> __device__ __forceinline__ K encode_key(K raw, u32 encoding) {
    const K sign = sign_bit<K>();
    K ordered = raw;
    switch (encoding & 3u) {
    case 1: // signed
        ordered = raw ^ sign;
        break;
    case 2: // float: total_cmp order
        ordered = (raw & sign) ? ~raw : (raw ^ sign);
        break;
    default: // unsigned
        break;
    }
    return (encoding & 4u) ? ~ordered : ordered;
}

// Ordered word back to the raw key word: mirror of KeyEncoding::decode.
template <typename K> __device__ __forceinline__ K decode_key(K ordered, u32 encoding) {
    const K sign = sign_bit<K>();
    const K y = (encoding & 4u) ? ~ordered : ordered;
    switch (encoding & 3u) {
    case 1:
        return y ^ sign;
    case 2:
        return (y & sign) ? (y ^ sign) : ~y;
    default:
        return y;
    }
}

// ---------------------------------------------------------------------------------------
// Tile-local passes: one block per tile of T = 2^log_tile elements in shared memory.
// ---------------------------------------------------------------------------------------

// Dynamic shared memory: T keys, then T values (sized by the host).
extern __shared__ __align__(16) unsigned char tile_smem[];

template <typename K, typename V, bool MERGE_ONLY>
__device__ __forceinline__ void local_pass(K *__restrict__ keys, V *__restrict__ values, u64 n,
                                           u32 log_tile, u32 encoding, u32 transform) {
    constexpr bool HAS_V = HasValues<V>::value;
    const u32 tile = 1u << log_tile;
    const u32 comparators = tile >> 1;
    K *skeys = reinterpret_cast<K *>(tile_smem);
    V *svalues = reinterpret_cast<V *>(tile_smem + (size_t)tile * sizeof(K));
    const bool encode = (transform & TRANSFORM_ENCODE_ON_LOAD) != 0;
    const bool decode = (transform & TRANSFORM_DECODE_ON_STORE) != 0;
    const u64 tiles = (n + tile - 1) >> log_tile;

    for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        const u64 base = t << log_tile;
        for (u32 i = threadIdx.x; i < tile; i += blockDim.x) {
            const u64 g = base + i;
            if (g < n) {
                const K k = keys[g];
                skeys[i] = encode ? encode_key(k, encoding) : k;
                if constexpr (HAS_V) {
                    svalues[i] = values[g];
                }
            } else {
                skeys[i] = ~K(0);
            }
        }
        __syncthreads();

        // LocalSort: stages 1..=log_tile, each a flip then half-cleaners.
        // LocalMerge: the half-cleaners of stage log_tile only (its flip was global).
        const u32 first_stage = MERGE_ONLY ? log_tile : 1u;
        for (u32 stage = first_stage; stage <= log_tile; ++stage) {
            for (u32 level = 0; level < stage; ++level) {
                const u32 bit = stage - 1 - level;
                const bool flip = !MERGE_ONLY && level == 0;
                const u32 low_mask = (1u << bit) - 1;
                for (u32 c = threadIdx.x; c < comparators; c += blockDim.x) {
                    const u32 lo = ((c >> bit) << (bit + 1)) | (c & low_mask);
                    const u32 hi = flip ? (lo ^ ((2u << bit) - 1)) : (lo | (1u << bit));
                    const K a = skeys[lo];
                    const K b = skeys[hi];
                    if (a > b) {
                        skeys[lo] = b;
                        skeys[hi] = a;
                        if constexpr (HAS_V) {
                            const V va = svalues[lo];
                            svalues[lo] = svalues[hi];
                            svalues[hi] = va;
                        }
                    }
                }
                __syncthreads();
            }
        }

        for (u32 i = threadIdx.x; i < tile; i += blockDim.x) {
            const u64 g = base + i;
            if (g < n) {
                const K k = skeys[i];
                keys[g] = decode ? decode_key(k, encoding) : k;
                if constexpr (HAS_V) {
                    values[g] = svalues[i];
                }
            }
        }
        // The next tile's loads overwrite shared memory that this tile's stores read.
        __syncthreads();
    }
}

// ---------------------------------------------------------------------------------------
// Global merge pass: each thread holds 2^LEVELS elements of one group in registers.
// ---------------------------------------------------------------------------------------

template <typename K, typename V> __device__ __forceinline__ void exchange(K &ka, K &kb, V &va, V &vb) {
    if (ka > kb) {
        const K k = ka;
        ka = kb;
        kb = k;
        if constexpr (HasValues<V>::value) {
            const V v = va;
            va = vb;
            vb = v;
        }
    }
}

template <typename K, typename V, u32 LEVELS, bool FLIP>
__device__ __forceinline__ void global_pass(K *__restrict__ keys, V *__restrict__ values, u64 n,
                                            u32 stage, u32 first_level, u32 encoding, u32 transform) {
    constexpr bool HAS_V = HasValues<V>::value;
    constexpr u32 R = 1u << LEVELS;
    constexpr u32 HALF = R >> 1;
    const u32 hi_bit = stage - 1 - first_level;
    const u32 lo_bit = hi_bit + 1 - LEVELS;
    const u64 low_mask = (1ull << lo_bit) - 1;
    const bool encode = (transform & TRANSFORM_ENCODE_ON_LOAD) != 0;
    const bool decode = (transform & TRANSFORM_DECODE_ON_STORE) != 0;
    // N = 2^ceil(log2 n); n >= 2 whenever a global pass runs.
    const u32 log_n = 64u - (u32)__clzll((long long)(n - 1));
    const u64 groups = 1ull << (log_n - LEVELS);
    const u64 stride = (u64)gridDim.x * blockDim.x;

    for (u64 group = (u64)blockIdx.x * blockDim.x + threadIdx.x; group < groups; group += stride) {
        const u64 block = (group >> lo_bit) << (hi_bit + 1);
        const u64 r = group & low_mask;
        // Register 0 holds the lowest index of the group: nothing to do when it is padding.
        if (block + r >= n) {
            continue;
        }
        u64 idx[R];
        K k[R];
        V v[R];
#pragma unroll
        for (u32 reg = 0; reg < R; ++reg) {
            if (FLIP && reg >= HALF) {
                idx[reg] = block + (1ull << hi_bit) + ((u64)(reg - HALF) << lo_bit) + (low_mask - r);
            } else {
                idx[reg] = block + ((u64)reg << lo_bit) + r;
            }
            if (idx[reg] < n) {
                const K w = keys[idx[reg]];
                k[reg] = encode ? encode_key(w, encoding) : w;
                if constexpr (HAS_V) {
                    v[reg] = values[idx[reg]];
                }
            } else {
                k[reg] = ~K(0);
            }
        }

        // The flip (when the pass starts at level 0): reg r vs reg R-1-r.
        // Then (and otherwise) the half-cleaners: reg r vs reg r+d, d = R/2, R/4, ...
#pragma unroll
        for (u32 s = 0; s < LEVELS; ++s) {
            const u32 d = R >> (s + 1);
#pragma unroll
            for (u32 r0 = 0; r0 < R; ++r0) {
                if ((r0 & d) == 0) {
                    const u32 partner = (FLIP && s == 0) ? (R - 1 - r0) : (r0 + d);
                    exchange(k[r0], k[partner], v[r0], v[partner]);
                }
            }
        }

#pragma unroll
        for (u32 reg = 0; reg < R; ++reg) {
            if (idx[reg] < n) {
                keys[idx[reg]] = decode ? decode_key(k[reg], encoding) : k[reg];
                if constexpr (HAS_V) {
                    values[idx[reg]] = v[reg];
                }
            }
        }
    }
}

template <typename K, typename V, u32 LEVELS>
__device__ __forceinline__ void global_levels(K *keys, V *values, u64 n, u32 stage, u32 first_level,
                                              u32 encoding, u32 transform) {
    if (first_level == 0) {
        global_pass<K, V, LEVELS, true>(keys, values, n, stage, first_level, encoding, transform);
    } else {
        global_pass<K, V, LEVELS, false>(keys, values, n, stage, first_level, encoding, transform);
    }
}

template <typename K, typename V>
__device__ __forceinline__ void global_merge(K *keys, V *values, u64 n, u32 stage, u32 first_level,
                                             u32 levels, u32 encoding, u32 transform) {
    switch (levels) {
    case 1:
        global_levels<K, V, 1>(keys, values, n, stage, first_level, encoding, transform);
        break;
    case 2:
        global_levels<K, V, 2>(keys, values, n, stage, first_level, encoding, transform);
        break;
    case 3:
        global_levels<K, V, 3>(keys, values, n, stage, first_level, encoding, transform);
        break;
    case 4:
        global_levels<K, V, 4>(keys, values, n, stage, first_level, encoding, transform);
        break;
    default: // the host never asks for more than MAX_GLOBAL_LEVELS
        break;
    }
}

static_assert(MAX_GLOBAL_LEVELS == 4, "global_merge dispatches levels 1..=4");

// ---------------------------------------------------------------------------------------
// Entry points.
// ---------------------------------------------------------------------------------------

#define BITONIC_KERNELS(KNAME, K, VNAME, V)                                                      \
    extern "C" __global__ void local_sort_##KNAME##_##VNAME(K *keys, V *values, u64 n,           \
                                                            u32 log_tile, u32 encoding,          \
                                                            u32 transform) {                     \
        local_pass<K, V, false>(keys, values, n, log_tile, encoding, transform);                 \
    }                                                                                            \
    extern "C" __global__ void local_merge_##KNAME##_##VNAME(K *keys, V *values, u64 n,          \
                                                             u32 log_tile, u32 encoding,         \
                                                             u32 transform) {                    \
        local_pass<K, V, true>(keys, values, n, log_tile, encoding, transform);                  \
    }                                                                                            \
    extern "C" __global__ void global_merge_##KNAME##_##VNAME(K *keys, V *values, u64 n,         \
                                                              u32 stage, u32 first_level,        \
                                                              u32 levels, u32 encoding,          \
                                                              u32 transform) {                   \
        global_merge<K, V>(keys, values, n, stage, first_level, levels, encoding, transform);    \
    }

BITONIC_KERNELS(u32, u32, none, NoValue)
BITONIC_KERNELS(u32, u32, u32, u32)
BITONIC_KERNELS(u32, u32, u64, u64)
BITONIC_KERNELS(u64, u64, none, NoValue)
BITONIC_KERNELS(u64, u64, u32, u32)
BITONIC_KERNELS(u64, u64, u64, u64)
