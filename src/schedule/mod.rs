//! The pass schedule: the one place that decides which comparators run in which launch.
//!
//! Bitonic sort is data-oblivious, so the whole sort is a fixed list of passes computed from
//! `n` and the device's tile parameters alone. Every backend executes the same list; the CPU
//! emulation in [`emulate()`] executes it exactly as the kernels do (same index arithmetic) and
//! is what the unit tests and the CPU key-value path run.
//!
//! # The network
//! Let `N = 2^L` be the smallest power of two `>= n`. Stage `k` (`1 <= k <= L`) merges sorted
//! runs of `2^(k-1)` into runs of `2^k` with `k` levels. Level 0 is the *flip*: within each
//! block of `2^k`, index `i` (bit `k-1` clear) meets its mirror `i ^ (2^k - 1)`. Level `t >= 1`
//! is a *half-cleaner*: `i` (bit `k-1-t` clear) meets `i | 2^(k-1-t)`. Every comparator puts the
//! minimum at the lower index and swaps only when the lower element is strictly greater.
//!
//! Indices `>= n` are virtual padding that behaves as +infinity: a comparator whose upper
//! index is `>= n` is skipped (it could never move anything), so no padding memory exists and
//! equal keys never move into it.
//!
//! # Passes
//! With tiles of `T = 2^S` elements in on-chip memory:
//! - [`Pass::LocalSort`]: stages `1..=S` inside every tile, one launch;
//! - for each stage `k > S`: one or more [`Pass::GlobalMerge`] launches for the levels whose
//!   stride is `>= T` (each thread holds `2^levels` elements in registers), then one
//!   [`Pass::LocalMerge`] for the levels with strides `T/2 .. 1` inside every tile.
//!
//! # Fused tails
//! With [`TileParams::fuse_tails`], a stage's last levels (its half-cleaners on bits
//! `t-1 .. 0`, `t <= S`) do not take a launch of their own: they run at the start of the next
//! stage's first global pass, whose tile is `2^c` consecutive columns (`c >= t`) times
//! `2^levels` rows, so that the columns hold the previous stage's tail and the rows the new
//! stage's first levels. A launch then covers up to `S` levels wherever it crosses a stage
//! boundary. Which launches a sort makes is a small search (`merge_passes`): the fewest
//! launches, then the cheapest register rounds; at `2^28` with `S = 14` the sort takes 26
//! launches instead of 33. A stage ends in a [`Pass::LocalMerge`] only where its tail fills
//! the tile (always the last stage).
//!
//! # Files
//! This module holds the passes and the schedule; `search.rs` the search for the merge
//! launches, `index.rs` the index arithmetic every executor shares, `emulate.rs` the scalar
//! emulation, [`merge_path`] the passes and model of the merge-path design that replaces
//! the global merge stages for large sorts on the GPU backends, `plan.rs` the choice
//! between the two for a sort of some shape on some device (which passes a sort takes;
//! each backend's `plan` module turns them into launches), and `policy.rs` the tuned numbers
//! every backend shares.

/// Device-dependent sizes the schedule is built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileParams {
    /// log2 of the elements one work-group sorts in on-chip memory.
    pub log_tile: u32,
    /// The most levels one global pass applies (each thread holds `2^levels` elements);
    /// `log_tile - max_global_levels` is the fewest columns a global tile has.
    pub max_global_levels: u32,
    /// Whether global passes start with the previous stage's tail (see the module docs);
    /// a backend sets it once its kernels run [`Pass::GlobalMerge::tail_bits`].
    pub fuse_tails: bool,
}

/// One launch of the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pass {
    /// Sort every tile of `2^log_tile` elements completely (stages `1..=log_tile`).
    LocalSort {
        /// log2 of the tile size.
        log_tile: u32,
    },
    /// Apply levels `first_level .. first_level + levels` of stage `stage`, whose strides are
    /// all at least the tile size. Thread `t` holds the `2^levels` elements given by
    /// [`global_index`]. When `tail_bits > 0` (only with `first_level == 0`), the previous
    /// stage's half-cleaners on bits `tail_bits-1 .. 0` run first, inside consecutive runs of
    /// `2^tail_bits` elements.
    GlobalMerge {
        /// The merge stage `k`: blocks of `2^k` elements.
        stage: u32,
        /// The first level applied; level 0 is the flip.
        first_level: u32,
        /// How many levels this pass applies.
        levels: u32,
        /// The previous stage's last levels, run first: its half-cleaners on bits
        /// `tail_bits-1 .. 0` (0: none).
        tail_bits: u32,
    },
    /// Apply the half-cleaner levels with strides `2^(log_tile-1) .. 1` inside every tile.
    LocalMerge {
        /// log2 of the tile size.
        log_tile: u32,
    },
}

/// Whether a pass encodes keys on load and decodes them on store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transform {
    /// Raw keys become ordered bits as they are loaded (the first pass).
    pub encode_on_load: bool,
    /// Ordered bits become raw keys as they are stored (the last pass).
    pub decode_on_store: bool,
}

/// The complete list of passes for one `n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Number of real elements.
    pub n: u64,
    /// `ceil(log2(n))` (0 for n <= 1).
    pub log_n: u32,
    /// The passes in execution order.
    pub passes: Vec<Pass>,
}

impl Schedule {
    /// Builds the schedule for `n` elements. `n <= 1` needs no pass at all.
    ///
    /// # Panics
    /// When `params.max_global_levels` is 0 (a global pass applies at least one level).
    pub fn new(n: u64, params: TileParams) -> Schedule {
        assert!(
            params.max_global_levels >= 1,
            "a global pass applies a level"
        );
        let log_n = ceil_log2(n);
        let mut passes = Vec::new();
        if n > 1 {
            let log_tile = params.log_tile.min(log_n).max(1);
            passes.push(Pass::LocalSort { log_tile });
            passes.extend(merge_passes(log_tile, log_n, params));
        }
        Schedule { n, log_n, passes }
    }

    /// The passes with the key transform each one applies.
    pub fn steps(&self) -> impl Iterator<Item = (Pass, Transform)> + '_ {
        let last = self.passes.len().saturating_sub(1);
        self.passes.iter().enumerate().map(move |(i, &p)| {
            (
                p,
                Transform {
                    encode_on_load: i == 0,
                    decode_on_store: i == last,
                },
            )
        })
    }
}

/// The tile for `rows` rows of virtual length `2^log_row` on a device with `compute_units`
/// multiprocessors or compute units and tiles of at most `2^max_log_tile`: the whole row
/// when it fits and there are several rows or the row is at most
/// `2^POLICY.max_log_single_tile` (one launch); otherwise small enough that every compute
/// unit gets a tile, but not below `2^POLICY.min_log_tile`. Both GPU backends choose their
/// tile here.
pub(crate) fn choose_log_tile(
    rows: u64,
    log_row: u32,
    max_log_tile: u32,
    compute_units: u32,
) -> u32 {
    if log_row <= max_log_tile && (rows > 1 || log_row <= POLICY.max_log_single_tile) {
        return log_row.max(1);
    }
    let log_rows = 63 - rows.max(1).leading_zeros();
    let log_units = 31 - compute_units.max(1).leading_zeros();
    (log_row + log_rows)
        .saturating_sub(log_units)
        .clamp(POLICY.min_log_tile.min(max_log_tile), max_log_tile)
}

/// `ceil(log2(n))`, 0 for n <= 1.
pub fn ceil_log2(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

impl Pass {
    /// How many work items (tiles or register groups) the pass has for `n` elements;
    /// items whose first element is `>= n` have nothing to do and are not counted.
    pub fn items(&self, n: u64) -> u64 {
        match *self {
            Pass::LocalSort { log_tile } | Pass::LocalMerge { log_tile } => {
                n.div_ceil(1u64 << log_tile)
            }
            Pass::GlobalMerge { levels, .. } => {
                // Groups are numbered so that a group's lowest index grows with its number
                // inside each block; counting all of `N >> levels` is simplest and safe.
                let log_n = ceil_log2(n);
                1u64 << (log_n - levels)
            }
        }
    }
}

// Without a GPU backend nothing counts 16-bit keys on a device.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) mod counting;
// Only the CUDA backend sorts in ranges in device memory.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) mod device_ranges;
mod emulate;
mod index;
pub(crate) mod merge_path;
// Without a GPU backend nothing makes launch plans.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) mod plan;
mod policy;
// Without a GPU backend nothing runs a radix sort on a device.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) mod radix;
mod search;
pub(crate) mod top_k;

pub use emulate::emulate;
pub(crate) use emulate::{emulate_merge_path, sort_pairs_stably};
pub use index::{global_index, register_network, tile_comparator};
pub(crate) use policy::POLICY;
use search::merge_passes;

#[cfg(test)]
mod tests;
