//! Sorting host vectors: how long `Sorter::sort` takes from a host slice back to the same
//! slice, on the chosen device and on the host CPU, for growing lengths.
//!
//! ```sh
//! cargo run --release --example host_roundtrip                 # 2^10 .. 2^24
//! cargo run --release --example host_roundtrip -- 28 5        # up to 2^28, 5 timed runs
//! ```
//!
//! The device sorter is built with `host_threshold(0)`, so that every length really crosses the
//! bus; the `auto` column is a default sorter, which sorts short slices on the host; `cpu` is
//! the crate's CPU backend and `rayon` a plain `par_sort_unstable` of the keys. Each
//! figure is the median of the timed runs after one untimed run, on random keys that are
//! refreshed (untimed) before every run, and every result is checked.

use std::time::Instant;

use bitonic::{BackendKind, Sorter};
use rayon::prelude::*;

fn main() -> Result<(), bitonic::Error> {
    let mut args = std::env::args().skip(1);
    let max_log: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(24);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(9);
    let device = Sorter::builder().host_threshold(0).build()?;
    let auto = Sorter::new()?;
    let cpu = Sorter::builder()
        .ignore_env()
        .backend(BackendKind::Cpu)
        .build()?;
    println!("device: {}", device.device());
    println!(
        "{:>10} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "n", "device ms", "GiB/s", "auto ms", "cpu ms", "rayon ms", "pairs dev ms"
    );
    for log in (10..=max_log).filter(|&l| l <= 16 || l % 2 == 0) {
        let n = 1usize << log;
        let mut keys = vec![0u32; n];
        let mut values = vec![0u32; n];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ n as u64;
        let mut refill = |keys: &mut [u32]| {
            seed = seed.wrapping_add(1);
            let s = seed;
            keys.par_iter_mut().enumerate().for_each(|(i, k)| {
                // splitmix64 of (seed, index): random, never all zeros.
                let mut z = s.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i as u64;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                *k = (z ^ (z >> 31)) as u32;
            });
        };
        // `sorter` None: rayon's `par_sort_unstable` on the keys, the usual host sort.
        let mut time = |sorter: Option<&Sorter>, pairs: bool| -> Result<f64, bitonic::Error> {
            let mut times = Vec::with_capacity(runs);
            for run in 0..=runs {
                refill(&mut keys);
                values.par_iter_mut().zip(&keys).for_each(|(v, k)| *v = !*k);
                let start = Instant::now();
                match (sorter, pairs) {
                    (Some(s), true) => {
                        s.sort_by_key(&mut keys, &mut values, bitonic::Order::Ascending)?
                    }
                    (Some(s), false) => s.sort(&mut keys, bitonic::Order::Ascending)?,
                    (None, _) => keys.par_sort_unstable(),
                }
                let ms = start.elapsed().as_secs_f64() * 1e3;
                assert!(
                    keys.windows(2).all(|w| w[0] <= w[1]),
                    "not sorted at n = {n}"
                );
                if pairs {
                    assert!(keys.iter().zip(&values).all(|(k, v)| *v == !*k));
                }
                if run > 0 {
                    times.push(ms);
                }
            }
            times.sort_by(f64::total_cmp);
            Ok(times[times.len() / 2])
        };
        let dev = time(Some(&device), false)?;
        let auto_ms = time(Some(&auto), false)?;
        let cpu_ms = time(Some(&cpu), false)?;
        let rayon_ms = time(None, false)?;
        let pairs = if log <= 26 || log == max_log {
            format!("{:.3}", time(Some(&device), true)?)
        } else {
            "-".to_string()
        };
        // Bytes up plus bytes down over the round trip's time.
        let rate = (2 * 4 * n) as f64 / (dev * 1e-3) / (1u64 << 30) as f64;
        println!(
            "{n:>10} {dev:>12.3} {rate:>12.1} {auto_ms:>12.3} {cpu_ms:>12.3} {rayon_ms:>12.3} {pairs:>12}"
        );
    }
    println!(
        "pinned staging kept: {} bytes; device buffers kept: {} bytes",
        device.cached_pinned_bytes(),
        device.cached_device_bytes()
    );
    Ok(())
}
