//! Device-resident timing with the stream held: a one-thread kernel (`hold_stream` in
//! `cuda/bitonic.cu`) spins on a flag in mapped host memory while the host queues the timed
//! work behind it, then the host releases it. The events around the work then measure what
//! the GPU does, not how long the host takes to submit a launch (several microseconds, which
//! dominated the time of sorts of a few thousand keys). NVIDIA's nvbench measures CUB this
//! way; `cuda/peers.cu` holds the stream the same way for CUB in `bitonic bench --compare`.
//! `BITONIC_HOLD_STREAM=0` turns it off for both.

use std::ffi::c_void;
use std::ptr;

use cust::sys as cu;

use super::{Kernel, check};
use crate::error::Result;

/// `BITONIC_HOLD_STREAM=0` times without holding the stream (the host's launch latency is
/// then inside the timed interval).
pub(super) const HOLD_ENV: &str = "BITONIC_HOLD_STREAM";

/// How long the kernel waits for its release before it gives up: a host that queues the
/// timed work needs microseconds; a second means it blocked on the held stream itself.
const TIMEOUT_NS: u64 = 1_000_000_000;

/// Whether device-resident timing holds the stream (the default).
pub(super) fn enabled() -> bool {
    std::env::var(HOLD_ENV).map_or(true, |v| v.trim() != "0")
}

/// The mapped flag the hold kernel spins on. Create and drop it with its context current.
pub(super) struct HeldStream {
    /// Host address of the flag (page-locked, mapped into the device).
    host: *mut u32,
    /// The device's address of the same word.
    device: u64,
}

impl HeldStream {
    /// Allocates the flag in the current context.
    pub(super) fn new() -> Result<HeldStream> {
        let mut host: *mut c_void = ptr::null_mut();
        // SAFETY: allocates 4 bytes of page-locked host memory mapped into the current
        // context; `host` is a valid out-pointer.
        check("cuMemHostAlloc", unsafe {
            cu::cuMemHostAlloc(&mut host, 4, cu::CU_MEMHOSTALLOC_DEVICEMAP)
        })?;
        // Owned from here on, so that an error below frees it.
        let mut held = HeldStream {
            host: host.cast(),
            device: 0,
        };
        // SAFETY: `host` was allocated with CU_MEMHOSTALLOC_DEVICEMAP just above.
        check("cuMemHostGetDevicePointer", unsafe {
            cu::cuMemHostGetDevicePointer_v2(&mut held.device, host, 0)
        })?;
        Ok(held)
    }

    /// Queues the hold kernel on `stream`: work queued after it waits for [`release`].
    ///
    /// [`release`]: HeldStream::release
    pub(super) fn hold(&self, kernel: Kernel, stream: cu::CUstream) -> Result<()> {
        // SAFETY: `host` is the live 4-byte allocation of `new`; the previous hold kernel on
        // this stream has finished (the caller waited for the work behind it).
        unsafe { ptr::write_volatile(self.host, 0) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let (mut flag, mut timeout) = (self.device, TIMEOUT_NS);
        let mut params = [
            &mut flag as *mut u64 as *mut c_void,
            &mut timeout as *mut u64 as *mut c_void,
        ];
        // SAFETY: the parameters match `hold_stream(volatile u32 *flag, u64 timeout_ns)`;
        // `flag` is the device address of the live mapped word; one thread, no shared memory.
        check("cuLaunchKernel", unsafe {
            cu::cuLaunchKernel(
                kernel.func,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                stream,
                params.as_mut_ptr(),
                ptr::null_mut(),
            )
        })
    }

    /// Lets the held stream go on.
    pub(super) fn release(&self) {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        // SAFETY: `host` is the live 4-byte allocation of `new`.
        unsafe { ptr::write_volatile(self.host, 1) };
    }

    /// Whether the kernel gave up waiting (the timing of the work behind it is void). Read it
    /// after the work behind the hold kernel has finished.
    pub(super) fn timed_out(&self) -> bool {
        // SAFETY: `host` is the live 4-byte allocation of `new`.
        unsafe { ptr::read_volatile(self.host) == 2 }
    }
}

impl Drop for HeldStream {
    fn drop(&mut self) {
        // SAFETY: `host` came from cuMemHostAlloc in this context (current, as documented on
        // the type) and is freed once; nothing useful can be done about a failure.
        unsafe { cu::cuMemFreeHost(self.host.cast()) };
    }
}
