//! Host slices to the device and back at the speed of the bus: the one transfer engine of
//! both GPU backends.
//!
//! Pageable memory crosses PCIe at a fraction of the bus speed, and registering a caller's
//! slice costs more than the copy it would save (`docs/performance.md`, "What the bus and
//! the host allow"). So
//! every host-slice sort stages through a small ring of pinned slots that the backend keeps:
//! the host copies chunk `i + 1` into one slot (on all of rayon's threads, widening narrow
//! keys on the way) while the bus carries chunk `i` out of another. Downloads run the same
//! ring backwards. Columns of words of 32 MiB or more go through the same slots cut into
//! pieces instead (`pipeline.rs`): rayon's threads copy piece after piece without stopping
//! between chunks, while this thread sends each piece over the bus as it is ready. The
//! backend supplies only a [`Link`]: pinned allocation, asynchronous copies on its one
//! in-order stream or queue, and events to wait for them; kernels enqueued on that stream
//! between the uploads and the downloads are ordered by it. During an upload the engine tells
//! the backend how many leading elements are on their way ([`UploadProgress`]), so that a sort can
//! start on them before the rest has crossed the bus.
//!
//! A slot's bytes are only handed out after the copy that last used it has completed
//! ([`Slot::ready`]), so the host never writes memory the bus is reading, nor reads memory the
//! bus is still writing.
//!
//! A column that lies in a caller's pinned buffer of the backend's own context
//! ([`crate::pinned`]) skips the ring: one copy each way, straight between the caller's
//! memory and the device, and no host copy at all.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::buffer_cache::{BufferCache, DeviceBytes};
use crate::error::{Error, Result};
use crate::keys::{NarrowKeys, WordsMut};
use crate::pinned::is_pinned_for;
use crate::rayon_lock::for_pieces;
use download::download;
pub(crate) use stream_copy::Stores;
use stream_copy::copy;

/// Bytes of one pinned slot, and so of the largest chunk. Each chunk costs a parallel host
/// copy (a fork and join of rayon's threads) and an event; 16 MiB chunks make the round trip
/// of 2^28 `u32` keys about a quarter faster than 8 MiB ones, and the ring stays at 48 MiB.
pub(crate) const SLOT_BYTES: usize = 16 << 20;
/// Slots in a ring: the host fills one while the bus drains the others.
pub(crate) const SLOTS: usize = 3;
/// The smallest chunk worth its own copy; smaller transfers go in one. Each chunk costs a
/// parallel host copy (waking rayon's threads: tens of microseconds) and an event, which
/// outweigh the overlap below a few MiB (2^20 keys in chunks of 1 MiB take longer than in
/// one).
const MIN_CHUNK_BYTES: usize = 2 << 20;
/// Host copies up to this long stay on the calling thread: waking rayon's threads costs more
/// than they save (2^15 keys copy in about 60% of the time they take in pieces).
const PARALLEL_FROM_BYTES: usize = 256 << 10;
/// Longer copies go to every rayon thread in even pieces of at least this many bytes: pieces
/// of 256 KiB leave half the threads idle at 2^20 keys, which then copy about 20% slower.
const MIN_PIECE_BYTES: usize = 64 << 10;
/// How long rayon's threads spin at most, awake, while a download waits for its first chunk
/// ([`Awake`]): about a sort and a chunk's bus copy of the longest columns that go chunk by
/// chunk.
const AWAKE_AT_MOST: std::time::Duration = std::time::Duration::from_micros(400);

/// The value of the environment variable `name` in the crate's unit tests, where a timing sets
/// it to compare a rule with another; `None` everywhere else, so the product never reads it.
pub(crate) fn timing_override<T: std::str::FromStr>(name: &str) -> Option<T> {
    #[cfg(test)]
    return std::env::var(name).ok().and_then(|v| v.parse().ok());
    #[cfg(not(test))]
    {
        let _ = name;
        None
    }
}

thread_local! {
    /// How many transfers this thread's share with others running at once
    /// ([`ConcurrentTransfers`]).
    static CONCURRENT: std::cell::Cell<usize> = const { std::cell::Cell::new(1) };
}

/// While alive, marks the calling thread as one of `transfers` threads that move host slices
/// at the same time (one per device of a sort spread over devices): each transfer then takes
/// its share of the host's copy threads. Transfers that each take all of them queue the
/// later ones' copiers behind the earlier ones' on rayon's pool, so one device's upload
/// gets most of the threads and the other finishes alone, on one link.
pub(crate) struct ConcurrentTransfers {
    before: usize,
}

impl ConcurrentTransfers {
    /// This thread's transfers run beside `transfers - 1` others.
    pub(crate) fn new(transfers: usize) -> ConcurrentTransfers {
        let before = CONCURRENT.with(|c| c.replace(transfers.max(1)));
        ConcurrentTransfers { before }
    }

    /// How many transfers the calling thread's share the copy threads with.
    fn current() -> usize {
        CONCURRENT.with(std::cell::Cell::get)
    }
}

impl Drop for ConcurrentTransfers {
    fn drop(&mut self) {
        CONCURRENT.with(|c| c.set(self.before));
    }
}

/// What a GPU backend tells about its host-slice sorts without taking their lock: the bytes
/// it keeps, and the copy-back mode the sorter chose.
#[derive(Default)]
pub(crate) struct CacheStats {
    device: AtomicU64,
    pinned: AtomicU64,
    all_or_nothing: AtomicBool,
}

impl CacheStats {
    /// Records what the backend keeps now.
    pub(crate) fn keep<B: DeviceBytes, P, M>(&self, host: &HostState<B, P, M>) {
        self.device.store(host.buffers.bytes(), Ordering::Relaxed);
        self.pinned.store(host.ring.bytes(), Ordering::Relaxed);
    }

    /// Device bytes kept.
    pub(crate) fn device(&self) -> u64 {
        self.device.load(Ordering::Relaxed)
    }

    /// Pinned host bytes kept.
    pub(crate) fn pinned(&self) -> u64 {
        self.pinned.load(Ordering::Relaxed)
    }

    /// See [`crate::Backend::set_all_or_nothing`].
    pub(crate) fn set_all_or_nothing(&self, all_or_nothing: bool) {
        self.all_or_nothing.store(all_or_nothing, Ordering::Relaxed);
    }

    /// How results go back to host slices.
    pub(crate) fn copy_back(&self) -> CopyBack {
        if self.all_or_nothing.load(Ordering::Relaxed) {
            CopyBack::AllOrNothing
        } else {
            CopyBack::Direct
        }
    }
}

/// What a GPU backend's driver layer provides to the engine.
pub(crate) trait Link {
    /// Page-locked host memory the device copies to and from at bus speed.
    type Pinned: Send;
    /// A device buffer's handle (a device address, or a memory object).
    type Device: Copy;
    /// A completion marker recorded after a copy (an event).
    type Mark;

    /// `bytes` of pinned host memory.
    fn alloc_pinned(&self, bytes: usize) -> Result<Self::Pinned>;
    /// The pinned memory's bytes.
    fn pinned_bytes(pinned: &mut Self::Pinned) -> &mut [u8];
    /// The driver context whose pinned buffers ([`crate::pinned`]) this link copies directly.
    fn owner(&self) -> u64;
    /// Enqueues a copy of `src` (pinned memory: a slot, or a caller's pinned buffer) to `dst`
    /// at byte `offset`, after everything enqueued before it; on error nothing was enqueued.
    /// `src` is neither written nor freed before a mark made after it has been waited for or
    /// [`Link::drain`] has returned (the engine keeps this).
    fn upload(&self, src: &[u8], dst: Self::Device, offset: usize) -> Result<()>;
    /// Enqueues a copy of `dst.len()` bytes of `src` at byte `offset` into `dst` (pinned
    /// memory), after everything enqueued before it (the sort's kernels); on error nothing
    /// was enqueued. `dst` is neither read nor freed before a mark made after it has been
    /// waited for or [`Link::drain`] has returned.
    fn download(&self, src: Self::Device, offset: usize, dst: &mut [u8]) -> Result<()>;
    /// A mark after everything enqueued so far.
    fn mark(&self) -> Result<Self::Mark>;
    /// Blocks until the work behind `mark` (and everything before it) has completed.
    fn wait(&self, mark: Self::Mark) -> Result<()>;
    /// Blocks until everything enqueued has completed, successfully or not (error paths
    /// call it before the slots may be reused or freed).
    fn drain(&self);
    /// Whether the device computes on the host's own cores (an OpenCL CPU device), where
    /// rayon's threads spinning while they wait for it would take its cores.
    fn computes_on_host(&self) -> bool {
        false
    }
}

/// One pinned slot and the copy that last used it, if that copy may still be running.
struct Slot<P, M> {
    pinned: P,
    pending: Option<M>,
}

impl<P, M> Slot<P, M> {
    /// The slot's bytes, once the copy that last used them has completed.
    fn ready<L: Link<Pinned = P, Mark = M>>(&mut self, link: &L) -> Result<&mut [u8]> {
        if let Some(mark) = self.pending.take() {
            link.wait(mark)?;
        }
        Ok(L::pinned_bytes(&mut self.pinned))
    }
}

/// The pinned slots a backend keeps between sorts: allocated on first use, freed with the
/// backend's [`HostState`] (its `release_cached`, or when the backend goes).
/// Generic over the link's pinned memory `P` and marks `M`, so that a backend can keep it
/// apart from the borrowed link it uses in each sort.
pub(crate) struct Ring<P, M> {
    slots: Vec<Slot<P, M>>,
}

impl<P, M> Default for Ring<P, M> {
    fn default() -> Self {
        Ring { slots: Vec::new() }
    }
}

impl<P, M> Ring<P, M> {
    /// Bytes of pinned host memory held.
    pub(crate) fn bytes(&self) -> u64 {
        (self.slots.len() * SLOT_BYTES) as u64
    }

    fn ensure<L: Link<Pinned = P, Mark = M>>(&mut self, link: &L) -> Result<()> {
        while self.slots.len() < SLOTS {
            self.slots.push(Slot {
                pinned: link.alloc_pinned(SLOT_BYTES)?,
                pending: None,
            });
        }
        Ok(())
    }

    /// After a failure: lets every copy finish, then forgets the marks.
    fn settle<L: Link<Pinned = P, Mark = M>>(&mut self, link: &L) {
        link.drain();
        for slot in &mut self.slots {
            slot.pending = None;
        }
    }

    /// Waits for every pending copy.
    fn finish<L: Link<Pinned = P, Mark = M>>(&mut self, link: &L) -> Result<()> {
        for slot in &mut self.slots {
            if let Some(mark) = slot.pending.take() {
                link.wait(mark)?;
            }
        }
        Ok(())
    }
}

/// The ring a link uses.
type RingOf<L> = Ring<<L as Link>::Pinned, <L as Link>::Mark>;

/// What a GPU backend's sorts of host slices keep between calls: the device buffers `B`
/// (`crate::buffer_cache`), the pinned ring, and the host memory of all-or-nothing copies back.
pub(crate) struct HostState<B, P, M> {
    pub(crate) buffers: BufferCache<B>,
    ring: Ring<P, M>,
    held: Vec<u8>,
}

impl<B, P, M> Default for HostState<B, P, M> {
    fn default() -> Self {
        HostState {
            buffers: BufferCache::default(),
            ring: Ring::default(),
            held: Vec::new(),
        }
    }
}

/// The state a backend keeps for its link `L` and device buffers `B`.
pub(crate) type HostStateOf<L, B> = HostState<B, <L as Link>::Pinned, <L as Link>::Mark>;

impl<B, P, M> HostState<B, P, M> {
    /// Passes on the result of a sort's transfers and passes. One that ran out of device
    /// memory after its buffers were allocated (OpenCL may allocate at first use, so a
    /// buffer can be created and then fail to exist) frees the kept buffers: they may be what
    /// is in the way, or may never have become usable, and the next sort allocates afresh.
    pub(crate) fn after_sort(&mut self, result: Result<()>) -> Result<()> {
        if let Err(e) = &result {
            let cause = match e {
                Error::PartialResult { cause } => cause,
                e => e,
            };
            if matches!(cause, Error::OutOfMemory { .. }) {
                self.buffers = BufferCache::default();
            }
        }
        result
    }

    /// Uploads the keys, and the values when given, each to its device buffer ([`upload`]),
    /// telling `landed` how many elements are on their way ([`UploadProgress`]).
    pub(crate) fn upload<'a, L: Link<Pinned = P, Mark = M>>(
        &mut self,
        link: &L,
        keys: (&Column<'a>, L::Device),
        values: Option<(&Column<'a>, L::Device)>,
        landed: UploadProgress<'_>,
    ) -> Result<()> {
        let columns: Vec<_> = std::iter::once(keys).chain(values).collect();
        upload(link, &mut self.ring, &columns, landed)
    }

    /// Copies the sorted keys, and the values when given, back ([`download`]) in the
    /// backend's copy-back mode.
    pub(crate) fn download<'a, L: Link<Pinned = P, Mark = M>>(
        &mut self,
        link: &L,
        keys: (&mut Column<'a>, L::Device),
        values: Option<(&mut Column<'a>, L::Device)>,
        mode: CopyBack,
    ) -> Result<()> {
        let mut columns: Vec<_> = std::iter::once(keys).chain(values).collect();
        download(link, &mut self.ring, &mut columns, mode, &mut self.held)
    }
}

/// Host data on its way to or from the device, as the words the kernels see.
pub(crate) enum Column<'a> {
    /// 32- or 64-bit words, copied as they are.
    Words(WordsMut<'a>),
    /// Keys narrower than 32 bits, widened to ordered `u32` words on the way in and narrowed
    /// on the way out.
    Narrow(&'a mut dyn NarrowKeys),
}

impl Column<'_> {
    /// Elements.
    pub(crate) fn len(&self) -> usize {
        match self {
            Column::Words(w) => w.len(),
            Column::Narrow(k) => k.len(),
        }
    }

    /// Bytes per element on the device.
    pub(crate) fn word_bytes(&self) -> usize {
        match self {
            Column::Words(w) => w.word_bytes(),
            Column::Narrow(_) => 4,
        }
    }

    /// Bytes on the device.
    pub(crate) fn device_bytes(&self) -> usize {
        self.len() * self.word_bytes()
    }

    /// The column's bytes when they lie in a caller's pinned buffer of context `owner`
    /// ([`crate::pinned`]): the bus reads them directly.
    fn pinned_bytes(&self, owner: u64) -> Option<&[u8]> {
        self.words().filter(|b| is_pinned_for(owner, b))
    }

    /// As [`Column::pinned_bytes`], for the bus to write them.
    fn pinned_bytes_mut(&mut self, owner: u64) -> Option<&mut [u8]> {
        self.words_mut().filter(|b| is_pinned_for(owner, b))
    }

    /// The column's bytes when the device words are the host's (no widening).
    fn words(&self) -> Option<&[u8]> {
        match self {
            Column::Words(w) => Some(w.as_bytes()),
            Column::Narrow(_) => None,
        }
    }

    /// As [`Column::words`], to be written.
    fn words_mut(&mut self) -> Option<&mut [u8]> {
        match self {
            Column::Words(w) => Some(w.as_bytes_mut()),
            Column::Narrow(_) => None,
        }
    }

    /// Writes the device words of the elements from `first` into `out` (whole words).
    fn stage_in(&self, first: usize, out: &mut [u8]) {
        match self {
            Column::Words(w) => {
                let at = first * w.word_bytes();
                par_copy(out, &w.as_bytes()[at..at + out.len()], Stores::Cached);
            }
            // `widen` spreads itself over rayon's threads, as `narrow` does.
            Column::Narrow(k) => k.widen(first, bytemuck::cast_slice_mut(out)),
        }
    }

    /// Stores device words (whole words) as the elements from `first`.
    fn stage_out(&mut self, first: usize, data: &[u8]) {
        match self {
            Column::Words(w) => {
                let at = first * w.word_bytes();
                par_copy(
                    &mut w.as_bytes_mut()[at..at + data.len()],
                    data,
                    Stores::Streaming,
                );
            }
            Column::Narrow(k) => k.narrow(first, bytemuck::cast_slice(data)),
        }
    }
}

/// `dst.copy_from_slice(src)` on all of rayon's threads where allowed ([`for_pieces`]), for
/// copies large enough to gain (longer than [`PARALLEL_FROM_BYTES`]), with the stores
/// `stores` names ([`Stores`]).
pub(crate) fn par_copy(dst: &mut [u8], src: &[u8], stores: Stores) {
    if dst.len() <= PARALLEL_FROM_BYTES {
        dst.copy_from_slice(src);
        return;
    }
    // Whole pages, so that every piece's streaming stores start aligned where `dst` does.
    let piece = dst
        .len()
        .div_ceil(rayon::current_num_threads())
        .max(MIN_PIECE_BYTES)
        .next_multiple_of(4096);
    for_pieces(dst, src, piece, |d, s| copy(d, s, stores));
}

/// The chunks of a staged transfer of `total` bytes of `word_bytes` words: each about a
/// quarter of it, so that the host and the bus overlap even for small transfers, within
/// [`MIN_CHUNK_BYTES`] and [`SLOT_BYTES`].
fn staged_chunks(total: usize, word_bytes: usize) -> impl Iterator<Item = (usize, usize)> {
    chunks(
        total,
        word_bytes,
        (total / 4).clamp(MIN_CHUNK_BYTES, SLOT_BYTES),
    )
}

/// A transfer of `total` bytes of `word_bytes` words in chunks of about `want` bytes (whole
/// words), as (byte offset, length).
fn chunks(total: usize, word_bytes: usize, want: usize) -> impl Iterator<Item = (usize, usize)> {
    let chunk = (want / word_bytes).max(1) * word_bytes;
    (0..total)
        .step_by(chunk)
        .map(move |offset| (offset, chunk.min(total - offset)))
}

/// Told, during an upload, how many leading elements of every column have had their copies
/// enqueued: work enqueued after the copies (on the link's stream or queue, or ordered after
/// it) may use them. Called with ever larger counts, the last time with all of them; an error
/// it returns ends the upload.
pub(crate) type UploadProgress<'a> = &'a mut dyn FnMut(usize) -> Result<()>;

/// Copies each column to its device buffer (`dst`, from byte 0): a caller's pinned buffer
/// in one copy, anything else through the ring; `landed` follows the last column. The
/// columns are only read. On error nothing is left in flight.
fn upload<L: Link>(
    link: &L,
    ring: &mut RingOf<L>,
    columns: &[(&Column<'_>, L::Device)],
    landed: UploadProgress<'_>,
) -> Result<()> {
    let result = upload_columns(link, ring, columns, landed);
    if result.is_err() {
        ring.settle(link);
    }
    result
}

fn upload_columns<L: Link>(
    link: &L,
    ring: &mut RingOf<L>,
    columns: &[(&Column<'_>, L::Device)],
    landed: UploadProgress<'_>,
) -> Result<()> {
    let mut next = 0;
    for (i, &(column, dst)) in columns.iter().enumerate() {
        // Only the last column's progress is every column's.
        let last = i + 1 == columns.len();
        let word = column.word_bytes();
        let mut progress = |bytes: usize| if last { landed(bytes / word) } else { Ok(()) };
        if let Some(bytes) = column.pinned_bytes(link.owner()) {
            // The sort and the downloads follow on the same stream or queue, and the caller's
            // slice stays borrowed until the download has been waited for. Slot-sized
            // copies, so that a sort can start on the first ones.
            for (offset, len) in chunks(bytes.len(), word, SLOT_BYTES) {
                link.upload(&bytes[offset..offset + len], dst, offset)?;
                progress(offset + len)?;
            }
            continue;
        }
        if let Some(bytes) = column.words().filter(|b| pipeline::usable(b.len())) {
            // The pipeline leaves each slot's newest copy pending on it.
            pipeline::upload(link, ring, bytes, dst, &mut progress)?;
            continue;
        }
        ring.ensure(link)?;
        for (offset, len) in staged_chunks(column.device_bytes(), word) {
            let slot = &mut ring.slots[next % SLOTS];
            next += 1;
            let staged = &mut slot.ready(link)?[..len];
            column.stage_in(offset / word, staged);
            link.upload(staged, dst, offset)?;
            slot.pending = Some(link.mark()?);
            progress(offset + len)?;
        }
    }
    // The sort that follows on the same stream waits for these copies by itself; the slots
    // are waited for when next used.
    Ok(())
}

/// How the sorted words reach the caller's slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyBack {
    /// Chunk by chunk as they arrive, overlapped with the bus; a caller's pinned buffer
    /// directly. A failure after the first byte may have been written returns
    /// [`Error::PartialResult`].
    Direct,
    /// Everything into host memory first, then into the slices: a failure leaves them as
    /// they were. One more host copy of the data.
    AllOrNothing,
}

mod download;
pub(crate) mod pipeline;
mod stream_copy;
#[cfg(test)]
mod tests;
