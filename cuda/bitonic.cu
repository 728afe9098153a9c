// Bitonic sorting network kernels for the CUDA backend (src/cuda/).
//
// Every launch is one pass of src/schedule/ and runs the same comparators that the schedule
// describes and `schedule::emulate` executes; only the grouping of a pass's levels into
// on-chip work differs, which cannot change the result (the comparators of one level are
// disjoint, and the levels run in order).
//
// One kernel per key/value width, `tile_pass_<K>_<V>(K *keys, V *values, PassArgs args)`,
// K in {u32, u64}, V in {none, u32, u64} (`values` is ignored for none). Each block loads a
// *virtual tile* of 2^tile_bits elements into shared memory, applies its levels in *rounds*,
// and stores it back:
//
//   SORT   (Pass::LocalSort):   contiguous tiles of 2^log_tile; stages 1..log_tile.
//   MERGE  (Pass::LocalMerge):  contiguous tiles; the half-cleaners on bits log_tile-1..0.
//   GLOBAL (Pass::GlobalMerge): 2^log_cols consecutive columns x 2^levels rows at stride
//          2^lo (lo = stage-first_level-levels); the tile's levels are on its row bits. When
//          the pass starts with the stage's flip, the upper half of the rows is the mirrored
//          side with the column bits reversed, so the flip becomes row r vs row R-1-r.
//          With tail_bits > 0 the previous stage's last half-cleaners run first, on the
//          column bits tail_bits-1..0 (a fused tail: one launch instead of a local merge).
//
// A round applies up to LOG_E levels on consecutive bits [lo, lo+levels) of the tile: each
// thread takes groups of 2^levels elements into registers (the bits of the round vary inside
// a group, all others select the group), runs the levels there, and writes the group back.
// Rounds are separated by one barrier. Shared memory is padded (one word per 32) so that the
// contiguous rounds (lo = 0) are free of bank conflicts.
//
// Rows: a batch of `rows` rows of `row_len` elements is sorted row by row in the same
// launches. Virtual index v = row * P + column with P = 2^log_row >= row_len; columns >=
// row_len and rows >= rows are padding: they read as the largest word, are never stored, and
// never move (a comparator swaps only when its lower element is strictly greater). A plain
// sort is one row of n.
//
// `encoding` is KeyEncoding::code() (bits 0-1 kind, bit 2 descending); `transform` bit 0
// encodes keys as they are loaded, bit 1 decodes them as they are stored.

typedef unsigned int u32;
typedef unsigned long long u64;

// Elements per thread and round = 2^LOG_E; src/cuda/mod.rs has the same constant.
#define LOG_E 4

#define MODE_SORT 0u
#define MODE_MERGE 1u
#define MODE_GLOBAL 2u

#define TRANSFORM_ENCODE_ON_LOAD 1u
#define TRANSFORM_DECODE_ON_STORE 2u

// The launch parameters; `PassArgs` in src/cuda/mod.rs has the same layout.
struct PassArgs {
    u64 row_len;      // elements per row (n for a plain sort)
    u64 rows;         // number of rows (1 for a plain sort)
    u32 log_row;      // P = 2^log_row >= row_len: the virtual row length
    u32 mode;         // MODE_*
    u32 tile_bits;    // log2 of the virtual tile
    u32 stage;        // GLOBAL: the merge stage (blocks of 2^stage)
    u32 first_level;  // GLOBAL: the first level applied (0 = the flip)
    u32 levels;       // GLOBAL: how many levels
    u32 log_cols;     // GLOBAL: log2 of the consecutive columns in a tile
    u32 encoding;     // KeyEncoding::code()
    u32 transform;    // TRANSFORM_* bits
    u32 tail_bits;    // GLOBAL: the previous stage's half-cleaners on column bits tail_bits-1..0 first
};

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

// Shared-memory slot of tile element x: one padding word after every 32.
__device__ __forceinline__ u32 pad(u32 x) { return x + (x >> 5); }

// Words of one padded shared array of 2^bits elements, rounded up to a multiple of 4 so that
// a following array of 8-byte values stays aligned; `padded_words` in src/cuda/mod.rs agrees.
__device__ __forceinline__ u32 padded_words(u32 bits) {
    const u32 size = 1u << bits;
    return (size + (size >> 5) + 3u) & ~3u;
}

#if __CUDA_ARCH__ >= 800
// Starts an asynchronous copy of one word from global to shared memory (cp.async, sm_80+);
// `cp.async.wait_all` completes it.
template <typename T> __device__ __forceinline__ void copy_async(T *shared, const T *global) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "cp.async copies 4 or 8 bytes here");
    const u32 to = (u32)__cvta_generic_to_shared(shared);
    if constexpr (sizeof(T) == 4) {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(to), "l"(global) : "memory");
    } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(to), "l"(global) : "memory");
    }
}
#endif

// Compare-exchange of registers: the smaller key to `a`, swapping only when a > b.
template <typename K, typename V> __device__ __forceinline__ void exchange(K &ka, K &kb, V &va, V &vb) {
    if constexpr (HasValues<V>::value) {
        const bool swap = ka > kb;
        const K k = ka;
        const V v = va;
        ka = swap ? kb : ka;
        kb = swap ? k : kb;
        va = swap ? vb : va;
        vb = swap ? v : vb;
    } else {
        const K lo = min(ka, kb);
        kb = max(ka, kb);
        ka = lo;
    }
}

// Four consecutive words from 16-byte aligned global memory.
template <typename T> __device__ __forceinline__ void load4(const T *p, T (&w)[4]) {
    if constexpr (sizeof(T) == 4) {
        const uint4 u = *reinterpret_cast<const uint4 *>(p);
        w[0] = u.x;
        w[1] = u.y;
        w[2] = u.z;
        w[3] = u.w;
    } else {
        const ulonglong2 lo = reinterpret_cast<const ulonglong2 *>(p)[0];
        const ulonglong2 hi = reinterpret_cast<const ulonglong2 *>(p)[1];
        w[0] = lo.x;
        w[1] = lo.y;
        w[2] = hi.x;
        w[3] = hi.y;
    }
}

template <typename T> __device__ __forceinline__ void store4(T *p, const T (&w)[4]) {
    if constexpr (sizeof(T) == 4) {
        *reinterpret_cast<uint4 *>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
        reinterpret_cast<ulonglong2 *>(p)[0] = make_ulonglong2(w[0], w[1]);
        reinterpret_cast<ulonglong2 *>(p)[1] = make_ulonglong2(w[2], w[3]);
    }
}

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

// The register network of a round of LEVELS levels on R = 2^LEVELS registers: with FLIP
// the first level compares r with R-1-r (the stage's flip), then half-cleaners r vs r + d.
template <typename K, typename V, u32 LEVELS, bool FLIP>
__device__ __forceinline__ void round_network(K (&k)[1u << LEVELS], V (&v)[1u << LEVELS]) {
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
// saving a shared-memory round trip and a barrier at each end of the pass.
template <typename K, typename V> struct Direct {
    K *keys;
    V *values;
    u64 origin;
    bool encode;
    bool decode;
    u32 encoding;
};

// The last round of a local pass (bits 3..0, four levels, no flip) with its groups of 16
// consecutive elements stored from registers to global memory, four 16-byte stores each.
template <typename K, typename V>
__device__ __forceinline__ void final_round_direct(const Direct<K, V> &out, const K *sk, const V *sv, u32 tile_bits) {
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
                kq[j] = out.decode ? decode_key(k[4 * q + j], out.encoding) : k[4 * q + j];
                if constexpr (HAS_V) {
                    vq[j] = v[4 * q + j];
                }
            }
            store4(out.keys + at + 4 * q, kq);
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
template <typename K, typename V>
__device__ __forceinline__ void run_levels(K *sk, V *sv, u32 tile_bits, u32 top, u32 bottom, bool flip,
                                           u32 mirror_low, const Direct<K, V> &direct, bool to_global,
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
            final_round_direct<K, V>(direct, sk, sv, tile_bits);
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

// Stages 1..STAGES inside groups of 2^STAGES consecutive tile elements, all in registers.
// With `direct` (STAGES = 4), the groups come straight from global memory.
template <typename K, typename V, u32 STAGES>
__device__ __forceinline__ void sort_groups(K *sk, V *sv, u32 tile_bits, const Direct<K, V> &direct,
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
                    load4(direct.keys + at + 4 * q, kq);
                    if constexpr (HAS_V) {
                        load4(direct.values + at + 4 * q, vq);
                    }
#pragma unroll
                    for (u32 j = 0; j < 4; ++j) {
                        k[4 * q + j] = direct.encode ? encode_key(kq[j], direct.encoding) : kq[j];
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
#pragma unroll
        for (u32 stage = 1; stage <= STAGES; ++stage) {
#pragma unroll
            for (u32 level = 0; level < stage; ++level) {
                const u32 bit = stage - 1 - level;
#pragma unroll
                for (u32 r = 0; r < R; ++r) {
                    if ((r & (1u << bit)) == 0) {
                        const u32 partner = level == 0 ? (r ^ ((2u << bit) - 1u)) : (r | (1u << bit));
                        exchange(k[r], k[partner], v[r], v[partner]);
                    }
                }
            }
        }
        write_group(sk, sv, first, k, v);
    }
}

// With `load_direct`, the first register groups come from global memory; with
// `store_direct`, the last round goes there (tiles of at least 2^5 elements).
template <typename K, typename V>
__device__ __forceinline__ void sort_tile(K *sk, V *sv, u32 tile_bits, const Direct<K, V> &direct, bool load_direct,
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
        run_levels<K, V>(sk, sv, tile_bits, stage - 1, 0, true, 0, direct, store_direct && stage == tile_bits);
    }
}

// ---------------------------------------------------------------------------------------
// The pass: load a virtual tile, run its levels, store it.
// ---------------------------------------------------------------------------------------

extern __shared__ __align__(16) unsigned char tile_smem[];

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
// 16-byte aligned (a caller's sub-slice need not be).
template <typename K, typename V>
__device__ __forceinline__ bool whole_tiles_apply(const K *keys, const V *values, const PassArgs &a) {
    const u32 c = a.mode == MODE_GLOBAL ? a.log_cols : a.tile_bits;
    const bool aligned = ((unsigned long long)keys & 15ull) == 0 &&
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

// Loads a whole tile with 16-byte accesses: thread t takes elements 4(t + i*blockDim)
// ..+3 for i < QUADS, all loads of a batch issued before the first is used.
template <typename K, typename V, u32 QUADS>
__device__ __forceinline__ void load_whole_tile(const K *__restrict__ keys, const V *__restrict__ values, K *sk, V *sv,
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
            load4(keys + m, k[b]);
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
                sk[first + j] = encode ? encode_key(key, encoding) : key;
                if constexpr (HAS_V) {
                    sv[first + j] = back[b] ? v[b][3 - j] : v[b][j];
                }
            }
        }
    }
}

template <typename K, typename V, u32 QUADS>
__device__ __forceinline__ void store_whole_tile(K *__restrict__ keys, V *__restrict__ values, const K *sk,
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
            k[j] = decode ? decode_key(key, encoding) : key;
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
        store4(keys + m, kr);
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
template <typename K, typename V>
__device__ __forceinline__ void load_elements(const K *__restrict__ keys, const V *__restrict__ values, K *sk, V *sv,
                                              const PassArgs &a, const TileMap &map, bool encode) {
    constexpr bool HAS_V = HasValues<V>::value;
    const u32 size = 1u << a.tile_bits;
#if __CUDA_ARCH__ >= 800
    // Asynchronous copies straight into shared memory: every element of the tile is in
    // flight at once, without holding registers (one load at a time per thread left
    // the memory system idle). Keys are encoded in place once they have arrived.
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
#else
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
                sk[pad(x)] = m[b] != ~0ull ? (encode ? encode_key(w[b], a.encoding) : w[b]) : ~K(0);
                if constexpr (HAS_V) {
                    sv[pad(x)] = v[b];
                }
            }
        }
    }
#endif
}

// Loads the tile at `map`: in quads when it is whole, else element by element.
template <typename K, typename V>
__device__ __forceinline__ void load_tile(const K *__restrict__ keys, const V *__restrict__ values, K *sk, V *sv,
                                          const PassArgs &a, const TileMap &map, bool whole, u32 quads, bool encode) {
    if (whole) {
        with_quads(quads, [&](auto q) {
            load_whole_tile<K, V, decltype(q)::value>(keys, values, sk, sv, map, encode, a.encoding);
        });
    } else {
        load_elements<K, V>(keys, values, sk, sv, a, map, encode);
    }
}

// Stores the tile at `map`, skipping padding.
template <typename K, typename V>
__device__ __forceinline__ void store_tile(K *__restrict__ keys, V *__restrict__ values, const K *sk, const V *sv,
                                           const PassArgs &a, const TileMap &map, bool whole, u32 quads, bool decode) {
    if (whole) {
        with_quads(quads, [&](auto q) {
            store_whole_tile<K, V, decltype(q)::value>(keys, values, sk, sv, map, decode, a.encoding);
        });
        return;
    }
    for (u32 x = threadIdx.x; x < (1u << a.tile_bits); x += blockDim.x) {
        const u64 m = memory_index(a, virtual_index(map, x));
        if (m != ~0ull) {
            const K k = sk[pad(x)];
            keys[m] = decode ? decode_key(k, a.encoding) : k;
            if constexpr (HasValues<V>::value) {
                values[m] = sv[pad(x)];
            }
        }
    }
}

template <typename K, typename V>
__device__ __forceinline__ void tile_pass(K *__restrict__ keys, V *__restrict__ values, const PassArgs &a) {
    constexpr bool HAS_V = HasValues<V>::value;
    const u32 size = 1u << a.tile_bits;
    K *sk = reinterpret_cast<K *>(tile_smem);
    V *sv = reinterpret_cast<V *>(tile_smem + (size_t)padded_words(a.tile_bits) * sizeof(K));
    const bool encode = (a.transform & TRANSFORM_ENCODE_ON_LOAD) != 0;
    const bool decode = (a.transform & TRANSFORM_DECODE_ON_STORE) != 0;
    const u64 tiles = (a.rows << a.log_row) >> a.tile_bits;
    const u32 quads = whole_tiles_apply(keys, values, a) ? whole_tile_quads(size) : 0u;

    for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        const TileMap map = tile_map(a, t);
        // Whole tiles (all but the last few of a plain sort) move in 16-byte accesses with
        // a few instructions per element; the per-element index path below made every pass
        // bound by integer instructions (ncu: ALU pipe 83% busy in a one-level pass).
        const bool whole = quads != 0 && tile_is_whole(a, map, size);
        // Element 0 is the tile's lowest index in its row: when it is padding, all are.
        if (!whole && memory_index(a, virtual_index(map, 0)) == ~0ull) {
            continue;
        }
        // A local sort of a whole tile skips a shared-memory round trip at each end: it loads
        // its first register groups from global memory and its last round stores there.
        // Each thread then moves 64 contiguous bytes, so a warp's 16-byte accesses are 64
        // bytes apart: worth it in the local sort, which is bound by its rounds, but a
        // local merge, bound by memory, lost 30% that way (docs/perf.md, change 11). Only
        // for u32 keys alone: the other kernels spill registers with it.
        constexpr bool DIRECT_FITS = sizeof(K) == 4 && !HAS_V;
        const bool direct = DIRECT_FITS && whole && a.mode == MODE_SORT && a.tile_bits >= 5;
        const Direct<K, V> out{keys, values, map.origin, encode, decode, a.encoding};
        if (!direct) {
            load_tile<K, V>(keys, values, sk, sv, a, map, whole, quads, encode);
            __syncthreads();
        }

        switch (a.mode) {
        case MODE_SORT:
            sort_tile<K, V>(sk, sv, a.tile_bits, out, direct, direct);
            break;
        case MODE_MERGE:
            run_levels<K, V>(sk, sv, a.tile_bits, a.tile_bits - 1, 0, false, 0, out, false);
            break;
        default: // GLOBAL: a fused tail on the column bits, then the row bits, a flip first
            if (a.tail_bits != 0) {
                run_levels<K, V>(sk, sv, a.tile_bits, a.tail_bits - 1, 0, false, 0, out, false,
                                 a.first_level == 0);
            }
            run_levels<K, V>(sk, sv, a.tile_bits, a.tile_bits - 1, a.log_cols, a.first_level == 0,
                             a.log_cols, out, false);
            break;
        }
        if (!direct) { // (a direct sort's last round stored the tile)
            __syncthreads();
            store_tile<K, V>(keys, values, sk, sv, a, map, whole, quads, decode);
        }
        // The next tile's loads overwrite what this tile's stores read.
        __syncthreads();
    }
}

#if __CUDA_ARCH__ >= 900
// ---------------------------------------------------------------------------------------
// Cluster passes (compute capability 9.0, in the sm_90 PTX only): tiles of 2^tile_bits
// elements spread over the CLUSTER_BLOCKS blocks of a thread-block cluster, block `rank`
// holding the slice of tile elements from rank * 2^slice_bits in its shared memory. A sort
// of 2^13..2^16 keys then runs in one launch on eight multiprocessors instead of one block
// on one (compute-bound) or a chain of launches (latency-bound), and larger sorts take
// tiles eight times a block's, so fewer launches. Levels on the tile's top LOG_CLUSTER bits
// are cluster rounds (through distributed shared memory, between two cluster barriers); the
// rest run in each block's own slice as in tile_pass.
// ---------------------------------------------------------------------------------------

#define LOG_CLUSTER 3
#define CLUSTER_BLOCKS (1u << LOG_CLUSTER)

__device__ __forceinline__ u32 cluster_rank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ u32 cluster_index() {
    u32 r;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
    return r;
}

__device__ __forceinline__ u32 cluster_count() {
    u32 r;
    asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
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

// Levels on the cluster bits [slice_bits, slice_bits + L), the tile's top bits: with FLIP
// the stage's flip first, then half-cleaners. A group is 2^L elements at one slice position
// p in 2^L consecutive slices; the flip pairs x with x ^ (2^tile_bits - 1), so the upper half
// of the registers takes the mirrored position p ^ (2^slice_bits - 1) (as in a tile's flip
// round). The groups are dealt out to the blocks in order of p, so a warp reads consecutive
// slots of each slice.
template <typename K, typename V, u32 L, bool FLIP>
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
        const u32 slot_high = FLIP ? pad(p ^ mask) : slot_low;
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
        round_network<K, V, L, FLIP>(k, v);
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
// block is done with it. With `flip`, the round takes `levels` (1..=LOG_CLUSTER) levels (a
// local sort's stages above the slice take fewer); without it, `levels` must be LOG_CLUSTER:
// a merge's half-cleaners always span every cluster bit, so only that round is compiled.
template <typename K, typename V>
__device__ __forceinline__ void cluster_levels(K *sk, V *sv, u32 slice_bits, u32 levels, bool flip) {
    cluster_sync();
    if (flip) {
        switch (levels) {
        case 1:
            cluster_round<K, V, 1, true>(sk, sv, slice_bits);
            break;
        case 2:
            cluster_round<K, V, 2, true>(sk, sv, slice_bits);
            break;
        default:
            cluster_round<K, V, 3, true>(sk, sv, slice_bits);
            break;
        }
    } else {
        cluster_round<K, V, 3, false>(sk, sv, slice_bits);
    }
    cluster_sync();
}
static_assert(LOG_CLUSTER == 3, "cluster_levels dispatches rounds of 1..=3 cluster levels");

// The slice of a cluster tile that block `rank` holds (tile elements from rank <<
// slice_bits), as a map of its own. A flip's tile has at least CLUSTER_BLOCKS rows, so a
// slice is whole rows of one half; its mirrored rows are loaded in ascending order (not
// reversed as in a block's tile), which puts the flip partner of slice position p at
// p ^ (2^slice_bits - 1) of the mirrored slice, as in a local sort, and leaves a fused tail's
// rounds plain.
__device__ __forceinline__ TileMap slice_map(const TileMap &tile, u32 rank, u32 slice_bits) {
    const u32 first = rank << slice_bits;
    const u32 r0 = first >> tile.c;
    const u64 row = (u64)r0 << tile.lo;
    TileMap map;
    map.origin = r0 >= tile.mirror_row ? tile.mirror_origin + row - ((1u << tile.c) - 1u)
                                       : tile.origin + row + (first & ((1u << tile.c) - 1u));
    map.mirror_origin = 0;
    map.c = tile.c < slice_bits ? tile.c : slice_bits;
    map.lo = tile.lo;
    map.mirror_row = ~0u;
    return map;
}

// A pass over tiles of 2^tile_bits elements, each spread over the CLUSTER_BLOCKS blocks of a
// cluster: any mode of tile_pass, the levels on the tile's top LOG_CLUSTER bits run as
// cluster rounds and the rest inside each block's slice.
template <typename K, typename V>
__device__ __forceinline__ void cluster_pass(K *__restrict__ keys, V *__restrict__ values, const PassArgs &a) {
    constexpr bool HAS_V = HasValues<V>::value;
    const u32 slice_bits = a.tile_bits - LOG_CLUSTER;
    const u32 size = 1u << slice_bits;
    K *sk = reinterpret_cast<K *>(tile_smem);
    V *sv = reinterpret_cast<V *>(tile_smem + (size_t)padded_words(slice_bits) * sizeof(K));
    const bool encode = (a.transform & TRANSFORM_ENCODE_ON_LOAD) != 0;
    const bool decode = (a.transform & TRANSFORM_DECODE_ON_STORE) != 0;
    const u32 rank = cluster_rank();
    // A block's view of its slice: a tile of its own (the load and store paths read the
    // tile size and columns from here).
    PassArgs local = a;
    local.tile_bits = slice_bits;
    local.log_cols = a.log_cols < slice_bits ? a.log_cols : slice_bits;
    const u64 tiles = (a.rows << a.log_row) >> a.tile_bits;
    const u32 quads = whole_tiles_apply(keys, values, local) ? whole_tile_quads(size) : 0u;
    for (u64 t = cluster_index(); t < tiles; t += cluster_count()) {
        const TileMap tile = tile_map(a, t);
        // Element 0 is the tile's lowest index: when it is padding, the whole cluster skips
        // the tile together. Otherwise every block takes part in the cluster's rounds: a
        // slice past the data is loaded as padding (the largest word), never skipped.
        if (memory_index(a, virtual_index(tile, 0)) == ~0ull) {
            continue;
        }
        const TileMap map = slice_map(tile, rank, slice_bits);
        const bool whole = quads != 0 && tile_is_whole(local, map, size);
        const bool direct = sizeof(K) == 4 && !HAS_V && whole && a.mode == MODE_SORT;
        const Direct<K, V> out{keys, values, map.origin, encode, decode, a.encoding};
        if (!direct) {
            load_tile<K, V>(keys, values, sk, sv, local, map, whole, quads, encode);
            __syncthreads();
        }
        switch (a.mode) {
        case MODE_SORT:
            sort_tile<K, V>(sk, sv, slice_bits, out, direct, false);
            for (u32 stage = slice_bits + 1; stage <= a.tile_bits; ++stage) {
                cluster_levels<K, V>(sk, sv, slice_bits, stage - slice_bits, true);
                run_levels<K, V>(sk, sv, slice_bits, slice_bits - 1, 0, false, 0, out, false);
            }
            break;
        case MODE_MERGE:
            cluster_levels<K, V>(sk, sv, slice_bits, LOG_CLUSTER, false);
            run_levels<K, V>(sk, sv, slice_bits, slice_bits - 1, 0, false, 0, out, false);
            break;
        default: // GLOBAL: a fused tail on the column bits, then the rows, the cluster's first
            if (a.tail_bits != 0) {
                run_levels<K, V>(sk, sv, slice_bits, a.tail_bits - 1, 0, false, 0, out, false);
            }
            cluster_levels<K, V>(sk, sv, slice_bits, LOG_CLUSTER, a.first_level == 0);
            if (a.log_cols < slice_bits) {
                run_levels<K, V>(sk, sv, slice_bits, slice_bits - 1, a.log_cols, false, 0, out, false);
            }
            break;
        }
        __syncthreads();
        store_tile<K, V>(keys, values, sk, sv, local, map, whole, quads, decode);
        // The next tile's loads overwrite what this tile's stores read; the other blocks
        // stopped touching this slice at the last cluster barrier.
        __syncthreads();
    }
}

#define CLUSTER_KERNEL(KNAME, K, VNAME, V, MIN_BLOCKS)                                           \
    extern "C" __global__ void __cluster_dims__(CLUSTER_BLOCKS, 1, 1)                            \
        __launch_bounds__(512, MIN_BLOCKS)                                                       \
        cluster_pass_##KNAME##_##VNAME(K *keys, V *values, PassArgs args) {                      \
        cluster_pass<K, V>(keys, values, args);                                                  \
    }

// Only the variants that fit their registers without spilling; src/cuda/plan.rs plans
// cluster sorts for these widths alone.
CLUSTER_KERNEL(u32, u32, none, NoValue, 2)
CLUSTER_KERNEL(u32, u32, u32, u32, 1)
#endif

// MIN_BLOCKS: blocks of 512 threads that must fit one multiprocessor's registers (two let
// one block's memory phase overlap another's shared-memory rounds);
// `blocks_per_multiprocessor` in src/cuda/plan.rs agrees.
#define BITONIC_KERNEL(KNAME, K, VNAME, V, MIN_BLOCKS)                                           \
    extern "C" __global__ void __launch_bounds__(512, MIN_BLOCKS)                                \
        tile_pass_##KNAME##_##VNAME(K *keys, V *values, PassArgs args) {                         \
        tile_pass<K, V>(keys, values, args);                                                     \
    }

BITONIC_KERNEL(u32, u32, none, NoValue, 2)
BITONIC_KERNEL(u32, u32, u32, u32, 2)
BITONIC_KERNEL(u32, u32, u64, u64, 1)
BITONIC_KERNEL(u64, u64, none, NoValue, 1)
BITONIC_KERNEL(u64, u64, u32, u32, 1)
BITONIC_KERNEL(u64, u64, u64, u64, 1)
