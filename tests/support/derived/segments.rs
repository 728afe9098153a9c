//! Segment sorts over offsets of every layout.

use super::*;

/// How segment offsets are laid out over the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layout {
    /// One segment of about 100k among tiny and empty ones, offsets not starting at 0 and
    /// ending before the data does.
    Huge,
    /// Random cut points, repeated ones (empty segments) included, from 0 to the end.
    Cover,
    /// Random cut points inside the data: elements before and after stay put.
    Inner,
    /// Offsets that make no segment or only empty ones: nothing moves.
    Empty,
}

impl Layout {
    pub(super) fn name(self) -> &'static str {
        match self {
            Layout::Huge => "huge",
            Layout::Cover => "cover",
            Layout::Inner => "inner",
            Layout::Empty => "empty",
        }
    }

    /// The data lengths a trial loops over.
    pub(super) fn lengths(self) -> Vec<usize> {
        match self {
            Layout::Huge => vec![100_000 + 2 * 1025 + 64],
            Layout::Cover | Layout::Inner => {
                vec![0, 1, 2, 3, 10, 63, 64, 65, 1000, 1025, 4097, 20_001]
            }
            Layout::Empty => vec![0, 1, 5, 1000],
        }
    }

    /// Offsets over `n` elements.
    pub(super) fn offsets(self, n: usize, rng: &mut StdRng) -> Vec<usize> {
        match self {
            Layout::Huge => {
                // 7 elements before, tiny and empty segments, the huge one, more tiny ones,
                // and the rest after the last offset.
                let sizes = [0, 1, 2, 0, 3, 100_000, 0, 1, 31, 1025, 0, 2, 1000];
                let mut offsets = vec![7];
                for s in sizes {
                    offsets.push(offsets.last().unwrap() + s);
                }
                assert!(
                    *offsets.last().unwrap() < n,
                    "the huge layout needs a longer input"
                );
                offsets
            }
            Layout::Cover | Layout::Inner => {
                let (lo, hi) = if self == Layout::Cover || n < 2 {
                    (0, n)
                } else {
                    (rng.gen_range(1..=n / 2), rng.gen_range(n / 2..n))
                };
                let cuts = rng.gen_range(0..=(n / 8).clamp(2, 200));
                let mut offsets: Vec<usize> = (0..cuts).map(|_| rng.gen_range(lo..=hi)).collect();
                offsets.extend([lo, hi]);
                // A repeated cut point now and then: empty segments.
                if let Some(&o) = offsets.get(2) {
                    offsets.push(o);
                }
                offsets.sort_unstable();
                offsets
            }
            Layout::Empty => match rng.gen_range(0..3) {
                0 => Vec::new(),
                1 => vec![rng.gen_range(0..=n)],
                _ => vec![n / 2; 4],
            },
        }
    }
}

pub(super) struct SegCase {
    pub(super) id: String,
    pub(super) keys: Keys,
    pub(super) layout: Layout,
    pub(super) descending: bool,
    pub(super) lengths: Vec<usize>,
}

pub(super) fn run_segments<K: DerivedKey>(t: &Target, case: &SegCase) -> Result<(), Failed> {
    for &n in &case.lengths {
        let seed = input_seed(t.seed, &case.id, n);
        let mut rng = rng_for(seed);
        let input: Vec<K> = case.keys.keys(n, &mut rng);
        let offsets = case.layout.offsets(n, &mut rng);
        let shape = format!("n={n}, {} offsets", offsets.len());
        let mut want = input.clone();
        for w in offsets.windows(2) {
            let sorted = rust_sorted(&want[w[0]..w[1]], case.descending);
            want[w[0]..w[1]].copy_from_slice(&sorted);
        }
        let mut got = input;
        if case.descending {
            t.sorter
                .sort_segments(&mut got, &offsets, bitonic::Order::Descending)
        } else {
            t.sorter
                .sort_segments(&mut got, &offsets, bitonic::Order::Ascending)
        }
        .map_err(|e| fail(t, &case.id, &shape, seed, format!("returned an error: {e}")))?;
        if let Some(i) = first_key_diff(&got, &want) {
            let segment = offsets.windows(2).position(|w| w[0] <= i && i < w[1]);
            let place = match segment {
                Some(s) => format!("segment {s} ({}..{})", offsets[s], offsets[s + 1]),
                None => "outside every segment (must stay put)".to_string(),
            };
            let msg = if i < got.len().min(want.len()) {
                format!(
                    "wrong key at index {i}, {place}: got {}, want {}; got {}, want {}",
                    show_key(got[i]),
                    show_key(want[i]),
                    around(&got, i),
                    around(&want, i)
                )
            } else {
                format!("got {} keys, want {}", got.len(), want.len())
            };
            return Err(fail(t, &case.id, &shape, seed, msg));
        }
    }
    Ok(())
}

pub(super) fn add_segments<K: DerivedKey>(
    suite: &mut Suite,
    slot: &Slot,
    cfg: &Config,
    plan: &[(Keys, Layout)],
) {
    for &(keys, layout) in plan {
        for descending in [false, true] {
            let case = SegCase {
                id: format!(
                    "segments::{}::{}::{}::{}",
                    K::NAME,
                    keys.name(),
                    layout.name(),
                    order_name(descending)
                ),
                keys,
                layout,
                descending,
                lengths: capped(layout.lengths(), cfg.max_n),
            };
            let cost = case.lengths.iter().map(|&n| n as u64 * 6).sum();
            let id = case.id.clone();
            suite.add(slot, &id, cost, move |t| run_segments::<K>(t, &case));
        }
    }
}
