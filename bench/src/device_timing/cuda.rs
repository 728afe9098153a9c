//! CUDA: the sort is enqueued through `CudaBackend::sort_device*` on a stream of this
//! module's, captured once in a CUDA graph (unless turned off) and timed between two events,
//! with the stream held by `cuda/hold.cu` while the timed work is queued (unless turned off).
//! The only driver calls of the benchmark crate are here.

use std::ffi::c_void;
use std::ptr;

use bitonic::Order;
use bitonic::cuda::CudaBackend;
use bitonic::internals::Backend;
use cust::context::{Context, CurrentContext};
use cust::device::Device;
use cust::event::{Event, EventFlags};
use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy, DeviceSlice};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use cust::sys as cu;

use super::cuda_keys::CudaKey;
use super::{CudaOptions, Shape, on};

/// The hold kernel (`cuda/hold.cu`), compiled by build.rs.
const HOLD_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/hold.ptx"));

/// How long the hold kernel waits for its release before it gives up: a host that queues
/// the timed work needs microseconds; a second means it blocked on the held stream itself.
const HOLD_TIMEOUT_NS: u64 = 1_000_000_000;

fn check(call: &str, status: cu::CUresult) -> Result<(), String> {
    if status == cu::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("{call} failed: {status:?}"))
    }
}

/// Makes `cuda`'s device's primary context, the one the backend works in, current for the
/// caller's scope.
fn context_of(cuda: &CudaBackend) -> Result<Context, String> {
    let device = Device::get_device(cuda.device().index as u32).map_err(on("cuDeviceGet"))?;
    Context::new(device).map_err(on("cuDevicePrimaryCtxRetain"))
}

/// A device buffer holding a copy of `data`.
fn upload<T: DeviceCopy>(data: &[T]) -> Result<DeviceBuffer<T>, String> {
    DeviceBuffer::from_slice(data).map_err(on("cuMemAlloc/cuMemcpyHtoD"))
}

/// Times the sort of `keys` (and `values`) on `cuda`'s device; see [`super::time_sort`].
pub(super) fn time<K: CudaKey>(
    cuda: &CudaBackend,
    keys: &mut [K],
    values: Option<&mut [u32]>,
    shape: Shape,
    options: CudaOptions,
) -> Result<Vec<f64>, String> {
    let _context = context_of(cuda)?;
    let stored: &mut [K::Stored] = bytemuck::cast_slice_mut(keys);
    let pristine_keys = upload(stored)?;
    let work_keys = upload(stored)?;
    let pristine_values = values.as_deref().map(upload).transpose()?;
    let work_values = values.as_deref().map(upload).transpose()?;
    // The uploads above may still be in flight on the legacy stream.
    CurrentContext::synchronize().map_err(on("cuCtxSynchronize"))?;
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).map_err(on("cuStreamCreate"))?;
    let mut work = Work::<K> {
        keys: work_keys,
        values: work_values,
    };
    let restore_all = |work: &Work<K>, stream: &Stream| -> Result<(), String> {
        restore(&pristine_keys, &work.keys, stream)?;
        if let (Some(p), Some(w)) = (&pristine_values, &work.values) {
            restore(p, w, stream)?;
        }
        Ok(())
    };
    let times = time_enqueued(
        &stream,
        shape,
        options,
        &mut work,
        &restore_all,
        &mut |w, s| w.sort(cuda, shape.row_len, s),
    )?;
    work.keys.copy_to(stored).map_err(on("cuMemcpyDtoH"))?;
    if let (Some(w), Some(v)) = (&work.values, values) {
        w.copy_to(v).map_err(on("cuMemcpyDtoH"))?;
    }
    Ok(times)
}

/// Times what `enqueue` puts on `stream` (working on `work`): once plainly (whatever is
/// done once per shape happens outside the capture and the timing), then captured in a
/// graph unless `options` says otherwise, then `warmup + runs` times, each after `restore`
/// (untimed) and with the stream held unless `options` says otherwise. The current context
/// must be the one `stream` belongs to.
fn time_enqueued<T>(
    stream: &Stream,
    shape: Shape,
    options: CudaOptions,
    work: &mut T,
    restore: &dyn Fn(&T, &Stream) -> Result<(), String>,
    enqueue: &mut dyn FnMut(&mut T, &Stream) -> Result<(), String>,
) -> Result<Vec<f64>, String> {
    enqueue(work, stream)?;
    stream.synchronize().map_err(on("cuStreamSynchronize"))?;
    let graph = if options.graph {
        Some(Graph::capture(stream, &mut |s| enqueue(work, s))?)
    } else {
        None
    };
    let hold = if options.hold {
        Some(Hold::new()?)
    } else {
        None
    };
    let start = Event::new(EventFlags::DEFAULT).map_err(on("cuEventCreate"))?;
    let stop = Event::new(EventFlags::DEFAULT).map_err(on("cuEventCreate"))?;
    let mut times = Vec::with_capacity(shape.runs);
    for run in 0..shape.warmup + shape.runs {
        restore(work, stream)?;
        if let Some(h) = &hold {
            h.hold(stream)?;
        }
        let queued = (|| -> Result<(), String> {
            start.record(stream).map_err(on("cuEventRecord"))?;
            match &graph {
                Some(g) => g.launch(stream)?,
                None => enqueue(work, stream)?,
            }
            stop.record(stream).map_err(on("cuEventRecord"))
        })();
        // Released on every path, so that nothing queued stays held.
        if let Some(h) = &hold {
            h.release();
        }
        queued?;
        stop.synchronize().map_err(on("cuEventSynchronize"))?;
        if hold.as_ref().is_some_and(Hold::timed_out) {
            return Err(
                "the timed work was not queued within the hold kernel's wait; \
                        the timing is void (--no-hold times without holding the stream)"
                    .into(),
            );
        }
        let ms = stop
            .elapsed_time_f32(&start)
            .map_err(on("cuEventElapsedTime"))?;
        if run >= shape.warmup {
            times.push(f64::from(ms));
        }
    }
    drop(graph);
    Ok(times)
}

/// The buffers the timed sorts work on.
struct Work<K: CudaKey> {
    keys: DeviceBuffer<K::Stored>,
    values: Option<DeviceBuffer<u32>>,
}

impl<K: CudaKey> Work<K> {
    /// Enqueues the sort on `stream`.
    fn sort(&mut self, cuda: &CudaBackend, row_len: usize, stream: &Stream) -> Result<(), String> {
        let values = self.values.as_deref_mut();
        K::sort(
            cuda,
            &mut self.keys,
            values,
            row_len,
            Order::Ascending,
            stream,
        )
        .map_err(|e| format!("sort: {e}"))
    }
}

/// Copies `from` over `to` on `stream` (untimed: before the start event).
fn restore<T: DeviceCopy>(
    from: &DeviceSlice<T>,
    to: &DeviceSlice<T>,
    stream: &Stream,
) -> Result<(), String> {
    // SAFETY: both are live allocations of the same length in the current context, and
    // nothing else reads or writes them while the copy runs (everything is on `stream`).
    check("cuMemcpyDtoDAsync", unsafe {
        cu::cuMemcpyDtoDAsync_v2(
            to.as_device_ptr().as_raw(),
            from.as_device_ptr().as_raw(),
            std::mem::size_of::<T>() * from.len(),
            stream.as_inner(),
        )
    })
}

/// An instantiated CUDA graph of the sort's launches.
struct Graph {
    exec: cu::CUgraphExec,
    graph: cu::CUgraph,
}

impl Graph {
    /// Records what `sort` enqueues on `stream` into a graph and instantiates it.
    fn capture(
        stream: &Stream,
        sort: &mut dyn FnMut(&Stream) -> Result<(), String>,
    ) -> Result<Graph, String> {
        // SAFETY: the stream belongs to the current context and nothing else enqueues on it.
        check("cuStreamBeginCapture", unsafe {
            cu::cuStreamBeginCapture_v2(
                stream.as_inner(),
                cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            )
        })?;
        let enqueued = sort(stream);
        let mut graph: cu::CUgraph = ptr::null_mut();
        // SAFETY: ends the capture begun above; `graph` is a valid out-pointer.
        let ended = check("cuStreamEndCapture", unsafe {
            cu::cuStreamEndCapture(stream.as_inner(), &mut graph)
        });
        enqueued
            .map_err(|e| format!("{e} (while capturing a graph; --no-graph launches plainly)"))?;
        ended?;
        let mut exec: cu::CUgraphExec = ptr::null_mut();
        // SAFETY: `graph` came from the capture; `exec` is a valid out-pointer.
        let status = unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0) };
        if let Err(e) = check("cuGraphInstantiate", status) {
            // SAFETY: the graph came from the capture and is destroyed once.
            unsafe { cu::cuGraphDestroy(graph) };
            return Err(e);
        }
        Ok(Graph { exec, graph })
    }

    fn launch(&self, stream: &Stream) -> Result<(), String> {
        // SAFETY: the graph was instantiated from launches on buffers that outlive it.
        check("cuGraphLaunch", unsafe {
            cu::cuGraphLaunch(self.exec, stream.as_inner())
        })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: both handles came from the driver and are destroyed exactly once, here,
        // with their context current.
        unsafe {
            cu::cuGraphExecDestroy(self.exec);
            cu::cuGraphDestroy(self.graph);
        }
    }
}

/// The hold kernel and the mapped flag it spins on. Created and dropped with the context
/// current.
struct Hold {
    /// Never read, but it must stay loaded while `function` is used.
    _module: Module,
    function: cu::CUfunction,
    /// Host address of the flag (page-locked, mapped into the device).
    host: *mut u32,
    /// The device's address of the same word.
    device: u64,
}

impl Hold {
    fn new() -> Result<Hold, String> {
        let module = Module::from_ptx(HOLD_PTX, &[]).map_err(on("cuModuleLoadData"))?;
        let function = module
            .get_function("hold_stream")
            .map_err(on("cuModuleGetFunction"))?
            .to_raw();
        let mut host: *mut c_void = ptr::null_mut();
        // SAFETY: allocates 4 bytes of page-locked host memory mapped into the current
        // context; `host` is a valid out-pointer.
        check("cuMemHostAlloc", unsafe {
            cu::cuMemHostAlloc(&mut host, 4, cu::CU_MEMHOSTALLOC_DEVICEMAP)
        })?;
        // Owned from here on, so that an error below frees it.
        let mut hold = Hold {
            _module: module,
            function,
            host: host.cast(),
            device: 0,
        };
        // SAFETY: `host` was allocated with CU_MEMHOSTALLOC_DEVICEMAP just above.
        check("cuMemHostGetDevicePointer", unsafe {
            cu::cuMemHostGetDevicePointer_v2(&mut hold.device, host, 0)
        })?;
        Ok(hold)
    }

    /// Queues the hold kernel on `stream`: work queued after it waits for [`Hold::release`].
    fn hold(&self, stream: &Stream) -> Result<(), String> {
        // SAFETY: `host` is the live 4-byte allocation of `new`; the previous hold kernel on
        // this stream has finished (the caller waited for the work behind it).
        unsafe { ptr::write_volatile(self.host, 0) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let (mut flag, mut timeout) = (self.device, HOLD_TIMEOUT_NS);
        let mut params = [
            &mut flag as *mut u64 as *mut c_void,
            &mut timeout as *mut u64 as *mut c_void,
        ];
        // SAFETY: the parameters match `hold_stream(volatile unsigned *flag, unsigned long
        // long timeout_ns)`; `flag` is the device address of the live mapped word; one
        // thread, no shared memory.
        check("cuLaunchKernel", unsafe {
            cu::cuLaunchKernel(
                self.function,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                stream.as_inner(),
                params.as_mut_ptr(),
                ptr::null_mut(),
            )
        })
    }

    /// Lets the held stream go on.
    fn release(&self) {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        // SAFETY: `host` is the live 4-byte allocation of `new`.
        unsafe { ptr::write_volatile(self.host, 1) };
    }

    /// Whether the kernel gave up waiting (the timing of the work behind it is void). Read
    /// it after the work behind the hold kernel has finished.
    fn timed_out(&self) -> bool {
        // SAFETY: `host` is the live 4-byte allocation of `new`.
        unsafe { ptr::read_volatile(self.host) == 2 }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        // SAFETY: `host` came from cuMemHostAlloc in this context (current, as documented
        // on the type) and is freed once; nothing useful can be done about a failure.
        unsafe { cu::cuMemFreeHost(self.host.cast()) };
    }
}

/// The buffers of a timed top-k: the keys (read only) and the selected values and indices.
struct TopKWork<K: CudaKey> {
    keys: DeviceBuffer<K::Stored>,
    values: DeviceBuffer<K::Stored>,
    indices: DeviceBuffer<u32>,
}

/// Times the top-k of `keys` (rows of `row_len`, the `k` best of each in `order`) on
/// `cuda`'s device; see [`super::time_top_k`]. The keys are only read, so nothing is
/// restored between runs.
pub(super) fn time_top_k<K: CudaKey>(
    cuda: &CudaBackend,
    keys: &[K],
    (row_len, k, order): (usize, usize, Order),
    shape: Shape,
    options: CudaOptions,
) -> Result<super::TopKTimes<K>, String> {
    let _context = context_of(cuda)?;
    let selected = keys.len() / row_len * k;
    let mut work = TopKWork::<K> {
        keys: upload(bytemuck::cast_slice(keys))?,
        values: upload(&bytemuck::zeroed_vec::<K::Stored>(selected))?,
        indices: upload(&vec![0u32; selected])?,
    };
    // The uploads above may still be in flight on the legacy stream.
    CurrentContext::synchronize().map_err(on("cuCtxSynchronize"))?;
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).map_err(on("cuStreamCreate"))?;
    let times = time_enqueued(
        &stream,
        shape,
        options,
        &mut work,
        &|_, _| Ok(()),
        &mut |w, s| {
            K::top_k(
                cuda,
                &w.keys,
                row_len,
                k,
                order,
                &mut w.values,
                &mut w.indices,
                s,
            )
            .map_err(|e| format!("top-k: {e}"))
        },
    )?;
    let mut values: Vec<K> = bytemuck::zeroed_vec(selected);
    let mut indices = vec![0u32; selected];
    work.values
        .copy_to(bytemuck::cast_slice_mut(&mut values[..]))
        .map_err(on("cuMemcpyDtoH"))?;
    work.indices
        .copy_to(&mut indices[..])
        .map_err(on("cuMemcpyDtoH"))?;
    Ok((times, values, indices))
}
