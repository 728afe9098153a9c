//! The `bitonic` command: `bitonic devices` lists what was found, `bitonic bench` sorts random
//! keys on every device and prints a table, `bitonic bench --compare` measures device-resident
//! sort times against CUB and the CPU (see `docs/bench.md`).

mod cli;

use std::process::ExitCode;

const USAGE: &str = "\
usage: bitonic devices
       bitonic bench [--sizes N,N,...] [--runs R] [--seed S]
       bitonic bench --compare [--sizes N,N,...] [--max-log K] [--runs R] [--warmup W]
                     [--roundtrip-runs R] [--seed S] [--kv] [--u64] [--rows RxC]
                     [--cases u32,kv,u64,rows] [--cpu-max-log K] [--opencl-cpu-max-log K]
                     [--skip PART,...] [--python PATH] [--csv PATH] [--plot PATH]

devices  lists every device of every compiled backend, and why a backend is unavailable
bench    sorts random u32 and f32 keys on every available device and on the CPU, checks
         every result against Rust's sort, and prints the median time of R runs after a
         warm-up (default sizes 2^10,2^14,2^18,2^22; 7 runs). Times are host round trips:
         upload, sort, download.
bench --compare
         one run that measures, per size, our CUDA and OpenCL backends (every device), Rust's
         par_sort_unstable on the CPU, when built with `cuda` CUB's radix and merge
         sorts, and when python3 has torch with CUDA torch.sort (torch-sort; --python
         PATH names the interpreter): device-resident sort time (device events, median of
         R runs after W warm-ups; CUDA streams are held while the timed work is queued,
         BITONIC_HOLD_STREAM=0 turns that off) and, separately, the host round trip;
         ratios against our CUDA backend;
         every result checked. Writes a CSV and an SVG plot. Defaults: sizes 2^10,2^12,...,
         2^28 (at most 2^max-log), u32 keys, 15 runs, 3 warm-ups, CPU up to 2^26, OpenCL
         CPU devices (PoCL) up to 2^22, bench-compare.csv, bench-compare.svg.
         --kv adds u32 keys + u32 values, --u64 u64 keys, --rows 16384x1024 rows sorted
         independently (batched); --cases chooses the cases explicitly; --skip leaves out
         sorters whose label contains PART. docs/bench.md explains every column.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("devices") => list_devices(),
        Some("bench") if args.iter().any(|a| a == "--compare") => {
            cli::compare::parse(&args[1..], USAGE).and_then(|cfg| cli::compare::run(&cfg))
        }
        Some("bench") => cli::bench::parse(&args[1..], USAGE).and_then(|cfg| cli::bench::run(&cfg)),
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
