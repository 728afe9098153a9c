//! The kernels: the PTX embedded at build time, one variant per compute capability, and the
//! functions looked up in the loaded module.

use std::ffi::c_void;

use cust::module::Module;
use cust::sys as cu;

use super::driver::{check, on};
use crate::error::Result;

/// The PTX of `cuda/bitonic.cu`, compiled by the build script for compute capability 7.5.
pub(super) const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/bitonic.ptx"));

/// The same kernels for compute capability 8.0 and newer, which copy tiles into shared
/// memory asynchronously.
pub(super) const PTX_SM80: &str = include_str!(concat!(env!("OUT_DIR"), "/bitonic_sm80.ptx"));

/// The same kernels for compute capability 9.0 and newer, with the thread-block cluster
/// kernels (`cluster_pass_*`) beside them.
pub(super) const PTX_SM90: &str = include_str!(concat!(env!("OUT_DIR"), "/bitonic_sm90.ptx"));

/// Key widths and value kinds in the order of the kernel table; the suffixes of the kernels'
/// names in `cuda/bitonic.cu`. `u16` is every 16-bit key, stored as 16 bits and sorted in
/// 32-bit registers.
pub(super) const KEY_NAMES: [&str; 3] = ["u32", "u64", "u16"];
pub(super) const VALUE_NAMES: [&str; 3] = ["none", "u32", "u64"];
/// The value kinds of the cluster kernels, whose keys are `u32` (`plan::cluster_logs`).
pub(super) const CLUSTER_VALUE_NAMES: [&str; 2] = ["none", "u32"];

/// One kernel of the loaded module.
#[derive(Clone, Copy, Debug)]
pub(super) struct Kernel {
    /// The driver's handle; valid while the module that it came from is loaded.
    pub(super) func: cu::CUfunction,
}

// SAFETY: a CUfunction is an immutable handle into a loaded module and the driver API is
// thread-safe; `CudaBackend` keeps the module loaded for as long as the handles exist.
unsafe impl Send for Kernel {}
// SAFETY: as above; launching through a shared handle mutates nothing on the host.
unsafe impl Sync for Kernel {}

/// Looks up kernel `name` and lets it use `shared_bytes` of shared memory, its static shared
/// memory included (the device's limit counts both).
pub(super) fn load_kernel(module: &Module, name: &str, shared_bytes: u32) -> Result<Kernel> {
    let function = module
        .get_function(name)
        .map_err(on("cuModuleGetFunction"))?;
    let func = function.to_raw();
    let mut static_bytes = 0i32;
    // SAFETY: `func` belongs to `module`, loaded in the current context; the attribute is
    // written to a live i32.
    let status = unsafe {
        cu::cuFuncGetAttribute(
            &mut static_bytes,
            cu::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            func,
        )
    };
    check("cuFuncGetAttribute", status)?;
    let dynamic = shared_bytes.saturating_sub(u32::try_from(static_bytes).unwrap_or(0));
    // SAFETY: as above; the attribute takes a byte count no larger than the device's opt-in
    // limit less the kernel's static shared memory.
    let status = unsafe {
        cu::cuFuncSetAttribute(
            func,
            cu::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            dynamic as i32,
        )
    };
    check("cuFuncSetAttribute", status)?;
    Ok(Kernel { func })
}

impl Kernel {
    /// Blocks of `threads` threads and `dynamic_shared` bytes of dynamic shared memory that
    /// one multiprocessor keeps resident at once (the driver's occupancy calculator), at
    /// least 1.
    pub(super) fn resident_blocks(&self, threads: u32, dynamic_shared: u32) -> Result<u32> {
        let mut blocks = 0i32;
        // SAFETY: `func` is a live handle of the loaded module (see `Kernel`), and `blocks`
        // is a valid out-pointer.
        let status = unsafe {
            cu::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut blocks,
                self.func,
                threads as i32,
                dynamic_shared as usize,
            )
        };
        check("cuOccupancyMaxActiveBlocksPerMultiprocessor", status)?;
        Ok(u32::try_from(blocks).unwrap_or(0).max(1))
    }
}

/// The kernels `<prefix>_<key>_<value>` (`tile_pass`, `merge_pass`) indexed by
/// `key * VALUE_NAMES.len() + value`.
pub(super) fn load_kernels(
    module: &Module,
    prefix: &str,
    shared_bytes: u32,
) -> Result<Vec<Kernel>> {
    load_kernels_of(module, prefix, &KEY_NAMES, shared_bytes)
}

/// The kernels `<prefix>_<key>_<value>` for the key widths `keys` (a prefix of
/// [`KEY_NAMES`], where a kernel exists for fewer), indexed by `key * VALUE_NAMES.len() +
/// value`.
pub(super) fn load_kernels_of(
    module: &Module,
    prefix: &str,
    keys: &[&str],
    shared_bytes: u32,
) -> Result<Vec<Kernel>> {
    let mut kernels = Vec::with_capacity(keys.len() * VALUE_NAMES.len());
    for key in keys {
        for value in VALUE_NAMES {
            kernels.push(load_kernel(
                module,
                &format!("{prefix}_{key}_{value}"),
                shared_bytes,
            )?);
        }
    }
    Ok(kernels)
}

/// Looks up the cluster kernels (`cluster_pass_u32_none`, `cluster_pass_u32_u32`, in the
/// sm_90 PTX); none when the PTX lacks them (built for an older `BITONIC_CUDA_ARCH`).
pub(super) fn load_cluster_kernels(module: &Module, shared_bytes: u32) -> Result<Vec<Kernel>> {
    if module.get_function("cluster_pass_u32_none").is_err() {
        return Ok(Vec::new());
    }
    CLUSTER_VALUE_NAMES
        .iter()
        .map(|value| load_kernel(module, &format!("cluster_pass_u32_{value}"), shared_bytes))
        .collect()
}

/// The splitter kernels `<prefix>_<key>` (`merge_split`, `merge_rows_split`) in
/// [`KEY_NAMES`] order.
pub(super) fn load_split_kernels(module: &Module, prefix: &str) -> Result<Vec<Kernel>> {
    KEY_NAMES
        .iter()
        .map(|key| load_kernel(module, &format!("{prefix}_{key}"), 0))
        .collect()
}

/// The kernels of one word variant.
#[derive(Clone, Copy, Debug)]
pub(super) struct Kernels {
    /// `tile_pass_<key>_<value>`: every launch not on clusters.
    pub(super) tile: Kernel,
    /// `cluster_pass_<key>_<value>`, where the device and the variant have one.
    pub(super) cluster: Option<Kernel>,
    /// `warp_sort_u32` (one warp) and `warps_sort_u32` (a block of several), for `u32`
    /// keys alone.
    pub(super) warp: Option<[Kernel; 2]>,
    /// `merge_pass_<key>_<value>`, `merge_rows_pass_<key>_<value>` for rows, and
    /// `merge_search_pass_<key>_<value>` for passes that find their tiles' parts themselves.
    pub(super) merge: [Kernel; 3],
    /// `merge_split_<key>`, and `merge_rows_split_<key>` for rows.
    pub(super) split: [Kernel; 2],
}

impl Kernels {
    /// The merge kernel of a launch (that of rows where it has several), and the splitter
    /// that goes before it unless the merge kernel searches itself.
    pub(super) fn merges(&self, merge: &super::plan::MergeLaunch) -> (Kernel, Option<Kernel>) {
        if merge.search {
            return (self.merge[2], None);
        }
        let rows = usize::from(merge.args.rows > 1);
        (self.merge[rows], Some(self.split[rows]))
    }
}

/// Enqueues `kernel` on `stream` with `(grid, block, shared_bytes)`: blocks, threads per
/// block and dynamic shared memory in bytes.
///
/// # Safety
/// `params` must point at one value of each of the kernel's parameter types, in order, and
/// those arguments must keep every memory access of the kernel inside memory it may use.
pub(super) unsafe fn launch_kernel(
    kernel: Kernel,
    (grid, block, shared_bytes): (u32, u32, u32),
    stream: cu::CUstream,
    params: &mut [*mut std::ffi::c_void],
) -> Result<()> {
    crate::fault::point(crate::backend::BackendKind::Cuda, "cuLaunchKernel")?;
    // SAFETY: the caller vouches for the parameters; `kernel` is a live handle of the loaded
    // module, and a null `extra` is allowed.
    let status = unsafe {
        cu::cuLaunchKernel(
            kernel.func,
            grid,
            1,
            1,
            block,
            1,
            1,
            shared_bytes,
            stream,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    check("cuLaunchKernel", status)
}

/// A tuple of kernel parameters (device addresses and scalars) as the pointers
/// `cuLaunchKernel` takes.
pub(super) trait KernelParams {
    /// Pointers to each parameter, in order.
    fn pointers(&mut self) -> Vec<*mut c_void>;
}

macro_rules! kernel_params {
    ($($t:ident $i:tt),+) => {
        impl<$($t: Copy),+> KernelParams for ($($t,)+) {
            fn pointers(&mut self) -> Vec<*mut c_void> {
                vec![$(&mut self.$i as *mut $t as *mut c_void),+]
            }
        }
    };
}

kernel_params!(A 0, B 1);
kernel_params!(A 0, B 1, C 2);
kernel_params!(A 0, B 1, C 2, D 3, E 4);
kernel_params!(A 0, B 1, C 2, D 3, E 4, F 5);
kernel_params!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
kernel_params!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
kernel_params!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
kernel_params!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
kernel_params!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
