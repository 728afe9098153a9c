//! The OpenCL driver layer: failed calls as the crate's error, and the devices of every
//! platform with what they are.

use opencl3::device::{CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU, Device};
use opencl3::error_codes::{CL_DEVICE_NOT_FOUND, ClError, DLOPEN_RUNTIME_LOAD_FAILED};
use opencl3::platform::get_platforms;
use opencl3::types::cl_device_id;

use crate::backend::{BackendKind, DeviceInfo, DeviceType};
use crate::error::{Error, Result};

/// Maps a failed OpenCL call to [`Error::Driver`] naming the call.
pub(super) fn driver(call: &'static str) -> impl FnOnce(ClError) -> Error {
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
pub(super) fn device_ids() -> Result<Vec<cl_device_id>> {
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
pub(super) fn describe(index: usize, device: &Device) -> Result<DeviceInfo> {
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
pub(super) fn clean(s: &str) -> String {
    s.trim_matches(|c: char| c == '\0' || c.is_whitespace())
        .to_string()
}

/// Lists every OpenCL device of every platform in one flat list; a device's position is the
/// index [`super::OpenClBackend::open`] takes. No platform (or no ICD loader) is an
/// [`Error::Driver`] for `clGetPlatformIDs`.
pub fn devices() -> Result<Vec<DeviceInfo>> {
    device_ids()?
        .into_iter()
        .enumerate()
        .map(|(i, id)| describe(i, &Device::new(id)))
        .collect()
}
