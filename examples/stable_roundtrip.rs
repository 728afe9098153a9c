//! Stable argsort of host keys: how long `Sorter::argsort` takes from a host slice to the
//! permutation, against the same result built from two sorts of the library (keys with their
//! positions, then the runs of equal keys put in position order, the method wider keys still
//! use) and against rayon's stable `par_sort_by_key` of the positions.
//!
//! ```sh
//! cargo run --release --example stable_roundtrip                # 2^16 .. 2^24, 9 runs
//! cargo run --release --example stable_roundtrip -- 26 5       # up to 2^26, 5 timed runs
//! ```
//!
//! The sorter is built with `host_threshold(0)`, so that every length crosses the bus. Keys are
//! random `u32` (which tie from about 2^16 keys on) or `few` (16 distinct values). Each
//! figure is the median of the timed runs after one untimed run, every result is checked
//! against rayon's stable sort, and the inputs are the same for the three. Two more columns
//! explain the argsort's time: `u64 sort ms`, a sort of `n` 64-bit keys from a `Vec` that
//! was written before (what argsort sorts), and `fresh ms`, writing a newly allocated `Vec`
//! of `n` 64-bit words on rayon's threads (what argsort allocates and fills).
//!
//! A second table times the argsort of 8-byte keys (distinct `f64`: one sort of the keys'
//! leading bits with their positions, then the runs of equal leading bits on the host) beside a sort of `u64`
//! keys alone (what it sorts), of `u64` keys with `u32` values (what it sorted before), and
//! of `u32` keys with `u32` values, each from `Vec`s written before.

use std::time::Instant;

use bitonic::Sorter;
use rayon::prelude::*;

/// The stable permutation from two sorts: keys with their positions as values, then, where
/// equal keys exist, the 64-bit words `run << 32 | position`.
fn two_sorts(sorter: &Sorter, keys: &[u32]) -> Result<Vec<u32>, bitonic::Error> {
    let mut sorted = keys.to_vec();
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    sorter.sort_by_key(&mut sorted, &mut order, bitonic::Order::Ascending)?;
    let mut run = 0u64;
    let mut ties = false;
    let mut composite = Vec::with_capacity(keys.len());
    for (i, &position) in order.iter().enumerate() {
        if i > 0 && sorted[i] == sorted[i - 1] {
            ties = true;
        } else if i > 0 {
            run += 1;
        }
        composite.push(run << 32 | u64::from(position));
    }
    if !ties {
        return Ok(order);
    }
    sorter.sort(&mut composite, bitonic::Order::Ascending)?;
    Ok(composite.into_iter().map(|c| c as u32).collect())
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() -> Result<(), bitonic::Error> {
    let mut args = std::env::args().skip(1);
    let max_log: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(24);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(9).max(1);
    let sorter = Sorter::builder().host_threshold(0).build()?;
    println!("device: {}", sorter.device());
    println!(
        "{:>6} {:>8} {:>14} {:>14} {:>14} {:>14} {:>14}",
        "n", "keys", "argsort ms", "two sorts ms", "rayon ms", "u64 sort ms", "fresh ms"
    );
    for log in (16..=max_log).step_by(2) {
        let n = 1usize << log;
        for few in [false, true] {
            let keys: Vec<u32> = (0..n)
                .into_par_iter()
                .map(|i| {
                    // splitmix64 of the index: random, never all zeros.
                    let mut z = (i as u64 ^ (log as u64) << 40).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                    let k = (z ^ (z >> 31)) as u32;
                    if few { k % 16 } else { k }
                })
                .collect();
            let mut want: Vec<u32> = (0..n as u32).collect();
            let started = Instant::now();
            want.par_sort_by_key(|&i| keys[i as usize]);
            let mut rayon_times = vec![started.elapsed().as_secs_f64() * 1e3];
            let mut ours = Vec::new();
            let mut two = Vec::new();
            let mut wide = Vec::new();
            let mut fresh = Vec::new();
            let mut words: Vec<u64> = vec![1; n];
            for run in 0..=runs {
                let started = Instant::now();
                let got = sorter.argsort(&keys, bitonic::Order::Ascending)?;
                let ms = started.elapsed().as_secs_f64() * 1e3;
                assert!(
                    got == want,
                    "argsort of {n} keys differs from rayon's stable sort"
                );
                let started = Instant::now();
                let got = two_sorts(&sorter, &keys)?;
                let two_ms = started.elapsed().as_secs_f64() * 1e3;
                assert!(
                    got == want,
                    "two sorts of {n} keys differ from rayon's stable sort"
                );
                let started = Instant::now();
                let mut peer: Vec<u32> = (0..n as u32).collect();
                peer.par_sort_by_key(|&i| keys[i as usize]);
                let rayon_ms = started.elapsed().as_secs_f64() * 1e3;
                assert!(peer == want);
                words
                    .par_iter_mut()
                    .zip(keys.par_iter())
                    .enumerate()
                    .for_each(|(i, (w, &k))| *w = u64::from(k) << 32 | i as u64);
                let started = Instant::now();
                sorter.sort(&mut words, bitonic::Order::Ascending)?;
                let wide_ms = started.elapsed().as_secs_f64() * 1e3;
                assert!(words.windows(2).all(|w| w[0] <= w[1]));
                let started = Instant::now();
                let mut new_words: Vec<u64> = vec![0; n];
                new_words
                    .par_iter_mut()
                    .enumerate()
                    .for_each(|(i, w)| *w = i as u64);
                let fresh_ms = started.elapsed().as_secs_f64() * 1e3;
                assert_eq!(new_words[n - 1], n as u64 - 1);
                drop(new_words);
                if run > 0 {
                    ours.push(ms);
                    two.push(two_ms);
                    rayon_times.push(rayon_ms);
                    wide.push(wide_ms);
                    fresh.push(fresh_ms);
                }
            }
            rayon_times.remove(0);
            println!(
                "{:>6} {:>8} {:>14.3} {:>14.3} {:>14.3} {:>14.3} {:>14.3}",
                format!("2^{log}"),
                if few { "few" } else { "random" },
                median(ours),
                median(two),
                median(rayon_times),
                median(wide),
                median(fresh)
            );
        }
    }
    eight_byte_keys(&sorter, max_log, runs)
}

/// The argsort of distinct `f64` keys beside sorts from `Vec`s written before: `u64` keys
/// with `u32` values, `u64` keys alone, and `u32` keys with `u32` values.
fn eight_byte_keys(sorter: &Sorter, max_log: u32, runs: usize) -> Result<(), bitonic::Error> {
    println!(
        "{:>6} {:>18} {:>18} {:>14} {:>18}",
        "n", "f64 argsort ms", "u64+u32 pairs ms", "u64 sort ms", "u32+u32 pairs ms"
    );
    for log in (16..=max_log).step_by(2) {
        let n = 1usize << log;
        // Distinct keys: an odd multiplier permutes the 64-bit words.
        let bits: Vec<u64> = (0..n as u64)
            .into_par_iter()
            .map(|i| (i ^ 0x5555).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 2)
            .collect();
        let keys: Vec<f64> = bits.par_iter().map(|&b| f64::from_bits(b)).collect();
        let mut times = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
        for run in 0..=runs {
            let mut ms = [0.0; 4];
            let started = Instant::now();
            let order = sorter.argsort(&keys, bitonic::Order::Ascending)?;
            ms[0] = started.elapsed().as_secs_f64() * 1e3;
            assert!(
                order
                    .windows(2)
                    .all(|w| keys[w[0] as usize] < keys[w[1] as usize])
            );
            let (mut k, mut v): (Vec<u64>, Vec<u32>) = (bits.clone(), (0..n as u32).collect());
            let started = Instant::now();
            sorter.sort_by_key(&mut k, &mut v, bitonic::Order::Ascending)?;
            ms[1] = started.elapsed().as_secs_f64() * 1e3;
            assert!(k.windows(2).all(|w| w[0] < w[1]) && bits[v[0] as usize] == k[0]);
            let mut k = bits.clone();
            let started = Instant::now();
            sorter.sort(&mut k, bitonic::Order::Ascending)?;
            ms[2] = started.elapsed().as_secs_f64() * 1e3;
            assert!(k.windows(2).all(|w| w[0] < w[1]));
            let mut k: Vec<u32> = bits.par_iter().map(|&b| (b >> 30) as u32).collect();
            let mut v: Vec<u32> = (0..n as u32).collect();
            let started = Instant::now();
            sorter.sort_by_key(&mut k, &mut v, bitonic::Order::Ascending)?;
            ms[3] = started.elapsed().as_secs_f64() * 1e3;
            assert!(k.windows(2).all(|w| w[0] <= w[1]));
            if run > 0 {
                for (t, m) in times.iter_mut().zip(ms) {
                    t.push(m);
                }
            }
        }
        let [a, b, c, d] = times.map(median);
        println!(
            "{:>6} {:>18.3} {:>18.3} {:>14.3} {:>18.3}",
            format!("2^{log}"),
            a,
            b,
            c,
            d
        );
    }
    Ok(())
}
