//! Sorting keys that already live in device memory: the caller's `opencl3` buffers, in place,
//! on the caller's command queue, with no host copy. Merge-path sorts (one large array of keys,
//! or of pairs) need a scratch buffer as large as the data; the backend keeps one for all
//! device-resident sorts, and each sort waits on its queue for the previous user of it (an
//! event). Where the scratch does not fit, the network sorts in place with no extra memory.
//!
//! The buffers and the queue must belong to this backend's context ([`OpenClBackend::context`])
//! and device; create them there. These calls only enqueue (except on CPU devices, see
//! [`OpenClBackend::sort_device`]): the kernels run after whatever the caller enqueued
//! before on an in-order queue, and the caller waits (`finish`, or a blocking read) before
//! reading the result.

use opencl3::command_queue::{CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, CommandQueue};
use opencl3::context::Context;
use opencl3::error_codes::ClError;
use opencl3::memory::{Buffer, ClMem};
use opencl3::types::{cl_device_id, cl_mem};

use super::plan::Shape;
use super::{CPU_DEVICE_RUNS, OpenClBackend, Operands, driver, hold};
use crate::backend::DeviceType;
use crate::error::{Error, Result};
use crate::keys::{KeyEncoding, Order, WordKey};
use crate::shape::check_rows_words;

/// A caller's buffer: its handle, its length in elements and the element width.
#[derive(Clone, Copy)]
pub(super) struct DeviceWords {
    pub(super) mem: cl_mem,
    pub(super) len: usize,
    pub(super) word_bytes: usize,
}

impl DeviceWords {
    /// Reads the buffer's size; a size that is not a whole number of elements is an error.
    pub(super) fn of<T>(what: &str, buffer: &Buffer<T>) -> Result<DeviceWords> {
        let word_bytes = std::mem::size_of::<T>();
        let bytes = buffer.size().map_err(driver("clGetMemObjectInfo"))?;
        if word_bytes == 0 || !bytes.is_multiple_of(word_bytes) {
            return Err(Error::ForeignBuffer(format!(
                "the {what} buffer holds {bytes} bytes, not a whole number of \
                 {word_bytes}-byte elements"
            )));
        }
        Ok(DeviceWords {
            mem: buffer.get(),
            len: bytes / word_bytes,
            word_bytes,
        })
    }
}

impl OpenClBackend {
    /// The backend's OpenCL context: create the buffers and the queue for the `sort_device*`
    /// calls in it.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The backend's device.
    pub fn device_id(&self) -> cl_device_id {
        self.device.id()
    }

    /// The backend's own in-order queue, which its sorts of host slices also use.
    pub fn queue(&self) -> &CommandQueue {
        &self.queue
    }

    /// Sorts the whole of `keys`, which live in this backend's context, in place on `queue`
    /// (an in-order queue of this backend's context and device).
    ///
    /// A buffer or queue of another context or device returns [`Error::ForeignBuffer`], an
    /// out-of-order queue [`Error::Unsupported`]; either enqueues nothing. The sort is enqueued, not finished: wait on `queue` before reading
    /// the keys. On a CPU device (such as PoCL) the call waits for the sort itself, because
    /// that driver must not run kernels of several contexts at once.
    ///
    /// ```no_run
    /// use opencl3::command_queue::CommandQueue;
    /// use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
    /// use opencl3::types::CL_BLOCKING;
    ///
    /// let sorter = bitonic::Sorter::builder().backend(bitonic::BackendKind::OpenCl).build()?;
    /// let cl = sorter.opencl().expect("an OpenCL sorter");
    /// let queue = CommandQueue::create_default(cl.context(), 0).unwrap();
    /// let mut host = [3i64, -1, 2];
    /// let mut keys = unsafe {
    ///     Buffer::<i64>::create(cl.context(), CL_MEM_READ_WRITE, 3, std::ptr::null_mut())
    /// }
    /// .unwrap();
    /// unsafe { queue.enqueue_write_buffer(&mut keys, CL_BLOCKING, 0, &host, &[]) }.unwrap();
    /// cl.sort_device(&mut keys, bitonic::Order::Ascending, &queue)?;
    /// unsafe { queue.enqueue_read_buffer(&keys, CL_BLOCKING, 0, &mut host, &[]) }.unwrap();
    /// assert_eq!(host, [-1, 2, 3]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn sort_device<K: WordKey>(
        &self,
        keys: &mut Buffer<K>,
        order: Order,
        queue: &CommandQueue,
    ) -> Result<()> {
        let keys = DeviceWords::of("keys", keys)?;
        self.sort_device_words(
            keys,
            None,
            KeyEncoding::of::<K>(order),
            keys.len.max(1),
            queue,
        )
    }

    /// Sorts `keys` in place on `queue` and moves `values` (4- or 8-byte elements, as many
    /// as the keys) with them; see [`OpenClBackend::sort_device`].
    pub fn sort_device_by_key<K: WordKey, V>(
        &self,
        keys: &mut Buffer<K>,
        values: &mut Buffer<V>,
        order: Order,
        queue: &CommandQueue,
    ) -> Result<()> {
        let keys = DeviceWords::of("keys", keys)?;
        let values = DeviceWords::of("values", values)?;
        self.sort_device_words(
            keys,
            Some(values),
            KeyEncoding::of::<K>(order),
            keys.len.max(1),
            queue,
        )
    }

    /// Sorts each row of `row_len` keys on its own, in place on `queue`; the buffer must hold
    /// a multiple of `row_len` keys. See [`OpenClBackend::sort_device`].
    pub fn sort_device_rows<K: WordKey>(
        &self,
        keys: &mut Buffer<K>,
        row_len: usize,
        order: Order,
        queue: &CommandQueue,
    ) -> Result<()> {
        let keys = DeviceWords::of("keys", keys)?;
        self.sort_device_words(keys, None, KeyEncoding::of::<K>(order), row_len, queue)
    }

    /// [`OpenClBackend::sort_device_rows`] with `values` (the same shape) moving with the
    /// keys.
    pub fn sort_device_rows_by_key<K: WordKey, V>(
        &self,
        keys: &mut Buffer<K>,
        values: &mut Buffer<V>,
        row_len: usize,
        order: Order,
        queue: &CommandQueue,
    ) -> Result<()> {
        let keys = DeviceWords::of("keys", keys)?;
        let values = DeviceWords::of("values", values)?;
        self.sort_device_words(
            keys,
            Some(values),
            KeyEncoding::of::<K>(order),
            row_len,
            queue,
        )
    }

    /// Every device-resident sort: checks the shapes and that the buffers and the queue are
    /// this backend's, then enqueues the planned launches on the caller's queue.
    pub(super) fn sort_device_words(
        &self,
        keys: DeviceWords,
        values: Option<DeviceWords>,
        encoding: KeyEncoding,
        row_len: usize,
        queue: &CommandQueue,
    ) -> Result<()> {
        check_rows_words(keys.len, values.map(|v| v.len), row_len)?;
        let value_bytes = values.map(|v| v.word_bytes);
        let variant = self.variant_of_widths(keys.word_bytes, value_bytes)?;
        self.check_queue(queue)?;
        for (what, words) in [("keys", Some(keys)), ("values", values)] {
            if let Some(words) = words {
                self.check_buffer(what, words)?;
            }
        }
        if row_len <= 1 {
            return Ok(());
        }
        let n = keys.len as u64;
        let requested = n.saturating_mul(variant.element_bytes);
        let shape = Shape::new(row_len as u64, n / row_len as u64);
        let operands = Operands {
            keys: keys.mem,
            values: values.map(|v| v.mem),
            // 16-bit keys sort in 32-bit registers and on-chip words: the plans and the
            // scratch count those.
            key_bytes: variant.key_bytes,
            value_bytes: value_bytes.unwrap_or(0) as u64,
        };
        let on_cpu = self.info.device_type == DeviceType::Cpu;
        let _one_at_a_time = on_cpu.then(|| hold(&CPU_DEVICE_RUNS));
        let mut scratch = self
            .device_scratch
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let plan = self.plan(&variant, shape, operands.key_bytes, operands.value_bytes);
        let planned = self.plan_with_scratch(
            &variant,
            &mut scratch.buffers,
            (plan, shape),
            (operands.key_bytes, operands.value_bytes),
            requested,
        )?;
        if let (Some(_), Some(done)) = (planned.1, &scratch.done) {
            // The previous sort that used the scratch may run on another queue.
            crate::fault::point(
                crate::backend::BackendKind::OpenCl,
                "clEnqueueBarrierWithWaitList",
            )?;
            // SAFETY: the wait list is one live event of this context.
            unsafe { queue.enqueue_barrier_with_wait_list(&[done.get()]) }
                .map_err(driver("clEnqueueBarrierWithWaitList"))?;
        }
        let last = {
            // Kernel arguments are set and used under the lock (see `Variant::kernels`).
            let kernels = variant.lock_kernels();
            // The kernels touch only the buffers' `n` elements. The buffers outlive the
            // launches: OpenCL retains a memory object for as long as enqueued commands use
            // it, whatever the caller releases.
            self.enqueue_plan(
                queue,
                &kernels,
                operands,
                shape,
                (&planned.0, planned.1),
                encoding,
                requested,
            )?
        };
        if planned.1.is_some() {
            scratch.done = last;
        }
        if on_cpu {
            queue.finish().map_err(driver("clFinish"))?;
        }
        Ok(())
    }

    /// Checks that `queue` is an in-order queue of this backend's context and device.
    pub(super) fn check_queue(&self, queue: &CommandQueue) -> Result<()> {
        if queue.context().map_err(driver("clGetCommandQueueInfo"))? != self.context.get()
            || queue.device().map_err(driver("clGetCommandQueueInfo"))? != self.device.id()
        {
            return Err(Error::ForeignBuffer(format!(
                "the command queue is not on this backend's context and device ({})",
                self.info.name
            )));
        }
        let properties = queue
            .properties()
            .map_err(driver("clGetCommandQueueInfo"))?;
        if properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0 {
            // The passes depend on each other and are enqueued without events between them.
            return Err(Error::Unsupported(
                "an out-of-order command queue: sort on an in-order queue".to_string(),
            ));
        }
        Ok(())
    }

    /// Checks that a caller's buffer belongs to this backend's context.
    pub(super) fn check_buffer(&self, what: &str, words: DeviceWords) -> Result<()> {
        let context =
            opencl3::memory::get_mem_object_info(words.mem, opencl3::memory::CL_MEM_CONTEXT)
                .map_err(|code| driver("clGetMemObjectInfo")(ClError(code)))?;
        if isize::from(context) as opencl3::types::cl_context != self.context.get() {
            return Err(Error::ForeignBuffer(format!(
                "the {what} buffer belongs to another OpenCL context than this backend's ({})",
                self.info.name
            )));
        }
        Ok(())
    }
}
