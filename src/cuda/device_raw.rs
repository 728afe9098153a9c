//! The device-resident sorts on raw driver handles: a device address and a length for each
//! array, and a stream handle. They serve memory and streams that other libraries own
//! (`cudarc` buffers and streams, candle's tensors), which `cust`'s types cannot wrap, and
//! every stream kind: a created stream, blocking or not, the legacy default stream (a null
//! handle or [`STREAM_LEGACY`]) and the per-thread default stream ([`STREAM_PER_THREAD`]).
//!
//! They run the same checks and launches as the `cust` calls in `device_resident.rs`: memory
//! of another context, host memory, or a stream of another context is
//! [`Error::ForeignBuffer`](crate::Error::ForeignBuffer) and nothing is enqueued. They only
//! enqueue, and never synchronize the host: wait for the stream before reading the result.

use cust::sys as cu;

use super::CudaBackend;
use super::device_resident::{DeviceWords, PER_THREAD_STREAM};
use crate::error::Result;
use crate::keys::{KeyEncoding, Order, WordKey};

/// The legacy default stream's handle (`CU_STREAM_LEGACY`); a null handle names it too.
pub const STREAM_LEGACY: cu::CUstream = 0x1 as cu::CUstream;

/// The per-thread default stream's handle (`CU_STREAM_PER_THREAD`), candle's stream: each
/// thread that uses it enqueues on a stream of its own.
pub const STREAM_PER_THREAD: cu::CUstream = PER_THREAD_STREAM as cu::CUstream;

impl CudaBackend {
    /// Sorts the `len` keys of type `K` at device address `keys` in place on `stream`.
    ///
    /// ```no_run
    /// use cust::memory::{CopyDestination, DeviceBuffer};
    ///
    /// let sorter = bitonic::Sorter::builder().backend(bitonic::BackendKind::Cuda).build()?;
    /// let cuda = sorter.cuda().expect("a CUDA sorter");
    /// let keys = DeviceBuffer::from_slice(&[3u32, 1, 2]).unwrap();
    /// let stream = bitonic::cuda::STREAM_PER_THREAD;
    /// // SAFETY: `keys` holds 3 `u32` and outlives the sort, which nothing else touches.
    /// unsafe {
    ///     cuda.sort_device_raw::<u32>(keys.as_device_ptr().as_raw(), 3, bitonic::Order::Ascending, stream)?;
    /// }
    /// cust::context::CurrentContext::synchronize().unwrap();
    /// let mut host = [0u32; 3];
    /// keys.copy_to(&mut host[..]).unwrap();
    /// assert_eq!(host, [1, 2, 3]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    ///
    /// # Safety
    /// - `keys` is the address of `len` elements of `K` in device memory that stays
    ///   allocated, and that no other work reads or writes, until the sort's work on
    ///   `stream` has finished.
    /// - `stream` is a live stream (of any context: another context's is refused), a null
    ///   handle, [`STREAM_LEGACY`] or [`STREAM_PER_THREAD`].
    pub unsafe fn sort_device_raw<K: WordKey>(
        &self,
        keys: cu::CUdeviceptr,
        len: usize,
        order: Order,
        stream: cu::CUstream,
    ) -> Result<()> {
        let encoding = KeyEncoding::of::<K>(order);
        self.sort_device_words(
            DeviceWords::new::<K>(keys, len),
            None,
            encoding,
            len.max(1),
            stream,
        )
    }

    /// [`CudaBackend::sort_device_raw`] that moves the `len` values of type `V` (4 or 8
    /// bytes) at `values` with their keys.
    ///
    /// # Safety
    /// As [`CudaBackend::sort_device_raw`], for `keys` and for `values` alike.
    pub unsafe fn sort_device_by_key_raw<K: WordKey, V: Copy>(
        &self,
        keys: cu::CUdeviceptr,
        values: cu::CUdeviceptr,
        len: usize,
        order: Order,
        stream: cu::CUstream,
    ) -> Result<()> {
        let encoding = KeyEncoding::of::<K>(order);
        let values = Some(DeviceWords::new::<V>(values, len));
        self.sort_device_words(
            DeviceWords::new::<K>(keys, len),
            values,
            encoding,
            len.max(1),
            stream,
        )
    }

    /// Sorts each row of `row_len` keys of the `len` at `keys` on its own, in place on
    /// `stream`; `len` must be a multiple of `row_len`.
    ///
    /// # Safety
    /// As [`CudaBackend::sort_device_raw`].
    pub unsafe fn sort_device_rows_raw<K: WordKey>(
        &self,
        keys: cu::CUdeviceptr,
        len: usize,
        row_len: usize,
        order: Order,
        stream: cu::CUstream,
    ) -> Result<()> {
        let encoding = KeyEncoding::of::<K>(order);
        self.sort_device_words(
            DeviceWords::new::<K>(keys, len),
            None,
            encoding,
            row_len,
            stream,
        )
    }

    /// [`CudaBackend::top_k_device_rows`] on raw addresses: of each row of `row_len` keys of
    /// the `len` at `keys`, the `k` best into `values` (keys of type `K`) and their
    /// positions into `indices` (`u32`), `len / row_len * k` of each. Its temporary buffers
    /// come from the stream-ordered pool on `stream`.
    ///
    /// # Safety
    /// As [`CudaBackend::sort_device_raw`], for the three arrays alike; `keys` is only read.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn top_k_device_rows_raw<K: WordKey>(
        &self,
        keys: cu::CUdeviceptr,
        len: usize,
        row_len: usize,
        k: usize,
        order: Order,
        values: cu::CUdeviceptr,
        indices: cu::CUdeviceptr,
        stream: cu::CUstream,
    ) -> Result<()> {
        let out = len.checked_div(row_len).unwrap_or(0).saturating_mul(k);
        self.top_k_device_words(
            DeviceWords::new::<K>(keys, len),
            KeyEncoding::of::<K>(order),
            row_len,
            k,
            DeviceWords::new::<K>(values, out),
            DeviceWords::new::<u32>(indices, out),
            stream,
        )
    }

    /// [`CudaBackend::argsort_device_rows`] on raw addresses: the stable permutation of each
    /// row of `row_len` keys of the `len` at `keys` into the `len` positions (`u32`) at
    /// `indices`.
    ///
    /// # Safety
    /// As [`CudaBackend::sort_device_raw`], for both arrays alike; `keys` is only read.
    pub unsafe fn argsort_device_rows_raw<K: WordKey>(
        &self,
        keys: cu::CUdeviceptr,
        len: usize,
        row_len: usize,
        order: Order,
        indices: cu::CUdeviceptr,
        stream: cu::CUstream,
    ) -> Result<()> {
        self.argsort_device_words(
            DeviceWords::new::<K>(keys, len),
            KeyEncoding::of::<K>(order),
            row_len,
            DeviceWords::new::<u32>(indices, len),
            stream,
        )
    }

    /// [`CudaBackend::sort_device_rows_raw`] with the `len` values at `values` (the same
    /// shape) moving with the keys.
    ///
    /// # Safety
    /// As [`CudaBackend::sort_device_raw`], for `keys` and for `values` alike.
    pub unsafe fn sort_device_rows_by_key_raw<K: WordKey, V: Copy>(
        &self,
        keys: cu::CUdeviceptr,
        values: cu::CUdeviceptr,
        len: usize,
        row_len: usize,
        order: Order,
        stream: cu::CUstream,
    ) -> Result<()> {
        let encoding = KeyEncoding::of::<K>(order);
        let values = Some(DeviceWords::new::<V>(values, len));
        self.sort_device_words(
            DeviceWords::new::<K>(keys, len),
            values,
            encoding,
            row_len,
            stream,
        )
    }
}
