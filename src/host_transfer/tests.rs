//! Tests of the transfer engine against a fake link: every length, narrow keys, failures at
//! every fault point.

use std::cell::{Cell, RefCell};

use super::*;
use crate::keys::{NarrowKeys, SortKey};

/// A device of plain host memory: copies happen at once, and the `fail_at`-th call
/// (uploads, downloads and waits counted together) fails.
#[derive(Default)]
struct FakeLink {
    memory: RefCell<Vec<Vec<u8>>>,
    calls: Cell<usize>,
    fail_at: Option<usize>,
    pinned_allocated: Cell<usize>,
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
    type Mark = ();

    fn alloc_pinned(&self, bytes: usize) -> Result<Vec<u8>> {
        self.pinned_allocated.set(self.pinned_allocated.get() + 1);
        Ok(vec![0x5a; bytes])
    }

    fn pinned_bytes(pinned: &mut Vec<u8>) -> &mut [u8] {
        pinned
    }

    fn upload(&self, src: &Vec<u8>, dst: usize, offset: usize, len: usize) -> Result<()> {
        self.step()?;
        self.memory.borrow_mut()[dst][offset..offset + len].copy_from_slice(&src[..len]);
        Ok(())
    }

    fn download(&self, src: usize, offset: usize, len: usize, dst: &mut Vec<u8>) -> Result<()> {
        self.step()?;
        dst[..len].copy_from_slice(&self.memory.borrow()[src][offset..offset + len]);
        Ok(())
    }

    fn wait(&self, (): ()) -> Result<()> {
        self.step()
    }

    fn drain(&self) {}
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

#[test]
fn words_go_up_and_come_back_at_every_length() {
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
        upload(
            &link,
            &mut ring,
            &[(&key_column, device_keys), (&value_column, device_values)],
        )
        .unwrap();
        // "Sort": reverse both on the device.
        for (buffer, word) in [(device_keys, 4), (device_values, 8)] {
            let mut memory = link.memory.borrow_mut();
            let reversed: Vec<u8> = memory[buffer]
                .chunks(word)
                .rev()
                .flatten()
                .copied()
                .collect();
            memory[buffer] = reversed;
        }
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
        assert_eq!(keys, want_keys, "n = {n}");
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
        upload(&link, &mut ring, &[(&column, device)]).unwrap();
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
    let n = 3 * SLOT_BYTES / 4; // a few chunks
    // Count the calls of a whole successful download first.
    let count = {
        let link = FakeLink::default();
        let mut ring: RingOf<FakeLink> = Ring::default();
        let mut keys = words(n, 2);
        let device = link.buffer(4 * n);
        let mut column = Column::Words(WordsMut::U32(&mut keys));
        download(
            &link,
            &mut ring,
            &mut [(&mut column, device)],
            CopyBack::Direct,
            &mut Vec::new(),
        )
        .unwrap();
        link.calls.get()
    };
    assert!(count > 4, "{count} calls: want several chunks");
    let mut partial = 0;
    for fail_at in 0..count {
        for mode in [CopyBack::Direct, CopyBack::AllOrNothing] {
            let link = FakeLink {
                fail_at: Some(fail_at),
                ..FakeLink::default()
            };
            let mut ring: RingOf<FakeLink> = Ring::default();
            let input = words(n, 3);
            let mut keys = input.clone();
            let device = link.buffer(4 * n);
            link.memory.borrow_mut()[device] = bytemuck::cast_slice(&words(n, 4)).to_vec();
            let mut column = Column::Words(WordsMut::U32(&mut keys));
            let result = download(
                &link,
                &mut ring,
                &mut [(&mut column, device)],
                mode,
                &mut Vec::new(),
            );
            let sorted = words(n, 4);
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
