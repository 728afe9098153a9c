//! Sorts of host slices of converted keys ([`sort_slices`], from the dispatch step): on the
//! first device where one device sorts them whole, else in ranges: slices larger than a
//! device's memory, and slices spread over several devices.
//!
//! The slice is partitioned on the host ([`crate::partition`]): splitters from a sample, a
//! count per range, and a stable scatter into a host buffer of the slice's size, where the
//! ranges then lie contiguous and in order. Neighbouring ranges are grouped into spans of at
//! most a device's share; each span is sorted by one device's ordinary host-slice sort (which
//! pipelines its upload, sort and download), the devices side by side, one host thread each.
//! Ranges that hold a single repeated key are sorted as they stand and skip the devices.
//! Sorted ranges end to end are the sorted whole, so no merge follows.
//!
//! Keys of 32 or 64 bits without values first go to the first device's backend
//! ([`Backend::sort_host_in_device_memory`]), which may sort them in its devices' own memory
//! without the host partition (on CUDA: the devices' spread sort where equal shares fit every
//! GPU, and ranges in the GPUs' memory where the keys fit them once).
//!
//! Where the result goes: by default (keys of 32 or 64 bits) each span is uploaded from the
//! buffer and downloaded straight into its place in the caller's slices; a failure then has
//! the spans no device finished sorted on the host from the buffer, which the devices only
//! read, so the slices end sorted and the error is returned. With
//! [`crate::SorterBuilder::all_or_nothing`] (and for narrow keys) the spans are sorted in place
//! in the buffer and the buffer copied into the slices at the end, by a copy that cannot fail:
//! a failure leaves the slices as they were. The price is host memory as large as the keys
//! and values.

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use crate::backend::{Backend, BackendKind};
use crate::backends::{Backends, KeyForm};
use crate::error::{Error, Result};
use crate::keys::{Word, WordsMut};
use crate::partition::{self, Partition, SAMPLE_SEED, Splitters};
use crate::schedule::device_ranges::{MIN_BUDGET, element_budget};

/// The share of a GPU's memory that one sort may use when no limit is set: the rest is the
/// context's, the kernels', and other programs'.
const GPU_MEMORY_SHARE_PERCENT: u64 = 85;
/// Ranges per span: finer ranges let spans be grouped to within a quarter of a range's size
/// of their target.
const RANGES_PER_SPAN: usize = 4;
/// Spans are planned at this share of a device's budget, so that ranges a little over their
/// expected size still fit.
const BUDGET_USE_PERCENT: usize = 90;
/// How often a span still too large for its device (an unlucky sample) is partitioned again
/// before it is handed to the device as it is.
const MAX_DEPTH: u32 = 3;
/// Spans that a sort which ran out of device memory is cut into before it is tried again.
const OUT_OF_MEMORY_SPANS: usize = 4;
/// Elements per piece of the parallel copy back into the caller's slices.
const COPY_PIECE: usize = 1 << 16;

/// How a sort of one host slice is split.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// How many of the sorter's devices take part (the first ones).
    devices: usize,
    /// Spans to aim for: a multiple of `devices`.
    spans: usize,
}

/// The device memory one sort on `device` may use: its memory (or the sorter's limit), a
/// GPU that the sorter opened several times shared among them; `None` for the CPU backend
/// without a limit.
fn memory(backends: &Backends, device: &dyn Backend) -> Option<u64> {
    let info = device.device();
    match backends.settings.memory_limit {
        Some(limit) => Some(limit),
        None if info.backend == BackendKind::Cpu => None,
        None => {
            let openings = backends
                .device_backends()
                .filter(|d| d.device().backend == info.backend && d.device().index == info.index)
                .count() as u64;
            Some(info.memory_bytes / 100 * GPU_MEMORY_SHARE_PERCENT / openings.max(1))
        }
    }
}

/// The elements one sort on `device` may hold: its [`memory`] over twice the bytes of an
/// element (the keys and values, and the scratch of as many).
fn budget(backends: &Backends, device: &dyn Backend, element_bytes: u64) -> usize {
    element_budget(memory(backends, device), element_bytes)
}

/// The [`budget`] of a span's elements on `device`: keys of `form`, and values of `V` where
/// the span has them.
fn span_budget<T, F: KeyForm<T>, V>(
    backends: &Backends,
    device: &dyn Backend,
    form: F,
    has_values: bool,
) -> usize {
    let value_bytes = if has_values {
        std::mem::size_of::<V>() as u64
    } else {
        0
    };
    budget(backends, device, form.device_bytes() + value_bytes)
}

/// The smallest budget among `devices`.
fn smallest_budget<'a>(
    backends: &Backends,
    devices: impl Iterator<Item = &'a dyn Backend>,
    element_bytes: u64,
) -> usize {
    devices
        .map(|d| budget(backends, d, element_bytes))
        .min()
        .unwrap_or(usize::MAX)
}

/// The plan of a sort of `n` elements on the first device that ran out of memory although
/// its budget said it would fit (the device had less free memory than that): spans of a
/// quarter. `None` where the sort cannot be partitioned (the oblivious mode) or is too short
/// to be worth it.
fn after_out_of_memory(backends: &Backends, n: usize) -> Option<Plan> {
    (!backends.settings.oblivious && n >= 2 * MIN_BUDGET).then_some(Plan {
        devices: 1,
        spans: OUT_OF_MEMORY_SPANS,
    })
}

/// How a sort of `n` elements of `element_bytes` each (keys as the device holds them, plus
/// values) is split, or `None` where one device sorts it whole: it fits the first device,
/// and it is shorter than [`crate::SorterBuilder::split_from`] or the sorter has one device.
/// A split sort runs on every device. The oblivious
/// mode never splits: partitioning reads memory where the keys lead it.
fn plan(backends: &Backends, n: usize, element_bytes: u64) -> Option<Plan> {
    if backends.settings.oblivious {
        return None;
    }
    let device_count = backends.device_backends().count();
    let first = smallest_budget(backends, backends.device_backends().take(1), element_bytes);
    // A slice that must be partitioned anyway goes to every device.
    let spread = device_count > 1 && (n >= backends.settings.split_from || n > first);
    if !spread && n <= first {
        return None;
    }
    let devices = if spread { device_count } else { 1 };
    let budget = smallest_budget(
        backends,
        backends.device_backends().take(devices),
        element_bytes,
    );
    Some(plan_for(n, budget, devices))
}

/// The plan of `n` elements on `devices` devices that each sort at most `budget`.
fn plan_for(n: usize, budget: usize, devices: usize) -> Plan {
    let usable = (budget / 100 * BUDGET_USE_PERCENT).max(1);
    let spans = n.div_ceil(usable).max(devices).next_multiple_of(devices);
    Plan { devices, spans }
}

/// Sorts rows of `row_len` of converted `keys` of `form` with `values` on the first device,
/// or in ranges where one row is too large for it or is spread over several devices, or where
/// it ran out of the device's memory (which had less free than its budget said; the slices
/// are then as they were, since a sort allocates before anything is copied back).
pub(crate) fn sort_slices<T: bytemuck::Pod + Send + Sync, F: KeyForm<T>>(
    backends: &Backends,
    keys: &mut [T],
    form: F,
    mut values: Option<WordsMut<'_>>,
    row_len: usize,
) -> Result<()> {
    let n = keys.len();
    let one_row = row_len == n;
    let value_bytes = values.as_ref().map_or(0, |v| v.word_bytes() as u64);
    let element_bytes = form.device_bytes() + value_bytes;
    let mut plan = one_row.then(|| plan(backends, n, element_bytes)).flatten();
    loop {
        if let Some(plan) = plan {
            return match values {
                None => sort::<T, F, u32>(backends, &plan, keys, form, None),
                Some(WordsMut::U32(v)) => sort(backends, &plan, keys, form, Some(v)),
                Some(WordsMut::U64(v)) => sort(backends, &plan, keys, form, Some(v)),
            };
        }
        let value_words = values.as_mut().map(WordsMut::reborrow);
        let sorted = backends.sort_slice(backends.first(), keys, form, value_words, row_len);
        plan = match sorted {
            Err(Error::OutOfMemory { .. }) if one_row => after_out_of_memory(backends, n),
            _ => None,
        };
        if plan.is_none() {
            return sorted;
        }
    }
}

/// Sorts `keys` of `form` (and `values`) by `plan` on the sorter's first `plan.devices`
/// devices.
fn sort<T: bytemuck::Pod + Send + Sync, F: KeyForm<T>, V: Word>(
    backends: &Backends,
    plan: &Plan,
    keys: &mut [T],
    form: F,
    values: Option<&mut [V]>,
) -> Result<()> {
    let devices: Vec<&dyn Backend> = backends.device_backends().take(plan.devices).collect();
    if values.is_none() && !backends.settings.all_or_nothing {
        let memory: Vec<u64> = devices
            .iter()
            .map(|&d| memory(backends, d).unwrap_or(u64::MAX))
            .collect();
        if let Some((words, encoding)) = form.words(keys)
            && devices[0].sort_host_in_device_memory(&devices, &memory, words, encoding)?
        {
            return Ok(());
        }
    }
    sort_on_devices(backends, &devices, plan.spans, keys, form, values, 0)
}

/// [`sort`] on the given devices, aiming for `spans` spans.
fn sort_on_devices<T: bytemuck::Pod + Send + Sync, F: KeyForm<T>, V: Word>(
    backends: &Backends,
    devices: &[&dyn Backend],
    spans: usize,
    keys: &mut [T],
    form: F,
    values: Option<&mut [V]>,
    depth: u32,
) -> Result<()> {
    let kind = devices[0].device().backend;
    crate::fault::point(kind, "partition")?;
    let n = keys.len();
    let ranges = spans * RANGES_PER_SPAN;
    let count = ranges.saturating_mul(partition::OVERSAMPLING).max(1024);
    let bits = |k: T| form.bits(k);
    let sample = partition::sample_of(keys, count, SAMPLE_SEED + u64::from(depth), bits);
    let splitters = Splitters::from_sorted_sample(&sample, ranges);
    let mut sorted_keys: Vec<T> = host_buffer(n)?;
    let mut sorted_values: Option<Vec<V>> = match &values {
        Some(_) => Some(host_buffer(n)?),
        None => None,
    };
    let partition = partition::scatter_of(
        keys,
        values.as_deref(),
        &splitters,
        bits,
        &mut sorted_keys,
        sorted_values.as_deref_mut(),
    )?;
    let spans = group(&partition, n.div_ceil(spans));
    // Word keys outside all-or-nothing go from the devices straight into the caller's
    // slices; a failure then has the rest sorted on the host (`finish_on_host`), which needs
    // the buffer's ranges intact: only the GPU backends' sorts into other slices promise that
    // (narrow keys are sorted in place, and a copy back that fails half-way mixes them).
    let direct = !backends.settings.all_or_nothing && depth == 0 && std::mem::size_of::<T>() >= 4;
    if !direct {
        let pieces = cut(&mut sorted_keys, sorted_values.as_deref_mut(), &spans);
        run(devices, pieces, |device, (k, v)| {
            sort_span(backends, device, k, form, v, depth)
        })?;
        crate::fault::point(kind, "write-back")?;
        copy_into(keys, &sorted_keys);
        if let (Some(values), Some(sorted)) = (values, &sorted_values) {
            copy_into(values, sorted);
        }
        return Ok(());
    }
    let done: Vec<AtomicBool> = spans.iter().map(|_| AtomicBool::new(false)).collect();
    let mut values = values;
    let result = {
        let sources = cut(&mut sorted_keys, sorted_values.as_deref_mut(), &spans);
        let targets = cut(keys, values.as_deref_mut(), &spans);
        let pieces: Vec<_> = sources.into_iter().zip(targets).enumerate().collect();
        run(devices, pieces, |device, (i, (source, target))| {
            sort_span_into(backends, device, source, target, form)?;
            done[i].store(true, Ordering::Relaxed);
            Ok(())
        })
        .and_then(|()| crate::fault::point(kind, "write-back"))
    };
    let finished = finish_on_host(
        backends,
        (&mut sorted_keys, sorted_values.as_deref_mut()),
        (keys, values),
        &spans,
        &done,
        form,
    );
    result.and(finished)
}

/// After the spans of a direct sort: sorts on the host every span that no device finished
/// (none when all succeeded) from the buffer into the caller's slices, and copies what lies
/// between the spans (single-key ranges, sorted as they stand). The slices are then fully
/// sorted, whatever failed.
fn finish_on_host<T: bytemuck::Pod + Send + Sync, F: KeyForm<T>, V: Word>(
    backends: &Backends,
    (sorted_keys, mut sorted_values): (&mut [T], Option<&mut [V]>),
    (keys, mut values): (&mut [T], Option<&mut [V]>),
    spans: &[Range<usize>],
    done: &[AtomicBool],
    form: F,
) -> Result<()> {
    let host = crate::cpu::CpuBackend::new();
    for (span, done) in spans.iter().zip(done) {
        if !done.load(Ordering::Relaxed) {
            let k = &mut sorted_keys[span.clone()];
            let v = sorted_values
                .as_deref_mut()
                .map(|v| V::words_mut(&mut v[span.clone()]));
            backends.sort_slice(&host, k, form, v, span.len())?;
            copy_into(&mut keys[span.clone()], &sorted_keys[span.clone()]);
            if let (Some(values), Some(sorted)) = (values.as_deref_mut(), sorted_values.as_deref())
            {
                copy_into(&mut values[span.clone()], &sorted[span.clone()]);
            }
        }
    }
    let mut at = 0;
    for gap in spans
        .iter()
        .map(|s| s.start)
        .chain([keys.len()])
        .zip(std::iter::once(0).chain(spans.iter().map(|s| s.end)))
        .map(|(end, start)| start..end)
    {
        debug_assert!(gap.start >= at);
        at = gap.end;
        copy_into(&mut keys[gap.clone()], &sorted_keys[gap.clone()]);
        if let (Some(values), Some(sorted)) = (values.as_deref_mut(), sorted_values.as_deref()) {
            copy_into(&mut values[gap.clone()], &sorted[gap]);
        }
    }
    Ok(())
}

/// A host buffer of `n` elements, zeroed by the allocator (the pages are touched first by
/// the scatter); [`Error::OutOfMemory`] when host memory cannot hold it.
fn host_buffer<T: bytemuck::Pod>(n: usize) -> Result<Vec<T>> {
    bytemuck::allocation::try_zeroed_vec(n).map_err(|()| Error::OutOfMemory {
        device: "host memory (the partitioned copy of the data)".to_string(),
        requested: (n as u64).saturating_mul(std::mem::size_of::<T>() as u64),
        available: crate::cpu::info().memory_bytes,
    })
}

/// Groups neighbouring ranges of `partition` into spans of at most `target` elements to sort.
/// A range longer than `target` is a span of its own; a single-key range that does not fit
/// the span before it is no span at all (it is sorted as it stands), nor is an empty one.
fn group(partition: &Partition, target: usize) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut current: Option<Range<usize>> = None;
    for r in 0..partition.ranges() {
        let range = partition.range(r);
        if range.is_empty() {
            continue;
        }
        let open = current.as_ref().map_or(0, |c| c.len());
        if open + range.len() <= target {
            current = Some(current.map_or(range.clone(), |c| c.start..range.end));
            continue;
        }
        spans.extend(current.take());
        if !Splitters::is_single_key(r) {
            current = Some(range);
        }
    }
    spans.extend(current);
    spans.retain(|s| s.len() > 1);
    spans
}

/// One span's keys and values, cut from the partitioned buffers.
type Piece<'a, K, V> = (&'a mut [K], Option<&'a mut [V]>);

/// Cuts the spans (ascending, disjoint) out of the buffers.
fn cut<'a, K, V>(
    mut keys: &'a mut [K],
    mut values: Option<&'a mut [V]>,
    spans: &[Range<usize>],
) -> Vec<Piece<'a, K, V>> {
    let mut at = 0;
    let mut pieces = Vec::with_capacity(spans.len());
    for span in spans {
        let (_, rest) = std::mem::take(&mut keys).split_at_mut(span.start - at);
        let (piece, rest) = rest.split_at_mut(span.len());
        keys = rest;
        let value_piece = values.take().map(|v| {
            let (_, rest) = v.split_at_mut(span.start - at);
            let (piece, rest) = rest.split_at_mut(span.len());
            values = Some(rest);
            piece
        });
        at = span.end;
        pieces.push((piece, value_piece));
    }
    pieces
}

/// Runs `work` on every piece: on this thread where there is one device (or this is a rayon
/// thread), else one thread per device, each taking the next piece until none is left or a
/// piece failed. The first failure is returned.
fn run<P: Send>(
    devices: &[&dyn Backend],
    pieces: Vec<P>,
    work: impl Fn(&dyn Backend, P) -> Result<()> + Sync,
) -> Result<()> {
    // A rayon thread waits for no other threads: rayon's work that the device threads hand
    // to the pool (their host copies) could be queued behind this very thread. It sorts the
    // pieces itself, on the devices in turn.
    if devices.len() == 1 || rayon::current_thread_index().is_some() {
        for (i, piece) in pieces.into_iter().enumerate() {
            work(devices[i % devices.len()], piece)?;
        }
        return Ok(());
    }
    let queue = Mutex::new(pieces.into_iter());
    let failed = AtomicBool::new(false);
    let results: Vec<Result<()>> = std::thread::scope(|scope| {
        let workers: Vec<_> = devices
            .iter()
            .map(|&device| {
                let (queue, failed, work) = (&queue, &failed, &work);
                scope.spawn(move || {
                    // The devices' host copies share rayon's threads.
                    #[cfg(any(feature = "cuda", feature = "opencl"))]
                    let _shared = crate::host_transfer::ConcurrentTransfers::new(devices.len());
                    while !failed.load(Ordering::Relaxed) {
                        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                        let Some(piece) = next else {
                            break;
                        };
                        if let Err(e) = work(device, piece) {
                            failed.store(true, Ordering::Relaxed);
                            return Err(e);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    results.into_iter().collect()
}

/// Sorts one span of the buffer on `device` straight into its place in the caller's slices
/// (`target`), leaving the buffer's span as it was on error. A span that does not fit the
/// device, or that runs out of its memory, is sorted in the buffer as [`sort_span`] does and
/// then copied.
fn sort_span_into<T: bytemuck::Pod + Send + Sync, F: KeyForm<T>, V: Word>(
    backends: &Backends,
    device: &dyn Backend,
    (keys, mut values): Piece<'_, T, V>,
    (out_keys, out_values): Piece<'_, T, V>,
    form: F,
) -> Result<()> {
    crate::fault::point(device.device().backend, "range sort")?;
    let n = keys.len();
    let budget = span_budget::<T, F, V>(backends, device, form, values.is_some());
    let fits = n <= budget;
    let mut out_values = out_values;
    if fits {
        let sorted = backends.sort_slice_into(
            device,
            (&mut *keys, values.as_deref_mut().map(V::words_mut)),
            (&mut *out_keys, out_values.as_deref_mut().map(V::words_mut)),
            form,
        );
        match sorted {
            // The device had less free memory than its budget: the span is as it was (a
            // sort allocates before it copies anything back), so it goes in smaller pieces.
            Err(Error::OutOfMemory { .. }) if n >= 2 * MIN_BUDGET => {}
            Err(Error::PartialResult { cause }) => return Err(*cause),
            other => return other,
        }
    }
    let spans = if fits {
        OUT_OF_MEMORY_SPANS
    } else {
        plan_for(n, budget, 1).spans
    };
    sort_on_devices(
        backends,
        &[device],
        spans,
        keys,
        form,
        values.as_deref_mut(),
        1,
    )
    .map_err(|e| match e {
        Error::PartialResult { cause } => *cause,
        e => e,
    })?;
    copy_into(out_keys, keys);
    if let (Some(out), Some(values)) = (out_values, values) {
        copy_into(out, values);
    }
    Ok(())
}

/// Sorts one span on `device`: partitioned once more where it does not fit the device (an
/// unlucky sample), else by the device's own sort of host slices. A failure that left the
/// span half written is reported by its cause: the span is the sorter's buffer, and the
/// caller's slices are untouched.
fn sort_span<T: bytemuck::Pod + Send + Sync, F: KeyForm<T>, V: Word>(
    backends: &Backends,
    device: &dyn Backend,
    keys: &mut [T],
    form: F,
    values: Option<&mut [V]>,
    depth: u32,
) -> Result<()> {
    crate::fault::point(device.device().backend, "range sort")?;
    let budget = span_budget::<T, F, V>(backends, device, form, values.is_some());
    let n = keys.len();
    let mut values = values;
    let sorted = if n > budget && depth < MAX_DEPTH {
        let plan = plan_for(n, budget, 1);
        sort_on_devices(
            backends,
            &[device],
            plan.spans,
            keys,
            form,
            values,
            depth + 1,
        )
    } else {
        let value_words = values.as_deref_mut().map(V::words_mut);
        match backends.sort_slice(device, keys, form, value_words, n) {
            // The device had less free memory than its budget: the span is as it was (a
            // sort allocates before anything is copied back), so it goes in smaller pieces.
            Err(Error::OutOfMemory { .. }) if depth < MAX_DEPTH && n >= 2 * MIN_BUDGET => {
                sort_on_devices(
                    backends,
                    &[device],
                    OUT_OF_MEMORY_SPANS,
                    keys,
                    form,
                    values,
                    depth + 1,
                )
            }
            other => other,
        }
    };
    sorted.map_err(|e| match e {
        Error::PartialResult { cause } => *cause,
        e => e,
    })
}

/// Copies `src` into `dst` (the same length) on rayon's threads.
fn copy_into<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    dst.par_chunks_mut(COPY_PIECE)
        .zip(src.par_chunks(COPY_PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

#[cfg(test)]
mod tests;
