//! Tests of the network's launches: tile sizes from the shared memory, one-launch sorts
//! (warps and clusters), grids, and the kernel model sorting every plan.

use super::*;

#[test]
fn tiles_fill_the_opt_in_shared_memory() {
    let widths = |key: u64, value: u64| Widths { key, value };
    let tile = |w: Widths| plan::max_log_tile(&LARGE_GPU, w, None);
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
        ..LARGE_GPU
    };
    assert_eq!(plan::max_log_tile(&small, Widths::keys(4), None), 12);
    assert_eq!(plan::max_log_tile(&small, widths(8, 8), None), 11);
    assert_eq!(
        plan::max_log_tile(&LARGE_GPU, Widths::keys(4), Some(12)),
        12
    );
    // Absurd limits still give a tile of two.
    let tiny = DeviceLimits {
        shared_bytes_per_block: 3,
        ..LARGE_GPU
    };
    assert_eq!(plan::max_log_tile(&tiny, widths(8, 8), None), 1);
}

#[test]
fn small_sorts_are_one_launch_and_large_ones_spread_over_the_device() {
    // u32 keys alone below 2^13 one block of warps; others up to 2^12 one block; 2^13..=2^16
    // one cluster of eight blocks, each a slice of 2^-3.
    for log_n in 1..=16 {
        for widths in [Widths::keys(4), Widths { key: 4, value: 4 }] {
            let launches = plan::plan(&LARGE_GPU, 1 << log_n, 1, widths, 0, None);
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
            } else if log_n >= plan::POLICY.min_cluster_log {
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
        let launches = plan::plan(&LARGE_GPU, n, rows, widths, 0, cap);
        assert!(launches.iter().all(|l| l.kernel == plan::PassKernel::Tile));
    }
    // Below 2^13 keys eight warps; exactly 2^13 on a cluster where the device has them.
    let no_clusters = DeviceLimits {
        clusters: false,
        ..LARGE_GPU
    };
    for (n, limits, block) in [
        ((1 << 12) + 1, LARGE_GPU, 256),
        ((1 << 13) - 1, LARGE_GPU, 256),
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
    let wide = plan::plan(&LARGE_GPU, 1 << 14, 1, Widths::keys(8), 0, None);
    assert!(wide.iter().all(|l| l.kernel == plan::PassKernel::Tile));
    let odd = plan::plan(&LARGE_GPU, (1 << 13) + 1, 1, Widths::keys(4), 0, None);
    assert_eq!((odd.len(), odd[0].args.tile_bits), (1, 14));
    // Without clusters, 2^14 fits one tile but sorts faster as tiles of 2^11: a local sort,
    // then stages 12..=14 (each stage's tail fused into the next stage's first pass).
    let launches = plan::plan(&no_clusters, 1 << 14, 1, Widths::keys(4), 0, None);
    assert_eq!(launches[0].args.tile_bits, 11);
    assert_eq!(launches.len(), 5);
    for limits in [no_clusters, LARGE_GPU] {
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
            assert!(l.shared_bytes <= LARGE_GPU.shared_bytes_per_block);
            assert!(l.args.tile_bits <= 15 && l.kernel != plan::PassKernel::Cluster);
        }
    }
    // Rows that fit a tile are one launch of one tile per row.
    let rows = plan::plan(&LARGE_GPU, 1024, 16384, Widths::keys(4), 0, None);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].grid, 16384);
}

#[test]
fn grids_are_clamped() {
    let limits = DeviceLimits {
        max_grid_x: 65535,
        ..LARGE_GPU
    };
    let launches = plan::plan(&limits, 1 << 33, 1, Widths::keys(4), 0, None);
    assert!(launches.iter().all(|l| l.grid <= 65535 && l.grid >= 1));
}

#[test]
fn kernel_model_sorts_every_plan() {
    let limits = DeviceLimits {
        shared_bytes_per_block: 48 * 1024,
        max_grid_x: 65535,
        multiprocessors: 4,
        clusters: true,
        counting_from: plan::COUNTING_FROM,
        radix_from: None,
        radix_delay: 0,
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

/// One row of 16-bit keys alone from `COUNTING_FROM` keys takes the counting sort, with the
/// window of counters the opt-in shared memory holds (2^15 of 227 KiB, 2^13 of 48 KiB) and a
/// block per 2^16 keys up to one per multiprocessor; pairs, rows, shorter rows, wider keys
/// and the oblivious mode keep their plans.
#[test]
fn sixteen_bit_keys_alone_are_counted() {
    use plan::COUNTING_FROM;
    let keys16 = Widths::keys(2);
    let counted = |limits: &DeviceLimits, n: u64| match plan::choose(limits, n, 1, keys16, 0, false)
    {
        SortPlan::Counting(c) => Some(c),
        _ => None,
    };
    let c = counted(&LARGE_GPU, COUNTING_FROM).expect("counted");
    assert_eq!((c.plan.window_log, c.count_shared_bytes()), (15, 128 << 10));
    assert_eq!(c.plan.blocks, COUNTING_FROM >> 16);
    let c = counted(&LARGE_GPU, 1 << 28).expect("counted");
    assert_eq!(c.plan.blocks, 132);
    let small = DeviceLimits {
        shared_bytes_per_block: 48 * 1024,
        ..LARGE_GPU
    };
    assert_eq!(
        counted(&small, 1 << 24).expect("counted").plan.window_log,
        13
    );
    assert!(counted(&LARGE_GPU, COUNTING_FROM - 1).is_none());
    let other = |n: u64, rows: u64, widths: Widths, oblivious: bool| {
        !matches!(
            plan::choose(&LARGE_GPU, n, rows, widths, 0, oblivious),
            SortPlan::Counting(_)
        )
    };
    let pairs16 = Widths { key: 2, value: 4 };
    assert!(other(COUNTING_FROM, 1, pairs16, false));
    assert!(other(COUNTING_FROM, 2, keys16, false));
    assert!(other(COUNTING_FROM, 1, Widths::keys(4), false));
    assert!(other(COUNTING_FROM, 1, keys16, true));
}
