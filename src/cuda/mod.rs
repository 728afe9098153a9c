//! The CUDA executor, through the driver API of `cust` (cargo feature `cuda`).
//!
//! The kernels live in `cuda/bitonic.cu`; the build script compiles them to PTX with nvcc
//! (`-arch=compute_75` unless `BITONIC_CUDA_ARCH` says otherwise) and this module embeds
//! that PTX, which the driver JIT-compiles for the GPU at hand when a backend is opened.
//!
//! [`CudaBackend::open`] retains the device's primary context, loads the module, opts every
//! kernel in to the device's largest shared memory, and creates one stream; every sort makes
//! that context current on the calling thread, so any thread may sort. A sort uploads the
//! words, launches the passes that [`plan::plan`] derives from the schedule, synchronizes,
//! downloads into host staging buffers, and only when every step succeeded copies into the
//! caller's slices (so a failure leaves them untouched). The device buffers are kept for the
//! next sort and grow to the largest sort so far ([`CudaBackend::release_cached`] frees them).
//!
//! Keys already in device memory are sorted in place on the caller's stream by the calls in
//! `device_slices.rs` ([`CudaBackend::sort_device`] and its siblings).

use std::ffi::{CStr, CString, c_void};
use std::fmt::{self, Write as _};
use std::ptr;
use std::sync::Mutex;

use cust::context::{Context, CurrentContext};
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::event::{Event, EventFlags};
use cust::memory::DeviceBuffer;
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use cust::sys as cu;

use crate::backend::{Backend, BackendKind, DeviceInfo, DeviceType};
use crate::error::{Error, Result, check_rows_words};
use crate::host_transfer::{self, Column, Gauges, RingOf};
use crate::kept::{DeviceBytes, Kept, grow};
use crate::keys::{KeyEncoding, NarrowKeys, WordsMut};

mod device_slices;
mod held_stream;
mod link;
pub mod plan;

use link::CudaLink;
pub use plan::{DeviceLimits, Launch, PassArgs, Widths};

/// The PTX of `cuda/bitonic.cu`, compiled by the build script for compute capability 7.5.
const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/bitonic.ptx"));

/// The same kernels for compute capability 8.0 and newer, which copy tiles into shared
/// memory asynchronously.
const PTX_SM80: &str = include_str!(concat!(env!("OUT_DIR"), "/bitonic_sm80.ptx"));

/// The same kernels for compute capability 9.0 and newer, with the thread-block cluster
/// kernels (`cluster_pass_*`) beside them.
const PTX_SM90: &str = include_str!(concat!(env!("OUT_DIR"), "/bitonic_sm90.ptx"));

/// Shared memory per block that every CUDA device offers without opting in.
const DEFAULT_SHARED_BYTES: u32 = 48 * 1024;

/// Key widths and value kinds in the order of the kernel table; the suffixes of the kernels'
/// names in `cuda/bitonic.cu`.
const KEY_NAMES: [&str; 2] = ["u32", "u64"];
const VALUE_NAMES: [&str; 3] = ["none", "u32", "u64"];
/// The value kinds of the cluster kernels, whose keys are `u32` (`plan::cluster_schedule`).
const CLUSTER_VALUE_NAMES: [&str; 2] = ["none", "u32"];

/// Caps the tile (log2 of its elements) for experiments: `BITONIC_CUDA_LOG_TILE=13`.
const LOG_TILE_ENV: &str = "BITONIC_CUDA_LOG_TILE";
/// Sets the largest sort on thread-block clusters, as log2 of its elements, for experiments:
/// `BITONIC_CUDA_CLUSTER_MAX_LOG=16` keeps them to one-launch sorts, `0` turns them off.
const CLUSTER_ENV: &str = "BITONIC_CUDA_CLUSTER_MAX_LOG";
/// `BITONIC_CUDA_GRAPHS=0` times device-resident sorts with plain launches, not a graph.
const GRAPHS_ENV: &str = "BITONIC_CUDA_GRAPHS";

/// The text of a cust error, without letting a failing `Display` panic.
fn describe(e: CudaError) -> String {
    let mut text = String::new();
    if write!(text, "{e}").is_err() || text.is_empty() {
        text = format!("{e:?}");
    }
    // cust prints the driver's text as a quoted C string.
    text.trim_matches('"').to_string()
}

/// A failed driver call as the crate's error.
fn driver_error(call: &str, e: CudaError) -> Error {
    Error::Driver {
        backend: BackendKind::Cuda,
        call: call.to_string(),
        code: i64::from(e as u32),
        message: describe(e),
    }
}

/// Maps a cust error of `call` to [`Error::Driver`]: `.map_err(on("cuInit"))`.
fn on(call: &'static str) -> impl FnOnce(CudaError) -> Error {
    move |e| driver_error(call, e)
}

/// Checks the status of a raw driver call.
fn check(call: &str, status: cu::CUresult) -> Result<()> {
    if status == cu::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut text: *const std::os::raw::c_char = ptr::null();
    // SAFETY: `status` came from the driver, and `text` is a valid out-pointer; on success
    // the driver stores a pointer to a static NUL-terminated string.
    let known = unsafe { cu::cuGetErrorString(status, &mut text) } == cu::CUresult::CUDA_SUCCESS;
    let message = if known && !text.is_null() {
        // SAFETY: checked non-null above; the string is static and NUL-terminated.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    } else {
        format!("{status:?}")
    };
    Err(Error::Driver {
        backend: BackendKind::Cuda,
        call: call.to_string(),
        code: i64::from(status as u32),
        message,
    })
}

/// Initializes the driver and counts the devices.
fn init() -> Result<u32> {
    cust::init(cust::CudaFlags::empty()).map_err(on("cuInit"))?;
    Device::num_devices().map_err(on("cuDeviceGetCount"))
}

/// Describes device `ordinal`.
fn probe(ordinal: u32) -> Result<(Device, DeviceInfo, DeviceLimits)> {
    let device = Device::get_device(ordinal).map_err(on("cuDeviceGet"))?;
    let attribute = |attr: DeviceAttribute| -> Result<u32> {
        let v = device
            .get_attribute(attr)
            .map_err(on("cuDeviceGetAttribute"))?;
        Ok(u32::try_from(v).unwrap_or(0))
    };
    let name = device.name().map_err(on("cuDeviceGetName"))?;
    let memory_bytes = device.total_memory().map_err(on("cuDeviceTotalMem"))? as u64;
    let compute_units = attribute(DeviceAttribute::MultiprocessorCount)?;
    let mut optin = 0i32;
    // SAFETY: `optin` is a valid out-pointer and the device handle came from the driver.
    let status = unsafe {
        cu::cuDeviceGetAttribute(
            &mut optin,
            cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            device.as_raw(),
        )
    };
    check("cuDeviceGetAttribute", status)?;
    let shared = attribute(DeviceAttribute::MaxSharedMemoryPerBlock)?;
    let limits = DeviceLimits {
        shared_bytes_per_block: u32::try_from(optin)
            .unwrap_or(0)
            .max(shared)
            .max(DEFAULT_SHARED_BYTES),
        max_grid_x: attribute(DeviceAttribute::MaxGridDimX)?.max(1),
        multiprocessors: compute_units.max(1),
        cluster_max_log: if attribute(DeviceAttribute::ComputeCapabilityMajor)? >= 9 {
            cluster_max_log()
        } else {
            0
        },
    };
    let info = DeviceInfo {
        backend: BackendKind::Cuda,
        index: ordinal as usize,
        name,
        vendor: "NVIDIA".to_string(),
        device_type: DeviceType::Gpu,
        memory_bytes,
        compute_units,
    };
    Ok((device, info, limits))
}

/// Lists the CUDA devices. Any driver failure, including a machine without a driver or
/// without a device, is an [`Error::Driver`] naming the call that failed (usually `cuInit`).
pub fn devices() -> Result<Vec<DeviceInfo>> {
    let count = init()?;
    (0..count).map(|i| Ok(probe(i)?.1)).collect()
}

/// One kernel of the loaded module.
#[derive(Clone, Copy, Debug)]
struct Kernel {
    /// The driver's handle; valid while the module that it came from is loaded.
    func: cu::CUfunction,
}

// SAFETY: a CUfunction is an immutable handle into a loaded module and the driver API is
// thread-safe; `CudaBackend` keeps the module loaded for as long as the handles exist.
unsafe impl Send for Kernel {}
// SAFETY: as above; launching through a shared handle mutates nothing on the host.
unsafe impl Sync for Kernel {}

/// Looks up `tile_pass_<key>_<value>` and lets it use `shared_bytes` of shared memory.
fn load_kernel(module: &Module, name: &str, shared_bytes: u32) -> Result<Kernel> {
    let function = module
        .get_function(name)
        .map_err(on("cuModuleGetFunction"))?;
    let func = function.to_raw();
    // SAFETY: `func` belongs to `module`, loaded in the current context; the attribute takes
    // a byte count no larger than the device's opt-in limit.
    let status = unsafe {
        cu::cuFuncSetAttribute(
            func,
            cu::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            shared_bytes as i32,
        )
    };
    check("cuFuncSetAttribute", status)?;
    Ok(Kernel { func })
}

/// The kernels indexed by `key * VALUE_NAMES.len() + value`.
fn load_kernels(module: &Module, shared_bytes: u32) -> Result<Vec<Kernel>> {
    let mut kernels = Vec::with_capacity(KEY_NAMES.len() * VALUE_NAMES.len());
    for key in KEY_NAMES {
        for value in VALUE_NAMES {
            kernels.push(load_kernel(
                module,
                &format!("tile_pass_{key}_{value}"),
                shared_bytes,
            )?);
        }
    }
    Ok(kernels)
}

/// Looks up the cluster kernels (`cluster_pass_u32_none`, `cluster_pass_u32_u32`, in the
/// sm_90 PTX); none when the PTX lacks them (built for an older `BITONIC_CUDA_ARCH`).
fn load_cluster_kernels(module: &Module, shared_bytes: u32) -> Result<Vec<Kernel>> {
    if module.get_function("cluster_pass_u32_none").is_err() {
        return Ok(Vec::new());
    }
    CLUSTER_VALUE_NAMES
        .iter()
        .map(|value| load_kernel(module, &format!("cluster_pass_u32_{value}"), shared_bytes))
        .collect()
}

/// The largest sort on clusters from `BITONIC_CUDA_CLUSTER_MAX_LOG` (0 turns clusters off),
/// else [`plan::DEFAULT_CLUSTER_MAX_LOG`].
fn cluster_max_log() -> u32 {
    std::env::var(CLUSTER_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(plan::DEFAULT_CLUSTER_MAX_LOG)
}

/// The tile cap from `BITONIC_CUDA_LOG_TILE`, if set to a number.
fn log_tile_cap() -> Option<u32> {
    std::env::var(LOG_TILE_ENV).ok()?.trim().parse().ok()
}

/// One sort's device words and its launches.
struct Job {
    keys: cu::CUdeviceptr,
    /// 0 without values.
    values: cu::CUdeviceptr,
    kernels: Kernels,
    launches: Vec<Launch>,
}

/// The kernels of one word variant.
#[derive(Clone, Copy, Debug)]
struct Kernels {
    /// `tile_pass_<key>_<value>`: every launch not on clusters.
    tile: Kernel,
    /// `cluster_pass_<key>_<value>`, where the device and the variant have one.
    cluster: Option<Kernel>,
}

/// An instantiated CUDA graph of one job's launches, replayed by device-resident timing.
struct Graph {
    exec: cu::CUgraphExec,
    graph: cu::CUgraph,
}

impl Graph {
    /// Destroys the graph; its context must be current.
    fn destroy(self) {
        // SAFETY: both handles came from the driver and are destroyed exactly once, here.
        unsafe {
            cu::cuGraphExecDestroy(self.exec);
            cu::cuGraphDestroy(self.graph);
        }
    }
}

/// The device buffers that sorts of host slices reuse (`crate::kept`).
type Scratch = Kept<DeviceBuffer<u8>>;

/// What sorts of host slices keep between calls: device buffers, the pinned staging ring,
/// and the host memory of all-or-nothing copies back.
#[derive(Default)]
struct HostState {
    buffers: Scratch,
    ring: RingOf<CudaLink<'static>>,
    held: Vec<u8>,
}

impl DeviceBytes for DeviceBuffer<u8> {
    fn byte_len(&self) -> usize {
        self.len()
    }
}

/// Sorts on one CUDA device. Open it once and reuse it: the context, the module and its
/// kernels are created in [`CudaBackend::open`] and kept, and so are the device buffers of
/// the largest sort so far.
pub struct CudaBackend {
    info: DeviceInfo,
    limits: DeviceLimits,
    kernels: Vec<Kernel>,
    /// `cluster_pass_u32_<value>` in [`CLUSTER_VALUE_NAMES`] order; empty below compute
    /// capability 9.0.
    cluster_kernels: Vec<Kernel>,
    /// `hold_stream`, which device-resident timing queues before the timed work.
    hold: Kernel,
    /// Serializes sorts of host slices: they share the stream, the device buffers and the
    /// pinned staging, and a graph capture on the stream must not see another thread's
    /// launches.
    busy: Mutex<HostState>,
    /// What the host-slice sorts keep, and how they copy back, readable without the lock.
    gauges: Gauges,
    // Dropped in this order, after `Drop::drop` made the context current: the stream and the
    // module before the context that owns them.
    stream: Stream,
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
        let kernels = load_kernels(&module, limits.shared_bytes_per_block)?;
        let cluster_kernels = if major >= 9 {
            load_cluster_kernels(&module, limits.shared_bytes_per_block)?
        } else {
            Vec::new()
        };
        let mut limits = limits;
        if cluster_kernels.is_empty() {
            limits.cluster_max_log = 0;
        }
        let hold = Kernel {
            func: module
                .get_function("hold_stream")
                .map_err(on("cuModuleGetFunction"))?
                .to_raw(),
        };
        let stream = Stream::new(StreamFlags::NON_BLOCKING, None).map_err(on("cuStreamCreate"))?;
        Ok(CudaBackend {
            info,
            limits,
            kernels,
            cluster_kernels,
            hold,
            busy: Mutex::new(HostState::default()),
            gauges: Gauges::default(),
            stream,
            _module: module,
            context,
        })
    }

    /// The device limits the launches are planned from.
    pub fn limits(&self) -> DeviceLimits {
        self.limits
    }

    /// The launches of a sort of `rows` rows of `row_len` elements of these widths.
    pub fn plan(&self, row_len: u64, rows: u64, widths: Widths, encoding: u32) -> Vec<Launch> {
        plan::plan(
            &self.limits,
            row_len,
            rows,
            widths,
            encoding,
            log_tile_cap(),
        )
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

    /// Copies `bytes` into a new device buffer.
    fn upload(&self, bytes: &[u8], requested: u64) -> Result<DeviceBuffer<u8>> {
        let buffer = self.alloc(bytes.len(), requested)?;
        self.copy_in(buffer.as_device_ptr().as_raw(), bytes)?;
        Ok(buffer)
    }

    /// Copies `bytes` to device memory at `ptr`, which holds at least as many.
    fn copy_in(&self, ptr: cu::CUdeviceptr, bytes: &[u8]) -> Result<()> {
        crate::fault::point(BackendKind::Cuda, "cuMemcpyHtoDAsync")?;
        // On the backend's own stream, not the legacy default stream: a legacy-stream copy
        // breaks a graph capture that another thread has under way on any blocking stream.
        // SAFETY: the buffer at `ptr` holds at least `bytes.len()` bytes; the stream is
        // synchronized before returning, so `bytes` is only read during the call.
        check("cuMemcpyHtoDAsync", unsafe {
            cu::cuMemcpyHtoDAsync_v2(
                ptr,
                bytes.as_ptr().cast(),
                bytes.len(),
                self.stream.as_inner(),
            )
        })?;
        self.stream.synchronize().map_err(on("cuStreamSynchronize"))
    }

    /// Enqueues every launch of `job` on `stream`.
    fn enqueue(&self, job: &Job, stream: cu::CUstream) -> Result<()> {
        for launch in &job.launches {
            crate::fault::point(BackendKind::Cuda, "cuLaunchKernel")?;
            let (mut keys, mut values, mut args) = (job.keys, job.values, launch.args);
            let mut params = [
                &mut keys as *mut u64 as *mut c_void,
                &mut values as *mut u64 as *mut c_void,
                &mut args as *mut PassArgs as *mut c_void,
            ];
            let kernel = if launch.cluster {
                // The plan makes cluster launches only where `limits` says the kernels exist.
                job.kernels.cluster.ok_or_else(|| {
                    Error::Unsupported(
                        "a cluster launch on a device without cluster kernels".into(),
                    )
                })?
            } else {
                job.kernels.tile
            };
            // SAFETY: the three parameters match `tile_pass_K_V` and `cluster_pass_K_V(K
            // *keys, V *values, PassArgs args)` (PassArgs is repr(C) with the kernels' layout,
            // device pointers are u64); `keys` and `values` hold `rows * row_len` words each
            // (values 0 for the `none` kernels, which never read it), and the kernels touch no
            // index past that; `shared_bytes` is within the opt-in limit set on the kernel at
            // open; a cluster kernel's grid is a multiple of its compiled cluster size.
            let status = unsafe {
                cu::cuLaunchKernel(
                    kernel.func,
                    launch.grid,
                    1,
                    1,
                    launch.block,
                    1,
                    1,
                    launch.shared_bytes,
                    stream,
                    params.as_mut_ptr(),
                    ptr::null_mut(),
                )
            };
            check("cuLaunchKernel", status)?;
        }
        Ok(())
    }

    /// Every sort of host slices: uploads the columns through the pinned ring, sorts rows of
    /// `row_len` on the stream, and copies the result back through the ring as it arrives.
    fn sort_host<'a>(
        &self,
        mut keys: Column<'a>,
        mut values: Option<Column<'a>>,
        encoding: KeyEncoding,
        row_len: usize,
    ) -> Result<()> {
        let n = keys.len();
        check_rows_words(n, values.as_ref().map(Column::len), row_len)?;
        if row_len <= 1 {
            return Ok(());
        }
        let key_bytes = keys.word_bytes();
        let value_bytes = values.as_ref().map_or(0, Column::word_bytes);
        let requested = (n as u64).saturating_mul((key_bytes + value_bytes) as u64);
        if requested > self.info.memory_bytes {
            return Err(self.out_of_memory(requested));
        }
        let mut host = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        let host = &mut *host;
        crate::fault::point(BackendKind::Cuda, "cuCtxSetCurrent")?;
        CurrentContext::set_current(&self.context).map_err(on("cuCtxSetCurrent"))?;
        let allocated = host.buffers.fill(|buffers| {
            let alloc = |len| self.alloc(len, requested);
            let device_keys = grow(&mut buffers.keys, keys.device_bytes(), alloc)?;
            let device_keys = device_keys.as_device_ptr().as_raw();
            let device_values = match &values {
                Some(v) => {
                    let buffer = grow(&mut buffers.values, v.device_bytes(), alloc)?;
                    buffer.as_device_ptr().as_raw()
                }
                None => 0,
            };
            Ok((device_keys, device_values))
        });
        self.gauges.keep(host.buffers.bytes(), host.ring.bytes());
        let (device_keys, device_values) = allocated?;
        let link = CudaLink {
            stream: &self.stream,
        };
        let mut uploads = vec![(&keys, device_keys)];
        if let Some(v) = &values {
            uploads.push((v, device_values));
        }
        let uploaded = host_transfer::upload(&link, &mut host.ring, &uploads);
        self.gauges.keep(host.buffers.bytes(), host.ring.bytes());
        uploaded?;
        let enqueued = self.enqueue(
            &Job {
                keys: device_keys,
                values: device_values,
                kernels: self.kernels(key_bytes, value_bytes),
                launches: self.plan(
                    row_len as u64,
                    (n / row_len) as u64,
                    Widths {
                        key: key_bytes as u64,
                        value: value_bytes as u64,
                    },
                    encoding.code(),
                ),
            },
            self.stream.as_inner(),
        );
        if enqueued.is_err() {
            // Let the launches already queued finish before the buffers are reused or freed;
            // the launch error is the one to report.
            let _ = self.stream.synchronize();
        }
        enqueued?;
        // The downloads follow the passes on the stream: a failed pass is reported by the
        // first download's wait, before anything is written to the slices.
        let mut downloads = vec![(&mut keys, device_keys)];
        if let Some(v) = values.as_mut() {
            downloads.push((v, device_values));
        }
        let mode = self.gauges.copy_back();
        host_transfer::download(&link, &mut host.ring, &mut downloads, mode, &mut host.held)
    }

    /// Records the launches of `job` into a graph and instantiates it.
    fn capture(&self, job: &Job) -> Result<Graph> {
        let stream = self.stream.as_inner();
        // SAFETY: the stream belongs to the current context; nothing else launches on it
        // while `busy` is held, so the capture sees only this job.
        check("cuStreamBeginCapture", unsafe {
            cu::cuStreamBeginCapture_v2(
                stream,
                cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            )
        })?;
        let enqueued = self.enqueue(job, stream);
        let mut graph: cu::CUgraph = ptr::null_mut();
        // SAFETY: ends the capture begun above; `graph` is a valid out-pointer.
        let ended = check("cuStreamEndCapture", unsafe {
            cu::cuStreamEndCapture(stream, &mut graph)
        });
        enqueued?;
        ended?;
        let mut exec: cu::CUgraphExec = ptr::null_mut();
        // SAFETY: `graph` is the captured graph; `exec` is a valid out-pointer.
        let status = unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0) };
        if let Err(e) = check("cuGraphInstantiate", status) {
            // SAFETY: the graph came from the capture and is destroyed once.
            unsafe { cu::cuGraphDestroy(graph) };
            return Err(e);
        }
        Ok(Graph { exec, graph })
    }

    /// The kernels for these word widths: the tile kernel, and the cluster kernel where the
    /// device and the variant have one.
    fn kernels(&self, key_bytes: usize, value_bytes: usize) -> Kernels {
        let key_index = usize::from(key_bytes == 8);
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
        Kernels {
            tile: self.kernels[key_index * VALUE_NAMES.len() + value_index],
            cluster,
        }
    }

    /// Device-resident timing; see [`Backend::time_sort_words`].
    fn time_rows(
        &self,
        keys: &mut WordsMut<'_>,
        values: &mut Option<WordsMut<'_>>,
        encoding: KeyEncoding,
        row_len: usize,
        warmup: usize,
        runs: usize,
    ) -> Result<Vec<f64>> {
        let n = keys.len();
        let row_len = if row_len == 0 { n } else { row_len };
        check_rows_words(n, values.as_ref().map(WordsMut::len), row_len)?;
        let key_bytes = keys.word_bytes();
        let value_bytes = values.as_ref().map_or(0, |v| v.word_bytes());
        let element_bytes = (key_bytes + value_bytes) as u64;
        let requested = (n as u64).saturating_mul(element_bytes).saturating_mul(2);
        let _busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        CurrentContext::set_current(&self.context).map_err(on("cuCtxSetCurrent"))?;
        let pristine_keys = self.upload(keys.as_bytes(), requested)?;
        let work_keys = self.alloc(pristine_keys.len(), requested)?;
        let pristine_values = match values.as_ref() {
            Some(v) => Some(self.upload(v.as_bytes(), requested)?),
            None => None,
        };
        let work_values = match &pristine_values {
            Some(p) => Some(self.alloc(p.len(), requested)?),
            None => None,
        };
        let job = Job {
            keys: work_keys.as_device_ptr().as_raw(),
            values: work_values
                .as_ref()
                .map_or(0, |v| v.as_device_ptr().as_raw()),
            kernels: self.kernels(key_bytes, value_bytes),
            launches: if row_len >= 2 {
                self.plan(
                    row_len as u64,
                    (n / row_len) as u64,
                    Widths {
                        key: key_bytes as u64,
                        value: value_bytes as u64,
                    },
                    encoding.code(),
                )
            } else {
                Vec::new()
            },
        };
        let use_graph = std::env::var(GRAPHS_ENV).map_or(true, |v| v.trim() != "0");
        let graph = if use_graph && !job.launches.is_empty() {
            Some(self.capture(&job)?)
        } else {
            None
        };
        let result = self.timed_runs(
            &job,
            graph.as_ref(),
            &pristine_keys,
            &work_keys,
            &pristine_values,
            &work_values,
            warmup,
            runs,
        );
        if let Some(g) = graph {
            g.destroy();
        }
        let times = result?;
        download(
            &self.stream,
            work_keys.as_device_ptr().as_raw(),
            work_values.as_ref().map(|v| v.as_device_ptr().as_raw()),
            keys,
            values,
        )?;
        Ok(times)
    }

    /// Restores the unsorted words (untimed) and sorts them `warmup + runs` times, timing the
    /// sort between two events.
    #[allow(clippy::too_many_arguments)]
    fn timed_runs(
        &self,
        job: &Job,
        graph: Option<&Graph>,
        pristine_keys: &DeviceBuffer<u8>,
        work_keys: &DeviceBuffer<u8>,
        pristine_values: &Option<DeviceBuffer<u8>>,
        work_values: &Option<DeviceBuffer<u8>>,
        warmup: usize,
        runs: usize,
    ) -> Result<Vec<f64>> {
        let start = Event::new(EventFlags::DEFAULT).map_err(on("cuEventCreate"))?;
        let stop = Event::new(EventFlags::DEFAULT).map_err(on("cuEventCreate"))?;
        let copy = |from: &DeviceBuffer<u8>, to: &DeviceBuffer<u8>| -> Result<()> {
            // SAFETY: both buffers are live allocations of the same length in this context.
            check("cuMemcpyDtoDAsync", unsafe {
                cu::cuMemcpyDtoDAsync_v2(
                    to.as_device_ptr().as_raw(),
                    from.as_device_ptr().as_raw(),
                    from.len(),
                    self.stream.as_inner(),
                )
            })
        };
        let held = if held_stream::enabled() {
            Some(held_stream::HeldStream::new()?)
        } else {
            None
        };
        let mut times = Vec::with_capacity(runs);
        // At least one sort, timed or not: the caller's slices receive the working words.
        for run in 0..(warmup + runs).max(1) {
            copy(pristine_keys, work_keys)?;
            if let (Some(p), Some(w)) = (pristine_values, work_values) {
                copy(p, w)?;
            }
            if let Some(h) = &held {
                h.hold(self.hold, self.stream.as_inner())?;
            }
            let queued = (|| -> Result<()> {
                start.record(&self.stream).map_err(on("cuEventRecord"))?;
                match graph {
                    // SAFETY: the graph was instantiated from this job's launches, whose
                    // buffers are still allocated.
                    Some(g) => check("cuGraphLaunch", unsafe {
                        cu::cuGraphLaunch(g.exec, self.stream.as_inner())
                    })?,
                    None => self.enqueue(job, self.stream.as_inner())?,
                }
                stop.record(&self.stream).map_err(on("cuEventRecord"))
            })();
            // Released on every path, so that nothing queued stays held.
            if let Some(h) = &held {
                h.release();
            }
            queued?;
            stop.synchronize().map_err(on("cuEventSynchronize"))?;
            if held.as_ref().is_some_and(|h| h.timed_out()) {
                return Err(Error::Driver {
                    backend: BackendKind::Cuda,
                    call: "hold_stream".to_string(),
                    code: 0,
                    message: format!(
                        "the timed work was not queued within the hold kernel's wait; \
                         the timing is void (set {}=0 to time without holding the stream)",
                        held_stream::HOLD_ENV
                    ),
                });
            }
            let ms = stop
                .elapsed_time_f32(&start)
                .map_err(on("cuEventElapsedTime"))?;
            if run >= warmup {
                times.push(f64::from(ms));
            }
        }
        Ok(times)
    }
}

/// Copies device keys (and values) at these addresses, as many bytes as the slices hold, into
/// the caller's slices through host staging memory, so that a failed copy leaves the slices
/// as they were.
fn download(
    stream: &Stream,
    device_keys: cu::CUdeviceptr,
    device_values: Option<cu::CUdeviceptr>,
    keys: &mut WordsMut<'_>,
    values: &mut Option<WordsMut<'_>>,
) -> Result<()> {
    let stage = |from: cu::CUdeviceptr, len: usize| -> Result<Vec<u8>> {
        let mut h = vec![0u8; len];
        crate::fault::point(BackendKind::Cuda, "cuMemcpyDtoHAsync")?;
        // On `stream`, not the legacy default stream (see `CudaBackend::copy_in`).
        // SAFETY: the device buffer at `from` holds at least `len` bytes (it was filled from
        // a slice of that length), `h` holds exactly `len` and outlives the copy, which has
        // finished when the stream is synchronized below.
        check("cuMemcpyDtoHAsync", unsafe {
            cu::cuMemcpyDtoHAsync_v2(h.as_mut_ptr().cast(), from, len, stream.as_inner())
        })?;
        stream.synchronize().map_err(on("cuStreamSynchronize"))?;
        Ok(h)
    };
    let staged_keys = stage(device_keys, keys.as_bytes().len())?;
    let staged_values = match (device_values, values.as_ref()) {
        (Some(from), Some(v)) => Some(stage(from, v.as_bytes().len())?),
        _ => None,
    };
    keys.as_bytes_mut().copy_from_slice(&staged_keys);
    if let (Some(h), Some(v)) = (staged_values, values.as_mut()) {
        v.as_bytes_mut().copy_from_slice(&h);
    }
    Ok(())
}

impl Backend for CudaBackend {
    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn sort_rows_words(
        &self,
        keys: WordsMut<'_>,
        values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
        row_len: usize,
    ) -> Result<()> {
        self.sort_host(
            Column::Words(keys),
            values.map(Column::Words),
            encoding,
            row_len,
        )
    }

    fn sort_rows_narrow(
        &self,
        keys: &mut dyn NarrowKeys,
        values: Option<WordsMut<'_>>,
        descending: bool,
        row_len: usize,
    ) -> Result<()> {
        self.sort_host(
            Column::Narrow(keys),
            values.map(Column::Words),
            KeyEncoding::narrow(descending),
            row_len,
        )
    }

    fn set_all_or_nothing(&self, all_or_nothing: bool) {
        self.gauges.set_all_or_nothing(all_or_nothing);
    }

    fn cached_pinned_bytes(&self) -> u64 {
        self.gauges.pinned()
    }

    fn cached_bytes(&self) -> u64 {
        self.gauges.device()
    }

    fn release_cached(&self) {
        let mut host = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        // The buffers are freed in their context; without it current they are kept.
        if CurrentContext::set_current(&self.context).is_ok() {
            *host = HostState::default();
            self.gauges.keep(0, 0);
        }
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn time_sort_words(
        &self,
        mut keys: WordsMut<'_>,
        mut values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
        row_len: usize,
        warmup: usize,
        runs: usize,
    ) -> Result<Vec<f64>> {
        self.time_rows(&mut keys, &mut values, encoding, row_len, warmup, runs)
    }
}

#[cfg(test)]
mod tests;
