//! The backend-agnostic integration suite, run against every device this build can reach.
//!
//! Targets come from `bitonic::devices()`: the CPU backend, every CUDA device, every OpenCL
//! device (GPUs and CPU devices such as PoCL). Each target gets the same trials, named
//! `<target>::<key>::<pattern>::<order>::keys` or `...::pairs_<value>`; a trial loops over
//! its lengths and names the failing one (with the input's seed) in its message.
//!
//! A backend that is compiled in but cannot start (no driver, no platform) has its trials
//! listed as ignored, with one line on stderr saying why. Environment:
//! - `BITONIC_REQUIRE=cuda,opencl,cpu`: a listed backend that did not run fails
//!   `require::<backend>`;
//! - `BITONIC_TEST_BACKENDS=...`: test only these backends;
//! - `BITONIC_TEST_MAX_N` (default 4_000_000): the largest length sorted;
//! - `BITONIC_TEST_SEED`: the base seed of every input (printed in failure messages);
//! - `BITONIC_TEST_TIMES=1`: print each trial's run time to stderr.
//!
//! The calls built on the network sorts (rows, stable argsort, stable key-value sorts,
//! segments) have their trials in `support/derived.rs`, registered for every target too.

#[path = "support/derived.rs"]
mod derived;
mod support;
// Each test binary uses its own part of the shared harness.
#[allow(dead_code)]
#[path = "support/targets.rs"]
mod targets;

use std::fmt::Debug;

use bitonic::{BackendKind, Error, Sorter};
use libtest_mimic::{Arguments, Failed, Trial};
use rand::Rng;
use support::{
    Pattern, TestKey, TestValue, check_keys, env_number, expected, first_key_diff, input_seed,
    pair_multiset, rng_for, show_key, show_value, sort_keys, sort_pairs,
};
use targets::{Slot, Target};

const DEFAULT_MAX_N: usize = 4_000_000;

// ---------------------------------------------------------------------------------------
// Configuration from the environment.

struct Config {
    max_n: usize,
}

impl Config {
    /// The configuration, and what was wrong with the environment (defaults replace it).
    /// The backends, the seed and the trial times are `targets::find`'s.
    fn from_env() -> (Config, Option<String>) {
        let (max_n, problem) = match env_number("BITONIC_TEST_MAX_N") {
            Ok(max_n) => (max_n.map(|n| n as usize), None),
            Err(problem) => (None, Some(problem)),
        };
        let max_n = max_n.unwrap_or(DEFAULT_MAX_N);
        (Config { max_n }, problem)
    }
}

// ---------------------------------------------------------------------------------------
// Lengths.

/// How many lengths a trial loops over. Every tier has all tiny lengths and
/// `2^k - 1, 2^k, 2^k + 1` around every tile size a backend may choose (2^9 .. 2^13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tier {
    /// 0..=70, around 2^7 .. 2^16, and 1000, 12_345, 100_003.
    Full,
    /// 0..=70, around 2^7 .. 2^14, and 1000, 12_345.
    Mid,
    /// 0..=40, around 2^6 .. 2^13, and 1000.
    Light,
}

impl Tier {
    fn lengths(self) -> Vec<usize> {
        let (tiny, top, odd): (usize, u32, &[usize]) = match self {
            Tier::Full => (70, 16, &[1000, 12_345, 100_003]),
            Tier::Mid => (70, 14, &[1000, 12_345]),
            Tier::Light => (40, 13, &[1000]),
        };
        let mut lengths: Vec<usize> = (0..=tiny).collect();
        for k in 6..=top {
            lengths.extend([(1usize << k) - 1, 1 << k, (1 << k) + 1]);
        }
        lengths.extend_from_slice(odd);
        lengths.sort_unstable();
        lengths.dedup();
        lengths
    }
}

/// Millions, for u32 and f32 keys (2^22 only when `BITONIC_TEST_MAX_N` allows it).
const BIG_KEY_LENGTHS: [usize; 3] = [1 << 21, 3_000_001, 1 << 22];
/// For 64-bit keys with 64-bit values.
const BIG_PAIR_LENGTHS: [usize; 1] = [(1 << 21) + 1];

// ---------------------------------------------------------------------------------------
// Targets and trials.

#[derive(Default)]
struct Suite {
    /// Trials with a rough cost, so that the longest start first.
    trials: Vec<(u64, Trial)>,
}

impl Suite {
    fn add<F>(&mut self, slot: &Slot, id: &str, cost: u64, body: F)
    where
        F: FnOnce(&Target) -> Result<(), Failed> + Send + 'static,
    {
        let trial = slot.trial(id, body);
        self.trials.push((cost, trial));
    }

    fn add_plain<F>(&mut self, name: impl Into<String>, body: F)
    where
        F: FnOnce() -> Result<(), Failed> + Send + 'static,
    {
        self.trials.push((0, Trial::test(name, body)));
    }

    fn add_failure(&mut self, name: impl Into<String>, message: String) {
        self.add_plain(name, move || Err(message.into()));
    }

    fn add_trial(&mut self, trial: Trial) {
        self.trials.push((0, trial));
    }

    fn into_trials(mut self) -> Vec<Trial> {
        // Stable: equal costs keep their registration order.
        self.trials
            .sort_by_key(|(cost, _)| std::cmp::Reverse(*cost));
        self.trials.into_iter().map(|(_, t)| t).collect()
    }
}

/// What one sorting trial sorts: a pattern, an order, and the lengths it loops over.
struct Case {
    id: String,
    pattern: Pattern,
    descending: bool,
    lengths: Vec<usize>,
}

impl Case {
    fn new(id: String, pattern: Pattern, descending: bool, lengths: Vec<usize>) -> Case {
        Case {
            id,
            pattern,
            descending,
            lengths,
        }
    }

    /// Roughly proportional to the trial's run time.
    fn cost(&self, pairs: bool) -> u64 {
        let weight = if pairs { 3 } else { 1 };
        self.lengths.iter().map(|&n| n as u64 * weight).sum()
    }

    fn fail(&self, t: &Target, n: usize, seed: u64, msg: impl std::fmt::Display) -> Failed {
        format!(
            "{}::{}: n={n}, input seed {seed:#018x} (base seed {:#x}): {msg}",
            t.label, self.id, t.seed
        )
        .into()
    }
}

fn order_name(descending: bool) -> &'static str {
    if descending { "desc" } else { "asc" }
}

fn capped(lengths: impl IntoIterator<Item = usize>, max_n: usize) -> Vec<usize> {
    lengths.into_iter().filter(|&n| n <= max_n).collect()
}

fn run_keys<K: TestKey>(t: &Target, case: &Case) -> Result<(), Failed> {
    for &n in &case.lengths {
        let seed = input_seed(t.seed, &case.id, n);
        let input: Vec<K> = case.pattern.keys(n, &mut rng_for(seed));
        let want = expected(&input, case.descending);
        let mut got = input;
        sort_keys(&t.sorter, &mut got, case.descending)
            .map_err(|e| case.fail(t, n, seed, format!("the sort returned an error: {e}")))?;
        check_keys(&got, &want).map_err(|msg| case.fail(t, n, seed, msg))?;
    }
    Ok(())
}

fn run_pairs<K: TestKey, V: TestValue>(t: &Target, case: &Case) -> Result<(), Failed> {
    for &n in &case.lengths {
        let seed = input_seed(t.seed, &case.id, n);
        let mut rng = rng_for(seed);
        let keys_in: Vec<K> = case.pattern.keys(n, &mut rng);
        let salt: u64 = rng.r#gen();
        let values_in: Vec<V> = (0..n).map(|i| V::make(i, salt)).collect();
        let fail = |msg: String| case.fail(t, n, seed, msg);

        let (mut keys, mut values) = (keys_in.clone(), values_in.clone());
        sort_pairs(&t.sorter, &mut keys, &mut values, case.descending)
            .map_err(|e| fail(format!("the sort returned an error: {e}")))?;
        let want = expected(&keys_in, case.descending);
        check_keys(&keys, &want).map_err(fail)?;

        // Every (key, value) pair of the input, each as often as in the input.
        let before = pair_multiset(&keys_in, &values_in);
        if pair_multiset(&keys, &values) != before {
            let stray = keys
                .iter()
                .zip(&values)
                .position(|(k, v)| before.binary_search(&(k.bits(), v.bits())).is_err());
            return Err(fail(match stray {
                Some(i) => format!(
                    "output pair {i} (key {}, value {}) is not a pair of the input: \
                     a value did not move with its key",
                    show_key(keys[i]),
                    show_value(values[i])
                ),
                None => "an input pair is missing and another one is duplicated".to_string(),
            }));
        }

        // The same network on every backend: the CPU backend's result, bit for bit. When all
        // keys differ, the checks above already fix every position (keys sorted, each value
        // beside its own key), so the CPU backend's run is needed only where keys repeat.
        let keys_repeat = want.windows(2).any(|w| w[0].bits() == w[1].bits());
        if let (Some(cpu), true) = (&t.reference, keys_repeat) {
            let (mut ref_keys, mut ref_values) = (keys_in.clone(), values_in.clone());
            sort_pairs(cpu, &mut ref_keys, &mut ref_values, case.descending)
                .map_err(|e| fail(format!("the CPU backend returned an error: {e}")))?;
            let differs = (0..n).find(|&i| {
                keys[i].bits() != ref_keys[i].bits() || values[i].bits() != ref_values[i].bits()
            });
            if let Some(i) = differs {
                return Err(fail(format!(
                    "differs from the CPU backend at index {i}: got key {} value {}, \
                     the CPU backend has key {} value {}",
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

/// Keys alone: every pattern in both orders; the millions for u32 and f32 in one order each.
fn add_keys<K: TestKey>(suite: &mut Suite, slot: &Slot, cfg: &Config) {
    for pattern in Pattern::ALL {
        for descending in [false, true] {
            let tier = if pattern == Pattern::Random {
                Tier::Full
            } else {
                Tier::Mid
            };
            let mut lengths = tier.lengths();
            if pattern == Pattern::Random
                && matches!((K::NAME, descending), ("u32", false) | ("f32", true))
            {
                lengths.extend(BIG_KEY_LENGTHS);
            }
            let id = format!(
                "{}::{}::{}::keys",
                K::NAME,
                pattern.name(),
                order_name(descending)
            );
            let case = Case::new(id, pattern, descending, capped(lengths, cfg.max_n));
            let cost = case.cost(false);
            let id = case.id.clone();
            suite.add(slot, &id, cost, move |t| run_keys::<K>(t, &case));
        }
    }
}

/// How long a key-value trial is: u32 values get the most lengths; the other value types,
/// which only change how values travel, fewer. The CPU backend emulates the network for
/// pairs, so pairs cost more than keys.
fn pair_tier(value: &str, pattern: Pattern) -> Tier {
    match (value == "u32", pattern) {
        (true, Pattern::Random) => Tier::Full,
        (true, Pattern::Few | Pattern::Special) => Tier::Mid,
        _ => Tier::Light,
    }
}

fn add_pairs<K: TestKey, V: TestValue>(suite: &mut Suite, slot: &Slot, cfg: &Config) {
    for pattern in Pattern::ALL {
        for descending in [false, true] {
            let mut lengths = pair_tier(V::NAME, pattern).lengths();
            if (K::NAME, V::NAME, pattern, descending) == ("i64", "u64", Pattern::Random, false) {
                lengths.extend(BIG_PAIR_LENGTHS);
            }
            let id = format!(
                "{}::{}::{}::pairs_{}",
                K::NAME,
                pattern.name(),
                order_name(descending),
                V::NAME
            );
            let case = Case::new(id, pattern, descending, capped(lengths, cfg.max_n));
            let cost = case.cost(true);
            let id = case.id.clone();
            suite.add(slot, &id, cost, move |t| run_pairs::<K, V>(t, &case));
        }
    }
}

fn add_pairs_all_values<K: TestKey>(suite: &mut Suite, slot: &Slot, cfg: &Config) {
    add_pairs::<K, u32>(suite, slot, cfg);
    add_pairs::<K, u64>(suite, slot, cfg);
    add_pairs::<K, f32>(suite, slot, cfg);
    add_pairs::<K, [u8; 4]>(suite, slot, cfg);
}

// ---------------------------------------------------------------------------------------
// Per-target checks besides sorting.

fn check_device(t: &Target) -> Result<(), Failed> {
    let got = t.sorter.device();
    let want = &t.info;
    if (got.backend, got.index, &got.name) != (want.backend, want.index, &want.name) {
        return Err(format!("{}: the sorter built for {want} runs on {got}", t.label).into());
    }
    Ok(())
}

fn check_length_mismatch<K: TestKey, V: TestValue>(
    t: &Target,
    n_keys: usize,
    n_values: usize,
    descending: bool,
) -> Result<(), Failed> {
    let seed = input_seed(t.seed, "errors::length_mismatch", n_keys * 7919 + n_values);
    let mut rng = rng_for(seed);
    let keys_in: Vec<K> = Pattern::Random.keys(n_keys, &mut rng);
    let values_in: Vec<V> = (0..n_values).map(|i| V::make(i, seed)).collect();
    let (mut keys, mut values) = (keys_in.clone(), values_in.clone());
    let result = sort_pairs(&t.sorter, &mut keys, &mut values, descending);
    let call = format!(
        "{}: sort_by_key{} with {n_keys} {} keys and {n_values} {} values",
        t.label,
        if descending { "_descending" } else { "" },
        K::NAME,
        V::NAME
    );
    match result {
        Err(Error::LengthMismatch { keys, values }) if keys == n_keys && values == n_values => {}
        other => {
            return Err(format!(
                "{call}: want Err(LengthMismatch {{ keys: {n_keys}, values: {n_values} }}), \
                 got {other:?}"
            )
            .into());
        }
    }
    let values_changed = values
        .iter()
        .zip(&values_in)
        .any(|(a, b)| a.bits() != b.bits());
    if first_key_diff(&keys, &keys_in).is_some() || values_changed {
        return Err(format!("{call}: the call failed but changed the slices").into());
    }
    Ok(())
}

fn run_length_mismatch(t: &Target) -> Result<(), Failed> {
    let shapes = [
        (10, 9),
        (9, 10),
        (0, 1),
        (1, 0),
        (2, 1),
        (1000, 999),
        (999, 1000),
        (5000, 0),
    ];
    for (n_keys, n_values) in shapes {
        for descending in [false, true] {
            check_length_mismatch::<u32, u32>(t, n_keys, n_values, descending)?;
            check_length_mismatch::<f64, u64>(t, n_keys, n_values, descending)?;
            check_length_mismatch::<i16, [u8; 4]>(t, n_keys, n_values, descending)?;
        }
    }
    Ok(())
}

fn check_value_size<V: bytemuck::Pod + Debug>(t: &Target, n: usize) -> Result<(), Failed> {
    let bytes = std::mem::size_of::<V>();
    let seed = input_seed(t.seed, "errors::value_size", n * 64 + bytes);
    let mut rng = rng_for(seed);
    let keys_in: Vec<u32> = Pattern::Random.keys(n, &mut rng);
    let mut values_in = vec![V::zeroed(); n];
    rng.fill(bytemuck::cast_slice_mut::<V, u8>(&mut values_in));
    for descending in [false, true] {
        let (mut keys, mut values) = (keys_in.clone(), values_in.clone());
        let result = sort_pairs(&t.sorter, &mut keys, &mut values, descending);
        let call = format!(
            "{}: sort_by_key{} with {n} values of {bytes} bytes ({})",
            t.label,
            if descending { "_descending" } else { "" },
            std::any::type_name::<V>()
        );
        match result {
            Err(Error::UnsupportedValueSize { bytes: b }) if b == bytes => {}
            other => {
                return Err(format!(
                    "{call}: want Err(UnsupportedValueSize {{ bytes: {bytes} }}), got {other:?}"
                )
                .into());
            }
        }
        let values_same =
            bytemuck::cast_slice::<V, u8>(&values) == bytemuck::cast_slice::<V, u8>(&values_in);
        if keys != keys_in || !values_same {
            return Err(format!("{call}: the call failed but changed the slices").into());
        }
    }
    Ok(())
}

fn run_value_size(t: &Target) -> Result<(), Failed> {
    for n in [0, 1, 2, 100, 5000] {
        check_value_size::<u16>(t, n)?;
        check_value_size::<[u8; 2]>(t, n)?;
        check_value_size::<[u8; 3]>(t, n)?;
        check_value_size::<[u32; 3]>(t, n)?;
        check_value_size::<u128>(t, n)?;
        check_value_size::<[u8; 16]>(t, n)?;
    }
    Ok(())
}

/// Every trial of one target.
fn register_target(suite: &mut Suite, slot: &Slot, cfg: &Config) {
    suite.add(slot, "device", 0, check_device);
    suite.add(slot, "errors::length_mismatch", 0, run_length_mismatch);
    suite.add(slot, "errors::value_size", 0, run_value_size);

    add_keys::<u8>(suite, slot, cfg);
    add_keys::<i8>(suite, slot, cfg);
    add_keys::<u16>(suite, slot, cfg);
    add_keys::<i16>(suite, slot, cfg);
    add_keys::<u32>(suite, slot, cfg);
    add_keys::<i32>(suite, slot, cfg);
    add_keys::<u64>(suite, slot, cfg);
    add_keys::<i64>(suite, slot, cfg);
    add_keys::<f32>(suite, slot, cfg);
    add_keys::<f64>(suite, slot, cfg);

    add_pairs_all_values::<u32>(suite, slot, cfg);
    add_pairs_all_values::<i64>(suite, slot, cfg);
    add_pairs_all_values::<f32>(suite, slot, cfg);
    add_pairs_all_values::<f64>(suite, slot, cfg);
    add_pairs_all_values::<u8>(suite, slot, cfg);

    derived::register(suite, slot, cfg);
}

// ---------------------------------------------------------------------------------------
// Device selection, checked once.

const NO_SUCH_DEVICE: &str = "no-such-device-xyz";

fn check_no_device() -> Result<(), Failed> {
    let result = Sorter::builder()
        .ignore_env()
        .device_name(NO_SUCH_DEVICE)
        .build();
    let err = match result {
        Ok(sorter) => {
            return Err(format!(
                "device_name({NO_SUCH_DEVICE:?}) built a sorter on {}",
                sorter.device()
            )
            .into());
        }
        Err(e) => e,
    };
    let Error::NoDevice { requested, found } = &err else {
        return Err(format!("device_name({NO_SUCH_DEVICE:?}): want NoDevice, got {err:?}").into());
    };
    if !requested.contains(NO_SUCH_DEVICE) {
        return Err(
            format!("NoDevice.requested {requested:?} does not name {NO_SUCH_DEVICE:?}").into(),
        );
    }
    // What was found: every device by name, every backend without devices by name.
    for entry in bitonic::devices() {
        let names: Vec<String> = if entry.devices.is_empty() {
            vec![entry.backend.name().to_string()]
        } else {
            entry.devices.iter().map(|d| d.name.clone()).collect()
        };
        for name in names {
            if !found.contains(&name) {
                return Err(format!("NoDevice.found {found:?} does not list {name:?}").into());
            }
        }
    }
    let message = err.to_string();
    if !message.contains(found.as_str()) || !message.contains(NO_SUCH_DEVICE) {
        return Err(
            format!("the NoDevice message {message:?} omits what was asked or found").into(),
        );
    }
    Ok(())
}

fn check_not_compiled(backend: BackendKind) -> Result<(), Failed> {
    let builders = [
        Sorter::builder().ignore_env().backend(backend),
        Sorter::builder()
            .ignore_env()
            .backend(backend)
            .device_index(0),
    ];
    for builder in builders {
        match builder.build() {
            Err(Error::BackendNotCompiled { backend: b }) if b == backend => {}
            Err(e) => {
                return Err(format!("{backend}: want BackendNotCompiled, got {e:?}").into());
            }
            Ok(sorter) => {
                return Err(format!(
                    "{backend} is not compiled in, yet a sorter was built on {}",
                    sorter.device()
                )
                .into());
            }
        }
    }
    let listed = bitonic::devices();
    match listed.iter().find(|e| e.backend == backend) {
        Some(e) if e.unavailable.is_some() && e.devices.is_empty() => Ok(()),
        other => {
            Err(format!("devices() should list {backend} as unavailable, lists {other:?}").into())
        }
    }
}

// ---------------------------------------------------------------------------------------

fn main() {
    let args = Arguments::from_args();
    let (cfg, problem) = Config::from_env();
    let mut suite = Suite::default();
    if let Some(problem) = problem {
        suite.add_failure("config::max_n", problem);
    }
    let found = targets::find("suite");
    for failure in found.failures {
        suite.add_trial(failure);
    }
    for slot in &found.slots {
        register_target(&mut suite, slot, &cfg);
    }

    suite.add_plain("select::no_device_by_name", check_no_device);
    for kind in BackendKind::ALL.into_iter().filter(|k| !k.is_compiled()) {
        suite.add_plain(format!("select::backend_not_compiled::{kind}"), move || {
            check_not_compiled(kind)
        });
    }

    libtest_mimic::run(&args, suite.into_trials()).exit()
}
