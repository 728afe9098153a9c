//! Tests of the opencl backend that need its internals.

use super::*;
use crate::cpu::CpuBackend;
use crate::keys::{KeyKind, KeyRepr, SortKey};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::cmp::Ordering;
use std::sync::OnceLock;

// Every test here is ignored by default: they need an OpenCL device, and an ignored test
// says it did not run where a skipped one would pass in silence. `scripts/test.sh` runs
// them with `--ignored` (on PoCL in CI), `scripts/gpu-check.sh` on the GPU machine.

/// The first OpenCL device with the production tile, and the same device limited to tiles
/// of 2^2 and 2^5 (so that short inputs run global passes too). Panics without a device:
/// these tests run only when asked for.
fn backends() -> &'static [OpenClBackend] {
    static CELL: OnceLock<Vec<OpenClBackend>> = OnceLock::new();
    CELL.get_or_init(|| {
        let list = devices().unwrap_or_else(|e| panic!("no OpenCL platform: {e}"));
        assert!(!list.is_empty(), "no OpenCL device");
        let open = |max_log_tile: u32| {
            let mut b = OpenClBackend::open(0).expect("open OpenCL device 0");
            b.max_log_tile = max_log_tile;
            b
        };
        eprintln!("OpenCL tests run on {}", list[0]);
        vec![open(MAX_LOG_TILE), open(2), open(5)]
    })
}

fn keeps(b: &OpenClBackend, n: usize) -> bool {
    b.max_log_tile == MAX_LOG_TILE || n <= 1 << 16
}

/// 0..=70, 2^k - 1, 2^k, 2^k + 1 for k <= 15, and about a million.
fn lengths(max_k: u32, big: bool) -> Vec<usize> {
    let mut out: Vec<usize> = (0..=70).collect();
    for k in 1..=max_k {
        out.extend([(1 << k) - 1, 1 << k, (1 << k) + 1]);
    }
    if big {
        out.push(1_000_003);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Random words: a quarter of them special, a quarter from a small range (duplicates),
/// the rest any bits.
fn words<T: Copy>(
    rng: &mut StdRng,
    n: usize,
    special: &[T],
    small: impl Fn(u64) -> T,
    any: impl Fn(u64) -> T,
) -> Vec<T> {
    (0..n)
        .map(|_| match rng.gen_range(0..4) {
            0 => special[rng.gen_range(0..special.len())],
            1 => small(rng.gen_range(0..16)),
            _ => any(rng.r#gen()),
        })
        .collect()
}

fn as_words<T: SortKey>(keys: &mut [T]) -> (WordsMut<'_>, KeyKind) {
    match T::repr(keys) {
        KeyRepr::Words(w, kind) => (w, kind),
        KeyRepr::Narrow => unreachable!("only wide keys are tested here"),
    }
}

/// Sorts `keys` both ways on every backend and compares bit for bit with `cmp`.
fn check_keys<T: SortKey + std::fmt::Debug>(keys: &[T], cmp: fn(&T, &T) -> Ordering) {
    let backends = backends();
    let mut want = keys.to_vec();
    want.sort_unstable_by(cmp);
    for descending in [false, true] {
        if descending {
            want.reverse();
        }
        for b in backends.iter().filter(|b| keeps(b, keys.len())) {
            let mut got = keys.to_vec();
            let (w, kind) = as_words(&mut got);
            b.sort_words(w, None, KeyEncoding { kind, descending })
                .unwrap_or_else(|e| panic!("n={} {descending}: {e}", keys.len()));
            let same = bytemuck::cast_slice::<T, u8>(&got) == bytemuck::cast_slice::<T, u8>(&want);
            if !same {
                let at = (0..keys.len())
                    .find(|&i| bytemuck::bytes_of(&got[i]) != bytemuck::bytes_of(&want[i]))
                    .unwrap_or(0);
                panic!(
                    "n={} descending={descending} tile<=2^{}: first difference at {at}: got {:?} want {:?}",
                    keys.len(),
                    b.max_log_tile,
                    got[at],
                    want[at]
                );
            }
        }
    }
}

fn run_keys<T: SortKey + std::fmt::Debug>(
    seed: u64,
    special: &[T],
    small: impl Fn(u64) -> T,
    any: impl Fn(u64) -> T,
    cmp: fn(&T, &T) -> Ordering,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    for n in lengths(15, true) {
        let keys = words(&mut rng, n, special, &small, &any);
        check_keys(&keys, cmp);
    }
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_u32() {
    run_keys(
        1,
        &[0, 1, u32::MAX, u32::MAX - 1, 1 << 31],
        |x| x as u32,
        |x| x as u32,
        u32::cmp,
    );
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_u64() {
    run_keys(
        2,
        &[0, 1, u64::MAX, u64::MAX - 1, 1 << 63, u64::from(u32::MAX)],
        |x| x,
        |x| x,
        u64::cmp,
    );
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_i32() {
    run_keys(
        3,
        &[0, -1, 1, i32::MIN, i32::MAX],
        |x| x as i32 - 8,
        |x| x as i32,
        i32::cmp,
    );
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_i64() {
    run_keys(
        4,
        &[0, -1, 1, i64::MIN, i64::MAX],
        |x| x as i64 - 8,
        |x| x as i64,
        i64::cmp,
    );
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_f32() {
    let special = [
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7fc0_1234),
        f32::from_bits(0xff80_0001),
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        f32::MIN,
        f32::MAX,
        f32::MIN_POSITIVE,
        -1e-45,
    ];
    run_keys(
        5,
        &special,
        |x| x as f32 - 7.5,
        |x| f32::from_bits(x as u32),
        f32::total_cmp,
    );
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_f64() {
    let special = [
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff8_0000_0000_1234),
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        f64::MIN,
        f64::MAX,
        f64::MIN_POSITIVE,
        -5e-324,
    ];
    run_keys(
        6,
        &special,
        |x| x as f64 - 7.5,
        f64::from_bits,
        f64::total_cmp,
    );
}

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
                let label = format!("n={n} descending={descending} tile<=2^{}", b.max_log_tile);
                assert!(
                    bytemuck::cast_slice::<K, u8>(&got_k) == bytemuck::cast_slice::<K, u8>(&want_k),
                    "keys differ: {label}"
                );
                assert!(
                    bytemuck::cast_slice::<V, u8>(&got_v) == bytemuck::cast_slice::<V, u8>(&want_v),
                    "values differ: {label}"
                );
            }
        }
    }
}

fn value_words<V: bytemuck::Pod>(values: &mut [V]) -> WordsMut<'_> {
    match std::mem::size_of::<V>() {
        4 => WordsMut::U32(bytemuck::cast_slice_mut(values)),
        8 => WordsMut::U64(bytemuck::cast_slice_mut(values)),
        other => unreachable!("values of {other} bytes"),
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

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn rejects_mismatched_lengths_and_ignores_tiny_inputs() {
    let backends = backends();
    let b = &backends[0];
    let enc = KeyEncoding {
        kind: KeyKind::Unsigned,
        descending: false,
    };
    let mut keys = vec![3u32, 1, 2];
    let mut values = vec![1u32, 2];
    let err = b
        .sort_words(
            WordsMut::U32(&mut keys),
            Some(WordsMut::U32(&mut values)),
            enc,
        )
        .expect_err("lengths differ");
    assert_eq!(err, Error::LengthMismatch { keys: 3, values: 2 });
    assert_eq!(keys, [3, 1, 2]);
    let mut one = vec![7u64];
    b.sort_words(WordsMut::U64(&mut one), None, enc)
        .expect("one key");
    assert_eq!(one, [7]);
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn lists_devices_and_reports_tiles() {
    let backends = backends();
    let list = devices().expect("devices");
    assert_eq!(list[0], *backends[0].device());
    for (i, d) in list.iter().enumerate() {
        assert_eq!(d.index, i);
        assert_eq!(d.backend, BackendKind::OpenCl);
    }
    let p = backends[0].tile_params(4, None).expect("tile params");
    assert!((1..=MAX_LOG_TILE).contains(&p.log_tile));
    let p = backends[1].tile_params(8, Some(8)).expect("tile params");
    assert_eq!(p.log_tile, 2);
    assert!(matches!(
        OpenClBackend::open(list.len()),
        Err(Error::NoDevice { .. })
    ));
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn a_failed_build_returns_its_log() {
    let b = &backends()[0];
    match b.compile(
        "__kernel void broken(__global uint *x) { x[0] = undeclared_name; }",
        "",
    ) {
        Err(Error::KernelBuild { log }) => {
            assert!(
                log.contains("undeclared_name"),
                "the log names the error: {log}"
            )
        }
        Err(other) => panic!("expected a build log, got {other}"),
        Ok(_) => panic!("a broken program built"),
    }
}
