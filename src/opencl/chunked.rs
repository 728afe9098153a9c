//! Sorting while uploading on OpenCL: a merge-path sort of host slices of 32 MiB or more
//! sorts each chunk (`crate::schedule::merge_path::upload_chunk`) on a second in-order queue
//! as soon as it has arrived, while the next chunks cross the bus on the backend's queue;
//! the merges of whole chunks follow the last chunk on the second queue, and the downloads
//! wait for them. The passes are the whole sort's, so the result is the same.
//!
//! OpenCL leaves concurrent use of a buffer and its sub-buffers undefined, so while chunks
//! are sorted every command on the data names one chunk's sub-buffer: the uploads go into
//! the chunks' sub-buffers ([`ChunkTargets`], which `ClLink::upload` consults), and the
//! chunks' passes work on sub-buffers of the data and of the scratch. The merges of whole
//! chunks, ordered after every chunk's passes, use the whole buffers, and so do the
//! downloads after them.

use opencl3::command_queue::CommandQueue;
use opencl3::memory::{
    Buffer, CL_BUFFER_CREATE_TYPE_REGION, CL_MEM_READ_WRITE, ClMem, cl_buffer_region,
};
use opencl3::types::cl_mem;

use super::driver::driver;
use super::kernels::Variant;
use super::plan::{Kind, MergeLaunch, MergePathPlan, SortPlan, chunk_plan};
use super::{MergeScratch, OpenClBackend, Operands};
use crate::backend::BackendKind;
use crate::error::Result;
use crate::fault::point;
use crate::keys::KeyEncoding;
use crate::schedule::merge_path::{UploadChunks, upload_chunk};

/// Where the uploads of chunked columns go: each column's whole buffer, the bytes of one
/// chunk of it, and its chunks' sub-buffers in order.
#[derive(Default)]
pub(crate) struct ChunkTargets {
    columns: Vec<(cl_mem, usize, Vec<cl_mem>)>,
}

impl ChunkTargets {
    /// The copies that put `len` bytes at byte `offset` of `dst` into its chunks, as
    /// (sub-buffer, offset in it, offset in the source, bytes); `None` where `dst` is not
    /// chunked.
    pub(crate) fn split(
        &self,
        dst: cl_mem,
        offset: usize,
        len: usize,
    ) -> Option<Vec<(cl_mem, usize, usize, usize)>> {
        let (_, chunk, subs) = self.columns.iter().find(|(whole, _, _)| *whole == dst)?;
        let mut copies = Vec::new();
        let mut at = offset;
        while at < offset + len {
            let (index, within) = (at / chunk, at % chunk);
            let bytes = (chunk - within).min(offset + len - at);
            copies.push((*subs.get(index)?, within, at - offset, bytes));
            at += bytes;
        }
        Some(copies)
    }
}

/// A host-slice merge-path sort that sorts its chunks while it uploads, and the sub-buffers
/// it does that with (released when it is dropped, after the commands that use them have
/// been enqueued; OpenCL keeps them until those finish).
pub(super) struct ChunkedSort<'a> {
    variant: &'a Variant,
    whole: &'a MergePathPlan,
    data: Operands,
    scratch: MergeScratch,
    sort_tile: u32,
    chunks: UploadChunks,
    /// Per chunk: its part of the data and of the scratch, as sub-buffers.
    parts: Vec<(Operands, Operands)>,
    /// Owns every sub-buffer that `parts` and the sort's [`ChunkTargets`] name.
    _buffers: Vec<Buffer<u8>>,
}

impl<'a> ChunkedSort<'a> {
    /// The chunks of a sort of `n` elements of `data` by `plan`, with their sub-buffers, and
    /// where its uploads go (valid as long as the sort), where it sorts while uploading: a
    /// merge-path plan, long enough, whose chunks start where the device allows a sub-buffer
    /// to.
    pub(super) fn new(
        backend: &OpenClBackend,
        variant: &'a Variant,
        (plan, scratch): (&'a SortPlan, Option<MergeScratch>),
        data: Operands,
        n: u64,
    ) -> Result<Option<(ChunkedSort<'a>, ChunkTargets)>> {
        let (SortPlan::MergePath(whole), Some(scratch)) = (plan, scratch) else {
            return Ok(None);
        };
        // Rows upload whole: a chunk of the data is not a chunk of each row.
        if whole.shape.rows > 1 {
            return Ok(None);
        }
        let Kind::Tile {
            log_net: sort_tile, ..
        } = whole.tile_sort.kind
        else {
            return Ok(None);
        };
        let widths = (data.key_bytes, data.value_bytes);
        let Some(log_chunk) = upload_chunk(n, widths.0 + widths.1, sort_tile) else {
            return Ok(None);
        };
        let align = backend.limits.base_align_bytes.max(1);
        let aligned = [widths.0, widths.1]
            .iter()
            .all(|&bytes| (bytes << log_chunk).is_multiple_of(align));
        if !aligned {
            return Ok(None);
        }
        let chunk = 1u64 << log_chunk;
        let mut buffers = Vec::new();
        let mut parts = Vec::new();
        let mut subs: [Vec<cl_mem>; 2] = Default::default();
        for first in (0..n).step_by(chunk as usize) {
            let m = chunk.min(n - first);
            let mut part = |whole: Operands| -> Result<Operands> {
                let keys = sub_buffer(backend, whole.keys, first * widths.0, m * widths.0)?;
                let values = match whole.values {
                    Some(v) => Some(sub_buffer(backend, v, first * widths.1, m * widths.1)?),
                    None => None,
                };
                let operands = Operands {
                    keys: keys.get(),
                    values: values.as_ref().map(Buffer::get),
                    ..whole
                };
                buffers.push(keys);
                buffers.extend(values);
                Ok(operands)
            };
            let data_part = part(data)?;
            let scratch_part = part(scratch.0)?;
            subs[0].push(data_part.keys);
            subs[1].extend(data_part.values);
            parts.push((data_part, scratch_part));
        }
        let [key_subs, value_subs] = subs;
        let mut targets = ChunkTargets::default();
        targets
            .columns
            .push((data.keys, (chunk * widths.0) as usize, key_subs));
        if let Some(values) = data.values {
            targets
                .columns
                .push((values, (chunk * widths.1) as usize, value_subs));
        }
        let sort = ChunkedSort {
            variant,
            whole,
            data,
            scratch,
            sort_tile,
            chunks: UploadChunks::new(n, log_chunk),
            parts,
            _buffers: buffers,
        };
        Ok(Some((sort, targets)))
    }
}

/// The sub-buffer of `bytes` bytes of `whole` from byte `origin`.
pub(super) fn sub_buffer(
    backend: &OpenClBackend,
    whole: cl_mem,
    origin: u64,
    bytes: u64,
) -> Result<Buffer<u8>> {
    point(BackendKind::OpenCl, "clCreateSubBuffer")?;
    let region = cl_buffer_region {
        origin: origin as usize,
        size: bytes as usize,
    };
    // SAFETY: `whole` is a live buffer of at least `origin + bytes` bytes (a column's or its
    // scratch's, as long as the sort's data), and `region` is a valid `cl_buffer_region`
    // read during the call only; the new sub-buffer is owned by the returned value.
    let sub = unsafe {
        opencl3::memory::create_sub_buffer(
            whole,
            CL_MEM_READ_WRITE,
            CL_BUFFER_CREATE_TYPE_REGION,
            (&raw const region).cast(),
        )
    }
    .map_err(|code| backend.memory_error("clCreateSubBuffer", bytes)(code.into()))?;
    Ok(Buffer::new(sub))
}

/// Makes the commands enqueued on `later` from now on wait for everything enqueued on
/// `earlier` so far (a marker on one, a barrier on the other that waits for it), and submits
/// `earlier`'s commands, so that the barrier does not wait on commands the driver still holds
/// back (`later` is flushed, or waited on, by whoever enqueues after the barrier).
fn hand_over(earlier: &CommandQueue, later: &CommandQueue) -> Result<()> {
    point(BackendKind::OpenCl, "clEnqueueMarkerWithWaitList")?;
    // SAFETY: an empty wait list; the marker only orders the queue.
    let marker = unsafe { earlier.enqueue_marker_with_wait_list(&[]) }
        .map_err(driver("clEnqueueMarkerWithWaitList"))?;
    point(BackendKind::OpenCl, "clEnqueueBarrierWithWaitList")?;
    // SAFETY: the wait list holds one live event; OpenCL keeps it until the barrier is done.
    let barrier = unsafe { later.enqueue_barrier_with_wait_list(&[marker.get()]) }
        .map_err(driver("clEnqueueBarrierWithWaitList"))?;
    drop((marker, barrier));
    earlier.flush().map_err(driver("clFlush"))
}

impl OpenClBackend {
    /// Enqueues on the sort queue the passes of every chunk of `c` that has `landed`
    /// entirely and is not sorted yet, after the copies enqueued so far; one hand-over per
    /// chunk, so that a sort makes the same calls whichever order its pieces land in.
    pub(super) fn sort_landed_chunks(
        &self,
        c: &mut ChunkedSort<'_>,
        landed: u64,
        encoding: KeyEncoding,
        requested: u64,
    ) -> Result<()> {
        let widths = (c.data.key_bytes, c.data.value_bytes);
        while let Some((first, m)) = c.chunks.next_landed(landed) {
            let log_chunk = c.chunks.log_chunk();
            let (data, scratch) = c.parts[(first >> log_chunk) as usize];
            hand_over(&self.queue, &self.sort_queue)?;
            let plan = chunk_plan(&c.variant.limits, m, widths, c.sort_tile, log_chunk);
            let kernels = c.variant.lock_kernels();
            self.enqueue_merge_path(
                &self.sort_queue,
                &kernels,
                data,
                (scratch, c.scratch.1),
                &plan,
                encoding,
                requested,
            )?;
            self.sort_queue.flush().map_err(driver("clFlush"))?;
        }
        Ok(())
    }

    /// Once the upload is enqueued: the chunks not sorted yet, then the merges of runs of a
    /// chunk and longer on the sort queue, and the backend's queue made to wait for them.
    pub(super) fn merge_sorted_chunks(
        &self,
        c: &mut ChunkedSort<'_>,
        encoding: KeyEncoding,
        requested: u64,
    ) -> Result<()> {
        let n = c.chunks.total();
        self.sort_landed_chunks(c, n, encoding, requested)?;
        let log_chunk = c.chunks.log_chunk();
        let rest: Vec<MergeLaunch> = c
            .whole
            .merges
            .iter()
            .filter(|m| m.log_run >= log_chunk)
            .copied()
            .collect();
        let done = (log_chunk - c.sort_tile) as usize;
        {
            let kernels = c.variant.lock_kernels();
            self.enqueue_merges(
                &self.sort_queue,
                &kernels.merge,
                (c.data, c.scratch),
                (n, 1),
                (&rest, done),
                encoding,
                requested,
            )?;
        }
        hand_over(&self.sort_queue, &self.queue)
    }
}
