//! The candidate filter of long rows on CUDA ([`TopKFilter`]): the sample that gives each
//! row its threshold, the pass that keeps the words at or below it, the exact select of
//! the rows it could not serve, and the three ways the candidates become the top k: a
//! block's select in shared memory, the tiles, or a sort.

use cust::sys as cu;

use super::super::kernels::KernelParams;
use super::super::kernels::launch_kernel;
use super::{CudaBackend, StreamBuffers, TopKJob, narrow};
use crate::backend::BackendKind;
use crate::error::Result;
use crate::kernel_contract::{TOP_K_FILTER_CHUNK_BYTES, TOP_K_THREADS};
use crate::keys::{KeyEncoding, KeyKind};
use crate::schedule::top_k::{
    TopKCandidates, TopKFilter, TopKPlan, candidates_select_bytes, sample_bytes,
};

/// The candidate filter's counts, for the first tile pass over its candidates (`RowFilter`
/// in `cuda/top_k.cuh`): a row holds its count of words, or, where the count lies outside
/// `k..=capacity`, the `k` words that `top_k_exact` wrote.
#[derive(Clone, Copy)]
pub(super) struct Counted {
    /// The rows' counts.
    pub(super) counts: cu::CUdeviceptr,
    /// The rows' `k`.
    pub(super) k: u32,
    /// Candidate slots of a row.
    pub(super) capacity: u32,
}

impl CudaBackend {
    /// The candidate filter's sample and pass ([`TopKFilter`]), then the exact select of the
    /// rows it could not serve ([`CudaBackend::enqueue_exact`]); returns the rows' counts and
    /// their candidates, `capacity` slots per row (a rescued row's best `k` first).
    pub(super) fn enqueue_filter(
        &self,
        job: &TopKJob,
        filter: &TopKFilter,
        scratch: &mut StreamBuffers,
        stream: cu::CUstream,
    ) -> Result<(cu::CUdeviceptr, cu::CUdeviceptr)> {
        let rows = job.rows;
        let thresholds = scratch.alloc(self, rows * 8)?;
        // The counts, then the sample blocks' arrivals at each row: one fill zeroes both.
        let counts = scratch.alloc(self, rows * 8)?;
        let arrivals = counts + rows * 4;
        let candidates = scratch.alloc(self, rows * filter.capacity * 8)?;
        let blocks = 1u64 << filter.log_sample_blocks;
        let picks = if blocks > 1 {
            scratch.alloc(self, rows * blocks * u64::from(filter.rank) * 8)?
        } else {
            thresholds // unused with one block a row
        };
        let mut fills = vec![(counts, 0, rows * 2)];
        if filter.candidates == TopKCandidates::Sort {
            // The candidates' rows are sorted whole: empty slots must sort last.
            fills.push((candidates, u32::MAX, rows * filter.capacity * 2));
        }
        for (at, value, words) in fills {
            crate::fault::point(BackendKind::Cuda, "cuMemsetD32Async")?;
            // SAFETY: the buffer at `at` holds `words` 32-bit words (allocated just above),
            // set in the stream's order.
            super::super::driver::check("cuMemsetD32Async", unsafe {
                cu::cuMemsetD32Async(at, value, words as usize, stream)
            })?;
        }
        let width = narrow(job.key_bytes);
        let mut params = (
            job.keys,
            thresholds,
            picks,
            arrivals,
            rows,
            job.row_len,
            filter.log_sample,
            filter.log_sample_blocks,
            filter.rank,
            job.encoding.code(),
        );
        let shared = sample_bytes(filter.log_sample - filter.log_sample_blocks);
        // SAFETY: `top_k_sample_<key>(const K *keys, u64 *thresholds, u64 *picks, u32
        // *arrivals, u64 rows, u64 len, u32 log_sample, u32 log_blocks, u32 rank, u32
        // encoding)` reads keys inside each row (the sampled positions lie below `len`),
        // writes one word per row and, with several blocks a row, `rank` picks per block,
        // which the buffer holds, counting the blocks in the row's arrival (zeroed above);
        // `rank` is at most a block's sampled keys, which with the radix select's counts the
        // shared memory holds, and a row's picks fit over those keys (`TopKFilter::new`).
        unsafe {
            launch_kernel(
                self.top_k_kernels.sample[width],
                (self.grid(rows * blocks), TOP_K_THREADS, shared),
                stream,
                &mut params.pointers(),
            )
        }?;
        // 4096 keys of 32 bits or 8192 of 16 bits a chunk.
        let chunks = job
            .row_len
            .div_ceil(u64::from(TOP_K_FILTER_CHUNK_BYTES) / job.key_bytes as u64);
        // The kernel counts chunks in 32 bits: a launch holds far fewer than 2^44 keys.
        debug_assert!(rows * chunks <= u64::from(u32::MAX));
        // As many blocks as the device keeps resident, each looping over chunks.
        let resident = self.grid((rows * chunks).min(
            u64::from(self.top_k_kernels.filter_resident[width])
                * u64::from(self.limits.multiprocessors.max(1)),
        ));
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
        // the buffer holds; the block is the TOP_K_THREADS the chunk is a multiple of, and the
        // `rows * chunks` chunks fit the kernel's 32-bit count (a device holds far fewer keys).
        unsafe {
            launch_kernel(
                self.top_k_kernels.filter[width],
                (resident, TOP_K_THREADS, 0),
                stream,
                &mut params.pointers(),
            )
        }?;
        self.enqueue_exact(job, filter, (counts, candidates), stream)?;
        Ok((counts, candidates))
    }

    /// A row whose count lies outside `k..=capacity` selects its `k` best words exactly
    /// into its first `k` slots, the rest padded with `u64::MAX` (`top_k_exact` in
    /// `cuda/top_k_filter.cuh`), on the device: nothing waits for the stream.
    fn enqueue_exact(
        &self,
        job: &TopKJob,
        filter: &TopKFilter,
        (counts, candidates): (cu::CUdeviceptr, cu::CUdeviceptr),
        stream: cu::CUstream,
    ) -> Result<()> {
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
                stream,
                &mut params.pointers(),
            )
        }
    }

    /// The filtered route whose candidates are selected by tiles
    /// ([`TopKCandidates::Tiles`]): the filter, then the tile plan over each row's candidates;
    /// returns the last pass's runs, `plan.run()` words per row.
    pub(super) fn enqueue_filtered_tiles(
        &self,
        job: &TopKJob,
        filter: &TopKFilter,
        plan: &TopKPlan,
        scratch: &mut StreamBuffers,
        stream: cu::CUstream,
    ) -> Result<cu::CUdeviceptr> {
        debug_assert_eq!(
            plan.passes[0].len, filter.capacity,
            "the plan reads the slots"
        );
        let (counts, candidates) = self.enqueue_filter(job, filter, scratch, stream)?;
        let counted = Counted {
            counts,
            k: job.k as u32,
            capacity: filter.capacity as u32,
        };
        self.enqueue_tiles(job, plan, Some((candidates, counted)), scratch, stream)
    }

    /// The filtered route whose candidates are sorted ([`TopKCandidates::Sort`]): the
    /// filter, then each row's `capacity` candidates sorted as a row (empty slots, `u64::MAX`,
    /// last); returns the sorted candidates, `capacity` words per row.
    pub(super) fn enqueue_filtered_sort(
        &self,
        job: &TopKJob,
        filter: &TopKFilter,
        scratch: &mut StreamBuffers,
        stream: cu::CUstream,
    ) -> Result<cu::CUdeviceptr> {
        debug_assert!(
            filter.candidates == TopKCandidates::Sort,
            "the filter pads the sorted slots"
        );
        let (_, candidates) = self.enqueue_filter(job, filter, scratch, stream)?;
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

    /// The filtered route whose candidates are selected in shared memory
    /// ([`TopKCandidates::Select`]): the filter, then `top_k_candidates`, which writes the
    /// values and positions.
    pub(super) fn enqueue_filtered_select(
        &self,
        job: &TopKJob,
        filter: &TopKFilter,
        scratch: &mut StreamBuffers,
        stream: cu::CUstream,
    ) -> Result<()> {
        let (counts, candidates) = self.enqueue_filter(job, filter, scratch, stream)?;
        let log_k = job.k.next_power_of_two().trailing_zeros();
        let mut params = (
            job.keys,
            counts,
            candidates,
            job.values,
            job.indices,
            job.rows,
            job.row_len,
            filter.capacity as u32,
            job.k as u32,
            log_k,
        );
        let shared = candidates_select_bytes(filter.capacity, log_k) as u32;
        // SAFETY: `top_k_candidates_<key>(const K *keys, const u32 *counts, const u64
        // *candidates, K *values, u32 *indices, u64 rows, u64 len, u32 capacity, u32 k, u32
        // log_k)` reads each row's count and at most `capacity` of its slots (k for a rescued
        // row, whose first k slots `top_k_exact` wrote), the keys at positions within the
        // row, and writes `k` values and positions per row (the outputs hold `rows * k`,
        // checked); the shared memory holds the slots, the `2^log_k` padded words and the
        // counts, within what the kernel was loaded to allow (`TopKCandidates::Select`'s
        // bounds); the block is TOP_K_THREADS.
        unsafe {
            launch_kernel(
                self.top_k_kernels.candidates[narrow(job.key_bytes)],
                (self.grid(job.rows), TOP_K_THREADS, shared),
                stream,
                &mut params.pointers(),
            )
        }
    }
}
