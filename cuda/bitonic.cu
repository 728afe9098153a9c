// Bitonic sorting network kernels for the CUDA backend (src/cuda/).
//
// Every launch is one pass of src/schedule/ and runs the same comparators that the schedule
// describes and `schedule::emulate` executes; only the grouping of a pass's levels into
// on-chip work differs, which cannot change the result (the comparators of one level are
// disjoint, and the levels run in order).
//
// One kernel per key/value width, `tile_pass_<K>_<V>(K *keys, V *values, PassArgs args)`,
// K in {u32, u64, u16}, V in {none, u32, u64} (`values` is ignored for none). 16-bit keys
// (u16) are loaded as 16 bits and sorted as 32-bit words in registers and shared memory
// (`RegisterWord` in words.cuh); their ordered words are 16-bit words, stored as such
// between passes, so no pass widens them in global memory. Each block loads a
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
//
// The files: kernels/contract.h (the pass arguments, modes and encodings shared with the host
// and the OpenCL kernels), words.cuh (key words, padding, compare-exchange), rounds.cuh (the
// register rounds), tile_io.cuh (tile loads and stores), cluster.cuh (cluster sorts), and
// merge_path.cuh (the merge passes above the tile, which the default mode runs after a
// tile sort), and here the passes and their entry points.

#include "rounds.cuh"
#include "tile_io.cuh"

extern __shared__ __align__(16) unsigned char tile_smem[];

template <typename S, typename V>
__device__ __forceinline__ void tile_pass(S *__restrict__ keys, V *__restrict__ values, const PassArgs &a) {
    // Keys stored as S sort as K in registers and shared memory (cuda/words.cuh).
    typedef typename RegisterWord<S>::type K;
    constexpr bool HAS_V = HasValues<V>::value;
    const u32 size = 1u << a.tile_bits;
    K *sk = reinterpret_cast<K *>(tile_smem);
    V *sv = reinterpret_cast<V *>(tile_smem + (size_t)padded_words(a.tile_bits) * sizeof(K));
    const bool encode = (a.transform & ENCODE_ON_LOAD) != 0;
    const bool decode = (a.transform & DECODE_ON_STORE) != 0;
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
        // local merge, bound by memory, loses 30% that way. Only
        // for keys alone of 32-bit registers (u32 and 16-bit keys): the other kernels spill
        // registers with it.
        constexpr bool DIRECT_FITS = sizeof(K) == 4 && !HAS_V;
        const bool direct = DIRECT_FITS && whole && a.mode == MODE_SORT && a.tile_bits >= 5;
        const Direct<K, V, S> out{keys, values, map.origin, encode, decode, a.encoding};
        if (!direct) {
            load_tile<S, V>(keys, values, sk, sv, a, map, whole, quads, encode);
            __syncthreads();
        }

        switch (a.mode) {
        case MODE_SORT:
            sort_tile<K, V, S>(sk, sv, a.tile_bits, out, direct, direct);
            break;
        case MODE_MERGE:
            run_levels<K, V, S>(sk, sv, a.tile_bits, a.tile_bits - 1, 0, false, 0, out, false);
            break;
        default: // GLOBAL: a fused tail on the column bits, then the row bits, a flip first
            if (a.tail_bits != 0) {
                run_levels<K, V, S>(sk, sv, a.tile_bits, a.tail_bits - 1, 0, false, 0, out, false,
                                 a.first_level == 0);
            }
            run_levels<K, V, S>(sk, sv, a.tile_bits, a.tile_bits - 1, a.log_cols, a.first_level == 0,
                             a.log_cols, out, false);
            break;
        }
        if (!direct) { // (a direct sort's last round stored the tile)
            __syncthreads();
            store_tile<S, V>(keys, values, sk, sv, a, map, whole, quads, decode);
        }
        // The next tile's loads overwrite what this tile's stores read.
        __syncthreads();
    }
}

#include "merge_path.cuh"

// Merge passes: E = 2^MERGE_LOG_E outputs per thread for 4-byte elements, half for wider
// ones (their registers: a 16-bit key takes a 32-bit one); src/cuda/plan.rs's `merge_log_e`
// agrees. `merge_rows_pass_*` and
// `merge_rows_split_*` merge rows each on its own (MergeArgs::rows > 1); `merge_search_pass_*`
// (one row) finds its tiles' parts itself, with no `merge_split_*` launch before it.
#define MERGE_KERNEL(KNAME, K, VNAME, V, E)                                                      \
    extern "C" __global__ void __launch_bounds__(MERGE_THREADS, MERGE_BLOCKS_PER_SM)             \
        merge_pass_##KNAME##_##VNAME(const K *src_keys, const V *src_values, K *dst_keys,        \
                                     V *dst_values, const u64 *splits, MergeArgs args) {         \
        merge_pass<K, V, E, false>(src_keys, src_values, dst_keys, dst_values, splits, args);    \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(MERGE_THREADS, MERGE_BLOCKS_PER_SM)             \
        merge_rows_pass_##KNAME##_##VNAME(const K *src_keys, const V *src_values, K *dst_keys,   \
                                          V *dst_values, const u64 *splits, MergeArgs args) {    \
        merge_pass<K, V, E, true>(src_keys, src_values, dst_keys, dst_values, splits, args);     \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(MERGE_THREADS, MERGE_BLOCKS_PER_SM)             \
        merge_search_pass_##KNAME##_##VNAME(const K *src_keys, const V *src_values, K *dst_keys, \
                                            V *dst_values, const u64 *splits, MergeArgs args) {  \
        merge_pass<K, V, E, false, true>(src_keys, src_values, dst_keys, dst_values, splits, args); \
    }

MERGE_KERNEL(u32, u32, none, NoValue, (1u << MERGE_LOG_E))
MERGE_KERNEL(u32, u32, u32, u32, (1u << (MERGE_LOG_E - 1)))
MERGE_KERNEL(u32, u32, u64, u64, (1u << (MERGE_LOG_E - 1)))
MERGE_KERNEL(u64, u64, none, NoValue, (1u << (MERGE_LOG_E - 1)))
MERGE_KERNEL(u64, u64, u32, u32, (1u << (MERGE_LOG_E - 1)))
MERGE_KERNEL(u64, u64, u64, u64, (1u << (MERGE_LOG_E - 1)))
MERGE_KERNEL(u16, u16, none, NoValue, (1u << MERGE_LOG_E))
MERGE_KERNEL(u16, u16, u32, u32, (1u << (MERGE_LOG_E - 1)))
MERGE_KERNEL(u16, u16, u64, u64, (1u << (MERGE_LOG_E - 1)))

#define SPLIT_KERNEL(KNAME, K)                                                                   \
    extern "C" __global__ void merge_split_##KNAME(const K *keys, u64 *splits, MergeArgs args) { \
        merge_split<K, false>(keys, splits, args);                                               \
    }                                                                                            \
    extern "C" __global__ void merge_rows_split_##KNAME(const K *keys, u64 *splits, MergeArgs args) { \
        merge_split<K, true>(keys, splits, args);                                                \
    }

SPLIT_KERNEL(u32, u32)
SPLIT_KERNEL(u64, u64)
SPLIT_KERNEL(u16, u16)

#if __CUDA_ARCH__ >= 900
#include "cluster.cuh"

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

#include "warp_sort.cuh"

// Warp sorts, see cuda/warp_sort.cuh: one warp (32 threads, no shared memory), and one block
// of 32 << w threads, 1 <= w <= WARP_SORT_MAX_WARPS_LOG, with 4 bytes of dynamic shared
// memory a key.
extern "C" __global__ void __launch_bounds__(32) warp_sort_u32(u32 *keys, PassArgs args) {
    warp_sort<u32, false>(keys, nullptr, args);
}
extern "C" __global__ void __launch_bounds__(32u << WARP_SORT_MAX_WARPS_LOG)
    warps_sort_u32(u32 *keys, PassArgs args) {
    warp_sort<u32, true>(keys, reinterpret_cast<u32 *>(tile_smem), args);
}

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
BITONIC_KERNEL(u16, u16, none, NoValue, 2)
BITONIC_KERNEL(u16, u16, u32, u32, 2)
BITONIC_KERNEL(u16, u16, u64, u64, 1)

// Top-k of keys of at most 32 bits: the tiles and the sort path, the radix selects and
// short rows, and the candidate filter of long rows.
#include "top_k.cuh"
#include "top_k_select.cuh"
#include "top_k_filter.cuh"

// Merges and counts of sorts spread over several devices.
#include "spread.cuh"

// The range scatter of host slices sorted in ranges in one device's memory.
#include "ranges.cuh"

// The counting sort of one row of 16-bit keys alone.
#include "counting.cuh"

// The LSD radix sort of 32- and 64-bit keys (src/schedule/radix.rs).
#include "radix.cuh"
