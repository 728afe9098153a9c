// Bitonic sorting network kernels for the OpenCL backend (src/opencl/).
//
// These kernels execute exactly the comparator network of src/schedule/; read its module
// documentation first. The host builds one program per word variant with -D options:
//   KEY_T      the key word: uint or ulong
//   HAS_VALUES 1 when values move with the keys (absent or 0: keys only)
//   VAL_T      the value word when HAS_VALUES: uint or ulong
//   LOG_E      log2 of the elements a work item holds in registers in one round (1..4)
//
// Rows: every kernel sorts `rows` independent rows of `row_len` words each, stored one after
// the other. Each row is padded (virtually) to P = 2^log_p >= row_len elements; virtual index
// v in [0, rows * P) lives at physical index (v >> log_p) * row_len + (v & (P - 1)) and is
// real only when (v & (P - 1)) < row_len. A whole-array sort is rows = 1, row_len = n.
//
// Padding is never read nor written: it loads as the all-ones ordered word, which a strict
// compare-exchange never moves (the lower register always holds the lower index and swaps
// only when strictly greater), so the result equals the schedule's, where comparators that
// touch padding are skipped.
//
// Kernels:
//   bitonic_tile   - one virtual tile per work-group in __local memory, processed by register
//                    rounds: Pass::LocalSort (mode 0), Pass::LocalMerge (mode 1), and
//                    Pass::GlobalMerge with more levels than one round holds or with a fused
//                    tail (mode 2).
//   bitonic_global - other Pass::GlobalMerge, of at most LOG_E levels: each work item holds
//                    one register group, loaded straight from global memory.
//
// A round applies `levels` (<= LOG_E) consecutive comparator levels on the local bits
// [lo, lo + levels) of a tile, the first optionally a flip. Register r of group g holds the
// local index x_r = base | (r << lo), base = ((g >> lo) << (lo + levels)) | (g & (2^lo - 1));
// in a flip round the upper half of the registers holds the mirrored side: x_r = (base ^
// ones[mirror_low, lo)) | (r << lo). The register network is then: flip round r vs R-1-r,
// then half-cleaners r vs r + d (d = R/4, R/8, ...); other rounds r vs r + d (d = R/2, ...).
//
// Whole tiles: when every element of a tile lies in the data at its virtual index (one row or
// rows of a power-of-two length, and the tile's highest index below the end), bitonic_tile
// moves it four consecutive elements at a time, one address per four (per-element index math
// made the passes instruction-bound on the GPU): through a vector pointer when the buffer is
// aligned to the vector's size (one 16-byte access on NVIDIA, where vload4 on a scalar
// pointer became four), with vload4/vstore4 otherwise. Other tiles go element by element.

#ifndef KEY_T
#error "KEY_T must be defined (uint or ulong)"
#endif

#ifndef LOG_E
#define LOG_E 4
#endif
#if LOG_E < 1 || LOG_E > 4
#error "LOG_E must be 1..4"
#endif

#if defined(HAS_VALUES) && HAS_VALUES
#define WITH_VALUES 1
#ifndef VAL_T
#error "VAL_T must be defined when HAS_VALUES is set"
#endif
#define VALUES_ARG , __global VAL_T *restrict values
#define LOCAL_VALUES_ARG , __local VAL_T *restrict lvals
#define LV , lvals
#define LV_PARAM , __local VAL_T *restrict lvals
#define PASS_VALUES , values
#else
#define WITH_VALUES 0
#define VALUES_ARG
#define LOCAL_VALUES_ARG
#define LV
#define LV_PARAM
#define PASS_VALUES
#endif

// Full unrolling keeps the register arrays in registers (every index becomes a constant).
// The host rebuilds with NO_UNROLL_PRAGMA if a compiler rejects the _Pragma operator; the
// loops have constant trip counts, so optimizers unroll them anyway.
#ifdef NO_UNROLL_PRAGMA
#define UNROLL
#else
#define UNROLL _Pragma("unroll")
#endif

// Transform flags (the host passes them in `transform`).
#define ENCODE_ON_LOAD 1u
#define DECODE_ON_STORE 2u

// Tile modes of bitonic_tile.
#define MODE_SORT 0u
#define MODE_MERGE 1u
#define MODE_GLOBAL 2u

// Four-word vectors of the key and value words (uint4, ulong4).
#define VEC4_(T) T##4
#define VEC4(T) VEC4_(T)
#define KEY4 VEC4(KEY_T)
#if WITH_VALUES
#define VAL4 VEC4(VAL_T)
#endif

// Quads (four elements) a work item loads before it stores the first to __local memory in a
// whole tile: the registers a round holds (2^LOG_E elements), so loads stay in flight without
// adding register pressure beyond a round's.
#if LOG_E >= 2
#define QUAD_BATCH (1 << (LOG_E - 2))
#else
#define QUAD_BATCH 1
#endif

#define KEY_SIGN ((KEY_T)1 << (sizeof(KEY_T) * 8 - 1))
#define KEY_SENTINEL (~(KEY_T)0)

// __local layout: one padding word after every 32, against bank conflicts.
#define PAD(x) ((x) + ((x) >> 5))

// Raw key word to ordered word: mirror of KeyEncoding::encode in src/keys.rs.
// encoding bits 0-1: 0 unsigned, 1 signed, 2 float; bit 2: descending.
inline KEY_T encode_key(KEY_T raw, uint encoding) {
    const uint kind = encoding & 3u;
    KEY_T ordered = raw;
    if (kind == 1u) {
        ordered = raw ^ KEY_SIGN;
    } else if (kind == 2u) {
        ordered = (raw & KEY_SIGN) ? ~raw : (raw ^ KEY_SIGN);
    }
    return (encoding & 4u) ? ~ordered : ordered;
}

// Ordered word back to the raw key word: mirror of KeyEncoding::decode.
inline KEY_T decode_key(KEY_T ordered, uint encoding) {
    const uint kind = encoding & 3u;
    const KEY_T y = (encoding & 4u) ? ~ordered : ordered;
    if (kind == 1u) {
        return y ^ KEY_SIGN;
    } else if (kind == 2u) {
        return (y & KEY_SIGN) ? (y ^ KEY_SIGN) : ~y;
    }
    return y;
}

// Compare-exchange of registers i < j: the smaller key goes to i, swapping only when the key
// in i is strictly greater (keys alone: min/max gives the same words).
#if WITH_VALUES
#define CMPX(i, j)                                                                             \
    do {                                                                                       \
        const KEY_T a_ = k[i];                                                                 \
        const KEY_T b_ = k[j];                                                                 \
        const bool s_ = a_ > b_;                                                               \
        k[i] = s_ ? b_ : a_;                                                                   \
        k[j] = s_ ? a_ : b_;                                                                   \
        const VAL_T va_ = v[i];                                                                \
        const VAL_T vb_ = v[j];                                                                \
        v[i] = s_ ? vb_ : va_;                                                                 \
        v[j] = s_ ? va_ : vb_;                                                                 \
    } while (0)
#define VREGS(R) VAL_T v[R];
#define LLOAD(r, at)                                                                           \
    do {                                                                                       \
        k[r] = lkeys[at];                                                                      \
        v[r] = lvals[at];                                                                      \
    } while (0)
#define LSTORE(r, at)                                                                          \
    do {                                                                                       \
        lkeys[at] = k[r];                                                                      \
        lvals[at] = v[r];                                                                      \
    } while (0)
#else
#define CMPX(i, j)                                                                             \
    do {                                                                                       \
        const KEY_T a_ = k[i];                                                                 \
        const KEY_T b_ = k[j];                                                                 \
        k[i] = min(a_, b_);                                                                    \
        k[j] = max(a_, b_);                                                                    \
    } while (0)
#define VREGS(R)
#define LLOAD(r, at) k[r] = lkeys[at]
#define LSTORE(r, at) lkeys[at] = k[r]
#endif

// The register network of a round of L levels (R = 2^L registers), the first level a flip
// when FLIP (a literal 0 or 1, so that no branch on it is left inside the work-item loop:
// PoCL 5's work-group compiler aborted on one). Every index is a constant once the loops
// unroll, so k[] and v[] stay in registers.
#define ROUND_NETWORK(L, FLIP)                                                                 \
    do {                                                                                       \
        const uint R_ = 1u << (L);                                                             \
        UNROLL for (uint r = 0; r < R_ / 2u; ++r) {                                            \
            CMPX(r, (FLIP) ? R_ - 1u - r : r + R_ / 2u);                                        \
        }                                                                                      \
        UNROLL for (uint t = 0; t + 1u < (L); ++t) {                                           \
            const uint d = R_ >> (t + 2u);                                                     \
            UNROLL for (uint r = 0; r < R_; ++r) {                                             \
                if ((r & d) == 0u) {                                                           \
                    CMPX(r, r + d);                                                            \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    } while (0)

// One round of L levels over a __local tile of 2^log_local elements (see the header):
// groups lid, lid + lsize, ... of the 2^(log_local - L) groups. `mirror` is
// ones[mirror_low, lo) in a flip round (0 otherwise).
//
// `reverse` (half-cleaner rounds only, 0 otherwise): a group whose base has this bit set
// runs its network backwards, register r taking the slot of register R-1-r. A fused tail
// (see bitonic_tile) runs inside the rows of a global tile, and the mirrored rows hold their
// columns reversed, so there the minimum belongs in the higher slot: reversing the registers
// maps every half-cleaner pair (r, r + d) onto the pair (R-1-r-d, R-1-r) and the plain network
// then puts each minimum where it belongs. Register r's slot is first + off(r) in the fast
// cases below; for R-1-r it is first + off(R-1) - off(r), a per-group start and sign.
//
// lo == 4 in a tile of at least 2^10 elements: the round straddles the padding's 32-word
// period. With groups numbered plainly, lanes 0-15 and 16-31 of a 32-wide sub-group (group
// bit 4) sit 2^(4+L) elements apart, which PAD maps onto overlapping banks (2-way
// conflicts), and every slot needs the whole PAD. So the group number's bits 4 and 9-L
// trade places (a bijection on the groups: only who takes which group changes, harmless at
// any sub-group width): the half sub-groups then lie 512 elements = 528 slots = 16 banks
// apart. And since base (and base ^ mirror) has zeros in bits [4, 4+L),
// PAD(base | r << 4) = PAD(base) + 16r + (r >> 1): constant offsets again.
#define ROUND_FN(L, FLIP, NAME)                                                                \
    inline void NAME(__local KEY_T *restrict lkeys LV_PARAM, const uint log_local,             \
                     const uint lo, const uint mirror, const uint reverse) {                   \
        const uint R = 1u << (L);                                                              \
        const uint groups = 1u << (log_local - (L));                                           \
        const uint low = (1u << lo) - 1u;                                                      \
        const uint lsize = (uint)get_local_size(0);                                            \
        /* PAD(base | (r << lo)) = PAD(base) + r * step when the round's bits lie above the */ \
        /* padding's 32-word period (lo >= 5) or inside one period (lo + L <= 5): one add   */ \
        /* per register instead of the whole index computation. 0: compute PAD per slot.    */ \
        const uint step = lo >= 5u ? (1u << lo) + (1u << (lo - 5u))                            \
                                   : (lo + (L) <= 5u ? (1u << lo) : 0u);                       \
        /* lo == 4 (see above) by selects inside the one loop: PoCL 5 aborts on loops in   */ \
        /* both arms of a branch.                                                           */ \
        const bool lo4 = lo == 4u && log_local >= 10u;                                         \
        const uint other = 9u - (L);                                                           \
        /* A reversed group's start: the slot of register R-1 (off(R-1), see above).        */ \
        const uint last_off = lo4 ? 16u * (R - 1u) + (R / 2u - 1u) : (R - 1u) * step;          \
        for (uint g = (uint)get_local_id(0); g < groups; g += lsize) {                         \
            const uint trade = lo4 ? ((g >> 4) ^ (g >> other)) & 1u : 0u;                      \
            const uint h = g ^ ((trade << 4) | (trade << other));                              \
            const uint base = ((h >> lo) << (lo + (L))) | (h & low);                           \
            const uint upper = base ^ mirror;                                                  \
            /* Selects, not a second copy of the loops (PoCL 5, see above). */                 \
            const bool rev = !(FLIP) && (base & reverse) != 0u;                                \
            const uint shift = rev ? last_off : 0u;                                            \
            const uint sign = rev ? ~0u : 1u;                                                  \
            const uint sstep = rev ? 0u - step : step;                                         \
            const uint flip_x = rev ? (R - 1u) << lo : 0u;                                     \
            const uint first = PAD(base) + shift;                                              \
            const uint first_upper = PAD(upper) + shift;                                       \
            KEY_T k[1 << (L)];                                                                 \
            VREGS(1 << (L))                                                                    \
            UNROLL for (uint r = 0; r < R; ++r) {                                              \
                const uint x = ((r < R / 2u ? base : upper) | (r << lo)) ^ flip_x;             \
                const uint head = r < R / 2u ? first : first_upper;                            \
                const uint slot = lo4 ? head + sign * (16u * r + (r >> 1))                     \
                                      : (step != 0u ? head + r * sstep : PAD(x));              \
                LLOAD(r, slot);                                                                \
            }                                                                                  \
            ROUND_NETWORK(L, FLIP);                                                            \
            UNROLL for (uint r = 0; r < R; ++r) {                                              \
                const uint x = ((r < R / 2u ? base : upper) | (r << lo)) ^ flip_x;             \
                const uint head = r < R / 2u ? first : first_upper;                            \
                const uint slot = lo4 ? head + sign * (16u * r + (r >> 1))                     \
                                      : (step != 0u ? head + r * sstep : PAD(x));              \
                LSTORE(r, slot);                                                               \
            }                                                                                  \
        }                                                                                      \
    }

// Stages 1..L of the sort on 2^L consecutive local indices per group, all in registers.
#define SORT_REGS_FN(L)                                                                        \
    inline void sort_regs_##L(__local KEY_T *restrict lkeys LV_PARAM, const uint log_local) {  \
        const uint R = 1u << (L);                                                              \
        const uint groups = 1u << (log_local - (L));                                           \
        const uint lsize = (uint)get_local_size(0);                                            \
        for (uint g = (uint)get_local_id(0); g < groups; g += lsize) {                         \
            const uint base = g << (L);                                                        \
            /* 2^L <= 16 aligned elements lie inside one 32-word padding period. */            \
            const uint first = PAD(base);                                                      \
            KEY_T k[1 << (L)];                                                                 \
            VREGS(1 << (L))                                                                    \
            UNROLL for (uint r = 0; r < R; ++r) { LLOAD(r, first + r); }                       \
            UNROLL for (uint s = 1; s <= (L); ++s) {                                           \
                const uint hb = 1u << (s - 1u);                                                \
                UNROLL for (uint r = 0; r < R; ++r) {                                          \
                    if ((r & hb) == 0u) {                                                      \
                        CMPX(r, r ^ ((hb << 1) - 1u));                                         \
                    }                                                                          \
                }                                                                              \
                UNROLL for (uint t = 0; t + 1u < s; ++t) {                                     \
                    const uint d = hb >> (t + 1u);                                             \
                    UNROLL for (uint r = 0; r < R; ++r) {                                      \
                        if ((r & d) == 0u) {                                                   \
                            CMPX(r, r + d);                                                    \
                        }                                                                      \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
            UNROLL for (uint r = 0; r < R; ++r) { LSTORE(r, first + r); }                      \
        }                                                                                      \
    }

ROUND_FN(1, 0, round_1)
#if LOG_E >= 2
ROUND_FN(1, 1, round_1_flip)
#endif
SORT_REGS_FN(1)
#if LOG_E >= 2
ROUND_FN(2, 0, round_2)
ROUND_FN(2, 1, round_2_flip)
SORT_REGS_FN(2)
#endif
#if LOG_E >= 3
ROUND_FN(3, 0, round_3)
ROUND_FN(3, 1, round_3_flip)
SORT_REGS_FN(3)
#endif
#if LOG_E >= 4
ROUND_FN(4, 0, round_4)
ROUND_FN(4, 1, round_4_flip)
SORT_REGS_FN(4)
#endif

inline void run_round(__local KEY_T *restrict lkeys LV_PARAM, const uint log_local,
                      const uint lo, const uint levels, const bool flip, const uint mirror,
                      const uint reverse) {
#if LOG_E == 1
    // One round function only, and no branch: a flip round of one level differs from a
    // half-cleaner only by its mirrored upper register (`mirror`, 0 when not flipping).
    // CPU devices build this (PoCL 5 aborts on a branch between different rounds).
    round_1(lkeys LV, log_local, lo, flip ? mirror : 0u, flip ? 0u : reverse);
#else
    // `mirror` is 0 outside flip rounds, where it is not used; `reverse` is 0 in flip rounds.
    const uint which = (levels << 1) | (flip ? 1u : 0u);
    switch (which) {
#if LOG_E >= 4
    case 9:
        round_4_flip(lkeys LV, log_local, lo, mirror, 0u);
        break;
    case 8:
        round_4(lkeys LV, log_local, lo, 0u, reverse);
        break;
#endif
#if LOG_E >= 3
    case 7:
        round_3_flip(lkeys LV, log_local, lo, mirror, 0u);
        break;
    case 6:
        round_3(lkeys LV, log_local, lo, 0u, reverse);
        break;
#endif
#if LOG_E >= 2
    case 5:
        round_2_flip(lkeys LV, log_local, lo, mirror, 0u);
        break;
    case 4:
        round_2(lkeys LV, log_local, lo, 0u, reverse);
        break;
#endif
    case 3:
        round_1_flip(lkeys LV, log_local, lo, mirror, 0u);
        break;
    default:
        round_1(lkeys LV, log_local, lo, 0u, reverse);
        break;
    }
#endif
}

inline void run_sort_regs(__local KEY_T *restrict lkeys LV_PARAM, const uint log_local,
                          const uint levels) {
    switch (levels) {
    case 0: // nothing to sort in registers (merge and global passes)
        break;
#if LOG_E >= 4
    case 4:
        sort_regs_4(lkeys LV, log_local);
        break;
#endif
#if LOG_E >= 3
    case 3:
        sort_regs_3(lkeys LV, log_local);
        break;
#endif
#if LOG_E >= 2
    case 2:
        sort_regs_2(lkeys LV, log_local);
        break;
#endif
    default:
        sort_regs_1(lkeys LV, log_local);
        break;
    }
}

// The levels on local bits top down to bottom, the first a flip (mirrored from mirror_low)
// when `flip`: chunks of LOG_E bits counted from the bottom, the top chunk taking the
// remainder, run top-down with one barrier after each. Every work item calls this with the
// same arguments, so the barriers are uniform. No levels when top + 1 == bottom (top may
// wrap to all ones for bottom 0). `reverse`: see ROUND_FN (0 unless the levels are a fused
// tail; never with `flip`).
inline void run_levels(__local KEY_T *restrict lkeys LV_PARAM, const uint log_local,
                       const uint top, const uint bottom, const bool flip,
                       const uint mirror_low, const uint reverse) {
    // A counted loop with a barrier at the end of its body and no early exit: the shape
    // PoCL's work-group compiler handles (it aborted on a while loop entered after a
    // barrier, and on conditional barriers).
    const uint bits = top + 1u - bottom;
    const uint chunks = (bits + (uint)LOG_E - 1u) / (uint)LOG_E;
    const uint first = bits - (uint)LOG_E * (chunks - 1u);
    for (uint i = 0; i < chunks; ++i) {
        const uint levels = i == 0u ? first : (uint)LOG_E;
        const uint lo = top + 1u - first - (uint)LOG_E * i;
        const bool flip_now = flip && i == 0u;
        const uint mirror = flip_now ? (((1u << lo) - 1u) & ~((1u << mirror_low) - 1u)) : 0u;
        run_round(lkeys LV, log_local, lo, levels, flip_now, mirror, reverse);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

// Physical index of virtual index v, or -1 (all ones) when v is padding. One row (a plain
// sort) and rows of a power-of-two length, the common cases, need no division into row and
// column.
inline ulong physical(const ulong v, const ulong row_len, const ulong rows, const uint log_p) {
    if (rows == 1ul) {
        return v < row_len ? v : ~(ulong)0;
    }
    if (row_len == ((ulong)1 << log_p)) {
        return v < (rows << log_p) ? v : ~(ulong)0;
    }
    const ulong row = v >> log_p;
    const ulong col = v & (((ulong)1 << log_p) - 1ul);
    return (col < row_len && row < rows) ? row * row_len + col : ~(ulong)0;
}

// Where tile b's elements live, computed once per tile so that each element's address costs
// a few instructions (recomputing it from the pass's parameters for every element made the
// CUDA passes instruction-bound). Local index x has tile row r = x >> cols and column
// q = x & (2^cols - 1); its virtual index is origin + (r << row_shift) + q, or for the
// mirrored rows of a flip (r >= mirror_row) mirror_origin + (r << row_shift) - q. A local
// pass's tile is one contiguous tile row.
typedef struct {
    ulong origin;
    ulong mirror_origin;
    uint cols;
    uint row_shift;
    uint mirror_row;
} TileMap;

inline TileMap tile_map(const uint mode, const ulong b, const uint log_local, const uint c,
                        const uint lo_g, const uint m, const uint flip) {
    TileMap map;
    if (mode != MODE_GLOBAL) {
        map.origin = b << log_local;
        map.mirror_origin = 0ul;
        map.cols = log_local;
        map.row_shift = log_local;
        map.mirror_row = ~0u;
        return map;
    }
    const uint hi = lo_g + m - 1u;
    const ulong col_base = (b & (((ulong)1 << (lo_g - c)) - 1ul)) << c;
    const ulong block_base = (b >> (lo_g - c)) << (hi + 1u);
    map.origin = block_base + col_base;
    // The mirrored column of col_base + q is 2^lo_g - 1 - col_base - q.
    map.mirror_origin = block_base + (((ulong)1 << lo_g) - 1ul) - col_base;
    map.cols = c;
    map.row_shift = lo_g;
    map.mirror_row = flip ? (1u << (m - 1u)) : ~0u;
    return map;
}

// The virtual index of local index x of the tile `map` describes.
inline ulong tile_virtual(const TileMap map, const uint x) {
    const uint r = x >> map.cols;
    const uint q = x & ((1u << map.cols) - 1u);
    const ulong row = (ulong)r << map.row_shift;
    return r >= map.mirror_row ? map.mirror_origin + row - q : map.origin + row + q;
}

// Whether every element of the tile `map` describes is in the data at its virtual index, given
// that the pass's memory index is its virtual index (`end`: the data's virtual length). The
// last tile row holds the highest index (rows lie 2^row_shift apart and span 2^cols columns);
// in a mirrored row that is column 0's.
inline bool tile_is_whole(const TileMap map, const uint log_local, const ulong end) {
    const uint last = (1u << (log_local - map.cols)) - 1u;
    const ulong row = (ulong)last << map.row_shift;
    const ulong top = last >= map.mirror_row ? map.mirror_origin + row
                                             : map.origin + row + ((1u << map.cols) - 1u);
    return top < end;
}

// The lowest virtual index of elements x..x+3 (x a multiple of 4, a tile row at least 4
// columns wide, so they share a row): x's, or x+3's in a mirrored row, where they lie
// backwards (x..x+3 at v+3..v).
inline ulong quad_virtual(const TileMap map, const uint x) {
    const uint r = x >> map.cols;
    const uint q = x & ((1u << map.cols) - 1u);
    const ulong row = (ulong)r << map.row_shift;
    return r >= map.mirror_row ? map.mirror_origin + row - q - 3u : map.origin + row + q;
}

inline bool quad_backwards(const TileMap map, const uint x) {
    return (x >> map.cols) >= map.mirror_row;
}

// Quad accesses. A vector pointer needs the vector's own alignment (uint4: 16 bytes, ulong4:
// 32), which a quad at a multiple of 4 elements has exactly when the buffer's start has it;
// vload4/vstore4 need only the element's, but NVIDIA's compiler knows no more than that and
// splits them into scalar accesses. `aligned` is the buffer's, the same for every work item:
// a select inside the loops, not a second copy of them (PoCL 5 aborts on loops in both arms
// of a branch).
#define QUAD_ALIGNED(p, T4) ((((size_t)(p)) & (sizeof(T4) - 1u)) == 0u)

// The quad functions of one word type: load_NAME_quad loads, store_NAME_quad stores and
// NAME_quad_in_order puts a backwards quad in order, with selects, not a computed index
// (an index computed at run time would move the quad out of registers).
#define QUAD_FNS(NAME, T, T4)                                                                  \
    inline T4 load_##NAME##_quad(const __global T *p, const bool aligned) {                    \
        return aligned ? *(const __global T4 *)p : vload4(0, p);                               \
    }                                                                                          \
    inline void store_##NAME##_quad(const T4 q, __global T *p, const bool aligned) {           \
        if (aligned) {                                                                         \
            *(__global T4 *)p = q;                                                             \
        } else {                                                                               \
            vstore4(q, 0, p);                                                                  \
        }                                                                                      \
    }                                                                                          \
    inline T4 NAME##_quad_in_order(const T4 w, const bool backwards) {                         \
        return backwards ? w.s3210 : w;                                                        \
    }

QUAD_FNS(key, KEY_T, KEY4)
#if WITH_VALUES
QUAD_FNS(value, VAL_T, VAL4)
#define VALUE_QUADS(n) VAL4 w[n];
#define QLOAD_VALUES(b, at) w[b] = load_value_quad(values + (at), values_aligned)
#define QSTORE_LOCAL_VALUES(b, first, backwards)                                               \
    do {                                                                                       \
        const VAL4 u_ = value_quad_in_order(w[b], backwards);                                  \
        lvals[(first)] = u_.s0;                                                                \
        lvals[(first) + 1u] = u_.s1;                                                           \
        lvals[(first) + 2u] = u_.s2;                                                           \
        lvals[(first) + 3u] = u_.s3;                                                           \
    } while (0)
#define QSTORE_VALUES(first, at, backwards)                                                    \
    store_value_quad(value_quad_in_order((VAL4)(lvals[(first)], lvals[(first) + 1u],          \
                                                lvals[(first) + 2u], lvals[(first) + 3u]),     \
                                         backwards),                                           \
                     values + (at), values_aligned)
#else
#define VALUE_QUADS(n)
#define QLOAD_VALUES(b, at) (void)0
#define QSTORE_LOCAL_VALUES(b, first, backwards) (void)0
#define QSTORE_VALUES(first, at, backwards) (void)0
#endif

// Loads a whole tile into __local memory: work item lid takes elements x..x+3,
// x = 4 (lid + i lsize), QUAD_BATCH quads loaded before the first is stored. x..x+3 share
// one 32-word padding period: their slots are PAD(x) + j.
inline void load_whole_tile(__global KEY_T *restrict keys VALUES_ARG,
                            __local KEY_T *restrict lkeys LV_PARAM, const TileMap map,
                            const uint size, const uint encoding, const uint transform,
                            const bool keys_aligned, const bool values_aligned) {
    const uint lid = (uint)get_local_id(0);
    const uint lsize = (uint)get_local_size(0);
    // The bound check lets a tile of fewer than 4 lsize elements (CPU devices, which run
    // large work-groups) take this path too.
    for (uint i0 = 0; 4u * (lid + i0 * lsize) < size; i0 += QUAD_BATCH) {
        KEY4 k[QUAD_BATCH];
        VALUE_QUADS(QUAD_BATCH)
        UNROLL for (uint b = 0; b < QUAD_BATCH; ++b) {
            const uint x = 4u * (lid + (i0 + b) * lsize);
            if (x < size) {
                const ulong at = quad_virtual(map, x);
                k[b] = load_key_quad(keys + at, keys_aligned);
                QLOAD_VALUES(b, at);
            }
        }
        UNROLL for (uint b = 0; b < QUAD_BATCH; ++b) {
            const uint x = 4u * (lid + (i0 + b) * lsize);
            if (x < size) {
                const bool backwards = quad_backwards(map, x);
                KEY4 q = key_quad_in_order(k[b], backwards);
                if (transform & ENCODE_ON_LOAD) {
                    q = (KEY4)(encode_key(q.s0, encoding), encode_key(q.s1, encoding),
                               encode_key(q.s2, encoding), encode_key(q.s3, encoding));
                }
                const uint first = PAD(x);
                lkeys[first] = q.s0;
                lkeys[first + 1u] = q.s1;
                lkeys[first + 2u] = q.s2;
                lkeys[first + 3u] = q.s3;
                QSTORE_LOCAL_VALUES(b, first, backwards);
            }
        }
    }
}

// Stores a whole tile from __local memory, the quads of load_whole_tile.
inline void store_whole_tile(__global KEY_T *restrict keys VALUES_ARG,
                             __local KEY_T *restrict lkeys LV_PARAM, const TileMap map,
                             const uint size, const uint encoding, const uint transform,
                             const bool keys_aligned, const bool values_aligned) {
    const uint lid = (uint)get_local_id(0);
    const uint lsize = (uint)get_local_size(0);
    for (uint i0 = 0; 4u * (lid + i0 * lsize) < size; i0 += QUAD_BATCH) {
        UNROLL for (uint b = 0; b < QUAD_BATCH; ++b) {
            const uint x = 4u * (lid + (i0 + b) * lsize);
            if (x < size) {
                const bool backwards = quad_backwards(map, x);
                const ulong at = quad_virtual(map, x);
                const uint first = PAD(x);
                KEY4 q = (KEY4)(lkeys[first], lkeys[first + 1u], lkeys[first + 2u],
                                lkeys[first + 3u]);
                if (transform & DECODE_ON_STORE) {
                    q = (KEY4)(decode_key(q.s0, encoding), decode_key(q.s1, encoding),
                               decode_key(q.s2, encoding), decode_key(q.s3, encoding));
                }
                store_key_quad(key_quad_in_order(q, backwards), keys + at, keys_aligned);
                QSTORE_VALUES(first, at, backwards);
            }
        }
    }
}

// One pass over virtual tiles of 2^log_local elements, one work-group per tile (looping by
// the number of groups over `tiles`):
//   MODE_SORT   (Pass::LocalSort{log_tile = log_net}): tile b is virtual [b, b+1) * 2^log_local
//               (log_local >= log_net: a tile may hold several network tiles, as when short
//               rows are packed); stages 1..log_net on the local bits below log_net.
//   MODE_MERGE  (Pass::LocalMerge{log_tile = log_net}): the half-cleaners on bits
//               log_net-1..0.
//   MODE_GLOBAL (Pass::GlobalMerge): the global bits hi = lo_g + m - 1 down to lo_g; a tile
//               is 2^c columns x 2^m rows (log_local = c + m); local index x = (row << c) |
//               col sits at virtual index block_base + (row << lo_g) + col_base + col, or with
//               the low bits reversed in the upper half of the rows when `flip` (the stage's
//               first level): then the first level is the row flip. Levels on local bits
//               c+m-1..c. With tail > 0 (a fused tail, tail <= c), the previous stage's
//               half-cleaners on virtual bits tail-1..0 run first, inside each tile row on
//               local bits tail-1..0: in a mirrored row, whose columns are reversed, with
//               the minimum in the higher slot (run_levels' `reverse`).
// lkeys (and lvals) hold PAD(2^log_local) words, sized by the host.
__kernel void bitonic_tile(__global KEY_T *restrict keys VALUES_ARG,
                           const ulong row_len,
                           const ulong rows,
                           const uint log_p,
                           const ulong tiles,
                           const uint mode,
                           const uint log_local,
                           const uint log_net,
                           const uint c,
                           const uint lo_g,
                           const uint m,
                           const uint flip,
                           const uint tail,
                           const uint encoding,
                           const uint transform,
                           __local KEY_T *restrict lkeys LOCAL_VALUES_ARG) {
    const uint size = 1u << log_local;
    const uint lid = (uint)get_local_id(0);
    const uint lsize = (uint)get_local_size(0);

    // No early exit for tiles that hold only padding (their loads read sentinels, their
    // stores are skipped): PoCL 5's work-group compiler aborts on a `continue` in a loop
    // with barriers, and the host launches no such tiles in a single-row sort.
    // Memory index = virtual index in this pass: one row, or rows of a power-of-two length.
    const bool identity = rows == 1ul || row_len == ((ulong)1 << log_p);
    const ulong end = rows == 1ul ? row_len : rows << log_p;
    // Whole tiles' quads start at multiples of 4 elements: vector accesses when the buffers'
    // starts allow them (a sub-buffer may start anywhere the device allows).
    const bool keys_aligned = QUAD_ALIGNED(keys, KEY4);
#if WITH_VALUES
    const bool values_aligned = QUAD_ALIGNED(values, VAL4);
#else
    const bool values_aligned = false;
#endif
    for (ulong b = get_group_id(0); b < tiles; b += get_num_groups(0)) {
        const TileMap map = tile_map(mode, b, log_local, c, lo_g, m, flip);
        // Whole tiles (all but the last of a plain sort) move four elements per access with
        // one address per four; the others element by element, padding included. Both loops
        // run, one of them over nothing: PoCL 5's work-group compiler aborts on a branch
        // between two loops here.
        const bool whole = identity && map.cols >= 2u && tile_is_whole(map, log_local, end);
        const uint whole_size = whole ? size : 0u;
        const uint element_size = whole ? 0u : size;
        load_whole_tile(keys PASS_VALUES, lkeys LV, map, whole_size, encoding, transform,
                        keys_aligned, values_aligned);
        for (uint x = lid; x < element_size; x += lsize) {
            const ulong v = tile_virtual(map, x);
            const ulong p = physical(v, row_len, rows, log_p);
            KEY_T k = KEY_SENTINEL;
            if (p != ~(ulong)0) {
                k = keys[p];
                if (transform & ENCODE_ON_LOAD) {
                    k = encode_key(k, encoding);
                }
#if WITH_VALUES
                lvals[PAD(x)] = values[p];
#endif
            }
            lkeys[PAD(x)] = k;
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        // One barrier structure for every mode (no barrier under a condition, see
        // run_levels): a sort first sorts groups of 2^regs in registers, then runs stages
        // regs+1 ..= log_net; a merge or global pass runs one "stage" of its levels.
        const bool sort = mode == MODE_SORT;
        const uint regs = sort ? min(log_net, (uint)LOG_E) : 0u;
        run_sort_regs(lkeys LV, log_local, regs);
        barrier(CLK_LOCAL_MEM_FENCE);
        // A fused tail (none outside MODE_GLOBAL: tail is 0), rows of 2^c in a flip pass
        // mirrored from row 2^(m-1), local bit c+m-1.
        const uint reverse = (mode == MODE_GLOBAL && flip != 0u) ? 1u << (c + m - 1u) : 0u;
        run_levels(lkeys LV, log_local, tail - 1u, 0u, false, 0u, reverse);
        const uint first_stage = sort ? regs + 1u : 1u;
        const uint last_stage = sort ? log_net : 1u;
        const uint bottom = mode == MODE_GLOBAL ? c : 0u;
        const uint fixed_top = mode == MODE_GLOBAL ? c + m - 1u : log_net - 1u;
        const bool flip_first = sort || (mode == MODE_GLOBAL && flip != 0u);
        for (uint s = first_stage; s <= last_stage; ++s) {
            run_levels(lkeys LV, log_local, sort ? s - 1u : fixed_top, bottom, flip_first,
                       bottom, 0u);
        }

        store_whole_tile(keys PASS_VALUES, lkeys LV, map, whole_size, encoding, transform,
                         keys_aligned, values_aligned);
        for (uint x = lid; x < element_size; x += lsize) {
            const ulong v = tile_virtual(map, x);
            const ulong p = physical(v, row_len, rows, log_p);
            if (p != ~(ulong)0) {
                KEY_T k = lkeys[PAD(x)];
                if (transform & DECODE_ON_STORE) {
                    k = decode_key(k, encoding);
                }
                keys[p] = k;
#if WITH_VALUES
                values[p] = lvals[PAD(x)];
#endif
            }
        }
        // The next tile's load must not overwrite words another item still stores.
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

// One register group of a global pass straight from global memory, L = m a compile-time
// constant. Group q: block q >> lo_g of 2^(hi+1), column q & (2^lo_g - 1); register r holds
// virtual index block_base + (r << lo_g) + column (the column reversed in the upper half
// when `flip`).
#define GLOBAL_GROUP_FN(L)                                                                     \
    inline void global_group_##L(__global KEY_T *restrict keys VALUES_ARG, const ulong q,      \
                                 const ulong row_len, const ulong rows, const uint log_p,      \
                                 const uint lo_g, const bool flip, const uint encoding,        \
                                 const uint transform) {                                       \
        const uint R = 1u << (L);                                                              \
        const uint hi = lo_g + (L) - 1u;                                                       \
        const ulong low_mask = ((ulong)1 << lo_g) - 1ul;                                       \
        const ulong block_base = (q >> lo_g) << (hi + 1u);                                     \
        const ulong col = q & low_mask;                                                        \
        const ulong upper_col = flip ? (low_mask - col) : col;                                 \
        if (physical(block_base + col, row_len, rows, log_p) == ~(ulong)0) {                   \
            return;                                                                            \
        }                                                                                      \
        ulong p[1 << (L)];                                                                     \
        KEY_T k[1 << (L)];                                                                     \
        VREGS(1 << (L))                                                                        \
        UNROLL for (uint r = 0; r < R; ++r) {                                                  \
            const ulong vi = block_base + ((ulong)r << lo_g) + (r < R / 2u ? col : upper_col); \
            p[r] = physical(vi, row_len, rows, log_p);                                         \
            KEY_T key = KEY_SENTINEL;                                                          \
            if (p[r] != ~(ulong)0) {                                                           \
                key = keys[p[r]];                                                              \
                if (transform & ENCODE_ON_LOAD) {                                              \
                    key = encode_key(key, encoding);                                           \
                }                                                                              \
                GLOAD_VALUE(r);                                                                \
            }                                                                                  \
            k[r] = key;                                                                        \
        }                                                                                      \
        ROUND_NETWORK(L, flip);                                                                \
        UNROLL for (uint r = 0; r < R; ++r) {                                                  \
            if (p[r] != ~(ulong)0) {                                                           \
                KEY_T key = k[r];                                                              \
                if (transform & DECODE_ON_STORE) {                                             \
                    key = decode_key(key, encoding);                                           \
                }                                                                              \
                keys[p[r]] = key;                                                              \
                GSTORE_VALUE(r);                                                               \
            }                                                                                  \
        }                                                                                      \
    }

#if WITH_VALUES
#define GLOAD_VALUE(r) v[r] = values[p[r]]
#define GSTORE_VALUE(r) values[p[r]] = v[r]
#else
#define GLOAD_VALUE(r) (void)0
#define GSTORE_VALUE(r) (void)0
#endif

GLOBAL_GROUP_FN(1)
#if LOG_E >= 2
GLOBAL_GROUP_FN(2)
#endif
#if LOG_E >= 3
GLOBAL_GROUP_FN(3)
#endif
#if LOG_E >= 4
GLOBAL_GROUP_FN(4)
#endif

// Pass::GlobalMerge with m <= LOG_E levels on the global bits lo_g + m - 1 .. lo_g, the first
// the stage's flip when `flip`, over groups 0 .. groups; work items loop by the global size.
__kernel void bitonic_global(__global KEY_T *restrict keys VALUES_ARG,
                             const ulong row_len,
                             const ulong rows,
                             const uint log_p,
                             const ulong groups,
                             const uint lo_g,
                             const uint m,
                             const uint flip,
                             const uint encoding,
                             const uint transform) {
    const ulong step = get_global_size(0);
    const bool f = flip != 0u;
    for (ulong q = get_global_id(0); q < groups; q += step) {
        switch (m) {
#if LOG_E >= 4
        case 4:
            global_group_4(keys PASS_VALUES, q, row_len, rows, log_p, lo_g, f, encoding, transform);
            break;
#endif
#if LOG_E >= 3
        case 3:
            global_group_3(keys PASS_VALUES, q, row_len, rows, log_p, lo_g, f, encoding, transform);
            break;
#endif
#if LOG_E >= 2
        case 2:
            global_group_2(keys PASS_VALUES, q, row_len, rows, log_p, lo_g, f, encoding, transform);
            break;
#endif
        default:
            global_group_1(keys PASS_VALUES, q, row_len, rows, log_p, lo_g, f, encoding, transform);
            break;
        }
    }
}
