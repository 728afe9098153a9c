//! Fuzzes the pass schedule: any length up to 100_000, any tile parameters a backend could
//! choose (`log_tile` 1..=13, `max_global_levels` 1..=10) and any data. Executing the schedule
//! with [`bitonic::internals::emulate`] (the kernels' index arithmetic, on the CPU) must equal
//! `sort_unstable`, and each value must still sit beside the key it came with.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use bitonic::internals::{Schedule, TileParams, emulate};
use libfuzzer_sys::fuzz_target;

/// One worker thread: the result of `emulate` does not depend on rayon's splitting, and a
/// single thread spares each small input the cost of waking the others (several times more
/// executions per second).
fn pool() -> &'static rayon::ThreadPool {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("a thread pool")
    })
}

/// How the keys are made from the input.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Shape {
    /// The input's bytes, repeated.
    Bytes,
    /// A generator seeded by the input, full range.
    Random,
    /// A generator, few distinct values (`modulo` of them).
    Few,
    /// Sorted, then `swaps` random transpositions.
    NearlySorted,
    /// Descending.
    Reversed,
    /// Zeros and ones only (the 0-1 principle's inputs).
    ZeroOne,
}

#[derive(Arbitrary, Debug)]
struct Case {
    size_class: u8,
    n: u32,
    log_tile: u8,
    max_global_levels: u8,
    wide: bool,
    with_values: bool,
    shape: Shape,
    modulo: u8,
    swaps: u8,
    seed: u64,
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n` keys of the case's shape, as 64-bit words (narrowed later for 32-bit runs).
fn make_keys(case: &Case, n: usize, bytes: &[u8]) -> Vec<u64> {
    let mut state = case.seed;
    let modulo = u64::from(case.modulo).max(1);
    let mut keys: Vec<u64> = match case.shape {
        Shape::Bytes if !bytes.is_empty() => (0..n)
            .map(|i| {
                let b = |k: usize| u64::from(bytes[(i + k) % bytes.len()]);
                b(0) | (b(1) << 8) | (b(2) << 40) | (b(3) << 56)
            })
            .collect(),
        Shape::Few => (0..n).map(|_| splitmix(&mut state) % modulo).collect(),
        Shape::ZeroOne => (0..n).map(|_| splitmix(&mut state) & 1).collect(),
        _ => (0..n).map(|_| splitmix(&mut state)).collect(),
    };
    match case.shape {
        Shape::NearlySorted => {
            keys.sort_unstable();
            for _ in 0..case.swaps {
                if n > 0 {
                    let a = (splitmix(&mut state) % n as u64) as usize;
                    let b = (splitmix(&mut state) % n as u64) as usize;
                    keys.swap(a, b);
                }
            }
        }
        Shape::Reversed => keys.sort_unstable_by(|a, b| b.cmp(a)),
        _ => {}
    }
    keys
}

fn check<W: Ord + Copy + Send + std::fmt::Debug>(
    schedule: &Schedule,
    input: Vec<W>,
    with_values: bool,
    what: &str,
) {
    let mut want = input.clone();
    want.sort_unstable();
    let mut keys = input.clone();
    if with_values {
        let mut values: Vec<u32> = (0..input.len() as u32).collect();
        emulate(schedule, &mut keys, Some(&mut values));
        for (i, (k, &v)) in keys.iter().zip(&values).enumerate() {
            assert_eq!(
                input[v as usize], *k,
                "{what}: value {v} at {i} is not beside its key"
            );
        }
        let mut seen = values.clone();
        seen.sort_unstable();
        assert!(
            seen.iter().enumerate().all(|(i, &v)| v as usize == i),
            "{what}: values lost or duplicated"
        );
    } else {
        emulate::<W, u32>(schedule, &mut keys, None);
    }
    if keys != want {
        let i = keys.iter().zip(&want).position(|(a, b)| a != b).unwrap();
        panic!(
            "{what}: wrong key at {i}: got {:?}, want {:?}",
            keys[i], want[i]
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(case) = Case::arbitrary(&mut u) else {
        return;
    };
    let rest = u.take_rest();
    // Mostly small lengths, which already reach every path of the index arithmetic (with
    // tiles down to 2 elements, n = 512 has 9 stages); one in 17 up to 8192, one in 256 up
    // to 100_000 (instrumented, that costs seconds per input).
    let limit = match case.size_class {
        0..=239 => 512,
        240..=254 => 8192,
        255 => 100_000,
    };
    let n = case.n as usize % (limit + 1);
    let max_global_levels = 1 + u32::from(case.max_global_levels) % 10;
    let params = TileParams {
        log_tile: 1 + u32::from(case.log_tile) % 13,
        max_global_levels,
        fuse_tails: case.log_tile & 0x80 != 0,
    };
    let schedule = Schedule::new(n as u64, params);
    assert_eq!(
        schedule,
        Schedule::new(n as u64, params),
        "not deterministic"
    );
    let keys = make_keys(&case, n, rest);
    let what = format!("n={n} params={params:?} shape={:?}", case.shape);
    pool().install(|| {
        if case.wide {
            check(&schedule, keys, case.with_values, &what);
        } else {
            let narrow: Vec<u32> = keys.iter().map(|&k| (k ^ (k >> 32)) as u32).collect();
            check(&schedule, narrow, case.with_values, &what);
        }
    });
});
