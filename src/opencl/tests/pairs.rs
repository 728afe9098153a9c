//! Key-value sorts: keys and values bit for bit as the CPU backend and the schedule's
//! emulation have them, values of equal keys included.

use super::*;

/// Key-value pairs: keys and values must equal the CPU backend's, which runs the same
/// network (values of equal keys included).
fn run_pairs<K: SortKey + std::fmt::Debug, V: bytemuck::Pod + std::fmt::Debug>(
    seed: u64,
    key: impl Fn(u64) -> K,
    value: impl Fn(u64) -> V,
    big: bool,
) {
    let backends = backends();
    let cpu = CpuBackend::new();
    let mut rng = StdRng::seed_from_u64(seed);
    for n in lengths(15, big) {
        // Few distinct keys for half the lengths, so that many keys tie.
        let range = if n % 2 == 0 { 8 } else { u64::MAX };
        let keys: Vec<K> = (0..n).map(|_| key(rng.gen_range(0..range))).collect();
        let values: Vec<V> = (0..n as u64).map(&value).collect();
        for descending in [false, true] {
            let (mut want_k, mut want_v) = (keys.clone(), values.clone());
            let (w, kind) = as_words(&mut want_k);
            let encoding = KeyEncoding { kind, descending };
            cpu.sort_words(w, Some(value_words(&mut want_v)), encoding)
                .expect("cpu sort");
            for b in backends.iter().filter(|b| keeps(b, n)) {
                let (mut got_k, mut got_v) = (keys.clone(), values.clone());
                let (w, _) = as_words(&mut got_k);
                b.sort_words(w, Some(value_words(&mut got_v)), encoding)
                    .unwrap_or_else(|e| panic!("n={n}: {e}"));
                let label = format!(
                    "n={n} descending={descending} tile<=2^{} rounds of 2^{}",
                    b.max_log_tile, b.log_e
                );
                assert_same_pairs((&got_k, &got_v), (&want_k, &want_v), &label);
            }
        }
    }
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn pairs_u32_keys_u32_values() {
    run_pairs(11, |x| x as u32, |i| i as u32, true);
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn pairs_u32_keys_u64_values() {
    run_pairs(12, |x| x as u32, |i| i << 32 | (i ^ 0xdead_beef), false);
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn pairs_u64_keys_u32_values() {
    run_pairs(13, |x| x, |i| i as u32, false);
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn pairs_u64_keys_u64_values() {
    run_pairs(14, |x| x, |i| !i, false);
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn pairs_f32_keys() {
    run_pairs(15, |x| f32::from_bits(x as u32), |i| i as u32, false);
}

/// Key-value results equal the schedule's CPU emulation bit for bit (values of equal keys
/// included), for lengths around the tile sizes and powers of two.
#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn pairs_match_the_network_emulation() {
    use crate::schedule::{Schedule, TileParams, emulate};
    let mut rng = StdRng::seed_from_u64(23);
    let mut lengths = vec![2usize, 3, 5, 31, 33, 100];
    for k in [5u32, 7, 8, 10, 11, 12, 13, 14, 16, 18] {
        lengths.extend([(1 << k) - 1, 1 << k, (1 << k) + 1]);
    }
    // Any tile parameters: the network does not depend on how passes group its levels.
    let params = TileParams {
        log_tile: 6,
        max_global_levels: 3,
        fuse_tails: true,
    };
    for n in lengths {
        let encoding = KeyEncoding {
            kind: KeyKind::Signed,
            descending: n % 2 == 1,
        };
        let keys: Vec<u64> = (0..n).map(|_| rng.gen_range(0..6u64)).collect();
        let values: Vec<u32> = (0..n as u32).collect();
        let mut want_k: Vec<u64> = keys.iter().map(|&k| encoding.encode(k)).collect();
        let mut want_v = values.clone();
        emulate(
            &Schedule::new(n as u64, params),
            &mut want_k,
            Some(&mut want_v),
        );
        for k in &mut want_k {
            *k = encoding.decode(*k);
        }
        for b in backends().iter().filter(|b| keeps(b, n)) {
            let (mut got_k, mut got_v) = (keys.clone(), values.clone());
            b.sort_words(
                WordsMut::U64(&mut got_k),
                Some(WordsMut::U32(&mut got_v)),
                encoding,
            )
            .unwrap_or_else(|e| panic!("n={n}: {e}"));
            let label = format!("n={n} tile<=2^{} rounds of 2^{}", b.max_log_tile, b.log_e);
            assert!(got_k == want_k, "keys differ: {label}");
            assert!(got_v == want_v, "values differ: {label}");
        }
    }
}
