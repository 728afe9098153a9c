//! The pass schedule: the one place that decides which comparators run in which launch.
//!
//! Bitonic sort is data-oblivious, so the whole sort is a fixed list of passes computed from
//! `n` and the device's tile parameters alone. Every backend executes the same list; the CPU
//! emulation in [`emulate`] executes it exactly as the kernels do (same index arithmetic) and
//! is what the unit tests and the CPU key-value path run.
//!
//! # The network
//! Let `N = 2^L` be the smallest power of two `>= n`. Stage `k` (`1 <= k <= L`) merges sorted
//! runs of `2^(k-1)` into runs of `2^k` with `k` levels. Level 0 is the *flip*: within each
//! block of `2^k`, index `i` (bit `k-1` clear) meets its mirror `i ^ (2^k - 1)`. Level `t >= 1`
//! is a *half-cleaner*: `i` (bit `k-1-t` clear) meets `i | 2^(k-1-t)`. Every comparator puts the
//! minimum at the lower index and swaps only when the lower element is strictly greater.
//!
//! Indices `>= n` are virtual padding that behaves as +infinity: a comparator whose upper
//! index is `>= n` is skipped (it could never move anything), so no padding memory exists and
//! equal keys never move into it.
//!
//! # Passes
//! With tiles of `T = 2^S` elements in on-chip memory:
//! - [`Pass::LocalSort`]: stages `1..=S` inside every tile, one launch;
//! - for each stage `k > S`: one or more [`Pass::GlobalMerge`] launches for the levels whose
//!   stride is `>= T` (each thread holds `2^levels` elements in registers), then one
//!   [`Pass::LocalMerge`] for the levels with strides `T/2 .. 1` inside every tile.
//!
//! # Fused tails
//! With [`TileParams::fuse_tails`], a stage's last levels (its half-cleaners on bits
//! `t-1 .. 0`, `t <= S`) do not take a launch of their own: they run at the start of the next
//! stage's first global pass, whose tile is `2^c` consecutive columns (`c >= t`) times
//! `2^levels` rows, so that the columns hold the previous stage's tail and the rows the new
//! stage's first levels. A launch then covers up to `S` levels wherever it crosses a stage
//! boundary. Which launches a sort makes is a small search (`merge_passes`): the fewest
//! launches, then the cheapest register rounds; at `2^28` with `S = 14` the sort takes 26
//! launches instead of 33. A stage ends in a [`Pass::LocalMerge`] only where its tail fills
//! the tile (always the last stage).

/// Device-dependent sizes the schedule is built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileParams {
    /// log2 of the elements one work-group sorts in on-chip memory.
    pub log_tile: u32,
    /// The most levels one global pass applies (each thread holds `2^levels` elements);
    /// `log_tile - max_global_levels` is the fewest columns a global tile has.
    pub max_global_levels: u32,
    /// Whether global passes start with the previous stage's tail (see the module docs);
    /// a backend sets it once its kernels run [`Pass::GlobalMerge::tail_bits`].
    pub fuse_tails: bool,
    /// The fewest levels one global pass applies (at least 1). A tile spread over the
    /// blocks of a thread-block cluster needs its top bits, the cluster's, to be rows.
    pub min_global_levels: u32,
}

/// One launch of the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pass {
    /// Sort every tile of `2^log_tile` elements completely (stages `1..=log_tile`).
    LocalSort {
        /// log2 of the tile size.
        log_tile: u32,
    },
    /// Apply levels `first_level .. first_level + levels` of stage `stage`, whose strides are
    /// all at least the tile size. Thread `t` holds the `2^levels` elements given by
    /// [`global_index`]. When `tail_bits > 0` (only with `first_level == 0`), the previous
    /// stage's half-cleaners on bits `tail_bits-1 .. 0` run first, inside consecutive runs of
    /// `2^tail_bits` elements.
    GlobalMerge {
        /// The merge stage `k`: blocks of `2^k` elements.
        stage: u32,
        /// The first level applied; level 0 is the flip.
        first_level: u32,
        /// How many levels this pass applies.
        levels: u32,
        /// The previous stage's last levels, run first: its half-cleaners on bits
        /// `tail_bits-1 .. 0` (0: none).
        tail_bits: u32,
    },
    /// Apply the half-cleaner levels with strides `2^(log_tile-1) .. 1` inside every tile.
    LocalMerge {
        /// log2 of the tile size.
        log_tile: u32,
    },
}

/// Whether a pass encodes keys on load and decodes them on store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transform {
    /// Raw keys become ordered bits as they are loaded (the first pass).
    pub encode_on_load: bool,
    /// Ordered bits become raw keys as they are stored (the last pass).
    pub decode_on_store: bool,
}

/// The complete list of passes for one `n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Number of real elements.
    pub n: u64,
    /// `ceil(log2(n))` (0 for n <= 1).
    pub log_n: u32,
    /// The passes in execution order.
    pub passes: Vec<Pass>,
}

impl Schedule {
    /// Builds the schedule for `n` elements. `n <= 1` needs no pass at all.
    ///
    /// # Panics
    /// When no schedule exists (see [`Schedule::try_new`]); with `min_global_levels == 1`
    /// one always does.
    pub fn new(n: u64, params: TileParams) -> Schedule {
        Schedule::try_new(n, params).expect("every stage can end in whole tiles")
    }

    /// The schedule for `n` elements, or `None` when global passes of at least
    /// `params.min_global_levels` levels cannot bring some stage down to whole tiles (a
    /// sort only a few stages longer than the tile).
    pub fn try_new(n: u64, params: TileParams) -> Option<Schedule> {
        assert!(
            (1..=params.max_global_levels).contains(&params.min_global_levels),
            "a global pass applies a level"
        );
        let log_n = ceil_log2(n);
        let mut passes = Vec::new();
        if n > 1 {
            let log_tile = params.log_tile.min(log_n).max(1);
            passes.push(Pass::LocalSort { log_tile });
            passes.extend(merge_passes(log_tile, log_n, params)?);
        }
        Some(Schedule { n, log_n, passes })
    }

    /// The passes with the key transform each one applies.
    pub fn steps(&self) -> impl Iterator<Item = (Pass, Transform)> + '_ {
        let last = self.passes.len().saturating_sub(1);
        self.passes.iter().enumerate().map(move |(i, &p)| {
            (
                p,
                Transform {
                    encode_on_load: i == 0,
                    decode_on_store: i == last,
                },
            )
        })
    }
}

/// Levels one register round of the GPU kernels applies; the schedule prefers passes with
/// few rounds among those with the fewest launches.
const ROUND_LEVELS: u32 = 4;

/// What the rest of a sort costs: launches first (each moves every element through memory),
/// then register rounds (each a trip through on-chip memory), squared per launch: a launch
/// hides a few rounds behind its memory traffic and no more (on an H200 at 2^28, launches of
/// 5 rounds took 0.95-0.98 ms, of 4 rounds 0.77-0.81 ms, of 3 rounds 0.69-0.77 ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Cost {
    launches: u32,
    rounds_squared: u32,
}

impl Cost {
    const NONE: Cost = Cost {
        launches: u32::MAX,
        rounds_squared: u32::MAX,
    };

    fn then(self, rest: Cost) -> Cost {
        if rest == Cost::NONE {
            return Cost::NONE;
        }
        Cost {
            launches: self.launches + rest.launches,
            rounds_squared: self.rounds_squared + rest.rounds_squared,
        }
    }

    /// One launch whose tile runs `bits` levels in rounds (the tail's and the new stage's
    /// rounds are separate: `bits` lists both).
    fn launch(bits: &[u32]) -> Cost {
        let rounds: u32 = bits.iter().map(|b| b.div_ceil(ROUND_LEVELS)).sum();
        Cost {
            launches: 1,
            rounds_squared: rounds * rounds,
        }
    }
}

/// A launch choice in the middle of stage `stage` with `left` of its levels still to apply
/// (bits `left-1 .. 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// A global pass of this many levels.
    Global(u32),
    /// The local merge of whole tiles (`left` is the tile).
    LocalMerge,
    /// The tail (`left` bits) and this many of the next stage's first levels.
    Fused(u32),
}

/// The launches after the local sort: stages `log_tile+1 ..= log_n`, chosen for the fewest
/// launches and then the cheapest register rounds ([`Cost`]; a search over the stage and the
/// levels left in it: at most 64 x 64 states).
fn merge_passes(log_tile: u32, log_n: u32, params: TileParams) -> Option<Vec<Pass>> {
    let s = log_tile;
    let m = params.max_global_levels;
    let fewest = params.min_global_levels;
    // A global pass leaves at least the fewest columns a global tile has below its rows.
    let min_left = s.saturating_sub(m).max(1);
    let width = log_n as usize + 1;
    // best[stage][left]: the cheapest way to finish from there, and its first step.
    let mut best = vec![vec![(Cost::NONE, Step::LocalMerge); width]; width];
    for stage in (s + 1..=log_n).rev() {
        for left in 1..=stage {
            let mut here = (Cost::NONE, Step::LocalMerge);
            let mut consider = |cost: Cost, step: Step| {
                if cost < here.0 {
                    here = (cost, step);
                }
            };
            if left == s {
                // Whole tiles end the stage (the last one always ends so).
                let rest = if stage == log_n {
                    Cost {
                        launches: 0,
                        rounds_squared: 0,
                    }
                } else {
                    best[stage as usize + 1][stage as usize + 1].0
                };
                consider(Cost::launch(&[left]).then(rest), Step::LocalMerge);
            }
            if params.fuse_tails && left < s && stage < log_n {
                // The tail's columns (at least s - m) beside the next stage's rows.
                let room = s - left.max(s.saturating_sub(m));
                for levels in fewest..=room.min(m) {
                    let rest = best[stage as usize + 1][(stage + 1 - levels) as usize].0;
                    consider(
                        Cost::launch(&[left, levels]).then(rest),
                        Step::Fused(levels),
                    );
                }
            }
            for levels in fewest..=m.min(left.saturating_sub(min_left)) {
                let rest = best[stage as usize][(left - levels) as usize].0;
                consider(Cost::launch(&[levels]).then(rest), Step::Global(levels));
            }
            best[stage as usize][left as usize] = here;
        }
    }
    // Walk the choices from the first stage.
    let mut passes = Vec::new();
    let (mut stage, mut left) = (s + 1, s + 1);
    while stage <= log_n {
        let (cost, step) = best[stage as usize][left as usize];
        if cost == Cost::NONE {
            return None;
        }
        match step {
            Step::Global(levels) => {
                passes.push(Pass::GlobalMerge {
                    stage,
                    first_level: stage - left,
                    levels,
                    tail_bits: 0,
                });
                left -= levels;
            }
            Step::LocalMerge => {
                passes.push(Pass::LocalMerge { log_tile });
                stage += 1;
                left = stage;
            }
            Step::Fused(levels) => {
                // The next stage's first pass, with this stage's tail.
                passes.push(Pass::GlobalMerge {
                    stage: stage + 1,
                    first_level: 0,
                    levels,
                    tail_bits: left,
                });
                stage += 1;
                left = stage - levels;
            }
        }
    }
    Some(passes)
}

/// Tiles below `2^MIN_LOG_TILE` elements only when the whole row is smaller.
pub const MIN_LOG_TILE: u32 = 11;

/// The largest single row sorted as one tile (one block, one launch). Above it, several
/// smaller tiles and a few merge launches win: on an H200, 2^14 `u32` keys took 49 us as one
/// tile of 2^14 and 41 us as tiles of 2^11 or 2^13 (`docs/perf.md`, change 5).
pub const MAX_LOG_SINGLE_TILE: u32 = 13;

/// The tile for `rows` rows of virtual length `2^log_row` on a device with `compute_units`
/// multiprocessors or compute units and tiles of at most `2^max_log_tile`: the whole row
/// when it fits and there are several rows or the row is at most `2^MAX_LOG_SINGLE_TILE`
/// (one launch); otherwise small enough that every compute unit gets a tile, but not below
/// `2^MIN_LOG_TILE`. Both GPU backends choose their tile here.
pub fn choose_log_tile(rows: u64, log_row: u32, max_log_tile: u32, compute_units: u32) -> u32 {
    if log_row <= max_log_tile && (rows > 1 || log_row <= MAX_LOG_SINGLE_TILE) {
        return log_row.max(1);
    }
    let log_rows = 63 - rows.max(1).leading_zeros();
    let log_units = 31 - compute_units.max(1).leading_zeros();
    (log_row + log_rows)
        .saturating_sub(log_units)
        .clamp(MIN_LOG_TILE.min(max_log_tile), max_log_tile)
}

/// `ceil(log2(n))`, 0 for n <= 1.
pub fn ceil_log2(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

impl Pass {
    /// How many work items (tiles or register groups) the pass has for `n` elements;
    /// items whose first element is `>= n` have nothing to do and are not counted.
    pub fn items(&self, n: u64) -> u64 {
        match *self {
            Pass::LocalSort { log_tile } | Pass::LocalMerge { log_tile } => {
                n.div_ceil(1u64 << log_tile)
            }
            Pass::GlobalMerge { levels, .. } => {
                // Groups are numbered so that a group's lowest index grows with its number
                // inside each block; counting all of `N >> levels` is simplest and safe.
                let log_n = ceil_log2(n);
                1u64 << (log_n - levels)
            }
        }
    }
}

/// The element index that register `reg` of group `group` holds in a global pass.
///
/// The pass covers the bits `hi = stage-1-first_level` down to `lo = hi-levels+1`. The group
/// number supplies every other bit: `base = ((group >> lo) << (hi+1)) | (group & (2^lo - 1))`.
/// For a half-cleaner pass, register `r` holds `base + (r << lo)`. For a pass that starts with
/// the flip (first_level 0), the upper half of the registers holds the mirrored side with its
/// low bits reversed, so that the flip becomes `reg[r]` vs `reg[2^levels - 1 - r]` and every
/// later level `reg[r]` vs `reg[r + d]`, the lower register always holding the lower index.
pub fn global_index(stage: u32, first_level: u32, levels: u32, group: u64, reg: u32) -> u64 {
    let hi = stage - 1 - first_level;
    let lo = hi + 1 - levels;
    let low_mask = (1u64 << lo) - 1;
    let block = (group >> lo) << (hi + 1);
    let r = group & low_mask;
    let half = 1u32 << (levels - 1);
    if first_level == 0 && reg >= half {
        block + (1u64 << hi) + (u64::from(reg - half) << lo) + (low_mask - r)
    } else {
        block + (u64::from(reg) << lo) + r
    }
}

/// The register pairs a global pass compares, level by level: `(level, lower, upper)`.
/// A pass starting at the flip compares `r` with `2^levels - 1 - r` first.
pub fn register_network(first_level: u32, levels: u32) -> Vec<(u32, u32, u32)> {
    let size = 1u32 << levels;
    let mut out = Vec::new();
    for s in 0..levels {
        let d = size >> (s + 1);
        for r in 0..size {
            if r & d != 0 {
                continue;
            }
            let partner = if first_level == 0 && s == 0 {
                size - 1 - r
            } else {
                r + d
            };
            out.push((s, r, partner));
        }
    }
    out
}

/// The two indices of comparator `c` (0-based) of a level inside one tile, whose pair bit
/// is `bit`: the lower index has `bit` clear; the upper is its mirror in the block of
/// `2^(bit+1)` for a flip level, else the lower index with `bit` set.
#[inline]
pub fn tile_comparator(c: u64, bit: u32, flip: bool) -> (u64, u64) {
    let lo = ((c >> bit) << (bit + 1)) | (c & ((1u64 << bit) - 1));
    let hi = if flip {
        lo ^ ((2u64 << bit) - 1)
    } else {
        lo | (1u64 << bit)
    };
    (lo, hi)
}

/// Compare-exchange of the elements at `lo < hi`, skipped when `hi` is padding.
#[inline]
fn compare_exchange<W: Ord + Copy, V: Copy>(
    keys: &mut [W],
    values: Option<&mut [V]>,
    lo: usize,
    hi: usize,
) {
    if hi < keys.len() && keys[lo] > keys[hi] {
        keys.swap(lo, hi);
        if let Some(v) = values {
            v.swap(lo, hi);
        }
    }
}

/// Applies one tile-local pass to a single tile (`keys.len() <= 2^log_tile`; a shorter tail
/// tile behaves as if padded with +infinity).
fn run_tile<W: Ord + Copy, V: Copy>(pass: Pass, keys: &mut [W], mut values: Option<&mut [V]>) {
    let (first_stage, log_tile) = match pass {
        Pass::LocalSort { log_tile } => (1, log_tile),
        Pass::LocalMerge { log_tile } => (log_tile, log_tile),
        Pass::GlobalMerge { .. } => unreachable!("not a tile pass"),
    };
    let comparators = 1u64 << (log_tile - 1);
    for stage in first_stage..=log_tile {
        // A local merge runs only half-cleaners: its stage's flip was a global level.
        let flip_level = matches!(pass, Pass::LocalSort { .. });
        for level in 0..stage {
            let bit = stage - 1 - level;
            let flip = flip_level && level == 0;
            for c in 0..comparators {
                let (lo, hi) = tile_comparator(c, bit, flip);
                compare_exchange(keys, values.as_deref_mut(), lo as usize, hi as usize);
            }
        }
    }
}

/// Applies a tile pass to every tile, in parallel.
fn run_tiles<W: Ord + Copy + Send, V: Copy + Send>(
    pass: Pass,
    keys: &mut [W],
    values: Option<&mut [V]>,
) {
    use rayon::prelude::*;
    let (Pass::LocalSort { log_tile } | Pass::LocalMerge { log_tile }) = pass else {
        unreachable!("not a tile pass")
    };
    let tile = 1usize << log_tile;
    match values {
        Some(v) => keys
            .par_chunks_mut(tile)
            .zip(v.par_chunks_mut(tile))
            .for_each(|(k, v)| run_tile(pass, k, Some(v))),
        None => keys
            .par_chunks_mut(tile)
            .for_each(|k| run_tile::<W, V>(pass, k, None)),
    }
}

/// Executes a schedule on ordered words exactly as the kernels do: tile passes tile by tile,
/// global passes group by group through [`global_index`] and [`register_network`].
/// `values`, when given, move with their keys.
pub fn emulate<W: Ord + Copy + Send, V: Copy + Send>(
    schedule: &Schedule,
    keys: &mut [W],
    mut values: Option<&mut [V]>,
) {
    use rayon::prelude::*;
    let n = keys.len();
    assert_eq!(n as u64, schedule.n, "schedule built for another length");
    if let Some(v) = values.as_deref() {
        assert_eq!(v.len(), n, "values must match keys");
    }
    for &pass in &schedule.passes {
        match pass {
            Pass::LocalSort { .. } | Pass::LocalMerge { .. } => {
                run_tiles(pass, keys, values.as_deref_mut());
            }
            Pass::GlobalMerge {
                stage,
                first_level,
                levels,
                tail_bits,
            } => {
                // The previous stage's tail: a local merge of runs of 2^tail_bits.
                if tail_bits > 0 {
                    let tail = Pass::LocalMerge {
                        log_tile: tail_bits,
                    };
                    run_tiles(tail, keys, values.as_deref_mut());
                }
                // Blocks of 2^stage are independent: run them in parallel, each with the
                // groups whose elements it holds.
                let block = 1usize << stage;
                let groups_per_block = 1u64 << (stage - levels);
                let network = register_network(first_level, levels);
                let run_block = |b: usize, k: &mut [W], mut v: Option<&mut [V]>| {
                    let mut idx = vec![0usize; 1 << levels];
                    for g in 0..groups_per_block {
                        let group = b as u64 * groups_per_block + g;
                        for (r, slot) in idx.iter_mut().enumerate() {
                            let global = global_index(stage, first_level, levels, group, r as u32);
                            *slot = (global - (b * block) as u64) as usize;
                        }
                        for &(_, lo, hi) in &network {
                            compare_exchange(
                                k,
                                v.as_deref_mut(),
                                idx[lo as usize],
                                idx[hi as usize],
                            );
                        }
                    }
                };
                match values.as_deref_mut() {
                    Some(v) => keys
                        .par_chunks_mut(block)
                        .zip(v.par_chunks_mut(block))
                        .enumerate()
                        .for_each(|(b, (k, v))| run_block(b, k, Some(v))),
                    None => keys
                        .par_chunks_mut(block)
                        .enumerate()
                        .for_each(|(b, k)| run_block(b, k, None)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
                        min_global_levels: 1,
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
                min_global_levels: 1,
            };
            for k in 1..=14 {
                for n in [(1usize << k) - 1, 1 << k, (1 << k) + 1] {
                    check(n, params, u64::MAX);
                }
            }
        }
    }

    #[test]
    fn cluster_tiles_apply_at_least_their_fewest_levels() {
        // Tiles of 2^(3+s) on a cluster of eight blocks: global passes of at least three
        // levels (the cluster's bits are rows). Some short sorts have no such schedule.
        for log_tile in 9..=10 {
            let params = TileParams {
                log_tile,
                max_global_levels: log_tile - 4,
                fuse_tails: true,
                min_global_levels: 3,
            };
            for log_n in 0..=17u32 {
                for n in [(1usize << log_n) - 1, 1 << log_n, (1 << log_n) + 1] {
                    let Some(schedule) = Schedule::try_new(n as u64, params) else {
                        let above = ceil_log2(n as u64) - log_tile;
                        assert!((1..=2).contains(&above), "n {n} tile 2^{log_tile}");
                        continue;
                    };
                    for pass in &schedule.passes {
                        if let Pass::GlobalMerge { levels, .. } = *pass {
                            assert!(levels >= 3, "{pass:?}");
                        }
                    }
                    check(n, params, 3);
                }
            }
        }
        // The launches at 2^28 with tiles of 2^17 against 26 with 2^14.
        let params = TileParams {
            log_tile: 17,
            max_global_levels: 13,
            fuse_tails: true,
            min_global_levels: 3,
        };
        assert_eq!(Schedule::try_new(1 << 28, params).unwrap().passes.len(), 18);
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
                    min_global_levels: 1,
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
                    min_global_levels: 1,
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
                            seen[global_index(stage, first_level, levels, group, reg) as usize] +=
                                1;
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
}
