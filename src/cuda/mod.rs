//! The CUDA executor, through the driver API of `cust` (cargo feature `cuda`).
//!
//! The kernels live in `cuda/bitonic.cu`; the build script compiles them to PTX with nvcc
//! (`-arch=compute_75` unless `BITONIC_CUDA_ARCH` says otherwise) and this module embeds
//! that PTX, which the driver JIT-compiles for the GPU at hand when a backend is opened.
//!
//! [`CudaBackend::open`] retains the device's primary context and loads the module, its
//! kernels and one stream once; every sort makes that context current on the calling thread,
//! so any thread may sort. A sort uploads the words, launches the passes of
//! [`Schedule::steps`] in order on the stream, synchronizes, and only then downloads into the
//! caller's slices.
//!
//! Tiles are as large as the per-block shared memory allows for the key and value widths
//! (at most `2^13` elements for now); see [`DeviceLimits`] and [`launch_params`].

use std::ffi::{CStr, CString, c_void};
use std::fmt::{self, Write as _};
use std::ptr;

use cust::context::{Context, CurrentContext};
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::function::FunctionAttribute;
use cust::memory::{CopyDestination, DeviceBuffer};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use cust::sys as cu;

use crate::backend::{Backend, BackendKind, DeviceInfo, DeviceType};
use crate::error::{Error, Result, check_lengths};
use crate::keys::{KeyEncoding, WordsMut};
use crate::schedule::{Pass, Schedule, TileParams};

/// The PTX of `cuda/bitonic.cu`, compiled by the build script.
const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/bitonic.ptx"));

/// The most levels one global pass applies (each thread holds `2^4` elements in registers);
/// `MAX_GLOBAL_LEVELS` in `cuda/bitonic.cu` must agree.
pub const MAX_GLOBAL_LEVELS: u32 = 4;

/// The largest tile, as log2 of its elements.
pub const MAX_LOG_TILE: u32 = 13;

/// At most this many threads run one tile.
const MAX_LOCAL_THREADS: u32 = 512;

/// Threads per block of the global passes (each holds up to 16 keys and values in registers).
const GLOBAL_THREADS: u32 = 256;

/// Shared memory per block that every CUDA device offers without opting in.
const DEFAULT_SHARED_BYTES: u32 = 48 * 1024;

/// `transform` bit of the kernels: encode keys as they are loaded.
const ENCODE_ON_LOAD: u32 = 1;
/// `transform` bit of the kernels: decode keys as they are stored.
const DECODE_ON_STORE: u32 = 2;

/// Key widths and value kinds in the order of the kernel table; the suffixes of the kernels'
/// names in `cuda/bitonic.cu`.
const KEY_NAMES: [&str; 2] = ["u32", "u64"];
const VALUE_NAMES: [&str; 3] = ["none", "u32", "u64"];

/// The device limits that the tile and block sizes are chosen from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Shared memory one block may use without opting in, in bytes.
    pub shared_bytes_per_block: u32,
    /// The most threads of one block.
    pub max_threads_per_block: u32,
    /// The most blocks of a grid's x dimension.
    pub max_grid_x: u32,
}

/// Tile and block sizes for one combination of key and value widths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchParams {
    /// What the schedule is built from.
    pub tile: TileParams,
    /// Threads per block of the tile passes (at most half the tile: one per comparator).
    pub local_threads: u32,
}

/// Chooses the tile for keys of `key_bytes` and values of `value_bytes` (0 without values):
/// the largest power of two `T` with `T * (key_bytes + value_bytes)` bytes within the
/// per-block shared memory, at most `2^MAX_LOG_TILE` and at least 2; then
/// `min(T/2, max threads per block, 512)` threads per tile.
pub fn launch_params(limits: &DeviceLimits, key_bytes: usize, value_bytes: usize) -> LaunchParams {
    let element = (key_bytes + value_bytes).max(1) as u64;
    let fit = u64::from(limits.shared_bytes_per_block) / element;
    // floor(log2(fit)), with a floor of one comparator per tile.
    let log_tile = if fit >= 2 {
        63 - fit.leading_zeros()
    } else {
        1
    }
    .min(MAX_LOG_TILE);
    let cap = limits.max_threads_per_block.clamp(1, MAX_LOCAL_THREADS);
    let local_threads = ((1u32 << log_tile) / 2).clamp(1, cap);
    LaunchParams {
        tile: TileParams {
            log_tile,
            max_global_levels: MAX_GLOBAL_LEVELS,
        },
        local_threads,
    }
}

/// Blocks for `blocks` work items of one block each, clamped to the grid limit (the kernels
/// loop over what does not fit).
fn grid_size(blocks: u64, max_grid_x: u32) -> u32 {
    u32::try_from(blocks)
        .unwrap_or(u32::MAX)
        .min(max_grid_x)
        .max(1)
}

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
    let shared = attribute(DeviceAttribute::MaxSharedMemoryPerBlock)?;
    let limits = DeviceLimits {
        shared_bytes_per_block: if shared == 0 {
            DEFAULT_SHARED_BYTES
        } else {
            shared
        },
        max_threads_per_block: attribute(DeviceAttribute::MaxThreadsPerBlock)?.max(1),
        max_grid_x: attribute(DeviceAttribute::MaxGridDimX)?.max(1),
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
    /// The most threads per block it can launch with (registers limit it).
    max_threads: u32,
}

// SAFETY: a CUfunction is an immutable handle into a loaded module and the driver API is
// thread-safe; `CudaBackend` keeps the module loaded for as long as the handles exist.
unsafe impl Send for Kernel {}
// SAFETY: as above; launching through a shared handle mutates nothing on the host.
unsafe impl Sync for Kernel {}

/// The three kernels of one key width and value kind.
#[derive(Clone, Copy, Debug)]
struct KernelSet {
    local_sort: Kernel,
    local_merge: Kernel,
    global_merge: Kernel,
}

fn load_kernel(module: &Module, name: &str) -> Result<Kernel> {
    let function = module
        .get_function(name)
        .map_err(on("cuModuleGetFunction"))?;
    let max_threads = function
        .get_attribute(FunctionAttribute::MaxThreadsPerBlock)
        .map_err(on("cuFuncGetAttribute"))?;
    Ok(Kernel {
        func: function.to_raw(),
        max_threads: u32::try_from(max_threads).unwrap_or(1).max(1),
    })
}

/// The kernels indexed by `key * VALUE_NAMES.len() + value`.
fn load_kernels(module: &Module) -> Result<Vec<KernelSet>> {
    let mut sets = Vec::with_capacity(KEY_NAMES.len() * VALUE_NAMES.len());
    for key in KEY_NAMES {
        for value in VALUE_NAMES {
            sets.push(KernelSet {
                local_sort: load_kernel(module, &format!("local_sort_{key}_{value}"))?,
                local_merge: load_kernel(module, &format!("local_merge_{key}_{value}"))?,
                global_merge: load_kernel(module, &format!("global_merge_{key}_{value}"))?,
            });
        }
    }
    Ok(sets)
}

/// One sort's device words and the kernels and sizes that fit them.
struct Job {
    /// Number of words.
    n: u64,
    /// The key words on the device.
    keys: cu::CUdeviceptr,
    /// The value words on the device, 0 without values.
    values: cu::CUdeviceptr,
    /// Bytes of one key plus one value.
    element_bytes: u32,
    kernels: KernelSet,
    params: LaunchParams,
    /// `KeyEncoding::code()`.
    encoding: u32,
}

/// Sorts on one CUDA device. Open it once and reuse it: the context, the module and its
/// kernels are created in [`CudaBackend::open`] and kept.
pub struct CudaBackend {
    info: DeviceInfo,
    limits: DeviceLimits,
    kernels: Vec<KernelSet>,
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
        let image = CString::new(PTX).map_err(|_| Error::Driver {
            backend: BackendKind::Cuda,
            call: "cuModuleLoadDataEx".to_string(),
            code: i64::from(CudaError::InvalidPtx as u32),
            message: "the embedded PTX contains a NUL byte".to_string(),
        })?;
        let module = Module::from_ptx_cstr(&image, &[]).map_err(on("cuModuleLoadDataEx"))?;
        let kernels = load_kernels(&module)?;
        let stream = Stream::new(StreamFlags::DEFAULT, None).map_err(on("cuStreamCreate"))?;
        Ok(CudaBackend {
            info,
            limits,
            kernels,
            stream,
            _module: module,
            context,
        })
    }

    /// The tile and block sizes this device uses for keys and values of these widths in bytes
    /// (`value_bytes` 0 without values).
    pub fn launch_params(&self, key_bytes: usize, value_bytes: usize) -> LaunchParams {
        launch_params(&self.limits, key_bytes, value_bytes)
    }

    fn out_of_memory(&self, requested: u64) -> Error {
        Error::OutOfMemory {
            device: self.info.name.clone(),
            requested,
            available: self.info.memory_bytes,
        }
    }

    /// Copies `bytes` into a new device buffer.
    fn upload(&self, bytes: &[u8], requested: u64) -> Result<DeviceBuffer<u8>> {
        // SAFETY: the buffer is completely written by `copy_from` below before anything
        // reads it, and dropped unread if that copy fails.
        let mut buffer =
            unsafe { DeviceBuffer::<u8>::uninitialized(bytes.len()) }.map_err(|e| match e {
                CudaError::OutOfMemory => self.out_of_memory(requested),
                e => driver_error("cuMemAlloc", e),
            })?;
        buffer.copy_from(bytes).map_err(on("cuMemcpyHtoD"))?;
        Ok(buffer)
    }

    /// Launches `kernel` on the backend's stream with one-dimensional grid and block.
    ///
    /// # Safety
    /// `args` must point to one live value per kernel parameter, each of exactly the
    /// parameter's type, and every device pointer among them must be valid for the indices
    /// the kernel touches.
    unsafe fn launch(
        &self,
        kernel: Kernel,
        grid: u32,
        block: u32,
        shared_bytes: u32,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        // SAFETY: the handle belongs to `self.module`, which is loaded in the current context;
        // the caller guarantees the arguments; the driver copies them before returning.
        let status = unsafe {
            cu::cuLaunchKernel(
                kernel.func,
                grid,
                1,
                1,
                block,
                1,
                1,
                shared_bytes,
                self.stream.as_inner(),
                args.as_mut_ptr(),
                ptr::null_mut(),
            )
        };
        check("cuLaunchKernel", status)
    }

    /// Enqueues every pass of the schedule of `job` on the stream.
    fn enqueue(&self, job: &Job) -> Result<()> {
        let schedule = Schedule::new(job.n, job.params.tile);
        let (kernels, params, element_bytes) = (job.kernels, job.params, job.element_bytes);
        let (mut keys, mut values, mut n) = (job.keys, job.values, job.n);
        let arg = |p: &mut u64| p as *mut u64 as *mut c_void;
        for (pass, step) in schedule.steps() {
            let mut transform = 0u32;
            if step.encode_on_load {
                transform |= ENCODE_ON_LOAD;
            }
            if step.decode_on_store {
                transform |= DECODE_ON_STORE;
            }
            let mut encoding = job.encoding;
            match pass {
                Pass::LocalSort { log_tile } | Pass::LocalMerge { log_tile } => {
                    let kernel = if matches!(pass, Pass::LocalSort { .. }) {
                        kernels.local_sort
                    } else {
                        kernels.local_merge
                    };
                    let tile = 1u32 << log_tile;
                    let cap = params.local_threads.min(kernel.max_threads).max(1);
                    let threads = (tile / 2).clamp(1, cap);
                    let grid = grid_size(pass.items(n), self.limits.max_grid_x);
                    let mut log_tile = log_tile;
                    let mut args = [
                        arg(&mut keys),
                        arg(&mut values),
                        arg(&mut n),
                        &mut log_tile as *mut u32 as *mut c_void,
                        &mut encoding as *mut u32 as *mut c_void,
                        &mut transform as *mut u32 as *mut c_void,
                    ];
                    // SAFETY: the six arguments match `local_*_K_V(K *keys, V *values, u64 n,
                    // u32 log_tile, u32 encoding, u32 transform)`; `keys` and `values` hold
                    // `n` words each (values 0 for the `none` kernels, which never read it);
                    // `tile * element_bytes` fits the per-block shared memory by the choice of
                    // the tile in `launch_params`.
                    unsafe { self.launch(kernel, grid, threads, tile * element_bytes, &mut args) }?;
                }
                Pass::GlobalMerge {
                    stage,
                    first_level,
                    levels,
                } => {
                    let kernel = kernels.global_merge;
                    let threads = GLOBAL_THREADS.min(kernel.max_threads).max(1);
                    let blocks = pass.items(n).div_ceil(u64::from(threads));
                    let grid = grid_size(blocks, self.limits.max_grid_x);
                    let (mut stage, mut first_level, mut levels) = (stage, first_level, levels);
                    let mut args = [
                        arg(&mut keys),
                        arg(&mut values),
                        arg(&mut n),
                        &mut stage as *mut u32 as *mut c_void,
                        &mut first_level as *mut u32 as *mut c_void,
                        &mut levels as *mut u32 as *mut c_void,
                        &mut encoding as *mut u32 as *mut c_void,
                        &mut transform as *mut u32 as *mut c_void,
                    ];
                    // SAFETY: the eight arguments match `global_merge_K_V(K *keys, V *values,
                    // u64 n, u32 stage, u32 first_level, u32 levels, u32 encoding,
                    // u32 transform)`; the schedule keeps `levels <= MAX_GLOBAL_LEVELS` and
                    // every index the kernel stores is below `n`.
                    unsafe { self.launch(kernel, grid, threads, 0, &mut args) }?;
                }
            }
        }
        Ok(())
    }
}

impl Backend for CudaBackend {
    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn sort_words(
        &self,
        mut keys: WordsMut<'_>,
        mut values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
    ) -> Result<()> {
        let n = keys.len();
        check_lengths(n, values.as_ref().map(WordsMut::len))?;
        if n <= 1 {
            return Ok(());
        }
        let key_bytes = keys.word_bytes();
        let value_bytes = values.as_ref().map_or(0, |v| v.word_bytes());
        let requested = (n as u64).saturating_mul((key_bytes + value_bytes) as u64);
        if requested > self.info.memory_bytes {
            return Err(self.out_of_memory(requested));
        }
        let key_index = usize::from(key_bytes == 8);
        let value_index = match value_bytes {
            0 => 0,
            4 => 1,
            _ => 2,
        };
        let kernels = self.kernels[key_index * VALUE_NAMES.len() + value_index];
        let params = launch_params(&self.limits, key_bytes, value_bytes);

        CurrentContext::set_current(&self.context).map_err(on("cuCtxSetCurrent"))?;
        let device_keys = self.upload(keys.as_bytes(), requested)?;
        let device_values = match &values {
            Some(v) => Some(self.upload(v.as_bytes(), requested)?),
            None => None,
        };
        self.enqueue(&Job {
            n: n as u64,
            keys: device_keys.as_device_ptr().as_raw(),
            values: device_values
                .as_ref()
                .map_or(0, |v| v.as_device_ptr().as_raw()),
            element_bytes: (key_bytes + value_bytes) as u32,
            kernels,
            params,
            encoding: encoding.code(),
        })?;
        // Every pass has finished, and reported its failure, before the caller's slices are
        // touched.
        self.stream
            .synchronize()
            .map_err(on("cuStreamSynchronize"))?;
        device_keys
            .copy_to(keys.as_bytes_mut())
            .map_err(on("cuMemcpyDtoH"))?;
        if let (Some(device), Some(host)) = (&device_values, values.as_mut()) {
            device
                .copy_to(host.as_bytes_mut())
                .map_err(on("cuMemcpyDtoH"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
