//! The device-resident sort through the range partition (`partitioned_sort.rs`) against the
//! host's sort, and its time beside the merge-path sort (ignored: they need a CUDA device).

use super::super::device_slices::DeviceWords;
use super::*;
use crate::Order;
use crate::keys::Word;
use cust::memory::DeviceCopy;

/// Key patterns, as raw words of the key's width.
fn patterns(n: usize, word_bytes: usize, seed: u64) -> Vec<(&'static str, Vec<u64>)> {
    let mut next = lcg(seed);
    let mask = if word_bytes == 4 {
        u64::from(u32::MAX)
    } else {
        u64::MAX
    };
    let random: Vec<u64> = (0..n).map(|_| next() & mask).collect();
    let few: Vec<u64> = random
        .iter()
        .map(|&x| [3, 1 << 20, mask][(x % 3) as usize])
        .collect();
    let sorted: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(7) & mask).collect();
    let reversed: Vec<u64> = (0..n as u64).rev().collect();
    let saw: Vec<u64> = (0..n as u64).map(|i| i % 1000).collect();
    let organ: Vec<u64> = (0..n as u64).map(|i| i.min(n as u64 - i)).collect();
    // Float edge values of the width: NaNs of both signs, +-0.0, +-inf, one, random.
    let edges: Vec<u64> = random
        .iter()
        .map(|&x| {
            let choices: [u64; 8] = if word_bytes == 4 {
                [
                    0x7fc0_0000,
                    0xffc0_0001,
                    0,
                    0x8000_0000,
                    0x7f80_0000,
                    0xff80_0000,
                    0x3f80_0000,
                    x,
                ]
            } else {
                [
                    0x7ff8_0000_0000_0000,
                    0xfff8_0000_0000_0001,
                    0,
                    1 << 63,
                    0x7ff0_0000_0000_0000,
                    0xfff0_0000_0000_0000,
                    0x3ff0_0000_0000_0000,
                    x,
                ]
            };
            choices[(x >> 7) as usize % 8]
        })
        .collect();
    vec![
        ("random", random),
        ("equal", vec![42; n]),
        ("few", few),
        ("sorted", sorted),
        ("reversed", reversed),
        ("saw", saw),
        ("organ", organ),
        ("edges", edges),
    ]
}

/// Sorts `raw` (words of `T`) through `splitters + 1` ranges; `None` where it declined,
/// after checking that the keys were left as they were.
fn partitioned<T: Word + DeviceCopy + Copy + PartialEq + std::fmt::Debug>(
    gpu: &CudaBackend,
    raw: &[T],
    encoding: KeyEncoding,
    splitters: u32,
) -> Option<Vec<T>> {
    let buffer = DeviceBuffer::from_slice(raw).expect("upload");
    let words = DeviceWords {
        ptr: buffer.as_device_ptr().as_raw(),
        len: raw.len(),
        word_bytes: std::mem::size_of::<T>(),
    };
    let sorted = gpu
        .sort_device_partitioned(words, encoding, splitters, &gpu.stream)
        .expect("partitioned sort");
    gpu.stream.synchronize().expect("sync");
    let mut out = raw.to_vec();
    buffer.copy_to(&mut out[..]).expect("download");
    if sorted {
        Some(out)
    } else {
        assert_eq!(out, raw, "a declined sort wrote the keys");
        None
    }
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn partitioned_sort_matches_a_sort() {
    let gpu = CudaBackend::open(0).expect("open device 0");
    CurrentContext::set_current(&gpu.context).expect("context");
    let mut declined = 0;
    for (word_bytes, kind) in [
        (4usize, KeyKind::Unsigned),
        (4, KeyKind::Float),
        (8, KeyKind::Signed),
        (8, KeyKind::Float),
    ] {
        // One length past a million for the 32-bit keys: the host's sorts bound the time.
        let longest = if word_bytes == 4 { 3_000_017 } else { 65_537 };
        for n in [2usize, 3, 1000, 65_537, (1 << 20) + 1, longest] {
            for (name, raw) in patterns(n, word_bytes, n as u64 + word_bytes as u64) {
                for descending in [false, true] {
                    let encoding = KeyEncoding { kind, descending };
                    let raw32: Vec<u32> = raw.iter().map(|&x| x as u32).collect();
                    let (mut want, mut want32) = (raw.clone(), raw32.clone());
                    if word_bytes == 4 {
                        want32.sort_by_key(|&w| encoding.encode(w));
                    } else {
                        want.sort_by_key(|&w| encoding.encode(w));
                    }
                    for splitters in [1u32, 7, 63, 511] {
                        let what = format!(
                            "{kind:?}{} n {n} {name} m {splitters} {encoding:?}",
                            8 * word_bytes
                        );
                        let equal = if word_bytes == 4 {
                            partitioned(&gpu, &raw32, encoding, splitters).map(|got| got == want32)
                        } else {
                            partitioned(&gpu, &raw, encoding, splitters).map(|got| got == want)
                        };
                        match equal {
                            Some(equal) => assert!(equal, "{what}"),
                            None => {
                                // Only where the ranges' shares are too small to sample well.
                                assert!(
                                    (n as u64) < 64 * (u64::from(splitters) + 1),
                                    "declined: {what}"
                                );
                                declined += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!("{declined} short shapes declined");
}

/// Device times of the partitioned sort of 2^24, 2^26 and 2^28 random `u32` keys for 127,
/// 255 and 511 splitters, beside the merge-path sort of the same keys (each after a device
/// copy of the keys, whose time is taken off; median of 5 after one warm-up). `cargo test
/// --release --features cuda --lib cuda_partitioned_profile -- --ignored --nocapture`.
#[test]
#[ignore = "needs a CUDA device; a timing, with a check of each result"]
fn cuda_partitioned_profile() {
    let gpu = CudaBackend::open(0).expect("open device 0");
    CurrentContext::set_current(&gpu.context).expect("context");
    let start = Event::new(EventFlags::DEFAULT).expect("event");
    let stop = Event::new(EventFlags::DEFAULT).expect("event");
    let encoding = KeyEncoding::of::<u32>(Order::Ascending);
    for log_n in [24u32, 26, 28] {
        let n = 1usize << log_n;
        let mut next = lcg(u64::from(log_n));
        let keys: Vec<u32> = (0..n).map(|_| next() as u32).collect();
        let mut want = keys.clone();
        rayon::slice::ParallelSliceMut::par_sort_unstable(&mut want[..]);
        let data = DeviceBuffer::from_slice(&keys).expect("upload");
        let work = DeviceBuffer::<u32>::zeroed(n).expect("work");
        let words = DeviceWords {
            ptr: work.as_device_ptr().as_raw(),
            len: n,
            word_bytes: 4,
        };
        let copy = || {
            // SAFETY: both buffers hold `n` keys.
            unsafe {
                cu::cuMemcpyDtoDAsync_v2(
                    work.as_device_ptr().as_raw(),
                    data.as_device_ptr().as_raw(),
                    n * 4,
                    gpu.stream.as_inner(),
                );
            }
        };
        let timed = |sort: &dyn Fn()| -> f64 {
            let mut times: Vec<f64> = (0..6)
                .map(|_| {
                    start.record(&gpu.stream).expect("record");
                    copy();
                    sort();
                    stop.record(&gpu.stream).expect("record");
                    stop.synchronize().expect("sync");
                    f64::from(stop.elapsed_time_f32(&start).expect("elapsed"))
                })
                .skip(1)
                .collect();
            times.sort_by(f64::total_cmp);
            let mut out = vec![0u32; n];
            work.copy_to(&mut out[..]).expect("download");
            assert!(out == want, "2^{log_n}: not sorted");
            times[times.len() / 2]
        };
        let merge_ms = timed(&|| {
            gpu.enqueue_sort_words(words, None, encoding, n, &gpu.stream)
                .expect("sort")
        });
        let only_copy = {
            let mut times: Vec<f64> = (0..6)
                .map(|_| {
                    start.record(&gpu.stream).expect("record");
                    copy();
                    stop.record(&gpu.stream).expect("record");
                    stop.synchronize().expect("sync");
                    f64::from(stop.elapsed_time_f32(&start).expect("elapsed"))
                })
                .skip(1)
                .collect();
            times.sort_by(f64::total_cmp);
            times[times.len() / 2]
        };
        eprintln!(
            "2^{log_n} u32: merge path {:.3} ms (device copy {only_copy:.3} ms taken off)",
            merge_ms - only_copy
        );
        for splitters in [127u32, 255, 511] {
            let ms = timed(&|| {
                assert!(
                    gpu.sort_device_partitioned(words, encoding, splitters, &gpu.stream)
                        .expect("partitioned sort"),
                    "declined"
                );
            });
            eprintln!(
                "  partitioned, {} rows: {:.3} ms",
                splitters + 1,
                ms - only_copy
            );
        }
    }
}
