//! Tests of the merge-path launches: block shapes, shared memory, grids and searches of
//! every pass, and the chunks of a sort that sorts while it uploads.

use super::*;
use crate::cuda::plan::{
    DECODE_ON_STORE, ENCODE_ON_LOAD, MERGE_BLOCKS_PER_SM, MERGE_THREADS, MODE_SORT, merge_log_e,
};

/// Every merge-path plan's launches: the tile sort encodes in place, the last merge decodes,
/// every block holds its tile in its share of shared memory, the grid is what the
/// multiprocessors hold at once, and the splitter's shape and the search in the merge
/// kernel follow the tiles of the pass.
#[test]
fn merge_path_launches_fit_the_device() {
    let all = [(4, 0), (4, 4), (4, 8), (8, 0), (8, 4), (8, 8)];
    for (key, value) in all {
        let widths = Widths { key, value };
        for log_n in [14u32, 15, 20, 24, 28, 32] {
            for n in [(1u64 << log_n) - 1, 1 << log_n, (1 << log_n) + 1] {
                let Some(p) = one_row_merge_path(&LARGE_GPU, n, widths, 5) else {
                    // Pairs below their threshold keep the network (the schedule's tests).
                    assert!(
                        value > 0 && n <= 1 << 20,
                        "{widths:?} n {n}: no merge-path plan"
                    );
                    continue;
                };
                if value == 0 && n == (1 << 24) + 1 {
                    // An odd power of two: `u32` keys sort tiles of 2^15 with one block a
                    // multiprocessor, `u64` keys 2^13.
                    let tile = if key == 4 { 15 } else { 13 };
                    assert_eq!(p.tile_sort.args.tile_bits, tile, "{widths:?}");
                    let bytes = plan::padded_words(tile) * key;
                    assert!(bytes <= u64::from(LARGE_GPU.shared_bytes_per_block));
                }
                // Encode in the tile sort, decode in the last merge.
                let t = p.tile_sort;
                assert_eq!((t.args.transform, t.args.mode), (ENCODE_ON_LOAD, MODE_SORT));
                assert_eq!((t.kernel, t.args.encoding), (PassKernel::Tile, 5));
                let last = p.merges.last().expect("merges");
                assert_eq!(last.args.transform, DECODE_ON_STORE);
                for m in &p.merges {
                    assert_eq!((m.args.n, m.args.rows, m.args.encoding), (n, 1, 5));
                    let e = merge_log_e(widths.element());
                    assert_eq!(m.block, 1 << (m.args.tile_bits - e));
                    assert!(m.block <= MERGE_THREADS);
                    assert!(
                        (m.shared_bytes + 1024) * MERGE_BLOCKS_PER_SM
                            <= LARGE_GPU.shared_bytes_per_block + 1024
                    );
                    let tiles = n.div_ceil(1 << m.args.tile_bits);
                    assert!(tiles <= p.splits);
                    // Blocks loop over tiles: every block has one, and the grid is what
                    // the multiprocessors hold at once (MERGE_BLOCKS_PER_SM blocks of
                    // MERGE_THREADS threads each).
                    let resident = u64::from(
                        LARGE_GPU.multiprocessors * MERGE_BLOCKS_PER_SM * MERGE_THREADS / m.block,
                    );
                    assert_eq!(u64::from(m.grid), tiles.min(resident));
                    // Passes of few tiles per block search in the merge kernel.
                    assert_eq!(
                        m.search,
                        tiles <= resident * plan::POLICY.search_max_rounds,
                        "{widths:?} n {n}"
                    );
                    // The splitter's launch shape says how it searches: a warp per tile for
                    // passes of few tiles, a thread per tile otherwise.
                    let split_threads = u64::from(m.split_grid) * u64::from(m.split_block);
                    if tiles <= plan::POLICY.warp_split_max_tiles {
                        assert!(split_threads >= tiles * 32);
                    } else {
                        assert!(split_threads >= tiles && split_threads < tiles * 32);
                    }
                }
            }
        }
    }
}

/// Where CUDA's facts make the choice: sorts that one cluster sorts whole keep the network,
/// longer ones take merge path, and so do rows of keys alone longer than a tile, every pass
/// covering every row.
#[test]
fn clusters_keep_the_network_and_rows_take_merge_path() {
    let keys = Widths::keys(4);
    let network = |p: SortPlan| matches!(p, SortPlan::Network(_));
    assert!(network(plan::choose(
        &LARGE_GPU,
        1 << 16,
        1,
        keys,
        0,
        false
    )));
    assert!(!network(plan::choose(
        &LARGE_GPU,
        1 << 17,
        1,
        keys,
        0,
        false
    )));
    let no_clusters = DeviceLimits {
        clusters: false,
        ..LARGE_GPU
    };
    assert!(!network(plan::choose(
        &no_clusters,
        1 << 16,
        1,
        keys,
        0,
        false
    )));
    assert!(network(plan::choose(&LARGE_GPU, 1 << 17, 1, keys, 0, true)));
    for (rows, row_len) in [(4u64, 1u64 << 17), (3, 20_003), (2, (1 << 24) + 1)] {
        let SortPlan::MergePath(p) = plan::choose(&LARGE_GPU, row_len, rows, keys, 5, false) else {
            panic!("{rows} x {row_len}: the network");
        };
        assert_eq!(p.tile_sort.args.rows, rows);
        assert_eq!(p.tile_sort.args.row_len, row_len);
        for m in &p.merges {
            assert_eq!((m.args.n, m.args.rows), (row_len, rows));
            assert!(!m.search, "rows take the splitter");
            assert!(row_len.div_ceil(1 << m.args.tile_bits) * rows <= p.splits);
        }
    }
}

#[test]
fn chunks_sorted_while_uploading_are_planned_as_the_whole_sort() {
    let widths = Widths::keys(4);
    let n = 9_437_187u64;
    // Chunks sort while uploading only where the whole sort is merge path: on this device
    // such keys take the radix sort, so it is told not to.
    let merging = DeviceLimits {
        radix_from: Some(u64::MAX),
        ..LARGE_GPU
    };
    assert!(matches!(
        plan::choose(&LARGE_GPU, n, 1, widths, 5, false),
        SortPlan::Radix(_)
    ));
    let SortPlan::MergePath(whole) = plan::choose(&merging, n, 1, widths, 5, false) else {
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
        let part = plan::chunk_plan(&merging, m, sort_tile, log_chunk, widths, 5);
        let t = part.tile_sort;
        assert_eq!(t.args.transform, ENCODE_ON_LOAD, "m = {m}");
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

#[test]
fn host_slices_that_sort_while_uploading_keep_merge_path() {
    let radix = |p: SortPlan| matches!(p, SortPlan::Radix(_));
    for key in [4u64, 8] {
        let keys = Widths::keys(key);
        // 2^28 keys: merge path sorts their chunks while they cross the bus.
        assert!(radix(plan::choose(&LARGE_GPU, 1 << 28, 1, keys, 0, false)));
        assert!(matches!(
            plan::choose_for_upload(&LARGE_GPU, 1 << 28, 1, keys, 0, false),
            SortPlan::MergePath(_)
        ));
        // Pairs keep the radix sort's stable order.
        let pairs = Widths { key, value: 4 };
        assert!(radix(plan::choose_for_upload(
            &LARGE_GPU,
            1 << 28,
            1,
            pairs,
            0,
            false
        )));
    }
    // 2^22 `u32` keys (16 MiB) upload whole either way: the radix sort.
    let keys = Widths::keys(4);
    assert!(radix(plan::choose_for_upload(
        &LARGE_GPU,
        1 << 22,
        1,
        keys,
        0,
        false
    )));
}
