//! Launch planning for the OpenCL kernels: pure functions from the problem's shape and the
//! device's limits to the list of launches, testable without a device.
//!
//! Each pass of [`Schedule`] becomes one launch (see `kernels/bitonic.cl`):
//! - `Pass::LocalSort` and `Pass::LocalMerge`: `bitonic_tile` over virtual tiles of
//!   `2^log_local` elements in `__local` memory (short rows are packed several to a tile);
//! - `Pass::GlobalMerge` with more levels than a round holds, or with a fused tail
//!   (`tail_bits > 0`, see the schedule's module docs): `bitonic_tile` over tiles of `2^c`
//!   columns by `2^levels` rows, `c >= tail_bits` so that each tile row holds whole runs of
//!   the tail, which runs first, inside the rows;
//! - other `Pass::GlobalMerge`s, of at most `log_e` levels: `bitonic_global`, one register
//!   group per work item straight from global memory (no `__local` round trip, no barrier).
//!
//! Keys alone past one tile (on GPUs past [`GPU_MIN_LOG_MERGE_BYTES`]) and key-value pairs
//! past 8 MiB, in one row, take merge path instead ([`choose`], [`merge_path_plan`]): the
//! network's local sort of every tile, then merge passes of `kernels/merge_path.clh`, as the
//! CUDA backend runs them.

use crate::schedule::merge_path::{
    MergePlan, TiledPass, choose_rows_sort_tile, choose_sort_tile, pair_sort_tile,
};
use crate::schedule::{Pass, Schedule, TileParams, ceil_log2, choose_log_tile};

pub use crate::kernel_contract::{
    DECODE_ON_STORE, ENCODE_ON_LOAD, MERGE_THREADS, MODE_GLOBAL, MODE_MERGE, MODE_SORT,
    merge_local_key_bytes, merge_log_e, padded_words,
};

/// log2 of the elements a work item holds in registers in one round (`LOG_E` of the
/// program; CPU devices get programs with smaller rounds).
pub const LOG_E: u32 = crate::kernel_contract::MAX_LOG_E;
/// A global tile spans at most `2^MAX_LOG_COLS` consecutive columns (128 bytes of `u32`).
pub const MAX_LOG_COLS: u32 = 5;
/// The largest tile: 2^13 elements (32 KiB of `u32` keys).
pub const MAX_LOG_TILE: u32 = 13;
/// Local memory kept free beyond the tile: some drivers report more than a kernel may use
/// (NVIDIA reports 49152 bytes and accepts 48128).
pub const LOCAL_MEM_MARGIN: u64 = 1024;
/// The most work items of a tile work-group.
pub const MAX_TILE_GROUP: usize = 512;
/// Work items of a `bitonic_global` work-group, at most.
pub const MAX_GLOBAL_GROUP: usize = 256;
/// The most work-groups a tile pass launches; the groups loop over the remaining tiles.
const MAX_TILE_GROUPS: u64 = 1 << 16;
/// The most work items a global pass launches; the items loop over the remaining groups.
const MAX_GLOBAL_ITEMS: u64 = 1 << 22;

/// What the plan needs to know about the device and the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `CL_DEVICE_LOCAL_MEM_SIZE`.
    pub local_mem: u64,
    /// Compute units: tiles shrink (not below `2^schedule::MIN_LOG_TILE`) so each gets work.
    pub compute_units: u32,
    /// The largest work-group `bitonic_tile` may be launched with.
    pub tile_group: usize,
    /// The largest work-group `bitonic_global` may be launched with.
    pub global_group: usize,
    /// The largest work-group the merge kernels may be launched with (0: the program has
    /// none).
    pub merge_group: usize,
    /// log2 of the registers per round the program was built with.
    pub log_e: u32,
    /// The largest tile allowed (tests lower it to exercise global passes on short inputs).
    pub max_log_tile: u32,
    /// Launch every pass of a kernel with one work-group size (the largest it needs). PoCL
    /// compiles a kernel anew for every work-group size it meets (seconds each), and a CPU
    /// loses nothing to idle work items; a GPU gets sizes that fit each pass.
    pub uniform_groups: bool,
    /// Merge passes of at most this many output tiles find their tiles' parts inside the
    /// merge kernel instead of launching the splitter ([`OWN_SPLIT_MAX_TILES`]).
    pub own_split_max_tiles: u64,
    /// Keys alone take merge path only where they fill more than half of
    /// `2^min_log_merge_bytes` bytes (and more than one tile): [`GPU_MIN_LOG_MERGE_BYTES`] on
    /// GPUs, 0 on other devices. Key-value pairs follow [`pair_sort_tile`] on every device.
    pub min_log_merge_bytes: u32,
    /// Rows of keys alone (each longer than a tile) take merge path only up to this many
    /// rows: [`GPU_MAX_MERGE_ROWS`] on GPUs, no limit on other devices.
    pub max_merge_rows: u64,
}

/// On GPUs, rows of keys alone longer than a tile take merge path only where there are at
/// most 3 of them; more rows take the network. Measured with NVIDIA's OpenCL on an H200
/// (2026-11-26, `docs/perf.md` change 46, both in one run), merge path was faster for 2 rows
/// of 2^24 `u32` keys (2.74 against 3.00 ms) and 3 of 20001 (0.087 against 0.124 ms), level
/// for 4 of 2^22 (1.31 against 1.30 ms), and slower for 16 of 2^20, 64 of 2^18 and 256 of
/// 2^16 (1.10 against 1.04, 0.88 against 0.79, 0.68 against 0.58 ms), where the network's
/// passes over many rows at once cost less than merge passes without asynchronous copies.
pub const GPU_MAX_MERGE_ROWS: u64 = 3;

/// On GPUs, keys alone take merge path where they fill more than 128 KiB
/// (`ceil(log2(bytes)) >= 18`: from 2^15 + 1 `u32` keys, from 2^14 + 1 `u64` keys), the
/// network below. Measured with NVIDIA's OpenCL on an H100 (2026-11-25, `docs/perf.md`
/// change 33, both in one run), merge path was ahead of the network at every size measured
/// from 2^16 keys on: `u32` 2^16 0.137 against 0.142 ms, 2^20 0.147 against 0.160 ms, 2^22
/// 0.387 against 0.396 ms; `u64` 2^16 0.125 against 0.143 ms, 2^20 0.185 against 0.244 ms.
pub const GPU_MIN_LOG_MERGE_BYTES: u32 = 18;

/// Merge passes of at most 2^10 output tiles (up to 2^22 `u32` keys, 2^21 `u64` keys or
/// pairs) find their tiles' parts inside the merge kernel (`merge_pass_own_splits`), since
/// on NVIDIA's OpenCL a launch costs more than those searches: on an H100 (2026-11-25,
/// `docs/perf.md` change 33) 2^21 `u64` keys took 0.320 ms that way against 0.437 ms with
/// the splitter kernel and 2^21 pairs 0.300 against 0.342 ms, though 2^22 `u32` keys took
/// 0.387 against 0.373 ms. Passes of many tiles keep the splitter, whose searches run all at
/// once (change 30: searching in every tile made 2^28 `u32` keys 1.8x slower).
pub const OWN_SPLIT_MAX_TILES: u64 = 1 << 10;

/// The largest tile whose padded keys and values fit the local memory (less the margin),
/// capped at `limits.max_log_tile`; at least 2 elements.
pub fn max_log_tile(limits: &Limits, element_bytes: u64) -> u32 {
    let budget = limits.local_mem.saturating_sub(LOCAL_MEM_MARGIN);
    let mut bits = limits.max_log_tile.clamp(1, MAX_LOG_TILE);
    while bits > 1 && padded_words(bits) * element_bytes.max(1) > budget {
        bits -= 1;
    }
    bits
}

/// log2 of the columns of a global tile for a device whose largest tile is `2^log_tile`:
/// [`MAX_LOG_COLS`], or half the tile's bits on small devices (so that a global pass still
/// applies several levels).
pub fn log_cols(log_tile: u32) -> u32 {
    MAX_LOG_COLS.min(log_tile / 2)
}

/// The tile parameters of the schedule for a tile of `2^log_tile`.
pub fn tile_params(log_tile: u32) -> TileParams {
    TileParams {
        log_tile,
        max_global_levels: (log_tile - log_cols(log_tile)).max(1),
        fuse_tails: true,
    }
}

/// The shape of one sort: `rows` rows of `row_len` elements, each padded to `2^log_row`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Elements per row (`n` for a plain sort).
    pub row_len: u64,
    /// Rows (1 for a plain sort).
    pub rows: u64,
    /// `ceil(log2(row_len))`.
    pub log_row: u32,
}

impl Shape {
    /// `rows` rows of `row_len` elements.
    pub fn new(row_len: u64, rows: u64) -> Shape {
        Shape {
            row_len,
            rows,
            log_row: ceil_log2(row_len),
        }
    }

    /// Virtual elements of all rows.
    fn virtual_len(&self) -> u64 {
        self.rows << self.log_row
    }
}

/// Which kernel a launch runs, with its pass-specific arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `bitonic_tile`.
    Tile {
        /// Virtual tiles (work-groups loop over them).
        tiles: u64,
        /// `MODE_*`.
        mode: u32,
        /// log2 of a tile's elements.
        log_local: u32,
        /// Local passes: the schedule's tile (`log_tile` of the pass).
        log_net: u32,
        /// Global passes: log2 of the columns.
        c: u32,
        /// Global passes: the lowest global bit.
        lo_g: u32,
        /// Global passes: the levels.
        m: u32,
        /// Global passes: 1 when the first level is the stage's flip.
        flip: u32,
        /// Global passes: the previous stage's half-cleaners on bits `tail-1 .. 0`, run
        /// first inside each tile row (`tail <= c`; 0: none).
        tail: u32,
    },
    /// `bitonic_global`.
    Global {
        /// Register groups (work items loop over them).
        groups: u64,
        /// The lowest global bit.
        lo_g: u32,
        /// The levels (at most `2^log_e`).
        m: u32,
        /// 1 when the first level is the stage's flip.
        flip: u32,
    },
}

/// One kernel launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The kernel and its pass arguments.
    pub kind: Kind,
    /// `ENCODE_ON_LOAD` / `DECODE_ON_STORE` bits.
    pub transform: u32,
    /// Work-groups.
    pub groups: usize,
    /// Work items per work-group.
    pub local: usize,
    /// Words of each `__local` array (tile launches; 0 otherwise).
    pub local_words: u64,
}

/// The largest power of two `<= x` (1 for 0).
pub fn floor_pow2(x: usize) -> usize {
    if x <= 1 {
        1
    } else {
        1 << (usize::BITS - 1 - x.leading_zeros())
    }
}

/// The schedule a sort of `shape` with elements of `element_bytes` runs.
pub fn schedule(limits: &Limits, shape: Shape, element_bytes: u64) -> Schedule {
    let log_tile = choose_log_tile(
        shape.rows,
        shape.log_row,
        max_log_tile(limits, element_bytes),
        limits.compute_units,
    );
    Schedule::new(shape.row_len, tile_params(log_tile))
}

/// Every launch of a sort of `shape` (with `row_len >= 2`) by the network.
pub fn plan(limits: &Limits, shape: Shape, element_bytes: u64) -> Vec<Launch> {
    launches(
        limits,
        shape,
        element_bytes,
        &schedule(limits, shape, element_bytes),
    )
}

/// The launches of `schedule`, a sort of `shape`.
fn launches(limits: &Limits, shape: Shape, element_bytes: u64, schedule: &Schedule) -> Vec<Launch> {
    let max_local = max_log_tile(limits, element_bytes);
    let tile_group = floor_pow2(limits.tile_group.clamp(1, MAX_TILE_GROUP));
    let global_group = floor_pow2(limits.global_group.clamp(1, MAX_GLOBAL_GROUP));
    let virtual_len = shape.virtual_len();
    let last_index = shape.row_len - 1;
    schedule
        .steps()
        .map(|(pass, step)| {
            let mut transform = 0;
            if step.encode_on_load {
                transform |= ENCODE_ON_LOAD;
            }
            if step.decode_on_store {
                transform |= DECODE_ON_STORE;
            }
            let tile_launch = |kind: Kind, log_local: u32, tiles: u64| Launch {
                kind,
                transform,
                groups: tiles.clamp(1, MAX_TILE_GROUPS) as usize,
                local: if limits.uniform_groups {
                    1usize << max_local.saturating_sub(limits.log_e)
                } else {
                    1usize << log_local.saturating_sub(limits.log_e)
                }
                .min(tile_group),
                local_words: padded_words(log_local),
            };
            match pass {
                Pass::LocalSort { log_tile } | Pass::LocalMerge { log_tile } => {
                    // Short rows: several rows to a work-group's tile.
                    let log_local = log_tile.max(max_local.min(ceil_log2(virtual_len)));
                    let tiles = if shape.rows == 1 {
                        shape.row_len.div_ceil(1 << log_local)
                    } else {
                        virtual_len.div_ceil(1 << log_local)
                    };
                    let mode = if matches!(pass, Pass::LocalSort { .. }) {
                        MODE_SORT
                    } else {
                        MODE_MERGE
                    };
                    let kind = Kind::Tile {
                        tiles,
                        mode,
                        log_local,
                        log_net: log_tile,
                        c: 0,
                        lo_g: 0,
                        m: 0,
                        flip: 0,
                        tail: 0,
                    };
                    tile_launch(kind, log_local, tiles)
                }
                Pass::GlobalMerge {
                    stage,
                    first_level,
                    levels,
                    tail_bits,
                } => {
                    let hi = stage - 1 - first_level;
                    let lo_g = hi + 1 - levels;
                    let flip = u32::from(first_level == 0);
                    // Groups (or tiles of 2^c groups) are numbered so that their first element
                    // grows with the number: in a plain sort, stop at the last one that holds
                    // data.
                    let count = |c: u32| {
                        if shape.rows == 1 {
                            let block = last_index >> (hi + 1);
                            let column = (last_index & ((2u64 << hi) - 1)).min((1 << lo_g) - 1);
                            (block << (lo_g - c)) + (column >> c) + 1
                        } else {
                            virtual_len >> (levels + c)
                        }
                    };
                    // A fused tail needs the tile kernel: a register group of bitonic_global
                    // holds one column, the tail's runs are along the columns.
                    if tail_bits == 0 && levels <= limits.log_e {
                        let groups = count(0);
                        let items = groups.clamp(1, MAX_GLOBAL_ITEMS) as usize;
                        let local = if limits.uniform_groups {
                            global_group
                        } else {
                            global_group.min(floor_pow2(items))
                        };
                        Launch {
                            kind: Kind::Global {
                                groups,
                                lo_g,
                                m: levels,
                                flip,
                            },
                            transform,
                            groups: items.div_ceil(local),
                            local,
                            local_words: 0,
                        }
                    } else {
                        // The schedule keeps the tail below the pass's bits (tail_bits <= lo_g)
                        // and beside its levels in its tile (tail_bits + levels <= log_tile),
                        // and log_cols(log_tile) + levels <= log_tile: the tile of 2^(c +
                        // levels) fits the schedule's tile, which fits the local memory.
                        let log_tile = schedule_log_tile(schedule);
                        let c = log_cols(log_tile).min(lo_g).max(tail_bits);
                        debug_assert!(tail_bits <= lo_g, "{pass:?}");
                        debug_assert!(c + levels <= log_tile, "{pass:?}");
                        let tiles = count(c);
                        let kind = Kind::Tile {
                            tiles,
                            mode: MODE_GLOBAL,
                            log_local: c + levels,
                            log_net: 0,
                            c,
                            lo_g,
                            m: levels,
                            flip,
                            tail: tail_bits,
                        };
                        tile_launch(kind, c + levels, tiles)
                    }
                }
            }
        })
        .collect()
}

/// One merge pass: `merge_split` finds where every output tile's part of its two input runs
/// starts, then `merge_pass` merges the parts from one buffer into the other; or, for a pass
/// of few tiles, `merge_pass_own_splits` does both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeLaunch {
    /// log2 of the input runs.
    pub log_run: u32,
    /// log2 of the outputs of one work-group's tile.
    pub tile_bits: u32,
    /// `DECODE_ON_STORE` on the last pass, else 0.
    pub transform: u32,
    /// Output tiles of every row (entries of the splitter buffer this pass fills).
    pub tiles: u64,
    /// Work-groups of `merge_split` (their items loop over the tiles).
    pub split_groups: usize,
    /// Work items per work-group of `merge_split`.
    pub split_local: usize,
    /// Work-groups of `merge_pass` (they loop over the tiles).
    pub groups: usize,
    /// Work items per work-group of `merge_pass`.
    pub local: usize,
    /// Bytes of `merge_pass`'s `__local` keys.
    pub local_bytes: u64,
    /// Bytes of `merge_pass`'s `__local` values (0 for keys alone).
    pub local_value_bytes: u64,
    /// Whether the merge work-groups find their tiles' parts themselves
    /// (`merge_pass_own_splits`, no splitter launch): passes of at most
    /// [`Limits::own_split_max_tiles`] tiles.
    pub own_splits: bool,
}

/// A merge-path sort of one row, or of rows each on its own: the network's local sort of
/// every tile in place (encoding keys), then merge passes that alternate from the data to a
/// scratch buffer and back (an even number, so that the result ends in the data; the last
/// decodes keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergePathPlan {
    /// The tile sort.
    pub tile_sort: Launch,
    /// The rows the tile sort runs on ([`tile_sort_shape`]); the merges merge each of its
    /// rows on its own.
    pub shape: Shape,
    /// The merge passes in order.
    pub merges: Vec<MergeLaunch>,
    /// Entries of the splitter buffer (`u64`): the most output tiles of any pass.
    pub splits: u64,
}

/// What a sort runs: the network's launches, or a tile sort and merge passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SortPlan {
    /// Every pass in place ([`plan`]).
    Network(Vec<Launch>),
    /// [`merge_path_plan`]; needs a scratch buffer as large as the keys and a splitter
    /// buffer.
    MergePath(MergePathPlan),
}

/// log2 of the outputs of one merge work-group: `MERGE_THREADS` work items' worth (fewer
/// where the kernel allows fewer), less where the local memory holds less.
pub fn merge_log_tile(limits: &Limits, key_bytes: u64, value_bytes: u64) -> u32 {
    let budget = limits.local_mem.saturating_sub(LOCAL_MEM_MARGIN);
    let threads = floor_pow2(limits.merge_group.clamp(1, MERGE_THREADS as usize));
    let mut bits = merge_log_e(key_bytes + value_bytes) + threads.trailing_zeros();
    while bits > 1 && merge_local_bytes(bits, key_bytes, value_bytes) > budget {
        bits -= 1;
    }
    bits
}

/// `__local` bytes of a merge work-group of 2^`bits` outputs: the keys with their slack, and
/// the values.
fn merge_local_bytes(bits: u32, key_bytes: u64, value_bytes: u64) -> u64 {
    merge_local_key_bytes(bits, key_bytes) + padded_words(bits) * value_bytes
}

/// The plan of a sort: merge path for one row where [`merge_path_plan`] gives one, and for
/// rows where [`rows_merge_path_plan`] does, unless `oblivious` asks for the network, whose
/// memory accesses depend only on the shape.
pub fn choose(
    limits: &Limits,
    shape: Shape,
    key_bytes: u64,
    value_bytes: u64,
    oblivious: bool,
) -> SortPlan {
    let merge = if oblivious {
        None
    } else if shape.rows > 1 {
        rows_merge_path_plan(limits, shape.row_len, shape.rows, key_bytes, value_bytes)
    } else {
        merge_path_plan(limits, shape.row_len, key_bytes, value_bytes)
    };
    match merge {
        Some(m) => SortPlan::MergePath(m),
        None => SortPlan::Network(plan(limits, shape, key_bytes + value_bytes)),
    }
}

/// The merge-path plan of a sort of `n` keys of `key_bytes` (with values of `value_bytes`,
/// or 0), or `None` where the network sorts it: keys alone of one tile's worth or less
/// ([`choose_sort_tile`]) or fewer bytes than [`Limits::min_log_merge_bytes`] asks for;
/// pairs where [`pair_sort_tile`] says so, the same on every device, or where the device
/// cannot hold its tile; a program without merge kernels; merge tiles too small for a
/// work-group of 32 items.
pub fn merge_path_plan(
    limits: &Limits,
    n: u64,
    key_bytes: u64,
    value_bytes: u64,
) -> Option<MergePathPlan> {
    let element_bytes = key_bytes + value_bytes;
    let max_tile = max_log_tile(limits, element_bytes);
    let sort_tile = if value_bytes == 0 {
        if ceil_log2(n.saturating_mul(key_bytes)) < limits.min_log_merge_bytes {
            return None;
        }
        choose_sort_tile(n, max_tile, limits.compute_units)?
    } else {
        pair_sort_tile(n, element_bytes).filter(|&tile| tile <= max_tile)?
    };
    tiled_merge_path_plan(limits, (n, 1), (key_bytes, value_bytes), sort_tile)
}

/// The merge-path plan of a sort of `rows` rows of `row_len` keys alone of `key_bytes`, each
/// row on its own, or `None` where the network sorts them: rows that fit the network's
/// largest tile (one launch sorts them whole), key-value rows (whose values of equal keys
/// take the network's order on every backend), more rows than [`Limits::max_merge_rows`],
/// and where [`tiled_merge_path_plan`] makes none.
pub fn rows_merge_path_plan(
    limits: &Limits,
    row_len: u64,
    rows: u64,
    key_bytes: u64,
    value_bytes: u64,
) -> Option<MergePathPlan> {
    if value_bytes != 0 || rows > limits.max_merge_rows {
        return None;
    }
    let max_tile = max_log_tile(limits, key_bytes);
    let sort_tile = choose_rows_sort_tile(rows, row_len, max_tile, limits.compute_units)?;
    tiled_merge_path_plan(limits, (row_len, rows), (key_bytes, 0), sort_tile)
}

/// The merge-path plan of a sort of `rows` rows of `n` elements (`(n, rows)`) whose tile
/// sort sorts tiles of `2^sort_tile`, or `None` for a program without merge kernels or
/// merge tiles too small for a work-group of 32 items.
fn tiled_merge_path_plan(
    limits: &Limits,
    (n, rows): (u64, u64),
    (key_bytes, value_bytes): (u64, u64),
    sort_tile: u32,
) -> Option<MergePathPlan> {
    if limits.merge_group == 0 {
        return None;
    }
    let merge_tile = merge_log_tile(limits, key_bytes, value_bytes);
    if merge_tile < merge_log_e(key_bytes + value_bytes) + 5 {
        return None;
    }
    let passes = MergePlan {
        n,
        log_tile: sort_tile,
        log_ways: 1,
    }
    .tiled_passes(merge_tile);
    merge_path_launches(
        limits,
        (n, rows),
        (key_bytes, value_bytes),
        sort_tile,
        passes,
    )
}

/// The launches that sort one chunk of `m` elements of a merge-path sort on its own while
/// the rest of the data uploads ([`crate::schedule::merge_path::upload_chunk`]): the tile
/// sort of its tiles of `2^sort_tile`, then the whole sort's merge passes up to runs of
/// `2^log_chunk` ([`MergePlan::chunk_passes`]), none decoding; `None` where the device makes
/// no merge-path plans. Its tile sort runs on [`tile_sort_shape`]`((m, 1), sort_tile)`.
pub fn chunk_plan(
    limits: &Limits,
    m: u64,
    (key_bytes, value_bytes): (u64, u64),
    sort_tile: u32,
    log_chunk: u32,
) -> Option<MergePathPlan> {
    let merge_tile = merge_log_tile(limits, key_bytes, value_bytes);
    let passes = MergePlan {
        n: m,
        log_tile: sort_tile,
        log_ways: 1,
    }
    .chunk_passes(merge_tile, log_chunk);
    merge_path_launches(limits, (m, 1), (key_bytes, value_bytes), sort_tile, passes)
}

/// The shape a merge-path tile sort of `rows` rows of `n` elements runs on: rows at least
/// one tile long, so that a chunk shorter than a tile is sorted (and encoded) as the whole
/// sort's last tile would be.
pub fn tile_sort_shape((n, rows): (u64, u64), sort_tile: u32) -> Shape {
    Shape {
        row_len: n,
        rows,
        log_row: ceil_log2(n).max(sort_tile),
    }
}

/// The tile sort and the launches of `passes` over each of `rows` rows of `n` elements.
fn merge_path_launches(
    limits: &Limits,
    (n, rows): (u64, u64),
    (key_bytes, value_bytes): (u64, u64),
    sort_tile: u32,
    passes: Vec<TiledPass>,
) -> Option<MergePathPlan> {
    let element_bytes = key_bytes + value_bytes;
    let merge_tile = merge_log_tile(limits, key_bytes, value_bytes);
    let log_e = merge_log_e(element_bytes);
    let shape = tile_sort_shape((n, rows), sort_tile);
    let local_sort = Schedule {
        n,
        log_n: shape.log_row,
        passes: vec![Pass::LocalSort {
            log_tile: sort_tile,
        }],
    };
    let mut tile_sort = *launches(limits, shape, element_bytes, &local_sort).first()?;
    tile_sort.transform = ENCODE_ON_LOAD;
    let split_group = floor_pow2(limits.merge_group.clamp(1, MAX_GLOBAL_GROUP));
    let merges: Vec<MergeLaunch> = passes
        .into_iter()
        .map(|pass| {
            let tiles = pass.tiles * rows;
            let split_local = if limits.uniform_groups {
                split_group
            } else {
                split_group.min(floor_pow2(tiles as usize))
            };
            // A CPU device gets one size for every pass (see `Limits::uniform_groups`):
            // work items past a smaller tile's end idle.
            let local = 1usize
                << (if limits.uniform_groups {
                    merge_tile
                } else {
                    pass.tile_bits
                } - log_e);
            MergeLaunch {
                log_run: pass.log_run,
                tile_bits: pass.tile_bits,
                transform: if pass.last { DECODE_ON_STORE } else { 0 },
                tiles,
                split_groups: tiles.div_ceil(split_local as u64).clamp(1, MAX_TILE_GROUPS) as usize,
                split_local,
                groups: tiles.clamp(1, MAX_TILE_GROUPS) as usize,
                local,
                local_bytes: merge_local_key_bytes(pass.tile_bits, key_bytes),
                local_value_bytes: padded_words(pass.tile_bits) * value_bytes,
                // `group_splits` searches with two halves of the group.
                own_splits: tiles <= limits.own_split_max_tiles && local >= 2,
            }
        })
        .collect();
    let splits = merges.iter().map(|m| m.tiles).max().unwrap_or(0);
    Some(MergePathPlan {
        tile_sort,
        shape,
        merges,
        splits,
    })
}

/// The tile size the schedule was built with (from its first pass).
fn schedule_log_tile(schedule: &Schedule) -> u32 {
    match schedule.passes.first() {
        Some(Pass::LocalSort { log_tile }) => *log_tile,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limits of NVIDIA's OpenCL on an H200.
    fn nvidia_limits() -> Limits {
        Limits {
            local_mem: 49152,
            compute_units: 132,
            tile_group: 1024,
            global_group: 1024,
            merge_group: 1024,
            min_log_merge_bytes: GPU_MIN_LOG_MERGE_BYTES,
            max_merge_rows: GPU_MAX_MERGE_ROWS,
            log_e: LOG_E,
            max_log_tile: MAX_LOG_TILE,
            uniform_groups: false,
            own_split_max_tiles: OWN_SPLIT_MAX_TILES,
        }
    }

    fn nvidia(element_bytes: u64) -> u32 {
        max_log_tile(&nvidia_limits(), element_bytes)
    }

    #[test]
    fn tiles_fit_48_kib_of_local_memory() {
        // (2^S + 2^(S-5)) * bytes <= 48128.
        assert_eq!(nvidia(4), 13);
        assert_eq!(nvidia(8), 12);
        assert_eq!(nvidia(12), 11);
        assert_eq!(nvidia(16), 11);
        for bytes in [4, 8, 12, 16] {
            assert!(padded_words(nvidia(bytes)) * bytes <= 49152 - LOCAL_MEM_MARGIN);
        }
    }

    #[test]
    fn global_tiles_fit_the_local_tile() {
        for log_tile in 1..=MAX_LOG_TILE {
            let p = tile_params(log_tile);
            assert!(p.max_global_levels >= 1);
            assert!(log_cols(log_tile) + p.max_global_levels <= log_tile.max(2));
        }
    }

    #[test]
    fn launches_cover_the_data() {
        let limits = nvidia_limits();
        for (row_len, rows) in [(1u64 << 20, 1u64), ((1 << 20) + 1, 1), (1000, 7), (3, 5)] {
            let shape = Shape::new(row_len, rows);
            for launch in plan(&limits, shape, 4) {
                assert!(launch.local >= 1 && launch.local <= MAX_TILE_GROUP);
                assert!(launch.local_words * 4 <= 48128, "{launch:?}");
                match launch.kind {
                    Kind::Tile {
                        tiles, log_local, ..
                    } => {
                        assert!(tiles << log_local >= row_len, "{launch:?}");
                    }
                    Kind::Global { groups, m, .. } => {
                        assert!(groups << m >= row_len, "{launch:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn fused_tails_take_fewer_launches() {
        // NVIDIA's limits, u32 keys: tiles of 2^13 (2^5 columns, 8 global levels).
        let limits = nvidia_limits();
        // (log2 n, launches unfused, launches fused)
        for (l, unfused, fused) in [(20, 15, 12), (24, 26, 21)] {
            let shape = Shape::new(1 << l, 1);
            let log_tile = schedule_log_tile(&schedule(&limits, shape, 4));
            assert_eq!(log_tile, 13);
            let mut params = tile_params(log_tile);
            params.fuse_tails = false;
            assert_eq!(Schedule::new(1 << l, params).passes.len(), unfused, "2^{l}");
            let launches = plan(&limits, shape, 4);
            assert_eq!(launches.len(), fused, "2^{l}");
            let mut tails = 0;
            for launch in &launches {
                if let Kind::Tile {
                    mode,
                    log_local,
                    c,
                    m,
                    flip,
                    tail,
                    ..
                } = launch.kind
                    && tail > 0
                {
                    // On the tile kernel, each row holding whole runs of the tail.
                    assert_eq!((mode, flip), (MODE_GLOBAL, 1), "{launch:?}");
                    assert!(tail <= c && c + m == log_local, "{launch:?}");
                    assert!(log_local <= log_tile, "{launch:?}");
                    tails += 1;
                }
            }
            assert!(tails >= unfused - fused, "2^{l}: {tails} fused passes");
        }
    }

    #[test]
    fn merge_path_plans_cover_their_tiles() {
        for uniform_groups in [false, true] {
            let limits = Limits {
                uniform_groups,
                ..nvidia_limits()
            };
            for (key_bytes, value_bytes) in [(4u64, 0u64), (8, 0), (4, 4), (4, 8), (8, 4), (8, 8)] {
                for n in [(1u64 << 21) + 1, 3_000_017, 1 << 24, (1 << 28) + 5] {
                    let Some(p) = merge_path_plan(&limits, n, key_bytes, value_bytes) else {
                        panic!("{key_bytes} + {value_bytes} bytes, n {n}: no merge-path plan");
                    };
                    if value_bytes > 0 {
                        // Pairs: the tile every backend sorts.
                        let Kind::Tile { log_net, .. } = p.tile_sort.kind else {
                            panic!("the tile sort is a tile launch")
                        };
                        assert_eq!(Some(log_net), pair_sort_tile(n, key_bytes + value_bytes));
                    }
                    // Encode in the tile sort, decode in the last merge, an even number of
                    // merges so that the result ends in the data.
                    assert_eq!(p.tile_sort.transform, ENCODE_ON_LOAD);
                    assert!(!p.merges.is_empty() && p.merges.len() % 2 == 0, "n {n}");
                    let log_e = merge_log_e(key_bytes + value_bytes);
                    for (i, m) in p.merges.iter().enumerate() {
                        let last = i + 1 == p.merges.len();
                        assert_eq!(m.transform, if last { DECODE_ON_STORE } else { 0 });
                        // Every output of a tile has a work item, and a tile lies inside
                        // one pair of runs.
                        assert!((m.local as u64) << log_e >= 1 << m.tile_bits, "{m:?}");
                        assert!(m.tile_bits <= m.log_run + 1, "{m:?}");
                        assert_eq!(m.tiles, n.div_ceil(1 << m.tile_bits));
                        // Few tiles: no splitter launch.
                        assert_eq!(
                            m.own_splits,
                            m.tiles <= OWN_SPLIT_MAX_TILES && m.local >= 2,
                            "{m:?}"
                        );
                        assert!(
                            m.local_bytes + m.local_value_bytes
                                <= limits.local_mem - LOCAL_MEM_MARGIN
                        );
                        assert_eq!(m.local_value_bytes, padded_words(m.tile_bits) * value_bytes);
                        assert!(m.split_groups >= 1 && m.split_local >= 1 && m.groups >= 1);
                    }
                    assert_eq!(p.merges[0].log_run, {
                        let Kind::Tile { log_net, .. } = p.tile_sort.kind else {
                            panic!("the tile sort is a tile launch")
                        };
                        log_net
                    });
                    let top = p.merges.last().expect("merges").log_run + 1;
                    assert!(1u64 << top >= n && 1u64 << (top - 1) < n, "n {n}");
                }
            }
        }
        // Below the GPU's threshold, or one tile or less: the network.
        assert!(merge_path_plan(&nvidia_limits(), 1 << 15, 4, 0).is_none());
        assert!(merge_path_plan(&nvidia_limits(), (1 << 15) + 1, 4, 0).is_some());
        assert!(merge_path_plan(&nvidia_limits(), 1 << 14, 8, 0).is_none());
        assert!(merge_path_plan(&nvidia_limits(), (1 << 14) + 1, 8, 0).is_some());
        let cpu = Limits {
            min_log_merge_bytes: 0,
            max_merge_rows: u64::MAX,
            ..nvidia_limits()
        };
        assert!(merge_path_plan(&cpu, 1 << 13, 4, 0).is_none());
        assert!(merge_path_plan(&cpu, (1 << 13) + 1, 4, 0).is_some());
        // Pairs follow the one rule of every device, the CPU's included.
        for limits in [nvidia_limits(), cpu] {
            assert!(merge_path_plan(&limits, 1 << 20, 4, 4).is_none());
            assert!(merge_path_plan(&limits, (1 << 20) + 1, 4, 4).is_some());
        }
        // Rows of keys alone longer than a tile: up to 3 rows on a GPU, any number on a CPU;
        // each row merged on its own, the tile sort over all of them.
        let rows = |limits: &Limits, rows: u64, row_len: u64| {
            rows_merge_path_plan(limits, row_len, rows, 4, 0)
        };
        assert!(rows(&nvidia_limits(), 3, 1 << 13).is_none());
        assert!(rows(&nvidia_limits(), 3, 4).is_none());
        assert!(rows(&nvidia_limits(), 4, 1 << 20).is_none());
        assert!(rows(&cpu, 4, 1 << 20).is_some());
        assert!(rows_merge_path_plan(&cpu, 1 << 20, 4, 4, 4).is_none());
        let Some(p) = rows(&nvidia_limits(), 3, 20_001) else {
            panic!("3 rows of 20001 keys take merge path on a GPU");
        };
        assert_eq!((p.shape.row_len, p.shape.rows), (20_001, 3));
        assert_eq!(p.merges.len() % 2, 0);
        for m in &p.merges {
            assert_eq!(m.tiles, 20_001u64.div_ceil(1 << m.tile_bits) * 3);
            assert!(m.tiles <= p.splits);
        }
        // Programs without merge kernels.
        let no_merge = Limits {
            merge_group: 0,
            ..nvidia_limits()
        };
        assert!(merge_path_plan(&no_merge, 1 << 22, 4, 0).is_none());
        assert!(merge_path_plan(&no_merge, 1 << 22, 4, 4).is_none());
    }
}
