//! What describes a device: its backend, type and capacity, as found at run time. It
//! depends on nothing else in the crate, so that errors, backends and device selection can
//! all name it.

use std::fmt;

/// Which driver API runs the sort.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BackendKind {
    /// NVIDIA CUDA through `cust` (cargo feature `cuda`).
    Cuda,
    /// OpenCL through `opencl3` (cargo feature `opencl`).
    OpenCl,
    /// The host CPU through rayon (always present).
    Cpu,
}

impl BackendKind {
    /// Every backend, in the order of preference.
    pub const ALL: [BackendKind; 3] = [BackendKind::Cuda, BackendKind::OpenCl, BackendKind::Cpu];

    /// The name used by `BITONIC_BACKEND` and in messages: `cuda`, `opencl`, `cpu`.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cuda => "cuda",
            BackendKind::OpenCl => "opencl",
            BackendKind::Cpu => "cpu",
        }
    }

    /// The cargo feature that compiles the backend in (the CPU backend needs none).
    pub fn feature(self) -> &'static str {
        match self {
            BackendKind::Cuda => "cuda",
            BackendKind::OpenCl => "opencl",
            BackendKind::Cpu => "(none)",
        }
    }

    /// Whether this build includes the backend.
    pub fn is_compiled(self) -> bool {
        match self {
            BackendKind::Cuda => cfg!(feature = "cuda"),
            BackendKind::OpenCl => cfg!(feature = "opencl"),
            BackendKind::Cpu => true,
        }
    }

    /// Parses `cuda`, `opencl` or `cpu` (any case).
    pub fn parse(s: &str) -> Option<BackendKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cuda" => Some(BackendKind::Cuda),
            "opencl" | "ocl" | "cl" => Some(BackendKind::OpenCl),
            "cpu" | "host" => Some(BackendKind::Cpu),
            _ => None,
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The broad class of a device, as its driver reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceType {
    /// A graphics processor.
    Gpu,
    /// A CPU (the host, or an OpenCL CPU device such as PoCL).
    Cpu,
    /// Anything else (accelerators, custom devices).
    Other,
}

/// What a device is, as found at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The backend that drives it.
    pub backend: BackendKind,
    /// Its position in that backend's list (the number `BITONIC_DEVICE` takes).
    pub index: usize,
    /// The device's name.
    pub name: String,
    /// The vendor's name.
    pub vendor: String,
    /// GPU, CPU or other.
    pub device_type: DeviceType,
    /// Global memory in bytes (host memory for the CPU backend).
    pub memory_bytes: u64,
    /// Compute units (multiprocessors, or CPU threads).
    pub compute_units: u32,
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{} {} ({}, {:?}, {} compute units, {:.1} GiB)",
            self.backend,
            self.index,
            self.name,
            self.vendor,
            self.device_type,
            self.compute_units,
            self.memory_bytes as f64 / (1u64 << 30) as f64
        )
    }
}

/// The devices one backend found, or why it could not start.
#[derive(Clone, Debug)]
pub struct BackendDevices {
    /// The backend.
    pub backend: BackendKind,
    /// Its devices (empty when it could not start).
    pub devices: Vec<DeviceInfo>,
    /// Why the backend is unavailable, when it is.
    pub unavailable: Option<String>,
}
