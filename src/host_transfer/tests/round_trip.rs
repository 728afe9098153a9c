//! Columns go up and come back whole: words at every length around the chunk sizes, narrow
//! keys widened and narrowed, and slots reused only after their copies ran.

use super::fake::*;
use crate::host_transfer::pipeline::MIN_PIPELINE_BYTES;
use crate::host_transfer::*;
use crate::keys::{NarrowKeys, SortKey};

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
