//! Temporary device buffers allocated and freed in stream order.

use cust::memory::DeviceBuffer;
use cust::stream::Stream;
use cust::sys as cu;

use super::CudaBackend;
use super::driver::{driver_error, on};
use crate::backend::BackendKind;
use crate::error::Result;

/// Temporary device buffers of one operation (a top-k), allocated and freed in the order of
/// its stream, from the device's stream-ordered memory pool.
pub(super) struct StreamBuffers<'s> {
    stream: &'s Stream,
    buffers: Vec<DeviceBuffer<u8>>,
}

impl<'s> StreamBuffers<'s> {
    /// No buffers yet, for work on `stream`.
    pub(super) fn new(stream: &'s Stream) -> StreamBuffers<'s> {
        StreamBuffers {
            stream,
            buffers: Vec::new(),
        }
    }

    /// The address of a new buffer of `bytes`, usable by work enqueued after this call.
    pub(super) fn alloc(&mut self, backend: &CudaBackend, bytes: u64) -> Result<cu::CUdeviceptr> {
        crate::fault::point(BackendKind::Cuda, "cuMemAllocAsync")?;
        // SAFETY: the buffer is written by the launches enqueued after the allocation on the
        // same stream before anything reads it, and freed in stream order (`free`).
        let buffer =
            unsafe { DeviceBuffer::<u8>::uninitialized_async(bytes.max(1) as usize, self.stream) }
                .map_err(|e| match e {
                    cust::error::CudaError::OutOfMemory => backend.out_of_memory(bytes),
                    e => driver_error("cuMemAllocAsync", e),
                })?;
        let address = buffer.as_device_ptr().as_raw();
        self.buffers.push(buffer);
        Ok(address)
    }

    /// Frees every buffer once the stream reaches this point; the first failure is returned.
    pub(super) fn free(self) -> Result<()> {
        let mut result = Ok(());
        for buffer in self.buffers {
            let freed = buffer.drop_async(self.stream).map_err(on("cuMemFreeAsync"));
            if result.is_ok() {
                result = freed;
            }
        }
        result
    }
}
