//! OpenCL: the sort is enqueued through `OpenClBackend::sort_device*` on a profiling queue
//! of this module's, between two launches of an empty kernel; the time is from the end of
//! the first to the start of the second, read from their profiling events. On GPUs the
//! first waits for a user event that the host completes once the whole sort is queued (the
//! queue is held, as the CUDA timing holds its stream), so that the host's work of queuing
//! the sort is not inside the time. CPU devices are not held: there the sort call waits for
//! its own kernels. The only driver calls of the benchmark crate for OpenCL are here.

use std::ptr;

use bitonic::internals::Backend;
use bitonic::opencl::OpenClBackend;
use bitonic::{DeviceType, Order, WordKey};
use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
use opencl3::event::{CL_COMPLETE, Event, create_user_event, set_user_event_status};
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::CL_BLOCKING;

use super::{Shape, on};

/// The marks around the timed sort.
const MARK_SOURCE: &str = "__kernel void mark(void) {}";

/// A device buffer of this context holding a copy of `data` (a blocking write).
fn upload<T>(cl: &OpenClBackend, queue: &CommandQueue, data: &[T]) -> Result<Buffer<T>, String> {
    // SAFETY: no host pointer is given; the buffer holds `data.len()` elements.
    let mut buffer = unsafe {
        Buffer::<T>::create(cl.context(), CL_MEM_READ_WRITE, data.len(), ptr::null_mut())
    }
    .map_err(on("clCreateBuffer"))?;
    // SAFETY: a blocking write of exactly the buffer's elements from a live slice.
    unsafe { queue.enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, data, &[]) }
        .map_err(on("clEnqueueWriteBuffer"))?;
    Ok(buffer)
}

/// Reads all of `buffer` into `out` (a blocking read).
fn download<T>(queue: &CommandQueue, buffer: &Buffer<T>, out: &mut [T]) -> Result<(), String> {
    // SAFETY: a blocking read of exactly the buffer's elements into a live slice.
    unsafe { queue.enqueue_read_buffer(buffer, CL_BLOCKING, 0, out, &[]) }
        .map(drop)
        .map_err(on("clEnqueueReadBuffer"))
}

/// Copies `from` over `to` on `queue` (untimed: before the first mark).
fn restore<T>(
    queue: &CommandQueue,
    from: &Buffer<T>,
    to: &mut Buffer<T>,
    len: usize,
) -> Result<(), String> {
    let bytes = len * std::mem::size_of::<T>();
    // SAFETY: both buffers are live allocations of `bytes` bytes in the same context.
    unsafe { queue.enqueue_copy_buffer(from, to, 0, 0, bytes, &[]) }
        .map(drop)
        .map_err(on("clEnqueueCopyBuffer"))
}

/// Enqueues the empty kernel, after `after` when given.
fn mark(queue: &CommandQueue, kernel: &Kernel, after: Option<&Event>) -> Result<Event, String> {
    let mut launch = ExecuteKernel::new(kernel);
    launch.set_global_work_size(1);
    if let Some(e) = after {
        launch.set_wait_event(e);
    }
    // SAFETY: the kernel takes no arguments; one work-item.
    unsafe { launch.enqueue_nd_range(queue) }.map_err(on("clEnqueueNDRangeKernel"))
}

/// A user event that holds the queue until [`Gate::open`] (or its drop) completes it.
struct Gate(Event);

impl Gate {
    fn new(cl: &OpenClBackend) -> Result<Gate, String> {
        let event = create_user_event(cl.context().get()).map_err(on("clCreateUserEvent"))?;
        Ok(Gate(Event::new(event)))
    }

    fn open(&self) -> Result<(), String> {
        set_user_event_status(self.0.get(), CL_COMPLETE).map_err(on("clSetUserEventStatus"))
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        // Completing an event twice is an error the driver reports and nothing else; a
        // gate that was never opened must not leave the queue waiting forever.
        let _ = set_user_event_status(self.0.get(), CL_COMPLETE);
    }
}

/// Times the sort of `keys` (and `values`) on `cl`'s device; see [`super::time_sort`].
pub(super) fn time<K: WordKey>(
    cl: &OpenClBackend,
    keys: &mut [K],
    values: Option<&mut [u32]>,
    shape: Shape,
) -> Result<Vec<f64>, String> {
    let n = keys.len();
    let marks = Marks::new(cl)?;
    let queue = &marks.queue;
    let pristine_keys = upload(cl, queue, keys)?;
    let pristine_values = match values.as_deref() {
        Some(v) => Some(upload(cl, queue, v)?),
        None => None,
    };
    let mut work = (
        upload(cl, queue, keys)?,
        match values.as_deref() {
            Some(v) => Some(upload(cl, queue, v)?),
            None => None,
        },
    );
    let times = marks.time(
        cl,
        shape,
        &mut work,
        &mut |(work_keys, work_values), queue| {
            restore(queue, &pristine_keys, work_keys, n)?;
            if let (Some(p), Some(w)) = (&pristine_values, work_values) {
                restore(queue, p, w, n)?;
            }
            Ok(())
        },
        &mut |(work_keys, work_values), queue| {
            match (work_values, shape.row_len) {
                (None, 0) => cl.sort_device(work_keys, Order::Ascending, queue),
                (None, r) => cl.sort_device_rows(work_keys, r, Order::Ascending, queue),
                (Some(v), 0) => cl.sort_device_by_key(work_keys, v, Order::Ascending, queue),
                (Some(v), r) => {
                    cl.sort_device_rows_by_key(work_keys, v, r, Order::Ascending, queue)
                }
            }
            .map_err(|e| format!("sort: {e}"))
        },
    )?;
    download(queue, &work.0, keys)?;
    if let (Some(w), Some(v)) = (&work.1, values) {
        download(queue, w, v)?;
    }
    Ok(times)
}

/// Times `OpenClBackend::top_k_device_rows` on `keys` (rows of `row_len`, the `k` best of
/// each in `order`); see [`super::time_top_k`]. The keys are only read: nothing is restored.
pub(super) fn time_top_k<K: WordKey>(
    cl: &OpenClBackend,
    keys: &[K],
    (row_len, k, order): (usize, usize, Order),
    shape: Shape,
) -> Result<super::TopKTimes<K>, String> {
    let marks = Marks::new(cl)?;
    let queue = &marks.queue;
    let selected = keys.len() / row_len * k;
    let input = upload(cl, queue, keys)?;
    let mut work = (
        upload(cl, queue, &vec![K::zeroed(); selected])?,
        upload(cl, queue, &vec![0u32; selected])?,
    );
    let times = marks.time(
        cl,
        shape,
        &mut work,
        &mut |_, _| Ok(()),
        &mut |(values, indices), queue| {
            cl.top_k_device_rows(&input, row_len, k, order, values, indices, queue)
                .map_err(|e| format!("top-k: {e}"))
        },
    )?;
    let mut values = vec![K::zeroed(); selected];
    let mut indices = vec![0u32; selected];
    download(queue, &work.0, &mut values)?;
    download(queue, &work.1, &mut indices)?;
    Ok((times, values, indices))
}

/// A profiling queue of the backend's context and the empty kernel that marks the start and
/// the end of the timed work.
struct Marks {
    queue: CommandQueue,
    kernel: Kernel,
}

impl Marks {
    fn new(cl: &OpenClBackend) -> Result<Marks, String> {
        #[allow(deprecated)] // clCreateCommandQueue: the OpenCL 1.2 call, which every driver has
        let queue = CommandQueue::create_default(cl.context(), CL_QUEUE_PROFILING_ENABLE)
            .map_err(on("clCreateCommandQueue"))?;
        let program = Program::create_and_build_from_source(cl.context(), MARK_SOURCE, "")
            .map_err(|log| format!("building the mark kernel failed: {log}"))?;
        let kernel = Kernel::create(&program, "mark").map_err(on("clCreateKernel"))?;
        Ok(Marks { queue, kernel })
    }

    /// Times what `enqueue` puts on the queue (working on `work`), `warmup + runs` times,
    /// each after `restore` (untimed); on GPUs the queue is held while the work is queued.
    fn time<T>(
        &self,
        cl: &OpenClBackend,
        shape: Shape,
        work: &mut T,
        restore: &mut dyn FnMut(&mut T, &CommandQueue) -> Result<(), String>,
        enqueue: &mut dyn FnMut(&mut T, &CommandQueue) -> Result<(), String>,
    ) -> Result<Vec<f64>, String> {
        let (queue, kernel) = (&self.queue, &self.kernel);
        let hold = cl.device().device_type != DeviceType::Cpu;
        let mut times = Vec::with_capacity(shape.runs);
        for run in 0..shape.warmup + shape.runs {
            restore(work, queue)?;
            let gate = if hold { Some(Gate::new(cl)?) } else { None };
            let before = mark(queue, kernel, gate.as_ref().map(|g| &g.0))?;
            let after = enqueue(work, queue).and_then(|()| mark(queue, kernel, None));
            if let Some(g) = &gate {
                g.open()?;
            }
            drop(gate);
            let after = after?;
            queue.finish().map_err(on("clFinish"))?;
            if run < shape.warmup {
                continue;
            }
            let start = before
                .profiling_command_end()
                .map_err(on("clGetEventProfilingInfo"))?;
            let end = after
                .profiling_command_start()
                .map_err(on("clGetEventProfilingInfo"))?;
            times.push(end.saturating_sub(start) as f64 / 1e6);
        }
        Ok(times)
    }
}
