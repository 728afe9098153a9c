//! Range partitioning on the host: the building blocks of a sample sort's partition step.
//!
//! A range partition splits keys into `p` ranges such that every key of range `i` comes
//! before every key of range `i + 1` in the sort order. Each range can then be sorted on its
//! own, on another device or another node, and the sorted ranges laid end to end are the
//! sorted whole: no final merge. The same four steps serve three scales
//! (`docs/scaling.md`):
//!
//! 1. [`sample`]: the ordered bits of a few keys at pseudo-random positions, sorted;
//! 2. [`Splitters::from_sorted_sample`]: the splitters of `p` ranges picked from that sample;
//! 3. [`Splitters::range_of`] / [`counts`]: each key's range by a binary search over the
//!    splitters, and how many keys fall in each range;
//! 4. [`scatter`]: a stable copy of keys (and values) into their ranges, which then lie
//!    contiguous in the output ([`Partition`]).
//!
//! [`crate::Sorter`] uses them for host slices larger than device memory and to spread a
//! sort over several devices; a distributed engine (DataFusion's range repartitioning,
//! Ballista) uses the same splitters and counts to send each node one range.
//!
//! Keys of every [`SortKey`] type are compared by their ordered bits ([`ordered_bits`]), the
//! crate's one mapping of keys to unsigned order: integers numerically, floats in
//! [`f32::total_cmp`] order, descending as the exact reverse.
//!
//! Equal keys never break the balance: every splitter has a range of its own that holds only
//! keys equal to it (a *single-key range*, [`Splitters::is_single_key`]), already sorted.
//! The other ranges hold the keys strictly between two neighbouring splitters, so however
//! often a key repeats, it fills at most its own range. With a sample of `s` keys and `p`
//! ranges, fewer than `s / p` sampled keys lie strictly between two neighbouring splitters,
//! which bounds each such range near `n / p` keys (exactly, below `ceil(n / p)`, when the
//! sample holds every key).
//!
//! ```
//! use bitonic::Order;
//! use bitonic::partition::{Splitters, counts, sample, scatter};
//! let keys = vec![5u32, 1, 9, 1, 7, 3, 1, 8];
//! let splitters = Splitters::from_sorted_sample(&sample(&keys, 64, Order::Ascending, 0), 2);
//! let per_range = counts(&keys, &splitters, Order::Ascending);
//! let mut out = vec![0u32; keys.len()];
//! let partition = scatter(&keys, None::<&[u32]>, &splitters, Order::Ascending, &mut out, None)?;
//! assert_eq!(per_range.iter().sum::<usize>(), keys.len());
//! for r in 0..partition.ranges() {
//!     assert_eq!(partition.range(r).len(), per_range[r]);
//! }
//! # Ok::<(), bitonic::Error>(())
//! ```

use std::ops::Range;

use rayon::prelude::*;

use crate::error::{Error, Result};
#[cfg(feature = "cuda")]
use crate::keys::{KeyEncoding, Word};
use crate::keys::{Order, SortKey};

/// Sampled keys per range by default ([`Splitters::choose`]): a range then exceeds twice its
/// share `n / p` only when fewer than 64 of the 128 sampled keys expected in so many keys
/// were drawn, a probability below 1e-9.
pub const OVERSAMPLING: usize = 64;

/// The smallest sample [`Splitters::choose`] takes, so that few ranges still get even ones.
const MIN_SAMPLE: usize = 1024;

/// Keys per block of the parallel count and scatter: each block is one piece of rayon work
/// with its own count per range.
const MIN_BLOCK: usize = 1 << 16;

/// The ordered bits of `key` in `order`: unsigned words whose unsigned order is the sort
/// order (integers numerically, floats in [`f32::total_cmp`] order, narrow keys widened),
/// the same mapping the sorting network uses. Equal bits, equal keys.
pub fn ordered_bits<K: SortKey>(key: K, order: Order) -> u64 {
    key.ordered_bits(order.is_descending())
}

/// The step of [`splitmix64`]'s state.
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// A pseudo-random generator with a fixed seed, so that a partition is the same on every run.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(GOLDEN_GAMMA);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The ordered bits ([`ordered_bits`]) of `count` keys of `keys` at positions drawn from a
/// generator seeded by `seed`, sorted ascending; every key's bits when `count >= keys.len()`.
/// The same inputs give the same sample.
pub fn sample<K: SortKey>(keys: &[K], count: usize, order: Order, seed: u64) -> Vec<u64> {
    let descending = order.is_descending();
    sample_of(keys, count, seed, |k| k.ordered_bits(descending))
}

#[cfg(feature = "cuda")]
/// [`sample`] of words of `encoding`'s kind: the same positions, and the same bits as
/// [`sample`] of the keys whose raw bits the words are.
pub(crate) fn sample_words<W: Word>(
    words: &[W],
    encoding: KeyEncoding,
    count: usize,
    seed: u64,
) -> Vec<u64> {
    sample_of(words, count, seed, |w| encoding.encode(w).into())
}

/// [`sample`] of elements whose ordered bits `bits` gives.
pub(crate) fn sample_of<T: Copy + Sync>(
    keys: &[T],
    count: usize,
    seed: u64,
    bits: impl Fn(T) -> u64 + Sync,
) -> Vec<u64> {
    sample_by(keys.len(), count, seed, |i| bits(keys[i]))
}

/// The positions of [`sample`]: `count` of `0..len` drawn from the generator seeded by `seed`
/// (repeats possible), or every position when `count >= len`, ascending.
#[cfg(feature = "arrow")]
pub(crate) fn sample_positions(len: usize, count: usize, seed: u64) -> Vec<usize> {
    sample_by(len, count, seed, |i| i as u64)
        .into_iter()
        .map(|p| p as usize)
        .collect()
}

/// The seed of the crate's own samples, so that a slice is partitioned the same way on every
/// run.
pub(crate) const SAMPLE_SEED: u64 = 0x5eed;

/// The sorted sample of [`sample`]: `bits(i)` of `count` positions `i` of `0..len` drawn from
/// the generator seeded by `seed`, or of every position when `count >= len`.
fn sample_by(len: usize, count: usize, seed: u64, bits: impl Fn(usize) -> u64 + Sync) -> Vec<u64> {
    let mut sampled: Vec<u64> = if count >= len {
        (0..len).into_par_iter().map(&bits).collect()
    } else {
        // The generator's i-th draw depends on `i` alone, so the draws run in parallel.
        (0..count as u64)
            .into_par_iter()
            .map(|i| {
                let mut state = seed.wrapping_add(i.wrapping_mul(GOLDEN_GAMMA));
                bits((splitmix64(&mut state) % len as u64) as usize)
            })
            .collect()
    };
    sampled.par_sort_unstable();
    sampled
}

/// The splitters of a range partition: distinct ordered bits, ascending. `m` splitters make
/// `2m + 1` ranges: range `2i` holds the keys strictly between splitters `i - 1` and `i`
/// (below the first, above the last, at the ends), range `2i + 1` only keys equal to
/// splitter `i`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Splitters {
    bits: Vec<u64>,
}

impl Splitters {
    /// The splitters of `ranges` ranges of roughly equal size from a sorted sample: the
    /// sampled bits at positions `i * s / ranges` for `i` in `1..ranges`, repeats dropped
    /// (the repeated key then has one single-key range). An empty sample or `ranges <= 1`
    /// gives no splitters: one range holds everything.
    pub fn from_sorted_sample(sorted_sample: &[u64], ranges: usize) -> Splitters {
        debug_assert!(sorted_sample.is_sorted(), "the sample must be sorted");
        let s = sorted_sample.len();
        let mut bits: Vec<u64> = Vec::new();
        if s > 0 {
            for i in 1..ranges {
                let pick = sorted_sample[(i * s / ranges).min(s - 1)];
                if bits.last() != Some(&pick) {
                    bits.push(pick);
                }
            }
        }
        Splitters { bits }
    }

    /// The splitters of `ranges` ranges of `keys` in `order`, from a sample of
    /// [`OVERSAMPLING`] keys per range (at least 1024, at most every key) with a fixed seed.
    pub fn choose<K: SortKey>(keys: &[K], ranges: usize, order: Order) -> Splitters {
        let count = ranges.saturating_mul(OVERSAMPLING).max(MIN_SAMPLE);
        Splitters::from_sorted_sample(&sample(keys, count, order, 0x5eed), ranges)
    }

    /// Splitters from distinct ordered bits, ascending (for example received from another
    /// node); [`Error::InvalidConfig`] when they are not strictly ascending.
    pub fn from_bits(bits: Vec<u64>) -> Result<Splitters> {
        if bits.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::InvalidConfig(
                "splitters must be strictly ascending ordered bits".to_string(),
            ));
        }
        Ok(Splitters { bits })
    }

    /// The splitters' ordered bits, strictly ascending.
    pub fn bits(&self) -> &[u64] {
        &self.bits
    }

    /// Number of ranges: twice the splitters, plus one.
    pub fn ranges(&self) -> usize {
        2 * self.bits.len() + 1
    }

    /// Whether `range` holds only keys equal to one splitter: such a range is sorted as it
    /// stands, values included.
    pub fn is_single_key(range: usize) -> bool {
        range % 2 == 1
    }

    /// The range of a key given by its ordered bits: a binary search over the splitters.
    #[inline]
    pub fn range_of_bits(&self, bits: u64) -> usize {
        let below = self.bits.partition_point(|&s| s < bits);
        2 * below + usize::from(self.bits.get(below) == Some(&bits))
    }

    /// The range of `key` sorted in `order` (the order the splitters were chosen in).
    #[inline]
    pub fn range_of<K: SortKey>(&self, key: K, order: Order) -> usize {
        self.range_of_bits(key.ordered_bits(order.is_descending()))
    }
}

/// How many keys fall in each of `splitters.ranges()` ranges, counted on rayon's threads.
pub fn counts<K: SortKey>(keys: &[K], splitters: &Splitters, order: Order) -> Vec<usize> {
    let descending = order.is_descending();
    let bits = |k: K| k.ordered_bits(descending);
    block_counts(keys, splitters, &bits, block_len(keys.len()))
        .into_iter()
        .fold(vec![0; splitters.ranges()], |mut total, block| {
            for (t, c) in total.iter_mut().zip(block) {
                *t += c;
            }
            total
        })
}

/// Keys per block: about four blocks per rayon thread, at least [`MIN_BLOCK`].
fn block_len(n: usize) -> usize {
    n.div_ceil(4 * rayon::current_num_threads()).max(MIN_BLOCK)
}

/// The count per range of each block of `block` keys.
fn block_counts<T: Copy + Sync>(
    keys: &[T],
    splitters: &Splitters,
    bits: &(impl Fn(T) -> u64 + Sync),
    block: usize,
) -> Vec<Vec<usize>> {
    keys.par_chunks(block)
        .map(|chunk| {
            let mut counts = vec![0usize; splitters.ranges()];
            for &k in chunk {
                counts[splitters.range_of_bits(bits(k))] += 1;
            }
            counts
        })
        .collect()
}

/// Where each range lies after a [`scatter`]: range `r` is `offsets[r]..offsets[r + 1]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    offsets: Vec<usize>,
}

impl Partition {
    /// The partition whose ranges hold `counts[r]` elements each, in order.
    pub fn from_counts(counts: &[usize]) -> Partition {
        let mut offsets = Vec::with_capacity(counts.len() + 1);
        let mut at = 0;
        offsets.push(0);
        for c in counts {
            at += c;
            offsets.push(at);
        }
        Partition { offsets }
    }

    /// Number of ranges.
    pub fn ranges(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The positions of range `r` in the output.
    pub fn range(&self, r: usize) -> Range<usize> {
        self.offsets[r]..self.offsets[r + 1]
    }

    /// Elements in all ranges.
    pub fn len(&self) -> usize {
        self.offsets[self.offsets.len() - 1]
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Copies `keys` (and `values`, which move with them) into `out_keys` (and `out_values`)
/// grouped by range, keeping the input order within each range (a stable scatter), on
/// rayon's threads. Returns where each range lies. Errors, before anything is written:
/// [`Error::LengthMismatch`] when the values or outputs differ in length from the keys, or
/// values are given without an output for them (or the reverse).
pub fn scatter<K: SortKey, V: Copy + Send + Sync>(
    keys: &[K],
    values: Option<&[V]>,
    splitters: &Splitters,
    order: Order,
    out_keys: &mut [K],
    out_values: Option<&mut [V]>,
) -> Result<Partition> {
    let descending = order.is_descending();
    let bits = |k: K| k.ordered_bits(descending);
    scatter_of(keys, values, splitters, bits, out_keys, out_values)
}

/// [`scatter`] of elements whose ordered bits `bits` gives.
pub(crate) fn scatter_of<T: Copy + Send + Sync, V: Copy + Send + Sync>(
    keys: &[T],
    values: Option<&[V]>,
    splitters: &Splitters,
    bits: impl Fn(T) -> u64 + Sync,
    out_keys: &mut [T],
    out_values: Option<&mut [V]>,
) -> Result<Partition> {
    let n = keys.len();
    let mismatch = |other: usize| Error::LengthMismatch {
        keys: n,
        values: other,
    };
    for len in [values.map(<[V]>::len), Some(out_keys.len())] {
        if let Some(len) = len.filter(|&l| l != n) {
            return Err(mismatch(len));
        }
    }
    match (&values, &out_values) {
        (Some(_), Some(o)) if o.len() != n => return Err(mismatch(o.len())),
        (Some(_), None) | (None, Some(_)) => {
            return Err(Error::InvalidConfig(
                "values and their output must be given together".to_string(),
            ));
        }
        _ => {}
    }
    let block = block_len(n);
    let per_block = block_counts(keys, splitters, &bits, block);
    let ranges = splitters.ranges();
    let totals: Vec<usize> = (0..ranges)
        .map(|r| per_block.iter().map(|c| c[r]).sum())
        .collect();
    let partition = Partition::from_counts(&totals);
    let key_pieces = pieces(out_keys, &per_block, ranges);
    let place = |chunk: &[T], mut dst: Vec<&mut [T]>, vals: Option<(&[V], Vec<&mut [V]>)>| {
        let mut at = vec![0usize; ranges];
        match vals {
            None => {
                for &k in chunk {
                    let r = splitters.range_of_bits(bits(k));
                    dst[r][at[r]] = k;
                    at[r] += 1;
                }
            }
            Some((vals, mut vdst)) => {
                for (&k, &v) in chunk.iter().zip(vals) {
                    let r = splitters.range_of_bits(bits(k));
                    dst[r][at[r]] = k;
                    vdst[r][at[r]] = v;
                    at[r] += 1;
                }
            }
        }
    };
    match (values, out_values) {
        (Some(values), Some(out_values)) => {
            let value_pieces = pieces(out_values, &per_block, ranges);
            keys.par_chunks(block)
                .zip(values.par_chunks(block))
                .zip(key_pieces.into_par_iter().zip(value_pieces))
                .for_each(|((k, v), (kd, vd))| place(k, kd, Some((v, vd))));
        }
        _ => keys
            .par_chunks(block)
            .zip(key_pieces)
            .for_each(|(k, kd)| place(k, kd, None)),
    }
    Ok(partition)
}

/// Cuts `out` into one piece per block and range: block `b`'s piece of range `r` is where
/// its `per_block[b][r]` elements of that range go, after those of the blocks before it.
/// The pieces are disjoint, so the blocks write them side by side.
fn pieces<'a, T>(
    out: &'a mut [T],
    per_block: &[Vec<usize>],
    ranges: usize,
) -> Vec<Vec<&'a mut [T]>> {
    let mut by_block: Vec<Vec<&'a mut [T]>> = per_block
        .iter()
        .map(|_| Vec::with_capacity(ranges))
        .collect();
    let mut rest = out;
    for r in 0..ranges {
        for (b, counts) in per_block.iter().enumerate() {
            let (piece, tail) = std::mem::take(&mut rest).split_at_mut(counts[r]);
            by_block[b].push(piece);
            rest = tail;
        }
    }
    by_block
}
