//! Finding devices and choosing one: the builder, the environment overrides, `devices()`.

use crate::backend::{Backend, BackendDevices, BackendKind, DeviceInfo, DeviceType};
use crate::cpu::{self, CpuBackend};
use crate::error::{Error, Result};

/// Environment variable that picks the backend: `cuda`, `opencl` or `cpu`.
pub const ENV_BACKEND: &str = "BITONIC_BACKEND";
/// Environment variable that picks the device: an index or part of its name.
pub const ENV_DEVICE: &str = "BITONIC_DEVICE";

/// Which device of a backend to take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceFilter {
    /// The device at this position in its backend's list.
    Index(usize),
    /// The first device whose name contains this text (ignoring case).
    Name(String),
}

impl DeviceFilter {
    /// Parses a number as an index, anything else as part of a name.
    pub fn parse(s: &str) -> DeviceFilter {
        match s.trim().parse::<usize>() {
            Ok(i) => DeviceFilter::Index(i),
            Err(_) => DeviceFilter::Name(s.trim().to_string()),
        }
    }

    fn matches(&self, d: &DeviceInfo) -> bool {
        match self {
            DeviceFilter::Index(i) => d.index == *i,
            DeviceFilter::Name(s) => d.name.to_lowercase().contains(&s.to_lowercase()),
        }
    }
}

/// Lists every device of every compiled backend; a backend that could not start says why.
/// Backends not compiled in are listed as unavailable with the feature that would add them.
pub fn devices() -> Vec<BackendDevices> {
    BackendKind::ALL
        .iter()
        .map(|&backend| match backend_devices(backend) {
            Ok(devices) => BackendDevices {
                backend,
                devices,
                unavailable: None,
            },
            Err(e) => BackendDevices {
                backend,
                devices: Vec::new(),
                unavailable: Some(e.to_string()),
            },
        })
        .collect()
}

fn backend_devices(backend: BackendKind) -> Result<Vec<DeviceInfo>> {
    match backend {
        BackendKind::Cpu => Ok(vec![cpu::info()]),
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => crate::cuda::devices(),
        #[cfg(feature = "opencl")]
        BackendKind::OpenCl => crate::opencl::devices(),
        #[allow(unreachable_patterns)]
        other => Err(Error::BackendNotCompiled { backend: other }),
    }
}

fn open(info: &DeviceInfo) -> Result<Box<dyn Backend>> {
    match info.backend {
        BackendKind::Cpu => Ok(Box::new(CpuBackend::new())),
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => Ok(Box::new(crate::cuda::CudaBackend::open(info.index)?)),
        #[cfg(feature = "opencl")]
        BackendKind::OpenCl => Ok(Box::new(crate::opencl::OpenClBackend::open(info.index)?)),
        #[allow(unreachable_patterns)]
        other => Err(Error::BackendNotCompiled { backend: other }),
    }
}

/// Describes what was found, for error messages.
fn describe(found: &[BackendDevices]) -> String {
    let mut parts = Vec::new();
    for b in found {
        if let Some(why) = &b.unavailable {
            parts.push(format!("{}: unavailable ({why})", b.backend));
        } else if b.devices.is_empty() {
            parts.push(format!("{}: no devices", b.backend));
        } else {
            for d in &b.devices {
                parts.push(d.to_string());
            }
        }
    }
    parts.join("; ")
}

/// Chooses the device: explicit settings first, then the environment, then the best found.
pub(crate) fn choose(
    backend: Option<BackendKind>,
    filter: Option<DeviceFilter>,
) -> Result<Box<dyn Backend>> {
    if let Some(b) = backend.filter(|b| !b.is_compiled()) {
        return Err(Error::BackendNotCompiled { backend: b });
    }
    // Only probe what could be chosen, so that asking for the CPU starts no driver.
    let found: Vec<BackendDevices> = match backend {
        Some(BackendKind::Cpu) => vec![BackendDevices {
            backend: BackendKind::Cpu,
            devices: vec![cpu::info()],
            unavailable: None,
        }],
        _ => devices(),
    };
    let all: Vec<DeviceInfo> = found
        .iter()
        .flat_map(|b| b.devices.iter().cloned())
        .collect();
    let chosen = pick(&all, backend, filter.as_ref());
    match chosen {
        Some(info) => open(info),
        None => Err(Error::NoDevice {
            requested: format!(
                "backend {}, device {}",
                backend.map_or("any".to_string(), |b| b.to_string()),
                match &filter {
                    None => "any".to_string(),
                    Some(DeviceFilter::Index(i)) => format!("#{i}"),
                    Some(DeviceFilter::Name(s)) => format!("named like {s:?}"),
                }
            ),
            found: describe(&found),
        }),
    }
}

/// Picks a device from `devices` (every device found, in backend order) for the requested
/// backend and filter; `None` when nothing fits. Pure, so that it can be tested without
/// hardware.
fn pick<'a>(
    devices: &'a [DeviceInfo],
    backend: Option<BackendKind>,
    filter: Option<&DeviceFilter>,
) -> Option<&'a DeviceInfo> {
    let candidates: Vec<&DeviceInfo> = devices
        .iter()
        .filter(|d| backend.is_none_or(|want| d.backend == want))
        .filter(|d| filter.is_none_or(|f| f.matches(d)))
        .collect();
    match (backend, filter) {
        // A device filter names the device: the first match in the order of preference.
        (_, Some(_)) => candidates.first().copied(),
        // A backend alone: its strongest GPU, else its first device (PoCL, say).
        (Some(_), None) => best_default(&candidates).or(candidates.first().copied()),
        (None, None) => best_default(&candidates),
    }
}

/// A CUDA device, else the strongest OpenCL GPU, else the host CPU. OpenCL CPU devices are
/// never taken unasked: the native CPU sort is faster on the same cores.
fn best_default<'a>(candidates: &[&'a DeviceInfo]) -> Option<&'a DeviceInfo> {
    let cuda = candidates.iter().find(|d| d.backend == BackendKind::Cuda);
    let opencl_gpu = candidates
        .iter()
        .filter(|d| d.backend == BackendKind::OpenCl && d.device_type == DeviceType::Gpu)
        .max_by_key(|d| (d.compute_units, d.memory_bytes));
    let cpu = candidates.iter().find(|d| d.backend == BackendKind::Cpu);
    cuda.or(opencl_gpu).or(cpu).copied()
}

/// Reads `BITONIC_BACKEND` and `BITONIC_DEVICE`; an unknown backend name is an error.
pub(crate) fn from_env() -> Result<(Option<BackendKind>, Option<DeviceFilter>)> {
    let backend = match std::env::var(ENV_BACKEND) {
        Ok(s) if !s.trim().is_empty() => Some(BackendKind::parse(&s).ok_or_else(|| {
            Error::InvalidConfig(format!(
                "{ENV_BACKEND}={s:?} is not one of cuda, opencl, cpu"
            ))
        })?),
        _ => None,
    };
    let device = match std::env::var(ENV_DEVICE) {
        Ok(s) if !s.trim().is_empty() => Some(DeviceFilter::parse(&s)),
        _ => None,
    };
    Ok((backend, device))
}
