//! The CUB peers (`bench/cuda/peers.cu`, linked when build.rs sets the cfg `bitonic_cub`): CUB's
//! radix, merge and segmented sorts timed with CUDA events in the same process.

use bitonic::internals::Word;

/// Which CUB sort (the numbers are the C interface's `algo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CubAlgo {
    /// `cub::DeviceRadixSort` (keys in, keys out).
    Radix = 0,
    /// `cub::DeviceMergeSort` (in place, with a less-than functor).
    Merge = 1,
    /// `cub::DeviceSegmentedSort::SortKeys` over equal rows.
    Segmented = 2,
}

impl CubAlgo {
    /// The sorter's name in tables, CSV and the plot.
    pub fn name(self) -> &'static str {
        match self {
            CubAlgo::Radix => "cub-radix",
            CubAlgo::Merge => "cub-merge",
            CubAlgo::Segmented => "cub-segmented",
        }
    }
}

/// The GPU the CUB peers run on.
#[derive(Clone, Debug)]
pub struct CubDevice {
    /// CUDA device ordinal.
    pub ordinal: i32,
    /// `cuda:N name`.
    pub label: String,
    /// Global memory in bytes.
    pub memory_bytes: u64,
}

/// What build.rs said about the peers (why they are missing, or how they were built).
pub fn build_status() -> &'static str {
    match option_env!("BITONIC_CUB_STATUS") {
        Some(s) => s,
        None if cfg!(feature = "cuda") => "build.rs gave no status",
        None => "built without the `cuda` feature",
    }
}

/// A key word the peers sort: `u32` or `u64`.
pub trait CubKey: Word {
    /// 32 or 64.
    const BITS: i32;
}

impl CubKey for u32 {
    const BITS: i32 = 32;
}

impl CubKey for u64 {
    const BITS: i32 = 64;
}

/// The result of one timed CUB sort: milliseconds per timed run, and the sorted output.
pub type CubTimes<W> = (Vec<f64>, Vec<W>, Option<Vec<u32>>);

#[cfg(bitonic_cub)]
mod ffi {
    use std::ffi::{c_char, c_int, c_void};

    // Defined in bench/cuda/peers.cu; every int return value is a cudaError_t.
    unsafe extern "C" {
        pub fn bitonic_peer_cub_version() -> c_int;
        pub fn bitonic_peer_cub_error_string(code: c_int) -> *const c_char;
        pub fn bitonic_peer_cub_device(
            device: c_int,
            name: *mut c_char,
            name_len: usize,
            total_bytes: *mut usize,
        ) -> c_int;
        pub fn bitonic_peer_cub_time(
            device: c_int,
            algo: c_int,
            key_bits: c_int,
            with_values: c_int,
            host_keys: *const c_void,
            host_values: *const u32,
            n: usize,
            segment_len: usize,
            warmup: c_int,
            runs: c_int,
            hold: c_int,
            out_ms: *mut f32,
            host_keys_out: *mut c_void,
            host_values_out: *mut u32,
        ) -> c_int;
    }
}

/// `call failed: <the CUDA runtime's message> (code)`.
#[cfg(bitonic_cub)]
fn cuda_error(call: &str, code: i32) -> String {
    // SAFETY: cudaGetErrorString returns a pointer to a static NUL-terminated string for any
    // code (unknown codes get "unrecognized error code").
    let msg = unsafe { std::ffi::CStr::from_ptr(ffi::bitonic_peer_cub_error_string(code)) };
    format!(
        "{call} failed: {} (cudaError {code})",
        msg.to_string_lossy()
    )
}

/// CUB's version, `major.minor.patch`, when the peers are linked.
pub fn version() -> Option<String> {
    #[cfg(bitonic_cub)]
    {
        // SAFETY: returns a compile-time constant; touches no state.
        let v = unsafe { ffi::bitonic_peer_cub_version() };
        Some(format!("{}.{}.{}", v / 100000, v / 100 % 1000, v % 100))
    }
    #[cfg(not(bitonic_cub))]
    {
        None
    }
}

/// The device the peers run on (CUDA device `ordinal`), or why they cannot run: not built,
/// or no usable GPU and driver.
pub fn probe(ordinal: i32) -> Result<CubDevice, String> {
    #[cfg(bitonic_cub)]
    {
        let mut name = [0u8; 256];
        let mut total = 0usize;
        // SAFETY: `name` is writable for its full length, which is passed along (the callee
        // NUL-terminates within it), and `total` is a valid usize to write.
        let code = unsafe {
            ffi::bitonic_peer_cub_device(ordinal, name.as_mut_ptr().cast(), name.len(), &mut total)
        };
        if code != 0 {
            return Err(format!(
                "unavailable (no device: {})",
                cuda_error("cudaGetDeviceCount/cudaGetDeviceProperties", code)
            ));
        }
        let name = std::ffi::CStr::from_bytes_until_nul(&name)
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(CubDevice {
            ordinal,
            label: format!("cuda:{ordinal} {name}"),
            memory_bytes: total as u64,
        })
    }
    #[cfg(not(bitonic_cub))]
    {
        let _ = ordinal;
        Err(format!("peers not built: {}", build_status()))
    }
}

/// Times `algo` on `keys` (and u32 `values`, moving with them): uploads once, then `warmup`
/// untimed and `runs` timed sorts, each between two CUDA events. `row_len` > 0 (segmented
/// sort only) sorts each row of that many keys on its own. Returns the milliseconds of each
/// timed run and the last sorted output.
#[allow(clippy::too_many_arguments)]
pub fn time<W: CubKey>(
    device: &CubDevice,
    algo: CubAlgo,
    keys: &[W],
    values: Option<&[u32]>,
    row_len: usize,
    warmup: usize,
    runs: usize,
    hold: bool,
) -> Result<CubTimes<W>, String> {
    if values.is_some_and(|v| v.len() != keys.len()) {
        return Err("keys and values differ in length".into());
    }
    if keys.is_empty() || runs == 0 {
        return Err("nothing to time (no keys or no runs)".into());
    }
    #[cfg(bitonic_cub)]
    {
        let warmup_c = i32::try_from(warmup).map_err(|_| "too many warm-ups")?;
        let runs_c = i32::try_from(runs).map_err(|_| "too many runs")?;
        let mut ms = vec![0f32; runs];
        let mut keys_out = vec![W::ZERO; keys.len()];
        let mut values_out = values.map(|v| vec![0u32; v.len()]);
        let values_ptr = values.map_or(std::ptr::null(), |v| v.as_ptr());
        let values_out_ptr = values_out
            .as_mut()
            .map_or(std::ptr::null_mut(), |v| v.as_mut_ptr());
        // SAFETY: every pointer is valid for the length the callee uses: `keys` and
        // `keys_out` hold keys.len() words of W::BITS bits, `values`/`values_out` (when
        // non-null, with with_values = 1) keys.len() u32s, `ms` holds `runs` f32s. The callee
        // reads the inputs and writes the outputs only during the call.
        let code = unsafe {
            ffi::bitonic_peer_cub_time(
                device.ordinal,
                algo as i32,
                W::BITS,
                i32::from(values.is_some()),
                keys.as_ptr().cast(),
                values_ptr,
                keys.len(),
                row_len,
                warmup_c,
                runs_c,
                i32::from(hold),
                ms.as_mut_ptr(),
                keys_out.as_mut_ptr().cast(),
                values_out_ptr,
            )
        };
        if code != 0 {
            return Err(cuda_error(algo.name(), code));
        }
        Ok((
            ms.into_iter().map(f64::from).collect(),
            keys_out,
            values_out,
        ))
    }
    #[cfg(not(bitonic_cub))]
    {
        let _ = (device.ordinal, W::BITS, algo, row_len, warmup, hold);
        Err(format!("peers not built: {}", build_status()))
    }
}
