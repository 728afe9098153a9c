//! Finding devices and choosing one: the builder, the environment overrides, `devices()`.

use std::cmp::Reverse;

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
    /// The device at this position in its backend's list. Without a backend: the CUDA device
    /// of that index, else the OpenCL GPU of that index, else (for 0) the host CPU; never an
    /// OpenCL CPU device.
    Index(usize),
    /// A device whose name contains this text (ignoring case); of several, the first in the
    /// order of preference. A name may pick an OpenCL CPU device (PoCL).
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

/// The GPUs of `backend`, in its order; none where it cannot start.
pub(crate) fn gpus_of(backend: BackendKind) -> Vec<DeviceInfo> {
    backend_devices(backend)
        .unwrap_or_default()
        .into_iter()
        .filter(|d| d.device_type == DeviceType::Gpu)
        .collect()
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
                    Some(DeviceFilter::Index(i)) if backend.is_none() => {
                        format!("#{i} (of a CUDA device, an OpenCL GPU or the host CPU)")
                    }
                    Some(DeviceFilter::Index(i)) => format!("#{i}"),
                    Some(DeviceFilter::Name(s)) => format!("named like {s:?}"),
                }
            ),
            found: describe(&found),
        }),
    }
}

/// Picks a device from `devices` (every device found) for the requested backend and filter;
/// `None` when nothing fits. Pure, so that it can be tested without hardware.
///
/// The backend and the filter narrow the list; of what is left, the first in the order of
/// preference is taken:
/// 1. CUDA devices, the strongest first (most compute units, then most memory);
/// 2. OpenCL GPUs, the strongest first;
/// 3. the host CPU (the CPU backend);
/// 4. other OpenCL devices (CPUs such as PoCL, accelerators), the strongest first.
///
/// Devices of the last group are taken only when asked for: with the OpenCL backend
/// requested, or by a name filter that matches them. Without settings, or with a bare index
/// (no backend), they are never taken: the native CPU sort is faster on the same cores.
/// Equal devices go by their index.
fn pick<'a>(
    devices: &'a [DeviceInfo],
    backend: Option<BackendKind>,
    filter: Option<&DeviceFilter>,
) -> Option<&'a DeviceInfo> {
    let others_asked_for =
        backend == Some(BackendKind::OpenCl) || matches!(filter, Some(DeviceFilter::Name(_)));
    devices
        .iter()
        .filter(|d| backend.is_none_or(|want| d.backend == want))
        .filter(|d| filter.is_none_or(|f| f.matches(d)))
        .filter(|d| others_asked_for || preference_group(d) < OTHER_OPENCL)
        .min_by_key(|d| {
            (
                preference_group(d),
                Reverse(d.compute_units),
                Reverse(d.memory_bytes),
                d.index,
            )
        })
}

/// The preference group of OpenCL devices that are not GPUs (see [`pick`]).
const OTHER_OPENCL: u8 = 3;

/// A device's group in the order of preference of [`pick`]: lower is preferred.
fn preference_group(d: &DeviceInfo) -> u8 {
    match (d.backend, d.device_type) {
        (BackendKind::Cuda, _) => 0,
        (BackendKind::OpenCl, DeviceType::Gpu) => 1,
        (BackendKind::Cpu, _) => 2,
        (BackendKind::OpenCl, _) => OTHER_OPENCL,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn dev(
        backend: BackendKind,
        index: usize,
        name: &str,
        device_type: DeviceType,
        compute_units: u32,
        memory_gib: u64,
    ) -> DeviceInfo {
        DeviceInfo {
            backend,
            index,
            name: name.to_string(),
            vendor: "test".to_string(),
            device_type,
            memory_bytes: memory_gib * GIB,
            compute_units,
        }
    }

    fn pocl(index: usize) -> DeviceInfo {
        let name = "cpu-skylake-avx512-Intel(R) Xeon(R) Processor";
        dev(BackendKind::OpenCl, index, name, DeviceType::Cpu, 16, 3)
    }

    fn host_cpu() -> DeviceInfo {
        dev(
            BackendKind::Cpu,
            0,
            "host CPU (rayon)",
            DeviceType::Cpu,
            16,
            125,
        )
    }

    /// Two CUDA GPUs, the weaker one first, each also seen through OpenCL, behind PoCL.
    fn two_cuda() -> Vec<DeviceInfo> {
        use BackendKind::{Cuda, OpenCl};
        use DeviceType::Gpu;
        vec![
            dev(Cuda, 0, "NVIDIA T4", Gpu, 40, 15),
            dev(Cuda, 1, "NVIDIA GPU 141G", Gpu, 132, 139),
            pocl(0),
            dev(OpenCl, 1, "NVIDIA T4", Gpu, 40, 15),
            dev(OpenCl, 2, "NVIDIA GPU 141G", Gpu, 132, 139),
            host_cpu(),
        ]
    }

    /// No CUDA; PoCL first in the OpenCL list, then a GPU.
    fn opencl_gpu_and_pocl() -> Vec<DeviceInfo> {
        let gpu = dev(
            BackendKind::OpenCl,
            1,
            "Intel(R) Arc(TM) A770",
            DeviceType::Gpu,
            32,
            16,
        );
        vec![pocl(0), gpu, host_cpu()]
    }

    /// No GPU at all: PoCL and the host CPU.
    fn cpu_only() -> Vec<DeviceInfo> {
        vec![pocl(0), host_cpu()]
    }

    fn id(d: Option<&DeviceInfo>) -> Option<String> {
        d.map(|d| format!("{}:{}", d.backend, d.index))
    }

    fn chosen(
        devices: &[DeviceInfo],
        backend: Option<BackendKind>,
        filter: Option<DeviceFilter>,
    ) -> Option<String> {
        id(pick(devices, backend, filter.as_ref()))
    }

    fn some(s: &str) -> Option<String> {
        Some(s.to_string())
    }

    #[test]
    fn default_takes_the_strongest_cuda_device() {
        assert_eq!(chosen(&two_cuda(), None, None), some("cuda:1"));
    }

    #[test]
    fn equal_cuda_devices_go_by_memory_then_index() {
        use BackendKind::Cuda;
        use DeviceType::Gpu;
        let more_memory = vec![
            dev(Cuda, 0, "NVIDIA GPU 80G", Gpu, 132, 79),
            dev(Cuda, 1, "NVIDIA GPU 141G", Gpu, 132, 139),
        ];
        assert_eq!(chosen(&more_memory, None, None), some("cuda:1"));
        let twins = vec![
            dev(Cuda, 0, "NVIDIA GPU 141G", Gpu, 132, 139),
            dev(Cuda, 1, "NVIDIA GPU 141G", Gpu, 132, 139),
        ];
        assert_eq!(chosen(&twins, None, None), some("cuda:0"));
    }

    #[test]
    fn default_never_takes_an_opencl_cpu_device() {
        assert_eq!(chosen(&opencl_gpu_and_pocl(), None, None), some("opencl:1"));
        assert_eq!(chosen(&cpu_only(), None, None), some("cpu:0"));
    }

    #[test]
    fn bare_index_never_takes_an_opencl_cpu_device() {
        let index = |i| Some(DeviceFilter::Index(i));
        assert_eq!(
            chosen(&opencl_gpu_and_pocl(), None, index(0)),
            some("cpu:0")
        );
        assert_eq!(
            chosen(&opencl_gpu_and_pocl(), None, index(1)),
            some("opencl:1")
        );
        assert_eq!(chosen(&cpu_only(), None, index(0)), some("cpu:0"));
        assert_eq!(chosen(&cpu_only(), None, index(1)), None);
    }

    #[test]
    fn bare_index_goes_cuda_then_opencl_gpus() {
        let index = |i| Some(DeviceFilter::Index(i));
        assert_eq!(chosen(&two_cuda(), None, index(0)), some("cuda:0"));
        assert_eq!(chosen(&two_cuda(), None, index(1)), some("cuda:1"));
        assert_eq!(chosen(&two_cuda(), None, index(2)), some("opencl:2"));
        assert_eq!(chosen(&two_cuda(), None, index(3)), None);
    }

    #[test]
    fn opencl_cpu_devices_when_asked_for() {
        let opencl = Some(BackendKind::OpenCl);
        let index0 = Some(DeviceFilter::Index(0));
        // The backend and an index name it.
        assert_eq!(
            chosen(&two_cuda(), opencl, index0.clone()),
            some("opencl:0")
        );
        assert_eq!(
            chosen(&opencl_gpu_and_pocl(), opencl, index0),
            some("opencl:0")
        );
        // The backend alone: a GPU first, PoCL where there is none.
        assert_eq!(
            chosen(&opencl_gpu_and_pocl(), opencl, None),
            some("opencl:1")
        );
        assert_eq!(chosen(&cpu_only(), opencl, None), some("opencl:0"));
        // A name that only PoCL has.
        let skylake = Some(DeviceFilter::parse("Skylake"));
        assert_eq!(chosen(&two_cuda(), None, skylake), some("opencl:0"));
    }

    #[test]
    fn a_name_takes_the_first_match_in_the_default_order() {
        let name = |s: &str| Some(DeviceFilter::parse(s));
        // Both CUDA devices match: the stronger one; CUDA before OpenCL.
        assert_eq!(chosen(&two_cuda(), None, name("nvidia")), some("cuda:1"));
        assert_eq!(chosen(&two_cuda(), None, name("t4")), some("cuda:0"));
        // "cpu" matches PoCL and the host CPU: the host CPU comes first.
        assert_eq!(chosen(&cpu_only(), None, name("cpu")), some("cpu:0"));
        // Within a backend.
        let opencl = Some(BackendKind::OpenCl);
        assert_eq!(
            chosen(&two_cuda(), opencl, name("nvidia")),
            some("opencl:2")
        );
        assert_eq!(chosen(&two_cuda(), opencl, name("cpu")), some("opencl:0"));
        assert_eq!(
            chosen(&two_cuda(), Some(BackendKind::Cuda), name("cpu")),
            None
        );
    }

    #[test]
    fn backend_alone_takes_its_strongest_device() {
        assert_eq!(
            chosen(&two_cuda(), Some(BackendKind::Cuda), None),
            some("cuda:1")
        );
        assert_eq!(
            chosen(&two_cuda(), Some(BackendKind::OpenCl), None),
            some("opencl:2")
        );
        assert_eq!(
            chosen(&two_cuda(), Some(BackendKind::Cpu), None),
            some("cpu:0")
        );
        assert_eq!(chosen(&cpu_only(), Some(BackendKind::Cuda), None), None);
    }
}
