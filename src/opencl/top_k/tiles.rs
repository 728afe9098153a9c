//! The bitonic top-k's tile passes on OpenCL ([`TopKPlan`]): over the keys, or over the
//! candidate filter's counted candidates.

use opencl3::command_queue::CommandQueue;
use opencl3::memory::{Buffer, ClMem};
use opencl3::types::cl_mem;

use super::super::driver::driver;
use super::super::launch::Args;
use super::{CPU_DEVICE_RUNS, DeviceType, OpenClBackend, TopKJob, TopKProgram, hold};
use crate::error::Result;
use crate::kernel_contract::padded_words;
use crate::schedule::top_k::TopKPlan;

impl OpenClBackend {
    /// The two scratch buffers of `plan`'s passes over `rows` rows, kept in `temporaries`.
    pub(super) fn tiles_scratch(
        &self,
        plan: &TopKPlan,
        rows: u64,
        requested: u64,
        temporaries: &mut Vec<Buffer<u8>>,
    ) -> Result<[cl_mem; 2]> {
        let second = plan
            .passes
            .get(1)
            .map_or(1, |p| rows * p.tiles * plan.run());
        let first = self.alloc((plan.scratch_words(rows) * 8) as usize, requested)?;
        let other = self.alloc((second * 8) as usize, requested)?;
        let scratch = [first.get(), other.get()];
        temporaries.extend([first, other]);
        Ok(scratch)
    }

    /// Enqueues the bitonic top-k's passes on `queue`: the first reads the keys, or with
    /// `filtered` the filter's candidates (the `capacity` slots a row at `filtered.0`, as
    /// many of them as `filtered.1`'s counts and `k` say), pass `i` writes `scratch[i % 2]`
    /// (the first is the larger) and each later one reads the other. Returns the index of
    /// the buffer that holds the result.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn enqueue_tiles(
        &self,
        program: &TopKProgram,
        plan: &TopKPlan,
        job: &TopKJob,
        filtered: Option<(cl_mem, cl_mem, u64)>,
        scratch: [cl_mem; 2],
        queue: &CommandQueue,
        requested: u64,
    ) -> Result<usize> {
        let on_cpu = self.info.device_type == DeviceType::Cpu;
        let _one_at_a_time = on_cpu.then(|| hold(&CPU_DEVICE_RUNS));
        let kernels = program
            .kernels
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let tiles = &kernels.narrow()?.tiles;
        let rows = job.rows;
        for (i, pass) in plan.passes.iter().enumerate() {
            // The candidates' counts limit only the pass that reads them; other passes pass
            // a capacity of 0 (no counts) and any buffer for them.
            let (words, counts, capacity) = match filtered {
                Some((candidates, counts, capacity)) if i == 0 => (candidates, counts, capacity),
                _ => (scratch[(i + 1) % 2], scratch[(i + 1) % 2], 0),
            };
            let mut args = Args {
                kernel: tiles,
                index: 0,
            };
            args.buffer(job.keys)?;
            args.buffer(words)?;
            args.buffer(scratch[i % 2])?;
            args.u64(pass.len)?;
            args.u64(rows)?;
            args.u64(pass.tiles)?;
            args.u32(pass.log_tile)?;
            args.u32(plan.log_k)?;
            args.u32(job.encoding.code())?;
            args.u32(u32::from(pass.from_keys && filtered.is_none()))?;
            args.buffer(counts)?;
            args.u32(job.k as u32)?;
            args.u64(capacity)?;
            args.local(padded_words(pass.log_tile) * 8)?;
            let local = program.group.min(1 << (pass.log_tile - 1));
            let groups = (rows * pass.tiles).min(1 << 20) as usize;
            // SAFETY: every argument was set above with the type the kernel declares
            // (`top_k_tiles` in `kernels/top_k.clh`); each work-group reads its row's `len`
            // elements (of the candidates, at most the count's of the `len` = `capacity`
            // slots, one count a row) and writes its run of K inside the output buffer, which
            // holds `rows * tiles * K` words.
            unsafe { self.enqueue_kernel(queue, tiles, groups, local, requested) }?;
        }
        if on_cpu {
            queue.finish().map_err(driver("clFinish"))?;
        }
        Ok((plan.passes.len() - 1) % 2)
    }
}

/// Bytes of the two scratch buffers of `plan`'s passes over `rows` rows.
pub(super) fn tiles_bytes(plan: &TopKPlan, rows: u64) -> u64 {
    let second = plan
        .passes
        .get(1)
        .map_or(1, |p| rows * p.tiles * plan.run());
    (plan.scratch_words(rows) + second) * 8
}
