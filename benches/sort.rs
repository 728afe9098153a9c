//! Criterion benchmarks: every available device x key type x size, keys and key-value.
//! Times are host round trips (upload, sort, download); `BITONIC_BENCH_MAX_N` caps the size.

use bitonic::{SortKey, Sorter};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng, distributions::Standard, prelude::Distribution};

fn sorters() -> Vec<Sorter> {
    bitonic::devices()
        .into_iter()
        .flat_map(|b| b.devices)
        .filter_map(|d| {
            Sorter::builder()
                .ignore_env()
                .backend(d.backend)
                .device_index(d.index)
                .build()
                .ok()
        })
        .collect()
}

fn sizes() -> Vec<usize> {
    let max: usize = std::env::var("BITONIC_BENCH_MAX_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1 << 20);
    [1usize << 10, 1 << 16, 1 << 20, 1 << 24]
        .into_iter()
        .filter(|&n| n <= max)
        .collect()
}

fn bench_keys<K>(c: &mut Criterion, sorters: &[Sorter], name: &str)
where
    K: SortKey,
    Standard: Distribution<K>,
{
    let mut group = c.benchmark_group(format!("sort/{name}"));
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for n in sizes() {
        let input: Vec<K> = (0..n).map(|_| rng.r#gen()).collect();
        group.throughput(Throughput::Elements(n as u64));
        for s in sorters {
            let id = BenchmarkId::new(format!("{}{}", s.device().backend, s.device().index), n);
            let mut work = input.clone();
            group.bench_function(id, |b| {
                b.iter(|| {
                    work.copy_from_slice(&input);
                    s.sort(&mut work).expect("sort failed");
                })
            });
        }
    }
    group.finish();
}

fn bench_pairs(c: &mut Criterion, sorters: &[Sorter]) {
    let mut group = c.benchmark_group("sort_by_key/u32-u32");
    let mut rng = rand::rngs::StdRng::seed_from_u64(8);
    for n in sizes() {
        let keys: Vec<u32> = (0..n).map(|_| rng.r#gen()).collect();
        let values: Vec<u32> = (0..n as u32).collect();
        group.throughput(Throughput::Elements(n as u64));
        for s in sorters {
            let id = BenchmarkId::new(format!("{}{}", s.device().backend, s.device().index), n);
            let (mut k, mut v) = (keys.clone(), values.clone());
            group.bench_function(id, |b| {
                b.iter(|| {
                    k.copy_from_slice(&keys);
                    v.copy_from_slice(&values);
                    s.sort_by_key(&mut k, &mut v).expect("sort failed");
                })
            });
        }
    }
    group.finish();
}

fn benches(c: &mut Criterion) {
    let sorters = sorters();
    bench_keys::<u32>(c, &sorters, "u32");
    bench_keys::<f32>(c, &sorters, "f32");
    bench_keys::<u64>(c, &sorters, "u64");
    bench_pairs(c, &sorters);
}

criterion_group! {
    name = sort;
    config = Criterion::default().sample_size(10);
    targets = benches
}
criterion_main!(sort);
