//! How the CUDA kernels run a plan: pure functions from the backend-neutral plan
//! (`crate::schedule::plan`) and the device's limits to the launches, testable without a
//! GPU.
//!
//! Each pass of the network's [`Schedule`] becomes one launch of `tile_pass_<K>_<V>` (see
//! `cuda/bitonic.cu`): a block loads a virtual tile of `2^tile_bits` elements into shared
//! memory, applies the pass's levels in rounds of [`LOG_E`] levels, and stores it back. Two
//! kinds of sort of one row are one launch instead: `u32` keys alone of up to
//! `2^MAX_LOG_WARP_SORT`, sorted by one block of warps in registers (`warp_sort_u32`), and,
//! on compute capability 9.0, `u32` keys (alone or with `u32` values) of
//! `2^POLICY.min_cluster_log ..= 2^POLICY.max_cluster_log`, whose whole row is one tile
//! spread over the eight blocks of a thread-block cluster (`cluster_pass_<K>_<V>`). A
//! merge-path plan's tile sort is a `tile_pass` launch; each merge pass is a splitter launch
//! and a merge launch, or one merge launch that searches for its tiles' parts itself
//! (`merge.rs`).

use std::ops::RangeInclusive;

pub(super) use crate::schedule::counting::COUNTING_FROM;
use crate::schedule::counting::{CountingPlan, window_log_for};
use crate::schedule::plan::{self as neutral, DeviceFacts, network_tile};
use crate::schedule::{Pass, Schedule, TileParams, Transform};

pub(super) use crate::kernel_contract::{
    DECODE_ON_STORE, ENCODE_ON_LOAD, MERGE_BLOCKS_PER_SM, MERGE_THREADS, MODE_GLOBAL, MODE_MERGE,
    MODE_SORT, MergeArgs, PassArgs, merge_log_e, merge_shared_bytes, padded_words,
};
pub(super) use crate::schedule::plan::Widths;
pub(crate) use merge::merge_path_launches;
pub(super) use merge::{MergeLaunch, MergePathPlan, chunk_plan};
pub(crate) use radix::RadixLaunches;
pub(in crate::cuda) use radix::{radix_facts, radix_keys_per_thread};

mod merge;
mod radix;

/// The CUDA backend's tuned numbers (see [`POLICY`]); the kernels' fixed facts are the
/// constants of this module and of `crate::kernel_contract`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CudaPolicy {
    /// A global pass's tile spans at least `2^log_cols` consecutive columns, so that a tile
    /// of `2^S` keys takes up to `S - log_cols` levels. Sixteen columns (64 bytes of `u32`
    /// keys, two whole 32-byte sectors) keep every access a whole sector and let a tile of
    /// 2^14 take ten levels where 32 columns let it take nine: a pass fewer per stage with
    /// ten global levels, 2-3% of a sort's time from 2^24 keys on.
    pub log_cols: u32,
    /// One row of `u32` keys sorts on a cluster from `2^min_cluster_log` keys on. Below
    /// that, one block of eight warps is faster (by a fifth at half this size): spreading the
    /// warps over eight multiprocessors gains nothing when each warp's chain of rounds is the
    /// cost, and the cluster's rounds between blocks add theirs.
    pub min_cluster_log: u32,
    /// One row sorts on a cluster up to `2^max_cluster_log` keys: one cluster's tile, sorted
    /// in one launch. A longer row sorts on single blocks: running every pass of a larger
    /// sort on clusters takes a quarter longer at 2^20 keys and half as long again at 2^28.
    /// A cluster's pass has two cluster barriers at which its eight blocks wait for the
    /// slowest, so their memory phases line up instead of interleaving as two single
    /// blocks' loads and rounds do on one multiprocessor.
    pub max_cluster_log: u32,
    /// On a device with clusters, a warp sort takes rows of at most this many `u32` keys
    /// and a cluster the row of exactly `2^MAX_LOG_WARP_SORT`: there the cluster's whole
    /// tile is a little faster (3%) than eight warps, whose shuffle levels share four
    /// schedulers, while shorter rows, which fill a cluster's tile only partly, sort an
    /// eighth to a sixth faster on warps.
    pub max_warp_sort_keys_beside_clusters: u64,
    /// Merge passes of at most this many output tiles find the tiles' starts with a warp
    /// per tile (32 lanes test 32 candidates a round, so a search takes a few rounds of
    /// loads instead of a chain of up to 27); larger passes with a thread per tile, since a
    /// warp per tile's extra memory traffic outweighs the shorter chains once the tiles are
    /// many (a pass of four times this many tiles is slower with warps).
    pub warp_split_max_tiles: u64,
    /// One-row merge passes of at most this many tiles per resident block find their
    /// tiles' parts in the merge kernel ([`MergeLaunch::search`]), with no splitter launch.
    /// Two tiles a block make merge-path sorts of 2^21 to 2^22 keys 4-5% faster than
    /// one; four gain nothing more and lose 4% on 2^22 `u64` keys, where each block's
    /// searches, one before each of its tiles, cost more than the launch they save.
    pub search_max_rounds: u64,
    /// One row of keys alone takes the radix sort from this many keys on, for `u32` and
    /// for `u64` keys: below it, merge path's fewer launches win (the radix sort's are a
    /// histogram, the starts and a pass per digit, whatever the length). Pairs take the
    /// radix sort where every backend does ([`crate::schedule::radix::pairs_take_radix`]):
    /// it is stable, and faster than merge path there.
    pub radix_from: [u64; 2],
    /// Histogram blocks of a radix sort per multiprocessor: enough to keep the loads of one
    /// read of the keys in flight.
    pub radix_histogram_blocks_per_sm: u32,
}

/// The CUDA backend's tuned numbers.
pub(crate) const POLICY: CudaPolicy = CudaPolicy {
    log_cols: 4,
    min_cluster_log: 13,
    max_cluster_log: 16,
    max_warp_sort_keys_beside_clusters: (1 << MAX_LOG_WARP_SORT) - 1,
    warp_split_max_tiles: 1 << 11,
    search_max_rounds: 2,
    radix_from: [1 << 22, 1 << 24],
    radix_histogram_blocks_per_sm: 4,
};

/// Each thread holds `2^LOG_E` elements per round (the CUDA kernels use the contract's
/// largest round).
pub(super) const LOG_E: u32 = crate::kernel_contract::MAX_LOG_E;

/// The largest tile, as log2 of its elements (`2^15` keys of 4 bytes fill 132 KiB).
pub(crate) const MAX_LOG_TILE: u32 = 15;

/// Threads per block, at most (the kernels are compiled with `__launch_bounds__(512)`).
pub(crate) const MAX_THREADS: u32 = 512;

/// Blocks of a cluster (`CLUSTER_BLOCKS` in `cuda/cluster.cuh`, its compiled cluster size),
/// as log2. A cluster's tile is `2^LOG_CLUSTER` slices, one per block.
pub(crate) const LOG_CLUSTER: u32 = 3;

/// The largest warp sort, as log2 of its `u32` keys (`WARP_SORT_LOG +
/// WARP_SORT_MAX_WARPS_LOG` of the contract): each lane holds 32 keys in registers, the
/// levels above them are exchanges between lanes by shuffles (`cuda/warp_sort.cuh`), and
/// only the levels above a warp's 2^10 keys go through shared memory.
pub(crate) const MAX_LOG_WARP_SORT: u32 =
    crate::kernel_contract::WARP_SORT_LOG + crate::kernel_contract::WARP_SORT_MAX_WARPS_LOG;

/// Shared memory the driver reserves per block (1 KiB on Volta and later).
const RESERVED_SHARED_BYTES: u64 = 1024;

/// The device limits the plan is made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct DeviceLimits {
    /// Shared memory one block may use, with the opt-in attribute, in bytes.
    pub shared_bytes_per_block: u32,
    /// The most blocks of a grid's x dimension.
    pub max_grid_x: u32,
    /// Multiprocessors: tiles are kept small enough that every one has work.
    pub multiprocessors: u32,
    /// Whether the module has the thread-block cluster kernels (compute capability 9.0 and
    /// newer), which sort one row of `2^POLICY.min_cluster_log ..= 2^POLICY.max_cluster_log`
    /// elements in one launch.
    pub clusters: bool,
    /// One row of 16-bit keys alone takes the counting sort from this many keys on
    /// ([`COUNTING_FROM`]; lower in tests, to reach its edges with short rows).
    pub counting_from: u64,
    /// One row of 32- or 64-bit keys takes the radix sort from this many keys on; `None`
    /// for the policy's crossovers ([`CudaPolicy::radix_from`]; tests lower it).
    pub radix_from: Option<u64>,
    /// Tests only: nonzero makes some tiles of every radix digit pass wait about this many
    /// nanoseconds, eight times, before they publish their counts ([`RadixLaunches::delay`]).
    pub radix_delay: u32,
}

/// One kernel launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Launch {
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
pub(crate) enum PassKernel {
    /// `tile_pass_<key>_<value>`: blocks each holding a tile.
    Tile,
    /// `cluster_pass_<key>_<value>`: blocks in clusters of `2^LOG_CLUSTER`, each holding a
    /// slice of the `2^tile_bits` tile.
    Cluster,
    /// `warp_sort_u32`: one block of warps sorts the whole row in registers (up to
    /// `2^MAX_LOG_WARP_SORT` keys).
    Warp,
}

/// What a sort runs: the network's launches, or a tile sort and merge passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SortPlan {
    /// Every pass in place ([`plan`]).
    Network(Vec<Launch>),
    /// The tile sort and the merges; they need a scratch buffer as large as the data and a
    /// splitter buffer.
    MergePath(MergePathPlan),
    /// The counting sort of one row of 16-bit keys alone (`cuda/counting.cuh`); it needs
    /// [`CountingPlan::scratch_bytes`] of scratch.
    Counting(CountingLaunches),
    /// The radix sort of one row of 32- or 64-bit keys (`cuda/radix.cuh`); it needs a
    /// scratch as large as the data and [`RadixPlan::state_bytes`] of state.
    Radix(RadixLaunches),
}

/// Threads of a block of the counting sort's count, totals and fill launches
/// (`COUNT_THREADS` in `cuda/counting.cuh`).
pub(crate) const COUNT_THREADS: u32 = 512;

/// The counting sort's launches: `count_keys_u16` (`plan.blocks` blocks, with
/// `4 << plan.window_log` bytes of dynamic shared memory), `count_totals`, `count_starts`
/// and `fill_keys_u16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CountingLaunches {
    /// The neutral plan.
    pub plan: CountingPlan,
    /// `ENCODING_*` bits.
    pub encoding: u32,
}

impl CountingLaunches {
    /// Dynamic shared memory of a count block: its window of 4-byte counters.
    pub(crate) fn count_shared_bytes(&self) -> u32 {
        4 << self.plan.window_log
    }
}

/// log2 of the 4-byte counters a count block holds in the shared memory one block may use.
fn count_window_log(limits: &DeviceLimits) -> u32 {
    window_log_for(u64::from(limits.shared_bytes_per_block))
}

/// Blocks per multiprocessor the kernel for these widths is compiled for (`MIN_BLOCKS` in
/// `cuda/bitonic.cu`): two for `u32` keys alone and for `u32` keys with `u32` values, whose
/// rounds fit 64 registers without spilling, so that one block's loads overlap another's
/// rounds; one for the wider variants, which spill at 64. 16-bit keys count as `u32`.
pub(crate) fn blocks_per_multiprocessor(widths: Widths) -> u32 {
    let widths = widths.on_chip();
    if widths.key == 4 && widths.value <= 4 {
        2
    } else {
        1
    }
}

/// Blocks per multiprocessor the cluster kernel for these widths is compiled for (`u32`
/// keys with or without `u32` values): two for keys alone; one for pairs, which spill at
/// 64 registers.
fn cluster_blocks_per_multiprocessor(widths: Widths) -> u32 {
    if widths.value == 0 { 2 } else { 1 }
}

/// The largest tile whose keys and values fit the shared memory (shared by
/// [`blocks_per_multiprocessor`] blocks), capped at [`MAX_LOG_TILE`] and at `cap` (an
/// experiment's override); at least 2 elements.
pub(crate) fn max_log_tile(limits: &DeviceLimits, widths: Widths, cap: Option<u32>) -> u32 {
    max_log_tile_for(limits, widths, blocks_per_multiprocessor(widths), cap)
}

/// [`max_log_tile`] for `blocks` blocks per multiprocessor.
fn max_log_tile_for(limits: &DeviceLimits, widths: Widths, blocks: u32, cap: Option<u32>) -> u32 {
    let element_bytes = widths.on_chip().element();
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

/// log2 of the outputs of one merge block: `MERGE_THREADS` threads' worth, fewer where the
/// shared memory holds less (`MERGE_BLOCKS_PER_SM` blocks per multiprocessor, as the kernels
/// are compiled for).
pub(crate) fn merge_log_tile(limits: &DeviceLimits, widths: Widths) -> u32 {
    let widths = widths.on_chip();
    let budget = shared_budget(limits, MERGE_BLOCKS_PER_SM);
    let mut bits = merge_log_e(widths.element()) + MERGE_THREADS.trailing_zeros();
    while bits > 1 && merge_shared_bytes(bits, widths.element()) > budget {
        bits -= 1;
    }
    bits
}

/// Row lengths, as `ceil(log2)`, that one cluster sorts whole: `u32` keys alone or with
/// `u32` values (the variants with cluster kernels) from `2^POLICY.min_cluster_log` to
/// `2^POLICY.max_cluster_log`, whose slices (an eighth of the row each) fit a block's share
/// of shared memory; `None` on a device without clusters and for other widths (16-bit keys
/// included: they have no cluster kernel).
fn cluster_logs(
    limits: &DeviceLimits,
    widths: Widths,
    cap: Option<u32>,
) -> Option<RangeInclusive<u32>> {
    if !(limits.clusters && widths.key == 4 && widths.value <= 4) {
        return None;
    }
    let blocks = cluster_blocks_per_multiprocessor(widths);
    let largest_slice = max_log_tile_for(limits, widths, blocks, cap);
    Some(POLICY.min_cluster_log..=POLICY.max_cluster_log.min(largest_slice + LOG_CLUSTER))
}

/// What the neutral plan needs to know about this device for these widths (`cap`: an
/// experiment's override of the largest tile). A tile sort of keys alone runs alone in its
/// launch and may fill a multiprocessor's shared memory with one block (2^15 `u32` keys;
/// the network's passes keep two blocks of 2^14). CUDA has no further thresholds for merge
/// path: it takes every sort of keys alone past one tile, and any number of rows.
pub(crate) fn facts(limits: &DeviceLimits, widths: Widths, cap: Option<u32>) -> DeviceFacts {
    DeviceFacts {
        max_log_tile: max_log_tile(limits, widths, cap),
        max_log_sort_tile: max_log_tile_for(limits, widths, 1, cap),
        compute_units: limits.multiprocessors,
        merge_kernels: true,
        merge_log_tile: merge_log_tile(limits, widths),
        min_log_merge_bytes: 0,
        max_merge_rows: u64::MAX,
        whole_row_logs: cluster_logs(limits, widths, cap),
        count_window_log: (widths.key == 2 && widths.value == 0).then(|| count_window_log(limits)),
        counting_from: limits.counting_from,
        radix: radix_facts(limits, widths),
    }
}

/// The tile parameters the schedule is built from.
pub(crate) fn tile_params(log_tile: u32) -> TileParams {
    TileParams {
        log_tile,
        max_global_levels: log_tile.saturating_sub(POLICY.log_cols).max(1),
        fuse_tails: true,
    }
}

/// The plan of a sort of `rows` rows of `row_len` elements (`row_len >= 2`) of these
/// widths, under `encoding`: the neutral plan's choice (`schedule::plan::choose`) as launches,
/// unless `oblivious` asks for the network. The neutral plan and the launches see the
/// on-chip widths ([`Widths::on_chip`]); the warp and cluster sorts, which exist for `u32`
/// keys alone, the stored ones.
pub(super) fn choose(
    limits: &DeviceLimits,
    row_len: u64,
    rows: u64,
    widths: Widths,
    encoding: u32,
    oblivious: bool,
) -> SortPlan {
    let facts = facts(limits, widths, None);
    let plan = neutral::choose(&facts, row_len, rows, widths.on_chip(), oblivious);
    launches_of(limits, &facts, (row_len, rows), widths, encoding, plan)
}

/// [`choose`] for a sort of host slices: `schedule::plan::choose_for_upload`'s choice as
/// launches.
pub(in crate::cuda) fn choose_for_upload(
    limits: &DeviceLimits,
    row_len: u64,
    rows: u64,
    widths: Widths,
    encoding: u32,
    oblivious: bool,
) -> SortPlan {
    let facts = facts(limits, widths, None);
    let plan = neutral::choose_for_upload(&facts, row_len, rows, widths.on_chip(), oblivious);
    launches_of(limits, &facts, (row_len, rows), widths, encoding, plan)
}

/// The launches of the neutral `plan` of a sort of `shape` (row length, rows) of these widths
/// under `encoding`.
fn launches_of(
    limits: &DeviceLimits,
    facts: &neutral::DeviceFacts,
    (row_len, rows): (u64, u64),
    widths: Widths,
    encoding: u32,
    plan: neutral::SortPlan,
) -> SortPlan {
    match plan {
        neutral::SortPlan::MergePath(p) => {
            SortPlan::MergePath(merge_path_launches(limits, &p, widths.on_chip(), encoding))
        }
        neutral::SortPlan::Network { log_tile } => {
            let shape = (row_len, rows);
            SortPlan::Network(network(limits, facts, shape, log_tile, widths, encoding))
        }
        neutral::SortPlan::Counting(plan) => {
            SortPlan::Counting(CountingLaunches { plan, encoding })
        }
        neutral::SortPlan::Radix(plan) => {
            SortPlan::Radix(RadixLaunches::new(limits, plan, widths.value, encoding))
        }
    }
}

/// Every launch of the network's sort of `rows` rows of `row_len` elements (`row_len >= 2`)
/// of these widths, under `encoding`; `cap` (an experiment's override) caps the tile and
/// turns the warp sort off.
pub(super) fn plan(
    limits: &DeviceLimits,
    row_len: u64,
    rows: u64,
    widths: Widths,
    encoding: u32,
    cap: Option<u32>,
) -> Vec<Launch> {
    let facts = facts(limits, widths, cap);
    let log_tile = network_tile(&facts, row_len, rows);
    if cap.is_some() {
        let chip = widths.on_chip();
        return schedule_launches(limits, &facts, (row_len, rows), log_tile, chip, encoding);
    }
    network(limits, &facts, (row_len, rows), log_tile, widths, encoding)
}

/// The network's launches for a sort of `rows` rows of `row_len` with tiles of
/// `2^log_tile`: one block of warps where [`warp_launch`] fits, the schedule's passes
/// otherwise.
fn network(
    limits: &DeviceLimits,
    facts: &DeviceFacts,
    (row_len, rows): (u64, u64),
    log_tile: u32,
    widths: Widths,
    encoding: u32,
) -> Vec<Launch> {
    match warp_launch(limits, row_len, rows, widths, encoding) {
        Some(launch) => vec![launch],
        None => {
            let chip = widths.on_chip();
            schedule_launches(limits, facts, (row_len, rows), log_tile, chip, encoding)
        }
    }
}

/// The launch that sorts one row of `row_len` `u32` keys alone in one block of warps, where
/// it fits (up to `2^MAX_LOG_WARP_SORT` keys, fewer beside clusters:
/// `POLICY.max_warp_sort_keys_beside_clusters`): `2^(log_n - 10)` warps of 2^10 keys each
/// (one warp below that), with 4 bytes of shared memory a key for their exchanges where
/// there are several. Keys of other widths, pairs and rows take the tile kernel.
fn warp_launch(
    limits: &DeviceLimits,
    row_len: u64,
    rows: u64,
    widths: Widths,
    encoding: u32,
) -> Option<Launch> {
    let log_n = crate::schedule::ceil_log2(row_len);
    let log_warps = log_n.saturating_sub(crate::kernel_contract::WARP_SORT_LOG);
    let fits = log_n <= MAX_LOG_WARP_SORT
        && (!limits.clusters || row_len <= POLICY.max_warp_sort_keys_beside_clusters);
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

/// The launches of the schedule of a sort of `rows` rows of `row_len` with tiles of
/// `2^log_tile`: one cluster's launch where the device sorts the row whole
/// ([`DeviceFacts::whole_row`]), a launch of single blocks per pass otherwise.
fn schedule_launches(
    limits: &DeviceLimits,
    facts: &DeviceFacts,
    (row_len, rows): (u64, u64),
    log_tile: u32,
    widths: Widths,
    encoding: u32,
) -> Vec<Launch> {
    let schedule = Schedule::new(row_len, tile_params(log_tile));
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
        element_bytes: widths.element(),
        cluster: facts.whole_row(row_len, rows),
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
            // As many consecutive columns as the tile holds beside its rows: a pass of few
            // levels still moves whole tiles (blocks of one warp run several times slower
            // than full tiles), and at least `POLICY.log_cols` of them. A fused tail's runs
            // fit: tail_bits <= schedule_tile - levels, and tail_bits <= lo (the tail lies
            // below the stage's levels).
            args.log_cols = lo.min(schedule_tile.saturating_sub(levels).max(POLICY.log_cols));
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
    let threads = (1u64 << block_bits.saturating_sub(LOG_E)).clamp(32, u64::from(MAX_THREADS));
    let most_tiles = u64::from(limits.max_grid_x.max(1)) / per_tile;
    Launch {
        args,
        grid: (tiles.clamp(1, most_tiles.max(1)) * per_tile) as u32,
        block: threads as u32,
        shared_bytes: (padded_words(block_bits) * element_bytes) as u32,
        kernel: if cluster {
            PassKernel::Cluster
        } else {
            PassKernel::Tile
        },
    }
}
