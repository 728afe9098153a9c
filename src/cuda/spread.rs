//! Sorts of keys spread over the device memory of several GPUs ([`sort_device_spread`]):
//! every part ends with as many keys as it started with, and the parts together hold the
//! keys in order (the first part the smallest).
//!
//! The steps, each device's work on its part's stream:
//! 1. every part is sorted on its own device ([`CudaBackend::sort_device`]'s launches), all
//!    devices at once;
//! 2. the cuts: for each boundary between parts (the prefix sums of the lengths), how many
//!    keys of each sorted part go before it (`crate::spread_cuts`; a few rounds of binary
//!    searches on the devices, `spread_count_<K>`, read back by the host);
//! 3. one all-to-all exchange: each device copies, from every part, the keys it receives
//!    into a buffer of its own (its sort scratch, free once the parts are sorted), in part
//!    order (a peer copy between devices, over NVLink where peer access is possible, a device
//!    copy within one);
//! 4. each device merges its received runs, two by two (`spread_split_<K>` and
//!    `spread_merge_<K>`, stable, ties to the earlier run), into the caller's buffer.
//!
//! The merges compare ordered words but store the keys as they are, so that every buffer
//! holds the caller's keys at every step.

use std::ffi::c_void;

use cust::context::CurrentContext;
use cust::event::{Event, EventFlags};
use cust::memory::{AsyncCopyDestination, CopyDestination, DeviceBuffer, DeviceCopy, DeviceSlice};
use cust::module::Module;
use cust::stream::{Stream, StreamWaitEventFlags};
use cust::sys as cu;

use super::device_resident::DeviceWords;
use super::driver::{copy_device_async, driver_error, enable_peer_access, on};
use super::kernels::{Kernel, launch_kernel, load_kernel};
use super::{CudaBackend, step_done, timing_override};
use crate::error::{Error, Result};
use crate::kernel_contract::padded_words;
use crate::keys::{KeyEncoding, Order, WordKey};
use crate::spread_cuts::{PROBES, spread_cuts};

mod merge;
use merge::merge_received;

/// Threads of a merge block (`SPREAD_THREADS` in `cuda/spread.cuh`).
const MERGE_THREADS: u32 = 256;
/// Threads of a block of the count and split kernels.
const SEARCH_THREADS: u32 = 256;
/// Resident merge blocks per multiprocessor the grid is sized for; each block loops over
/// the tiles past the grid.
const MERGE_BLOCKS_PER_SM: u32 = 8;

/// log2 of a merge block's outputs: 256 threads of 8 four-byte keys or 4 eight-byte ones.
fn merge_log_tile(key_bytes: usize) -> u32 {
    if key_bytes == 4 { 11 } else { 10 }
}

/// The kernels of `cuda/spread.cuh`, each for `u32` and `u64` words.
#[derive(Clone, Copy, Debug)]
pub(super) struct SpreadKernels {
    count: [Kernel; 2],
    split: [Kernel; 2],
    merge: [Kernel; 2],
}

/// Looks up the spread kernels; the merges may use their padded tile of shared memory.
pub(super) fn load_spread_kernels(module: &Module) -> Result<SpreadKernels> {
    let names = ["u32", "u64"];
    let each = |prefix: &str, shared: [u32; 2]| -> Result<[Kernel; 2]> {
        Ok([
            load_kernel(module, &format!("{prefix}_{}", names[0]), shared[0])?,
            load_kernel(module, &format!("{prefix}_{}", names[1]), shared[1])?,
        ])
    };
    let tile_bytes = |bytes: usize| (padded_words(merge_log_tile(bytes)) as usize * bytes) as u32;
    Ok(SpreadKernels {
        count: each("spread_count", [0, 0])?,
        split: each("spread_split", [0, 0])?,
        merge: each("spread_merge", [tile_bytes(4), tile_bytes(8)])?,
    })
}

/// One part of a sort spread over devices: keys in the memory of `backend`'s device, and
/// the stream that orders the part's work.
pub struct SpreadPart<'a, K: DeviceCopy> {
    /// The backend of the device that holds `keys` (the same backend may appear in several
    /// parts).
    pub backend: &'a CudaBackend,
    /// The part's keys, in the device's primary context; sorted in place.
    pub keys: &'a mut DeviceSlice<K>,
    /// A stream of the same context: the sort runs after the work enqueued on it before.
    pub stream: &'a Stream,
}

/// Sorts keys spread over the memory of several CUDA devices: afterwards each part holds
/// as many keys as before, each part is sorted, and every key of a part is at or below
/// (in `order`) every key of the parts after it. Equal keys keep the order of their parts,
/// then of their positions after each part's own sort. Any number of parts, of any lengths
/// (0 included); a backend may appear in several parts (the keys then move by device
/// copies).
///
/// Unlike the single-device calls this one waits: it returns once every part is sorted and
/// every stream is synchronized, since the cuts between parts are read by the host.
/// Each part receives its keys into a buffer as large as itself: the device's scratch of
/// device-resident sorts, which the part's own sort has just grown to that size and which stays
/// with the backend for its next sort, or, for a second part on the same device, a buffer of the
/// device's stream-ordered memory pool, freed before the call returns.
///
/// Errors: [`Error::ForeignBuffer`](crate::Error::ForeignBuffer) and
/// [`Error::Unsupported`](crate::Error::Unsupported) (16-bit keys) are found before
/// anything is enqueued. A driver failure returns [`Error::Driver`](crate::Error::Driver)
/// after the work already enqueued has finished; no key is lost: during the parts' own
/// sorts a part holds its keys untouched, sorted, or as a failed
/// [`CudaBackend::sort_device`] leaves them; from the cuts to the end of the exchange each
/// part holds its own keys, sorted; during the merges each part holds the keys it received
/// (its final keys), as sorted runs but not necessarily merged.
///
/// ```no_run
/// use bitonic::cuda::{CudaBackend, SpreadPart, sort_device_spread};
/// use cust::context::{Context, CurrentContext};
/// use cust::device::Device;
/// use cust::memory::{CopyDestination, DeviceBuffer};
/// use cust::stream::{Stream, StreamFlags};
///
/// let gpus = [CudaBackend::open(0)?, CudaBackend::open(1)?];
/// let mut owned = Vec::new();
/// for (index, keys) in [[5u32, 1, 4], [3, 2, 0]].into_iter().enumerate() {
///     // Each device's primary context, current while its buffer and stream are made.
///     let context = Context::new(Device::get_device(index as u32).unwrap()).unwrap();
///     let stream = Stream::new(StreamFlags::NON_BLOCKING, None).unwrap();
///     owned.push((context, DeviceBuffer::from_slice(&keys).unwrap(), stream));
/// }
/// let mut parts: Vec<SpreadPart<'_, u32>> = gpus
///     .iter()
///     .zip(owned.iter_mut())
///     .map(|(backend, (_, keys, stream))| SpreadPart { backend, keys, stream: &*stream })
///     .collect();
/// sort_device_spread(&mut parts, bitonic::Order::Ascending)?;
/// let mut low = [0u32; 3];
/// CurrentContext::set_current(&owned[0].0).unwrap();
/// owned[0].1.copy_to(&mut low[..]).unwrap();
/// assert_eq!(low, [0, 1, 2]);
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn sort_device_spread<K: WordKey + DeviceCopy>(
    parts: &mut [SpreadPart<'_, K>],
    order: Order,
) -> Result<()> {
    let key_bytes = std::mem::size_of::<K>();
    // The counting and merge kernels of a spread sort exist for 4- and 8-byte keys only.
    if key_bytes != 4 && key_bytes != 8 {
        return Err(Error::Unsupported(format!(
            "{key_bytes}-byte keys spread over GPUs: the spread sort takes 4- and 8-byte keys"
        )));
    }
    for part in parts.iter() {
        part.backend.check_stream(part.stream.as_inner())?;
        if !part.keys.is_empty() {
            part.backend
                .check_owner("keys", part.keys.as_device_ptr().as_raw())?;
        }
    }
    let sides: Vec<Side<'_>> = parts
        .iter()
        .map(|p| Side {
            backend: p.backend,
            stream: p.stream,
            keys: DeviceWords::of(&*p.keys),
            spare: None,
        })
        .collect();
    let encoding = KeyEncoding::of::<K>(order);
    let sorted = spread(&sides, encoding, false);
    // Whatever failed, the work already enqueued finishes before the caller may free the
    // buffers; the first error is the one to report.
    let synced = synchronize(&sides);
    sorted.and(synced)
}

/// One part as words.
pub(super) struct Side<'a> {
    pub(super) backend: &'a CudaBackend,
    pub(super) stream: &'a Stream,
    pub(super) keys: DeviceWords,
    /// A buffer of the device at least as long as `keys` that the sort may use until it
    /// returns (the exchange receives into it), or `None` to take one.
    pub(super) spare: Option<cu::CUdeviceptr>,
}

impl Side<'_> {
    fn len(&self) -> u64 {
        self.keys.len as u64
    }

    fn context(&self) -> cu::CUcontext {
        self.backend.context.as_raw()
    }

    fn make_current(&self) -> Result<()> {
        CurrentContext::set_current(&self.backend.context).map_err(on("cuCtxSetCurrent"))
    }
}

/// Waits for every side's stream; the first failure is returned.
pub(super) fn synchronize(sides: &[Side<'_>]) -> Result<()> {
    let mut result = Ok(());
    for side in sides {
        let synced = side.stream.synchronize().map_err(on("cuStreamSynchronize"));
        if result.is_ok() {
            result = synced;
        }
    }
    result
}

/// Steps 1 to 4 (see the module), step 1 only where the parts are not `sorted` already;
/// the caller synchronizes every stream afterwards.
pub(super) fn spread(sides: &[Side<'_>], encoding: KeyEncoding, sorted: bool) -> Result<()> {
    if sides.iter().filter(|s| s.len() > 0).count() == 0 {
        return Ok(());
    }
    if !sorted {
        for side in sides {
            side.backend.sort_device_words(
                side.keys,
                None,
                encoding,
                side.keys.len.max(1),
                side.stream.as_inner(),
            )?;
        }
    }
    if sides.len() == 1 {
        return Ok(());
    }
    synchronize(sides)?;
    step_done("parts sorted");
    let key_bytes = sides[0].keys.word_bytes;
    let max_word = if key_bytes == 4 {
        u64::from(u32::MAX)
    } else {
        u64::MAX
    };
    let lens: Vec<u64> = sides.iter().map(Side::len).collect();
    let mut counter = Counter::new(sides, encoding)?;
    let cuts = spread_cuts(&lens, max_word, |probes| counter.count(probes));
    counter.free();
    let cuts = cuts?;
    step_done("cut");
    let mut received = Vec::with_capacity(sides.len());
    if let Err(e) = exchange(sides, &cuts, &mut received) {
        let _ = synchronize(sides);
        let _ = free(sides, received);
        return Err(e);
    }
    // The unit tests' timing of the steps waits for each step's work (`step_done`).
    #[cfg(test)]
    let _ = synchronize(sides);
    step_done("exchanged");
    let mut merged = Ok(());
    for (g, (side, buffer)) in sides.iter().zip(&received).enumerate() {
        let Some(buffer) = buffer.as_ref().map(Received::ptr) else {
            continue;
        };
        if merged.is_err() {
            // After a failure elsewhere, each remaining side still takes its keys (its
            // received runs), so that no key is lost or held twice.
            let _ = side.make_current().and_then(|()| {
                copy_device_async(
                    (side.keys.ptr, side.context()),
                    (buffer, side.context()),
                    side.keys.len * side.keys.word_bytes,
                    side.stream.as_inner(),
                )
            });
            continue;
        }
        let runs: Vec<u64> = (0..sides.len())
            .map(|h| cuts[g + 1][h] - cuts[g][h])
            .collect();
        merged = merge_received(side, buffer, &runs, encoding);
    }
    let freed = free(sides, received);
    #[cfg(test)]
    let _ = synchronize(sides);
    step_done("merged");
    merged.and(freed)
}

/// A side's receive buffer: its spare buffer where it has one, else the keys buffer of its
/// device's sort scratch where that is free and large enough (the parts' own sorts are
/// over), else a buffer of the stream-ordered pool, freed after the merges. The scratch saves
/// the pool's mapping and release of as many bytes as the part on every call.
pub(super) enum Received {
    /// The side's spare buffer ([`Side::spare`]), which stays its owner's.
    Spare(cu::CUdeviceptr),
    /// Taken from the backend's sort scratch, returned to it after the merges.
    Scratch(DeviceBuffer<u8>),
    /// Allocated from the device's memory pool, freed after the merges.
    Pool(DeviceBuffer<u8>),
}

impl Received {
    fn ptr(&self) -> cu::CUdeviceptr {
        match self {
            Received::Spare(ptr) => *ptr,
            Received::Scratch(buffer) | Received::Pool(buffer) => buffer.as_device_ptr().as_raw(),
        }
    }
}

/// Frees or returns each side's receive buffer in the order of its stream, in its context
/// (a side without one, after an early error, has nothing to free).
fn free(sides: &[Side<'_>], received: Vec<Option<Received>>) -> Result<()> {
    let mut result = Ok(());
    for (side, buffer) in sides.iter().zip(received) {
        let Some(buffer) = buffer else { continue };
        let freed = side.make_current().and_then(|()| match buffer {
            Received::Spare(_) => Ok(()),
            Received::Scratch(buffer) => side
                .backend
                .return_scratch_keys(buffer, side.stream.as_inner()),
            Received::Pool(buffer) => buffer.drop_async(side.stream).map_err(on("cuMemFreeAsync")),
        });
        if result.is_ok() {
            result = freed;
        }
    }
    result
}

/// The counts of step 2 on every side: probe and count buffers of each device, reused by
/// every round.
struct Counter<'s, 'a> {
    sides: &'s [Side<'a>],
    encoding: KeyEncoding,
    probes: Vec<DeviceBuffer<u64>>,
    counts: Vec<DeviceBuffer<u64>>,
    capacity: usize,
}

impl<'s, 'a> Counter<'s, 'a> {
    fn new(sides: &'s [Side<'a>], encoding: KeyEncoding) -> Result<Counter<'s, 'a>> {
        let capacity = (sides.len() - 1) * PROBES as usize;
        let mut probes = Vec::with_capacity(sides.len());
        let mut counts = Vec::with_capacity(sides.len());
        for side in sides {
            side.make_current()?;
            // SAFETY: written completely (by a copy or the count kernel) before each read.
            probes
                .push(unsafe { DeviceBuffer::uninitialized(capacity) }.map_err(on("cuMemAlloc"))?);
            counts
                .push(unsafe { DeviceBuffer::uninitialized(capacity) }.map_err(on("cuMemAlloc"))?);
        }
        Ok(Counter {
            sides,
            encoding,
            probes,
            counts,
            capacity,
        })
    }

    /// Frees the buffers, each in its device's context.
    fn free(self) {
        for ((side, probes), counts) in self.sides.iter().zip(self.probes).zip(self.counts) {
            // Without the context current the buffers are left to the driver (a failed
            // free cannot be acted on here).
            if side.make_current().is_ok() {
                drop((probes, counts));
            } else {
                std::mem::forget((probes, counts));
            }
        }
    }

    /// `[probe][part]`: each part's count of keys at or below each probe.
    fn count(&mut self, probes: &[u64]) -> Result<Vec<Vec<u64>>> {
        let m = probes.len();
        // Every round sends full buffers: the tail repeats the largest word, counted but
        // never read.
        let mut padded = probes.to_vec();
        padded.resize(self.capacity.max(m), u64::MAX);
        let mut per_part = vec![vec![0u64; self.capacity]; self.sides.len()];
        for (h, side) in self.sides.iter().enumerate() {
            side.make_current()?;
            // SAFETY: `padded` outlives the stream synchronizations below, which every path
            // out of this function after the copy reaches first (the caller synchronizes
            // every stream on an error too).
            unsafe { self.probes[h].async_copy_from(&padded[..self.capacity], side.stream) }
                .map_err(on("cuMemcpyHtoDAsync"))?;
            let kernel = side.backend.spread_kernels.count[usize::from(side.keys.word_bytes == 8)];
            let mut keys = side.keys.ptr;
            let mut n = side.len();
            let mut probe_ptr = self.probes[h].as_device_ptr().as_raw();
            let mut count = m as u64;
            let mut encoding = self.encoding.code();
            let mut counts = self.counts[h].as_device_ptr().as_raw();
            let mut params = [
                &mut keys as *mut u64 as *mut c_void,
                &mut n as *mut u64 as *mut c_void,
                &mut probe_ptr as *mut u64 as *mut c_void,
                &mut count as *mut u64 as *mut c_void,
                &mut encoding as *mut u32 as *mut c_void,
                &mut counts as *mut u64 as *mut c_void,
            ];
            let grid = (m as u32).div_ceil(SEARCH_THREADS).max(1);
            // SAFETY: the parameters match `spread_count_K(const K *keys, u64 n, const u64
            // *probes, u64 m, u32 encoding, u64 *counts)`; `keys` holds `n` words, `probes`
            // and `counts` at least `m`, the only indices the kernel touches.
            unsafe {
                launch_kernel(
                    kernel,
                    (grid, SEARCH_THREADS, 0),
                    side.stream.as_inner(),
                    &mut params,
                )?;
            }
        }
        // The copy of the probes must not outlive `padded`: wait on every stream first.
        let synced = synchronize(self.sides);
        drop(padded);
        synced?;
        for (h, side) in self.sides.iter().enumerate() {
            side.stream
                .synchronize()
                .map_err(on("cuStreamSynchronize"))?;
            side.make_current()?;
            self.counts[h]
                .copy_to(&mut per_part[h][..])
                .map_err(on("cuMemcpyDtoH"))?;
        }
        Ok((0..m)
            .map(|i| per_part.iter().map(|part| part[i]).collect())
            .collect())
    }
}

/// The buffer `side` receives its `bytes` into ([`Received`]).
fn receive_buffer(side: &Side<'_>, bytes: usize) -> Result<Received> {
    if let Some(ptr) = side.spare {
        return Ok(Received::Spare(ptr));
    }
    // A device that holds several parts gives its scratch to the first only; a unit timing
    // may set BITONIC_TIMING_SPREAD_POOL=1 to compare with the pool.
    if timing_override::<u32>("BITONIC_TIMING_SPREAD_POOL") != Some(1)
        && let Some(buffer) = side
            .backend
            .take_scratch_keys(bytes, side.stream.as_inner())?
    {
        return Ok(Received::Scratch(buffer));
    }
    // SAFETY: written completely by the exchange's copies, in the order of the stream,
    // before the merges read it; freed in stream order (`free`).
    let buffer = unsafe { DeviceBuffer::<u8>::uninitialized_async(bytes, side.stream) }.map_err(
        |e| match e {
            cust::error::CudaError::OutOfMemory => side.backend.out_of_memory(bytes as u64),
            e => driver_error("cuMemAllocAsync", e),
        },
    )?;
    Ok(Received::Pool(buffer))
}

/// Step 3: pushes to `received` a buffer for each side with a part's keys (none for an
/// empty part), holding from each part `h` in order its keys `cuts[g][h] .. cuts[g +
/// 1][h]`. Every side's stream then waits for all copies out of its keys, so that its
/// merges may overwrite them.
fn exchange(
    sides: &[Side<'_>],
    cuts: &[Vec<u64>],
    received: &mut Vec<Option<Received>>,
) -> Result<()> {
    let p = sides.len();
    let key_bytes = sides[0].keys.word_bytes;
    let mut copied: Vec<Vec<Event>> = (0..p).map(|_| Vec::with_capacity(p)).collect();
    for (g, side) in sides.iter().enumerate() {
        side.make_current()?;
        if side.len() == 0 {
            received.push(None);
            continue;
        }
        let bytes = side.keys.len * key_bytes;
        let buffer = receive_buffer(side, bytes)?;
        let base = buffer.ptr();
        received.push(Some(buffer));
        let mut at = 0u64;
        for (h, from) in sides.iter().enumerate() {
            let (first, count) = (cuts[g][h], cuts[g + 1][h] - cuts[g][h]);
            if count == 0 {
                continue;
            }
            if from.context() != side.context() {
                enable_peer_access(
                    side.backend.device.as_raw(),
                    from.backend.device.as_raw(),
                    from.context(),
                )?;
            }
            copy_device_async(
                (base + at * key_bytes as u64, side.context()),
                (from.keys.ptr + first * key_bytes as u64, from.context()),
                count as usize * key_bytes,
                side.stream.as_inner(),
            )?;
            at += count;
            let done = Event::new(EventFlags::DISABLE_TIMING).map_err(on("cuEventCreate"))?;
            done.record(side.stream).map_err(on("cuEventRecord"))?;
            copied[h].push(done);
        }
    }
    for (side, events) in sides.iter().zip(copied) {
        for done in events {
            side.stream
                .wait_event(done, StreamWaitEventFlags::DEFAULT)
                .map_err(on("cuStreamWaitEvent"))?;
        }
    }
    Ok(())
}
