//! The merge-path schedule above the tile, and its scalar model: tiles of `2^log_tile` keys
//! sorted on chip by the network, then passes that each merge groups of `2^log_ways` sorted
//! runs into one, every output tile finding its part of each input run by [`split`]
//! (`docs/perf.md`, "Merge path above the tile"). The CUDA and OpenCL backends run it with
//! two-way merges for keys alone ([`choose_sort_tile`] says where) and for one array of
//! key-value pairs past 8 MiB ([`pair_sort_tile`], which the CPU backend follows too); the
//! network of this module's parent sorts everything else, and everything in the
//! data-oblivious mode.
//!
//! [`split`] and [`emulate`] are the reference that kernels of this design are to be tested
//! against: the splitters of an output rank are exact, and ties go to the lower run first, so
//! that the merges are stable.

/// The largest tile sort of a merge-path sort, as log2 of its elements: each doubling of the
/// tile adds `log_tile + 1` network levels on chip and saves one merge pass over memory.
/// Tiles of 2^15 are taken only where 2^14 would leave an odd number of passes (so the
/// choice is between 2^15 and 2^13): on an NVIDIA H100, 2^15 `u32` keys took a quarter more
/// per key than 2^13 or 2^14 to sort on chip, more than one pass saves, but less than two
/// (`docs/perf.md`, change 56).
pub const MAX_LOG_SORT_TILE: u32 = 15;

/// The smallest tile sort of a merge-path sort, as log2 of its elements.
pub const MIN_LOG_SORT_TILE: u32 = 10;

/// The tile that a two-way merge-path sort of one row of `n` elements sorts on chip before
/// merging, or `None` where the network sorts it: rows of at most
/// `2^MAX_LOG_SINGLE_TILE` (one launch of one tile). The tile is the network's choice for
/// the device ([`super::choose_log_tile`]: every compute unit gets tiles), at most
/// `2^MAX_LOG_SORT_TILE`, and one smaller where that leaves an odd number of merge passes,
/// so that the passes, which alternate between the data and a scratch buffer, end in the
/// data.
pub fn choose_sort_tile(n: u64, max_log_tile: u32, compute_units: u32) -> Option<u32> {
    let log_n = super::ceil_log2(n);
    if log_n <= super::MAX_LOG_SINGLE_TILE {
        return None;
    }
    sort_tile(1, log_n, max_log_tile, compute_units)
}

/// [`choose_sort_tile`] for `rows` rows of `row_len` elements, each sorted on its own, or
/// `None` where the network sorts them: rows that fit its largest tile, `2^max_log_tile`
/// (one launch sorts them whole). The network's tile choice counts every row's tiles.
pub fn choose_rows_sort_tile(
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

/// The network's tile for `rows` rows of `2^log_row`, at most `2^MAX_LOG_SORT_TILE` and one
/// smaller where that leaves an odd number of merge passes; `None` below
/// `2^MIN_LOG_SORT_TILE`.
fn sort_tile(rows: u64, log_row: u32, max_log_tile: u32, compute_units: u32) -> Option<u32> {
    if max_log_tile <= MIN_LOG_SORT_TILE {
        return None;
    }
    let network = super::choose_log_tile(rows, log_row, max_log_tile, compute_units);
    let top = network.min(MAX_LOG_SORT_TILE).min(max_log_tile);
    let tile = if (log_row - top) % 2 == 1 {
        top - 1
    } else {
        top
    };
    (tile >= MIN_LOG_SORT_TILE).then_some(tile)
}

/// Key-value sorts take merge path where keys and values together fill more than 8 MiB
/// (`ceil(log2(bytes)) >= PAIR_MIN_LOG_MERGE_BYTES`: from 2^20 + 1 `u32` pairs), on every
/// backend alike, the CPU's included. Merge path puts values of equal keys in another order
/// than the network does, and every backend must put them in the same one: the choice and
/// the tile ([`pair_sort_tile`]) therefore depend on the length and the widths alone, never
/// on the device. 8 MiB is where merge path overtook the network for keys on NVIDIA's OpenCL,
/// the backend with the costliest launches, while every merge pass launched a splitter
/// (`docs/perf.md`, change 29); keys on OpenCL GPUs have since moved to 128 KiB (change 33),
/// but this threshold was not measured again for pairs.
pub const PAIR_MIN_LOG_MERGE_BYTES: u32 = 24;

/// log2 of the bytes of keys and values in the tile sort of a key-value merge-path sort:
/// 32 KiB, the least local memory of an OpenCL device of the full profile, so that every GPU
/// backend can sort the same tiles.
pub const PAIR_LOG_TILE_BYTES: u32 = 15;

/// The tile of a key-value merge-path sort of `n` pairs of `element_bytes` (key and value),
/// or `None` where the network sorts it (see [`PAIR_MIN_LOG_MERGE_BYTES`]): the largest
/// power of two whose pairs fit `2^PAIR_LOG_TILE_BYTES` bytes (2^12 pairs of 8 bytes, 2^11
/// of 12 or 16), one smaller where that leaves an odd number of merge passes. It depends on
/// nothing but its arguments, and the order of equal keys' values depends on nothing but the
/// tile: the tile sort's network order inside each tile, then tile by tile (the merges are
/// stable), which the CPU backend reproduces.
pub fn pair_sort_tile(n: u64, element_bytes: u64) -> Option<u32> {
    if element_bytes == 0
        || super::ceil_log2(n.saturating_mul(element_bytes)) < PAIR_MIN_LOG_MERGE_BYTES
    {
        return None;
    }
    let top = ((1u64 << PAIR_LOG_TILE_BYTES) / element_bytes).ilog2();
    let log_n = super::ceil_log2(n);
    let tile = if (log_n - top) % 2 == 1 { top - 1 } else { top };
    (log_n > tile).then_some(tile)
}

/// The merge passes of a sort of `n` keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergePlan {
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
pub struct MergePass {
    /// log2 of the input runs.
    pub log_run: u32,
    /// log2 of the runs merged into one (the last pass may merge fewer).
    pub log_ways: u32,
}

impl MergePlan {
    /// The merge passes in order: none when `n` fits one tile.
    pub fn passes(&self) -> Vec<MergePass> {
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
pub struct TiledPass {
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
    pub fn tiled_passes(&self, max_tile_bits: u32) -> Vec<TiledPass> {
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
}

/// Host-slice sorts of at least this many bytes (keys and values) sort while they upload
/// ([`upload_chunk`]); shorter ones upload first and sort after. On an NVIDIA H100 machine
/// (`docs/perf.md`, change 38) sorting while uploading lost at 16 MiB (2^22 `u32` keys:
/// 2.03 against 1.87 ms) and won from 64 MiB on (2^24: 4.74 against 5.25 ms); 32 MiB, where
/// long columns start to go through the pipeline of pieces, lies between.
pub const MIN_SORT_WHILE_UPLOADING_BYTES: u64 = 32 << 20;

/// log2 of the bytes of the largest chunk that is sorted while the rest uploads: 64 MiB. A
/// larger chunk leaves fewer merge passes for after the upload but a longer sort of the last
/// chunk there.
pub const LOG_MAX_UPLOAD_CHUNK_BYTES: u32 = 26;

/// How a host-slice merge-path sort of `n` elements of `element_bytes` (key and value)
/// overlaps its upload: as log2 of a chunk's elements, or `None` where it does not. Each
/// chunk of `2^log_chunk` elements (the last may be shorter) is tile-sorted and merged into
/// one run on the device as soon as it has arrived, while the next ones cross the bus; only
/// the merges of runs longer than a chunk wait for the whole upload. A chunk is a quarter of
/// the data rounded up to a power of two (so a quarter to a half of it), or 64 MiB, whichever
/// is less, and holds at least one tile of `2^sort_tile`.
/// The passes are those of the whole sort, merely run chunk by chunk
/// ([`MergePlan::chunk_passes`]), so the result is the same bit for bit.
pub fn upload_chunk(n: u64, element_bytes: u64, sort_tile: u32) -> Option<u32> {
    if element_bytes == 0 || n.saturating_mul(element_bytes) < MIN_SORT_WHILE_UPLOADING_BYTES {
        return None;
    }
    let by_bytes = ((1u64 << LOG_MAX_UPLOAD_CHUNK_BYTES) / element_bytes).ilog2();
    let log_chunk = super::ceil_log2(n).saturating_sub(2).min(by_bytes);
    (log_chunk >= sort_tile).then_some(log_chunk)
}

/// The chunks of a sort that sorts while it uploads ([`upload_chunk`]), handed out in order
/// once they have landed.
#[derive(Clone, Copy, Debug)]
pub struct UploadChunks {
    n: u64,
    log_chunk: u32,
    /// The first element of the next chunk to hand out.
    next: u64,
}

impl UploadChunks {
    /// The chunks of `2^log_chunk` elements (the last may be shorter) of `n` elements.
    pub fn new(n: u64, log_chunk: u32) -> UploadChunks {
        UploadChunks {
            n,
            log_chunk,
            next: 0,
        }
    }

    /// log2 of a chunk's elements.
    pub fn log_chunk(&self) -> u32 {
        self.log_chunk
    }

    /// The elements of all chunks together.
    pub fn total(&self) -> u64 {
        self.n
    }

    /// The next chunk not yet handed out, as (first element, elements), if it lies within the
    /// first `landed` elements.
    pub fn next_landed(&mut self, landed: u64) -> Option<(u64, u64)> {
        let first = self.next;
        let len = (1u64 << self.log_chunk).min(self.n.saturating_sub(first));
        if len == 0 || first + len > landed {
            return None;
        }
        self.next += len;
        Some((first, len))
    }
}

impl MergePlan {
    /// The two-way passes that sort one chunk of this plan's `n` elements on its own, with
    /// tiles of at most `2^max_tile_bits` outputs: those of the whole sort whose runs merge
    /// into runs of at most `2^log_chunk`, applied to the chunk alone (a chunk starts at a
    /// multiple of `2^log_chunk`, so the whole sort's runs there are the chunk's). A short
    /// last chunk makes them all, its lone run copied where it has no partner, so that every
    /// chunk ends in the same buffer. None decodes.
    pub fn chunk_passes(&self, max_tile_bits: u32, log_chunk: u32) -> Vec<TiledPass> {
        (self.log_tile..log_chunk)
            .map(|log_run| self.tiled_pass(log_run, max_tile_bits, false))
            .collect()
    }
}

/// How many keys of each run come first in the `rank` smallest of all `runs` (each sorted
/// ascending): the splitters of output rank `rank`. Equal keys count as smaller in a lower
/// run, and earlier in the same run, so merging the runs' prefixes and suffixes at these
/// splitters is stable. `rank` beyond the total is the total.
///
/// The search bisects the key's bits as a kernel would (one binary search per run and step),
/// then hands the remaining ties to the runs in order.
#[cfg(test)]
pub fn split(runs: &[&[u64]], rank: u64) -> Vec<u64> {
    let below = |v: u64| -> u64 {
        runs.iter()
            .map(|r| r.partition_point(|&k| k < v) as u64)
            .sum()
    };
    let at_most = |v: u64| -> u64 {
        runs.iter()
            .map(|r| r.partition_point(|&k| k <= v) as u64)
            .sum()
    };
    let total: u64 = runs.iter().map(|r| r.len() as u64).sum();
    if rank >= total {
        return runs.iter().map(|r| r.len() as u64).collect();
    }
    // The smallest key v with more than `rank` keys at or below it: the key at `rank`.
    let (mut lo, mut hi) = (0u64, u64::MAX);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if at_most(mid) > rank {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let mut left = rank - below(lo);
    runs.iter()
        .map(|r| {
            let start = r.partition_point(|&k| k < lo);
            let equal = r[start..].partition_point(|&k| k <= lo) as u64;
            let take = left.min(equal);
            left -= take;
            start as u64 + take
        })
        .collect()
}

/// Sorts `keys` (and moves `values` with them) as the merge-path design does: every tile
/// sorted on its own (stably), then each pass of `plan` merging its groups of runs output
/// tile by output tile, each tile taking the parts of the runs between its two ranks'
/// [`split`]s. The result equals a stable sort by key.
#[cfg(test)]
pub fn emulate<V: Copy>(keys: &mut [u64], values: &mut [V], plan: MergePlan) {
    assert_eq!(keys.len(), values.len(), "keys and values differ in length");
    let n = keys.len();
    let tile = 1usize << plan.log_tile;
    let mut pairs: Vec<(u64, V)> = keys.iter().copied().zip(values.iter().copied()).collect();
    for t in pairs.chunks_mut(tile) {
        t.sort_by_key(|p| p.0);
    }
    for pass in plan.passes() {
        let run = 1usize << pass.log_run;
        let group = run << pass.log_ways;
        let mut out = Vec::with_capacity(n);
        for g in (0..n).step_by(group) {
            let members: Vec<&[(u64, V)]> = (g..(g + group).min(n))
                .step_by(run)
                .map(|r| &pairs[r..(r + run).min(n)])
                .collect();
            let run_keys: Vec<Vec<u64>> = members
                .iter()
                .map(|m| m.iter().map(|p| p.0).collect())
                .collect();
            let run_refs: Vec<&[u64]> = run_keys.iter().map(Vec::as_slice).collect();
            let len = group.min(n - g) as u64;
            let mut from = split(&run_refs, 0);
            for end in (tile as u64..=len)
                .step_by(tile)
                .chain((!len.is_multiple_of(tile as u64)).then_some(len))
            {
                let to = split(&run_refs, end);
                merge_parts(&members, &from, &to, &mut out);
                from = to;
            }
        }
        pairs = out;
    }
    for (i, (k, v)) in pairs.into_iter().enumerate() {
        keys[i] = k;
        values[i] = v;
    }
}

/// Appends the stable merge of `members[j][from[j]..to[j]]` to `out`.
#[cfg(test)]
fn merge_parts<V: Copy>(
    members: &[&[(u64, V)]],
    from: &[u64],
    to: &[u64],
    out: &mut Vec<(u64, V)>,
) {
    let mut at: Vec<usize> = from.iter().map(|&f| f as usize).collect();
    loop {
        // The lowest run whose next key is smallest.
        let next = (0..members.len())
            .filter(|&j| at[j] < to[j] as usize)
            .min_by_key(|&j| (members[j][at[j]].0, j));
        let Some(j) = next else { break };
        out.push(members[j][at[j]]);
        at[j] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(n: usize, seed: u64) -> Vec<(&'static str, Vec<u64>)> {
        let mut x = seed | 1;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let random: Vec<u64> = (0..n).map(|_| rand()).collect();
        let mut sorted = random.clone();
        sorted.sort_unstable();
        let reversed: Vec<u64> = sorted.iter().rev().copied().collect();
        vec![
            ("random", random),
            ("sorted", sorted),
            ("reversed", reversed),
            ("equal", vec![7; n]),
            ("few", (0..n).map(|_| rand() % 3).collect()),
            (
                "organ pipe",
                (0..n).map(|i| i.min(n - 1 - i) as u64).collect(),
            ),
            ("saw", (0..n).map(|i| (i % 17) as u64).collect()),
            (
                "extremes",
                (0..n)
                    .map(|i| if i % 2 == 0 { u64::MAX } else { 0 })
                    .collect(),
            ),
        ]
    }

    #[test]
    fn pass_counts_of_the_design() {
        let count = |log_n: u32, log_tile, log_ways| {
            MergePlan {
                n: 1 << log_n,
                log_tile,
                log_ways,
            }
            .passes()
            .len()
        };
        // docs/perf.md: eight-way merges above tiles of 2^13 (2^12 for u64 keys).
        assert_eq!(
            [count(20, 13, 3), count(24, 13, 3), count(28, 13, 3)],
            [3, 4, 5]
        );
        assert_eq!(count(26, 12, 3), 5);
        assert_eq!(
            [count(20, 13, 2), count(24, 13, 2), count(28, 13, 2)],
            [4, 6, 8]
        );
        assert_eq!(count(13, 13, 3), 0);
        let plan = MergePlan {
            n: (1 << 20) + 1,
            log_tile: 13,
            log_ways: 3,
        };
        let passes = plan.passes();
        assert_eq!(passes.len(), 3);
        assert_eq!(
            passes[2],
            MergePass {
                log_run: 19,
                log_ways: 2
            }
        );
    }

    #[test]
    fn sort_tiles_leave_an_even_number_of_merges() {
        // An H200: 132 multiprocessors, tiles up to 2^15.
        for log_n in 0..=34u32 {
            let n = 1u64 << log_n;
            for n in [n - 1, n, n + 1] {
                match choose_sort_tile(n, 15, 132) {
                    None => assert!(n <= 1 << 13, "n = {n}"),
                    Some(tile) => {
                        assert!(n > 1 << 13, "n = {n}");
                        assert!((MIN_LOG_SORT_TILE..=MAX_LOG_SORT_TILE).contains(&tile));
                        let plan = MergePlan {
                            n,
                            log_tile: tile,
                            log_ways: 1,
                        };
                        assert_eq!(plan.passes().len() % 2, 0, "n = {n}, tile 2^{tile}");
                    }
                }
            }
        }
        assert_eq!(choose_sort_tile(1 << 28, 15, 132), Some(14));
        assert_eq!(choose_sort_tile(1 << 20, 15, 132), Some(12));
        // Odd powers of two take 2^15 where the device holds it and the network would give
        // every multiprocessor tiles that large, 2^13 where not.
        assert_eq!(choose_sort_tile(1 << 27, 15, 132), Some(15));
        assert_eq!(choose_sort_tile((1 << 22) + 1, 15, 132), Some(15));
        assert_eq!(choose_sort_tile(1 << 27, 14, 132), Some(13));
        assert_eq!(choose_sort_tile(1 << 21, 15, 132), Some(13));
        // Devices whose tiles are small keep the network.
        assert_eq!(choose_sort_tile(1 << 20, 10, 132), None);
        // Rows: only those longer than the largest tile, whose tiles count together.
        assert_eq!(choose_rows_sort_tile(4, 1 << 14, 14, 132), None);
        assert_eq!(choose_rows_sort_tile(2, 20_000, 14, 132), Some(11));
        assert_eq!(choose_rows_sort_tile(2, 1 << 24, 14, 132), Some(14));
        assert_eq!(choose_rows_sort_tile(64, 1 << 17, 14, 132), Some(13));
        assert_eq!(choose_rows_sort_tile(2, 1 << 17, 10, 132), None);
    }

    #[test]
    fn pair_tiles_depend_on_length_and_width_alone() {
        for element_bytes in [8u64, 12, 16] {
            // The first length past 8 MiB of pairs.
            let first = (1u64 << 23) / element_bytes + 1;
            assert_eq!(pair_sort_tile(first - 1, element_bytes), None);
            for log_n in 19..=34u32 {
                let n = 1u64 << log_n;
                for n in [n - 1, n, n + 1, first] {
                    let Some(tile) = pair_sort_tile(n, element_bytes) else {
                        assert!(n < first, "{element_bytes} bytes, n = {n}");
                        continue;
                    };
                    assert!(n >= first);
                    assert!((1u64 << tile) * element_bytes <= 1 << PAIR_LOG_TILE_BYTES);
                    let plan = MergePlan {
                        n,
                        log_tile: tile,
                        log_ways: 1,
                    };
                    assert_eq!(plan.passes().len() % 2, 0, "n = {n}, tile 2^{tile}");
                    assert!(!plan.passes().is_empty());
                }
            }
        }
        assert_eq!(pair_sort_tile(1 << 20, 8), None);
        assert_eq!(pair_sort_tile((1 << 20) + 1, 8), Some(11));
        assert_eq!(pair_sort_tile(1 << 28, 8), Some(12));
        assert_eq!(pair_sort_tile(1 << 26, 16), Some(10));
        assert_eq!(pair_sort_tile(1 << 27, 12), Some(11));
        assert_eq!(pair_sort_tile(1 << 40, 0), None);
    }

    #[test]
    fn splitters_are_exact_and_stable() {
        for (name, keys) in patterns(300, 5) {
            let mut runs: Vec<Vec<u64>> = keys.chunks(37).map(|c| c.to_vec()).collect();
            runs.iter_mut().for_each(|r| r.sort_unstable());
            let refs: Vec<&[u64]> = runs.iter().map(Vec::as_slice).collect();
            // (key, run, position) in the order a stable merge takes them.
            let mut all: Vec<(u64, usize, usize)> = runs
                .iter()
                .enumerate()
                .flat_map(|(j, r)| r.iter().enumerate().map(move |(i, &k)| (k, j, i)))
                .collect();
            all.sort_unstable();
            for rank in 0..=all.len() as u64 + 2 {
                let s = split(&refs, rank);
                let taken = &all[..(rank as usize).min(all.len())];
                for (j, &sj) in s.iter().enumerate() {
                    let want = taken.iter().filter(|t| t.1 == j).count() as u64;
                    assert_eq!(sj, want, "{name}: rank {rank}, run {j}");
                }
            }
        }
    }

    #[test]
    fn chunks_sorted_while_uploading_make_the_whole_sorts_passes() {
        for (element_bytes, sort_tile) in [(4u64, 14u32), (4, 13), (8, 12), (12, 11), (16, 11)] {
            for log_n in 20..=34u32 {
                for n in [(1u64 << log_n) - 1, 1 << log_n, (1 << log_n) + 1] {
                    let Some(log_chunk) = upload_chunk(n, element_bytes, sort_tile) else {
                        assert!(
                            n * element_bytes < MIN_SORT_WHILE_UPLOADING_BYTES,
                            "n = {n}"
                        );
                        continue;
                    };
                    let chunk = 1u64 << log_chunk;
                    assert!(chunk * element_bytes <= 1 << LOG_MAX_UPLOAD_CHUNK_BYTES);
                    assert!(n > 2 * chunk, "n = {n}: at least three chunks");
                    assert!(log_chunk >= sort_tile);
                    let whole = MergePlan {
                        n,
                        log_tile: sort_tile,
                        log_ways: 1,
                    };
                    let passes = whole.tiled_passes(13);
                    let before = passes.iter().filter(|p| p.log_run < log_chunk).count();
                    for m in [chunk, n % chunk, 1].into_iter().filter(|&m| m > 0) {
                        let part = MergePlan { n: m, ..whole };
                        let chunk_passes = part.chunk_passes(13, log_chunk);
                        // Every chunk makes the same number of passes as the whole sort below
                        // the chunk, so all end in the same buffer.
                        assert_eq!(chunk_passes.len(), before, "n = {n}, m = {m}");
                        for (c, w) in chunk_passes.iter().zip(&passes) {
                            assert_eq!((c.log_run, c.tile_bits), (w.log_run, w.tile_bits));
                            assert_eq!(c.tiles, m.div_ceil(1 << c.tile_bits));
                            assert!(!c.last);
                        }
                    }
                }
            }
        }
        let mut chunks = UploadChunks::new(10, 2);
        assert_eq!(chunks.total(), 10);
        assert_eq!(chunks.next_landed(3), None);
        assert_eq!(chunks.next_landed(9), Some((0, 4)));
        assert_eq!(chunks.next_landed(9), Some((4, 4)));
        assert_eq!(chunks.next_landed(9), None);
        assert_eq!(chunks.next_landed(10), Some((8, 2)));
        assert_eq!(chunks.next_landed(10), None);
        assert_eq!(upload_chunk(1 << 28, 4, 14), Some(24));
        assert_eq!(upload_chunk(1 << 24, 4, 14), Some(22));
        assert_eq!(upload_chunk(1 << 28, 8, 12), Some(23));
        assert_eq!(upload_chunk(1 << 22, 4, 12), None);
        assert_eq!(upload_chunk(1 << 23, 4, 14), Some(21));
    }

    #[test]
    fn the_model_is_a_stable_sort() {
        for (log_tile, log_ways) in [(2, 1), (3, 2), (3, 3), (4, 3)] {
            let tile = 1usize << log_tile;
            let mut lengths = vec![0, 1, 2, 3, tile - 1, tile, tile + 1];
            for log in [
                log_tile + log_ways,
                log_tile + 2 * log_ways,
                log_tile + 2 * log_ways + 1,
            ] {
                let n = 1usize << log;
                lengths.extend([n - 1, n, n + 1]);
            }
            for n in lengths {
                for (name, input) in patterns(n, n as u64 + 11) {
                    let mut keys = input.clone();
                    let mut positions: Vec<u32> = (0..n as u32).collect();
                    let plan = MergePlan {
                        n: n as u64,
                        log_tile,
                        log_ways,
                    };
                    emulate(&mut keys, &mut positions, plan);
                    let mut want: Vec<(u64, u32)> =
                        input.iter().copied().zip(0..n as u32).collect();
                    want.sort_by_key(|p| p.0);
                    let got: Vec<(u64, u32)> = keys.into_iter().zip(positions).collect();
                    assert_eq!(
                        got, want,
                        "{name}, n = {n}, tile 2^{log_tile}, 2^{log_ways}-way"
                    );
                }
            }
        }
    }
}
