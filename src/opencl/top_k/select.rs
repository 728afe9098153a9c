//! The top-k of short rows on OpenCL ([`TopKSelect`]): one launch of `top_k_select`, a
//! work-group per row, that writes the values and positions itself.

use opencl3::command_queue::CommandQueue;

use super::{OpenClBackend, TopKJob, TopKProgram};
use crate::error::Result;
use crate::kernel_contract::TOP_K_RADIX_WORDS;
use crate::schedule::top_k::TopKSelect;

/// Work-items of a select work-group at least, where the program allows: the digit choice of
/// its radix select takes 32 items (fewer scan the counts with one).
const SELECT_MIN_GROUP: usize = 32;

impl OpenClBackend {
    /// Enqueues the select of `job`'s rows on `queue`: a work-group per row, of about one
    /// item per key (at least [`SELECT_MIN_GROUP`], at most the program's), with the row's
    /// [`TopKSelect::row_bytes`] of local memory, which [`super::TopKWay::new`] checked the
    /// device gives.
    pub(super) fn enqueue_select(
        &self,
        program: &TopKProgram,
        job: &TopKJob,
        select: &TopKSelect,
        queue: &CommandQueue,
    ) -> Result<()> {
        let words = 8u64 << select.log_k;
        let counts = 4 * u64::from(TOP_K_RADIX_WORDS);
        let keys = u64::from(select.row_bytes) - words - counts;
        debug_assert!(keys >= 4 * job.row_len, "the row's keys fit their part");
        let local = (job.row_len as usize)
            .next_power_of_two()
            .max(SELECT_MIN_GROUP)
            .min(program.group);
        // `top_k_select(keys, values, indices, rows, len, k, log_k, encoding, words, hist,
        // ordered)`: each work-group reads one row's `len` keys and writes its `k` values and
        // positions (the outputs hold `rows * k`, checked); the local memory is the `K` words,
        // the radix select's counts and the row's keys, `TopKSelect::row_bytes` in all.
        self.launch_groups(program, queue, (job.rows, local), 0, |kernels, args| {
            args.kernel = &kernels.narrow()?.select;
            args.buffer(job.keys)?;
            args.buffer(job.values)?;
            args.buffer(job.indices)?;
            args.u64(job.rows)?;
            args.u32(job.row_len as u32)?;
            args.u32(job.k as u32)?;
            args.u32(select.log_k)?;
            args.u32(job.encoding.code())?;
            args.local(words)?;
            args.local(counts)?;
            args.local(keys)
        })
    }
}
