//! Property tests (proptest) against every backend this build can reach.
//!
//! For random lengths (mostly 0..=5000, some up to 80_000), every key type, both orders and
//! several distributions (uniform over every bit pattern, edge values, few distinct values,
//! sorted runs, all equal), each backend's output must equal Rust's sort (`sort_unstable`,
//! floats `sort_by(total_cmp)`, descending its reverse) bit for bit. Key-value output must
//! hold the keys sorted and be a permutation of the input pairs (checked as a multiset), and
//! on a backend other than the CPU equal the CPU backend's result bit for bit (the same
//! network runs everywhere). Stable calls (`sort_by_key_stable*` with positions as values,
//! and `argsort*`) must give exactly the permutation of Rust's stable `sort_by`.
//!
//! One libtest-mimic trial per target, key type, order and mode, named
//! `<target>::props::<key>::<order>::<keys|pairs_u32|pairs_u64|stable>`; each runs a proptest
//! `TestRunner` for its cases and reports the shrunk failing input. Targets and gating are
//! the suite's (`support/targets.rs`): an unavailable backend's trials are ignored with the
//! reason, `BITONIC_REQUIRE` turns that into a failure. Environment:
//! - `BITONIC_PROPTEST_CASES=N`: cases per trial on every target (defaults: on the CPU
//!   backend 32 for keys and 12 for pairs, 8 on an OpenCL CPU device such as PoCL, 256 on
//!   a GPU);
//! - `BITONIC_TEST_SEED`: the base seed (each trial's generator is seeded from it and the
//!   trial's name without its target, so every target sorts the same inputs);
//! - `BITONIC_TEST_BACKENDS`, `BITONIC_REQUIRE`: as for the suite.

#[allow(dead_code)]
mod support;
#[allow(dead_code)]
#[path = "support/targets.rs"]
mod targets;

use bitonic::{BackendKind, DeviceType};
use libtest_mimic::{Arguments, Failed, Trial};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::strategy::ValueTree;
use proptest::test_runner::{
    Config, RngAlgorithm, TestCaseError, TestCaseResult, TestError, TestRng, TestRunner,
};
use support::{
    TestKey, TestValue, check_keys, expected, input_seed, pair_multiset, sort_keys, sort_pairs,
};
use targets::{Slot, Target};

// ---------------------------------------------------------------------------------------
// Keys as proptest values.

/// A key type with what the strategies need: any bit pattern, and the type's edge values.
trait PropKey: TestKey + Clone + Send + Sync {
    /// The key with these bits (the low bits for narrow types).
    fn from_bits(bits: u64) -> Self;
    /// MIN, MAX, zeros, ones; for floats NaNs of both signs (quiet and signalling, with
    /// payloads), ±0.0, ±infinity, MIN, MAX, ±MIN_POSITIVE and subnormals.
    fn edges() -> Vec<Self>;
}

macro_rules! int_prop_key {
    ($($t:ty => $u:ty),*) => {$(
        impl PropKey for $t {
            fn from_bits(bits: u64) -> Self {
                bits as $u as $t
            }
            fn edges() -> Vec<Self> {
                vec![
                    <$t>::MIN,
                    <$t>::MAX,
                    <$t>::MIN.wrapping_add(1),
                    <$t>::MAX.wrapping_sub(1),
                    0,
                    1,
                    (0 as $t).wrapping_sub(1),
                ]
            }
        }
    )*};
}
int_prop_key!(u8 => u8, i8 => u8, u16 => u16, i16 => u16, u32 => u32, i32 => u32,
    u64 => u64, i64 => u64);

macro_rules! float_prop_key {
    ($t:ident, $bits:ty) => {
        impl PropKey for $t {
            fn from_bits(bits: u64) -> Self {
                $t::from_bits(bits as $bits)
            }
            fn edges() -> Vec<Self> {
                const SIGN: $bits = 1 << (<$bits>::BITS - 1);
                const EXP: $bits = $t::INFINITY.to_bits();
                const QUIET: $bits = 1 << ($t::MANTISSA_DIGITS - 2);
                let mut edges = vec![
                    $t::NAN,
                    -$t::NAN,
                    $t::from_bits(EXP | 1),            // signalling NaN
                    $t::from_bits(SIGN | EXP | 1),     // negative signalling NaN
                    $t::from_bits(EXP | QUIET | 0x2a), // quiet NaN with a payload
                    $t::from_bits(SIGN | EXP | !SIGN), // the largest bits of all
                    0.0,
                    -0.0,
                    $t::INFINITY,
                    $t::NEG_INFINITY,
                    $t::MIN,
                    $t::MAX,
                    $t::MIN_POSITIVE,
                    -$t::MIN_POSITIVE,
                    1.0,
                    -1.0,
                ];
                // Subnormals: the smallest and the largest, of both signs.
                for sign in [0, SIGN] {
                    edges.push($t::from_bits(sign | 1));
                    edges.push($t::from_bits(sign | ($t::MIN_POSITIVE.to_bits() - 1)));
                }
                edges
            }
        }
    };
}
float_prop_key!(f32, u32);
float_prop_key!(f64, u64);

/// One key: any bit pattern (shrinking towards 0 bits), or an edge value.
fn any_key<K: PropKey>() -> BoxedStrategy<K> {
    prop_oneof![
        4 => any::<u64>().prop_map(K::from_bits),
        1 => select(K::edges()),
    ]
    .boxed()
}

/// How an input's keys are laid out.
#[derive(Clone, Copy, Debug)]
enum Distribution {
    /// Independent keys, any bit pattern or an edge value.
    Uniform,
    /// Edge values only (dense in NaNs, zeros, infinities, subnormals for floats).
    Edges,
    /// One to four distinct values.
    FewDistinct,
    /// Up to eight runs, each sorted ascending or descending.
    SortedRuns,
    /// One value repeated.
    AllEqual,
}

fn distribution() -> impl Strategy<Value = Distribution> {
    prop_oneof![
        4 => Just(Distribution::Uniform),
        1 => Just(Distribution::Edges),
        2 => Just(Distribution::FewDistinct),
        2 => Just(Distribution::SortedRuns),
        1 => Just(Distribution::AllEqual),
    ]
}

/// `n` keys of a distribution, one proptest value each (every key shrinks on its own).
fn keys_of<K: PropKey>(d: Distribution, n: usize) -> BoxedStrategy<Vec<K>> {
    match d {
        Distribution::Uniform => vec(any_key::<K>(), n).boxed(),
        Distribution::Edges => vec(select(K::edges()), n).boxed(),
        Distribution::FewDistinct => (vec(any_key::<K>(), 1..=4), vec(any::<Index>(), n))
            .prop_map(|(pool, picks)| picks.iter().map(|i| *i.get(&pool)).collect())
            .boxed(),
        Distribution::SortedRuns => (
            vec(any_key::<K>(), n),
            vec(any::<Index>(), 0..8),
            any::<u8>(),
        )
            .prop_map(|(mut keys, cuts, directions)| {
                let n = keys.len();
                let mut bounds: Vec<usize> = cuts.iter().map(|c| c.index(n + 1)).collect();
                bounds.extend([0, n]);
                bounds.sort_unstable();
                for (r, w) in bounds.windows(2).enumerate() {
                    let run = &mut keys[w[0]..w[1]];
                    K::reference_sort(run);
                    if directions >> (r % 8) & 1 == 1 {
                        run.reverse();
                    }
                }
                keys
            })
            .boxed(),
        Distribution::AllEqual => any_key::<K>().prop_map(move |k| vec![k; n]).boxed(),
    }
}

/// Short inputs, built element by element so that a failure shrinks to a minimal list.
fn short_input<K: PropKey>() -> BoxedStrategy<(String, Vec<K>)> {
    (
        distribution(),
        prop_oneof![1 => 0..=2usize, 4 => 0..=100usize],
    )
        .prop_flat_map(|(d, n)| keys_of::<K>(d, n).prop_map(move |keys| (format!("{d:?}"), keys)))
        .boxed()
}

/// Long inputs from a recipe: proptest draws the distribution, the length, a seed and the
/// shape's parameters, and the keys come from a fast generator. Generating thousands of
/// keys one proptest value at a time costs microseconds each in a debug build; a recipe
/// costs nanoseconds per key and still shrinks (the length towards the shortest failing
/// prefix, the parameters towards the simplest shape).
#[derive(Clone, Debug)]
struct Recipe {
    distribution: Distribution,
    n: usize,
    seed: u64,
    /// Percent of edge values among uniform keys.
    edge_percent: u32,
    /// Distinct values of `FewDistinct`.
    pool: usize,
    /// Runs of `SortedRuns`.
    runs: usize,
}

/// SplitMix64: a generator that stays fast in a debug build (ChaCha does not).
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Recipe {
    fn keys<K: PropKey>(&self) -> Vec<K> {
        let mut state = self.seed;
        let below = |state: &mut u64, bound: usize| (splitmix(state) % bound as u64) as usize;
        let edges = K::edges();
        let edge_percent = self.edge_percent as usize;
        let key = |state: &mut u64| {
            if below(state, 100) < edge_percent {
                edges[below(state, edges.len())]
            } else {
                K::from_bits(splitmix(state))
            }
        };
        let n = self.n;
        match self.distribution {
            Distribution::Uniform => (0..n).map(|_| key(&mut state)).collect(),
            Distribution::Edges => (0..n)
                .map(|_| edges[below(&mut state, edges.len())])
                .collect(),
            Distribution::FewDistinct => {
                let pool: Vec<K> = (0..self.pool).map(|_| key(&mut state)).collect();
                (0..n)
                    .map(|_| pool[below(&mut state, pool.len())])
                    .collect()
            }
            Distribution::SortedRuns => {
                let mut keys: Vec<K> = (0..n).map(|_| key(&mut state)).collect();
                let mut bounds: Vec<usize> =
                    (1..self.runs).map(|_| below(&mut state, n + 1)).collect();
                bounds.extend([0, n]);
                bounds.sort_unstable();
                for w in bounds.windows(2) {
                    let run = &mut keys[w[0]..w[1]];
                    K::reference_sort(run);
                    if splitmix(&mut state) & 1 == 1 {
                        run.reverse();
                    }
                }
                keys
            }
            Distribution::AllEqual => vec![key(&mut state); n],
        }
    }
}

/// Lengths of long inputs: mostly up to 5000, one in 13 above 2^16.
fn long_input<K: PropKey>() -> BoxedStrategy<(String, Vec<K>)> {
    let length = prop_oneof![12 => 101..=5000usize, 1 => 65_537..=80_000usize];
    (
        distribution(),
        length,
        any::<u64>(),
        0..=100u32,
        1..=4usize,
        1..=8usize,
    )
        .prop_map(|(distribution, n, seed, edge_percent, pool, runs)| {
            let recipe = Recipe {
                distribution,
                n,
                seed,
                edge_percent,
                pool,
                runs,
            };
            (format!("{recipe:?}"), recipe.keys::<K>())
        })
        .boxed()
}

/// An input: a description (shown in failures) and its keys. One in five is short.
fn input<K: PropKey>() -> impl Strategy<Value = (String, Vec<K>)> {
    prop_oneof![1 => short_input::<K>(), 4 => long_input::<K>()]
}

// ---------------------------------------------------------------------------------------
// The properties.

/// Keys alone equal the reference sort.
fn keys_property<K: PropKey>(t: &Target, input: &[K], descending: bool) -> TestCaseResult {
    let mut got = input.to_vec();
    sort_keys(&t.sorter, &mut got, descending)
        .map_err(|e| TestCaseError::fail(format!("the sort returned an error: {e}")))?;
    check_keys(&got, &expected(input, descending)).map_err(TestCaseError::fail)
}

/// Key-value: keys sorted, pairs a permutation of the input's, and (off the CPU backend)
/// bit for bit the CPU backend's result.
fn pairs_property<K: PropKey, V: TestValue>(
    t: &Target,
    input: &[K],
    descending: bool,
) -> TestCaseResult {
    let n = input.len();
    let values_in: Vec<V> = (0..n).map(|i| V::make(i, n as u64)).collect();
    let (mut keys, mut values) = (input.to_vec(), values_in.clone());
    sort_pairs(&t.sorter, &mut keys, &mut values, descending)
        .map_err(|e| TestCaseError::fail(format!("the sort returned an error: {e}")))?;
    let want = expected(input, descending);
    check_keys(&keys, &want).map_err(TestCaseError::fail)?;
    if pair_multiset(&keys, &values) != pair_multiset(input, &values_in) {
        return Err(TestCaseError::fail(
            "the output (key, value) pairs are not a permutation of the input pairs",
        ));
    }
    let keys_repeat = want.windows(2).any(|w| w[0].bits() == w[1].bits());
    if let (Some(cpu), true) = (&t.reference, keys_repeat) {
        let (mut ref_keys, mut ref_values) = (input.to_vec(), values_in);
        sort_pairs(cpu, &mut ref_keys, &mut ref_values, descending)
            .map_err(|e| TestCaseError::fail(format!("the CPU backend failed: {e}")))?;
        if let Some(i) = (0..n).find(|&i| {
            keys[i].bits() != ref_keys[i].bits() || values[i].bits() != ref_values[i].bits()
        }) {
            return Err(TestCaseError::fail(format!(
                "differs from the CPU backend at index {i}: value {:#x}, the CPU has {:#x}",
                values[i].bits(),
                ref_values[i].bits()
            )));
        }
    }
    Ok(())
}

/// The permutation Rust's stable `sort_by` gives the input: positions ordered by key (the
/// reference sort's order, reversed for descending), ties in input order.
fn stable_permutation<K: PropKey>(input: &[K], descending: bool) -> Vec<u32> {
    // Rank every distinct key by its place in the reference sort; equal bits are ties.
    let mut sorted = input.to_vec();
    K::reference_sort(&mut sorted);
    let mut rank = std::collections::HashMap::new();
    for k in &sorted {
        let next = rank.len();
        rank.entry(k.bits()).or_insert(next);
    }
    let mut positions: Vec<u32> = (0..input.len() as u32).collect();
    if descending {
        positions.sort_by_key(|&i| std::cmp::Reverse(rank[&input[i as usize].bits()]));
    } else {
        positions.sort_by_key(|&i| rank[&input[i as usize].bits()]);
    }
    positions
}

/// Stable calls: `sort_by_key_stable` with positions as values moves them exactly as Rust's
/// stable `sort_by` does, and `argsort` returns that same permutation.
fn stable_property<K: PropKey>(t: &Target, input: &[K], descending: bool) -> TestCaseResult {
    let fail = |what: &str, e: bitonic::Error| TestCaseError::fail(format!("{what}: {e}"));
    let want = stable_permutation(input, descending);
    let (mut keys, mut values) = (input.to_vec(), (0..input.len() as u32).collect::<Vec<_>>());
    if descending {
        t.sorter
            .sort_by_key_stable(&mut keys, &mut values, bitonic::Order::Descending)
            .map_err(|e| fail("sort_by_key_stable_descending", e))?;
    } else {
        t.sorter
            .sort_by_key_stable(&mut keys, &mut values, bitonic::Order::Ascending)
            .map_err(|e| fail("sort_by_key_stable", e))?;
    }
    check_keys(&keys, &expected(input, descending)).map_err(TestCaseError::fail)?;
    if let Some(i) = (0..want.len()).find(|&i| values[i] != want[i]) {
        return Err(TestCaseError::fail(format!(
            "sort_by_key_stable: position {} at index {i}, Rust's stable sort_by has {}",
            values[i], want[i]
        )));
    }
    let order = if descending {
        t.sorter.argsort(input, bitonic::Order::Descending)
    } else {
        t.sorter.argsort(input, bitonic::Order::Ascending)
    }
    .map_err(|e| fail("argsort", e))?;
    if let Some(i) = (0..want.len()).find(|&i| order[i] != want[i]) {
        return Err(TestCaseError::fail(format!(
            "argsort: position {} at index {i}, Rust's stable sort_by has {}",
            order[i], want[i]
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Trials.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Keys,
    PairsU32,
    PairsU64,
    /// `sort_by_key_stable` and `argsort` against Rust's stable sort.
    Stable,
}

impl Mode {
    const ALL: [Mode; 4] = [Mode::Keys, Mode::PairsU32, Mode::PairsU64, Mode::Stable];

    fn name(self) -> &'static str {
        match self {
            Mode::Keys => "keys",
            Mode::PairsU32 => "pairs_u32",
            Mode::PairsU64 => "pairs_u64",
            Mode::Stable => "stable",
        }
    }
}

/// Cases per trial: `BITONIC_PROPTEST_CASES`, else by device. The test profile is a debug
/// build: there the CPU backend's key-value path (the network, emulated) and PoCL are slow,
/// so CI runs few cases on them; the GPU machine runs many.
fn cases(t: &Target, mode: Mode, configured: Option<u32>) -> u32 {
    configured.unwrap_or(match (t.info.backend, t.info.device_type, mode) {
        (BackendKind::Cpu, _, Mode::Keys) => 32,
        (BackendKind::Cpu, _, _) => 12,
        (_, DeviceType::Cpu, _) => 8,
        _ => 256,
    })
}

/// Shows a shrunk failing input: its length and its first keys.
fn show_input<K: TestKey>(what: &str, keys: &[K]) -> String {
    let shown: Vec<String> = keys.iter().take(24).map(|k| format!("{k:?}")).collect();
    let more = if keys.len() > 24 { ", ..." } else { "" };
    format!("{what}, n={}: [{}{more}]", keys.len(), shown.join(", "))
}

fn run_property<K: PropKey>(
    t: &Target,
    id: &str,
    descending: bool,
    mode: Mode,
    configured: Option<u32>,
) -> Result<(), Failed> {
    let seed = input_seed(t.seed, id, 0);
    let mut seed_bytes = [0u8; 32];
    for (i, chunk) in seed_bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&input_seed(seed, "chacha", i).to_le_bytes());
    }
    let config = Config {
        cases: cases(t, mode, configured),
        failure_persistence: None,
        // A failing input of 80_000 keys must not shrink for ever.
        max_shrink_iters: 1024,
        max_shrink_time: 120_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let result = runner.run(&input::<K>(), |(_, keys)| match mode {
        Mode::Keys => keys_property(t, &keys, descending),
        Mode::PairsU32 => pairs_property::<K, u32>(t, &keys, descending),
        Mode::PairsU64 => pairs_property::<K, u64>(t, &keys, descending),
        Mode::Stable => stable_property(t, &keys, descending),
    });
    match result {
        Ok(()) => Ok(()),
        Err(TestError::Fail(reason, (what, keys))) => Err(format!(
            "{}::{id} (seed {seed:#018x}, base seed {:#x}): {reason}; minimal input: {}",
            t.label,
            t.seed,
            show_input(&what, &keys)
        )
        .into()),
        Err(TestError::Abort(reason)) => {
            Err(format!("{}::{id}: proptest aborted: {reason}", t.label).into())
        }
    }
}

fn add_key<K: PropKey>(trials: &mut Vec<Trial>, slot: &Slot, configured: Option<u32>) {
    for descending in [false, true] {
        for mode in Mode::ALL {
            let order = if descending { "desc" } else { "asc" };
            let id = format!("props::{}::{order}::{}", K::NAME, mode.name());
            let name = id.clone();
            trials.push(slot.trial(&name, move |t| {
                run_property::<K>(t, &id, descending, mode, configured)
            }));
        }
    }
}

/// The generator itself: every distribution in both kinds of input, empty inputs, inputs
/// above 2^16 and NaNs all occur, so that a change to the strategies cannot quietly stop
/// producing them.
fn check_generator() -> Result<(), Failed> {
    let mut runner = TestRunner::deterministic();
    let strategy = input::<f32>();
    let names = ["Uniform", "Edges", "FewDistinct", "SortedRuns", "AllEqual"];
    let mut seen = [[false; 5]; 2];
    let (mut empty, mut long, mut nan) = (false, false, false);
    for _ in 0..300 {
        let (what, keys) = strategy
            .new_tree(&mut runner)
            .map_err(|e| format!("the strategy failed: {e}"))?
            .current();
        let kind = usize::from(what.starts_with("Recipe"));
        for (i, name) in names.iter().enumerate() {
            seen[kind][i] |= what.contains(name);
        }
        empty |= keys.is_empty();
        long |= keys.len() > 1 << 16;
        nan |= keys.iter().any(|k| k.is_nan());
    }
    if seen.iter().flatten().any(|s| !s) || !empty || !long || !nan {
        return Err(format!(
            "in 300 inputs: distributions seen (short, recipe) {seen:?}, empty {empty}, \
             longer than 2^16 {long}, NaN {nan}"
        )
        .into());
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let found = targets::find("properties");
    let mut trials = found.failures;
    let configured = match targets::env_number("BITONIC_PROPTEST_CASES") {
        Ok(n) => n.map(|n| n.clamp(1, u64::from(u32::MAX)) as u32),
        Err(e) => {
            trials.push(Trial::test("config::BITONIC_PROPTEST_CASES", move || {
                Err(e.into())
            }));
            None
        }
    };
    trials.push(Trial::test("props::generator_coverage", check_generator));
    for slot in &found.slots {
        add_key::<u8>(&mut trials, slot, configured);
        add_key::<i8>(&mut trials, slot, configured);
        add_key::<u16>(&mut trials, slot, configured);
        add_key::<i16>(&mut trials, slot, configured);
        add_key::<u32>(&mut trials, slot, configured);
        add_key::<i32>(&mut trials, slot, configured);
        add_key::<u64>(&mut trials, slot, configured);
        add_key::<i64>(&mut trials, slot, configured);
        add_key::<f32>(&mut trials, slot, configured);
        add_key::<f64>(&mut trials, slot, configured);
    }
    libtest_mimic::run(&args, trials).exit()
}
