//! Device-resident timing for benchmarks ([`crate::Backend::time_sort_words`]): the sort's
//! launches on a profiling queue, timed by their own events, after the unsorted words are
//! restored on the device.

use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
use opencl3::memory::{Buffer, ClMem};
use opencl3::types::CL_BLOCKING;

use super::driver::driver;
use super::plan::{self, Launch, Shape};
use super::programs::Variant;
use super::{CPU_DEVICE_RUNS, DeviceType, OpenClBackend, Operands, hold};
use crate::backend::BackendKind;
use crate::error::{Result, check_rows_words};
use crate::keys::{KeyEncoding, WordsMut};

/// Device buffers this backend owns: the pristine and working copies of device-resident
/// timing.
pub(super) struct Buffers {
    pub(super) keys: Buffer<u8>,
    pub(super) values: Option<Buffer<u8>>,
    pub(super) key_bytes: u64,
    pub(super) value_bytes: u64,
}

impl Buffers {
    pub(super) fn operands(&self) -> Operands {
        Operands {
            keys: self.keys.get(),
            values: self.values.as_ref().map(|v| v.get()),
            key_bytes: self.key_bytes,
            value_bytes: self.value_bytes,
        }
    }
}

impl OpenClBackend {
    /// A device buffer filled from `data` (a blocking upload).
    pub(super) fn upload(&self, data: &[u8], requested: u64) -> Result<Buffer<u8>> {
        let mut buffer = self.alloc(data.len(), requested)?;
        crate::fault::point(BackendKind::OpenCl, "clEnqueueWriteBuffer")?;
        // SAFETY: the write is blocking, so `data` is only read during this call, and the
        // buffer holds exactly `data.len()` bytes.
        unsafe {
            self.queue
                .enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, data, &[])
        }
        .map_err(self.memory_error("clEnqueueWriteBuffer", requested))?;
        Ok(buffer)
    }

    /// Device buffers holding `keys` and `values`.
    pub(super) fn upload_words(
        &self,
        keys: &WordsMut<'_>,
        values: Option<&WordsMut<'_>>,
        requested: u64,
    ) -> Result<Buffers> {
        Ok(Buffers {
            keys: self.upload(keys.as_bytes(), requested)?,
            values: match values {
                Some(v) => Some(self.upload(v.as_bytes(), requested)?),
                None => None,
            },
            key_bytes: keys.word_bytes() as u64,
            value_bytes: values.map_or(0, |v| v.word_bytes() as u64),
        })
    }

    /// Reads `device_keys` and `device_values` (as many bytes as the slices hold) back into
    /// host staging memory, then (only when every read succeeded) into `keys` and `values`:
    /// a failed read leaves the caller's slices as they were.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn download(
        &self,
        queue: &CommandQueue,
        device_keys: &Buffer<u8>,
        device_values: Option<&Buffer<u8>>,
        keys: &mut WordsMut<'_>,
        values: Option<&mut WordsMut<'_>>,
        requested: u64,
    ) -> Result<()> {
        let read = |buffer: &Buffer<u8>, len: usize| -> Result<Vec<u8>> {
            let mut staged = vec![0u8; len];
            crate::fault::point(BackendKind::OpenCl, "clEnqueueReadBuffer")?;
            // SAFETY: a blocking read of exactly the bytes the buffer holds into a slice of
            // the same length that lives across the call.
            unsafe { queue.enqueue_read_buffer(buffer, CL_BLOCKING, 0, &mut staged, &[]) }
                .map_err(self.memory_error("clEnqueueReadBuffer", requested))?;
            Ok(staged)
        };
        let staged_keys = read(device_keys, keys.as_bytes().len())?;
        let staged_values = match (&values, device_values) {
            (Some(v), Some(buffer)) => Some(read(buffer, v.as_bytes().len())?),
            _ => None,
        };
        keys.as_bytes_mut().copy_from_slice(&staged_keys);
        if let (Some(v), Some(staged)) = (values, staged_values) {
            v.as_bytes_mut().copy_from_slice(&staged);
        }
        Ok(())
    }

    /// Device-resident timing; see [`crate::Backend::time_sort_words`].
    pub(super) fn time_rows(
        &self,
        mut keys: WordsMut<'_>,
        mut values: Option<WordsMut<'_>>,
        encoding: KeyEncoding,
        row_len: usize,
        warmup: usize,
        runs: usize,
    ) -> Result<Vec<f64>> {
        let n = keys.len();
        let row_len = if row_len == 0 { n } else { row_len };
        check_rows_words(n, values.as_ref().map(WordsMut::len), row_len)?;
        let _one_at_a_time =
            (self.info.device_type == DeviceType::Cpu).then(|| hold(&CPU_DEVICE_RUNS));
        let variant = self.variant_for(&keys, values.as_ref())?;
        // Pristine and working copies.
        let requested = (n as u64)
            .saturating_mul(variant.element_bytes)
            .saturating_mul(2);
        self.check_memory(requested)?;
        let shape = Shape::new(row_len as u64, (n / row_len) as u64);
        let launches = if row_len >= 2 {
            plan::plan(&variant.limits, shape, variant.element_bytes)
        } else {
            Vec::new()
        };
        let queue = CommandQueue::create_default(&self.context, CL_QUEUE_PROFILING_ENABLE)
            .map_err(driver("clCreateCommandQueue"))?;
        let pristine = self.upload_words(&keys, values.as_ref(), requested)?;
        let mut work = Buffers {
            keys: self.alloc(keys.as_bytes().len(), requested)?,
            values: match &values {
                Some(v) => Some(self.alloc(v.as_bytes().len(), requested)?),
                None => None,
            },
            key_bytes: pristine.key_bytes,
            value_bytes: pristine.value_bytes,
        };
        let times = self.timed_runs(
            &queue, &variant, &pristine, &mut work, shape, &launches, encoding, requested, warmup,
            runs,
        );
        let finished = queue.finish().map_err(driver("clFinish"));
        let times = times?;
        finished?;
        self.download(
            &queue,
            &work.keys,
            work.values.as_ref(),
            &mut keys,
            values.as_mut(),
            requested,
        )?;
        Ok(times)
    }

    /// Restores the unsorted words (untimed) and sorts them `warmup + runs` times (at least
    /// once, so that the result is sorted), timing each sort from its first kernel's start to
    /// its last kernel's end.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn timed_runs(
        &self,
        queue: &CommandQueue,
        variant: &Variant,
        pristine: &Buffers,
        work: &mut Buffers,
        shape: Shape,
        launches: &[Launch],
        encoding: KeyEncoding,
        requested: u64,
        warmup: usize,
        runs: usize,
    ) -> Result<Vec<f64>> {
        let kernels = variant
            .kernels
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let copy = |from: &Buffer<u8>, to: &mut Buffer<u8>| -> Result<()> {
            let bytes = from.size().map_err(driver("clGetMemObjectInfo"))?;
            // SAFETY: both buffers are live allocations of `bytes` bytes in this context.
            unsafe { queue.enqueue_copy_buffer(from, to, 0, 0, bytes, &[]) }
                .map(drop)
                .map_err(self.memory_error("clEnqueueCopyBuffer", requested))
        };
        let mut times = Vec::with_capacity(runs);
        for run in 0..(warmup + runs).max(1) {
            copy(&pristine.keys, &mut work.keys)?;
            if let (Some(from), Some(to)) = (&pristine.values, &mut work.values) {
                copy(from, to)?;
            }
            let events = self.enqueue_sort(
                queue,
                &kernels,
                work.operands(),
                shape,
                launches,
                encoding,
                requested,
            )?;
            queue
                .finish()
                .map_err(self.memory_error("clFinish", requested))?;
            if run < warmup {
                continue;
            }
            let ms = match (events.first(), events.last()) {
                (Some(first), Some(last)) => {
                    let start = first
                        .profiling_command_start()
                        .map_err(driver("clGetEventProfilingInfo"))?;
                    let end = last
                        .profiling_command_end()
                        .map_err(driver("clGetEventProfilingInfo"))?;
                    end.saturating_sub(start) as f64 / 1e6
                }
                _ => 0.0,
            };
            if times.len() < runs {
                times.push(ms);
            }
        }
        Ok(times)
    }
}
