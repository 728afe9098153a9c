//! A device of plain host memory for the engine's tests, and the helpers every topic uses.

use std::cell::{Cell, RefCell};

use crate::host_transfer::*;
use crate::pinned::PinnedBuffer;

/// The context the fake link's pinned buffers belong to.
pub(super) const FAKE_OWNER: u64 = 0xfa4e;

/// A device of plain host memory: copies happen at once (or, `lazy`, only once a mark made
/// after them is waited for, or the link drained, as a stream's may), and the `fail_at`-th
/// call (uploads, downloads and waits counted together) fails.
#[derive(Default)]
pub(super) struct FakeLink {
    pub(super) memory: RefCell<Vec<Vec<u8>>>,
    pub(super) calls: Cell<usize>,
    fail_at: Option<usize>,
    pub(super) pinned_allocated: Cell<usize>,
    pub(super) lazy: bool,
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
    /// A link whose `call`-th call fails.
    pub(super) fn failing_at(call: usize) -> FakeLink {
        FakeLink {
            fail_at: Some(call),
            ..FakeLink::default()
        }
    }

    pub(super) fn lazy() -> FakeLink {
        FakeLink {
            lazy: true,
            ..FakeLink::default()
        }
    }

    /// Runs the enqueued copies up to `mark`, in order.
    pub(super) fn run_to(&self, mark: usize) {
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
    pub(super) fn buffer(&self, bytes: usize) -> usize {
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

pub(super) fn words(n: usize, seed: u64) -> Vec<u32> {
    (0..n as u64)
        .map(|i| (i.wrapping_mul(0x9e37_79b9) ^ seed) as u32)
        .collect()
}

/// [`upload`], checking what it tells of its progress: ever larger counts of elements, the
/// last one all of them, and at each, those elements of every column already on the device.
pub(super) fn checked_upload(
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
pub(super) fn download_words(
    link: &FakeLink,
    words: &mut [u32],
    device: usize,
    mode: CopyBack,
) -> Result<()> {
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

/// `n` words in a pinned buffer of the fake link's context.
pub(super) fn pinned_words(n: usize, seed: u64) -> PinnedBuffer<u32> {
    let memory = crate::pinned::fake_memory(n.div_ceil(2), FAKE_OWNER);
    let mut buffer = PinnedBuffer::<u32>::new(Some(memory), n.div_ceil(2) * 2).unwrap();
    buffer[..n].copy_from_slice(&words(n, seed));
    buffer
}

/// Reverses the device buffer's `word`-byte words ("sorts" it).
pub(super) fn reverse_on_device(link: &FakeLink, buffer: usize, word: usize) {
    let mut memory = link.memory.borrow_mut();
    let reversed: Vec<u8> = memory[buffer]
        .chunks(word)
        .rev()
        .flatten()
        .copied()
        .collect();
    memory[buffer] = reversed;
}
