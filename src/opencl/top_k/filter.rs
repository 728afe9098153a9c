//! The candidate filter of long rows on OpenCL ([`TopKFilter`]): the sample that gives each
//! row its threshold (and, for rows sampled by several work-groups, the launch that
//! combines their picks), the pass that keeps the words at or below it, the exact select of
//! the rows it could not serve, and the three ways the candidates become the top k: a
//! work-group's select in local memory, the tiles, or a sort.

use opencl3::command_queue::CommandQueue;
use opencl3::memory::{Buffer, ClMem};
use opencl3::types::cl_mem;

use super::{OpenClBackend, TopKJob, TopKProgram, tiles_bytes};
use crate::error::Result;
use crate::kernel_contract::{TOP_K_FILTER_ITEM_KEYS, TOP_K_RADIX_WORDS, padded_words};
use crate::keys::{KeyEncoding, KeyKind};
use crate::schedule::top_k::{TopKCandidates, TopKFilter, candidates_select_bytes, sample_bytes};

/// The filter's device buffers: a threshold and a count per row, the sample blocks' picks
/// (rows sampled by several work-groups), and `capacity` candidate slots per row.
#[derive(Clone, Copy)]
struct FilterBuffers {
    thresholds: cl_mem,
    counts: cl_mem,
    picks: cl_mem,
    candidates: cl_mem,
}

impl OpenClBackend {
    /// The filtered top-k of `job`: the filter ([`OpenClBackend::enqueue_filter`]), then the
    /// candidates' way ([`TopKFilter::candidates`]), the tiles and the sort ending with the
    /// take.
    pub(super) fn enqueue_filtered(
        &self,
        program: &TopKProgram,
        job: &TopKJob,
        filter: &TopKFilter,
        queue: &CommandQueue,
    ) -> Result<()> {
        let rows = job.rows;
        let blocks = 1u64 << filter.log_sample_blocks;
        let picks = if blocks > 1 {
            rows * blocks * u64::from(filter.rank)
        } else {
            1
        };
        let slots = rows * filter.capacity;
        let after = match &filter.candidates {
            TopKCandidates::Tiles(plan) => tiles_bytes(plan, rows),
            TopKCandidates::Select | TopKCandidates::Sort => 0,
        };
        let sizes = [rows * 8, rows * 4, picks * 8, slots * 8];
        let requested = sizes.iter().sum::<u64>() + after;
        self.check_memory(requested)?;
        // Released when this returns: OpenCL keeps a memory object alive until the commands
        // enqueued on it have finished.
        let mut temporaries: Vec<Buffer<u8>> = Vec::new();
        for bytes in sizes {
            temporaries.push(self.alloc(bytes.max(1) as usize, requested)?);
        }
        let [thresholds, counts, picks, candidates] = [0, 1, 2, 3].map(|i| temporaries[i].get());
        let buffers = FilterBuffers {
            thresholds,
            counts,
            picks,
            candidates,
        };
        self.enqueue_filter(program, job, filter, buffers, queue, requested)?;
        let (words, stride) = match &filter.candidates {
            TopKCandidates::Select => {
                return self.enqueue_candidates(program, job, filter, buffers, queue, requested);
            }
            TopKCandidates::Tiles(plan) => {
                debug_assert_eq!(
                    plan.passes[0].len, filter.capacity,
                    "the plan reads the slots"
                );
                let scratch = self.tiles_scratch(plan, rows, requested, &mut temporaries)?;
                let filtered = Some((candidates, counts, filter.capacity));
                let last =
                    self.enqueue_tiles(program, plan, job, filtered, scratch, queue, requested)?;
                (scratch[last], plan.run())
            }
            TopKCandidates::Sort => {
                // Each row's slots, padded past its count (`top_k_exact` with `pad`), sort
                // as a row of words.
                let unsigned = KeyEncoding {
                    kind: KeyKind::Unsigned,
                    descending: false,
                };
                self.sort_words(candidates, 8, None, unsigned, filter.capacity, slots, queue)?;
                (candidates, filter.capacity)
            }
        };
        self.enqueue_take(program, job, (words, stride), queue, requested)
    }

    /// The filter's sample (and the combination of its blocks' picks), pass and exact
    /// select of the rows it could not serve: each row's count and its `capacity` candidate
    /// slots (a rescued row's best `k` first), padded past the count where the candidates
    /// are sorted.
    fn enqueue_filter(
        &self,
        program: &TopKProgram,
        job: &TopKJob,
        filter: &TopKFilter,
        b: FilterBuffers,
        queue: &CommandQueue,
        requested: u64,
    ) -> Result<()> {
        let rows = job.rows;
        let group = program.group;
        let log_blocks = filter.log_sample_blocks;
        let block_log_sample = filter.log_sample - log_blocks;
        let hist_bytes = u64::from(sample_bytes(block_log_sample)) - (4u64 << block_log_sample);
        // `top_k_sample(keys, thresholds, picks, counts, rows, len, log_sample, log_blocks,
        // rank, encoding, ordered, hist)`: each task reads the keys at its sampled positions
        // (below `len`), zeroes its row's count (the first block), and writes its row's
        // threshold or, with several blocks a row, its `rank` picks (`rank` is at most a
        // block's sampled keys: `TopKFilter::new`), which the buffer holds; the local memory
        // is the block's keys and the radix select's counts with three words
        // (`sample_bytes`), within the device's (`TopKWay::new` took the filter only where
        // the largest sample fits).
        self.launch_groups(
            program,
            queue,
            (rows << log_blocks, group),
            requested,
            |kernels, args| {
                args.kernel = &kernels.narrow()?.sample;
                args.buffer(job.keys)?;
                args.buffer(b.thresholds)?;
                args.buffer(b.picks)?;
                args.buffer(b.counts)?;
                args.u64(rows)?;
                args.u64(job.row_len)?;
                args.u32(filter.log_sample)?;
                args.u32(log_blocks)?;
                args.u32(filter.rank)?;
                args.u32(job.encoding.code())?;
                args.local(4 << block_log_sample)?;
                args.local(hist_bytes)
            },
        )?;
        if log_blocks > 0 {
            let n = filter.rank << log_blocks;
            // `top_k_sample_picks(picks, thresholds, rows, n, rank, all)`: each row's `n`
            // picks, which the sample wrote, into `n` words of local memory (at most
            // `SAMPLE_MAX_PICKS`); one threshold a row.
            self.launch_groups(program, queue, (rows, group), requested, |kernels, args| {
                args.kernel = &kernels.narrow()?.sample_picks;
                args.buffer(b.picks)?;
                args.buffer(b.thresholds)?;
                args.u64(rows)?;
                args.u32(n)?;
                args.u32(filter.rank)?;
                args.local(8 * u64::from(n))
            })?;
        }
        let chunks = job
            .row_len
            .div_ceil(group as u64 * u64::from(TOP_K_FILTER_ITEM_KEYS));
        // `top_k_filter(keys, thresholds, counts, candidates, rows, len, chunks, capacity,
        // encoding)`: reads the `rows * len` keys in `chunks` chunks a row of the work-group's
        // size times `TOP_K_FILTER_ITEM_KEYS`, one threshold and count a row, and writes at most
        // `capacity` candidates a row, which the buffer holds.
        self.launch_groups(
            program,
            queue,
            (rows * chunks, group),
            requested,
            |kernels, args| {
                args.kernel = &kernels.narrow()?.filter;
                args.buffer(job.keys)?;
                args.buffer(b.thresholds)?;
                args.buffer(b.counts)?;
                args.buffer(b.candidates)?;
                args.u64(rows)?;
                args.u64(job.row_len)?;
                args.u64(chunks)?;
                args.u64(filter.capacity)?;
                args.u32(job.encoding.code())
            },
        )?;
        let pad = filter.candidates == TopKCandidates::Sort;
        // `top_k_exact(keys, counts, candidates, rows, len, capacity, k, encoding, pad)`:
        // reads each row's count and, for a rescued row, its `len` keys, and writes within
        // the row's `capacity` slots (`k <= capacity`), which the buffer holds.
        self.launch_groups(program, queue, (rows, group), requested, |kernels, args| {
            args.kernel = &kernels.narrow()?.exact;
            args.buffer(job.keys)?;
            args.buffer(b.counts)?;
            args.buffer(b.candidates)?;
            args.u64(rows)?;
            args.u64(job.row_len)?;
            args.u64(filter.capacity)?;
            args.u32(job.k as u32)?;
            args.u32(job.encoding.code())?;
            args.u32(u32::from(pad))
        })
    }

    /// The candidates' select in local memory ([`TopKCandidates::Select`]):
    /// `top_k_candidates`, a work-group per row, writes the values and positions.
    fn enqueue_candidates(
        &self,
        program: &TopKProgram,
        job: &TopKJob,
        filter: &TopKFilter,
        b: FilterBuffers,
        queue: &CommandQueue,
        requested: u64,
    ) -> Result<()> {
        let log_k = job.k.next_power_of_two().trailing_zeros();
        let words = 8 * filter.capacity;
        let best = 8 * padded_words(log_k);
        let hist = 4 * (u64::from(TOP_K_RADIX_WORDS) + 1);
        debug_assert_eq!(
            words + best + hist,
            candidates_select_bytes(filter.capacity, log_k)
        );
        // `top_k_candidates(keys, counts, candidates, values, indices, rows, len, capacity,
        // k, log_k, words, best, hist)`: reads each row's count and at most `capacity` of its
        // slots (k for a rescued row), the keys at positions within the row, and writes `k`
        // values and positions per row (the outputs hold `rows * k`, checked); the local
        // memory is `candidates_select_bytes`, within what the device gives
        // (`TopKCandidates::new`).
        self.launch_groups(
            program,
            queue,
            (job.rows, program.group),
            requested,
            |kernels, args| {
                args.kernel = &kernels.narrow()?.candidates;
                args.buffer(job.keys)?;
                args.buffer(b.counts)?;
                args.buffer(b.candidates)?;
                args.buffer(job.values)?;
                args.buffer(job.indices)?;
                args.u64(job.rows)?;
                args.u64(job.row_len)?;
                args.u32(filter.capacity as u32)?;
                args.u32(job.k as u32)?;
                args.u32(log_k)?;
                args.local(words)?;
                args.local(best)?;
                args.local(hist)
            },
        )
    }
}
