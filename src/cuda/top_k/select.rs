//! The top-k of short rows on CUDA ([`TopKSelect`]): one launch of `top_k_select_*`, a warp
//! per row, that writes the values and positions itself.

use cust::sys as cu;

use super::super::kernels::{KernelParams, launch_kernel};
use super::{CudaBackend, TopKJob, narrow};
use crate::error::Result;
use crate::schedule::top_k::TopKSelect;

impl CudaBackend {
    /// Enqueues the select of `job`'s rows on `stream`.
    pub(super) fn enqueue_select(
        &self,
        job: &TopKJob,
        select: &TopKSelect,
        stream: cu::CUstream,
    ) -> Result<()> {
        let mut params = (
            job.keys,
            job.values,
            job.indices,
            job.rows,
            job.row_len as u32,
            job.k as u32,
            select.log_k,
            select.row_bytes,
            job.encoding.code(),
        );
        let grid = self.grid(job.rows.div_ceil(u64::from(select.warps)));
        // SAFETY: `top_k_select_<key>(const K *keys, K *values, u32 *indices, u64 rows, u32
        // len, u32 k, u32 log_k, u32 warp_bytes, u32 encoding)`, K of `key_bytes`: each warp
        // reads one row's `len` keys and writes its `k` values and positions (the outputs
        // hold `rows * k`, checked), using `warp_bytes` (the select's `row_bytes`) of the block's shared memory, which
        // `TopKSelect` sized for its words, counts and keys and which the kernel was loaded
        // to allow; the block is `warps` whole warps.
        unsafe {
            launch_kernel(
                self.top_k_kernels.select[narrow(job.key_bytes)],
                (grid, select.warps * 32, select.block_bytes()),
                stream,
                &mut params.pointers(),
            )
        }
    }
}
