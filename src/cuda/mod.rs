//! The CUDA executor, through the driver API of `cust` (cargo feature `cuda`).
//!
//! The kernels live in `cuda/bitonic.cu` and the headers it includes (`cuda/*.cuh` and the
//! contract shared with the OpenCL kernels, `kernels/contract.h`); the build script compiles
//! them to PTX with nvcc (`-arch=compute_75` unless `BITONIC_CUDA_ARCH` says otherwise) and
//! this module embeds that PTX, which the driver JIT-compiles for the GPU at hand when a backend is opened.
//!
//! [`CudaBackend::open`] retains the device's primary context, loads the module, opts every
//! kernel in to the device's largest shared memory, and creates one stream; every sort makes
//! that context current on the calling thread, so any thread may sort. A sort of host slices
//! goes through the transfer engine (`crate::host_transfer`): the words go up through the
//! pinned ring, the passes that `plan::plan` derives from the schedule follow on the same
//! stream, and the result comes back through the ring. A merge-path sort of 32 MiB or more
//! sorts while it uploads instead: each chunk that has arrived is sorted on a second stream
//! (`host_slices::ChunkedSort`), ordered after its copies by an event, and the downloads
//! wait for the merges of whole chunks. The device buffers and the ring are kept for the next
//! sort ([`Backend::release_cached`] frees them).
//!
//! The files: `driver.rs` (driver errors, initialization, device properties), `kernels.rs`
//! (the embedded PTX and its kernels), `plan/` (launches from the schedule),
//! `host_slices.rs` (sorts of host slices through the transfer engine), `launch.rs`
//! (the kernel calls of those launches), `link.rs` (pinned memory, copies and events for the
//! transfer engine), `device_resident.rs` (sorts of data already on the device),
//! `host_ranges.rs` (host slices sorted in the GPUs' own memory without the host partition:
//! the spread sort of `spread_host.rs` and the ranges of `device_ranges.rs`); tests in
//! `tests/`, and the transfer engine's timings on a CUDA device (ignored without one) in
//! `tests/transfer_timings.rs`.
//!
//! Keys already in device memory are sorted in place on the caller's stream by the calls in
//! `device_resident.rs` ([`CudaBackend::sort_device`] and its siblings), on memory and streams
//! of other libraries by those of `device_raw.rs` (raw driver handles) and
//! `cudarc_buffers.rs` (cudarc's types, feature `cudarc`); keys spread over several devices by
//! [`sort_device_spread`] (`spread.rs`).

use std::ffi::CString;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use cust::context::{Context, CurrentContext};
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::memory::DeviceBuffer;
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use cust::sys as cu;

use crate::backend::{Backend, BackendKind, DeviceInfo};
use crate::buffer_cache::{DeviceBytes, Scratch, grow};
use crate::error::{Error, Result};
use crate::gpu::GpuBackend;
use crate::host_transfer::{CacheStats, HostStateOf, timing_override};
use crate::keys::{KeyEncoding, WordsMut};
use crate::pinned::PinnedMemory;
use crate::rayon_lock::lock_shared_with_rayon;

mod counting;
#[cfg(feature = "cudarc")]
mod cudarc_buffers;
mod device_argsort;
mod device_bits;
mod device_ranges;
mod device_raw;
mod device_resident;
mod driver;
mod host_ranges;
mod host_slices;
mod kernels;
mod launch;
mod link;
mod plan;
mod radix;
mod spread;
mod spread_host;
mod stream_buffers;
mod top_k;

pub use device_raw::{STREAM_LEGACY, STREAM_PER_THREAD};
pub use driver::devices;
use driver::{check, driver_error, init, on, probe};
use kernels::{
    Kernel, Kernels, PTX, PTX_SM80, PTX_SM90, VALUE_NAMES, load_cluster_kernels, load_kernel,
    load_kernels, load_split_kernels,
};
use link::{CallerPinned, CudaLink};
use plan::{DeviceLimits, SortPlan, Widths};
pub use spread::{SpreadPart, sort_device_spread};

/// One sort's device words and its launches.
struct Job {
    keys: cu::CUdeviceptr,
    /// 0 without values.
    values: cu::CUdeviceptr,
    kernels: Kernels,
    widths: Widths,
    plan: SortPlan,
    /// The merge passes' or the counting sort's buffers; `Some` exactly when `plan` is a
    /// merge-path or counting plan.
    scratch: Option<ScratchWords>,
}

impl Job {
    /// The scratch buffers, which a merge-path or counting job must have.
    fn merge_scratch(&self) -> Result<ScratchWords> {
        self.scratch.ok_or_else(|| {
            Error::Unsupported("a merge-path or counting sort without its scratch buffers".into())
        })
    }
}

/// The device addresses of the merge passes' scratch (`crate::buffer_cache::Scratch`).
#[derive(Clone, Copy)]
struct ScratchWords {
    keys: cu::CUdeviceptr,
    /// 0 without values.
    values: cu::CUdeviceptr,
    splits: cu::CUdeviceptr,
}

/// The scratch of device-resident sorts, which run on their callers' streams: `done` is
/// recorded after the last sort that used it, on the stream it names, and the next sort
/// waits for it when it runs on another stream.
struct DeviceScratch {
    buffers: Scratch<DeviceBuffer<u8>>,
    done: Option<(driver::StreamEvent, cu::CUstream)>,
}

// SAFETY: the stream handle is only compared, never used to enqueue work; the event is a
// driver handle, usable from any thread.
unsafe impl Send for DeviceScratch {}

/// What sorts of host slices keep between calls (`crate::host_transfer`).
type HostState = HostStateOf<CudaLink<'static>, DeviceBuffer<u8>>;

impl DeviceBytes for DeviceBuffer<u8> {
    fn byte_len(&self) -> usize {
        self.len()
    }
}

/// A buffer a sort's scratch can live in: the backend's own, or one of a stream's.
trait ScratchBuffer: DeviceBytes {
    /// Its device address.
    fn address(&self) -> cu::CUdeviceptr;
}

impl ScratchBuffer for DeviceBuffer<u8> {
    fn address(&self) -> cu::CUdeviceptr {
        self.as_device_ptr().as_raw()
    }
}

/// Sorts on one CUDA device. Open it once and reuse it: the context, the module and its
/// kernels are created in [`CudaBackend::open`] and kept, and so are the device buffers of
/// the largest sort so far.
pub struct CudaBackend {
    info: DeviceInfo,
    device: Device,
    limits: DeviceLimits,
    kernels: Vec<Kernel>,
    /// `cluster_pass_u32_<value>` in [`CLUSTER_VALUE_NAMES`] order; empty below compute
    /// capability 9.0.
    cluster_kernels: Vec<Kernel>,
    /// `merge_pass_<key>_<value>`, for rows `merge_rows_pass_<key>_<value>`, and for passes
    /// that search in the merge kernel `merge_search_pass_<key>_<value>`, indexed as
    /// `kernels`.
    merge_kernels: [Vec<Kernel>; 3],
    /// `merge_split_<key>` and, for rows, `merge_rows_split_<key>`.
    split_kernels: [Vec<Kernel>; 2],
    /// `warp_sort_u32` and `warps_sort_u32`.
    warp_kernels: [Kernel; 2],
    /// Whether every sort runs the network ([`crate::backend::Backend::set_oblivious`]).
    oblivious: AtomicBool,
    /// The merge scratch of device-resident sorts.
    device_scratch: Mutex<DeviceScratch>,
    /// The top-k kernels (`top_k.rs`).
    top_k_kernels: top_k::TopKKernels,
    /// The counts and merges of sorts spread over devices (`spread.rs`).
    spread_kernels: spread::SpreadKernels,
    /// The range scatter of host slices sorted in ranges in device memory
    /// (`device_ranges.rs`), for 32- and 64-bit words.
    range_kernels: [kernels::Kernel; 2],
    /// The counting sort of 16-bit keys alone (`counting.rs`).
    counting_kernels: counting::CountingKernels,
    /// The radix sort of 32- and 64-bit keys (`radix.rs`).
    radix_kernels: radix::RadixKernels,
    /// Serializes sorts of host slices: they share the stream, the device buffers and the
    /// pinned staging.
    busy: Mutex<HostState>,
    /// What the host-slice sorts keep, and how they copy back, readable without the lock.
    cache_stats: CacheStats,
    // Dropped in this order, after `Drop::drop` made the context current: the streams and the
    // module before the context that owns them.
    /// Host-slice sorts' copies, and their passes unless they sort while uploading.
    stream: Stream,
    /// The passes of a host-slice sort that sorts while it uploads, beside the copies.
    sort_stream: Stream,
    /// Never read, but it must stay loaded while `kernels` hold its handles.
    _module: Module,
    context: Context,
}

impl fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.info)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        // The stream and the module are destroyed in their context, which need not be current
        // on the dropping thread. Nothing useful can be done about a failure here.
        let _ = CurrentContext::set_current(&self.context);
    }
}

impl CudaBackend {
    /// Opens device `index` of [`devices`]: retains its primary context, JIT-loads the
    /// embedded PTX and looks up every kernel.
    pub fn open(index: usize) -> Result<CudaBackend> {
        let count = init()?;
        let ordinal = u32::try_from(index)
            .ok()
            .filter(|&i| i < count)
            .ok_or_else(|| Error::NoDevice {
                requested: format!("CUDA device #{index}"),
                found: format!("{count} CUDA device(s)"),
            })?;
        let (device, info, limits) = probe(ordinal)?;
        let context = Context::new(device).map_err(on("cuDevicePrimaryCtxRetain"))?;
        CurrentContext::set_current(&context).map_err(on("cuCtxSetCurrent"))?;
        let major = device
            .get_attribute(DeviceAttribute::ComputeCapabilityMajor)
            .map_err(on("cuDeviceGetAttribute"))?;
        let ptx = match major {
            9.. => PTX_SM90,
            8 => PTX_SM80,
            _ => PTX,
        };
        let image = CString::new(ptx).map_err(|_| Error::Driver {
            backend: BackendKind::Cuda,
            call: "cuModuleLoadDataEx".to_string(),
            code: i64::from(CudaError::InvalidPtx as u32),
            message: "the embedded PTX contains a NUL byte".to_string(),
        })?;
        let module = Module::from_ptx_cstr(&image, &[]).map_err(on("cuModuleLoadDataEx"))?;
        let kernels = load_kernels(&module, "tile_pass", limits.shared_bytes_per_block)?;
        let merge_kernels = [
            load_kernels(&module, "merge_pass", limits.shared_bytes_per_block)?,
            load_kernels(&module, "merge_rows_pass", limits.shared_bytes_per_block)?,
            load_kernels(&module, "merge_search_pass", limits.shared_bytes_per_block)?,
        ];
        let split_kernels = [
            load_split_kernels(&module, "merge_split")?,
            load_split_kernels(&module, "merge_rows_split")?,
        ];
        let warp_kernels = [
            load_kernel(&module, "warp_sort_u32", 0)?,
            load_kernel(&module, "warps_sort_u32", 4 << plan::MAX_LOG_WARP_SORT)?,
        ];
        let cluster_kernels = if major >= 9 {
            load_cluster_kernels(&module, limits.shared_bytes_per_block)?
        } else {
            Vec::new()
        };
        let top_k_kernels = top_k::load_top_k_kernels(&module, limits.shared_bytes_per_block)?;
        let spread_kernels = spread::load_spread_kernels(&module)?;
        let range_kernels = device_ranges::load_range_kernels(&module)?;
        let counting_kernels =
            counting::load_counting_kernels(&module, limits.shared_bytes_per_block)?;
        let radix_kernels = radix::load_radix_kernels(&module, limits.shared_bytes_per_block)?;
        let mut limits = limits;
        limits.clusters = !cluster_kernels.is_empty();
        let stream = Stream::new(StreamFlags::NON_BLOCKING, None).map_err(on("cuStreamCreate"))?;
        let sort_stream =
            Stream::new(StreamFlags::NON_BLOCKING, None).map_err(on("cuStreamCreate"))?;
        Ok(CudaBackend {
            info,
            device,
            limits,
            kernels,
            cluster_kernels,
            warp_kernels,
            merge_kernels,
            split_kernels,
            oblivious: AtomicBool::new(false),
            device_scratch: Mutex::new(DeviceScratch {
                buffers: Scratch::default(),
                done: None,
            }),
            top_k_kernels,
            spread_kernels,
            range_kernels,
            counting_kernels,
            radix_kernels,
            busy: Mutex::new(HostState::default()),
            cache_stats: CacheStats::default(),
            stream,
            sort_stream,
            _module: module,
            context,
        })
    }

    /// The launches of a sort of `rows` rows of `row_len` elements of these widths: the
    /// network's, or a tile sort and merge passes ([`plan::choose`]).
    pub(crate) fn plan(&self, row_len: u64, rows: u64, widths: Widths, encoding: u32) -> SortPlan {
        let oblivious = self.oblivious.load(Ordering::Relaxed);
        plan::choose(&self.limits, row_len, rows, widths, encoding, oblivious)
    }

    /// The plan of a sort of host slices, which upload before they sort
    /// ([`plan::choose_for_upload`]).
    pub(crate) fn upload_plan(
        &self,
        row_len: u64,
        rows: u64,
        widths: Widths,
        encoding: u32,
    ) -> SortPlan {
        let oblivious = self.oblivious.load(Ordering::Relaxed);
        plan::choose_for_upload(&self.limits, row_len, rows, widths, encoding, oblivious)
    }

    /// `plan`, a sort of `rows` rows of `row_len`, with the scratch it needs, grown in
    /// `scratch`; the network's plan where a merge-path or counting plan's scratch does not
    /// fit in device memory.
    fn plan_with_scratch(
        &self,
        scratch: &mut Scratch<DeviceBuffer<u8>>,
        plan: SortPlan,
        row_len: u64,
        rows: u64,
        widths: Widths,
        encoding: u32,
    ) -> Result<(SortPlan, Option<ScratchWords>)> {
        let requested = (row_len * rows).saturating_mul(widths.element());
        let alloc = |len| self.alloc(len, requested);
        self.plan_with_scratch_from(scratch, alloc, plan, (row_len, rows), widths, encoding)
    }

    /// [`CudaBackend::plan_with_scratch`] with the scratch's buffers from `alloc`.
    fn plan_with_scratch_from<B: ScratchBuffer>(
        &self,
        scratch: &mut Scratch<B>,
        mut alloc: impl FnMut(usize) -> Result<B>,
        plan: SortPlan,
        (row_len, rows): (u64, u64),
        widths: Widths,
        encoding: u32,
    ) -> Result<(SortPlan, Option<ScratchWords>)> {
        let n = (row_len * rows) as usize;
        let network = || {
            let network = plan::plan(&self.limits, row_len, rows, widths, encoding, None);
            Ok((SortPlan::Network(network), None))
        };
        let splits_bytes = match &plan {
            SortPlan::Network(_) => return Ok((plan, None)),
            SortPlan::MergePath(merge) => merge.splits * 8,
            // The state takes the splitters' buffer.
            SortPlan::Radix(radix) => radix.plan.state_bytes(),
            SortPlan::Counting(counting) => {
                // The counts and starts take the splitters' buffer.
                let bytes = counting.plan.scratch_bytes() as usize;
                return match grow(&mut scratch.splits, bytes, alloc) {
                    Ok(buffer) => {
                        let splits = buffer.address();
                        let words = ScratchWords {
                            keys: 0,
                            values: 0,
                            splits,
                        };
                        Ok((plan, Some(words)))
                    }
                    Err(Error::OutOfMemory { .. }) => network(),
                    Err(e) => Err(e),
                };
            }
        };
        let grown = scratch.grow(
            n * widths.key as usize,
            n * widths.value as usize,
            splits_bytes as usize,
            &mut alloc,
        )?;
        if !grown {
            return network();
        }
        let address = |b: &Option<B>| b.as_ref().map_or(0, B::address);
        let words = ScratchWords {
            keys: address(&scratch.keys),
            values: if widths.value > 0 {
                address(&scratch.values)
            } else {
                0
            },
            splits: address(&scratch.splits),
        };
        Ok((plan, Some(words)))
    }

    fn out_of_memory(&self, requested: u64) -> Error {
        Error::OutOfMemory {
            device: self.info.name.clone(),
            requested,
            available: self.info.memory_bytes,
        }
    }

    /// A new device buffer of `len` bytes, not initialized.
    fn alloc(&self, len: usize, requested: u64) -> Result<DeviceBuffer<u8>> {
        crate::fault::point(BackendKind::Cuda, "cuMemAlloc")?;
        // SAFETY: every caller writes the buffer completely (an upload or a device copy)
        // before anything reads it.
        unsafe { DeviceBuffer::<u8>::uninitialized(len.max(1)) }.map_err(|e| match e {
            CudaError::OutOfMemory => self.out_of_memory(requested),
            e => driver_error("cuMemAlloc", e),
        })
    }

    /// The kernels for these word widths: the tile kernel, and the cluster kernel where the
    /// device and the variant have one.
    fn kernels(&self, key_bytes: usize, value_bytes: usize) -> Kernels {
        // The order of `KEY_NAMES`.
        let key_index = match key_bytes {
            8 => 1,
            2 => 2,
            _ => 0,
        };
        let value_index = match value_bytes {
            0 => 0,
            4 => 1,
            _ => 2,
        };
        let cluster = if key_bytes == 4 {
            self.cluster_kernels.get(value_index).copied()
        } else {
            None
        };
        let index = key_index * VALUE_NAMES.len() + value_index;
        Kernels {
            tile: self.kernels[index],
            cluster,
            warp: (key_bytes == 4 && value_bytes == 0).then_some(self.warp_kernels),
            merge: self.merge_kernels.each_ref().map(|k| k[index]),
            split: self.split_kernels.each_ref().map(|k| k[key_index]),
        }
    }
}

impl GpuBackend for CudaBackend {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn sort_host_in_device_memory(
        &self,
        devices: &[&dyn Backend],
        memory: &[u64],
        keys: WordsMut<'_>,
        encoding: KeyEncoding,
    ) -> Result<bool> {
        host_ranges::sort_host_in_device_memory(devices, memory, keys, encoding)
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
        Ok(Box::new(CallerPinned::new(self.device, bytes)?))
    }

    fn release_kept(&self) {
        let mut host = lock_shared_with_rayon(&self.busy);
        // The buffers are freed in their context; without it current they are kept.
        if CurrentContext::set_current(&self.context).is_ok() {
            *host = HostState::default();
            self.cache_stats.keep(&host);
            let mut scratch = self
                .device_scratch
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            // Freeing waits for the sorts that use the memory (cuMemFree synchronizes).
            scratch.buffers = Scratch::default();
        }
    }
}

/// Notes on the calling thread that a step of a sort of several steps has ended, for the
/// timings of steps in `tests/step_timings.rs`; nothing outside the crate's unit tests.
fn step_done(step: &'static str) {
    #[cfg(test)]
    tests::step_timings::STEPS
        .with(|steps| steps.borrow_mut().push((step, std::time::Instant::now())));
    #[cfg(not(test))]
    let _ = step;
}

#[cfg(test)]
mod tests;
