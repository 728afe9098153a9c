// Tile input and output of the CUDA kernels (cuda/bitonic.cu): where a pass's virtual tile
// lives in memory (`TileMap`), and its loads and stores, whole tiles in quads (16-byte
// accesses, 8-byte ones for 16-bit keys) and any other tile element by element. Keys are
// stored in global memory as S and held in shared memory as K = RegisterWord<S>::type: a
// 16-bit key is widened as it is loaded and narrowed as it is stored.

#pragma once

#include "words.cuh"

// Where the elements of one tile live, computed once per tile so that each element's
// address costs a few instructions (recomputing it from the pass's parameters for every
// element made the passes instruction-bound). Tile element x has tile row r = x >> c and
// column q = x & (2^c - 1); its virtual index (row * P + column) is
//   origin + (r << lo) + q          for r below mirror_row,
//   mirror_origin + (r << lo) - q   for the mirrored rows of a flip.
// A local pass's tile is one contiguous tile row (c = tile_bits).
struct TileMap {
    u64 origin;
    u64 mirror_origin;
    u32 c;
    u32 lo;
    u32 mirror_row;
};

__device__ __forceinline__ TileMap tile_map(const PassArgs &a, u64 t) {
    TileMap map;
    if (a.mode != MODE_GLOBAL) {
        map.origin = t << a.tile_bits;
        map.mirror_origin = 0;
        map.c = a.tile_bits;
        map.lo = a.tile_bits;
        map.mirror_row = ~0u;
        return map;
    }
    const u32 hi = a.stage - 1 - a.first_level;
    const u32 lo = hi + 1 - a.levels;
    const u32 c = a.log_cols;
    const u64 col_base = (t & ((1ull << (lo - c)) - 1)) << c;
    const u64 block = (t >> (lo - c)) << (hi + 1);
    map.origin = block + col_base;
    // The mirrored column of col_base + q is 2^lo - 1 - col_base - q.
    map.mirror_origin = block + ((1ull << lo) - 1) - col_base;
    map.c = c;
    map.lo = lo;
    map.mirror_row = a.first_level == 0 ? (1u << (a.levels - 1)) : ~0u;
    return map;
}

// Virtual index of tile element x.
__device__ __forceinline__ u64 virtual_index(const TileMap &map, u32 x) {
    const u32 r = x >> map.c;
    const u32 q = x & ((1u << map.c) - 1u);
    const u64 row = (u64)r << map.lo;
    return r >= map.mirror_row ? map.mirror_origin + row - q : map.origin + row + q;
}

// The memory index of virtual index v, or ~0 for padding. One row (a plain sort) and rows
// of a power-of-two length, the common cases, need no division of v into row and column.
__device__ __forceinline__ u64 memory_index(const PassArgs &a, u64 v) {
    if (a.rows == 1) {
        return v < a.row_len ? v : ~0ull;
    }
    if (a.row_len == (1ull << a.log_row)) {
        return v < (a.rows << a.log_row) ? v : ~0ull;
    }
    const u64 row = v >> a.log_row;
    const u64 col = v & ((1ull << a.log_row) - 1);
    if (row >= a.rows || col >= a.row_len) {
        return ~0ull;
    }
    return row * a.row_len + col;
}

// ---------------------------------------------------------------------------------------
// Whole tiles: every element in the data at its virtual index, arrays 16-byte aligned.
// ---------------------------------------------------------------------------------------

// The whole-tile path applies to this pass: memory index = virtual index (one row, or rows
// of a power-of-two length), a tile row holds at least 4 columns, and both arrays are
// aligned to their quads (a caller's sub-slice need not be).
template <typename S, typename V>
__device__ __forceinline__ bool whole_tiles_apply(const S *keys, const V *values, const PassArgs &a) {
    const u32 c = a.mode == MODE_GLOBAL ? a.log_cols : a.tile_bits;
    const bool aligned = ((unsigned long long)keys & (quad_bytes<S>() - 1)) == 0 &&
                         (!HasValues<V>::value || ((unsigned long long)values & 15ull) == 0);
    return (a.rows == 1 || a.row_len == (1ull << a.log_row)) && c >= 2 && aligned;
}

// Every element of the tile is below the end of the data: its last row holds the highest
// virtual index (a row's offset 2^lo exceeds its columns).
__device__ __forceinline__ bool tile_is_whole(const PassArgs &a, const TileMap &map, u32 size) {
    const u32 last = (size >> map.c) - 1u;
    const u64 row = (u64)last << map.lo;
    const u64 top = last >= map.mirror_row ? map.mirror_origin + row : map.origin + row + ((1u << map.c) - 1u);
    const u64 end = a.rows == 1 ? a.row_len : (a.rows << a.log_row);
    return top < end;
}

// Where the four elements x..x+3 (x a multiple of 4) of a whole tile start in memory, and
// whether they lie backwards (a mirrored row of a flip: x..x+3 are at v+3..v).
__device__ __forceinline__ u64 quad_index(const TileMap &map, u32 x, bool &backwards) {
    const u32 r = x >> map.c;
    const u32 q = x & ((1u << map.c) - 1u);
    const u64 row = (u64)r << map.lo;
    backwards = r >= map.mirror_row;
    return backwards ? map.mirror_origin + row - q - 3u : map.origin + row + q;
}

// Loads a whole tile in quads: thread t takes elements 4(t + i*blockDim) ..+3 for
// i < QUADS, all loads of a batch issued before the first is used.
template <typename S, typename V, u32 QUADS, typename K = typename RegisterWord<S>::type>
__device__ __forceinline__ void load_whole_tile(const S *__restrict__ keys, const V *__restrict__ values, K *sk, V *sv,
                                                const TileMap &map, bool encode, u32 encoding) {
    constexpr bool HAS_V = HasValues<V>::value;
    // Quads in flight per thread: 64 bytes for u32 keys alone (two blocks per
    // multiprocessor, 64 registers), 32 bytes per word of an element for the wider kernels
    // (one block, 128 registers); more spilled registers.
    constexpr u32 ELEMENT_BYTES = sizeof(K) + (HAS_V ? sizeof(V) : 0);
    constexpr u32 WANT = ELEMENT_BYTES == 4 ? 4 : (ELEMENT_BYTES >= 12 ? 2 : 32 / ELEMENT_BYTES);
    constexpr u32 BATCH = QUADS < WANT ? QUADS : WANT;
#pragma unroll
    for (u32 i0 = 0; i0 < QUADS; i0 += BATCH) {
        K k[BATCH][4];
        V v[BATCH][4];
        bool back[BATCH];
#pragma unroll
        for (u32 b = 0; b < BATCH; ++b) {
            const u32 x = 4u * (threadIdx.x + (i0 + b) * blockDim.x);
            const u64 m = quad_index(map, x, back[b]);
            load_quad(keys + m, k[b]);
            if constexpr (HAS_V) {
                load4(values + m, v[b]);
            }
        }
#pragma unroll
        for (u32 b = 0; b < BATCH; ++b) {
            // x..x+3 share one 32-word padding period: slots pad(x) + j.
            const u32 first = pad(4u * (threadIdx.x + (i0 + b) * blockDim.x));
#pragma unroll
            for (u32 j = 0; j < 4; ++j) {
                // Selects, not a computed index, keep the quads in registers.
                const K key = back[b] ? k[b][3 - j] : k[b][j];
                sk[first + j] = encode ? encode_as<S>(key, encoding) : key;
                if constexpr (HAS_V) {
                    sv[first + j] = back[b] ? v[b][3 - j] : v[b][j];
                }
            }
        }
    }
}

template <typename S, typename V, u32 QUADS, typename K = typename RegisterWord<S>::type>
__device__ __forceinline__ void store_whole_tile(S *__restrict__ keys, V *__restrict__ values, const K *sk,
                                                 const V *sv, const TileMap &map, bool decode, u32 encoding) {
    constexpr bool HAS_V = HasValues<V>::value;
#pragma unroll
    for (u32 i = 0; i < QUADS; ++i) {
        const u32 x = 4u * (threadIdx.x + i * blockDim.x);
        bool back;
        const u64 m = quad_index(map, x, back);
        const u32 first = pad(x);
        K k[4];
        V v[4];
#pragma unroll
        for (u32 j = 0; j < 4; ++j) {
            const K key = sk[first + j];
            k[j] = decode ? decode_as<S>(key, encoding) : key;
            if constexpr (HAS_V) {
                v[j] = sv[first + j];
            }
        }
        // Selects, not a computed index, keep the quad in registers.
        K kr[4];
        V vr[4];
#pragma unroll
        for (u32 j = 0; j < 4; ++j) {
            kr[j] = back ? k[3 - j] : k[j];
            if constexpr (HAS_V) {
                vr[j] = back ? v[3 - j] : v[j];
            }
        }
        store_quad(keys + m, kr);
        if constexpr (HAS_V) {
            store4(values + m, vr);
        }
    }
}

// Quads per thread of the whole-tile path for this tile and block, 0 where it has no
// compiled variant.
__device__ __forceinline__ u32 whole_tile_quads(u32 size) {
    const u32 per_block = 4u * blockDim.x;
    if (size % per_block != 0) {
        return 0;
    }
    const u32 quads = size / per_block;
    return (quads == 1 || quads == 2 || quads == 4 || quads == 8 || quads == 16) ? quads : 0;
}

// A quad count as a type, so that one switch serves every whole-tile loop.
template <u32 N> struct Quads {
    static constexpr u32 value = N;
};

// Calls f(Quads<quads>{}) for the compiled quad counts (whole_tile_quads gives no other).
template <typename F> __device__ __forceinline__ void with_quads(u32 quads, F f) {
    switch (quads) {
    case 1:
        f(Quads<1>{});
        break;
    case 2:
        f(Quads<2>{});
        break;
    case 4:
        f(Quads<4>{});
        break;
    case 8:
        f(Quads<8>{});
        break;
    default:
        f(Quads<16>{});
        break;
    }
}

// Loads a tile element by element: any tile, padding included.
template <typename S, typename V, typename K = typename RegisterWord<S>::type>
__device__ __forceinline__ void load_elements(const S *__restrict__ keys, const V *__restrict__ values, K *sk, V *sv,
                                              const PassArgs &a, const TileMap &map, bool encode) {
    constexpr bool HAS_V = HasValues<V>::value;
    const u32 size = 1u << a.tile_bits;
#if __CUDA_ARCH__ >= 800
    // Asynchronous copies straight into shared memory: every element of the tile is in
    // flight at once, without holding registers (one load at a time per thread left
    // the memory system idle). Keys are encoded in place once they have arrived. A 16-bit
    // key is no cp.async size (4, 8 or 16 bytes) and needs widening: those take the loads
    // in batches below.
    if constexpr (sizeof(S) == sizeof(K)) {
    for (u32 x = threadIdx.x; x < size; x += blockDim.x) {
        const u64 m = memory_index(a, virtual_index(map, x));
        if (m != ~0ull) {
            copy_async(&sk[pad(x)], &keys[m]);
            if constexpr (HAS_V) {
                copy_async(&sv[pad(x)], &values[m]);
            }
        } else {
            sk[pad(x)] = ~K(0);
        }
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    if (encode) {
        for (u32 x = threadIdx.x; x < size; x += blockDim.x) {
            if (memory_index(a, virtual_index(map, x)) != ~0ull) {
                sk[pad(x)] = encode_key(sk[pad(x)], a.encoding);
            }
        }
    }
    return;
    }
#endif
    constexpr u32 BATCH = 8;
    // Loads in batches, all issued before the first is used, so that each thread keeps
    // BATCH loads in flight (one at a time leaves the memory system idle).
    for (u32 x0 = threadIdx.x; x0 < size; x0 += blockDim.x * BATCH) {
        u64 m[BATCH];
        K w[BATCH];
        V v[BATCH];
#pragma unroll
        for (u32 b = 0; b < BATCH; ++b) {
            const u32 x = x0 + b * blockDim.x;
            m[b] = x < size ? memory_index(a, virtual_index(map, x)) : ~0ull;
        }
#pragma unroll
        for (u32 b = 0; b < BATCH; ++b) {
            if (m[b] != ~0ull) {
                w[b] = keys[m[b]];
                if constexpr (HAS_V) {
                    v[b] = values[m[b]];
                }
            }
        }
#pragma unroll
        for (u32 b = 0; b < BATCH; ++b) {
            const u32 x = x0 + b * blockDim.x;
            if (x < size) {
                sk[pad(x)] = m[b] != ~0ull ? (encode ? encode_as<S>(w[b], a.encoding) : w[b]) : ~K(0);
                if constexpr (HAS_V) {
                    sv[pad(x)] = v[b];
                }
            }
        }
    }
}

// Loads the tile at `map`: in quads when it is whole, else element by element.
template <typename S, typename V, typename K>
__device__ __forceinline__ void load_tile(const S *__restrict__ keys, const V *__restrict__ values, K *sk, V *sv,
                                          const PassArgs &a, const TileMap &map, bool whole, u32 quads, bool encode) {
    if (whole) {
        with_quads(quads, [&](auto q) {
            load_whole_tile<S, V, decltype(q)::value>(keys, values, sk, sv, map, encode, a.encoding);
        });
    } else {
        load_elements<S, V>(keys, values, sk, sv, a, map, encode);
    }
}

// Stores the tile at `map`, skipping padding.
template <typename S, typename V, typename K>
__device__ __forceinline__ void store_tile(S *__restrict__ keys, V *__restrict__ values, const K *sk, const V *sv,
                                           const PassArgs &a, const TileMap &map, bool whole, u32 quads, bool decode) {
    if (whole) {
        with_quads(quads, [&](auto q) {
            store_whole_tile<S, V, decltype(q)::value>(keys, values, sk, sv, map, decode, a.encoding);
        });
        return;
    }
    for (u32 x = threadIdx.x; x < (1u << a.tile_bits); x += blockDim.x) {
        const u64 m = memory_index(a, virtual_index(map, x));
        if (m != ~0ull) {
            const K k = sk[pad(x)];
            keys[m] = S(decode ? decode_as<S>(k, a.encoding) : k);
            if constexpr (HasValues<V>::value) {
                values[m] = sv[pad(x)];
            }
        }
    }
}
