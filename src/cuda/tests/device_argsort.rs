//! The device-resident argsort (ignored without a device): one row and rows, every route
//! (the on-chip tiles, sorted words, ranked wide keys and the radix sort of pairs), against a
//! stable sort of the positions on the host, with the keys checked untouched; and the
//! top-k of a whole row, whose values are the sorted keys.

use cust::memory::{DeviceBuffer, DeviceCopy};
use cust::stream::{Stream, StreamFlags};

use super::*;
use crate::Order;
use crate::keys::WordKey;

/// Device 0's backend, its context current.
fn open() -> CudaBackend {
    let gpu = CudaBackend::open(0).expect("open device 0");
    CurrentContext::set_current(&gpu.context).expect("context");
    gpu
}

/// The stable argsort of each row: positions by `cmp`, ties in position order.
fn model<K: Copy>(
    keys: &[K],
    row_len: usize,
    cmp: impl Fn(&K, &K) -> std::cmp::Ordering,
) -> Vec<u32> {
    let mut out = Vec::with_capacity(keys.len());
    for row in keys.chunks(row_len) {
        let mut p: Vec<u32> = (0..row.len() as u32).collect();
        p.sort_by(|&a, &b| cmp(&row[a as usize], &row[b as usize]));
        out.extend(p);
    }
    out
}

/// Argsorts `keys` on the device in both orders and checks them against [`model`], and
/// that the keys are unchanged.
fn check<K: WordKey + DeviceCopy + bytemuck::Pod + std::fmt::Debug>(
    gpu: &CudaBackend,
    stream: &Stream,
    keys: &[K],
    row_len: usize,
    cmp: impl Fn(&K, &K) -> std::cmp::Ordering + Copy,
    what: &str,
) {
    let device_keys = DeviceBuffer::from_slice(keys).expect("keys");
    let mut indices = DeviceBuffer::<u32>::zeroed(keys.len()).expect("indices");
    CurrentContext::synchronize().expect("the uploads");
    for order in [Order::Ascending, Order::Descending] {
        gpu.argsort_device_rows(&device_keys, row_len, order, &mut indices, stream)
            .unwrap_or_else(|e| panic!("{what} {order:?}: {e}"));
        stream.synchronize().expect("the argsort");
        let mut got = vec![0u32; keys.len()];
        indices.copy_to(&mut got[..]).expect("indices down");
        let want = if order == Order::Ascending {
            model(keys, row_len, cmp)
        } else {
            model(keys, row_len, |a, b| cmp(b, a))
        };
        assert!(
            got == want,
            "{what} {order:?} n={} row_len={row_len}",
            keys.len()
        );
    }
    let mut back = keys.to_vec();
    device_keys.copy_to(&mut back[..]).expect("keys down");
    // Bit for bit: NaN keys are not equal to themselves.
    let bytes = |k: &[K]| bytemuck::cast_slice::<K, u8>(k).to_vec();
    assert!(bytes(&back) == bytes(keys), "{what}: the keys changed");
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn device_argsort_matches_a_stable_sort() {
    let gpu = open();
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).expect("a stream");
    let mut next = lcg(71);
    // One row: the tiles, sorted words, and from pairs_take_radix's length the radix sort
    // of pairs (2^20 keys and up), with few distinct keys so that ties are everywhere.
    for n in [1usize, 2, 3, 1000, 5000, (1 << 20) + 3, 1 << 22] {
        let few: Vec<u32> = (0..n).map(|_| (next() % 7) as u32).collect();
        check(&gpu, &stream, &few, n, u32::cmp, "u32 few");
        let ints: Vec<i64> = (0..n)
            .map(|i| match i % 5 {
                0 => i64::MIN,
                1 => i64::MAX,
                _ => (next() % 9) as i64 - 4,
            })
            .collect();
        check(&gpu, &stream, &ints, n, i64::cmp, "i64");
        let specials = [
            f32::NAN,
            -f32::NAN,
            -0.0,
            0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        let floats: Vec<f32> = (0..n)
            .map(|i| {
                if i % 3 == 0 {
                    specials[i % specials.len()]
                } else {
                    (next() % 100) as f32 - 50.0
                }
            })
            .collect();
        check(&gpu, &stream, &floats, n, f32::total_cmp, "f32");
        let doubles: Vec<f64> = floats.iter().map(|&f| f64::from(f)).collect();
        check(&gpu, &stream, &doubles, n, f64::total_cmp, "f64");
    }
    // Rows: short and long, past the tile.
    for (rows, row_len) in [(64usize, 1000usize), (3, 32000), (1000, 17)] {
        let keys: Vec<f32> = (0..rows * row_len)
            .map(|_| (next() % 300) as f32 - 150.0)
            .collect();
        check(&gpu, &stream, &keys, row_len, f32::total_cmp, "f32 rows");
        let wide: Vec<u64> = (0..rows * row_len).map(|_| next() % 300).collect();
        check(&gpu, &stream, &wide, row_len, u64::cmp, "u64 rows");
    }
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn device_argsort_refuses_bad_shapes_and_a_whole_row_top_k_sorts() {
    let gpu = open();
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).expect("a stream");
    let keys = DeviceBuffer::from_slice(&[3u32, 1, 2, 5, 4, 0]).expect("keys");
    let mut short = DeviceBuffer::<u32>::zeroed(5).expect("indices");
    let refused = gpu.argsort_device(&keys, Order::Ascending, &mut short, &stream);
    assert!(
        matches!(refused, Err(Error::InvalidConfig(_))),
        "{refused:?}"
    );
    let mut indices = DeviceBuffer::<u32>::zeroed(6).expect("indices");
    let refused = gpu.argsort_device_rows(&keys, 4, Order::Ascending, &mut indices, &stream);
    assert!(refused.is_err(), "6 keys in rows of 4");
    // A top-k whose k is the row's length returns the sorted keys too (the radix route).
    let n = 1 << 22;
    let mut next = lcg(5);
    let host: Vec<u32> = (0..n).map(|_| (next() % 1000) as u32).collect();
    let keys = DeviceBuffer::from_slice(&host).expect("keys");
    let mut values = DeviceBuffer::<u32>::zeroed(n).expect("values");
    let mut indices = DeviceBuffer::<u32>::zeroed(n).expect("indices");
    CurrentContext::synchronize().expect("the uploads");
    gpu.top_k_device_rows(
        &keys,
        n,
        n,
        Order::Descending,
        &mut values,
        &mut indices,
        &stream,
    )
    .expect("the top-k");
    stream.synchronize().expect("the top-k's end");
    let (mut got_values, mut got_indices) = (vec![0u32; n], vec![0u32; n]);
    values.copy_to(&mut got_values[..]).expect("values down");
    indices.copy_to(&mut got_indices[..]).expect("indices down");
    let want = model(&host, n, |a, b| b.cmp(a));
    assert!(got_indices == want, "indices");
    assert!(
        got_values
            .iter()
            .zip(&want)
            .all(|(&v, &p)| v == host[p as usize]),
        "values"
    );
}

#[test]
#[ignore = "a timing, not a check: run by hand on a GPU with --ignored --nocapture"]
fn device_argsort_timings() {
    let gpu = open();
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).expect("a stream");
    // The median of 15 timed runs of `run` after 3, each after an untimed `before`.
    let median = |mut before: Box<dyn FnMut() + '_>, mut run: Box<dyn FnMut() + '_>| {
        let (start, stop) = (
            Event::new(EventFlags::DEFAULT).expect("event"),
            Event::new(EventFlags::DEFAULT).expect("event"),
        );
        let mut ms: Vec<f32> = (0..18)
            .map(|_| {
                before();
                start.record(&stream).expect("record");
                run();
                stop.record(&stream).expect("record");
                stop.synchronize().expect("sync");
                stop.elapsed_time_f32(&start).expect("elapsed")
            })
            .skip(3)
            .collect();
        ms.sort_by(f32::total_cmp);
        ms[ms.len() / 2]
    };
    let mut next = lcg(9);
    for log in [20u32, 24, 26] {
        let n = 1usize << log;
        let host: Vec<u32> = (0..n).map(|_| next() as u32).collect();
        let keys = DeviceBuffer::from_slice(&host).expect("keys");
        let mut indices = DeviceBuffer::<u32>::zeroed(n).expect("indices");
        let mut work = DeviceBuffer::from_slice(&host).expect("work");
        let mut values = DeviceBuffer::from_slice(&host).expect("values");
        CurrentContext::synchronize().expect("the uploads");
        let argsort = median(
            Box::new(|| {}),
            Box::new(|| {
                gpu.argsort_device(&keys, Order::Ascending, &mut indices, &stream)
                    .expect("argsort")
            }),
        );
        // The pairs sort in place: each run starts from the random keys again.
        let work = std::cell::RefCell::new(&mut work);
        let pairs = median(
            Box::new(|| work.borrow_mut().copy_from(&host[..]).expect("reset")),
            Box::new(|| {
                gpu.sort_device_by_key(*work.borrow_mut(), &mut values, Order::Ascending, &stream)
                    .expect("pairs")
            }),
        );
        println!(
            "u32 2^{log}: argsort_device {argsort:.3} ms, sort_device_by_key (u32 values) \
             {pairs:.3} ms, ratio {:.2}",
            argsort / pairs
        );
    }
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn raw_argsort_and_top_k_on_every_stream_kind() {
    use crate::cuda::{STREAM_LEGACY, STREAM_PER_THREAD};
    let gpu = open();
    let created = Stream::new(StreamFlags::NON_BLOCKING, None).expect("a stream");
    let streams = [
        ("created", created.as_inner()),
        ("null", std::ptr::null_mut()),
        ("legacy", STREAM_LEGACY),
        ("per-thread", STREAM_PER_THREAD),
    ];
    let mut next = lcg(83);
    // One long row (the radix sort of pairs, with its scratch and the pool's buffers) and
    // rows (the sorted words); a top-k of the rows' best 50 (the filter or the tiles).
    for (rows, row_len) in [(1usize, (1 << 20) + 5), (16, 32000)] {
        let n = rows * row_len;
        let host: Vec<f32> = (0..n).map(|_| (next() % 5000) as f32 - 2500.0).collect();
        let keys = DeviceBuffer::from_slice(&host).expect("keys");
        let indices = DeviceBuffer::<u32>::zeroed(n).expect("indices");
        let k = 50;
        let top_values = DeviceBuffer::<f32>::zeroed(rows * k).expect("values");
        let top_indices = DeviceBuffer::<u32>::zeroed(rows * k).expect("indices");
        CurrentContext::synchronize().expect("the uploads");
        let want = model(&host, row_len, |a, b| b.total_cmp(a));
        for (what, stream) in streams {
            // SAFETY: the buffers hold `n` keys, `n` indices and `rows * k` of each top-k
            // output, nothing else uses them, and they outlive the synchronization below.
            unsafe {
                gpu.argsort_device_rows_raw::<f32>(
                    keys.as_device_ptr().as_raw(),
                    n,
                    row_len,
                    Order::Descending,
                    indices.as_device_ptr().as_raw(),
                    stream,
                )
                .unwrap_or_else(|e| panic!("{what}: {e}"));
                gpu.top_k_device_rows_raw::<f32>(
                    keys.as_device_ptr().as_raw(),
                    n,
                    row_len,
                    k,
                    Order::Descending,
                    top_values.as_device_ptr().as_raw(),
                    top_indices.as_device_ptr().as_raw(),
                    stream,
                )
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            }
            CurrentContext::synchronize().expect("the work's end");
            let mut got = vec![0u32; n];
            indices.copy_to(&mut got[..]).expect("indices down");
            assert!(got == want, "{what}: argsort of {rows} x {row_len}");
            let mut got = vec![0u32; rows * k];
            top_indices.copy_to(&mut got[..]).expect("indices down");
            let best: Vec<u32> = want
                .chunks(row_len)
                .flat_map(|row| row[..k].to_vec())
                .collect();
            assert!(got == best, "{what}: top-k of {rows} x {row_len}");
        }
    }
    // Host memory is refused, with nothing enqueued.
    let host = [1.0f32, 2.0];
    // SAFETY: the call refuses the host address before it enqueues anything.
    let refused = unsafe {
        gpu.argsort_device_rows_raw::<f32>(
            host.as_ptr() as cu::CUdeviceptr,
            2,
            2,
            Order::Ascending,
            host.as_ptr() as cu::CUdeviceptr,
            STREAM_PER_THREAD,
        )
    };
    assert!(
        matches!(refused, Err(Error::ForeignBuffer(_))),
        "{refused:?}"
    );
}
