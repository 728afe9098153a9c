//! The OpenCL executor, through `opencl3` (cargo feature `opencl`).
//!
//! The kernels live in `kernels/bitonic.cl` and are embedded in the library. One program is
//! built per word variant (key word, optional value word) on first use and cached for the
//! life of the backend. A sort uploads the words, enqueues the passes of
//! [`crate::schedule::Schedule`] in order on one in-order queue, waits for them and reads the
//! results back; the caller's slices are written only after every pass succeeded.
//!
//! Each program's two kernel objects are cached with it; their arguments are per-object
//! state, so a sort holds the program's kernel lock while it sets arguments and enqueues.
//! One [`OpenClBackend`] may be shared by many threads.

use std::collections::HashMap;
use std::ptr;
use std::sync::{Arc, Mutex};

use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU, Device};
use opencl3::error_codes::{
    CL_BUILD_PROGRAM_FAILURE, CL_DEVICE_NOT_FOUND, CL_INVALID_BUFFER_SIZE,
    CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES, ClError, DLOPEN_RUNTIME_LOAD_FAILED,
};
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::platform::get_platforms;
use opencl3::program::Program;
use opencl3::types::{CL_BLOCKING, cl_device_id};

use crate::backend::{Backend, BackendKind, DeviceInfo, DeviceType};
use crate::error::{Error, Result, check_lengths};
use crate::keys::{KeyEncoding, WordsMut};
use crate::schedule::{Pass, Schedule, TileParams, Transform};

/// The kernel source, built once per word variant.
const SOURCE: &str = include_str!("../../kernels/bitonic.cl");
/// Name of the tile kernel (`Pass::LocalSort` and `Pass::LocalMerge`).
const LOCAL_KERNEL: &str = "bitonic_local";
/// Name of the register kernel (`Pass::GlobalMerge`).
const GLOBAL_KERNEL: &str = "bitonic_global";

/// The largest tile: 2^13 elements.
const MAX_LOG_TILE: u32 = 13;
/// Local memory kept free beyond the tile: some drivers report more than a kernel may use.
const LOCAL_MEM_MARGIN: u64 = 1024;
/// The largest work-group the kernels are launched with.
const MAX_WORK_GROUP: usize = 256;
/// Levels one global pass applies (the kernel holds 2^4 elements per work item).
const MAX_GLOBAL_LEVELS: u32 = 4;
/// The most work-groups a tile pass launches; the groups loop over the remaining tiles.
const MAX_TILE_GROUPS: u64 = 1 << 16;
/// The most work items a global pass launches; the items loop over the remaining groups.
const MAX_GLOBAL_ITEMS: u64 = 1 << 22;

/// Transform flags as the kernels receive them.
const ENCODE_ON_LOAD: u32 = 1;
const DECODE_ON_STORE: u32 = 2;

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

/// Which program: key word and optional value word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct VariantKey {
    key: Width,
    value: Option<Width>,
}

impl VariantKey {
    fn element_bytes(self) -> u64 {
        self.key.bytes() + self.value.map_or(0, Width::bytes)
    }

    fn build_options(self) -> String {
        match self.value {
            None => format!("-D KEY_T={} -D HAS_VALUES=0", self.key.cl_type()),
            Some(v) => format!(
                "-D KEY_T={} -D HAS_VALUES=1 -D VAL_T={}",
                self.key.cl_type(),
                v.cl_type()
            ),
        }
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

/// A built program with its kernels and the launch sizes chosen for it.
struct Variant {
    /// The kernel objects; their arguments are per-object state, so a sort holds this lock
    /// from the first argument it sets to its last enqueue.
    /// (The kernels retain their program, so the program object is not kept here.)
    kernels: Mutex<Kernels>,
    params: TileParams,
    /// Work-group size of the tile kernel.
    local_group: usize,
    /// Work-group size of the global kernel.
    global_group: usize,
}

/// The device limits the launch sizes come from.
#[derive(Clone, Copy, Debug)]
struct Limits {
    local_mem: u64,
    max_group: usize,
    global_mem: u64,
}

/// The largest power of two `<= x` (1 for 0).
fn floor_pow2(x: usize) -> usize {
    if x <= 1 {
        1
    } else {
        1 << (usize::BITS - 1 - x.leading_zeros())
    }
}

/// Sorts on one OpenCL device: a context, an in-order queue and the programs built so far.
pub struct OpenClBackend {
    info: DeviceInfo,
    device: Device,
    context: Context,
    queue: CommandQueue,
    limits: Limits,
    variants: Mutex<HashMap<VariantKey, Arc<Variant>>>,
    /// The largest tile allowed ([`MAX_LOG_TILE`]; smaller in tests, to exercise the global
    /// passes with short inputs).
    max_log_tile: u32,
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
        let limits = Limits {
            local_mem: device.local_mem_size().map_err(driver("clGetDeviceInfo"))?,
            max_group: max_group.min(max_item).max(1),
            global_mem: info.memory_bytes,
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
            max_log_tile: MAX_LOG_TILE,
        })
    }

    /// The tile parameters used for this key/value layout (building its program if needed).
    pub fn tile_params(&self, key_bytes: usize, value_bytes: Option<usize>) -> Result<TileParams> {
        let width = |b: usize| match b {
            4 => Ok(Width::W32),
            8 => Ok(Width::W64),
            bytes => Err(Error::UnsupportedValueSize { bytes }),
        };
        let key = VariantKey {
            key: width(key_bytes)?,
            value: value_bytes.map(width).transpose()?,
        };
        Ok(self.variant(key)?.params)
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

    /// Builds the program for `key` and chooses its tile and work-group sizes.
    fn build(&self, key: VariantKey) -> Result<Variant> {
        let _lifecycle = lifecycle_lock();
        let program = self.compile(SOURCE, &key.build_options())?;
        let kernels = Kernels {
            local: Kernel::create(&program, LOCAL_KERNEL).map_err(driver("clCreateKernel"))?,
            global: Kernel::create(&program, GLOBAL_KERNEL).map_err(driver("clCreateKernel"))?,
        };
        let kernel_limit = |kernel: &Kernel| -> Result<usize> {
            kernel
                .get_work_group_size(self.device.id())
                .map_err(driver("clGetKernelWorkGroupInfo"))
        };
        let local_limit = kernel_limit(&kernels.local)?;
        let global_limit = kernel_limit(&kernels.global)?;

        let budget = self.limits.local_mem.saturating_sub(LOCAL_MEM_MARGIN);
        let element = key.element_bytes();
        let mut log_tile = self.max_log_tile;
        while log_tile > 1 && (element << log_tile) > budget {
            log_tile -= 1;
        }
        let half_tile = 1usize << (log_tile - 1);
        let local_group = floor_pow2(
            half_tile
                .min(self.limits.max_group)
                .min(local_limit)
                .min(MAX_WORK_GROUP),
        );
        let global_group = floor_pow2(self.limits.max_group.min(global_limit).min(MAX_WORK_GROUP));
        Ok(Variant {
            kernels: Mutex::new(kernels),
            params: TileParams {
                log_tile,
                max_global_levels: MAX_GLOBAL_LEVELS,
            },
            local_group,
            global_group,
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

    /// A device buffer of `bytes` bytes, filled from `data` (a blocking upload).
    fn upload(&self, data: &[u8], requested: u64) -> Result<Buffer<u8>> {
        // SAFETY: no host pointer is passed (null with flags that do not use one); the size
        // is the length of `data`, which is at least 2 words here.
        let mut buffer = unsafe {
            Buffer::<u8>::create(
                &self.context,
                CL_MEM_READ_WRITE,
                data.len(),
                ptr::null_mut(),
            )
        }
        .map_err(self.memory_error("clCreateBuffer", requested))?;
        // SAFETY: the write is blocking, so `data` is only read during this call, and the
        // buffer holds exactly `data.len()` bytes.
        unsafe {
            self.queue
                .enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, data, &[])
        }
        .map_err(self.memory_error("clEnqueueWriteBuffer", requested))?;
        Ok(buffer)
    }

    /// Enqueues one pass of the schedule.
    #[allow(clippy::too_many_arguments)]
    fn enqueue_pass(
        &self,
        variant: &Variant,
        kernels: &Kernels,
        buffers: &Buffers,
        n: u64,
        pass: Pass,
        transform: Transform,
        encoding: KeyEncoding,
        requested: u64,
    ) -> Result<()> {
        let mut flags = 0;
        if transform.encode_on_load {
            flags |= ENCODE_ON_LOAD;
        }
        if transform.decode_on_store {
            flags |= DECODE_ON_STORE;
        }
        let code = encoding.code();
        let (kernel, global, local) = match pass {
            Pass::LocalSort { log_tile } | Pass::LocalMerge { log_tile } => {
                let merge_only = u32::from(matches!(pass, Pass::LocalMerge { .. }));
                let tile = 1u64 << log_tile;
                let mut args = Args::new(&kernels.local);
                args.buffer(&buffers.keys)?;
                if let Some(v) = &buffers.values {
                    args.buffer(v)?;
                }
                args.u64(n)?;
                args.u32(log_tile)?;
                args.u32(merge_only)?;
                args.u32(code)?;
                args.u32(flags)?;
                args.local(tile * buffers.key_bytes)?;
                if buffers.values.is_some() {
                    args.local(tile * buffers.value_bytes)?;
                }
                let groups = pass.items(n).clamp(1, MAX_TILE_GROUPS) as usize;
                let local = variant.local_group;
                (&kernels.local, groups * local, local)
            }
            Pass::GlobalMerge {
                stage,
                first_level,
                levels,
            } => {
                let groups = pass.items(n);
                let mut args = Args::new(&kernels.global);
                args.buffer(&buffers.keys)?;
                if let Some(v) = &buffers.values {
                    args.buffer(v)?;
                }
                args.u64(n)?;
                args.u64(groups)?;
                args.u32(stage)?;
                args.u32(first_level)?;
                args.u32(levels)?;
                args.u32(code)?;
                args.u32(flags)?;
                let local = variant.global_group;
                let items = groups.clamp(1, MAX_GLOBAL_ITEMS) as usize;
                (&kernels.global, items.div_ceil(local) * local, local)
            }
        };
        let global_size = [global];
        let local_size = [local];
        // SAFETY: every argument of the kernel was set just above with the type the kernel
        // declares for this variant; the sizes are one-dimensional arrays that outlive the
        // call, and the global size is a multiple of the local size.
        unsafe {
            self.queue.enqueue_nd_range_kernel(
                kernel.get(),
                1,
                ptr::null(),
                global_size.as_ptr(),
                local_size.as_ptr(),
                &[],
            )
        }
        .map_err(self.memory_error("clEnqueueNDRangeKernel", requested))?;
        Ok(())
    }

    /// Uploads, sorts and downloads; `keys` and `values` are written only at the end.
    fn run(
        &self,
        mut keys: WordsMut<'_>,
        mut values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
    ) -> Result<()> {
        let _one_at_a_time =
            (self.info.device_type == DeviceType::Cpu).then(|| hold(&CPU_DEVICE_RUNS));
        let n = keys.len() as u64;
        let key = VariantKey {
            key: Width::of(&keys),
            value: values.as_ref().map(Width::of),
        };
        let requested = n.saturating_mul(key.element_bytes());
        if requested > self.limits.global_mem {
            return Err(Error::OutOfMemory {
                device: self.info.name.clone(),
                requested,
                available: self.limits.global_mem,
            });
        }
        let variant = self.variant(key)?;
        let schedule = Schedule::new(n, variant.params);

        let buffers = Buffers {
            keys: self.upload(keys.as_bytes(), requested)?,
            values: match &values {
                Some(v) => Some(self.upload(v.as_bytes(), requested)?),
                None => None,
            },
            key_bytes: key.key.bytes(),
            value_bytes: key.value.map_or(0, Width::bytes),
        };
        // Kernel arguments are set and used under the lock; no data is behind it, so a
        // poisoned lock is still usable.
        let kernels = variant
            .kernels
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for (pass, transform) in schedule.steps() {
            if let Err(e) = self.enqueue_pass(
                &variant, &kernels, &buffers, n, pass, transform, encoding, requested,
            ) {
                // Let what was enqueued drain before the buffers go; its status no longer
                // matters.
                let _ = self.queue.finish();
                return Err(e);
            }
        }
        self.queue
            .finish()
            .map_err(self.memory_error("clFinish", requested))?;

        // SAFETY (both reads): blocking reads of exactly the bytes each buffer holds into a
        // slice of the same length that lives across the call.
        unsafe {
            self.queue
                .enqueue_read_buffer(&buffers.keys, CL_BLOCKING, 0, keys.as_bytes_mut(), &[])
        }
        .map_err(self.memory_error("clEnqueueReadBuffer", requested))?;
        if let (Some(v), Some(buf)) = (values.as_mut(), &buffers.values) {
            // SAFETY: as above.
            unsafe {
                self.queue
                    .enqueue_read_buffer(buf, CL_BLOCKING, 0, v.as_bytes_mut(), &[])
            }
            .map_err(self.memory_error("clEnqueueReadBuffer", requested))?;
        }
        Ok(())
    }
}

/// The device buffers of one sort.
struct Buffers {
    keys: Buffer<u8>,
    values: Option<Buffer<u8>>,
    key_bytes: u64,
    value_bytes: u64,
}

/// The two kernel objects of a program.
struct Kernels {
    local: Kernel,
    global: Kernel,
}

/// Sets a kernel's arguments in order.
struct Args<'a> {
    kernel: &'a Kernel,
    index: u32,
}

impl<'a> Args<'a> {
    fn new(kernel: &'a Kernel) -> Self {
        Args { kernel, index: 0 }
    }

    /// Sets the next argument to the bytes of `value`.
    ///
    /// # Safety
    /// `T` must be the type the kernel declares for that argument.
    unsafe fn set<T>(&mut self, value: &T) -> Result<()> {
        // SAFETY: the caller guarantees the type; `value` is read during the call only.
        unsafe { self.kernel.set_arg(self.index, value) }.map_err(driver("clSetKernelArg"))?;
        self.index += 1;
        Ok(())
    }

    fn buffer(&mut self, buffer: &Buffer<u8>) -> Result<()> {
        // SAFETY: the argument is a `__global` pointer, set from a memory object handle.
        unsafe { self.set(&buffer.get()) }
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

    fn sort_words(
        &self,
        keys: WordsMut<'_>,
        values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
    ) -> Result<()> {
        check_lengths(keys.len(), values.as_ref().map(WordsMut::len))?;
        if keys.len() <= 1 {
            return Ok(());
        }
        self.run(keys, values, encoding)
    }
}

#[cfg(test)]
mod tests;
