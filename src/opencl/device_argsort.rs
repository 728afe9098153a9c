//! The stable argsort of keys in OpenCL buffers: each row's positions in sorted order, on the
//! caller's queue, keys untouched. As on CUDA, it is the device top-k with `k` the row's
//! length, whose sorted keys go to a temporary buffer of the backend's context.

use opencl3::command_queue::CommandQueue;
use opencl3::memory::{Buffer, ClMem};
use opencl3::types::cl_mem;

use super::OpenClBackend;
use super::device_resident::DeviceWords;
use crate::error::Result;
use crate::keys::{KeyEncoding, Order, WordKey};
use crate::shape::check_argsort_device;

impl OpenClBackend {
    /// The stable argsort of `keys`, which live in this backend's context: `indices[i]` is
    /// the position of the `i`-th key in `order`, equal keys in position order, floats in
    /// [`f32::total_cmp`] order. `indices` holds as many elements as `keys`; `keys` is not
    /// changed. A temporary buffer as large as the keys holds the sorted keys
    /// ([`OpenClBackend::top_k_device_rows`] with `k` the row's length returns them too).
    /// The work is enqueued on `queue`, as for [`OpenClBackend::sort_device`]; a bad shape,
    /// a foreign buffer or queue is an error before anything is enqueued.
    pub fn argsort_device<K: WordKey>(
        &self,
        keys: &Buffer<K>,
        order: Order,
        indices: &mut Buffer<u32>,
        queue: &CommandQueue,
    ) -> Result<()> {
        let row_len = DeviceWords::of("keys", keys)?.len.max(1);
        self.argsort_device_rows(keys, row_len, order, indices, queue)
    }

    /// [`OpenClBackend::argsort_device`] of each row of `row_len` keys on its own: `indices`
    /// receives each row's positions within the row. The keys must fill whole rows.
    pub fn argsort_device_rows<K: WordKey>(
        &self,
        keys: &Buffer<K>,
        row_len: usize,
        order: Order,
        indices: &mut Buffer<u32>,
        queue: &CommandQueue,
    ) -> Result<()> {
        let keys = DeviceWords::of("keys", keys)?;
        let indices = DeviceWords::of("indices", indices)?;
        check_argsort_device(keys.len, row_len, indices.len)?;
        self.check_queue(queue)?;
        self.check_buffer("keys", keys)?;
        self.check_buffer("indices", indices)?;
        if keys.len == 0 {
            return Ok(());
        }
        let bytes = keys.len * keys.word_bytes;
        self.check_memory(bytes as u64)?;
        // OpenCL keeps the buffer alive until the commands enqueued on it have finished.
        let sorted = self.alloc(bytes, bytes as u64)?;
        let job = super::top_k::TopKJob::checked(
            (keys.mem, keys.len),
            keys.word_bytes,
            KeyEncoding::of::<K>(order),
            row_len,
            row_len,
            (sorted.get() as cl_mem, keys.len),
            (indices.mem, indices.len),
        )?;
        self.enqueue_top_k(&job, queue)
    }
}
