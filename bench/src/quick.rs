//! `bitonic bench` without `--compare`: host round trips of random `u32` and `f32` keys on
//! every available device, each result checked against Rust's sort.

use std::time::Instant;

use bitonic::{SortKey, Sorter};
use rand::{Rng, SeedableRng};

use crate::args::BenchArgs;
use crate::common::{device_label, median, sorters, truncate};

/// What `bitonic bench` measures.
pub struct BenchConfig {
    /// Key counts.
    pub sizes: Vec<usize>,
    /// Timed runs per size and device (after one warm-up).
    pub runs: usize,
    /// Seed of the random keys.
    pub seed: u64,
}

/// The configuration that `args` (without `--compare`) asks for.
pub fn config(args: &BenchArgs) -> BenchConfig {
    BenchConfig {
        sizes: if args.sizes.is_empty() {
            vec![1 << 10, 1 << 14, 1 << 18, 1 << 22]
        } else {
            args.sizes.clone()
        },
        runs: args.runs.map_or(7, |r| r as usize),
        seed: args.seed,
    }
}

/// Runs `bitonic bench`.
pub fn run(cfg: &BenchConfig) -> Result<(), String> {
    let sorters = sorters();
    println!(
        "{:<48} {:>4} {:>10} {:>12} {:>9}",
        "device", "key", "n", "median ms", "Gkeys/s"
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(cfg.seed);
    for &n in &cfg.sizes {
        let u32_keys: Vec<u32> = (0..n).map(|_| rng.r#gen()).collect();
        let f32_keys: Vec<f32> = (0..n).map(|_| f32::from_bits(rng.r#gen::<u32>())).collect();
        let mut u32_want = u32_keys.clone();
        u32_want.sort_unstable();
        let mut f32_want = f32_keys.clone();
        f32_want.sort_by(f32::total_cmp);
        for sorter in &sorters {
            bench_one(sorter, "u32", &u32_keys, &u32_want, cfg.runs)?;
            bench_one(sorter, "f32", &f32_keys, &f32_want, cfg.runs)?;
        }
    }
    Ok(())
}

fn bench_one<K: SortKey + PartialEq>(
    sorter: &Sorter,
    key: &str,
    input: &[K],
    want: &[K],
    runs: usize,
) -> Result<(), String> {
    let label = device_label(sorter);
    let mut times = Vec::with_capacity(runs);
    let mut work = input.to_vec();
    // One warm-up run (kernel compilation, allocations), then the timed runs.
    for run in 0..=runs {
        work.copy_from_slice(input);
        let start = Instant::now();
        sorter
            .sort(&mut work)
            .map_err(|e| format!("{label}: sort failed: {e}"))?;
        let elapsed = start.elapsed().as_secs_f64();
        // Compare bits, so that NaN payloads and -0.0 count.
        if bytemuck::cast_slice::<K, u8>(&work) != bytemuck::cast_slice::<K, u8>(want) {
            return Err(format!(
                "{label}: wrong result for {key}, n = {}",
                input.len()
            ));
        }
        if run > 0 {
            times.push(elapsed);
        }
    }
    let median = median(&times);
    println!(
        "{:<48} {:>4} {:>10} {:>12.3} {:>9.3}",
        truncate(&label, 48),
        key,
        input.len(),
        median * 1e3,
        input.len() as f64 / median / 1e9
    );
    Ok(())
}
