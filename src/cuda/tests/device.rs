//! Tests that need the driver or the embedded PTX: every kernel present, driver errors,
//! and (ignored without a device) results bit for bit against the CPU backend and the merge
//! kernels run directly.

use super::*;

#[test]
fn ptx_has_every_kernel() {
    for key in KEY_NAMES {
        for value in VALUE_NAMES {
            for kernel in [
                "tile_pass",
                "merge_pass",
                "merge_rows_pass",
                "merge_search_pass",
            ] {
                let entry = format!(".entry {kernel}_{key}_{value}(");
                assert!(PTX.contains(&entry), "{entry} missing from the PTX");
                assert!(
                    PTX_SM80.contains(&entry),
                    "{entry} missing from the sm_80 PTX"
                );
                assert!(
                    PTX_SM90.contains(&entry),
                    "{entry} missing from the sm_90 PTX"
                );
            }
        }
        for kernel in ["merge_split", "merge_rows_split"] {
            let entry = format!(".entry {kernel}_{key}(");
            assert!(PTX.contains(&entry) && PTX_SM90.contains(&entry), "{entry}");
        }
    }
    for ptx in [PTX, PTX_SM80, PTX_SM90] {
        assert!(ptx.contains(".entry warp_sort_u32("), "warp_sort_u32");
        assert!(ptx.contains(".entry warps_sort_u32("), "warps_sort_u32");
        for kernel in [
            "radix_histogram_u32",
            "radix_histogram_u64",
            "radix_starts",
            "radix_pass_u32_none",
            "radix_pass_u64_u64",
            "radix_copy_back_u32_u32",
            "radix_copy_back_u64_none",
            "count_keys_u16",
            "count_totals",
            "count_starts",
            "fill_keys_u16",
        ] {
            assert!(ptx.contains(&format!(".entry {kernel}(")), "{kernel}");
        }
    }
    // The benchmark's hold kernel is the benchmark crate's, not the library's.
    assert!(!PTX.contains(".entry hold_stream("));
    // Cluster kernels only in the sm_90 PTX, with their compiled cluster size.
    for value in CLUSTER_VALUE_NAMES {
        let entry = format!(".entry cluster_pass_u32_{value}(");
        assert!(
            PTX_SM90.contains(&entry),
            "{entry} missing from the sm_90 PTX"
        );
        assert!(!PTX_SM80.contains(&entry) && !PTX.contains(&entry));
    }
    assert!(PTX_SM90.contains(".reqnctapercluster 8, 1, 1"));
}

#[test]
fn backend_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CudaBackend>();
}

#[test]
fn driver_errors_name_the_call() {
    let e = driver_error("cuMemAlloc", CudaError::OutOfMemory);
    match &e {
        Error::Driver {
            backend,
            call,
            code,
            ..
        } => {
            assert_eq!(*backend, BackendKind::Cuda);
            assert_eq!(call, "cuMemAlloc");
            assert_eq!(*code, 2);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(e.to_string().contains("cuMemAlloc"), "{e}");
}

/// Without a usable driver (the link-only stub, or no GPU) listing devices fails with an
/// error that names the call, and the crate's device list says why CUDA is unavailable.
#[test]
fn devices_report_a_missing_driver() {
    match devices() {
        Ok(list) => {
            for (i, d) in list.iter().enumerate() {
                assert_eq!(d.index, i);
                assert_eq!(d.backend, BackendKind::Cuda);
            }
        }
        Err(e) => {
            eprintln!("cuda::devices(): {e}");
            let Error::Driver { call, message, .. } = &e else {
                panic!("expected a driver error, got {e:?}");
            };
            assert!(e.to_string().contains(call.as_str()));
            if message.contains("stub") {
                assert_eq!(call, "cuInit");
            }
            let all = crate::devices();
            let cuda = all
                .iter()
                .find(|b| b.backend == BackendKind::Cuda)
                .expect("CUDA is listed");
            assert!(cuda.devices.is_empty());
            let why = cuda.unavailable.as_deref().expect("a reason");
            assert!(why.contains(call.as_str()), "{why}");
            assert!(CudaBackend::open(0).is_err());
        }
    }
}

fn compare_with_cpu(gpu: &CudaBackend, n: usize, encoding: KeyEncoding, seed: u64) {
    let mut next = lcg(seed);
    // Few distinct keys in half the cases, so that ties (and the values' order) matter.
    let modulo = if seed.is_multiple_of(2) { u64::MAX } else { 7 };
    let keys64: Vec<u64> = (0..n).map(|_| next() % modulo).collect();
    let keys32: Vec<u32> = keys64
        .iter()
        .map(|&k| k as u32 ^ (k >> 32) as u32)
        .collect();
    let values32: Vec<u32> = (0..n as u32).collect();
    let values64: Vec<u64> = (0..n as u64).map(|i| i << 32 | i).collect();
    let cpu = CpuBackend::new();
    macro_rules! case {
        ($keys:expr, $values:expr, $kv:ident, $vv:ident) => {{
            let (mut gk, mut ck) = ($keys.clone(), $keys.clone());
            let (mut gv, mut cv) = ($values.clone(), $values.clone());
            gpu.sort_words(
                WordsMut::$kv(&mut gk),
                Some(WordsMut::$vv(&mut gv)),
                encoding,
            )
            .expect("GPU sort");
            cpu.sort_words(
                WordsMut::$kv(&mut ck),
                Some(WordsMut::$vv(&mut cv)),
                encoding,
            )
            .expect("CPU sort");
            assert_eq!(gk, ck, "keys n={n} {encoding:?}");
            assert_eq!(gv, cv, "values n={n} {encoding:?}");
        }};
    }
    case!(keys32, values32, U32, U32);
    case!(keys32, values64, U32, U64);
    case!(keys64, values32, U64, U32);
    case!(keys64, values64, U64, U64);
    let (mut gk, mut ck) = (keys32.clone(), keys32.clone());
    gpu.sort_words(WordsMut::U32(&mut gk), None, encoding)
        .expect("GPU sort");
    cpu.sort_words(WordsMut::U32(&mut ck), None, encoding)
        .expect("CPU sort");
    assert_eq!(gk, ck, "keys only n={n} {encoding:?}");
    let (mut gk, mut ck) = (keys64.clone(), keys64.clone());
    gpu.sort_words(WordsMut::U64(&mut gk), None, encoding)
        .expect("GPU sort");
    cpu.sort_words(WordsMut::U64(&mut ck), None, encoding)
        .expect("CPU sort");
    assert_eq!(gk, ck, "keys only n={n} {encoding:?}");
}

/// Bit-identical results to the CPU backend (which runs the same network, or past 8 MiB of
/// pairs the same tile sort and a stable merge), values included. Ignored by default, so
/// that a machine without CUDA reports it as not run; `scripts/gpu-check.sh` runs it.
#[test]
#[ignore = "needs a CUDA device: scripts/gpu-check.sh runs it with --ignored"]
fn gpu_matches_cpu() {
    let list = devices().unwrap_or_else(|e| panic!("no CUDA driver: {e}"));
    assert!(!list.is_empty(), "no CUDA device");
    let gpu = CudaBackend::open(0).expect("open device 0");
    let encodings = [
        (KeyKind::Unsigned, false),
        (KeyKind::Signed, false),
        (KeyKind::Float, false),
        (KeyKind::Unsigned, true),
        (KeyKind::Float, true),
    ];
    let mut seed = 1;
    let lengths = [
        0, 1, 2, 3, 5, 31, 64, 100, 1000, 2047, 2048, 2049, 4097, 8191, 8192, 8193,
    ]
    .into_iter()
    .chain([12345, 65536, 100_000, 1 << 17, (1 << 18) + 3, 1_000_003])
    // Pairs past 8 MiB take merge path (16-, 12- and 8-byte pairs), whose values of equal
    // keys the CPU backend must put in the same order.
    .chain([(1 << 19) + 3, 699_051, (1 << 20) + 1, (1 << 21) + 1]);
    for n in lengths {
        for (kind, descending) in encodings {
            compare_with_cpu(&gpu, n, KeyEncoding { kind, descending }, seed);
            seed += 1;
        }
    }
    // From 32 MiB a sort of host slices sorts its chunks while the rest uploads: pairs in
    // three chunks, the last of one element; keys alone so too, and in three chunks through
    // the pipeline of pieces.
    // (2^22 + 1 and 2^24 + 3 `u32` keys: tiles of 2^15, an odd power of two's tile.)
    for n in [(1 << 22) + 1, (1 << 23) + 1, 9_437_187, (1 << 24) + 3] {
        for (kind, descending) in [encodings[2], encodings[3]] {
            compare_with_cpu(&gpu, n, KeyEncoding { kind, descending }, seed);
            seed += 1;
        }
    }
}

/// The merge kernels of every key and value width, run directly (sorts choose them for keys
/// alone): keys with their positions as values come out sorted, and the merges keep the
/// order that the tile sort gave equal keys (they are stable), so the result is the tile
/// sort's network on each tile, then a stable sort by key.
/// The counting sort of 16-bit keys alone, its threshold lowered to two keys so that short
/// rows reach every edge (a thread's keys cut by the end, one block and several, a short
/// last block, keys not 16-byte aligned), against `sort_unstable`, both orders.
#[test]
#[ignore = "needs a CUDA device: scripts/gpu-check.sh runs it with --ignored"]
fn counting_sort_matches_a_sort() {
    use cust::memory::DeviceBuffer;
    use cust::stream::{Stream, StreamFlags};
    let mut gpu = CudaBackend::open(0).expect("open device 0");
    gpu.limits.counting_from = 2;
    CurrentContext::set_current(&gpu.context).expect("context");
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).expect("a stream");
    let mut next = lcg(16);
    let mut lengths: Vec<usize> = (2..=40).collect();
    for k in [10, 13, 16, 17, 19] {
        lengths.extend([(1 << k) - 1, 1 << k, (1 << k) + 1]);
    }
    for n in lengths {
        let plan = gpu.plan(n as u64, 1, Widths::keys(2), 0);
        assert!(matches!(plan, SortPlan::Counting(_)), "n={n}: {plan:?}");
        for pattern in 0..4u64 {
            let keys: Vec<u16> = (0..n as u64)
                .map(|i| match pattern {
                    0 => next() as u16,
                    1 => (next() % 3) as u16 * 0x7001,
                    2 => 0x8000,
                    _ => (n as u64 - i) as u16,
                })
                .collect();
            for (descending, offset) in [(false, 0usize), (true, 1)] {
                // One key before the row, so that with offset 1 it starts 2 bytes in.
                let mut padded = vec![0x1234u16; n + 1];
                padded[offset..offset + n].copy_from_slice(&keys);
                let buffer = DeviceBuffer::from_slice(&padded).expect("a buffer");
                let mut row = buffer.index(offset..offset + n);
                gpu.sort_device(&mut row, crate::Order::from_descending(descending), &stream)
                    .expect("the sort");
                stream.synchronize().expect("the sort's end");
                let mut got = vec![0u16; n + 1];
                buffer.copy_to(&mut got[..]).expect("the download");
                let mut want = keys.clone();
                want.sort_unstable();
                if descending {
                    want.reverse();
                }
                assert!(
                    got[offset..offset + n] == want[..],
                    "n={n} pattern {pattern} descending {descending}"
                );
                let outside = if offset == 1 { got[0] } else { got[n] };
                assert_eq!(outside, 0x1234, "n={n}: a key outside the row moved");
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA device: the GPU checks run it with --ignored"]
fn merge_kernels_are_stable_merges() {
    let gpu = CudaBackend::open(0).expect("open device 0");
    CurrentContext::set_current(&gpu.context).expect("context");
    let mut next = lcg(9);
    for (key, value) in [(4, 0), (4, 4), (4, 8), (8, 0), (8, 4), (8, 8)] {
        let widths = Widths { key, value };
        for (case, n) in [(1usize << 14) + 1, 100_003, (3 << 17) + 5, (1 << 20) - 1]
            .into_iter()
            .enumerate()
        {
            // Few distinct keys, so that ties cross every tile and run boundary.
            let raw: Vec<u64> = (0..n).map(|_| next() % 50).collect();
            // The tile of keys alone for every width (pairs this short take the network).
            let sort_tile = crate::schedule::merge_path::choose_sort_tile(
                n as u64,
                plan::max_log_tile(&gpu.limits, widths, None),
                gpu.limits.multiprocessors,
            )
            .expect("a sort tile");
            let facts = plan::facts(&gpu.limits, widths, None);
            let tiled = crate::schedule::plan::tiled_merge_path_plan(
                &facts,
                (n as u64, 1),
                sort_tile,
                widths,
            )
            .expect("a merge-path plan");
            let mut plan = plan::merge_path_launches(&gpu.limits, &tiled, widths, 0);
            // Cases 1 and 2 launch the splitter before every pass, whose tiles the merge
            // kernel finds itself where a pass has few (cases 0 and 3, on the plan): case 1
            // with a thread per tile, which the plan keeps for passes of many tiles, case 2
            // with a warp per tile.
            if case == 1 || case == 2 {
                for m in &mut plan.merges {
                    m.search = false;
                    if case == 1 {
                        let tiles = (n as u64).div_ceil(1 << m.args.tile_bits);
                        m.split_grid = tiles.div_ceil(u64::from(m.split_block)) as u32;
                        let threads = u64::from(m.split_grid) * u64::from(m.split_block);
                        assert!(
                            threads < tiles * 32,
                            "{widths:?} n {n}: still a warp per tile"
                        );
                    }
                }
            }
            let tile = 1usize << plan.tile_sort.args.tile_bits;
            // The expected result: positions as values, network-sorted tiles, then a stable
            // sort by key.
            let mut keys = raw.clone();
            let mut positions: Vec<u64> = (0..n as u64).collect();
            for (k, v) in keys.chunks_mut(tile).zip(positions.chunks_mut(tile)) {
                let schedule =
                    crate::schedule::Schedule::new(k.len() as u64, plan::tile_params(12));
                crate::schedule::emulate(&schedule, k, Some(v));
            }
            let mut want: Vec<(u64, u64)> = keys.into_iter().zip(positions).collect();
            want.sort_by_key(|p| p.0);
            let words = |w: &[u64], bytes: u64| -> Vec<u8> {
                w.iter()
                    .flat_map(|&x| x.to_le_bytes()[..bytes as usize].to_vec())
                    .collect()
            };
            let key_buf = DeviceBuffer::from_slice(&words(&raw, key)).expect("keys");
            let positions: Vec<u64> = (0..n as u64).collect();
            let value_buf =
                DeviceBuffer::from_slice(&words(&positions, value.max(1))).expect("values");
            let scratch_keys = DeviceBuffer::<u8>::zeroed(n * key as usize).expect("scratch");
            let scratch_values =
                DeviceBuffer::<u8>::zeroed(n * value.max(1) as usize).expect("scratch");
            let splits = DeviceBuffer::<u64>::zeroed(plan.splits as usize).expect("splits");
            let job = Job {
                keys: key_buf.as_device_ptr().as_raw(),
                values: if value > 0 {
                    value_buf.as_device_ptr().as_raw()
                } else {
                    0
                },
                kernels: gpu.kernels(key as usize, value as usize),
                widths,
                plan: SortPlan::MergePath(plan),
                scratch: Some(ScratchWords {
                    keys: scratch_keys.as_device_ptr().as_raw(),
                    values: if value > 0 {
                        scratch_values.as_device_ptr().as_raw()
                    } else {
                        0
                    },
                    splits: splits.as_device_ptr().as_raw(),
                }),
            };
            gpu.enqueue(&job, gpu.stream.as_inner()).expect("launch");
            gpu.stream.synchronize().expect("sort");
            let mut out_keys = vec![0u8; n * key as usize];
            key_buf.copy_to(&mut out_keys[..]).expect("download");
            let mut out_values = vec![0u8; n * value.max(1) as usize];
            value_buf.copy_to(&mut out_values[..]).expect("download");
            let read = |b: &[u8], bytes: u64, i: usize| {
                let mut w = [0u8; 8];
                w[..bytes as usize].copy_from_slice(&b[i * bytes as usize..][..bytes as usize]);
                u64::from_le_bytes(w)
            };
            for (i, &(k, v)) in want.iter().enumerate() {
                assert_eq!(read(&out_keys, key, i), k, "{widths:?} n {n}: key {i}");
                if value > 0 {
                    let mask = if value == 4 {
                        u64::from(u32::MAX)
                    } else {
                        u64::MAX
                    };
                    assert_eq!(
                        read(&out_values, value, i),
                        v & mask,
                        "{widths:?} n {n}: value {i}"
                    );
                }
            }
        }
    }
}
