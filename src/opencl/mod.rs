//! The OpenCL executor, through `opencl3` (cargo feature `opencl`).
//!
//! The kernels live in `kernels/bitonic.cl` and the files it includes (`kernels/*.clh` and
//! the contract shared with the CUDA kernels, `kernels/contract.h`), embedded in the
//! library. One program is built per word variant (key word, optional value word) on first
//! use and cached for the life of the backend. A sort of host slices goes through the
//! transfer engine (`crate::host_transfer`): the words go up through mapped host buffers, the
//! launches that `plan` makes from the schedule (or, for one large array,
//! from the merge-path plan) follow in order on the same in-order
//! queue, and the result comes back through the same buffers. A merge-path sort of 32 MiB or
//! more sorts while it uploads instead: each chunk that has arrived is sorted on a second
//! queue (`chunked.rs`), and the downloads wait for the merges of whole chunks.
//!
//! The files: `driver.rs` (failed calls as errors, the devices), `kernels.rs` (the source,
//! built and cached per variant), `plan.rs` (launches from the schedule), `launch.rs` (kernel
//! arguments and enqueues), `link.rs` (mapped host buffers, copies and events for the
//! transfer engine), `chunked.rs` (sorting while uploading), `device_resident.rs` (sorts of
//! data already on the device).
//!
//! Each program's kernel objects are cached with it; their arguments are per-object
//! state, so a sort holds the program's kernel lock while it sets arguments and enqueues.
//! One [`OpenClBackend`] may be shared by many threads. Sorts of host slices reuse device
//! buffers kept from the largest sort so far; keys already in device memory are sorted in
//! place on the caller's queue by the calls in `device_resident.rs`
//! ([`OpenClBackend::sort_device`] and its siblings).

use std::collections::HashMap;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::error_codes::{
    CL_INVALID_BUFFER_SIZE, CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES, ClError,
};
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::types::cl_mem;

use crate::backend::{BackendKind, DeviceInfo, DeviceType};
use crate::buffer_cache::{DeviceBytes, Scratch, grow};
use crate::error::{Error, Result};
use crate::gpu::GpuBackend;
use crate::host_transfer::{CacheStats, Column, HostStateOf};
use crate::keys::KeyEncoding;
use crate::pinned::PinnedMemory;
use crate::rayon_lock::{RayonLockGuard, lock_shared_with_rayon};
#[cfg(test)]
use crate::schedule::TileParams;
use crate::shape::debug_assert_rows_words;

use plan::{LOG_E, MAX_LOG_TILE, Shape, SortPlan};

/// Serializes the creation and release of programs and kernels across the whole process;
/// these calls are rare (once per variant and per backend), so one lock costs nothing.
static LIFECYCLE: Mutex<()> = Mutex::new(());

/// Serializes whole sorts on OpenCL CPU devices across the process. PoCL 5 (the GPU
/// machine's) aborts in `pocl_release_dlhandle_cache` when several contexts on one CPU
/// device run kernels from several threads at once; a CPU device spreads every kernel over
/// all cores anyway, so running one sort at a time loses little.
static CPU_DEVICE_RUNS: Mutex<()> = Mutex::new(());

/// Takes a lock that guards no data (so a poisoned lock is as good as a clean one).
fn hold(lock: &'static Mutex<()>) -> RayonLockGuard<'static, ()> {
    // As a turn: a rayon thread holding none runs rayon's pending work while it waits (the
    // holder may need it), one holding another does not.
    lock_shared_with_rayon(lock)
}

fn lifecycle_lock() -> RayonLockGuard<'static, ()> {
    hold(&LIFECYCLE)
}

/// The device limits the launch sizes come from.
#[derive(Clone, Copy, Debug)]
struct DeviceLimits {
    local_mem: u64,
    max_group: usize,
    global_mem: u64,
    compute_units: u32,
    /// Where a sub-buffer may start, in bytes (`CL_DEVICE_MEM_BASE_ADDR_ALIGN`).
    base_align_bytes: u64,
}

/// Sorts on one OpenCL device: a context, an in-order queue and the programs built so far.
pub struct OpenClBackend {
    info: DeviceInfo,
    device: Device,
    context: Context,
    /// Host-slice sorts' copies, and their passes unless they sort while uploading.
    queue: CommandQueue,
    /// The passes of a host-slice sort that sorts while it uploads, beside the copies.
    sort_queue: CommandQueue,
    limits: DeviceLimits,
    variants: Mutex<HashMap<VariantKey, Arc<Variant>>>,
    /// Device buffers and pinned staging kept between sorts of host slices, which take turns
    /// at them.
    host: Mutex<HostState>,
    /// What the host-slice sorts keep, and how they copy back, readable without the lock.
    cache_stats: CacheStats,
    /// The largest tile allowed ([`MAX_LOG_TILE`]; smaller in tests, to exercise the global
    /// passes with short inputs).
    max_log_tile: u32,
    /// The largest window of the counting sort's count work-groups, as log2 of its
    /// counters (16; smaller in tests, to exercise several sweeps on devices whose local
    /// memory holds every counter).
    max_count_window_log: u32,
    /// One row of 16-bit keys alone takes the counting sort from this many keys on
    /// (`plan::COUNTING_FROM`; lower in tests, to reach its edges with short rows).
    counting_from: u64,
    /// One row of 32- or 64-bit keys takes the radix sort from this many keys on, by key
    /// width (`plan::POLICY.radix_from`; lower in tests, to reach its edges with short rows).
    radix_from: [u64; 2],
    /// Whether sorts may take the radix sort at all (false in tests of the network and of
    /// merge path: long pairs take the radix sort where `pairs_take_radix` says, whatever
    /// `radix_from` says).
    radix: bool,
    /// log2 of the registers per round ([`LOG_E`]; smaller in tests, to exercise more
    /// rounds and tiled global passes with short inputs).
    log_e: u32,
    /// Merge passes of at most this many tiles find their tiles' parts in the merge kernel
    /// (`plan::POLICY.own_split_max_tiles`; 0 in tests, to exercise the splitter kernel with
    /// short inputs).
    own_split_max_tiles: u64,
    /// Whether every sort runs the network ([`crate::backend::Backend::set_oblivious`]).
    oblivious: AtomicBool,
    /// The merge scratch of device-resident sorts.
    device_scratch: Mutex<DeviceScratch>,
    /// The top-k program, built on first use (`top_k.rs`).
    /// One slot per key width of `top_k::KEY_TYPES`.
    top_k: Mutex<[Option<Arc<top_k::TopKProgram>>; 3]>,
    /// Local bytes the top-k's selects (the short rows' and the filter's candidates') may
    /// take at most: none beyond the device's (`None`), or less in tests, to reach the tiles
    /// and the sort of the filter's candidates and the ways of devices of less local memory.
    top_k_select_bytes: Option<u32>,
}

impl std::fmt::Debug for OpenClBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenClBackend")
            .field("device", &self.info)
            .finish_non_exhaustive()
    }
}

impl Drop for OpenClBackend {
    fn drop(&mut self) {
        // Release programs and kernels under the process-wide lock (see `LIFECYCLE`).
        let _lifecycle = lifecycle_lock();
        self.variants
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
        *self
            .top_k
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = [None, None, None];
    }
}

/// The memory objects a sort's kernels work on (the backend's buffers or the caller's) and
/// their word widths.
#[derive(Clone, Copy)]
struct Operands {
    keys: cl_mem,
    values: Option<cl_mem>,
    key_bytes: u64,
    value_bytes: u64,
}

/// A merge-path sort's device scratch: keys (and values) as large as the data's, and the
/// splitters.
type MergeScratch = (Operands, cl_mem);

/// The merge scratch of device-resident sorts, which run on their callers' queues: `done` is
/// the last launch of the last sort that used it, which the next sort waits for.
#[derive(Default)]
struct DeviceScratch {
    buffers: Scratch<Buffer<u8>>,
    done: Option<opencl3::event::Event>,
}

/// What sorts of host slices keep between calls (`crate::host_transfer`).
type HostState = HostStateOf<ClLink<'static>, Buffer<u8>>;

impl DeviceBytes for Buffer<u8> {
    fn byte_len(&self) -> usize {
        self.size().unwrap_or(0)
    }
}

impl OpenClBackend {
    /// Opens the device at `index` of [`devices`]: creates its context and an in-order
    /// command queue. Programs are built on first use.
    pub fn open(index: usize) -> Result<OpenClBackend> {
        let ids = device_ids()?;
        let Some(&id) = ids.get(index) else {
            let found = ids
                .iter()
                .enumerate()
                .map(|(i, &id)| describe(i, &Device::new(id)).map(|d| d.to_string()))
                .collect::<Result<Vec<_>>>()?;
            return Err(Error::NoDevice {
                requested: format!("backend opencl, device #{index}"),
                found: if found.is_empty() {
                    "opencl: no devices".to_string()
                } else {
                    found.join("; ")
                },
            });
        };
        let device = Device::new(id);
        let info = describe(index, &device)?;
        let max_group = device
            .max_work_group_size()
            .map_err(driver("clGetDeviceInfo"))?;
        let max_item = device
            .max_work_item_sizes()
            .map_err(driver("clGetDeviceInfo"))?
            .first()
            .copied()
            .unwrap_or(max_group);
        let limits = DeviceLimits {
            local_mem: device.local_mem_size().map_err(driver("clGetDeviceInfo"))?,
            max_group: max_group.min(max_item).max(1),
            global_mem: info.memory_bytes,
            compute_units: info.compute_units,
            base_align_bytes: u64::from(
                device
                    .mem_base_addr_align()
                    .map_err(driver("clGetDeviceInfo"))?,
            ) / 8,
        };
        let context = Context::from_device(&device).map_err(driver("clCreateContext"))?;
        let queue =
            CommandQueue::create_default(&context, 0).map_err(driver("clCreateCommandQueue"))?;
        let sort_queue =
            CommandQueue::create_default(&context, 0).map_err(driver("clCreateCommandQueue"))?;
        Ok(OpenClBackend {
            info,
            device,
            context,
            queue,
            sort_queue,
            limits,
            variants: Mutex::new(HashMap::new()),
            host: Mutex::new(HostState::default()),
            cache_stats: CacheStats::default(),
            max_log_tile: MAX_LOG_TILE,
            max_count_window_log: crate::kernel_contract::COUNT_KEY_BITS,
            counting_from: plan::COUNTING_FROM,
            radix_from: plan::POLICY.radix_from,
            radix: true,
            log_e: LOG_E,
            own_split_max_tiles: plan::POLICY.own_split_max_tiles,
            oblivious: AtomicBool::new(false),
            device_scratch: Mutex::new(DeviceScratch::default()),
            top_k: Mutex::new([None, None, None]),
            top_k_select_bytes: None,
        })
    }

    /// The largest tile's parameters for this key/value layout (building its program if
    /// needed); a sort may use a smaller tile so that every compute unit gets work.
    #[cfg(test)]
    pub(crate) fn tile_params(
        &self,
        key_bytes: usize,
        value_bytes: Option<usize>,
    ) -> Result<TileParams> {
        let variant = self.variant_of_widths(key_bytes, value_bytes)?;
        Ok(plan::tile_params(plan::max_log_tile(
            &variant.limits,
            variant.element_bytes,
        )))
    }

    /// Maps a failure that may mean "the device ran out of memory" to [`Error::OutOfMemory`].
    fn memory_error(&self, call: &'static str, requested: u64) -> impl FnOnce(ClError) -> Error {
        let device = self.info.name.clone();
        let available = self.limits.global_mem;
        move |e| {
            if matches!(
                e.0,
                CL_MEM_OBJECT_ALLOCATION_FAILURE | CL_OUT_OF_RESOURCES | CL_INVALID_BUFFER_SIZE
            ) {
                Error::OutOfMemory {
                    device,
                    requested,
                    available,
                }
            } else {
                driver(call)(e)
            }
        }
    }

    /// Fails early when the device cannot hold `requested` bytes at all.
    fn check_memory(&self, requested: u64) -> Result<()> {
        if requested > self.limits.global_mem {
            return Err(Error::OutOfMemory {
                device: self.info.name.clone(),
                requested,
                available: self.limits.global_mem,
            });
        }
        Ok(())
    }

    /// An uninitialized device buffer of `bytes` bytes.
    fn alloc(&self, bytes: usize, requested: u64) -> Result<Buffer<u8>> {
        crate::fault::point(BackendKind::OpenCl, "clCreateBuffer")?;
        // SAFETY: no host pointer is passed (null with flags that do not use one); the size
        // is at least one word here.
        unsafe { Buffer::<u8>::create(&self.context, CL_MEM_READ_WRITE, bytes, ptr::null_mut()) }
            .map_err(self.memory_error("clCreateBuffer", requested))
    }

    /// The plan of a sort of `shape` with the program `variant` ([`plan::choose`]).
    fn plan(&self, variant: &Variant, shape: Shape, key_bytes: u64, value_bytes: u64) -> SortPlan {
        let oblivious = self.oblivious.load(Ordering::Relaxed);
        plan::choose(&variant.limits, shape, key_bytes, value_bytes, oblivious)
    }

    /// [`OpenClBackend::plan`] of a sort of host slices ([`plan::choose_for_upload`]).
    fn plan_for_upload(
        &self,
        variant: &Variant,
        shape: Shape,
        key_bytes: u64,
        value_bytes: u64,
    ) -> SortPlan {
        let oblivious = self.oblivious.load(Ordering::Relaxed);
        plan::choose_for_upload(&variant.limits, shape, key_bytes, value_bytes, oblivious)
    }

    /// The plan of a sort and the buffers it needs, grown in `scratch`: scratch keys and
    /// values as wide as the data's, and the splitters (or a radix sort's state); the
    /// network's plan where a merge-path or radix plan's scratch does not fit in device
    /// memory.
    fn plan_with_scratch(
        &self,
        variant: &Variant,
        scratch: &mut Scratch<Buffer<u8>>,
        (plan, shape): (SortPlan, Shape),
        (key_bytes, value_bytes): (u64, u64),
        requested: u64,
    ) -> Result<(SortPlan, Option<MergeScratch>)> {
        let network = || {
            let network = plan::plan(&variant.limits, shape, (key_bytes, value_bytes));
            Ok((SortPlan::Network(network), None))
        };
        // Merge path's splitters or the radix sort's state take the splitters' buffer.
        let split_bytes = match &plan {
            SortPlan::Network(_) => return Ok((plan, None)),
            SortPlan::MergePath(merge) => merge.splits * 8,
            SortPlan::Radix(radix) => radix.plan.state_bytes(),
            SortPlan::Counting(counting) => {
                // The counts and starts take the splitters' buffer; the scratch's key
                // operands are not used.
                let bytes = counting.plan.scratch_bytes();
                if requested.saturating_add(bytes) > self.limits.global_mem {
                    return network();
                }
                return match grow(&mut scratch.splits, bytes as usize, |len| {
                    self.alloc(len, requested)
                }) {
                    Ok(splits) => {
                        let unused = Operands {
                            keys: std::ptr::null_mut(),
                            values: None,
                            key_bytes: 0,
                            value_bytes: 0,
                        };
                        Ok((plan, Some((unused, splits.get()))))
                    }
                    Err(Error::OutOfMemory { .. }) => network(),
                    Err(e) => Err(e),
                };
            }
        };
        // Drivers may put off an allocation until a command first uses the buffer, so a
        // scratch that cannot fit beside the data is not asked for: on NVIDIA's OpenCL such
        // a sort of pairs filling the device dies instead of failing.
        let n = shape.row_len * shape.rows;
        let sizes = [n * key_bytes, n * value_bytes, split_bytes];
        let fits = sizes
            .iter()
            .fold(requested, |sum, &b| sum.saturating_add(b))
            <= self.limits.global_mem;
        let [key_len, value_len, split_len] = sizes.map(|b| b as usize);
        let grown = fits
            && scratch.grow(key_len, value_len, split_len, |len| {
                self.alloc(len, requested)
            })?;
        let values = match (value_bytes, &scratch.values) {
            (0, _) => Some(None),
            (_, Some(values)) => Some(Some(values.get())),
            (_, None) => None,
        };
        match (&scratch.keys, values, &scratch.splits) {
            (Some(keys), Some(values), Some(splits)) if grown => {
                let words = Operands {
                    keys: keys.get(),
                    values,
                    key_bytes,
                    value_bytes,
                };
                Ok((plan, Some((words, splits.get()))))
            }
            _ => network(),
        }
    }
}

impl GpuBackend for OpenClBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn oblivious(&self) -> &AtomicBool {
        &self.oblivious
    }

    fn cache_stats(&self) -> &CacheStats {
        &self.cache_stats
    }

    fn device_scratch_bytes(&self) -> u64 {
        self.device_scratch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .buffers
            .bytes()
    }

    fn alloc_caller_pinned(&self, bytes: usize) -> Result<Box<dyn PinnedMemory>> {
        let link = ClLink {
            backend: self,
            queue: &self.queue,
            requested: bytes as u64,
            targets: None,
        };
        Ok(Box::new(CallerPinned::new(&link, bytes)?))
    }

    fn release_kept(&self) {
        let mut host = lock_shared_with_rayon(&self.host);
        *host = HostState::default();
        self.cache_stats.keep(&host);
        // OpenCL keeps a released buffer alive until the commands that use it are done.
        *self
            .device_scratch
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = DeviceScratch::default();
    }
}

mod chunked;
mod device_argsort;
mod device_resident;
mod driver;
mod host_slices;
mod kernels;
mod launch;
mod link;
mod plan;
mod radix;
mod top_k;

use chunked::ChunkedSort;
pub use driver::devices;
use driver::{describe, device_ids, driver};
use kernels::{Variant, VariantKey};
use link::{CallerPinned, ClLink};

#[cfg(test)]
mod tests;
