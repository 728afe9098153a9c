//! The index arithmetic that every executor shares: which elements a global pass's thread
//! holds, the comparators of a register network, and a tile's comparator for a bit.

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
