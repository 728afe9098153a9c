//! Per-launch device times of sorts (ignored: they need a CUDA device, and they are
//! timings, with a check of the result).

use super::*;

/// Per-launch device times of sorts of 2^16, 2^20 and 2^24 `u32` keys (CUDA events around
/// each launch): which passes cost what. `cargo test --release --features cuda --lib
/// cuda_pass_profile -- --ignored --nocapture`.
#[test]
#[ignore = "needs a CUDA device; a timing, not a check"]
fn cuda_pass_profile() {
    let gpu = CudaBackend::open(0).expect("open device 0");
    for log_n in [16, 20, 24] {
        profile_passes(&gpu, log_n);
    }
}

/// Prints each launch's time in one sort of `2^log_n` random `u32` keys, and checks it.
fn profile_passes(gpu: &CudaBackend, log_n: u32) {
    let n = 1usize << log_n;
    let mut next = lcg(5);
    let keys: Vec<u32> = (0..n).map(|_| next() as u32).collect();
    CurrentContext::set_current(&gpu.context).expect("context");
    let buffer = DeviceBuffer::from_slice(&keys).expect("upload");
    // The network's passes (a merge-path plan's tile sort is the network's first pass).
    let launches = plan::plan(&gpu.limits, n as u64, 1, Widths::keys(4), 0, None);
    let start = Event::new(EventFlags::DEFAULT).expect("event");
    let stop = Event::new(EventFlags::DEFAULT).expect("event");
    let mut total = 0.0;
    for launch in &launches {
        let job = Job {
            keys: buffer.as_device_ptr().as_raw(),
            values: 0,
            kernels: gpu.kernels(4, 0),
            widths: Widths::keys(4),
            plan: SortPlan::Network(vec![*launch]),
            scratch: None,
        };
        start.record(&gpu.stream).expect("record");
        gpu.enqueue(&job, gpu.stream.as_inner()).expect("launch");
        stop.record(&gpu.stream).expect("record");
        stop.synchronize().expect("sync");
        let ms = f64::from(stop.elapsed_time_f32(&start).expect("elapsed"));
        total += ms;
        let a = launch.args;
        let bytes = 2.0 * 4.0 * n as f64;
        eprintln!(
            "pass mode {} tile 2^{} stage {} first {} levels {} tail {} grid {} block {}: {ms:.4} ms ({:.0} GB/s)",
            a.mode,
            a.tile_bits,
            a.stage,
            a.first_level,
            a.levels,
            a.tail_bits,
            launch.grid,
            launch.block,
            bytes / ms / 1e6
        );
    }
    eprintln!(
        "2^{log_n}: {} launches, {total:.3} ms in all",
        launches.len()
    );
    let mut out = vec![0u32; n];
    buffer
        .copy_to(bytemuck::cast_slice_mut(&mut out[..]))
        .expect("download");
    let mut expect = keys;
    expect.sort_unstable();
    assert_eq!(out, expect);
}

/// Device times of the launches of merge-path sorts of random `u32` keys (2^24 to 2^28) and
/// `u64` keys (2^24 to 2^26), odd powers included (their tiles are 2^15 `u32` or 2^13 `u64`
/// keys): the tile sort, then each merge pass (its splitter and merge kernels together), with
/// CUDA events around each. `cargo test --release --features cuda
/// --lib cuda_merge_profile -- --ignored --nocapture`.
#[test]
#[ignore = "needs a CUDA device; a timing, not a check"]
fn cuda_merge_profile() {
    let gpu = CudaBackend::open(0).expect("open device 0");
    CurrentContext::set_current(&gpu.context).expect("context");
    for (key, log_n) in [
        (4u64, 24u32),
        (4, 25),
        (4, 26),
        (4, 27),
        (4, 28),
        (8, 24),
        (8, 25),
        (8, 26),
    ] {
        let n = 1usize << log_n;
        let mut next = lcg(7);
        let raw: Vec<u64> = (0..n).map(|_| next() >> (64 - 8 * key)).collect();
        let bytes: Vec<u8> = raw
            .iter()
            .flat_map(|&x| x.to_le_bytes()[..key as usize].to_vec())
            .collect();
        let widths = Widths { key, value: 0 };
        let plan = one_row_merge_path(&gpu.limits, n as u64, widths, 0).expect("merge plan");
        let data = DeviceBuffer::from_slice(&bytes).expect("upload");
        let scratch = DeviceBuffer::<u8>::zeroed(bytes.len()).expect("scratch");
        let splits = DeviceBuffer::<u64>::zeroed(plan.splits as usize).expect("splits");
        let job = Job {
            keys: data.as_device_ptr().as_raw(),
            values: 0,
            kernels: gpu.kernels(key as usize, 0),
            widths,
            plan: SortPlan::MergePath(plan.clone()),
            scratch: None,
        };
        let stream = gpu.stream.as_inner();
        let events: Vec<Event> = (0..plan.merges.len() + 2)
            .map(|_| Event::new(EventFlags::DEFAULT).expect("event"))
            .collect();
        events[0].record(&gpu.stream).expect("record");
        gpu.launch_pass(&job, &plan.tile_sort, stream)
            .expect("tile sort");
        events[1].record(&gpu.stream).expect("record");
        let mut from = (job.keys, 0);
        let mut to = (scratch.as_device_ptr().as_raw(), 0);
        for (i, merge) in plan.merges.iter().enumerate() {
            let splits = splits.as_device_ptr().as_raw();
            gpu.launch_merge(&job, merge, from, to, splits, stream)
                .expect("merge");
            events[i + 2].record(&gpu.stream).expect("record");
            std::mem::swap(&mut from, &mut to);
        }
        gpu.stream.synchronize().expect("sort");
        let ms = |i: usize| f64::from(events[i + 1].elapsed_time_f32(&events[i]).expect("time"));
        let traffic = 2.0 * bytes.len() as f64;
        eprintln!(
            "u{} 2^{log_n}: tile sort 2^{} {:.3} ms",
            8 * key,
            plan.tile_sort.args.tile_bits,
            ms(0)
        );
        for (i, merge) in plan.merges.iter().enumerate() {
            let t = ms(i + 1);
            eprintln!(
                "  merge run 2^{} grid {} block {}: {t:.3} ms ({:.0} GB/s)",
                merge.args.log_run,
                merge.grid,
                merge.block,
                traffic / t / 1e6
            );
        }
        let total = ms(0) + (1..=plan.merges.len()).map(ms).sum::<f64>();
        eprintln!("  in all {total:.3} ms");
        let mut out = vec![0u8; bytes.len()];
        data.copy_to(&mut out[..]).expect("download");
        let mut want = raw;
        want.sort_unstable();
        let got: Vec<u64> = out
            .chunks(key as usize)
            .map(|c| {
                let mut w = [0u8; 8];
                w[..c.len()].copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect();
        assert!(got == want, "u{} 2^{log_n}: not sorted", 8 * key);
    }
}

/// Device times of one range-partition pass over 2^28 random `u32` keys in device memory
/// (`range_scatter_u32`, the pass a sort through the partitioner runs at least twice: once
/// to count, once to scatter), for 63 to 511 splitters, beside the merge-path sort of the
/// same keys: why single-device sorts do not go through the partitioner
/// (`docs/scaling.md`). Checks that every range got exactly its keys. `cargo test --release --features cuda --lib
/// cuda_partition_profile -- --ignored --nocapture`.
#[test]
#[ignore = "needs a CUDA device; a timing, not a check"]
fn cuda_partition_profile() {
    use crate::Order;
    use crate::cuda::device_ranges::{ScatterTables, launch_range_scatter};
    use crate::partition::{Splitters, counts};
    let gpu = CudaBackend::open(0).expect("open device 0");
    CurrentContext::set_current(&gpu.context).expect("context");
    let log_n: u32 = std::env::var("BITONIC_PARTITION_LOG2")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(28);
    let n = 1usize << log_n;
    let mut next = lcg(9);
    let keys: Vec<u32> = (0..n).map(|_| next() as u32).collect();
    let data = DeviceBuffer::from_slice(&keys).expect("upload");
    let regions = DeviceBuffer::<u32>::zeroed(n).expect("regions");
    let start = Event::new(EventFlags::DEFAULT).expect("event");
    let stop = Event::new(EventFlags::DEFAULT).expect("event");
    let timed = |what: &dyn Fn()| -> f64 {
        let mut times: Vec<f64> = (0..6)
            .map(|_| {
                start.record(&gpu.stream).expect("record");
                what();
                stop.record(&gpu.stream).expect("record");
                stop.synchronize().expect("sync");
                f64::from(stop.elapsed_time_f32(&start).expect("elapsed"))
            })
            .skip(1)
            .collect();
        times.sort_by(f64::total_cmp);
        times[times.len() / 2]
    };
    let encoding = KeyEncoding::of::<u32>(Order::Ascending);
    for m in [63usize, 127, 255, 511] {
        let splitters = Splitters::choose(&keys, m + 1, Order::Ascending);
        let want = counts(&keys, &splitters, Order::Ascending);
        let ranges = want.len();
        let mut offsets = vec![0u64; ranges];
        for r in 1..ranges {
            offsets[r] = offsets[r - 1] + want[r - 1] as u64;
        }
        let capacities: Vec<u64> = want.iter().map(|&c| c as u64).collect();
        let split_words: Vec<u64> = splitters.bits().iter().copied().chain([0]).collect();
        let split = DeviceBuffer::from_slice(&split_words).expect("splitters");
        let offsets = DeviceBuffer::from_slice(&offsets).expect("offsets");
        let capacities = DeviceBuffer::from_slice(&capacities).expect("capacities");
        let fills = DeviceBuffer::from_slice(&vec![0u64; ranges]).expect("fills");
        let kernel = gpu.range_kernels[0];
        let scatter = || {
            // SAFETY: the fills hold `ranges` 64-bit words.
            unsafe {
                cu::cuMemsetD32Async(
                    fills.as_device_ptr().as_raw(),
                    0,
                    2 * ranges,
                    gpu.stream.as_inner(),
                );
            }
            let tables = ScatterTables::of(
                &split,
                splitters.bits().len() as u32,
                [&offsets, &capacities, &fills],
            );
            // SAFETY: the tables hold an entry per range and the capacities are the exact
            // counts, so every key lands inside the regions, which hold `n` keys.
            unsafe {
                launch_range_scatter(
                    kernel,
                    &gpu.stream,
                    (data.as_device_ptr().as_raw(), n as u64),
                    &tables,
                    encoding,
                    regions.as_device_ptr().as_raw(),
                )
            }
            .expect("scatter");
        };
        let ms = timed(&scatter);
        let mut got = vec![0u64; ranges];
        fills.copy_to(&mut got[..]).expect("fills");
        let want: Vec<u64> = want.iter().map(|&c| c as u64).collect();
        assert_eq!(got, want, "{m} splitters");
        eprintln!(
            "range scatter 2^{log_n} u32, {m} splitters ({ranges} ranges): {ms:.3} ms ({:.0} GB/s read + write)",
            8.0 * n as f64 / ms / 1e6
        );
    }
    let scratch = DeviceBuffer::<u32>::zeroed(n).expect("copy");
    let copy_only = || {
        // SAFETY: both buffers hold `n` keys.
        unsafe {
            cu::cuMemcpyDtoDAsync_v2(
                scratch.as_device_ptr().as_raw(),
                data.as_device_ptr().as_raw(),
                n * 4,
                gpu.stream.as_inner(),
            );
        }
    };
    let sort = || {
        copy_only();
        gpu.sort_device(&mut scratch.index(..), Order::Ascending, &gpu.stream)
            .expect("sort");
    };
    let (total, copy) = (timed(&sort), timed(&copy_only));
    eprintln!(
        "merge-path sort 2^{log_n} u32: {:.3} ms (a device copy of the keys, {copy:.3} ms, taken off)",
        total - copy
    );
}
