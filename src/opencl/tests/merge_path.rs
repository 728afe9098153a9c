//! Merge path on the device: keys and pairs past their thresholds, from host slices and
//! device buffers, and sorts that sort while they upload.

use super::*;

/// Merge path: sorts of keys alone above one tile (and the device's threshold) take it (the
/// plan says so, and the oblivious mode does not), and `u32`, `u64` and `f32` keys of
/// lengths around every sort tile, merge tile and run boundary past the threshold come out
/// as `sort_unstable` (`total_cmp` for floats) has them, both ways, from host slices and from
/// device buffers, where two queues take turns at the backend's scratch.
#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn merge_path_sorts_keys() {
    use opencl3::memory::CL_MEM_READ_WRITE;
    use opencl3::types::CL_BLOCKING;
    let b = &backends()[0];
    let limits = b.variant_of_widths(4, None).expect("program").limits;
    let SortPlan::MergePath(merge) = plan::choose(&limits, Shape::new(1 << 22, 1), 4, 0, false)
    else {
        panic!("2^22 keys alone do not take merge path on {}", b.info);
    };
    assert!(merge.merges.len() >= 2 && merge.merges.len() % 2 == 0);
    assert!(matches!(
        plan::choose(&limits, Shape::new(1 << 22, 1), 4, 0, true),
        SortPlan::Network(_)
    ));
    // Pairs take it past 8 MiB on every device.
    assert!(matches!(
        plan::choose(&limits, Shape::new(1 << 20, 1), 4, 4, false),
        SortPlan::Network(_)
    ));
    // Few rows of keys alone longer than a tile too, each merged on its own (the suite's
    // rows trials sort them: `LONG_ROWS` in tests/support/derived/rows.rs).
    let SortPlan::MergePath(rows) = plan::choose(&limits, Shape::new(20_001, 3), 4, 0, false)
    else {
        panic!("3 rows of 20001 keys do not take merge path on {}", b.info);
    };
    assert_eq!((rows.shape.rows, rows.shape.row_len), (3, 20_001));
    let sort_tile = crate::schedule::merge_path::choose_sort_tile(
        1 << 22,
        plan::max_log_tile(&limits, 4),
        limits.compute_units,
    )
    .expect("a sort tile");
    let merge_tile = plan::merge_log_tile(&limits, 4, 0);
    // From the device's threshold on (every length on a CPU device, only long ones on a GPU;
    // 8-byte keys reach it at half the length of 4-byte ones).
    let from = ((1usize << limits.min_log_merge_bytes.saturating_sub(1)) / 4).max(1 << 13);
    let mut lengths = vec![from + 1, 3 * from / 2, from + 100_003, 2 * from + 1];
    for bits in [sort_tile, merge_tile, 14, 15, 16, 17] {
        for k in [1usize, 3, 5] {
            let at = from + (k << bits);
            lengths.extend([at - 1, at, at + 1]);
        }
    }
    lengths.sort_unstable();
    lengths.dedup();
    let queues = [
        CommandQueue::create_default(&b.context, 0).expect("queue"),
        CommandQueue::create_default(&b.context, 0).expect("queue"),
    ];
    let mut rng = StdRng::seed_from_u64(29);
    for (case, &n) in lengths.iter().enumerate() {
        // Few distinct keys in every other case: ties across every tile and run boundary.
        let raw = few_or_random(&mut rng, n, case % 2 == 0);
        let u32s: Vec<u32> = raw.iter().map(|&x| x as u32).collect();
        check_keys(&u32s, |a, b| a.cmp(b));
        check_keys(&raw, |a, b| a.cmp(b));
        if case < 4 {
            let splitter = std::iter::once(splitter_backend());
            check_keys_on(splitter.clone(), &u32s, |a, b| a.cmp(b));
            check_keys_on(splitter, &raw, |a, b| a.cmp(b));
        }
        let floats: Vec<f32> = raw
            .iter()
            .map(|&x| match x % 7 {
                0 => f32::NAN,
                1 => -0.0,
                2 => f32::NEG_INFINITY,
                _ => f32::from_bits(x as u32),
            })
            .collect();
        check_keys(&floats, f32::total_cmp);
        // Device buffers, on one queue and then the other.
        let queue = &queues[case % 2];
        let mut want = u32s.clone();
        want.sort_unstable();
        // SAFETY: no host pointer; the buffer is written before it is read.
        let mut keys =
            unsafe { Buffer::<u32>::create(&b.context, CL_MEM_READ_WRITE, n, ptr::null_mut()) }
                .expect("buffer");
        // SAFETY: blocking copies of `n` words each way.
        unsafe { queue.enqueue_write_buffer(&mut keys, CL_BLOCKING, 0, &u32s, &[]) }
            .expect("write");
        b.sort_device(&mut keys, crate::keys::Order::Ascending, queue)
            .expect("sort_device");
        let mut got = vec![0u32; n];
        unsafe { queue.enqueue_read_buffer(&keys, CL_BLOCKING, 0, &mut got, &[]) }.expect("read");
        assert!(got == want, "device buffer of {n} keys");
    }
}

/// Merge path's pair kernels: past 8 MiB of pairs a backend without the radix sort takes it
/// (and not in the oblivious mode), as the GPUs do past the radix sort's length, and keys
/// and values come out bit for bit in the order of its CPU model (each tile by the network,
/// then stable merges: values of equal keys included), for every width of key and value,
/// both ways, from host slices and from device buffers on two queues; in the oblivious mode
/// it and the CPU backend run the network and still agree.
#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn merge_path_sorts_pairs() {
    use crate::schedule::merge_path::pair_sort_tile;
    use opencl3::memory::CL_MEM_READ_WRITE;
    use opencl3::types::CL_BLOCKING;
    let b = &backends()[0];
    let cpu = CpuBackend::new();
    let limits = b.variant_of_widths(4, Some(4)).expect("program").limits;
    let first = (1usize << 20) + 1;
    assert!(matches!(
        plan::choose(&limits, Shape::new(first as u64, 1), 4, 4, false),
        SortPlan::MergePath(_)
    ));
    assert!(matches!(
        plan::choose(&limits, Shape::new(first as u64, 1), 4, 4, true),
        SortPlan::Network(_)
    ));
    // With the radix kernels, the same pairs take the radix sort up to its length, and
    // merge path past it.
    let radix = plan::Limits {
        radix_keys_per_thread: 4,
        radix_group: plan::RADIX_GROUP,
        ..limits
    };
    assert!(matches!(
        plan::choose(&radix, Shape::new(first as u64, 1), 4, 4, false),
        SortPlan::Radix(_)
    ));
    let past = crate::schedule::radix::RADIX_MAX_LEN + 1;
    assert!(matches!(
        plan::choose(&radix, Shape::new(past, 1), 4, 4, false),
        SortPlan::MergePath(_)
    ));
    let mut rng = StdRng::seed_from_u64(31);
    // Past the threshold, around the sort tiles (2^11 and 2^12) and where the tile changes
    // with the number of merge passes (2^21 + 1).
    let mut lengths = vec![
        first,
        first + (1 << 11) - 1,
        first + 3 * (1 << 12) + 1,
        1_600_003,
    ];
    lengths.push((1 << 21) + 1);
    for (i, &n) in lengths.iter().enumerate() {
        assert!(pair_sort_tile(n as u64, 8).is_some());
        let raw = few_or_random(&mut rng, n, i % 4 != 3);
        let keys: Vec<u32> = raw.iter().map(|&x| x as u32).collect();
        let values: Vec<u32> = (0..n as u32).collect();
        check_pairs_like_model(b, &cpu, &keys, &values, i % 2 == 1);
        if i == 0 {
            check_pairs_like_model(splitter_backend(), &cpu, &keys, &values, true);
            // Every other width of key and value, just past its threshold.
            let wide: Vec<u64> = raw
                .iter()
                .map(|&x| x.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 64)
                .collect();
            let wide_values: Vec<u64> = (0..n as u64).map(|i| i << 20).collect();
            check_pairs_like_model(b, &cpu, &keys, &wide_values, false);
            check_pairs_like_model(b, &cpu, &wide, &values, true);
            check_pairs_like_model(
                b,
                &cpu,
                &wide[..(1 << 19) + 3],
                &wide_values[..(1 << 19) + 3],
                false,
            );
            check_pairs_like_model(b, &cpu, &special_floats(&raw), &values, true);
        }
    }
    // Device buffers on two queues taking turns at the scratch.
    let queues = [
        CommandQueue::create_default(&b.context, 0).expect("queue"),
        CommandQueue::create_default(&b.context, 0).expect("queue"),
    ];
    for (case, &n) in lengths.iter().take(2).enumerate() {
        let keys: Vec<u32> = (0..n).map(|_| rng.gen_range(0..40)).collect();
        let values: Vec<u32> = (0..n as u32).collect();
        let (want_k, want_v) = wanted_pairs(b, &cpu, &keys, &values, false);
        let queue = &queues[case % 2];
        let upload = |host: &[u32]| {
            // SAFETY: no host pointer; the buffer is written before it is read.
            let mut buffer =
                unsafe { Buffer::<u32>::create(&b.context, CL_MEM_READ_WRITE, n, ptr::null_mut()) }
                    .expect("buffer");
            // SAFETY: a blocking copy of `n` words.
            unsafe { queue.enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, host, &[]) }
                .expect("write");
            buffer
        };
        let download = |buffer: &Buffer<u32>| {
            let mut host = vec![0u32; n];
            // SAFETY: a blocking copy of `n` words.
            unsafe { queue.enqueue_read_buffer(buffer, CL_BLOCKING, 0, &mut host, &[]) }
                .expect("read");
            host
        };
        let (mut k, mut v) = (upload(&keys), upload(&values));
        b.sort_device_by_key(&mut k, &mut v, crate::keys::Order::Ascending, queue)
            .expect("sort_device_by_key");
        assert!(download(&k) == want_k, "device keys, n={n}");
        assert!(download(&v) == want_v, "device values, n={n}");
    }
    // The oblivious mode: both run the network.
    b.set_oblivious(true);
    cpu.set_oblivious(true);
    let n = lengths[0];
    let keys: Vec<u32> = (0..n).map(|_| rng.gen_range(0..40)).collect();
    let values: Vec<u32> = (0..n as u32).collect();
    check_pairs_like_model(b, &cpu, &keys, &values, false);
    b.set_oblivious(false);
}

/// `keys` and `values` sorted as `b` sorts them: where it takes merge path for pairs (past
/// [`pair_sort_tile`]'s threshold, outside the oblivious mode; `b` must not take the radix
/// sort), in the order of merge path's CPU model; otherwise as `cpu` sorts them (the
/// network's order, `cpu` in the same mode as `b`).
fn wanted_pairs<K: SortKey, V: bytemuck::Pod + Send + Sync>(
    b: &OpenClBackend,
    cpu: &CpuBackend,
    keys: &[K],
    values: &[V],
    descending: bool,
) -> (Vec<K>, Vec<V>) {
    use crate::schedule::merge_path::pair_sort_tile;
    fn model<W: crate::keys::Word, V: Copy + Send + Sync>(
        log_tile: u32,
        keys: &mut [W],
        values: &mut [V],
        encoding: KeyEncoding,
    ) {
        keys.iter_mut().for_each(|k| *k = encoding.encode(*k));
        crate::schedule::emulate_merge_path(log_tile, keys, values);
        keys.iter_mut().for_each(|k| *k = encoding.decode(*k));
    }
    let (key_bytes, value_bytes) = (std::mem::size_of::<K>(), std::mem::size_of::<V>());
    let n = keys.len() as u64;
    let (mut want_k, mut want_v) = (keys.to_vec(), values.to_vec());
    let (w, kind) = as_words(&mut want_k);
    let encoding = KeyEncoding { kind, descending };
    let merges = pair_sort_tile(n, (key_bytes + value_bytes) as u64)
        .filter(|_| !b.oblivious.load(std::sync::atomic::Ordering::Relaxed));
    match merges {
        Some(log_tile) => {
            let limits = b
                .variant_of_widths(key_bytes, Some(value_bytes))
                .expect("program")
                .limits;
            let shape = Shape::new(n, 1);
            assert!(
                matches!(
                    plan::choose(&limits, shape, key_bytes as u64, value_bytes as u64, false),
                    SortPlan::MergePath(_)
                ),
                "{n} pairs of {key_bytes} + {value_bytes} bytes do not take merge path"
            );
            match w {
                WordsMut::U32(w) => model(log_tile, w, &mut want_v, encoding),
                WordsMut::U64(w) => model(log_tile, w, &mut want_v, encoding),
            }
        }
        None => cpu
            .sort_words(w, Some(value_words(&mut want_v)), encoding)
            .expect("cpu sort"),
    }
    (want_k, want_v)
}

/// Sorts `keys` and `values` on `b` and checks both bit for bit against [`wanted_pairs`].
fn check_pairs_like_model<
    K: SortKey + std::fmt::Debug,
    V: bytemuck::Pod + Send + Sync + std::fmt::Debug,
>(
    b: &OpenClBackend,
    cpu: &CpuBackend,
    keys: &[K],
    values: &[V],
    descending: bool,
) {
    let (want_k, want_v) = wanted_pairs(b, cpu, keys, values, descending);
    let (mut got_k, mut got_v) = (keys.to_vec(), values.to_vec());
    let (w, kind) = as_words(&mut got_k);
    let encoding = KeyEncoding { kind, descending };
    b.sort_words(w, Some(value_words(&mut got_v)), encoding)
        .expect("opencl sort");
    let label = format!(
        "n={} keys of {} bytes, values of {} bytes, descending={descending}",
        keys.len(),
        std::mem::size_of::<K>(),
        std::mem::size_of::<V>()
    );
    assert_same_pairs((&got_k, &got_v), (&want_k, &want_v), &label);
}

/// From 32 MiB a merge-path sort of host slices sorts each chunk while the rest uploads
/// (`chunked.rs`): the same result, bit for bit, as the sort that uploads first (the CPU
/// backend for keys alone, merge path's CPU model for pairs, which this backend sorts by
/// merge path): keys alone in four chunks and a last one of one element, pairs
/// in two chunks and one of one element, floats descending with NaN, -0.0 and infinities.
#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_while_uploading_as_after() {
    let b = &backends()[0];
    let cpu = CpuBackend::new();
    let mut rng = StdRng::seed_from_u64(38);
    let n = (1usize << 23) + 1;
    let keys: Vec<u32> = (0..n).map(|_| rng.r#gen()).collect();
    let limits = b.variant_of_widths(4, None).expect("program").limits;
    let SortPlan::MergePath(whole) = plan::choose(&limits, Shape::new(n as u64, 1), 4, 0, false)
    else {
        panic!("{n} keys do not take merge path on {}", b.info);
    };
    let Kind::Tile { log_net, .. } = whole.tile_sort.kind else {
        panic!("a merge-path plan without a tile sort");
    };
    // The sort is cut into chunks, and the device lets sub-buffers start at them.
    let log_chunk =
        crate::schedule::merge_path::upload_chunk(n as u64, 4, log_net).expect("chunks");
    assert!((4u64 << log_chunk).is_multiple_of(b.limits.base_align_bytes.max(1)));
    let want = {
        let mut k = keys.clone();
        k.sort_unstable();
        k
    };
    let mut got = keys.clone();
    b.sort_words(
        WordsMut::U32(&mut got),
        None,
        KeyEncoding::of::<u32>(crate::keys::Order::Ascending),
    )
    .expect("opencl sort");
    assert!(got == want, "u32 keys, n = {n}");
    let n = (1usize << 22) + 1;
    let floats: Vec<f32> = (0..n)
        .map(|i| match rng.gen_range(0..9) {
            0 => f32::NAN,
            1 => -0.0,
            2 => 0.0,
            3 => f32::NEG_INFINITY,
            4 => f32::INFINITY,
            _ => (i % 1000) as f32 - 500.0,
        })
        .collect();
    let values: Vec<u32> = (0..n as u32).collect();
    check_pairs_like_model(b, &cpu, &floats, &values, true);
    let few: Vec<u32> = (0..n).map(|_| rng.gen_range(0..50)).collect();
    check_pairs_like_model(b, &cpu, &few, &values, false);
}
