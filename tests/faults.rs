//! Driver failures in the middle of a sort, on every GPU backend this build can reach.
//!
//! Needs the test-only cargo feature `fault-injection` (`cargo test --all-features --test
//! faults`). The GPU backends pass a fault point before each driver call of a sort of host
//! slices (`src/fault.rs`); `bitonic::fault::arm(k)` makes the `k`-th point reached on this
//! thread fail as that driver call would, with [`bitonic::fault::CODE`].
//!
//! Each trial, `<target>::faults::<case>::n<len>`, sorts one input once unarmed (which must
//! give the exact expected result, and counts the points), then for k = 0, 1, 2, ... copies
//! the input, arms fault k and sorts again, until a sort passes every point. Each failed
//! sort must:
//! - return `Error::Driver` for the target's backend, naming the call whose point failed,
//!   with the injected code and message, or, only where the result was being copied back
//!   chunk by chunk (the default), `Error::PartialResult` wrapping that error;
//! - leave the slices exactly as they were, or exactly sorted; after `Error::PartialResult`
//!   every element holds either its input or its sorted value (part written, the rest as it
//!   was), and with `all_or_nothing` that error never comes;
//! - leave the sorter working: an unarmed sort right after gives the exact result.
//!
//! Every case runs twice: with the default copy back, and with `all_or_nothing(true)`.
//! `faults::host_threshold` checks that short sorts run on the host (no driver call at all).
//!
//! The successful sort ends the loop and must also be exact; it must come at k = the number
//! of points of the unarmed sort, and at least [`MIN_DISTINCT_CALLS`] different calls must
//! have failed on the way, so the trial cannot pass without injecting anything. Cases: `u32`
//! keys, `f64` keys descending, `u32` keys with `u64` values, rows of `f32`, a stable
//! key-value sort of `u16` keys with ties (two network sorts, narrow keys widened on the
//! host), and `u32` keys alone and with `u64` values in `PinnedBuffer`s (copied directly,
//! past the staging ring), each with 1000 and 70_000 elements (the latter several merge
//! passes). On GPUs two longer cases of `u32` keys: 1.5 million (several chunks each way),
//! and 9 million, whose transfers go through the pipeline of pieces, with a sample of its
//! points (the first and last dozen and every fifth).
//!
//! Targets and gating are the suite's (`support/targets.rs`), GPU backends only (the CPU
//! backend calls no driver): an unavailable backend's trials are ignored with the reason;
//! `BITONIC_REQUIRE`, `BITONIC_TEST_BACKENDS`, `BITONIC_TEST_SEED` and `BITONIC_TEST_TIMES`
//! work as for the suite.

#[allow(dead_code)]
mod support;
#[allow(dead_code)]
#[path = "support/targets.rs"]
mod targets;

use std::collections::BTreeMap;
use std::sync::Arc;

use bitonic::{BackendKind, Error, PinnedBuffer, Sorter, fault};
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use rand::seq::SliceRandom;
use support::{
    Pattern, TestKey, TestValue, check_keys, expected, input_seed, pair_multiset, rng_for,
    sort_pairs,
};
use targets::{Slot, Target};

/// Fewest different driver calls that must have failed in one trial.
const MIN_DISTINCT_CALLS: usize = 4;

/// Every driver call a backend's host-slice sort has a fault point before.
fn known_calls(backend: BackendKind) -> &'static [&'static str] {
    match backend {
        BackendKind::Cuda => &[
            "cuCtxSetCurrent",
            "cuMemAlloc",
            "cuMemAllocHost",
            "cuMemcpyHtoDAsync",
            "cuEventRecord",
            "cuStreamWaitEvent",
            "cuLaunchKernel",
            "cuEventSynchronize",
            "cuMemcpyDtoHAsync",
        ],
        BackendKind::OpenCl => &[
            "clCreateBuffer",
            "clEnqueueMapBuffer",
            "clEnqueueWriteBuffer",
            "clSetKernelArg",
            "clEnqueueNDRangeKernel",
            "clWaitForEvents",
            "clEnqueueReadBuffer",
            "clEnqueueMarkerWithWaitList",
            "clCreateSubBuffer",
            "clEnqueueBarrierWithWaitList",
        ],
        _ => &[],
    }
}

/// Disarms this thread's fault countdown when dropped, also when a trial panics (libtest-mimic
/// reuses its threads).
struct Disarm;

impl Drop for Disarm {
    fn drop(&mut self) {
        fault::disarm();
    }
}

/// One kind of sort: its host data, how it is sorted, and the exact result expected.
trait Case: Clone {
    /// Sorts the data in place (the call under test).
    fn sort(&mut self, sorter: &Sorter) -> bitonic::Result<()>;
    /// Every element's bits, keys then values: equal bits, equal data.
    fn bits(&self) -> Vec<u64>;
    /// The exact result of a correct sort of this input on `target`.
    fn want(&self, target: &Target) -> Result<Self, String>;
}

/// Keys alone, whole or in rows.
#[derive(Clone)]
struct Keys<K> {
    keys: Vec<K>,
    descending: bool,
    /// `Some(row_len)`: `sort_rows` with rows of this length.
    row_len: Option<usize>,
}

impl<K: TestKey> Case for Keys<K> {
    fn sort(&mut self, sorter: &Sorter) -> bitonic::Result<()> {
        match (self.row_len, self.descending) {
            (None, false) => sorter.sort(&mut self.keys, bitonic::Order::Ascending),
            (None, true) => sorter.sort(&mut self.keys, bitonic::Order::Descending),
            (Some(r), false) => sorter.sort_rows(&mut self.keys, r, bitonic::Order::Ascending),
            (Some(r), true) => sorter.sort_rows(&mut self.keys, r, bitonic::Order::Descending),
        }
    }

    fn bits(&self) -> Vec<u64> {
        self.keys.iter().map(|&k| k.bits()).collect()
    }

    fn want(&self, _: &Target) -> Result<Self, String> {
        let row_len = self.row_len.unwrap_or(self.keys.len()).max(1);
        let keys = self
            .keys
            .chunks(row_len)
            .flat_map(|row| expected(row, self.descending))
            .collect();
        Ok(Keys {
            keys,
            ..self.clone()
        })
    }
}

/// Keys with values: `sort_by_key` (unstable, its result fixed by the network) or
/// `sort_by_key_stable`.
#[derive(Clone)]
struct Pairs<K, V> {
    keys: Vec<K>,
    values: Vec<V>,
    stable: bool,
}

impl<K: TestKey + Ord, V: TestValue> Case for Pairs<K, V> {
    fn sort(&mut self, sorter: &Sorter) -> bitonic::Result<()> {
        if self.stable {
            sorter.sort_by_key_stable(&mut self.keys, &mut self.values, bitonic::Order::Ascending)
        } else {
            sort_pairs(sorter, &mut self.keys, &mut self.values, false)
        }
    }

    fn bits(&self) -> Vec<u64> {
        let keys = self.keys.iter().map(|&k| k.bits());
        keys.chain(self.values.iter().map(|&v| v.bits())).collect()
    }

    fn want(&self, target: &Target) -> Result<Self, String> {
        if self.stable {
            // Rust's stable sort of the pairs by key.
            let mut pairs: Vec<(K, V)> =
                self.keys.iter().copied().zip(self.values.clone()).collect();
            pairs.sort_by_key(|p| p.0);
            let (keys, values) = pairs.into_iter().unzip();
            return Ok(Pairs {
                keys,
                values,
                stable: true,
            });
        }
        // The CPU backend's result: every backend runs the same network, so the order of
        // equal keys' values is fixed too. Checked against Rust's sort first.
        let cpu = target
            .reference
            .as_deref()
            .ok_or("no CPU reference sorter")?;
        let mut want = self.clone();
        want.sort(cpu)
            .map_err(|e| format!("the CPU backend returned an error: {e}"))?;
        check_keys(&want.keys, &expected(&self.keys, false))
            .map_err(|e| format!("the CPU backend's keys: {e}"))?;
        if pair_multiset(&want.keys, &want.values) != pair_multiset(&self.keys, &self.values) {
            return Err("the CPU backend's pairs are not a permutation of the input's".into());
        }
        Ok(want)
    }
}

/// `u32` keys, and `u64` values when given, in pinned buffers of the target's sorter: the
/// copies go directly between them and the device, past the staging ring (except the copy
/// back of an all-or-nothing sort).
struct Pinned {
    sorter: Arc<Sorter>,
    keys: PinnedBuffer<u32>,
    values: Option<PinnedBuffer<u64>>,
}

impl Pinned {
    fn new(sorter: &Arc<Sorter>, keys: &[u32], values: Option<&[u64]>) -> Pinned {
        fn copy<T: bytemuck::Pod>(sorter: &Sorter, data: &[T]) -> PinnedBuffer<T> {
            let mut buffer = sorter
                .pinned_buffer(data.len())
                .unwrap_or_else(|e| panic!("allocating a pinned buffer: {e}"));
            buffer.copy_from_slice(data);
            buffer
        }
        Pinned {
            sorter: Arc::clone(sorter),
            keys: copy(sorter, keys),
            values: values.map(|v| copy(sorter, v)),
        }
    }
}

impl Clone for Pinned {
    fn clone(&self) -> Self {
        Pinned::new(&self.sorter, &self.keys, self.values.as_deref())
    }
}

impl Case for Pinned {
    fn sort(&mut self, sorter: &Sorter) -> bitonic::Result<()> {
        match &mut self.values {
            Some(values) => sorter.sort_by_key(&mut self.keys, values, bitonic::Order::Ascending),
            None => sorter.sort(&mut self.keys, bitonic::Order::Ascending),
        }
    }

    fn bits(&self) -> Vec<u64> {
        let keys = self.keys.iter().map(|&k| TestKey::bits(k));
        let values = self
            .values
            .iter()
            .flat_map(|v| v.iter().map(|&v| TestValue::bits(v)));
        keys.chain(values).collect()
    }

    fn want(&self, target: &Target) -> Result<Self, String> {
        // As for the same data in ordinary memory.
        let (keys, values) = match &self.values {
            Some(values) => {
                let pairs = Pairs {
                    keys: self.keys.to_vec(),
                    values: values.to_vec(),
                    stable: false,
                };
                let want = pairs.want(target)?;
                (want.keys, Some(want.values))
            }
            None => (expected(&self.keys, false), None),
        };
        Ok(Pinned::new(&self.sorter, &keys, values.as_deref()))
    }
}

/// The first index where `a` and `b` differ, or "none".
fn first_diff(a: &[u64], b: &[u64]) -> String {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .map_or_else(|| "none".to_string(), |i| format!("at element {i}"))
}

/// Checks an error from a sort whose fault point for `call` failed.
fn check_error(err: &Error, backend: BackendKind, call: &str) -> Result<(), String> {
    match err {
        Error::Driver {
            backend: b,
            call: c,
            code,
            message,
        } if *b == backend && c == call && *code == fault::CODE && message == "injected fault" => {
            let text = err.to_string();
            if text.contains(call) {
                Ok(())
            } else {
                Err(format!("the error's text does not name {call}: {text}"))
            }
        }
        other => Err(format!(
            "the fault at {call} should give Error::Driver {{ backend: {backend}, call: \
             {call:?}, code: {}, message: \"injected fault\" }}, got {other:?}",
            fault::CODE
        )),
    }
}

/// Held by every fault loop: trials of one target share its sorter, and a sort on another
/// thread would change which device buffers a sort finds kept, and so its number of points.
static ONE_LOOP_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Puts the sorter back to the default copy back when dropped.
struct DefaultCopyBack<'a>(&'a Sorter);

impl Drop for DefaultCopyBack<'_> {
    fn drop(&mut self) {
        self.0.backend().set_all_or_nothing(false);
    }
}

/// Runs the fault loop on one case, with each copy-back mode (see the file's comment).
fn inject<C: Case>(target: &Target, name: &str, input: C) -> Result<(), Failed> {
    inject_sampled(target, name, input, |_, _| true)
}

/// [`inject`], injecting only the faults `k` for which `sampled(points, k)` holds (the sort
/// that passes every point still ends the loop).
fn inject_sampled<C: Case>(
    target: &Target,
    name: &str,
    input: C,
    sampled: fn(usize, usize) -> bool,
) -> Result<(), Failed> {
    let _one = ONE_LOOP_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let _disarm = Disarm;
    let sorter = &*target.sorter;
    let _default = DefaultCopyBack(sorter);
    for all_or_nothing in [false, true] {
        sorter.backend().set_all_or_nothing(all_or_nothing);
        inject_mode(target, name, input.clone(), all_or_nothing, sampled)?;
    }
    Ok(())
}

/// The fault loop in one copy-back mode.
fn inject_mode<C: Case>(
    target: &Target,
    name: &str,
    input: C,
    all_or_nothing: bool,
    sampled: fn(usize, usize) -> bool,
) -> Result<(), Failed> {
    let backend = target.info.backend;
    let sorter = &*target.sorter;
    let want = input.want(target)?;
    let (input_bits, want_bits) = (input.bits(), want.bits());

    // Every sort starts without the device buffers that sorts keep for reuse, so that the
    // allocations are among the points (a sort that reuses them passes the same points less
    // the allocations).
    let fresh = || sorter.release_device_memory();

    // Unarmed (armed past any reachable point): the exact result, and the number of points.
    let mut first = input.clone();
    fresh();
    fault::arm(usize::MAX);
    let result = first.sort(sorter);
    let points = fault::points_seen();
    fault::disarm();
    result.map_err(|e| format!("the unarmed sort failed: {e}"))?;
    if first.bits() != want_bits {
        return Err(format!(
            "the unarmed sort is wrong: differs from the expected result {}",
            first_diff(&first.bits(), &want_bits)
        )
        .into());
    }

    // Per failed call: (faults injected, left untouched, left sorted, partly written).
    let mut outcomes: BTreeMap<&'static str, (usize, usize, usize, usize)> = BTreeMap::new();
    let mut k = 0;
    loop {
        if k > points {
            return Err(format!(
                "fault {k} still failed, but the unarmed sort passed only {points} points"
            )
            .into());
        }
        if k < points && !sampled(points, k) {
            k += 1;
            continue;
        }
        let mut data = input.clone();
        fresh();
        fault::arm(k);
        let result = data.sort(sorter);
        let tripped = fault::tripped();
        fault::disarm();
        let Some(call) = tripped else {
            // No point failed: the sort must have succeeded, exactly, after every point.
            result.map_err(|e| format!("fault {k} was not injected, yet the sort failed: {e}"))?;
            if data.bits() != want_bits {
                return Err(format!(
                    "the sort that passed every point is wrong: differs {}",
                    first_diff(&data.bits(), &want_bits)
                )
                .into());
            }
            if k != points {
                return Err(format!(
                    "the sort passed every point at fault {k}, the unarmed sort passed {points}"
                )
                .into());
            }
            break;
        };
        let at = format!("fault {k} (at {call})");
        let err = match result {
            Err(err) => err,
            Ok(()) => return Err(format!("{at}: the sort returned Ok").into()),
        };
        let (cause, partial) = match &err {
            Error::PartialResult { cause } if !all_or_nothing => (cause.as_ref(), true),
            Error::PartialResult { .. } => {
                return Err(format!("{at}: all_or_nothing, yet the result is partial").into());
            }
            other => (other, false),
        };
        check_error(cause, backend, call).map_err(|e| format!("{at}: {e}"))?;
        let bits = data.bits();
        let entry = outcomes.entry(call).or_default();
        entry.0 += 1;
        if partial {
            // Each element is its input or its sorted value; at least one was written.
            let mixed = bits
                .iter()
                .zip(&input_bits)
                .zip(&want_bits)
                .all(|((b, i), w)| b == i || b == w);
            if !mixed || bits == input_bits {
                return Err(format!(
                    "{at}: Error::PartialResult, but the slices do not hold part of the result \
                     and part of the input (differ from the input {})",
                    first_diff(&bits, &input_bits)
                )
                .into());
            }
            entry.3 += 1;
        } else if bits == input_bits {
            entry.1 += 1;
        } else if bits == want_bits {
            entry.2 += 1;
        } else {
            return Err(format!(
                "{at}: the slices are half written: they differ from the input {} and from \
                 the sorted result {}",
                first_diff(&bits, &input_bits),
                first_diff(&bits, &want_bits)
            )
            .into());
        }
        // The sorter still works.
        let mut again = input.clone();
        again
            .sort(sorter)
            .map_err(|e| format!("{at}: the next, unarmed sort failed: {e}"))?;
        if again.bits() != want_bits {
            return Err(format!(
                "{at}: the next, unarmed sort is wrong: differs {}",
                first_diff(&again.bits(), &want_bits)
            )
            .into());
        }
        k += 1;
    }

    let known = known_calls(backend);
    if let Some(call) = outcomes.keys().find(|c| !known.contains(c)) {
        return Err(format!("fault point {call} is not one of {backend}'s calls {known:?}").into());
    }
    if outcomes.len() < MIN_DISTINCT_CALLS {
        return Err(format!(
            "only {} different calls failed ({:?}) in {points} points; want at least \
             {MIN_DISTINCT_CALLS}",
            outcomes.len(),
            outcomes.keys().collect::<Vec<_>>()
        )
        .into());
    }
    let summary: Vec<String> = outcomes
        .iter()
        .map(|(call, (n, untouched, sorted, partial))| {
            format!("{call} x{n} ({untouched} untouched, {sorted} sorted, {partial} partial)")
        })
        .collect();
    let mode = if all_or_nothing {
        "all or nothing"
    } else {
        "direct"
    };
    eprintln!(
        "{}::{name} ({mode}): {points} points: {}",
        target.label,
        summary.join(", ")
    );
    Ok(())
}

/// Sorts shorter than `host_threshold` call no driver at all, keys or pairs, except pairs whose
/// keys repeat from `host_threshold / TIED_PAIRS_THRESHOLD_DIVISOR` on; one of that length does;
/// in the oblivious mode every sort goes to the device.
fn check_host_threshold(target: &Target) -> Result<(), Failed> {
    let _disarm = Disarm;
    let sorter = |oblivious: bool| {
        Sorter::builder()
            .ignore_env()
            .backend(target.info.backend)
            .device_index(target.info.index)
            .oblivious(oblivious)
            .build()
            .map_err(|e| format!("a sorter with the default host_threshold: {e}"))
    };
    let (default, oblivious) = (sorter(false)?, sorter(true)?);
    let below = bitonic::DEFAULT_HOST_THRESHOLD;
    let mut rng = rng_for(input_seed(target.seed, "host_threshold", 0));
    // (what, sorter, n, distinct keys, keys alone, runs on the host)
    let tied = below / bitonic::internals::TIED_PAIRS_THRESHOLD_DIVISOR;
    let equal = "pairs with equal keys";
    let cases = [
        ("keys", &default, below - 1, false, true, true),
        ("keys", &default, below, false, true, false),
        ("distinct pairs", &default, below - 1, true, false, true),
        (equal, &default, tied - 1, false, false, true),
        (equal, &default, tied, false, false, false),
        (equal, &default, below, false, false, false),
        ("keys, oblivious", &oblivious, below - 1, false, true, false),
        (
            "pairs, oblivious",
            &oblivious,
            below - 1,
            true,
            false,
            false,
        ),
    ];
    for (what, sorter, n, distinct, alone, on_host) in cases {
        // Distinct keys: a shuffled permutation; equal ones: few distinct values.
        let mut keys: Vec<u32> = if distinct {
            let mut k: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
            k.shuffle(&mut rng);
            k
        } else if alone {
            Pattern::Random.keys::<u32>(n, &mut rng)
        } else {
            Pattern::Few.keys::<u32>(n, &mut rng)
        };
        let want = expected(&keys, false);
        let mut values: Vec<u32> = (0..n as u32).collect();
        let input = pair_multiset(&keys, &values);
        fault::arm(usize::MAX);
        let result = if alone {
            sorter.sort(&mut keys, bitonic::Order::Ascending)
        } else {
            sorter.sort_by_key(&mut keys, &mut values, bitonic::Order::Ascending)
        };
        let points = fault::points_seen();
        fault::disarm();
        result.map_err(|e| format!("{what}, n = {n}: {e}"))?;
        check_keys(&keys, &want).map_err(|e| format!("{what}, n = {n}: {e}"))?;
        if !alone && pair_multiset(&keys, &values) != input {
            return Err(format!("{what}, n = {n}: the pairs are not the input's").into());
        }
        if on_host != (points == 0) {
            return Err(format!(
                "{what}, n = {n} (host_threshold {below}): {points} driver calls; expected the sort \
                 to run on the {}",
                if on_host { "host" } else { "device" }
            )
            .into());
        }
    }
    Ok(())
}

/// Keys of the chunked case: 6 MiB of `u32`, three chunks each way.
const CHUNKED: usize = 3 << 19;
/// Keys of the pipelined case: 36 MiB of `u32`, past the 32 MiB from which long columns go
/// through the pipeline of pieces.
const PIPELINED: usize = 9 << 20;

/// The lengths every case runs with: one tile, and several merge passes.
const LENGTHS: [usize; 2] = [1000, 70_000];

/// The trials of one GPU target.
fn register(slot: &Slot, trials: &mut Vec<Trial>) {
    trials.push(slot.trial("faults::host_threshold", check_host_threshold));
    for n in LENGTHS {
        let name = |case: &str| format!("faults::{case}::n{n}");
        trials.push(u32_keys_trial(slot, name("u32_keys"), n));
        let id = name("f64_keys_desc");
        trials.push(slot.trial(&id.clone(), move |t| {
            let keys = Pattern::Special.keys::<f64>(n, &mut rng_for(input_seed(t.seed, &id, n)));
            inject(
                t,
                &id,
                Keys {
                    keys,
                    descending: true,
                    row_len: None,
                },
            )
        }));
        let id = name("u32_keys_u64_values");
        trials.push(slot.trial(&id.clone(), move |t| {
            let seed = input_seed(t.seed, &id, n);
            let keys = Pattern::Few.keys::<u32>(n, &mut rng_for(seed));
            let values = (0..n).map(|i| u64::make(i, seed)).collect();
            inject(
                t,
                &id,
                Pairs {
                    keys,
                    values,
                    stable: false,
                },
            )
        }));
        let id = name("f32_rows4");
        trials.push(slot.trial(&id.clone(), move |t| {
            let keys = Pattern::Random.keys::<f32>(n, &mut rng_for(input_seed(t.seed, &id, n)));
            inject(
                t,
                &id,
                Keys {
                    keys,
                    descending: false,
                    row_len: Some(n / 4),
                },
            )
        }));
        let id = name("pinned_u32_keys");
        trials.push(slot.trial(&id.clone(), move |t| {
            let keys = Pattern::Random.keys::<u32>(n, &mut rng_for(input_seed(t.seed, &id, n)));
            inject(t, &id, Pinned::new(&t.sorter, &keys, None))
        }));
        let id = name("pinned_u32_keys_u64_values");
        trials.push(slot.trial(&id.clone(), move |t| {
            let seed = input_seed(t.seed, &id, n);
            let keys = Pattern::Few.keys::<u32>(n, &mut rng_for(seed));
            let values: Vec<u64> = (0..n).map(|i| u64::make(i, seed)).collect();
            inject(t, &id, Pinned::new(&t.sorter, &keys, Some(&values)))
        }));
        let id = name("u16_keys_u32_values_stable");
        trials.push(slot.trial(&id.clone(), move |t| {
            let seed = input_seed(t.seed, &id, n);
            let keys = Pattern::Few.keys::<u16>(n, &mut rng_for(seed));
            let values = (0..n).map(|i| u32::make(i, seed)).collect();
            inject(
                t,
                &id,
                Pairs {
                    keys,
                    values,
                    stable: true,
                },
            )
        }));
    }
    // Keys alone in several chunks each way (6 MiB in chunks of 2 MiB), so that a failure
    // while the result comes back can fall after a chunk of the same slice was written. Not
    // on OpenCL CPU devices (PoCL), where its 500 sorts of 1.5 million keys take minutes; the
    // engine's own tests (`host_transfer`) inject every failure of such a transfer there.
    if !matches!(slot, Slot::Ready(t) if t.is_opencl_cpu()) {
        let id = format!("faults::u32_keys_chunked::n{CHUNKED}");
        trials.push(u32_keys_trial(slot, id, CHUNKED));
        // Through the pipeline of pieces (36 MiB each way in pieces of 1 MiB: hundreds of
        // points), the first and last dozen faults and every fifth between.
        let id = format!("faults::u32_keys_pipelined::n{PIPELINED}");
        trials.push(slot.trial(&id.clone(), move |t| {
            let n = PIPELINED;
            let keys = Pattern::Random.keys::<u32>(n, &mut rng_for(input_seed(t.seed, &id, n)));
            let keys = Keys {
                keys,
                descending: false,
                row_len: None,
            };
            inject_sampled(t, &id, keys, |points, k| {
                k < 12 || k + 12 >= points || k % 5 == 0
            })
        }));
    }
}

/// The fault loop over `n` random `u32` keys, sorted ascending.
fn u32_keys_trial(slot: &Slot, id: String, n: usize) -> Trial {
    slot.trial(&id.clone(), move |t| {
        let keys = Pattern::Random.keys::<u32>(n, &mut rng_for(input_seed(t.seed, &id, n)));
        inject(
            t,
            &id,
            Keys {
                keys,
                descending: false,
                row_len: None,
            },
        )
    })
}

fn main() {
    let args = Arguments::from_args();
    let found = targets::find("faults");
    let mut trials = found.failures;
    let mut gpu_slots = 0;
    for slot in &found.slots {
        let cpu = match slot {
            Slot::Ready(t) => t.info.backend == BackendKind::Cpu,
            Slot::Unavailable { label, .. } => label == BackendKind::Cpu.name(),
        };
        if !cpu {
            gpu_slots += 1;
            register(slot, &mut trials);
        }
    }
    if gpu_slots == 0 {
        eprintln!("bitonic faults: no GPU backend is compiled in; nothing to inject faults into");
        trials.push(
            Trial::ignorable_test("faults::no_gpu_backend", || {
                Ok(Completion::ignored_with(
                    "no GPU backend (cuda, opencl) is compiled in",
                ))
            })
            .with_ignored_flag(true),
        );
    }
    libtest_mimic::run(&args, trials).exit()
}
