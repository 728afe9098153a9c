//! Device-resident timing with the queue held, the OpenCL counterpart of
//! `src/cuda/held_stream.rs`: the first command of a timed sort waits on a user event, so
//! the host enqueues every launch before the device may start any, then completes the event.
//! The profiling events from the first launch's start to the last one's end then measure what
//! the device does, not how long the host takes to set arguments and enqueue each launch (at
//! 2^20 keys a launch runs for a few microseconds, about what enqueuing one costs).
//! `BITONIC_HOLD_STREAM=0` times without holding, for OpenCL as for CUDA.

use opencl3::context::Context;
use opencl3::error_codes::ClError;
use opencl3::event::{CL_COMPLETE, create_user_event, set_user_event_status};
use opencl3::types::cl_event;

use super::driver;
use crate::error::Result;

/// The environment variable that turns holding off (shared with the CUDA backend).
const HOLD_ENV: &str = "BITONIC_HOLD_STREAM";

/// Whether device-resident timing holds the queue (the default).
pub(super) fn enabled() -> bool {
    std::env::var(HOLD_ENV).map_or(true, |v| v.trim() != "0")
}

/// A user event that the timed work waits on. It is completed by [`Gate::open`] or, at the
/// latest, when it is dropped, so that no error path leaves the queue waiting forever.
pub(super) struct Gate {
    event: cl_event,
    open: bool,
}

impl Gate {
    /// Creates a closed gate in `context`.
    pub(super) fn new(context: &Context) -> Result<Gate> {
        let event = create_user_event(context.get())
            .map_err(|e| driver("clCreateUserEvent")(ClError(e)))?;
        Ok(Gate { event, open: false })
    }

    /// The wait list for the first command of the timed work.
    pub(super) fn wait_list(&self) -> [cl_event; 1] {
        [self.event]
    }

    /// Lets the work that waits on the gate run. Idempotent.
    pub(super) fn open(&mut self) -> Result<()> {
        if self.open {
            return Ok(());
        }
        self.open = true;
        set_user_event_status(self.event, CL_COMPLETE)
            .map_err(|e| driver("clSetUserEventStatus")(ClError(e)))
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        // Nothing can be reported from here; the status only matters to commands still
        // waiting, which must be let go before the queue is finished or released.
        let _ = self.open();
        // SAFETY: `event` came from clCreateUserEvent and is released exactly once, here.
        unsafe {
            let _ = opencl3::event::release_event(self.event);
        }
    }
}
