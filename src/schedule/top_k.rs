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
/// 3. each row's candidates become its top k as [`TopKFilter::candidates`] says: selected
///    in shared memory, selected by the tile plan, or sorted as rows.
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
    /// How each row's candidates become its top k.
    pub(crate) candidates: TopKCandidates,
}

/// Candidate slots of a row at most for [`TopKCandidates::Select`]: with the `K` slots of
/// the largest `K` and the counts, they fill 41 KiB of the 48 KiB every CUDA block gets
/// without an opt-in.
pub(crate) const CANDIDATES_SELECT_MAX: u64 = 4096;

/// log2 of the largest `K` of [`TopKCandidates::Select`].
pub(crate) const CANDIDATES_SELECT_MAX_LOG_K: u32 = 10;

/// How the filter's candidates of a row become its top k.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TopKCandidates {
    /// One block per row loads its candidates into shared memory, finds the `k`-th smallest
    /// word by radix selects, first of the keys and then, where equal keys straddle it, of
    /// their positions, and sorts the `k` words at or below it (`top_k_candidates` in
    /// `cuda/top_k.cuh`): one launch, where the tiles' network spends `log² K` comparators
    /// on every candidate. At most [`CANDIDATES_SELECT_MAX`] slots and `K` up to
    /// 2^[`CANDIDATES_SELECT_MAX_LOG_K`].
    Select,
    /// The tile plan over rows of `capacity` candidates.
    Tiles(TopKPlan),
    /// The rows of candidates (empty slots padded with `u64::MAX`) are sorted: `2K` passes
    /// the largest tile, or `K` reaches [`SORT_CANDIDATES_FROM_LOG_K`].
    Sort,
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
impl TopKCandidates {
    /// The way for rows of `capacity` candidates and `k`, with tiles of at most
    /// `2^max_log_tile` words; with `select` false never [`TopKCandidates::Select`].
    pub(crate) fn new(capacity: u64, k: u64, max_log_tile: u32, select: bool) -> TopKCandidates {
        let log_k = k.next_power_of_two().trailing_zeros();
        if select && capacity <= CANDIDATES_SELECT_MAX && log_k <= CANDIDATES_SELECT_MAX_LOG_K {
            return TopKCandidates::Select;
        }
        match TopKPlan::new(capacity, k, max_log_tile) {
            Some(plan) if plan.log_k < SORT_CANDIDATES_FROM_LOG_K => TopKCandidates::Tiles(plan),
            _ => TopKCandidates::Sort,
        }
    }
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
        let candidates = TopKCandidates::new(capacity, k, max_log_tile, true);
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

/// Rows the on-chip select takes at most: a warp holds a row's ordered keys in shared memory.
const SELECT_MAX_ROW: u64 = 4096;

/// log2 of the largest `K` of the on-chip select: one warp sorts the selected words.
const SELECT_MAX_LOG_K: u32 = 8;

/// Shared memory of a select block at most: what every CUDA device gives without an opt-in.
pub(crate) const SELECT_BLOCK_BYTES: u32 = 48 * 1024;

/// Warps of a select block at most (its threads at most `TOP_K_THREADS`).
const SELECT_MAX_WARPS: u32 = crate::kernel_contract::TOP_K_THREADS / 32;

/// The top-k of short rows on CUDA (`top_k_select` in `cuda/top_k.cuh`): one warp per row
/// holds the row's ordered keys in shared memory, finds the `k`-th smallest by a radix select
/// of 8-bit digits, takes in position order every key below it and the first of those equal
/// to it, and sorts the `K` taken words. One launch that reads each key once and does work
/// linear in the row, where the tiles' network spends `log² K` comparators on every key: on
/// an H100 16384 rows of 1024 with k = 32 were bound by the tiles' compute. Rows of at most
/// [`SELECT_MAX_ROW`] keys of at most 32 bits, `K` up to 2^[`SELECT_MAX_LOG_K`].
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TopKSelect {
    /// log2 of `K`, the power of two at or above `k`.
    pub(crate) log_k: u32,
    /// Shared bytes of one warp: `K` words of 8 bytes, the radix select's counts
    /// (`TOP_K_RADIX_WORDS`) and the row's keys of 4 bytes, rounded up to 8.
    pub(crate) warp_bytes: u32,
    /// Warps (rows) of a block: as many as [`SELECT_BLOCK_BYTES`] holds, at most
    /// [`SELECT_MAX_WARPS`].
    pub(crate) warps: u32,
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
impl TopKSelect {
    /// The select for `k` of rows of `row_len` keys of `key_bytes`, or `None` where it does
    /// not apply.
    pub(crate) fn new(key_bytes: usize, row_len: u64, k: u64) -> Option<TopKSelect> {
        debug_assert!(k >= 1 && k <= row_len);
        let log_k = k.next_power_of_two().trailing_zeros();
        if key_bytes > 4 || row_len > SELECT_MAX_ROW || log_k > SELECT_MAX_LOG_K {
            return None;
        }
        let counts = u64::from(crate::kernel_contract::TOP_K_RADIX_WORDS) * 4;
        let warp_bytes = ((8u64 << log_k) + counts + 4 * row_len).next_multiple_of(8) as u32;
        let warps = (SELECT_BLOCK_BYTES / warp_bytes).clamp(1, SELECT_MAX_WARPS);
        Some(TopKSelect {
            log_k,
            warp_bytes,
            warps,
        })
    }

    /// The block's dynamic shared memory.
    pub(crate) fn block_bytes(&self) -> u32 {
        self.warps * self.warp_bytes
    }
}

/// The radix select of `radix_select` in `cuda/top_k.cuh` on the host: the `rank`-th
/// smallest (from 1) of `keys` of `key_bits`, 8 bits a pass from the top, and how many keys
/// equal to it the rank takes; with `settle`, a pass whose digit holds exactly the keys still
/// wanted returns the top of the digit's range and `u32::MAX`.
#[cfg(test)]
pub(crate) fn model_radix_select(keys: &[u32], rank: u32, key_bits: u32, settle: bool) -> (u32, u32) {
    let (mut prefix, mut mask, mut need) = (0u32, 0u32, rank);
    let mut shift = key_bits as i32 - 8;
    while shift >= 0 {
        let mut hist = [0u32; 256];
        for &x in keys.iter().filter(|&&x| x & mask == prefix) {
            hist[((x >> shift) & 255) as usize] += 1;
        }
        let (mut digit, mut before) = (0usize, 0u32);
        while before + hist[digit] < need {
            before += hist[digit];
            digit += 1;
        }
        prefix |= (digit as u32) << shift;
        mask |= 255 << shift;
        need -= before;
        if settle && hist[digit] == need {
            return (prefix | ((1u32 << shift) - 1), u32::MAX);
        }
        shift -= 8;
    }
    (prefix, need)
}

/// The select on the host, as one warp of `top_k_select` runs it on a row of ordered keys
/// of `key_bits`: the composite words (`key << 32 | position`) it takes, sorted.
#[cfg(test)]
pub(crate) fn emulate_select(ordered: &[u32], key_bits: u32, k: usize) -> Vec<u64> {
    let (last, need) = model_radix_select(ordered, k as u32, key_bits, true);
    let mut equal_seen = 0;
    let mut taken: Vec<u64> = Vec::new();
    for (c, &x) in ordered.iter().enumerate() {
        let take = x < last || (x == last && equal_seen < need);
        equal_seen += u32::from(x == last);
        if take {
            taken.push(u64::from(x) << 32 | c as u64);
        }
    }
    assert_eq!(taken.len(), k, "the select takes exactly k");
    taken.sort_unstable();
    taken
}

/// `top_k_candidates` on the host: the `k` smallest of distinct composite words in any
/// order, by a radix select of the keys and, where equal keys straddle the `k`-th, of the
/// positions of the keys equal to it; sorted.
#[cfg(test)]
pub(crate) fn emulate_candidates(words: &[u64], k: usize) -> Vec<u64> {
    let keys: Vec<u32> = words.iter().map(|&w| (w >> 32) as u32).collect();
    let (key, need) = model_radix_select(&keys, k as u32, 32, true);
    let mut last = u64::from(key) << 32 | u64::from(u32::MAX);
    if need != u32::MAX {
        let positions: Vec<u32> = words
            .iter()
            .filter(|&&w| (w >> 32) as u32 == key)
            .map(|&w| w as u32)
            .collect();
        last = u64::from(key) << 32 | u64::from(model_radix_select(&positions, need, 32, true).0);
    }
    let mut taken: Vec<u64> = words.iter().copied().filter(|&w| w <= last).collect();
    assert_eq!(taken.len(), k, "the candidates' select takes exactly k");
    taken.sort_unstable();
    taken
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
        let capacity = filter.capacity as usize;
        let selected = match &filter.candidates {
            TopKCandidates::Tiles(plan) => run_plan(plan, &candidates, capacity),
            // The select takes the k smallest candidates, the sort sorts them all.
            _ => candidates
                .chunks(capacity)
                .map(|row| {
                    let mut row = row.to_vec();
                    row.sort_unstable();
                    row
                })
                .collect(),
        };
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
            // Up to 4096 slots and K of 1024 the candidates are selected in shared memory;
            // else tiles select from those of `k` up to 512 (`K` below 1024).
            let select = filter.capacity <= 4096;
            assert_eq!(
                filter.candidates == TopKCandidates::Select,
                select,
                "{row_len} {k}"
            );
            match TopKCandidates::new(filter.capacity, k, 12, false) {
                TopKCandidates::Tiles(plan) => {
                    assert!(k <= 512);
                    assert_eq!(plan.passes[0].len, filter.capacity);
                }
                other => assert_eq!((other, k > 512), (TopKCandidates::Sort, true)),
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
            assert_eq!(
                (filter.capacity, filter.candidates),
                (capacity, TopKCandidates::Sort)
            );
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
            let select = TopKFilter::new(row_len as u64, k as u64, 12).unwrap();
            assert_eq!(select.candidates, TopKCandidates::Select);
            // The same filter with the tiles selecting from the candidates.
            let tiles = TopKFilter {
                candidates: TopKCandidates::new(select.capacity, k as u64, 12, false),
                ..select.clone()
            };
            let full = TopKPlan::new(row_len as u64, k as u64, 12).unwrap();
            for (filter, adversarial) in [
                (&select, false),
                (&select, true),
                (&tiles, false),
                (&tiles, true),
            ] {
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

    #[test]
    fn the_select_takes_the_best_k_with_ties_to_the_lower_position() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for key_bits in [16u32, 32] {
            let top = if key_bits == 16 { 0xffff } else { u32::MAX };
            for row_len in [1usize, 2, 3, 31, 32, 33, 255, 1024, 1025, 4096] {
                for k in [1usize, 2, 7, 32, 100, 256] {
                    if k > row_len {
                        continue;
                    }
                    let rows: [Vec<u32>; 6] = [
                        (0..row_len).map(|_| next() as u32 & top).collect(),
                        vec![top; row_len],
                        (0..row_len).map(|_| next() as u32 % 3).collect(),
                        (0..row_len).map(|i| (row_len - i) as u32 & top).collect(),
                        (0..row_len).map(|i| (i % 17) as u32 * 0x0101).collect(),
                        (0..row_len).map(|_| (next() as u32 & 0x0f0f) | 0x3000).collect(),
                    ];
                    for ordered in rows {
                        let mut want: Vec<u64> = ordered
                            .iter()
                            .enumerate()
                            .map(|(c, &x)| u64::from(x) << 32 | c as u64)
                            .collect();
                        want.sort_unstable();
                        want.truncate(k);
                        assert_eq!(emulate_select(&ordered, key_bits, k), want, "{row_len} {k}");
                    }
                }
            }
        }
        // Candidates: distinct words in any order, keys with ties straddling the k-th.
        for distinct in [1u64, 3, 1000, 1 << 32] {
            for (n, k) in [(1usize, 1usize), (40, 7), (4096, 1024), (3000, 300)] {
                let mut words: Vec<u64> = (0..n as u64)
                    .map(|p| (next() % distinct) << 32 | (p * 2_654_435_761 % (1 << 32)))
                    .collect();
                words.reverse();
                let mut want = words.clone();
                want.sort_unstable();
                want.truncate(k);
                assert_eq!(emulate_candidates(&words, k), want, "{n} {k} {distinct}");
            }
        }
        let select = TopKSelect::new(4, 1024, 32).unwrap();
        assert_eq!((select.log_k, select.warp_bytes, select.warps), (5, 5392, 8));
        let widest = TopKSelect::new(2, SELECT_MAX_ROW, 256).unwrap();
        assert!(widest.block_bytes() <= SELECT_BLOCK_BYTES && widest.warp_bytes % 8 == 0);
        assert!(TopKSelect::new(8, 1024, 32).is_none());
        assert!(TopKSelect::new(4, SELECT_MAX_ROW + 1, 32).is_none());
        assert!(TopKSelect::new(4, 1024, 257).is_none());
    }
}
