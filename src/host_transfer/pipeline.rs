//! The staged transfer of one column of words as a pipeline of pieces.
//!
//! The pinned ring is cut into pieces (256 KiB to 1 MiB) that circulate between rayon's
//! threads, which copy the caller's bytes into or out of them, and the calling thread, which
//! alone talks to the device: it hands pieces out, enqueues each one's bus copy as soon as
//! it is ready, and waits for a piece's copy only when it needs the piece again. The host
//! threads never stop between chunks: copying chunk by chunk, with a fork and join of
//! rayon's threads per chunk, leaves them asleep and waking at every chunk's start, a large
//! part of the copy's time with chunks of a few MiB.
//!
//! Pieces move by value through two channels (a piece is a `&mut [u8]` of a slot), so the
//! host and the bus never touch the same piece at once without any `unsafe`: a piece is
//! either with a host thread, or on the bus behind a mark, or free.
//!
//! The copiers hold rayon's threads for the length of a transfer (each waits on the job
//! channel between pieces), and the transfer waits for them, so a rayon thread must never
//! sleep on a lock that a transfer's caller holds ([`crate::rayon_lock::lock_shared_with_rayon`]).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::Duration;

use super::stream_copy::{Stores, copy};
use super::{ConcurrentTransfers, Link, RingOf, SLOT_BYTES, SLOTS, timing_override};
use crate::error::{Error, Result};

/// Transfers shorter than this take the chunked path: handing pieces to threads that must
/// first wake up costs more than it saves. Measured against the chunked path, the pipeline
/// loses at 4 and 16 MiB (a `Vec` sort of 2^20 keys takes half as long again) and wins from
/// 64 MiB on (2^24 keys: about 10% faster).
pub(crate) const MIN_PIPELINE_BYTES: usize = 32 << 20;
/// The smallest piece: each costs a bus copy and a mark on the calling thread.
const MIN_PIECE_BYTES: usize = 256 << 10;
/// The largest piece, so that the ring holds enough pieces for every host thread to have
/// one in hand and one queued.
const MAX_PIECE_BYTES: usize = 1 << 20;

/// Whether this transfer can use the pipeline: it is long enough, and rayon has threads to
/// spare that are not this one (a rayon thread that waits on a channel for tasks queued
/// behind it could wait for ever).
pub(super) fn usable(bytes: usize) -> bool {
    #[cfg(test)]
    if OFF.with(std::cell::Cell::get) {
        return false;
    }
    bytes >= MIN_PIPELINE_BYTES
        && rayon::current_thread_index().is_none()
        && rayon::current_num_threads() >= 2
}

#[cfg(test)]
thread_local! {
    /// Set by tests that time the chunked path against the pipeline on this thread.
    static OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes this thread's staged transfers take the chunked path (`true`) or not (tests only).
#[cfg(test)]
pub(crate) fn force_chunks(on: bool) {
    OFF.with(|off| off.set(on));
}

/// The host threads that copy: three quarters of rayon's, less one for the calling thread,
/// shared evenly by the transfers that run at once ([`ConcurrentTransfers`]). The host's
/// memory, which the bus reads and writes too, bounds these copies before its cores do: on
/// a 16-core host, 11 copiers make faster round trips than 15 (CUDA and OpenCL alike).
fn copiers() -> usize {
    if let Some(n) = timing_override::<usize>("BITONIC_TIMING_COPIERS") {
        return n.max(1);
    }
    ((rayon::current_num_threads() * 3 / 4).saturating_sub(1) / ConcurrentTransfers::current())
        .max(1)
}

/// The stores of an upload's copies into the ring ([`Stores::Cached`]); a timing may set
/// `BITONIC_TIMING_UPLOAD_STORES=streaming` to compare.
fn upload_stores() -> Stores {
    match timing_override::<String>("BITONIC_TIMING_UPLOAD_STORES").as_deref() {
        Some("streaming") => Stores::Streaming,
        _ => Stores::Cached,
    }
}

/// Bytes of each piece of a transfer of `total` bytes: about two per copier, a power of two
/// within the bounds (so whole words, page-aligned streaming stores, and slots cut evenly).
fn piece_bytes(total: usize) -> usize {
    (total / (2 * copiers()))
        .next_power_of_two()
        .clamp(MIN_PIECE_BYTES, MAX_PIECE_BYTES)
        .min(SLOT_BYTES)
}

/// A piece of the ring, and the index of its slot.
type SlotPiece<'r> = (usize, &'r mut [u8]);

/// The ring's slots, waited for and cut into pieces of `piece` bytes, each with the index
/// of its slot.
fn pieces<'r, L: Link>(
    link: &L,
    ring: &'r mut RingOf<L>,
    piece: usize,
) -> Result<Vec<SlotPiece<'r>>> {
    ring.ensure(link)?;
    ring.finish(link)?;
    let all = ring.slots.iter_mut().enumerate().flat_map(|(i, slot)| {
        L::pinned_bytes(&mut slot.pinned)
            .chunks_mut(piece)
            .map(move |p| (i, p))
    });
    // A timing may use only the first pieces, as a smaller ring would.
    if let Some(k) = timing_override::<usize>("BITONIC_TIMING_RING_PIECES") {
        return Ok(all.take(k.max(1)).collect());
    }
    Ok(all.collect())
}

/// What the copiers have finished, for the calling thread.
struct Done<T> {
    queue: Receiver<T>,
    lost: AtomicBool,
}

impl<T> Done<T> {
    /// The next finished job, waiting for it; checks now and then that no copier was lost
    /// (the others would keep the channel open for ever).
    fn wait(&self) -> Result<T> {
        loop {
            match self.queue.recv_timeout(Duration::from_millis(100)) {
                Ok(result) => return Ok(result),
                Err(RecvTimeoutError::Timeout) if !self.lost.load(Ordering::Relaxed) => {}
                Err(_) => return Err(copier_lost()),
            }
        }
    }

    /// A finished job, if one is waiting.
    fn take(&self) -> Option<T> {
        self.queue.try_recv().ok()
    }
}

/// Runs `issue` on this thread while [`copiers`] rayon tasks do the jobs it sends with
/// `work` and hand back the results, until `issue` drops its sender.
fn with_copiers<J: Send, T: Send, R>(
    work: impl Fn(J) -> T + Sync,
    issue: impl FnOnce(Sender<J>, &Done<T>) -> R,
) -> R {
    let (jobs, job_queue) = channel::<J>();
    let job_queue = Mutex::new(job_queue);
    let (finished, queue) = channel::<T>();
    let done = Done {
        queue,
        lost: AtomicBool::new(false),
    };
    rayon::in_place_scope(|scope| {
        for _ in 0..copiers() {
            let (job_queue, finished, work, lost) =
                (&job_queue, finished.clone(), &work, &done.lost);
            scope.spawn(move |_| {
                // Only a panic drops the guard; a copier that returns forgets it.
                let guard = Lost(lost);
                while let Some(job) = next_job(job_queue) {
                    if finished.send(work(job)).is_err() {
                        break;
                    }
                }
                std::mem::forget(guard);
            });
        }
        drop(finished);
        issue(jobs, &done)
    })
}

/// Set when a copier unwinds.
struct Lost<'a>(&'a AtomicBool);

impl Drop for Lost<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Copies `src` to the device buffer `dst` from byte 0 through the ring, telling `progress`
/// how many leading bytes have had their copies enqueued each time that grows (pieces may
/// reach the bus out of order).
pub(super) fn upload<L: Link>(
    link: &L,
    ring: &mut RingOf<L>,
    src: &[u8],
    dst: L::Device,
    progress: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<()> {
    let total = src.len();
    let mut enqueued = Prefix::default();
    // Per slot, the mark after the newest copy out of it that may still be running.
    let mut newest: Vec<Option<L::Mark>> = (0..SLOTS).map(|_| None).collect();
    let mut free: VecDeque<SlotPiece<'_>> = pieces(link, ring, piece_bytes(total))?.into();
    let stores = upload_stores();
    let result = with_copiers(
        |((slot, piece), offset): (SlotPiece<'_>, usize)| {
            copy(piece, &src[offset..offset + piece.len()], stores);
            ((slot, piece), offset)
        },
        |jobs, done| {
            // Hands pieces out, sends each filled one over the bus, and takes back the
            // oldest one on the bus when no free piece is left.
            let mut on_bus: VecDeque<(L::Mark, SlotPiece<'_>)> = VecDeque::new();
            let (mut next, mut out, most_out) = (0, 0, 2 * copiers());
            let run = (|| -> Result<()> {
                loop {
                    while next < total && out < most_out {
                        let (slot, piece) = match free.pop_front() {
                            Some(piece) => piece,
                            None => match on_bus.pop_front() {
                                Some((mark, piece)) => {
                                    link.wait(mark)?;
                                    piece
                                }
                                None => break,
                            },
                        };
                        let len = piece.len().min(total - next);
                        send(&jobs, ((slot, piece.split_at_mut(len).0), next))?;
                        next += len;
                        out += 1;
                    }
                    if out == 0 {
                        return Ok(());
                    }
                    let ((slot, piece), offset) = done.wait()?;
                    out -= 1;
                    link.upload(piece, dst, offset)?;
                    let len = piece.len();
                    on_bus.push_back((link.mark()?, (slot, piece)));
                    let (before, after) = enqueued.add(offset, len);
                    if after > before {
                        progress(after)?;
                    }
                }
            })();
            // Ends the copiers' loops.
            drop(jobs);
            for (mark, (slot, _)) in on_bus {
                newest[slot] = Some(mark);
            }
            run
        },
    );
    // Each slot waits for its own last copy before it is written again.
    for (slot, mark) in ring.slots.iter_mut().zip(newest) {
        if mark.is_some() {
            slot.pending = mark;
        }
    }
    result
}

/// Copies `dst.len()` bytes of the device buffer `src` from byte 0 into `dst` through the
/// ring, after the work already enqueued. `written` is set once a byte of `dst` may have
/// been written.
pub(super) fn download<L: Link>(
    link: &L,
    ring: &mut RingOf<L>,
    src: L::Device,
    dst: &mut [u8],
    written: &mut bool,
) -> Result<()> {
    let total = dst.len();
    let mut free: VecDeque<&mut [u8]> = pieces(link, ring, piece_bytes(total))?
        .into_iter()
        .map(|(_, piece)| piece)
        .collect();
    with_copiers(
        |(piece, target): (&mut [u8], &mut [u8])| {
            copy(target, &piece[..target.len()], Stores::Streaming);
            piece
        },
        |jobs, done| {
            // Keeps the bus busy with downloads into free pieces, and hands each arrived
            // piece to the copiers, oldest first, with the part of `dst` it fills.
            let mut on_bus: VecDeque<(L::Mark, &mut [u8], &mut [u8])> = VecDeque::new();
            let mut rest = dst;
            let (mut out, most_out) = (0, 2 * copiers());
            let run = (|| -> Result<()> {
                loop {
                    while let Some(piece) = done.take() {
                        free.push_back(piece);
                        out -= 1;
                    }
                    while !rest.is_empty() {
                        let Some(piece) = free.pop_front() else {
                            break;
                        };
                        let len = piece.len().min(rest.len());
                        let (target, after) = std::mem::take(&mut rest).split_at_mut(len);
                        rest = after;
                        let offset = total - rest.len() - len;
                        link.download(src, offset, &mut piece[..len])?;
                        on_bus.push_back((link.mark()?, piece, target));
                    }
                    if on_bus.is_empty() && out == 0 {
                        return Ok(());
                    }
                    if out < most_out
                        && let Some((mark, piece, target)) = on_bus.pop_front()
                    {
                        link.wait(mark)?;
                        *written = true;
                        send(&jobs, (piece, target))?;
                        out += 1;
                        continue;
                    }
                    free.push_back(done.wait()?);
                    out -= 1;
                }
            })();
            drop(jobs);
            run
        },
    )
}

/// The leading bytes of a transfer whose pieces have all been handled, from pieces handled
/// in any order.
#[derive(Default)]
struct Prefix {
    /// Bytes from 0 with no gap.
    end: usize,
    /// Pieces past a gap, by offset: their lengths.
    ahead: std::collections::BTreeMap<usize, usize>,
}

impl Prefix {
    /// Adds the piece of `len` bytes at `offset`; the prefix before and after.
    fn add(&mut self, offset: usize, len: usize) -> (usize, usize) {
        let before = self.end;
        self.ahead.insert(offset, len);
        while let Some(len) = self.ahead.remove(&self.end) {
            self.end += len;
        }
        (before, self.end)
    }
}

/// A copier's next job, or `None` once the calling thread has stopped handing them out.
fn next_job<T>(queue: &Mutex<Receiver<T>>) -> Option<T> {
    queue.lock().unwrap_or_else(|e| e.into_inner()).recv().ok()
}

/// Hands a job to the copiers.
fn send<T>(jobs: &Sender<T>, job: T) -> Result<()> {
    jobs.send(job).map_err(|_| copier_lost())
}

/// The copiers ended early: only a panic in one of them does that.
fn copier_lost() -> Error {
    Error::Unsupported("a host copy thread of the transfer stopped".to_string())
}

#[cfg(test)]
mod tests {
    use super::{ConcurrentTransfers, copiers};

    /// Transfers marked as running at once split the copy threads evenly, nested marks
    /// included, and each mark gives the count back when it goes.
    #[test]
    fn concurrent_transfers_share_the_copiers_until_dropped() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(16)
            .build()
            .expect("pool");
        pool.install(|| {
            // Three quarters of 16 threads, less one.
            assert_eq!(copiers(), 11);
            {
                let _two = ConcurrentTransfers::new(2);
                assert_eq!(copiers(), 5);
                {
                    let _three = ConcurrentTransfers::new(3);
                    assert_eq!(copiers(), 3);
                    let _many = ConcurrentTransfers::new(64);
                    assert_eq!(copiers(), 1, "every transfer keeps one copier");
                }
                assert_eq!(copiers(), 5);
            }
            assert_eq!(copiers(), 11);
        });
    }
}
