//! The bitonic top-k's tile launches on CUDA ([`TopKPlan`]): the block that selects a tile
//! and the passes over the keys or over the filter's candidates.

use std::ffi::c_void;

use cust::sys as cu;

use super::super::kernels::launch_kernel;
use super::filter::Counted;
use super::{CudaBackend, StreamBuffers, TopKJob, narrow};
use crate::error::Result;
use crate::kernel_contract::{TOP_K_REGISTER_LOG_TILE, TOP_K_THREADS, TopKArgs, padded_words};
use crate::schedule::top_k::TopKPlan;

/// log2 of the smallest `K` whose tiles are selected in registers in launches of few
/// blocks. Registers trade threads for work per thread: they win from this `K` on, but with
/// a small `K` a tile's merges are few and short, and a quarter of the threads each doing 32
/// words' work makes launches of few blocks longer (`compare.sh topk` measures both sides).
const REGISTER_FROM_LOG_K: u32 = 10;

/// Blocks per multiprocessor from which a launch selects every tile of 2^10 words or more in
/// registers, whatever `K`: with many tiles the blocks' barriers, not their threads, bound
/// the shared-memory network.
const REGISTER_FROM_BLOCKS_PER_SM: u64 = 16;

/// Threads of a block that selects the best `2^log_k` of a tile of `2^log_tile` words, in a
/// launch of `blocks` blocks on `multiprocessors`: one per 32 words where registers select
/// it (from [`TOP_K_REGISTER_LOG_TILE`] on, where [`REGISTER_FROM_LOG_K`] or
/// [`REGISTER_FROM_BLOCKS_PER_SM`] says: `tile_select_registers` in `cuda/top_k.cuh` takes a
/// tile in registers exactly when its block is this), else one per two words, at most
/// [`TOP_K_THREADS`].
pub(in crate::cuda) fn tile_block(
    log_tile: u32,
    log_k: u32,
    blocks: u64,
    multiprocessors: u32,
) -> u32 {
    let many = blocks >= REGISTER_FROM_BLOCKS_PER_SM * u64::from(multiprocessors.max(1));
    if log_tile >= TOP_K_REGISTER_LOG_TILE && (log_k >= REGISTER_FROM_LOG_K || many) {
        1 << (log_tile - 5)
    } else {
        TOP_K_THREADS.min(1 << log_tile.saturating_sub(1))
    }
}

impl CudaBackend {
    /// The bitonic top-k's passes over the keys, or with `candidates` over the filter's
    /// candidates at `candidates.0`, as many words per row as `candidates.1` says; returns
    /// the address of the last pass's runs.
    pub(super) fn enqueue_tiles(
        &self,
        job: &TopKJob,
        plan: &TopKPlan,
        candidates: Option<(cu::CUdeviceptr, Counted)>,
        scratch: &mut StreamBuffers,
        stream: cu::CUstream,
    ) -> Result<cu::CUdeviceptr> {
        let rows = job.rows;
        let run = plan.run();
        let buffers = [
            scratch.alloc(self, plan.scratch_words(rows) * 8)?,
            scratch.alloc(
                self,
                plan.passes.get(1).map_or(1, |p| rows * p.tiles * run * 8),
            )?,
        ];
        for (i, pass) in plan.passes.iter().enumerate() {
            let mut keys_at = job.keys;
            let from_words = i == 0 && candidates.is_some();
            let mut words_at = match candidates {
                Some((at, _)) if i == 0 => at,
                _ => buffers[(i + 1) % 2],
            };
            let mut out_at = buffers[i % 2];
            // The candidates' counts limit only the pass that reads them.
            let (mut counts, mut k, mut capacity) = match candidates {
                Some((_, c)) if i == 0 => (c.counts, c.k, c.capacity),
                _ => (0, 0, 0),
            };
            let mut args = TopKArgs {
                len: pass.len,
                rows,
                tiles: pass.tiles,
                log_tile: pass.log_tile,
                log_k: plan.log_k,
                encoding: job.encoding.code(),
                from_keys: u32::from(pass.from_keys && !from_words),
            };
            let mut params = [
                &mut keys_at as *mut u64 as *mut c_void,
                &mut words_at as *mut u64 as *mut c_void,
                &mut out_at as *mut u64 as *mut c_void,
                &mut args as *mut TopKArgs as *mut c_void,
                &mut counts as *mut u64 as *mut c_void,
                &mut k as *mut u32 as *mut c_void,
                &mut capacity as *mut u32 as *mut c_void,
            ];
            let grid = self.grid(rows * pass.tiles);
            let block = tile_block(
                pass.log_tile,
                plan.log_k,
                u64::from(grid),
                self.limits.multiprocessors,
            );
            let shared = (padded_words(pass.log_tile) * 8) as u32;
            // SAFETY: the parameters match `top_k_tiles_<key>(const K *keys, const u64 *words,
            // u64 *out, TopKArgs a, const u32 *counts, u32 k, u32 capacity)`, K of
            // `key_bytes` (repr(C) with the kernel's layout); the first pass reads `rows *
            // len` keys or candidates (`len` slots per row, at most `capacity` read as the
            // counts say, counts per row), a later one
            // `rows * len` words of the previous pass's output, and each writes `rows * tiles
            // * K` words, which its buffer holds (the first buffer the first pass's, the
            // largest); the shared memory is within what the kernel was loaded with.
            unsafe {
                launch_kernel(
                    self.top_k_kernels.tiles[narrow(job.key_bytes)],
                    (grid, block, shared),
                    stream,
                    &mut params,
                )
            }?;
        }
        Ok(buffers[(plan.passes.len() - 1) % 2])
    }
}
