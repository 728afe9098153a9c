//! Tests of the CPU backend: the network's order of short pairs, the stable order of long
//! ones (merge path's model past the radix sort's length), the counting of narrow keys, and
//! timings against rayon.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Network order of `keys` (ordered words) with `values`, from the whole network's
/// schedule for their length.
fn network(keys: &[u32], values: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let (mut k, mut v) = (keys.to_vec(), values.to_vec());
    let schedule = Schedule::new(k.len() as u64, CPU_TILE);
    schedule::emulate(&schedule, &mut k, Some(&mut v));
    (k, v)
}

/// Short pairs of `u32` keys and values: distinct keys through the packed radix sort
/// (every encoding, lengths around its byte digits), ties through the network, both
/// exactly as the network orders them.
#[test]
fn short_u32_pairs_match_the_network() {
    let mut rng = StdRng::seed_from_u64(7);
    let kinds = [
        (crate::keys::KeyKind::Unsigned, false),
        (crate::keys::KeyKind::Signed, true),
        (crate::keys::KeyKind::Float, false),
        (crate::keys::KeyKind::Float, true),
    ];
    for n in [0usize, 1, 2, 3, 255, 256, 257, 1000, 4096, (1 << 14) - 1] {
        for (i, &(kind, descending)) in kinds.iter().enumerate() {
            let enc = KeyEncoding { kind, descending };
            // Distinct keys spread over every byte, or a few repeated ones.
            let keys: Vec<u32> = if i % 2 == 0 {
                let mut k: Vec<u32> = (0..n as u32)
                    .map(|j| j.wrapping_mul(0x9e37_79b9) ^ 0x5bd1_e995)
                    .collect();
                k.sort_unstable();
                k.dedup();
                k.iter()
                    .map(|&x| x.rotate_left(rng.gen_range(0..32)) | 1)
                    .collect()
            } else {
                (0..n).map(|_| rng.gen_range(0..9)).collect()
            };
            let n = keys.len();
            let values: Vec<u32> = (0..n as u32).map(|j| j ^ 0xffff).collect();
            let (mut k, mut v) = (keys.clone(), values.clone());
            sort_pairs(&mut k, &mut v, enc, None, false);
            let encoded: Vec<u32> = keys.iter().map(|&x| enc.encode(x)).collect();
            let (wk, wv) = network(&encoded, &values);
            let wk: Vec<u32> = wk.into_iter().map(|x| enc.decode(x)).collect();
            assert_eq!((k, v), (wk, wv), "n = {n}, {enc:?}");
        }
    }
}

/// The CPU backend's sort of 2^10 and 2^11 random `u32` keys with `u32` values (what a
/// GPU sorter runs below `DEFAULT_HOST_THRESHOLD`) against rayon's `par_sort_unstable_by_key`
/// of the same pairs, taking turns, medians of 3000; the result checked once. A timing:
/// `cargo test --release --lib cpu_short_pairs_against_rayon -- --ignored --nocapture`.
#[test]
#[ignore = "a timing, not a check"]
fn cpu_short_pairs_against_rayon() {
    use std::time::Instant;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let cpu = CpuBackend::new();
    let enc = KeyEncoding {
        kind: crate::keys::KeyKind::Unsigned,
        descending: false,
    };
    let mut rng = StdRng::seed_from_u64(12345);
    for n in [1usize << 10, 1 << 11] {
        let keys: Vec<u32> = (0..n).map(|_| rng.r#gen()).collect();
        let values: Vec<u32> = (0..n as u32).collect();
        let pairs: Vec<(u32, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for round in 0..3000 {
            let (mut k, mut v) = (keys.clone(), values.clone());
            let start = Instant::now();
            cpu.sort_rows_words(WordsMut::U32(&mut k), Some(WordsMut::U32(&mut v)), enc, n)
                .expect("sort");
            ours.push(start.elapsed().as_secs_f64() * 1e6);
            let mut p = pairs.clone();
            let start = Instant::now();
            p.par_sort_unstable_by_key(|p| p.0);
            theirs.push(start.elapsed().as_secs_f64() * 1e6);
            if round == 0 {
                let want: (Vec<u32>, Vec<u32>) = p.into_iter().unzip();
                assert_eq!((k, v), want, "n = {n}");
            }
        }
        eprintln!(
            "{n} u32 pairs: ours {:.2} us, rayon par_sort_unstable_by_key {:.2} us (medians of 3000, {} rayon threads)",
            median(ours),
            median(theirs),
            rayon::current_num_threads()
        );
    }
}

/// Merge path's model, which gives one row of pairs past the radix sort's length the GPUs'
/// order: sorted keys, and the pairs of each tile of `2^pair_sort_tile` inputs in the order
/// the network gives that tile alone, tile after tile among equal keys (not the stable
/// order). In the oblivious mode, and in rows, the backend gives the whole network's order.
#[test]
fn long_pairs_merge_path_order() {
    let n = (1usize << 20) + 4099;
    let log_tile = pair_sort_tile(n as u64, 8).expect("past the threshold");
    let mut rng = StdRng::seed_from_u64(41);
    let keys: Vec<u32> = (0..n).map(|_| rng.gen_range(0..50)).collect();
    let values: Vec<u32> = (0..n as u32).collect();
    let cpu = CpuBackend::new();
    let enc = KeyEncoding {
        kind: crate::keys::KeyKind::Unsigned,
        descending: false,
    };
    let (mut k, mut v) = (keys.clone(), values.clone());
    sort_pairs(&mut k, &mut v, enc, Some(log_tile), false);
    assert!(k.windows(2).all(|w| w[0] <= w[1]), "keys out of order");
    let mut tiles: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n.div_ceil(1 << log_tile)];
    let mut last_tile = vec![0usize; 50];
    for (&key, &value) in k.iter().zip(&v) {
        assert_eq!(keys[value as usize], key, "a value left its key");
        let tile = (value >> log_tile) as usize;
        assert!(
            tile >= last_tile[key as usize],
            "key {key}: tile {tile} after a later one"
        );
        last_tile[key as usize] = tile;
        tiles[tile].push((key, value));
    }
    for (t, got) in tiles.iter().enumerate() {
        let range = (t << log_tile)..n.min((t + 1) << log_tile);
        let (wk, wv) = network(&keys[range.clone()], &values[range]);
        let want: Vec<(u32, u32)> = wk.into_iter().zip(wv).collect();
        // Stable merges keep a tile's pairs in its order: the tile's pairs by key, each
        // key's in the tile network's order.
        let mut by_key = want.clone();
        by_key.sort_by_key(|p| p.0);
        assert_eq!(got, &by_key, "tile {t}");
    }
    // Not the stable order: the tiles' network moves equal keys' values.
    assert!(
        v.windows(2)
            .zip(k.windows(2))
            .any(|(v, k)| k[0] == k[1] && v[0] > v[1]),
        "merge path's order is the stable one"
    );
    // Past the radix sort's length, the backend takes this model.
    let past = crate::schedule::radix::RADIX_MAX_LEN + 1;
    assert!(!pairs_take_radix(past, 8) && pair_sort_tile(past, 8).is_some());
    // Rows, and the oblivious mode: the whole network.
    let half = n / 2 - 1;
    let (mut k, mut v) = (keys[..2 * half].to_vec(), values[..2 * half].to_vec());
    cpu.sort_rows_words(
        WordsMut::U32(&mut k),
        Some(WordsMut::U32(&mut v)),
        enc,
        half,
    )
    .expect("rows");
    for r in 0..2 {
        let rows = r * half..(r + 1) * half;
        let (wk, wv) = network(&keys[rows.clone()], &values[rows.clone()]);
        assert!(k[rows.clone()] == wk[..] && v[rows] == wv[..], "row {r}");
    }
    cpu.set_oblivious(true);
    let (mut k, mut v) = (keys.clone(), values.clone());
    cpu.sort_rows_words(WordsMut::U32(&mut k), Some(WordsMut::U32(&mut v)), enc, n)
        .expect("oblivious");
    let (wk, wv) = network(&keys, &values);
    assert!(
        k == wk && v == wv,
        "the oblivious mode is the network's order"
    );
}

/// `keys` with their positions as values (`value(i)`) through the backend, against a
/// stable sort by ordered key: equal keys keep their input order, descending too.
fn check_stable<W: Word + std::fmt::Debug, V: bytemuck::Pod + PartialEq + std::fmt::Debug>(
    keys: &[W],
    value: fn(usize) -> V,
    kind: crate::keys::KeyKind,
) {
    fn words<T: bytemuck::Pod>(s: &mut [T]) -> WordsMut<'_> {
        match std::mem::size_of::<T>() {
            4 => WordsMut::U32(bytemuck::cast_slice_mut(s)),
            _ => WordsMut::U64(bytemuck::cast_slice_mut(s)),
        }
    }
    let cpu = CpuBackend::new();
    let n = keys.len();
    let values: Vec<V> = (0..n).map(value).collect();
    for descending in [false, true] {
        let enc = KeyEncoding { kind, descending };
        let mut want: Vec<(W, V)> = keys.iter().copied().zip(values.iter().copied()).collect();
        want.sort_by_key(|p| enc.encode(p.0));
        let (want_k, want_v): (Vec<W>, Vec<V>) = want.into_iter().unzip();
        let (mut k, mut v) = (keys.to_vec(), values.clone());
        cpu.sort_rows_words(words(&mut k), Some(words(&mut v)), enc, n)
            .expect("sort");
        let label = format!(
            "{} keys, {} values, n={n}, {kind:?}, descending={descending}",
            std::any::type_name::<W>(),
            std::any::type_name::<V>()
        );
        assert!(k == want_k, "keys: {label}");
        assert!(v == want_v, "values: {label}");
    }
}

/// One row of pairs of 32- and 64-bit keys past 8 MiB (up to the radix sort's length)
/// sorts stably, as the GPUs' radix sort does: u32 and u64 keys and values, few keys (ties
/// across the whole row) and random ones, signed and float encodings (NaN, zeros of both
/// signs), both orders; just below 8 MiB, the network's order still.
#[test]
fn long_pairs_sort_stably() {
    use crate::keys::KeyKind::{Float, Signed, Unsigned};
    let mut rng = StdRng::seed_from_u64(42);
    let first = |element: u64| {
        let n = (1u64 << 23) / element + 1;
        assert!(pairs_take_radix(n, element) && !pairs_take_radix(n - 1, element));
        n as usize
    };
    let n = first(8);
    let few: Vec<u32> = (0..n).map(|_| rng.gen_range(0..40)).collect();
    check_stable::<u32, u32>(&few, |i| i as u32, Unsigned);
    let random: Vec<u32> = (0..n + 777).map(|_| rng.r#gen()).collect();
    check_stable::<u32, u32>(&random, |i| i as u32, Signed);
    let floats: Vec<u32> = few
        .iter()
        .map(|&x| match x % 6 {
            0 => f32::NAN.to_bits(),
            1 => (-0.0f32).to_bits(),
            2 => 0.0f32.to_bits(),
            3 => f32::NEG_INFINITY.to_bits(),
            _ => (x as f32 - 20.0).to_bits(),
        })
        .collect();
    check_stable::<u32, u32>(&floats, |i| i as u32, Float);
    let n = first(12);
    let few: Vec<u64> = (0..n).map(|_| rng.gen_range(0..40) << 36).collect();
    check_stable::<u64, u32>(&few, |i| i as u32, Unsigned);
    let few32: Vec<u32> = few.iter().map(|&x| (x >> 36) as u32).collect();
    check_stable::<u32, u64>(&few32, |i| !(i as u64), Signed);
    let n = first(16);
    let few: Vec<u64> = (0..n)
        .map(|_| (rng.gen_range(0..40i64) - 20) as u64)
        .collect();
    check_stable::<u64, u64>(&few, |i| (i as u64) << 32 | 3, Signed);
    // Just below 8 MiB: the network's order, which moves equal keys' values.
    let n = (1usize << 20) - 5;
    let keys: Vec<u32> = (0..n).map(|_| rng.gen_range(0..40)).collect();
    let values: Vec<u32> = (0..n as u32).collect();
    let enc = KeyEncoding {
        kind: Unsigned,
        descending: false,
    };
    let (mut k, mut v) = (keys.clone(), values.clone());
    CpuBackend::new()
        .sort_rows_words(WordsMut::U32(&mut k), Some(WordsMut::U32(&mut v)), enc, n)
        .expect("sort");
    let (wk, wv) = network(&keys, &values);
    assert!(k == wk && v == wv, "below 8 MiB: the network's order");
}

/// Pairs of narrow keys, which the backend widens to 32-bit words as the GPUs' host-slice
/// sorts do: past 8 MiB of widened pairs they sort stably too (the GPUs take the radix sort
/// for those words), `u16` and `i16` keys, both orders, against Rust's stable sort.
#[test]
fn long_pairs_of_narrow_keys_sort_stably() {
    fn check<K: crate::keys::SortKey + Ord>(cpu: &CpuBackend, keys: &[K], values: &[u32]) {
        let n = keys.len();
        for descending in [false, true] {
            let (mut k, mut v) = (keys.to_vec(), values.to_vec());
            let mut narrow: &mut [K] = &mut k;
            cpu.sort_rows_narrow(&mut narrow, Some(WordsMut::U32(&mut v)), descending, n)
                .expect("sort");
            let mut want: Vec<(K, u32)> =
                keys.iter().copied().zip(values.iter().copied()).collect();
            if descending {
                want.sort_by_key(|p| std::cmp::Reverse(p.0));
            } else {
                want.sort_by_key(|p| p.0);
            }
            let (want_k, want_v): (Vec<K>, Vec<u32>) = want.into_iter().unzip();
            let label = format!("{}, descending={descending}", std::any::type_name::<K>());
            assert!(k == want_k, "keys: {label}");
            assert!(v == want_v, "values: {label}");
        }
    }
    let mut rng = StdRng::seed_from_u64(43);
    let n = (1usize << 20) + 3;
    assert!(pairs_take_radix(n as u64, 8));
    let cpu = CpuBackend::new();
    let u16s: Vec<u16> = (0..n).map(|_| rng.gen_range(0..40)).collect();
    let i16s: Vec<i16> = (0..n).map(|_| rng.gen_range(-20..20)).collect();
    let values: Vec<u32> = (0..n as u32).collect();
    check(&cpu, &u16s, &values);
    check(&cpu, &i16s, &values);
}

/// One row of narrow keys alone from [`COUNT_NARROW_FROM`] keys on is counted: every
/// 16-bit pattern several times over, and lengths around the pieces, in both orders,
/// equal to a sort of the ordered words.
#[test]
fn counted_narrow_keys_match_a_sort() {
    let mut rng = StdRng::seed_from_u64(8);
    let every: Vec<i16> = (0..3).flat_map(|_| i16::MIN..=i16::MAX).collect();
    let mut cases = vec![every];
    for n in [
        COUNT_NARROW_FROM,
        COUNT_NARROW_FROM + 1,
        COUNT_PIECE - 1,
        COUNT_PIECE + 1,
        5 * COUNT_PIECE + 3,
    ] {
        cases.push((0..n).map(|_| rng.r#gen()).collect());
        cases.push((0..n).map(|_| rng.gen_range(-2..2i16) * 7000).collect());
        cases.push(vec![-5; n]);
    }
    let b = CpuBackend::new();
    for keys in cases {
        for descending in [false, true] {
            let mut got = keys.clone();
            let mut narrow: &mut [i16] = &mut got;
            b.sort_rows_narrow(&mut narrow, None, descending, keys.len())
                .expect("a sort");
            let mut want = keys.clone();
            want.sort_unstable();
            if descending {
                want.reverse();
            }
            assert!(got == want, "n={} descending={descending}", keys.len());
        }
    }
}

/// Times the counting sort of narrow keys against the widened sort it replaces and
/// rayon's `par_sort_unstable` of the keys themselves (best of 5, random `u16`):
/// `cargo test --release --lib cpu_counting_against_rayon -- --ignored --nocapture`.
#[test]
#[ignore = "a timing, not a check: run it by name"]
fn cpu_counting_against_rayon() {
    let mut rng = StdRng::seed_from_u64(1);
    let b = CpuBackend::new();
    for log in [18u32, 20, 24] {
        let n = 1usize << log;
        let keys: Vec<u16> = (0..n).map(|_| rng.r#gen()).collect();
        let mut best = [f64::MAX; 3];
        let time = |best: &mut f64, f: &mut dyn FnMut()| {
            let t = std::time::Instant::now();
            f();
            *best = best.min(t.elapsed().as_secs_f64() * 1e3);
        };
        for _ in 0..5 {
            let (mut a, mut c, mut d) = (keys.clone(), keys.clone(), keys.clone());
            time(&mut best[0], &mut || {
                let mut narrow: &mut [u16] = &mut a;
                count_narrow(&mut narrow, false);
            });
            time(&mut best[1], &mut || {
                let mut narrow: &mut [u16] = &mut c;
                crate::backend::sort_narrow_as_words(&b, &mut narrow, None, false, n)
                    .expect("a sort");
            });
            time(&mut best[2], &mut || d.par_sort_unstable());
            assert!(a == c && a == d, "2^{log}");
        }
        eprintln!(
            "2^{log} u16: counted {:.2} ms, widened and sorted {:.2} ms, rayon \
             par_sort_unstable {:.2} ms",
            best[0], best[1], best[2]
        );
    }
}
