//! Tests of the transfer engine against a fake link: every length, narrow keys, failures at
//! every fault point.

use std::cell::{Cell, RefCell};

use super::pipeline::MIN_PIPELINE_BYTES;
use super::*;
use crate::keys::{NarrowKeys, SortKey};
use crate::pinned::PinnedBuffer;
use crate::rayon_lock::{lock_shared_with_rayon, may_fork};
use std::sync::Mutex;

/// The context the fake link's pinned buffers belong to.
const FAKE_OWNER: u64 = 0xfa4e;

/// A device of plain host memory: copies happen at once (or, `lazy`, only once a mark made
/// after them is waited for, or the link drained, as a stream's may), and the `fail_at`-th
/// call (uploads, downloads and waits counted together) fails.
#[derive(Default)]
struct FakeLink {
    memory: RefCell<Vec<Vec<u8>>>,
    calls: Cell<usize>,
    fail_at: Option<usize>,
    pinned_allocated: Cell<usize>,
    lazy: bool,
    /// With `lazy`: the copies enqueued, and how many of them have run.
    queued: RefCell<Vec<Queued>>,
    ran: Cell<usize>,
}

/// A copy a lazy [`FakeLink`] has enqueued: the host memory stays valid, and untouched by
/// the engine, until a mark after the copy has been waited for (the `Link` contract).
enum Queued {
    Up {
        src: *const u8,
        len: usize,
        dst: usize,
        offset: usize,
    },
    Down {
        src: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    },
}

impl FakeLink {
    fn lazy() -> FakeLink {
        FakeLink {
            lazy: true,
            ..FakeLink::default()
        }
    }

    /// Runs the enqueued copies up to `mark`, in order.
    fn run_to(&self, mark: usize) {
        let queued = self.queued.borrow();
        let mut memory = self.memory.borrow_mut();
        for copy in &queued[self.ran.get().min(mark)..mark] {
            // SAFETY: the engine keeps each copy's host memory valid and untouched until a
            // mark after it has been waited for or the link drained, which is now.
            match *copy {
                Queued::Up {
                    src,
                    len,
                    dst,
                    offset,
                } => memory[dst][offset..offset + len]
                    .copy_from_slice(unsafe { std::slice::from_raw_parts(src, len) }),
                Queued::Down {
                    src,
                    offset,
                    dst,
                    len,
                } => unsafe { std::slice::from_raw_parts_mut(dst, len) }
                    .copy_from_slice(&memory[src][offset..offset + len]),
            }
        }
        self.ran.set(self.ran.get().max(mark));
    }
}

impl FakeLink {
    fn buffer(&self, bytes: usize) -> usize {
        let mut memory = self.memory.borrow_mut();
        memory.push(vec![0xa5; bytes]);
        memory.len() - 1
    }

    fn step(&self) -> Result<()> {
        let call = self.calls.get();
        self.calls.set(call + 1);
        if self.fail_at == Some(call) {
            return Err(Error::Unsupported(format!("fake failure at call {call}")));
        }
        Ok(())
    }
}

impl Link for FakeLink {
    type Pinned = Vec<u8>;
    type Device = usize;
    type Mark = usize;

    fn alloc_pinned(&self, bytes: usize) -> Result<Vec<u8>> {
        self.pinned_allocated.set(self.pinned_allocated.get() + 1);
        Ok(vec![0x5a; bytes])
    }

    fn pinned_bytes(pinned: &mut Vec<u8>) -> &mut [u8] {
        pinned
    }

    fn owner(&self) -> u64 {
        FAKE_OWNER
    }

    fn upload(&self, src: &[u8], dst: usize, offset: usize) -> Result<()> {
        self.step()?;
        if self.lazy {
            self.queued.borrow_mut().push(Queued::Up {
                src: src.as_ptr(),
                len: src.len(),
                dst,
                offset,
            });
        } else {
            self.memory.borrow_mut()[dst][offset..offset + src.len()].copy_from_slice(src);
        }
        Ok(())
    }

    fn download(&self, src: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.step()?;
        if self.lazy {
            self.queued.borrow_mut().push(Queued::Down {
                src,
                offset,
                dst: dst.as_mut_ptr(),
                len: dst.len(),
            });
        } else {
            dst.copy_from_slice(&self.memory.borrow()[src][offset..offset + dst.len()]);
        }
        Ok(())
    }

    fn mark(&self) -> Result<usize> {
        self.step()?;
        Ok(self.queued.borrow().len())
    }

    fn wait(&self, mark: usize) -> Result<()> {
        self.step()?;
        self.run_to(mark);
        Ok(())
    }

    fn drain(&self) {
        self.run_to(self.queued.borrow().len());
    }
}

/// Word counts around every chunk size the engine picks, and small ones.
fn lengths(word: usize) -> Vec<usize> {
    let mut out = vec![0, 1, 2, 3, 1000];
    for bytes in [
        MIN_CHUNK_BYTES,
        SLOT_BYTES,
        4 * MIN_CHUNK_BYTES,
        4 * SLOT_BYTES,
    ] {
        let words = bytes / word;
        out.extend([words - 1, words, words + 1]);
    }
    out.push(5 * SLOT_BYTES / word + 3);
    out
}

fn words(n: usize, seed: u64) -> Vec<u32> {
    (0..n as u64)
        .map(|i| (i.wrapping_mul(0x9e37_79b9) ^ seed) as u32)
        .collect()
}

/// [`upload`], checking what it tells of its progress: ever larger counts of elements, the
/// last one all of them, and at each, those elements of every column already on the device.
fn checked_upload(
    link: &FakeLink,
    ring: &mut RingOf<FakeLink>,
    columns: &[(&Column<'_>, usize)],
) -> Result<()> {
    let n = columns.first().map_or(0, |(c, _)| c.len());
    let mut seen = 0;
    let result = upload(link, ring, columns, &mut |landed| {
        assert!(
            landed > seen && landed <= n,
            "landed {landed} after {seen} of {n}"
        );
        seen = landed;
        for (column, device) in columns {
            if let Some(bytes) = column.words() {
                let prefix = landed * column.word_bytes();
                assert_eq!(
                    &link.memory.borrow()[*device][..prefix],
                    &bytes[..prefix],
                    "{landed} elements landed"
                );
            }
        }
        Ok(())
    });
    if result.is_ok() && n > 0 {
        assert_eq!(seen, n, "every element landed");
    }
    result
}

/// Downloads device buffer `device` into one column of `u32` words in `mode`, through a
/// fresh ring.
fn download_words(link: &FakeLink, words: &mut [u32], device: usize, mode: CopyBack) -> Result<()> {
    let mut ring: RingOf<FakeLink> = Ring::default();
    let mut column = Column::Words(WordsMut::U32(words));
    download(
        link,
        &mut ring,
        &mut [(&mut column, device)],
        mode,
        &mut Vec::new(),
    )
}

#[test]
fn words_go_up_and_come_back_at_every_length() {
    // Both ways of staging long columns: the pipeline of pieces and chunk by chunk.
    for chunked in [false, true] {
        pipeline::force_chunks(chunked);
        words_go_up_and_come_back(chunked);
    }
    pipeline::force_chunks(false);
}

fn words_go_up_and_come_back(chunked: bool) {
    let link = FakeLink::default();
    let mut ring: RingOf<FakeLink> = Ring::default();
    let mut held = Vec::new();
    for n in lengths(4) {
        let mut keys = words(n, 1);
        let mut values: Vec<u64> = (0..n as u64).map(|i| i << 20 | 7).collect();
        let device_keys = link.buffer(4 * n);
        let device_values = link.buffer(8 * n);
        let key_column = Column::Words(WordsMut::U32(&mut keys));
        let value_column = Column::Words(WordsMut::U64(&mut values));
        checked_upload(
            &link,
            &mut ring,
            &[(&key_column, device_keys), (&value_column, device_values)],
        )
        .unwrap();
        // "Sort": reverse both on the device.
        reverse_on_device(&link, device_keys, 4);
        reverse_on_device(&link, device_values, 8);
        let (mut key_column, mut value_column) = (key_column, value_column);
        for mode in [CopyBack::Direct, CopyBack::AllOrNothing] {
            download(
                &link,
                &mut ring,
                &mut [
                    (&mut key_column, device_keys),
                    (&mut value_column, device_values),
                ],
                mode,
                &mut held,
            )
            .unwrap();
        }
        let mut want_keys = words(n, 1);
        want_keys.reverse();
        assert_eq!(keys, want_keys, "n = {n}, chunked: {chunked}");
        assert!(
            values
                .iter()
                .rev()
                .enumerate()
                .all(|(i, &v)| v == (i as u64) << 20 | 7)
        );
    }
    assert_eq!(
        link.pinned_allocated.get(),
        SLOTS,
        "the ring is allocated once"
    );
    assert_eq!(ring.bytes(), (SLOTS * SLOT_BYTES) as u64);
}

#[test]
fn narrow_keys_are_widened_and_narrowed_in_the_copies() {
    let link = FakeLink::default();
    let mut ring: RingOf<FakeLink> = Ring::default();
    let n = SLOT_BYTES / 4 + 5;
    let input: Vec<i16> = (0..n).map(|i| (i as i16).wrapping_mul(31)).collect();
    let mut keys = input.clone();
    let device = link.buffer(4 * n);
    {
        let mut narrow: &mut [i16] = &mut keys;
        let mut column = Column::Narrow(&mut narrow);
        checked_upload(&link, &mut ring, &[(&column, device)]).unwrap();
        let on_device: Vec<u32> = link.memory.borrow()[device]
            .chunks(4)
            .map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        let want: Vec<u32> = input.iter().map(|k| k.to_wide()).collect();
        assert_eq!(on_device, want);
        // The device's words come back as keys.
        link.memory.borrow_mut()[device] = bytemuck::cast_slice(&vec![0x8000u32; n]).to_vec();
        download(
            &link,
            &mut ring,
            &mut [(&mut column, device)],
            CopyBack::Direct,
            &mut Vec::new(),
        )
        .unwrap();
    }
    assert!(
        keys.iter().all(|&k| k == 0),
        "0x8000 is the ordered word of 0i16"
    );
    let mut check: &mut [i16] = &mut keys;
    assert_eq!(NarrowKeys::len(&check), n);
    check.narrow(0, &[0x7fff]);
    assert_eq!(keys[0], -1);
}

#[test]
fn a_failed_copy_back_is_partial_only_after_a_chunk_was_written() {
    // Chunk by chunk, a failure at every call; through the pipeline of pieces (a longer
    // column, so many more calls), the first and last dozen calls and every fifth between.
    for (chunked, n) in [
        (true, 3 * SLOT_BYTES / 4),
        (false, 3 * MIN_PIPELINE_BYTES / 8),
    ] {
        pipeline::force_chunks(chunked);
        fail_every_copy_back_call(n, |count, k| {
            !chunked && k >= 12 && k + 12 < count && k % 5 != 0
        });
    }
    pipeline::force_chunks(false);
}

/// Downloads `n` words with a failure at each call that `skip(calls, k)` does not skip.
fn fail_every_copy_back_call(n: usize, skip: impl Fn(usize, usize) -> bool) {
    // Count the calls of a whole successful download first.
    let count = {
        let link = FakeLink::default();
        let device = link.buffer(4 * n);
        download_words(&link, &mut words(n, 2), device, CopyBack::Direct).unwrap();
        link.calls.get()
    };
    assert!(count > 4, "{count} calls: want several chunks");
    let (input, sorted) = (words(n, 3), words(n, 4));
    let mut partial = 0;
    for fail_at in (0..count).filter(|&k| !skip(count, k)) {
        for mode in [CopyBack::Direct, CopyBack::AllOrNothing] {
            let link = FakeLink {
                fail_at: Some(fail_at),
                ..FakeLink::default()
            };
            let mut keys = input.clone();
            let device = link.buffer(4 * n);
            link.memory.borrow_mut()[device] = bytemuck::cast_slice(&sorted).to_vec();
            let result = download_words(&link, &mut keys, device, mode);
            match result {
                Ok(()) => panic!("call {fail_at} failed, yet the download returned Ok"),
                Err(Error::PartialResult { cause }) => {
                    assert_eq!(mode, CopyBack::Direct, "all or nothing returned a partial");
                    assert!(matches!(*cause, Error::Unsupported(_)));
                    assert_ne!(keys, input, "partial, yet nothing was written");
                    let first_old = keys.iter().zip(&sorted).position(|(k, s)| k != s);
                    let first_old = first_old.expect("partial, yet everything was written");
                    assert_eq!(keys[first_old..], input[first_old..], "not a prefix");
                    partial += 1;
                }
                Err(Error::Unsupported(_)) => assert_eq!(keys, input, "call {fail_at}"),
                Err(e) => panic!("unexpected error {e:?}"),
            }
        }
    }
    assert!(partial > 0, "no failure came after a written chunk");
}

/// `n` words in a pinned buffer of the fake link's context.
fn pinned_words(n: usize, seed: u64) -> PinnedBuffer<u32> {
    let memory = crate::pinned::fake_memory(n.div_ceil(2), FAKE_OWNER);
    let mut buffer = PinnedBuffer::<u32>::new(Some(memory), n.div_ceil(2) * 2).unwrap();
    buffer[..n].copy_from_slice(&words(n, seed));
    buffer
}

/// Reverses the device buffer's `word`-byte words ("sorts" it).
fn reverse_on_device(link: &FakeLink, buffer: usize, word: usize) {
    let mut memory = link.memory.borrow_mut();
    let reversed: Vec<u8> = memory[buffer]
        .chunks(word)
        .rev()
        .flatten()
        .copied()
        .collect();
    memory[buffer] = reversed;
}

#[test]
fn pinned_columns_skip_the_ring_unless_all_or_nothing() {
    for mode in [CopyBack::Direct, CopyBack::AllOrNothing] {
        for n in [1usize, 2, 3, 1000, SLOT_BYTES / 4 + 1] {
            let link = FakeLink::default();
            let mut ring: RingOf<FakeLink> = Ring::default();
            let mut pinned = pinned_words(n, 5);
            // Values in ordinary memory: the ring carries them beside the direct copies.
            let mut values: Vec<u32> = (0..n as u32).collect();
            let (device_keys, device_values) = (link.buffer(4 * n), link.buffer(4 * n));
            {
                let mut keys = Column::Words(WordsMut::U32(&mut pinned[..n]));
                let mut vals = Column::Words(WordsMut::U32(&mut values));
                checked_upload(
                    &link,
                    &mut ring,
                    &[(&keys, device_keys), (&vals, device_values)],
                )
                .unwrap();
                reverse_on_device(&link, device_keys, 4);
                reverse_on_device(&link, device_values, 4);
                download(
                    &link,
                    &mut ring,
                    &mut [(&mut keys, device_keys), (&mut vals, device_values)],
                    mode,
                    &mut Vec::new(),
                )
                .unwrap();
            }
            let mut want = words(n, 5);
            want.reverse();
            assert_eq!(&pinned[..n], &want[..], "n = {n}, {mode:?}");
            assert!(values.iter().rev().enumerate().all(|(i, &v)| v == i as u32));
            assert_eq!(link.pinned_allocated.get(), SLOTS, "the values' ring");
            // Pinned keys alone need no ring at all on the way up, nor on the way down
            // unless the copy back must be all or nothing.
            let link = FakeLink::default();
            let mut ring: RingOf<FakeLink> = Ring::default();
            let device = link.buffer(4 * n);
            let mut keys = Column::Words(WordsMut::U32(&mut pinned[..n]));
            checked_upload(&link, &mut ring, &[(&keys, device)]).unwrap();
            download(
                &link,
                &mut ring,
                &mut [(&mut keys, device)],
                mode,
                &mut Vec::new(),
            )
            .unwrap();
            let slots = if mode == CopyBack::Direct { 0 } else { SLOTS };
            assert_eq!(link.pinned_allocated.get(), slots, "n = {n}, {mode:?}");
            assert_eq!(&pinned[..n], &want[..]);
        }
    }
}

#[test]
fn a_pinned_column_fails_whole_or_partial() {
    let n = 1000;
    let count = {
        let link = FakeLink::default();
        let device = link.buffer(4 * n);
        download_words(
            &link,
            &mut pinned_words(n, 6)[..n],
            device,
            CopyBack::Direct,
        )
        .unwrap();
        link.calls.get()
    };
    // The mark after the sort, its wait, the copy, the mark after it, its wait.
    assert_eq!(count, 5);
    for fail_at in 0..count {
        let link = FakeLink {
            fail_at: Some(fail_at),
            ..FakeLink::default()
        };
        let mut pinned = pinned_words(n, 6);
        let device = link.buffer(4 * n);
        let result = download_words(&link, &mut pinned[..n], device, CopyBack::Direct);
        match (fail_at, result) {
            // Before the copy was enqueued (or when enqueuing it failed): the caller's memory
            // is as it was.
            (0..=2, Err(Error::Unsupported(_))) => assert_eq!(&pinned[..n], &words(n, 6)[..]),
            // The copy may have written: a partial result, never Ok.
            (3 | 4, Err(Error::PartialResult { cause })) => {
                assert!(matches!(*cause, Error::Unsupported(_)))
            }
            (k, other) => panic!("failure at call {k}: {other:?}"),
        }
    }
}

/// A device buffer of the fake kind, for what the engine keeps.
struct FakeBuffer(usize);

impl DeviceBytes for FakeBuffer {
    fn byte_len(&self) -> usize {
        self.0
    }
}

#[test]
fn running_out_of_memory_after_allocating_frees_the_kept_buffers() {
    let out_of_memory = || Error::OutOfMemory {
        device: "fake".to_string(),
        requested: 8,
        available: 4,
    };
    let kept = || {
        let mut host: HostState<FakeBuffer, Vec<u8>, ()> = HostState::default();
        host.buffers.keys = Some(FakeBuffer(64));
        host
    };
    for (result, freed) in [
        (Ok(()), false),
        (Err(Error::Unsupported("other".to_string())), false),
        (Err(out_of_memory()), true),
        (
            Err(Error::PartialResult {
                cause: Box::new(out_of_memory()),
            }),
            true,
        ),
    ] {
        let mut host = kept();
        let what = format!("{result:?}");
        let passed = host.after_sort(result);
        assert_eq!(passed.is_ok(), what.starts_with("Ok"), "{what}");
        assert_eq!(host.buffers.bytes() == 0, freed, "{what}");
    }
}

#[test]
fn an_error_from_the_progress_ends_the_upload() {
    for chunked in [false, true] {
        pipeline::force_chunks(chunked);
        let link = FakeLink::default();
        let mut ring: RingOf<FakeLink> = Ring::default();
        let n = MIN_PIPELINE_BYTES / 4 + 5;
        let mut keys = words(n, 3);
        let device = link.buffer(4 * n);
        let column = Column::Words(WordsMut::U32(&mut keys));
        let mut calls = 0;
        let result = upload(&link, &mut ring, &[(&column, device)], &mut |_| {
            calls += 1;
            if calls == 2 {
                Err(Error::Unsupported("stop".to_string()))
            } else {
                Ok(())
            }
        });
        assert!(
            matches!(&result, Err(Error::Unsupported(m)) if m == "stop"),
            "chunked: {chunked}: {result:?}"
        );
        assert_eq!(calls, 2);
    }
    pipeline::force_chunks(false);
}

#[test]
fn slots_are_reused_only_after_their_copies() {
    // Copies that run late, as on a stream: a slot written again before its copy ran would
    // send the later bytes. Keys through the pipeline then values chunk by chunk (8-byte keys,
    // 4-byte values), and the other way round, each sort twice on the same ring.
    for chunked_first in [false, true] {
        let link = FakeLink::lazy();
        let mut ring: RingOf<FakeLink> = Ring::default();
        let n = MIN_PIPELINE_BYTES / 8 + 5 * SLOT_BYTES / 8 + 3;
        for round in 0..2u64 {
            let mut wide: Vec<u64> = (0..n as u64).map(|i| i << 24 | round).collect();
            let mut narrow = words(n, round);
            let (device_wide, device_narrow) = (link.buffer(8 * n), link.buffer(4 * n));
            let mut wide_column = Column::Words(WordsMut::U64(&mut wide));
            let mut narrow_column = Column::Words(WordsMut::U32(&mut narrow));
            let columns = if chunked_first {
                [(&narrow_column, device_narrow), (&wide_column, device_wide)]
            } else {
                [(&wide_column, device_wide), (&narrow_column, device_narrow)]
            };
            upload(&link, &mut ring, &columns, &mut |_| Ok(())).unwrap();
            // The sort, after the copies on the stream.
            link.drain();
            reverse_on_device(&link, device_wide, 8);
            reverse_on_device(&link, device_narrow, 4);
            download(
                &link,
                &mut ring,
                &mut [
                    (&mut wide_column, device_wide),
                    (&mut narrow_column, device_narrow),
                ],
                CopyBack::Direct,
                &mut Vec::new(),
            )
            .unwrap();
            let mut want = words(n, round);
            want.reverse();
            assert!(narrow == want, "4-byte column, round {round}");
            assert!(
                wide.iter()
                    .rev()
                    .enumerate()
                    .all(|(i, &w)| w == (i as u64) << 24 | round),
                "8-byte column, round {round}"
            );
        }
    }
}

/// What a parallel host copy costs beyond its bytes on this host: rayon's threads woken from
/// sleep with nothing to do, and [`par_copy`] of 1-16 MiB started with the threads asleep
/// (after 2 ms idle), and started right after another parallel call, beside one thread's
/// copy with ordinary and with streaming stores. Median of 41 after one untimed. Run with `cargo test --release --lib
/// host_copy_fixed_costs -- --ignored --nocapture`.
#[test]
#[ignore = "a timing of the host"]
fn host_copy_fixed_costs() {
    use std::time::{Duration, Instant};
    let idle = || std::thread::sleep(Duration::from_millis(2));
    let median_us = |f: &mut dyn FnMut() -> Duration| {
        let mut t: Vec<f64> = (0..42).map(|_| f().as_secs_f64() * 1e6).collect();
        t.remove(0);
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    let wake = median_us(&mut || {
        idle();
        let start = Instant::now();
        rayon::broadcast(|_| ());
        start.elapsed()
    });
    let again = median_us(&mut || {
        rayon::broadcast(|_| ());
        let start = Instant::now();
        rayon::broadcast(|_| ());
        start.elapsed()
    });
    eprintln!(
        "{} threads: broadcast after 2 ms idle {wake:.1} us, right after another {again:.1} us",
        rayon::current_num_threads()
    );
    eprintln!("MiB   par_copy asleep   par_copy awake   one thread   one thread, streaming   (us)");
    for mib in [1usize, 2, 4, 16] {
        let src: Vec<u8> = (0..mib << 20).map(|i| (i * 7 + 3) as u8).collect();
        let mut dst = vec![1u8; mib << 20];
        let asleep = median_us(&mut || {
            idle();
            let start = Instant::now();
            par_copy(&mut dst, &src);
            start.elapsed()
        });
        let awake = median_us(&mut || {
            rayon::broadcast(|_| ());
            let start = Instant::now();
            par_copy(&mut dst, &src);
            start.elapsed()
        });
        let one = median_us(&mut || {
            idle();
            let start = Instant::now();
            dst.copy_from_slice(&src);
            start.elapsed()
        });
        assert!(dst == src, "{mib} MiB: the copy differs");
        dst.fill(1);
        let streaming = median_us(&mut || {
            idle();
            let start = Instant::now();
            stream_copy::copy_streaming(&mut dst, &src);
            start.elapsed()
        });
        assert!(dst == src, "{mib} MiB: the streaming copy differs");
        eprintln!("{mib:>3} {asleep:>17.1} {awake:>16.1} {one:>12.1} {streaming:>23.1}");
    }
}

/// A copy made by a rayon thread that holds a turn, which may not split it over rayon's
/// threads, is still whole.
#[test]
fn a_copy_made_while_holding_a_turn_is_whole() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("pool");
    let lock = Mutex::new(());
    pool.install(|| {
        let _held = lock_shared_with_rayon(&lock);
        assert!(!may_fork(), "a rayon thread holding a turn may fork");
        let src: Vec<u8> = (0..(4usize << 20)).map(|i| (i * 13 + 1) as u8).collect();
        let mut dst = vec![0u8; src.len()];
        par_copy(&mut dst, &src);
        assert!(dst == src, "the copy made while holding a turn differs");
    });
}
