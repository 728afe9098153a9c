//! Trials of the calls built on the network sorts: rows (`sort_rows*`), stable argsort
//! (`argsort*`), stable key-value sorts (`sort_by_key_stable*`) and segments
//! (`sort_segments*`). Included by `suite.rs` with `#[path = "support/derived.rs"] mod
//! derived;`, so every target of the suite gets them, named `<target>::rows::...`,
//! `<target>::argsort::...`, `<target>::argsort_rows::...`, `<target>::stable::...`,
//! `<target>::segments::...` and `<target>::errors::{rows,derived}`.
//!
//! Expected results come from Rust's own sorts: `sort_unstable` / `sort_by(total_cmp)` per
//! row or segment, and the stable `sort_by` on indices or pairs for the stable calls, which
//! fixes every output element, so whole vectors are compared. Row key-value results must
//! also equal the CPU backend's bit for bit, as plain key-value sorts must.

use std::cmp::Ordering;
use std::fmt::{Debug, Display};

use bitonic::{Error, Sorter};
use libtest_mimic::Failed;
use rand::Rng;
use rand::rngs::StdRng;

use crate::support::{
    Pattern, TestKey, TestValue, around, first_key_diff, input_seed, pair_multiset, rng_for,
    show_key, show_value,
};
use crate::targets::{Slot, Target};
use crate::{Config, Suite, capped, order_name};

// ---------------------------------------------------------------------------------------
// Keys, inputs and messages.

/// A key type of these trials: its total order, and a small pool of edge values.
pub trait DerivedKey: TestKey {
    /// Rust's order of the type: `cmp` for integers, `total_cmp` for floats.
    fn total(a: &Self, b: &Self) -> Ordering;
    /// A few edge values, drawn from with repetition by [`Keys::Edges`]: for floats, both
    /// zeros, NaNs of both signs and payloads, infinities, so that ties and the values
    /// `total_cmp` tells apart (-0.0 vs +0.0) are both frequent.
    fn edges() -> Vec<Self>;
}

macro_rules! int_derived {
    ($($t:ty),*) => {$(
        impl DerivedKey for $t {
            fn total(a: &Self, b: &Self) -> Ordering {
                a.cmp(b)
            }
            fn edges() -> Vec<Self> {
                vec![<$t>::MIN, <$t>::MAX, 0, 1, <$t>::MAX - 1]
            }
        }
    )*};
}

int_derived!(u8, u16, u32, i64);

macro_rules! float_derived {
    ($($t:ident),*) => {$(
        impl DerivedKey for $t {
            fn total(a: &Self, b: &Self) -> Ordering {
                a.total_cmp(b)
            }
            fn edges() -> Vec<Self> {
                let quiet_payload = $t::from_bits($t::NAN.to_bits() | 1);
                vec![
                    0.0,
                    -0.0,
                    $t::NAN,
                    -$t::NAN,
                    quiet_payload,
                    -quiet_payload,
                    $t::INFINITY,
                    $t::NEG_INFINITY,
                    1.0,
                    -1.0,
                ]
            }
        }
    )*};
}

float_derived!(f32, f64);

/// How the keys of an input are laid out: the suite's patterns, or edge values only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    /// One of the suite's patterns.
    Base(Pattern),
    /// Draws from [`DerivedKey::edges`]: many ties among edge values.
    Edges,
}

impl Keys {
    const RANDOM: Keys = Keys::Base(Pattern::Random);
    const FEW: Keys = Keys::Base(Pattern::Few);
    const SPECIAL: Keys = Keys::Base(Pattern::Special);
    const EQUAL: Keys = Keys::Base(Pattern::Equal);
    const SORTED: Keys = Keys::Base(Pattern::Sorted);
    const REVERSED: Keys = Keys::Base(Pattern::Reversed);

    fn name(self) -> &'static str {
        match self {
            Keys::Base(p) => p.name(),
            Keys::Edges => "edges",
        }
    }

    fn keys<K: DerivedKey>(self, n: usize, rng: &mut StdRng) -> Vec<K> {
        match self {
            Keys::Base(p) => p.keys(n, rng),
            Keys::Edges => {
                let pool = K::edges();
                (0..n).map(|_| pool[rng.gen_range(0..pool.len())]).collect()
            }
        }
    }
}

/// A failure of trial `id` on `t`, naming the shape or length, the seed and the base seed.
fn fail(t: &Target, id: &str, shape: &str, seed: u64, msg: impl Display) -> Failed {
    format!(
        "{}::{id}: {shape}, input seed {seed:#018x} (base seed {:#x}): {msg}",
        t.label, t.seed
    )
    .into()
}

/// `keys` sorted as Rust sorts them, reversed for descending.
fn rust_sorted<K: TestKey>(keys: &[K], descending: bool) -> Vec<K> {
    let mut want = keys.to_vec();
    K::reference_sort(&mut want);
    if descending {
        want.reverse();
    }
    want
}

/// The stable permutation Rust's `sort_by` gives: ties keep ascending index.
fn rust_argsort<K: DerivedKey>(keys: &[K], descending: bool) -> Vec<u32> {
    let mut idx: Vec<usize> = (0..keys.len()).collect();
    if descending {
        idx.sort_by(|&a, &b| K::total(&keys[b], &keys[a]));
    } else {
        idx.sort_by(|&a, &b| K::total(&keys[a], &keys[b]));
    }
    idx.into_iter().map(|i| i as u32).collect()
}

/// Names a wrong key at flat position `i` of a `row_len`-wide matrix.
fn key_diff<K: TestKey>(got: &[K], want: &[K], row_len: usize) -> Result<(), String> {
    let Some(i) = first_key_diff(got, want) else {
        return Ok(());
    };
    if i >= got.len().min(want.len()) {
        return Err(format!("got {} keys, want {}", got.len(), want.len()));
    }
    Err(format!(
        "wrong key at index {i} (row {}, column {}): got {}, want {}; got {}, want {}",
        i / row_len.max(1),
        i % row_len.max(1),
        show_key(got[i]),
        show_key(want[i]),
        around(got, i),
        around(want, i)
    ))
}

/// `Err(InvalidConfig)` wanted, and the slice left as it was.
fn want_invalid<T: Debug, K: TestKey>(
    call: &str,
    result: &bitonic::Result<T>,
    after: &[K],
    before: &[K],
) -> Result<(), Failed> {
    if !matches!(result, Err(Error::InvalidConfig(_))) {
        return Err(format!("{call}: want Err(InvalidConfig), got {result:?}").into());
    }
    if first_key_diff(after, before).is_some() {
        return Err(format!("{call}: the call failed but changed the data").into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Rows.

/// Row lengths: tiny, around the tile sizes, and longer than any tile.
const ROW_LENS: [usize; 10] = [1, 2, 3, 31, 1000, 1024, 1025, 5000, 8193, 20_000];
const ROW_COUNTS: [usize; 3] = [1, 2, 7];
/// A matrix the size of a real batch, when `BITONIC_TEST_MAX_N` allows it.
const BIG_ROWS: (usize, usize) = (16_384, 1024);

/// (rows, row_len) of a rows trial, each within `max_n` elements.
fn row_shapes(
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

fn shape_name(rows: usize, row_len: usize) -> String {
    format!("{rows}x{row_len} (rows x row_len)")
}

fn shape_seed(base: u64, id: &str, rows: usize, row_len: usize) -> u64 {
    input_seed(base, &format!("{id}::{rows}x"), row_len)
}

fn row_matrix<K: DerivedKey>(keys: Keys, rows: usize, row_len: usize, rng: &mut StdRng) -> Vec<K> {
    keys.keys(rows * row_len, rng)
}

fn rows_expected<K: TestKey>(input: &[K], row_len: usize, descending: bool) -> Vec<K> {
    input
        .chunks(row_len.max(1))
        .flat_map(|row| rust_sorted(row, descending))
        .collect()
}

struct RowsCase {
    id: String,
    keys: Keys,
    descending: bool,
    shapes: Vec<(usize, usize)>,
}

impl RowsCase {
    fn cost(&self, weight: u64) -> u64 {
        self.shapes
            .iter()
            .map(|&(r, l)| (r * l) as u64 * weight)
            .sum()
    }
}

fn run_rows_keys<K: DerivedKey>(t: &Target, case: &RowsCase) -> Result<(), Failed> {
    for &(rows, row_len) in &case.shapes {
        let seed = shape_seed(t.seed, &case.id, rows, row_len);
        let input: Vec<K> = row_matrix(case.keys, rows, row_len, &mut rng_for(seed));
        let want = rows_expected(&input, row_len, case.descending);
        let mut got = input;
        let shape = shape_name(rows, row_len);
        let result = if case.descending {
            t.sorter.sort_rows_descending(&mut got, row_len)
        } else {
            t.sorter.sort_rows(&mut got, row_len)
        };
        result.map_err(|e| fail(t, &case.id, &shape, seed, format!("returned an error: {e}")))?;
        key_diff(&got, &want, row_len).map_err(|m| fail(t, &case.id, &shape, seed, m))?;
    }
    Ok(())
}

fn rows_by_key<K: TestKey, V: bytemuck::Pod>(
    sorter: &Sorter,
    keys: &mut [K],
    values: &mut [V],
    row_len: usize,
    descending: bool,
) -> bitonic::Result<()> {
    if descending {
        sorter.sort_rows_by_key_descending(keys, values, row_len)
    } else {
        sorter.sort_rows_by_key(keys, values, row_len)
    }
}

fn run_rows_pairs<K: DerivedKey, V: TestValue>(t: &Target, case: &RowsCase) -> Result<(), Failed> {
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
enum Shapes {
    /// Every row length with 1, 2 and 7 rows (and the big batch for u32 random keys).
    Full,
    /// Every row length once, with 2 or 7 rows: about a quarter of `Full`'s elements.
    Reduced,
}

/// Every row length, with 7 rows for the short ones and 2 for the long ones.
const REDUCED_ROWS: [(usize, usize); 10] = [
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
fn shapes_of(shapes: Shapes, big: bool, cfg: &Config) -> Vec<(usize, usize)> {
    match shapes {
        Shapes::Full => {
            let extra: &[(usize, usize)] = if big { &[BIG_ROWS] } else { &[] };
            row_shapes(&ROW_LENS, &ROW_COUNTS, extra, cfg.max_n)
        }
        Shapes::Reduced => row_shapes(&[], &[], &REDUCED_ROWS, cfg.max_n),
    }
}

/// `sort_rows(_descending)` trials, one per order given.
fn add_rows_keys<K: DerivedKey>(
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
            ),
        };
        let (id, cost) = (case.id.clone(), case.cost(1));
        suite.add(slot, &id, cost, move |t| run_rows_keys::<K>(t, &case));
    }
}

/// `sort_rows_by_key(_descending)` trials with u32 values, one per order given.
fn add_rows_pairs<K: DerivedKey>(
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

// ---------------------------------------------------------------------------------------
// Argsort.

/// 0..=3 and 2^k - 1, 2^k, 2^k + 1 for k in 2..=top.
fn pow_lengths(top: u32) -> Vec<usize> {
    let mut lengths: Vec<usize> = (0..=3).collect();
    for k in 2..=top {
        lengths.extend([(1usize << k) - 1, 1 << k, (1 << k) + 1]);
    }
    lengths.sort_unstable();
    lengths.dedup();
    lengths
}

/// About a million, for the trials that get one long input.
const MILLION: usize = 1_000_003;

fn index_diff<K: TestKey>(keys: &[K], got: &[u32], want: &[u32]) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) else {
        return Err(format!("got {} indices, want {}", got.len(), want.len()));
    };
    let show = |p: u32| {
        keys.get(p as usize)
            .map_or_else(|| "out of range".to_string(), |&k| show_key(k))
    };
    let lo = i.saturating_sub(2);
    let hi = (i + 3).min(got.len()).min(want.len());
    Err(format!(
        "wrong index at position {i}: got {} (key {}), want {} (key {}); got [{lo}..{hi}] = \
         {:?}, want {:?}",
        got[i],
        show(got[i]),
        want[i],
        show(want[i]),
        &got[lo..hi],
        &want[lo..hi]
    ))
}

struct ArgCase {
    id: String,
    keys: Keys,
    descending: bool,
    lengths: Vec<usize>,
}

fn run_argsort<K: DerivedKey>(t: &Target, case: &ArgCase) -> Result<(), Failed> {
    for &n in &case.lengths {
        let seed = input_seed(t.seed, &case.id, n);
        let keys: Vec<K> = case.keys.keys(n, &mut rng_for(seed));
        let shape = format!("n={n}");
        let got = if case.descending {
            t.sorter.argsort_descending(&keys)
        } else {
            t.sorter.argsort(&keys)
        }
        .map_err(|e| fail(t, &case.id, &shape, seed, format!("returned an error: {e}")))?;
        let want = rust_argsort(&keys, case.descending);
        index_diff(&keys, &got, &want).map_err(|m| fail(t, &case.id, &shape, seed, m))?;
    }
    Ok(())
}

fn run_argsort_rows<K: DerivedKey>(t: &Target, case: &RowsCase) -> Result<(), Failed> {
    for &(rows, row_len) in &case.shapes {
        let seed = shape_seed(t.seed, &case.id, rows, row_len);
        let keys: Vec<K> = row_matrix(case.keys, rows, row_len, &mut rng_for(seed));
        let shape = shape_name(rows, row_len);
        let got = if case.descending {
            t.sorter.argsort_rows_descending(&keys, row_len)
        } else {
            t.sorter.argsort_rows(&keys, row_len)
        }
        .map_err(|e| fail(t, &case.id, &shape, seed, format!("returned an error: {e}")))?;
        let want: Vec<u32> = keys
            .chunks(row_len)
            .flat_map(|row| rust_argsort(row, case.descending))
            .collect();
        if got != want {
            let r = got
                .chunks(row_len)
                .zip(want.chunks(row_len))
                .position(|(g, w)| g != w)
                .unwrap_or(rows);
            let span = (r * row_len).min(keys.len())..((r + 1) * row_len).min(keys.len());
            let msg = match index_diff(
                &keys[span.clone()],
                got.get(span.clone()).unwrap_or(&[]),
                &want[span.clone()],
            ) {
                Err(m) => format!("row {r}: {m}"),
                Ok(()) => format!("got {} indices, want {}", got.len(), want.len()),
            };
            return Err(fail(t, &case.id, &shape, seed, msg));
        }
    }
    Ok(())
}

fn add_argsort<K: DerivedKey>(suite: &mut Suite, slot: &Slot, cfg: &Config, plan: &[(Keys, u32)]) {
    for &(keys, top) in plan {
        for descending in [false, true] {
            // The largest powers of two in one order; the other order stops at 2^13.
            let mut lengths = pow_lengths(if descending { top.min(13) } else { top });
            if (K::NAME, keys, descending) == ("u32", Keys::FEW, false) {
                lengths.push(MILLION);
            }
            let case = ArgCase {
                id: format!(
                    "argsort::{}::{}::{}",
                    K::NAME,
                    keys.name(),
                    order_name(descending)
                ),
                keys,
                descending,
                lengths: capped(lengths, cfg.max_n),
            };
            let cost = case.lengths.iter().map(|&n| n as u64 * 6).sum();
            let id = case.id.clone();
            suite.add(slot, &id, cost, move |t| run_argsort::<K>(t, &case));
        }
    }
}

fn add_argsort_rows<K: DerivedKey>(suite: &mut Suite, slot: &Slot, cfg: &Config, keys: Keys) {
    for descending in [false, true] {
        let case = RowsCase {
            id: format!(
                "argsort_rows::{}::{}::{}",
                K::NAME,
                keys.name(),
                order_name(descending)
            ),
            keys,
            descending,
            shapes: row_shapes(
                &[1, 2, 3, 31, 1000, 1025, 5000],
                &ROW_COUNTS,
                &[(2, 8193)],
                cfg.max_n,
            ),
        };
        let (id, cost) = (case.id.clone(), case.cost(6));
        suite.add(slot, &id, cost, move |t| run_argsort_rows::<K>(t, &case));
    }
}

// ---------------------------------------------------------------------------------------
// Stable key-value sorts.

/// A value of a stable sort: any `Copy` type, distinct for distinct input positions.
pub trait StableValue: Copy + PartialEq + Debug + Send + 'static {
    /// The type's name in trial names.
    const NAME: &'static str;
    /// The value of input position `i`.
    fn make(i: usize, salt: u64) -> Self;
}

impl StableValue for u16 {
    const NAME: &'static str = "u16";
    fn make(i: usize, salt: u64) -> Self {
        // Distinct below 2^16 positions; the trials stay below that for u16 values.
        (i as u16).wrapping_mul(0x9E37) ^ salt as u16
    }
}

impl StableValue for [u8; 3] {
    const NAME: &'static str = "u8x3";
    fn make(i: usize, salt: u64) -> Self {
        let w = (i as u32).wrapping_mul(0x9E37_79B9) ^ salt as u32;
        let b = w.to_le_bytes();
        [b[0], b[1], b[2] ^ (i >> 24) as u8]
    }
}

impl StableValue for u128 {
    const NAME: &'static str = "u128";
    fn make(i: usize, salt: u64) -> Self {
        (u128::from(salt) << 64 | i as u128).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)
    }
}

impl StableValue for (u32, u16) {
    const NAME: &'static str = "u32_u16";
    fn make(i: usize, salt: u64) -> Self {
        (i as u32 ^ salt as u32, (salt >> 32) as u16 ^ i as u16)
    }
}

struct StableCase {
    id: String,
    keys: Keys,
    descending: bool,
    lengths: Vec<usize>,
}

fn run_stable<K: DerivedKey, V: StableValue>(t: &Target, case: &StableCase) -> Result<(), Failed> {
    for &n in &case.lengths {
        let seed = input_seed(t.seed, &case.id, n);
        let mut rng = rng_for(seed);
        let keys_in: Vec<K> = case.keys.keys(n, &mut rng);
        let salt: u64 = rng.r#gen();
        let values_in: Vec<V> = (0..n).map(|i| V::make(i, salt)).collect();
        let shape = format!("n={n}");
        let fail = |msg: String| fail(t, &case.id, &shape, seed, msg);

        let (mut keys, mut values) = (keys_in.clone(), values_in.clone());
        if case.descending {
            t.sorter
                .sort_by_key_stable_descending(&mut keys, &mut values)
        } else {
            t.sorter.sort_by_key_stable(&mut keys, &mut values)
        }
        .map_err(|e| fail(format!("returned an error: {e}")))?;

        let mut want: Vec<(K, V)> = keys_in
            .iter()
            .copied()
            .zip(values_in.iter().copied())
            .collect();
        if case.descending {
            want.sort_by(|a, b| K::total(&b.0, &a.0));
        } else {
            want.sort_by(|a, b| K::total(&a.0, &b.0));
        }
        let want_keys: Vec<K> = want.iter().map(|p| p.0).collect();
        key_diff(&keys, &want_keys, n).map_err(fail)?;
        if let Some(i) = (0..n).find(|&i| values[i] != want[i].1) {
            return Err(fail(format!(
                "wrong value at index {i} (key {}): got {:?}, want {:?} (Rust's stable sort_by)",
                show_key(keys[i]),
                values[i],
                want[i].1
            )));
        }
    }
    Ok(())
}

fn add_stable<K: DerivedKey, V: StableValue>(
    suite: &mut Suite,
    slot: &Slot,
    cfg: &Config,
    keys: Keys,
    top: u32,
) {
    for descending in [false, true] {
        let case = StableCase {
            id: format!(
                "stable::{}::{}::{}::{}",
                K::NAME,
                keys.name(),
                order_name(descending),
                V::NAME
            ),
            keys,
            descending,
            lengths: capped(pow_lengths(top), cfg.max_n),
        };
        let cost = case.lengths.iter().map(|&n| n as u64 * 6).sum();
        let id = case.id.clone();
        suite.add(slot, &id, cost, move |t| run_stable::<K, V>(t, &case));
    }
}

// ---------------------------------------------------------------------------------------
// Segments.

/// How segment offsets are laid out over the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
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
    fn name(self) -> &'static str {
        match self {
            Layout::Huge => "huge",
            Layout::Cover => "cover",
            Layout::Inner => "inner",
            Layout::Empty => "empty",
        }
    }

    /// The data lengths a trial loops over.
    fn lengths(self) -> Vec<usize> {
        match self {
            Layout::Huge => vec![100_000 + 2 * 1025 + 64],
            Layout::Cover | Layout::Inner => {
                vec![0, 1, 2, 3, 10, 63, 64, 65, 1000, 1025, 4097, 20_001]
            }
            Layout::Empty => vec![0, 1, 5, 1000],
        }
    }

    /// Offsets over `n` elements.
    fn offsets(self, n: usize, rng: &mut StdRng) -> Vec<usize> {
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

struct SegCase {
    id: String,
    keys: Keys,
    layout: Layout,
    descending: bool,
    lengths: Vec<usize>,
}

fn run_segments<K: DerivedKey>(t: &Target, case: &SegCase) -> Result<(), Failed> {
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
            t.sorter.sort_segments_descending(&mut got, &offsets)
        } else {
            t.sorter.sort_segments(&mut got, &offsets)
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

fn add_segments<K: DerivedKey>(
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

// ---------------------------------------------------------------------------------------
// Errors.

/// Shapes that are not whole rows: (length, row_len).
const NOT_ROWS: [(usize, usize); 8] = [
    (10, 3),
    (1, 0),
    (5, 0),
    (1000, 7),
    (1025, 1024),
    (3, 4),
    (2, 3),
    (20_001, 20_000),
];

fn check_rows_errors<K: DerivedKey>(t: &Target) -> Result<(), Failed> {
    for (n, row_len) in NOT_ROWS {
        let seed = input_seed(t.seed, "errors::rows", n * 31 + row_len);
        let input: Vec<K> = Keys::RANDOM.keys(n, &mut rng_for(seed));
        let values_in: Vec<u32> = (0..n as u32).collect();
        let what = format!("{} {} keys, row_len {row_len}", n, K::NAME);
        let label = &t.label;
        for descending in [false, true] {
            let suffix = if descending { "_descending" } else { "" };
            let mut data = input.clone();
            let result = if descending {
                t.sorter.sort_rows_descending(&mut data, row_len)
            } else {
                t.sorter.sort_rows(&mut data, row_len)
            };
            want_invalid(
                &format!("{label}: sort_rows{suffix} of {what}"),
                &result,
                &data,
                &input,
            )?;

            let (mut keys, mut values) = (input.clone(), values_in.clone());
            let result = rows_by_key(&t.sorter, &mut keys, &mut values, row_len, descending);
            let call = format!("{label}: sort_rows_by_key{suffix} of {what}");
            want_invalid(&call, &result, &keys, &input)?;
            if values != values_in {
                return Err(format!("{call}: the call failed but changed the values").into());
            }

            let result = if descending {
                t.sorter.argsort_rows_descending(&input, row_len)
            } else {
                t.sorter.argsort_rows(&input, row_len)
            };
            want_invalid(
                &format!("{label}: argsort_rows{suffix} of {what}"),
                &result,
                &input,
                &input,
            )?;
        }
    }
    // No data is zero rows of any length, row_len 0 included.
    for row_len in [0, 1, 5] {
        for descending in [false, true] {
            let suffix = if descending { "_descending" } else { "" };
            let mut empty: Vec<K> = Vec::new();
            let mut none: Vec<u32> = Vec::new();
            let results = [
                (
                    "sort_rows",
                    if descending {
                        t.sorter.sort_rows_descending(&mut empty, row_len)
                    } else {
                        t.sorter.sort_rows(&mut empty, row_len)
                    },
                ),
                (
                    "sort_rows_by_key",
                    rows_by_key(&t.sorter, &mut empty, &mut none, row_len, descending),
                ),
            ];
            for (call, result) in results {
                if result.is_err() {
                    return Err(format!(
                        "{}: {call}{suffix} of no {} keys, row_len {row_len}: want Ok, got {result:?}",
                        t.label,
                        K::NAME
                    )
                    .into());
                }
            }
            let result = if descending {
                t.sorter.argsort_rows_descending(&empty, row_len)
            } else {
                t.sorter.argsort_rows(&empty, row_len)
            };
            if !matches!(&result, Ok(v) if v.is_empty()) {
                return Err(format!(
                    "{}: argsort_rows{suffix} of no {} keys, row_len {row_len}: want Ok([]), got \
                     {result:?}",
                    t.label,
                    K::NAME
                )
                .into());
            }
        }
    }
    Ok(())
}

fn check_segment_errors<K: DerivedKey>(t: &Target) -> Result<(), Failed> {
    for n in [0usize, 1, 10, 1000] {
        let seed = input_seed(t.seed, "errors::segments", n);
        let input: Vec<K> = Keys::RANDOM.keys(n, &mut rng_for(seed));
        let bad: Vec<Vec<usize>> = vec![
            vec![n + 1],
            vec![0, n + 1],
            vec![0, n / 2, n + 7],
            vec![n, n + 1],
            vec![n / 2 + 1, n / 2],
            vec![2, 1, n],
            vec![0, n / 2 + 1, n / 2, n],
            vec![1, 0],
        ];
        for offsets in bad {
            for descending in [false, true] {
                let suffix = if descending { "_descending" } else { "" };
                let mut data = input.clone();
                let result = if descending {
                    t.sorter.sort_segments_descending(&mut data, &offsets)
                } else {
                    t.sorter.sort_segments(&mut data, &offsets)
                };
                let call = format!(
                    "{}: sort_segments{suffix} of {n} {} keys with offsets {offsets:?}",
                    t.label,
                    K::NAME
                );
                want_invalid(&call, &result, &data, &input)?;
            }
        }
    }
    Ok(())
}

fn check_length_errors(t: &Target) -> Result<(), Failed> {
    for (n_keys, n_values) in [(10, 9), (0, 1), (1, 0), (1000, 1001)] {
        for descending in [false, true] {
            let keys_in: Vec<u32> = (0..n_keys as u32).rev().collect();
            let values_in: Vec<(u32, u16)> = (0..n_values).map(|i| (i as u32, 7)).collect();
            let (mut keys, mut values) = (keys_in.clone(), values_in.clone());
            let result = if descending {
                t.sorter
                    .sort_by_key_stable_descending(&mut keys, &mut values)
            } else {
                t.sorter.sort_by_key_stable(&mut keys, &mut values)
            };
            let call = format!(
                "{}: sort_by_key_stable{} with {n_keys} keys and {n_values} values",
                t.label,
                if descending { "_descending" } else { "" }
            );
            if !matches!(result, Err(Error::LengthMismatch { keys, values }) if keys == n_keys && values == n_values)
            {
                return Err(format!("{call}: want Err(LengthMismatch), got {result:?}").into());
            }
            if keys != keys_in || values != values_in {
                return Err(format!("{call}: the call failed but changed the slices").into());
            }

            let (mut keys, mut values) = (keys_in.clone(), vec![0u32; n_values]);
            let result = rows_by_key(&t.sorter, &mut keys, &mut values, 1, descending);
            if !matches!(result, Err(Error::LengthMismatch { .. })) || keys != keys_in {
                return Err(format!(
                    "{}: sort_rows_by_key with {n_keys} keys and {n_values} values, row_len 1: \
                     want Err(LengthMismatch) and the slices unchanged, got {result:?}",
                    t.label
                )
                .into());
            }
        }
    }
    // Empty inputs: nothing to do, no error.
    let empty: [f32; 0] = [];
    for (call, result) in [
        ("argsort", t.sorter.argsort(&empty)),
        ("argsort_descending", t.sorter.argsort_descending(&empty)),
    ] {
        if !matches!(&result, Ok(v) if v.is_empty()) {
            return Err(format!(
                "{}: {call} of no keys: want Ok([]), got {result:?}",
                t.label
            )
            .into());
        }
    }
    Ok(())
}

fn run_rows_errors(t: &Target) -> Result<(), Failed> {
    check_rows_errors::<u32>(t)?;
    check_rows_errors::<f32>(t)?;
    check_rows_errors::<i64>(t)?;
    check_rows_errors::<u8>(t)
}

fn run_other_errors(t: &Target) -> Result<(), Failed> {
    check_segment_errors::<u32>(t)?;
    check_segment_errors::<f64>(t)?;
    check_segment_errors::<u8>(t)?;
    check_length_errors(t)
}

// ---------------------------------------------------------------------------------------

/// Every trial of the derived calls on one target.
pub fn register(suite: &mut Suite, slot: &Slot, cfg: &Config) {
    suite.add(slot, "errors::rows", 0, run_rows_errors);
    suite.add(slot, "errors::derived", 0, run_other_errors);

    // Rows: every shape for random u32 keys and pairs and for f32 edge values, a quarter of
    // them for the other key types and patterns (CI runs this on PoCL on two cores).
    const BOTH: &[bool] = &[false, true];
    add_rows_keys::<u32>(suite, slot, cfg, Keys::RANDOM, Shapes::Full, BOTH);
    add_rows_pairs::<u32>(suite, slot, cfg, Keys::RANDOM, Shapes::Full, BOTH);
    add_rows_keys::<f32>(suite, slot, cfg, Keys::SPECIAL, Shapes::Full, BOTH);
    add_rows_keys::<u32>(suite, slot, cfg, Keys::FEW, Shapes::Reduced, BOTH);
    add_rows_pairs::<u32>(suite, slot, cfg, Keys::FEW, Shapes::Reduced, BOTH);
    add_rows_keys::<i64>(suite, slot, cfg, Keys::RANDOM, Shapes::Reduced, &[true]);
    add_rows_keys::<i64>(suite, slot, cfg, Keys::SPECIAL, Shapes::Reduced, &[false]);
    add_rows_pairs::<i64>(suite, slot, cfg, Keys::SPECIAL, Shapes::Reduced, BOTH);
    add_rows_keys::<f32>(suite, slot, cfg, Keys::Edges, Shapes::Reduced, BOTH);
    add_rows_pairs::<f32>(suite, slot, cfg, Keys::SPECIAL, Shapes::Reduced, &[true]);
    add_rows_pairs::<f32>(suite, slot, cfg, Keys::Edges, Shapes::Reduced, &[false]);
    add_rows_keys::<u8>(suite, slot, cfg, Keys::RANDOM, Shapes::Reduced, BOTH);
    add_rows_pairs::<u8>(suite, slot, cfg, Keys::RANDOM, Shapes::Reduced, &[false]);
    add_rows_keys::<u8>(suite, slot, cfg, Keys::SPECIAL, Shapes::Reduced, &[true]);

    // Argsort: (pattern, largest 2^k) per key type.
    add_argsort::<u32>(
        suite,
        slot,
        cfg,
        &[
            (Keys::RANDOM, 16),
            (Keys::FEW, 14),
            (Keys::EQUAL, 12),
            (Keys::SORTED, 10),
            (Keys::REVERSED, 10),
        ],
    );
    add_argsort::<u8>(suite, slot, cfg, &[(Keys::RANDOM, 14), (Keys::Edges, 10)]);
    add_argsort::<u16>(suite, slot, cfg, &[(Keys::RANDOM, 14), (Keys::FEW, 10)]);
    add_argsort::<i64>(suite, slot, cfg, &[(Keys::RANDOM, 10), (Keys::Edges, 10)]);
    add_argsort::<f32>(suite, slot, cfg, &[(Keys::SPECIAL, 13), (Keys::Edges, 16)]);
    add_argsort::<f64>(suite, slot, cfg, &[(Keys::SPECIAL, 10), (Keys::Edges, 13)]);
    add_argsort_rows::<u32>(suite, slot, cfg, Keys::FEW);
    add_argsort_rows::<f32>(suite, slot, cfg, Keys::Edges);
    add_argsort_rows::<u8>(suite, slot, cfg, Keys::RANDOM);

    // Stable key-value sorts: values of every shape, keys with many ties.
    add_stable::<u32, u16>(suite, slot, cfg, Keys::FEW, 13);
    add_stable::<u8, [u8; 3]>(suite, slot, cfg, Keys::RANDOM, 13);
    add_stable::<f32, u128>(suite, slot, cfg, Keys::Edges, 13);
    add_stable::<i64, (u32, u16)>(suite, slot, cfg, Keys::SPECIAL, 11);
    add_stable::<f64, (u32, u16)>(suite, slot, cfg, Keys::RANDOM, 10);

    // Segments.
    add_segments::<u32>(
        suite,
        slot,
        cfg,
        &[
            (Keys::RANDOM, Layout::Huge),
            (Keys::FEW, Layout::Cover),
            (Keys::RANDOM, Layout::Inner),
            (Keys::RANDOM, Layout::Empty),
        ],
    );
    add_segments::<f32>(
        suite,
        slot,
        cfg,
        &[(Keys::Edges, Layout::Huge), (Keys::SPECIAL, Layout::Inner)],
    );
    add_segments::<u8>(suite, slot, cfg, &[(Keys::RANDOM, Layout::Cover)]);
    add_segments::<i64>(suite, slot, cfg, &[(Keys::SPECIAL, Layout::Inner)]);
}
