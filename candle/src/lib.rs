#![doc = include_str!("../README.md")]

use bitonic::{Order, SortKey, Sorter};
use candle_core::{DType, Device, Layout, Result, Shape, Storage, Tensor, WithDType};
use half::{bf16, f16};

#[cfg(feature = "cuda")]
mod cuda;

/// `$body` with `$keys` bound to the host keys of `$t` in the Rust type of its dtype.
macro_rules! with_keys {
    ($t:expr, $keys:ident => $body:expr) => {{
        let t: &Tensor = $t;
        match t.dtype() {
            DType::U8 => host_keys::<u8, _>(t, |$keys| $body),
            DType::U32 => host_keys::<u32, _>(t, |$keys| $body),
            DType::I16 => host_keys::<i16, _>(t, |$keys| $body),
            DType::I32 => host_keys::<i32, _>(t, |$keys| $body),
            DType::I64 => host_keys::<i64, _>(t, |$keys| $body),
            DType::F16 => host_keys::<f16, _>(t, |$keys| $body),
            DType::BF16 => host_keys::<bf16, _>(t, |$keys| $body),
            DType::F32 => host_keys::<f32, _>(t, |$keys| $body),
            DType::F64 => host_keys::<f64, _>(t, |$keys| $body),
            other => Err(candle_core::Error::Msg(format!(
                "bitonic-candle sorts u8, u32, i16, i32, i64, f16, bf16, f32 and f64 keys, not {other:?}"
            ))),
        }
    }};
}

/// The positions that sort each row along the last dimension of `t`, in `order`, stably:
/// entry `[.., i]` is the position within its row of the row's `i`-th key. A `u32` tensor
/// of `t`'s shape, on `t`'s device, as candle's `arg_sort_last_dim`.
pub fn argsort(sorter: &Sorter, t: &Tensor, order: Order) -> Result<Tensor> {
    let rows = Rows::of(t)?;
    if rows.count == 0 {
        return Tensor::zeros(t.shape(), DType::U32, t.device());
    }
    #[cfg(feature = "cuda")]
    if let Some(cuda) = cuda::backend_for(sorter, t)? {
        return cuda::argsort(cuda, t, &rows, order);
    }
    let indices = with_keys!(t, keys => sorter.argsort_rows(keys, rows.len, order))?;
    rows.tensor(indices, rows.len, t.device())
}

/// `t`'s rows along the last dimension sorted in `order`, stably, and the positions each key
/// came from: `(values, indices)`, as candle's `sort_last_dim`.
pub fn sort(sorter: &Sorter, t: &Tensor, order: Order) -> Result<(Tensor, Tensor)> {
    let indices = argsort(sorter, t, order)?;
    let values = t.contiguous()?.gather(&indices, candle_core::D::Minus1)?;
    Ok((values, indices))
}

/// The `k` first keys of each row along the last dimension of `t` in `order`, and their
/// positions in the row: `(values, indices)`, of `t`'s shape with `k` for its last dimension.
/// Equal keys come in their input order, as in [`argsort`]; `k` may be at most the row's
/// length.
pub fn top_k(sorter: &Sorter, t: &Tensor, k: usize, order: Order) -> Result<(Tensor, Tensor)> {
    let rows = Rows::of(t)?;
    if k > rows.len {
        candle_core::bail!("top_k: k = {k} past the last dimension's {}", rows.len);
    }
    if k == 0 || rows.count == 0 {
        let shape = rows.with_last(k);
        let values = Tensor::zeros(shape.clone(), t.dtype(), t.device())?;
        let indices = Tensor::zeros(shape, DType::U32, t.device())?;
        return Ok((values, indices));
    }
    #[cfg(feature = "cuda")]
    if let Some(cuda) = cuda::backend_for(sorter, t)? {
        return cuda::top_k(cuda, t, &rows, k, order);
    }
    let indices = with_keys!(t, keys => {
        sorter.top_k_rows(keys, rows.len, k, order).map(|top| top.indices)
    })?;
    let indices = rows.tensor(indices, k, t.device())?;
    let values = t.contiguous()?.gather(&indices, candle_core::D::Minus1)?;
    Ok((values, indices))
}

/// The rows of a tensor along its last dimension.
struct Rows {
    /// The tensor's shape.
    shape: Shape,
    /// Keys a row: the last dimension.
    len: usize,
    /// Rows: every other dimension's product.
    count: usize,
}

impl Rows {
    /// The rows of `t`; a tensor without dimensions has none to sort along.
    fn of(t: &Tensor) -> Result<Rows> {
        let Some(&len) = t.dims().last() else {
            candle_core::bail!("a tensor without dimensions has no last one to sort along");
        };
        let count = t.elem_count().checked_div(len).unwrap_or(0);
        Ok(Rows {
            shape: t.shape().clone(),
            len,
            count,
        })
    }

    /// The shape with `last` for the last dimension.
    fn with_last(&self, last: usize) -> Shape {
        let mut dims = self.shape.dims().to_vec();
        if let Some(d) = dims.last_mut() {
            *d = last;
        }
        Shape::from(dims)
    }

    /// `indices`, `last` a row, as a `u32` tensor of the rows' shape on `device`.
    fn tensor(&self, indices: Vec<u32>, last: usize, device: &Device) -> Result<Tensor> {
        Tensor::from_vec(indices, self.with_last(last), &Device::Cpu)?.to_device(device)
    }
}

/// Runs `f` on the contiguous host keys of `t` (copied to the host first where `t` lives on
/// another device), as a slice of the Rust type of its dtype; a sorter's error becomes a
/// candle error.
fn host_keys<T: WithDType + SortKey, R>(
    t: &Tensor,
    f: impl FnOnce(&[T]) -> bitonic::Result<R>,
) -> Result<R> {
    let t = if t.device().is_cpu() {
        t.contiguous()?
    } else {
        t.to_device(&Device::Cpu)?.contiguous()?
    };
    let (storage, layout): (_, &Layout) = t.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        candle_core::bail!("a tensor copied to the host is not in host memory");
    };
    let Some((from, to)) = layout.contiguous_offsets() else {
        candle_core::bail!("a contiguous tensor without contiguous offsets");
    };
    let keys = &cpu.as_slice::<T>()?[from..to];
    f(keys).map_err(candle_core::Error::wrap)
}
