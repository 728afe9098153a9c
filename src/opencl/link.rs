//! The OpenCL side of the host transfer engine (`crate::host_transfer`): host-accessible
//! buffers (`CL_MEM_ALLOC_HOST_PTR`, which drivers such as NVIDIA's back with pinned memory)
//! kept mapped, non-blocking reads and writes on the backend's in-order queue, and their
//! events; and the pinned memory of callers' buffers (`crate::pinned`).

use std::ptr;

use opencl3::command_queue::{
    CommandQueue, enqueue_map_buffer, enqueue_read_buffer, enqueue_unmap_mem_object,
    enqueue_write_buffer, release_command_queue, retain_command_queue,
};
use opencl3::event::Event;
use opencl3::memory::{
    Buffer, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_WRITE, ClMem,
};
use opencl3::types::{CL_BLOCKING, CL_NON_BLOCKING, cl_command_queue, cl_mem};

use super::OpenClBackend;
use super::chunked::ChunkTargets;
use crate::backend::BackendKind;
use crate::error::Result;
use crate::fault::point;
use crate::host_transfer::Link;
use crate::pinned::PinnedMemory;

/// A host-accessible buffer, mapped for its whole life.
pub(crate) struct MappedBuffer {
    buffer: Buffer<u8>,
    /// The mapping's host address: `len` bytes, valid until unmapped in `drop`.
    host: *mut u8,
    len: usize,
    /// The queue that mapped it, retained so that it can unmap it however the backend's
    /// fields are dropped.
    queue: cl_command_queue,
}

// SAFETY: the mapping is plain host memory owned by this value alone (no other value holds
// `host`), and OpenCL objects may be used from any thread.
unsafe impl Send for MappedBuffer {}
// SAFETY: as for `Send`; through `&MappedBuffer` the mapping is only read.
unsafe impl Sync for MappedBuffer {}

impl Drop for MappedBuffer {
    fn drop(&mut self) {
        // SAFETY: `host` is this buffer's live mapping, made on `queue`, which this value
        // retained; no copy uses it any more (the engine leaves none pending). Failures only
        // leak the mapping until the buffer is released below.
        unsafe {
            if let Ok(event) = enqueue_unmap_mem_object(
                self.queue,
                self.buffer.get(),
                self.host.cast(),
                0,
                ptr::null(),
            ) {
                let _ = Event::new(event).wait();
            }
            let _ = release_command_queue(self.queue);
        }
    }
}

/// Copies between mapped host buffers and device buffers on the backend's queue.
pub(crate) struct ClLink<'a> {
    pub(crate) backend: &'a OpenClBackend,
    pub(crate) queue: &'a CommandQueue,
    /// Bytes the sort needs, for out-of-memory errors.
    pub(crate) requested: u64,
    /// Columns whose uploads go into their chunks' sub-buffers (a sort that sorts while it
    /// uploads, `chunked.rs`).
    pub(crate) targets: Option<&'a ChunkTargets>,
}

impl ClLink<'_> {
    /// Enqueues the copy of `src` into `dst` from byte `offset`.
    fn write(&self, src: &[u8], dst: cl_mem, offset: usize) -> Result<()> {
        point(BackendKind::OpenCl, "clEnqueueWriteBuffer")?;
        // SAFETY: `src` is valid for its length, and the engine neither writes nor frees it
        // before a marker enqueued after the copy completes; `dst` holds at least
        // `offset + src.len()` bytes (a column's buffer, or the chunk's sub-buffer of it).
        let event = unsafe {
            enqueue_write_buffer(
                self.queue.get(),
                dst,
                CL_NON_BLOCKING,
                offset,
                src.len(),
                src.as_ptr().cast(),
                0,
                ptr::null(),
            )
        }
        .map_err(|e| {
            self.backend
                .memory_error("clEnqueueWriteBuffer", self.requested)(e.into())
        })?;
        // Completion is waited for through a later marker (`mark`).
        drop(Event::new(event));
        Ok(())
    }
}

impl Link for ClLink<'_> {
    type Pinned = MappedBuffer;
    type Device = cl_mem;
    type Mark = Event;

    fn alloc_pinned(&self, bytes: usize) -> Result<MappedBuffer> {
        point(BackendKind::OpenCl, "clCreateBuffer")?;
        let memory = |call| self.backend.memory_error(call, bytes as u64);
        // SAFETY: no host pointer is passed; the driver allocates host-accessible memory.
        let buffer = unsafe {
            Buffer::<u8>::create(
                &self.backend.context,
                CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                bytes,
                ptr::null_mut(),
            )
        }
        .map_err(memory("clCreateBuffer"))?;
        point(BackendKind::OpenCl, "clEnqueueMapBuffer")?;
        let queue = self.queue.get();
        // SAFETY: a blocking map of the whole buffer, which stays alive (and mapped) inside
        // the returned value; the queue is retained first so that the unmap can use it.
        let host = unsafe {
            retain_command_queue(queue).map_err(|e| memory("clRetainCommandQueue")(e.into()))?;
            let mut host: cl_mem = ptr::null_mut();
            match enqueue_map_buffer(
                queue,
                buffer.get(),
                CL_BLOCKING,
                CL_MAP_READ | CL_MAP_WRITE,
                0,
                bytes,
                &mut host,
                0,
                ptr::null(),
            ) {
                Ok(event) => {
                    drop(Event::new(event));
                    host
                }
                Err(e) => {
                    let _ = release_command_queue(queue);
                    return Err(memory("clEnqueueMapBuffer")(e.into()));
                }
            }
        };
        Ok(MappedBuffer {
            buffer,
            host: host.cast(),
            len: bytes,
            queue,
        })
    }

    fn pinned_bytes(pinned: &mut MappedBuffer) -> &mut [u8] {
        // SAFETY: the mapping holds `len` bytes and lives as long as `pinned`; the `&mut`
        // borrow makes this the only view of them.
        unsafe { std::slice::from_raw_parts_mut(pinned.host, pinned.len) }
    }

    fn owner(&self) -> u64 {
        self.backend.context.get() as u64
    }

    fn upload(&self, src: &[u8], dst: cl_mem, offset: usize) -> Result<()> {
        // A chunked column's bytes go into its chunks' sub-buffers.
        match self.targets.and_then(|t| t.split(dst, offset, src.len())) {
            Some(copies) => {
                for (sub, at, from, len) in copies {
                    self.write(&src[from..from + len], sub, at)?;
                }
                Ok(())
            }
            None => self.write(src, dst, offset),
        }
    }

    fn download(&self, src: cl_mem, offset: usize, dst: &mut [u8]) -> Result<()> {
        point(BackendKind::OpenCl, "clEnqueueReadBuffer")?;
        // SAFETY: `dst` is valid for its length, and the engine neither reads nor frees it
        // before a marker enqueued after the copy completes; `src` holds at least
        // `offset + dst.len()` bytes.
        let event = unsafe {
            enqueue_read_buffer(
                self.queue.get(),
                src,
                CL_NON_BLOCKING,
                offset,
                dst.len(),
                dst.as_mut_ptr().cast(),
                0,
                ptr::null(),
            )
        }
        .map_err(|e| {
            self.backend
                .memory_error("clEnqueueReadBuffer", self.requested)(e.into())
        })?;
        drop(Event::new(event));
        Ok(())
    }

    fn mark(&self) -> Result<Event> {
        point(BackendKind::OpenCl, "clEnqueueMarkerWithWaitList")?;
        // SAFETY: an empty wait list; the marker only orders the queue.
        unsafe { self.queue.enqueue_marker_with_wait_list(&[]) }.map_err(
            self.backend
                .memory_error("clEnqueueMarkerWithWaitList", self.requested),
        )
    }

    fn wait(&self, mark: Event) -> Result<()> {
        point(BackendKind::OpenCl, "clWaitForEvents")?;
        mark.wait()
            .map_err(self.backend.memory_error("clWaitForEvents", self.requested))
    }

    fn drain(&self) {
        // Only called after another failure, which is the one to report.
        let _ = self.queue.finish();
    }

    fn computes_on_host(&self) -> bool {
        self.backend.info.device_type == crate::backend::DeviceType::Cpu
    }
}

/// A caller's pinned buffer ([`crate::pinned`]): a mapped host-accessible buffer.
/// The buffer keeps its context alive, and the mapping its retained queue.
pub(crate) struct CallerPinned {
    mapped: MappedBuffer,
    context: u64,
}

impl CallerPinned {
    /// `bytes` (more than 0) in a mapped buffer of `link`'s context, not initialized
    /// (`crate::pinned::PinnedBuffer` zero-fills it).
    pub(crate) fn new(link: &ClLink<'_>, bytes: usize) -> Result<CallerPinned> {
        let mapped = link.alloc_pinned(bytes)?;
        Ok(CallerPinned {
            mapped,
            context: link.owner(),
        })
    }
}

impl PinnedMemory for CallerPinned {
    fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping holds `len` bytes and lives as long as `self`; a shared borrow
        // of `self` allows no writes through `bytes_mut` meanwhile.
        unsafe { std::slice::from_raw_parts(self.mapped.host, self.mapped.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        ClLink::pinned_bytes(&mut self.mapped)
    }

    fn owner(&self) -> u64 {
        self.context
    }
}
