//! The candidate filter of long rows on CUDA ([`TopKFilter`]): the sample that gives each
//! row its threshold, the pass that keeps the words at or below it, which rows a tile
//! launch then serves, and the sorted candidates of a `k` past the tile.

use cust::stream::Stream;
use cust::sys as cu;

use super::super::kernels::KernelParams;
use super::super::kernels::launch_kernel;
use super::{CudaBackend, StreamBuffers, TopKJob, narrow};
use crate::backend::BackendKind;
use crate::error::Result;
use crate::kernel_contract::{
    TOP_K_FILTER_CHUNK, TOP_K_REGISTER_LOG_TILE, TOP_K_THREADS, padded_words,
};
use crate::keys::{KeyEncoding, KeyKind};
use crate::schedule::top_k::TopKFilter;

/// Which rows a launch of `top_k_tiles_*` serves (`ROWS_*` in `cuda/top_k.cuh`), by the
/// counts of the candidate filter.
#[derive(Clone, Copy)]
pub(super) enum Rows {
    /// Every row, whole.
    All,
    /// Every row's first `min(count, len)` words: the candidates.
    Counted(cu::CUdeviceptr),
    /// Only the rows whose count is outside `lo..=hi`, which the filter could not serve.
    Rescued {
        counts: cu::CUdeviceptr,
        lo: u32,
        hi: u32,
    },
}

impl Rows {
    /// The kernel's `(counts, lo, hi, mode)`.
    pub(super) fn params(self) -> (cu::CUdeviceptr, u32, u32, u32) {
        match self {
            Rows::All => (0, 0, 0, 0),
            Rows::Counted(counts) => (counts, 0, 0, 1),
            Rows::Rescued { counts, lo, hi } => (counts, lo, hi, 2),
        }
    }
}

/// Blocks (rows) per multiprocessor from which the sample selects in registers. On an H100,
/// samples of 4096 words whose best 128 are kept (rows of 131072, k = 1024) took 0.287 ms with
/// the shared-memory network and 0.180 in registers for 1024 rows (7.8 per multiprocessor),
/// 0.568 and 0.337 for 2048 rows (`cuda_top_k_profile` under Nsight Compute). Fewer rows keep
/// the tiles' rule, not measured against registers for the sample.
const SAMPLE_REGISTERS_FROM_ROWS_PER_SM: u64 = 7;

/// The block of the sample's selection of the best `2^log_rank` of `2^log_sample` words in
/// each of `rows` rows: one thread per 32 words (registers) from
/// [`SAMPLE_REGISTERS_FROM_ROWS_PER_SM`] on, else [`super::tile_block`]'s; in the crate's unit
/// tests `BITONIC_TIMING_SAMPLE_BLOCK` threads where set, so that a timing can compare.
pub(in crate::cuda) fn sample_block(
    log_sample: u32,
    log_rank: u32,
    rows: u64,
    multiprocessors: u32,
) -> u32 {
    if let Some(block) = super::super::timing_override("BITONIC_TIMING_SAMPLE_BLOCK") {
        return block;
    }
    let many = rows >= SAMPLE_REGISTERS_FROM_ROWS_PER_SM * u64::from(multiprocessors.max(1));
    if log_sample >= TOP_K_REGISTER_LOG_TILE && many {
        1 << (log_sample - 5)
    } else {
        super::tile_block(log_sample, log_rank, rows, multiprocessors)
    }
}

impl CudaBackend {
    /// The candidate filter's sample and pass ([`TopKFilter`]); returns the rows' counts and
    /// their candidates, `capacity` slots per row.
    pub(super) fn enqueue_filter(
        &self,
        job: &TopKJob,
        filter: &TopKFilter,
        scratch: &mut StreamBuffers<'_>,
        stream: &Stream,
    ) -> Result<(cu::CUdeviceptr, cu::CUdeviceptr)> {
        let rows = job.rows;
        let thresholds = scratch.alloc(self, rows * 8)?;
        let counts = scratch.alloc(self, rows * 4)?;
        let candidates = scratch.alloc(self, rows * filter.capacity * 8)?;
        let mut fills = vec![(counts, 0, rows)];
        if filter.candidates.is_none() {
            // The candidates' rows are sorted whole: empty slots must sort last.
            fills.push((candidates, u32::MAX, rows * filter.capacity * 2));
        }
        for (at, value, words) in fills {
            crate::fault::point(BackendKind::Cuda, "cuMemsetD32Async")?;
            // SAFETY: the buffer at `at` holds `words` 32-bit words (allocated just above),
            // set in the stream's order.
            super::super::driver::check("cuMemsetD32Async", unsafe {
                cu::cuMemsetD32Async(at, value, words as usize, stream.as_inner())
            })?;
        }
        let width = narrow(job.key_bytes);
        let log_rank = filter.rank.next_power_of_two().trailing_zeros();
        let mut params = (
            job.keys,
            thresholds,
            rows,
            job.row_len,
            filter.log_sample,
            log_rank,
            filter.rank,
            job.encoding.code(),
        );
        let block = sample_block(
            filter.log_sample,
            log_rank,
            rows.min(super::MAX_GRID),
            self.limits.multiprocessors,
        );
        let shared = (padded_words(filter.log_sample) * 8) as u32;
        // SAFETY: `top_k_sample_<key>(const K *keys, u64 *thresholds, u64 rows, u64 len, u32
        // log_sample, u32 log_rank, u32 rank, u32 encoding)` reads keys inside each row (the
        // sampled positions lie below `len`) and writes one word per row; `rank <=
        // 2^log_rank <= 2^log_sample`, whose tile the shared memory holds.
        unsafe {
            launch_kernel(
                self.top_k_kernels.sample[width],
                (self.grid(rows), block, shared),
                stream.as_inner(),
                &mut params.pointers(),
            )
        }?;
        let chunks = job.row_len.div_ceil(u64::from(TOP_K_FILTER_CHUNK));
        // Every row starts on 16 bytes and holds whole 16-byte vectors.
        let vector =
            job.keys.is_multiple_of(16) && (job.row_len * job.key_bytes as u64).is_multiple_of(16);
        let mut params = (
            job.keys,
            thresholds,
            counts,
            candidates,
            rows,
            job.row_len,
            chunks,
            filter.capacity,
            job.encoding.code(),
            u32::from(vector),
        );
        // SAFETY: `top_k_filter_<key>(const K *keys, const u64 *thresholds, u32 *counts, u64
        // *candidates, u64 rows, u64 len, u64 chunks, u64 capacity, u32 encoding, u32 vector)`
        // reads the `rows * len` keys (16-byte loads only where `vector` says every row is
        // aligned and whole vectors) and writes at most `capacity` candidates per row, which
        // the buffer holds; the block is the TOP_K_THREADS the chunk is a multiple of.
        unsafe {
            launch_kernel(
                self.top_k_kernels.filter[width],
                (self.grid(rows * chunks), TOP_K_THREADS, 0),
                stream.as_inner(),
                &mut params.pointers(),
            )
        }?;
        Ok((counts, candidates))
    }

    /// The filtered route whose candidates are sorted (`filter.candidates` is `None`: a `k`
    /// past the on-chip tile, or a large `K`): the filter, then each row's `capacity` candidates
    /// sorted as a row (empty slots, `u64::MAX`, last); returns the sorted candidates,
    /// `capacity` words per row. A row whose count lies outside `k..=capacity` first selects
    /// its `k` best words exactly into its slots (`top_k_exact` in `cuda/top_k.cuh`), on the
    /// device: nothing waits for the stream.
    pub(super) fn enqueue_filtered_sort(
        &self,
        job: &TopKJob,
        filter: &TopKFilter,
        scratch: &mut StreamBuffers<'_>,
        stream: &Stream,
    ) -> Result<cu::CUdeviceptr> {
        debug_assert!(
            filter.candidates.is_none(),
            "the filter pads the sorted slots"
        );
        let (counts, candidates) = self.enqueue_filter(job, filter, scratch, stream)?;
        let mut params = (
            job.keys,
            counts,
            candidates,
            job.rows,
            job.row_len,
            filter.capacity,
            job.k as u32,
            job.encoding.code(),
        );
        // SAFETY: `top_k_exact_<key>(const K *keys, const u32 *counts, u64 *candidates, u64
        // rows, u64 len, u64 capacity, u32 k, u32 encoding)` reads each row's count and, for
        // the rows it rescues, the row's `len` keys, and writes the row's `capacity` slots
        // (`k <= capacity`), which the buffer holds; the block is TOP_K_THREADS.
        unsafe {
            launch_kernel(
                self.top_k_kernels.exact[narrow(job.key_bytes)],
                (self.grid(job.rows), TOP_K_THREADS, 0),
                stream.as_inner(),
                &mut params.pointers(),
            )
        }?;
        let unsigned = KeyEncoding {
            kind: KeyKind::Unsigned,
            descending: false,
        };
        let slots = job.rows * filter.capacity;
        self.sort_words(
            candidates,
            8,
            None,
            unsigned,
            filter.capacity,
            slots,
            stream,
        )?;
        Ok(candidates)
    }
}
