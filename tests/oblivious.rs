//! The sorting network is data-oblivious: which positions are compared, in which launch and in
//! which order, depends only on `n` and the tile parameters, never on the keys.
//!
//! - The launch list, [`Schedule::new`]`(n, TileParams)`, takes no data at all, and depends
//!   on `n` only through `ceil(log2 n)` (the tests pin both down).
//! - [`emulate`], the CPU executor that runs the kernels' index arithmetic, is instrumented
//!   with a key type that records the *positions* of the two keys of every comparison. For
//!   many lengths and tile parameters, inputs as different as sorted, reversed, all equal,
//!   random and 0-1 produce the identical sequence of compared positions, with or without
//!   values; that sequence is exactly the comparators obtained by replaying the schedule
//!   through the public index functions ([`global_index`], [`register_network`],
//!   [`tile_comparator`]), which are what the GPU kernels compute.
//! - That replayed network sorts every 0-1 input of every length up to 20 (exhaustively),
//!   so by the 0-1 principle it sorts every input of those lengths, whatever the key type.
//!
//! `docs/testing.md` says what this does and does not mean for constant-time sorting.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use bitonic::internals::{
    Pass, Schedule, TileParams, ceil_log2, emulate, global_index, register_network, tile_comparator,
};

fn params(log_tile: u32, max_global_levels: u32, fuse_tails: bool) -> TileParams {
    TileParams {
        log_tile,
        max_global_levels,
        fuse_tails,
    }
}

/// Tile parameters as backends choose them (the CPU backend uses 12/4, GPUs up to 13/10)
/// and small ones that make every kind of pass occur at small `n`.
fn param_grid() -> Vec<TileParams> {
    [
        (1, 1),
        (1, 3),
        (2, 1),
        (2, 2),
        (3, 2),
        (4, 4),
        (5, 3),
        (12, 4),
        (13, 10),
    ]
    .into_iter()
    .flat_map(|(s, m)| [params(s, m, false), params(s, m, true)])
    .collect()
}

// ---------------------------------------------------------------------------------------
// The schedule.

#[test]
fn schedule_takes_no_data_and_is_deterministic() {
    // The signature is the first proof: the launch list is computed from a length and the
    // tile parameters, and from nothing else.
    let build: fn(u64, TileParams) -> Schedule = Schedule::new;
    for p in param_grid() {
        for n in (0..=600).chain([4095, 4096, 4097, 1 << 20, (1 << 20) + 1, 1 << 40]) {
            let schedule = build(n, p);
            assert_eq!(schedule, build(n, p), "n={n} {p:?}");
            assert_eq!(schedule.n, n);
            assert_eq!(schedule.log_n, ceil_log2(n));
            // Keys are encoded on the first launch's loads and decoded on the last one's
            // stores, and nowhere else.
            let steps: Vec<_> = schedule.steps().collect();
            for (i, (_, transform)) in steps.iter().enumerate() {
                assert_eq!(transform.encode_on_load, i == 0, "n={n} {p:?} pass {i}");
                assert_eq!(
                    transform.decode_on_store,
                    i + 1 == steps.len(),
                    "n={n} {p:?} pass {i}"
                );
            }
        }
    }
}

#[test]
fn launches_depend_on_n_only_through_its_power_of_two() {
    // Every n in (2^(L-1), 2^L] gets the same launches with the same parameters; only the
    // number of work items per launch (Pass::items) grows with n.
    for p in param_grid() {
        for n in 2..=5000u64 {
            let padded = 1u64 << ceil_log2(n);
            let a = Schedule::new(n, p);
            let b = Schedule::new(padded, p);
            assert_eq!(a.passes, b.passes, "n={n} vs {padded}, {p:?}");
            for pass in &a.passes {
                assert!(pass.items(n) <= pass.items(padded), "n={n} {pass:?}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Recording what the executor compares.

/// Collects the positions of every comparison made by [`Traced`] keys of one slice.
#[derive(Default)]
struct Recorder {
    /// The address of the slice's first element.
    base: AtomicUsize,
    /// Its length.
    len: AtomicUsize,
    /// (position of the left operand, position of the right operand), in comparison order.
    log: Mutex<Vec<(u64, u64)>>,
}

impl Recorder {
    /// The key's position in the slice; `u64::MAX` for a key outside it (a copy).
    fn position(&self, key: &Traced<'_>) -> u64 {
        let size = std::mem::size_of::<Traced<'_>>();
        let offset =
            (key as *const Traced<'_> as usize).wrapping_sub(self.base.load(Ordering::Relaxed));
        if offset.is_multiple_of(size) && offset / size < self.len.load(Ordering::Relaxed) {
            (offset / size) as u64
        } else {
            u64::MAX
        }
    }

    fn record(&self, a: &Traced<'_>, b: &Traced<'_>) {
        let pair = (self.position(a), self.position(b));
        self.log.lock().unwrap().push(pair);
    }
}

/// A key that reports, at every comparison, where in the slice the two compared keys are.
#[derive(Clone, Copy)]
struct Traced<'a> {
    key: u64,
    recorder: &'a Recorder,
}

impl Ord for Traced<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.recorder.record(self, other);
        self.key.cmp(&other.key)
    }
}

impl PartialOrd for Traced<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Traced<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Traced<'_> {}

/// A pool of 1 or 3 worker threads, built once.
fn pool(threads: usize) -> &'static rayon::ThreadPool {
    static POOLS: [OnceLock<rayon::ThreadPool>; 2] = [OnceLock::new(), OnceLock::new()];
    let slot = &POOLS[usize::from(threads > 1)];
    slot.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(if threads > 1 { 3 } else { 1 })
            .build()
            .expect("a thread pool")
    })
}

/// Runs `sort` on `keys` as [`Traced`] keys and returns the compared positions and the
/// sorted keys.
fn record_with(keys: &[u64], sort: impl FnOnce(&mut [Traced<'_>])) -> (Vec<(u64, u64)>, Vec<u64>) {
    let recorder = Recorder::default();
    let mut traced: Vec<Traced<'_>> = keys
        .iter()
        .map(|&key| Traced {
            key,
            recorder: &recorder,
        })
        .collect();
    recorder
        .base
        .store(traced.as_ptr() as usize, Ordering::Relaxed);
    recorder.len.store(traced.len(), Ordering::Relaxed);
    sort(&mut traced);
    let sorted = traced.iter().map(|t| t.key).collect();
    (recorder.log.into_inner().unwrap(), sorted)
}

/// Runs [`emulate`] on `keys` (with values when asked) on one worker thread or on three.
fn record(
    schedule: &Schedule,
    keys: &[u64],
    with_values: bool,
    threads: usize,
) -> (Vec<(u64, u64)>, Vec<u64>) {
    record_with(keys, |traced| {
        let mut values: Vec<u32> = (0..traced.len() as u32).collect();
        pool(threads).install(|| {
            if with_values {
                emulate(schedule, traced, Some(&mut values));
            } else {
                emulate::<Traced<'_>, u32>(schedule, traced, None);
            }
        })
    })
}

#[test]
fn the_recorder_sees_a_data_dependent_sort() {
    // The instrument itself: `sort_unstable` (pattern-defeating quicksort) is not oblivious,
    // and the recorder must show it, or its silence about `emulate` would prove nothing.
    let n = 300;
    let logs: Vec<Vec<(u64, u64)>> = inputs(n)
        .iter()
        .map(|(_, keys)| record_with(keys, |t| t.sort_unstable()).0)
        .collect();
    assert!(
        logs.windows(2).any(|w| w[0] != w[1]),
        "sort_unstable compared the same positions for every input"
    );
    assert!(logs.iter().all(|log| !log.is_empty()));
}

/// The comparators of a schedule, replayed from the public index functions in the order the
/// executor applies them: tile passes tile by tile, stage by stage, level by level;
/// global passes group by group (every group a GPU launches, `Pass::items`), each through
/// the register network. A comparator whose upper position is `>= n` is padding: skipped.
fn replay(schedule: &Schedule) -> Vec<(u64, u64)> {
    let n = schedule.n;
    let mut out = Vec::new();
    for (pass, _) in schedule.steps() {
        match pass {
            Pass::LocalSort { .. } | Pass::LocalMerge { .. } => replay_tiles(pass, n, &mut out),
            Pass::GlobalMerge {
                stage,
                first_level,
                levels,
                tail_bits,
            } => {
                if tail_bits > 0 {
                    let tail = Pass::LocalMerge {
                        log_tile: tail_bits,
                    };
                    replay_tiles(tail, n, &mut out);
                }
                let network = register_network(first_level, levels);
                for group in 0..pass.items(n) {
                    let index = |r: u32| global_index(stage, first_level, levels, group, r);
                    for &(_, lo, hi) in &network {
                        let (lo, hi) = (index(lo), index(hi));
                        if hi < n {
                            assert!(
                                lo < hi,
                                "a comparator's lower register holds the lower index"
                            );
                            out.push((lo, hi));
                        }
                    }
                }
            }
        }
    }
    out
}

/// The comparators of a tile pass, tile by tile, stage by stage, level by level.
fn replay_tiles(pass: Pass, n: u64, out: &mut Vec<(u64, u64)>) {
    let (Pass::LocalSort { log_tile } | Pass::LocalMerge { log_tile }) = pass else {
        unreachable!("not a tile pass")
    };
    let sort = matches!(pass, Pass::LocalSort { .. });
    let first_stage = if sort { 1 } else { log_tile };
    let tile = 1u64 << log_tile;
    for base in (0..n).step_by(tile as usize) {
        for stage in first_stage..=log_tile {
            for level in 0..stage {
                let bit = stage - 1 - level;
                for c in 0..tile / 2 {
                    let (lo, hi) = tile_comparator(c, bit, sort && level == 0);
                    if base + hi < n {
                        out.push((base + lo, base + hi));
                    }
                }
            }
        }
    }
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Inputs of one length that make a data-dependent algorithm take very different paths.
fn inputs(n: usize) -> Vec<(&'static str, Vec<u64>)> {
    let mut state = n as u64;
    let random: Vec<u64> = (0..n).map(|_| splitmix(&mut state)).collect();
    let zero_one: Vec<u64> = (0..n).map(|_| splitmix(&mut state) & 1).collect();
    vec![
        ("ascending", (0..n as u64).collect()),
        ("descending", (0..n as u64).rev().collect()),
        ("all equal", vec![7; n]),
        ("random", random),
        ("zero-one", zero_one),
        (
            "organ pipe",
            (0..n as u64).map(|i| i.min(n as u64 - i)).collect(),
        ),
        (
            "extremes",
            (0..n)
                .map(|i| if i % 3 == 0 { u64::MAX } else { 0 })
                .collect(),
        ),
    ]
}

#[test]
fn emulate_compares_the_same_positions_whatever_the_data() {
    for p in param_grid() {
        let mut lengths = vec![0, 1, 2, 3, 5, 8, 9, 31, 100, 255, 256, 257, 1000, 1025];
        if p.log_tile >= 12 {
            // Past one tile of the large tiles that backends use, so that global passes run.
            lengths.extend([4097, 9000]);
        }
        for n in lengths {
            let schedule = Schedule::new(n as u64, p);
            let replayed = replay(&schedule);
            let mut replayed_set = replayed.clone();
            replayed_set.sort_unstable();
            for (k, (name, keys)) in inputs(n).into_iter().enumerate() {
                let mut want = keys.clone();
                want.sort_unstable();
                // Keys alone for every input; with values, and on several workers, for a few.
                let runs: &[(bool, usize)] = if k < 2 {
                    &[(false, 1), (true, 1), (true, 3)]
                } else {
                    &[(false, 1)]
                };
                for &(with_values, threads) in runs {
                    let what = format!("n={n} {p:?} {name} values={with_values} threads={threads}");
                    let (mut log, sorted) = record(&schedule, &keys, with_values, threads);
                    assert_eq!(sorted, want, "{what}: not sorted");
                    assert_eq!(log.len(), replayed.len(), "{what}: comparison count");
                    if threads > 1 {
                        // Several workers: the order between independent tiles and blocks
                        // varies, the set of comparisons does not.
                        log.sort_unstable();
                        assert_eq!(log, replayed_set, "{what}: the set of comparisons");
                        continue;
                    }
                    // One worker: the exact sequence, identical to the replayed network.
                    if let Some(i) = log.iter().zip(&replayed).position(|(a, b)| a != b) {
                        panic!(
                            "{what}: comparison {i} was of positions {:?}, the network's \
                             comparator {i} is {:?}",
                            log[i], replayed[i]
                        );
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The 0-1 principle.

/// Applies the replayed network to all 2^n inputs of 0s and 1s at once, 64 per word (word
/// `w`, bit `b` of wire `i` is bit `i` of input `64 w + b`), and checks that every output is
/// sorted. A comparator network that sorts every 0-1 input sorts every input.
fn sorts_every_zero_one_input(n: u32, p: TileParams) {
    let schedule = Schedule::new(u64::from(n), p);
    let comparators = replay(&schedule);
    // The replayed network is the one the executor runs.
    let identity: Vec<u64> = (0..u64::from(n)).collect();
    assert_eq!(
        record(&schedule, &identity, false, 1).0,
        comparators,
        "n={n} {p:?}"
    );
    let words = (1usize << n).div_ceil(64);
    const LOW: [u64; 6] = [
        0xAAAA_AAAA_AAAA_AAAA,
        0xCCCC_CCCC_CCCC_CCCC,
        0xF0F0_F0F0_F0F0_F0F0,
        0xFF00_FF00_FF00_FF00,
        0xFFFF_0000_FFFF_0000,
        0xFFFF_FFFF_0000_0000,
    ];
    let mut wires = vec![0u64; n as usize];
    for w in 0..words {
        for (i, wire) in wires.iter_mut().enumerate() {
            *wire = if i < 6 {
                LOW[i]
            } else if (w >> (i - 6)) & 1 == 1 {
                u64::MAX
            } else {
                0
            };
        }
        for &(lo, hi) in &comparators {
            let (a, b) = (wires[lo as usize], wires[hi as usize]);
            wires[lo as usize] = a & b;
            wires[hi as usize] = a | b;
        }
        // Sorted: no input has a 1 on wire i and a 0 on wire i + 1.
        for i in 0..wires.len().saturating_sub(1) {
            let unsorted = wires[i] & !wires[i + 1];
            let valid = if n < 6 {
                (1u64 << (1 << n)) - 1
            } else {
                u64::MAX
            };
            assert_eq!(
                unsorted & valid,
                0,
                "n={n} {p:?}: input {} is not sorted at wires {i}, {}",
                64 * w + (unsorted & valid).trailing_zeros() as usize,
                i + 1
            );
        }
    }
}

#[test]
fn the_network_sorts_every_zero_one_input_up_to_20() {
    // Every kind of pass occurs: tiles of 2 to 32 elements and 1 to 4 levels per global
    // pass, with and without fused tails, at every length up to 16; lengths 17 to 20 with
    // fewer parameter choices.
    for n in 0..=16 {
        for log_tile in 1..=5 {
            for max_global_levels in 1..=4 {
                for fuse in [false, true] {
                    sorts_every_zero_one_input(n, params(log_tile, max_global_levels, fuse));
                }
            }
        }
    }
    for n in 17..=20 {
        for (s, m) in [(1, 1), (2, 3), (3, 2), (12, 4)] {
            sorts_every_zero_one_input(n, params(s, m, false));
            sorts_every_zero_one_input(n, params(s, m, true));
        }
    }
}
