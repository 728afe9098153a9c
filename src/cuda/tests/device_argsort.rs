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
fn check<K: WordKey + DeviceCopy + PartialEq + std::fmt::Debug>(
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
    assert!(back == keys, "{what}: the keys changed");
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
