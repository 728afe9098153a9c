//! The OpenCL executor, through `opencl3` (cargo feature `opencl`).
//!
//! The kernels live in `kernels/bitonic.cl` and are embedded in the library. One program is
//! built per word variant (key word, optional value word) on first use and cached for the
//! life of the backend. A sort uploads the words, enqueues the launches that `plan.rs` makes
//! from [`crate::schedule::Schedule`] in order on one in-order queue, waits for them and reads
//! the results back into host staging memory; the caller's slices are written only after
//! every pass and every read succeeded. [`Backend::time_sort_words`] runs the same launches on
//! a profiling queue and times them with the kernels' own events.
//!
//! Each program's two kernel objects are cached with it; their arguments are per-object
//! state, so a sort holds the program's kernel lock while it sets arguments and enqueues.
//! One [`OpenClBackend`] may be shared by many threads. Sorts of host slices reuse device
//! buffers kept from the largest sort so far; keys already in device memory are sorted in
//! place on the caller's queue by the calls in `device_buffers.rs`
//! ([`OpenClBackend::sort_device`] and its siblings).

use std::collections::HashMap;
use std::ptr;
use std::sync::{Arc, Mutex};

use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
use opencl3::context::Context;
use opencl3::device::{CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU, Device};
use opencl3::error_codes::{
    CL_BUILD_PROGRAM_FAILURE, CL_DEVICE_NOT_FOUND, CL_INVALID_BUFFER_SIZE,
    CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES, ClError, DLOPEN_RUNTIME_LOAD_FAILED,
};
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::platform::get_platforms;
use opencl3::program::Program;
use opencl3::types::{CL_BLOCKING, cl_device_id, cl_mem};

use crate::backend::{Backend, BackendKind, DeviceInfo, DeviceType};
use crate::error::{Error, Result, check_rows_words};
use crate::host_transfer::{self, Column, Gauges, RingOf};
use crate::kept::{DeviceBytes, Kept, grow};
use crate::keys::{KeyEncoding, NarrowKeys, WordsMut};
use crate::schedule::TileParams;

use plan::{Kind, LOG_E, Launch, Limits, MAX_LOG_TILE, Shape};

/// The kernel source, built once per word variant.
const SOURCE: &str = include_str!("../../kernels/bitonic.cl");
/// Name of the tile kernel (local passes and global passes of many levels).
const TILE_KERNEL: &str = "bitonic_tile";
/// Name of the register kernel (global passes of at most `2^LOG_E` levels).
const GLOBAL_KERNEL: &str = "bitonic_global";

/// Maps a failed OpenCL call to [`Error::Driver`] naming the call.
fn driver(call: &'static str) -> impl FnOnce(ClError) -> Error {
    move |e| {
        let message = if e.0 == DLOPEN_RUNTIME_LOAD_FAILED {
            "the OpenCL ICD loader (libOpenCL) could not be loaded".to_string()
        } else {
            e.to_string()
        };
        Error::Driver {
            backend: BackendKind::OpenCl,
            call: call.to_string(),
            code: i64::from(e.0),
            message,
        }
    }
}

/// Every device of every platform, platforms in `clGetPlatformIDs` order.
fn device_ids() -> Result<Vec<cl_device_id>> {
    let platforms = get_platforms().map_err(driver("clGetPlatformIDs"))?;
    let mut ids = Vec::new();
    for platform in platforms {
        match platform.get_devices(CL_DEVICE_TYPE_ALL) {
            Ok(found) => ids.extend(found),
            // A platform without devices adds nothing.
            Err(e) if e.0 == CL_DEVICE_NOT_FOUND => {}
            Err(e) => return Err(driver("clGetDeviceIDs")(e)),
        }
    }
    Ok(ids)
}

/// Describes the device at `index` of the flat list.
fn describe(index: usize, device: &Device) -> Result<DeviceInfo> {
    let name = device.name().map_err(driver("clGetDeviceInfo"))?;
    let vendor = device.vendor().map_err(driver("clGetDeviceInfo"))?;
    let kind = device.dev_type().map_err(driver("clGetDeviceInfo"))?;
    let device_type = if kind & CL_DEVICE_TYPE_GPU != 0 {
        DeviceType::Gpu
    } else if kind & CL_DEVICE_TYPE_CPU != 0 {
        DeviceType::Cpu
    } else {
        DeviceType::Other
    };
    Ok(DeviceInfo {
        backend: BackendKind::OpenCl,
        index,
        name: clean(&name),
        vendor: clean(&vendor),
        device_type,
        memory_bytes: device
            .global_mem_size()
            .map_err(driver("clGetDeviceInfo"))?,
        compute_units: device
            .max_compute_units()
            .map_err(driver("clGetDeviceInfo"))?,
    })
}

/// Driver strings may carry a terminating NUL or padding.
fn clean(s: &str) -> String {
    s.trim_matches(|c: char| c == '\0' || c.is_whitespace())
        .to_string()
}

/// Lists every OpenCL device of every platform in one flat list; a device's position is the
/// index [`OpenClBackend::open`] takes. No platform (or no ICD loader) is an
/// [`Error::Driver`] for `clGetPlatformIDs`.
pub fn devices() -> Result<Vec<DeviceInfo>> {
    device_ids()?
        .into_iter()
        .enumerate()
        .map(|(i, id)| describe(i, &Device::new(id)))
        .collect()
}

/// A machine word as the kernels see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Width {
    W32,
    W64,
}

impl Width {
    fn of(words: &WordsMut<'_>) -> Width {
        match words {
            WordsMut::U32(_) => Width::W32,
            WordsMut::U64(_) => Width::W64,
        }
    }

    fn bytes(self) -> u64 {
        match self {
            Width::W32 => 4,
            Width::W64 => 8,
        }
    }

    fn cl_type(self) -> &'static str {
        match self {
            Width::W32 => "uint",
            Width::W64 => "ulong",
        }
    }
}

/// Which program: key word, optional value word, registers per round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct VariantKey {
    key: Width,
    value: Option<Width>,
    log_e: u32,
}

impl VariantKey {
    fn element_bytes(self) -> u64 {
        self.key.bytes() + self.value.map_or(0, Width::bytes)
    }

    fn build_options(self) -> String {
        let values = match self.value {
            None => "-D HAS_VALUES=0".to_string(),
            Some(v) => format!("-D HAS_VALUES=1 -D VAL_T={}", v.cl_type()),
        };
        format!(
            "-D KEY_T={} {values} -D LOG_E={}",
            self.key.cl_type(),
            self.log_e
        )
    }
}

/// Serializes the creation and release of programs and kernels across the whole process;
/// these calls are rare (once per variant and per backend), so one lock costs nothing.
static LIFECYCLE: Mutex<()> = Mutex::new(());

/// Serializes whole sorts on OpenCL CPU devices across the process. PoCL 5 (the GPU
/// machine's) aborts in `pocl_release_dlhandle_cache` when several contexts on one CPU
/// device run kernels from several threads at once; a CPU device spreads every kernel over
/// all cores anyway, so running one sort at a time loses little.
static CPU_DEVICE_RUNS: Mutex<()> = Mutex::new(());

/// Takes a lock that guards no data (so a poisoned lock is as good as a clean one).
fn hold(lock: &'static Mutex<()>) -> std::sync::MutexGuard<'static, ()> {
    lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn lifecycle_lock() -> std::sync::MutexGuard<'static, ()> {
    hold(&LIFECYCLE)
}

/// A built program with its kernels and the limits its launches are planned from.
struct Variant {
    /// The kernel objects; their arguments are per-object state, so a sort holds this lock
    /// from the first argument it sets to its last enqueue.
    /// (The kernels retain their program, so the program object is not kept here.)
    kernels: Mutex<Kernels>,
    limits: Limits,
    element_bytes: u64,
}

/// The device limits the launch sizes come from.
#[derive(Clone, Copy, Debug)]
struct DeviceLimits {
    local_mem: u64,
    max_group: usize,
    global_mem: u64,
    compute_units: u32,
}

/// Sorts on one OpenCL device: a context, an in-order queue and the programs built so far.
pub struct OpenClBackend {
    info: DeviceInfo,
    device: Device,
    context: Context,
    queue: CommandQueue,
    limits: DeviceLimits,
    variants: Mutex<HashMap<VariantKey, Arc<Variant>>>,
    /// Device buffers and pinned staging kept between sorts of host slices, which take turns
    /// at them.
    host: Mutex<HostState>,
    /// What the host-slice sorts keep, and how they copy back, readable without the lock.
    gauges: Gauges,
    /// The largest tile allowed ([`MAX_LOG_TILE`]; smaller in tests, to exercise the global
    /// passes with short inputs).
    max_log_tile: u32,
    /// log2 of the registers per round ([`LOG_E`]; smaller in tests, to exercise more
    /// rounds and tiled global passes with short inputs).
    log_e: u32,
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
    }
}

/// Device buffers this backend owns: the pristine and working copies of device-resident
/// timing.
struct Buffers {
    keys: Buffer<u8>,
    values: Option<Buffer<u8>>,
    key_bytes: u64,
    value_bytes: u64,
}

impl Buffers {
    fn operands(&self) -> Operands {
        Operands {
            keys: self.keys.get(),
            values: self.values.as_ref().map(|v| v.get()),
            key_bytes: self.key_bytes,
            value_bytes: self.value_bytes,
        }
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

/// The device buffers that sorts of host slices reuse (`crate::kept`).
type Scratch = Kept<Buffer<u8>>;

/// What sorts of host slices keep between calls: device buffers, the mapped staging ring,
/// and the host memory of all-or-nothing copies back.
#[derive(Default)]
struct HostState {
    buffers: Scratch,
    ring: RingOf<ClLink<'static>>,
    held: Vec<u8>,
}

impl DeviceBytes for Buffer<u8> {
    fn byte_len(&self) -> usize {
        self.size().unwrap_or(0)
    }
}

/// The two kernel objects of a program.
struct Kernels {
    tile: Kernel,
    global: Kernel,
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
        };
        let context = Context::from_device(&device).map_err(driver("clCreateContext"))?;
        let queue =
            CommandQueue::create_default(&context, 0).map_err(driver("clCreateCommandQueue"))?;
        Ok(OpenClBackend {
            info,
            device,
            context,
            queue,
            limits,
            variants: Mutex::new(HashMap::new()),
            host: Mutex::new(HostState::default()),
            gauges: Gauges::default(),
            max_log_tile: MAX_LOG_TILE,
            log_e: LOG_E,
        })
    }

    /// The largest tile's parameters for this key/value layout (building its program if
    /// needed); a sort may use a smaller tile so that every compute unit gets work.
    pub fn tile_params(&self, key_bytes: usize, value_bytes: Option<usize>) -> Result<TileParams> {
        let variant = self.variant_of_widths(key_bytes, value_bytes)?;
        Ok(plan::tile_params(plan::max_log_tile(
            &variant.limits,
            variant.element_bytes,
        )))
    }

    /// The program for keys and values (when given) of these byte widths, each 4 or 8.
    fn variant_of_widths(
        &self,
        key_bytes: usize,
        value_bytes: Option<usize>,
    ) -> Result<Arc<Variant>> {
        let width = |b: usize| match b {
            4 => Ok(Width::W32),
            8 => Ok(Width::W64),
            bytes => Err(Error::UnsupportedValueSize { bytes }),
        };
        self.variant(VariantKey {
            key: width(key_bytes)?,
            value: value_bytes.map(width).transpose()?,
            log_e: self.round_log_e(),
        })
    }

    /// The cached program for `key`, built on first use.
    fn variant(&self, key: VariantKey) -> Result<Arc<Variant>> {
        // The map is only ever inserted into whole, so a poisoned lock still holds a valid map.
        let mut cache = self
            .variants
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(v) = cache.get(&key) {
            return Ok(Arc::clone(v));
        }
        let built = Arc::new(self.build(key)?);
        cache.insert(key, Arc::clone(&built));
        Ok(built)
    }

    /// The program for the words of a sort.
    fn variant_for(
        &self,
        keys: &WordsMut<'_>,
        values: Option<&WordsMut<'_>>,
    ) -> Result<Arc<Variant>> {
        self.variant(VariantKey {
            key: Width::of(keys),
            value: values.map(Width::of),
            log_e: self.round_log_e(),
        })
    }

    /// Levels per register round: one on CPU devices, whose compilers need no registers
    /// and one of which (PoCL 5) aborts on a kernel that chooses between rounds of
    /// different sizes (`createParallelRegionBefore` assertion); `log_e` elsewhere.
    fn round_log_e(&self) -> u32 {
        if self.info.device_type == DeviceType::Cpu {
            1
        } else {
            self.log_e
        }
    }

    /// Compiles `source` for this device; a compiler error comes back with its build log.
    fn compile(&self, source: &str, options: &str) -> Result<Program> {
        let mut program = Program::create_from_source(&self.context, source)
            .map_err(driver("clCreateProgramWithSource"))?;
        if let Err(e) = program.build(&[self.device.id()], options) {
            if e.0 == CL_BUILD_PROGRAM_FAILURE {
                let log = program
                    .get_build_log(self.device.id())
                    .unwrap_or_else(|e| format!("(the build log could not be read: {e})"));
                return Err(Error::KernelBuild {
                    log: format!("options: {options}\n{log}"),
                });
            }
            return Err(driver("clBuildProgram")(e));
        }
        Ok(program)
    }

    /// Builds the program for `key` and records the limits its launches are planned from.
    fn build(&self, key: VariantKey) -> Result<Variant> {
        let _lifecycle = lifecycle_lock();
        let options = key.build_options();
        let program = match self.compile(SOURCE, &options) {
            Ok(program) => program,
            // A compiler without the C99 `_Pragma` operator gets the loops without the
            // unroll hint; if that fails too, the first build's log is the one to read.
            Err(first @ Error::KernelBuild { .. }) => self
                .compile(SOURCE, &format!("{options} -D NO_UNROLL_PRAGMA"))
                .map_err(|_| first)?,
            Err(e) => return Err(e),
        };
        let kernels = Kernels {
            tile: Kernel::create(&program, TILE_KERNEL).map_err(driver("clCreateKernel"))?,
            global: Kernel::create(&program, GLOBAL_KERNEL).map_err(driver("clCreateKernel"))?,
        };
        let kernel_limit = |kernel: &Kernel| -> Result<usize> {
            Ok(kernel
                .get_work_group_size(self.device.id())
                .map_err(driver("clGetKernelWorkGroupInfo"))?
                .min(self.limits.max_group)
                .max(1))
        };
        let limits = Limits {
            local_mem: self.limits.local_mem,
            compute_units: self.limits.compute_units,
            tile_group: kernel_limit(&kernels.tile)?,
            global_group: kernel_limit(&kernels.global)?,
            log_e: key.log_e,
            max_log_tile: self.max_log_tile,
            uniform_groups: self.info.device_type == DeviceType::Cpu,
        };
        Ok(Variant {
            kernels: Mutex::new(kernels),
            limits,
            element_bytes: key.element_bytes(),
        })
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

    /// A device buffer filled from `data` (a blocking upload).
    fn upload(&self, data: &[u8], requested: u64) -> Result<Buffer<u8>> {
        let mut buffer = self.alloc(data.len(), requested)?;
        crate::fault::point(BackendKind::OpenCl, "clEnqueueWriteBuffer")?;
        // SAFETY: the write is blocking, so `data` is only read during this call, and the
        // buffer holds exactly `data.len()` bytes.
        unsafe {
            self.queue
                .enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, data, &[])
        }
        .map_err(self.memory_error("clEnqueueWriteBuffer", requested))?;
        Ok(buffer)
    }

    /// Device buffers holding `keys` and `values`.
    fn upload_words(
        &self,
        keys: &WordsMut<'_>,
        values: Option<&WordsMut<'_>>,
        requested: u64,
    ) -> Result<Buffers> {
        Ok(Buffers {
            keys: self.upload(keys.as_bytes(), requested)?,
            values: match values {
                Some(v) => Some(self.upload(v.as_bytes(), requested)?),
                None => None,
            },
            key_bytes: keys.word_bytes() as u64,
            value_bytes: values.map_or(0, |v| v.word_bytes() as u64),
        })
    }

    /// Reads `device_keys` and `device_values` (as many bytes as the slices hold) back into
    /// host staging memory, then (only when every read succeeded) into `keys` and `values`:
    /// a failed read leaves the caller's slices as they were.
    #[allow(clippy::too_many_arguments)]
    fn download(
        &self,
        queue: &CommandQueue,
        device_keys: &Buffer<u8>,
        device_values: Option<&Buffer<u8>>,
        keys: &mut WordsMut<'_>,
        values: Option<&mut WordsMut<'_>>,
        requested: u64,
    ) -> Result<()> {
        let read = |buffer: &Buffer<u8>, len: usize| -> Result<Vec<u8>> {
            let mut staged = vec![0u8; len];
            crate::fault::point(BackendKind::OpenCl, "clEnqueueReadBuffer")?;
            // SAFETY: a blocking read of exactly the bytes the buffer holds into a slice of
            // the same length that lives across the call.
            unsafe { queue.enqueue_read_buffer(buffer, CL_BLOCKING, 0, &mut staged, &[]) }
                .map_err(self.memory_error("clEnqueueReadBuffer", requested))?;
            Ok(staged)
        };
        let staged_keys = read(device_keys, keys.as_bytes().len())?;
        let staged_values = match (&values, device_values) {
            (Some(v), Some(buffer)) => Some(read(buffer, v.as_bytes().len())?),
            _ => None,
        };
        keys.as_bytes_mut().copy_from_slice(&staged_keys);
        if let (Some(v), Some(staged)) = (values, staged_values) {
            v.as_bytes_mut().copy_from_slice(&staged);
        }
        Ok(())
    }

    /// Enqueues one launch on `queue` and returns its event.
    #[allow(clippy::too_many_arguments)]
    fn enqueue_launch(
        &self,
        queue: &CommandQueue,
        kernels: &Kernels,
        buffers: Operands,
        shape: Shape,
        launch: &Launch,
        encoding: KeyEncoding,
        requested: u64,
    ) -> Result<Event> {
        let code = encoding.code();
        let kernel = match launch.kind {
            Kind::Tile {
                tiles,
                mode,
                log_local,
                log_net,
                c,
                lo_g,
                m,
                flip,
                tail,
            } => {
                let mut args = Args::with_data(&kernels.tile, buffers, shape)?;
                args.u64(tiles)?;
                args.u32(mode)?;
                args.u32(log_local)?;
                args.u32(log_net)?;
                args.u32(c)?;
                args.u32(lo_g)?;
                args.u32(m)?;
                args.u32(flip)?;
                args.u32(tail)?;
                args.u32(code)?;
                args.u32(launch.transform)?;
                args.local(launch.local_words * buffers.key_bytes)?;
                if buffers.values.is_some() {
                    args.local(launch.local_words * buffers.value_bytes)?;
                }
                &kernels.tile
            }
            Kind::Global {
                groups,
                lo_g,
                m,
                flip,
            } => {
                let mut args = Args::with_data(&kernels.global, buffers, shape)?;
                args.u64(groups)?;
                args.u32(lo_g)?;
                args.u32(m)?;
                args.u32(flip)?;
                args.u32(code)?;
                args.u32(launch.transform)?;
                &kernels.global
            }
        };
        let global_size = [launch.groups * launch.local];
        let local_size = [launch.local];
        crate::fault::point(BackendKind::OpenCl, "clEnqueueNDRangeKernel")?;
        // SAFETY: every argument of the kernel was set just above with the type the kernel
        // declares for this variant; the sizes are one-dimensional arrays that outlive the
        // call, and the global size is a multiple of the local size.
        unsafe {
            queue.enqueue_nd_range_kernel(
                kernel.get(),
                1,
                ptr::null(),
                global_size.as_ptr(),
                local_size.as_ptr(),
                &[],
            )
        }
        .map_err(self.memory_error("clEnqueueNDRangeKernel", requested))
    }

    /// Enqueues every launch of a sort on `queue`; returns the launches' events. On failure,
    /// lets what was enqueued drain before the buffers go.
    #[allow(clippy::too_many_arguments)]
    fn enqueue_sort(
        &self,
        queue: &CommandQueue,
        kernels: &Kernels,
        buffers: Operands,
        shape: Shape,
        launches: &[Launch],
        encoding: KeyEncoding,
        requested: u64,
    ) -> Result<Vec<Event>> {
        let mut events = Vec::with_capacity(launches.len());
        for launch in launches {
            match self.enqueue_launch(queue, kernels, buffers, shape, launch, encoding, requested) {
                Ok(event) => events.push(event),
                Err(e) => {
                    // Its status no longer matters.
                    let _ = queue.finish();
                    return Err(e);
                }
            }
        }
        Ok(events)
    }

    /// Every sort of host slices: uploads the columns through the pinned ring, sorts rows of
    /// `row_len` on the queue, and copies the result back through the ring as it arrives.
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
        let _one_at_a_time =
            (self.info.device_type == DeviceType::Cpu).then(|| hold(&CPU_DEVICE_RUNS));
        let key_bytes = keys.word_bytes();
        let value_bytes = values.as_ref().map(Column::word_bytes);
        let variant = self.variant_of_widths(key_bytes, value_bytes)?;
        let requested = (n as u64).saturating_mul(variant.element_bytes);
        self.check_memory(requested)?;
        let shape = Shape::new(row_len as u64, (n / row_len) as u64);
        let launches = plan::plan(&variant.limits, shape, variant.element_bytes);
        // One host-slice sort at a time: they share the queue, the device buffers and the
        // pinned ring, and a ring of its own would cost a thread more (pinning 24 MiB) than
        // waiting for the sort ahead of it. Nothing behind the lock is left half-updated by a
        // panic, so a poisoned lock is still usable.
        let mut host = self.host.lock().unwrap_or_else(|e| e.into_inner());
        let host = &mut *host;
        let allocated = host.buffers.fill(|buffers| {
            let alloc = |len| self.alloc(len, requested);
            let device_keys = grow(&mut buffers.keys, keys.device_bytes(), alloc)?.get();
            let device_values = match &values {
                Some(v) => Some(grow(&mut buffers.values, v.device_bytes(), alloc)?.get()),
                None => None,
            };
            Ok((device_keys, device_values))
        });
        self.gauges.keep(host.buffers.bytes(), host.ring.bytes());
        let (device_keys, device_values) = allocated?;
        let link = ClLink {
            backend: self,
            queue: &self.queue,
            requested,
        };
        let mut uploads = vec![(&keys, device_keys)];
        if let (Some(v), Some(d)) = (&values, device_values) {
            uploads.push((v, d));
        }
        let uploaded = host_transfer::upload(&link, &mut host.ring, &uploads);
        self.gauges.keep(host.buffers.bytes(), host.ring.bytes());
        uploaded?;
        {
            // Kernel arguments are set and used under the lock; no data is behind it, so a
            // poisoned lock is still usable.
            let kernels = variant
                .kernels
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            self.enqueue_sort(
                &self.queue,
                &kernels,
                Operands {
                    keys: device_keys,
                    values: device_values,
                    key_bytes: key_bytes as u64,
                    value_bytes: value_bytes.unwrap_or(0) as u64,
                },
                shape,
                &launches,
                encoding,
                requested,
            )?;
        }
        // The reads follow the passes on the in-order queue: a failed pass is reported by the
        // first read's wait, before anything is written to the slices.
        let mut downloads = vec![(&mut keys, device_keys)];
        if let (Some(v), Some(d)) = (values.as_mut(), device_values) {
            downloads.push((v, d));
        }
        let mode = self.gauges.copy_back();
        host_transfer::download(&link, &mut host.ring, &mut downloads, mode, &mut host.held)
    }

    /// Device-resident timing; see [`Backend::time_sort_words`].
    fn time_rows(
        &self,
        mut keys: WordsMut<'_>,
        mut values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
        row_len: usize,
        warmup: usize,
        runs: usize,
    ) -> Result<Vec<f64>> {
        let n = keys.len();
        let row_len = if row_len == 0 { n } else { row_len };
        check_rows_words(n, values.as_ref().map(WordsMut::len), row_len)?;
        let _one_at_a_time =
            (self.info.device_type == DeviceType::Cpu).then(|| hold(&CPU_DEVICE_RUNS));
        let variant = self.variant_for(&keys, values.as_ref())?;
        // Pristine and working copies.
        let requested = (n as u64)
            .saturating_mul(variant.element_bytes)
            .saturating_mul(2);
        self.check_memory(requested)?;
        let shape = Shape::new(row_len as u64, (n / row_len) as u64);
        let launches = if row_len >= 2 {
            plan::plan(&variant.limits, shape, variant.element_bytes)
        } else {
            Vec::new()
        };
        let queue = CommandQueue::create_default(&self.context, CL_QUEUE_PROFILING_ENABLE)
            .map_err(driver("clCreateCommandQueue"))?;
        let pristine = self.upload_words(&keys, values.as_ref(), requested)?;
        let mut work = Buffers {
            keys: self.alloc(keys.as_bytes().len(), requested)?,
            values: match &values {
                Some(v) => Some(self.alloc(v.as_bytes().len(), requested)?),
                None => None,
            },
            key_bytes: pristine.key_bytes,
            value_bytes: pristine.value_bytes,
        };
        let times = self.timed_runs(
            &queue, &variant, &pristine, &mut work, shape, &launches, encoding, requested, warmup,
            runs,
        );
        let finished = queue.finish().map_err(driver("clFinish"));
        let times = times?;
        finished?;
        self.download(
            &queue,
            &work.keys,
            work.values.as_ref(),
            &mut keys,
            values.as_mut(),
            requested,
        )?;
        Ok(times)
    }

    /// Restores the unsorted words (untimed) and sorts them `warmup + runs` times (at least
    /// once, so that the result is sorted), timing each sort from its first kernel's start to
    /// its last kernel's end.
    #[allow(clippy::too_many_arguments)]
    fn timed_runs(
        &self,
        queue: &CommandQueue,
        variant: &Variant,
        pristine: &Buffers,
        work: &mut Buffers,
        shape: Shape,
        launches: &[Launch],
        encoding: KeyEncoding,
        requested: u64,
        warmup: usize,
        runs: usize,
    ) -> Result<Vec<f64>> {
        let kernels = variant
            .kernels
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let copy = |from: &Buffer<u8>, to: &mut Buffer<u8>| -> Result<()> {
            let bytes = from.size().map_err(driver("clGetMemObjectInfo"))?;
            // SAFETY: both buffers are live allocations of `bytes` bytes in this context.
            unsafe { queue.enqueue_copy_buffer(from, to, 0, 0, bytes, &[]) }
                .map(drop)
                .map_err(self.memory_error("clEnqueueCopyBuffer", requested))
        };
        let mut times = Vec::with_capacity(runs);
        for run in 0..(warmup + runs).max(1) {
            copy(&pristine.keys, &mut work.keys)?;
            if let (Some(from), Some(to)) = (&pristine.values, &mut work.values) {
                copy(from, to)?;
            }
            let events = self.enqueue_sort(
                queue,
                &kernels,
                work.operands(),
                shape,
                launches,
                encoding,
                requested,
            )?;
            queue
                .finish()
                .map_err(self.memory_error("clFinish", requested))?;
            if run < warmup {
                continue;
            }
            let ms = match (events.first(), events.last()) {
                (Some(first), Some(last)) => {
                    let start = first
                        .profiling_command_start()
                        .map_err(driver("clGetEventProfilingInfo"))?;
                    let end = last
                        .profiling_command_end()
                        .map_err(driver("clGetEventProfilingInfo"))?;
                    end.saturating_sub(start) as f64 / 1e6
                }
                _ => 0.0,
            };
            if times.len() < runs {
                times.push(ms);
            }
        }
        Ok(times)
    }
}

/// Sets a kernel's arguments in order.
struct Args<'a> {
    kernel: &'a Kernel,
    index: u32,
}

impl<'a> Args<'a> {
    /// The arguments both kernels begin with: the key (and value) buffers, then the rows'
    /// shape (`row_len`, `rows`, `log_p`).
    fn with_data(kernel: &'a Kernel, buffers: Operands, shape: Shape) -> Result<Self> {
        let mut args = Args { kernel, index: 0 };
        args.buffer(buffers.keys)?;
        if let Some(v) = buffers.values {
            args.buffer(v)?;
        }
        args.u64(shape.row_len)?;
        args.u64(shape.rows)?;
        args.u32(shape.log_row)?;
        Ok(args)
    }

    /// Sets the next argument to the bytes of `value`.
    ///
    /// # Safety
    /// `T` must be the type the kernel declares for that argument.
    unsafe fn set<T>(&mut self, value: &T) -> Result<()> {
        crate::fault::point(BackendKind::OpenCl, "clSetKernelArg")?;
        // SAFETY: the caller guarantees the type; `value` is read during the call only.
        unsafe { self.kernel.set_arg(self.index, value) }.map_err(driver("clSetKernelArg"))?;
        self.index += 1;
        Ok(())
    }

    fn buffer(&mut self, buffer: cl_mem) -> Result<()> {
        // SAFETY: the argument is a `__global` pointer, set from a memory object handle.
        unsafe { self.set(&buffer) }
    }

    fn u64(&mut self, value: u64) -> Result<()> {
        // SAFETY: the argument is a `ulong`, 8 bytes like `u64`.
        unsafe { self.set(&value) }
    }

    fn u32(&mut self, value: u32) -> Result<()> {
        // SAFETY: the argument is a `uint`, 4 bytes like `u32`.
        unsafe { self.set(&value) }
    }

    fn local(&mut self, bytes: u64) -> Result<()> {
        crate::fault::point(BackendKind::OpenCl, "clSetKernelArg")?;
        // SAFETY: the argument is a `__local` pointer; a size with no value allocates it.
        unsafe { self.kernel.set_arg_local_buffer(self.index, bytes as usize) }
            .map_err(driver("clSetKernelArg"))?;
        self.index += 1;
        Ok(())
    }
}

impl Backend for OpenClBackend {
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
        let mut host = self.host.lock().unwrap_or_else(|e| e.into_inner());
        *host = HostState::default();
        self.gauges.keep(0, 0);
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn time_sort_words(
        &self,
        keys: WordsMut<'_>,
        values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
        row_len: usize,
        warmup: usize,
        runs: usize,
    ) -> Result<Vec<f64>> {
        self.time_rows(keys, values, encoding, row_len, warmup, runs)
    }
}

mod device_buffers;
mod link;
mod plan;

use link::ClLink;

#[cfg(test)]
mod tests;
