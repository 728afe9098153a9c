//! The device-resident calls on `cudarc` 0.19's buffers and streams (feature `cudarc`): safe
//! counterparts of the raw-handle calls in `device_raw.rs`, for the memory that candle,
//! mistral.rs and burn's CUDA runtime hold. A `CudaSlice<K>` or a view of one (`CudaView`,
//! `CudaViewMut`) gives its address and length, and cudarc's stream its handle; the checks and
//! launches are the raw calls'. Memory of another context, host memory or a stream of
//! another context is [`Error::ForeignBuffer`](crate::Error::ForeignBuffer) and nothing is
//! enqueued; lengths that disagree are refused before anything is enqueued.
//!
//! Each call takes the addresses as cudarc asks its users to: through `device_ptr` (keys
//! only read) or `device_ptr_mut` (written), which make `stream` wait for the buffer's
//! earlier work on other streams where cudarc tracks it, and whose guards, dropped after the
//! enqueue, record this work for the buffer's later users. So the calls are as safe as
//! cudarc's own launches, and never synchronize the host.

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

use super::CudaBackend;
use super::device_resident::DeviceWords;
use crate::error::Result;
use crate::keys::{KeyEncoding, Order, WordKey};

/// `cudarc`'s stream handle as the driver bindings of `cust` name it (both are the
/// driver's `CUstream`).
fn handle(stream: &CudaStream) -> cust::sys::CUstream {
    stream.cu_stream().cast()
}

impl CudaBackend {
    /// Sorts `keys` in place on `stream`: [`CudaBackend::sort_device`] on a cudarc
    /// `CudaSlice<K>` or `CudaViewMut<K>`, for keys of the [`WordKey`] types.
    ///
    /// ```no_run
    /// let sorter = bitonic::Sorter::builder().backend(bitonic::BackendKind::Cuda).build()?;
    /// let cuda = sorter.cuda().expect("a CUDA sorter");
    /// let context = cudarc::driver::CudaContext::new(0).unwrap();
    /// let stream = context.default_stream();
    /// let mut keys = stream.clone_htod(&[3.0f32, -1.0, 2.0]).unwrap();
    /// cuda.sort_device_cudarc(&mut keys, bitonic::Order::Ascending, &stream)?;
    /// assert_eq!(stream.clone_dtoh(&keys).unwrap(), [-1.0, 2.0, 3.0]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn sort_device_cudarc<K: WordKey>(
        &self,
        keys: &mut impl DevicePtrMut<K>,
        order: Order,
        stream: &CudaStream,
    ) -> Result<()> {
        let row_len = keys.len().max(1);
        self.sort_device_rows_cudarc(keys, row_len, order, stream)
    }

    /// [`CudaBackend::sort_device_cudarc`] that moves `values` (4 or 8 bytes each, as many as
    /// the keys) with their keys.
    pub fn sort_device_by_key_cudarc<K: WordKey, V>(
        &self,
        keys: &mut impl DevicePtrMut<K>,
        values: &mut impl DevicePtrMut<V>,
        order: Order,
        stream: &CudaStream,
    ) -> Result<()> {
        let row_len = keys.len().max(1);
        self.sort_device_rows_by_key_cudarc(keys, values, row_len, order, stream)
    }

    /// Sorts each row of `row_len` keys of `keys` on its own, in place on `stream`;
    /// `keys.len()` must be a multiple of `row_len`.
    pub fn sort_device_rows_cudarc<K: WordKey>(
        &self,
        keys: &mut impl DevicePtrMut<K>,
        row_len: usize,
        order: Order,
        stream: &CudaStream,
    ) -> Result<()> {
        let len = keys.len();
        let (keys, _written) = keys.device_ptr_mut(stream);
        self.sort_device_words(
            DeviceWords::new::<K>(keys, len),
            None,
            KeyEncoding::of::<K>(order),
            row_len,
            handle(stream),
        )
    }

    /// [`CudaBackend::sort_device_rows_cudarc`] with `values` (the keys' shape, 4 or 8 bytes
    /// each) moving with the keys.
    pub fn sort_device_rows_by_key_cudarc<K: WordKey, V>(
        &self,
        keys: &mut impl DevicePtrMut<K>,
        values: &mut impl DevicePtrMut<V>,
        row_len: usize,
        order: Order,
        stream: &CudaStream,
    ) -> Result<()> {
        let (len, value_len) = (keys.len(), values.len());
        let (keys, _keys_written) = keys.device_ptr_mut(stream);
        let (values, _values_written) = values.device_ptr_mut(stream);
        self.sort_device_words(
            DeviceWords::new::<K>(keys, len),
            Some(DeviceWords::new::<V>(values, value_len)),
            KeyEncoding::of::<K>(order),
            row_len,
            handle(stream),
        )
    }

    /// [`CudaBackend::top_k_device_rows`] on cudarc buffers: of each row of `row_len` keys,
    /// the `k` best into `values` and their positions into `indices`, `keys.len() / row_len *
    /// k` of each; `keys` is only read. The temporary buffers come from the device's
    /// stream-ordered pool on `stream`.
    #[allow(clippy::too_many_arguments)]
    pub fn top_k_device_rows_cudarc<K: WordKey>(
        &self,
        keys: &impl DevicePtr<K>,
        row_len: usize,
        k: usize,
        order: Order,
        values: &mut impl DevicePtrMut<K>,
        indices: &mut impl DevicePtrMut<u32>,
        stream: &CudaStream,
    ) -> Result<()> {
        let lens = (keys.len(), values.len(), indices.len());
        let (keys, _keys_read) = keys.device_ptr(stream);
        let (values, _values_written) = values.device_ptr_mut(stream);
        let (indices, _indices_written) = indices.device_ptr_mut(stream);
        self.top_k_device_words(
            DeviceWords::new::<K>(keys, lens.0),
            KeyEncoding::of::<K>(order),
            row_len,
            k,
            DeviceWords::new::<K>(values, lens.1),
            DeviceWords::new::<u32>(indices, lens.2),
            handle(stream),
        )
    }

    /// [`CudaBackend::argsort_device`] on cudarc buffers: the stable permutation of `keys`
    /// (only read) into `indices`, as many.
    pub fn argsort_device_cudarc<K: WordKey>(
        &self,
        keys: &impl DevicePtr<K>,
        order: Order,
        indices: &mut impl DevicePtrMut<u32>,
        stream: &CudaStream,
    ) -> Result<()> {
        let row_len = keys.len().max(1);
        self.argsort_device_rows_cudarc(keys, row_len, order, indices, stream)
    }

    /// [`CudaBackend::argsort_device_cudarc`] of each row of `row_len` keys on its own:
    /// `indices` receives each row's positions within the row.
    pub fn argsort_device_rows_cudarc<K: WordKey>(
        &self,
        keys: &impl DevicePtr<K>,
        row_len: usize,
        order: Order,
        indices: &mut impl DevicePtrMut<u32>,
        stream: &CudaStream,
    ) -> Result<()> {
        let lens = (keys.len(), indices.len());
        let (keys, _keys_read) = keys.device_ptr(stream);
        let (indices, _indices_written) = indices.device_ptr_mut(stream);
        self.argsort_device_words(
            DeviceWords::new::<K>(keys, lens.0),
            KeyEncoding::of::<K>(order),
            row_len,
            DeviceWords::new::<u32>(indices, lens.1),
            handle(stream),
        )
    }
}
