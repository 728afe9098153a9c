//! Top-k of host slices on the OpenCL device: the launches of [`TopKPlan`] with the kernel of
//! `kernels/top_k.clh`, built once per backend as a program of its own.

use std::sync::{Arc, Mutex};

use opencl3::kernel::Kernel;
use opencl3::memory::ClMem;
use opencl3::types::{CL_BLOCKING, cl_mem};

use super::driver::driver;
use super::launch::Args;
use super::{CPU_DEVICE_RUNS, DeviceType, OpenClBackend, hold, lifecycle_lock};
use crate::error::Result;
use crate::kernel_contract::padded_words;
use crate::keys::KeyEncoding;
use crate::rayon_lock::lock_shared_with_rayon;
use crate::schedule::top_k::{TOP_K_MAX_LOG_TILE, TopKPlan, decode_runs};

/// The program's main file: the contract, the key encoding for 32-bit keys, the kernel.
const MAIN: &str = "#include \"contract.h\"\n#include \"words.clh\"\n#include \"top_k.clh\"\n";

/// Work-items of a top-k work-group at most: each handles `2^log_tile / 2 / items`
/// comparators per level.
const MAX_GROUP: usize = 256;

/// The built top-k kernel and the limits of its launches.
pub(super) struct TopKProgram {
    /// Its arguments are per-object state: a top-k holds the lock from its first argument to
    /// its last enqueue.
    kernel: Mutex<Kernel>,
    /// Work-items of a work-group at most.
    group: usize,
    /// log2 of the largest tile whose padded words fit local memory.
    max_log_tile: u32,
}

impl OpenClBackend {
    /// The top-k program, built on first use.
    fn top_k_program(&self) -> Result<Arc<TopKProgram>> {
        let mut cached = lock_shared_with_rayon(&self.top_k);
        if let Some(p) = cached.as_ref() {
            return Ok(Arc::clone(p));
        }
        let built = {
            let _lifecycle = lifecycle_lock();
            let mut source = String::new();
            super::programs::inline_includes(MAIN, &mut source, 0);
            let program = self.compile(&source, "-D KEY_T=uint")?;
            let kernel =
                Kernel::create(&program, "top_k_tiles").map_err(driver("clCreateKernel"))?;
            let group = kernel
                .get_work_group_size(self.device.id())
                .map_err(driver("clGetKernelWorkGroupInfo"))?
                .min(self.limits.max_group)
                .clamp(1, MAX_GROUP);
            let max_log_tile = (1..=TOP_K_MAX_LOG_TILE)
                .rev()
                .find(|&t| padded_words(t) * 8 <= self.limits.local_mem)
                .unwrap_or(0);
            Arc::new(TopKProgram {
                kernel: Mutex::new(kernel),
                group,
                max_log_tile,
            })
        };
        *cached = Some(Arc::clone(&built));
        Ok(built)
    }

    /// The plan of a top-k on this device, `None` when `k` is past the on-chip limit.
    fn top_k_plan(&self, row_len: usize, k: usize) -> Result<Option<(Arc<TopKProgram>, TopKPlan)>> {
        let program = self.top_k_program()?;
        Ok(TopKPlan::new(row_len as u64, k as u64, program.max_log_tile).map(|p| (program, p)))
    }

    /// [`crate::backend::Backend::top_k_rows_words`] on this device: uploads the keys, runs
    /// the plan's launches and reads the last pass's runs back.
    pub(super) fn top_k_host(
        &self,
        keys: &[u32],
        encoding: KeyEncoding,
        row_len: usize,
        k: usize,
    ) -> Result<Option<(Vec<u32>, Vec<u32>)>> {
        let Some((program, plan)) = self.top_k_plan(row_len, k)? else {
            return Ok(None);
        };
        let _one_at_a_time =
            (self.info.device_type == DeviceType::Cpu).then(|| hold(&CPU_DEVICE_RUNS));
        let rows = (keys.len() / row_len) as u64;
        let run = plan.run();
        let scratch = plan.scratch_words(rows) * 8;
        let second = plan.passes.get(1).map_or(1, |p| rows * p.tiles * run * 8);
        let key_bytes = keys.len() as u64 * 4;
        let requested = key_bytes + scratch + second;
        self.check_memory(requested)?;
        let mut device_keys = self.alloc(key_bytes as usize, requested)?;
        let buffers = [
            self.alloc(scratch as usize, requested)?,
            self.alloc(second as usize, requested)?,
        ];
        // SAFETY: a blocking write of the keys' bytes into a buffer of exactly that size.
        unsafe {
            self.queue.enqueue_write_buffer(
                &mut device_keys,
                CL_BLOCKING,
                0,
                bytemuck::cast_slice(keys),
                &[],
            )
        }
        .map_err(self.memory_error("clEnqueueWriteBuffer", requested))?;
        let last = self.enqueue_top_k(
            &program,
            &plan,
            device_keys.get(),
            [buffers[0].get(), buffers[1].get()],
            rows,
            encoding,
            requested,
        )?;
        let mut runs = vec![0u64; (rows * run) as usize];
        // SAFETY: a blocking read of the last pass's `rows * K` words, which its buffer holds.
        unsafe {
            self.queue.enqueue_read_buffer(
                &buffers[last],
                CL_BLOCKING,
                0,
                bytemuck::cast_slice_mut(&mut runs),
                &[],
            )
        }
        .map_err(self.memory_error("clEnqueueReadBuffer", requested))?;
        Ok(Some(decode_runs(&runs, run as usize, k, encoding)))
    }

    /// Enqueues the plan's launches on the backend's queue: the first reads `keys`, pass `i`
    /// writes `scratch[i % 2]` (the first is the larger) and each later one reads the other.
    /// Returns the index of the buffer that holds the result.
    #[allow(clippy::too_many_arguments)]
    fn enqueue_top_k(
        &self,
        program: &TopKProgram,
        plan: &TopKPlan,
        keys: cl_mem,
        scratch: [cl_mem; 2],
        rows: u64,
        encoding: KeyEncoding,
        requested: u64,
    ) -> Result<usize> {
        let kernel = program
            .kernel
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for (i, pass) in plan.passes.iter().enumerate() {
            let mut args = Args {
                kernel: &kernel,
                index: 0,
            };
            args.buffer(keys)?;
            args.buffer(scratch[(i + 1) % 2])?;
            args.buffer(scratch[i % 2])?;
            args.u64(pass.len)?;
            args.u64(rows)?;
            args.u64(pass.tiles)?;
            args.u32(pass.log_tile)?;
            args.u32(plan.log_k)?;
            args.u32(encoding.code())?;
            args.u32(u32::from(pass.from_keys))?;
            args.local(padded_words(pass.log_tile) * 8)?;
            let local = program.group.min(1 << (pass.log_tile - 1));
            let groups = (rows * pass.tiles).min(1 << 20) as usize;
            // SAFETY: every argument was set above with the type the kernel declares; each
            // work-group reads its row's `len` elements and writes its run of K inside the
            // output buffer, which holds `rows * tiles * K` words.
            unsafe { self.enqueue_kernel(&self.queue, &kernel, groups, local, requested) }?;
        }
        Ok((plan.passes.len() - 1) % 2)
    }
}
