//! The candidate filter in front of the top-k of long rows on the GPU backends: its sample,
//! threshold and capacity, and how a row's candidates become its top k.

use super::{TOP_K_MAX_LOG_TILE, TopKPlan};
use crate::kernel_contract::{TOP_K_RADIX_WORDS, padded_words};

/// log2 of the most sampled words of a block of the sample: one on-chip tile
/// ([`TOP_K_MAX_LOG_TILE`]).
const SAMPLE_MAX_LOG_BLOCK: u32 = TOP_K_MAX_LOG_TILE;

/// log2 of the sampled words of each block where a row's sample takes several: 2048 words
/// are one round of eight loads in flight for a block of 256 threads, so a block costs
/// about one trip to memory.
const SAMPLE_LOG_SPLIT_BLOCK: u32 = 11;

/// log2 of the most sampled words of a row.
const FILTER_MAX_LOG_SAMPLE: u32 = 16;

/// The most words a row's sample blocks pick (`blocks * rank`): the row's last block
/// compares them pairwise, two per thread at most, and holds them (8 bytes each) over its
/// 2^[`SAMPLE_LOG_SPLIT_BLOCK`] keys (4 bytes each) in shared memory.
const SAMPLE_MAX_PICKS: u64 = 512;

/// log2 of the smallest `K` whose filtered candidates are sorted as rows rather than selected
/// by tiles: the tiles' passes over a few runs of `K` are long launches of few blocks, which
/// a sort of the candidates as rows outruns from this `K` on; below it the tiles' shorter
/// merges keep them ahead or level (`compare.sh topk` measures both).
const SORT_CANDIDATES_FROM_LOG_K: u32 = 10;

/// A candidate filter in front of the bitonic top-k of long rows. A pass over the keys
/// costs one read of them, where the tiles' first pass sorts every element on chip, so a
/// long row first shrinks to a few candidates per `k`:
/// 1. a sample of `2^log_sample` words per row, one at a hashed position of each of as many
///    equal strata ([`sample_position`]), gives the threshold: the sample's `rank`-th
///    smallest word. Where rows are fewer than the multiprocessors, a row's sample spreads
///    over several blocks and grows: the blocks run side by side, and a larger sample
///    brings the threshold nearer the row's `k`-th word, so fewer slots (CUDA's last block of
///    a row to arrive combines their picks; OpenCL, which promises no order between
///    work-groups, combines them in a launch of its own);
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
/// placed against the hash can cause, has its best `k` selected exactly from all its keys
/// into its first slots ([`TopKFilter::rescues`]; `top_k_exact` in `cuda/top_k_filter.cuh`),
/// which the candidates' step then reads instead of its count: the answer is never wrong,
/// only slower.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TopKFilter {
    /// log2 of the sampled words of a row; at most the row length.
    pub(crate) log_sample: u32,
    /// log2 of the blocks that sample a row, each `2^(log_sample - log_sample_blocks)`
    /// strata; their picks, `rank` words each, fit the shared memory of their keys.
    pub(crate) log_sample_blocks: u32,
    /// The threshold is the sample's `rank`-th smallest word (from 1), `rank <= 2^log_sample`.
    pub(crate) rank: u32,
    /// Candidate slots of a row: a power of two of at least `2K`, at most an eighth of the
    /// row.
    pub(crate) capacity: u64,
    /// How each row's candidates become its top k.
    pub(crate) candidates: TopKCandidates,
}

/// log2 of the largest `K` of [`TopKCandidates::Select`]. The block sorts its `K` taken
/// words with the shared-memory network, `log² K / 2` barriers, which past 2048 cost more
/// than sorting the candidates as rows saves (`cuda_top_k_profile` with and without
/// `BITONIC_TIMING_TOPK_TILES` compares the two).
pub(crate) const CANDIDATES_SELECT_MAX_LOG_K: u32 = 11;

/// Shared bytes of the candidates' select (`top_k_candidates` in `cuda/top_k_filter.cuh`)
/// over `capacity` slots with `K = 2^log_k`: the slots, the `K` padded words, the radix
/// select's counts and the count of slots taken. The kernel has no static shared memory, so
/// this is all a launch asks for.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) fn candidates_select_bytes(capacity: u64, log_k: u32) -> u64 {
    8 * capacity + 8 * padded_words(log_k) + 4 * (u64::from(TOP_K_RADIX_WORDS) + 1)
}

/// On-chip bytes of a block (work-group) of the sample of `2^log_sample` keys: the keys, the
/// radix select's counts and three words (the rank's last key, the picks taken, and on CUDA
/// whether the block is its row's last). The kernels have no static on-chip memory, so this
/// is all a launch asks for.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) fn sample_bytes(log_sample: u32) -> u32 {
    (4 << log_sample) + 4 * (TOP_K_RADIX_WORDS + 3)
}

/// How the filter's candidates of a row become its top k.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TopKCandidates {
    /// One block per row loads its candidates into shared memory, finds the `k`-th smallest
    /// word by radix selects, first of the keys and then, where equal keys straddle it, of
    /// their positions, and sorts the `k` words at or below it (`top_k_candidates` in
    /// `cuda/top_k_filter.cuh`): one launch, where the tiles' network spends `log² K` comparators
    /// on every candidate. Where the slots fit the shared memory a block may take
    /// ([`candidates_select_bytes`]), and `K` up to 2^[`CANDIDATES_SELECT_MAX_LOG_K`].
    Select,
    /// The tile plan over rows of `capacity` candidates.
    Tiles(TopKPlan),
    /// The rows of candidates (empty slots padded with `u64::MAX`) are sorted: `2K` passes
    /// the largest tile, or `K` reaches [`SORT_CANDIDATES_FROM_LOG_K`].
    Sort,
}

#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
impl TopKCandidates {
    /// The way for rows of `capacity` candidates and `k`, with tiles of at most
    /// `2^max_log_tile` words and at most `select_bytes` of shared memory for a block of
    /// [`TopKCandidates::Select`] (0: never that way).
    pub(crate) fn new(
        capacity: u64,
        k: u64,
        max_log_tile: u32,
        select_bytes: u32,
    ) -> TopKCandidates {
        let log_k = k.next_power_of_two().trailing_zeros();
        if log_k <= CANDIDATES_SELECT_MAX_LOG_K
            && candidates_select_bytes(capacity, log_k) <= u64::from(select_bytes)
        {
            return TopKCandidates::Select;
        }
        match TopKPlan::new(capacity, k, max_log_tile) {
            Some(plan) if plan.log_k < SORT_CANDIDATES_FROM_LOG_K => TopKCandidates::Tiles(plan),
            _ => TopKCandidates::Sort,
        }
    }
}

/// What the filter's plan takes from the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FilterDevice {
    /// log2 of the largest top-k tile in words.
    pub(crate) max_log_tile: u32,
    /// Shared memory a block of [`TopKCandidates::Select`] may use (0: never that way).
    pub(crate) select_bytes: u32,
    /// Multiprocessors: rows fewer than these spread their samples over several blocks.
    pub(crate) multiprocessors: u32,
}

#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
impl TopKFilter {
    /// The filter for `k` of `rows` rows of `row_len` (`1 <= k <= row_len`) on `device`,
    /// or `None` where the rows are too short for it to pay: the candidates would be more
    /// than an eighth of a row. A row's sample is one block's tile, or where the rows leave
    /// multiprocessors idle the largest sample of blocks of 2^[`SAMPLE_LOG_SPLIT_BLOCK`]
    /// words that keeps at most two blocks on each, within [`FILTER_MAX_LOG_SAMPLE`] and
    /// [`SAMPLE_MAX_PICKS`].
    pub(crate) fn new(rows: u64, row_len: u64, k: u64, device: FilterDevice) -> Option<TopKFilter> {
        debug_assert!(k >= 1 && k <= row_len);
        let max_log_sample = (row_len / 8).checked_ilog2()?;
        let multiprocessors = u64::from(device.multiprocessors.max(1));
        if rows < multiprocessors {
            let most_blocks = (2 * multiprocessors / rows.max(1)).ilog2();
            let most_log_sample = max_log_sample.min(FILTER_MAX_LOG_SAMPLE);
            for log_blocks in (1..=most_blocks).rev() {
                let log_sample = SAMPLE_LOG_SPLIT_BLOCK + log_blocks;
                if log_sample > most_log_sample {
                    continue;
                }
                let filter = Self::sampled(row_len, k, log_sample, log_blocks, device);
                if let Some(filter) = filter
                    && u64::from(filter.rank) << log_blocks <= SAMPLE_MAX_PICKS
                {
                    return Some(filter);
                }
            }
        }
        let log_sample = max_log_sample.min(SAMPLE_MAX_LOG_BLOCK.min(device.max_log_tile));
        Self::sampled(row_len, k, log_sample, 0, device)
    }

    /// The filter with a sample of `2^log_sample` words a row over `2^log_sample_blocks`
    /// blocks: its rank and capacity, or `None` where the rank passes the sample or the
    /// capacity an eighth of the row.
    fn sampled(
        row_len: u64,
        k: u64,
        log_sample: u32,
        log_sample_blocks: u32,
        device: FilterDevice,
    ) -> Option<TopKFilter> {
        // Row elements per sampled word.
        let stride = row_len as f64 / (1u64 << log_sample) as f64;
        let expected = k as f64 / stride;
        let rank = (expected + 5.0 * expected.sqrt() + 5.0).ceil();
        if rank > (1u64 << (log_sample - log_sample_blocks)) as f64 {
            return None;
        }
        let slots = ((rank + 5.0 * rank.sqrt() + 10.0) * stride).ceil() as u64;
        let capacity = slots.next_power_of_two().max(2 * k.next_power_of_two());
        if capacity > row_len / 8 {
            return None;
        }
        let candidates = TopKCandidates::new(capacity, k, device.max_log_tile, device.select_bytes);
        Some(TopKFilter {
            log_sample,
            log_sample_blocks,
            rank: rank as u32,
            capacity,
            candidates,
        })
    }

    /// Whether a row whose filter kept `count` words must be selected exactly from all its
    /// keys: fewer than `k` or more than the slots hold (`top_k_exact`, and `row_words` in
    /// `cuda/top_k.cuh`, `tk_rescued` in `kernels/top_k.clh`).
    #[cfg(test)]
    pub(crate) fn rescues(&self, count: u64, k: u64) -> bool {
        count < k || count > self.capacity
    }
}

/// The position in a row of `row_len` of sampled word `j` of `2^log_sample` in row `row`:
/// a hashed position inside stratum `j`, `[j * row_len >> log_sample, (j + 1) * row_len >>
/// log_sample)`, the 32-bit hash scaled to the stratum's length by a multiply (a stratum is
/// far shorter than 2^32: a row on a device holds far fewer than 2^44 keys; a longer one
/// takes its first 2^32 positions). `top_k_sample` in `cuda/top_k_filter.cuh` computes the
/// same, where a 64-bit remainder would take dozens of instructions a key.
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
    lo + ((u64::from(h) * (hi - lo).min(1 << 32)) >> 32)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{run_plan, xorshift};
    use super::*;

    /// The filtered route on the host, as the CUDA kernels run it: the threshold of each
    /// row's sample (by its blocks' picks, checked against the whole sample's rank-th
    /// word), its candidates (in any order, padded to `capacity`) or, for a row it
    /// rescues, its best `k` words, then the candidates' step. Returns each row's `K` words
    /// and whether any row was rescued.
    fn run_filtered(
        filter: &TopKFilter,
        words: &[u64],
        row_len: usize,
        k: usize,
    ) -> (Vec<Vec<u64>>, bool) {
        let mut candidates = Vec::new();
        let mut any = false;
        for (r, row) in words.chunks(row_len).enumerate() {
            let sample: Vec<u64> = (0..1u64 << filter.log_sample)
                .map(|j| {
                    row[sample_position(r as u64, j, row_len as u64, filter.log_sample) as usize]
                })
                .collect();
            // Each block's `rank` smallest, then the rank-th of those (`top_k_sample`).
            let rank = filter.rank as usize;
            let mut picks: Vec<u64> = sample
                .chunks(sample.len() >> filter.log_sample_blocks)
                .flat_map(|block| {
                    let mut block = block.to_vec();
                    block.sort_unstable();
                    block.truncate(rank);
                    block
                })
                .collect();
            picks.sort_unstable();
            let threshold = picks[rank - 1];
            let mut whole = sample.clone();
            whole.sort_unstable();
            assert_eq!(
                threshold,
                whole[rank - 1],
                "the picks hold the sample's rank-th"
            );
            let mut kept: Vec<u64> = row.iter().copied().filter(|&w| w <= threshold).collect();
            if filter.rescues(kept.len() as u64, k as u64) {
                // `top_k_exact`: the row's best k, in any order.
                any = true;
                kept = row.to_vec();
                kept.sort_unstable();
                kept.truncate(k);
            }
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
        (selected, any)
    }

    /// A device whose blocks have the shared memory of no opt-in, and one with an opt-in
    /// limit of 227 KiB; both with 132 multiprocessors.
    const DEFAULT: FilterDevice = FilterDevice {
        max_log_tile: 12,
        select_bytes: 48 * 1024,
        multiprocessors: 132,
    };
    const OPT_IN: FilterDevice = FilterDevice {
        select_bytes: 232_448,
        ..DEFAULT
    };
    /// Rows enough to keep every multiprocessor busy: one block samples a row.
    const MANY: u64 = 1024;

    #[test]
    fn filters_only_long_rows_and_keeps_a_tile_plan() {
        assert!(TopKFilter::new(MANY, 1024, 32, DEFAULT).is_none());
        assert!(TopKFilter::new(1, 100, 1, DEFAULT).is_none());
        for (row_len, k) in [
            (131_072u64, 50u64),
            (131_072, 1024),
            (1 << 24, 100),
            (262_144, 256),
            (131_072, 2048),
            (1 << 20, 100),
        ] {
            let filter = TopKFilter::new(MANY, row_len, k, DEFAULT).unwrap();
            assert!(filter.capacity * 8 <= row_len && filter.capacity.is_power_of_two());
            assert!(filter.capacity >= 2 * k && u64::from(filter.rank) <= 1 << filter.log_sample);
            // Without an opt-in, up to 4096 slots and K of 1024 the candidates are selected
            // in shared memory; else tiles select from those of `k` up to 512 (`K` below
            // 1024).
            let select = filter.capacity <= 4096 && k <= 1024;
            assert_eq!(
                filter.candidates == TopKCandidates::Select,
                select,
                "{row_len} {k}"
            );
            match TopKCandidates::new(filter.capacity, k, 12, 0) {
                TopKCandidates::Tiles(plan) => {
                    assert!(k <= 512);
                    assert_eq!(plan.passes[0].len, filter.capacity);
                }
                other => assert_eq!((other, k > 512), (TopKCandidates::Sort, true)),
            }
            assert!(filter.rescues(k - 1, k) && !filter.rescues(k, k));
            assert!(filter.rescues(filter.capacity + 1, k));
        }
        // With an opt-in of 227 KiB the select takes 8192 slots with K = 2048 (81 KiB) and
        // 16384 with K = 128 (130 KiB), not 131072 slots, nor K = 4096.
        for (row_len, k, capacity, select) in [
            (131_072u64, 2048u64, 8192u64, true),
            (1 << 20, 100, 16_384, true),
            (1 << 24, 100, 131_072, false),
            (131_072, 4096, 16_384, false),
        ] {
            let filter = TopKFilter::new(MANY, row_len, k, OPT_IN).unwrap();
            assert_eq!(filter.capacity, capacity, "{row_len} {k}");
            assert_eq!(filter.candidates == TopKCandidates::Select, select);
            let bytes = candidates_select_bytes(capacity, k.next_power_of_two().ilog2());
            assert_eq!(bytes <= u64::from(OPT_IN.select_bytes), select || k > 2048);
        }
        // 2048 rows of 2^17, k = 1024: the sample of 4096 leaves 4096 candidates a row.
        assert_eq!(
            TopKFilter::new(MANY, 131_072, 1024, DEFAULT)
                .unwrap()
                .capacity,
            4096
        );
        // Past the tile the candidates are sorted: a sixteenth of a row of 2^20 for k =
        // 16384, an eighth of 2^17 for k = 4096.
        for (row_len, k, capacity) in [(1u64 << 20, 16_384u64, 65_536u64), (131_072, 4096, 16_384)]
        {
            let filter = TopKFilter::new(MANY, row_len, k, OPT_IN).unwrap();
            assert_eq!(
                (filter.capacity, filter.candidates),
                (capacity, TopKCandidates::Sort)
            );
        }
        assert!(TopKFilter::new(MANY, 131_072, 16_384, OPT_IN).is_none());
        for e in 0..40 {
            let p = sample_position(3, 5, 1 << e | 77, 4.min(e));
            let lo = (5 * (1u64 << e | 77)) >> 4.min(e);
            assert!(p >= lo && p < (6 * (1u64 << e | 77)) >> 4.min(e));
        }
    }

    #[test]
    fn few_rows_spread_a_larger_sample_over_blocks() {
        // (rows, row_len, k) -> (log_sample, log_sample_blocks, rank, capacity, select).
        for ((rows, row_len, k), want) in [
            // One row of 2^24: 32 blocks of 2048 words (288 picks) leave 16384 slots, which
            // an opt-in of 227 KiB lets one block select, where 4096 words left 131072.
            ((1u64, 1u64 << 24, 100u64), (16, 5, 9, 16_384, true)),
            // 64 rows: four blocks a row keep 256 on 132 multiprocessors, 1024 slots.
            ((64, 131_072, 50), (13, 2, 17, 1024, true)),
            // The picks bound the blocks: with k = 2048 or 16384, two blocks of 2048.
            ((4, 131_072, 2048), (12, 1, 109, 8192, true)),
            ((8, 1 << 20, 16_384), (12, 1, 109, 65_536, false)),
            // As many rows as multiprocessors: one block a row.
            ((132, 131_072, 50), (12, 0, 13, 2048, true)),
        ] {
            let filter = TopKFilter::new(rows, row_len, k, OPT_IN).unwrap();
            let got = (
                filter.log_sample,
                filter.log_sample_blocks,
                filter.rank,
                filter.capacity,
                filter.candidates == TopKCandidates::Select,
            );
            assert_eq!(got, want, "{rows} x {row_len}, k {k}");
            assert!(u64::from(filter.rank) << filter.log_sample_blocks <= SAMPLE_MAX_PICKS);
            assert!((rows << filter.log_sample_blocks) <= 2 * 132);
        }
        let one = TopKFilter::new(1, 1 << 24, 100, DEFAULT).unwrap();
        assert!(matches!(one.candidates, TopKCandidates::Tiles(_)));
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
            // The sample of these few rows over several blocks, and of one block a row.
            let split = TopKFilter::new(rows as u64, row_len as u64, k as u64, DEFAULT).unwrap();
            let whole = TopKFilter::new(MANY, row_len as u64, k as u64, DEFAULT).unwrap();
            assert!(split.log_sample_blocks > 0 && whole.log_sample_blocks == 0);
            assert_eq!(split.candidates, TopKCandidates::Select);
            // The same filter with the tiles selecting from the candidates.
            let tiles = TopKFilter {
                candidates: TopKCandidates::new(split.capacity, k as u64, 12, 0),
                ..split.clone()
            };
            for (filter, adversarial) in [
                (&split, false),
                (&split, true),
                (&whole, false),
                (&whole, true),
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
                let (got, rescued) = run_filtered(filter, &words, row_len, k);
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
