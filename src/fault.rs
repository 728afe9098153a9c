//! Fault injection for tests: makes a chosen driver call of a GPU sort fail.
//!
//! The GPU backends call `point` just before each driver step of a sort of host slices
//! (allocations, uploads, kernel arguments and launches, the final wait, downloads), naming
//! the driver call that follows. Without the cargo feature `fault-injection` (the default)
//! `point` is an inlined `Ok(())` and costs nothing.
//!
//! With the feature, `tests/faults.rs` arms a countdown with `arm(k)`: the `k`-th point
//! (counted from 0) reached afterwards *on the same thread* returns
//! [`Error::Driver`](crate::Error::Driver) for that backend and call, with status `CODE`
//! and the message `"injected fault"`, exactly as if the driver had refused the call, and
//! `tripped()` names the call. The countdown fires once, then the thread is disarmed. The
//! state is per thread, so test threads running side by side do not disturb each other, and
//! a sort that someone else's thread runs is never affected. (Both GPU backends make every
//! driver call of a sort on one device on the calling thread; a sort over several devices
//! runs each device's uploads, sorts and downloads on a thread of its own, and only its steps
//! on the calling thread, such as the exchange between devices, can be failed.)
//!
//! The feature is for tests only: nothing else should enable it.

#[cfg(feature = "fault-injection")]
pub use injection::{CODE, arm, disarm, points_seen, tripped};

#[cfg(feature = "fault-injection")]
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(unused_imports))]
pub(crate) use injection::point;

/// A fault point: `Ok(())` (this build cannot inject faults).
#[cfg(not(feature = "fault-injection"))]
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
#[inline(always)]
pub(crate) fn point(
    _backend: crate::backend::BackendKind,
    _call: &'static str,
) -> crate::error::Result<()> {
    Ok(())
}

#[cfg(feature = "fault-injection")]
mod injection {
    use std::cell::Cell;

    use crate::backend::BackendKind;
    use crate::error::{Error, Result};

    /// The status code of an injected failure: `2^32`, outside the 32-bit range of every
    /// real CUDA (`CUresult`) and OpenCL (`cl_int`) status, so it cannot be mistaken for one.
    pub const CODE: i64 = 1 << 32;

    /// One thread's countdown.
    #[derive(Clone, Copy)]
    struct State {
        /// Points still to pass before the one that fails; `None`: disarmed.
        countdown: Option<usize>,
        /// Points reached since the last [`arm`].
        seen: usize,
        /// The call whose point failed since the last [`arm`].
        tripped: Option<&'static str>,
    }

    thread_local! {
        static STATE: Cell<State> = const {
            Cell::new(State {
                countdown: None,
                seen: 0,
                tripped: None,
            })
        };
    }

    /// Makes the `k`-th fault point (0-based) that this thread reaches from now on fail, once.
    /// Also resets [`points_seen`] and [`tripped`].
    pub fn arm(k: usize) {
        STATE.with(|s| {
            s.set(State {
                countdown: Some(k),
                seen: 0,
                tripped: None,
            })
        });
    }

    /// Stops this thread's countdown; [`points_seen`] and [`tripped`] keep their values
    /// until the next [`arm`].
    pub fn disarm() {
        STATE.with(|s| {
            s.set(State {
                countdown: None,
                ..s.get()
            })
        });
    }

    /// The driver call whose point failed on this thread since the last [`arm`], if any.
    pub fn tripped() -> Option<&'static str> {
        STATE.with(|s| s.get().tripped)
    }

    /// How many fault points this thread has reached since the last [`arm`] (the failing
    /// one included; points reached while disarmed count too).
    pub fn points_seen() -> usize {
        STATE.with(|s| s.get().seen)
    }

    /// A fault point before the driver call `call` of `backend`: fails when the countdown
    /// reaches it.
    #[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
    pub(crate) fn point(backend: BackendKind, call: &'static str) -> Result<()> {
        STATE.with(|s| {
            let mut state = s.get();
            state.seen += 1;
            let fail = match state.countdown {
                Some(0) => {
                    state.countdown = None;
                    state.tripped = Some(call);
                    true
                }
                Some(k) => {
                    state.countdown = Some(k - 1);
                    false
                }
                None => false,
            };
            s.set(state);
            if fail {
                Err(Error::Driver {
                    backend,
                    call: call.to_string(),
                    code: CODE,
                    message: "injected fault".to_string(),
                })
            } else {
                Ok(())
            }
        })
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_kth_point_fails_once_and_names_its_call() {
            arm(2);
            assert!(point(BackendKind::OpenCl, "a").is_ok());
            assert!(point(BackendKind::OpenCl, "b").is_ok());
            assert_eq!(tripped(), None);
            match point(BackendKind::Cuda, "c") {
                Err(Error::Driver {
                    backend,
                    call,
                    code,
                    message,
                }) => {
                    assert_eq!(backend, BackendKind::Cuda);
                    assert_eq!(call, "c");
                    assert_eq!(code, CODE);
                    assert_eq!(message, "injected fault");
                }
                other => panic!("expected an injected driver error, got {other:?}"),
            }
            assert_eq!(tripped(), Some("c"));
            // Fired once: the next points pass, and are still counted.
            assert!(point(BackendKind::Cuda, "d").is_ok());
            assert_eq!(points_seen(), 4);
            disarm();
            assert_eq!(tripped(), Some("c"));
            arm(0);
            assert_eq!((tripped(), points_seen()), (None, 0));
            disarm();
            assert!(point(BackendKind::Cuda, "e").is_ok());
            assert_eq!((tripped(), points_seen()), (None, 1));
        }

        #[test]
        fn other_threads_are_not_armed() {
            arm(0);
            std::thread::spawn(|| {
                assert!(point(BackendKind::OpenCl, "x").is_ok());
                assert_eq!(tripped(), None);
            })
            .join()
            .unwrap();
            assert!(point(BackendKind::OpenCl, "y").is_err());
            disarm();
        }
    }
}
