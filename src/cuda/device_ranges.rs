//! Host slices sorted in ranges in the memory of one device or several
//! ([`sort_host_in_ranges`]): keys that fit the devices but not beside a whole sort's
//! scratch cross the bus once each way, as `crate::schedule::device_ranges` plans. The
//! host partition that such a slice would otherwise take reads and writes the whole slice
//! in host memory and first touches a buffer of its size, which costs several times the
//! bus (see `docs/scaling.md`).
//!
//! Each device's work runs on a thread of its own, so that every link to the host carries
//! its part at once; the steps that need every device's result (the fills, the exchange)
//! run between them on the calling thread.

use std::sync::atomic::{AtomicBool, Ordering};

use cust::event::Event;
use cust::memory::{CopyDestination, DeviceBuffer};
use cust::module::Module;
use cust::sys as cu;

use super::driver::{copy_device_async, enable_peer_access, on};
use super::kernels::{Kernel, KernelParams, launch_kernel, load_kernel};
use super::link::{CudaLink, hand_over, record, wait_for};
use super::plan::Widths;
use super::{CudaBackend, HostState, Job, step_done, timing_override};
use crate::backend::BackendKind;
use crate::buffer_cache::{BufferCache, grow};
use crate::error::{Error, Result};
use crate::host_transfer::{Column, ConcurrentTransfers};
use crate::kernel_contract::{RANGE_SCATTER_KEYS, RANGE_SCATTER_THREADS};
use crate::keys::{KeyEncoding, WordsMut};
use crate::partition::Splitters;
use crate::schedule::device_ranges::{DeviceRanges, RangesOverDevices};

/// `range_scatter_u32` and `range_scatter_u64` (`cuda/ranges.cuh`).
pub(super) fn load_range_kernels(module: &Module) -> Result<[Kernel; 2]> {
    Ok([
        load_kernel(module, "range_scatter_u32", 0)?,
        load_kernel(module, "range_scatter_u64", 0)?,
    ])
}

/// One device's side of the sort: its backend, its locked host-slice state, its regions.
struct Side<'a> {
    backend: &'a CudaBackend,
    layout: &'a DeviceRanges,
    host: &'a mut HostState,
    regions: cu::CUdeviceptr,
}

impl Side<'_> {
    /// The first key of range `r`'s region.
    fn region(&self, r: usize, word_bytes: u64) -> cu::CUdeviceptr {
        self.regions + self.layout.offsets[r] * word_bytes
    }
}

/// Sorts `keys` (32- or 64-bit words ordered by `encoding`) in the ranges of `splitters`
/// over `backends` (different devices), laid out as `plan` says. `Ok(false)` when a range
/// outgrew its region: nothing was written to `keys`, which another path must sort. An
/// error before the downloads leaves `keys` untouched; one after any range was written
/// returns [`Error::PartialResult`], as one device's host-slice sort does. The buffers stay
/// with each backend for its next host-slice sort.
pub(crate) fn sort_host_in_ranges(
    backends: &[&CudaBackend],
    mut keys: WordsMut<'_>,
    encoding: KeyEncoding,
    splitters: &Splitters,
    plan: &RangesOverDevices,
) -> Result<bool> {
    let word_bytes = keys.word_bytes() as u64;
    // Every device's host-slice state is held for the whole sort, locked in the order of
    // the devices' indices so that two such sorts cannot each hold what the other waits for.
    let mut by_index: Vec<usize> = (0..backends.len()).collect();
    by_index.sort_by_key(|&d| backends[d].info.index);
    let mut guards: Vec<Option<_>> = (0..backends.len()).map(|_| None).collect();
    for d in by_index {
        let requested = plan.layouts[d].device_bytes(word_bytes);
        guards[d] = Some(backends[d].lock_host(requested)?);
    }
    let mut sides = Vec::with_capacity(backends.len());
    for ((guard, &backend), layout) in guards.iter_mut().flatten().zip(backends).zip(&plan.layouts)
    {
        let host = &mut **guard;
        backend.make_current()?;
        let allocated = allocate(backend, host, layout, word_bytes, encoding);
        backend.cache_stats.keep(host);
        sides.push(Side {
            backend,
            layout,
            host,
            regions: allocated?,
        });
    }
    step_done("allocated");
    let written = AtomicBool::new(false);
    let sorted = sort_in_regions(&mut sides, &mut keys, encoding, splitters, plan, &written);
    if sorted.is_err() {
        // The copies and sorts already queued finish before the buffers are reused or
        // freed; the first error is the one to report.
        for side in &sides {
            let _ = side.backend.make_current();
            let _ = side.backend.sort_stream.synchronize();
            let _ = side.backend.stream.synchronize();
        }
    }
    let sorted = match sorted {
        Ok(sorted) => Ok(sorted),
        Err(e) => {
            let mut failed = match e {
                e @ Error::PartialResult { .. } => Err(e),
                e if written.load(Ordering::Acquire) => {
                    Err(Error::PartialResult { cause: Box::new(e) })
                }
                e => Err(e),
            };
            // Out of memory, every device's regions give way to the next sort's buffers, as
            // a host-slice sort's buffers do.
            for side in &mut sides {
                failed = side.host.after_sort(failed);
            }
            failed.map(|()| false)
        }
    };
    for side in &sides {
        side.backend.cache_stats.keep(side.host);
    }
    sorted
}

/// The regions of `layout` and the scratch of its largest sorted range, in `host`'s buffers
/// (the backend's context current); the regions' address.
fn allocate(
    backend: &CudaBackend,
    host: &mut HostState,
    layout: &DeviceRanges,
    word_bytes: u64,
    encoding: KeyEncoding,
) -> Result<cu::CUdeviceptr> {
    let requested = layout.device_bytes(word_bytes);
    let bytes = (layout.buffer_keys() * word_bytes) as usize;
    // The regions take nearly all of the device: buffers kept from other sorts give way,
    // except a keys buffer that already holds them (freeing and mapping tens of GiB again
    // takes a few tenths of a second).
    let kept = host.buffers.keys.take().filter(|b| b.len() >= bytes);
    host.buffers = BufferCache::default();
    host.buffers.keys = kept;
    let widths = Widths {
        key: word_bytes,
        value: 0,
    };
    host.buffers.fill(|buffers| {
        let regions = grow(&mut buffers.keys, bytes, |len| {
            backend.alloc(len, requested)
        })?;
        let regions = regions.as_device_ptr().as_raw();
        // The scratch of the largest range's sort, grown once here.
        let longest = layout.largest_sorted.max(2);
        backend.plan_with_scratch(
            &mut buffers.scratch,
            backend.plan(longest, 1, widths, encoding.code()),
            longest,
            1,
            widths,
            encoding.code(),
        )?;
        Ok(regions)
    })
}

/// The steps of [`sort_host_in_ranges`] once every side has its regions.
fn sort_in_regions(
    sides: &mut [Side<'_>],
    keys: &mut WordsMut<'_>,
    encoding: KeyEncoding,
    splitters: &Splitters,
    plan: &RangesOverDevices,
    written: &AtomicBool,
) -> Result<bool> {
    let word_bytes = keys.word_bytes() as u64;
    // 1. Each device uploads its part and appends it to its regions.
    let lens: Vec<usize> = plan.parts.iter().map(|p| p.len()).collect();
    let parts = keys.reborrow().cut(&lens);
    let fills = on_each(sides, parts, |side, part| {
        scatter(side, part, encoding, splitters)
    });
    let fills = fills.into_iter().collect::<Result<Vec<Vec<u64>>>>()?;
    step_done("uploaded and scattered");
    let ranges = splitters.ranges();
    let totals: Vec<u64> = (0..ranges)
        .map(|r| fills.iter().map(|f| f[r]).sum())
        .collect();
    if overflowed(sides, &fills, &totals, plan) {
        return Ok(false);
    }
    // 2. The device that sorts a range pulls the others' keys of it after its own.
    if sides.len() > 1 {
        crate::fault::point(BackendKind::Cuda, "range exchange")?;
        exchange(sides, &fills, plan, word_bytes)?;
    }
    step_done("exchanged");
    // 3. Each device sorts its ranges and writes them back into its span of the slice.
    let span_lens: Vec<usize> = plan
        .owned
        .iter()
        .map(|owned| totals[owned.clone()].iter().sum::<u64>() as usize)
        .collect();
    // The devices' ranges follow each other, so their spans do.
    let spans = keys.reborrow().cut(&span_lens);
    let work = spans.into_iter().zip(plan.owned.iter().cloned());
    let done = on_each(sides, work, |side, (span, owned)| {
        sort_and_write_back(side, span, encoding, owned, &totals, written)
    });
    done.into_iter().collect::<Result<Vec<()>>>()?;
    step_done("sorted and written back");
    Ok(true)
}

/// `step` for each side with its work item, each on a thread of its own where there are
/// several sides; one side's on the calling thread, so that a sort on one device makes every
/// driver call there (where `crate::fault` can fail it). A panic on a thread is an error.
fn on_each<'s, W: Send, T: Send>(
    sides: &mut [Side<'s>],
    work: impl IntoIterator<Item = W>,
    step: impl Fn(&mut Side<'s>, W) -> Result<T> + Sync,
) -> Vec<Result<T>> {
    if let [side] = sides {
        return work.into_iter().map(|w| step(side, w)).take(1).collect();
    }
    let devices = sides.len();
    std::thread::scope(|scope| {
        let step = &step;
        let handles: Vec<_> = sides
            .iter_mut()
            .zip(work)
            .map(|(side, w)| {
                scope.spawn(move || {
                    let _shared = ConcurrentTransfers::new(devices);
                    step(side, w)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(Error::Unsupported("a device's thread panicked".into()))
                })
            })
            .collect()
    })
}

/// Whether a range outgrew its region on some device: its own part's keys on a device
/// that does not sort it, or every part's keys on the one that does.
fn overflowed(
    sides: &[Side<'_>],
    fills: &[Vec<u64>],
    totals: &[u64],
    plan: &RangesOverDevices,
) -> bool {
    sides
        .iter()
        .zip(fills)
        .enumerate()
        .any(|(d, (side, fill))| {
            let capacities = &side.layout.capacities;
            fill.iter().zip(capacities).any(|(f, c)| f > c)
                || plan.owned[d].clone().any(|r| totals[r] > capacities[r])
        })
}

/// Enqueues on each device's copy stream the pulls of the other devices' keys of the
/// ranges it sorts, after its own keys in each region, and waits for all of them (the
/// sources' regions are then free for their own sorts, and the pulled keys in place for
/// the sorts on the sort stream).
fn exchange(
    sides: &[Side<'_>],
    fills: &[Vec<u64>],
    plan: &RangesOverDevices,
    word_bytes: u64,
) -> Result<()> {
    for (d, side) in sides.iter().enumerate() {
        side.backend.make_current()?;
        let context = side.backend.context.as_raw();
        for (g, from) in sides.iter().enumerate() {
            let pulled = plan.owned[d].clone().any(|r| fills[g][r] > 0);
            if g == d || !pulled {
                continue;
            }
            let from_context = from.backend.context.as_raw();
            enable_peer_access(
                side.backend.device.as_raw(),
                from.backend.device.as_raw(),
                from_context,
            )?;
        }
        for r in plan.owned[d].clone() {
            let mut at = fills[d][r];
            for (g, from) in sides.iter().enumerate() {
                if g == d || fills[g][r] == 0 {
                    continue;
                }
                copy_device_async(
                    (side.region(r, word_bytes) + at * word_bytes, context),
                    (from.region(r, word_bytes), from.backend.context.as_raw()),
                    (fills[g][r] * word_bytes) as usize,
                    side.backend.stream.as_inner(),
                )?;
                at += fills[g][r];
            }
        }
    }
    for side in sides {
        side.backend.make_current()?;
        side.backend
            .stream
            .synchronize()
            .map_err(on("cuStreamSynchronize"))?;
    }
    Ok(())
}

/// Range sorts enqueued ahead of the download that is running. The host waits in each
/// download (its copies out of the ring), so the sorts queued before it are what the device
/// works on meanwhile: one range's sort takes about half its download, so two ahead keep the
/// device busy. Queuing every sort up front instead fills the driver's launch queue (a range
/// takes dozens of launches): the host then blocks in a launch until most sorts have run, and
/// the first download starts only after them.
const SORTS_AHEAD: usize = 2;

/// On `side`'s thread: sorts each range of `owned` that needs it on the sort stream, and
/// downloads each into its place in `span` (where the device's ranges go, in order) on
/// the copy stream after its sort, with at most [`SORTS_AHEAD`] sorts queued past the
/// range being downloaded. `written` is set before the first download.
fn sort_and_write_back(
    side: &mut Side<'_>,
    span: WordsMut<'_>,
    encoding: KeyEncoding,
    owned: std::ops::Range<usize>,
    totals: &[u64],
    written: &AtomicBool,
) -> Result<()> {
    let backend = side.backend;
    backend.make_current()?;
    let word_bytes = span.word_bytes() as u64;
    // A unit timing may queue another number ahead to compare.
    let ahead = timing_override("BITONIC_TIMING_SORTS_AHEAD").unwrap_or(SORTS_AHEAD);
    let ranges: Vec<usize> = owned.clone().collect();
    // `done[i]`: the end of range `ranges[i]`'s sort, `None` for a range that needs none.
    let mut done: Vec<Option<Event>> = Vec::with_capacity(ranges.len());
    let link = CudaLink {
        stream: &backend.stream,
        context: backend.context.as_raw(),
    };
    let lens: Vec<usize> = ranges.iter().map(|&r| totals[r] as usize).collect();
    let pieces = span.cut(&lens);
    for (i, piece) in pieces.into_iter().enumerate() {
        let queued = (i + 1 + ahead).min(ranges.len());
        while done.len() < queued {
            let r = ranges[done.len()];
            done.push(sort_range(side, r, totals[r], word_bytes, encoding)?);
        }
        if piece.is_empty() {
            continue;
        }
        if let Some(event) = done[i].take() {
            wait_for(&backend.stream, event)?;
        }
        let mut column = Column::Words(piece);
        written.store(true, Ordering::Release);
        let copy_back = backend.cache_stats.copy_back();
        side.host.download(
            &link,
            (&mut column, side.region(ranges[i], word_bytes)),
            None,
            copy_back,
        )?;
    }
    Ok(())
}

/// Enqueues on the sort stream the sort of range `r` (`total` keys in its region), unless it
/// needs none; the event of its end.
fn sort_range(
    side: &mut Side<'_>,
    r: usize,
    total: u64,
    word_bytes: u64,
    encoding: KeyEncoding,
) -> Result<Option<Event>> {
    if Splitters::is_single_key(r) || total < 2 {
        return Ok(None);
    }
    let backend = side.backend;
    let widths = Widths {
        key: word_bytes,
        value: 0,
    };
    crate::fault::point(BackendKind::Cuda, "range sort")?;
    let (plan, scratch) = backend.plan_with_scratch(
        &mut side.host.buffers.scratch,
        backend.plan(total, 1, widths, encoding.code()),
        total,
        1,
        widths,
        encoding.code(),
    )?;
    let job = Job {
        keys: side.region(r, word_bytes),
        values: 0,
        kernels: backend.kernels(word_bytes as usize, 0),
        widths,
        plan,
        scratch,
    };
    backend.enqueue(&job, backend.sort_stream.as_inner())?;
    record(&backend.sort_stream).map(Some)
}

/// The device tables of one range scatter: the splitters' ordered words and their number
/// `m`, and per range (`2m + 1`) its region's offset, its capacity and its fill.
pub(super) struct ScatterTables {
    pub(super) splitters: cu::CUdeviceptr,
    pub(super) m: u32,
    pub(super) offsets: cu::CUdeviceptr,
    pub(super) capacities: cu::CUdeviceptr,
    pub(super) fills: cu::CUdeviceptr,
}

impl ScatterTables {
    /// The tables in these buffers: `m` splitters (the buffer holds at least one word, an
    /// address even for none), and the ranges' offsets, capacities and fills.
    pub(super) fn of(
        splitters: &DeviceBuffer<u64>,
        m: u32,
        [offsets, capacities, fills]: [&DeviceBuffer<u64>; 3],
    ) -> ScatterTables {
        let at = |b: &DeviceBuffer<u64>| b.as_device_ptr().as_raw();
        ScatterTables {
            splitters: at(splitters),
            m,
            offsets: at(offsets),
            capacities: at(capacities),
            fills: at(fills),
        }
    }
}

/// Enqueues `kernel` (`range_scatter_<key>(const K *keys, u64 n, const u64 *splitters, u32 m,
/// u32 encoding, const u64 *offsets, const u64 *capacities, u64 *fills, K *regions)`) over
/// the `keys.1` keys at `keys.0` on `stream`: each key is appended to its range's region, or
/// only counted where the region is full.
///
/// # Safety
/// `keys` must hold that many keys of the kernel's width, the tables `m` splitters (at most
/// `RANGE_MAX_SPLITTERS`) and `2m + 1` entries each, and `regions` at least `offsets[r] +
/// capacities[r]` keys for every range (the kernel checks each capacity before writing).
pub(super) unsafe fn launch_range_scatter(
    kernel: Kernel,
    stream: &cust::stream::Stream,
    keys: (cu::CUdeviceptr, u64),
    tables: &ScatterTables,
    encoding: KeyEncoding,
    regions: cu::CUdeviceptr,
) -> Result<()> {
    let mut params = (
        keys.0,
        keys.1,
        tables.splitters,
        tables.m,
        encoding.code(),
        tables.offsets,
        tables.capacities,
        tables.fills,
        regions,
    );
    let grid = keys.1.div_ceil(u64::from(RANGE_SCATTER_KEYS)) as u32;
    // SAFETY: the parameters are the kernel's, in order; the caller vouches for the extents.
    unsafe {
        launch_kernel(
            kernel,
            (grid.max(1), RANGE_SCATTER_THREADS, 0),
            stream.as_inner(),
            &mut params.pointers(),
        )
    }
}

/// On `side`'s thread: uploads `part` chunk by chunk into the staging after the regions
/// and appends each chunk to its ranges' regions on the sort stream while the next one
/// travels; returns each range's fill (past its capacity where the range outgrew its
/// region).
fn scatter(
    side: &mut Side<'_>,
    part: WordsMut<'_>,
    encoding: KeyEncoding,
    splitters: &Splitters,
) -> Result<Vec<u64>> {
    let backend = side.backend;
    backend.make_current()?;
    let word_bytes = part.word_bytes() as u64;
    let layout = side.layout;
    let ranges = layout.capacities.len();
    crate::fault::point(BackendKind::Cuda, "cuMemAlloc")?;
    let table = |words: &[u64]| DeviceBuffer::from_slice(words).map_err(on("cuMemcpyHtoD"));
    // An empty table still needs an address.
    let split_words: Vec<u64> = splitters.bits().iter().copied().chain([0]).collect();
    let split = table(&split_words)?;
    let offsets = table(&layout.offsets)?;
    let capacities = table(&layout.capacities)?;
    let fills = table(&vec![0u64; ranges])?;
    let staging = side.regions + layout.total() * word_bytes;
    let kernel = backend.range_kernels[usize::from(word_bytes == 8)];
    let link = CudaLink {
        stream: &backend.stream,
        context: backend.context.as_raw(),
    };
    let n = part.len();
    let chunk = layout.chunk.max(1);
    let lens: Vec<usize> = (0..n)
        .step_by(chunk)
        .map(|first| chunk.min(n - first))
        .collect();
    let mut scattered: [Option<Event>; 2] = [None, None];
    for (i, words) in part.cut(&lens).into_iter().enumerate() {
        let len = words.len();
        let slot = i % 2;
        let stage = staging + (slot * layout.chunk) as u64 * word_bytes;
        // The staging slot is free once the scatter of two chunks ago has read it.
        if let Some(event) = scattered[slot].take() {
            wait_for(&backend.stream, event)?;
        }
        let column = Column::Words(words);
        side.host
            .upload(&link, (&column, stage), None, &mut |_| Ok(()))?;
        hand_over(&backend.stream, &backend.sort_stream)?;
        let tables = ScatterTables::of(
            &split,
            splitters.bits().len() as u32,
            [&offsets, &capacities, &fills],
        );
        crate::fault::point(BackendKind::Cuda, "range scatter")?;
        // SAFETY: the chunk's `len` staged keys lie at `stage`; the `m` splitters are at most
        // the kernel's limit (`ranges_wanted`), the tables hold `2m + 1` entries and the
        // regions `offsets[r] + capacities[r]` keys.
        unsafe {
            launch_range_scatter(
                kernel,
                &backend.sort_stream,
                (stage, len as u64),
                &tables,
                encoding,
                side.regions,
            )
        }?;
        scattered[slot] = Some(record(&backend.sort_stream)?);
    }
    backend
        .sort_stream
        .synchronize()
        .map_err(on("cuStreamSynchronize"))?;
    let mut got = vec![0u64; ranges];
    fills.copy_to(&mut got[..]).map_err(on("cuMemcpyDtoH"))?;
    Ok(got)
}
