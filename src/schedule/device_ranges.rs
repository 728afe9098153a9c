//! The plan of a host slice sorted in ranges in one device's memory: its keys fit the
//! device, but not beside the scratch of one sort of them all (a merge-path sort needs a
//! second buffer as large as its keys).
//!
//! The keys cross the bus once each way:
//! 1. splitters from a sample of the slice ([`crate::partition`]);
//! 2. the slice goes up in chunks; each chunk, once on the device, is appended to one
//!    region per range (the CUDA range scatter), while the next chunk travels;
//! 3. each region that needs it is sorted on its own, with a scratch as large as the
//!    largest region, and comes back into its place in the slice while the next is sorted.
//!
//! The regions are sized from the sample before the keys are seen, so each gets a margin
//! ([`DeviceRanges::from_sample`]); a range that outgrows its region leaves the keys where
//! they are on the host (nothing has been written yet), and the sort takes the host
//! partition instead.

use crate::partition::Splitters;

/// Keys per range aimed at: 512 MiB of `u32`, so that a range's scratch is a small part of a
/// GPU's memory and its sort is long enough to hide the previous range's download.
const RANGE_TARGET: usize = 1 << 27;
/// The fewest ranges a slice is split into (fewer would make the scratch a large part of
/// the memory the path exists to save).
const MIN_RANGES: usize = 8;
/// The most keys sampled for the splitters and the regions' sizes.
const SAMPLE_MAX: usize = 1 << 23;
/// The largest chunk that goes up at a time.
const CHUNK_MAX: usize = 1 << 24;
/// Chunks per slice at least, so that the scatter of one overlaps the upload of the next.
const MIN_CHUNKS: usize = 16;
/// A region's margin over the keys its range is expected to get, in standard deviations of
/// the sampled count (a range overflows with a probability below 1e-9), plus a few keys.
const MARGIN_SIGMAS: f64 = 6.0;
const MARGIN_KEYS: f64 = 8.0;

/// Splitters to pick from the sample of a slice of `n` keys, at most the range scatter's
/// limit.
pub(crate) fn ranges_wanted(n: usize) -> usize {
    let most = crate::kernel_contract::RANGE_MAX_SPLITTERS as usize + 1;
    n.div_ceil(RANGE_TARGET).clamp(MIN_RANGES, most)
}

/// Keys sampled from a slice of `n` keys (every key where that is fewer than the most).
pub(crate) fn sample_len(n: usize) -> usize {
    n.min(SAMPLE_MAX)
}

/// How the slice is laid out in device memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DeviceRanges {
    /// Keys per uploaded chunk (the last may be shorter).
    pub(crate) chunk: usize,
    /// The first key of each range's region, in keys from the start of the buffer.
    pub(crate) offsets: Vec<u64>,
    /// The keys each range's region holds.
    pub(crate) capacities: Vec<u64>,
    /// The largest region of a range that is sorted (not a single-key range): the scratch
    /// of the ranges' sorts.
    pub(crate) largest_sorted: u64,
}

impl DeviceRanges {
    /// The layout for `n` keys from their sorted sample (the ordered bits of `sample.len()`
    /// keys, every key when it is `n` long) and the splitters picked from it. A range with
    /// `c` sampled keys of `s` gets `n (c + 6 sqrt(c) + 8) / s` keys, or exactly `c` when
    /// the sample is every key.
    pub(crate) fn from_sample(n: usize, sample: &[u64], splitters: &Splitters) -> DeviceRanges {
        let counts = sample_counts(sample, splitters);
        let s = sample.len().max(1) as f64;
        let exact = sample.len() >= n;
        let capacities: Vec<u64> = counts
            .iter()
            .map(|&c| {
                if exact {
                    return c as u64;
                }
                let c = c as f64;
                let keys = (n as f64 * (c + MARGIN_SIGMAS * c.sqrt() + MARGIN_KEYS) / s).ceil();
                (keys as u64).min(n as u64)
            })
            .collect();
        let mut offsets = Vec::with_capacity(capacities.len());
        let mut total = 0u64;
        for &c in &capacities {
            offsets.push(total);
            total += c;
        }
        let largest_sorted = capacities
            .iter()
            .enumerate()
            .filter(|&(r, _)| !Splitters::is_single_key(r))
            .map(|(_, &c)| c)
            .max()
            .unwrap_or(0);
        DeviceRanges {
            chunk: n.div_ceil(MIN_CHUNKS).clamp(1, CHUNK_MAX),
            offsets,
            capacities,
            largest_sorted,
        }
    }

    /// Keys the regions hold in all.
    pub(crate) fn total(&self) -> u64 {
        self.capacities.iter().sum()
    }

    /// Keys of the device buffer: the regions, then two chunks' staging.
    pub(crate) fn buffer_keys(&self) -> u64 {
        self.total() + 2 * self.chunk as u64
    }

    /// Device memory the sort takes for keys of `key_bytes`: the buffer, the scratch of the
    /// largest sorted range with its merge splitters (one 8-byte word per 512 keys at
    /// most), and the splitters, offsets, capacities and fills.
    pub(crate) fn device_bytes(&self, key_bytes: u64) -> u64 {
        let scratch = self.largest_sorted * key_bytes + (self.largest_sorted / 512 + 64) * 8;
        let small = 4 * self.capacities.len() as u64 * 8;
        self.buffer_keys() * key_bytes + scratch + small
    }
}

/// How many keys of the sorted `sample` fall in each range of `splitters`.
fn sample_counts(sample: &[u64], splitters: &Splitters) -> Vec<usize> {
    let mut counts = Vec::with_capacity(splitters.ranges());
    let mut done = 0;
    for &s in splitters.bits() {
        let below = sample.partition_point(|&b| b < s);
        let through = sample.partition_point(|&b| b <= s);
        counts.push(below - done);
        counts.push(through - below);
        done = through;
    }
    counts.push(sample.len() - done);
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Order;
    use crate::partition::{counts, sample};

    fn keys(n: usize, distinct: u64, seed: u64) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % distinct
            })
            .collect()
    }

    #[test]
    fn sample_counts_match_the_partitioner_on_the_sample() {
        for distinct in [1, 3, 1000, u64::MAX] {
            let sample = sample(&keys(5000, distinct, 7), 5000, Order::Ascending, 1);
            let splitters = Splitters::from_sorted_sample(&sample, 9);
            let model = counts(&sample, &splitters, Order::Ascending);
            assert_eq!(sample_counts(&sample, &splitters), model, "{distinct}");
        }
    }

    #[test]
    fn every_range_fits_its_region() {
        // A sample of a tenth: the margins must hold every range, whatever the repeats.
        for distinct in [1, 2, 5, 100, 1 << 20, u64::MAX] {
            for n in [1, 2, 1000, 100_000] {
                let data = keys(n, distinct, (n as u64).wrapping_add(distinct));
                let sample = sample(&data, (n / 10).max(1), Order::Ascending, 3);
                let splitters = Splitters::from_sorted_sample(&sample, ranges_wanted(n));
                let plan = DeviceRanges::from_sample(n, &sample, &splitters);
                let got = counts(&data, &splitters, Order::Ascending);
                assert_eq!(got.len(), plan.capacities.len());
                for (r, (&c, &cap)) in got.iter().zip(&plan.capacities).enumerate() {
                    assert!(
                        c as u64 <= cap,
                        "n {n}, distinct {distinct}, range {r}: {c} > {cap}"
                    );
                }
                let mut at = 0;
                for (r, &o) in plan.offsets.iter().enumerate() {
                    assert_eq!(o, at, "offsets");
                    at += plan.capacities[r];
                }
                assert!(plan.chunk >= 1 && plan.buffer_keys() >= n as u64);
            }
        }
    }

    #[test]
    fn an_exact_sample_gives_exact_regions() {
        let data = keys(4099, 50, 5);
        let sample = sample(&data, data.len(), Order::Descending, 0);
        let splitters = Splitters::from_sorted_sample(&sample, ranges_wanted(data.len()));
        let plan = DeviceRanges::from_sample(data.len(), &sample, &splitters);
        let got: Vec<u64> = counts(&data, &splitters, Order::Descending)
            .into_iter()
            .map(|c| c as u64)
            .collect();
        assert_eq!(plan.capacities, got);
        assert_eq!(plan.total(), 4099);
    }

    #[test]
    fn the_margin_is_a_few_percent_at_scale() {
        // 2^34 keys sampled at the most: the regions hold under 3% more than the keys, and
        // the largest sorted range is near n / ranges.
        let n = 1usize << 34;
        let s = sample_len(n);
        let sample: Vec<u64> = (0..s as u64).map(|i| i * (u64::MAX / s as u64)).collect();
        let splitters = Splitters::from_sorted_sample(&sample, ranges_wanted(n));
        let plan = DeviceRanges::from_sample(n, &sample, &splitters);
        let extra = plan.total() as f64 / n as f64 - 1.0;
        assert!(extra < 0.03, "{extra}");
        assert!(plan.largest_sorted < (n / ranges_wanted(n)) as u64 * 21 / 20);
        assert_eq!(plan.chunk, CHUNK_MAX);
    }
}
