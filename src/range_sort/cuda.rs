//! The CUDA paths of a sort in ranges that skip the host partition: a slice spread over
//! several GPUs' memory (the spread sort), and a slice that fits the GPUs' memory but not
//! beside its scratch (ranges in their memory).

use super::{SAMPLE_SEED, memory, smallest_budget};
use crate::backend::Backend;
use crate::cuda::CudaBackend;
use crate::error::{Error, Result};
use crate::keys::{Order, SortKey};
use crate::partition::{self, Splitters};
use crate::sorter::Sorter;

/// Keys of 32 or 64 bits without values, on several different CUDA devices whose memory
/// holds an equal share each with its spread sort's buffers, outside all-or-nothing (a
/// failed download would leave the other devices' parts written): sorted without a host
/// partition ([`crate::cuda::sort_host_spread`]). `Ok(false)` where that does not apply, or
/// where it failed before anything was written to the slice, which the ranges then sort.
pub(super) fn spread_over_cuda<K: SortKey>(
    sorter: &Sorter,
    devices: &[&dyn Backend],
    keys: &mut [K],
    descending: bool,
) -> Result<bool> {
    use crate::cuda::{SPREAD_BYTES_PER_BYTE, sort_host_spread};
    use crate::keys::{KeyEncoding, KeyRepr};
    if devices.len() < 2 || sorter.all_or_nothing {
        return Ok(false);
    }
    let cuda: Vec<&CudaBackend> = different_cuda(sorter, devices)
        .into_iter()
        .map(|(backend, _)| backend)
        .collect();
    if cuda.len() != devices.len() {
        return Ok(false);
    }
    let n = keys.len();
    let key_bytes = std::mem::size_of::<K>() as u64;
    let share = n.div_ceil(devices.len()) as u64;
    let budget = smallest_budget(sorter, devices.iter().copied(), key_bytes) as u64;
    // A budget counts two copies of an element; the spread sort holds three of its share.
    if share.saturating_mul(SPREAD_BYTES_PER_BYTE) > budget.saturating_mul(2) {
        return Ok(false);
    }
    let KeyRepr::Words(words, kind) = K::repr(keys) else {
        return Ok(false);
    };
    declined_unless_written(
        sort_host_spread(&cuda, words, KeyEncoding { kind, descending }).map(|()| true),
    )
}

/// Keys of 32 or 64 bits without values that fit the memory of the CUDA devices among
/// `devices`, but not beside the scratch of one sort of them all, outside all-or-nothing:
/// sorted in ranges in their memory, crossing the bus once each way
/// ([`crate::cuda::sort_host_in_ranges`]). Every different CUDA device takes a part where
/// each one's share fits it; otherwise the first device alone, where the slice fits it.
/// `Ok(false)` where neither applies, or where it failed before anything was written to the
/// slice (a range outgrew its region, the memory was not there), which the host partition
/// then sorts.
pub(super) fn in_device_ranges<K: SortKey>(
    sorter: &Sorter,
    devices: &[&dyn Backend],
    keys: &mut [K],
    descending: bool,
) -> Result<bool> {
    let key_bytes = std::mem::size_of::<K>() as u64;
    if sorter.all_or_nothing || key_bytes < 4 {
        return Ok(false);
    }
    let cuda = different_cuda(sorter, devices);
    if cuda.len() > 1 && in_ranges_over(&cuda, keys, descending)? {
        return Ok(true);
    }
    match cuda.first() {
        Some(&first) => in_ranges_over(&[first], keys, descending),
        None => Ok(false),
    }
}

/// [`in_device_ranges`] over `devices`, each with the memory it may take: `Ok(false)` where
/// one device's part does not fit it.
fn in_ranges_over<K: SortKey>(
    devices: &[(&CudaBackend, u64)],
    keys: &mut [K],
    descending: bool,
) -> Result<bool> {
    use crate::keys::{KeyEncoding, KeyRepr};
    use crate::schedule::device_ranges::{self, RangesOverDevices};
    use rayon::prelude::*;
    let (n, key_bytes) = (keys.len(), std::mem::size_of::<K>() as u64);
    let share = n.div_ceil(devices.len()) as u64;
    if devices
        .iter()
        .any(|&(_, memory)| share.saturating_mul(key_bytes) > memory)
    {
        return Ok(false);
    }
    let order = Order::from_descending(descending);
    let parts = device_ranges::parts(n, devices.len());
    let count = device_ranges::part_sample_len(n, devices.len());
    let samples: Vec<Vec<u64>> = parts
        .iter()
        .map(|part| partition::sample(&keys[part.clone()], count, order, SAMPLE_SEED))
        .collect();
    let mut all: Vec<u64> = samples.concat();
    if samples.len() > 1 {
        all.par_sort_unstable();
    }
    let splitters = Splitters::from_sorted_sample(&all, device_ranges::ranges_wanted(n));
    drop(all);
    let plan = RangesOverDevices::from_samples(parts, &samples, &splitters, key_bytes as usize);
    let fits = |(layout, &(_, memory)): (&device_ranges::DeviceRanges, _)| {
        layout.device_bytes(key_bytes) <= memory
    };
    if !plan.layouts.iter().zip(devices).all(fits) {
        return Ok(false);
    }
    let KeyRepr::Words(words, kind) = K::repr(keys) else {
        return Ok(false);
    };
    let backends: Vec<_> = devices.iter().map(|&(backend, _)| backend).collect();
    declined_unless_written(crate::cuda::sort_host_in_ranges(
        &backends,
        words,
        KeyEncoding { kind, descending },
        &splitters,
        &plan,
    ))
}

/// The CUDA devices among `devices`, each once (its first opening), in order, with the memory
/// a sort may take on each ([`memory`]).
fn different_cuda<'d>(sorter: &Sorter, devices: &[&'d dyn Backend]) -> Vec<(&'d CudaBackend, u64)> {
    let mut cuda: Vec<(&CudaBackend, u64)> = Vec::with_capacity(devices.len());
    for &device in devices {
        let Some(backend) = device
            .as_any()
            .and_then(|d| d.downcast_ref::<CudaBackend>())
        else {
            continue;
        };
        if cuda
            .iter()
            .all(|(c, _)| c.device().index != backend.device().index)
        {
            cuda.push((backend, memory(sorter, device).unwrap_or(u64::MAX)));
        }
    }
    cuda
}

/// The result of a path here: whether it sorted the slice. A failure that wrote nothing to
/// the slice declines too (the host partition then sorts the untouched slice); a partial
/// result is the caller's error.
fn declined_unless_written(result: Result<bool>) -> Result<bool> {
    match result {
        Err(e @ Error::PartialResult { .. }) => Err(e),
        Err(_) => Ok(false),
        sorted => sorted,
    }
}
