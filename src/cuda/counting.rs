//! The counting sort's launches (`cuda/counting.cuh`, planned in `crate::schedule::counting`):
//! count, totals, starts and fill, on one stream, over the keys and the scratch.

use std::ffi::c_void;

use cust::module::Module;
use cust::sys as cu;

use super::CudaBackend;
use super::kernels::{Kernel, launch_kernel, load_kernel};
use super::plan::{COUNT_THREADS, CountingLaunches};
use crate::error::Result;
use crate::kernel_contract::{COUNT_KEY_BITS, COUNT_STARTS_THREADS};

/// The counting sort's kernels.
#[derive(Clone, Copy, Debug)]
pub(super) struct CountingKernels {
    count: Kernel,
    totals: Kernel,
    starts: Kernel,
    fill: Kernel,
}

/// Looks up the counting sort's kernels; the count kernel may use `shared_bytes` of shared
/// memory (its window of counters).
pub(super) fn load_counting_kernels(module: &Module, shared_bytes: u32) -> Result<CountingKernels> {
    Ok(CountingKernels {
        count: load_kernel(module, "count_keys_u16", shared_bytes)?,
        totals: load_kernel(module, "count_totals", 0)?,
        starts: load_kernel(module, "count_starts", 0)?,
        fill: load_kernel(module, "fill_keys_u16", 0)?,
    })
}

impl CudaBackend {
    /// Enqueues the counting sort of the `launches.plan.n` 16-bit keys at `keys` on
    /// `stream`, with `scratch` holding [`crate::schedule::counting::CountingPlan::
    /// scratch_bytes`].
    pub(super) fn launch_counting(
        &self,
        keys: cu::CUdeviceptr,
        launches: &CountingLaunches,
        scratch: cu::CUdeviceptr,
        stream: cu::CUstream,
    ) -> Result<()> {
        let plan = launches.plan;
        let kernels = self.counting_kernels;
        let (mut keys, mut n, mut encoding) = (keys, plan.n, launches.encoding);
        let mut counts = scratch;
        let mut starts = scratch + plan.starts_offset();
        let (mut per_block, mut window_log, mut blocks) =
            (plan.keys_per_block, plan.window_log, plan.blocks);
        let grid = |threads: u64| threads.div_ceil(u64::from(COUNT_THREADS)) as u32;

        let mut params = [
            &mut keys as *mut u64 as *mut c_void,
            &mut n as *mut u64 as *mut c_void,
            &mut per_block as *mut u64 as *mut c_void,
            &mut encoding as *mut u32 as *mut c_void,
            &mut window_log as *mut u32 as *mut c_void,
            &mut counts as *mut u64 as *mut c_void,
        ];
        // SAFETY: the parameters match `count_keys_u16(const u16 *keys, u64 n, u64
        // keys_per_block, u32 encoding, u32 window_log, u32 *counts)`; `keys` holds `n`
        // 16-bit keys and block b reads only keys [b * keys_per_block, n); `counts` holds
        // `blocks * 2^16` words of the scratch; the dynamic shared memory is the window's
        // counters, within the limit set on the kernel at open (the plan's window comes
        // from that limit).
        unsafe {
            let shape = (blocks as u32, COUNT_THREADS, launches.count_shared_bytes());
            launch_kernel(kernels.count, shape, stream, &mut params)?;
        }

        let mut params = [
            &mut counts as *mut u64 as *mut c_void,
            &mut blocks as *mut u64 as *mut c_void,
            &mut starts as *mut u64 as *mut c_void,
        ];
        // SAFETY: the parameters match `count_totals(const u32 *counts, u64 blocks, u64
        // *starts)`; a thread per word reads `blocks` counts of it and writes one start, all
        // within the scratch.
        unsafe {
            let shape = (grid(1 << COUNT_KEY_BITS), COUNT_THREADS, 0);
            launch_kernel(kernels.totals, shape, stream, &mut params)?;
        }

        let mut params = [&mut starts as *mut u64 as *mut c_void];
        // SAFETY: the parameter matches `count_starts(u64 *starts)`, which reads and writes
        // the `2^16 + 1` starts of the scratch with one block of `COUNT_STARTS_THREADS`.
        unsafe {
            let shape = (1, COUNT_STARTS_THREADS, 0);
            launch_kernel(kernels.starts, shape, stream, &mut params)?;
        }

        let mut params = [
            &mut keys as *mut u64 as *mut c_void,
            &mut n as *mut u64 as *mut c_void,
            &mut starts as *mut u64 as *mut c_void,
            &mut encoding as *mut u32 as *mut c_void,
        ];
        // SAFETY: the parameters match `fill_keys_u16(u16 *keys, u64 n, const u64 *starts,
        // u32 encoding)`; each thread writes only positions below `n`, and reads the starts.
        unsafe {
            let shape = (grid(plan.fill_threads()), COUNT_THREADS, 0);
            launch_kernel(kernels.fill, shape, stream, &mut params)
        }
    }
}
