//! The plan of a bitonic top-k (Shanbhag, Pirk and Madden, SIGMOD 2018), the same for every
//! GPU backend.
//!
//! The kernels select on 64-bit words `ordered key << 32 | position` (the key encoded for the
//! order, so that the smaller word is the better one and equal keys go to the lower
//! position); padding is `u64::MAX`. With `K` = `k` rounded up to a power of two, a tile of
//! `T = 2^log_tile >= 2K` words in on-chip memory becomes one sorted run of its `K` best: the
//! network sorts runs of `K`, then pairs of runs merge keeping `K` (word `i` of the first
//! against word `K-1-i` of the second, the smaller kept: a bitonic sequence of the `K` best,
//! which the half-cleaners sort), halving the runs until one is left. The first pass reads
//! the keys, encoding them as it loads; each further pass reads the previous pass's runs
//! (each row's runs one after another) and does the same, until one run per row is left.
//! Its first `k` words are the answer.

use crate::schedule::radix::pairs_take_radix;

/// log2 of the largest top-k tile in words: 2^12 words of 8 bytes (32 KiB with the padding
/// words) fit every GPU's shared or local memory without an opt-in.
pub(crate) const TOP_K_MAX_LOG_TILE: u32 = crate::kernel_contract::TOP_K_MAX_LOG_TILE;

/// One launch of a top-k.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TopKPass {
    /// Whether the launch reads the keys (and encodes them); otherwise the previous pass's
    /// runs of words.
    pub(crate) from_keys: bool,
    /// Elements of one row that the launch reads: the row length for the first pass, then
    /// the previous pass's runs per row times `K`.
    pub(crate) len: u64,
    /// log2 of the elements a work-group reads: the row's elements from `tile << log_tile`
    /// on, those past `len` as padding.
    pub(crate) log_tile: u32,
    /// Tiles per row, each of which writes one run of `K` words.
    pub(crate) tiles: u64,
}

/// The launches of a top-k of rows of `row_len` keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TopKPlan {
    /// log2 of `K`, the power of two at or above `k`.
    pub(crate) log_k: u32,
    /// The launches in order; the last has one tile per row.
    pub(crate) passes: Vec<TopKPass>,
}

impl TopKPlan {
    /// The plan for `k` of rows of `row_len` (`1 <= k <= row_len`) with tiles of at most
    /// `2^max_log_tile` words; `None` when `2K` exceeds the largest tile (the sort path
    /// serves such a `k`).
    pub(crate) fn new(row_len: u64, k: u64, max_log_tile: u32) -> Option<TopKPlan> {
        debug_assert!(k >= 1 && k <= row_len);
        let log_k = k.next_power_of_two().trailing_zeros();
        if log_k + 1 > max_log_tile {
            return None;
        }
        let mut passes = Vec::new();
        let mut len = row_len;
        let mut from_keys = true;
        loop {
            // The smallest tile that holds the whole row (fewest comparators), at least two
            // runs, at most the largest.
            let log_tile = len
                .next_power_of_two()
                .trailing_zeros()
                .clamp(log_k + 1, max_log_tile);
            let tiles = len.div_ceil(1 << log_tile);
            passes.push(TopKPass {
                from_keys,
                len,
                log_tile,
                tiles,
            });
            if tiles == 1 {
                break;
            }
            len = tiles << log_k;
            from_keys = false;
        }
        Some(TopKPlan { log_k, passes })
    }

    /// `K`: the words of each run.
    pub(crate) fn run(&self) -> u64 {
        1 << self.log_k
    }

    /// Words of the largest output of one pass over `rows` rows (the first's): each scratch
    /// buffer holds this many.
    pub(crate) fn scratch_words(&self, rows: u64) -> u64 {
        rows * self.passes[0].tiles * self.run()
    }
}

mod filter;
mod select;

#[cfg(all(test, any(feature = "cuda", feature = "opencl")))]
pub(crate) use filter::sample_position;
#[cfg(any(feature = "cuda", feature = "opencl"))]
pub(crate) use filter::{
    FilterDevice, TopKCandidates, TopKFilter, candidates_select_bytes, sample_bytes,
};
#[cfg(feature = "cuda")]
pub(crate) use select::SELECT_BLOCK_BYTES;
#[cfg(any(feature = "cuda", feature = "opencl"))]
pub(crate) use select::TopKSelect;

/// How a top-k of device-resident keys runs: every route ends with each row's first `k`
/// words of sorted composite words, whose low halves are positions.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TopKRoute {
    /// Keys of at most 32 bits whose `2K` fits the on-chip tile: the bitonic top-k.
    Tiles(TopKPlan),
    /// Other keys of at most 32 bits: the rows of `ordered key << 32 | position` words are
    /// sorted on the device.
    SortWords,
    /// Wider keys: a copy of the keys sorts with their positions as values; each element's
    /// word becomes `rank of its key in the row << 32 | position`, and a sort of those words
    /// puts equal keys in position order.
    SortRanked,
    /// A full sort (`k` is the row's length) of one row of 32- or 64-bit keys that
    /// [`pairs_take_radix`] sorts stably: a copy of the keys sorts with their positions as
    /// values, into the outputs. Half the digits of the composite words, and no take. Only
    /// where the backend sorts those pairs by its radix sort: not an oblivious one, whose
    /// network would not keep equal keys in position order, nor a device without room for
    /// the radix kernels, whose merge path would not either.
    SortPairs,
}

impl TopKRoute {
    /// The route for `rows` rows of keys of `key_bytes` in rows of `row_len` (`1 <= k <=
    /// row_len`) on a device whose top-k tiles hold at most `2^max_log_tile` words.
    /// `radix_pairs`: the backend sorts one row of (key, `u32` position) pairs of this key
    /// width by its radix sort where [`pairs_take_radix`] says (it is not oblivious, and the
    /// device runs the radix kernels).
    #[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
    pub(crate) fn new(
        key_bytes: usize,
        (rows, row_len): (u64, u64),
        k: u64,
        max_log_tile: u32,
        radix_pairs: bool,
    ) -> TopKRoute {
        if radix_pairs
            && rows == 1
            && k == row_len
            && matches!(key_bytes, 4 | 8)
            && pairs_take_radix(row_len, key_bytes as u64 + 4)
        {
            return TopKRoute::SortPairs;
        }
        if key_bytes > 4 {
            return TopKRoute::SortRanked;
        }
        match TopKPlan::new(row_len, k, max_log_tile) {
            Some(plan) => TopKRoute::Tiles(plan),
            None => TopKRoute::SortWords,
        }
    }
}

/// What a backend's top-k takes from its device to choose its way ([`TopKWay::new`]).
#[cfg(any(feature = "cuda", feature = "opencl"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TopKDevice {
    /// log2 of the largest top-k tile in words.
    pub(crate) max_log_tile: u32,
    /// Whether the backend sorts one row of (key, `u32` position) pairs of the job's key
    /// width by its radix sort ([`TopKRoute::new`]).
    pub(crate) radix_pairs: bool,
    /// On-chip bytes one row of the short rows' select may take ([`TopKSelect::row_bytes`];
    /// 0: never that way).
    pub(crate) select_bytes: u32,
    /// What the candidate filter takes from the device; `None`: never filtered.
    pub(crate) filter: Option<FilterDevice>,
}

/// How a top-k of device-resident keys runs, the same choice on every GPU backend: short
/// rows by the on-chip select, long rows of keys of at most 32 bits through the candidate
/// filter, everything else by its [`TopKRoute`].
#[cfg(any(feature = "cuda", feature = "opencl"))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TopKWay {
    /// Rows short enough for [`TopKSelect`], whose on-chip bytes the device gives.
    Select(TopKSelect),
    /// Long rows whose [`TopKFilter`] pays: its candidates become the top k as
    /// [`TopKFilter::candidates`] says.
    Filtered(TopKFilter),
    /// Every other job.
    Route(TopKRoute),
}

#[cfg(any(feature = "cuda", feature = "opencl"))]
impl TopKWay {
    /// The way for `rows` rows of `row_len` keys of `key_bytes` (`1 <= k <= row_len`) on
    /// `device`. The select first (one launch, one read of each key), then the filter in
    /// front of the routes that select from composite words (the tiles and the sort of
    /// words; the whole row's sort of pairs and the wide keys' ranks hold no position in a
    /// word to filter by), then the route.
    pub(crate) fn new(
        key_bytes: usize,
        (rows, row_len): (u64, u64),
        k: u64,
        device: &TopKDevice,
    ) -> TopKWay {
        if let Some(select) = TopKSelect::new(key_bytes, row_len, k)
            && select.row_bytes <= device.select_bytes
        {
            return TopKWay::Select(select);
        }
        let route = TopKRoute::new(
            key_bytes,
            (rows, row_len),
            k,
            device.max_log_tile,
            device.radix_pairs,
        );
        if matches!(route, TopKRoute::Tiles(_) | TopKRoute::SortWords)
            && let Some(filter_device) = device.filter
            && let Some(filter) = TopKFilter::new(rows, row_len, k, filter_device)
        {
            return TopKWay::Filtered(filter);
        }
        TopKWay::Route(route)
    }
}

/// The on-chip tile algorithm on the host, as the kernels run it: loads `size` words from
/// `load`, sorts runs of `K` with the network, merges them keeping `K` and returns the `K`
/// best in order. The model the tests check the plan with.
#[cfg(test)]
pub(crate) fn emulate_tile(size: usize, log_k: u32, load: impl Fn(usize) -> u64) -> Vec<u64> {
    let mut t: Vec<u64> = (0..size).map(load).collect();
    let k = 1usize << log_k;
    let half = size / 2;
    let cmpx = |t: &mut Vec<u64>, a: usize, b: usize| {
        if t[a] > t[b] {
            t.swap(a, b);
        }
    };
    for s in 0..log_k {
        for j in 0..half {
            let lo = ((j >> s) << (s + 1)) | (j & ((1 << s) - 1));
            cmpx(&mut t, lo, lo ^ ((2 << s) - 1));
        }
        for h in (0..s).rev() {
            for j in 0..half {
                let lo = ((j >> h) << (h + 1)) | (j & ((1 << h) - 1));
                cmpx(&mut t, lo, lo + (1 << h));
            }
        }
    }
    let mut level = 0;
    while (size >> log_k) >> level > 1 {
        let runs = (size >> log_k) >> (level + 1);
        for j in 0..runs * k {
            let (p, i) = (j >> log_k, j & (k - 1));
            let a = p << (log_k + level + 1);
            let b = a + (k << level);
            t[a + i] = t[a + i].min(t[b + k - 1 - i]);
        }
        for h in (0..log_k).rev() {
            for j in 0..runs * k / 2 {
                let (p, jj) = (j >> (log_k - 1), j & (k / 2 - 1));
                let lo =
                    (p << (log_k + level + 1)) + (((jj >> h) << (h + 1)) | (jj & ((1 << h) - 1)));
                cmpx(&mut t, lo, lo + (1 << h));
            }
        }
        level += 1;
    }
    t.truncate(k);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A xorshift generator of test keys from `state` (not zero).
    pub(super) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// Runs `plan` over `rows` of `words` (composite words, `row_len` per row) with the tile
    /// emulation; the `K` words of each row's final run.
    pub(super) fn run_plan(plan: &TopKPlan, words: &[u64], row_len: usize) -> Vec<Vec<u64>> {
        let rows = words.len() / row_len;
        let k = plan.run() as usize;
        let mut input: Vec<u64> = words.to_vec();
        for pass in &plan.passes {
            let len = pass.len as usize;
            let size = 1usize << pass.log_tile;
            let mut out = Vec::new();
            for r in 0..rows {
                for tile in 0..pass.tiles as usize {
                    let first = tile * size;
                    out.extend(emulate_tile(size, plan.log_k, |i| {
                        let col = first + i;
                        if col < len {
                            input[r * len + col]
                        } else {
                            u64::MAX
                        }
                    }));
                }
            }
            input = out;
        }
        input.chunks(k).map(<[u64]>::to_vec).collect()
    }

    #[test]
    fn passes_shrink_to_one_run_per_row() {
        for row_len in [1u64, 2, 3, 1000, 4096, 4097, 70_001, 1 << 20, (1 << 32) - 1] {
            for k in [1u64, 2, 3, 7, 100, 1000, 2048, 2049] {
                if k > row_len {
                    continue;
                }
                let Some(plan) = TopKPlan::new(row_len, k, 12) else {
                    assert!(k > 2048, "{row_len} {k}");
                    continue;
                };
                assert!(k <= plan.run() && plan.run() < 2 * k);
                let first = plan.passes[0];
                assert!(first.from_keys && first.len == row_len);
                assert_eq!(plan.passes.last().unwrap().tiles, 1);
                for pair in plan.passes.windows(2) {
                    assert!(!pair[1].from_keys);
                    assert_eq!(pair[1].len, pair[0].tiles * plan.run());
                    assert!(pair[1].tiles < pair[0].tiles);
                }
                for pass in &plan.passes {
                    assert!(pass.log_tile <= 12 && pass.log_tile > plan.log_k);
                    assert_eq!(pass.tiles, pass.len.div_ceil(1 << pass.log_tile));
                }
                assert_eq!(plan.scratch_words(3), 3 * first.tiles * plan.run());
            }
        }
    }

    #[test]
    fn routes_by_key_width_and_k() {
        // With and without the radix sort of pairs alike, except for the whole long row.
        for radix_pairs in [true, false] {
            let route = |key_bytes, shape, k| TopKRoute::new(key_bytes, shape, k, 12, radix_pairs);
            assert!(matches!(route(4, (1, 5000), 2048), TopKRoute::Tiles(_)));
            assert!(matches!(route(2, (1, 5000), 7), TopKRoute::Tiles(_)));
            assert_eq!(route(4, (1, 5000), 2049), TopKRoute::SortWords);
            assert_eq!(route(4, (1, 1 << 20), 16384), TopKRoute::SortWords);
            assert_eq!(route(8, (1, 5000), 1), TopKRoute::SortRanked);
            // Not several rows, a part of the row, 16-bit keys or rows radix does not take.
            let long = 1 << 24;
            assert!(pairs_take_radix(long, 8) && pairs_take_radix(long, 12));
            assert_eq!(route(4, (2, long), long), TopKRoute::SortWords);
            assert_eq!(route(4, (1, long), long - 1), TopKRoute::SortWords);
            assert_eq!(route(2, (1, long), long), TopKRoute::SortWords);
            assert!(!pairs_take_radix(5000, 8));
            assert_eq!(route(4, (1, 5000), 5000), TopKRoute::SortWords);
            // A full sort of one long row of 32- or 64-bit keys sorts the pairs where the
            // backend's sort of them is the radix sort; elsewhere the composite words, which
            // need no stable sort.
            let (narrow, wide) = if radix_pairs {
                (TopKRoute::SortPairs, TopKRoute::SortPairs)
            } else {
                (TopKRoute::SortWords, TopKRoute::SortRanked)
            };
            assert_eq!(route(4, (1, long), long), narrow);
            assert_eq!(route(8, (1, long), long), wide);
        }
    }

    #[cfg(any(feature = "cuda", feature = "opencl"))]
    #[test]
    fn ways_take_the_select_then_the_filter_then_the_route() {
        let filter = FilterDevice {
            max_log_tile: 12,
            select_bytes: 47 * 1024,
            multiprocessors: 4,
        };
        let device = TopKDevice {
            max_log_tile: 12,
            radix_pairs: true,
            select_bytes: 47 * 1024,
            filter: Some(filter),
        };
        let way =
            |key_bytes, shape, k, device: &TopKDevice| TopKWay::new(key_bytes, shape, k, device);
        // Short rows of narrow keys: the select, unless its bytes pass the device's.
        assert!(matches!(
            way(4, (100, 1024), 32, &device),
            TopKWay::Select(_)
        ));
        assert!(matches!(
            way(2, (1, 4096), 256, &device),
            TopKWay::Select(_)
        ));
        let small = TopKDevice {
            select_bytes: 4096,
            ..device
        };
        assert!(matches!(
            way(4, (100, 1024), 32, &small),
            TopKWay::Route(TopKRoute::Tiles(_))
        ));
        // Long rows of narrow keys: the filter, in front of the tiles and of the sort of words.
        for (k, candidates) in [(100, "select"), (2048, "sort")] {
            match way(4, (4, 40_000), k, &device) {
                TopKWay::Filtered(f) => {
                    assert_eq!(f, TopKFilter::new(4, 40_000, k, filter).unwrap());
                    let name = match f.candidates {
                        TopKCandidates::Select => "select",
                        TopKCandidates::Tiles(_) => "tiles",
                        TopKCandidates::Sort => "sort",
                    };
                    assert_eq!(name, candidates);
                }
                other => panic!("{k}: {other:?}"),
            }
        }
        assert!(matches!(
            way(4, (1, 1 << 20), 16_384, &device),
            TopKWay::Filtered(_)
        ));
        // No filter on the device, wide keys, rows too short for it, the whole row's sort of
        // pairs.
        let unfiltered = TopKDevice {
            filter: None,
            ..device
        };
        assert!(matches!(
            way(4, (4, 40_000), 100, &unfiltered),
            TopKWay::Route(TopKRoute::Tiles(_))
        ));
        assert_eq!(
            way(8, (4, 40_000), 100, &device),
            TopKWay::Route(TopKRoute::SortRanked)
        );
        assert!(matches!(
            way(4, (4, 5000), 100, &device),
            TopKWay::Route(TopKRoute::Tiles(_))
        ));
        let long = 1 << 24;
        assert_eq!(
            way(4, (1, long), long, &device),
            TopKWay::Route(TopKRoute::SortPairs)
        );
    }

    #[test]
    fn tiles_fit_short_rows_and_k_past_the_tile_is_refused() {
        let plan = TopKPlan::new(3, 1, 12).unwrap();
        assert_eq!(plan.passes.len(), 1);
        assert_eq!(plan.passes[0].log_tile, 2);
        let plan = TopKPlan::new(3, 3, 12).unwrap();
        assert_eq!((plan.log_k, plan.passes[0].log_tile), (2, 3));
        assert_eq!(TopKPlan::new(1, 1, 12).unwrap().passes[0].log_tile, 1);
        let plan = TopKPlan::new(70_001, 2048, 12).unwrap();
        // K = T/2: each pass halves the runs, 18 -> 9 -> 5 -> 3 -> 2 -> 1.
        let tiles: Vec<u64> = plan.passes.iter().map(|p| p.tiles).collect();
        assert_eq!(tiles, [18, 9, 5, 3, 2, 1]);
        // Small k: one pass of 2^12-word tiles leaves 18 runs of 8, which one tile holds.
        let tiles: Vec<u64> = TopKPlan::new(70_001, 7, 12)
            .unwrap()
            .passes
            .iter()
            .map(|p| p.tiles)
            .collect();
        assert_eq!(tiles, [18, 1]);
        assert!(TopKPlan::new(70_001, 2049, 12).is_none());
        assert!(TopKPlan::new(70_001, 1025, 11).is_none());
    }

    #[test]
    fn the_emulated_plan_selects_the_best_k() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for (rows, row_len, k, distinct) in [
            (1usize, 1usize, 1usize, 5u64),
            (2, 3, 3, 2),
            (1, 1025, 7, 1 << 32),
            (3, 5000, 100, 10),
            (1, 9000, 1, 1),
            (2, 20_000, 300, 1 << 32),
            (1, 70_001, 2048, 1000),
        ] {
            let keys: Vec<u64> = (0..rows * row_len).map(|_| next() % distinct).collect();
            let words: Vec<u64> = keys
                .iter()
                .enumerate()
                .map(|(i, &key)| (key << 32) | (i % row_len) as u64)
                .collect();
            let plan = TopKPlan::new(row_len as u64, k as u64, 12).unwrap();
            let got = run_plan(&plan, &words, row_len);
            for (r, row) in words.chunks(row_len).enumerate() {
                let mut want = row.to_vec();
                want.sort_unstable();
                assert_eq!(&got[r][..k], &want[..k], "{rows}x{row_len} k {k} row {r}");
            }
        }
    }
}
