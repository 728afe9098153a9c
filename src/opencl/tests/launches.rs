//! Tests of the network's and merge path's launches on OpenCL: tiles from the local memory,
//! launches that cover the data, fused tails on the tile kernel, work-group sizes and
//! local memory of every merge pass, and the device type's thresholds for merge path.

use crate::opencl::plan::*;
use crate::schedule::{Pass, Schedule};

/// The limits of NVIDIA's OpenCL on a GPU of 132 compute units and 48 KiB of local memory.
fn nvidia_limits() -> Limits {
    Limits {
        local_mem: 49152,
        compute_units: 132,
        tile_group: 1024,
        global_group: 1024,
        merge_group: 1024,
        min_log_merge_bytes: POLICY.gpu_min_log_merge_bytes,
        max_merge_rows: POLICY.gpu_max_merge_rows,
        count_group: 0,
        max_count_window_log: 16,
        counting_from: COUNTING_FROM,
        radix_group: 0,
        radix_keys_per_thread: 0,
        radix_from: POLICY.radix_from,
        log_e: LOG_E,
        max_log_tile: MAX_LOG_TILE,
        uniform_groups: false,
        own_split_max_tiles: POLICY.own_split_max_tiles,
    }
}

fn nvidia(element_bytes: u64) -> u32 {
    max_log_tile(&nvidia_limits(), element_bytes)
}

#[test]
fn tiles_fit_48_kib_of_local_memory() {
    // (2^S + 2^(S-5)) * bytes <= 48128.
    assert_eq!(nvidia(4), 13);
    assert_eq!(nvidia(8), 12);
    assert_eq!(nvidia(12), 11);
    assert_eq!(nvidia(16), 11);
    for bytes in [4, 8, 12, 16] {
        assert!(padded_words(nvidia(bytes)) * bytes <= 49152 - LOCAL_MEM_MARGIN);
    }
}

#[test]
fn global_tiles_fit_the_local_tile() {
    for log_tile in 1..=MAX_LOG_TILE {
        let p = tile_params(log_tile);
        assert!(p.max_global_levels >= 1);
        assert!(log_cols(log_tile) + p.max_global_levels <= log_tile.max(2));
    }
}

#[test]
fn launches_cover_the_data() {
    let limits = nvidia_limits();
    for (row_len, rows) in [(1u64 << 20, 1u64), ((1 << 20) + 1, 1), (1000, 7), (3, 5)] {
        let shape = Shape::new(row_len, rows);
        for launch in plan(&limits, shape, (4, 0)) {
            assert!(launch.local >= 1 && launch.local <= MAX_TILE_GROUP);
            assert!(launch.local_words * 4 <= 48128, "{launch:?}");
            match launch.kind {
                Kind::Tile {
                    tiles, log_local, ..
                } => {
                    assert!(tiles << log_local >= row_len, "{launch:?}");
                }
                Kind::Global { groups, m, .. } => {
                    assert!(groups << m >= row_len, "{launch:?}");
                }
            }
        }
    }
}

#[test]
fn fused_tails_take_fewer_launches() {
    // NVIDIA's limits, u32 keys: tiles of 2^13 (2^5 columns, 8 global levels).
    let limits = nvidia_limits();
    // (log2 n, launches unfused, launches fused)
    for (l, unfused, fused) in [(20, 15, 12), (24, 26, 21)] {
        let shape = Shape::new(1 << l, 1);
        let Pass::LocalSort { log_tile } = schedule(&limits, shape, (4, 0)).passes[0] else {
            panic!("a sort starts with a local sort");
        };
        assert_eq!(log_tile, 13);
        let mut params = tile_params(log_tile);
        params.fuse_tails = false;
        assert_eq!(Schedule::new(1 << l, params).passes.len(), unfused, "2^{l}");
        let launches = plan(&limits, shape, (4, 0));
        assert_eq!(launches.len(), fused, "2^{l}");
        let mut tails = 0;
        for launch in &launches {
            if let Kind::Tile {
                mode,
                log_local,
                c,
                m,
                flip,
                tail,
                ..
            } = launch.kind
                && tail > 0
            {
                // On the tile kernel, each row holding whole runs of the tail.
                assert_eq!((mode, flip), (MODE_GLOBAL, 1), "{launch:?}");
                assert!(tail <= c && c + m == log_local, "{launch:?}");
                assert!(log_local <= log_tile, "{launch:?}");
                tails += 1;
            }
        }
        assert!(tails >= unfused - fused, "2^{l}: {tails} fused passes");
    }
}

/// The merge-path plan's launches of a sort of `shape`, where it takes merge path.
fn merge_path(limits: &Limits, shape: Shape, widths: (u64, u64)) -> Option<MergePathPlan> {
    match choose(limits, shape, widths.0, widths.1, false) {
        SortPlan::MergePath(p) => Some(p),
        SortPlan::Network(_) | SortPlan::Counting(_) | SortPlan::Radix(_) => None,
    }
}

/// Every merge pass's launches: the tile sort encodes, the last merge decodes, every output
/// of a tile has a work item, the local memory holds a work-group's keys and values, and
/// passes of few tiles find their tiles' parts in the merge kernel; on a GPU, whose
/// work-groups fit each pass, and on a CPU, whose work-groups are all one size.
#[test]
fn merge_path_launches_fit_the_device() {
    for uniform_groups in [false, true] {
        let limits = Limits {
            uniform_groups,
            ..nvidia_limits()
        };
        for (key_bytes, value_bytes) in [(4u64, 0u64), (8, 0), (4, 4), (4, 8), (8, 4), (8, 8)] {
            for n in [(1u64 << 21) + 1, 3_000_017, 1 << 24, (1 << 28) + 5] {
                let shape = Shape::new(n, 1);
                let Some(p) = merge_path(&limits, shape, (key_bytes, value_bytes)) else {
                    panic!("{key_bytes} + {value_bytes} bytes, n {n}: no merge-path plan");
                };
                let Kind::Tile {
                    log_net,
                    log_local,
                    tiles,
                    ..
                } = p.tile_sort.kind
                else {
                    panic!("the tile sort is a tile launch")
                };
                // Work-groups of the largest tile, each sorting tiles of the plan's.
                assert_eq!(p.tile_sort.transform, ENCODE_ON_LOAD);
                assert_eq!(log_local, max_log_tile(&limits, key_bytes + value_bytes));
                assert!(log_net <= log_local && tiles == n.div_ceil(1 << log_local));
                assert_eq!(p.merges[0].log_run, log_net);
                assert_eq!(p.shape, Shape::new(n, 1));
                let log_e = merge_log_e(key_bytes + value_bytes);
                for (i, m) in p.merges.iter().enumerate() {
                    let last = i + 1 == p.merges.len();
                    assert_eq!(m.transform, if last { DECODE_ON_STORE } else { 0 });
                    // Every output of a tile has a work item.
                    assert!((m.local as u64) << log_e >= 1 << m.tile_bits, "{m:?}");
                    if !uniform_groups {
                        assert_eq!((m.local as u64) << log_e, 1 << m.tile_bits, "{m:?}");
                    }
                    assert_eq!(m.tiles, n.div_ceil(1 << m.tile_bits));
                    // Few tiles: no splitter launch.
                    assert_eq!(
                        m.own_splits,
                        m.tiles <= limits.own_split_max_tiles && m.local >= 2,
                        "{m:?}"
                    );
                    assert!(
                        m.local_bytes + m.local_value_bytes <= limits.local_mem - LOCAL_MEM_MARGIN
                    );
                    assert_eq!(m.local_value_bytes, padded_words(m.tile_bits) * value_bytes);
                    assert!(m.split_groups >= 1 && m.split_local >= 1 && m.groups >= 1);
                    assert!(m.tiles <= p.splits);
                }
            }
        }
    }
}

/// How the device type's limits reach the choice: GPUs take merge path for keys alone
/// past their threshold and for at most `POLICY.gpu_max_merge_rows` rows, CPUs past one
/// tile and for any number of rows, both for pairs past the threshold of every backend;
/// programs without merge kernels never.
#[test]
fn device_types_set_the_thresholds() {
    let gpu = nvidia_limits();
    let cpu = Limits {
        min_log_merge_bytes: 0,
        max_merge_rows: u64::MAX,
        ..gpu
    };
    let merges = |limits: &Limits, rows: u64, row_len: u64, widths: (u64, u64)| {
        merge_path(limits, Shape::new(row_len, rows), widths).is_some()
    };
    // 2^18 bytes on a GPU: from 2^15 + 1 `u32` keys, 2^14 + 1 `u64` keys.
    assert!(!merges(&gpu, 1, 1 << 15, (4, 0)));
    assert!(merges(&gpu, 1, (1 << 15) + 1, (4, 0)));
    assert!(!merges(&gpu, 1, 1 << 14, (8, 0)));
    assert!(merges(&gpu, 1, (1 << 14) + 1, (8, 0)));
    // One tile of 2^13 on a CPU.
    assert!(!merges(&cpu, 1, 1 << 13, (4, 0)));
    assert!(merges(&cpu, 1, (1 << 13) + 1, (4, 0)));
    for limits in [gpu, cpu] {
        assert!(!merges(&limits, 1, 1 << 20, (4, 4)));
        assert!(merges(&limits, 1, (1 << 20) + 1, (4, 4)));
    }
    assert!(merges(&gpu, 3, 20_001, (4, 0)));
    assert!(!merges(&gpu, 4, 1 << 20, (4, 0)));
    assert!(merges(&cpu, 4, 1 << 20, (4, 0)));
    let p = merge_path(&gpu, Shape::new(20_001, 3), (4, 0)).expect("3 rows merge");
    assert_eq!((p.shape.row_len, p.shape.rows), (20_001, 3));
    for m in &p.merges {
        assert_eq!(m.tiles, 20_001u64.div_ceil(1 << m.tile_bits) * 3);
    }
    let no_merge = Limits {
        merge_group: 0,
        ..gpu
    };
    assert!(!merges(&no_merge, 1, 1 << 22, (4, 0)));
    assert!(!merges(&no_merge, 1, 1 << 22, (4, 4)));
}

/// The radix sort: keys of 4 and 8 bytes alone from the policy's crossover, and their pairs
/// past 8 MiB (`pairs_take_radix`), where the program has its kernels and they run
/// work-groups of a bin an item; shorter pairs, narrow keys, rows and programs without the
/// kernels never; launches sized by the compute units.
#[test]
fn radix_takes_long_rows_of_keys_alone() {
    use crate::schedule::radix::RADIX_MAX_LEN;
    let limits = Limits {
        radix_group: 1024,
        radix_keys_per_thread: 16,
        radix_from: [1 << 20; 2],
        ..nvidia_limits()
    };
    let radix = |limits: &Limits, row_len: u64, rows: u64, widths: (u64, u64)| match choose(
        limits,
        Shape::new(row_len, rows),
        widths.0,
        widths.1,
        false,
    ) {
        SortPlan::Radix(r) => Some(r),
        _ => None,
    };
    let from = limits.radix_from[0];
    // By default `u32` keys alone take it from 2^24 keys, `u64` keys alone never.
    let default = Limits {
        radix_from: POLICY.radix_from,
        ..limits
    };
    assert!(radix(&default, 1 << 24, 1, (4, 0)).is_some());
    assert!(radix(&default, (1 << 24) - 1, 1, (4, 0)).is_none());
    assert!(radix(&default, 1 << 28, 1, (8, 0)).is_none());
    for key_bytes in [4, 8] {
        let r = radix(&limits, from, 1, (key_bytes, 0)).expect("radix from the crossover");
        assert_eq!((r.plan.n, r.plan.keys_per_thread), (from, 16));
        assert_eq!(r.plan.digits, key_bytes as u32 * 8 / 8);
        assert_eq!(r.histogram_groups, (from / (256 * 16)) as usize);
        assert_eq!(r.copy_groups, 132 * 8);
        assert!(radix(&limits, from - 1, 1, (key_bytes, 0)).is_none());
        assert!(radix(&limits, from, 2, (key_bytes, 0)).is_none());
        // Pairs from 8 MiB on, whatever the crossover of keys alone: 2^20 pairs of 8 bytes
        // fill 8 MiB, of 12 bytes more.
        assert_eq!(
            radix(&limits, 1 << 20, 1, (key_bytes, 4)).is_some(),
            key_bytes == 8
        );
        let r = radix(&limits, (1 << 20) + 1, 1, (key_bytes, 4)).expect("radix for pairs");
        assert_eq!((r.plan.n, r.plan.digits), ((1 << 20) + 1, key_bytes as u32));
        assert!(radix(&limits, (1 << 20) + 1, 2, (key_bytes, 4)).is_none());
        assert!(radix(&limits, RADIX_MAX_LEN + 1, 1, (key_bytes, 8)).is_none());
        assert!(radix(&limits, 1 << 24, 1, (2, 4)).is_none());
    }
    let small = radix(
        &Limits {
            radix_from: [2; 2],
            ..limits
        },
        5000,
        1,
        (4, 0),
    )
    .expect("radix from two keys");
    assert_eq!((small.histogram_groups, small.copy_groups), (2, 20));
    assert!(radix(&nvidia_limits(), 1 << 24, 1, (4, 0)).is_none());
    let narrow_groups = Limits {
        radix_group: 128,
        ..limits
    };
    assert!(radix(&narrow_groups, 1 << 24, 1, (4, 0)).is_none());
}

/// Host slices of keys alone that merge path sorts chunk by chunk while they upload keep
/// merge path where the device-resident sort takes the radix sort; pairs and rows keep
/// `choose`'s plan.
#[test]
fn host_slices_sorting_while_uploading_keep_merge_path() {
    use super::super::plan::choose_for_upload;
    let limits = Limits {
        radix_group: 1024,
        radix_keys_per_thread: 16,
        ..nvidia_limits()
    };
    let n = 1u64 << 24;
    let one_row = Shape::new(n, 1);
    assert!(matches!(
        choose(&limits, one_row, 4, 0, false),
        SortPlan::Radix(_)
    ));
    assert!(matches!(
        choose_for_upload(&limits, one_row, 4, 0, false),
        SortPlan::MergePath(_)
    ));
    assert!(matches!(
        choose_for_upload(&limits, one_row, 4, 4, false),
        SortPlan::Radix(_)
    ));
    assert_eq!(
        choose_for_upload(&limits, Shape::new(n / 2, 2), 4, 0, false),
        choose(&limits, Shape::new(n / 2, 2), 4, 0, false)
    );
}
