//! The CUDA side of the host transfer engine (`crate::host_transfer`): pinned memory from
//! `cuMemAllocHost`, asynchronous copies on the backend's stream, and events after them.

use cust::error::CudaError;
use cust::event::{Event, EventFlags};
use cust::memory::LockedBuffer;
use cust::stream::Stream;
use cust::sys as cu;

use super::{check, driver_error, on};
use crate::backend::BackendKind;
use crate::error::Result;
use crate::fault::point;
use crate::host_transfer::Link;

/// Copies between pinned host memory and device memory on one stream. The backend's context
/// is current on the calling thread for as long as a `CudaLink` is used.
pub(crate) struct CudaLink<'a> {
    pub(crate) stream: &'a Stream,
}

impl CudaLink<'_> {
    /// An event recorded on the stream after everything enqueued so far.
    fn mark(&self) -> Result<Event> {
        let event = Event::new(EventFlags::DISABLE_TIMING).map_err(on("cuEventCreate"))?;
        point(BackendKind::Cuda, "cuEventRecord")?;
        event.record(self.stream).map_err(on("cuEventRecord"))?;
        Ok(event)
    }
}

impl Link for CudaLink<'_> {
    type Pinned = LockedBuffer<u8>;
    type Device = cu::CUdeviceptr;
    type Mark = Event;

    fn alloc_pinned(&self, bytes: usize) -> Result<LockedBuffer<u8>> {
        point(BackendKind::Cuda, "cuMemAllocHost")?;
        // SAFETY: the engine writes a slot's bytes before any are read (a staging copy or a
        // download fills them first).
        unsafe { LockedBuffer::uninitialized(bytes) }.map_err(|e| match e {
            CudaError::OutOfMemory => crate::Error::OutOfMemory {
                device: "pinned host memory".to_string(),
                requested: bytes as u64,
                available: 0,
            },
            e => driver_error("cuMemAllocHost", e),
        })
    }

    fn pinned_bytes(pinned: &mut LockedBuffer<u8>) -> &mut [u8] {
        pinned.as_mut_slice()
    }

    fn upload(
        &self,
        src: &LockedBuffer<u8>,
        dst: cu::CUdeviceptr,
        offset: usize,
        len: usize,
    ) -> Result<Event> {
        point(BackendKind::Cuda, "cuMemcpyHtoDAsync")?;
        // SAFETY: `src` holds at least `len` bytes and the engine neither writes nor frees it
        // before the returned event completes; the device buffer at `dst` holds at least
        // `offset + len` bytes (the engine uploads a column into a buffer of its size).
        check("cuMemcpyHtoDAsync", unsafe {
            cu::cuMemcpyHtoDAsync_v2(
                dst + offset as u64,
                src.as_ptr().cast(),
                len,
                self.stream.as_inner(),
            )
        })?;
        self.mark()
    }

    fn download(
        &self,
        src: cu::CUdeviceptr,
        offset: usize,
        len: usize,
        dst: &mut LockedBuffer<u8>,
    ) -> Result<Event> {
        point(BackendKind::Cuda, "cuMemcpyDtoHAsync")?;
        // SAFETY: `dst` holds at least `len` bytes and the engine neither reads nor frees it
        // before the returned event completes; the device buffer at `src` holds at least
        // `offset + len` bytes.
        check("cuMemcpyDtoHAsync", unsafe {
            cu::cuMemcpyDtoHAsync_v2(
                dst.as_mut_ptr().cast(),
                src + offset as u64,
                len,
                self.stream.as_inner(),
            )
        })?;
        self.mark()
    }

    fn wait(&self, mark: Event) -> Result<()> {
        point(BackendKind::Cuda, "cuEventSynchronize")?;
        mark.synchronize().map_err(on("cuEventSynchronize"))
    }

    fn drain(&self) {
        // Only called after another failure, which is the one to report.
        let _ = self.stream.synchronize();
    }
}
