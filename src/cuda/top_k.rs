//! Top-k of host slices on the CUDA device: the launches of [`TopKPlan`] with `top_k_tiles`
//! (`cuda/top_k.cuh`, in the module's PTX).

use std::ffi::c_void;

use cust::context::CurrentContext;
use cust::memory::{AsyncCopyDestination, DeviceBuffer};
use cust::module::Module;

use super::CudaBackend;
use super::driver::on;
use super::kernels::{Kernel, launch_kernel, load_kernel};
use crate::backend::BackendKind;
use crate::error::Result;
use crate::kernel_contract::{TOP_K_THREADS, TopKArgs, padded_words};
use crate::keys::KeyEncoding;
use crate::rayon_lock::lock_shared_with_rayon;
use crate::schedule::top_k::{TOP_K_MAX_LOG_TILE, TopKPlan, decode_runs};

/// Blocks of one launch at most; each block loops over the tiles past the grid.
const MAX_GRID: u64 = 1 << 20;

/// Looks up `top_k_tiles` and lets it use the shared memory of the largest tile.
pub(super) fn load_top_k_kernel(module: &Module) -> Result<Kernel> {
    load_kernel(
        module,
        "top_k_tiles",
        (padded_words(TOP_K_MAX_LOG_TILE) * 8) as u32,
    )
}

/// The device address of a buffer, as the kernels take it.
fn address(buffer: &DeviceBuffer<u8>) -> u64 {
    buffer.as_device_ptr().as_raw()
}

impl CudaBackend {
    /// [`crate::backend::Backend::top_k_rows_words`] on this device: uploads the keys on the
    /// backend's stream, runs the plan's launches there and reads the last pass's runs back.
    /// The largest tile (2^[`TOP_K_MAX_LOG_TILE`] words, 32 KiB of shared memory with the
    /// padding) fits every CUDA device without an opt-in.
    pub(super) fn top_k_host(
        &self,
        keys: &[u32],
        encoding: KeyEncoding,
        row_len: usize,
        k: usize,
    ) -> Result<Option<(Vec<u32>, Vec<u32>)>> {
        let Some(plan) = TopKPlan::new(row_len as u64, k as u64, TOP_K_MAX_LOG_TILE) else {
            return Ok(None);
        };
        let rows = (keys.len() / row_len) as u64;
        let run = plan.run();
        let scratch = plan.scratch_words(rows) * 8;
        let second = plan.passes.get(1).map_or(1, |p| rows * p.tiles * run * 8);
        let key_bytes = keys.len() as u64 * 4;
        let requested = key_bytes + scratch + second;
        if requested > self.info.memory_bytes {
            return Err(self.out_of_memory(requested));
        }
        // The stream is the host-slice sorts': one at a time.
        let _host = lock_shared_with_rayon(&self.busy);
        crate::fault::point(BackendKind::Cuda, "cuCtxSetCurrent")?;
        CurrentContext::set_current(&self.context).map_err(on("cuCtxSetCurrent"))?;
        let mut device_keys = self.alloc(key_bytes as usize, requested)?;
        let buffers = [
            self.alloc(scratch as usize, requested)?,
            self.alloc(second as usize, requested)?,
        ];
        let mut runs = vec![0u64; (rows * run) as usize];
        let stream = self.stream.as_inner();
        let done = (|| -> Result<()> {
            // SAFETY: the buffer holds exactly the keys' bytes; the host slice outlives the
            // stream synchronization below.
            unsafe { device_keys.async_copy_from(bytemuck::cast_slice(keys), &self.stream) }
                .map_err(on("cuMemcpyHtoDAsync"))?;
            for (i, pass) in plan.passes.iter().enumerate() {
                let mut keys_at = address(&device_keys);
                let mut words_at = address(&buffers[(i + 1) % 2]);
                let mut out_at = address(&buffers[i % 2]);
                let mut args = TopKArgs {
                    len: pass.len,
                    rows,
                    tiles: pass.tiles,
                    log_tile: pass.log_tile,
                    log_k: plan.log_k,
                    encoding: encoding.code(),
                    from_keys: u32::from(pass.from_keys),
                };
                let mut params = [
                    &mut keys_at as *mut u64 as *mut c_void,
                    &mut words_at as *mut u64 as *mut c_void,
                    &mut out_at as *mut u64 as *mut c_void,
                    &mut args as *mut TopKArgs as *mut c_void,
                ];
                let grid = (rows * pass.tiles)
                    .min(MAX_GRID)
                    .min(u64::from(self.limits.max_grid_x)) as u32;
                let block = TOP_K_THREADS.min(1 << (pass.log_tile - 1));
                let shared = (padded_words(pass.log_tile) * 8) as u32;
                // SAFETY: the parameters match `top_k_tiles(const u32 *keys, const u64 *words,
                // u64 *out, TopKArgs a)` (repr(C) with the kernel's layout); the first pass
                // reads `rows * len` keys, a later one `rows * len` words of the previous
                // pass's output, and each writes `rows * tiles * K` words, which its buffer
                // holds (the first buffer the first pass's, the largest); the shared memory
                // is within what the kernel was loaded with.
                unsafe {
                    launch_kernel(
                        self.top_k_kernel,
                        (grid, block, shared),
                        stream,
                        &mut params,
                    )
                }?;
            }
            let last = &buffers[(plan.passes.len() - 1) % 2];
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut runs);
            // SAFETY: `bytes` is `rows * K` words, the front of the last pass's output; it
            // outlives the synchronization below.
            unsafe { last.index(..bytes.len()).async_copy_to(bytes, &self.stream) }
                .map_err(on("cuMemcpyDtoHAsync"))?;
            Ok(())
        })();
        // Whatever was enqueued finishes before the buffers are freed; the first error is
        // the one to report.
        let synced = self.stream.synchronize().map_err(on("cuStreamSynchronize"));
        done?;
        synced?;
        Ok(Some(decode_runs(&runs, run as usize, k, encoding)))
    }
}
