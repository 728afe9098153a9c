//! CUDA timing of 16-bit keys (`half::bf16`, `half::f16`) through the library's `*_bits`
//! calls: `cust` copies no `half` types, so the keys travel and sort as their `u16` bits,
//! and the kernels read the same 16 bits either way.

use bitonic::cuda::CudaBackend;
use bitonic::internals::Backend;
use bitonic::{Order, WordKey};
use cust::context::{Context, CurrentContext};
use cust::device::Device;
use cust::memory::{CopyDestination, DeviceBuffer};
use cust::stream::{Stream, StreamFlags};

use super::cuda::{restore, time_enqueued};
use super::{CudaOptions, Shape, TopKTimes, on};

/// The bits of 16-bit keys, or an error for keys of another width.
fn bits_of<K: bytemuck::Pod>(keys: &mut [K]) -> Result<&mut [u16], String> {
    if std::mem::size_of::<K>() != 2 {
        return Err(format!(
            "{} is not a 16-bit key type",
            std::any::type_name::<K>()
        ));
    }
    bytemuck::try_cast_slice_mut(keys).map_err(|e| format!("{e:?}"))
}

/// Makes `cuda`'s primary context current for the caller's scope.
fn context_of(cuda: &CudaBackend) -> Result<Context, String> {
    let device = Device::get_device(cuda.device().index as u32).map_err(on("cuDeviceGet"))?;
    Context::new(device).map_err(on("cuDevicePrimaryCtxRetain"))
}

/// Times `CudaBackend::sort_device_bits{,_rows}::<K>` on `keys` (ascending), leaving them
/// sorted; see [`super::time_sort`].
pub(super) fn time<K: WordKey + bytemuck::Pod>(
    cuda: &CudaBackend,
    keys: &mut [K],
    shape: Shape,
    options: CudaOptions,
) -> Result<Vec<f64>, String> {
    let bits = bits_of(keys)?;
    let _context = context_of(cuda)?;
    let pristine = DeviceBuffer::from_slice(bits).map_err(on("cuMemAlloc/cuMemcpyHtoD"))?;
    let mut work = DeviceBuffer::from_slice(bits).map_err(on("cuMemAlloc/cuMemcpyHtoD"))?;
    // The uploads above may still be in flight on the legacy stream.
    CurrentContext::synchronize().map_err(on("cuCtxSynchronize"))?;
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).map_err(on("cuStreamCreate"))?;
    let asc = Order::Ascending;
    let times = time_enqueued(
        &stream,
        shape,
        options,
        &mut work,
        &|w, s| restore(&pristine, w, s),
        &mut |w, s| {
            match shape.row_len {
                0 => cuda.sort_device_bits::<K>(w, asc, s),
                r => cuda.sort_device_bits_rows::<K>(w, r, asc, s),
            }
            .map_err(|e| format!("sort: {e}"))
        },
    )?;
    work.copy_to(bits).map_err(on("cuMemcpyDtoH"))?;
    Ok(times)
}

/// Times `CudaBackend::top_k_device_bits_rows::<K>` on `keys` (rows of `row_len`, the `k`
/// best of each in `order`); see [`super::time_top_k`].
pub(super) fn time_top_k<K: WordKey + bytemuck::Pod>(
    cuda: &CudaBackend,
    keys: &[K],
    (row_len, k, order): (usize, usize, Order),
    shape: Shape,
    options: CudaOptions,
) -> Result<TopKTimes<K>, String> {
    let mut owned = keys.to_vec();
    let bits = bits_of(&mut owned)?;
    let _context = context_of(cuda)?;
    let selected = keys.len() / row_len * k;
    let input = DeviceBuffer::from_slice(bits).map_err(on("cuMemAlloc/cuMemcpyHtoD"))?;
    let mut out = (
        DeviceBuffer::from_slice(&vec![0u16; selected]).map_err(on("cuMemAlloc/cuMemcpyHtoD"))?,
        DeviceBuffer::from_slice(&vec![0u32; selected]).map_err(on("cuMemAlloc/cuMemcpyHtoD"))?,
    );
    CurrentContext::synchronize().map_err(on("cuCtxSynchronize"))?;
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).map_err(on("cuStreamCreate"))?;
    let times = time_enqueued(
        &stream,
        shape,
        options,
        &mut out,
        &|_, _| Ok(()),
        &mut |(values, indices), s| {
            cuda.top_k_device_bits_rows::<K>(&input, row_len, k, order, values, indices, s)
                .map_err(|e| format!("top-k: {e}"))
        },
    )?;
    let mut value_bits = vec![0u16; selected];
    let mut indices = vec![0u32; selected];
    out.0
        .copy_to(&mut value_bits[..])
        .map_err(on("cuMemcpyDtoH"))?;
    out.1
        .copy_to(&mut indices[..])
        .map_err(on("cuMemcpyDtoH"))?;
    let values = value_bits
        .iter()
        .map(|&b| bytemuck::cast::<u16, K>(b))
        .collect();
    Ok((times, values, indices))
}
