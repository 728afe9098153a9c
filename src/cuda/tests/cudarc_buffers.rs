//! The device-resident calls on cudarc's buffers and streams (ignored without a device): each
//! of cudarc's stream kinds (its default stream, the per-thread default stream, a created
//! non-blocking stream), two threads on the per-thread stream at once, views of part of a
//! buffer, pairs, rows, top-k and argsort against the standard library, and shapes that
//! disagree refused with the buffers untouched.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};

use super::*;
use crate::Order;

/// Device 0's backend and cudarc's context of the same device (its primary context).
fn open() -> (CudaBackend, Arc<CudaContext>) {
    let gpu = CudaBackend::open(0).expect("open device 0");
    let context = CudaContext::new(0).expect("cudarc's context of device 0");
    (gpu, context)
}

/// cudarc's streams of every kind, named.
fn streams(context: &Arc<CudaContext>) -> Vec<(&'static str, Arc<CudaStream>)> {
    vec![
        ("default", context.default_stream()),
        ("per-thread", context.per_thread_stream()),
        ("created", context.new_stream().expect("a stream")),
    ]
}

/// The standard library's sort of `keys`, the oracle of [`check_sort`].
fn sorted(keys: &[f32]) -> Vec<f32> {
    let mut want = keys.to_vec();
    want.sort_by(f32::total_cmp);
    want
}

/// `keys` sorted on `stream` through `sort_device_cudarc` equal `want`, bit for bit.
fn check_sort(gpu: &CudaBackend, keys: &[f32], want: &[f32], stream: &Arc<CudaStream>, what: &str) {
    let mut buffer = stream.clone_htod(keys).expect("the upload");
    gpu.sort_device_cudarc(&mut buffer, Order::Ascending, stream)
        .expect("the sort");
    let got = stream.clone_dtoh(&buffer).expect("the download");
    let same = got
        .iter()
        .zip(want)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    assert!(same && got.len() == want.len(), "{what}");
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn cudarc_sorts_on_every_stream_kind() {
    let (gpu, context) = open();
    let mut next = lcg(71);
    // Across the network, merge path and (from 2^22 keys) the radix sort.
    for n in [0usize, 1, 3, 5000, 1 << 16, (1 << 22) + 7] {
        let keys: Vec<f32> = (0..n).map(|_| f32::from_bits(next() as u32)).collect();
        let want = sorted(&keys);
        for (what, stream) in streams(&context) {
            check_sort(&gpu, &keys, &want, &stream, &format!("{what} n={n}"));
        }
    }
}

/// Two threads on their per-thread default streams at once (candle's stream, one handle for
/// both) share the backend's scratch: each sort must still see only its own keys.
#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn cudarc_sorts_on_two_threads_per_thread_streams() {
    let (gpu, context) = open();
    std::thread::scope(|scope| {
        for seed in [75u64, 76] {
            let (gpu, context) = (&gpu, &context);
            scope.spawn(move || {
                let stream = context.per_thread_stream();
                let mut next = lcg(seed);
                for n in [(1usize << 22) + 7, 3 << 20, (1 << 23) + 1] {
                    let keys: Vec<f32> = (0..n).map(|_| f32::from_bits(next() as u32)).collect();
                    let want = sorted(&keys);
                    check_sort(gpu, &keys, &want, &stream, &format!("seed {seed} n={n}"));
                }
            });
        }
    });
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn cudarc_views_pairs_and_rows_match_a_sort() {
    let (gpu, context) = open();
    let stream = context.per_thread_stream();
    let mut next = lcg(72);
    // A view of the middle of a buffer: only its part is sorted.
    let keys: Vec<i64> = (0..10_000).map(|_| next() as i64).collect();
    let mut buffer = stream.clone_htod(&keys).expect("keys");
    let mut view = buffer.slice_mut(1000..9000);
    gpu.sort_device_cudarc(&mut view, Order::Descending, &stream)
        .expect("the view's sort");
    let got = stream.clone_dtoh(&buffer).expect("keys back");
    let mut want = keys.clone();
    want[1000..9000].sort_by(|a, b| b.cmp(a));
    assert_eq!(got, want, "the view");
    // Pairs: each value beside its key, one of each.
    for n in [2usize, 1000, (1 << 20) + 3] {
        let keys: Vec<u64> = (0..n).map(|_| next() % 1000).collect();
        let values: Vec<u32> = (0..n as u32).collect();
        let mut kb = stream.clone_htod(&keys).expect("keys");
        let mut vb = stream.clone_htod(&values).expect("values");
        gpu.sort_device_by_key_cudarc(&mut kb, &mut vb, Order::Ascending, &stream)
            .expect("the pair sort");
        let (got_k, got_v) = (
            stream.clone_dtoh(&kb).expect("keys back"),
            stream.clone_dtoh(&vb).expect("values back"),
        );
        let mut want = keys.clone();
        want.sort_unstable();
        assert_eq!(got_k, want, "pairs n={n}");
        assert!(
            got_k
                .iter()
                .zip(&got_v)
                .all(|(&k, &v)| keys[v as usize] == k)
        );
        let mut seen = got_v;
        seen.sort_unstable();
        assert_eq!(seen, values, "pairs n={n}: a permutation of the values");
    }
    // Rows, each on its own.
    let (rows, row_len) = (64usize, 1000usize);
    let keys: Vec<u32> = (0..rows * row_len).map(|_| next() as u32).collect();
    let mut kb = stream.clone_htod(&keys).expect("rows");
    gpu.sort_device_rows_cudarc(&mut kb, row_len, Order::Ascending, &stream)
        .expect("the rows' sort");
    let got = stream.clone_dtoh(&kb).expect("rows back");
    for (g, k) in got.chunks(row_len).zip(keys.chunks(row_len)) {
        let mut want = k.to_vec();
        want.sort_unstable();
        assert_eq!(g, &want[..]);
    }
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn cudarc_top_k_and_argsort_match_a_stable_sort() {
    let (gpu, context) = open();
    let mut next = lcg(73);
    for (what, stream) in streams(&context) {
        // Few distinct keys: ties go to the lower position.
        for (rows, row_len, k) in [(4usize, 32000usize, 50usize), (2, 131_072, 1024), (3, 7, 7)] {
            let keys: Vec<f32> = (0..rows * row_len).map(|_| (next() % 97) as f32).collect();
            let kb = stream.clone_htod(&keys).expect("keys");
            let mut values = stream.alloc_zeros::<f32>(rows * k).expect("values");
            let mut indices = stream.alloc_zeros::<u32>(rows * k).expect("indices");
            gpu.top_k_device_rows_cudarc(
                &kb,
                row_len,
                k,
                Order::Descending,
                &mut values,
                &mut indices,
                &stream,
            )
            .expect("the top-k");
            let (got_v, got_i) = (
                stream.clone_dtoh(&values).expect("values back"),
                stream.clone_dtoh(&indices).expect("indices back"),
            );
            let mut argsort = stream
                .alloc_zeros::<u32>(rows * row_len)
                .expect("positions");
            gpu.argsort_device_rows_cudarc(&kb, row_len, Order::Descending, &mut argsort, &stream)
                .expect("the argsort");
            let got_a = stream.clone_dtoh(&argsort).expect("positions back");
            for r in 0..rows {
                let row = &keys[r * row_len..(r + 1) * row_len];
                let mut want: Vec<u32> = (0..row_len as u32).collect();
                want.sort_by(|&a, &b| row[b as usize].total_cmp(&row[a as usize]));
                assert_eq!(&got_a[r * row_len..(r + 1) * row_len], &want[..], "{what}");
                assert_eq!(&got_i[r * k..(r + 1) * k], &want[..k], "{what} top-k");
                let best: Vec<f32> = want[..k].iter().map(|&i| row[i as usize]).collect();
                assert_eq!(&got_v[r * k..(r + 1) * k], &best[..], "{what} top-k values");
            }
        }
        // One row's argsort.
        let keys: Vec<u32> = (0..5000).map(|_| (next() % 10) as u32).collect();
        let kb = stream.clone_htod(&keys).expect("keys");
        let mut indices = stream.alloc_zeros::<u32>(keys.len()).expect("positions");
        gpu.argsort_device_cudarc(&kb, Order::Ascending, &mut indices, &stream)
            .expect("the argsort");
        let mut want: Vec<u32> = (0..keys.len() as u32).collect();
        want.sort_by_key(|&i| keys[i as usize]);
        assert_eq!(stream.clone_dtoh(&indices).expect("back"), want, "{what}");
    }
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn cudarc_shapes_that_disagree_are_refused_untouched() {
    let (gpu, context) = open();
    let stream = context.default_stream();
    let keys = [5u32, 3, 9, 1];
    let mut kb = stream.clone_htod(&keys).expect("keys");
    let mut short = stream.clone_htod(&[7u32, 8, 9]).expect("values");
    let refused = gpu.sort_device_by_key_cudarc(&mut kb, &mut short, Order::Ascending, &stream);
    assert!(
        matches!(refused, Err(Error::LengthMismatch { keys: 4, values: 3 })),
        "{refused:?}"
    );
    let rows = gpu.sort_device_rows_cudarc(&mut kb, 3, Order::Ascending, &stream);
    assert!(matches!(rows, Err(Error::InvalidConfig(_))), "{rows:?}");
    // Room for fewer positions than the top-k writes: refused before any write.
    let mut values = stream.alloc_zeros::<u32>(2).expect("values");
    let mut indices = stream.alloc_zeros::<u32>(1).expect("indices");
    let top = gpu.top_k_device_rows_cudarc(
        &kb,
        4,
        2,
        Order::Ascending,
        &mut values,
        &mut indices,
        &stream,
    );
    assert!(top.is_err(), "{top:?}");
    let mut positions = stream.alloc_zeros::<u32>(3).expect("positions");
    let argsort = gpu.argsort_device_cudarc(&kb, Order::Ascending, &mut positions, &stream);
    assert!(argsort.is_err(), "{argsort:?}");
    assert_eq!(stream.clone_dtoh(&kb).expect("keys back"), keys);
    assert_eq!(stream.clone_dtoh(&short).expect("values back"), [7, 8, 9]);
    assert_eq!(stream.clone_dtoh(&values).expect("values back"), [0, 0]);
    assert_eq!(stream.clone_dtoh(&indices).expect("indices back"), [0]);
    assert_eq!(stream.clone_dtoh(&positions).expect("back"), [0, 0, 0]);
}

/// Nothing inside the calls synchronizes the host or allocates outside the stream: a capture
/// of them into a graph on the per-thread default stream (candle's) succeeds, and the graph's
/// launch gives the results of the calls. The capture is thread-local: it refuses every such
/// call made by this thread, which is the one that runs ours, while the global mode would also
/// refuse the other trials' uploads on other threads and fail them and the capture. Work on
/// the legacy default stream from another thread during the capture would still end it (the
/// per-thread stream synchronizes with that stream), so the GPU checks run this trial alone.
#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn cudarc_calls_are_captured_into_a_graph() {
    use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};

    let (gpu, context) = open();
    let stream = context.per_thread_stream();
    let mut next = lcg(74);
    let (rows, row_len, k) = (8usize, 32000usize, 50usize);
    let keys: Vec<f32> = (0..rows * row_len)
        .map(|_| (next() % 1000) as f32)
        .collect();
    let short: Vec<u32> = (0..4096).map(|_| next() as u32).collect();
    let kb = stream.clone_htod(&keys).expect("keys");
    let mut sb = stream.clone_htod(&short).expect("short keys");
    let mut values = stream.alloc_zeros::<f32>(rows * k).expect("values");
    let mut indices = stream.alloc_zeros::<u32>(rows * k).expect("indices");
    let mut positions = stream
        .alloc_zeros::<u32>(rows * row_len)
        .expect("positions");
    stream.synchronize().expect("the uploads' end");
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .expect("the capture's start");
    let top = gpu.top_k_device_rows_cudarc(
        &kb,
        row_len,
        k,
        Order::Descending,
        &mut values,
        &mut indices,
        &stream,
    );
    let argsort =
        gpu.argsort_device_rows_cudarc(&kb, row_len, Order::Descending, &mut positions, &stream);
    let sort = gpu.sort_device_cudarc(&mut sb, Order::Ascending, &stream);
    let graph = stream.end_capture(CUgraphInstantiate_flags(0));
    top.expect("the top-k, captured");
    argsort.expect("the argsort, captured");
    sort.expect("the sort, captured");
    let graph = graph.expect("the capture's end").expect("a graph");
    graph.launch().expect("the graph's launch");
    stream.synchronize().expect("the graph's end");
    let (got_v, got_i, got_p, got_s) = (
        stream.clone_dtoh(&values).expect("values"),
        stream.clone_dtoh(&indices).expect("indices"),
        stream.clone_dtoh(&positions).expect("positions"),
        stream.clone_dtoh(&sb).expect("short keys"),
    );
    for r in 0..rows {
        let row = &keys[r * row_len..(r + 1) * row_len];
        let mut want: Vec<u32> = (0..row_len as u32).collect();
        want.sort_by(|&a, &b| row[b as usize].total_cmp(&row[a as usize]));
        assert_eq!(&got_p[r * row_len..(r + 1) * row_len], &want[..]);
        assert_eq!(&got_i[r * k..(r + 1) * k], &want[..k]);
        let best: Vec<f32> = want[..k].iter().map(|&i| row[i as usize]).collect();
        assert_eq!(&got_v[r * k..(r + 1) * k], &best[..]);
    }
    let mut want = short;
    want.sort_unstable();
    assert_eq!(got_s, want);
}
