//! The counting sort of one row of 16-bit keys alone in device memory.
//!
//! A 16-bit key is one of 2^16 ordered words, and equal words are equal keys, bit for bit.
//! So the sorted row is fixed by how many keys hold each word, and three launches sort it,
//! each reading or writing the keys once, where a merge-path sort of 2^28 keys takes a tile
//! sort and fourteen merge passes:
//!
//! 1. **count**: block `b` counts the ordered words of its `keys_per_block` consecutive keys
//!    in on-chip counters, `2^window_log` words at a time (one sweep over its keys per
//!    window, since 2^16 counters of 4 bytes fill more than a block's on-chip memory), and
//!    writes the window's counters to its row of the counts (`2^16` words a block). A thread
//!    takes [`COUNT_KEYS_PER_THREAD`] consecutive keys and adds runs of equal words with one
//!    atomic each, so that sorted rows and rows of one repeated key do not serialize on one
//!    counter;
//! 2. **starts**: one block sums each word's counts over the blocks and scans the sums into
//!    each word's first position in the sorted row: `2^16 + 1` starts, the last `n`;
//! 3. **fill**: a thread writes [`COUNT_KEYS_PER_THREAD`] consecutive positions, each with
//!    the key of the word whose starts bracket it (a binary search over the starts, then a
//!    walk).
//!
//! The scratch holds the counts (`blocks * 2^16` words of 4 bytes) and then the starts
//! (8 bytes each): [`CountingPlan::scratch_bytes`]. Which memory the launches touch depends
//! on the keys, so the oblivious mode never takes this plan; pairs keep merge path, whose
//! order of equal keys' values every backend reproduces.

use crate::kernel_contract::{COUNT_KEY_BITS, COUNT_KEYS_PER_THREAD};

/// One row of 16-bit keys alone takes the counting sort from this many keys on: below it
/// the counters' fixed work (2^16 of them written by every block, read and scanned once, in
/// four launches) is most of the sort, and merge path's few passes over a short row are
/// cheap. The fixed work costs about as much as merge path's sort of 2^22 keys, so the
/// threshold lies between that and 2^24, where counting is far ahead (`docs/performance.md`,
/// "16-bit keys").
pub(crate) const COUNTING_FROM: u64 = 1 << 23;

/// The fewest keys a block of the count launch takes: each block writes its 2^16 counters,
/// so a block counts at least as many keys as it writes counters.
const MIN_KEYS_PER_BLOCK: u64 = 1 << COUNT_KEY_BITS;

/// Blocks of the count launch per compute unit at most: one block per unit holds the
/// largest window its on-chip memory allows.
const BLOCKS_PER_UNIT: u64 = 1;

/// log2 of the 4-byte counters that `on_chip_bytes` of a block's on-chip memory hold, at
/// most one per word (`2^COUNT_KEY_BITS`): the largest window a backend can offer.
pub(crate) fn window_log_for(on_chip_bytes: u64) -> u32 {
    (on_chip_bytes / 4).max(1).ilog2().min(COUNT_KEY_BITS)
}

/// The launches of the counting sort of one row of `n` keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CountingPlan {
    /// Keys of the row.
    pub n: u64,
    /// Blocks of the count launch, each counting `keys_per_block` consecutive keys (the last
    /// block fewer).
    pub blocks: u64,
    /// Consecutive keys a block counts: a multiple of [`COUNT_KEYS_PER_THREAD`].
    pub keys_per_block: u64,
    /// log2 of the counters a block holds on chip: each sweep over its keys counts the
    /// words of one window of `2^window_log`.
    pub window_log: u32,
}

impl CountingPlan {
    /// The plan for `n` keys on a device of `compute_units` units whose blocks hold
    /// `2^max_window_log` counters (at most `2^16` are used).
    pub(crate) fn new(n: u64, compute_units: u32, max_window_log: u32) -> CountingPlan {
        let step = u64::from(COUNT_KEYS_PER_THREAD);
        let most_blocks = (u64::from(compute_units) * BLOCKS_PER_UNIT).max(1);
        let blocks = (n / MIN_KEYS_PER_BLOCK).clamp(1, most_blocks);
        let keys_per_block = n.div_ceil(blocks).div_ceil(step).max(1) * step;
        CountingPlan {
            n,
            blocks: n.div_ceil(keys_per_block).max(1),
            keys_per_block,
            window_log: max_window_log.min(COUNT_KEY_BITS),
        }
    }

    /// Sweeps of each block over its keys: one per window of counters.
    #[cfg(test)]
    pub(crate) fn sweeps(&self) -> u32 {
        1 << (COUNT_KEY_BITS - self.window_log)
    }

    /// Words of the counts (4 bytes each): `2^16` per block.
    pub(crate) fn counts_len(&self) -> u64 {
        self.blocks << COUNT_KEY_BITS
    }

    /// Where the starts begin in the scratch, in bytes (8-byte aligned).
    pub(crate) fn starts_offset(&self) -> u64 {
        (self.counts_len() * 4).next_multiple_of(8)
    }

    /// Bytes of the scratch: the counts, then `2^16 + 1` starts of 8 bytes.
    pub(crate) fn scratch_bytes(&self) -> u64 {
        self.starts_offset() + ((1u64 << COUNT_KEY_BITS) + 1) * 8
    }

    /// Threads of the fill launch: one per [`COUNT_KEYS_PER_THREAD`] positions.
    pub(crate) fn fill_threads(&self) -> u64 {
        self.n.div_ceil(u64::from(COUNT_KEYS_PER_THREAD))
    }
}

/// The counting sort of `words` (ordered 16-bit words) as the three launches of `plan` run
/// it: the blocks' counts window by window, the starts, and the fill. The tests check the
/// plans with it, and that it sorts.
#[cfg(test)]
pub(crate) fn emulate(plan: &CountingPlan, words: &mut [u16]) {
    let bins = 1usize << COUNT_KEY_BITS;
    let window = 1usize << plan.window_log;
    let mut counts = vec![0u32; plan.counts_len() as usize];
    for b in 0..plan.blocks as usize {
        let first = b * plan.keys_per_block as usize;
        let last = (first + plan.keys_per_block as usize).min(words.len());
        for sweep in 0..plan.sweeps() as usize {
            let mut on_chip = vec![0u32; window];
            for &w in &words[first.min(last)..last] {
                if usize::from(w) >> plan.window_log == sweep {
                    on_chip[usize::from(w) & (window - 1)] += 1;
                }
            }
            counts[b * bins + sweep * window..][..window].copy_from_slice(&on_chip);
        }
    }
    let mut starts = vec![0u64; bins + 1];
    for word in 0..bins {
        let total: u64 = (0..plan.blocks as usize)
            .map(|b| u64::from(counts[b * bins + word]))
            .sum();
        starts[word + 1] = starts[word] + total;
    }
    assert_eq!(starts[bins], plan.n, "every key counted once");
    for (p, out) in words.iter_mut().enumerate() {
        // The last word whose start is at or before p.
        let word = starts.partition_point(|&s| s <= p as u64) - 1;
        *out = word as u16;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_the_row_once() {
        for n in [
            1u64,
            7,
            8,
            9,
            65535,
            65536,
            65537,
            1 << 20,
            (1 << 20) + 3,
            1 << 28,
        ] {
            for units in [1u32, 3, 132] {
                let p = CountingPlan::new(n, units, 15);
                assert_eq!(p.keys_per_block % u64::from(COUNT_KEYS_PER_THREAD), 0);
                assert!(p.blocks <= u64::from(units).max(1), "{p:?}");
                assert!(p.blocks * p.keys_per_block >= n, "{p:?}");
                assert!(
                    (p.blocks - 1) * p.keys_per_block < n,
                    "{p:?}: an empty block"
                );
                assert!(
                    p.blocks == 1 || p.keys_per_block >= MIN_KEYS_PER_BLOCK,
                    "{p:?}"
                );
            }
        }
    }

    #[test]
    fn windows_and_scratch() {
        let p = CountingPlan::new(1 << 24, 4, 13);
        assert_eq!(p.sweeps(), 8);
        assert_eq!(p.counts_len(), 4 << 16);
        assert_eq!(p.starts_offset(), 16 << 16);
        assert_eq!(p.scratch_bytes(), (16 << 16) + 8 * 65537);
        assert_eq!(CountingPlan::new(10, 4, 20).window_log, 16);
        assert_eq!(CountingPlan::new(17, 4, 16).fill_threads(), 3);
        assert_eq!(window_log_for(232_448), 15);
        assert_eq!(window_log_for(48 * 1024 - 1024), 13);
        assert_eq!(window_log_for(1 << 20), 16);
        assert_eq!(window_log_for(3), 0);
    }

    #[test]
    fn the_model_sorts() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(16);
        for (n, window_log, units) in [
            (1usize, 16, 1),
            (9, 13, 2),
            (200_003, 14, 3),
            (1 << 18, 15, 5),
        ] {
            for few in [false, true] {
                let mut words: Vec<u16> = (0..n)
                    .map(|_| {
                        if few {
                            rng.gen_range(0..5u16) * 9000
                        } else {
                            rng.r#gen()
                        }
                    })
                    .collect();
                let mut want = words.clone();
                want.sort_unstable();
                emulate(&CountingPlan::new(n as u64, units, window_log), &mut words);
                assert!(words == want, "n={n} window 2^{window_log} few={few}");
            }
        }
    }
}
