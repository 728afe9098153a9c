//! The scalar emulation of a schedule: every pass executed on the host exactly as the
//! kernels execute it (the same index arithmetic), for the unit tests and the CPU backend's
//! key-value sorts; and the result of a key-value merge-path sort ([`emulate_merge_path`]).

use super::{Pass, Schedule, global_index, register_network, tile_comparator};

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

/// Sorts ordered words `keys` with their `values` into the order a merge-path sort with tiles
/// of `2^log_tile` gives them: every tile sorted by the network's local sort (as the GPUs'
/// tile sort does), then all tiles merged stably. Stable merges in any grouping give one
/// result, the stable sort of the tiles laid end to end, so this needs no model of the
/// merge passes: equal keys keep their tile's order, tile after tile.
pub(crate) fn emulate_merge_path<W: Ord + Copy + Send + Sync, V: Copy + Send + Sync>(
    log_tile: u32,
    keys: &mut [W],
    values: &mut [V],
) {
    assert_eq!(values.len(), keys.len(), "values must match keys");
    run_tiles(Pass::LocalSort { log_tile }, keys, Some(&mut *values));
    sort_pairs_stably(keys, values);
}

/// Sorts `keys` with their `values`, equal keys keeping their order: what merge path's
/// stable merges do after its tile sort, and the radix sort's order of pairs.
pub(crate) fn sort_pairs_stably<W: Ord + Copy + Send + Sync, V: Copy + Send + Sync>(
    keys: &mut [W],
    values: &mut [V],
) {
    use rayon::prelude::*;
    let mut pairs: Vec<(W, V)> = keys
        .par_iter()
        .copied()
        .zip(values.par_iter().copied())
        .collect();
    // Rayon's sort by key is stable.
    pairs.par_sort_by_key(|p| p.0);
    keys.par_iter_mut()
        .zip(values.par_iter_mut())
        .zip(pairs.par_iter())
        .for_each(|((k, v), p)| {
            *k = p.0;
            *v = p.1;
        });
}
