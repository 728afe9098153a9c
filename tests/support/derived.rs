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

#[path = "derived/argsort.rs"]
mod argsort;
#[path = "derived/errors.rs"]
mod errors;
#[path = "derived/rows.rs"]
mod rows;
#[path = "derived/segments.rs"]
mod segments;
#[path = "derived/stable.rs"]
mod stable;

use argsort::*;
use errors::*;
use rows::*;
use segments::*;
use stable::*;

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
