//! Criterion benchmarks: every available backend and device (the CPU, each OpenCL device,
//! CUDA when present) x key type (u32, u64, f32, i64) x size, keys alone and key-value (u32
//! values), as host round trips through `Sorter::sort` / `sort_by_key`. Device-resident times
//! are `bitonic bench --compare`'s job.
//!
//! Groups are `roundtrip/<key>` and `roundtrip/<key>+u32`;
//! benchmark ids are `<backend><index>/<n>`. Each combination is checked once against the
//! CPU backend before it is timed.
//!
//! The default run is short: sizes 2^10, 2^16, 2^20 (`BITONIC_BENCH_MAX_N` raises or lowers
//! the cap, up to 2^24), OpenCL CPU devices such as PoCL only up to 2^16
//! (`BITONIC_BENCH_OPENCL_CPU_MAX_N`), 10 samples of about a second each. Select with
//! criterion's filter, e.g. `cargo bench --bench sort -- 'roundtrip/u32/cuda'`.

use std::time::Duration;

use bitonic::{BackendKind, DeviceType, SortKey, Sorter};
use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use rand::{RngCore, SeedableRng};

/// A sorter and its short name in benchmark ids (`cuda0`, `opencl1`, `cpu0`).
struct Target {
    name: String,
    sorter: Sorter,
    max_n: usize,
}

fn env_size(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default)
}

fn targets() -> Vec<Target> {
    let max_n = env_size("BITONIC_BENCH_MAX_N", 1 << 20);
    let opencl_cpu_max_n = env_size("BITONIC_BENCH_OPENCL_CPU_MAX_N", 1 << 16).min(max_n);
    let mut out = Vec::new();
    for b in bitonic::devices() {
        if let Some(why) = &b.unavailable {
            eprintln!("note: {} not benchmarked: {why}", b.backend);
        }
        for d in b.devices {
            let built = Sorter::builder()
                .ignore_env()
                .backend(d.backend)
                .device_index(d.index)
                .build();
            let sorter = match built {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("note: {d} not benchmarked: {e}");
                    continue;
                }
            };
            let slow = d.backend == BackendKind::OpenCl && d.device_type == DeviceType::Cpu;
            out.push(Target {
                name: format!("{}{}", d.backend, d.index),
                sorter,
                max_n: if slow { opencl_cpu_max_n } else { max_n },
            });
        }
    }
    out
}

fn sizes(max_n: usize) -> Vec<usize> {
    [1usize << 10, 1 << 16, 1 << 20, 1 << 24]
        .into_iter()
        .filter(|&n| n <= max_n)
        .collect()
}

/// `n` random keys of any plain type (random bits: floats include NaNs and infinities).
fn random<K: bytemuck::Pod>(n: usize, seed: u64) -> Vec<K> {
    let mut out = vec![K::zeroed(); n];
    rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(bytemuck::cast_slice_mut(&mut out));
    out
}

/// The CPU backend's sort of `keys` (all backends give identical bits).
fn cpu_sorted<K: SortKey>(cpu: &Sorter, keys: &[K]) -> Vec<K> {
    let mut want = keys.to_vec();
    cpu.sort(&mut want, bitonic::Order::Ascending)
        .expect("the CPU sort failed");
    want
}

fn same_bits<K: bytemuck::Pod>(a: &[K], b: &[K]) -> bool {
    bytemuck::cast_slice::<K, u8>(a) == bytemuck::cast_slice::<K, u8>(b)
}

/// Host round trips of `K` keys, alone and with u32 values, on every target.
fn bench_roundtrip<K: SortKey>(c: &mut Criterion, targets: &[Target], cpu: &Sorter, key: &str) {
    for with_values in [false, true] {
        let group_name = if with_values {
            format!("roundtrip/{key}+u32")
        } else {
            format!("roundtrip/{key}")
        };
        let mut group = c.benchmark_group(group_name);
        // Flat sampling: 10 samples of equal iteration counts, so that slow combinations
        // (PoCL, the CPU's key-value network) run about 10 times, not 55.
        group.sampling_mode(SamplingMode::Flat);
        for n in sizes(targets.iter().map(|t| t.max_n).max().unwrap_or(0)) {
            let keys: Vec<K> = random(n, 7 + n as u64);
            let values: Vec<u32> = (0..n as u32).collect();
            let want = cpu_sorted(cpu, &keys);
            group.throughput(Throughput::Elements(n as u64));
            for t in targets.iter().filter(|t| n <= t.max_n) {
                let (mut k, mut v) = (keys.clone(), values.clone());
                let sort = |k: &mut Vec<K>, v: &mut Vec<u32>| {
                    k.copy_from_slice(&keys);
                    if with_values {
                        v.copy_from_slice(&values);
                        t.sorter.sort_by_key(k, v, bitonic::Order::Ascending)
                    } else {
                        t.sorter.sort(k, bitonic::Order::Ascending)
                    }
                };
                if let Err(e) = sort(&mut k, &mut v) {
                    eprintln!("note: {} skipped for {key}, n = {n}: {e}", t.name);
                    continue;
                }
                assert!(
                    same_bits(&k, &want),
                    "{}: wrong result for {key}, n = {n}",
                    t.name
                );
                group.bench_function(BenchmarkId::new(&t.name, n), |b| {
                    b.iter(|| sort(&mut k, &mut v).expect("sort failed"))
                });
            }
        }
        group.finish();
    }
}

fn benches(c: &mut Criterion) {
    let targets = targets();
    let cpu = Sorter::builder()
        .ignore_env()
        .backend(BackendKind::Cpu)
        .build()
        .expect("the CPU backend is always present");
    bench_roundtrip::<u32>(c, &targets, &cpu, "u32");
    bench_roundtrip::<u64>(c, &targets, &cpu, "u64");
    bench_roundtrip::<f32>(c, &targets, &cpu, "f32");
    bench_roundtrip::<i64>(c, &targets, &cpu, "i64");
}

criterion_group! {
    name = sort;
    config = Criterion::default()
        .sample_size(10)
        .nresamples(10_000)
        .without_plots()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = benches
}
criterion_main!(sort);
