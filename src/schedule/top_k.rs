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

/// log2 of the most sampled words of a row: one on-chip tile ([`TOP_K_MAX_LOG_TILE`]).
const FILTER_MAX_LOG_SAMPLE: u32 = TOP_K_MAX_LOG_TILE;

/// log2 of the smallest `K` whose filtered candidates are sorted as rows rather than selected
/// by tiles: the tiles' passes over a few runs of `K` are long launches of few blocks. On an
/// H100 (`compare.sh topk`) sorting them took 4 x 131072 with k = 2048 from 0.103 to 0.091 ms;
/// 2048 x 131072 with k = 1024 stayed about level (3.0-3.1 ms with tiles on other cards, 3.2).
const SORT_CANDIDATES_FROM_LOG_K: u32 = 10;

/// A candidate filter in front of the bitonic top-k of long rows. A pass over the keys
/// costs one read of them, where the tiles' first pass sorts every element on chip, so a
/// long row first shrinks to a few candidates per `k`:
/// 1. a sample of `2^log_sample` words per row, one at a hashed position of each of as many
///    equal strata ([`sample_position`]), gives the threshold: the sample's `rank`-th
///    smallest word;
/// 2. one pass keeps the words at or below the threshold, at most `capacity` per row, and
///    counts them;
/// 3. the tile plan [`TopKFilter::candidates`] selects from each row's candidates, or,
///    where `2K` passes the largest tile or `K` reaches [`SORT_CANDIDATES_FROM_LOG_K`], the
///    rows of candidates are sorted.
///
/// Words are distinct within a row (they hold the position), so the count is the rank of
/// the threshold in the row, whatever the keys, including all-equal ones. A stratified
/// sample puts fewer than `rank` of its words among the row's best `k` and at least `rank`
/// among its best `capacity`, except with a probability below about 1e-7 per row (the
/// margins are five standard deviations of a Poisson count, which bounds a sum of
/// independent Bernoulli trials). A row outside `k..=capacity` nevertheless, which keys
/// placed against the hash can cause, is selected from all its keys by the full plan
/// ([`TopKFilter::rescues`]): the answer is never wrong, only slower.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TopKFilter {
    /// log2 of the sampled words of a row; at most the row length.
    pub(crate) log_sample: u32,
    /// The threshold is the sample's `rank`-th smallest word (from 1), `rank <= 2^log_sample`.
    pub(crate) rank: u32,
    /// Candidate slots of a row: a power of two of at least `2K`, at most an eighth of the
    /// row.
    pub(crate) capacity: u64,
    /// The tile plan over rows of `capacity` candidates; `None` where `2K` passes the largest
    /// tile or `K` reaches [`SORT_CANDIDATES_FROM_LOG_K`], and the candidates (empty slots
    /// padded with `u64::MAX`) are sorted as rows.
    pub(crate) candidates: Option<TopKPlan>,
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
impl TopKFilter {
    /// The filter for `k` of rows of `row_len` (`1 <= k <= row_len`) with tiles of at most
    /// `2^max_log_tile` words, or `None` where the rows are too short for it to pay: the
    /// candidates would be more than an eighth of a row.
    pub(crate) fn new(row_len: u64, k: u64, max_log_tile: u32) -> Option<TopKFilter> {
        debug_assert!(k >= 1 && k <= row_len);
        let log_sample = (row_len / 8)
            .checked_ilog2()?
            .min(FILTER_MAX_LOG_SAMPLE.min(max_log_tile));
        // Row elements per sampled word.
        let stride = row_len as f64 / (1u64 << log_sample) as f64;
        let expected = k as f64 / stride;
        let rank = (expected + 5.0 * expected.sqrt() + 5.0).ceil();
        if rank > (1u64 << log_sample) as f64 {
            return None;
        }
        let slots = ((rank + 5.0 * rank.sqrt() + 10.0) * stride).ceil() as u64;
        let capacity = slots.next_power_of_two().max(2 * k.next_power_of_two());
        if capacity > row_len / 8 {
            return None;
        }
        let candidates = TopKPlan::new(capacity, k, max_log_tile)
            .filter(|plan| plan.log_k < SORT_CANDIDATES_FROM_LOG_K);
        Some(TopKFilter {
            log_sample,
            rank: rank as u32,
            capacity,
            candidates,
        })
    }

    /// Whether the full plan must select a row whose filter kept `count` words: fewer than
    /// `k` or more than the slots hold (`row_rescued` in `cuda/top_k.cuh`, with `k` and
    /// `capacity` as its bounds).
    #[cfg(test)]
    pub(crate) fn rescues(&self, count: u64, k: u64) -> bool {
        count < k || count > self.capacity
    }
}

/// The position in a row of `row_len` of sampled word `j` of `2^log_sample` in row `row`:
/// a hashed position inside stratum `j`, `[j * row_len >> log_sample, (j + 1) * row_len >>
/// log_sample)`. `top_k_sample` in `cuda/top_k.cuh` computes the same.
#[cfg(test)]
pub(crate) fn sample_position(row: u64, j: u64, row_len: u64, log_sample: u32) -> u64 {
    let lo = (j * row_len) >> log_sample;
    let hi = ((j + 1) * row_len) >> log_sample;
    let mut h = (row as u32).wrapping_mul(0x9e37_79b9)
        ^ ((row >> 32) as u32)
        ^ (j as u32).wrapping_mul(0x85eb_ca6b);
    h ^= h >> 16;
    h = h.wrapping_mul(0x7feb_352d);
    h ^= h >> 15;
    h = h.wrapping_mul(0x846c_a68b);
    h ^= h >> 16;
    lo + u64::from(h) % (hi - lo)
}

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
}

impl TopKRoute {
    /// The route for keys of `key_bytes` in rows of `row_len` (`1 <= k <= row_len`) on a
    /// device whose top-k tiles hold at most `2^max_log_tile` words.
    #[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
    pub(crate) fn new(key_bytes: usize, row_len: u64, k: u64, max_log_tile: u32) -> TopKRoute {
        if key_bytes > 4 {
            return TopKRoute::SortRanked;
        }
        match TopKPlan::new(row_len, k, max_log_tile) {
            Some(plan) => TopKRoute::Tiles(plan),
            None => TopKRoute::SortWords,
        }
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
    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// Runs `plan` over `rows` of `words` (composite words, `row_len` per row) with the tile
    /// emulation; the `K` words of each row's final run.
    fn run_plan(plan: &TopKPlan, words: &[u64], row_len: usize) -> Vec<Vec<u64>> {
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
        assert!(matches!(
            TopKRoute::new(4, 5000, 2048, 12),
            TopKRoute::Tiles(_)
        ));
        assert!(matches!(
            TopKRoute::new(2, 5000, 7, 12),
            TopKRoute::Tiles(_)
        ));
        assert_eq!(TopKRoute::new(4, 5000, 2049, 12), TopKRoute::SortWords);
        assert_eq!(TopKRoute::new(4, 1 << 20, 16384, 12), TopKRoute::SortWords);
        assert_eq!(TopKRoute::new(8, 5000, 1, 12), TopKRoute::SortRanked);
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

    /// The filtered route on the host, as the CUDA kernels run it: the threshold of each
    /// row's sample, its candidates (in any order, padded to `capacity`), the candidate plan,
    /// and the full plan for the rows it rescues. Returns each row's `K` words and whether
    /// any row was rescued.
    fn run_filtered(
        filter: &TopKFilter,
        full: &TopKPlan,
        words: &[u64],
        row_len: usize,
        k: usize,
    ) -> (Vec<Vec<u64>>, bool) {
        let mut candidates = Vec::new();
        let mut counts = Vec::new();
        for (r, row) in words.chunks(row_len).enumerate() {
            let mut sample: Vec<u64> = (0..1u64 << filter.log_sample)
                .map(|j| {
                    row[sample_position(r as u64, j, row_len as u64, filter.log_sample) as usize]
                })
                .collect();
            sample.sort_unstable();
            let threshold = sample[filter.rank as usize - 1];
            let mut kept: Vec<u64> = row.iter().copied().filter(|&w| w <= threshold).collect();
            counts.push(kept.len() as u64);
            kept.reverse();
            kept.resize(filter.capacity as usize, u64::MAX);
            candidates.extend(kept);
        }
        let plan = filter
            .candidates
            .as_ref()
            .expect("a tile plan of the candidates");
        let selected = run_plan(plan, &candidates, filter.capacity as usize);
        let rescued = run_plan(full, words, row_len);
        let mut any = false;
        let rows = counts
            .iter()
            .enumerate()
            .map(|(r, &count)| {
                if filter.rescues(count, k as u64) {
                    any = true;
                    rescued[r].clone()
                } else {
                    selected[r].clone()
                }
            })
            .collect();
        (rows, any)
    }

    #[test]
    fn filters_only_long_rows_and_keeps_a_tile_plan() {
        assert!(TopKFilter::new(1024, 32, 12).is_none());
        assert!(TopKFilter::new(100, 1, 12).is_none());
        for (row_len, k) in [
            (131_072u64, 50u64),
            (131_072, 1024),
            (1 << 24, 100),
            (262_144, 256),
        ] {
            let filter = TopKFilter::new(row_len, k, 12).unwrap();
            assert!(filter.capacity * 8 <= row_len && filter.capacity.is_power_of_two());
            assert!(filter.capacity >= 2 * k && u64::from(filter.rank) <= 1 << filter.log_sample);
            // Tiles select from the candidates of `k` up to 512 (`K` below 1024).
            assert_eq!(filter.candidates.is_some(), k <= 512, "{row_len} {k}");
            if let Some(plan) = &filter.candidates {
                assert_eq!(plan.passes[0].len, filter.capacity);
            }
            assert!(filter.rescues(k - 1, k) && !filter.rescues(k, k));
            assert!(filter.rescues(filter.capacity + 1, k));
        }
        // 2048 rows of 2^17, k = 1024: the sample of 4096 leaves 4096 candidates a row.
        assert_eq!(TopKFilter::new(131_072, 1024, 12).unwrap().capacity, 4096);
        // Past the tile the candidates are sorted: a sixteenth of a row of 2^20 for k =
        // 16384, an eighth of 2^17 for k = 4096.
        for (row_len, k, capacity) in [(1u64 << 20, 16_384u64, 65_536u64), (131_072, 4096, 16_384)]
        {
            let filter = TopKFilter::new(row_len, k, 12).unwrap();
            assert_eq!((filter.capacity, filter.candidates), (capacity, None));
        }
        assert!(TopKFilter::new(131_072, 16_384, 12).is_none());
        for e in 0..40 {
            let p = sample_position(3, 5, 1 << e | 77, 4.min(e));
            let lo = (5 * (1u64 << e | 77)) >> 4.min(e);
            assert!(p >= lo && p < (6 * (1u64 << e | 77)) >> 4.min(e));
        }
    }

    #[test]
    fn the_filtered_route_selects_the_best_k_and_rescues_rows_against_the_hash() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for (rows, row_len, k, distinct) in [
            (2usize, 40_000usize, 7usize, 1u64 << 32),
            (3, 40_000, 100, 3),
            (1, 70_001, 1, 1),
            (2, 65_537, 300, 1 << 32),
        ] {
            let filter = TopKFilter::new(row_len as u64, k as u64, 12).unwrap();
            let full = TopKPlan::new(row_len as u64, k as u64, 12).unwrap();
            for adversarial in [false, true] {
                let mut keys: Vec<u64> =
                    (0..rows * row_len).map(|_| next() % distinct + 1).collect();
                if adversarial {
                    // The best keys at the sampled positions: the threshold is then the
                    // row's rank-th best word, fewer than k candidates where rank < k.
                    for r in 0..rows {
                        for j in 0..1u64 << filter.log_sample {
                            let p = sample_position(r as u64, j, row_len as u64, filter.log_sample);
                            keys[r * row_len + p as usize] = 0;
                        }
                    }
                }
                let words: Vec<u64> = keys
                    .iter()
                    .enumerate()
                    .map(|(i, &key)| (key << 32) | (i % row_len) as u64)
                    .collect();
                let (got, rescued) = run_filtered(&filter, &full, &words, row_len, k);
                assert_eq!(
                    rescued,
                    adversarial && (filter.rank as usize) < k,
                    "{row_len} {k}"
                );
                for (r, row) in words.chunks(row_len).enumerate() {
                    let mut want = row.to_vec();
                    want.sort_unstable();
                    assert_eq!(&got[r][..k], &want[..k], "{rows}x{row_len} k {k} row {r}");
                }
            }
        }
    }
}
