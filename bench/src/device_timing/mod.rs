//! Device-resident timing of our sorts through the library's public device-buffer calls
//! (`CudaBackend::sort_device*`, `OpenClBackend::sort_device*`), with this crate's own
//! events: the library holds no benchmark code.
//!
//! Every call uploads the words once, then `warmup + runs` times restores the unsorted words
//! on the device (untimed) and sorts them, timing only the sort. On return the slices hold
//! the sorted result, so the caller can check it.

#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "opencl")]
mod opencl;

use bitonic::internals::WordsMut;
use bitonic::{Sorter, WordKey};

/// Keys whose device-resident sorts the timing here can run: the library's device-buffer
/// calls take `WordKey`s, and with CUDA also `cust`'s `DeviceCopy` ones.
#[cfg(feature = "cuda")]
pub trait DeviceKey: WordKey + cust::memory::DeviceCopy {}
#[cfg(feature = "cuda")]
impl<K: WordKey + cust::memory::DeviceCopy> DeviceKey for K {}
/// Keys whose device-resident sorts the timing here can run: the library's device-buffer
/// calls take `WordKey`s.
#[cfg(not(feature = "cuda"))]
pub trait DeviceKey: WordKey {}
#[cfg(not(feature = "cuda"))]
impl<K: WordKey> DeviceKey for K {}

/// How CUDA sorts are timed.
#[derive(Clone, Copy, Debug)]
pub struct CudaOptions {
    /// Hold the stream with a spinning kernel while the timed work is queued behind it, so
    /// that the events measure the GPU and not the host's launch latency.
    pub hold: bool,
    /// Capture the sort's launches in a CUDA graph once and replay it in the timed runs.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))] // read by the CUDA timing only
    pub graph: bool,
}

impl Default for CudaOptions {
    fn default() -> Self {
        CudaOptions {
            hold: true,
            graph: true,
        }
    }
}

/// Milliseconds of each of `runs` timed sorts of `keys` (with `values`, as many, moving with
/// them; `row_len` 0 sorts the whole array, otherwise each row of `row_len` on its own) on
/// `sorter`'s device, ascending, after `warmup` untimed ones.
pub fn time_sort(
    sorter: &Sorter,
    keys: WordsMut<'_>,
    values: Option<&mut [u32]>,
    row_len: usize,
    warmup: usize,
    runs: usize,
    cuda_options: CudaOptions,
) -> Result<Vec<f64>, String> {
    if keys.is_empty() || runs == 0 {
        return Err("device-resident timing needs at least one key and one run".into());
    }
    if values.as_ref().is_some_and(|v| v.len() != keys.len()) {
        return Err("keys and values differ in length".into());
    }
    if row_len > 0 && !keys.len().is_multiple_of(row_len) {
        return Err(format!("{} keys are not rows of {row_len}", keys.len()));
    }
    let shape = Shape {
        row_len,
        warmup,
        runs,
    };
    #[cfg(feature = "cuda")]
    if let Some(cuda) = sorter.cuda() {
        return match keys {
            WordsMut::U32(k) => cuda::time(cuda, k, values, shape, cuda_options),
            WordsMut::U64(k) => cuda::time(cuda, k, values, shape, cuda_options),
        };
    }
    let _ = (cuda_options, shape);
    #[cfg(feature = "opencl")]
    if let Some(cl) = sorter.opencl() {
        return match keys {
            WordsMut::U32(k) => opencl::time(cl, k, values, shape),
            WordsMut::U64(k) => opencl::time(cl, k, values, shape),
        };
    }
    Err(format!(
        "no device events on {} (device-resident timing needs CUDA or OpenCL)",
        sorter.device().backend
    ))
}

/// [`time_sort`] of keys of any type the device-buffer calls take (`f32`, say), without
/// values: the keys sort in their own order, not as unsigned words.
pub fn time_sort_keys<K: DeviceKey>(
    sorter: &Sorter,
    keys: &mut [K],
    row_len: usize,
    warmup: usize,
    runs: usize,
    cuda_options: CudaOptions,
) -> Result<Vec<f64>, String> {
    if keys.is_empty() || runs == 0 {
        return Err("device-resident timing needs at least one key and one run".into());
    }
    if row_len > 0 && !keys.len().is_multiple_of(row_len) {
        return Err(format!("{} keys are not rows of {row_len}", keys.len()));
    }
    let shape = Shape {
        row_len,
        warmup,
        runs,
    };
    #[cfg(feature = "cuda")]
    if let Some(cuda) = sorter.cuda() {
        return cuda::time(cuda, keys, None, shape, cuda_options);
    }
    let _ = (cuda_options, shape);
    #[cfg(feature = "opencl")]
    if let Some(cl) = sorter.opencl() {
        return opencl::time(cl, keys, None, shape);
    }
    Err(format!(
        "no device events on {} (device-resident timing needs CUDA or OpenCL)",
        sorter.device().backend
    ))
}

/// Milliseconds of each timed top-k, and the last one's values and their indices.
pub type TopKTimes<K> = (Vec<f64>, Vec<K>, Vec<u32>);

/// Milliseconds of each of `runs` timed top-k selections (`k` best of every row of
/// `row_len` in `order`) of `keys` on `sorter`'s CUDA device, after `warmup` untimed ones,
/// and the last one's values and indices; `None` where this build or the device has no
/// device-resident top-k (`CudaBackend::top_k_device_rows`, which the cfg
/// `bitonic_device_top_k` says the library has; the CUDA backend only).
#[allow(clippy::too_many_arguments)]
pub fn time_top_k<K: DeviceKey>(
    sorter: &Sorter,
    keys: &[K],
    row_len: usize,
    k: usize,
    order: bitonic::Order,
    warmup: usize,
    runs: usize,
    cuda_options: CudaOptions,
) -> Option<Result<TopKTimes<K>, String>> {
    let shape = Shape {
        row_len,
        warmup,
        runs,
    };
    #[cfg(all(feature = "cuda", bitonic_device_top_k))]
    if let Some(cuda) = sorter.cuda() {
        if keys.is_empty() || runs == 0 || row_len == 0 || !keys.len().is_multiple_of(row_len) {
            return Some(Err(format!(
                "{} keys, rows of {row_len}, {runs} runs",
                keys.len()
            )));
        }
        return Some(cuda::time_top_k(
            cuda,
            keys,
            (row_len, k, order),
            shape,
            cuda_options,
        ));
    }
    let _ = (sorter, keys, k, order, shape, cuda_options);
    None
}

/// Turns a driver error into the message of a failed `call`.
#[cfg(any(feature = "cuda", feature = "opencl"))]
fn on<E: std::fmt::Display>(call: &'static str) -> impl Fn(E) -> String {
    move |e| format!("{call} failed: {e}")
}

/// What one timing does besides the data.
#[derive(Clone, Copy)]
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
struct Shape {
    row_len: usize,
    warmup: usize,
    runs: usize,
}
