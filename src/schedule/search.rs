//! The search for a stage's launches: which merge passes, of how many levels each, cover
//! the stages above the tile with the fewest launches, then the cheapest register rounds.

use super::{Pass, TileParams};

/// Levels one register round of the GPU kernels applies; the schedule prefers passes with
/// few rounds among those with the fewest launches.
const ROUND_LEVELS: u32 = 4;

/// What the rest of a sort costs: launches first (each moves every element through memory),
/// then register rounds (each a trip through on-chip memory), squared per launch: a launch
/// hides a few rounds behind its memory traffic and no more (at 2^28 keys, launches of 5
/// rounds take a fifth longer than those of 4, and those of 4 a tenth longer than those of
/// 3).
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
pub(super) fn merge_passes(log_tile: u32, log_n: u32, params: TileParams) -> Vec<Pass> {
    let s = log_tile;
    let m = params.max_global_levels;
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
                for levels in 1..=room.min(m) {
                    let rest = best[stage as usize + 1][(stage + 1 - levels) as usize].0;
                    consider(
                        Cost::launch(&[left, levels]).then(rest),
                        Step::Fused(levels),
                    );
                }
            }
            for levels in 1..=m.min(left.saturating_sub(min_left)) {
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
        // Single-level global passes alone always end a stage in whole tiles.
        debug_assert!(cost != Cost::NONE, "stage {stage} left {left}");
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
    passes
}
