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
//! `faults::ranges` (`faults/ranges.rs`, every backend, the CPU's too) fails each point of a
//! sort in ranges past `device_memory_limit`, whose slices must stay untouched;
//! `faults::in_device_memory` each point of a sort in ranges in one device's memory, and
//! `faults::every_gpu::in_device_memory` (machines with two CUDA devices or more; ignored
//! elsewhere) those of the spread sort and of the ranges in every GPU's memory.
//!
//! The successful sort ends the loop and must also be exact; it must come at k = the number
//! of points of the unarmed sort, and at least `inject::MIN_DISTINCT_CALLS` different calls must
//! have failed on the way, so the trial cannot pass without injecting anything. Cases: `u32`
//! keys, `f64` keys descending, `u32` keys with `u64` values, rows of `f32`, a stable
//! key-value sort of `u16` keys with ties (two network sorts, narrow keys widened on the
//! host), and `u32` keys alone and with `u64` values in `PinnedBuffer`s (copied directly,
//! past the staging ring), each with 1000 and 70_000 elements (the latter several merge
//! passes); and `u32` keys with `u32` values just past 8 MiB, which take the radix sort. On GPUs two longer cases of `u32` keys: 1.5 million (several chunks each way),
//! and 9 million, whose transfers go through the pipeline of pieces, with a sample of its
//! points (the first and last dozen and every fifth).
//!
//! Targets and gating are the suite's (`support/targets.rs`), GPU backends only (the CPU
//! backend calls no driver): an unavailable backend's trials are ignored with the reason;
//! `BITONIC_REQUIRE`, `BITONIC_TEST_BACKENDS`, `BITONIC_TEST_SEED` and `BITONIC_TEST_TIMES`
//! work as for the suite.
//!
//! Layout: `faults/cases.rs` (what each case sorts and its exact result), `faults/inject.rs`
//! (the fault loop and its checks), `faults/host_threshold.rs` (where short sorts run); this
//! file registers the trials.

#[allow(dead_code)]
mod support;
#[allow(dead_code)]
#[path = "support/targets.rs"]
mod targets;

#[path = "faults/cases.rs"]
mod cases;
#[path = "faults/host_threshold.rs"]
mod host_threshold;
#[path = "faults/inject.rs"]
mod inject;
#[path = "faults/ranges.rs"]
mod ranges;

use bitonic::BackendKind;
use libtest_mimic::{Arguments, Completion, Trial};
use support::{Pattern, TestValue, input_seed, rng_for};
use targets::Slot;

use cases::{Keys, Pairs, Pinned};
use host_threshold::check_host_threshold;
use inject::{inject, inject_sampled};

/// Keys of the chunked case: 6 MiB of `u32`, three chunks each way.
const CHUNKED: usize = 3 << 19;
/// Keys of the pipelined case: 36 MiB of `u32`, past the 32 MiB from which long columns go
/// through the pipeline of pieces.
const PIPELINED: usize = 9 << 20;

/// Pairs of the radix case: `u32` keys with `u32` values just past 8 MiB.
const RADIX_PAIRS: usize = (1 << 20) + 3;

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
    // Pairs past 8 MiB take the radix sort on every GPU backend: a failure at its launches
    // (the state cleared, histogram, starts, digit passes, copy back) leaves the slices as
    // they were. Few distinct keys, so that the values' order is the stable one. Hundreds of
    // points (OpenCL sets each kernel argument on its own): the first and last two dozen and
    // every seventh between.
    let id = format!("faults::u32_keys_u32_values_radix::n{RADIX_PAIRS}");
    trials.push(slot.trial(&id.clone(), move |t| {
        let n = RADIX_PAIRS;
        let seed = input_seed(t.seed, &id, n);
        let keys = Pattern::Few.keys::<u32>(n, &mut rng_for(seed));
        let values = (0..n).map(|i| u32::make(i, seed)).collect();
        let pairs = Pairs {
            keys,
            values,
            stable: false,
        };
        inject_sampled(t, &id, pairs, |points, k| {
            k < 24 || k + 24 >= points || k % 7 == 0
        })
    }));
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
        // Sorts in ranges have fault points of their own, on every backend.
        if !matches!(slot, Slot::Ready(t) if t.oblivious) {
            trials.push(slot.trial("faults::ranges", ranges::check_ranges));
            trials.push(slot.trial("faults::in_device_memory", ranges::check_in_device_memory));
        }
        let cpu = match slot {
            Slot::Ready(t) => t.info.backend == BackendKind::Cpu,
            Slot::Unavailable { label, .. } => label == BackendKind::Cpu.name(),
        };
        if !cpu {
            gpu_slots += 1;
            register(slot, &mut trials);
        }
    }
    // Runs where the machine has two CUDA devices or more; ignored (not passed) elsewhere.
    trials.push(
        Trial::test(
            "faults::every_gpu::in_device_memory",
            ranges::every_gpu_in_device_memory,
        )
        .with_ignored_flag(targets::cuda_devices() < 2),
    );
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
