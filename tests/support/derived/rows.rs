//! Rows: sorts of many rows at once (`sort_rows*`), keys and pairs.

use super::*;

/// Row lengths: tiny, around the tile sizes, and longer than any tile.
pub(super) const ROW_LENS: [usize; 10] = [1, 2, 3, 31, 1000, 1024, 1025, 5000, 8193, 20_000];
pub(super) const ROW_COUNTS: [usize; 3] = [1, 2, 7];
/// A matrix the size of a real batch, when `BITONIC_TEST_MAX_N` allows it.
pub(super) const BIG_ROWS: (usize, usize) = (16_384, 1024);
/// Rows of keys longer than any tile, which GPUs merge each on its own: row lengths that
/// are not a multiple of 16 bytes (rows starting anywhere), two to five merge levels.
pub(super) const LONG_ROWS: [(usize, usize); 2] = [(3, 20_001), (2, 70_001)];

/// (rows, row_len) of a rows trial, each within `max_n` elements.
pub(super) fn row_shapes(
    lens: &[usize],
    counts: &[usize],
    extra: &[(usize, usize)],
    max_n: usize,
) -> Vec<(usize, usize)> {
    let mut shapes: Vec<(usize, usize)> = lens
        .iter()
        .flat_map(|&len| counts.iter().map(move |&rows| (rows, len)))
        .chain(extra.iter().copied())
        .filter(|&(rows, len)| rows * len <= max_n)
        .collect();
    shapes.dedup();
    shapes
}

pub(super) fn shape_name(rows: usize, row_len: usize) -> String {
    format!("{rows}x{row_len} (rows x row_len)")
}

pub(super) fn shape_seed(base: u64, id: &str, rows: usize, row_len: usize) -> u64 {
    input_seed(base, &format!("{id}::{rows}x"), row_len)
}

pub(super) fn row_matrix<K: DerivedKey>(
    keys: Keys,
    rows: usize,
    row_len: usize,
    rng: &mut StdRng,
) -> Vec<K> {
    keys.keys(rows * row_len, rng)
}

pub(super) fn rows_expected<K: TestKey>(input: &[K], row_len: usize, descending: bool) -> Vec<K> {
    input
        .chunks(row_len.max(1))
        .flat_map(|row| rust_sorted(row, descending))
        .collect()
}

pub(super) struct RowsCase {
    pub(super) id: String,
    pub(super) keys: Keys,
    pub(super) descending: bool,
    pub(super) shapes: Vec<(usize, usize)>,
}

impl RowsCase {
    pub(super) fn cost(&self, weight: u64) -> u64 {
        self.shapes
            .iter()
            .map(|&(r, l)| (r * l) as u64 * weight)
            .sum()
    }
}

pub(super) fn run_rows_keys<K: DerivedKey>(t: &Target, case: &RowsCase) -> Result<(), Failed> {
    for &(rows, row_len) in &case.shapes {
        let seed = shape_seed(t.seed, &case.id, rows, row_len);
        let input: Vec<K> = row_matrix(case.keys, rows, row_len, &mut rng_for(seed));
        let want = rows_expected(&input, row_len, case.descending);
        let mut got = input;
        let shape = shape_name(rows, row_len);
        let result = if case.descending {
            t.sorter
                .sort_rows(&mut got, row_len, bitonic::Order::Descending)
        } else {
            t.sorter
                .sort_rows(&mut got, row_len, bitonic::Order::Ascending)
        };
        result.map_err(|e| fail(t, &case.id, &shape, seed, format!("returned an error: {e}")))?;
        key_diff(&got, &want, row_len).map_err(|m| fail(t, &case.id, &shape, seed, m))?;
    }
    Ok(())
}

pub(super) fn rows_by_key<K: TestKey, V: bytemuck::Pod>(
    sorter: &Sorter,
    keys: &mut [K],
    values: &mut [V],
    row_len: usize,
    descending: bool,
) -> bitonic::Result<()> {
    if descending {
        sorter.sort_rows_by_key(keys, values, row_len, bitonic::Order::Descending)
    } else {
        sorter.sort_rows_by_key(keys, values, row_len, bitonic::Order::Ascending)
    }
}

pub(super) fn run_rows_pairs<K: DerivedKey, V: TestValue>(
    t: &Target,
    case: &RowsCase,
) -> Result<(), Failed> {
    for &(rows, row_len) in &case.shapes {
        let seed = shape_seed(t.seed, &case.id, rows, row_len);
        let mut rng = rng_for(seed);
        let keys_in: Vec<K> = row_matrix(case.keys, rows, row_len, &mut rng);
        let salt: u64 = rng.r#gen();
        let values_in: Vec<V> = (0..keys_in.len()).map(|i| V::make(i, salt)).collect();
        let shape = shape_name(rows, row_len);
        let fail = |msg: String| fail(t, &case.id, &shape, seed, msg);

        let (mut keys, mut values) = (keys_in.clone(), values_in.clone());
        rows_by_key(&t.sorter, &mut keys, &mut values, row_len, case.descending)
            .map_err(|e| fail(format!("returned an error: {e}")))?;
        let want = rows_expected(&keys_in, row_len, case.descending);
        key_diff(&keys, &want, row_len).map_err(fail)?;

        // Each row keeps its own (key, value) pairs.
        for r in 0..rows {
            let span = r * row_len..(r + 1) * row_len;
            let before = pair_multiset(&keys_in[span.clone()], &values_in[span.clone()]);
            if pair_multiset(&keys[span.clone()], &values[span.clone()]) != before {
                let stray = span.clone().find(|&i| {
                    before
                        .binary_search(&(keys[i].bits(), values[i].bits()))
                        .is_err()
                });
                return Err(fail(match stray {
                    Some(i) => format!(
                        "row {r}: output pair {i} (key {}, value {}) is not a pair of the \
                         row's input: a value did not move with its key or left its row",
                        show_key(keys[i]),
                        show_value(values[i])
                    ),
                    None => format!("row {r}: an input pair is missing and another duplicated"),
                }));
            }
        }

        // Bit for bit the CPU backend's result, where repeated keys leave room to differ.
        let keys_repeat = want
            .chunks(row_len)
            .any(|row| row.windows(2).any(|w| w[0].bits() == w[1].bits()));
        if let (Some(cpu), true) = (&t.reference, keys_repeat) {
            let (mut ref_keys, mut ref_values) = (keys_in.clone(), values_in.clone());
            rows_by_key(
                cpu,
                &mut ref_keys,
                &mut ref_values,
                row_len,
                case.descending,
            )
            .map_err(|e| fail(format!("the CPU backend returned an error: {e}")))?;
            let differs = (0..keys.len()).find(|&i| {
                keys[i].bits() != ref_keys[i].bits() || values[i].bits() != ref_values[i].bits()
            });
            if let Some(i) = differs {
                return Err(fail(format!(
                    "differs from the CPU backend at index {i} (row {}, column {}): got key \
                     {} value {}, the CPU backend has key {} value {}",
                    i / row_len,
                    i % row_len,
                    show_key(keys[i]),
                    show_value(values[i]),
                    show_key(ref_keys[i]),
                    show_value(ref_values[i])
                )));
            }
        }
    }
    Ok(())
}

/// Which shapes a rows trial loops over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shapes {
    /// Every row length with 1, 2 and 7 rows (and the big batch for u32 random keys).
    Full,
    /// Every row length once, with 2 or 7 rows: about a quarter of `Full`'s elements.
    Reduced,
}

/// Every row length, with 7 rows for the short ones and 2 for the long ones.
pub(super) const REDUCED_ROWS: [(usize, usize); 10] = [
    (7, 1),
    (2, 2),
    (7, 3),
    (7, 31),
    (7, 1000),
    (2, 1024),
    (7, 1025),
    (2, 5000),
    (2, 8193),
    (2, 20_000),
];

/// The shapes of a trial; `big` adds [`BIG_ROWS`] to `Full` (within `BITONIC_TEST_MAX_N`).
pub(super) fn shapes_of(shapes: Shapes, big: bool, cfg: &Config) -> Vec<(usize, usize)> {
    match shapes {
        Shapes::Full => {
            let extra: &[(usize, usize)] = if big { &[BIG_ROWS] } else { &[] };
            row_shapes(&ROW_LENS, &ROW_COUNTS, extra, cfg.max_n)
        }
        Shapes::Reduced => row_shapes(&[], &[], &REDUCED_ROWS, cfg.max_n),
    }
}

/// `sort_rows(_descending)` trials, one per order given.
pub(super) fn add_rows_keys<K: DerivedKey>(
    suite: &mut Suite,
    slot: &Slot,
    cfg: &Config,
    keys: Keys,
    shapes: Shapes,
    orders: &[bool],
) {
    for &descending in orders {
        let case = RowsCase {
            id: format!(
                "rows::{}::{}::{}::keys",
                K::NAME,
                keys.name(),
                order_name(descending)
            ),
            keys,
            descending,
            shapes: shapes_of(
                shapes,
                (K::NAME, keys, descending) == ("u32", Keys::RANDOM, false),
                cfg,
            )
            .into_iter()
            .chain(row_shapes(&[], &[], &LONG_ROWS, cfg.max_n))
            .collect(),
        };
        let (id, cost) = (case.id.clone(), case.cost(1));
        suite.add(slot, &id, cost, move |t| run_rows_keys::<K>(t, &case));
    }
}

/// `sort_rows_by_key(_descending)` trials with u32 values, one per order given.
pub(super) fn add_rows_pairs<K: DerivedKey>(
    suite: &mut Suite,
    slot: &Slot,
    cfg: &Config,
    keys: Keys,
    shapes: Shapes,
    orders: &[bool],
) {
    for &descending in orders {
        let case = RowsCase {
            id: format!(
                "rows::{}::{}::{}::pairs_u32",
                K::NAME,
                keys.name(),
                order_name(descending)
            ),
            keys,
            descending,
            shapes: shapes_of(shapes, false, cfg),
        };
        let (id, cost) = (case.id.clone(), case.cost(4));
        suite.add(slot, &id, cost, move |t| run_rows_pairs::<K, u32>(t, &case));
    }
}
