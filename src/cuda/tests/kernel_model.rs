//! A scalar execution of `tile_pass` and `cluster_pass` (cuda/bitonic.cu, cuda/cluster.cuh)
//! for keys only, with the same index arithmetic: virtual tiles, rounds and padding. It checks
//! the plan and the kernels' address computations without a GPU.

use super::plan::{
    LOG_CLUSTER, LOG_E, Launch, MODE_GLOBAL, MODE_MERGE, MODE_SORT, PassArgs, PassKernel,
};

/// The virtual index of tile `t`'s element `x`. A flip's mirrored rows hold the
/// mirrored columns reversed.
fn virtual_index(a: &PassArgs, t: u64, x: u64) -> u64 {
    if a.mode != MODE_GLOBAL {
        return (t << a.tile_bits) + x;
    }
    let hi = a.stage - 1 - a.first_level;
    let lo = hi + 1 - a.levels;
    let c = a.log_cols;
    let col_base = (t & ((1u64 << (lo - c)) - 1)) << c;
    let block = (t >> (lo - c)) << (hi + 1);
    let (row, col) = (x >> c, x & ((1 << c) - 1));
    if a.first_level == 0 && row >= 1 << (a.levels - 1) {
        let mirrored = ((1u64 << lo) - 1) - col_base;
        block + (row << lo) + mirrored - col
    } else {
        block + (row << lo) + col_base + col
    }
}

fn memory_index(a: &PassArgs, v: u64) -> Option<u64> {
    let (row, col) = (v >> a.log_row, v & ((1u64 << a.log_row) - 1));
    (row < a.rows && col < a.row_len).then(|| row * a.row_len + col)
}

/// With `reversed_rows` (a fused tail), groups in the tile's upper half of rows take
/// their registers in reverse order.
fn round(tile: &mut [u32], lo: u32, levels: u32, flip: bool, mirror_low: u32, reversed_rows: bool) {
    let bits = tile.len().trailing_zeros();
    let r_count = 1u32 << levels;
    let low_mask = (1u32 << lo) - 1;
    let mirror = low_mask & !((1u32 << mirror_low) - 1);
    for g in 0..1u32 << (bits - levels) {
        let base = ((g >> lo) << (lo + levels)) | (g & low_mask);
        let reversed = reversed_rows && (base >> (bits - 1)) & 1 == 1;
        let slot: Vec<usize> = (0..r_count)
            .map(|r| if reversed { r_count - 1 - r } else { r })
            .map(|r| {
                let b = if flip && r >= r_count / 2 {
                    base ^ mirror
                } else {
                    base
                };
                (b | (r << lo)) as usize
            })
            .collect();
        network(tile, &slot, flip);
    }
}

/// A round's register network on the elements at `slot` (one per register): with
/// `flip`, register r against R-1-r first; then half-cleaners r against r + d.
fn network(tile: &mut [u32], slot: &[usize], flip: bool) {
    let r_count = slot.len();
    let levels = r_count.trailing_zeros();
    for s in 0..levels {
        let d = r_count >> (s + 1);
        for r in 0..r_count {
            if r & d == 0 {
                let p = if flip && s == 0 {
                    r_count - 1 - r
                } else {
                    r + d
                };
                let (i, j) = (slot[r], slot[p]);
                if tile[i] > tile[j] {
                    tile.swap(i, j);
                }
            }
        }
    }
}

/// A cluster round of `levels` levels on the tile's top bits, the first the stage's
/// flip: groups of one slice position p in 2^levels consecutive slices, the upper half
/// of a group at p's mirror.
fn cluster_round(tile: &mut [u32], levels: u32) {
    let slice_bits = tile.len().trailing_zeros() - LOG_CLUSTER;
    let mask = (1usize << slice_bits) - 1;
    let r_count = 1usize << levels;
    for group in 0..tile.len() >> levels {
        let (p, run) = (group & mask, group >> slice_bits);
        let slot: Vec<usize> = (0..r_count)
            .map(|r| {
                let at = if r >= r_count / 2 { p ^ mask } else { p };
                (((run << levels) | r) << slice_bits) | at
            })
            .collect();
        network(tile, &slot, true);
    }
}

/// The levels on slice bits `top..=bottom` of every slice, each a tile of its own.
fn slice_levels(tile: &mut [u32], top: u32, bottom: u32) {
    let slice_bits = tile.len().trailing_zeros() - LOG_CLUSTER;
    for slice in tile.chunks_mut(1 << slice_bits) {
        run_levels(slice, top, bottom, false, 0, false);
    }
}

/// `cluster_pass` on its one tile, the whole row: each slice sorted, then every stage
/// above a slice as a cluster round and the half-cleaners inside the slices.
fn cluster_pass(a: &PassArgs, tile: &mut [u32]) {
    assert_eq!(a.mode, MODE_SORT, "a cluster launch is a whole sort");
    let slice_bits = a.tile_bits - LOG_CLUSTER;
    for slice in tile.chunks_mut(1 << slice_bits) {
        sort_tile(slice);
    }
    for stage in slice_bits + 1..=a.tile_bits {
        cluster_round(tile, stage - slice_bits);
        slice_levels(tile, slice_bits - 1, 0);
    }
}

fn run_levels(
    tile: &mut [u32],
    top: u32,
    bottom: u32,
    mut flip: bool,
    mirror_low: u32,
    reversed_rows: bool,
) {
    let mut levels = (top - bottom + 1) % LOG_E;
    if levels == 0 {
        levels = LOG_E;
    }
    let mut hi = top;
    loop {
        let lo = hi + 1 - levels;
        round(tile, lo, levels, flip, mirror_low, reversed_rows);
        if lo == bottom {
            break;
        }
        flip = false;
        hi = lo - 1;
        levels = LOG_E;
    }
}

fn sort_tile(tile: &mut [u32]) {
    let bits = tile.len().trailing_zeros();
    let first = bits.min(LOG_E);
    for g in tile.chunks_mut(1 << first) {
        for stage in 1..=first {
            for level in 0..stage {
                let bit = stage - 1 - level;
                for r in 0..1usize << first {
                    if r & (1 << bit) == 0 {
                        let p = if level == 0 {
                            r ^ ((2 << bit) - 1)
                        } else {
                            r | (1 << bit)
                        };
                        if g[r] > g[p] {
                            g.swap(r, p);
                        }
                    }
                }
            }
        }
    }
    for stage in first + 1..=bits {
        run_levels(tile, stage - 1, 0, true, 0, false);
    }
}

/// Runs `launches` over `keys` (already ordered words; no transform).
pub(super) fn execute(launches: &[Launch], keys: &mut [u32]) {
    for l in launches {
        let a = &l.args;
        let size = 1u64 << a.tile_bits;
        let tiles = (a.rows << a.log_row) >> a.tile_bits;
        for t in 0..tiles {
            if memory_index(a, virtual_index(a, t, 0)).is_none() {
                continue;
            }
            let at: Vec<Option<u64>> = (0..size)
                .map(|x| memory_index(a, virtual_index(a, t, x)))
                .collect();
            let mut tile: Vec<u32> = at
                .iter()
                .map(|m| m.map_or(u32::MAX, |m| keys[m as usize]))
                .collect();
            match a.mode {
                _ if l.kernel == PassKernel::Cluster => cluster_pass(a, &mut tile),
                MODE_SORT => sort_tile(&mut tile),
                MODE_MERGE => run_levels(&mut tile, a.tile_bits - 1, 0, false, 0, false),
                _ => {
                    if a.tail_bits > 0 {
                        let reversed_rows = a.first_level == 0;
                        run_levels(&mut tile, a.tail_bits - 1, 0, false, 0, reversed_rows);
                    }
                    run_levels(
                        &mut tile,
                        a.tile_bits - 1,
                        a.log_cols,
                        a.first_level == 0,
                        a.log_cols,
                        false,
                    );
                }
            }
            for (m, k) in at.iter().zip(tile) {
                if let Some(m) = m {
                    keys[*m as usize] = k;
                }
            }
        }
    }
}
