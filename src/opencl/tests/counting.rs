//! The counting sort of 16-bit keys alone in device buffers, with its threshold lowered to
//! two keys so that short rows reach every edge (keys of a thread split by the end, one and
//! several work-groups, a last work-group short of keys), with a window of every counter
//! and of 2^13 counters (eight sweeps), against `sort_unstable` on ordered bits.

use std::ptr;

use opencl3::command_queue::CommandQueue;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::types::CL_BLOCKING;

use super::*;
use crate::Order;

/// The device of [`backends`] with the counting sort from two keys on, with `window_log`.
fn counting_backend(window_log: u32) -> OpenClBackend {
    let mut b = OpenClBackend::open(backends()[0].info.index).expect("open the device");
    b.counting_from = 2;
    b.max_count_window_log = window_log;
    b
}

/// `input` sorted in a device buffer by `b` in `order`.
fn sort_on_device(b: &OpenClBackend, input: &[u16], order: Order) -> Vec<u16> {
    let queue = CommandQueue::create_default(&b.context, 0).expect("a queue");
    // SAFETY: no host pointer (null, with flags that use none); the size is nonzero.
    let mut buffer = unsafe {
        Buffer::<u16>::create(
            &b.context,
            CL_MEM_READ_WRITE,
            input.len().max(1),
            ptr::null_mut(),
        )
    }
    .expect("a buffer");
    if !input.is_empty() {
        // SAFETY: a blocking write of the slice into a buffer as large.
        unsafe { queue.enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, input, &[]) }
            .expect("the upload");
    }
    b.sort_device(&mut buffer, order, &queue)
        .unwrap_or_else(|e| panic!("n={} {order:?}: {e}", input.len()));
    let mut out = vec![0u16; input.len()];
    if !input.is_empty() {
        // SAFETY: a blocking read of as many keys as the buffer holds.
        unsafe { queue.enqueue_read_buffer(&buffer, CL_BLOCKING, 0, &mut out, &[]) }
            .expect("the download");
    }
    out
}

/// Patterns of `n` 16-bit keys: random bits, few distinct, one repeated, ascending,
/// descending, a saw and an organ pipe.
fn patterns(rng: &mut StdRng, n: usize) -> Vec<(&'static str, Vec<u16>)> {
    vec![
        ("random", (0..n).map(|_| rng.r#gen()).collect()),
        (
            "few",
            (0..n).map(|_| rng.gen_range(0..4u16) * 0x5555).collect(),
        ),
        ("equal", vec![0x8000; n]),
        ("ascending", (0..n).map(|i| i as u16).collect()),
        ("descending", (0..n).map(|i| (n - i) as u16).collect()),
        ("saw", (0..n).map(|i| (i % 37) as u16).collect()),
        ("organ", (0..n).map(|i| i.min(n - 1 - i) as u16).collect()),
    ]
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn counting_sort_of_sixteen_bit_keys() {
    let mut rng = StdRng::seed_from_u64(16);
    let mut ns: Vec<usize> = (0..=40).collect();
    for k in [10, 13, 16, 17, 19] {
        ns.extend([(1 << k) - 1, 1 << k, (1 << k) + 1]);
    }
    ns.extend([(1 << 17) + 7, 3 * (1 << 16) + 5]);
    for window_log in [16, 13] {
        let b = counting_backend(window_log);
        let variant = b.variant_of_widths(2, None).expect("the 16-bit program");
        for &n in &ns {
            let plan = b.plan(
                &variant,
                plan::Shape::new(n.max(1) as u64, 1),
                variant.key_bytes,
                0,
            );
            match plan {
                // The window is the knob's, or less where local memory holds fewer counters
                // (48 KiB on NVIDIA's OpenCL: 2^13); every device with the kernels holds 2^13.
                SortPlan::Counting(c) => assert!(
                    (13..=window_log).contains(&c.plan.window_log),
                    "n={n}: window 2^{} for a knob of 2^{window_log}",
                    c.plan.window_log
                ),
                other if n < 2 => assert!(matches!(other, SortPlan::Network(_)), "n={n}"),
                other => panic!("n={n}: {other:?}, not the counting sort"),
            }
            // The largest lengths with one pattern each, to keep the test short.
            let mut all = patterns(&mut rng, n);
            if n > 1 << 17 {
                all = vec![all.swap_remove(n % all.len())];
            }
            for (name, input) in all {
                for order in [Order::Ascending, Order::Descending] {
                    let got = sort_on_device(&b, &input, order);
                    let mut want = input.clone();
                    want.sort_unstable();
                    if order == Order::Descending {
                        want.reverse();
                    }
                    if let Some(i) = got.iter().zip(&want).position(|(g, w)| g != w) {
                        panic!(
                            "window 2^{window_log}, n={n}, {name}, {order:?}: index {i} is \
                             {:#06x}, want {:#06x}",
                            got[i], want[i]
                        );
                    }
                }
            }
        }
    }
}

/// Every 16-bit pattern as `i16`, `f16` and `bf16` keys, several times over and shuffled,
/// comes back bit for bit in the key type's order (`total_cmp` for the floats: every NaN
/// and both zeros in their places).
#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn counting_sort_orders_every_pattern() {
    use rand::seq::SliceRandom;
    let b = counting_backend(16);
    let queue = CommandQueue::create_default(&b.context, 0).expect("a queue");
    let mut rng = StdRng::seed_from_u64(17);
    let mut bits: Vec<u16> = (0..3).flat_map(|_| 0..=u16::MAX).collect();
    bits.shuffle(&mut rng);
    fn run<K: crate::WordKey + bytemuck::Pod>(
        b: &OpenClBackend,
        queue: &CommandQueue,
        bits: &[u16],
        order: Order,
        cmp: impl Fn(u16, u16) -> Ordering,
    ) {
        let keys: Vec<K> = bytemuck::cast_slice(bits).to_vec();
        // SAFETY: no host pointer; the size is nonzero.
        let mut buffer = unsafe {
            Buffer::<K>::create(&b.context, CL_MEM_READ_WRITE, keys.len(), ptr::null_mut())
        }
        .expect("a buffer");
        // SAFETY: blocking copies of slices as large as the buffer.
        unsafe { queue.enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, &keys, &[]) }.unwrap();
        b.sort_device(&mut buffer, order, queue).expect("the sort");
        let mut got = keys.clone();
        // SAFETY: as above.
        unsafe { queue.enqueue_read_buffer(&buffer, CL_BLOCKING, 0, &mut got, &[]) }.unwrap();
        let got: &[u16] = bytemuck::cast_slice(&got);
        let mut want = bits.to_vec();
        want.sort_by(|&x, &y| cmp(x, y));
        if order == Order::Descending {
            want.reverse();
        }
        assert!(got == want, "{} {order:?}", std::any::type_name::<K>());
    }
    for order in [Order::Ascending, Order::Descending] {
        run::<u16>(&b, &queue, &bits, order, |x, y| x.cmp(&y));
        run::<i16>(&b, &queue, &bits, order, |x, y| (x as i16).cmp(&(y as i16)));
        #[cfg(feature = "half")]
        run::<half::f16>(&b, &queue, &bits, order, |x, y| {
            half::f16::from_bits(x).total_cmp(&half::f16::from_bits(y))
        });
        #[cfg(feature = "half")]
        run::<half::bf16>(&b, &queue, &bits, order, |x, y| {
            half::bf16::from_bits(x).total_cmp(&half::bf16::from_bits(y))
        });
    }
}
