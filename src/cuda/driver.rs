//! The CUDA driver layer: the status of every driver call as the crate's error, the
//! driver's initialization, and what each device is and can do.

use std::ffi::CStr;
use std::fmt::Write as _;
use std::ptr;

use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::sys as cu;

use super::plan::DeviceLimits;
use crate::backend::{BackendKind, DeviceInfo, DeviceType};
use crate::error::{Error, Result};

/// Shared memory per block that every CUDA device offers without opting in.
const DEFAULT_SHARED_BYTES: u32 = 48 * 1024;

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
pub(super) fn driver_error(call: &str, e: CudaError) -> Error {
    Error::Driver {
        backend: BackendKind::Cuda,
        call: call.to_string(),
        code: i64::from(e as u32),
        message: describe(e),
    }
}

/// Maps a cust error of `call` to [`Error::Driver`]: `.map_err(on("cuInit"))`.
pub(super) fn on(call: &'static str) -> impl FnOnce(CudaError) -> Error {
    move |e| driver_error(call, e)
}

/// Checks the status of a raw driver call.
pub(super) fn check(call: &str, status: cu::CUresult) -> Result<()> {
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
pub(super) fn init() -> Result<u32> {
    cust::init(cust::CudaFlags::empty()).map_err(on("cuInit"))?;
    Device::num_devices().map_err(on("cuDeviceGetCount"))
}

/// Describes device `ordinal`.
pub(super) fn probe(ordinal: u32) -> Result<(Device, DeviceInfo, DeviceLimits)> {
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
        clusters: attribute(DeviceAttribute::ComputeCapabilityMajor)? >= 9,
        counting_from: super::plan::COUNTING_FROM,
        radix_from: None,
        radix_delay: 0,
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

/// Enqueues on `stream` a copy of `bytes` from `src` (device memory of `src_context`) to
/// `dst` (of `dst_context`): a device copy within one context, a peer copy between two
/// (over NVLink or the bus where peer access is enabled, staged by the driver otherwise).
pub(super) fn copy_device_async(
    (dst, dst_context): (cu::CUdeviceptr, cu::CUcontext),
    (src, src_context): (cu::CUdeviceptr, cu::CUcontext),
    bytes: usize,
    stream: cu::CUstream,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    crate::fault::point(BackendKind::Cuda, "cuMemcpyPeerAsync")?;
    if dst_context == src_context {
        // SAFETY: the caller passes `bytes` of live device memory at both addresses, in
        // the context current on this thread, which owns `stream`; the ranges do not overlap.
        return check("cuMemcpyDtoDAsync", unsafe {
            cu::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream)
        });
    }
    // SAFETY: as above, each range in its own context, both contexts live.
    check("cuMemcpyPeerAsync", unsafe {
        cu::cuMemcpyPeerAsync(dst, dst_context, src, src_context, bytes, stream)
    })
}

/// A buffer of `bytes` (at least one) from the current context's stream-ordered memory pool,
/// usable by the work enqueued on `stream` after this call, freed by [`free_async`]; the pool
/// out of memory is `out_of_memory()`.
pub(super) fn alloc_async(
    bytes: u64,
    stream: cu::CUstream,
    out_of_memory: impl FnOnce() -> Error,
) -> Result<cu::CUdeviceptr> {
    crate::fault::point(BackendKind::Cuda, "cuMemAllocAsync")?;
    let mut ptr: cu::CUdeviceptr = 0;
    // SAFETY: `ptr` is a live out-parameter; the caller's context is current and owns
    // `stream` (or `stream` is a special handle).
    let status = unsafe { cu::cuMemAllocAsync(&mut ptr, bytes.max(1) as usize, stream) };
    if status == cu::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        return Err(out_of_memory());
    }
    check("cuMemAllocAsync", status).map(|()| ptr)
}

/// Frees `ptr`, from [`alloc_async`], once `stream` reaches this point.
pub(super) fn free_async(ptr: cu::CUdeviceptr, stream: cu::CUstream) -> Result<()> {
    // SAFETY: `ptr` came from `alloc_async` and is freed once, after the work that uses it
    // was enqueued on `stream`.
    check("cuMemFreeAsync", unsafe { cu::cuMemFreeAsync(ptr, stream) })
}

/// Lets the current context (of `device`) read `peer_context`'s memory (of `peer_device`)
/// directly where the hardware allows it; elsewhere peer copies are staged by the driver.
pub(super) fn enable_peer_access(
    device: cu::CUdevice,
    peer_device: cu::CUdevice,
    peer_context: cu::CUcontext,
) -> Result<()> {
    let mut can = 0i32;
    // SAFETY: `can` is a valid out-pointer; both device handles came from the driver.
    check("cuDeviceCanAccessPeer", unsafe {
        cu::cuDeviceCanAccessPeer(&mut can, device, peer_device)
    })?;
    if can == 0 {
        return Ok(());
    }
    // SAFETY: `peer_context` is a live primary context; flags must be 0.
    let status = unsafe { cu::cuCtxEnablePeerAccess(peer_context, 0) };
    if status == cu::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
        return Ok(());
    }
    check("cuCtxEnablePeerAccess", status)
}

/// A driver event without timing that orders work between streams, including streams the
/// backend does not own (a caller's raw stream, the legacy and per-thread default streams),
/// on which `cust`'s `Event` cannot be recorded. Destroyed on drop; the driver keeps it
/// alive until the waits enqueued on it are resolved.
pub(super) struct StreamEvent(cu::CUevent);

// SAFETY: an event handle is a driver object, usable from any thread.
unsafe impl Send for StreamEvent {}

impl StreamEvent {
    /// A new event recorded on `stream`: it completes once the work enqueued there so far
    /// has. `stream` must be a live stream of the current context, or a special handle
    /// (null, `CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD`).
    pub(super) fn record(stream: cu::CUstream) -> Result<StreamEvent> {
        let mut raw: cu::CUevent = ptr::null_mut();
        let flags = cu::CUevent_flags_enum::CU_EVENT_DISABLE_TIMING as u32;
        // SAFETY: `raw` is a valid out-pointer.
        check("cuEventCreate", unsafe {
            cu::cuEventCreate(&mut raw, flags)
        })?;
        let event = StreamEvent(raw);
        // SAFETY: the event was created above; the caller vouches for the stream handle.
        check("cuEventRecord", unsafe {
            cu::cuEventRecord(event.0, stream)
        })?;
        Ok(event)
    }

    /// Makes the work enqueued on `stream` from now on wait for this event.
    pub(super) fn wait_on(&self, stream: cu::CUstream) -> Result<()> {
        // SAFETY: the event is live; the caller vouches for the stream handle.
        check("cuStreamWaitEvent", unsafe {
            cu::cuStreamWaitEvent(stream, self.0, 0)
        })
    }
}

impl Drop for StreamEvent {
    fn drop(&mut self) {
        // SAFETY: the event was created by `record` and is destroyed once; a pending wait
        // on it still completes (the driver releases it after the wait).
        unsafe {
            cu::cuEventDestroy_v2(self.0);
        }
    }
}
