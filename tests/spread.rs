//! Sorts of keys spread over the memory of several CUDA devices
//! (`bitonic::cuda::sort_device_spread`), checked against a CPU sort of the parts'
//! concatenation: every part keeps its length and holds its slice of the sorted whole.
//!
//! - `spread::<parts>::<key>::...`: 1, 2 and 3 parts, on every CUDA device in turn (the
//!   same device repeated when there is one), lengths 0, 1, 2^k +- 1 and uneven mixes,
//!   random, all equal, few distinct, sorted, reversed and edge keys, both orders.
//! - `measure::spread_u32` (ignored; run with `--ignored` on a machine with GPUs):
//!   `BITONIC_SPREAD_LOG2` (default 30) random `u32` keys sorted on one GPU, then spread
//!   evenly over 2 and 4 GPUs (as many as there are), the median of 5 runs after a warm-up.
//!
//! - `faults::...` (with the `fault-injection` feature): each fault point of a spread sort
//!   made to fail in turn; no key may be lost.
//!
//! Without a CUDA device every trial is listed as ignored with the reason (a failure of
//! `require::cuda` where `BITONIC_REQUIRE` names `cuda`).

use std::fmt::Debug;
use std::time::{Duration, Instant};

use bitonic::cuda::{CudaBackend, SpreadPart, sort_device_spread};
use bitonic::{Order, WordKey};
use cust::context::{Context, CurrentContext};
use cust::device::Device;
use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy};
use cust::stream::{Stream, StreamFlags};
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A key type of the trials: its CPU order (`total_cmp` for floats) and random keys.
trait Key: WordKey + DeviceCopy + Copy + Debug + PartialEq + Send + 'static {
    fn cmp_keys(a: &Self, b: &Self) -> std::cmp::Ordering;
    fn from_bits(bits: u64) -> Self;
    const EDGES: &'static [Self];
}

macro_rules! int_key {
    ($t:ty) => {
        impl Key for $t {
            fn cmp_keys(a: &Self, b: &Self) -> std::cmp::Ordering {
                a.cmp(b)
            }
            fn from_bits(bits: u64) -> Self {
                bits as $t
            }
            const EDGES: &'static [Self] = &[<$t>::MIN, <$t>::MAX, 0, 1];
        }
    };
}
int_key!(u32);
int_key!(i32);
int_key!(u64);
int_key!(i64);

impl Key for f32 {
    fn cmp_keys(a: &Self, b: &Self) -> std::cmp::Ordering {
        a.total_cmp(b)
    }
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    const EDGES: &'static [Self] = &[
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        f32::MIN_POSITIVE,
    ];
}

impl Key for f64 {
    fn cmp_keys(a: &Self, b: &Self) -> std::cmp::Ordering {
        a.total_cmp(b)
    }
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    const EDGES: &'static [Self] = &[f64::NAN, -f64::NAN, f64::INFINITY, -0.0, 0.0, f64::MAX];
}

/// The data kinds of the trials.
const KINDS: [&str; 6] = ["random", "equal", "few", "sorted", "reversed", "edges"];

fn data<K: Key>(kind: &str, n: usize, rng: &mut StdRng) -> Vec<K> {
    let mut v: Vec<K> = match kind {
        "equal" => vec![K::from_bits(42); n],
        "few" => (0..n).map(|_| K::from_bits(rng.gen_range(0..3))).collect(),
        "edges" => (0..n)
            .map(|_| K::EDGES[rng.gen_range(0..K::EDGES.len())])
            .collect(),
        _ => (0..n).map(|_| K::from_bits(rng.r#gen())).collect(),
    };
    match kind {
        "sorted" => v.sort_by(K::cmp_keys),
        "reversed" => v.sort_by(|a, b| K::cmp_keys(b, a)),
        _ => {}
    }
    v
}

/// The CUDA devices: an open backend and the primary context of each.
struct Gpus {
    backends: Vec<CudaBackend>,
    contexts: Vec<Context>,
}

fn open_gpus() -> Result<Gpus, String> {
    let found = bitonic::cuda::devices().map_err(|e| format!("no CUDA driver: {e}"))?;
    if found.is_empty() {
        return Err("no CUDA device".into());
    }
    let mut gpus = Gpus {
        backends: Vec::new(),
        contexts: Vec::new(),
    };
    for info in &found {
        gpus.backends
            .push(CudaBackend::open(info.index).map_err(|e| e.to_string())?);
        let device = Device::get_device(info.index as u32).map_err(|e| e.to_string())?;
        gpus.contexts
            .push(Context::new(device).map_err(|e| e.to_string())?);
    }
    Ok(gpus)
}

/// One part's buffer and stream, on device `device`.
struct Owned<K: DeviceCopy> {
    device: usize,
    keys: DeviceBuffer<K>,
    stream: Stream,
}

fn upload<K: Key>(gpus: &Gpus, device: usize, keys: &[K]) -> Result<Owned<K>, String> {
    CurrentContext::set_current(&gpus.contexts[device]).map_err(|e| e.to_string())?;
    Ok(Owned {
        device,
        keys: DeviceBuffer::from_slice(keys).map_err(|e| e.to_string())?,
        stream: Stream::new(StreamFlags::NON_BLOCKING, None).map_err(|e| e.to_string())?,
    })
}

fn spread<K: Key>(gpus: &Gpus, owned: &mut [Owned<K>], order: Order) -> Result<(), String> {
    let mut parts: Vec<SpreadPart<'_, K>> = owned
        .iter_mut()
        .map(|o| SpreadPart {
            backend: &gpus.backends[o.device],
            keys: &mut o.keys,
            stream: &o.stream,
        })
        .collect();
    sort_device_spread(&mut parts, order).map_err(|e| e.to_string())
}

/// Sorts parts of `lens` on devices 0, 1, 2, ... (modulo the devices found) and checks
/// every part against its slice of the sorted concatenation.
fn check<K: Key>(gpus: &Gpus, lens: &[usize], kind: &str, order: Order) -> Result<(), Failed> {
    let mut rng = StdRng::seed_from_u64(lens.iter().sum::<usize>() as u64 * 31 + kind.len() as u64);
    let inputs: Vec<Vec<K>> = lens.iter().map(|&n| data::<K>(kind, n, &mut rng)).collect();
    let mut owned = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        owned.push(upload(gpus, i % gpus.backends.len(), input)?);
    }
    spread(gpus, &mut owned, order)?;
    let mut expected: Vec<K> = inputs.concat();
    expected.sort_by(K::cmp_keys);
    if order == Order::Descending {
        expected.reverse();
    }
    let mut at = 0;
    for (i, o) in owned.iter().enumerate() {
        CurrentContext::set_current(&gpus.contexts[o.device]).map_err(|e| e.to_string())?;
        let mut got = vec![K::from_bits(0); o.keys.len()];
        o.keys.copy_to(&mut got[..]).map_err(|e| e.to_string())?;
        if got.len() != lens[i] {
            return Err(format!("part {i} now holds {} keys, not {}", got.len(), lens[i]).into());
        }
        let want = &expected[at..at + lens[i]];
        // Compare bits: NaN payloads and -0.0 must land exactly.
        let same = got
            .iter()
            .zip(want)
            .all(|(a, b)| K::cmp_keys(a, b) == std::cmp::Ordering::Equal);
        if !same {
            let first = got
                .iter()
                .zip(want)
                .position(|(a, b)| K::cmp_keys(a, b) != std::cmp::Ordering::Equal);
            return Err(format!(
                "part {i} of {lens:?} ({kind}, {order:?}) differs from the sorted concatenation \
                 first at {first:?}"
            )
            .into());
        }
        at += lens[i];
    }
    Ok(())
}

/// The part lengths of each part count.
fn shapes(parts: usize) -> Vec<Vec<usize>> {
    let singles = [0, 1, 2, 3, 1023, 1024, 1025, 2047, 2049, 65_537, 300_001];
    match parts {
        1 => singles.iter().map(|&n| vec![n]).collect(),
        2 => vec![
            vec![0, 0],
            vec![0, 5],
            vec![5, 0],
            vec![1, 1],
            vec![2, 3],
            vec![1025, 1023],
            vec![2049, 1],
            vec![65_535, 65_537],
            vec![1 << 20, 3],
            vec![300_001, 299_999],
        ],
        _ => vec![
            vec![0, 0, 0],
            vec![1, 0, 2],
            vec![0, 7, 0],
            vec![2047, 2049, 1],
            vec![65_537, 0, 4095],
            vec![1, 1 << 20, 1023],
            vec![200_003, 199_999, 200_001],
        ],
    }
}

fn register<K: Key>(
    name: &str,
    gpus: &std::sync::Arc<Result<Gpus, String>>,
    trials: &mut Vec<Trial>,
) {
    for parts in 1..=3 {
        for kind in KINDS {
            for order in [Order::Ascending, Order::Descending] {
                let id = format!("spread::{parts}_parts::{name}::{kind}::{order:?}");
                let gpus = std::sync::Arc::clone(gpus);
                if let Err(reason) = gpus.as_ref() {
                    let reason = reason.clone();
                    trials.push(
                        Trial::ignorable_test(id, move || Ok(Completion::ignored_with(reason)))
                            .with_ignored_flag(true),
                    );
                    continue;
                }
                trials.push(Trial::test(id, move || {
                    let gpus = gpus.as_ref().as_ref().map_err(|e| e.clone())?;
                    for lens in shapes(parts) {
                        check::<K>(gpus, &lens, kind, order)?;
                    }
                    Ok(())
                }));
            }
        }
    }
}

/// `BITONIC_SPREAD_LOG2` random u32 keys: one GPU, then spread over 2 and 4 GPUs.
fn measure(gpus: &Result<Gpus, String>) -> Result<(), Failed> {
    let gpus = gpus.as_ref().map_err(|e| e.clone())?;
    let log2: u32 = std::env::var("BITONIC_SPREAD_LOG2")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let n = 1usize << log2;
    let mut rng = StdRng::seed_from_u64(7);
    let input: Vec<u32> = (0..n).map(|_| rng.r#gen()).collect();
    let mut baseline = None;
    for count in [1usize, 2, 4] {
        if count > gpus.backends.len() {
            println!(
                "measure spread_u32 2^{log2}: {count} GPUs: skipped, {} found",
                gpus.backends.len()
            );
            continue;
        }
        let share = n / count;
        let mut owned = Vec::new();
        for g in 0..count {
            let slice = &input[g * share..if g + 1 == count { n } else { (g + 1) * share }];
            owned.push(upload(gpus, g, slice)?);
        }
        let mut times = Vec::new();
        // Fresh unsorted keys for every run (not timed).
        let refill = |owned: &mut Vec<Owned<u32>>| -> Result<(), String> {
            for (g, o) in owned.iter_mut().enumerate() {
                CurrentContext::set_current(&gpus.contexts[o.device]).map_err(|e| e.to_string())?;
                let slice = &input[g * share..g * share + o.keys.len()];
                o.keys.copy_from(slice).map_err(|e| e.to_string())?;
            }
            Ok(())
        };
        for run in 0..6 {
            refill(&mut owned)?;
            let start = Instant::now();
            spread(gpus, &mut owned, Order::Ascending)?;
            if run > 0 {
                times.push(start.elapsed());
            }
        }
        times.sort();
        let median: Duration = times[times.len() / 2];
        let ms = median.as_secs_f64() * 1e3;
        let base = *baseline.get_or_insert(ms);
        println!(
            "measure spread_u32 2^{log2}: {count} GPU(s): {ms:.2} ms (median of {}), {:.3}x one GPU, {:.2} Gkeys/s",
            times.len(),
            ms / base,
            n as f64 / median.as_secs_f64() / 1e9
        );
        // The last part's keys are the largest: spot-check the order.
        let last = owned.last().expect("at least one part");
        CurrentContext::set_current(&gpus.contexts[last.device]).map_err(|e| e.to_string())?;
        let mut tail = vec![0u32; last.keys.len()];
        last.keys
            .copy_to(&mut tail[..])
            .map_err(|e| e.to_string())?;
        if !tail.is_sorted() {
            return Err("the last part is not sorted".into());
        }
        // Step 1 alone: every part sorted on its own device, all at once, then waited for;
        // the rest of the spread sort is the cuts, the exchange and the merges.
        let mut local = Vec::new();
        for _ in 0..4 {
            refill(&mut owned)?;
            let start = Instant::now();
            for o in owned.iter_mut() {
                CurrentContext::set_current(&gpus.contexts[o.device]).map_err(|e| e.to_string())?;
                gpus.backends[o.device]
                    .sort_device(&mut o.keys, Order::Ascending, &o.stream)
                    .map_err(|e| e.to_string())?;
            }
            for o in owned.iter() {
                o.stream.synchronize().map_err(|e| e.to_string())?;
            }
            local.push(start.elapsed());
        }
        local.sort();
        println!(
            "measure spread_u32 2^{log2}: {count} GPU(s): the parts' own sorts alone {:.2} ms",
            local[local.len() / 2].as_secs_f64() * 1e3
        );
    }
    Ok(())
}

/// With the `fault-injection` feature: every fault point of a spread sort of 2 and 3 parts
/// (devices repeated as needed) made to fail in turn; each failure must return `Err` and
/// leave every part its length and the parts together the input's keys (`u32`, whose
/// ordered words are the keys themselves, so that a part's own failed sort keeps them too).
/// One faulted run: the sort's result, every part's keys after it, the fault points seen.
#[cfg(feature = "fault-injection")]
type FaultRun = (Result<(), String>, Vec<u32>, usize);

#[cfg(feature = "fault-injection")]
fn faults(gpus: &Result<Gpus, String>) -> Result<(), Failed> {
    use bitonic::fault;
    let gpus = gpus.as_ref().map_err(|e| e.clone())?;
    for lens in [vec![5000usize, 3001], vec![4097, 0, 2049]] {
        let mut rng = StdRng::seed_from_u64(11);
        let inputs: Vec<Vec<u32>> = lens
            .iter()
            .map(|&n| data::<u32>("few", n, &mut rng))
            .collect();
        let mut all: Vec<u32> = inputs.concat();
        all.sort_unstable();
        let run = |k: Option<usize>| -> Result<FaultRun, Failed> {
            let mut owned = Vec::new();
            for (i, input) in inputs.iter().enumerate() {
                owned.push(upload(gpus, i % gpus.backends.len(), input)?);
            }
            fault::arm(k.unwrap_or(usize::MAX));
            let result = spread(gpus, &mut owned, Order::Ascending);
            let seen = fault::points_seen();
            fault::disarm();
            let mut held = Vec::new();
            for (o, &n) in owned.iter().zip(&lens) {
                CurrentContext::set_current(&gpus.contexts[o.device]).map_err(|e| e.to_string())?;
                let mut got = vec![0u32; o.keys.len()];
                o.keys.copy_to(&mut got[..]).map_err(|e| e.to_string())?;
                if got.len() != n {
                    return Err(format!("a part of {n} keys now holds {}", got.len()).into());
                }
                held.extend(got);
            }
            Ok((result, held, seen))
        };
        let (clean, held, points) = run(None)?;
        clean?;
        if held != all {
            return Err(format!("{lens:?}: not sorted without a fault").into());
        }
        for k in 0..points {
            let (result, mut held, _) = run(Some(k))?;
            match result {
                Ok(()) if held == all => {}
                Ok(()) => return Err(format!("{lens:?}, fault {k}: Ok but not sorted").into()),
                Err(_) => {
                    held.sort_unstable();
                    if held != all {
                        return Err(format!(
                            "{lens:?}, fault {k} of {points}: the parts lost keys after the error"
                        )
                        .into());
                    }
                }
            }
        }
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let gpus = std::sync::Arc::new(open_gpus());
    let mut trials = Vec::new();
    register::<u32>("u32", &gpus, &mut trials);
    register::<i32>("i32", &gpus, &mut trials);
    register::<f32>("f32", &gpus, &mut trials);
    register::<u64>("u64", &gpus, &mut trials);
    register::<i64>("i64", &gpus, &mut trials);
    register::<f64>("f64", &gpus, &mut trials);
    // BITONIC_REQUIRE naming cuda makes a missing device a failure, not an ignored list.
    let required =
        std::env::var("BITONIC_REQUIRE").is_ok_and(|r| r.split(',').any(|b| b.trim() == "cuda"));
    if let (true, Err(reason)) = (required, gpus.as_ref()) {
        let reason = reason.clone();
        trials.push(Trial::test("require::cuda", move || {
            Err(format!("BITONIC_REQUIRE names cuda, but it did not run: {reason}").into())
        }));
    }
    #[cfg(feature = "fault-injection")]
    {
        let faulted = std::sync::Arc::clone(&gpus);
        let name = "faults::every_point_keeps_the_keys";
        trials.push(match gpus.as_ref() {
            Ok(_) => Trial::test(name, move || faults(&faulted)),
            Err(reason) => {
                let reason = reason.clone();
                Trial::ignorable_test(name, move || Ok(Completion::ignored_with(reason)))
                    .with_ignored_flag(true)
            }
        });
    }
    let measured = std::sync::Arc::clone(&gpus);
    trials.push(
        Trial::test("measure::spread_u32", move || measure(&measured)).with_ignored_flag(true),
    );
    libtest_mimic::run(&args, trials).exit()
}
