//! The radix sort's launches (`cuda/radix.cuh`, planned in `crate::schedule::radix`): the
//! state cleared, the histogram, the starts, one pass per digit and the copy back, on one
//! stream, over the keys, their scratch and the state.

use cust::module::Module;
use cust::sys as cu;

use super::CudaBackend;
use super::driver::check;
use super::kernels::{
    KEY_NAMES, Kernel, KernelParams, VALUE_NAMES, launch_kernel, load_kernel, load_kernels_of,
};
use super::plan::RadixLaunches;
use crate::error::{Error, Result};
use crate::kernel_contract::{RADIX_THREADS, RadixArgs};

/// The radix sort's kernels: the histogram per key width (`u32`, `u64`), the starts, and the
/// digit pass and copy back per key and value width (`u32`/`u64` keys by `none`/`u32`/`u64`
/// values, indexed as [`load_kernels_of`] orders them).
#[derive(Clone, Debug)]
pub(super) struct RadixKernels {
    histogram: [Kernel; 2],
    starts: Kernel,
    pass: Vec<Kernel>,
    copy_back: Vec<Kernel>,
}

/// Looks up the radix sort's kernels; a digit pass may use `shared_bytes` of shared memory
/// (its tile's keys, which its values then take).
pub(super) fn load_radix_kernels(module: &Module, shared_bytes: u32) -> Result<RadixKernels> {
    let keys = &KEY_NAMES[..2];
    Ok(RadixKernels {
        histogram: [
            load_kernel(module, "radix_histogram_u32", 0)?,
            load_kernel(module, "radix_histogram_u64", 0)?,
        ],
        starts: load_kernel(module, "radix_starts", 0)?,
        pass: load_kernels_of(module, "radix_pass", keys, shared_bytes)?,
        copy_back: load_kernels_of(module, "radix_copy_back", keys, 0)?,
    })
}

/// The device addresses a radix sort works on.
#[derive(Clone, Copy, Debug)]
pub(super) struct RadixBuffers {
    /// The keys, sorted in place.
    pub keys: cu::CUdeviceptr,
    /// Their values; 0 without values.
    pub values: cu::CUdeviceptr,
    /// A scratch as large as the keys.
    pub scratch_keys: cu::CUdeviceptr,
    /// A scratch as large as the values; 0 without values.
    pub scratch_values: cu::CUdeviceptr,
    /// [`crate::schedule::radix::RadixPlan::state_bytes`] of state.
    pub state: cu::CUdeviceptr,
}

/// The parameters of a digit pass and of the copy back: the row, the scratch, the state and
/// the arguments.
type PassParams = (u64, u64, u64, u64, u64, RadixArgs);

impl RadixBuffers {
    /// The parameters of `radix_pass_*` and `radix_copy_back_*` with `args`.
    fn pass_params(&self, args: RadixArgs) -> PassParams {
        (
            self.keys,
            self.values,
            self.scratch_keys,
            self.scratch_values,
            self.state,
            args,
        )
    }
}

impl CudaBackend {
    /// Enqueues the radix sort of `launches` on `buffers` on `stream`.
    pub(super) fn launch_radix(
        &self,
        launches: &RadixLaunches,
        b: RadixBuffers,
        stream: cu::CUstream,
    ) -> Result<()> {
        let plan = launches.plan;
        let kernels = &self.radix_kernels;
        let key = usize::from(plan.digits == 8);
        let variant = key * VALUE_NAMES.len() + launches.value_index();
        let mut args = RadixArgs {
            n: plan.n,
            tiles: plan.tiles(),
            encoding: launches.encoding,
            digits: plan.digits,
            digit: 0,
            keys_per_thread: plan.keys_per_thread,
            delay: launches.delay,
        };
        let compiled = super::plan::radix_keys_per_thread(launches.widths());
        if compiled != Some(plan.keys_per_thread) {
            return Err(Error::Unsupported(format!(
                "a radix plan of {} keys a thread for passes compiled for {compiled:?}",
                plan.keys_per_thread
            )));
        }
        crate::fault::point(crate::backend::BackendKind::Cuda, "cuMemsetD32Async")?;
        // SAFETY: the state holds `state_bytes` bytes, more than the cleared words.
        let status =
            unsafe { cu::cuMemsetD32Async(b.state, 0, plan.cleared_words() as usize, stream) };
        check("cuMemsetD32Async", status)?;

        let mut params = (b.keys, b.state, args);
        // SAFETY: the parameters match `radix_histogram_<key>(const K *keys, u32 *state,
        // RadixArgs a)`; blocks stride over the `n` keys and add to the state's counts.
        unsafe {
            let shape = (launches.histogram_blocks, RADIX_THREADS, 0);
            launch_kernel(
                kernels.histogram[key],
                shape,
                stream,
                &mut params.pointers(),
            )?;
        }
        let mut params = (b.state, args);
        // SAFETY: the parameters match `radix_starts(u32 *state, RadixArgs a)`; block d
        // reads and writes digit d's counts and its skip flag.
        unsafe {
            let shape = (plan.digits, RADIX_THREADS, 0);
            launch_kernel(kernels.starts, shape, stream, &mut params.pointers())?;
        }
        for digit in 0..plan.digits {
            args.digit = digit;
            let mut params = b.pass_params(args);
            // SAFETY: the parameters match `radix_pass_<key>_<value>(K *keys, V *values, K
            // *scratch_keys, V *scratch_values, u32 *state, RadixArgs a)`; one block per
            // tile, each reading and writing keys below `n` of the row and the scratch and
            // its tile's words of the state; the dynamic shared memory is the tile's keys
            // and values, within the limit set on the kernel at open.
            unsafe {
                let shape = (
                    plan.tiles() as u32,
                    RADIX_THREADS,
                    launches.pass_shared_bytes(),
                );
                launch_kernel(kernels.pass[variant], shape, stream, &mut params.pointers())?;
            }
        }
        let mut params = b.pass_params(args);
        // SAFETY: the parameters match `radix_copy_back_<key>_<value>(K *keys, V *values,
        // const K *scratch_keys, const V *scratch_values, const u32 *state, RadixArgs a)`;
        // threads stride over the `n` keys.
        unsafe {
            let shape = (launches.histogram_blocks, RADIX_THREADS, 0);
            launch_kernel(
                kernels.copy_back[variant],
                shape,
                stream,
                &mut params.pointers(),
            )
        }
    }
}
