//! How the OpenCL kernels run a plan: pure functions from the backend-neutral plan
//! ([`crate::schedule::plan`]) and the device's limits to the launches, testable without a
//! device.
//!
//! Each pass of the network's [`Schedule`] becomes one launch (see `kernels/bitonic.cl`):
//! - `Pass::LocalSort` and `Pass::LocalMerge`: `bitonic_tile` over virtual tiles of
//!   `2^log_local` elements in `__local` memory (short rows are packed several to a tile);
//! - `Pass::GlobalMerge` with more levels than a round holds, or with a fused tail
//!   (`tail_bits > 0`, see the schedule's module docs): `bitonic_tile` over tiles of `2^c`
//!   columns by `2^levels` rows, `c >= tail_bits` so that each tile row holds whole runs of
//!   the tail, which runs first, inside the rows;
//! - other `Pass::GlobalMerge`s, of at most `log_e` levels: `bitonic_global`, one register
//!   group per work item straight from global memory (no `__local` round trip, no barrier).
//!
//! A merge-path plan's tile sort is a `bitonic_tile` launch; each merge pass is a launch of
//! `merge_split` and one of `merge_pass` (`kernels/merge_path.clh`), or, for a pass of few
//! tiles, one launch of `merge_pass_own_splits` (`merge.rs`).

pub(super) use crate::schedule::counting::COUNTING_FROM;
use crate::schedule::counting::{CountingPlan, window_log_for};
use crate::schedule::plan::{self as neutral, DeviceFacts, Widths, network_tile};
use crate::schedule::{Pass, Schedule, TileParams, ceil_log2};

pub(super) use crate::kernel_contract::{
    DECODE_ON_STORE, ENCODE_ON_LOAD, MERGE_THREADS, MODE_GLOBAL, MODE_MERGE, MODE_SORT,
    merge_local_key_bytes, merge_log_e, padded_words,
};
pub(crate) use merge::merge_path_launches;
pub(super) use merge::{MergeLaunch, MergePathPlan, chunk_plan};
pub(super) use radix::{RADIX_GROUP, RadixLaunches, radix_facts};

mod merge;
mod radix;

/// The OpenCL backend's tuned numbers (see [`POLICY`]); the kernels' and drivers' fixed
/// facts are the constants of this module and of `crate::kernel_contract`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpenClPolicy {
    /// A global pass's tile spans at most `2^max_log_cols` consecutive columns (128 bytes
    /// of `u32` keys), and half the tile's bits on devices whose tiles are small, so that a
    /// global pass still applies several levels ([`log_cols`]). Each column bit fewer lets
    /// a pass of the largest tile take one level more, but shortens the runs of consecutive
    /// addresses that its loads and stores make.
    pub max_log_cols: u32,
    /// On GPUs, keys alone take merge path where they fill more than
    /// `2^(gpu_min_log_merge_bytes - 1)` bytes (`ceil(log2(bytes)) >= this`: from 2^15 + 1
    /// `u32` keys, from 2^14 + 1 `u64` keys), the network below. From there on merge path
    /// is ahead at every size measured, by 2-30%, the most for `u64` keys, whose network
    /// passes move twice the bytes a key. Other devices take it from one tile on.
    pub gpu_min_log_merge_bytes: u32,
    /// On GPUs, rows of keys alone longer than a tile take merge path only where there are
    /// at most this many of them; more rows take the network. Merge path is faster for two
    /// or three long rows (by 9-30%), level at four, and slower from 16 rows on (by 6-17%):
    /// the network's passes over many rows at once cost less than merge passes, which have
    /// no asynchronous copies to hide their loads. Other devices merge any number of rows.
    pub gpu_max_merge_rows: u64,
    /// Merge passes of at most this many output tiles (with merge tiles of 2^12 `u32` keys,
    /// up to 2^22 `u32` keys, 2^21 `u64` keys or pairs) find their tiles' parts inside the
    /// merge kernel (`merge_pass_own_splits`), since a launch costs more than those
    /// searches: that way 2^21 `u64` keys sort in three quarters of the time and pairs in
    /// seven eighths, while 2^22 `u32` keys lose 4%. Passes of many tiles keep the
    /// splitter, whose searches all run at once: searching in every tile's work-group makes
    /// large sorts nearly twice as slow.
    pub own_split_max_tiles: u64,
    /// One row of 32-bit keys alone (index 0) and of 64-bit keys alone (index 1) takes the
    /// radix sort from this many keys on (up to [`crate::schedule::radix::RADIX_MAX_LEN`]);
    /// `u64::MAX`: never. On NVIDIA's OpenCL the radix sort of random `u32` keys is ahead of
    /// merge path at 2^24 and 2^28 keys (1.6x and 1.7x); that of `u64` keys, which reads
    /// each key twice a digit, at no length measured (`docs/performance.md`, "Key-value
    /// pairs"). Pairs take it where every backend does
    /// ([`crate::schedule::radix::pairs_take_radix`]).
    pub radix_from: [u64; 2],
}

/// The OpenCL backend's tuned numbers.
pub(crate) const POLICY: OpenClPolicy = OpenClPolicy {
    max_log_cols: 5,
    gpu_min_log_merge_bytes: 18,
    gpu_max_merge_rows: 3,
    own_split_max_tiles: 1 << 10,
    radix_from: [1 << 24, u64::MAX],
};

/// [`OpenClPolicy::gpu_min_log_merge_bytes`], under the name the programs' limits use.
pub(crate) const GPU_MIN_LOG_MERGE_BYTES: u32 = POLICY.gpu_min_log_merge_bytes;

/// [`OpenClPolicy::gpu_max_merge_rows`], under the name the programs' limits use.
pub(crate) const GPU_MAX_MERGE_ROWS: u64 = POLICY.gpu_max_merge_rows;

/// log2 of the elements a work item holds in registers in one round (`LOG_E` of the
/// program; CPU devices get programs with smaller rounds).
pub(super) const LOG_E: u32 = crate::kernel_contract::MAX_LOG_E;
/// The largest tile: 2^13 elements (32 KiB of `u32` keys), a tile work-group's most work
/// items ([`MAX_TILE_GROUP`]) with `2^LOG_E` elements each.
pub(super) const MAX_LOG_TILE: u32 = 13;
/// Local memory kept free beyond the tile: some drivers report more than a kernel may use
/// (NVIDIA reports 49152 bytes and accepts 48128).
pub(super) const LOCAL_MEM_MARGIN: u64 = 1024;
/// The most work items of a tile work-group.
pub(super) const MAX_TILE_GROUP: usize = 512;
/// Work items of a `bitonic_global` work-group, at most.
pub(super) const MAX_GLOBAL_GROUP: usize = 256;
/// The most work-groups a tile pass launches; the groups loop over the remaining tiles.
const MAX_TILE_GROUPS: u64 = 1 << 16;
/// The most work items a global pass launches; the items loop over the remaining groups.
const MAX_GLOBAL_ITEMS: u64 = 1 << 22;

/// What the plan needs to know about the device and the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Limits {
    /// `CL_DEVICE_LOCAL_MEM_SIZE`.
    pub local_mem: u64,
    /// Compute units: tiles shrink (not below the schedule's smallest tile) so each gets
    /// work.
    pub compute_units: u32,
    /// The largest work-group `bitonic_tile` may be launched with.
    pub tile_group: usize,
    /// The largest work-group `bitonic_global` may be launched with.
    pub global_group: usize,
    /// The largest work-group the merge kernels may be launched with (0: the program has
    /// none).
    pub merge_group: usize,
    /// The largest work-group the counting sort's kernels may be launched with (0: the
    /// program has none; only the program of 16-bit keys alone has them).
    pub count_group: usize,
    /// The largest window of a counting sort's count work-group, as log2 of its counters
    /// (16; tests lower it to exercise several sweeps where local memory holds every
    /// counter).
    pub max_count_window_log: u32,
    /// One row of 16-bit keys alone takes the counting sort from this many keys on
    /// ([`COUNTING_FROM`]; lower in tests, to reach its edges with short rows).
    pub counting_from: u64,
    /// The largest work-group the radix sort's kernels may be launched with (0: the program
    /// has none; the programs of 32- and 64-bit keys have them). They need [`RADIX_GROUP`].
    pub radix_group: usize,
    /// Keys a work item of a radix tile holds in this program (`RADIX_KPT`; 0 without the
    /// radix kernels).
    pub radix_keys_per_thread: u32,
    /// One row of 32- or 64-bit keys takes the radix sort from this many keys on, by key
    /// width ([`OpenClPolicy::radix_from`]; lower in tests, to reach its edges with short
    /// rows).
    pub radix_from: [u64; 2],
    /// log2 of the registers per round the program was built with.
    pub log_e: u32,
    /// The largest tile allowed (tests lower it to exercise global passes on short inputs).
    pub max_log_tile: u32,
    /// Launch every pass of a kernel with one work-group size (the largest it needs). PoCL
    /// compiles a kernel anew for every work-group size it meets (seconds each), and a CPU
    /// loses nothing to idle work items; a GPU gets sizes that fit each pass.
    pub uniform_groups: bool,
    /// Merge passes of at most this many output tiles find their tiles' parts inside the
    /// merge kernel instead of launching the splitter
    /// ([`OpenClPolicy::own_split_max_tiles`]; 0 in tests).
    pub own_split_max_tiles: u64,
    /// Keys alone take merge path only where they fill more than half of
    /// `2^min_log_merge_bytes` bytes (and more than one tile):
    /// [`OpenClPolicy::gpu_min_log_merge_bytes`] on GPUs, 0 on other devices. Key-value
    /// pairs follow [`crate::schedule::merge_path::pair_sort_tile`] on every device.
    pub min_log_merge_bytes: u32,
    /// Rows of keys alone (each longer than a tile) take merge path only up to this many
    /// rows: [`OpenClPolicy::gpu_max_merge_rows`] on GPUs, no limit on other devices.
    pub max_merge_rows: u64,
}

/// The shape of one sort: `rows` rows of `row_len` elements, each padded to `2^log_row`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shape {
    /// Elements per row (`n` for a plain sort).
    pub row_len: u64,
    /// Rows (1 for a plain sort).
    pub rows: u64,
    /// `ceil(log2(row_len))`.
    pub log_row: u32,
}

impl Shape {
    /// `rows` rows of `row_len` elements.
    pub(super) fn new(row_len: u64, rows: u64) -> Shape {
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
pub(super) enum Kind {
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
pub(super) struct Launch {
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

/// What a sort runs: the network's launches, or a tile sort and merge passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum SortPlan {
    /// Every pass in place ([`plan`]).
    Network(Vec<Launch>),
    /// The tile sort and the merges; needs a scratch buffer as large as the keys and a
    /// splitter buffer.
    MergePath(MergePathPlan),
    /// The counting sort of one row of 16-bit keys alone; needs
    /// [`CountingPlan::scratch_bytes`] of scratch.
    Counting(CountingLaunches),
    /// The radix sort of one row of 32- or 64-bit keys; needs a scratch as large as the
    /// keys (and values) and [`crate::schedule::radix::RadixPlan::state_bytes`] of state.
    Radix(RadixLaunches),
}

/// The largest tile whose padded keys and values fit the local memory (less the margin),
/// capped at `limits.max_log_tile`; at least 2 elements.
pub(super) fn max_log_tile(limits: &Limits, element_bytes: u64) -> u32 {
    let budget = limits.local_mem.saturating_sub(LOCAL_MEM_MARGIN);
    let mut bits = limits.max_log_tile.clamp(1, MAX_LOG_TILE);
    while bits > 1 && padded_words(bits) * element_bytes.max(1) > budget {
        bits -= 1;
    }
    bits
}

/// log2 of the columns of a global tile for a device whose largest tile is `2^log_tile`:
/// `POLICY.max_log_cols`, or half the tile's bits on small devices (so that a global pass
/// still applies several levels).
pub(super) fn log_cols(log_tile: u32) -> u32 {
    POLICY.max_log_cols.min(log_tile / 2)
}

/// The tile parameters of the schedule for a tile of `2^log_tile`.
pub(super) fn tile_params(log_tile: u32) -> TileParams {
    TileParams {
        log_tile,
        max_global_levels: (log_tile - log_cols(log_tile)).max(1),
        fuse_tails: true,
    }
}

/// log2 of the outputs of one merge work-group: `MERGE_THREADS` work items' worth (fewer
/// where the kernel allows fewer), less where the local memory holds less.
pub(super) fn merge_log_tile(limits: &Limits, key_bytes: u64, value_bytes: u64) -> u32 {
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

/// The largest power of two `<= x` (1 for 0).
pub(super) fn floor_pow2(x: usize) -> usize {
    if x <= 1 {
        1
    } else {
        1 << (usize::BITS - 1 - x.leading_zeros())
    }
}

/// What the neutral plan needs to know about this device and program for elements of
/// `key_bytes` and `value_bytes`: its tiles (the same for the network and for tile sorts),
/// its merge kernels, and the device type's thresholds for merge path (in `limits`).
pub(crate) fn facts(limits: &Limits, (key_bytes, value_bytes): (u64, u64)) -> DeviceFacts {
    let max_tile = max_log_tile(limits, key_bytes + value_bytes);
    DeviceFacts {
        max_log_tile: max_tile,
        max_log_sort_tile: max_tile,
        compute_units: limits.compute_units,
        merge_kernels: limits.merge_group != 0,
        merge_log_tile: merge_log_tile(limits, key_bytes, value_bytes),
        min_log_merge_bytes: limits.min_log_merge_bytes,
        max_merge_rows: limits.max_merge_rows,
        whole_row_logs: None,
        count_window_log: (value_bytes == 0 && limits.count_group >= COUNT_GROUP)
            .then(|| count_window_log(limits)),
        counting_from: limits.counting_from,
        radix: radix_facts(limits, (key_bytes, value_bytes)),
    }
}

/// Work items of a counting sort's count, totals and fill work-groups; the starts
/// work-group has `COUNT_STARTS_THREADS` (as many).
pub(super) const COUNT_GROUP: usize = crate::kernel_contract::COUNT_STARTS_THREADS as usize;

/// log2 of the 4-byte counters a count work-group holds in local memory (less the margin
/// every launch leaves), at most [`Limits::max_count_window_log`].
fn count_window_log(limits: &Limits) -> u32 {
    window_log_for(limits.local_mem.saturating_sub(LOCAL_MEM_MARGIN))
        .min(limits.max_count_window_log)
}

/// The counting sort's launches: `count_keys16` (`plan.blocks` work-groups of
/// [`COUNT_GROUP`], with `4 << plan.window_log` bytes of local memory), `count_totals`,
/// `count_starts` (one work-group) and `fill_keys16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CountingLaunches {
    /// The neutral plan.
    pub plan: CountingPlan,
}

/// [`choose`] for a sort of host slices: `schedule::plan::choose_for_upload`'s choice as
/// launches.
pub(super) fn choose_for_upload(
    limits: &Limits,
    shape: Shape,
    key_bytes: u64,
    value_bytes: u64,
    oblivious: bool,
) -> SortPlan {
    let widths = Widths {
        key: key_bytes,
        value: value_bytes,
    };
    let facts = facts(limits, (key_bytes, value_bytes));
    let plan = neutral::choose_for_upload(&facts, shape.row_len, shape.rows, widths, oblivious);
    launches_of(limits, shape, widths, plan)
}

/// The plan of a sort of `shape` with keys of `key_bytes` and values of `value_bytes` (or
/// 0): the neutral plan's choice ([`neutral::choose`]) as launches, unless `oblivious` asks
/// for the network.
pub(super) fn choose(
    limits: &Limits,
    shape: Shape,
    key_bytes: u64,
    value_bytes: u64,
    oblivious: bool,
) -> SortPlan {
    let widths = Widths {
        key: key_bytes,
        value: value_bytes,
    };
    let facts = facts(limits, (key_bytes, value_bytes));
    let plan = neutral::choose(&facts, shape.row_len, shape.rows, widths, oblivious);
    launches_of(limits, shape, widths, plan)
}

/// The launches of the neutral `plan` of a sort of `shape` with elements of these widths.
fn launches_of(limits: &Limits, shape: Shape, widths: Widths, plan: neutral::SortPlan) -> SortPlan {
    let (key_bytes, value_bytes) = (widths.key, widths.value);
    match plan {
        neutral::SortPlan::MergePath(p) => {
            SortPlan::MergePath(merge_path_launches(limits, &p, (key_bytes, value_bytes)))
        }
        neutral::SortPlan::Network { log_tile } => {
            let schedule = Schedule::new(shape.row_len, tile_params(log_tile));
            SortPlan::Network(launches(limits, shape, widths.element(), &schedule))
        }
        neutral::SortPlan::Counting(plan) => SortPlan::Counting(CountingLaunches { plan }),
        neutral::SortPlan::Radix(plan) => SortPlan::Radix(RadixLaunches::new(limits, plan)),
    }
}

/// The schedule the network runs for a sort of `shape` with elements of these widths.
pub(super) fn schedule(limits: &Limits, shape: Shape, widths: (u64, u64)) -> Schedule {
    let log_tile = network_tile(&facts(limits, widths), shape.row_len, shape.rows);
    Schedule::new(shape.row_len, tile_params(log_tile))
}

/// Every launch of the network's sort of `shape` (with `row_len >= 2`) with elements of
/// these widths (key and value bytes).
pub(super) fn plan(limits: &Limits, shape: Shape, widths: (u64, u64)) -> Vec<Launch> {
    let element_bytes = widths.0 + widths.1;
    launches(
        limits,
        shape,
        element_bytes,
        &schedule(limits, shape, widths),
    )
}

/// The launches of `schedule`, a sort of `shape`.
fn launches(limits: &Limits, shape: Shape, element_bytes: u64, schedule: &Schedule) -> Vec<Launch> {
    let schedule_tile = match schedule.passes.first() {
        Some(Pass::LocalSort { log_tile }) => *log_tile,
        _ => 1,
    };
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
            pass_launch(
                limits,
                shape,
                element_bytes,
                (pass, schedule_tile),
                transform,
            )
        })
        .collect()
}

/// The launch of `pass` of a schedule whose tile is `2^schedule_tile`, a sort of `shape`,
/// with `transform`'s key transforms.
fn pass_launch(
    limits: &Limits,
    shape: Shape,
    element_bytes: u64,
    (pass, schedule_tile): (Pass, u32),
    transform: u32,
) -> Launch {
    let max_local = max_log_tile(limits, element_bytes);
    let tile_group = floor_pow2(limits.tile_group.clamp(1, MAX_TILE_GROUP));
    let virtual_len = shape.virtual_len();
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
            let last_index = shape.row_len - 1;
            // Groups (or tiles of 2^c groups) are numbered so that their first element grows
            // with the number: in a plain sort, stop at the last one that holds data.
            let count = |c: u32| {
                if shape.rows == 1 {
                    let block = last_index >> (hi + 1);
                    let column = (last_index & ((2u64 << hi) - 1)).min((1 << lo_g) - 1);
                    (block << (lo_g - c)) + (column >> c) + 1
                } else {
                    virtual_len >> (levels + c)
                }
            };
            // A fused tail needs the tile kernel: a register group of bitonic_global holds
            // one column, the tail's runs are along the columns.
            if tail_bits == 0 && levels <= limits.log_e {
                let global_group = floor_pow2(limits.global_group.clamp(1, MAX_GLOBAL_GROUP));
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
                // The schedule keeps the tail below the pass's bits (tail_bits <= lo_g) and
                // beside its levels in its tile (tail_bits + levels <= log_tile), and
                // log_cols(log_tile) + levels <= log_tile: the tile of 2^(c + levels) fits
                // the schedule's tile, which fits the local memory.
                let log_tile = schedule_tile;
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
}
