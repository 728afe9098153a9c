//! Tests of the merge-path passes, tile choices, upload chunks and the model.

use super::*;

fn patterns(n: usize, seed: u64) -> Vec<(&'static str, Vec<u64>)> {
    let mut x = seed | 1;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let random: Vec<u64> = (0..n).map(|_| rand()).collect();
    let mut sorted = random.clone();
    sorted.sort_unstable();
    let reversed: Vec<u64> = sorted.iter().rev().copied().collect();
    vec![
        ("random", random),
        ("sorted", sorted),
        ("reversed", reversed),
        ("equal", vec![7; n]),
        ("few", (0..n).map(|_| rand() % 3).collect()),
        (
            "organ pipe",
            (0..n).map(|i| i.min(n - 1 - i) as u64).collect(),
        ),
        ("saw", (0..n).map(|i| (i % 17) as u64).collect()),
        (
            "extremes",
            (0..n)
                .map(|i| if i % 2 == 0 { u64::MAX } else { 0 })
                .collect(),
        ),
    ]
}

#[test]
fn pass_counts_of_the_design() {
    let count = |log_n: u32, log_tile, log_ways| {
        MergePlan {
            n: 1 << log_n,
            log_tile,
            log_ways,
        }
        .passes()
        .len()
    };
    // Eight-way merges above tiles of 2^13 (2^12 for u64 keys).
    assert_eq!(
        [count(20, 13, 3), count(24, 13, 3), count(28, 13, 3)],
        [3, 4, 5]
    );
    assert_eq!(count(26, 12, 3), 5);
    assert_eq!(
        [count(20, 13, 2), count(24, 13, 2), count(28, 13, 2)],
        [4, 6, 8]
    );
    assert_eq!(count(13, 13, 3), 0);
    let plan = MergePlan {
        n: (1 << 20) + 1,
        log_tile: 13,
        log_ways: 3,
    };
    let passes = plan.passes();
    assert_eq!(passes.len(), 3);
    assert_eq!(
        passes[2],
        MergePass {
            log_run: 19,
            log_ways: 2
        }
    );
}

#[test]
fn sort_tiles_leave_an_even_number_of_merges() {
    // A device of 132 multiprocessors with tiles up to 2^15.
    for log_n in 0..=34u32 {
        let n = 1u64 << log_n;
        for n in [n - 1, n, n + 1] {
            match choose_sort_tile(n, 15, 132) {
                None => assert!(n <= 1 << 13, "n = {n}"),
                Some(tile) => {
                    assert!(n > 1 << 13, "n = {n}");
                    assert!((POLICY.min_log_sort_tile..=POLICY.max_log_sort_tile).contains(&tile));
                    let plan = MergePlan {
                        n,
                        log_tile: tile,
                        log_ways: 1,
                    };
                    assert_eq!(plan.passes().len() % 2, 0, "n = {n}, tile 2^{tile}");
                }
            }
        }
    }
    assert_eq!(choose_sort_tile(1 << 28, 15, 132), Some(14));
    assert_eq!(choose_sort_tile(1 << 20, 15, 132), Some(12));
    // Odd powers of two take 2^15 where the device holds it and the network would give
    // every multiprocessor tiles that large, 2^13 where not.
    assert_eq!(choose_sort_tile(1 << 27, 15, 132), Some(15));
    assert_eq!(choose_sort_tile((1 << 22) + 1, 15, 132), Some(15));
    assert_eq!(choose_sort_tile(1 << 27, 14, 132), Some(13));
    assert_eq!(choose_sort_tile(1 << 21, 15, 132), Some(13));
    // Devices whose tiles are small keep the network.
    assert_eq!(choose_sort_tile(1 << 20, 10, 132), None);
    // Rows: only those longer than the largest tile, whose tiles count together.
    assert_eq!(choose_rows_sort_tile(4, 1 << 14, 14, 132), None);
    assert_eq!(choose_rows_sort_tile(2, 20_000, 14, 132), Some(11));
    assert_eq!(choose_rows_sort_tile(2, 1 << 24, 14, 132), Some(14));
    assert_eq!(choose_rows_sort_tile(64, 1 << 17, 14, 132), Some(13));
    assert_eq!(choose_rows_sort_tile(2, 1 << 17, 10, 132), None);
}

#[test]
fn pair_tiles_depend_on_length_and_width_alone() {
    for element_bytes in [8u64, 12, 16] {
        // The first length past 8 MiB of pairs.
        let first = (1u64 << 23) / element_bytes + 1;
        assert_eq!(pair_sort_tile(first - 1, element_bytes), None);
        for log_n in 19..=34u32 {
            let n = 1u64 << log_n;
            for n in [n - 1, n, n + 1, first] {
                let Some(tile) = pair_sort_tile(n, element_bytes) else {
                    assert!(n < first, "{element_bytes} bytes, n = {n}");
                    continue;
                };
                assert!(n >= first);
                assert!((1u64 << tile) * element_bytes <= 1 << POLICY.pair_log_tile_bytes);
                let plan = MergePlan {
                    n,
                    log_tile: tile,
                    log_ways: 1,
                };
                assert_eq!(plan.passes().len() % 2, 0, "n = {n}, tile 2^{tile}");
                assert!(!plan.passes().is_empty());
            }
        }
    }
    assert_eq!(pair_sort_tile(1 << 20, 8), None);
    assert_eq!(pair_sort_tile((1 << 20) + 1, 8), Some(11));
    assert_eq!(pair_sort_tile(1 << 28, 8), Some(12));
    assert_eq!(pair_sort_tile(1 << 26, 16), Some(10));
    assert_eq!(pair_sort_tile(1 << 27, 12), Some(11));
    assert_eq!(pair_sort_tile(1 << 40, 0), None);
}

#[test]
fn splitters_are_exact_and_stable() {
    for (name, keys) in patterns(300, 5) {
        let mut runs: Vec<Vec<u64>> = keys.chunks(37).map(|c| c.to_vec()).collect();
        runs.iter_mut().for_each(|r| r.sort_unstable());
        let refs: Vec<&[u64]> = runs.iter().map(Vec::as_slice).collect();
        // (key, run, position) in the order a stable merge takes them.
        let mut all: Vec<(u64, usize, usize)> = runs
            .iter()
            .enumerate()
            .flat_map(|(j, r)| r.iter().enumerate().map(move |(i, &k)| (k, j, i)))
            .collect();
        all.sort_unstable();
        for rank in 0..=all.len() as u64 + 2 {
            let s = split(&refs, rank);
            let taken = &all[..(rank as usize).min(all.len())];
            for (j, &sj) in s.iter().enumerate() {
                let want = taken.iter().filter(|t| t.1 == j).count() as u64;
                assert_eq!(sj, want, "{name}: rank {rank}, run {j}");
            }
        }
    }
}

#[test]
fn chunks_sorted_while_uploading_make_the_whole_sorts_passes() {
    for (element_bytes, sort_tile) in [(4u64, 14u32), (4, 13), (8, 12), (12, 11), (16, 11)] {
        for log_n in 20..=34u32 {
            for n in [(1u64 << log_n) - 1, 1 << log_n, (1 << log_n) + 1] {
                let Some(log_chunk) = upload_chunk(n, element_bytes, sort_tile) else {
                    assert!(
                        n * element_bytes < POLICY.min_sort_while_uploading_bytes,
                        "n = {n}"
                    );
                    continue;
                };
                let chunk = 1u64 << log_chunk;
                assert!(chunk * element_bytes <= 1 << POLICY.log_max_upload_chunk_bytes);
                assert!(n > 2 * chunk, "n = {n}: at least three chunks");
                assert!(log_chunk >= sort_tile);
                let whole = MergePlan {
                    n,
                    log_tile: sort_tile,
                    log_ways: 1,
                };
                let passes = whole.tiled_passes(13);
                let before = passes.iter().filter(|p| p.log_run < log_chunk).count();
                for m in [chunk, n % chunk, 1].into_iter().filter(|&m| m > 0) {
                    let part = MergePlan { n: m, ..whole };
                    let chunk_passes = part.chunk_passes(13, log_chunk);
                    // Every chunk makes the same number of passes as the whole sort below
                    // the chunk, so all end in the same buffer.
                    assert_eq!(chunk_passes.len(), before, "n = {n}, m = {m}");
                    for (c, w) in chunk_passes.iter().zip(&passes) {
                        assert_eq!((c.log_run, c.tile_bits), (w.log_run, w.tile_bits));
                        assert_eq!(c.tiles, m.div_ceil(1 << c.tile_bits));
                        assert!(!c.last);
                    }
                }
            }
        }
    }
    let mut chunks = UploadChunks::new(10, 2);
    assert_eq!(chunks.total(), 10);
    assert_eq!(chunks.next_landed(3), None);
    assert_eq!(chunks.next_landed(9), Some((0, 4)));
    assert_eq!(chunks.next_landed(9), Some((4, 4)));
    assert_eq!(chunks.next_landed(9), None);
    assert_eq!(chunks.next_landed(10), Some((8, 2)));
    assert_eq!(chunks.next_landed(10), None);
    assert_eq!(upload_chunk(1 << 28, 4, 14), Some(24));
    assert_eq!(upload_chunk(1 << 24, 4, 14), Some(22));
    assert_eq!(upload_chunk(1 << 28, 8, 12), Some(23));
    assert_eq!(upload_chunk(1 << 22, 4, 12), None);
    assert_eq!(upload_chunk(1 << 23, 4, 14), Some(21));
}

#[test]
fn the_model_is_a_stable_sort() {
    for (log_tile, log_ways) in [(2, 1), (3, 2), (3, 3), (4, 3)] {
        let tile = 1usize << log_tile;
        let mut lengths = vec![0, 1, 2, 3, tile - 1, tile, tile + 1];
        for log in [
            log_tile + log_ways,
            log_tile + 2 * log_ways,
            log_tile + 2 * log_ways + 1,
        ] {
            let n = 1usize << log;
            lengths.extend([n - 1, n, n + 1]);
        }
        for n in lengths {
            for (name, input) in patterns(n, n as u64 + 11) {
                let mut keys = input.clone();
                let mut positions: Vec<u32> = (0..n as u32).collect();
                let plan = MergePlan {
                    n: n as u64,
                    log_tile,
                    log_ways,
                };
                emulate(&mut keys, &mut positions, plan);
                let mut want: Vec<(u64, u32)> = input.iter().copied().zip(0..n as u32).collect();
                want.sort_by_key(|p| p.0);
                let got: Vec<(u64, u32)> = keys.into_iter().zip(positions).collect();
                assert_eq!(
                    got, want,
                    "{name}, n = {n}, tile 2^{log_tile}, 2^{log_ways}-way"
                );
            }
        }
    }
}
