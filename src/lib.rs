//! # bitonic
//!
//! Sorting on GPUs with bitonic sorting networks: CUDA (cargo feature `cuda`), OpenCL (feature
//! `opencl`, on by default) and a CPU path that is always present. The device is chosen at
//! run time from what is found; see [`Sorter`] and [`devices`].
//!
//! ```
//! use bitonic::{Order, Sorter};
//! let sorter = Sorter::new()?;
//! let mut keys = vec![5u32, 1, 4, 2, 3];
//! let mut values = vec![50u32, 10, 40, 20, 30];
//! sorter.sort_by_key(&mut keys, &mut values, Order::Ascending)?;
//! assert_eq!(keys, [1, 2, 3, 4, 5]);
//! assert_eq!(values, [10, 20, 30, 40, 50]);
//! # Ok::<(), bitonic::Error>(())
//! ```
//!
//! Every sort call takes an [`Order`] as its last argument, on host slices ([`Sorter`]) and
//! on buffers already in device memory (`Sorter::cuda` and `Sorter::opencl`) alike.
//!
//! The architecture, top down: the user layer ([`Sorter`] with its argsort, top-k and
//! `arrow` calls); one dispatch step, run once per call: `dispatch` checks the shape and turns
//! typed keys into words, `range_sort` has one device sort them or sorts them in ranges, and
//! `backends` hands each slice to the host CPU or a device; the backends (`cpu`, [`cuda`],
//! [`opencl`]), each the only place that touches its driver API, with what both GPU backends
//! do alike written once in `gpu` and `host_transfer` (the bus); the shared plan
//! (`schedule`: the passes of a sort from its shape and the device's tile size, once for
//! every backend); and at the bottom `shape` (the checks of every call), `keys` (key types
//! as ordered bits) and `error`. Nothing imports a layer above it.
//!
//! Host slices larger than a device's memory, and sorters over several devices
//! ([`SorterBuilder::devices`]), are sorted in ranges found by [`partition`], the public
//! range partitioner that a distributed engine can use too (`docs/scaling.md`).
//!
//! With the cargo feature `arrow`, [`arrow`] sorts arrow-rs arrays as arrow-ord's kernels do.

#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod argsort;
#[cfg(feature = "arrow")]
pub mod arrow;
mod backend;
mod backends;
mod builder;
// Without a GPU backend only the key encodings are used.
#[cfg(any(feature = "cuda", feature = "opencl"))]
mod buffer_cache;
mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod device;
mod device_choice;
mod dispatch;
mod error;
/// Test-only fault injection (cargo feature `fault-injection`); see `tests/faults.rs`.
#[cfg(feature = "fault-injection")]
#[doc(hidden)]
pub mod fault;
#[cfg(not(feature = "fault-injection"))]
mod fault;
#[cfg(any(feature = "cuda", feature = "opencl"))]
mod gpu;
#[cfg(any(feature = "cuda", feature = "opencl"))]
mod host_transfer;
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
mod kernel_contract;
mod keys;
#[cfg(feature = "opencl")]
pub mod opencl;
pub mod partition;
mod pinned;
mod range_sort;
mod rayon_lock;
// Without a GPU backend only the network and its host emulation are used.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
mod schedule;
mod shape;
mod sorter;
#[cfg(any(feature = "cuda", test))]
mod spread_cuts;
mod top_k;

pub use backends::{DEFAULT_HOST_THRESHOLD, DEFAULT_SPLIT_FROM};
pub use builder::SorterBuilder;
pub use device::{BackendDevices, BackendKind, DeviceInfo, DeviceType};
pub use device_choice::{DeviceFilter, ENV_BACKEND, ENV_DEVICE, devices};
pub use error::{Error, Result};
pub use keys::{Order, SortKey, WordKey};
pub use pinned::PinnedBuffer;
pub use sorter::Sorter;
pub use top_k::TopK;

/// What the benchmark crate, the fuzz targets and the integration tests reach inside the
/// library: the schedule and its host emulation, the host sort, and tuned thresholds. Not
/// part of the API: it changes without notice.
#[doc(hidden)]
pub mod internals {
    pub use crate::backend::{Backend, TopKKeys};
    pub use crate::backends::TIED_PAIRS_THRESHOLD_DIVISOR;
    pub use crate::keys::{KeyEncoding, KeyKind, NarrowKeys, Word, WordsMut};
    pub use crate::pinned::PinnedMemory;
    pub use crate::schedule::{
        Pass, Schedule, TileParams, ceil_log2, emulate, global_index, register_network,
        tile_comparator,
    };
}

/// The README's examples, compiled and run as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
