//! Failures: a failed call at every point of a copy back, an error from the upload's
//! progress, and running out of memory after allocating.

use super::fake::*;
use crate::host_transfer::pipeline::MIN_PIPELINE_BYTES;
use crate::host_transfer::*;

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
            let link = FakeLink::failing_at(fail_at);
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
