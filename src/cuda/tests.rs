//! Tests of the cuda backend that need its internals.

use super::kernels::{CLUSTER_VALUE_NAMES, KEY_NAMES, VALUE_NAMES};
use super::*;
use crate::cpu::CpuBackend;
use crate::keys::KeyKind;
use cust::event::{Event, EventFlags};
use cust::memory::CopyDestination;

const H200: DeviceLimits = DeviceLimits {
    shared_bytes_per_block: 232_448,
    max_grid_x: i32::MAX as u32,
    multiprocessors: 132,
    clusters: true,
};

#[test]
fn tiles_fill_the_opt_in_shared_memory() {
    let widths = |key: u64, value: u64| Widths { key, value };
    let tile = |w: Widths| plan::max_log_tile(&H200, w, None);
    // Two blocks per multiprocessor (u32 keys, with u32 values or none) share it.
    assert_eq!(tile(widths(4, 0)), 14);
    assert_eq!(tile(widths(4, 4)), 13);
    assert_eq!(tile(widths(8, 0)), 14);
    assert_eq!(tile(widths(8, 4)), 14);
    assert_eq!(tile(widths(4, 8)), 14);
    assert_eq!(tile(widths(8, 8)), 13);
    for (k, v) in [(4, 0), (4, 4), (8, 0), (8, 4), (4, 8), (8, 8)] {
        let w = widths(k, v);
        let blocks = u64::from(plan::blocks_per_multiprocessor(w));
        assert!(plan::padded_words(tile(w)) * w.element() * blocks <= 232_448 + 1024);
    }
    let small = DeviceLimits {
        shared_bytes_per_block: 48 * 1024,
        ..H200
    };
    assert_eq!(plan::max_log_tile(&small, Widths::keys(4), None), 12);
    assert_eq!(plan::max_log_tile(&small, widths(8, 8), None), 11);
    assert_eq!(plan::max_log_tile(&H200, Widths::keys(4), Some(12)), 12);
    // Absurd limits still give a tile of two.
    let tiny = DeviceLimits {
        shared_bytes_per_block: 3,
        ..H200
    };
    assert_eq!(plan::max_log_tile(&tiny, widths(8, 8), None), 1);
}

#[test]
fn small_sorts_are_one_launch_and_large_ones_spread_over_the_device() {
    // u32 keys alone below 2^13 one block of warps; others up to 2^12 one block; 2^13..=2^16
    // one cluster of eight blocks, each a slice of 2^-3.
    for log_n in 1..=16 {
        for widths in [Widths::keys(4), Widths { key: 4, value: 4 }] {
            let launches = plan::plan(&H200, 1 << log_n, 1, widths, 0, None);
            assert_eq!(launches.len(), 1, "2^{log_n}");
            let l = launches[0];
            assert_eq!(l.args.tile_bits, log_n);
            assert_eq!(
                l.args.transform,
                plan::ENCODE_ON_LOAD | plan::DECODE_ON_STORE
            );
            assert_eq!(l.args.mode, plan::MODE_SORT);
            if log_n < plan::MAX_LOG_WARP_SORT && widths.value == 0 {
                // One block of warps: u32 keys alone up to 2^12, 2^10 keys a warp, shared
                // memory for the exchanges between warps only.
                assert_eq!(l.kernel, plan::PassKernel::Warp);
                let warps = 1u32 << log_n.saturating_sub(10);
                let shared = if warps > 1 { 4 << log_n } else { 0 };
                assert_eq!((l.grid, l.block, l.shared_bytes), (1, 32 * warps, shared));
            } else if log_n >= plan::MIN_CLUSTER_LOG {
                assert_eq!(l.kernel, plan::PassKernel::Cluster);
                assert_eq!(l.grid, 8);
                assert_eq!(l.block, 1 << (log_n - 3 - plan::LOG_E));
                assert_eq!(
                    u64::from(l.shared_bytes),
                    plan::padded_words(log_n - 3) * widths.element()
                );
            } else {
                assert_eq!(l.kernel, plan::PassKernel::Tile);
                assert_eq!(l.grid, 1);
            }
        }
    }
    // Other widths, rows and the tests' lowered tiles take the tile kernel at 2^10.
    for (n, rows, widths, cap) in [
        (1 << 10, 1, Widths::keys(8), None),
        (1 << 10, 1, Widths { key: 4, value: 4 }, None),
        (1 << 10, 2, Widths::keys(4), None),
        (1 << 10, 1, Widths::keys(4), Some(8)),
    ] {
        let launches = plan::plan(&H200, n, rows, widths, 0, cap);
        assert!(launches.iter().all(|l| l.kernel == plan::PassKernel::Tile));
    }
    // Below 2^13 keys eight warps; exactly 2^13 on a cluster where the device has them.
    let no_clusters = DeviceLimits {
        clusters: false,
        ..H200
    };
    for (n, limits, block) in [
        ((1 << 12) + 1, H200, 256),
        ((1 << 13) - 1, H200, 256),
        (1 << 13, no_clusters, 256),
        ((1 << 10) + 1, no_clusters, 64),
    ] {
        let l = plan::plan(&limits, n, 1, Widths::keys(4), 0, None)[0];
        assert_eq!(
            (l.kernel, l.block, l.shared_bytes),
            (
                plan::PassKernel::Warp,
                block,
                4 << crate::schedule::ceil_log2(n)
            ),
            "{n}"
        );
    }
    // u64 keys have no cluster kernel; 2^13 + 1 rounds up.
    let wide = plan::plan(&H200, 1 << 14, 1, Widths::keys(8), 0, None);
    assert!(wide.iter().all(|l| l.kernel == plan::PassKernel::Tile));
    let odd = plan::plan(&H200, (1 << 13) + 1, 1, Widths::keys(4), 0, None);
    assert_eq!((odd.len(), odd[0].args.tile_bits), (1, 14));
    // Without clusters, 2^14 fits one tile but sorts faster as tiles of 2^11: a local sort,
    // then stages 12..=14 (each stage's tail fused into the next stage's first pass).
    let launches = plan::plan(&no_clusters, 1 << 14, 1, Widths::keys(4), 0, None);
    assert_eq!(launches[0].args.tile_bits, 11);
    assert_eq!(launches.len(), 5);
    for limits in [no_clusters, H200] {
        // Past one cluster's tile, single blocks.
        let large = plan::plan(&limits, (1 << 16) + 1, 1, Widths::keys(4), 0, None);
        assert!(large.len() > 1 && large.iter().all(|l| l.kernel == plan::PassKernel::Tile));
        // 2^20: tiles of 2^13 give every multiprocessor one; 15 launches unfused.
        let launches = plan::plan(&limits, 1 << 20, 1, Widths::keys(4), 0, None);
        assert_eq!(launches[0].args.tile_bits, 13);
        assert_eq!(launches.len(), 12);
        // 2^28 u32 keys: tiles of 2^14 (two blocks per multiprocessor), ten levels per
        // global pass; 1 + 10 * 2 + 4 * 3 = 33 launches unfused. u32 key-value pairs:
        // tiles of 2^13, two blocks; u64 keys: tiles of 2^14, one block.
        let launches = plan::plan(&limits, 1 << 28, 1, Widths::keys(4), 0, None);
        assert_eq!(launches[0].args.tile_bits, 14);
        assert_eq!(launches.len(), 26);
        let pairs = plan::plan(&limits, 1 << 28, 1, Widths { key: 4, value: 4 }, 0, None);
        assert_eq!(pairs[0].args.tile_bits, 13);
        let launches = plan::plan(&limits, 1 << 28, 1, Widths::keys(8), 0, None);
        assert_eq!(launches[0].args.tile_bits, 14);
        for l in launches.iter().chain(&pairs) {
            assert!(l.block >= 32 && l.block <= plan::MAX_THREADS);
            assert!(l.shared_bytes <= H200.shared_bytes_per_block);
            assert!(l.args.tile_bits <= 15 && l.kernel != plan::PassKernel::Cluster);
        }
    }
    // Rows that fit a tile are one launch of one tile per row.
    let rows = plan::plan(&H200, 1024, 16384, Widths::keys(4), 0, None);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].grid, 16384);
}

#[test]
fn grids_are_clamped() {
    let limits = DeviceLimits {
        max_grid_x: 65535,
        ..H200
    };
    let launches = plan::plan(&limits, 1 << 33, 1, Widths::keys(4), 0, None);
    assert!(launches.iter().all(|l| l.grid <= 65535 && l.grid >= 1));
}

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

/// A small deterministic generator.
pub(super) fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s ^ (s >> 29)
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
/// pairs the same tile sort and a stable merge), values included. Ignored by default, so that a machine without CUDA reports it as not run;
/// `scripts/gpu-check.sh` runs it.
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
    // A length mismatch is refused without touching anything.
    let mut k = vec![3u32, 1, 2];
    let mut v = vec![0u32; 2];
    let e = gpu.sort_words(
        WordsMut::U32(&mut k),
        Some(WordsMut::U32(&mut v)),
        KeyEncoding {
            kind: KeyKind::Unsigned,
            descending: false,
        },
    );
    assert!(matches!(e, Err(Error::LengthMismatch { .. })));
    assert_eq!(k, [3, 1, 2]);
}

mod kernel_model;

#[test]
fn kernel_model_sorts_every_plan() {
    let limits = DeviceLimits {
        shared_bytes_per_block: 48 * 1024,
        max_grid_x: 65535,
        multiprocessors: 4,
        clusters: true,
    };
    let mut next = lcg(7);
    for cap in [3u32, 6, 9, 13] {
        // 4097..=65536 in one row are cluster sorts.
        let lengths = (0..=70u64).chain([
            127, 128, 129, 1000, 1023, 1024, 1025, 4097, 20_000, 32_768, 40_000, 65_536, 65_537,
        ]);
        for row_len in lengths {
            for rows in [1u64, 3] {
                let n = (row_len * rows) as usize;
                let mut keys: Vec<u32> = (0..n).map(|_| (next() % 1000) as u32).collect();
                let mut expect = keys.clone();
                for row in expect.chunks_mut(row_len.max(1) as usize) {
                    row.sort_unstable();
                }
                if row_len >= 2 {
                    let launches =
                        plan::plan(&limits, row_len, rows, Widths::keys(4), 0, Some(cap));
                    kernel_model::execute(&launches, &mut keys);
                }
                assert_eq!(keys, expect, "row_len {row_len} rows {rows} cap {cap}");
            }
        }
    }
}

#[test]
fn merge_path_plans() {
    let all = [(4, 0), (4, 4), (4, 8), (8, 0), (8, 4), (8, 8)];
    for (key, value) in all {
        let widths = Widths { key, value };
        for log_n in [14u32, 15, 20, 24, 28, 32] {
            for n in [(1u64 << log_n) - 1, 1 << log_n, (1 << log_n) + 1] {
                let pair_tile = crate::schedule::merge_path::pair_sort_tile(n, widths.element());
                if value > 0 && pair_tile.is_none() {
                    // Pairs below 8 MiB keep the network on every backend.
                    assert!(plan::merge_path_plan(&H200, n, widths, 5).is_none());
                    continue;
                }
                let Some(p) = plan::merge_path_plan(&H200, n, widths, 5) else {
                    panic!("{widths:?} n {n}: no merge-path plan");
                };
                if value > 0 {
                    assert_eq!(
                        Some(p.tile_sort.args.tile_bits),
                        pair_tile,
                        "{widths:?} n {n}"
                    );
                } else if n == (1 << 24) + 1 {
                    // An odd power of two: `u32` keys sort tiles of 2^15 with one block a
                    // multiprocessor, `u64` keys 2^13.
                    let tile = if key == 4 { 15 } else { 13 };
                    assert_eq!(p.tile_sort.args.tile_bits, tile, "{widths:?}");
                    let bytes = plan::padded_words(tile) * key;
                    assert!(bytes <= u64::from(H200.shared_bytes_per_block));
                }
                // Encode in the tile sort, decode in the last merge, an even number of merges.
                assert_eq!(p.tile_sort.args.transform, plan::ENCODE_ON_LOAD);
                assert_eq!(p.tile_sort.args.mode, plan::MODE_SORT);
                assert_eq!(p.merges.len() % 2, 0, "{widths:?} n {n}");
                let last = p.merges.last().expect("merges");
                assert_eq!(last.args.transform, plan::DECODE_ON_STORE);
                let sort_tile = p.tile_sort.args.tile_bits;
                let mut log_run = sort_tile;
                for m in &p.merges {
                    assert_eq!(m.args.log_run, log_run);
                    assert!(m.args.tile_bits <= log_run + 1, "a block spans two pairs");
                    let e = plan::merge_log_e(widths.element());
                    assert_eq!(m.block, 1 << (m.args.tile_bits - e));
                    assert!(m.block <= plan::MERGE_THREADS);
                    assert!(
                        (m.shared_bytes + 1024) * plan::MERGE_BLOCKS_PER_SM
                            <= H200.shared_bytes_per_block + 1024
                    );
                    let tiles = n.div_ceil(1 << m.args.tile_bits);
                    assert!(tiles <= p.splits);
                    // Blocks loop over tiles: every block has one, and the grid is what
                    // the multiprocessors hold at once (MERGE_BLOCKS_PER_SM blocks of
                    // MERGE_THREADS threads each).
                    let resident = u64::from(
                        H200.multiprocessors * plan::MERGE_BLOCKS_PER_SM * plan::MERGE_THREADS
                            / m.block,
                    );
                    assert_eq!(u64::from(m.grid), tiles.min(resident));
                    // Passes of no more tiles than blocks search in the merge kernel.
                    assert_eq!(
                        m.search,
                        tiles <= resident * plan::SEARCH_MAX_ROUNDS,
                        "{widths:?} n {n}"
                    );
                    // The splitter's launch shape says how it searches: a warp per tile for
                    // passes of few tiles, a thread per tile otherwise.
                    let split_threads = u64::from(m.split_grid) * u64::from(m.split_block);
                    if tiles <= plan::WARP_SPLIT_MAX_TILES {
                        assert!(split_threads >= tiles * 32);
                    } else {
                        assert!(split_threads >= tiles && split_threads < tiles * 32);
                    }
                    log_run += 1;
                }
                assert!(1u64 << log_run >= n, "the last run holds everything");
            }
        }
    }
    // Single tiles, cluster sorts, rows of one tile and the oblivious mode keep the network.
    let keys = Widths::keys(4);
    assert!(plan::merge_path_plan(&H200, 1 << 13, keys, 0).is_none());
    let network = |p: SortPlan| matches!(p, SortPlan::Network(_));
    assert!(network(plan::choose(&H200, 1 << 16, 1, keys, 0, false)));
    assert!(!network(plan::choose(&H200, 1 << 17, 1, keys, 0, false)));
    assert!(network(plan::choose(&H200, 1 << 17, 1, keys, 0, true)));
    assert!(network(plan::choose(&H200, 1 << 14, 4, keys, 0, false)));
    assert!(network(plan::choose(&H200, 1 << 17, 4, keys, 0, true)));
    // Longer rows of keys alone are merged each on its own: every pass covers every row.
    for (rows, row_len) in [(4u64, 1u64 << 17), (3, 20_003), (2, (1 << 24) + 1)] {
        let SortPlan::MergePath(p) = plan::choose(&H200, row_len, rows, keys, 5, false) else {
            panic!("{rows} x {row_len}: the network");
        };
        assert_eq!(p.tile_sort.args.rows, rows);
        assert_eq!(p.tile_sort.args.row_len, row_len);
        assert_eq!(p.merges.len() % 2, 0);
        for m in &p.merges {
            assert_eq!((m.args.n, m.args.rows), (row_len, rows));
            assert!(row_len.div_ceil(1 << m.args.tile_bits) * rows <= p.splits);
        }
        assert!(1u64 << (p.merges.last().map_or(0, |m| m.args.log_run) + 1) >= row_len);
    }
    assert!(network(plan::choose(
        &H200,
        1 << 17,
        4,
        Widths { key: 4, value: 4 },
        0,
        false
    )));
    // Pairs take it past 8 MiB, the same on every device.
    let pairs = Widths { key: 4, value: 4 };
    assert!(network(plan::choose(&H200, 1 << 20, 1, pairs, 0, false)));
    assert!(!network(plan::choose(
        &H200,
        (1 << 20) + 1,
        1,
        pairs,
        0,
        false
    )));
    assert!(network(plan::choose(
        &H200,
        (1 << 20) + 1,
        1,
        pairs,
        0,
        true
    )));
    assert!(network(plan::choose(
        &H200,
        (1 << 20) + 1,
        2,
        pairs,
        0,
        false
    )));
}

/// The merge kernels of every key and value width, run directly (sorts choose them for keys
/// alone): keys with their positions as values come out sorted, and the merges keep the
/// order that the tile sort gave equal keys (they are stable), so the result is the tile
/// sort's network on each tile, then a stable sort by key.
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
            let mut plan =
                plan::tiled_merge_path_plan(&gpu.limits, (n as u64, 1), sort_tile, widths, 0)
                    .expect("a merge-path plan");
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
        let plan = plan::merge_path_plan(&gpu.limits, n as u64, widths, 0).expect("merge plan");
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

#[test]
fn chunks_sorted_while_uploading_are_planned_as_the_whole_sort() {
    let widths = Widths::keys(4);
    let n = 9_437_187u64;
    let SortPlan::MergePath(whole) = plan::choose(&H200, n, 1, widths, 5, false) else {
        panic!("merge path expected for {n} keys");
    };
    let sort_tile = whole.tile_sort.args.tile_bits;
    let log_chunk = crate::schedule::merge_path::upload_chunk(n, 4, sort_tile).expect("chunks");
    let mut next = lcg(3);
    for m in [1u64, 2, 5, 100, 1 << (sort_tile - 1)]
        .into_iter()
        .chain([(1 << sort_tile) - 1, 1 << sort_tile, (1 << sort_tile) + 1])
        .chain([3 << sort_tile, 1 << log_chunk])
    {
        let part = plan::chunk_plan(&H200, m, sort_tile, log_chunk, widths, 5);
        let t = part.tile_sort;
        assert_eq!(t.args.transform, plan::ENCODE_ON_LOAD, "m = {m}");
        assert_eq!(t.args.encoding, 5);
        // The same merges as the whole sort below the chunk, on the chunk, none decoding.
        assert_eq!(part.merges.len() as u32, log_chunk - sort_tile, "m = {m}");
        for (p, w) in part.merges.iter().zip(&whole.merges) {
            assert_eq!(p.args.n, m);
            assert_eq!(
                (p.args.log_run, p.args.tile_bits, p.block, p.shared_bytes),
                (w.args.log_run, w.args.tile_bits, w.block, w.shared_bytes)
            );
            assert_eq!(p.args.transform, 0);
        }
        assert!(part.splits <= whole.splits);
        // Every tile of the chunk is sorted, a chunk shorter than a tile included.
        if m <= 1 << 15 {
            let mut keys: Vec<u32> = (0..m).map(|_| next() as u32).collect();
            let mut expect = keys.clone();
            for tile in expect.chunks_mut(1 << sort_tile) {
                tile.sort_unstable();
            }
            kernel_model::execute(&[t], &mut keys);
            assert_eq!(keys, expect, "m = {m}");
        }
    }
}
