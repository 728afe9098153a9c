//! The stable argsort of keys in device memory: each row's positions in sorted order, on the
//! caller's stream, keys untouched. It is the device top-k with `k` the row's length, whose
//! sorted keys go to a buffer of the stream-ordered pool: equal keys take the lower position
//! first, which is the stable order.

use cust::memory::{DeviceCopy, DeviceSlice};
use cust::stream::Stream;
use cust::sys as cu;

use super::CudaBackend;
use super::device_resident::DeviceWords;
use super::stream_buffers::StreamBuffers;
use crate::error::Result;
use crate::gpu::TopKJob;
use crate::keys::{KeyEncoding, Order, WordKey};
use crate::shape::check_argsort_device;

impl CudaBackend {
    /// The stable argsort of `keys`, which live on this backend's device: `indices[i]` is
    /// the position of the `i`-th key in `order`, equal keys in position order (numpy's
    /// `argsort(kind="stable")`), floats in [`f32::total_cmp`] order. `indices` holds as many
    /// elements as `keys`; `keys` is not changed.
    ///
    /// One row of 32- or 64-bit keys long enough for the radix sort sorts a copy of the keys
    /// with their positions as values; other shapes sort `(key, position)` words. A buffer
    /// as large as the keys comes from the device's stream-ordered memory pool for the
    /// sorted keys ([`CudaBackend::top_k_device_rows`] with `k` the row's length returns
    /// them too). The work is enqueued on `stream`, as for [`CudaBackend::sort_device`]; a
    /// bad shape or a foreign slice or stream is an error before anything is enqueued.
    ///
    /// ```no_run
    /// use cust::memory::{CopyDestination, DeviceBuffer};
    /// use cust::stream::{Stream, StreamFlags};
    ///
    /// let sorter = bitonic::Sorter::builder().backend(bitonic::BackendKind::Cuda).build()?;
    /// let cuda = sorter.cuda().expect("a CUDA sorter");
    /// let stream = Stream::new(StreamFlags::DEFAULT, None).unwrap();
    /// let keys = DeviceBuffer::from_slice(&[3.0f32, -1.0, 3.0, 2.0]).unwrap();
    /// let mut indices = DeviceBuffer::<u32>::zeroed(4).unwrap();
    /// cuda.argsort_device(&keys, bitonic::Order::Ascending, &mut indices, &stream)?;
    /// stream.synchronize().unwrap();
    /// let mut host = [0u32; 4];
    /// indices.copy_to(&mut host[..]).unwrap();
    /// assert_eq!(host, [1, 3, 0, 2]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn argsort_device<K: WordKey + DeviceCopy>(
        &self,
        keys: &DeviceSlice<K>,
        order: Order,
        indices: &mut DeviceSlice<u32>,
        stream: &Stream,
    ) -> Result<()> {
        let row_len = keys.len().max(1);
        self.argsort_device_rows(keys, row_len, order, indices, stream)
    }

    /// [`CudaBackend::argsort_device`] of each row of `row_len` keys on its own: `indices`
    /// receives each row's positions within the row. `keys.len()` must be a multiple of
    /// `row_len`.
    pub fn argsort_device_rows<K: WordKey + DeviceCopy>(
        &self,
        keys: &DeviceSlice<K>,
        row_len: usize,
        order: Order,
        indices: &mut DeviceSlice<u32>,
        stream: &Stream,
    ) -> Result<()> {
        let encoding = KeyEncoding::of::<K>(order);
        let (keys, indices) = (DeviceWords::of(keys), DeviceWords::of(indices));
        self.argsort_device_words(keys, encoding, row_len, indices, stream.as_inner())
    }

    /// Every device-resident argsort: keys of `keys.word_bytes` (16-bit keys as their bits)
    /// ordered by `encoding`.
    pub(super) fn argsort_device_words(
        &self,
        keys: DeviceWords,
        encoding: KeyEncoding,
        row_len: usize,
        indices: DeviceWords,
        stream: cu::CUstream,
    ) -> Result<()> {
        check_argsort_device(keys.len, row_len, indices.len)?;
        self.check_stream(stream)?;
        for (what, words) in [("keys", keys), ("indices", indices)] {
            if words.len > 0 {
                self.check_owner(what, words.ptr)?;
            }
        }
        if keys.len == 0 {
            return Ok(());
        }
        // The sorted keys' buffer is placed after the checks: its address is set below.
        let mut job = TopKJob::checked(
            (keys.ptr, keys.len),
            keys.word_bytes,
            encoding,
            row_len,
            row_len,
            (0, keys.len),
            (indices.ptr, indices.len),
        )?;
        let mut scratch = StreamBuffers::new(stream);
        let enqueued = (|| {
            job.values = scratch.alloc(self, (keys.len * keys.word_bytes) as u64)?;
            self.enqueue_top_k(&job, stream)
        })();
        // The buffer is freed in stream order after the launches that use it, whatever
        // failed; the first error is the one to report.
        let freed = scratch.free();
        enqueued?;
        freed
    }
}
