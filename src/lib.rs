//! # bitonic
//!
//! Sorting on GPUs with bitonic sorting networks: CUDA (cargo feature `cuda`), OpenCL (feature
//! `opencl`, on by default) and a CPU path that is always present. The device is chosen at
//! run time from what is found; see [`Sorter`] and [`devices`].
//!
//! ```
//! let sorter = bitonic::Sorter::new()?;
//! let mut keys = vec![5u32, 1, 4, 2, 3];
//! let mut values = vec![50u32, 10, 40, 20, 30];
//! sorter.sort_by_key(&mut keys, &mut values)?;
//! assert_eq!(keys, [1, 2, 3, 4, 5]);
//! assert_eq!(values, [10, 20, 30, 40, 50]);
//! # Ok::<(), bitonic::Error>(())
//! ```
//!
//! The architecture: [`schedule`] computes the list of passes for a length (a pure function of
//! `n` and the device's tile size); [`keys`] maps key types to ordered bits; each backend
//! module ([`cpu`], `cuda`, `opencl`) executes the passes and is the only place that touches
//! its driver API.

#![warn(missing_docs)]

mod argsort;
pub mod backend;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod error;
/// Test-only fault injection (cargo feature `fault-injection`); see `tests/faults.rs`.
#[cfg(feature = "fault-injection")]
#[doc(hidden)]
pub mod fault;
#[cfg(not(feature = "fault-injection"))]
mod fault;
#[cfg(any(feature = "cuda", feature = "opencl"))]
mod host_transfer;
mod turns;
// Without a GPU backend only the key encodings are used.
#[cfg(any(feature = "cuda", feature = "opencl"))]
mod kept;
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
mod kernel_contract;
pub mod keys;
#[cfg(feature = "opencl")]
pub mod opencl;
pub mod pinned;
pub mod schedule;
mod select;
mod sorter;

pub use backend::{Backend, BackendDevices, BackendKind, DeviceInfo, DeviceType};
pub use error::{Error, Result};
pub use keys::{KeyEncoding, KeyKind, NarrowKeys, Order, SortKey, WordKey, WordsMut};
pub use pinned::PinnedBuffer;
pub use select::{DeviceFilter, ENV_BACKEND, ENV_DEVICE, devices};
pub use sorter::{DEFAULT_HOST_BELOW, Sorter, SorterBuilder, TIED_PAIRS_DEVICE_FRACTION};

/// The README's examples, compiled and run as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
