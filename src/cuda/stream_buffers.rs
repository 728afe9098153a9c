//! Temporary device buffers allocated and freed in stream order.

use cust::sys as cu;

use super::driver::{alloc_async, free_async};
use super::{CudaBackend, ScratchBuffer};
use crate::buffer_cache::DeviceBytes;
use crate::error::Result;

/// One buffer of [`StreamBuffers`], as a sort's scratch sees it: the owner frees it.
pub(super) struct StreamBuffer {
    address: cu::CUdeviceptr,
    len: usize,
}

impl DeviceBytes for StreamBuffer {
    fn byte_len(&self) -> usize {
        self.len
    }
}

impl ScratchBuffer for StreamBuffer {
    fn address(&self) -> cu::CUdeviceptr {
        self.address
    }
}

/// Temporary device buffers of one operation (a top-k), allocated and freed in the order of
/// its stream (any handle the driver takes: a created stream, the legacy or the per-thread
/// default stream), from the device's stream-ordered memory pool.
pub(super) struct StreamBuffers {
    stream: cu::CUstream,
    buffers: Vec<cu::CUdeviceptr>,
}

impl StreamBuffers {
    /// No buffers yet, for work on `stream`.
    pub(super) fn new(stream: cu::CUstream) -> StreamBuffers {
        StreamBuffers {
            stream,
            buffers: Vec::new(),
        }
    }

    /// The address of a new buffer of `bytes`, usable by work enqueued after this call.
    pub(super) fn alloc(&mut self, backend: &CudaBackend, bytes: u64) -> Result<cu::CUdeviceptr> {
        let address = alloc_async(bytes, self.stream, || backend.out_of_memory(bytes))?;
        self.buffers.push(address);
        Ok(address)
    }

    /// A new buffer of `len` bytes, as [`StreamBuffers::alloc`] gives it.
    pub(super) fn alloc_buffer(
        &mut self,
        backend: &CudaBackend,
        len: usize,
    ) -> Result<StreamBuffer> {
        let address = self.alloc(backend, len as u64)?;
        Ok(StreamBuffer { address, len })
    }

    /// Frees every buffer once the stream reaches this point; the first failure is returned.
    pub(super) fn free(mut self) -> Result<()> {
        let mut result = Ok(());
        for buffer in std::mem::take(&mut self.buffers) {
            let freed = free_async(buffer, self.stream);
            if result.is_ok() {
                result = freed;
            }
        }
        result
    }
}

impl Drop for StreamBuffers {
    /// Buffers not handed to [`StreamBuffers::free`] (an unwinding caller) are freed in
    /// stream order all the same.
    fn drop(&mut self) {
        for buffer in std::mem::take(&mut self.buffers) {
            let _ = free_async(buffer, self.stream);
        }
    }
}
