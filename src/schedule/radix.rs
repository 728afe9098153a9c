//! The LSD radix sort of one row of ordered 32- or 64-bit words, keys alone or with values.
//!
//! A key's ordered bits (`crate::keys`: floats in total order, signed keys with the sign
//! flipped, descending as the complement) are cut into digits of [`RADIX_DIGIT_BITS`],
//! lowest first, and every digit pass moves each key (and its value) to its place among the
//! keys of its digit, stably. After the last digit the row is sorted, and equal keys keep the
//! order they came in: the sort is stable, on every backend alike.
//!
//! The launches, each reading or writing the keys once:
//! 1. **histogram**: one read of the keys counts every digit's bins at once
//!    (`digits * 2^8` counts);
//! 2. **starts**: each digit's counts become the bins' first positions, and a digit whose
//!    keys all fall in one bin is marked *skipped*: it would move nothing, so its pass
//!    returns at once (`u64` keys below 2^32 skip their upper four digits);
//! 3. one **digit pass** per digit: a tile of [`RADIX_THREADS`] threads of
//!    `keys_per_thread` keys ranks its keys by digit, stably, finds how many keys of each
//!    bin the tiles before it hold, and writes its keys to their places. On CUDA the
//!    tiles learn that by decoupled look-back (one pass per digit: Adinets and Merrill,
//!    "Onesweep", 2022); OpenCL promises no forward progress between work-groups, so there
//!    each digit is an upsweep of the tiles' counts, a scan of them and a downsweep;
//! 4. where an odd number of digits moved the keys, they end in the scratch, and one copy
//!    brings them back.
//!
//! Every pass reads raw keys and writes raw keys, encoding each key in registers to find its
//! digit, so that no pass depends on which passes before it were skipped.
//!
//! The state (`u32` words, [`RadixPlan::state_bytes`]): the counts, then starts, of every
//! digit; a skip flag per digit; a tile counter per digit (the CUDA passes number their
//! tiles in the order they start, so that every tile's predecessors are running or done);
//! and from [`RadixPlan::header_words`] two regions of one word per tile and bin. Digit
//! pass `d` uses region `d % 2`, which starts cleared, and clears the other one for the
//! pass after it (the pass before it, which used that region, has ended). The launches
//! clear the header and region 0 once, before the histogram. Which memory the passes touch
//! depends on the keys, so the oblivious mode never takes this plan.

use crate::kernel_contract::{
    RADIX_BINS, RADIX_COUNT_BITS, RADIX_DIGIT_BITS, RADIX_MAX_KEYS_PER_THREAD, RADIX_THREADS,
};

/// The most keys a radix sort takes: a look-back word counts fewer than
/// `2^RADIX_COUNT_BITS`. Longer rows take merge path.
pub(crate) const RADIX_MAX_LEN: u64 = (1 << RADIX_COUNT_BITS) - 1;

/// Whether one row of `n` key-value pairs of `element_bytes` (key and value) sorts by radix,
/// stably, on every backend alike: the GPUs' radix sort and the CPU's stable sort. Pairs
/// take it where they took merge path before (more than
/// `2^(POLICY.pair_min_log_merge_bytes - 1)` bytes, [`super::merge_path::pair_sort_tile`])
/// up to [`RADIX_MAX_LEN`]; beyond that, merge path's order. The choice depends on the
/// length and widths alone, never on the device, since every backend must give equal keys'
/// values the same order.
pub(crate) fn pairs_take_radix(n: u64, element_bytes: u64) -> bool {
    n <= RADIX_MAX_LEN && super::merge_path::pair_sort_tile(n, element_bytes).is_some()
}

/// The launches of the radix sort of one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RadixPlan {
    /// Keys of the row, at most [`RADIX_MAX_LEN`].
    pub n: u64,
    /// Digits of a key: its bits over [`RADIX_DIGIT_BITS`] (4 for 32-bit words, 8 for
    /// 64-bit ones).
    pub digits: u32,
    /// Keys a thread of a digit pass holds, `1..=RADIX_MAX_KEYS_PER_THREAD`.
    pub keys_per_thread: u32,
}

impl RadixPlan {
    /// The plan for `n` keys of `key_bytes` (4 or 8) whose digit passes give each thread
    /// `keys_per_thread` keys (clamped to `1..=RADIX_MAX_KEYS_PER_THREAD`).
    pub(crate) fn new(n: u64, key_bytes: u64, keys_per_thread: u32) -> RadixPlan {
        RadixPlan {
            n,
            digits: (key_bytes * 8) as u32 / RADIX_DIGIT_BITS,
            keys_per_thread: keys_per_thread.clamp(1, RADIX_MAX_KEYS_PER_THREAD),
        }
    }

    /// Keys of one tile of a digit pass.
    pub(crate) fn tile(&self) -> u64 {
        u64::from(RADIX_THREADS * self.keys_per_thread)
    }

    /// Tiles of a digit pass (at least one).
    pub(crate) fn tiles(&self) -> u64 {
        self.n.div_ceil(self.tile()).max(1)
    }

    /// Where the skip flags begin, in words: after every digit's counts.
    pub(crate) fn skip_offset(&self) -> u64 {
        u64::from(self.digits * RADIX_BINS)
    }

    /// Where the tile counters begin, in words: after the skip flags.
    pub(crate) fn tile_counter_offset(&self) -> u64 {
        self.skip_offset() + u64::from(self.digits)
    }

    /// Words of the state before the look-back: counts, skip flags and tile counters,
    /// rounded up to 16 bytes. The launches clear them once, before the histogram.
    pub(crate) fn header_words(&self) -> u64 {
        (self.tile_counter_offset() + u64::from(self.digits)).next_multiple_of(4)
    }

    /// Words of one look-back region: one per tile and bin.
    pub(crate) fn region_words(&self) -> u64 {
        self.tiles() * u64::from(RADIX_BINS)
    }

    /// Words of the look-back: two regions, used by the digit passes in turn.
    pub(crate) fn lookback_words(&self) -> u64 {
        2 * self.region_words()
    }

    /// Words the CUDA launches clear before the histogram: the header and the first region.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn cleared_words(&self) -> u64 {
        self.header_words() + self.region_words()
    }

    /// Bytes of the state.
    pub(crate) fn state_bytes(&self) -> u64 {
        (self.header_words() + self.lookback_words()) * 4
    }
}

/// The digit `digit` (0 the lowest) of an ordered word.
#[cfg(test)]
fn digit_of(word: u64, digit: u32) -> usize {
    ((word >> (digit * RADIX_DIGIT_BITS)) & u64::from(RADIX_BINS - 1)) as usize
}

/// The radix sort of ordered `words` (and `values` with them) as the launches of `plan` run
/// it: every digit's counts from one read, skipped digits, tile by tile ranks and the counts
/// of the tiles before each, and the keys between the row and a scratch. The tests check
/// the plans with it, and that it sorts stably. Returns how many digit passes moved keys.
#[cfg(test)]
pub(crate) fn emulate<W: Copy + Into<u64>, V: Copy>(
    plan: &RadixPlan,
    words: &mut [W],
    mut values: Option<&mut [V]>,
) -> u32 {
    let n = words.len();
    assert_eq!(n as u64, plan.n);
    let bins = RADIX_BINS as usize;
    let digits = plan.digits as usize;
    // 1. the histogram of every digit at once.
    let mut counts = vec![0u64; digits * bins];
    for &w in words.iter() {
        for d in 0..digits {
            counts[d * bins + digit_of(w.into(), d as u32)] += 1;
        }
    }
    // 2. the starts and the skip flags.
    let mut skip = vec![false; digits];
    for d in 0..digits {
        let row = &mut counts[d * bins..][..bins];
        skip[d] = row.contains(&(n as u64));
        let mut at = 0;
        for c in row.iter_mut() {
            (*c, at) = (at, at + *c);
        }
    }
    // 3. the digit passes, between the row and the scratch.
    let mut scratch_keys: Vec<W> = words.to_vec();
    let mut scratch_values: Option<Vec<V>> = values.as_deref().map(<[V]>::to_vec);
    let mut moved = 0;
    let tile = plan.tile() as usize;
    for d in 0..digits {
        if skip[d] {
            continue;
        }
        let in_scratch = moved % 2 == 1;
        let (from_k, to_k): (Vec<W>, &mut [W]) = if in_scratch {
            (scratch_keys.clone(), &mut *words)
        } else {
            (words.to_vec(), &mut scratch_keys[..])
        };
        let from_v: Option<Vec<V>> = if in_scratch {
            scratch_values.clone()
        } else {
            values.as_deref().map(<[V]>::to_vec)
        };
        // Each bin's keys in the tiles so far: the look-back's prefix.
        let mut before = vec![0u64; bins];
        let starts = &counts[d * bins..][..bins];
        let mut writes: Vec<(usize, usize)> = Vec::with_capacity(n);
        for first in (0..n).step_by(tile.max(1)) {
            let last = (first + tile).min(n);
            let mut rank = vec![0u64; bins];
            for (i, &w) in from_k.iter().enumerate().take(last).skip(first) {
                let b = digit_of(w.into(), d as u32);
                writes.push((i, (starts[b] + before[b] + rank[b]) as usize));
                rank[b] += 1;
            }
            for b in 0..bins {
                before[b] += rank[b];
            }
        }
        for &(from, to) in &writes {
            to_k[to] = from_k[from];
        }
        if let Some(from_v) = from_v {
            let to_v: &mut [V] = if in_scratch {
                values.as_deref_mut().expect("values")
            } else {
                scratch_values.as_deref_mut().expect("values")
            };
            for &(from, to) in &writes {
                to_v[to] = from_v[from];
            }
        }
        moved += 1;
    }
    // 4. back from the scratch after an odd number of moves.
    if moved % 2 == 1 {
        words.copy_from_slice(&scratch_keys);
        if let (Some(v), Some(s)) = (values, scratch_values.as_deref()) {
            v.copy_from_slice(s);
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn layout() {
        let p = RadixPlan::new(1 << 20, 4, 16);
        assert_eq!((p.digits, p.tile(), p.tiles()), (4, 4096, 256));
        assert_eq!(p.skip_offset(), 1024);
        assert_eq!(p.tile_counter_offset(), 1028);
        assert_eq!(p.header_words(), 1032);
        assert_eq!(p.lookback_words(), 2 * 256 * 256);
        assert_eq!(p.cleared_words(), 1032 + 256 * 256);
        assert_eq!(p.state_bytes(), (1032 + 2 * 65536) * 4);
        let p = RadixPlan::new(8193, 8, 40);
        assert_eq!((p.digits, p.keys_per_thread, p.tiles()), (8, 32, 2));
        assert_eq!(p.header_words(), 2048 + 16);
        assert_eq!(RadixPlan::new(0, 4, 0).tiles(), 1);
        assert_eq!(RadixPlan::new(0, 4, 0).keys_per_thread, 1);
    }

    /// Keys with their positions as values come out in a stable sort's order, for short
    /// and long rows, tiny and large tiles, both widths, and keys whose digits repeat
    /// (skipped passes, an odd number of moves).
    #[test]
    fn the_model_sorts_stably() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(56);
        for (n, kpt) in [
            (0usize, 1),
            (1, 1),
            (2, 16),
            (255, 1),
            (257, 1),
            (4097, 16),
            (70_001, 3),
        ] {
            for pattern in 0..5 {
                let words: Vec<u64> = (0..n)
                    .map(|i| match pattern {
                        0 => rng.r#gen(),
                        1 => rng.gen_range(0..4u64) << 40,
                        2 => 7,
                        3 => (n - i) as u64,
                        _ => u64::from(rng.r#gen::<u32>()),
                    })
                    .collect();
                let mut want: Vec<(u64, u32)> = words.iter().copied().zip(0..n as u32).collect();
                want.sort_by_key(|p| p.0);
                let mut keys = words.clone();
                let mut values: Vec<u32> = (0..n as u32).collect();
                let plan = RadixPlan::new(n as u64, 8, kpt);
                let moved = emulate(&plan, &mut keys, Some(&mut values));
                let got: Vec<(u64, u32)> = keys.into_iter().zip(values).collect();
                assert!(got == want, "n={n} kpt={kpt} pattern={pattern}");
                if pattern == 2 && n > 0 {
                    assert_eq!(moved, 0, "one key everywhere moves nothing");
                }
                if pattern == 4 && n > 300 {
                    assert_eq!(moved, 4, "keys below 2^32 skip four digits");
                }
                if pattern == 1 && n > 300 {
                    assert_eq!(moved, 1, "keys of one nonzero digit move once");
                }
            }
        }
    }

    #[test]
    fn the_model_sorts_u32_words_alone() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(57);
        let mut words: Vec<u32> = (0..100_000).map(|_| rng.r#gen()).collect();
        let mut want = words.clone();
        want.sort_unstable();
        emulate::<u32, ()>(&RadixPlan::new(100_000, 4, 16), &mut words, None);
        assert!(words == want);
    }
}
