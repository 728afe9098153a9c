//! Sorts of host slices on the CUDA device: the columns go up through the transfer
//! engine's pinned ring, the planned passes run on the backend's stream, and the result comes
//! back through the ring. A merge-path sort long enough sorts while it uploads
//! ([`ChunkedSort`]).

use cust::context::CurrentContext;
use cust::sys as cu;

use super::device_resident::DeviceWords;
use super::driver::on;
use super::link::{CudaLink, hand_over};
use super::plan::Widths;
use super::plan::{self, DeviceLimits, MergeLaunch, MergePathPlan, SortPlan};
use super::{CudaBackend, HostState, Job, ScratchWords};
use crate::backend::BackendKind;
use crate::buffer_cache::grow;
use crate::error::Result;
use crate::gpu::HostSort;
use crate::host_transfer::Column;
use crate::keys::KeyEncoding;
use crate::rayon_lock::{RayonLockGuard, lock_shared_with_rayon};
use crate::schedule::merge_path::{UploadChunks, upload_chunk};
use crate::shape::debug_assert_rows_words;

/// A host-slice merge-path sort that sorts while it uploads: each chunk
/// (`crate::schedule::merge_path::upload_chunk`) is sorted as soon as it has arrived, while
/// the next ones cross the bus.
struct ChunkedSort<'j> {
    job: &'j Job,
    whole: &'j MergePathPlan,
    scratch: ScratchWords,
    chunks: UploadChunks,
}

impl<'j> ChunkedSort<'j> {
    /// The chunks of `job`, a sort of `n` elements, where it sorts while uploading.
    fn of(job: &'j Job, n: u64) -> Option<ChunkedSort<'j>> {
        #[cfg(test)]
        if super::tests::transfer_timings::SORT_AFTER_UPLOAD.with(std::cell::Cell::get) {
            return None;
        }
        let (SortPlan::MergePath(whole), Some(scratch)) = (&job.plan, job.scratch) else {
            return None;
        };
        // Rows upload whole: a chunk of the data is not a chunk of each row.
        if whole.tile_sort.args.rows > 1 {
            return None;
        }
        let log_chunk = upload_chunk(n, job.widths.element(), whole.tile_sort.args.tile_bits)?;
        Some(ChunkedSort {
            job,
            whole,
            scratch,
            chunks: UploadChunks::new(n, log_chunk),
        })
    }

    /// The job that sorts the `m` elements from `first` on their own, as the whole sort's
    /// first passes would ([`plan::chunk_plan`]): the words and scratch from `first` on.
    fn part(&self, first: u64, m: u64, limits: &DeviceLimits) -> Job {
        let (args, widths) = (self.whole.tile_sort.args, self.job.widths);
        let log_chunk = self.chunks.log_chunk();
        let plan = plan::chunk_plan(limits, m, args.tile_bits, log_chunk, widths, args.encoding);
        // Null addresses (no values) stay null.
        let at = |address: u64, bytes: u64| {
            if address == 0 {
                0
            } else {
                address + first * bytes
            }
        };
        Job {
            keys: at(self.job.keys, widths.key),
            values: at(self.job.values, widths.value),
            kernels: self.job.kernels,
            widths,
            plan: SortPlan::MergePath(plan),
            scratch: Some(ScratchWords {
                keys: at(self.scratch.keys, widths.key),
                values: at(self.scratch.values, widths.value),
                splits: self.scratch.splits,
            }),
        }
    }
}

impl HostSort for CudaBackend {
    /// Every sort of host slices: uploads the columns through the pinned ring, sorts rows of
    /// `row_len` on the stream, and copies the result back through the ring as it arrives,
    /// into the columns themselves or, when given, into `out` (of the same shape).
    fn sort_host<'a>(
        &self,
        mut keys: Column<'a>,
        mut values: Option<Column<'a>>,
        out: Option<(Column<'a>, Option<Column<'a>>)>,
        encoding: KeyEncoding,
        row_len: usize,
    ) -> Result<()> {
        let n = keys.len();
        debug_assert_rows_words(n, values.as_ref().map(Column::len), row_len);
        if row_len <= 1 {
            return Ok(());
        }
        let value_bytes = values.as_ref().map_or(0, Column::word_bytes);
        let requested = (n as u64).saturating_mul((keys.word_bytes() + value_bytes) as u64);
        let mut host = self.lock_host(requested)?;
        let host = &mut *host;
        let job = self.host_job(host, (&keys, values.as_ref()), encoding, row_len, requested)?;
        let link = CudaLink {
            stream: &self.stream,
            context: self.context.as_raw(),
        };
        let sorted = self.transfer_and_sort(host, &link, &job, (&mut keys, values.as_mut()), out);
        let sorted = host.after_sort(sorted);
        // The ring may have been allocated only now (the keys went up directly), and the
        // buffers freed after running out of memory.
        self.cache_stats.keep(host);
        sorted
    }
}

impl CudaBackend {
    /// The device buffers and plan of a host-slice sort of `keys` (and `values`) in rows of
    /// `row_len` (at least 2), grown in `host`'s buffers; `requested` bytes are what an
    /// out-of-memory error reports.
    fn host_job(
        &self,
        host: &mut HostState,
        (keys, values): (&Column<'_>, Option<&Column<'_>>),
        encoding: KeyEncoding,
        row_len: usize,
        requested: u64,
    ) -> Result<Job> {
        let key_bytes = keys.word_bytes();
        let value_bytes = values.map_or(0, Column::word_bytes);
        let widths = Widths {
            key: key_bytes as u64,
            value: value_bytes as u64,
        };
        let rows = (keys.len() / row_len) as u64;
        let allocated = host.buffers.fill(|buffers| {
            let alloc = |len| self.alloc(len, requested);
            let device_keys = grow(&mut buffers.keys, keys.device_bytes(), alloc)?;
            let device_keys = device_keys.as_device_ptr().as_raw();
            let device_values = match values {
                Some(v) => {
                    let buffer = grow(&mut buffers.values, v.device_bytes(), alloc)?;
                    buffer.as_device_ptr().as_raw()
                }
                None => 0,
            };
            let plan = self.upload_plan(row_len as u64, rows, widths, encoding.code());
            let (plan, scratch) = self.plan_with_scratch(
                &mut buffers.scratch,
                plan,
                row_len as u64,
                rows,
                widths,
                encoding.code(),
            )?;
            Ok((device_keys, device_values, plan, scratch))
        });
        self.cache_stats.keep(host);
        let (keys, values, plan, scratch) = allocated?;
        Ok(Job {
            keys,
            values,
            kernels: self.kernels(key_bytes, value_bytes),
            widths,
            plan,
            scratch,
        })
    }

    /// Uploads the columns into `job`'s words, enqueues its passes and copies the result
    /// back, in the sorter's copy-back mode ([`CudaBackend::upload_and_sort`]).
    fn transfer_and_sort<'a>(
        &self,
        host: &mut HostState,
        link: &CudaLink<'_>,
        job: &Job,
        (keys, values): (&mut Column<'a>, Option<&mut Column<'a>>),
        out: Option<(Column<'a>, Option<Column<'a>>)>,
    ) -> Result<()> {
        let chunked = self.upload_and_sort(host, link, job, (keys, values.as_deref()))?;
        // The downloads follow the passes: a failed pass is reported by the first download's
        // wait, before anything is written to the slices.
        let mut out = out;
        let (keys, values) = match &mut out {
            Some((k, v)) => (k, v.as_mut()),
            None => (keys, values),
        };
        let downloaded = host.download(
            link,
            (keys, job.keys),
            values.map(|v| (v, job.values)),
            self.cache_stats.copy_back(),
        );
        if downloaded.is_err() && chunked {
            let _ = self.sort_stream.synchronize();
        }
        downloaded
    }

    /// Uploads the columns into `job`'s words and enqueues its passes, after which the link's
    /// stream may copy the result. A merge-path sort long enough sorts while it uploads
    /// ([`ChunkedSort`]): its chunks' passes run on `sort_stream` as they arrive, the merges
    /// of whole chunks after the last, and the link's stream waits for them. Whether it
    /// sorted in chunks; on an error, the launches and copies already queued have finished.
    fn upload_and_sort<'a>(
        &self,
        host: &mut HostState,
        link: &CudaLink<'_>,
        job: &Job,
        (keys, values): (&Column<'a>, Option<&Column<'a>>),
    ) -> Result<bool> {
        let mut chunked = ChunkedSort::of(job, keys.len() as u64);
        let uploaded = host.upload(
            link,
            (keys, job.keys),
            values.map(|v| (v, job.values)),
            &mut |landed| match &mut chunked {
                Some(c) => self.sort_landed_chunks(c, landed as u64),
                None => Ok(()),
            },
        );
        self.cache_stats.keep(host);
        let enqueued = uploaded.and_then(|()| match &mut chunked {
            Some(c) => self.merge_sorted_chunks(c),
            None => self.enqueue(job, self.stream.as_inner()),
        });
        if enqueued.is_err() {
            // Let the launches and copies already queued finish before the buffers are reused
            // or freed; the first error is the one to report.
            let _ = self.sort_stream.synchronize();
            let _ = self.stream.synchronize();
        }
        enqueued.map(|()| chunked.is_some())
    }

    /// Enqueues on `sort_stream` the passes of every chunk of `c` that has `landed`
    /// entirely and is not sorted yet, after the copies enqueued so far. One hand-over per
    /// chunk, however many land at once, so that a sort makes the same driver calls
    /// whichever order its pieces reach the bus in.
    fn sort_landed_chunks(&self, c: &mut ChunkedSort<'_>, landed: u64) -> Result<()> {
        while let Some((first, m)) = c.chunks.next_landed(landed) {
            hand_over(&self.stream, &self.sort_stream)?;
            let part = c.part(first, m, &self.limits);
            self.enqueue(&part, self.sort_stream.as_inner())?;
        }
        Ok(())
    }

    /// Once every chunk of `c` is sorted: the merges of runs of a chunk and longer on
    /// `sort_stream`, and the copy stream made to wait for them.
    fn merge_sorted_chunks(&self, c: &mut ChunkedSort<'_>) -> Result<()> {
        self.sort_landed_chunks(c, c.chunks.total())?;
        let log_chunk = c.chunks.log_chunk();
        let done = log_chunk - c.whole.tile_sort.args.tile_bits;
        let rest: Vec<MergeLaunch> = c
            .whole
            .merges
            .iter()
            .filter(|m| m.args.log_run >= log_chunk)
            .copied()
            .collect();
        self.launch_merges(c.job, &rest, done as usize, self.sort_stream.as_inner())?;
        hand_over(&self.sort_stream, &self.stream)
    }

    /// The host-slice state, locked (one host-slice sort at a time), with the context
    /// current; first, an error if the device could never hold `requested` bytes.
    pub(super) fn lock_host(&self, requested: u64) -> Result<RayonLockGuard<'_, HostState>> {
        if requested > self.info.memory_bytes {
            return Err(self.out_of_memory(requested));
        }
        let host = lock_shared_with_rayon(&self.busy);
        self.make_current()?;
        Ok(host)
    }

    /// Makes this device's context current on the calling thread.
    pub(super) fn make_current(&self) -> Result<()> {
        crate::fault::point(BackendKind::Cuda, "cuCtxSetCurrent")?;
        CurrentContext::set_current(&self.context).map_err(on("cuCtxSetCurrent"))
    }

    /// Sorts `keys` (32- or 64-bit words ordered by `encoding`) on this device as a
    /// host-slice sort does (sorting chunks while the rest uploads), then calls `between`
    /// with the sorted words on the device and, where the sort had merge-path scratch, the
    /// address of its keys buffer (at least as long as the words, free until the next sort),
    /// and downloads the words back into `keys` in the sorter's copy-back mode if `between`
    /// succeeded. `between` runs while this backend's host-slice work is locked, and is not
    /// called when the upload or the sort fails; the result says whether it ran.
    pub(super) fn sort_through_device(
        &self,
        keys: &mut Column<'_>,
        encoding: KeyEncoding,
        between: &mut dyn FnMut(DeviceWords, Option<cu::CUdeviceptr>) -> Result<()>,
    ) -> (bool, Result<()>) {
        let mut ran = false;
        let result = (|| {
            let (n, key_bytes) = (keys.len(), keys.word_bytes());
            let requested = keys.device_bytes() as u64;
            let mut host = self.lock_host(requested)?;
            let host = &mut *host;
            // Fewer than two words need no sort, and have no plan: they only cross the bus.
            let job = if n > 1 {
                Some(self.host_job(host, (keys, None), encoding, n, requested)?)
            } else {
                None
            };
            let device_keys = match &job {
                Some(job) => job.keys,
                None => {
                    let allocated = host.buffers.fill(|buffers| {
                        let buffer = grow(&mut buffers.keys, keys.device_bytes(), |len| {
                            self.alloc(len, requested)
                        })?;
                        Ok(buffer.as_device_ptr().as_raw())
                    });
                    self.cache_stats.keep(host);
                    allocated?
                }
            };
            let link = CudaLink {
                stream: &self.stream,
                context: self.context.as_raw(),
            };
            let moved = (|| {
                let spare = match &job {
                    Some(job) => {
                        self.upload_and_sort(host, &link, job, (keys, None))?;
                        job.scratch.map(|s| s.keys).filter(|&k| k != 0)
                    }
                    None => {
                        host.upload(&link, (keys, device_keys), None, &mut |_| Ok(()))?;
                        None
                    }
                };
                // The chunks' merges were handed over to this stream.
                self.stream
                    .synchronize()
                    .map_err(on("cuStreamSynchronize"))?;
                ran = true;
                let words = DeviceWords {
                    ptr: device_keys,
                    len: n,
                    word_bytes: key_bytes,
                };
                between(words, spare)?;
                CurrentContext::set_current(&self.context).map_err(on("cuCtxSetCurrent"))?;
                host.download(
                    &link,
                    (keys, device_keys),
                    None,
                    self.cache_stats.copy_back(),
                )
            })();
            if moved.is_err() {
                // The copies and launches already queued finish before the buffers are
                // reused or freed.
                let _ = self.sort_stream.synchronize();
                let _ = self.stream.synchronize();
            }
            let moved = host.after_sort(moved);
            self.cache_stats.keep(host);
            moved
        })();
        (ran, result)
    }
}
