//! The CUDA side of the host transfer engine (`crate::host_transfer`): pinned memory from
//! `cuMemAllocHost`, asynchronous copies on the backend's stream, events after them, and the
//! hand-over between the copy stream and the stream a sort runs on while it uploads; and the
//! pinned memory of callers' buffers (`crate::pinned`).

use std::mem::ManuallyDrop;

use cust::context::{Context, CurrentContext};
use cust::device::Device;
use cust::error::CudaError;
use cust::event::{Event, EventFlags};
use cust::memory::LockedBuffer;
use cust::stream::{Stream, StreamWaitEventFlags};
use cust::sys as cu;

use super::{check, driver_error, on};
use crate::backend::BackendKind;
use crate::error::Result;
use crate::fault::point;
use crate::host_transfer::Link;
use crate::pinned::PinnedMemory;

/// Copies between pinned host memory and device memory on one stream. The backend's context
/// is current on the calling thread for as long as a `CudaLink` is used.
pub(crate) struct CudaLink<'a> {
    pub(crate) stream: &'a Stream,
    /// The backend's context: pinned buffers of this context are copied directly.
    pub(crate) context: cu::CUcontext,
}

impl CudaLink<'_> {
    /// `bytes` of pinned memory in the current context, not initialized.
    fn alloc(bytes: usize) -> Result<LockedBuffer<u8>> {
        point(BackendKind::Cuda, "cuMemAllocHost")?;
        // SAFETY: every user writes the bytes before reading them: the engine's slots are
        // filled by a staging copy or a download first, a caller's buffer is zero-filled by
        // `PinnedBuffer::new`.
        unsafe { LockedBuffer::uninitialized(bytes) }.map_err(|e| match e {
            CudaError::OutOfMemory => crate::Error::OutOfMemory {
                device: "pinned host memory".to_string(),
                requested: bytes as u64,
                available: 0,
            },
            e => driver_error("cuMemAllocHost", e),
        })
    }
}

impl Link for CudaLink<'_> {
    type Pinned = LockedBuffer<u8>;
    type Device = cu::CUdeviceptr;
    type Mark = Event;

    fn alloc_pinned(&self, bytes: usize) -> Result<LockedBuffer<u8>> {
        CudaLink::alloc(bytes)
    }

    fn pinned_bytes(pinned: &mut LockedBuffer<u8>) -> &mut [u8] {
        pinned.as_mut_slice()
    }

    fn owner(&self) -> u64 {
        self.context as u64
    }

    fn upload(&self, src: &[u8], dst: cu::CUdeviceptr, offset: usize) -> Result<()> {
        point(BackendKind::Cuda, "cuMemcpyHtoDAsync")?;
        // SAFETY: `src` is valid for its length, and the engine neither writes nor frees it
        // before an event recorded after the copy completes; the device buffer at `dst`
        // holds at least `offset + src.len()` bytes (a column goes into a buffer of its size).
        check("cuMemcpyHtoDAsync", unsafe {
            cu::cuMemcpyHtoDAsync_v2(
                dst + offset as u64,
                src.as_ptr().cast(),
                src.len(),
                self.stream.as_inner(),
            )
        })
    }

    fn download(&self, src: cu::CUdeviceptr, offset: usize, dst: &mut [u8]) -> Result<()> {
        point(BackendKind::Cuda, "cuMemcpyDtoHAsync")?;
        // SAFETY: `dst` is valid for its length, and the engine neither reads nor frees it
        // before an event recorded after the copy completes; the device buffer at `src`
        // holds at least `offset + dst.len()` bytes.
        check("cuMemcpyDtoHAsync", unsafe {
            cu::cuMemcpyDtoHAsync_v2(
                dst.as_mut_ptr().cast(),
                src + offset as u64,
                dst.len(),
                self.stream.as_inner(),
            )
        })
    }

    fn mark(&self) -> Result<Event> {
        record(self.stream)
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

/// A new event recorded on `stream`: everything enqueued on it so far.
pub(crate) fn record(stream: &Stream) -> Result<Event> {
    let event = Event::new(EventFlags::DISABLE_TIMING).map_err(on("cuEventCreate"))?;
    point(BackendKind::Cuda, "cuEventRecord")?;
    event.record(stream).map_err(on("cuEventRecord"))?;
    Ok(event)
}

/// Makes the work enqueued on `stream` from now on wait for `event`, without blocking the
/// host.
pub(crate) fn wait_for(stream: &Stream, event: Event) -> Result<()> {
    point(BackendKind::Cuda, "cuStreamWaitEvent")?;
    // The driver destroys the event once the wait is resolved.
    stream
        .wait_event(event, StreamWaitEventFlags::DEFAULT)
        .map_err(on("cuStreamWaitEvent"))
}

/// Makes the work enqueued on `later` from now on wait for everything enqueued on `earlier`
/// so far (an event recorded on one, waited for by the other), without blocking the host.
pub(crate) fn hand_over(earlier: &Stream, later: &Stream) -> Result<()> {
    wait_for(later, record(earlier)?)
}

/// A caller's pinned buffer ([`crate::pinned`]): memory from `cuMemAllocHost`,
/// and a retain of the primary context it belongs to, so that it outlives the backend.
pub(crate) struct CallerPinned {
    buffer: ManuallyDrop<LockedBuffer<u8>>,
    // Released after the buffer is freed in it (`Drop`).
    context: Context,
}

impl CallerPinned {
    /// `bytes` (more than 0) of pinned memory of `device`'s primary context, not initialized
    /// (`crate::pinned::PinnedBuffer` zero-fills it).
    pub(crate) fn new(device: Device, bytes: usize) -> Result<CallerPinned> {
        let context = Context::new(device).map_err(on("cuDevicePrimaryCtxRetain"))?;
        CurrentContext::set_current(&context).map_err(on("cuCtxSetCurrent"))?;
        let buffer = CudaLink::alloc(bytes)?;
        Ok(CallerPinned {
            buffer: ManuallyDrop::new(buffer),
            context,
        })
    }
}

impl Drop for CallerPinned {
    fn drop(&mut self) {
        // `cuMemFreeHost` needs the context current; without it the memory stays until the
        // context goes. Nothing useful can be done about a failure here.
        let _ = CurrentContext::set_current(&self.context);
        // SAFETY: dropped once, here; the field is never used again.
        unsafe { ManuallyDrop::drop(&mut self.buffer) };
    }
}

impl PinnedMemory for CallerPinned {
    fn bytes(&self) -> &[u8] {
        self.buffer.as_slice()
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut_slice()
    }

    fn owner(&self) -> u64 {
        self.context.as_raw() as u64
    }
}
