//! The device path: tensors on a candle CUDA device sorted where they are, on candle's own
//! stream, by the sorter's CUDA backend ([`bitonic::cuda::CudaBackend`]'s calls on cudarc buffers).
//!
//! Each call is a [`CustomOp1`] applied to the contiguous tensor: its `cuda_fwd` allocates the
//! outputs on the tensor's device and enqueues the sort on the device's stream, after the
//! work that wrote the keys. Nothing waits for the GPU: the results are tensors whose work is
//! still queued, as with candle's own ops.

use std::cell::Cell;

use bitonic::cuda::CudaBackend;
use bitonic::{Order, Sorter, WordKey};
use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::DeviceRepr;
use candle_core::cuda_backend::{CudaDType, CudaStorage};
use candle_core::op::BackpropOp;
use candle_core::{
    CpuStorage, CustomOp1, DType, DeviceLocation, Layout, Result, Shape, Storage, Tensor,
};
use half::{bf16, f16};

use crate::Rows;

/// The CUDA backend that sorts `t` where it lies: `None` where `t` is not on a CUDA device or
/// the sorter has no CUDA backend (the host path serves both). A sorter on another GPU than
/// `t`'s is an error: its kernels cannot reach the tensor's memory.
pub(crate) fn backend_for<'s>(sorter: &'s Sorter, t: &Tensor) -> Result<Option<&'s CudaBackend>> {
    let DeviceLocation::Cuda { gpu_id } = t.device().location() else {
        return Ok(None);
    };
    let Some(cuda) = sorter.cuda() else {
        return Ok(None);
    };
    // `devices()` starts with the backend that `cuda()` returns; its index is the CUDA
    // ordinal, candle's `gpu_id`.
    if let Some(device) = sorter.devices().first()
        && device.index != gpu_id
    {
        candle_core::bail!(
            "bitonic-candle: the tensor is on CUDA device {gpu_id} but the sorter runs on CUDA \
             device {} ({}); sort it with a sorter opened on the tensor's GPU \
             (SorterBuilder::device_index({gpu_id}))",
            device.index,
            device.name
        );
    }
    Ok(Some(cuda))
}

/// [`crate::argsort`] on the device: a `u32` tensor of `t`'s shape on `t`'s device.
pub(crate) fn argsort(cuda: &CudaBackend, t: &Tensor, rows: &Rows, order: Order) -> Result<Tensor> {
    let op = DeviceSort {
        cuda,
        row_len: rows.len,
        order,
        top_k: None,
    };
    keys_on_device(t)?.apply_op1_no_bwd(&op)
}

/// [`crate::top_k`] on the device, for `0 < k <= rows.len`: `(values, indices)` on `t`'s
/// device.
pub(crate) fn top_k(
    cuda: &CudaBackend,
    t: &Tensor,
    rows: &Rows,
    k: usize,
    order: Order,
) -> Result<(Tensor, Tensor)> {
    let op = DeviceSort {
        cuda,
        row_len: rows.len,
        order,
        top_k: Some(TopK {
            k,
            values: Cell::new(None),
        }),
    };
    let indices = keys_on_device(t)?.apply_op1_no_bwd(&op)?;
    let Some(values) = op.top_k.and_then(|top| top.values.take()) else {
        candle_core::bail!("bitonic-candle: the device top-k left no values");
    };
    let values = Tensor::from_storage(
        Storage::Cuda(values),
        rows.with_last(k),
        BackpropOp::none(),
        false,
    );
    // `u8` keys were widened to `u32` (below); their values go back to `u8`.
    let values = if values.dtype() == t.dtype() {
        values
    } else {
        values.to_dtype(t.dtype())?
    };
    Ok((values, indices))
}

/// `t` contiguous, with `u8` keys widened to `u32` on the device: bitonic sorts words of 2, 4
/// and 8 bytes, and the widening keeps their order, so the positions are the same.
fn keys_on_device(t: &Tensor) -> Result<Tensor> {
    let t = if t.dtype() == DType::U8 {
        t.to_dtype(DType::U32)?
    } else {
        t.clone()
    };
    t.contiguous()
}

/// A sort of a contiguous tensor's rows along its last dimension on its CUDA device: its
/// output is the `u32` positions (all of them, or the `k` best of each row).
struct DeviceSort<'a> {
    cuda: &'a CudaBackend,
    /// Keys a row: the last dimension.
    row_len: usize,
    order: Order,
    /// Whether only the `k` best of each row are kept.
    top_k: Option<TopK>,
}

/// The top-k's second output: candle's custom ops return one storage, so the values are left
/// here for [`top_k`] to take.
struct TopK {
    k: usize,
    values: Cell<Option<CudaStorage>>,
}

impl CustomOp1 for DeviceSort<'_> {
    fn name(&self) -> &'static str {
        match self.top_k {
            None => "bitonic-argsort",
            Some(_) => "bitonic-top-k",
        }
    }

    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout) -> Result<(CpuStorage, Shape)> {
        // Host tensors never reach this op: `argsort` and `top_k` sort them through the
        // sorter's host-slice calls.
        candle_core::bail!(
            "{}: bitonic-candle's device sort runs on CUDA tensors only; host tensors take the \
             host path",
            self.name()
        )
    }

    fn cuda_fwd(&self, storage: &CudaStorage, layout: &Layout) -> Result<(CudaStorage, Shape)> {
        match storage.dtype() {
            DType::U32 => self.run::<u32>(storage, layout),
            DType::I16 => self.run::<i16>(storage, layout),
            DType::I32 => self.run::<i32>(storage, layout),
            DType::I64 => self.run::<i64>(storage, layout),
            DType::F16 => self.run::<f16>(storage, layout),
            DType::BF16 => self.run::<bf16>(storage, layout),
            DType::F32 => self.run::<f32>(storage, layout),
            DType::F64 => self.run::<f64>(storage, layout),
            other => candle_core::bail!(
                "{}: bitonic-candle sorts u8, u32, i16, i32, i64, f16, bf16, f32 and f64 keys on \
                 the device, not {other:?}",
                self.name()
            ),
        }
    }
}

impl DeviceSort<'_> {
    /// Enqueues the sort of the keys of type `K` that `layout` places in `storage`, on the
    /// device's stream, into new device memory.
    fn run<K: WordKey + CudaDType + DeviceRepr>(
        &self,
        storage: &CudaStorage,
        layout: &Layout,
    ) -> Result<(CudaStorage, Shape)> {
        let Some((from, to)) = layout.contiguous_offsets() else {
            candle_core::bail!("{}: the keys are not contiguous", self.name());
        };
        let shape = layout.shape();
        let len = to - from;
        if self.row_len == 0 || len % self.row_len != 0 || len != shape.elem_count() {
            candle_core::bail!(
                "{}: {len} keys do not make rows of {} of shape {shape:?}",
                self.name(),
                self.row_len
            );
        }
        let device = &storage.device;
        let stream = device.cuda_stream();
        let Some(keys) = storage.as_cuda_slice::<K>()?.try_slice(from..to) else {
            candle_core::bail!(
                "{}: keys {from}..{to} past the tensor's storage",
                self.name()
            );
        };
        let out_len = match &self.top_k {
            None => len,
            Some(top) => len / self.row_len * top.k,
        };
        // SAFETY: the sort writes every one of the `out_len` positions before any work that
        // reads them (on this stream, or on another after cudarc's events) runs.
        let mut indices = unsafe { device.alloc::<u32>(out_len)? };
        // bitonic's cudarc calls make the stream wait for the keys' last writes and record
        // their own work for the buffers' later users, as candle's kernels do.
        let enqueued = match &self.top_k {
            None => self.cuda.argsort_device_rows_cudarc(
                &keys,
                self.row_len,
                self.order,
                &mut indices,
                &stream,
            ),
            Some(top) => {
                // SAFETY: as for `indices`: the top-k writes each of the `out_len` values.
                let mut values = unsafe { device.alloc::<K>(out_len)? };
                let enqueued = self.cuda.top_k_device_rows_cudarc(
                    &keys,
                    self.row_len,
                    top.k,
                    self.order,
                    &mut values,
                    &mut indices,
                    &stream,
                );
                top.values
                    .set(Some(CudaStorage::wrap_cuda_slice(values, device.clone())));
                enqueued
            }
        };
        enqueued.map_err(|e| {
            candle_core::Error::Msg(format!("{}: bitonic's CUDA sort: {e}", self.name()))
        })?;
        let mut dims = shape.dims().to_vec();
        if let (Some(last), Some(top)) = (dims.last_mut(), &self.top_k) {
            *last = top.k;
        }
        Ok((
            CudaStorage::wrap_cuda_slice(indices, device.clone()),
            Shape::from(dims),
        ))
    }
}
