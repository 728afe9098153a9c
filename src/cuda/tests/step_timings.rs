//! Timings of the sorts made of several steps on CUDA devices, each an ignored unit test that
//! needs the backend's internals (`cargo test --release --features cuda --lib <name> --
//! --ignored --nocapture`): a host slice sorted in ranges in device memory, keys spread over
//! several GPUs' memory, and a host slice spread over several GPUs. Each prints when every
//! step ended ([`super::super::step_done`]) and checks the result.

use std::time::{Duration, Instant};

use super::super::*;
use super::transfer_timings::{random_u32, staged_round_trip, timed_vec_sort};

thread_local! {
    /// The end of each step of a sort in ranges in device memory (`device_ranges.rs`) or
    /// spread over devices (`spread.rs`, `spread_host.rs`).
    pub(in crate::cuda) static STEPS: std::cell::RefCell<Vec<(&'static str, Instant)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The steps of a host slice sorted in ranges in device memory: `2^BITONIC_TIMING_LOG2`
/// (default 30) random `u32` keys, under a device memory limit of `BITONIC_TIMING_LIMIT`
/// bytes (by default none where the keys and their scratch exceed the first GPU's memory,
/// else one and a half times the keys' bytes: the keys fit once but not beside their
/// scratch, which is where ranges in device memory apply), on every CUDA
/// device where `BITONIC_TIMING_ALL=1`; for each of three
/// runs, the time from the call to the end of each step, and the whole call. Fails unless
/// the sort took that path and the keys come back sorted. `cargo test --release --features
/// cuda --lib cuda_range_steps -- --ignored --nocapture`.
#[test]
#[ignore = "needs a CUDA device; a timing, with a check of the result"]
fn cuda_range_steps() {
    use rayon::prelude::*;
    let number = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let n = 1usize << number("BITONIC_TIMING_LOG2").unwrap_or(30);
    let mut builder = crate::Sorter::builder()
        .ignore_env()
        .backend(crate::BackendKind::Cuda);
    let memory = builder
        .clone()
        .build()
        .expect("sorter")
        .device()
        .memory_bytes;
    let fits = (n as u64) * 8 <= memory;
    if let Some(limit) = number("BITONIC_TIMING_LIMIT").or(fits.then_some(n as u64 * 6)) {
        builder = builder.device_memory_limit(limit);
    }
    if number("BITONIC_TIMING_ALL") == Some(1) {
        builder = builder.all_gpus();
    }
    let sorter = builder.build().expect("sorter");
    for run in 0..3 {
        let mut keys: Vec<u32> = (0..n as u64)
            .into_par_iter()
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 29) as u32 ^ (i as u32))
            .collect();
        STEPS.with(|steps| steps.borrow_mut().clear());
        let start = Instant::now();
        sorter
            .sort(&mut keys, crate::Order::Ascending)
            .expect("sort");
        let total = start.elapsed();
        let steps = STEPS.with(|steps| steps.take());
        assert!(!steps.is_empty(), "the sort did not go through the ranges");
        let mut line = format!("run {run}, 2^{} keys:", n.trailing_zeros());
        for (step, at) in steps {
            line += &format!(" {step} {:.3} s,", (at - start).as_secs_f64());
        }
        eprintln!("{line} all {:.3} s", total.as_secs_f64());
        assert!(keys.par_windows(2).all(|w| w[0] <= w[1]), "not sorted");
    }
}

/// `BITONIC_TIMING_LOG2` (default 30), and a backend for every CUDA device.
fn log2_and_every_device() -> (u32, Vec<CudaBackend>) {
    let log2 = std::env::var("BITONIC_TIMING_LOG2")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(30);
    // Opening device 0 first initializes the driver, which counting the devices needs.
    let mut backends = vec![CudaBackend::open(0).expect("open device 0")];
    let found = cust::device::Device::num_devices().expect("devices") as usize;
    backends.extend((1..found).map(|d| CudaBackend::open(d).expect("open")));
    (log2, backends)
}

/// The steps of a device-resident sort spread over every CUDA device (device 0 twice where
/// there is one): `2^BITONIC_TIMING_LOG2` (default 30) random `u32` keys in equal parts, six
/// runs of which the first warms up; for each, the end of every step (the streams are
/// synchronized between steps in this build) and the whole call.
/// `BITONIC_TIMING_SPREAD_POOL=1` takes the receive buffers from the memory pool instead of
/// the sorts' scratch.
#[test]
#[ignore]
fn cuda_spread_steps() {
    use cust::memory::CopyDestination;
    use cust::stream::{Stream, StreamFlags};
    let (log2, backends) = log2_and_every_device();
    let (n, found) = (1usize << log2, backends.len());
    let devices: Vec<usize> = if found > 1 {
        (0..found).collect()
    } else {
        vec![0, 0]
    };
    let input = random_u32(n, 0x5bead);
    let share = n / devices.len();
    let mut owned = Vec::new();
    for (g, &d) in devices.iter().enumerate() {
        CurrentContext::set_current(&backends[d].context).expect("context");
        let end = if g + 1 == devices.len() {
            n
        } else {
            (g + 1) * share
        };
        let keys = DeviceBuffer::from_slice(&input[g * share..end]).expect("upload");
        let stream = Stream::new(StreamFlags::NON_BLOCKING, None).expect("stream");
        owned.push((d, g * share, keys, stream));
    }
    let mut want = input.clone();
    rayon::prelude::ParallelSliceMut::par_sort_unstable(&mut want[..]);
    for run in 0..6 {
        for (d, first, keys, _) in owned.iter_mut() {
            CurrentContext::set_current(&backends[*d].context).expect("context");
            let len = keys.len();
            keys.copy_from(&input[*first..*first + len])
                .expect("refill");
        }
        let mut parts: Vec<SpreadPart<'_, u32>> = owned
            .iter_mut()
            .map(|(d, _, keys, stream)| SpreadPart {
                backend: &backends[*d],
                keys,
                stream: &*stream,
            })
            .collect();
        STEPS.with(|steps| steps.borrow_mut().clear());
        let start = Instant::now();
        sort_device_spread(&mut parts, crate::Order::Ascending).expect("spread sort");
        let total = start.elapsed();
        let steps = STEPS.with(|steps| steps.take());
        let mut line = format!("run {run}, 2^{log2} keys over {} parts:", devices.len());
        for (step, at) in steps {
            line += &format!(" {step} {:.2} ms,", (at - start).as_secs_f64() * 1e3);
        }
        eprintln!("{line} all {:.2} ms", total.as_secs_f64() * 1e3);
    }
    let mut got = Vec::with_capacity(n);
    for (d, _, keys, _) in &owned {
        CurrentContext::set_current(&backends[*d].context).expect("context");
        let mut part = vec![0u32; keys.len()];
        keys.copy_to(&mut part[..]).expect("download");
        got.extend(part);
    }
    assert!(
        got == want,
        "the spread sort's parts differ from the sorted input"
    );
}

/// A host slice spread over every CUDA device (at least two): `2^BITONIC_TIMING_LOG2`
/// (default 30) random `u32` keys from a `Vec`. First each device's share moved alone and all
/// shares at once (the ring's upload, waited for, then its download), and one parallel copy
/// of the whole slice in host memory; then the slice sorted on device 0 alone and spread over
/// every device, with the end of each step of the spread sort. Four rounds, the first
/// untimed; every sort checked. `BITONIC_TIMING_COPIERS=<n>` sets the host threads of each
/// transfer.
#[test]
#[ignore = "needs two CUDA devices; a timing, with checks of every sort"]
fn cuda_spread_host_steps() {
    use crate::host_transfer::{Stores, par_copy};
    use crate::schedule::device_ranges::parts;
    use std::sync::Barrier;

    let (log2, backends) = log2_and_every_device();
    let (n, found) = (1usize << log2, backends.len());
    assert!(found >= 2, "needs two CUDA devices, found {found}");
    let input = random_u32(n, 0x5bead);
    let mut want = input.clone();
    rayon::prelude::ParallelSliceMut::par_sort_unstable(&mut want[..]);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let lens: Vec<usize> = parts(n, found).iter().map(|p| p.len()).collect();
    let mut shares: Vec<Vec<u32>> = Vec::new();
    let mut at = 0;
    for &len in &lens {
        shares.push(input[at..at + len].to_vec());
        at += len;
    }
    let mut states: Vec<HostState> = (0..found).map(|_| HostState::default()).collect();
    let buffers: Vec<DeviceBuffer<u8>> = backends
        .iter()
        .zip(&lens)
        .map(|(b, &len)| {
            CurrentContext::set_current(&b.context).expect("context");
            DeviceBuffer::<u8>::zeroed(4 * len).expect("device buffer")
        })
        .collect();
    eprintln!("2^{log2} u32 keys over {found} devices; ms");
    for round in 0..4 {
        // Each share alone, then all at once.
        let mut line = format!("round {round}: alone (up/down)");
        for (d, backend) in backends.iter().enumerate() {
            CurrentContext::set_current(&backend.context).expect("context");
            let ptr = buffers[d].as_device_ptr().as_raw();
            let (up, down) = staged_round_trip(backend, &mut states[d], &mut shares[d], ptr);
            line += &format!(" {:.1}/{:.1}", ms(up), ms(down));
        }
        let barrier = Barrier::new(found);
        let times: Vec<(Duration, Duration)> = std::thread::scope(|scope| {
            let handles: Vec<_> = backends
                .iter()
                .zip(states.iter_mut())
                .zip(shares.iter_mut())
                .zip(&buffers)
                .map(|(((backend, state), share), buffer)| {
                    let barrier = &barrier;
                    scope.spawn(move || {
                        CurrentContext::set_current(&backend.context).expect("context");
                        let ptr = buffer.as_device_ptr().as_raw();
                        barrier.wait();
                        staged_round_trip(backend, state, share, ptr)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("thread"))
                .collect()
        });
        line += "; together (up/down)";
        for (up, down) in &times {
            line += &format!(" {:.1}/{:.1}", ms(*up), ms(*down));
        }
        let mut at = 0;
        for share in &shares {
            assert!(
                share[..] == input[at..at + share.len()],
                "a round trip changed keys"
            );
            at += share.len();
        }
        // The host's own copy of the slice.
        let mut copy = vec![0u32; n];
        par_copy(
            bytemuck::cast_slice_mut(&mut copy),
            bytemuck::cast_slice(&input),
            Stores::Streaming,
        );
        let start = Instant::now();
        par_copy(
            bytemuck::cast_slice_mut(&mut copy),
            bytemuck::cast_slice(&input),
            Stores::Streaming,
        );
        line += &format!("; host copy {:.1}", ms(start.elapsed()));
        assert!(copy == input, "the host copy differs");
        drop(copy);
        // One device's sort of the whole slice.
        let mut keys = input.clone();
        CurrentContext::set_current(&backends[0].context).expect("context");
        let one = timed_vec_sort(&backends[0], &mut keys);
        assert!(keys == want, "one device's sort is wrong");
        line += &format!("; one device {:.1}", ms(one));
        eprintln!("{line}");
        // Spread over every device, step by step.
        let mut keys = input.clone();
        let refs: Vec<&CudaBackend> = backends.iter().collect();
        STEPS.with(|steps| steps.borrow_mut().clear());
        let start = Instant::now();
        crate::cuda::spread_host::sort_host_spread(
            &refs,
            WordsMut::U32(&mut keys),
            KeyEncoding::of::<u32>(crate::Order::Ascending),
        )
        .expect("spread sort");
        let total = start.elapsed();
        let steps = STEPS.with(|steps| steps.take());
        let mut line = format!("round {round}: spread");
        for (step, at) in steps {
            line += &format!(" {step} {:.1},", ms(at - start));
        }
        eprintln!("{line} all {:.1}", ms(total));
        assert!(keys == want, "the spread sort is wrong");
    }
}
