//! Many threads sorting at once, on every backend this build can reach.
//!
//! Per target, three trials:
//! - `<target>::threads::shared_sorter`: 8 threads sort through one `Arc<Sorter>`;
//! - `<target>::threads::sorter_per_thread`: 8 threads each open their own `Sorter` on the
//!   same device (scoped threads);
//! - `<target>::threads::rayon_tasks_beside_a_thread`: one thread sorts 36 MiB of keys (its
//!   host copies run on rayon's threads) while rayon's threads sort through the same sorter.
//!
//! The threads start together (a barrier) and each sorts its own random data: three sorts of
//! different key types, orders, value types and lengths (one above 2^16 per thread), every
//! result checked against Rust's sort; key-value results must keep every pair and, off the
//! CPU backend, equal the CPU backend's result bit for bit. Targets and gating are the
//! suite's (`support/targets.rs`): an unavailable backend's trials are ignored with the
//! reason; `BITONIC_REQUIRE`, `BITONIC_TEST_BACKENDS`, `BITONIC_TEST_SEED` and
//! `BITONIC_TEST_TIMES` work as for the suite.

#[allow(dead_code)]
mod support;
#[allow(dead_code)]
#[path = "support/targets.rs"]
mod targets;

use std::sync::{Arc, Barrier};

use bitonic::Sorter;
use libtest_mimic::{Arguments, Failed};
use rand::Rng;
use rayon::prelude::*;
use support::{
    Pattern, TestKey, TestValue, check_keys, expected, input_seed, pair_multiset, rng_for,
    sort_keys, sort_pairs,
};
use targets::Target;

const THREADS: usize = 8;

/// What one sort of one thread is.
#[derive(Clone, Copy, Debug)]
enum Kind {
    U32Keys,
    F64Keys,
    I64PairsU64,
    F32PairsU32,
    U16Keys,
    I8PairsU32,
}

const KINDS: [Kind; 6] = [
    Kind::U32Keys,
    Kind::F64Keys,
    Kind::I64PairsU64,
    Kind::F32PairsU32,
    Kind::U16Keys,
    Kind::I8PairsU32,
];

/// One sort: its kind, input pattern, order and length.
#[derive(Clone, Copy, Debug)]
struct Job {
    kind: Kind,
    pattern: Pattern,
    descending: bool,
    n: usize,
    seed: u64,
}

/// The three sorts of thread `t`: lengths up to 5000, up to 20_000, and above 2^16; kinds,
/// patterns and orders rotate so that threads running side by side sort different things.
fn jobs(variant: &str, base_seed: u64, t: usize) -> Vec<Job> {
    let seed = input_seed(base_seed, variant, t);
    let mut rng = rng_for(seed);
    let lengths = [
        rng.gen_range(0..=5000),
        rng.gen_range(5001..=20_000),
        rng.gen_range((1 << 16) + 1..=70_000),
    ];
    lengths
        .iter()
        .enumerate()
        .map(|(j, &n)| Job {
            kind: KINDS[(t + 2 * j) % KINDS.len()],
            pattern: Pattern::ALL[(t + j) % Pattern::ALL.len()],
            descending: (t + j) % 2 == 1,
            n,
            seed: rng.r#gen(),
        })
        .collect()
}

fn run_keys<K: TestKey>(sorter: &Sorter, job: &Job) -> Result<(), String> {
    let input: Vec<K> = job.pattern.keys(job.n, &mut rng_for(job.seed));
    let mut got = input.clone();
    sort_keys(sorter, &mut got, job.descending)
        .map_err(|e| format!("the sort returned an error: {e}"))?;
    check_keys(&got, &expected(&input, job.descending))
}

fn run_pairs<K: TestKey, V: TestValue>(
    sorter: &Sorter,
    reference: Option<&Sorter>,
    job: &Job,
) -> Result<(), String> {
    let keys_in: Vec<K> = job.pattern.keys(job.n, &mut rng_for(job.seed));
    let values_in: Vec<V> = (0..job.n).map(|i| V::make(i, job.seed)).collect();
    let (mut keys, mut values) = (keys_in.clone(), values_in.clone());
    sort_pairs(sorter, &mut keys, &mut values, job.descending)
        .map_err(|e| format!("the sort returned an error: {e}"))?;
    check_keys(&keys, &expected(&keys_in, job.descending))?;
    if pair_multiset(&keys, &values) != pair_multiset(&keys_in, &values_in) {
        return Err("the output pairs are not a permutation of the input pairs".to_string());
    }
    if let Some(cpu) = reference {
        let (mut ref_keys, mut ref_values) = (keys_in, values_in);
        sort_pairs(cpu, &mut ref_keys, &mut ref_values, job.descending)
            .map_err(|e| format!("the CPU backend returned an error: {e}"))?;
        if let Some(i) = (0..job.n).find(|&i| values[i].bits() != ref_values[i].bits()) {
            return Err(format!(
                "differs from the CPU backend at index {i}: value {:#x}, the CPU has {:#x}",
                values[i].bits(),
                ref_values[i].bits()
            ));
        }
    }
    Ok(())
}

/// Runs one thread's jobs, after every thread has reached the barrier.
fn run_thread(
    sorter: &Sorter,
    reference: Option<&Sorter>,
    jobs: &[Job],
    barrier: &Barrier,
) -> Result<(), String> {
    barrier.wait();
    for job in jobs {
        let result = match job.kind {
            Kind::U32Keys => run_keys::<u32>(sorter, job),
            Kind::F64Keys => run_keys::<f64>(sorter, job),
            Kind::U16Keys => run_keys::<u16>(sorter, job),
            Kind::I64PairsU64 => run_pairs::<i64, u64>(sorter, reference, job),
            Kind::F32PairsU32 => run_pairs::<f32, u32>(sorter, reference, job),
            Kind::I8PairsU32 => run_pairs::<i8, u32>(sorter, reference, job),
        };
        result.map_err(|e| format!("{job:?}: {e}"))?;
    }
    Ok(())
}

/// Gathers the threads' outcomes into one trial result naming every failing thread.
fn summarize(
    label: &str,
    variant: &str,
    outcomes: Vec<std::thread::Result<Result<(), String>>>,
) -> Result<(), Failed> {
    let failures: Vec<String> = outcomes
        .into_iter()
        .enumerate()
        .filter_map(|(t, outcome)| match outcome {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(format!("thread {t}: {e}")),
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                Some(format!("thread {t} panicked: {message}"))
            }
        })
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{label}::threads::{variant}: {}", failures.join("; ")).into())
    }
}

/// 8 threads, one `Arc<Sorter>` shared by all.
fn shared_sorter(t: &Target) -> Result<(), Failed> {
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let sorter = Arc::clone(&t.sorter);
            let reference = t.reference.clone();
            let barrier = Arc::clone(&barrier);
            let jobs = jobs("threads::shared_sorter", t.seed, i);
            std::thread::spawn(move || run_thread(&sorter, reference.as_deref(), &jobs, &barrier))
        })
        .collect();
    let outcomes = handles.into_iter().map(|h| h.join()).collect();
    summarize(&t.label, "shared_sorter", outcomes)
}

/// 8 threads, each with a sorter of its own on the same device.
fn sorter_per_thread(t: &Target) -> Result<(), Failed> {
    let barrier = Barrier::new(THREADS);
    let outcomes = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let barrier = &barrier;
                let reference = t.reference.as_deref();
                scope.spawn(move || {
                    let opened = t.open_another();
                    // Every thread reaches the barrier, even one whose sorter failed to open.
                    let sorter = match opened {
                        Ok(sorter) => sorter,
                        Err(e) => {
                            barrier.wait();
                            return Err(format!("opening a sorter on {}: {e}", t.info));
                        }
                    };
                    let jobs = jobs("threads::sorter_per_thread", t.seed, i);
                    run_thread(&sorter, reference, &jobs, barrier)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    summarize(&t.label, "sorter_per_thread", outcomes)
}

/// One thread sorts 9 million `u32` keys (36 MiB each way, whose host copies rayon's
/// threads make) while rayon's threads themselves sort arrays of 300_000 keys through the
/// same sorter, round after round until the long sort is done. A rayon thread that slept
/// waiting for the sorter would leave the long sort waiting for its copies for ever, so the
/// trial fails after 600 s without a result instead of hanging.
fn rayon_tasks_beside_a_thread(t: &Target) -> Result<(), Failed> {
    const LONG: usize = 9 << 20;
    const SHORT: usize = 300_000;
    let (sorter, seed) = (Arc::clone(&t.sorter), t.seed);
    let (report, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let sort_one = |n: usize, seed: u64| -> Result<(), String> {
            let input: Vec<u32> = Pattern::Random.keys(n, &mut rng_for(seed));
            let mut got = input.clone();
            sort_keys(&sorter, &mut got, false).map_err(|e| format!("{n} keys: {e}"))?;
            check_keys(&got, &expected(&input, false)).map_err(|e| format!("{n} keys: {e}"))
        };
        let done = std::sync::atomic::AtomicBool::new(false);
        let outcome = std::thread::scope(|scope| {
            let long = scope.spawn(|| {
                let outcome = sort_one(LONG, input_seed(seed, "threads::long", LONG));
                done.store(true, std::sync::atomic::Ordering::Relaxed);
                outcome
            });
            let mut round = 0u64;
            let short = loop {
                let outcome = (0..THREADS as u64)
                    .into_par_iter()
                    .map(|i| {
                        sort_one(
                            SHORT,
                            input_seed(seed, "threads::short", (round << 8 | i) as usize),
                        )
                    })
                    .collect::<Result<Vec<()>, String>>();
                round += 1;
                if outcome.is_err() || done.load(std::sync::atomic::Ordering::Relaxed) {
                    break outcome;
                }
            };
            let long = long
                .join()
                .unwrap_or_else(|_| Err("the long sort panicked".into()));
            long.and(short.map(drop))
        });
        let _ = report.send(outcome);
    });
    match result.recv_timeout(std::time::Duration::from_secs(600)) {
        Ok(outcome) => outcome.map_err(|e| format!("{}: {e}", t.label).into()),
        Err(_) => Err(format!(
            "{}: no result after 600 s: the long sort and rayon's threads wait on each other",
            t.label
        )
        .into()),
    }
}

fn main() {
    let args = Arguments::from_args();
    let found = targets::find("threads");
    let mut trials = found.failures;
    for slot in &found.slots {
        trials.push(slot.trial("threads::shared_sorter", shared_sorter));
        trials.push(slot.trial("threads::sorter_per_thread", sorter_per_thread));
        trials.push(slot.trial(
            "threads::rayon_tasks_beside_a_thread",
            rayon_tasks_beside_a_thread,
        ));
    }
    libtest_mimic::run(&args, trials).exit()
}
