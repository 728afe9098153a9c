//! Launch planning for the CUDA kernels: pure functions from the problem's shape and the
//! device's limits to the list of launches, testable without a GPU.
//!
//! Each pass of [`Schedule`] becomes one launch of `tile_pass_<K>_<V>` (see
//! `cuda/bitonic.cu`): a block loads a virtual tile of `2^tile_bits` elements into shared
//! memory, applies the pass's levels in rounds of [`LOG_E`] levels, and stores it back. On
//! compute capability 9.0, sorts of one row of `2^MIN_CLUSTER_LOG ..= 2^MAX_CLUSTER_LOG`
//! `u32` keys (alone or with `u32` values) are one launch of `cluster_pass_<K>_<V>` instead:
//! the whole row is one tile spread over the eight blocks of a thread-block cluster, which
//! sorts it on eight multiprocessors rather than one block's, or a chain of launches.

use crate::schedule::merge_path::{
    MergePlan, TiledPass, choose_rows_sort_tile, choose_sort_tile, pair_sort_tile,
};
use crate::schedule::{Pass, Schedule, TileParams, Transform, choose_log_tile};

pub use crate::kernel_contract::{
    DECODE_ON_STORE, ENCODE_ON_LOAD, MERGE_BLOCKS_PER_SM, MERGE_THREADS, MODE_GLOBAL, MODE_MERGE,
    MODE_SORT, MergeArgs, PassArgs, merge_log_e, merge_shared_bytes, padded_words,
};

/// Each thread holds `2^LOG_E` elements per round (the CUDA kernels use the contract's
/// largest round).
pub const LOG_E: u32 = crate::kernel_contract::MAX_LOG_E;

/// A global pass's tile spans `2^LOG_COLS` consecutive columns (64 bytes of `u32` keys, two
/// whole 32-byte sectors), so that a tile of `2^S` keys takes up to `S - 4` levels: 16
/// columns instead of 32 saved a pass per stage with 10 global levels and 2-3% of the time
/// from 2^24 on (`docs/perf.md`, change 8).
pub const LOG_COLS: u32 = 4;

/// The largest tile, as log2 of its elements (`2^15` keys of 4 bytes fill 132 KiB).
pub const MAX_LOG_TILE: u32 = 15;

/// Threads per block, at most (the kernels are compiled with `__launch_bounds__(512)`).
#[cfg(test)]
pub const MAX_THREADS: u32 = 512;

/// Blocks of a cluster (`CLUSTER_BLOCKS` in `cuda/cluster.cuh`, its compiled cluster size),
/// as log2. A cluster's tile is `2^LOG_CLUSTER` slices, one per block.
pub const LOG_CLUSTER: u32 = 3;

/// The smallest sort on clusters, as log2 of its elements. At `2^12` (one warp per block)
/// one block of eight warps was faster on the H200 (13.9 against 16.9 us): spreading the
/// warps gains nothing when each warp's chain of rounds is the cost, and the cluster
/// rounds add theirs (`docs/perf.md`, change 15).
pub const MIN_CLUSTER_LOG: u32 = 13;

/// The largest sort on clusters, as log2 of its elements: one cluster's tile, sorted in one
/// launch. Running every pass of larger sorts on clusters lost on the H200 from 2^20 on
/// (2^20: 0.115 against 0.090 ms; 2^28: 35 against 22.6 ms, `docs/perf.md`, change 17), so
/// larger sorts run on single blocks.
pub const MAX_CLUSTER_LOG: u32 = 16;

/// The device limits the plan is made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Shared memory one block may use, with the opt-in attribute, in bytes.
    pub shared_bytes_per_block: u32,
    /// The most blocks of a grid's x dimension.
    pub max_grid_x: u32,
    /// Multiprocessors: tiles are kept small enough that every one has work.
    pub multiprocessors: u32,
    /// Whether the module has the thread-block cluster kernels (compute capability 9.0 and
    /// newer), which sort one row of `2^MIN_CLUSTER_LOG ..= 2^MAX_CLUSTER_LOG` elements in
    /// one launch ([`cluster_schedule`]).
    pub clusters: bool,
}

/// One kernel launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Launch {
    /// The kernel's parameters.
    pub args: PassArgs,
    /// Blocks.
    pub grid: u32,
    /// Threads per block.
    pub block: u32,
    /// Dynamic shared memory in bytes.
    pub shared_bytes: u32,
    /// The kernel it runs.
    pub kernel: PassKernel,
}

/// The kernel of a [`Launch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PassKernel {
    /// `tile_pass_<key>_<value>`: blocks each holding a tile.
    Tile,
    /// `cluster_pass_<key>_<value>`: blocks in clusters of `2^LOG_CLUSTER`, each holding a
    /// slice of the `2^tile_bits` tile.
    Cluster,
    /// `warp_sort_u32`: one block of warps sorts the whole row in registers
    /// ([`MAX_LOG_WARP_SORT`]).
    Warp,
}

/// The largest warp sort, as log2 of its `u32` keys (`WARP_SORT_LOG +
/// WARP_SORT_MAX_WARPS_LOG` of the contract): each lane holds 32 keys in registers, the
/// levels above them are exchanges between lanes by shuffles (`cuda/warp_sort.cuh`), and
/// only the levels above a warp's 2^10 keys go through shared memory.
pub const MAX_LOG_WARP_SORT: u32 =
    crate::kernel_contract::WARP_SORT_LOG + crate::kernel_contract::WARP_SORT_MAX_WARPS_LOG;

/// The launch that sorts one row of `row_len` `u32` keys alone in one block of warps, where
/// it fits ([`MAX_LOG_WARP_SORT`]): `2^(log_n - 10)` warps of 2^10 keys each (one warp below
/// that), with 4 bytes of shared memory a key for their exchanges where there are several.
/// Exactly `2^MAX_LOG_WARP_SORT` keys go to a cluster where the device has them: measured on
/// the H200 (docs/perf.md, change 49), eight warps took 0.0177 ms there against the
/// cluster's 0.0172, while from 5000 to 7600 keys they took 0.0164-0.0176 ms against
/// 0.0195-0.0201 (a cluster's partial tile is slower than its whole one). Keys of other
/// widths, pairs and rows take the tile kernel.
fn warp_launch(
    limits: &DeviceLimits,
    row_len: u64,
    rows: u64,
    widths: Widths,
    encoding: u32,
) -> Option<Launch> {
    let log_n = crate::schedule::ceil_log2(row_len);
    let log_warps = log_n.saturating_sub(crate::kernel_contract::WARP_SORT_LOG);
    let fits = log_n <= MAX_LOG_WARP_SORT && (row_len < 1 << MAX_LOG_WARP_SORT || !limits.clusters);
    (rows == 1 && widths == Widths::keys(4) && fits).then(|| Launch {
        args: PassArgs {
            row_len,
            rows,
            log_row: log_n,
            mode: MODE_SORT,
            tile_bits: log_n,
            stage: 0,
            first_level: 0,
            levels: 0,
            log_cols: 0,
            encoding,
            transform: ENCODE_ON_LOAD | DECODE_ON_STORE,
            tail_bits: 0,
        },
        grid: 1,
        block: 32 << log_warps,
        shared_bytes: if log_warps > 0 { 4 << log_n } else { 0 },
        kernel: PassKernel::Warp,
    })
}

/// The word widths of a sort's elements: key bytes (4 or 8) and value bytes (0, 4 or 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Widths {
    /// Bytes of a key word.
    pub key: u64,
    /// Bytes of a value word; 0 for keys alone.
    pub value: u64,
}

impl Widths {
    /// Keys alone of `key` bytes.
    pub fn keys(key: u64) -> Widths {
        Widths { key, value: 0 }
    }

    /// Bytes of one element, key and value together.
    pub fn element(self) -> u64 {
        self.key + self.value
    }
}

/// Blocks per multiprocessor the kernel for these widths is compiled for (`MIN_BLOCKS` in
/// `cuda/bitonic.cu`): two for `u32` keys alone and for `u32` keys with `u32` values, whose
/// rounds fit 64 registers without spilling, so that one block's loads overlap another's
/// rounds; one for the wider variants, which spill at 64.
pub fn blocks_per_multiprocessor(widths: Widths) -> u32 {
    if widths.key == 4 && widths.value <= 4 {
        2
    } else {
        1
    }
}

/// Blocks per multiprocessor the cluster kernel for these widths is compiled for (`u32`
/// keys with or without `u32` values): two for keys alone; one for pairs, which spill at
/// 64 registers.
pub fn cluster_blocks_per_multiprocessor(widths: Widths) -> u32 {
    if widths.value == 0 { 2 } else { 1 }
}

/// Shared memory the driver reserves per block (1 KiB on Volta and later).
const RESERVED_SHARED_BYTES: u64 = 1024;

/// The largest tile whose keys and values fit the shared memory (shared by
/// [`blocks_per_multiprocessor`] blocks), capped at [`MAX_LOG_TILE`] and at `cap` (an
/// experiment's override); at least 2 elements.
pub fn max_log_tile(limits: &DeviceLimits, widths: Widths, cap: Option<u32>) -> u32 {
    max_log_tile_for(limits, widths, blocks_per_multiprocessor(widths), cap)
}

/// [`max_log_tile`] for `blocks` blocks per multiprocessor.
fn max_log_tile_for(limits: &DeviceLimits, widths: Widths, blocks: u32, cap: Option<u32>) -> u32 {
    let element_bytes = widths.element();
    let budget = shared_budget(limits, blocks);
    let mut bits = MAX_LOG_TILE.min(cap.unwrap_or(MAX_LOG_TILE)).max(1);
    while bits > 1 && padded_words(bits) * element_bytes.max(1) > budget {
        bits -= 1;
    }
    bits
}

/// Shared memory one block may use when `blocks` share a multiprocessor.
fn shared_budget(limits: &DeviceLimits, blocks: u32) -> u64 {
    let per_sm = u64::from(limits.shared_bytes_per_block) + RESERVED_SHARED_BYTES;
    (per_sm / u64::from(blocks.max(1)))
        .saturating_sub(RESERVED_SHARED_BYTES)
        .min(u64::from(limits.shared_bytes_per_block))
}

/// The schedule of a sort on one thread-block cluster, or `None` where it runs on single
/// blocks: one row of `2^MIN_CLUSTER_LOG ..= 2^MAX_CLUSTER_LOG` `u32` keys, alone or with
/// `u32` values (the variants with cluster kernels), whose slices (an eighth of the row
/// each) fit a block's share of shared memory. The tile is the whole row: one launch.
pub fn cluster_schedule(
    limits: &DeviceLimits,
    row_len: u64,
    rows: u64,
    widths: Widths,
    cap: Option<u32>,
) -> Option<Schedule> {
    let log_n = crate::schedule::ceil_log2(row_len);
    let fits = widths.key == 4 && widths.value <= 4;
    let largest_slice = max_log_tile_for(
        limits,
        widths,
        cluster_blocks_per_multiprocessor(widths),
        cap,
    );
    let one_cluster = (MIN_CLUSTER_LOG..=MAX_CLUSTER_LOG).contains(&log_n)
        && log_n <= largest_slice + LOG_CLUSTER;
    (limits.clusters && rows == 1 && fits && one_cluster)
        .then(|| Schedule::new(row_len, tile_params(log_n)))
}

/// The tile parameters the schedule is built from.
pub fn tile_params(log_tile: u32) -> TileParams {
    TileParams {
        log_tile,
        max_global_levels: log_tile.saturating_sub(LOG_COLS).max(1),
        fuse_tails: true,
    }
}

/// Every launch of a sort of `rows` rows of `row_len` elements (`row_len >= 2`) of these
/// widths, under `encoding`.
pub fn plan(
    limits: &DeviceLimits,
    row_len: u64,
    rows: u64,
    widths: Widths,
    encoding: u32,
    cap: Option<u32>,
) -> Vec<Launch> {
    if let Some(launch) =
        warp_launch(limits, row_len, rows, widths, encoding).filter(|_| cap.is_none())
    {
        return vec![launch];
    }
    let element_bytes = widths.element();
    let cluster_schedule = cluster_schedule(limits, row_len, rows, widths, cap);
    let cluster = cluster_schedule.is_some();
    let schedule = cluster_schedule.unwrap_or_else(|| {
        let log_tile = choose_log_tile(
            rows,
            crate::schedule::ceil_log2(row_len),
            max_log_tile(limits, widths, cap),
            limits.multiprocessors,
        );
        Schedule::new(row_len, tile_params(log_tile))
    });
    let schedule_tile = match schedule.passes.first() {
        Some(Pass::LocalSort { log_tile }) => *log_tile,
        _ => 1,
    };
    let shape = Shape {
        row_len,
        rows,
        log_row: schedule.log_n,
        encoding,
        schedule_tile,
        element_bytes,
        cluster,
    };
    schedule
        .steps()
        .map(|(pass, step)| launch(limits, &shape, pass, step))
        .collect()
}

/// What every launch of one sort shares.
#[derive(Clone, Copy)]
struct Shape {
    row_len: u64,
    rows: u64,
    log_row: u32,
    encoding: u32,
    /// The schedule's tile (its local sort's).
    schedule_tile: u32,
    element_bytes: u64,
    cluster: bool,
}

/// The launch of one pass of a sort of `shape`.
fn launch(limits: &DeviceLimits, shape: &Shape, pass: Pass, step: Transform) -> Launch {
    let Shape {
        row_len,
        rows,
        log_row,
        encoding,
        schedule_tile,
        element_bytes,
        cluster,
    } = *shape;
    let mut args = PassArgs {
        row_len,
        rows,
        log_row,
        mode: MODE_SORT,
        tile_bits: 0,
        stage: 0,
        first_level: 0,
        levels: 0,
        log_cols: 0,
        encoding,
        transform: 0,
        tail_bits: 0,
    };
    if step.encode_on_load {
        args.transform |= ENCODE_ON_LOAD;
    }
    if step.decode_on_store {
        args.transform |= DECODE_ON_STORE;
    }
    match pass {
        Pass::LocalSort { log_tile } | Pass::LocalMerge { log_tile } => {
            args.mode = if matches!(pass, Pass::LocalSort { .. }) {
                MODE_SORT
            } else {
                MODE_MERGE
            };
            args.tile_bits = log_tile;
        }
        Pass::GlobalMerge {
            stage,
            first_level,
            levels,
            tail_bits,
        } => {
            let lo = stage - first_level - levels;
            args.mode = MODE_GLOBAL;
            args.stage = stage;
            args.first_level = first_level;
            args.levels = levels;
            args.tail_bits = tail_bits;
            // As many consecutive columns as the tile holds beside its rows: a
            // pass of few levels still moves whole tiles (2^6-element blocks of one
            // warp ran 4x slower than full tiles), and at least LOG_COLS of them.
            // A fused tail's runs fit: tail_bits <= schedule_tile - levels, and
            // tail_bits <= lo (the tail lies below the stage's levels).
            args.log_cols = lo.min(schedule_tile.saturating_sub(levels).max(LOG_COLS));
            debug_assert!(tail_bits <= args.log_cols, "{pass:?}");
            args.tile_bits = args.log_cols + levels;
        }
    }
    // Tiles wholly past the data exit at once; a plain sort does not launch them.
    let tiles = if rows == 1 && args.mode != MODE_GLOBAL {
        row_len.div_ceil(1u64 << args.tile_bits)
    } else {
        (rows << log_row) >> args.tile_bits
    };
    // A cluster's block holds a slice of the tile; its grid is one cluster.
    let (block_bits, per_tile) = if cluster {
        debug_assert!(args.mode == MODE_SORT && tiles == 1, "{pass:?}");
        (args.tile_bits - LOG_CLUSTER, 1u64 << LOG_CLUSTER)
    } else {
        (args.tile_bits, 1)
    };
    let threads = (1u64 << block_bits.saturating_sub(LOG_E)).clamp(32, 512) as u32;
    let most_tiles = u64::from(limits.max_grid_x.max(1)) / per_tile;
    Launch {
        args,
        grid: (tiles.clamp(1, most_tiles.max(1)) * per_tile) as u32,
        block: threads,
        shared_bytes: (padded_words(block_bits) * element_bytes) as u32,
        kernel: if cluster {
            PassKernel::Cluster
        } else {
            PassKernel::Tile
        },
    }
}

/// One merge pass: `merge_split_<K>` finds where every output tile's part of its two input
/// runs starts, then `merge_pass_<K>_<V>` merges the parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MergeLaunch {
    /// Both kernels' parameters.
    pub args: MergeArgs,
    /// Whether the merge kernel finds its tiles' parts itself (`merge_search_pass_<key>_<value>`;
    /// one row, at most [`SEARCH_MAX_ROUNDS`] tiles per resident block), with no splitter
    /// launch; the splitter's shape below is then unused.
    pub search: bool,
    /// Blocks of the splitter kernel.
    pub split_grid: u32,
    /// Threads per block of the splitter kernel.
    pub split_block: u32,
    /// Blocks of the merge kernel.
    pub grid: u32,
    /// Threads per block of the merge kernel.
    pub block: u32,
    /// Dynamic shared memory of the merge kernel in bytes.
    pub shared_bytes: u32,
}

/// A merge-path sort of one row or of rows each on its own: the tile sort in place, then
/// merge passes that alternate from the data to the scratch buffer and back (an even number,
/// so the result ends in the data).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergePathPlan {
    /// The network's local sort of every tile, encoding keys on load.
    pub tile_sort: Launch,
    /// The merge passes in order; the last decodes keys on store.
    pub merges: Vec<MergeLaunch>,
    /// Entries of the splitter buffer (`u64`): the most output tiles of any pass.
    pub splits: u64,
}

/// Merge passes of at most this many output tiles find the tiles' starts with a warp per
/// tile (32 lanes test 32 candidates a round, so a search takes a few rounds of loads
/// instead of a chain of up to 27); larger passes with a thread per tile. Measured on the
/// H200 (2026-11-25, `docs/perf.md` change 27): warps made a pass of 2^11 tiles (2^24 `u32`
/// keys) 3-4 us faster and one of 2^13 or more tiles slower, by their extra memory traffic.
pub const WARP_SPLIT_MAX_TILES: u64 = 1 << 11;

/// One-row merge passes of at most this many tiles per resident block find their tiles' parts
/// in the merge kernel (`MergeLaunch::search`), with no splitter launch. Measured on the H200
/// (2026-11-26, `docs/perf.md` change 50): 2 took `u32` 2^22 from 0.205 to 0.195 ms and `u64`
/// 2^21 from 0.216 to 0.208 ms against 1; 4 gained nothing more at 2^23 and lost at `u64`
/// 2^22 (0.398 against 0.381 ms).
pub const SEARCH_MAX_ROUNDS: u64 = 2;

/// Threads of a block of the merge splitter.
const SPLIT_BLOCK: u32 = 256;

/// log2 of the outputs of one merge block: `MERGE_THREADS` threads' worth, fewer where the
/// shared memory holds less (`MERGE_BLOCKS_PER_SM` blocks per multiprocessor, as the kernels
/// are compiled for).
pub fn merge_log_tile(limits: &DeviceLimits, widths: Widths) -> u32 {
    let budget = shared_budget(limits, MERGE_BLOCKS_PER_SM);
    let mut bits = merge_log_e(widths.element()) + MERGE_THREADS.trailing_zeros();
    while bits > 1 && merge_shared_bytes(bits, widths.element()) > budget {
        bits -= 1;
    }
    bits
}

/// The merge-path plan of a sort of one row of `n` elements, or `None` where the network
/// sorts it: keys alone where [`choose_sort_tile`] says so, key-value pairs where
/// [`pair_sort_tile`] does (and the device holds that tile), and neither where merge tiles
/// would be too small for merge blocks.
pub fn merge_path_plan(
    limits: &DeviceLimits,
    n: u64,
    widths: Widths,
    encoding: u32,
) -> Option<MergePathPlan> {
    let sort_tile = if widths.value == 0 {
        // A tile sort of keys alone may fill a multiprocessor's shared memory with one block
        // (2^15 `u32` keys; the network's passes keep two blocks of 2^14).
        let max_tile = max_log_tile_for(limits, widths, 1, None);
        choose_sort_tile(n, max_tile, limits.multiprocessors)?
    } else {
        let max_tile = max_log_tile(limits, widths, None);
        pair_sort_tile(n, widths.element()).filter(|&tile| tile <= max_tile)?
    };
    tiled_merge_path_plan(limits, (n, 1), sort_tile, widths, encoding)
}

/// The merge-path plan of a sort of `rows` rows of `row_len` keys alone, each row on its
/// own, or `None` where the network sorts them: rows that fit the network's largest tile
/// (one launch sorts them whole), and key-value rows (whose values of equal keys take the
/// network's order on every backend).
pub fn rows_merge_path_plan(
    limits: &DeviceLimits,
    row_len: u64,
    rows: u64,
    widths: Widths,
    encoding: u32,
) -> Option<MergePathPlan> {
    if widths.value != 0 {
        return None;
    }
    let max_tile = max_log_tile(limits, widths, None);
    let sort_tile = choose_rows_sort_tile(rows, row_len, max_tile, limits.multiprocessors)?;
    tiled_merge_path_plan(limits, (row_len, rows), sort_tile, widths, encoding)
}

/// The merge-path plan of a sort of `rows` rows of `n` elements (`(n, rows)`) whose tile
/// sort sorts tiles of `2^sort_tile` (which leaves an even number of merge passes), or
/// `None` where merge tiles would be too small for merge blocks.
pub fn tiled_merge_path_plan(
    limits: &DeviceLimits,
    (n, rows): (u64, u64),
    sort_tile: u32,
    widths: Widths,
    encoding: u32,
) -> Option<MergePathPlan> {
    let merge_tile = merge_log_tile(limits, widths);
    if merge_tile < merge_log_e(widths.element()) + 5 {
        return None;
    }
    let plan = MergePlan {
        n,
        log_tile: sort_tile,
        log_ways: 1,
    };
    let passes = plan.tiled_passes(merge_tile);
    Some(merge_path_launches(
        limits,
        (n, rows),
        sort_tile,
        passes,
        widths,
        encoding,
    ))
}

/// The launches that sort one chunk of `m` elements of a merge-path sort on its own while
/// the rest of the data uploads ([`crate::schedule::merge_path::upload_chunk`]): the tile
/// sort of its tiles of `2^sort_tile`, then the whole sort's merge passes up to runs of
/// `2^log_chunk` ([`MergePlan::chunk_passes`]), none decoding. Run on the chunk's part of
/// the data and of the scratch, they leave it as the whole sort's passes would; the whole
/// sort's merges of runs of `2^log_chunk` and longer follow once every chunk is sorted. Its
/// `splits` are the chunk's, no more than the whole sort's.
pub fn chunk_plan(
    limits: &DeviceLimits,
    m: u64,
    sort_tile: u32,
    log_chunk: u32,
    widths: Widths,
    encoding: u32,
) -> MergePathPlan {
    let plan = MergePlan {
        n: m,
        log_tile: sort_tile,
        log_ways: 1,
    };
    let passes = plan.chunk_passes(merge_log_tile(limits, widths), log_chunk);
    merge_path_launches(limits, (m, 1), sort_tile, passes, widths, encoding)
}

/// The tile sort of `rows` rows of `n` elements in tiles of `2^sort_tile` and the launches
/// of `passes` over each row, with the splitter entries the largest pass needs.
fn merge_path_launches(
    limits: &DeviceLimits,
    (n, rows): (u64, u64),
    sort_tile: u32,
    passes: Vec<TiledPass>,
    widths: Widths,
    encoding: u32,
) -> MergePathPlan {
    let merges = merge_launches(limits, (n, rows), passes, widths, encoding);
    let splits = merges
        .iter()
        .map(|m| n.div_ceil(1 << m.args.tile_bits) * rows)
        .max()
        .unwrap_or(0);
    MergePathPlan {
        tile_sort: tile_sort_launch(limits, (n, rows), sort_tile, widths, encoding),
        merges,
        splits,
    }
}

/// The tile sort of a merge-path sort of `rows` rows of `n` elements: every tile of
/// `2^sort_tile` sorted on chip, keys encoded as they are loaded.
fn tile_sort_launch(
    limits: &DeviceLimits,
    (n, rows): (u64, u64),
    sort_tile: u32,
    widths: Widths,
    encoding: u32,
) -> Launch {
    // At least one tile's row: a chunk shorter than a tile still has its one tile sorted
    // (and its keys encoded), as the whole sort's last tile would be.
    let shape = Shape {
        row_len: n,
        rows,
        log_row: crate::schedule::ceil_log2(n).max(sort_tile),
        encoding,
        schedule_tile: sort_tile,
        element_bytes: widths.element(),
        cluster: false,
    };
    launch(
        limits,
        &shape,
        Pass::LocalSort {
            log_tile: sort_tile,
        },
        Transform {
            encode_on_load: true,
            decode_on_store: false,
        },
    )
}

/// The launches of two-way merge passes over `rows` rows of `n` elements.
fn merge_launches(
    limits: &DeviceLimits,
    (n, rows): (u64, u64),
    passes: Vec<TiledPass>,
    widths: Widths,
    encoding: u32,
) -> Vec<MergeLaunch> {
    let log_e = merge_log_e(widths.element());
    let grid_of = |items: u64| items.clamp(1, u64::from(limits.max_grid_x.max(1))) as u32;
    // Merge blocks loop over their tiles, loading the next while merging the current one:
    // as many blocks as are resident at once (MERGE_BLOCKS_PER_SM of MERGE_THREADS threads
    // per multiprocessor, as the kernels are compiled for, or more of fewer threads).
    let resident = |block: u32| {
        u64::from(limits.multiprocessors.max(1))
            * u64::from(MERGE_BLOCKS_PER_SM * MERGE_THREADS / block.max(1))
    };
    passes
        .into_iter()
        .map(|pass| {
            let (tiles, block) = (pass.tiles * rows, 1u32 << (pass.tile_bits - log_e));
            MergeLaunch {
                search: rows == 1 && tiles <= resident(block) * SEARCH_MAX_ROUNDS,
                args: MergeArgs {
                    n,
                    rows,
                    log_run: pass.log_run,
                    tile_bits: pass.tile_bits,
                    encoding,
                    transform: if pass.last { DECODE_ON_STORE } else { 0 },
                },
                // The kernel searches with a warp per tile when it has 32 threads per tile.
                split_grid: grid_of(
                    (tiles * if tiles <= WARP_SPLIT_MAX_TILES { 32 } else { 1 })
                        .div_ceil(u64::from(SPLIT_BLOCK)),
                ),
                split_block: SPLIT_BLOCK,
                grid: grid_of(tiles.min(resident(block))),
                block,
                shared_bytes: merge_shared_bytes(pass.tile_bits, widths.element()) as u32,
            }
        })
        .collect()
}

/// What a sort runs: the network's launches, or a tile sort and merge passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SortPlan {
    /// Every pass in place ([`plan`]).
    Network(Vec<Launch>),
    /// The tile sort and the merges ([`merge_path_plan`]); they need a scratch buffer as
    /// large as the data and a splitter buffer.
    MergePath(MergePathPlan),
}

/// The plan of a sort: merge path for one row that is neither one tile nor one cluster's
/// (for key-value pairs, one past [`pair_sort_tile`]'s threshold, the same on every
/// backend) and for rows of keys alone longer than a tile ([`rows_merge_path_plan`]), unless
/// `oblivious` asks for the network (whose memory accesses depend only on the shape).
pub fn choose(
    limits: &DeviceLimits,
    row_len: u64,
    rows: u64,
    widths: Widths,
    encoding: u32,
    oblivious: bool,
) -> SortPlan {
    // Pairs skip the cluster test: their choice must not depend on the device.
    let merge = if oblivious {
        None
    } else if rows > 1 {
        rows_merge_path_plan(limits, row_len, rows, widths, encoding)
    } else if widths.value > 0 || cluster_schedule(limits, row_len, rows, widths, None).is_none() {
        merge_path_plan(limits, row_len, widths, encoding)
    } else {
        None
    };
    match merge {
        Some(m) => SortPlan::MergePath(m),
        None => SortPlan::Network(plan(limits, row_len, rows, widths, encoding, None)),
    }
}
