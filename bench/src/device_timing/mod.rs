//! Device-resident timing of our sorts through the library's public device-buffer calls
//! (`CudaBackend::sort_device*`, `OpenClBackend::sort_device*`), with this crate's own
//! events: the library holds no benchmark code.
//!
//! Every call uploads the words once, then `warmup + runs` times restores the unsorted words
//! on the device (untimed) and sorts them, timing only the sort. On return the slices hold
//! the sorted result, so the caller can check it.

#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "cuda")]
mod cuda_bits;
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
    let shape = sort_shape(keys.len(), row_len, warmup, runs)?;
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
/// `row_len` in `order`) of `keys` on `sorter`'s device (`CudaBackend::top_k_device_rows` or
/// `OpenClBackend::top_k_device_rows`), after `warmup` untimed ones, and the last one's
/// values and indices; `None` for a backend without device buffers (the CPU).
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
    #[cfg(feature = "cuda")]
    if let Some(cuda) = sorter.cuda() {
        let shape = top_k_shape(keys.len(), row_len, warmup, runs);
        return Some(shape.and_then(|shape| {
            cuda::time_top_k(cuda, keys, (row_len, k, order), shape, cuda_options)
        }));
    }
    let _ = cuda_options;
    time_top_k_opencl(sorter, keys, row_len, k, order, warmup, runs)
}

/// [`time_top_k`] on OpenCL devices only, for keys the CUDA timing does not take (16-bit
/// keys: the library's CUDA backend keeps none in device memory); `None` on other backends.
pub fn time_top_k_opencl<K: WordKey>(
    sorter: &Sorter,
    keys: &[K],
    row_len: usize,
    k: usize,
    order: bitonic::Order,
    warmup: usize,
    runs: usize,
) -> Option<Result<TopKTimes<K>, String>> {
    #[cfg(feature = "opencl")]
    if let Some(cl) = sorter.opencl() {
        let shape = top_k_shape(keys.len(), row_len, warmup, runs);
        return Some(
            shape.and_then(|shape| opencl::time_top_k(cl, keys, (row_len, k, order), shape)),
        );
    }
    let _ = (sorter, keys, row_len, k, order, warmup, runs);
    None
}

/// [`time_sort_keys`] of 16-bit keys (`half::bf16`, `half::f16`): on CUDA through the
/// `*_bits` calls (`cust` copies no `half` types), on OpenCL through the generic ones; `None`
/// on the CPU.
pub fn time_sort_sixteen<K: WordKey + bytemuck::Pod>(
    sorter: &Sorter,
    keys: &mut [K],
    row_len: usize,
    warmup: usize,
    runs: usize,
    cuda_options: CudaOptions,
) -> Option<Result<Vec<f64>, String>> {
    #[cfg(feature = "cuda")]
    if let Some(cuda) = sorter.cuda() {
        let shape = sort_shape(keys.len(), row_len, warmup, runs);
        return Some(shape.and_then(|shape| cuda_bits::time(cuda, keys, shape, cuda_options)));
    }
    let _ = cuda_options;
    time_sort_keys_opencl(sorter, keys, row_len, warmup, runs)
}

/// [`time_top_k`] of 16-bit keys (see [`time_sort_sixteen`]).
#[allow(clippy::too_many_arguments)]
pub fn time_top_k_sixteen<K: WordKey + bytemuck::Pod>(
    sorter: &Sorter,
    keys: &[K],
    row_len: usize,
    k: usize,
    order: bitonic::Order,
    warmup: usize,
    runs: usize,
    cuda_options: CudaOptions,
) -> Option<Result<TopKTimes<K>, String>> {
    #[cfg(feature = "cuda")]
    if let Some(cuda) = sorter.cuda() {
        let shape = top_k_shape(keys.len(), row_len, warmup, runs);
        return Some(shape.and_then(|shape| {
            cuda_bits::time_top_k(cuda, keys, (row_len, k, order), shape, cuda_options)
        }));
    }
    let _ = cuda_options;
    time_top_k_opencl(sorter, keys, row_len, k, order, warmup, runs)
}

/// [`time_sort_keys`] on OpenCL devices only (see [`time_top_k_opencl`]); `None` on other
/// backends.
pub fn time_sort_keys_opencl<K: WordKey>(
    sorter: &Sorter,
    keys: &mut [K],
    row_len: usize,
    warmup: usize,
    runs: usize,
) -> Option<Result<Vec<f64>, String>> {
    #[cfg(feature = "opencl")]
    if let Some(cl) = sorter.opencl() {
        let shape = sort_shape(keys.len(), row_len, warmup, runs);
        return Some(shape.and_then(|shape| opencl::time(cl, keys, None, shape)));
    }
    let _ = (sorter, keys, row_len, warmup, runs);
    None
}

/// The shape of a timed sort of `n` keys (`row_len` 0: one array), or why there is nothing
/// to time.
fn sort_shape(n: usize, row_len: usize, warmup: usize, runs: usize) -> Result<Shape, String> {
    if n == 0 || runs == 0 {
        return Err("device-resident timing needs at least one key and one run".into());
    }
    if row_len > 0 && !n.is_multiple_of(row_len) {
        return Err(format!("{n} keys are not rows of {row_len}"));
    }
    Ok(Shape {
        row_len,
        warmup,
        runs,
    })
}

/// The shape of a timed top-k, or why there is nothing to time.
#[cfg(any(feature = "cuda", feature = "opencl"))]
fn top_k_shape(n: usize, row_len: usize, warmup: usize, runs: usize) -> Result<Shape, String> {
    if n == 0 || runs == 0 || row_len == 0 || !n.is_multiple_of(row_len) {
        return Err(format!(
            "{n} keys, rows of {row_len}, {runs} runs: nothing to time"
        ));
    }
    Ok(Shape {
        row_len,
        warmup,
        runs,
    })
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
