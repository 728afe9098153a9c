//! Failures of a sort in ranges (past `device_memory_limit`): at the partition, at each
//! range's sort, at the write-back, and at every driver call of the ranges' sorts in
//! between. Every failed sort must return the error of its point and leave the slices
//! exactly as they were or exactly sorted: with `all_or_nothing` as they were (the ranges
//! are sorted in the sorter's own buffer and the slices written by the last, infallible
//! copy); by default sorted once the ranges started to go straight into the slices (the
//! rest is then sorted on the host). The sorter must keep working.

use bitonic::{BackendKind, Error, Order, Sorter, fault};
use libtest_mimic::Failed;

use crate::inject::Disarm;
use crate::support::{Pattern, TestValue, input_seed, rng_for};
use crate::targets::{Target, every_gpu_ranges_limit};

/// The points of the sort in ranges itself; each must have failed once in a trial.
const RANGE_POINTS: [&str; 3] = ["partition", "range sort", "write-back"];
/// Keys of the trial: about nine sorts of 1024 pairs under the limit below.
const N: usize = 9_000;
/// The most fault points one sort may have.
const MAX_POINTS: usize = 10_000;
/// 24 KiB: 1024 pairs of `u32` keys and `u64` values per sort, scratch included.
const LIMIT: u64 = 24 << 10;

/// The fault loop over one sort of `u32` keys with `u64` values in ranges.
pub fn check_ranges(t: &Target) -> Result<(), Failed> {
    let _disarm = Disarm;
    let id = "faults::ranges";
    let seed = input_seed(t.seed, id, N);
    let keys: Vec<u32> = Pattern::Random.keys(N, &mut rng_for(seed));
    let values: Vec<u64> = (0..N).map(|i| u64::make(i, seed)).collect();
    for all_or_nothing in [false, true] {
        let sorter = Sorter::builder()
            .ignore_env()
            .backend(t.info.backend)
            .device_index(t.info.index)
            .host_threshold(0)
            .all_or_nothing(all_or_nothing)
            .device_memory_limit(LIMIT)
            .build()?;
        let sort = |k: &mut Vec<u32>, v: &mut Vec<u64>| sorter.sort_by_key(k, v, Order::Ascending);
        let (mut want_keys, mut want_values) = (keys.clone(), values.clone());
        sort(&mut want_keys, &mut want_values)?;
        if !want_keys.is_sorted() {
            return Err("the unarmed sort is not sorted".into());
        }
        // Fault k = 0, 1, 2, ... until a sort passes every point (how many there are depends
        // on what the sorter keeps, which a failure may free).
        let mut tripped = Vec::new();
        let mut finished_on_host = 0;
        for k in 0.. {
            if k > MAX_POINTS {
                return Err(format!("more than {MAX_POINTS} fault points").into());
            }
            let (mut got_keys, mut got_values) = (keys.clone(), values.clone());
            fault::arm(k);
            let result = sort(&mut got_keys, &mut got_values);
            fault::disarm();
            let Some(call) = fault::tripped() else {
                result?;
                if got_keys != want_keys || got_values != want_values {
                    return Err(format!(
                        "the sort past every point (k = {k}) differs from the first"
                    )
                    .into());
                }
                break;
            };
            match result {
                Err(Error::Driver {
                    backend,
                    call: c,
                    code,
                    ..
                }) if c == call
                    && code == fault::CODE
                    && (backend == t.info.backend || backend == BackendKind::Cpu) => {}
                other => {
                    return Err(format!(
                        "fault {k} at {call}: want its Error::Driver, got {other:?}"
                    )
                    .into());
                }
            }
            let untouched = got_keys == keys && got_values == values;
            let sorted = got_keys == want_keys && got_values == want_values;
            if sorted && !untouched {
                finished_on_host += 1;
            }
            if !untouched && (all_or_nothing || !sorted) {
                return Err(format!(
                    "fault {k} at {call} (all_or_nothing {all_or_nothing}) left the slices \
                     neither as they were nor sorted"
                )
                .into());
            }
            tripped.push(call);
        }
        // By default the ranges go straight into the slices, and a failure has the rest
        // sorted on the host; all-or-nothing never writes them before the end.
        if all_or_nothing == (finished_on_host > 0) {
            return Err(format!(
                "{finished_on_host} failures left the slices sorted with all_or_nothing \
                 {all_or_nothing}"
            )
            .into());
        }
        for point in RANGE_POINTS {
            if !tripped.contains(&point) {
                return Err(format!("no fault at {point:?} among {tripped:?}").into());
            }
        }
        let (mut got_keys, mut got_values) = (keys.clone(), values.clone());
        sort(&mut got_keys, &mut got_values)?;
        if got_keys != want_keys || got_values != want_values {
            return Err("the sort after the faults differs from the first".into());
        }
    }
    Ok(())
}

/// Keys of the in-device trial: 16 chunks of 2048 keys, 8 blocks of the range scatter.
const IN_DEVICE_N: usize = 32_768;

/// Failures of a sort of keys that fit the device's memory limit but not beside a whole
/// sort's scratch: on CUDA sorted in ranges in device memory, at every point (the scatter of
/// each chunk, each range's sort, each download). A failure before the first range comes
/// back leaves the slice untouched and has the host partition sort it (the sort succeeds);
/// one during the downloads returns the error, `PartialResult` once a range was written;
/// one in the host partition's own sorts leaves the slice untouched or sorted. The CUDA
/// path must have been taken: its scatter point must have failed once.
pub fn check_in_device_memory(t: &Target) -> Result<(), Failed> {
    let sorter = Sorter::builder()
        .ignore_env()
        .backend(t.info.backend)
        .device_index(t.info.index)
        .host_threshold(0)
        .device_memory_limit((IN_DEVICE_N * 4 * 8 / 5) as u64)
        .build()?;
    let required: &[&str] = if t.info.backend == BackendKind::Cuda {
        &["range scatter"]
    } else {
        &[]
    };
    fault_loop(
        &sorter,
        input_seed(t.seed, "faults::in_device_memory", 0),
        required,
    )
}

/// The faults of [`check_in_device_memory`] on every CUDA device of the machine (at least
/// two): without a memory limit the devices' spread sort, whose exchange must fail once;
/// under [`every_gpu_ranges_limit`], the ranges in the memory of every device, whose
/// exchange must fail once.
pub fn every_gpu_in_device_memory() -> Result<(), Failed> {
    let devices = crate::targets::cuda_devices();
    let limit = every_gpu_ranges_limit(IN_DEVICE_N * 4, devices);
    for (limit, required) in [(None, "cuMemcpyPeerAsync"), (Some(limit), "range exchange")] {
        let mut builder = Sorter::builder()
            .ignore_env()
            .backend(BackendKind::Cuda)
            .all_gpus()
            .split_from(0)
            .host_threshold(0);
        if let Some(limit) = limit {
            builder = builder.device_memory_limit(limit);
        }
        let sorter = builder.build()?;
        if sorter.devices().len() < 2 {
            return Err("this trial needs two CUDA devices".into());
        }
        fault_loop(&sorter, 0x5eed, &[required]).map_err(|e| format!("limit {limit:?}: {e:?}"))?;
    }
    Ok(())
}

/// Fails each point of `sorter`'s sort of `IN_DEVICE_N` random `u32` keys in turn, as
/// [`check_in_device_memory`] says; every point of `required` must have failed once.
fn fault_loop(sorter: &Sorter, seed: u64, required: &[&str]) -> Result<(), Failed> {
    let _disarm = Disarm;
    let keys: Vec<u32> = Pattern::Random.keys(IN_DEVICE_N, &mut rng_for(seed));
    let mut want = keys.clone();
    want.sort_unstable();
    let mut tripped = Vec::new();
    for k in 0.. {
        if k > MAX_POINTS {
            return Err(format!("more than {MAX_POINTS} fault points").into());
        }
        let mut got = keys.clone();
        fault::arm(k);
        let result = sorter.sort(&mut got, Order::Ascending);
        fault::disarm();
        let Some(call) = fault::tripped() else {
            result?;
            if got != want {
                return Err(format!("the sort past every point (k = {k}) is not sorted").into());
            }
            break;
        };
        let (untouched, sorted) = (got == keys, got == want);
        let fine = match &result {
            Ok(()) => sorted,
            Err(Error::PartialResult { .. }) => true,
            Err(_) => untouched || sorted,
        };
        if !fine {
            return Err(format!(
                "fault {k} at {call}: {result:?} with the slice untouched {untouched}, \
                 sorted {sorted}"
            )
            .into());
        }
        tripped.push(call);
    }
    for point in required {
        if !tripped.contains(point) {
            return Err(format!("no fault at {point:?} among {tripped:?}").into());
        }
    }
    let mut got = keys.clone();
    sorter.sort(&mut got, Order::Ascending)?;
    if got != want {
        return Err("the sort after the faults is not sorted".into());
    }
    Ok(())
}
