//! Timings of the transfer engine on a CUDA device, each an ignored unit test that needs
//! the backend's internals (`cargo test --release --features cuda --lib <name> -- --ignored
//! --nocapture`): the staged path timed apart, where its upload's time goes, the pipeline of
//! pieces against chunk-by-chunk copies, and sorting while uploading against sorting after.
//! Every one also checks what it moved.

use std::time::{Duration, Instant};

use std::cell::Cell;

use super::super::*;
use super::lcg;
use crate::host_transfer::{Column, CopyBack};
use cust::event::{Event, EventFlags};

thread_local! {
    /// Set while a timing runs host-slice sorts that upload everything before sorting.
    pub(in crate::cuda) static SORT_AFTER_UPLOAD: Cell<bool> = const { Cell::new(false) };
}

/// Backend 0, its context current on this thread.
fn open() -> CudaBackend {
    let gpu = CudaBackend::open(0).expect("open device 0");
    CurrentContext::set_current(&gpu.context).expect("context");
    gpu
}

/// The link the backend's host-slice sorts use.
fn link(gpu: &CudaBackend) -> CudaLink<'_> {
    CudaLink {
        stream: &gpu.stream,
        context: gpu.context.as_raw(),
    }
}

/// The middle value.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `n` random keys from `seed`.
pub(super) fn random_u32(n: usize, seed: u64) -> Vec<u32> {
    let mut next = lcg(seed);
    (0..n).map(|_| (next() >> 32) as u32).collect()
}

/// The staged upload of `keys` to `device` (waited for), then, with `keys` zeroed, the staged
/// download back into them: the two times.
pub(super) fn staged_round_trip(
    gpu: &CudaBackend,
    host: &mut HostState,
    keys: &mut [u32],
    device: cu::CUdeviceptr,
) -> (Duration, Duration) {
    let link = link(gpu);
    let start = Instant::now();
    let column = Column::Words(WordsMut::U32(keys));
    host.upload(&link, (&column, device), None, &mut |_| Ok(()))
        .expect("upload");
    gpu.stream.synchronize().expect("upload done");
    let up = start.elapsed();
    keys.fill(0);
    let start = Instant::now();
    let mut column = Column::Words(WordsMut::U32(keys));
    host.download(&link, (&mut column, device), None, CopyBack::Direct)
        .expect("download");
    (up, start.elapsed())
}

/// The backend's sort of `keys` from host memory (ascending): its time.
pub(super) fn timed_vec_sort(gpu: &CudaBackend, keys: &mut [u32]) -> Duration {
    let start = Instant::now();
    let n = keys.len();
    let encoding = KeyEncoding::of::<u32>(crate::Order::Ascending);
    gpu.sort_rows_words(WordsMut::U32(keys), None, encoding, n)
        .expect("sort");
    start.elapsed()
}

/// Wall-clock times of the transfer engine's two directions for random `u32` keys from a
/// `Vec` (2^20 .. 2^28): the staged upload (host copies into the pinned slots overlapped with
/// the bus) up to the stream's completion, and the staged download into the same slice;
/// beside them one copy each way between a pinned buffer of the same size and the device,
/// the bus alone. Median of 5 after one untimed round. Separates the host's share of a `Vec`
/// round trip from the sort's. `cargo test --release --features cuda --lib
/// cuda_transfer_profile -- --ignored --nocapture`.
#[test]
#[ignore = "needs a CUDA device; a timing, with a check of the round trip"]
fn cuda_transfer_profile() {
    use crate::host_transfer::{Stores, par_copy};
    use cust::memory::{AsyncCopyDestination, LockedBuffer};

    let gpu = open();
    let mut host = HostState::default();
    eprintln!(
        "{:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  (ms; GiB/s of the Vec's bytes in brackets)",
        "n", "up", "down", "bus up", "bus down", "host in", "host out"
    );
    for log_n in (20u32..=28).step_by(2) {
        let n = 1usize << log_n;
        let original = random_u32(n, log_n.into());
        let mut keys = original.clone();
        let mut device = DeviceBuffer::<u8>::zeroed(4 * n).expect("device buffer");
        let ptr = device.as_device_ptr().as_raw();
        let mut pinned = LockedBuffer::new(&0u8, 4 * n).expect("pinned buffer");
        let mut times: [Vec<f64>; 6] = Default::default();
        for round in 0..6 {
            let (up, down) = staged_round_trip(&gpu, &mut host, &mut keys, ptr);
            let start = Instant::now();
            // SAFETY: both buffers outlive the copy, which the synchronize below completes
            // before either is touched again.
            unsafe { device.async_copy_from(&pinned[..], &gpu.stream) }.expect("bus up");
            gpu.stream.synchronize().expect("bus up done");
            let bus_up = start.elapsed();
            let start = Instant::now();
            // SAFETY: as for the copy up.
            unsafe { device.async_copy_to(&mut pinned[..], &gpu.stream) }.expect("bus down");
            gpu.stream.synchronize().expect("bus down done");
            let bus_down = start.elapsed();
            // The host copies alone, as the ring makes them, into and out of pinned memory.
            let start = Instant::now();
            par_copy(&mut pinned[..], bytemuck::cast_slice(&keys), Stores::Cached);
            let host_in = start.elapsed();
            let start = Instant::now();
            par_copy(
                bytemuck::cast_slice_mut(&mut keys),
                &pinned[..],
                Stores::Streaming,
            );
            let host_out = start.elapsed();
            assert!(
                keys == original,
                "2^{log_n}: the round trip changed the keys"
            );
            if round > 0 {
                for (t, d) in times
                    .iter_mut()
                    .zip([up, down, bus_up, bus_down, host_in, host_out])
                {
                    t.push(d.as_secs_f64() * 1e3);
                }
            }
        }
        let gib = (4 * n) as f64 / f64::from(1u32 << 30);
        let cells: Vec<String> = times
            .into_iter()
            .map(|t| {
                let ms = median(t);
                format!("{ms:.3} ({:.0})", gib / (ms * 1e-3))
            })
            .collect();
        eprintln!("  2^{log_n} {}", cells.join("  "));
    }
}

/// Where the staged upload's time goes: the ring's loop (16 MiB chunks through three pinned
/// slots) timed step by step, beside the same loop without its bus copies, without its host
/// copies, with the events made once, and with 4 MiB chunks; and the whole `Vec` sort for
/// reference. Median of 5 after one untimed, `u32` keys. Run with `cargo test --release
/// --features cuda --lib cuda_upload_breakdown -- --ignored --nocapture`.
#[test]
#[ignore = "needs a CUDA device; a timing, with a check of the sort"]
fn cuda_upload_breakdown() {
    use crate::host_transfer::{Link, Stores, par_copy};

    let gpu = open();
    let link = link(&gpu);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut slots: Vec<_> = (0..3)
        .map(|_| link.alloc_pinned(16 << 20).expect("slot"))
        .collect();
    let reused: Vec<Event> = (0..3)
        .map(|_| Event::new(EventFlags::DISABLE_TIMING).expect("event"))
        .collect();
    eprintln!(
        "variant: total ms [waits, host copies, enqueues, final sync] (median of 5, u32 keys)"
    );
    for log_n in [20u32, 24, 28] {
        let n = 1usize << log_n;
        let original = random_u32(n, log_n.into());
        let device = DeviceBuffer::<u8>::zeroed(4 * n).expect("device buffer");
        let ptr = device.as_device_ptr().as_raw();
        let bytes: &[u8] = bytemuck::cast_slice(&original);
        // (name, chunk bytes, host copies, bus copies, events made once)
        let variants: [(&str, usize, bool, bool, bool); 5] = [
            ("ring", 16 << 20, true, true, false),
            ("no bus", 16 << 20, true, false, false),
            ("no host copy", 16 << 20, false, true, false),
            ("events kept", 16 << 20, true, true, true),
            ("4 MiB chunks", 4 << 20, true, true, false),
        ];
        for (name, chunk, host, bus, keep_events) in variants {
            // As the engine picks: a quarter of the 4n bytes, at least 2 MiB.
            let chunk = chunk.min(n.max(2 << 20));
            let mut rounds: Vec<[f64; 5]> = Vec::new();
            for round in 0..6 {
                let mut steps = [Duration::ZERO; 4];
                let mut pending: Vec<Option<Event>> = (0..3).map(|_| None).collect();
                let mut kept_pending = [false; 3];
                let start = Instant::now();
                for (i, offset) in (0..4 * n).step_by(chunk).enumerate() {
                    let len = chunk.min(4 * n - offset);
                    let s = i % 3;
                    let t = Instant::now();
                    if let Some(e) = pending[s].take() {
                        link.wait(e).expect("wait");
                    }
                    if kept_pending[s] {
                        reused[s].synchronize().expect("wait");
                    }
                    steps[0] += t.elapsed();
                    let t = Instant::now();
                    let slot = &mut CudaLink::pinned_bytes(&mut slots[s])[..len];
                    if host {
                        par_copy(slot, &bytes[offset..offset + len], Stores::Cached);
                    }
                    steps[1] += t.elapsed();
                    let t = Instant::now();
                    if bus {
                        link.upload(slot, ptr, offset).expect("upload");
                    }
                    if keep_events {
                        reused[s].record(&gpu.stream).expect("record");
                        kept_pending[s] = true;
                    } else {
                        pending[s] = Some(link.mark().expect("mark"));
                    }
                    steps[2] += t.elapsed();
                }
                let t = Instant::now();
                gpu.stream.synchronize().expect("sync");
                steps[3] += t.elapsed();
                let total = start.elapsed();
                if round > 0 {
                    rounds.push([
                        ms(total),
                        ms(steps[0]),
                        ms(steps[1]),
                        ms(steps[2]),
                        ms(steps[3]),
                    ]);
                }
            }
            let cells: Vec<String> = (0..5)
                .map(|k| format!("{:.3}", median(rounds.iter().map(|r| r[k]).collect())))
                .collect();
            eprintln!(
                "  2^{log_n} {name:>13}: {} [{}]",
                cells[0],
                cells[1..].join(", ")
            );
        }
        // The whole sort of a Vec, for reference, and a check that it sorts.
        let mut times = Vec::new();
        let mut want = original.clone();
        want.sort_unstable();
        for round in 0..6 {
            let mut keys = original.clone();
            let sort = timed_vec_sort(&gpu, &mut keys);
            if round > 0 {
                times.push(ms(sort));
            }
            assert!(keys == want, "2^{log_n}: the sort is wrong");
        }
        eprintln!("  2^{log_n} {:>13}: {:.3}", "Vec sort", median(times));
    }
}

/// The staged path's pipeline of pieces against chunk-by-chunk copies, taking turns in one
/// process (so that the host's memory speed, which drifts, is shared): the upload (waited
/// for), the download, and the whole sort of a `Vec` of random `u32` keys, medians of 9
/// after one untimed; every sort checked. Run with `cargo test --release --features cuda
/// --lib cuda_pipeline_against_chunks -- --ignored --nocapture`.
#[test]
#[ignore = "needs a CUDA device; a timing, with checks of every sort"]
fn cuda_pipeline_against_chunks() {
    use crate::host_transfer::pipeline;

    let gpu = open();
    let mut host = HostState::default();
    eprintln!("ms, median of 9: upload, download, Vec sort; chunks | pipeline");
    for log_n in (20u32..=28).step_by(2) {
        let n = 1usize << log_n;
        let original = random_u32(n, log_n.into());
        let mut want = original.clone();
        want.sort_unstable();
        let device = DeviceBuffer::<u8>::zeroed(4 * n).expect("device buffer");
        let ptr = device.as_device_ptr().as_raw();
        // [chunks, pipeline] x [up, down, sort]
        let mut times: [[Vec<f64>; 3]; 2] = Default::default();
        for round in 0..10 {
            for (way, chunked) in [(0, true), (1, false)] {
                pipeline::force_chunks(chunked);
                let mut keys = original.clone();
                let (up, down) = staged_round_trip(&gpu, &mut host, &mut keys, ptr);
                assert!(
                    keys == original,
                    "2^{log_n}: the round trip changed the keys"
                );
                let sort = timed_vec_sort(&gpu, &mut keys);
                assert!(keys == want, "2^{log_n}: the sort is wrong");
                if round > 0 {
                    for (t, d) in times[way].iter_mut().zip([up, down, sort]) {
                        t.push(d.as_secs_f64() * 1e3);
                    }
                }
            }
        }
        pipeline::force_chunks(false);
        let cells = |way: usize| -> String {
            times[way]
                .iter()
                .map(|t| format!("{:8.3}", median(t.clone())))
                .collect::<Vec<_>>()
                .join(" ")
        };
        eprintln!("  2^{log_n} {} | {}", cells(0), cells(1));
    }
}

/// Sorting chunks while the rest uploads against uploading everything first, taking turns in
/// one process: host-slice sorts of random `u32` keys from a `Vec` and from a pinned buffer,
/// and of `u32` keys with `u32` values from `Vec`s, medians of 7 after one untimed, every
/// result checked. Run with `cargo test --release --features cuda --lib
/// cuda_sorting_while_uploading -- --ignored --nocapture`.
#[test]
#[ignore = "needs a CUDA device; a timing, with checks of every sort"]
fn cuda_sorting_while_uploading() {
    use rayon::prelude::*;

    let gpu = open();
    let ascending = KeyEncoding::of::<u32>(crate::Order::Ascending);
    eprintln!("ms, median of 7: after the upload | while uploading");
    let cases = [
        ("u32 Vec", 23u32),
        ("u32 Vec", 24),
        ("u32 Vec", 26),
        ("u32 Vec", 28),
        ("u32 pinned", 24),
        ("u32 pinned", 28),
        ("u32+u32 Vec", 24),
        ("u32+u32 Vec", 26),
        ("u32+u32 Vec", 28),
    ];
    for (case, log_n) in cases {
        let n = 1usize << log_n;
        let original = random_u32(n, log_n.into());
        let mut want = original.clone();
        want.par_sort_unstable();
        let mut pinned = (case == "u32 pinned").then(|| {
            let memory = gpu.alloc_pinned(4 * n).expect("pinned memory");
            crate::pinned::PinnedBuffer::<u32>::new(memory, n).expect("pinned buffer")
        });
        let mut times: [Vec<f64>; 2] = Default::default();
        for round in 0..8 {
            for (way, after) in [(0, true), (1, false)] {
                SORT_AFTER_UPLOAD.with(|a| a.set(after));
                let mut vec_keys;
                let keys: &mut [u32] = match &mut pinned {
                    Some(p) => {
                        p.copy_from_slice(&original);
                        p
                    }
                    None => {
                        vec_keys = original.clone();
                        &mut vec_keys
                    }
                };
                let mut values: Vec<u32> = (0..n as u32).collect();
                let start = Instant::now();
                let sorted = if case.starts_with("u32+u32") {
                    gpu.sort_rows_words(
                        WordsMut::U32(keys),
                        Some(WordsMut::U32(&mut values)),
                        ascending,
                        n,
                    )
                } else {
                    gpu.sort_rows_words(WordsMut::U32(keys), None, ascending, n)
                };
                let took = start.elapsed();
                sorted.expect("sort");
                assert!(keys == want, "{case} 2^{log_n}: the keys are wrong");
                if case.starts_with("u32+u32") {
                    assert!(
                        values
                            .par_iter()
                            .zip(keys.par_iter())
                            .all(|(&v, &k)| original[v as usize] == k),
                        "{case} 2^{log_n}: the values are wrong"
                    );
                }
                if round > 0 {
                    times[way].push(took.as_secs_f64() * 1e3);
                }
            }
        }
        SORT_AFTER_UPLOAD.with(|a| a.set(false));
        eprintln!(
            "  {case:>12} 2^{log_n}: {:9.3} | {:9.3}",
            median(times[0].clone()),
            median(times[1].clone())
        );
    }
}
