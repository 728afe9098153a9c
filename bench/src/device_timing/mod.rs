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
mod cuda_keys;
#[cfg(feature = "opencl")]
mod opencl;

use bitonic::Sorter;
#[cfg(feature = "cuda")]
use bitonic::cuda::CudaBackend;
use bitonic::internals::WordsMut;
#[cfg(feature = "opencl")]
use bitonic::opencl::OpenClBackend;

/// Keys whose device-resident sorts the timing here can run: with CUDA, those the CUDA
/// timing can hold in device memory.
#[cfg(feature = "cuda")]
pub use cuda_keys::CudaKey as DeviceKey;
/// Keys whose device-resident sorts the timing here can run: the library's OpenCL
/// device-buffer calls take every `WordKey`.
#[cfg(not(feature = "cuda"))]
pub trait DeviceKey: bitonic::WordKey {}
#[cfg(not(feature = "cuda"))]
impl<K: bitonic::WordKey> DeviceKey for K {}

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
    let timed = match keys {
        WordsMut::U32(k) => time_sort_keys(sorter, k, values, row_len, warmup, runs, cuda_options),
        WordsMut::U64(k) => time_sort_keys(sorter, k, values, row_len, warmup, runs, cuda_options),
    };
    timed.unwrap_or_else(|| {
        Err(format!(
            "no device events on {} (device-resident timing needs CUDA or OpenCL)",
            sorter.device().backend
        ))
    })
}

/// [`time_sort`] of keys of any type the timing here takes (`f32`, `bf16`, say): the keys
/// sort in their own order, not as unsigned words; `None` on a backend without device
/// buffers (the CPU).
// Without a GPU backend the checked shape has no timing to go to.
#[cfg_attr(
    not(any(feature = "cuda", feature = "opencl")),
    allow(unused_variables)
)]
pub fn time_sort_keys<K: DeviceKey>(
    sorter: &Sorter,
    keys: &mut [K],
    values: Option<&mut [u32]>,
    row_len: usize,
    warmup: usize,
    runs: usize,
    cuda_options: CudaOptions,
) -> Option<Result<Vec<f64>, String>> {
    let values_len = values.as_ref().map(|v| v.len());
    let shape = match sort_shape(keys.len(), values_len, row_len, warmup, runs) {
        Ok(shape) => shape,
        Err(e) => return Some(Err(e)),
    };
    run_on_backend(
        sorter,
        cuda_options,
        (keys, values),
        #[cfg(feature = "cuda")]
        |cuda, options, (keys, values)| cuda::time(cuda, keys, values, shape, options),
        #[cfg(feature = "opencl")]
        |cl, (keys, values)| opencl::time(cl, keys, values, shape),
    )
}

/// Milliseconds of each timed top-k, and the last one's values and their indices.
pub type TopKTimes<K> = (Vec<f64>, Vec<K>, Vec<u32>);

/// Milliseconds of each of `runs` timed top-k selections (`k` best of every row of
/// `row_len` in `order`) of `keys` on `sorter`'s device (`CudaBackend::top_k_device_rows`,
/// `top_k_device_bits_rows` for 16-bit keys, or `OpenClBackend::top_k_device_rows`), after
/// `warmup` untimed ones, and the last one's values and indices; `None` on a backend
/// without device buffers (the CPU).
#[allow(clippy::too_many_arguments)]
#[cfg_attr(
    not(any(feature = "cuda", feature = "opencl")),
    allow(unused_variables)
)]
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
    let shape = match top_k_shape(keys.len(), row_len, warmup, runs) {
        Ok(shape) => shape,
        Err(e) => return Some(Err(e)),
    };
    let selection = (row_len, k, order);
    run_on_backend(
        sorter,
        cuda_options,
        keys,
        #[cfg(feature = "cuda")]
        |cuda, options, keys| cuda::time_top_k(cuda, keys, selection, shape, options),
        #[cfg(feature = "opencl")]
        |cl, keys| opencl::time_top_k(cl, keys, selection, shape),
    )
}

/// Runs one timing on `sorter`'s device, handing `data` to the backend's own: `on_cuda`
/// (with `cuda_options`) on a CUDA device, `on_opencl` on an OpenCL one; `None` on a backend
/// without device buffers (the CPU). The only place that tells the backends apart.
fn run_on_backend<D, T>(
    sorter: &Sorter,
    cuda_options: CudaOptions,
    data: D,
    #[cfg(feature = "cuda")] on_cuda: impl FnOnce(&CudaBackend, CudaOptions, D) -> Result<T, String>,
    #[cfg(feature = "opencl")] on_opencl: impl FnOnce(&OpenClBackend, D) -> Result<T, String>,
) -> Option<Result<T, String>> {
    #[cfg(feature = "cuda")]
    if let Some(cuda) = sorter.cuda() {
        return Some(on_cuda(cuda, cuda_options, data));
    }
    #[cfg(feature = "opencl")]
    if let Some(cl) = sorter.opencl() {
        return Some(on_opencl(cl, data));
    }
    let _ = (sorter, cuda_options, data);
    None
}

/// The shape of a timed sort of `n` keys (`row_len` 0: one array) and `values_len` values
/// where there are values, or why there is nothing to time.
fn sort_shape(
    n: usize,
    values_len: Option<usize>,
    row_len: usize,
    warmup: usize,
    runs: usize,
) -> Result<Shape, String> {
    if n == 0 || runs == 0 {
        return Err("device-resident timing needs at least one key and one run".into());
    }
    if values_len.is_some_and(|len| len != n) {
        return Err("keys and values differ in length".into());
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
