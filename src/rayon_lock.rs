//! The crate's locks that sorts hold while they wait for rayon's threads, and whether a
//! thread may split work over rayon's threads: a sort of host slices holds its sorter's lock
//! while rayon's threads make its host copies, so the threads that wait for such a lock must
//! keep rayon's work moving, without ever running work that waits for a lock they hold.

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::Duration;

/// Takes `lock`, one of the crate's locks that a sort may hold while it waits for rayon's
/// threads (they make its host copies). A rayon thread must not sleep on such a lock: if
/// every rayon thread did, the sort holding it would wait for ever. So a rayon thread that
/// holds none of these locks runs pending rayon work (the copies among it) while it waits.
/// One that already holds one must not: the work it ran could be a sort through the same
/// sorter, which would wait for the lock this thread holds further down its own stack, for
/// ever; it waits as other threads do (the holder of the lock it waits for never needs it).
// Without a GPU backend no sort holds a turn.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) fn lock_shared_with_rayon<T>(lock: &Mutex<T>) -> RayonLockGuard<'_, T> {
    let on_rayon = rayon::current_thread_index().is_some();
    let guard = if !on_rayon || RAYON_LOCKS_HELD.with(Cell::get) > 0 {
        lock.lock().unwrap_or_else(|e| e.into_inner())
    } else {
        loop {
            match lock.try_lock() {
                Ok(guard) => break guard,
                // Nothing behind the crate's locks is left half-updated by a panic.
                Err(TryLockError::Poisoned(poisoned)) => break poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    if rayon::yield_now() != Some(rayon::Yield::Executed) {
                        std::thread::sleep(Duration::from_micros(50));
                    }
                }
            }
        }
    };
    RAYON_LOCKS_HELD.with(|held| held.set(held.get() + 1));
    RayonLockGuard { guard }
}

thread_local! {
    /// How many locks taken by [`lock_shared_with_rayon`] this thread holds.
    static RAYON_LOCKS_HELD: Cell<usize> = const { Cell::new(0) };
}

/// A lock taken by [`lock_shared_with_rayon`], counted as held by this thread until dropped.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) struct RayonLockGuard<'a, T> {
    guard: MutexGuard<'a, T>,
}

impl<T> std::ops::Deref for RayonLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> std::ops::DerefMut for RayonLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<T> Drop for RayonLockGuard<'_, T> {
    fn drop(&mut self) {
        RAYON_LOCKS_HELD.with(|held| held.set(held.get() - 1));
    }
}

/// Whether this thread may split work over rayon's threads: not a rayon thread that holds
/// one of the crate's locks, since while it waited for its pieces it would run other rayon
/// work, and that could wait for the lock it holds ([`lock_shared_with_rayon`]).
pub(crate) fn may_fork() -> bool {
    rayon::current_thread_index().is_none() || RAYON_LOCKS_HELD.with(Cell::get) == 0
}

/// `work` on `dst` and `src` cut into pieces of `piece` elements (pairs of the same index),
/// on rayon's threads where [`may_fork`] allows, else all at once on this thread.
pub(crate) fn for_pieces<A: Send, B: Sync>(
    dst: &mut [A],
    src: &[B],
    piece: usize,
    work: impl Fn(&mut [A], &[B]) + Sync,
) {
    use rayon::prelude::*;
    if may_fork() {
        dst.par_chunks_mut(piece)
            .zip(src.par_chunks(piece))
            .for_each(|(d, s)| work(d, s));
    } else {
        work(dst, src);
    }
}

/// Rayon's threads kept awake, spinning, until this is dropped or `most` has passed: a
/// parallel copy that starts on sleeping threads first waits tens of microseconds for them
/// to wake, so a caller that knows one
/// will follow a wait starts the wake-up before the wait. Nothing if this thread may not
/// fork ([`may_fork`]); the spinning is bounded, so it can delay other rayon work by at most
/// `most` and never waits on anything.
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
pub(crate) struct Awake {
    done: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
impl Awake {
    /// Wakes every rayon thread to spin for at most `most`.
    pub(crate) fn start(most: Duration) -> Self {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        if !may_fork() {
            return Awake { done: None };
        }
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        rayon::spawn_broadcast(move |_| {
            let start = std::time::Instant::now();
            while !flag.load(Ordering::Acquire) && start.elapsed() < most {
                std::hint::spin_loop();
            }
        });
        Awake { done: Some(done) }
    }
}

impl Drop for Awake {
    fn drop(&mut self) {
        if let Some(done) = &self.done {
            done.store(true, std::sync::atomic::Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests;
