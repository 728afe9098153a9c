//! Tests of the neutral plan: which sorts take merge path on what facts, and the passes a
//! merge-path sort and its chunks take.

use super::*;
use crate::schedule::POLICY;
use crate::schedule::counting::COUNTING_FROM;
use crate::schedule::merge_path::upload_chunk;

/// A large GPU without thresholds of its own: 132 compute units, network tiles of 2^14,
/// tile sorts of keys alone up to 2^15, merge tiles of 2^12.
fn gpu() -> DeviceFacts {
    DeviceFacts {
        max_log_tile: 14,
        max_log_sort_tile: 15,
        compute_units: 132,
        merge_kernels: true,
        merge_log_tile: 12,
        min_log_merge_bytes: 0,
        max_merge_rows: u64::MAX,
        whole_row_logs: None,
        count_window_log: None,
        counting_from: COUNTING_FROM,
        radix: None,
    }
}

const ALL: [Widths; 6] = [
    Widths { key: 4, value: 0 },
    Widths { key: 4, value: 4 },
    Widths { key: 4, value: 8 },
    Widths { key: 8, value: 0 },
    Widths { key: 8, value: 4 },
    Widths { key: 8, value: 8 },
];

/// Checks the passes of `p`, a whole sort's plan of `rows` rows of `n`: runs from the tile
/// sort's tile up, doubling each pass, an even number of them so that the result ends in the
/// data, tiles inside one pair of runs, only the last decoding, and the longest run holding
/// a whole row.
fn check_whole(p: &MergePathPlan, n: u64, rows: u64, merge_log_tile: u32) {
    assert_eq!((p.row_len, p.rows), (n, rows));
    assert!(
        !p.passes.is_empty() && p.passes.len().is_multiple_of(2),
        "{p:?}"
    );
    for (i, pass) in p.passes.iter().enumerate() {
        assert_eq!(pass.log_run, p.sort_tile + i as u32, "{p:?}");
        assert_eq!(pass.tile_bits, merge_log_tile.min(pass.log_run + 1));
        assert_eq!(pass.tiles, n.div_ceil(1 << pass.tile_bits));
        assert_eq!(pass.last, i + 1 == p.passes.len());
    }
    let top = p.passes.last().expect("passes").log_run + 1;
    assert!(1u64 << top >= n && 1u64 << (top - 1) < n, "n {n}");
    let most = p.passes.iter().map(|q| q.tiles * rows).max();
    assert_eq!(Some(p.splits()), most);
    assert_eq!(p.tile_sort_log_row(), ceil_log2(n).max(p.sort_tile));
}

#[test]
fn merge_path_plans_alternate_and_end_in_the_data() {
    let facts = gpu();
    for widths in ALL {
        for log_n in [14u32, 15, 20, 24, 28, 32] {
            for n in [(1u64 << log_n) - 1, 1 << log_n, (1 << log_n) + 1] {
                let pair_tile = pair_sort_tile(n, widths.element());
                let Some(p) = merge_path_plan(&facts, n, widths) else {
                    // Pairs below their threshold keep the network on every backend.
                    assert!(widths.value > 0 && pair_tile.is_none(), "{widths:?} n {n}");
                    continue;
                };
                if widths.value > 0 {
                    assert_eq!(Some(p.sort_tile), pair_tile, "{widths:?} n {n}");
                } else {
                    let tile = choose_sort_tile(n, 15, 132);
                    assert_eq!(Some(p.sort_tile), tile, "{widths:?} n {n}");
                }
                check_whole(&p, n, 1, facts.merge_log_tile);
            }
        }
    }
}

#[test]
fn thresholds_of_merge_path() {
    let facts = gpu();
    let keys = Widths::keys(4);
    let pairs = Widths { key: 4, value: 4 };
    // Keys alone of one tile that is sorted in one launch keep the network.
    let single = 1u64 << POLICY.max_log_single_tile;
    assert!(merge_path_plan(&facts, single, keys).is_none());
    assert!(merge_path_plan(&facts, single + 1, keys).is_some());
    // A device's threshold for keys alone: more than 128 KiB.
    let threshold = DeviceFacts {
        min_log_merge_bytes: 18,
        ..gpu()
    };
    assert!(merge_path_plan(&threshold, 1 << 15, keys).is_none());
    assert!(merge_path_plan(&threshold, (1 << 15) + 1, keys).is_some());
    assert!(merge_path_plan(&threshold, 1 << 14, Widths::keys(8)).is_none());
    assert!(merge_path_plan(&threshold, (1 << 14) + 1, Widths::keys(8)).is_some());
    // Pairs follow the one rule of every device, whatever the device's own threshold,
    // unless the device cannot hold their tile.
    let pair_first = (1u64 << (POLICY.pair_min_log_merge_bytes - 1)) / 8 + 1;
    for f in [gpu(), threshold.clone()] {
        assert!(merge_path_plan(&f, pair_first - 1, pairs).is_none());
        assert!(merge_path_plan(&f, pair_first, pairs).is_some());
    }
    let small = DeviceFacts {
        max_log_tile: 10,
        ..gpu()
    };
    assert!(merge_path_plan(&small, 1 << 28, pairs).is_none());
    // Devices whose tiles are small keep the network for keys too.
    let tiny = DeviceFacts {
        max_log_sort_tile: POLICY.min_log_sort_tile,
        ..gpu()
    };
    assert!(merge_path_plan(&tiny, 1 << 20, keys).is_none());
    // No merge kernels, or merge tiles too small for a block of one warp.
    let no_merge = DeviceFacts {
        merge_kernels: false,
        ..gpu()
    };
    let narrow = DeviceFacts {
        merge_log_tile: crate::kernel_contract::merge_log_e(8) + 4,
        ..gpu()
    };
    for f in [no_merge, narrow] {
        assert!(merge_path_plan(&f, 1 << 22, keys).is_none());
        assert!(merge_path_plan(&f, 1 << 22, pairs).is_none());
        assert!(rows_merge_path_plan(&f, 1 << 20, 2, keys).is_none());
    }
}

#[test]
fn rows_longer_than_a_tile_are_merged_each_on_its_own() {
    let facts = gpu();
    let keys = Widths::keys(4);
    // Rows that fit a tile, and rows of pairs, keep the network.
    assert!(rows_merge_path_plan(&facts, 1 << 14, 4, keys).is_none());
    assert!(rows_merge_path_plan(&facts, 1 << 20, 4, Widths { key: 4, value: 4 }).is_none());
    for (rows, row_len) in [(4u64, 1u64 << 17), (3, 20_003), (2, (1 << 24) + 1)] {
        let p = rows_merge_path_plan(&facts, row_len, rows, keys).expect("merge path");
        assert_eq!(
            Some(p.sort_tile),
            choose_rows_sort_tile(rows, row_len, 14, 132)
        );
        check_whole(&p, row_len, rows, facts.merge_log_tile);
    }
    // A device's limit on the rows.
    let three = DeviceFacts {
        max_merge_rows: 3,
        ..gpu()
    };
    assert!(rows_merge_path_plan(&three, 20_001, 3, keys).is_some());
    assert!(rows_merge_path_plan(&three, 20_001, 4, keys).is_none());
}

#[test]
fn choose_takes_merge_path_unless_oblivious_or_one_launch() {
    let keys = Widths::keys(4);
    let pairs = Widths { key: 4, value: 4 };
    // A device that sorts rows of 2^13 ..= 2^16 whole in one launch.
    let whole = DeviceFacts {
        whole_row_logs: Some(13..=16),
        ..gpu()
    };
    let network = |p: SortPlan| match p {
        SortPlan::Network { log_tile } => Some(log_tile),
        SortPlan::MergePath(_) | SortPlan::Counting(_) | SortPlan::Radix(_) => None,
    };
    assert_eq!(network(choose(&whole, 1 << 16, 1, keys, false)), Some(16));
    assert_eq!(network(choose(&whole, 40_000, 1, keys, false)), Some(16));
    assert_eq!(network(choose(&gpu(), 1 << 16, 1, keys, false)), None);
    assert_eq!(network(choose(&whole, 1 << 17, 1, keys, false)), None);
    // The oblivious mode takes the network with the device's tile.
    for (n, rows, widths) in [
        (1u64 << 17, 1u64, keys),
        (1 << 22, 1, pairs),
        (1 << 20, 2, keys),
    ] {
        let tile = network(choose(&whole, n, rows, widths, true));
        assert_eq!(tile, Some(network_tile(&whole, n, rows)), "{n} x {rows}");
        assert_eq!(network(choose(&whole, n, rows, widths, false)), None);
    }
    // Pairs skip the whole-row test: their choice depends on the length alone.
    let pair_first = (1u64 << (POLICY.pair_min_log_merge_bytes - 1)) / 8 + 1;
    let every_row = DeviceFacts {
        whole_row_logs: Some(0..=40),
        ..gpu()
    };
    assert_eq!(
        network(choose(&every_row, pair_first, 1, pairs, false)),
        None
    );
    assert!(network(choose(&every_row, pair_first - 1, 1, pairs, false)).is_some());
    // Rows of pairs keep the network.
    assert!(network(choose(&gpu(), pair_first, 2, pairs, false)).is_some());
}

#[test]
fn network_tiles_are_whole_rows_or_the_devices_choice() {
    let whole = DeviceFacts {
        whole_row_logs: Some(13..=16),
        ..gpu()
    };
    for (n, rows) in [
        (1u64 << 12, 1u64),
        (5000, 1),
        (1 << 16, 1),
        (1 << 17, 1),
        (1 << 14, 2),
    ] {
        let want = if rows == 1 && (13..=16).contains(&ceil_log2(n)) {
            ceil_log2(n)
        } else {
            choose_log_tile(rows, ceil_log2(n), 14, 132)
        };
        assert_eq!(network_tile(&whole, n, rows), want, "{n} x {rows}");
    }
}

#[test]
fn chunks_sorted_while_uploading_take_the_whole_sorts_first_passes() {
    let facts = gpu();
    for (widths, n) in [
        (Widths::keys(4), 9_437_187u64),
        (Widths { key: 4, value: 4 }, 1 << 24),
    ] {
        let whole = merge_path_plan(&facts, n, widths).expect("merge path");
        let (sort_tile, bytes) = (whole.sort_tile, widths.element());
        let log_chunk = upload_chunk(n, bytes, sort_tile).expect("chunks");
        for m in [1u64, 2, 5, 100, 1 << (sort_tile - 1)]
            .into_iter()
            .chain([(1 << sort_tile) - 1, 1 << sort_tile, (1 << sort_tile) + 1])
            .chain([3 << sort_tile, 1 << log_chunk, n % (1 << log_chunk)])
        {
            let part = chunk_plan(&facts, m, sort_tile, log_chunk);
            assert_eq!((part.row_len, part.rows, part.sort_tile), (m, 1, sort_tile));
            // A chunk shorter than a tile still has its tile sorted.
            assert!(part.tile_sort_log_row() >= sort_tile);
            // The same passes as the whole sort below the chunk, on the chunk, none last.
            assert_eq!(part.passes.len() as u32, log_chunk - sort_tile, "m = {m}");
            for (p, w) in part.passes.iter().zip(&whole.passes) {
                assert_eq!((p.log_run, p.tile_bits), (w.log_run, w.tile_bits));
                assert_eq!(p.tiles, m.div_ceil(1 << p.tile_bits));
                assert!(!p.last);
            }
            assert!(part.splits() <= whole.splits());
        }
    }
}

/// One row of 16-bit keys alone takes the counting sort from the backend's threshold on,
/// where the backend has its kernels; rows, pairs, the oblivious mode and shorter rows do not.
#[test]
fn counting_sort_of_sixteen_bit_keys() {
    let counting = DeviceFacts {
        count_window_log: Some(15),
        ..gpu()
    };
    let keys = Widths { key: 4, value: 0 };
    let n = COUNTING_FROM;
    match choose(&counting, n, 1, keys, false) {
        SortPlan::Counting(p) => assert_eq!(p, CountingPlan::new(n, 132, 15)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        choose(&counting, n - 1, 1, keys, false),
        SortPlan::MergePath(_)
    ));
    assert!(matches!(
        choose(&counting, n, 2, keys, false),
        SortPlan::MergePath(_)
    ));
    assert!(matches!(
        choose(&counting, n, 1, keys, true),
        SortPlan::Network { .. }
    ));
    assert!(matches!(
        choose(&gpu(), n, 1, keys, false),
        SortPlan::MergePath(_)
    ));
    let low = DeviceFacts {
        counting_from: 2,
        ..counting
    };
    assert!(matches!(
        choose(&low, 2, 1, keys, false),
        SortPlan::Counting(_)
    ));
}
