//! Where the keys of a sort spread over several devices go: each device's part is sorted on
//! its own, then every part is cut so that device `g` receives, from each part, the keys of
//! global positions `starts[g] .. starts[g + 1]` (the prefix sums of the parts' lengths, so
//! that every device ends with as many keys as it started with).
//!
//! The cuts are exact and stable: keys are ordered by their ordered word (`crate::keys`),
//! then by the index of their part, then by their position in it. For each boundary `k`, a
//! search over ordered words finds the word `w` of the key at global rank `k - 1`: the
//! smallest word with at least `k` keys at or below it. Every key below `w` goes before the
//! boundary, and of the keys equal to `w`, the first ones in part order make up the rest.
//! Each round asks every part how many of its keys are at or below up to [`PROBES`] words
//! (a binary search per word on the device), so a 32-bit key takes 4 rounds and a 64-bit
//! one 8, whatever the lengths.

use crate::error::Result;

/// Words probed per boundary and round: each round narrows a boundary's range of candidate
/// words by a factor of `PROBES + 1`.
pub(crate) const PROBES: u64 = 256;

/// One boundary's search: the answer lies in `lo ..= hi`; `below` holds each part's count of
/// keys at or below `lo - 1` (zero when `lo` is 0) and `at_hi` each part's count at or below
/// `hi`.
struct Search {
    k: u64,
    lo: u64,
    hi: u64,
    below: Vec<u64>,
    at_hi: Vec<u64>,
}

impl Search {
    /// The words this round probes: every word of `lo .. hi` when there are at most
    /// [`PROBES`], else `PROBES` evenly spaced words strictly inside the range.
    fn probes(&self) -> Vec<u64> {
        let span = self.hi - self.lo;
        if span <= PROBES {
            return (self.lo..self.hi).collect();
        }
        (1..=PROBES)
            .map(|i| self.lo + ((u128::from(span) * u128::from(i)) / u128::from(PROBES + 1)) as u64)
            .collect()
    }

    /// Narrows the range with `counts[i][h]`, part `h`'s count at or below `probes[i]`.
    fn narrow(&mut self, probes: &[u64], counts: &[Vec<u64>]) {
        for (probe, per_part) in probes.iter().zip(counts) {
            let total: u64 = per_part.iter().sum();
            if total >= self.k {
                if *probe < self.hi {
                    self.hi = *probe;
                    self.at_hi.clone_from(per_part);
                }
            } else if *probe >= self.lo {
                self.lo = probe + 1;
                self.below.clone_from(per_part);
            }
        }
    }

    /// The cut of every part once the range is one word: the keys below it, then the keys
    /// equal to it in part order up to `k`.
    fn cuts(&self) -> Vec<u64> {
        let mut left = self.k - self.below.iter().sum::<u64>();
        self.below
            .iter()
            .zip(&self.at_hi)
            .map(|(&below, &at)| {
                let take = (at - below).min(left);
                left -= take;
                below + take
            })
            .collect()
    }
}

/// `cuts[g][h]`: how many keys of part `h` go to devices before `g`, for `g` in `0 ..= p`
/// (`cuts[0]` all zero, `cuts[p]` the lengths). `lens` are the parts' lengths, `max_word`
/// the largest ordered word of the key type, and `count(probes)` returns, for each probe,
/// each part's number of keys whose ordered word is at or below it (`[probe][part]`).
pub(crate) fn spread_cuts(
    lens: &[u64],
    max_word: u64,
    mut count: impl FnMut(&[u64]) -> Result<Vec<Vec<u64>>>,
) -> Result<Vec<Vec<u64>>> {
    let p = lens.len();
    let total: u64 = lens.iter().sum();
    let mut cuts = vec![vec![0; p]; p + 1];
    cuts[p] = lens.to_vec();
    // Boundaries at 0 or past every key cut nothing or everything.
    let mut searches: Vec<(usize, Search)> = Vec::new();
    let mut start = 0;
    for (g, &len) in lens.iter().enumerate().take(p.saturating_sub(1)) {
        start += len;
        if start == 0 {
            continue;
        }
        if start == total {
            cuts[g + 1] = lens.to_vec();
            continue;
        }
        searches.push((
            g + 1,
            Search {
                k: start,
                lo: 0,
                hi: max_word,
                below: vec![0; p],
                at_hi: lens.to_vec(),
            },
        ));
    }
    loop {
        let probes: Vec<Vec<u64>> = searches
            .iter()
            .map(|(_, s)| if s.lo < s.hi { s.probes() } else { Vec::new() })
            .collect();
        let all: Vec<u64> = probes.iter().flatten().copied().collect();
        if all.is_empty() {
            break;
        }
        let counts = count(&all)?;
        let mut at = 0;
        for ((_, search), probes) in searches.iter_mut().zip(&probes) {
            search.narrow(probes, &counts[at..at + probes.len()]);
            at += probes.len();
        }
    }
    for (g, search) in &searches {
        cuts[*g] = search.cuts();
    }
    Ok(cuts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model: concatenate (word, part, position), sort, and count per part among the
    /// first `k`.
    fn model(parts: &[Vec<u64>]) -> Vec<Vec<u64>> {
        let p = parts.len();
        let mut all: Vec<(u64, usize, usize)> = parts
            .iter()
            .enumerate()
            .flat_map(|(h, part)| part.iter().enumerate().map(move |(i, &w)| (w, h, i)))
            .collect();
        all.sort_unstable();
        let mut cuts = vec![vec![0; p]; p + 1];
        let mut k = 0;
        for g in 0..p {
            k += parts[g].len();
            for &(_, h, _) in &all[..k] {
                cuts[g + 1][h] += 1;
            }
        }
        cuts
    }

    fn check(mut parts: Vec<Vec<u64>>, max_word: u64) {
        for part in &mut parts {
            part.sort_unstable();
        }
        let lens: Vec<u64> = parts.iter().map(|p| p.len() as u64).collect();
        let mut rounds = 0;
        let cuts = spread_cuts(&lens, max_word, |probes| {
            rounds += 1;
            Ok(probes
                .iter()
                .map(|&w| {
                    parts
                        .iter()
                        .map(|p| p.partition_point(|&x| x <= w) as u64)
                        .collect()
                })
                .collect())
        })
        .unwrap();
        assert_eq!(cuts, model(&parts), "parts {parts:?}");
        assert!(
            rounds <= if max_word == u64::MAX { 8 } else { 4 },
            "{rounds} rounds"
        );
    }

    #[test]
    fn cuts_equal_the_model() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let lengths: [&[usize]; 8] = [
            &[0],
            &[5],
            &[0, 0],
            &[1, 0, 2],
            &[3, 3],
            &[0, 7, 0],
            &[17, 1, 33, 0],
            &[65, 63, 1, 2, 129],
        ];
        for max_word in [u64::from(u32::MAX), u64::MAX] {
            for lens in lengths {
                let kinds: [&dyn Fn(u64) -> u64; 5] = [
                    &|x| x & max_word,
                    &|_| 7,
                    &|x| x % 3,
                    &|x| if x % 2 == 0 { 0 } else { max_word },
                    &|x| (x % 5) << 20,
                ];
                for kind in kinds {
                    let parts = lens
                        .iter()
                        .map(|&n| (0..n).map(|_| kind(next())).collect())
                        .collect();
                    check(parts, max_word);
                }
            }
        }
    }

    #[test]
    fn sorted_and_reversed_concatenations() {
        let ascending: Vec<Vec<u64>> =
            vec![(0..10).collect(), (10..30).collect(), (30..31).collect()];
        check(ascending.clone(), u64::from(u32::MAX));
        let mut reversed = ascending;
        reversed.reverse();
        check(reversed, u64::MAX);
    }
}
