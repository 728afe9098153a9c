//! The plan of a host slice sorted in ranges in the memory of one device or several: its
//! keys fit the devices, but not beside the scratch of one sort of them all (a merge-path
//! sort needs a second buffer as large as its keys).
//!
//! The keys cross the bus once each way:
//! 1. splitters from a sample of the slice ([`crate::partition`]);
//! 2. the slice goes up in chunks, each device's part over its own link; each chunk, once
//!    on its device, is appended to one region per range (the CUDA range scatter), while
//!    the next chunk travels;
//! 3. with several devices, each range's keys meet on the device that sorts it
//!    ([`RangesOverDevices`]);
//! 4. each region that needs it is sorted on its own, with a scratch as large as the
//!    largest region, and comes back into its place in the slice while the next is sorted.
//!
//! The regions are sized from the sample before the keys are seen, so each gets a margin
//! ([`capacities`]); a range that outgrows its region leaves the keys where they are on
//! the host (nothing has been written yet), and the sort takes the host partition instead.

use crate::partition::Splitters;

/// Keys per range aimed at: 512 MiB of `u32`, so that a range's scratch is a small part of a
/// GPU's memory and its sort is long enough to hide the previous range's download.
const RANGE_TARGET: usize = 1 << 27;
/// The fewest ranges a slice is split into (fewer would make the scratch a large part of
/// the memory the path exists to save).
const MIN_RANGES: usize = 8;
/// The most keys sampled for the splitters and the regions' sizes.
const SAMPLE_MAX: usize = 1 << 23;
/// The largest chunk that goes up at a time, in bytes. Each chunk is one upload through the
/// pinned ring, which starts and drains its pipeline of host copies: the shorter the chunk,
/// the more of its upload those two ends take, and the further the whole upload falls below
/// the bus's speed. [`MIN_CHUNKS`] bounds it from the other side.
const CHUNK_MAX_BYTES: usize = 256 << 20;
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

/// The fewest elements a device's budget counts, however small the memory limit.
pub(crate) const MIN_BUDGET: usize = 64;

/// The elements one sort of host slices may hold on a device with `memory` bytes for it
/// (`None`: no limit): the memory over twice the bytes of an element, for the keys and values
/// and the scratch of as many.
pub(crate) fn element_budget(memory: Option<u64>, element_bytes: u64) -> usize {
    let Some(bytes) = memory else {
        return usize::MAX;
    };
    let elements = bytes / (2 * element_bytes.max(1));
    usize::try_from(elements)
        .unwrap_or(usize::MAX)
        .max(MIN_BUDGET)
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
    /// Regions of `capacities` keys for a part of `n` keys, of which the ranges `sorted`
    /// are sorted on this device.
    fn from_capacities(
        n: usize,
        key_bytes: usize,
        capacities: Vec<u64>,
        sorted: std::ops::Range<usize>,
    ) -> DeviceRanges {
        let mut offsets = Vec::with_capacity(capacities.len());
        let mut total = 0u64;
        for &c in &capacities {
            offsets.push(total);
            total += c;
        }
        let largest_sorted = sorted
            .filter(|&r| !Splitters::is_single_key(r))
            .map(|r| capacities[r])
            .max()
            .unwrap_or(0);
        DeviceRanges {
            chunk: n
                .div_ceil(MIN_CHUNKS)
                .clamp(1, CHUNK_MAX_BYTES / key_bytes.max(1)),
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

/// Each range's region for `n` keys from their sorted sample (the ordered bits of
/// `sample.len()` keys, every key when it is `n` long) and the splitters picked from it. A
/// range with `c` sampled keys of `s` gets `n (c + 6 sqrt(c) + 8) / s` keys, or exactly `c`
/// when the sample is every key.
fn capacities(n: usize, sample: &[u64], splitters: &Splitters) -> Vec<u64> {
    let s = sample.len().max(1) as f64;
    let exact = sample.len() >= n;
    sample_counts(sample, splitters)
        .iter()
        .map(|&c| {
            if exact {
                return c as u64;
            }
            let c = c as f64;
            let keys = (n as f64 * (c + MARGIN_SIGMAS * c.sqrt() + MARGIN_KEYS) / s).ceil();
            (keys as u64).min(n as u64)
        })
        .collect()
}

/// The plan of a host slice sorted in ranges in the memory of several devices, each with
/// its own link to the host:
/// 1. device `d` uploads part `d` of the slice (equal parts, in order) and appends each
///    chunk to its own regions, one per range, as one device does alone;
/// 2. the ranges are dealt out in contiguous runs of about equal size: the device that
///    sorts a range pulls the other devices' keys of it over the peer links, after its
///    own keys in its region;
/// 3. each device sorts its ranges and writes them back into place in the slice, which
///    its ranges fill as one contiguous span.
///
/// Each part gets regions sized from its own sample, so a slice whose parts differ (sorted,
/// reversed) is planned as tightly as a random one. With one device, its regions hold its
/// whole slice, and there is no exchange.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RangesOverDevices {
    /// The part of the slice each device uploads.
    pub(crate) parts: Vec<std::ops::Range<usize>>,
    /// The ranges each device sorts and writes back.
    pub(crate) owned: Vec<std::ops::Range<usize>>,
    /// Each device's regions: for the ranges it sorts, room for every part's keys of them
    /// (its own first); for the others, room for its own part's keys.
    pub(crate) layouts: Vec<DeviceRanges>,
}

/// Keys sampled from each of `devices` parts of a slice of `n` keys.
pub(crate) fn part_sample_len(n: usize, devices: usize) -> usize {
    sample_len(n).div_ceil(devices.max(1))
}

/// The `devices` equal parts of a slice of `n` keys, in order.
pub(crate) fn parts(n: usize, devices: usize) -> Vec<std::ops::Range<usize>> {
    let devices = devices.max(1);
    (0..devices)
        .map(|d| n * d / devices..n * (d + 1) / devices)
        .collect()
}

impl RangesOverDevices {
    /// The plan for a slice of keys of `key_bytes` split into `parts`, each with its sorted
    /// sample (of its own keys: every key where the sample is as long as the part), and the
    /// splitters picked from all the samples.
    pub(crate) fn from_samples(
        parts: Vec<std::ops::Range<usize>>,
        samples: &[Vec<u64>],
        splitters: &Splitters,
        key_bytes: usize,
    ) -> RangesOverDevices {
        let devices = parts.len();
        let ranges = splitters.ranges();
        let part_caps: Vec<Vec<u64>> = parts
            .iter()
            .zip(samples)
            .map(|(part, sample)| capacities(part.len(), sample, splitters))
            .collect();
        // The expected keys of each range, from every part's sample, deal the ranges out:
        // a range goes to the device whose equal share of the slice holds its middle.
        let mut expected = vec![0f64; ranges];
        for (part, sample) in parts.iter().zip(samples) {
            let scale = part.len() as f64 / sample.len().max(1) as f64;
            for (e, c) in expected.iter_mut().zip(sample_counts(sample, splitters)) {
                *e += c as f64 * scale;
            }
        }
        let all: f64 = expected.iter().sum::<f64>().max(1.0);
        let mut owner = Vec::with_capacity(ranges);
        let mut before = 0f64;
        for &e in &expected {
            let middle = (before + e / 2.0) / all;
            owner.push(((middle * devices as f64) as usize).min(devices - 1));
            before += e;
        }
        let owned: Vec<std::ops::Range<usize>> = (0..devices)
            .map(|d| {
                let first = owner.partition_point(|&o| o < d);
                first..owner.partition_point(|&o| o <= d)
            })
            .collect();
        let layouts = (0..devices)
            .map(|d| {
                let regions = (0..ranges)
                    .map(|r| {
                        if owned[d].contains(&r) {
                            part_caps.iter().map(|c| c[r]).sum()
                        } else {
                            part_caps[d][r]
                        }
                    })
                    .collect();
                DeviceRanges::from_capacities(parts[d].len(), key_bytes, regions, owned[d].clone())
            })
            .collect();
        RangesOverDevices {
            parts,
            owned,
            layouts,
        }
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

    impl DeviceRanges {
        /// The layout of one device that takes the whole slice.
        fn from_sample(n: usize, sample: &[u64], splitters: &Splitters) -> DeviceRanges {
            let plan =
                RangesOverDevices::from_samples(parts(n, 1), &[sample.to_vec()], splitters, 4);
            assert_eq!(plan.owned, vec![0..splitters.ranges()]);
            plan.layouts[0].clone()
        }
    }

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
        assert_eq!(plan.chunk, CHUNK_MAX_BYTES / 4);
    }

    #[test]
    fn parts_cover_the_slice_in_order() {
        for devices in 1..=5 {
            for n in [0usize, 1, 2, 3, 4, 7, 1000, 1001] {
                let got = parts(n, devices);
                assert_eq!(got.len(), devices);
                let mut next = 0;
                for part in got {
                    assert_eq!(part.start, next, "{n} over {devices}");
                    assert!(part.len() + 1 >= n / devices && part.len() <= n.div_ceil(devices));
                    next = part.end;
                }
                assert_eq!(next, n);
            }
        }
    }

    #[test]
    fn every_device_holds_its_part_and_its_ranges() {
        // Random, sorted and reversed slices over 1 to 4 devices, each part sampled at a
        // tenth: each part's keys of a range fit that part's device, all of a range's keys
        // fit the device that sorts it, the devices' ranges follow each other, and no
        // device sorts much more than its share of a random slice.
        for devices in 1..=4 {
            for shape in ["random", "sorted", "reversed", "equal"] {
                let n = 200_000;
                let mut data = keys(n, if shape == "equal" { 1 } else { u64::MAX }, 11);
                match shape {
                    "sorted" => data.sort_unstable(),
                    "reversed" => data.sort_unstable_by(|a, b| b.cmp(a)),
                    _ => {}
                }
                let pieces = parts(n, devices);
                let count = part_sample_len(n, devices) / 10;
                let samples: Vec<Vec<u64>> = pieces
                    .iter()
                    .map(|p| sample(&data[p.clone()], count, Order::Ascending, 5))
                    .collect();
                let mut all = samples.concat();
                all.sort_unstable();
                let splitters = Splitters::from_sorted_sample(&all, ranges_wanted(n));
                let plan = RangesOverDevices::from_samples(pieces.clone(), &samples, &splitters, 8);
                let ranges = splitters.ranges();
                let mut next = 0;
                for owned in &plan.owned {
                    assert_eq!(owned.start, next, "{shape} over {devices}");
                    next = owned.end;
                }
                assert_eq!(next, ranges);
                let mut totals = vec![0usize; ranges];
                for (d, part) in pieces.iter().enumerate() {
                    let got = counts(&data[part.clone()], &splitters, Order::Ascending);
                    for (r, &c) in got.iter().enumerate() {
                        totals[r] += c;
                        assert!(
                            c as u64 <= plan.layouts[d].capacities[r],
                            "{shape} over {devices}: part {d}, range {r}"
                        );
                    }
                }
                for (d, owned) in plan.owned.iter().enumerate() {
                    let layout = &plan.layouts[d];
                    for r in owned.clone() {
                        assert!(totals[r] as u64 <= layout.capacities[r], "{shape} {d} {r}");
                    }
                    let sorted: usize = totals[owned.clone()].iter().sum();
                    if shape == "random" {
                        assert!(
                            sorted < n / devices * 3 / 2,
                            "{devices}: device {d} {sorted}"
                        );
                    }
                }
            }
        }
    }
}
