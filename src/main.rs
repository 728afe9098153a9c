//! The `bitonic` command: `bitonic devices` lists what was found, `bitonic bench` sorts random
//! keys on every device and prints a table.

use std::process::ExitCode;
use std::time::Instant;

use bitonic::{BackendKind, SortKey, Sorter};
use rand::{Rng, SeedableRng};

const USAGE: &str = "\
usage: bitonic devices
       bitonic bench [--sizes N,N,...] [--runs R] [--seed S]

devices  lists every device of every compiled backend, and why a backend is unavailable
bench    sorts random u32 and f32 keys on every available device and on the CPU, checks
         every result against Rust's sort, and prints the median time of R runs after a
         warm-up (default sizes 2^10,2^14,2^18,2^22; 7 runs). Times are host round trips:
         upload, sort, download.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("devices") => list_devices(),
        Some("bench") => parse_bench(&args[1..]).and_then(|cfg| bench(&cfg)),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(format!("unknown or missing command\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("bitonic: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn list_devices() -> Result<(), String> {
    for b in bitonic::devices() {
        match &b.unavailable {
            Some(why) => println!("{:<7} unavailable: {why}", b.backend),
            None if b.devices.is_empty() => println!("{:<7} no devices", b.backend),
            None => {
                for d in &b.devices {
                    println!("{d}");
                }
            }
        }
    }
    Ok(())
}

struct BenchConfig {
    sizes: Vec<usize>,
    runs: usize,
    seed: u64,
}

fn parse_bench(args: &[String]) -> Result<BenchConfig, String> {
    let mut cfg = BenchConfig {
        sizes: vec![1 << 10, 1 << 14, 1 << 18, 1 << 22],
        runs: 7,
        seed: 1,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        match flag.as_str() {
            "--sizes" => {
                cfg.sizes = value.split(',').map(parse_size).collect::<Result<_, _>>()?;
            }
            "--runs" => {
                cfg.runs = value
                    .parse()
                    .map_err(|_| format!("--runs {value}: not a number"))?;
                if cfg.runs == 0 {
                    return Err("--runs must be at least 1".into());
                }
            }
            "--seed" => {
                cfg.seed = value
                    .parse()
                    .map_err(|_| format!("--seed {value}: not a number"))?
            }
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    Ok(cfg)
}

/// Accepts `1000`, `2^20` or `1<<20`.
fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let shift = s.strip_prefix("2^").or_else(|| s.strip_prefix("1<<"));
    let parsed = match shift {
        Some(k) => k.parse::<u32>().ok().and_then(|k| 1usize.checked_shl(k)),
        None => s.parse::<usize>().ok(),
    };
    parsed.ok_or_else(|| format!("{s:?} is not a size (use 1000, 2^20 or 1<<20)"))
}

/// Every available device: each GPU and OpenCL device found, and the host CPU.
fn sorters() -> Vec<Sorter> {
    let mut out = Vec::new();
    for b in bitonic::devices() {
        if let Some(why) = &b.unavailable {
            eprintln!("note: {} not benchmarked: {why}", b.backend);
            continue;
        }
        for d in &b.devices {
            let built = Sorter::builder()
                .ignore_env()
                .backend(d.backend)
                .device_index(d.index)
                .build();
            match built {
                Ok(s) => out.push(s),
                Err(e) => eprintln!("note: {d} not benchmarked: {e}"),
            }
        }
    }
    // The CPU last, as the baseline row of each size.
    out.sort_by_key(|s| s.device().backend == BackendKind::Cpu);
    out
}

fn bench(cfg: &BenchConfig) -> Result<(), String> {
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
    let device = sorter.device();
    let label = format!("{}:{} {}", device.backend, device.index, device.name);
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
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
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

fn truncate(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}
