//! The device-resident sorts on raw handles (ignored without a device): every stream kind (a
//! created stream, blocking or not, the null handle, the legacy and the per-thread default
//! streams, the latter from two threads at once) against the standard library's sort, pairs
//! and rows, and host memory refused with nothing enqueued.

use cust::memory::DeviceBuffer;
use cust::stream::{Stream, StreamFlags};

use super::*;
use crate::Order;
use crate::cuda::{STREAM_LEGACY, STREAM_PER_THREAD};

/// Device 0's backend, its context current.
fn open() -> CudaBackend {
    let gpu = CudaBackend::open(0).expect("open device 0");
    CurrentContext::set_current(&gpu.context).expect("context");
    gpu
}

/// Sorts `keys` with [`CudaBackend::sort_device_raw`] on `stream` and checks them against
/// `sort_by(f32::total_cmp)`.
fn check_keys(gpu: &CudaBackend, keys: &[f32], stream: cu::CUstream, what: &str) {
    let n = keys.len();
    let buffer = DeviceBuffer::from_slice(keys).expect("a buffer");
    // The upload is on the legacy stream, which a non-blocking stream does not wait for.
    CurrentContext::synchronize().expect("the upload's end");
    // SAFETY: the buffer holds `n` keys, nothing else uses it, and it outlives the
    // synchronization below.
    unsafe {
        gpu.sort_device_raw::<f32>(buffer.as_device_ptr().as_raw(), n, Order::Ascending, stream)
    }
    .expect("the sort");
    CurrentContext::synchronize().expect("the sort's end");
    let mut got = keys.to_vec();
    buffer.copy_to(&mut got[..]).expect("the download");
    let mut want = keys.to_vec();
    want.sort_by(f32::total_cmp);
    let same = got
        .iter()
        .zip(&want)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    assert!(same, "{what} n={n}");
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn raw_sorts_on_every_stream_kind() {
    let gpu = open();
    let blocking = Stream::new(StreamFlags::DEFAULT, None).expect("a stream");
    let non_blocking = Stream::new(StreamFlags::NON_BLOCKING, None).expect("a stream");
    let streams = [
        ("blocking", blocking.as_inner()),
        ("non-blocking", non_blocking.as_inner()),
        ("null", std::ptr::null_mut()),
        ("legacy", STREAM_LEGACY),
        ("per-thread", STREAM_PER_THREAD),
    ];
    let mut next = lcg(61);
    // Across the network, merge path and (from 2^22 keys) the radix sort with its scratch.
    for n in [1usize, 3, 5000, 1 << 16, (1 << 22) + 7] {
        let keys: Vec<f32> = (0..n).map(|_| f32::from_bits(next() as u32)).collect();
        for (what, stream) in streams {
            check_keys(&gpu, &keys, stream, what);
        }
    }
    // No keys: nothing to check, nothing enqueued.
    // SAFETY: zero keys are never read.
    unsafe { gpu.sort_device_raw::<u32>(0, 0, Order::Ascending, STREAM_PER_THREAD) }
        .expect("an empty sort");
}

/// Two threads on their per-thread default streams at once share the backend's scratch: each
/// must wait for the other's use of it, although both name their stream by one handle.
#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn raw_sorts_on_two_threads_per_thread_streams() {
    let gpu = open();
    std::thread::scope(|scope| {
        for seed in [62u64, 63] {
            let gpu = &gpu;
            scope.spawn(move || {
                CurrentContext::set_current(&gpu.context).expect("context");
                let mut next = lcg(seed);
                for n in [(1usize << 22) + 7, 3 << 20, (1 << 23) + 1] {
                    let keys: Vec<f32> = (0..n).map(|_| f32::from_bits(next() as u32)).collect();
                    check_keys(gpu, &keys, STREAM_PER_THREAD, "per-thread, two threads");
                }
            });
        }
    });
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn raw_pairs_and_rows_match_a_sort() {
    let gpu = open();
    let mut next = lcg(64);
    for n in [2usize, 1000, (1 << 20) + 3] {
        let keys: Vec<u64> = (0..n).map(|_| next() % 1000).collect();
        let values: Vec<u32> = (0..n as u32).collect();
        let (kb, vb) = (
            DeviceBuffer::from_slice(&keys).expect("keys"),
            DeviceBuffer::from_slice(&values).expect("values"),
        );
        CurrentContext::synchronize().expect("the uploads' end");
        // SAFETY: both buffers hold `n` elements and outlive the synchronization below.
        unsafe {
            gpu.sort_device_by_key_raw::<u64, u32>(
                kb.as_device_ptr().as_raw(),
                vb.as_device_ptr().as_raw(),
                n,
                Order::Descending,
                STREAM_PER_THREAD,
            )
        }
        .expect("the pair sort");
        CurrentContext::synchronize().expect("the sort's end");
        let (mut got_k, mut got_v) = (keys.clone(), values.clone());
        kb.copy_to(&mut got_k[..]).expect("keys back");
        vb.copy_to(&mut got_v[..]).expect("values back");
        let mut want = keys.clone();
        want.sort_by(|a, b| b.cmp(a));
        assert_eq!(got_k, want, "pairs n={n}: keys");
        // Each value still beside its key.
        assert!(
            got_k
                .iter()
                .zip(&got_v)
                .all(|(&k, &v)| keys[v as usize] == k)
        );
        let mut seen = got_v.clone();
        seen.sort_unstable();
        assert_eq!(seen, values, "pairs n={n}: a permutation of the values");
    }
    let (rows, row_len) = (64usize, 1000usize);
    let keys: Vec<i32> = (0..rows * row_len).map(|_| next() as i32).collect();
    let kb = DeviceBuffer::from_slice(&keys).expect("rows");
    // SAFETY: the buffer holds the rows and outlives the synchronization below.
    unsafe {
        gpu.sort_device_rows_raw::<i32>(
            kb.as_device_ptr().as_raw(),
            keys.len(),
            row_len,
            Order::Ascending,
            STREAM_LEGACY,
        )
    }
    .expect("the rows' sort");
    CurrentContext::synchronize().expect("the sort's end");
    let mut got = keys.clone();
    kb.copy_to(&mut got[..]).expect("rows back");
    for (g, k) in got.chunks(row_len).zip(keys.chunks(row_len)) {
        let mut want = k.to_vec();
        want.sort_unstable();
        assert_eq!(g, &want[..]);
    }
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn raw_host_memory_is_refused() {
    let gpu = open();
    let mut host = vec![3u32, 1, 2];
    let address = host.as_mut_ptr() as cu::CUdeviceptr;
    // SAFETY: the call refuses host memory before it enqueues anything.
    let refused =
        unsafe { gpu.sort_device_raw::<u32>(address, 3, Order::Ascending, STREAM_PER_THREAD) };
    assert!(
        matches!(refused, Err(Error::ForeignBuffer(_))),
        "{refused:?}"
    );
    assert_eq!(host, [3, 1, 2]);
}
