//! The CUDA paths of a host slice sorted without the host partition
//! ([`Backend::sort_host_in_device_memory`]): a slice spread over several GPUs' memory (the
//! spread sort, `spread_host.rs`), and a slice that fits the GPUs' memory but not beside its
//! scratch (ranges in their memory, `device_ranges.rs`).

use rayon::prelude::*;

use super::CudaBackend;
use super::device_ranges::sort_host_in_ranges;
use super::spread_host::{SPREAD_BYTES_PER_BYTE, sort_host_spread};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::keys::{KeyEncoding, Word, WordsMut};
use crate::partition::{self, SAMPLE_SEED, Splitters};
use crate::schedule::device_ranges::{self, DeviceRanges, RangesOverDevices, element_budget};

/// [`Backend::sort_host_in_device_memory`] on CUDA: the spread sort where it applies, else
/// ranges in the devices' memory.
pub(super) fn sort_host_in_device_memory(
    devices: &[&dyn Backend],
    memory: &[u64],
    mut keys: WordsMut<'_>,
    encoding: KeyEncoding,
) -> Result<bool> {
    Ok(
        spread_over_cuda(devices, memory, keys.reborrow(), encoding)?
            || in_device_ranges(devices, memory, keys, encoding)?,
    )
}

/// Several different CUDA devices whose memory holds an equal share each with its spread
/// sort's buffers: sorted by the spread sort ([`sort_host_spread`]). `Ok(false)` where that
/// does not apply, or where it failed before anything was written to the slice.
fn spread_over_cuda(
    devices: &[&dyn Backend],
    memory: &[u64],
    keys: WordsMut<'_>,
    encoding: KeyEncoding,
) -> Result<bool> {
    if devices.len() < 2 {
        return Ok(false);
    }
    let cuda: Vec<&CudaBackend> = different_cuda(devices, memory)
        .into_iter()
        .map(|(backend, _)| backend)
        .collect();
    if cuda.len() != devices.len() {
        return Ok(false);
    }
    let key_bytes = keys.word_bytes() as u64;
    let share = keys.len().div_ceil(devices.len()) as u64;
    let budget = memory
        .iter()
        .map(|&m| element_budget(Some(m), key_bytes))
        .min()
        .unwrap_or(usize::MAX) as u64;
    // A budget counts two copies of an element; the spread sort holds three of its share.
    if share.saturating_mul(SPREAD_BYTES_PER_BYTE) > budget.saturating_mul(2) {
        return Ok(false);
    }
    declined_unless_written(sort_host_spread(&cuda, keys, encoding).map(|()| true))
}

/// Keys that fit the memory of the CUDA devices among `devices`, but not beside the scratch
/// of one sort of them all: sorted in ranges in their memory, crossing the bus once each way
/// ([`sort_host_in_ranges`]). Every different CUDA device takes a part where each one's
/// share fits it; otherwise the first device alone, where the slice fits it. `Ok(false)`
/// where neither applies, or where it failed before anything was written to the slice (a
/// range outgrew its region, the memory was not there).
fn in_device_ranges(
    devices: &[&dyn Backend],
    memory: &[u64],
    mut keys: WordsMut<'_>,
    encoding: KeyEncoding,
) -> Result<bool> {
    let cuda = different_cuda(devices, memory);
    if cuda.len() > 1 && in_ranges_over(&cuda, keys.reborrow(), encoding)? {
        return Ok(true);
    }
    match cuda.first() {
        Some(&first) => in_ranges_over(&[first], keys, encoding),
        None => Ok(false),
    }
}

/// [`in_device_ranges`] over `devices`, each with the memory it may take: `Ok(false)` where
/// one device's part does not fit it.
fn in_ranges_over(
    devices: &[(&CudaBackend, u64)],
    keys: WordsMut<'_>,
    encoding: KeyEncoding,
) -> Result<bool> {
    let (n, key_bytes) = (keys.len(), keys.word_bytes() as u64);
    let share = n.div_ceil(devices.len()) as u64;
    if devices
        .iter()
        .any(|&(_, memory)| share.saturating_mul(key_bytes) > memory)
    {
        return Ok(false);
    }
    let parts = device_ranges::parts(n, devices.len());
    let count = device_ranges::part_sample_len(n, devices.len());
    let samples: Vec<Vec<u64>> = parts
        .iter()
        .map(|part| match &keys {
            WordsMut::U32(w) => sample_part(&w[part.clone()], encoding, count),
            WordsMut::U64(w) => sample_part(&w[part.clone()], encoding, count),
        })
        .collect();
    let mut all: Vec<u64> = samples.concat();
    if samples.len() > 1 {
        all.par_sort_unstable();
    }
    let splitters = Splitters::from_sorted_sample(&all, device_ranges::ranges_wanted(n));
    drop(all);
    let plan = RangesOverDevices::from_samples(parts, &samples, &splitters, key_bytes as usize);
    let fits =
        |(layout, &(_, memory)): (&DeviceRanges, _)| layout.device_bytes(key_bytes) <= memory;
    if !plan.layouts.iter().zip(devices).all(fits) {
        return Ok(false);
    }
    let backends: Vec<_> = devices.iter().map(|&(backend, _)| backend).collect();
    declined_unless_written(sort_host_in_ranges(
        &backends, keys, encoding, &splitters, &plan,
    ))
}

/// The sample of one device's part of the slice.
fn sample_part<W: Word>(part: &[W], encoding: KeyEncoding, count: usize) -> Vec<u64> {
    partition::sample_words(part, encoding, count, SAMPLE_SEED)
}

/// The CUDA devices among `devices`, each once (its first opening), in order, with the memory
/// a sort may take on each.
fn different_cuda<'d>(devices: &[&'d dyn Backend], memory: &[u64]) -> Vec<(&'d CudaBackend, u64)> {
    let mut cuda: Vec<(&CudaBackend, u64)> = Vec::with_capacity(devices.len());
    for (&device, &memory) in devices.iter().zip(memory) {
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
            cuda.push((backend, memory));
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
