//! Unit tests of the schedule: pass counts, coverage, and the emulated sort.

use super::*;

/// A small deterministic generator, so that the unit tests need no dev-dependency.
fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s >> 33
    }
}

fn check(n: usize, params: TileParams, modulo: u64) {
    let mut next = lcg(n as u64 * 31 + params.log_tile as u64);
    let mut keys: Vec<u32> = (0..n).map(|_| (next() % modulo) as u32).collect();
    let mut values: Vec<u32> = (0..n as u32).collect();
    let original = keys.clone();
    let schedule = Schedule::new(n as u64, params);
    emulate(&schedule, &mut keys, Some(&mut values));
    let mut want = original.clone();
    want.sort_unstable();
    assert_eq!(keys, want, "n={n} params={params:?}");
    // Every value still sits beside the key it came with.
    for (k, v) in keys.iter().zip(&values) {
        assert_eq!(original[*v as usize], *k, "n={n}");
    }
}

#[test]
fn schedule_sorts_every_small_length() {
    for log_tile in 1..=5 {
        for max_global_levels in 1..=4 {
            for fuse_tails in [false, true] {
                let params = TileParams {
                    log_tile,
                    max_global_levels,
                    fuse_tails,
                };
                for n in 0..=300 {
                    check(n, params, 1 << 20);
                    check(n, params, 3);
                }
            }
        }
    }
}

#[test]
fn schedule_sorts_around_powers_of_two() {
    for fuse_tails in [false, true] {
        let params = TileParams {
            log_tile: 6,
            max_global_levels: 3,
            fuse_tails,
        };
        for k in 1..=14 {
            for n in [(1usize << k) - 1, 1 << k, (1 << k) + 1] {
                check(n, params, u64::MAX);
            }
        }
    }
}

#[test]
fn pass_counts_match_the_formula() {
    // 1 + sum over stages k = S+1..L of (ceil((k-S)/m) + 1), from GPU-MACHINE.md.
    for (s, m, l) in [(10, 4, 28), (13, 8, 28), (15, 10, 28), (3, 2, 9)] {
        let schedule = Schedule::new(
            1 << l,
            TileParams {
                log_tile: s,
                max_global_levels: m,
                fuse_tails: false,
            },
        );
        let want: u32 = 1 + (s + 1..=l).map(|k| (k - s).div_ceil(m) + 1).sum::<u32>();
        assert_eq!(schedule.passes.len() as u32, want, "S={s} m={m} L={l}");
    }
}

#[test]
fn fused_tails_save_launches() {
    // (S, m, L, launches): the CUDA tiles (2^13 and 2^14 with ten global levels) at the
    // sizes of the performance table, against 15, 21 and 33 launches unfused.
    for (s, m, l, want) in [(13, 9, 20, 12), (14, 10, 24, 17), (14, 10, 28, 26)] {
        let schedule = Schedule::new(
            1 << l,
            TileParams {
                log_tile: s,
                max_global_levels: m,
                fuse_tails: true,
            },
        );
        assert_eq!(schedule.passes.len(), want, "S={s} m={m} L={l}");
        // Every fused pass fits a tile: its columns (at least the tail, at least S - m)
        // beside its rows.
        for pass in &schedule.passes {
            if let Pass::GlobalMerge {
                levels, tail_bits, ..
            } = *pass
            {
                assert!(tail_bits.max(s - m) + levels <= s, "{pass:?}");
            }
        }
        assert_eq!(
            schedule.passes.last(),
            Some(&Pass::LocalMerge { log_tile: s })
        );
    }
}

#[test]
fn global_groups_cover_each_index_once() {
    for stage in 2..=8u32 {
        for first_level in 0..stage - 1 {
            for levels in 1..=(stage - first_level).min(4) {
                let n = 1u64 << stage;
                let mut seen = vec![0u8; n as usize];
                for group in 0..n >> levels {
                    for reg in 0..1u32 << levels {
                        seen[global_index(stage, first_level, levels, group, reg) as usize] += 1;
                    }
                }
                assert!(
                    seen.iter().all(|&c| c == 1),
                    "stage {stage} level {first_level}+{levels}"
                );
            }
        }
    }
}
