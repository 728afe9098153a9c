//! Host-slice sorts in ranges on every target: past a small device memory limit, and over a
//! device named twice.

use std::time::Instant;

use bitonic::{BackendKind, Sorter, SorterBuilder};
use libtest_mimic::{Failed, Trial};

use crate::support::{
    Pattern, TestKey, TestValue, check_keys, expected, input_seed, pair_multiset, rng_for,
    sort_keys, sort_pairs,
};
use crate::targets::{Slot, Target};

/// The memory limit of the out-of-core trials: 16 KiB, 2048 `u32` keys or 1024 pairs of
/// `u32` per sort.
const LIMIT: u64 = 16 << 10;

/// Lengths around multiples of `budget` (elements one sort may hold), and the tiny ones.
fn lengths(budget: usize) -> Vec<usize> {
    let mut lengths = vec![0, 1, 2, 3];
    for m in [1, 2, 5] {
        lengths.extend([m * budget - 1, m * budget, m * budget + 1]);
    }
    lengths.push(20 * budget + 7);
    lengths
}

/// A sorter on the target's device, every sort sent to it, configured further by `setup`.
fn sorter(
    t: &Target,
    setup: impl FnOnce(SorterBuilder) -> SorterBuilder,
) -> bitonic::Result<Sorter> {
    let builder = Sorter::builder()
        .ignore_env()
        .backend(t.info.backend)
        .device_index(t.info.index)
        .host_threshold(0);
    setup(builder).build()
}

/// Keys of `pattern` at every length around `budget`, both orders: exactly the reference.
fn check_keys_at<K: TestKey>(
    s: &Sorter,
    t: &Target,
    id: &str,
    pattern: Pattern,
    budget: usize,
) -> Result<(), Failed> {
    for n in lengths(budget) {
        let seed = input_seed(t.seed, id, n);
        let input: Vec<K> = pattern.keys(n, &mut rng_for(seed));
        for descending in [false, true] {
            let mut keys = input.clone();
            sort_keys(s, &mut keys, descending)?;
            check_keys(&keys, &expected(&input, descending))
                .map_err(|e| format!("n {n}, descending {descending}, seed {seed:#x}: {e}"))?;
        }
    }
    Ok(())
}

/// Pairs of `pattern` at every length around `budget`: keys exactly the reference, and the
/// same multiset of pairs (values of equal keys may come in another order than one
/// device's sort gives).
fn check_pairs_at<K: TestKey, V: TestValue>(
    s: &Sorter,
    t: &Target,
    id: &str,
    pattern: Pattern,
    budget: usize,
) -> Result<(), Failed> {
    for n in lengths(budget) {
        let seed = input_seed(t.seed, id, n);
        let input: Vec<K> = pattern.keys(n, &mut rng_for(seed));
        let values: Vec<V> = (0..n).map(|i| V::make(i, seed)).collect();
        let descending = n % 2 == 1;
        let (mut keys, mut vals) = (input.clone(), values.clone());
        sort_pairs(s, &mut keys, &mut vals, descending)?;
        check_keys(&keys, &expected(&input, descending))
            .map_err(|e| format!("pairs, n {n}, seed {seed:#x}: {e}"))?;
        if pair_multiset(&keys, &vals) != pair_multiset(&input, &values) {
            return Err(format!("pairs, n {n}, seed {seed:#x}: the pairs changed").into());
        }
    }
    Ok(())
}

/// A sorter setting on top of [`sorter`]'s, given the device's index.
type Setup = fn(SorterBuilder, usize) -> SorterBuilder;

/// The sorter setups of the trials: a memory limit, the device twice, both.
fn setups() -> [(&'static str, Setup); 3] {
    [
        ("out_of_core", |b, _| b.device_memory_limit(LIMIT)),
        ("repeated_device", |b, i| b.devices(&[i, i]).split_from(0)),
        ("repeated_device_out_of_core", |b, i| {
            b.devices(&[i, i, i])
                .split_from(0)
                .device_memory_limit(LIMIT)
        }),
    ]
}

/// Registers the trials of one target (its mode that may partition: not the oblivious one).
pub fn register(slot: &Slot, trials: &mut Vec<Trial>) {
    if matches!(slot, Slot::Ready(t) if t.oblivious) {
        return;
    }
    for (setup_name, setup) in setups() {
        for pattern in [
            Pattern::Random,
            Pattern::Equal,
            Pattern::Few,
            Pattern::Special,
            Pattern::Reversed,
        ] {
            let id = format!("ranges::{setup_name}::{}", pattern.name());
            let trial_id = id.clone();
            trials.push(slot.trial(&id, move |t| {
                let s = sorter(t, |b| setup(b, t.info.index))?;
                let copies = s.devices().len();
                let want = if setup_name.starts_with("repeated") {
                    2.max(copies)
                } else {
                    1
                };
                if copies != want {
                    return Err(format!("the sorter runs on {copies} devices, want {want}").into());
                }
                let budget = (LIMIT / 8) as usize;
                check_keys_at::<u32>(&s, t, &format!("{trial_id}::u32"), pattern, budget)?;
                check_keys_at::<f64>(&s, t, &format!("{trial_id}::f64"), pattern, budget / 2)?;
                check_keys_at::<i16>(&s, t, &format!("{trial_id}::i16"), pattern, budget)?;
                if !t.is_opencl_cpu() || pattern == Pattern::Few {
                    check_keys_at::<f32>(&s, t, &format!("{trial_id}::f32"), pattern, budget)?;
                }
                check_pairs_at::<u32, u32>(
                    &s,
                    t,
                    &format!("{trial_id}::u32_u32"),
                    pattern,
                    budget / 2,
                )?;
                check_pairs_at::<f64, u64>(
                    &s,
                    t,
                    &format!("{trial_id}::f64_u64"),
                    pattern,
                    budget / 4,
                )?;
                check_pairs_at::<u8, [u8; 4]>(
                    &s,
                    t,
                    &format!("{trial_id}::u8_u8x4"),
                    pattern,
                    budget / 2,
                )?;
                Ok(())
            }));
        }
    }
    // Sorts spread over devices called from every rayon thread at once: the device threads'
    // host copies need rayon's threads, which all wait in sorts.
    trials.push(slot.trial("ranges::from_rayon_threads", |t| {
        use rayon::prelude::*;
        let s = sorter(t, |b| {
            b.devices(&[t.info.index, t.info.index]).split_from(0)
        })?;
        let results: Vec<Result<(), String>> = (0..4 * rayon::current_num_threads())
            .into_par_iter()
            .map(|i| {
                let input: Vec<u32> =
                    Pattern::Random.keys(200_000, &mut rng_for(t.seed ^ i as u64));
                let mut keys = input.clone();
                s.sort(&mut keys, bitonic::Order::Ascending)
                    .map_err(|e| e.to_string())?;
                check_keys(&keys, &expected(&input, false))
            })
            .collect();
        results
            .into_iter()
            .collect::<Result<(), String>>()
            .map_err(Failed::from)
    }));
    // The ranges go straight into a caller's pinned buffer, which the GPU backends copy to
    // directly.
    trials.push(slot.trial("ranges::into_pinned_buffer", |t| {
        let s = sorter(t, |b| b.device_memory_limit(LIMIT))?;
        for n in lengths((LIMIT / 8) as usize) {
            let input: Vec<f32> = Pattern::Special.keys(n, &mut rng_for(t.seed ^ n as u64));
            let mut keys = s.pinned_buffer::<f32>(n)?;
            keys.copy_from_slice(&input);
            s.sort(&mut keys, bitonic::Order::Descending)?;
            check_keys(&keys, &expected(&input, true)).map_err(|e| format!("n {n}: {e}"))?;
        }
        Ok(())
    }));
    // Slices that fit the device's memory limit, but not beside the scratch of one sort of
    // them all: on CUDA sorted in ranges in device memory (keys of 32 and 64 bits), elsewhere
    // through the host partition. Lengths around the range scatter's blocks of 4096 keys and
    // the upload's chunks of a sixteenth.
    trials.push(slot.trial("ranges::in_device_memory", |t| {
        for n in [4, 4095, 4096, 4097, 65_537, 196_613, (1 << 20) + 1] {
            for pattern in [
                Pattern::Random,
                Pattern::Few,
                Pattern::Equal,
                Pattern::Special,
                Pattern::Reversed,
            ] {
                check_in_device_memory::<u32>(t, pattern, n)?;
                check_in_device_memory::<f64>(t, pattern, n)?;
            }
        }
        Ok(())
    }));
    trials.push(slot.trial("ranges::empty_device_list", |t| {
        match sorter(t, |b| b.devices(&[])) {
            Err(bitonic::Error::InvalidConfig(_)) => Ok(()),
            other => Err(format!(
                "an empty device list gave {:?}",
                other.map(|s| s.devices().len())
            )
            .into()),
        }
    }));
}

/// `n` keys of `pattern` under a memory limit of the keys and half as much again: the
/// ranges' regions, scratch and staging fit in it, a whole sort's scratch does not. Exactly
/// the reference, descending for odd lengths.
fn check_in_device_memory<K: TestKey>(
    t: &Target,
    pattern: Pattern,
    n: usize,
) -> Result<(), Failed> {
    let seed = input_seed(t.seed, "ranges::in_device_memory", n);
    let input: Vec<K> = pattern.keys(n, &mut rng_for(seed));
    let limit = (n * std::mem::size_of::<K>() * 8 / 5) as u64;
    let s = sorter(t, |b| b.device_memory_limit(limit))?;
    let descending = n % 2 == 1;
    let mut keys = input.clone();
    sort_keys(&s, &mut keys, descending)?;
    check_keys(&keys, &expected(&input, descending)).map_err(|e| {
        let bytes = std::mem::size_of::<K>();
        format!(
            "{} n {n}, {bytes}-byte keys, seed {seed:#x}: {e}",
            pattern.name()
        )
        .into()
    })
}

/// Random words from a fixed seed, generated on every core: fast enough for billions.
fn random_words<W: Send>(n: usize, word: fn(u64) -> W) -> Vec<W> {
    use rayon::prelude::*;
    (0..n)
        .into_par_iter()
        .map(|i| {
            let z = (i as u64 ^ 0x5eed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let z = (z ^ (z >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            word(z ^ (z >> 29))
        })
        .collect()
}

/// Times host-slice sorts of `2^BITONIC_SCALING_LOG2` (default 30) random `u32` keys, or
/// `u64` keys with `u64` values when `BITONIC_SCALING_PAIRS=1`, on the first CUDA device and
/// on every CUDA device, twice each (the first run allocates), and checks every result. The
/// input is made anew for each run, so that host memory holds it once beside the sort's
/// own copy. `BITONIC_SCALING_LIMIT` (bytes), where set, is the sorters' device memory limit.
pub fn measure() -> Result<(), Failed> {
    let log2 = crate::support::env_number("BITONIC_SCALING_LOG2")?.unwrap_or(30);
    let pairs = crate::support::env_number("BITONIC_SCALING_PAIRS")?.unwrap_or(0) == 1;
    let limit = crate::support::env_number("BITONIC_SCALING_LIMIT")?.unwrap_or(0);
    let n = 1usize << log2;
    for all in [false, true] {
        let mut builder = Sorter::builder().ignore_env().backend(BackendKind::Cuda);
        if limit > 0 {
            builder = builder.device_memory_limit(limit);
        }
        let s = if all {
            builder.all_gpus()
        } else {
            builder.device_index(0)
        }
        .build()?;
        for round in 0..2 {
            let secs = if pairs {
                let mut keys = random_words(n, |z| z);
                // Each value remembers its key, so that a pair that came apart is found.
                let mut values: Vec<u64> = keys.iter().map(|k| k.rotate_left(17)).collect();
                let start = Instant::now();
                s.sort_by_key(&mut keys, &mut values, bitonic::Order::Ascending)?;
                let secs = start.elapsed().as_secs_f64();
                if !keys.is_sorted()
                    || values
                        .iter()
                        .zip(&keys)
                        .any(|(v, k)| *v != k.rotate_left(17))
                {
                    return Err("the pairs are not sorted".into());
                }
                secs
            } else {
                let mut keys = random_words(n, |z| z as u32);
                let start = Instant::now();
                s.sort(&mut keys, bitonic::Order::Ascending)?;
                let secs = start.elapsed().as_secs_f64();
                if !keys.is_sorted() {
                    return Err("the keys are not sorted".into());
                }
                secs
            };
            eprintln!(
                "measure: 2^{log2} {} on {} GPU(s), run {round}: {secs:.3} s",
                if pairs {
                    "u64 keys + u64 values"
                } else {
                    "u32 keys"
                },
                s.devices().len()
            );
        }
    }
    Ok(())
}

/// The patterns of the trials on every GPU: random, repeated (equal, few, edge values), and
/// sorted either way, whose parts fall into different ranges.
const EVERY_GPU_PATTERNS: [Pattern; 6] = [
    Pattern::Random,
    Pattern::Equal,
    Pattern::Few,
    Pattern::Special,
    Pattern::Reversed,
    Pattern::Sorted,
];

/// Host-slice sorts on every CUDA device of the machine (at least two, each named once),
/// from any length on (`split_from(0)`): 32- and 64-bit keys go through the devices'
/// spread sort, pairs through the ranges. Keys exactly the reference, pairs the same
/// multiset. Registered as ignored on machines with fewer than two CUDA devices.
pub fn every_gpu() -> Result<(), Failed> {
    let s = Sorter::builder()
        .ignore_env()
        .backend(BackendKind::Cuda)
        .all_gpus()
        .split_from(0)
        .host_threshold(0)
        .build()?;
    let devices = s.devices().len();
    if devices < 2 {
        return Err(format!("{devices} CUDA device(s): this trial needs two").into());
    }
    let mut lengths = vec![0usize, 1, 2, 3, devices - 1, devices + 1, 1000, 4097];
    lengths.extend([(1 << 20) + 3, (1 << 22) - 1, 3 << 22]);
    for pattern in EVERY_GPU_PATTERNS {
        for &n in &lengths {
            let seed = 0x5eed ^ n as u64;
            every_gpu_keys::<u32>(&s, pattern, n, seed)?;
            every_gpu_keys::<f32>(&s, pattern, n, seed)?;
            every_gpu_keys::<i64>(&s, pattern, n, seed)?;
            every_gpu_keys::<f64>(&s, pattern, n, seed)?;
        }
        let input: Vec<u32> = pattern.keys(100_003, &mut rng_for(7));
        let values: Vec<u32> = (0..input.len() as u32).collect();
        let (mut keys, mut got) = (input.clone(), values.clone());
        sort_pairs(&s, &mut keys, &mut got, false)?;
        check_keys(&keys, &expected(&input, false))?;
        if pair_multiset(&keys, &got) != pair_multiset(&input, &values) {
            return Err("pairs came apart".into());
        }
    }
    Ok(())
}

/// Host-slice sorts on every CUDA device of the machine (at least two) under the memory
/// limit of `targets::every_gpu_ranges_limit`: too little for one device to hold the slice
/// beside its staging and scratch, or for the spread sort (three times a device's share), so
/// the slice is sorted in ranges in the memory of every device, each range pulled together
/// on the device that sorts it. Lengths around the scatter's 4096-key blocks and the devices' parts;
/// patterns whose parts differ (sorted, reversed) and repeat (equal, few). Keys exactly the
/// reference, both orders.
pub fn every_gpu_in_device_memory() -> Result<(), Failed> {
    let lengths = [5usize, 4095, 8193, 65_537, (1 << 20) + 1, 3 << 20];
    for pattern in EVERY_GPU_PATTERNS {
        for &n in &lengths {
            let seed = 0x5eed ^ n as u64;
            for key_bytes in [4usize, 8] {
                let s = Sorter::builder()
                    .ignore_env()
                    .backend(BackendKind::Cuda)
                    .all_gpus()
                    .host_threshold(0)
                    .device_memory_limit(crate::targets::every_gpu_ranges_limit(
                        n * key_bytes,
                        crate::targets::cuda_devices(),
                    ))
                    .build()?;
                if s.devices().len() < 2 {
                    return Err("this trial needs two CUDA devices".into());
                }
                if key_bytes == 4 {
                    every_gpu_keys::<u32>(&s, pattern, n, seed)?;
                } else {
                    every_gpu_keys::<f64>(&s, pattern, n, seed)?;
                }
            }
        }
    }
    Ok(())
}

fn every_gpu_keys<K: TestKey>(
    s: &Sorter,
    pattern: Pattern,
    n: usize,
    seed: u64,
) -> Result<(), Failed> {
    let input: Vec<K> = pattern.keys(n, &mut rng_for(seed));
    for descending in [false, true] {
        let mut keys = input.clone();
        sort_keys(s, &mut keys, descending)?;
        check_keys(&keys, &expected(&input, descending))
            .map_err(|e| format!("{} n {n} {pattern:?} descending {descending}: {e}", K::NAME))?;
    }
    Ok(())
}
