//! Sorting keys that already live in device memory: the caller's `cust` slices, in place, on
//! the caller's stream, with no host copy. Merge-path sorts need a scratch buffer as large
//! as the slices; the backend keeps one for all device-resident sorts, and each sort's stream
//! waits for the previous user of it (an event). Where the scratch does not fit, the network
//! sorts in place with no extra memory.
//!
//! These calls only enqueue: the launches run after whatever the caller enqueued on the
//! stream before, and the caller synchronizes (or records an event) before reading the
//! result. A failure to launch is returned at once; a failure while the kernels run shows up
//! at the caller's next synchronization, as for any stream-ordered CUDA call.

use std::ptr;

use cust::context::CurrentContext;
use cust::memory::{DeviceBuffer, DeviceCopy, DeviceSlice};
use cust::stream::Stream;
use cust::sys as cu;

use super::driver::StreamEvent;
use super::stream_buffers::StreamBuffers;
use super::{CudaBackend, DeviceScratch, Job, Widths, check, on};
use crate::buffer_cache::Scratch;
use crate::error::{Error, Result};
use crate::keys::{KeyEncoding, Order, WordKey};
use crate::shape::{check_rows_words, check_value_bytes};

/// The per-thread default stream's handle (`CU_STREAM_PER_THREAD`).
pub(super) const PER_THREAD_STREAM: usize = 0x2;

/// Whether work enqueued on `b` follows the work enqueued on `a` in stream order: the same
/// handle, except the per-thread default stream's, which names another stream on each
/// thread that uses it.
fn same_stream(a: cu::CUstream, b: cu::CUstream) -> bool {
    a == b && a as usize != PER_THREAD_STREAM
}

/// A caller's device slice as words: its address, length and word width.
#[derive(Clone, Copy)]
pub(super) struct DeviceWords {
    pub(super) ptr: cu::CUdeviceptr,
    pub(super) len: usize,
    pub(super) word_bytes: usize,
}

impl DeviceWords {
    /// `len` words of `T` at device address `ptr`.
    pub(super) fn new<T>(ptr: cu::CUdeviceptr, len: usize) -> DeviceWords {
        DeviceWords {
            ptr,
            len,
            word_bytes: std::mem::size_of::<T>(),
        }
    }

    /// The words of a `cust` slice.
    pub(super) fn of<T: DeviceCopy>(slice: &DeviceSlice<T>) -> DeviceWords {
        DeviceWords::new::<T>(slice.as_device_ptr().as_raw(), slice.len())
    }
}

impl CudaBackend {
    /// Sorts `keys`, which live on this backend's device, in place on `stream`.
    ///
    /// `keys` and `stream` must belong to this backend's context, which is the device's
    /// primary context (the one `cust::quick_init` and `cust::context::Context::new` use);
    /// otherwise the call returns [`Error::ForeignBuffer`] and enqueues nothing. The sort is
    /// enqueued, not finished: synchronize `stream` before reading the keys.
    ///
    /// ```no_run
    /// use cust::memory::{CopyDestination, DeviceBuffer};
    /// use cust::stream::{Stream, StreamFlags};
    ///
    /// let sorter = bitonic::Sorter::builder().backend(bitonic::BackendKind::Cuda).build()?;
    /// let cuda = sorter.cuda().expect("a CUDA sorter");
    /// // A DEFAULT stream waits for the legacy-stream upload below.
    /// let stream = Stream::new(StreamFlags::DEFAULT, None).unwrap();
    /// let mut keys = DeviceBuffer::from_slice(&[3.0f32, -1.0, 2.0]).unwrap();
    /// cuda.sort_device(&mut keys, bitonic::Order::Ascending, &stream)?;
    /// stream.synchronize().unwrap();
    /// let mut host = [0.0f32; 3];
    /// keys.copy_to(&mut host[..]).unwrap();
    /// assert_eq!(host, [-1.0, 2.0, 3.0]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn sort_device<K: WordKey + DeviceCopy>(
        &self,
        keys: &mut DeviceSlice<K>,
        order: Order,
        stream: &Stream,
    ) -> Result<()> {
        let n = keys.len();
        self.sort_device_words(
            DeviceWords::of(keys),
            None,
            KeyEncoding::of::<K>(order),
            n.max(1),
            stream.as_inner(),
        )
    }

    /// Sorts `keys` in place on `stream` and moves `values` (4- or 8-byte elements, as many
    /// as the keys) with them; see [`CudaBackend::sort_device`].
    pub fn sort_device_by_key<K: WordKey + DeviceCopy, V: DeviceCopy>(
        &self,
        keys: &mut DeviceSlice<K>,
        values: &mut DeviceSlice<V>,
        order: Order,
        stream: &Stream,
    ) -> Result<()> {
        let n = keys.len();
        self.sort_device_words(
            DeviceWords::of(keys),
            Some(DeviceWords::of(values)),
            KeyEncoding::of::<K>(order),
            n.max(1),
            stream.as_inner(),
        )
    }

    /// Sorts each row of `row_len` keys on its own, in place on `stream`; `keys.len()` must
    /// be a multiple of `row_len`. See [`CudaBackend::sort_device`].
    pub fn sort_device_rows<K: WordKey + DeviceCopy>(
        &self,
        keys: &mut DeviceSlice<K>,
        row_len: usize,
        order: Order,
        stream: &Stream,
    ) -> Result<()> {
        self.sort_device_words(
            DeviceWords::of(keys),
            None,
            KeyEncoding::of::<K>(order),
            row_len,
            stream.as_inner(),
        )
    }

    /// [`CudaBackend::sort_device_rows`] with `values` (the same shape) moving with the keys.
    pub fn sort_device_rows_by_key<K: WordKey + DeviceCopy, V: DeviceCopy>(
        &self,
        keys: &mut DeviceSlice<K>,
        values: &mut DeviceSlice<V>,
        row_len: usize,
        order: Order,
        stream: &Stream,
    ) -> Result<()> {
        self.sort_device_words(
            DeviceWords::of(keys),
            Some(DeviceWords::of(values)),
            KeyEncoding::of::<K>(order),
            row_len,
            stream.as_inner(),
        )
    }

    /// Every device-resident sort: checks the shapes and that the slices and the stream are
    /// this backend's, then enqueues the planned launches on the caller's stream (a live
    /// stream of this backend's context, or a special handle: [`check_stream`]).
    ///
    /// [`check_stream`]: CudaBackend::check_stream
    pub(super) fn sort_device_words(
        &self,
        keys: DeviceWords,
        values: Option<DeviceWords>,
        encoding: KeyEncoding,
        row_len: usize,
        stream: cu::CUstream,
    ) -> Result<()> {
        check_rows_words(keys.len, values.map(|v| v.len), row_len)?;
        if let Some(values) = values {
            check_value_bytes(values.word_bytes)?;
        }
        self.check_stream(stream)?;
        for (what, words) in [("keys", Some(keys)), ("values", values)] {
            match words {
                Some(w) if w.len > 0 => self.check_owner(what, w.ptr)?,
                _ => {}
            }
        }
        self.enqueue_sort_words(keys, values, encoding, row_len, stream)
    }

    /// [`CudaBackend::sort_device_words`] after its checks, for buffers this backend
    /// allocated itself: memory from the stream-ordered pool has no owner to look up while
    /// the stream is being captured into a graph.
    pub(super) fn enqueue_sort_words(
        &self,
        keys: DeviceWords,
        values: Option<DeviceWords>,
        encoding: KeyEncoding,
        row_len: usize,
        stream: cu::CUstream,
    ) -> Result<()> {
        let value_bytes = values.map_or(0, |v| v.word_bytes);
        if row_len <= 1 {
            return Ok(());
        }
        let widths = Widths {
            key: keys.word_bytes as u64,
            value: value_bytes as u64,
        };
        let mut scratch = self
            .device_scratch
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // A stream being captured into a graph neither waits nor records: an event recorded
        // in a capture cannot be waited for outside it.
        let mut capture = cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: the stream handle is live (checked against the context by the caller) and
        // `capture` is a valid out-pointer.
        check("cuStreamIsCapturing", unsafe {
            cu::cuStreamIsCapturing(stream, &mut capture)
        })?;
        let capturing = capture != cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        let waited = !capturing && scratch.done.is_some();
        if let Some((done, on_stream)) = scratch.done.take_if(|_| !capturing) {
            // The previous sort that used the scratch may run on another stream; on the same
            // stream, the order of the stream suffices. Waiting consumes the event; the
            // driver destroys it once the wait is resolved.
            if !same_stream(on_stream, stream) {
                done.wait_on(stream)?;
            }
        }
        let rows = (keys.len / row_len) as u64;
        let plan = self.plan(row_len as u64, rows, widths, encoding.code());
        // A capture takes its scratch from the stream's pool, which the graph then owns:
        // growing the shared scratch would call `cuMemAlloc` and `cuMemFree`, which a capture
        // refuses, and a graph launched later must not share buffers with other sorts.
        let mut captured = capturing.then(|| StreamBuffers::new(stream));
        let (plan, scratch_words) = match &mut captured {
            Some(buffers) => self.plan_with_scratch_from(
                &mut Scratch::default(),
                |len| buffers.alloc_buffer(self, len),
                plan,
                (row_len as u64, rows),
                widths,
                encoding.code(),
            )?,
            None => self.plan_with_scratch(
                &mut scratch.buffers,
                plan,
                row_len as u64,
                rows,
                widths,
                encoding.code(),
            )?,
        };
        let job = Job {
            keys: keys.ptr,
            values: values.map_or(0, |v| v.ptr),
            kernels: self.kernels(keys.word_bytes, value_bytes),
            widths,
            plan,
            scratch: scratch_words,
        };
        // The launches read and write only the slices' `len` words and the scratch. The
        // caller's buffers stay allocated until the kernels finish: freeing device memory
        // with `cuMemFree` (what `DeviceBuffer`'s drop does) waits for the work that uses it.
        let enqueued = self.enqueue(&job, stream);
        if let Some(buffers) = captured {
            // Freed in stream order after the launches, whatever failed; the first error is
            // the one to report.
            let freed = buffers.free();
            return enqueued.and(freed);
        }
        // After a wait, the event recorded here follows the previous user of the scratch too.
        if job.scratch.is_some() || waited {
            scratch.done = Some((StreamEvent::record(stream)?, stream));
        }
        enqueued
    }

    /// Makes this backend's context current and checks that `stream` belongs to it. The
    /// special handles (null and `CU_STREAM_LEGACY` for the legacy default stream,
    /// `CU_STREAM_PER_THREAD` for the per-thread one) name the current context's.
    pub(super) fn check_stream(&self, stream: cu::CUstream) -> Result<()> {
        CurrentContext::set_current(&self.context).map_err(on("cuCtxSetCurrent"))?;
        let ours = self.context.as_raw();
        let mut context: cu::CUcontext = ptr::null_mut();
        // SAFETY: the caller vouches for the stream handle (live, or a special handle) and
        // `context` is a valid out-pointer.
        check("cuStreamGetCtx", unsafe {
            cu::cuStreamGetCtx(stream, &mut context)
        })?;
        if context != ours {
            return Err(Error::ForeignBuffer(format!(
                "the stream belongs to another CUDA context than {}'s primary context",
                self.info.name
            )));
        }
        Ok(())
    }

    /// Checks that device memory at `ptr` belongs to this backend's context, or, for memory
    /// that belongs to no context (stream-ordered allocations from a memory pool), to its
    /// device.
    pub(super) fn check_owner(&self, what: &str, ptr: cu::CUdeviceptr) -> Result<()> {
        let mut context: cu::CUcontext = ptr::null_mut();
        // SAFETY: `context` is a valid out-pointer of the size the CONTEXT attribute writes.
        let status = unsafe {
            cu::cuPointerGetAttribute(
                (&mut context as *mut cu::CUcontext).cast(),
                cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_CONTEXT,
                ptr,
            )
        };
        let owned = if status == cu::CUresult::CUDA_SUCCESS && !context.is_null() {
            context == self.context.as_raw()
        } else {
            let mut ordinal: i32 = -1;
            // SAFETY: `ordinal` is a valid out-pointer of the size the DEVICE_ORDINAL
            // attribute writes (an int).
            let status = unsafe {
                cu::cuPointerGetAttribute(
                    (&mut ordinal as *mut i32).cast(),
                    cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                    ptr,
                )
            };
            status == cu::CUresult::CUDA_SUCCESS
                && usize::try_from(ordinal).is_ok_and(|o| o == self.info.index)
        };
        if !owned {
            return Err(Error::ForeignBuffer(format!(
                "the {what} are not device memory of {}'s primary context",
                self.info.name
            )));
        }
        Ok(())
    }
}

impl DeviceScratch {
    /// Orders the scratch between its users: work enqueued on `stream` from now on waits for
    /// the last sort that used it (where that ran on another stream), and its next user waits
    /// for the work enqueued on `stream` so far. Where the driver fails, nothing could wait
    /// for the last user: the buffers are freed (`cuMemFree` waits for that work).
    fn hand_to(&mut self, stream: cu::CUstream) -> Result<()> {
        let previous = self.done.take();
        let done = (|| {
            if let Some((previous, on_stream)) = previous
                && !same_stream(on_stream, stream)
            {
                previous.wait_on(stream)?;
            }
            StreamEvent::record(stream)
        })();
        match done {
            Ok(done) => {
                self.done = Some((done, stream));
                Ok(())
            }
            Err(e) => {
                self.buffers = Scratch::default();
                Err(e)
            }
        }
    }
}

impl CudaBackend {
    /// Takes the keys buffer of the device-resident sorts' scratch, when it holds at least
    /// `bytes`, for work enqueued on `stream` from now on (which first waits for the last sort
    /// that used it); `None` where it is smaller or taken already. Meanwhile a device-resident
    /// sort grows a buffer of its own. Give it back with [`CudaBackend::return_scratch_keys`].
    pub(super) fn take_scratch_keys(
        &self,
        bytes: usize,
        stream: cu::CUstream,
    ) -> Result<Option<DeviceBuffer<u8>>> {
        let mut scratch = self
            .device_scratch
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if scratch
            .buffers
            .keys
            .as_ref()
            .is_none_or(|b| b.len() < bytes)
        {
            return Ok(None);
        }
        // The rest of the scratch stays for other sorts, which then wait for this stream's
        // event, recorded after its wait for the last sort.
        scratch.hand_to(stream)?;
        Ok(scratch.buffers.keys.take())
    }

    /// Takes back a buffer of [`CudaBackend::take_scratch_keys`] once the work enqueued on
    /// `stream` so far has finished with it: the next sort that uses it waits for that. Where
    /// a sort grew another buffer meanwhile, the larger one is kept and the other freed (the
    /// backend's context current; `cuMemFree` waits for the work that uses it).
    pub(super) fn return_scratch_keys(
        &self,
        buffer: DeviceBuffer<u8>,
        stream: cu::CUstream,
    ) -> Result<()> {
        let mut scratch = self
            .device_scratch
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // On failure the buffer is freed with the rest (`cuMemFree` waits for its work).
        scratch.hand_to(stream)?;
        let spare = match scratch.buffers.keys.take() {
            Some(grown) if grown.len() > buffer.len() => {
                scratch.buffers.keys = Some(grown);
                Some(buffer)
            }
            grown => {
                scratch.buffers.keys = Some(buffer);
                grown
            }
        };
        drop(spare);
        Ok(())
    }
}
