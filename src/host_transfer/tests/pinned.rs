//! Columns in pinned buffers of the link's own context: one copy each way past the ring,
//! and how such a copy back fails.

use super::fake::*;
use crate::host_transfer::*;

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
        let link = FakeLink::failing_at(fail_at);
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
