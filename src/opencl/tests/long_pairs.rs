//! Where the radix sort is chosen (keys alone from the crossover, pairs past 8 MiB on every
//! backend alike), and what takes it through the backend: long pairs of every width, from
//! host slices and device buffers, come out in a stable sort's order, as the CPU backend
//! sorts them; pairs of 16-bit keys as the CPU backend sorts them; and a long argsort.

use std::ptr;

use opencl3::command_queue::CommandQueue;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::types::CL_BLOCKING;

use super::radix::radix_backend;
use super::*;

/// Keys alone take the radix sort from `radix_from` keys to `RADIX_MAX_LEN`; pairs of 32-
/// and 64-bit keys where `pairs_take_radix` says (past 8 MiB, up to `RADIX_MAX_LEN`),
/// whatever `radix_from` says, merge path past it; the oblivious mode and rows never.
#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn radix_is_chosen_for_keys_alone_and_long_pairs() {
    use crate::schedule::radix::{RADIX_MAX_LEN, pairs_take_radix};
    let b = radix_backend();
    for bytes in [4usize, 8] {
        let keys = b.variant_of_widths(bytes, None).expect("the program");
        let limits = keys.limits;
        let shape = plan::Shape::new(1 << 20, 1);
        assert!(matches!(
            plan::choose(&limits, shape, bytes as u64, 0, false),
            SortPlan::Radix(_)
        ));
        assert!(!matches!(
            plan::choose(&limits, shape, bytes as u64, 0, true),
            SortPlan::Radix(_)
        ));
        assert!(!matches!(
            plan::choose(&limits, plan::Shape::new(100, 3), bytes as u64, 0, false),
            SortPlan::Radix(_)
        ));
        let default = plan::Limits {
            radix_from: plan::POLICY.radix_from,
            ..limits
        };
        assert!(!matches!(
            plan::choose(&default, plan::Shape::new(1000, 1), bytes as u64, 0, false),
            SortPlan::Radix(_)
        ));
        for value_bytes in [4usize, 8] {
            let pairs = b
                .variant_of_widths(bytes, Some(value_bytes))
                .expect("the program");
            let element = (bytes + value_bytes) as u64;
            // The first length past 8 MiB.
            let first = (1u64 << 23) / element + 1;
            for limits in [
                pairs.limits,
                plan::Limits {
                    radix_from: plan::POLICY.radix_from,
                    ..pairs.limits
                },
            ] {
                let choose = |n: u64, rows: u64, oblivious: bool| {
                    plan::choose(
                        &limits,
                        plan::Shape::new(n, rows),
                        bytes as u64,
                        value_bytes as u64,
                        oblivious,
                    )
                };
                let label = format!("{bytes}-byte keys, {value_bytes}-byte values");
                assert!(!pairs_take_radix(first - 1, element), "{label}");
                assert!(pairs_take_radix(first, element), "{label}");
                assert!(
                    matches!(choose(first - 1, 1, false), SortPlan::Network(_)),
                    "{label}"
                );
                for n in [first, 1 << 24, RADIX_MAX_LEN] {
                    assert!(
                        matches!(choose(n, 1, false), SortPlan::Radix(_)),
                        "{label}, n={n}"
                    );
                    assert!(
                        !matches!(choose(n, 1, true), SortPlan::Radix(_)),
                        "{label}, n={n}"
                    );
                }
                assert!(
                    !matches!(choose(first, 2, false), SortPlan::Radix(_)),
                    "{label}"
                );
                assert!(
                    matches!(choose(RADIX_MAX_LEN + 1, 1, false), SortPlan::MergePath(_)),
                    "{label}"
                );
            }
        }
    }
}

/// Long pairs of 32- and 64-bit keys take the radix sort through the backend (host slices
/// and device buffers): keys and values come out as a stable sort by ordered key puts them
/// (equal keys' values in input order, descending too), the same as the CPU backend's,
/// for every width of key and value, just past 8 MiB, with few keys (ties across the whole
/// row) and with random ones, floats with NaN, zeros of both signs and infinities.
#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn long_pairs_sort_stably() {
    use crate::Order;
    fn check<K: SortKey + std::fmt::Debug, V: bytemuck::Pod + std::fmt::Debug>(
        keys: &[K],
        value: fn(usize) -> V,
    ) {
        let b = radix_backend();
        let cpu = CpuBackend::new();
        let n = keys.len();
        let values: Vec<V> = (0..n).map(value).collect();
        for descending in [false, true] {
            let (mut got_k, mut got_v) = (keys.to_vec(), values.clone());
            let (w, kind) = as_words(&mut got_k);
            let encoding = KeyEncoding { kind, descending };
            let label = format!(
                "{} keys, {} values, n={n}, descending={descending}",
                std::any::type_name::<K>(),
                std::any::type_name::<V>()
            );
            // The stable order: positions by ordered key, ties in input order.
            let ordered: Vec<u64> = match &w {
                WordsMut::U32(w) => w.iter().map(|&x| u64::from(encoding.encode(x))).collect(),
                WordsMut::U64(w) => w.iter().map(|&x| encoding.encode(x)).collect(),
            };
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by_key(|&i| ordered[i]);
            let want_k: Vec<K> = order.iter().map(|&i| keys[i]).collect();
            let want_v: Vec<V> = order.iter().map(|&i| values[i]).collect();
            b.sort_words(w, Some(value_words(&mut got_v)), encoding)
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            assert_same_pairs((&got_k, &got_v), (&want_k, &want_v), &label);
            let (mut cpu_k, mut cpu_v) = (keys.to_vec(), values.clone());
            let (w, _) = as_words(&mut cpu_k);
            cpu.sort_words(w, Some(value_words(&mut cpu_v)), encoding)
                .expect("cpu sort");
            let label = format!("cpu: {label}");
            assert_same_pairs((&cpu_k, &cpu_v), (&want_k, &want_v), &label);
        }
    }
    let mut rng = StdRng::seed_from_u64(48);
    let first = |element: usize| (1usize << 23) / element + 1;
    let few =
        |rng: &mut StdRng, n: usize| -> Vec<u64> { (0..n).map(|_| rng.gen_range(0..40)).collect() };
    let n = first(8);
    let raw = few(&mut rng, n);
    check::<u32, u32>(&raw.iter().map(|&x| x as u32).collect::<Vec<_>>(), |i| {
        i as u32
    });
    let random: Vec<i32> = (0..n + 1000).map(|_| rng.r#gen()).collect();
    check::<i32, u32>(&random, |i| i as u32);
    check::<f32, u32>(&special_floats(&raw), |i| i as u32);
    let n = first(12);
    let raw = few(&mut rng, n);
    check::<u32, u64>(&raw.iter().map(|&x| x as u32).collect::<Vec<_>>(), |i| {
        (i as u64) << 32 | 5
    });
    check::<u64, u32>(&raw.iter().map(|&x| x << 40).collect::<Vec<_>>(), |i| {
        i as u32
    });
    let n = first(16);
    let raw = few(&mut rng, n);
    check::<i64, u64>(
        &raw.iter().map(|&x| x as i64 - 20).collect::<Vec<_>>(),
        |i| !(i as u64),
    );
    // Device buffers.
    let b = radix_backend();
    let queue = CommandQueue::create_default(&b.context, 0).expect("a queue");
    let n = first(8);
    let keys: Vec<u32> = (0..n).map(|_| rng.gen_range(0..40)).collect();
    let values: Vec<u32> = (0..n as u32).collect();
    for order in [Order::Ascending, Order::Descending] {
        let encoding = KeyEncoding::of::<u32>(order);
        let mut want: Vec<(u32, u32)> = keys.iter().copied().zip(values.clone()).collect();
        want.sort_by_key(|&(k, _)| encoding.encode(k));
        let (want_k, want_v): (Vec<u32>, Vec<u32>) = want.into_iter().unzip();
        // SAFETY: no host pointer; the size is nonzero.
        let create = || {
            unsafe { Buffer::<u32>::create(&b.context, CL_MEM_READ_WRITE, n, ptr::null_mut()) }
                .expect("a buffer")
        };
        let (mut k, mut v) = (create(), create());
        // SAFETY: blocking copies of slices as large as the buffers.
        unsafe { queue.enqueue_write_buffer(&mut k, CL_BLOCKING, 0, &keys, &[]) }
            .expect("the upload");
        unsafe { queue.enqueue_write_buffer(&mut v, CL_BLOCKING, 0, &values, &[]) }
            .expect("the upload");
        b.sort_device_by_key(&mut k, &mut v, order, &queue)
            .unwrap_or_else(|e| panic!("device buffers, {order:?}: {e}"));
        let (mut got_k, mut got_v) = (vec![0u32; n], vec![0u32; n]);
        // SAFETY: as above.
        unsafe { queue.enqueue_read_buffer(&k, CL_BLOCKING, 0, &mut got_k, &[]) }
            .expect("the download");
        unsafe { queue.enqueue_read_buffer(&v, CL_BLOCKING, 0, &mut got_v, &[]) }
            .expect("the download");
        assert!(got_k == want_k, "device keys, {order:?}");
        assert!(got_v == want_v, "device values, {order:?}");
    }
}

/// Pairs of 16-bit keys (widened to 32-bit words on the way to the device) come out as the
/// CPU backend sorts them, long ones past 8 MiB of widened pairs included, both ways.
#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn long_pairs_of_narrow_keys_match_the_cpu() {
    let b = radix_backend();
    let cpu = CpuBackend::new();
    let mut rng = StdRng::seed_from_u64(49);
    for n in [(1usize << 20) + 1, 1_000_003] {
        let keys: Vec<u16> = (0..n).map(|_| rng.gen_range(0..40)).collect();
        let values: Vec<u32> = (0..n as u32).collect();
        for descending in [false, true] {
            let sort = |on: &dyn Backend| {
                let (mut k, mut v) = (keys.clone(), values.clone());
                let mut narrow: &mut [u16] = &mut k;
                on.sort_rows_narrow(&mut narrow, Some(WordsMut::U32(&mut v)), descending, n)
                    .expect("a sort");
                (k, v)
            };
            let (got_k, got_v) = sort(b);
            let (want_k, want_v) = sort(&cpu);
            let label = format!("u16 keys, n={n}, descending={descending}");
            assert_same_pairs((&got_k, &got_v), (&want_k, &want_v), &label);
        }
    }
}

/// Keys already in device memory take the radix sort too (`sort_device`, with the
/// device-resident scratch).
#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn radix_sort_of_device_resident_keys() {
    use crate::Order;
    let b = radix_backend();
    let queue = CommandQueue::create_default(&b.context, 0).expect("a queue");
    let mut rng = StdRng::seed_from_u64(47);
    for n in [2usize, 4095, 100_003] {
        let keys: Vec<i64> = (0..n)
            .map(|_| rng.r#gen::<i64>() >> rng.gen_range(0..64))
            .collect();
        for order in [Order::Ascending, Order::Descending] {
            // SAFETY: no host pointer; the size is nonzero.
            let mut buffer =
                unsafe { Buffer::<i64>::create(&b.context, CL_MEM_READ_WRITE, n, ptr::null_mut()) }
                    .expect("a buffer");
            // SAFETY: blocking copies of slices as large as the buffer.
            unsafe { queue.enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, &keys, &[]) }
                .expect("the upload");
            b.sort_device(&mut buffer, order, &queue)
                .unwrap_or_else(|e| panic!("n={n} {order:?}: {e}"));
            let mut got = vec![0i64; n];
            // SAFETY: as above.
            unsafe { queue.enqueue_read_buffer(&buffer, CL_BLOCKING, 0, &mut got, &[]) }
                .expect("the download");
            let mut want = keys.clone();
            want.sort_unstable();
            if order == Order::Descending {
                want.reverse();
            }
            assert!(got == want, "n={n} {order:?}");
        }
    }
}

/// One long row of `u32` and `f32` keys, argsorted on an OpenCL device: past 8 MiB of keys
/// and positions the keys sort with their positions as values (the radix sort), and the
/// result is the stable order, ties in input order, both ways.
#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn long_argsort_takes_the_stable_pairs() {
    use crate::{Order, Sorter};
    let sorter = Sorter::builder()
        .backend(crate::BackendKind::OpenCl)
        .device_index(backends()[0].info.index)
        .build()
        .expect("an OpenCL sorter");
    assert_eq!(sorter.device().backend, crate::BackendKind::OpenCl);
    let mut rng = StdRng::seed_from_u64(49);
    let n = (1usize << 20) + 3;
    let keys: Vec<u32> = (0..n)
        .map(|_| rng.gen_range(0..50u32) * 0x0101_0101)
        .collect();
    let floats: Vec<f32> = keys.iter().map(|&k| k as f32 - 1e9).collect();
    for descending in [false, true] {
        let order = Order::from_descending(descending);
        let mut want: Vec<u32> = (0..n as u32).collect();
        want.sort_by(|&a, &b| {
            let c = keys[a as usize].cmp(&keys[b as usize]);
            if descending { c.reverse() } else { c }
        });
        let got = sorter.argsort(&keys, order).expect("the argsort");
        assert!(got == want, "u32 keys, descending={descending}");
        let got = sorter.argsort(&floats, order).expect("the argsort");
        assert!(got == want, "f32 keys, descending={descending}");
    }
}
