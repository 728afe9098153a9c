//! `bitonic bench` without `--compare`: host round trips of random `u32` and `f32` keys on
//! every available device, from a `Vec` and from a `Sorter::pinned_buffer`, next to rayon's
//! `par_sort_unstable` on the host; each result checked against Rust's sort.

use std::time::Instant;

use bitonic::{SortKey, Sorter};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

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
        "host round trips (host slice in, host slice out), median of {} runs after one \
         warm-up: `Vec` = Sorter::sort on a Vec, `pinned` = on a Sorter::pinned_buffer; \
         rayon = par_sort_unstable on the host",
        cfg.runs
    );
    println!(
        "{:<48} {:>4} {:>10} {:>12} {:>9} {:>12}",
        "device", "key", "n", "Vec ms", "Gkeys/s", "pinned ms"
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
        bench_rayon(&u32_keys, &u32_want, cfg.runs)?;
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
    let sort = |keys: &mut [K]| {
        sorter
            .sort(keys, bitonic::Order::Ascending)
            .map_err(|e| e.to_string())
    };
    let mut work = input.to_vec();
    let vec_ms = time_sorts(&mut work, input, want, runs, sort)
        .map_err(|e| format!("{label}: {key}, n = {}: {e}", input.len()))?;
    let mut pinned = sorter
        .pinned_buffer::<K>(input.len())
        .map_err(|e| format!("{label}: allocating a pinned buffer: {e}"))?;
    let pinned_ms = time_sorts(&mut pinned, input, want, runs, sort)
        .map_err(|e| format!("{label}: {key}, n = {} (pinned): {e}", input.len()))?;
    println!(
        "{:<48} {:>4} {:>10} {:>12.3} {:>9.3} {:>12.3}",
        truncate(&label, 48),
        key,
        input.len(),
        vec_ms,
        input.len() as f64 / vec_ms / 1e6,
        pinned_ms,
    );
    Ok(())
}

/// rayon's `par_sort_unstable` on the host, as a row of the table.
fn bench_rayon(input: &[u32], want: &[u32], runs: usize) -> Result<(), String> {
    let mut work = input.to_vec();
    let ms = time_sorts(&mut work, input, want, runs, |keys| {
        keys.par_sort_unstable();
        Ok(())
    })?;
    println!(
        "{:<48} {:>4} {:>10} {:>12.3} {:>9.3} {:>12}",
        format!(
            "rayon par_sort_unstable ({} threads)",
            rayon::current_num_threads()
        ),
        "u32",
        input.len(),
        ms,
        input.len() as f64 / ms / 1e6,
        "-",
    );
    Ok(())
}

/// Median milliseconds of `runs` sorts of `work` (restored from `input` untimed before each)
/// after one warm-up (kernel compilation, allocations); every result must equal `want`.
fn time_sorts<K: bytemuck::Pod>(
    work: &mut [K],
    input: &[K],
    want: &[K],
    runs: usize,
    mut sort: impl FnMut(&mut [K]) -> Result<(), String>,
) -> Result<f64, String> {
    let mut times = Vec::with_capacity(runs);
    for run in 0..=runs {
        work.copy_from_slice(input);
        let start = Instant::now();
        sort(work).map_err(|e| format!("sort failed: {e}"))?;
        let elapsed = start.elapsed().as_secs_f64();
        // Compare bits, so that NaN payloads and -0.0 count.
        if bytemuck::cast_slice::<K, u8>(work) != bytemuck::cast_slice::<K, u8>(want) {
            return Err("wrong result".to_string());
        }
        if run > 0 {
            times.push(elapsed);
        }
    }
    Ok(median(&times) * 1e3)
}
