//! The radix selects of the GPU top-k: the plan of short rows selected on chip (one warp a
//! row on CUDA, one work-group a row on OpenCL), and the host models of the kernels' selects.

/// Rows the on-chip select takes at most: a warp (a work-group on OpenCL) holds a row's
/// ordered keys in on-chip memory.
const SELECT_MAX_ROW: u64 = 4096;

/// log2 of the largest `K` of the on-chip select: one warp (work-group) sorts the selected
/// words.
const SELECT_MAX_LOG_K: u32 = 8;

/// Shared memory of a select block at most: what every CUDA device gives without an opt-in.
pub(crate) const SELECT_BLOCK_BYTES: u32 = 48 * 1024;

/// Warps of a select block at most (its threads at most `TOP_K_THREADS`).
const SELECT_MAX_WARPS: u32 = crate::kernel_contract::TOP_K_THREADS / 32;

/// The top-k of short rows on CUDA (`top_k_select` in `cuda/top_k_select.cuh`): one warp per row
/// holds the row's ordered keys in shared memory, finds the `k`-th smallest by a radix select
/// of 8-bit digits, takes in position order every key below it and the first of those equal
/// to it, and sorts the `K` taken words. One launch that reads each key once and does work
/// linear in the row, where the tiles' network spends `log² K` comparators on every key, so
/// that many short rows (16384 of 1024 with k = 32) are bound by the tiles' compute. Rows of at most
/// [`SELECT_MAX_ROW`] keys of at most 32 bits, `K` up to 2^[`SELECT_MAX_LOG_K`]. OpenCL runs the
/// same select with one work-group a row (`top_k_select` in `kernels/top_k_select.clh`), which
/// has no warp's shuffles or ballots: its counts and slots go through local memory and
/// work-group barriers, in the same [`TopKSelect::row_bytes`].
#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TopKSelect {
    /// log2 of `K`, the power of two at or above `k`.
    pub(crate) log_k: u32,
    /// On-chip bytes of one row: `K` words of 8 bytes, the radix select's counts
    /// (`TOP_K_RADIX_WORDS`) and the row's keys of 4 bytes, rounded up to 8. A CUDA warp's
    /// part of its block's shared memory; an OpenCL work-group's local memory.
    pub(crate) row_bytes: u32,
    /// Warps (rows) of a CUDA block: as many as [`SELECT_BLOCK_BYTES`] holds, at most
    /// [`SELECT_MAX_WARPS`].
    pub(crate) warps: u32,
}

#[cfg_attr(not(any(feature = "cuda", feature = "opencl")), allow(dead_code))]
impl TopKSelect {
    /// The select for `k` of rows of `row_len` keys of `key_bytes`, or `None` where it does
    /// not apply.
    pub(crate) fn new(key_bytes: usize, row_len: u64, k: u64) -> Option<TopKSelect> {
        debug_assert!(k >= 1 && k <= row_len);
        let log_k = k.next_power_of_two().trailing_zeros();
        if key_bytes > 4 || row_len > SELECT_MAX_ROW || log_k > SELECT_MAX_LOG_K {
            return None;
        }
        let counts = u64::from(crate::kernel_contract::TOP_K_RADIX_WORDS) * 4;
        let row_bytes = ((8u64 << log_k) + counts + 4 * row_len).next_multiple_of(8) as u32;
        let warps = (SELECT_BLOCK_BYTES / row_bytes).clamp(1, SELECT_MAX_WARPS);
        Some(TopKSelect {
            log_k,
            row_bytes,
            warps,
        })
    }

    /// The CUDA block's dynamic shared memory.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn block_bytes(&self) -> u32 {
        self.warps * self.row_bytes
    }
}

/// The radix select of `radix_select` in `cuda/top_k_select.cuh` on the host: the `rank`-th
/// smallest (from 1) of `keys` of `key_bits`, 8 bits a pass from the top, and how many keys
/// equal to it the rank takes; with `settle`, a pass whose digit holds exactly the keys still
/// wanted returns the top of the digit's range and `u32::MAX`.
#[cfg(test)]
pub(crate) fn model_radix_select(
    keys: &[u32],
    rank: u32,
    key_bits: u32,
    settle: bool,
) -> (u32, u32) {
    let (mut prefix, mut mask, mut need) = (0u32, 0u32, rank);
    let mut shift = key_bits as i32 - 8;
    while shift >= 0 {
        let mut hist = [0u32; 256];
        for &x in keys.iter().filter(|&&x| x & mask == prefix) {
            hist[((x >> shift) & 255) as usize] += 1;
        }
        let (mut digit, mut before) = (0usize, 0u32);
        while before + hist[digit] < need {
            before += hist[digit];
            digit += 1;
        }
        prefix |= (digit as u32) << shift;
        mask |= 255 << shift;
        need -= before;
        if settle && hist[digit] == need {
            return (prefix | ((1u32 << shift) - 1), u32::MAX);
        }
        shift -= 8;
    }
    (prefix, need)
}

/// The select on the host, as one warp of `top_k_select` runs it on a row of ordered keys
/// of `key_bits`: the composite words (`key << 32 | position`) it takes, sorted.
#[cfg(test)]
pub(crate) fn emulate_select(ordered: &[u32], key_bits: u32, k: usize) -> Vec<u64> {
    let (last, need) = model_radix_select(ordered, k as u32, key_bits, true);
    let mut equal_seen = 0;
    let mut taken: Vec<u64> = Vec::new();
    for (c, &x) in ordered.iter().enumerate() {
        let take = x < last || (x == last && equal_seen < need);
        equal_seen += u32::from(x == last);
        if take {
            taken.push(u64::from(x) << 32 | c as u64);
        }
    }
    assert_eq!(taken.len(), k, "the select takes exactly k");
    taken.sort_unstable();
    taken
}

/// `top_k_candidates` on the host: the `k` smallest of distinct composite words in any
/// order, by a radix select of the keys and, where equal keys straddle the `k`-th, of the
/// positions of the keys equal to it; sorted.
#[cfg(test)]
pub(crate) fn emulate_candidates(words: &[u64], k: usize) -> Vec<u64> {
    let keys: Vec<u32> = words.iter().map(|&w| (w >> 32) as u32).collect();
    let (key, need) = model_radix_select(&keys, k as u32, 32, true);
    let mut last = u64::from(key) << 32 | u64::from(u32::MAX);
    if need != u32::MAX {
        let positions: Vec<u32> = words
            .iter()
            .filter(|&&w| (w >> 32) as u32 == key)
            .map(|&w| w as u32)
            .collect();
        last = u64::from(key) << 32 | u64::from(model_radix_select(&positions, need, 32, true).0);
    }
    let mut taken: Vec<u64> = words.iter().copied().filter(|&w| w <= last).collect();
    assert_eq!(taken.len(), k, "the candidates' select takes exactly k");
    taken.sort_unstable();
    taken
}

#[cfg(test)]
mod tests {
    use super::super::tests::xorshift;
    use super::*;

    #[test]
    fn the_select_takes_the_best_k_with_ties_to_the_lower_position() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for key_bits in [16u32, 32] {
            let top = if key_bits == 16 { 0xffff } else { u32::MAX };
            for row_len in [1usize, 2, 3, 31, 32, 33, 255, 1024, 1025, 4096] {
                for k in [1usize, 2, 7, 32, 100, 256] {
                    if k > row_len {
                        continue;
                    }
                    let rows: [Vec<u32>; 6] = [
                        (0..row_len).map(|_| next() as u32 & top).collect(),
                        vec![top; row_len],
                        (0..row_len).map(|_| next() as u32 % 3).collect(),
                        (0..row_len).map(|i| (row_len - i) as u32 & top).collect(),
                        (0..row_len).map(|i| (i % 17) as u32 * 0x0101).collect(),
                        (0..row_len)
                            .map(|_| (next() as u32 & 0x0f0f) | 0x3000)
                            .collect(),
                    ];
                    for ordered in rows {
                        let mut want: Vec<u64> = ordered
                            .iter()
                            .enumerate()
                            .map(|(c, &x)| u64::from(x) << 32 | c as u64)
                            .collect();
                        want.sort_unstable();
                        want.truncate(k);
                        assert_eq!(emulate_select(&ordered, key_bits, k), want, "{row_len} {k}");
                    }
                }
            }
        }
        // Candidates: distinct words in any order, keys with ties straddling the k-th.
        for distinct in [1u64, 3, 1000, 1 << 32] {
            for (n, k) in [(1usize, 1usize), (40, 7), (4096, 1024), (3000, 300)] {
                let mut words: Vec<u64> = (0..n as u64)
                    .map(|p| (next() % distinct) << 32 | (p * 2_654_435_761 % (1 << 32)))
                    .collect();
                words.reverse();
                let mut want = words.clone();
                want.sort_unstable();
                want.truncate(k);
                assert_eq!(emulate_candidates(&words, k), want, "{n} {k} {distinct}");
            }
        }
        let select = TopKSelect::new(4, 1024, 32).unwrap();
        assert_eq!((select.log_k, select.row_bytes, select.warps), (5, 5392, 8));
        let widest = TopKSelect::new(2, SELECT_MAX_ROW, 256).unwrap();
        assert!(widest.block_bytes() <= SELECT_BLOCK_BYTES && widest.row_bytes.is_multiple_of(8));
        assert!(TopKSelect::new(8, 1024, 32).is_none());
        assert!(TopKSelect::new(4, SELECT_MAX_ROW + 1, 32).is_none());
        assert!(TopKSelect::new(4, 1024, 257).is_none());
    }
}
