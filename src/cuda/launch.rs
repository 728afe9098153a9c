//! Launches of a CUDA plan: the tile passes of the network and the merge-path passes, each
//! a kernel launch with its parameters, on the stream the caller names.

use std::ffi::c_void;

use cust::sys as cu;

use super::kernels::launch_kernel;
use super::plan::{self, Launch, MergeLaunch, PassArgs, PassKernel, SortPlan};
use super::radix::RadixBuffers;
use super::{CudaBackend, Job};
use crate::error::{Error, Result};

impl CudaBackend {
    /// Enqueues every launch of `job` on `stream`.
    pub(super) fn enqueue(&self, job: &Job, stream: cu::CUstream) -> Result<()> {
        match &job.plan {
            SortPlan::Network(launches) => {
                for launch in launches {
                    self.launch_pass(job, launch, stream)?;
                }
                Ok(())
            }
            SortPlan::MergePath(plan) => {
                // Refused before any launch.
                job.merge_scratch()?;
                self.launch_pass(job, &plan.tile_sort, stream)?;
                self.launch_merges(job, &plan.merges, 0, stream)
            }
            SortPlan::Counting(counting) => {
                // Refused before any launch.
                let scratch = job.merge_scratch()?;
                self.launch_counting(job.keys, counting, scratch.splits, stream)
            }
            SortPlan::Radix(radix) => {
                // Refused before any launch.
                let scratch = job.merge_scratch()?;
                let buffers = RadixBuffers {
                    keys: job.keys,
                    values: job.values,
                    scratch_keys: scratch.keys,
                    scratch_values: scratch.values,
                    state: scratch.splits,
                };
                self.launch_radix(radix, buffers, stream)
            }
        }
    }

    /// Enqueues `merges` on `job`'s words, alternating between them and the scratch; the
    /// first reads the data after an even number `done` of earlier merges, the scratch after
    /// an odd one.
    pub(super) fn launch_merges(
        &self,
        job: &Job,
        merges: &[MergeLaunch],
        done: usize,
        stream: cu::CUstream,
    ) -> Result<()> {
        let scratch = job.merge_scratch()?;
        let mut from = (job.keys, job.values);
        let mut to = (scratch.keys, scratch.values);
        if done % 2 == 1 {
            std::mem::swap(&mut from, &mut to);
        }
        for merge in merges {
            self.launch_merge(job, merge, from, to, scratch.splits, stream)?;
            std::mem::swap(&mut from, &mut to);
        }
        Ok(())
    }

    /// Enqueues one network pass on `job`'s words.
    pub(super) fn launch_pass(
        &self,
        job: &Job,
        launch: &Launch,
        stream: cu::CUstream,
    ) -> Result<()> {
        let (mut keys, mut values, mut args) = (job.keys, job.values, launch.args);
        if launch.kernel == PassKernel::Warp {
            // The plan makes warp launches only for u32 keys alone.
            let kernels = job.kernels.warp.ok_or_else(|| {
                Error::Unsupported("a warp sort of keys that are not u32 alone".into())
            })?;
            let kernel = kernels[usize::from(launch.block > 32)];
            let mut params = [
                &mut keys as *mut u64 as *mut c_void,
                &mut args as *mut PassArgs as *mut c_void,
            ];
            // SAFETY: the two parameters match `warp_sort_u32` and `warps_sort_u32(u32 *keys,
            // PassArgs args)`; `keys` holds `row_len` words, the only indices the kernel
            // touches; the plan's shape is one block of 32 threads per 2^10 keys of the padded
            // row and, with more than one warp (`warps_sort_u32`), 4 bytes of dynamic shared
            // memory per key of it, as the kernels are written for.
            return unsafe {
                launch_kernel(
                    kernel,
                    (launch.grid, launch.block, launch.shared_bytes),
                    stream,
                    &mut params,
                )
            };
        }
        let mut params = [
            &mut keys as *mut u64 as *mut c_void,
            &mut values as *mut u64 as *mut c_void,
            &mut args as *mut PassArgs as *mut c_void,
        ];
        let kernel = if launch.kernel == PassKernel::Cluster {
            // The plan makes cluster launches only where `limits` says the kernels exist.
            job.kernels.cluster.ok_or_else(|| {
                Error::Unsupported("a cluster launch on a device without cluster kernels".into())
            })?
        } else {
            job.kernels.tile
        };
        // SAFETY: the three parameters match `tile_pass_K_V` and `cluster_pass_K_V(K *keys, V
        // *values, PassArgs args)` (PassArgs is repr(C) with the kernels' layout, device
        // pointers are u64); `keys` and `values` hold `rows * row_len` words each (values 0
        // for the `none` kernels, which never read it), and the kernels touch no index past
        // that; `shared_bytes` is within the opt-in limit set on the kernel at open; a
        // cluster kernel's grid is a multiple of its compiled cluster size.
        unsafe {
            launch_kernel(
                kernel,
                (launch.grid, launch.block, launch.shared_bytes),
                stream,
                &mut params,
            )
        }
    }

    /// Enqueues one merge pass: the splitters of every output tile, then the merge from the
    /// words `from` to the words `to`.
    pub(super) fn launch_merge(
        &self,
        job: &Job,
        merge: &MergeLaunch,
        from: (cu::CUdeviceptr, cu::CUdeviceptr),
        to: (cu::CUdeviceptr, cu::CUdeviceptr),
        splits: cu::CUdeviceptr,
        stream: cu::CUstream,
    ) -> Result<()> {
        let mut args = merge.args;
        let (merge_kernel, split_kernel) = job.kernels.merges(merge);
        let (mut src_keys, mut src_values) = from;
        let (mut dst_keys, mut dst_values) = to;
        let mut splits = splits;
        if let Some(split_kernel) = split_kernel {
            let mut split_params = [
                &mut src_keys as *mut u64 as *mut c_void,
                &mut splits as *mut u64 as *mut c_void,
                &mut args as *mut plan::MergeArgs as *mut c_void,
            ];
            // SAFETY: the parameters match `merge_split_K` and `merge_rows_split_K(const K
            // *keys, u64 *splits, MergeArgs args)` (MergeArgs is repr(C) with the kernels'
            // layout); `keys` holds `rows * n` words and `splits` one u64 per output tile of
            // the pass (`MergePathPlan::splits` is the most of any pass), the only indices the
            // kernel touches.
            unsafe {
                launch_kernel(
                    split_kernel,
                    (merge.split_grid, merge.split_block, 0),
                    stream,
                    &mut split_params,
                )?;
            }
        }
        let mut merge_params = [
            &mut src_keys as *mut u64 as *mut c_void,
            &mut src_values as *mut u64 as *mut c_void,
            &mut dst_keys as *mut u64 as *mut c_void,
            &mut dst_values as *mut u64 as *mut c_void,
            &mut splits as *mut u64 as *mut c_void,
            &mut args as *mut plan::MergeArgs as *mut c_void,
        ];
        // SAFETY: the parameters match `merge_pass_K_V`, `merge_rows_pass_K_V` and
        // `merge_search_pass_K_V(const K *src_keys, const V *src_values, K *dst_keys, V
        // *dst_values, const u64 *splits, MergeArgs args)`; the source and destination words
        // are distinct buffers of `rows * n` words each (values 0 for the `none` kernels,
        // which never read them); the kernel reads the splitters the previous launch on this
        // stream wrote, or (`merge_search_pass`) none; `shared_bytes` is within the opt-in
        // limit.
        unsafe {
            launch_kernel(
                merge_kernel,
                (merge.grid, merge.block, merge.shared_bytes),
                stream,
                &mut merge_params,
            )
        }
    }
}
