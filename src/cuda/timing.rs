//! Device-resident timing for benchmarks ([`crate::Backend::time_sort_words`]): the sort's
//! launches captured once in a CUDA graph and replayed between two events, after the
//! unsorted words are restored on the device.

use cust::event::{Event, EventFlags};
use cust::memory::DeviceBuffer;
use cust::stream::Stream;
use cust::sys as cu;
use std::ptr;

use super::driver::{check, on};
use super::{CudaBackend, Job, Widths, held_stream};
use crate::backend::BackendKind;
use crate::error::{Error, Result, check_rows_words};
use crate::keys::{KeyEncoding, WordsMut};
use cust::context::CurrentContext;

/// `BITONIC_CUDA_GRAPHS=0` times device-resident sorts with plain launches, not a graph.
const GRAPHS_ENV: &str = "BITONIC_CUDA_GRAPHS";

/// An instantiated CUDA graph of one job's launches, replayed by device-resident timing.
struct Graph {
    exec: cu::CUgraphExec,
    graph: cu::CUgraph,
}

impl Graph {
    /// Destroys the graph; its context must be current.
    fn destroy(self) {
        // SAFETY: both handles came from the driver and are destroyed exactly once, here.
        unsafe {
            cu::cuGraphExecDestroy(self.exec);
            cu::cuGraphDestroy(self.graph);
        }
    }
}

impl CudaBackend {
    /// Records the launches of `job` into a graph and instantiates it.
    fn capture(&self, job: &Job) -> Result<Graph> {
        let stream = self.stream.as_inner();
        // SAFETY: the stream belongs to the current context; nothing else launches on it
        // while `busy` is held, so the capture sees only this job.
        check("cuStreamBeginCapture", unsafe {
            cu::cuStreamBeginCapture_v2(
                stream,
                cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            )
        })?;
        let enqueued = self.enqueue(job, stream);
        let mut graph: cu::CUgraph = ptr::null_mut();
        // SAFETY: ends the capture begun above; `graph` is a valid out-pointer.
        let ended = check("cuStreamEndCapture", unsafe {
            cu::cuStreamEndCapture(stream, &mut graph)
        });
        enqueued?;
        ended?;
        let mut exec: cu::CUgraphExec = ptr::null_mut();
        // SAFETY: `graph` is the captured graph; `exec` is a valid out-pointer.
        let status = unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0) };
        if let Err(e) = check("cuGraphInstantiate", status) {
            // SAFETY: the graph came from the capture and is destroyed once.
            unsafe { cu::cuGraphDestroy(graph) };
            return Err(e);
        }
        Ok(Graph { exec, graph })
    }

    /// Device-resident timing; see [`crate::Backend::time_sort_words`].
    pub(super) fn time_rows(
        &self,
        keys: &mut WordsMut<'_>,
        values: &mut Option<WordsMut<'_>>,
        encoding: KeyEncoding,
        row_len: usize,
        warmup: usize,
        runs: usize,
    ) -> Result<Vec<f64>> {
        let n = keys.len();
        let row_len = if row_len == 0 { n } else { row_len };
        check_rows_words(n, values.as_ref().map(WordsMut::len), row_len)?;
        let key_bytes = keys.word_bytes();
        let value_bytes = values.as_ref().map_or(0, |v| v.word_bytes());
        let element_bytes = (key_bytes + value_bytes) as u64;
        let requested = (n as u64).saturating_mul(element_bytes).saturating_mul(2);
        let _busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        CurrentContext::set_current(&self.context).map_err(on("cuCtxSetCurrent"))?;
        let pristine_keys = self.upload(keys.as_bytes(), requested)?;
        let work_keys = self.alloc(pristine_keys.len(), requested)?;
        let pristine_values = match values.as_ref() {
            Some(v) => Some(self.upload(v.as_bytes(), requested)?),
            None => None,
        };
        let work_values = match &pristine_values {
            Some(p) => Some(self.alloc(p.len(), requested)?),
            None => None,
        };
        let job = Job {
            keys: work_keys.as_device_ptr().as_raw(),
            values: work_values
                .as_ref()
                .map_or(0, |v| v.as_device_ptr().as_raw()),
            kernels: self.kernels(key_bytes, value_bytes),
            launches: if row_len >= 2 {
                self.plan(
                    row_len as u64,
                    (n / row_len) as u64,
                    Widths {
                        key: key_bytes as u64,
                        value: value_bytes as u64,
                    },
                    encoding.code(),
                )
            } else {
                Vec::new()
            },
        };
        let use_graph = std::env::var(GRAPHS_ENV).map_or(true, |v| v.trim() != "0");
        let graph = if use_graph && !job.launches.is_empty() {
            Some(self.capture(&job)?)
        } else {
            None
        };
        let result = self.timed_runs(
            &job,
            graph.as_ref(),
            &pristine_keys,
            &work_keys,
            &pristine_values,
            &work_values,
            warmup,
            runs,
        );
        if let Some(g) = graph {
            g.destroy();
        }
        let times = result?;
        download(
            &self.stream,
            work_keys.as_device_ptr().as_raw(),
            work_values.as_ref().map(|v| v.as_device_ptr().as_raw()),
            keys,
            values,
        )?;
        Ok(times)
    }

    /// Restores the unsorted words (untimed) and sorts them `warmup + runs` times, timing the
    /// sort between two events.
    #[allow(clippy::too_many_arguments)]
    fn timed_runs(
        &self,
        job: &Job,
        graph: Option<&Graph>,
        pristine_keys: &DeviceBuffer<u8>,
        work_keys: &DeviceBuffer<u8>,
        pristine_values: &Option<DeviceBuffer<u8>>,
        work_values: &Option<DeviceBuffer<u8>>,
        warmup: usize,
        runs: usize,
    ) -> Result<Vec<f64>> {
        let start = Event::new(EventFlags::DEFAULT).map_err(on("cuEventCreate"))?;
        let stop = Event::new(EventFlags::DEFAULT).map_err(on("cuEventCreate"))?;
        let copy = |from: &DeviceBuffer<u8>, to: &DeviceBuffer<u8>| -> Result<()> {
            // SAFETY: both buffers are live allocations of the same length in this context.
            check("cuMemcpyDtoDAsync", unsafe {
                cu::cuMemcpyDtoDAsync_v2(
                    to.as_device_ptr().as_raw(),
                    from.as_device_ptr().as_raw(),
                    from.len(),
                    self.stream.as_inner(),
                )
            })
        };
        let held = if held_stream::enabled() {
            Some(held_stream::HeldStream::new()?)
        } else {
            None
        };
        let mut times = Vec::with_capacity(runs);
        // At least one sort, timed or not: the caller's slices receive the working words.
        for run in 0..(warmup + runs).max(1) {
            copy(pristine_keys, work_keys)?;
            if let (Some(p), Some(w)) = (pristine_values, work_values) {
                copy(p, w)?;
            }
            if let Some(h) = &held {
                h.hold(self.hold, self.stream.as_inner())?;
            }
            let queued = (|| -> Result<()> {
                start.record(&self.stream).map_err(on("cuEventRecord"))?;
                match graph {
                    // SAFETY: the graph was instantiated from this job's launches, whose
                    // buffers are still allocated.
                    Some(g) => check("cuGraphLaunch", unsafe {
                        cu::cuGraphLaunch(g.exec, self.stream.as_inner())
                    })?,
                    None => self.enqueue(job, self.stream.as_inner())?,
                }
                stop.record(&self.stream).map_err(on("cuEventRecord"))
            })();
            // Released on every path, so that nothing queued stays held.
            if let Some(h) = &held {
                h.release();
            }
            queued?;
            stop.synchronize().map_err(on("cuEventSynchronize"))?;
            if held.as_ref().is_some_and(|h| h.timed_out()) {
                return Err(Error::Driver {
                    backend: BackendKind::Cuda,
                    call: "hold_stream".to_string(),
                    code: 0,
                    message: format!(
                        "the timed work was not queued within the hold kernel's wait; \
                         the timing is void (set {}=0 to time without holding the stream)",
                        held_stream::HOLD_ENV
                    ),
                });
            }
            let ms = stop
                .elapsed_time_f32(&start)
                .map_err(on("cuEventElapsedTime"))?;
            // The untimed sort that stands in for no run asked for is not a timed run.
            if run >= warmup && times.len() < runs {
                times.push(f64::from(ms));
            }
        }
        Ok(times)
    }
}

/// Copies device keys (and values) at these addresses, as many bytes as the slices hold, into
/// the caller's slices through host staging memory, so that a failed copy leaves the slices
/// as they were.
fn download(
    stream: &Stream,
    device_keys: cu::CUdeviceptr,
    device_values: Option<cu::CUdeviceptr>,
    keys: &mut WordsMut<'_>,
    values: &mut Option<WordsMut<'_>>,
) -> Result<()> {
    let stage = |from: cu::CUdeviceptr, len: usize| -> Result<Vec<u8>> {
        let mut h = vec![0u8; len];
        crate::fault::point(BackendKind::Cuda, "cuMemcpyDtoHAsync")?;
        // On `stream`, not the legacy default stream (see `CudaBackend::copy_in`).
        // SAFETY: the device buffer at `from` holds at least `len` bytes (it was filled from
        // a slice of that length), `h` holds exactly `len` and outlives the copy, which has
        // finished when the stream is synchronized below.
        check("cuMemcpyDtoHAsync", unsafe {
            cu::cuMemcpyDtoHAsync_v2(h.as_mut_ptr().cast(), from, len, stream.as_inner())
        })?;
        stream.synchronize().map_err(on("cuStreamSynchronize"))?;
        Ok(h)
    };
    let staged_keys = stage(device_keys, keys.as_bytes().len())?;
    let staged_values = match (device_values, values.as_ref()) {
        (Some(from), Some(v)) => Some(stage(from, v.as_bytes().len())?),
        _ => None,
    };
    keys.as_bytes_mut().copy_from_slice(&staged_keys);
    if let (Some(h), Some(v)) = (staged_values, values.as_mut()) {
        v.as_bytes_mut().copy_from_slice(&h);
    }
    Ok(())
}
