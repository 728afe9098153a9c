// Bitonic sorting network kernels for the OpenCL backend (src/opencl/).
//
// These kernels execute exactly the comparator network of src/schedule/; read its module
// documentation first. The host builds one program per word variant with -D options:
//   KEY_T      the key word: uint or ulong
//   KEY_STORE_T, KEY_STORE_BITS  16-bit keys only: ushort and 16 (KEY_T is uint)
//   HAS_VALUES 1 when values move with the keys (absent or 0: keys only)
//   VAL_T      the value word when HAS_VALUES: uint or ulong
//   LOG_E      log2 of the elements a work item holds in registers in one round (1..MAX_LOG_E)
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
//   merge_split, merge_pass - merge path above the tile for keys alone (merge_path.clh):
//                    sorted tiles merged two runs at a time, from one buffer to another.
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
//
// The files: contract.h (the modes, transforms, encodings and padding shared with the host
// and the CUDA kernels), words.clh (key words, compare-exchange), rounds.clh (the register
// rounds), tile_io.clh (tile indices and quad moves), merge_path.clh (the merge passes of
// merge path), and here the two network kernels. The host
// inlines the included files (src/opencl/programs.rs), since a program is built from one
// string.

#ifndef KEY_T
#error "KEY_T must be defined (uint or ulong)"
#endif

#include "contract.h"

#ifndef LOG_E
#define LOG_E MAX_LOG_E
#endif
#if LOG_E < 1 || LOG_E > MAX_LOG_E
#error "LOG_E must be 1..MAX_LOG_E"
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

#include "words.clh"
#include "rounds.clh"
#include "tile_io.clh"
#include "merge_path.clh"

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
__kernel void bitonic_tile(__global KEY_STORE_T *restrict keys VALUES_ARG,
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
    const bool keys_aligned = QUAD_ALIGNED(keys, KEY_STORE4);
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
    inline void global_group_##L(__global KEY_STORE_T *restrict keys VALUES_ARG, const ulong q,      \
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
__kernel void bitonic_global(__global KEY_STORE_T *restrict keys VALUES_ARG,
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

// The counting sort of one row of 16-bit keys alone, in the program of such keys only.
#if defined(COUNTING_KERNELS) && COUNTING_KERNELS
#include "counting.clh"
#endif

// The radix sort of one row of 32- or 64-bit keys, in the programs of such keys.
#if defined(RADIX_KERNELS) && RADIX_KERNELS
#include "radix.clh"
#endif
