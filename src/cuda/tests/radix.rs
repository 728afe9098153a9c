//! The radix sort on the device (ignored without one): every key type and order against
//! the standard library's sort, lengths across tiles and the crossover, skipped digits and
//! an odd number of moves; pairs of both value widths against a stable sort; and the
//! look-back under contention (thousands of tiles, some of them delayed). The plan's layout
//! and its scalar model are `crate::schedule::radix`'s tests.

use cust::memory::{DeviceBuffer, DeviceCopy};
use cust::stream::{Stream, StreamFlags};

use super::*;
use crate::cuda::plan::{RadixLaunches, radix_keys_per_thread};
use crate::cuda::radix::RadixBuffers;
use crate::keys::WordKey;
use crate::schedule::radix::RadixPlan;

/// Lengths around every tile boundary of `tile`-key tiles and the short ones.
fn lengths(tile: usize) -> Vec<usize> {
    let mut lengths: Vec<usize> = (2..=40).collect();
    for m in [1, 2, 3, 17] {
        lengths.extend([m * tile - 1, m * tile, m * tile + 1]);
    }
    for k in [16, 20] {
        lengths.extend([(1 << k) - 1, 1 << k, (1 << k) + 1]);
    }
    lengths
}

/// Keys of pattern `p` from raw 64-bit draws: random, few distinct, all equal, reversed,
/// below 2^16 (skipped high digits) and one byte varying (an odd number of moves).
fn raw_keys(n: usize, p: u32, next: &mut impl FnMut() -> u64) -> Vec<u64> {
    (0..n as u64)
        .map(|i| match p {
            0 => next(),
            1 => (next() % 3) * 0x0101_0101_0101_0101,
            2 => 0x8000_0000_8000_0000,
            3 => u64::MAX - i * 0x1_0001,
            4 => next() & 0xffff,
            _ => (next() & 0xff) << 8,
        })
        .collect()
}

/// Sorts `keys` on the device in both orders and checks them against `sort_by(cmp)`; the
/// plan must be the radix sort.
fn check_keys<K: WordKey + DeviceCopy + std::fmt::Debug>(
    gpu: &CudaBackend,
    stream: &Stream,
    keys: &[K],
    cmp: impl Fn(&K, &K) -> std::cmp::Ordering,
    what: &str,
) {
    let n = keys.len();
    let widths = Widths::keys(std::mem::size_of::<K>() as u64);
    let plan = gpu.plan(n as u64, 1, widths, 0);
    assert!(matches!(plan, SortPlan::Radix(_)), "{what} n={n}: {plan:?}");
    for descending in [false, true] {
        let buffer = DeviceBuffer::from_slice(keys).expect("a buffer");
        let mut slice = buffer.index(..);
        gpu.sort_device(
            &mut slice,
            crate::Order::from_descending(descending),
            stream,
        )
        .expect("the sort");
        stream.synchronize().expect("the sort's end");
        let mut got = keys.to_vec();
        buffer.copy_to(&mut got[..]).expect("the download");
        let mut want = keys.to_vec();
        want.sort_by(&cmp);
        if descending {
            want.reverse();
        }
        let same = got
            .iter()
            .zip(&want)
            .all(|(a, b)| bytemuck::bytes_of(a) == bytemuck::bytes_of(b));
        assert!(same, "{what} n={n} descending={descending}");
    }
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn radix_sort_matches_a_sort() {
    let mut gpu = CudaBackend::open(0).expect("open device 0");
    gpu.limits.radix_from = Some(2);
    CurrentContext::set_current(&gpu.context).expect("context");
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).expect("a stream");
    let mut next = lcg(56);
    let tile = |key: u64| match gpu.plan(1 << 20, 1, Widths::keys(key), 0) {
        SortPlan::Radix(r) => r.plan.tile() as usize,
        other => panic!("{other:?}"),
    };
    for n in lengths(tile(4)) {
        for p in 0..6 {
            let raw = raw_keys(n, p, &mut next);
            let u: Vec<u32> = raw.iter().map(|&r| (r >> 32) as u32 ^ r as u32).collect();
            check_keys(&gpu, &stream, &u, u32::cmp, "u32");
            let i: Vec<i32> = u.iter().map(|&x| x as i32).collect();
            check_keys(&gpu, &stream, &i, i32::cmp, "i32");
            let mut f: Vec<f32> = u.iter().map(|&x| f32::from_bits(x)).collect();
            for (j, special) in [f32::NAN, -f32::NAN, -0.0, 0.0, f32::INFINITY, f32::MIN]
                .into_iter()
                .enumerate()
            {
                if j < n && p == 0 {
                    f[(j * 7919) % n] = special;
                }
            }
            check_keys(&gpu, &stream, &f, f32::total_cmp, "f32");
        }
    }
    for n in lengths(tile(8)) {
        for p in 0..6 {
            let raw = raw_keys(n, p, &mut next);
            check_keys(&gpu, &stream, &raw, u64::cmp, "u64");
            let mut i: Vec<i64> = raw.iter().map(|&x| x as i64).collect();
            if n > 2 && p == 0 {
                (i[0], i[n / 2]) = (i64::MIN, i64::MAX);
            }
            check_keys(&gpu, &stream, &i, i64::cmp, "i64");
            let f: Vec<f64> = raw.iter().map(|&x| f64::from_bits(x)).collect();
            check_keys(&gpu, &stream, &f, f64::total_cmp, "f64");
        }
    }
}

/// Runs the radix launches on `keys` of `key_bytes` with `values` (their positions, as
/// `V`), some tiles waiting `delay` ns before they publish, and checks a stable sort's
/// result.
fn check_pairs<V: DeviceCopy + Copy + PartialEq + std::fmt::Debug + TryFrom<usize>>(
    gpu: &CudaBackend,
    stream: &Stream,
    keys: &[u64],
    key_bytes: u64,
    delay: u32,
) {
    let n = keys.len();
    let values: Vec<V> = (0..n)
        .map(|i| V::try_from(i).ok().expect("positions fit"))
        .collect();
    let value_bytes = std::mem::size_of::<V>() as u64;
    let kpt = radix_keys_per_thread(Widths {
        key: key_bytes,
        value: value_bytes,
    })
    .expect("a pass");
    let plan = RadixPlan::new(n as u64, key_bytes, kpt);
    let launches = RadixLaunches {
        plan,
        encoding: 0,
        value_bytes,
        histogram_blocks: 7,
        delay,
    };
    let state = DeviceBuffer::<u8>::zeroed(plan.state_bytes() as usize).expect("state");
    let vals = DeviceBuffer::from_slice(&values).expect("values");
    let scratch_vals = DeviceBuffer::from_slice(&values).expect("values' scratch");
    let order: Vec<usize> = {
        let mut o: Vec<usize> = (0..n).collect();
        o.sort_by_key(|&i| keys[i]);
        o
    };
    let run = |keys_at: u64, scratch_at: u64| {
        let buffers = RadixBuffers {
            keys: keys_at,
            values: vals.as_device_ptr().as_raw(),
            scratch_keys: scratch_at,
            scratch_values: scratch_vals.as_device_ptr().as_raw(),
            state: state.as_device_ptr().as_raw(),
        };
        gpu.launch_radix(&launches, buffers, stream.as_inner())
            .expect("the launches");
        stream.synchronize().expect("the sort's end");
    };
    let mut got_values = values.clone();
    let what = format!("n={n} key_bytes={key_bytes} kpt={kpt} delay={delay}");
    if key_bytes == 4 {
        let k: Vec<u32> = keys.iter().map(|&x| x as u32).collect();
        assert!(keys.iter().all(|&x| x >> 32 == 0), "u32 keys");
        let (kb, sb) = (
            DeviceBuffer::from_slice(&k).unwrap(),
            DeviceBuffer::from_slice(&k).unwrap(),
        );
        run(kb.as_device_ptr().as_raw(), sb.as_device_ptr().as_raw());
        let mut got = k.clone();
        kb.copy_to(&mut got[..]).unwrap();
        let want: Vec<u32> = order.iter().map(|&i| k[i]).collect();
        assert!(got == want, "{what}: keys");
    } else {
        let (kb, sb) = (
            DeviceBuffer::from_slice(keys).unwrap(),
            DeviceBuffer::from_slice(keys).unwrap(),
        );
        run(kb.as_device_ptr().as_raw(), sb.as_device_ptr().as_raw());
        let mut got = keys.to_vec();
        kb.copy_to(&mut got[..]).unwrap();
        let want: Vec<u64> = order.iter().map(|&i| keys[i]).collect();
        assert!(got == want, "{what}: keys");
    }
    vals.copy_to(&mut got_values[..]).unwrap();
    let want: Vec<V> = order.iter().map(|&i| values[i]).collect();
    assert!(
        got_values == want,
        "{what}: values not in a stable sort's order"
    );
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn radix_pairs_are_stable() {
    let gpu = CudaBackend::open(0).expect("open device 0");
    CurrentContext::set_current(&gpu.context).expect("context");
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).expect("a stream");
    let mut next = lcg(57);
    // compute-sanitizer runs it with a cap on the length (racecheck is slow).
    let most: usize = std::env::var("BITONIC_RADIX_MAX_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    for key_bytes in [4u64, 8] {
        for n in [2usize, 33, 4095, 4097, 100_003, (1 << 20) + 1] {
            if n > most {
                continue;
            }
            for p in [0, 1, 4, 5] {
                let mut raw = raw_keys(n, p, &mut next);
                if key_bytes == 4 {
                    raw.iter_mut().for_each(|r| *r &= 0xffff_ffff);
                }
                check_pairs::<u32>(&gpu, &stream, &raw, key_bytes, 0);
                check_pairs::<u64>(&gpu, &stream, &raw, key_bytes, 0);
            }
        }
    }
}

/// Thousands of tiles, one in eight of them waiting before it publishes: its successors
/// must wait for it in their look-back.
#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn radix_look_back_under_contention() {
    let gpu = CudaBackend::open(0).expect("open device 0");
    CurrentContext::set_current(&gpu.context).expect("context");
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).expect("a stream");
    let mut next = lcg(58);
    for n in [(1usize << 20) + 3, 12 << 20] {
        for p in [0, 1, 2] {
            let raw: Vec<u64> = raw_keys(n, p, &mut next)
                .iter()
                .map(|r| r & 0xffff_ffff)
                .collect();
            for delay in [0, 2000] {
                check_pairs::<u32>(&gpu, &stream, &raw, 4, delay);
            }
        }
    }
}

/// The median of `runs` device times of `sort` on `stream`, after two warm-ups, in ms.
fn median_ms(stream: &Stream, runs: usize, mut sort: impl FnMut()) -> f64 {
    let start = Event::new(EventFlags::DEFAULT).expect("event");
    let stop = Event::new(EventFlags::DEFAULT).expect("event");
    let mut times = Vec::with_capacity(runs);
    for i in 0..runs + 2 {
        start.record(stream).expect("record");
        sort();
        stop.record(stream).expect("record");
        stop.synchronize().expect("sync");
        if i >= 2 {
            times.push(f64::from(stop.elapsed_time_f32(&start).expect("elapsed")));
        }
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Device times of the radix sort against merge path, for `u32` and `u64` keys alone and
/// `u32` pairs, 2^14 to 2^28, random keys, and at 2^24 and 2^28 the input patterns: where
/// the crossovers lie. Each result is checked. `cargo test --release --features cuda --lib cuda_radix_timings -- --ignored
/// --nocapture`.
#[test]
#[ignore = "needs a CUDA device; a timing, not a check"]
fn cuda_radix_timings() {
    let mut gpu = CudaBackend::open(0).expect("open device 0");
    gpu.limits.radix_from = Some(u64::MAX);
    CurrentContext::set_current(&gpu.context).expect("context");
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).expect("a stream");
    let mut next = lcg(59);
    let top: u32 = std::env::var("BITONIC_TIMING_LOG2")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(28);
    let bottom: u32 = std::env::var("BITONIC_TIMING_FROM_LOG2")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(14);
    for (key_bytes, value_bytes) in [(4u64, 0u64), (8, 0), (4, 4)] {
        for log_n in (bottom..=top).step_by(2) {
            let n = 1usize << log_n;
            let patterns: &[u32] = if log_n == 24 || log_n == 28 {
                &[0, 1, 2, 3, 4]
            } else {
                &[0]
            };
            for &p in patterns {
                let raw = raw_keys(n, p, &mut next);
                let k32: Vec<u32> = raw.iter().map(|&r| r as u32).collect();
                let keys = if key_bytes == 4 {
                    DeviceBuffer::from_slice(bytemuck::cast_slice::<u32, u8>(&k32))
                } else {
                    DeviceBuffer::from_slice(bytemuck::cast_slice::<u64, u8>(&raw))
                }
                .expect("keys");
                let scratch = DeviceBuffer::<u8>::zeroed(keys.len()).expect("scratch");
                let values = DeviceBuffer::<u32>::zeroed(n.max(1)).expect("values");
                let scratch_values = DeviceBuffer::<u32>::zeroed(n.max(1)).expect("values");
                let mut line =
                    format!("key {key_bytes} value {value_bytes} 2^{log_n} pattern {p}:");
                let widths = Widths {
                    key: key_bytes,
                    value: value_bytes,
                };
                if let Some(kpt) = radix_keys_per_thread(widths) {
                    let plan = RadixPlan::new(n as u64, key_bytes, kpt);
                    let launches = RadixLaunches {
                        plan,
                        encoding: 0,
                        value_bytes,
                        histogram_blocks: RadixLaunches::histogram_blocks_for(
                            &gpu.limits,
                            n as u64,
                        ),
                        delay: 0,
                    };
                    let state =
                        DeviceBuffer::<u8>::zeroed(plan.state_bytes() as usize).expect("state");
                    let buffers = RadixBuffers {
                        keys: keys.as_device_ptr().as_raw(),
                        values: if value_bytes > 0 {
                            values.as_device_ptr().as_raw()
                        } else {
                            0
                        },
                        scratch_keys: scratch.as_device_ptr().as_raw(),
                        scratch_values: if value_bytes > 0 {
                            scratch_values.as_device_ptr().as_raw()
                        } else {
                            0
                        },
                        state: state.as_device_ptr().as_raw(),
                    };
                    let ms = median_ms(&stream, 15, || {
                        gpu.launch_radix(&launches, buffers, stream.as_inner())
                            .expect("radix");
                    });
                    line += &format!(" radix {ms:.4}");
                    let mut got = vec![0u8; keys.len()];
                    keys.copy_to(&mut got[..]).expect("download");
                    let sorted = if key_bytes == 4 {
                        bytemuck::cast_slice::<u8, u32>(&got)
                            .windows(2)
                            .all(|w| w[0] <= w[1])
                    } else {
                        bytemuck::cast_slice::<u8, u64>(&got)
                            .windows(2)
                            .all(|w| w[0] <= w[1])
                    };
                    assert!(sorted, "{line}: not sorted");
                }
                // Merge path on a fresh copy each run is not needed: a sorted input is as
                // fast for it as any (so this times merge path on random keys only once).
                if p == 0 {
                    let fresh = if key_bytes == 4 {
                        DeviceBuffer::from_slice(&k32).map(|b| (Some(b), None))
                    } else {
                        DeviceBuffer::from_slice(&raw).map(|b| (None, Some(b)))
                    }
                    .expect("keys");
                    let vals = DeviceBuffer::<u32>::zeroed(n).expect("values");
                    let ms = median_ms(&stream, 15, || match (&fresh, value_bytes) {
                        (&(Some(ref b), _), 0) => {
                            let mut s = b.index(..);
                            gpu.sort_device(&mut s, crate::Order::Ascending, &stream)
                                .expect("merge");
                        }
                        (&(Some(ref b), _), _) => {
                            let (mut s, mut v) = (b.index(..), vals.index(..));
                            gpu.sort_device_by_key(
                                &mut s,
                                &mut v,
                                crate::Order::Ascending,
                                &stream,
                            )
                            .expect("merge");
                        }
                        (&(_, Some(ref b)), _) => {
                            let mut s = b.index(..);
                            gpu.sort_device(&mut s, crate::Order::Ascending, &stream)
                                .expect("merge");
                        }
                        _ => unreachable!(),
                    });
                    line += &format!(" merge {ms:.4}");
                }
                eprintln!("{line}");
            }
        }
    }
}
