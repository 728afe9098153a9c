//! What a sort runs, whatever the backend: the bitonic network with some tile, or merge path
//! (a tile sort, then two-way merge passes), chosen from the sort's shape and a few facts
//! about the device and its kernels ([`DeviceFacts`]). Each GPU backend's `plan` module fills
//! in the facts from its limits and turns the answer into launches; the passes themselves
//! are the parent module's [`Schedule`](super::Schedule) and [`super::merge_path`]'s.

use std::ops::RangeInclusive;

use super::counting::CountingPlan;
use super::merge_path::{
    MergePlan, TiledPass, choose_rows_sort_tile, choose_sort_tile, pair_sort_tile, upload_chunk,
};
use super::radix::{RADIX_MAX_LEN, RadixPlan, pairs_take_radix};
use super::{ceil_log2, choose_log_tile};
use crate::kernel_contract::merge_log_e;

/// The word widths of a sort's elements: key bytes (2, 4 or 8) and value bytes (0, 4 or 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Widths {
    /// Bytes of a key word.
    pub key: u64,
    /// Bytes of a value word; 0 for keys alone.
    pub value: u64,
}

impl Widths {
    /// Keys alone of `key` bytes.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn keys(key: u64) -> Widths {
        Widths { key, value: 0 }
    }

    /// Bytes of one element, key and value together.
    pub(crate) fn element(self) -> u64 {
        self.key + self.value
    }

    /// The widths as the kernels hold them in registers and on-chip memory: a 16-bit key
    /// is sorted as a 32-bit word (`KEY_STORE_T` in `kernels/words.clh`, `RegisterWord` in
    /// `cuda/words.cuh`), so on-chip budgets and plans count 4 bytes for it; global memory
    /// (the data and the scratch) holds it in 2.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn on_chip(self) -> Widths {
        Widths {
            key: self.key.max(4),
            value: self.value,
        }
    }
}

/// What the plan needs to know about a device, its kernels and its backend's tuned
/// thresholds, for one sort's widths. The backends fill it in (`facts` in their `plan`
/// modules).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DeviceFacts {
    /// log2 of the largest tile the network sorts on chip; also the largest tile sort of a
    /// merge-path sort of pairs or of rows.
    pub max_log_tile: u32,
    /// log2 of the largest tile sort of a merge-path sort of one row of keys alone, which
    /// runs alone in its launch and may take more on-chip memory per block than the
    /// network's passes do.
    pub max_log_sort_tile: u32,
    /// Compute units (multiprocessors): tiles shrink so that every one gets work.
    pub compute_units: u32,
    /// Whether the program has merge kernels; without them every sort runs the network.
    pub merge_kernels: bool,
    /// log2 of the outputs of one merge block (work-group): a merge pass's largest tile.
    pub merge_log_tile: u32,
    /// Keys alone take merge path only where they fill at least
    /// `2^(min_log_merge_bytes - 1) + 1` bytes (`ceil(log2(bytes)) >= this`); 0 for no
    /// threshold beyond one tile.
    pub min_log_merge_bytes: u32,
    /// Rows of keys alone take merge path only up to this many rows.
    pub max_merge_rows: u64,
    /// Lengths of one row, as `ceil(log2(row_len))`, that the backend sorts whole in one
    /// launch spread over several blocks: the network's tile is then the whole row, and keys
    /// alone of these lengths keep the network. `None` where the backend has no such launch.
    pub whole_row_logs: Option<RangeInclusive<u32>>,
    /// Where the backend has the counting sort's kernels for this sort's widths (16-bit
    /// keys alone): log2 of the counters a block holds on chip
    /// ([`CountingPlan::window_log`]). `None` otherwise.
    pub count_window_log: Option<u32>,
    /// One row takes the counting sort from this many keys on
    /// ([`super::counting::COUNTING_FROM`], lower in
    /// tests that reach its edges with short rows).
    pub counting_from: u64,
    /// Where the backend has the radix sort's kernels for this sort's widths: how it runs
    /// them and from which length. `None` otherwise.
    pub radix: Option<RadixFacts>,
}

/// How a backend runs the radix sort ([`super::radix`]) for one sort's widths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RadixFacts {
    /// Keys a thread of a digit pass holds.
    pub keys_per_thread: u32,
    /// One row takes the radix sort from this many keys on (the backend's measured
    /// crossover with merge path; lower in tests).
    pub from: u64,
}

impl DeviceFacts {
    /// Whether `rows` rows of `row_len` are one row that the backend sorts whole in one
    /// launch ([`DeviceFacts::whole_row_logs`]).
    pub(crate) fn whole_row(&self, row_len: u64, rows: u64) -> bool {
        let log_row = ceil_log2(row_len);
        rows == 1
            && self
                .whole_row_logs
                .as_ref()
                .is_some_and(|r| r.contains(&log_row))
    }
}

/// What a sort runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SortPlan {
    /// The bitonic network in place with tiles of `2^log_tile`: the passes of
    /// [`Schedule::new`](super::Schedule::new) with the backend's
    /// [`TileParams`](super::TileParams) for that tile.
    Network {
        /// log2 of the tile.
        log_tile: u32,
    },
    /// The tile sort and the merge passes; they need a scratch buffer as large as the data
    /// and a splitter buffer ([`MergePathPlan::splits`]).
    MergePath(MergePathPlan),
    /// The counting sort of one row of 16-bit keys alone ([`super::counting`]); it needs
    /// [`CountingPlan::scratch_bytes`] of scratch.
    Counting(CountingPlan),
    /// The radix sort of one row of 32- or 64-bit keys ([`super::radix`]); it needs a
    /// scratch as large as the data and [`RadixPlan::state_bytes`] of state.
    Radix(RadixPlan),
}

/// A merge-path sort of one row, or of rows each on its own: the network's local sort of
/// every tile in place (encoding keys), then two-way merge passes that alternate from the
/// data to a scratch buffer and back (an even number for a whole sort, so that the result
/// ends in the data; its last decodes keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MergePathPlan {
    /// Elements of one row (the whole array for a plain sort).
    pub row_len: u64,
    /// Rows, one after another, each merged on its own (1 for a plain sort).
    pub rows: u64,
    /// log2 of the tiles the tile sort sorts: the first merge pass's runs.
    pub sort_tile: u32,
    /// The merge passes in order; `tiles` counts one row's output tiles.
    pub passes: Vec<TiledPass>,
}

impl MergePathPlan {
    /// Entries of the splitter buffer (`u64`): the most output tiles of any pass, over all
    /// rows.
    pub(crate) fn splits(&self) -> u64 {
        self.passes
            .iter()
            .map(|p| p.tiles * self.rows)
            .max()
            .unwrap_or(0)
    }

    /// log2 of the virtual row the tile sort runs on: at least one tile, so that a chunk
    /// shorter than a tile still has its tile sorted (and its keys encoded) as the whole
    /// sort's last tile would.
    pub(crate) fn tile_sort_log_row(&self) -> u32 {
        ceil_log2(self.row_len).max(self.sort_tile)
    }
}

/// The network's tile for a sort of `rows` rows of `row_len`: the whole row where the
/// backend sorts it in one launch ([`DeviceFacts::whole_row`]), the parent module's
/// [`choose_log_tile`] otherwise.
pub(crate) fn network_tile(facts: &DeviceFacts, row_len: u64, rows: u64) -> u32 {
    let log_row = ceil_log2(row_len);
    if facts.whole_row(row_len, rows) {
        log_row
    } else {
        choose_log_tile(rows, log_row, facts.max_log_tile, facts.compute_units)
    }
}

/// The plan of a sort of `rows` rows of `row_len` elements (`row_len >= 2`) of these
/// widths: the counting sort for one row of 16-bit keys alone of at least
/// [`DeviceFacts::counting_from`] keys where the backend has its kernels; the radix sort
/// for one row of 32- or 64-bit keys where the backend has its kernels for the widths,
/// keys alone from [`RadixFacts::from`] to [`RADIX_MAX_LEN`], pairs where
/// [`pairs_take_radix`] says so, the same on every backend; merge path for
/// one row where [`merge_path_plan`] gives one (keys alone that the backend sorts whole in
/// one launch excepted) and for rows where [`rows_merge_path_plan`] does; unless
/// `oblivious` asks for the network, whose memory accesses depend only on the shape.
pub(crate) fn choose(
    facts: &DeviceFacts,
    row_len: u64,
    rows: u64,
    widths: Widths,
    oblivious: bool,
) -> SortPlan {
    if let Some(window_log) = facts.count_window_log
        && !oblivious
        && rows == 1
        && row_len >= facts.counting_from
    {
        return SortPlan::Counting(CountingPlan::new(row_len, facts.compute_units, window_log));
    }
    if let Some(radix) = facts.radix
        && !oblivious
        && rows == 1
        && widths.key >= 4
        && if widths.value == 0 {
            (radix.from..=RADIX_MAX_LEN).contains(&row_len)
        } else {
            pairs_take_radix(row_len, widths.element())
        }
    {
        return SortPlan::Radix(RadixPlan::new(row_len, widths.key, radix.keys_per_thread));
    }
    // Pairs skip the whole-row test: their choice must not depend on the device.
    let merge = if oblivious {
        None
    } else if rows > 1 {
        rows_merge_path_plan(facts, row_len, rows, widths)
    } else if widths.value > 0 || !facts.whole_row(row_len, rows) {
        merge_path_plan(facts, row_len, widths)
    } else {
        None
    };
    match merge {
        Some(m) => SortPlan::MergePath(m),
        None => SortPlan::Network {
            log_tile: network_tile(facts, row_len, rows),
        },
    }
}

/// The plan of a sort of host slices, whose keys cross the bus first: [`choose`]'s, except
/// that one row of keys alone that merge path would sort chunk by chunk while it uploads
/// ([`upload_chunk`]) keeps merge path instead of the radix sort. The chunks' sorts then run
/// while the bus is busy, and the merges left after the upload (four at 2^28 `u32` keys)
/// cost less than the radix sort's passes, which all wait for the last key. Pairs keep the
/// radix sort: its stable order is the same on every backend.
pub(crate) fn choose_for_upload(
    facts: &DeviceFacts,
    row_len: u64,
    rows: u64,
    widths: Widths,
    oblivious: bool,
) -> SortPlan {
    let plan = choose(facts, row_len, rows, widths, oblivious);
    if !matches!(plan, SortPlan::Radix(_)) || widths.value != 0 || rows != 1 {
        return plan;
    }
    let merging = DeviceFacts {
        radix: None,
        ..facts.clone()
    };
    match choose(&merging, row_len, rows, widths, oblivious) {
        SortPlan::MergePath(merge)
            if upload_chunk(row_len, widths.element(), merge.sort_tile).is_some() =>
        {
            SortPlan::MergePath(merge)
        }
        _ => plan,
    }
}

/// The merge-path plan of a sort of one row of `n` elements, or `None` where the network
/// sorts it: keys alone of one tile's worth or less ([`choose_sort_tile`]) or of fewer bytes
/// than [`DeviceFacts::min_log_merge_bytes`] asks for; pairs where [`pair_sort_tile`] says
/// so, the same on every device, or where the device cannot hold that tile; and wherever
/// [`tiled_merge_path_plan`] makes none.
pub(crate) fn merge_path_plan(
    facts: &DeviceFacts,
    n: u64,
    widths: Widths,
) -> Option<MergePathPlan> {
    let sort_tile = if widths.value == 0 {
        if ceil_log2(n.saturating_mul(widths.key)) < facts.min_log_merge_bytes {
            return None;
        }
        choose_sort_tile(n, facts.max_log_sort_tile, facts.compute_units)?
    } else {
        pair_sort_tile(n, widths.element()).filter(|&tile| tile <= facts.max_log_tile)?
    };
    tiled_merge_path_plan(facts, (n, 1), sort_tile, widths)
}

/// The merge-path plan of a sort of `rows` rows of `row_len` keys alone, each row on its
/// own, or `None` where the network sorts them: rows that fit the network's largest tile
/// (one launch sorts them whole), key-value rows (whose values of equal keys take the
/// network's order on every backend), more rows than [`DeviceFacts::max_merge_rows`], and
/// wherever [`tiled_merge_path_plan`] makes none.
pub(crate) fn rows_merge_path_plan(
    facts: &DeviceFacts,
    row_len: u64,
    rows: u64,
    widths: Widths,
) -> Option<MergePathPlan> {
    if widths.value != 0 || rows > facts.max_merge_rows {
        return None;
    }
    let sort_tile = choose_rows_sort_tile(rows, row_len, facts.max_log_tile, facts.compute_units)?;
    tiled_merge_path_plan(facts, (row_len, rows), sort_tile, widths)
}

/// The merge-path plan of a sort of `rows` rows of `n` elements (`(n, rows)`) whose tile
/// sort sorts tiles of `2^sort_tile` (which leaves an even number of merge passes), or
/// `None` for a program without merge kernels or merge tiles too small for a merge block
/// of one warp (32 threads).
pub(crate) fn tiled_merge_path_plan(
    facts: &DeviceFacts,
    (n, rows): (u64, u64),
    sort_tile: u32,
    widths: Widths,
) -> Option<MergePathPlan> {
    if !facts.merge_kernels || facts.merge_log_tile < merge_log_e(widths.element()) + 5 {
        return None;
    }
    let passes = MergePlan {
        n,
        log_tile: sort_tile,
        log_ways: 1,
    }
    .tiled_passes(facts.merge_log_tile);
    Some(MergePathPlan {
        row_len: n,
        rows,
        sort_tile,
        passes,
    })
}

/// The plan that sorts one chunk of `m` elements of a merge-path sort on its own while the
/// rest of the data uploads ([`super::merge_path::upload_chunk`]): the tile sort of its
/// tiles of `2^sort_tile`, then the whole sort's merge passes up to runs of `2^log_chunk`
/// ([`MergePlan::chunk_passes`]), none decoding. Run on the chunk's part of the data and
/// of the scratch, they leave it as the whole sort's passes would; the whole sort's merges
/// of runs of `2^log_chunk` and longer follow once every chunk is sorted. Its splits are
/// the chunk's, no more than the whole sort's.
pub(crate) fn chunk_plan(
    facts: &DeviceFacts,
    m: u64,
    sort_tile: u32,
    log_chunk: u32,
) -> MergePathPlan {
    let passes = MergePlan {
        n: m,
        log_tile: sort_tile,
        log_ways: 1,
    }
    .chunk_passes(facts.merge_log_tile, log_chunk);
    MergePathPlan {
        row_len: m,
        rows: 1,
        sort_tile,
        passes,
    }
}

#[cfg(test)]
mod tests;
