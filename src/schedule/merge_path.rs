//! The merge-path schedule above the tile: tiles of `2^log_tile` keys sorted on chip by the
//! network, then passes that each merge groups of `2^log_ways` sorted runs into one, every
//! output tile finding its part of each input run by [`split`]. The CUDA and OpenCL
//! backends run it with two-way merges for keys alone ([`choose_sort_tile`] says where) and
//! for one array of key-value pairs past `2^(POLICY.pair_min_log_merge_bytes - 1)` bytes
//! ([`pair_sort_tile`], which the CPU backend follows too) that the radix sort does not
//! take (`super::radix::pairs_take_radix`); the network of this module's
//! parent sorts everything else, and everything in the data-oblivious mode. Which of the
//! two a sort takes is `schedule::plan::choose`'s answer.
//!
//! This file holds the tile sort's choice, the merge passes and the chunks of a sort that
//! sorts while it uploads; `model.rs` the scalar model ([`split`], [`emulate`]) that the
//! kernels of this design are tested against: the splitters of an output rank are exact,
//! and ties go to the lower run first, so that the merges are stable.

use super::POLICY;

/// The tile that a two-way merge-path sort of one row of `n` elements sorts on chip before
/// merging, or `None` where the network sorts it: rows of at most
/// `2^POLICY.max_log_single_tile` (one launch of one tile). The tile is the network's choice
/// for the device ([`super::choose_log_tile`]: every compute unit gets tiles), at most
/// `2^POLICY.max_log_sort_tile`, and one smaller where that leaves an odd number of merge
/// passes, so that the passes, which alternate between the data and a scratch buffer, end in
/// the data.
pub(crate) fn choose_sort_tile(n: u64, max_log_tile: u32, compute_units: u32) -> Option<u32> {
    let log_n = super::ceil_log2(n);
    if log_n <= POLICY.max_log_single_tile {
        return None;
    }
    sort_tile(1, log_n, max_log_tile, compute_units)
}

/// [`choose_sort_tile`] for `rows` rows of `row_len` elements, each sorted on its own, or
/// `None` where the network sorts them: rows that fit its largest tile, `2^max_log_tile`
/// (one launch sorts them whole). The network's tile choice counts every row's tiles.
pub(crate) fn choose_rows_sort_tile(
    rows: u64,
    row_len: u64,
    max_log_tile: u32,
    compute_units: u32,
) -> Option<u32> {
    let log_row = super::ceil_log2(row_len);
    if log_row <= max_log_tile {
        return None;
    }
    sort_tile(rows, log_row, max_log_tile, compute_units)
}

/// The network's tile for `rows` rows of `2^log_row`, at most `2^POLICY.max_log_sort_tile`
/// and one smaller where that leaves an odd number of merge passes; `None` below
/// `2^POLICY.min_log_sort_tile`.
fn sort_tile(rows: u64, log_row: u32, max_log_tile: u32, compute_units: u32) -> Option<u32> {
    if max_log_tile <= POLICY.min_log_sort_tile {
        return None;
    }
    let network = super::choose_log_tile(rows, log_row, max_log_tile, compute_units);
    let top = network.min(POLICY.max_log_sort_tile).min(max_log_tile);
    let tile = if (log_row - top) % 2 == 1 {
        top - 1
    } else {
        top
    };
    (tile >= POLICY.min_log_sort_tile).then_some(tile)
}

/// The tile of a key-value merge-path sort of `n` pairs of `element_bytes` (key and value),
/// or `None` where the network sorts it (below `POLICY.pair_min_log_merge_bytes`): the
/// largest power of two whose pairs fit `2^POLICY.pair_log_tile_bytes` bytes (2^12 pairs of
/// 8 bytes, 2^11 of 12 or 16), one smaller where that leaves an odd number of merge passes.
/// The choice and the tile depend on the length and the widths alone, never on the device,
/// and the order of equal keys' values depends on nothing but the tile: the tile sort's
/// network order inside each tile, then tile by tile (the merges are stable), which the CPU
/// backend reproduces.
pub(crate) fn pair_sort_tile(n: u64, element_bytes: u64) -> Option<u32> {
    if element_bytes == 0
        || super::ceil_log2(n.saturating_mul(element_bytes)) < POLICY.pair_min_log_merge_bytes
    {
        return None;
    }
    let top = ((1u64 << POLICY.pair_log_tile_bytes) / element_bytes).ilog2();
    let log_n = super::ceil_log2(n);
    let tile = if (log_n - top) % 2 == 1 { top - 1 } else { top };
    (log_n > tile).then_some(tile)
}

/// The merge passes of a sort of `n` keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MergePlan {
    /// Keys.
    pub n: u64,
    /// log2 of the tile every block sorts on chip (the first runs).
    pub log_tile: u32,
    /// log2 of the runs one merge pass merges into one (3: eight-way).
    pub log_ways: u32,
}

/// One merge pass: groups of up to `2^log_ways` runs of `2^log_run` keys (the last run of the
/// array may be shorter) merged into runs of `2^(log_run + log_ways)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MergePass {
    /// log2 of the input runs.
    pub log_run: u32,
    /// log2 of the runs merged into one (the last pass may merge fewer).
    pub log_ways: u32,
}

impl MergePlan {
    /// The merge passes in order: none when `n` fits one tile.
    pub(crate) fn passes(&self) -> Vec<MergePass> {
        let levels = super::ceil_log2(self.n.max(1)).saturating_sub(self.log_tile);
        let ways = self.log_ways.max(1);
        (0..levels.div_ceil(ways))
            .map(|p| MergePass {
                log_run: self.log_tile + p * ways,
                log_ways: ways.min(levels - p * ways),
            })
            .collect()
    }
}

/// One two-way merge pass as the kernels run it: output tiles of `2^tile_bits` keys, each
/// merged by one block or work-group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TiledPass {
    /// log2 of the input runs.
    pub log_run: u32,
    /// log2 of a tile's outputs: the kernels' largest, or less so that a tile lies inside
    /// one pair of runs.
    pub tile_bits: u32,
    /// Output tiles (`ceil(n / 2^tile_bits)`).
    pub tiles: u64,
    /// Whether this is the last pass (which decodes keys as it stores them).
    pub last: bool,
}

impl MergePlan {
    /// The two-way passes of this plan (`log_ways` must be 1) with tiles of at most
    /// `2^max_tile_bits` outputs.
    pub(crate) fn tiled_passes(&self, max_tile_bits: u32) -> Vec<TiledPass> {
        debug_assert_eq!(self.log_ways, 1, "the kernels merge two runs at a time");
        let passes = self.passes();
        let count = passes.len();
        passes
            .into_iter()
            .enumerate()
            .map(|(i, pass)| self.tiled_pass(pass.log_run, max_tile_bits, i + 1 == count))
            .collect()
    }

    /// The two-way pass over this plan's `n` elements that merges runs of `2^log_run`, with
    /// tiles of at most `2^max_tile_bits` outputs (fewer, so that a tile lies inside one
    /// pair of runs).
    fn tiled_pass(&self, log_run: u32, max_tile_bits: u32, last: bool) -> TiledPass {
        let tile_bits = max_tile_bits.min(log_run + 1);
        TiledPass {
            log_run,
            tile_bits,
            tiles: self.n.div_ceil(1 << tile_bits),
            last,
        }
    }

    /// The two-way passes that sort one chunk of this plan's `n` elements on its own, with
    /// tiles of at most `2^max_tile_bits` outputs: those of the whole sort whose runs merge
    /// into runs of at most `2^log_chunk`, applied to the chunk alone (a chunk starts at a
    /// multiple of `2^log_chunk`, so the whole sort's runs there are the chunk's). A short
    /// last chunk makes them all, its lone run copied where it has no partner, so that every
    /// chunk ends in the same buffer. None decodes.
    pub(crate) fn chunk_passes(&self, max_tile_bits: u32, log_chunk: u32) -> Vec<TiledPass> {
        (self.log_tile..log_chunk)
            .map(|log_run| self.tiled_pass(log_run, max_tile_bits, false))
            .collect()
    }
}

/// How a host-slice merge-path sort of `n` elements of `element_bytes` (key and value)
/// overlaps its upload: as log2 of a chunk's elements, or `None` where it does not (below
/// `POLICY.min_sort_while_uploading_bytes`). Each chunk of `2^log_chunk` elements (the last
/// may be shorter) is tile-sorted and merged into one run on the device as soon as it has
/// arrived, while the next ones cross the bus; only the merges of runs longer than a chunk
/// wait for the whole upload. A chunk is a quarter of the data rounded up to a power of two
/// (so a quarter to a half of it), or `2^POLICY.log_max_upload_chunk_bytes` bytes, whichever
/// is less, and holds at least one tile of `2^sort_tile`. The passes are those of the whole
/// sort, merely run chunk by chunk ([`MergePlan::chunk_passes`]), so the result is the same
/// bit for bit.
pub(crate) fn upload_chunk(n: u64, element_bytes: u64, sort_tile: u32) -> Option<u32> {
    if element_bytes == 0 || n.saturating_mul(element_bytes) < POLICY.min_sort_while_uploading_bytes
    {
        return None;
    }
    let by_bytes = ((1u64 << POLICY.log_max_upload_chunk_bytes) / element_bytes).ilog2();
    let log_chunk = super::ceil_log2(n).saturating_sub(2).min(by_bytes);
    (log_chunk >= sort_tile).then_some(log_chunk)
}

/// The chunks of a sort that sorts while it uploads ([`upload_chunk`]), handed out in order
/// once they have landed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UploadChunks {
    n: u64,
    log_chunk: u32,
    /// The first element of the next chunk to hand out.
    next: u64,
}

impl UploadChunks {
    /// The chunks of `2^log_chunk` elements (the last may be shorter) of `n` elements.
    pub(crate) fn new(n: u64, log_chunk: u32) -> UploadChunks {
        UploadChunks {
            n,
            log_chunk,
            next: 0,
        }
    }

    /// log2 of a chunk's elements.
    pub(crate) fn log_chunk(&self) -> u32 {
        self.log_chunk
    }

    /// The elements of all chunks together.
    pub(crate) fn total(&self) -> u64 {
        self.n
    }

    /// The next chunk not yet handed out, as (first element, elements), if it lies within the
    /// first `landed` elements.
    pub(crate) fn next_landed(&mut self, landed: u64) -> Option<(u64, u64)> {
        let first = self.next;
        let len = (1u64 << self.log_chunk).min(self.n.saturating_sub(first));
        if len == 0 || first + len > landed {
            return None;
        }
        self.next += len;
        Some((first, len))
    }
}

/// The host model of merge path, the oracle of the tests.
#[cfg(test)]
mod model;

#[cfg(test)]
pub(crate) use model::{emulate, split};

#[cfg(test)]
mod tests;
