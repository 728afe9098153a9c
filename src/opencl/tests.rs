//! Tests of the opencl backend that need its internals.

use super::plan::{Kind, SortPlan};
use super::programs::{Width, program_source};
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

/// The first OpenCL GPU (the first device where there is none) with the production tile
/// and rounds, and the same device limited to tiles of 2^2, 2^5 (rounds of 2^3 registers)
/// and 2^7 (rounds of 2^2 registers), so that short inputs run global passes, several
/// rounds per stage and global passes of several rounds too. Panics without a device: these
/// tests run only when asked for.
fn backends() -> &'static [OpenClBackend] {
    static CELL: OnceLock<Vec<OpenClBackend>> = OnceLock::new();
    CELL.get_or_init(|| {
        let list = devices().unwrap_or_else(|e| panic!("no OpenCL platform: {e}"));
        assert!(!list.is_empty(), "no OpenCL device");
        let index = list
            .iter()
            .position(|d| d.device_type == DeviceType::Gpu)
            .unwrap_or(0);
        let open = |max_log_tile: u32, log_e: u32| {
            let mut b = OpenClBackend::open(index).expect("open the OpenCL device");
            b.max_log_tile = max_log_tile;
            b.log_e = log_e;
            b
        };
        eprintln!("OpenCL tests run on {}", list[index]);
        vec![
            open(MAX_LOG_TILE, LOG_E),
            open(2, LOG_E),
            open(5, 3),
            open(7, 2),
        ]
    })
}

/// The first of [`backends`] with every merge pass launching the splitter kernel (passes
/// of few tiles, which short sorts have, otherwise search in the merge kernel).
fn splitter_backend() -> &'static OpenClBackend {
    static CELL: OnceLock<OpenClBackend> = OnceLock::new();
    CELL.get_or_init(|| {
        let mut b = OpenClBackend::open(backends()[0].info.index).expect("open the device");
        b.own_split_max_tiles = 0;
        b
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
    let n = keys.len();
    check_keys_on(backends().iter().filter(|b| keeps(b, n)), keys, cmp);
}

/// `keys` sorted both ways on each of `on` against `sort_unstable_by(cmp)`.
fn check_keys_on<'a, T: SortKey + std::fmt::Debug>(
    on: impl Iterator<Item = &'a OpenClBackend> + Clone,
    keys: &[T],
    cmp: fn(&T, &T) -> Ordering,
) {
    let mut want = keys.to_vec();
    want.sort_unstable_by(cmp);
    for descending in [false, true] {
        if descending {
            want.reverse();
        }
        for b in on.clone() {
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
                    "n={} descending={descending} tile<=2^{} rounds of 2^{} own splits up to {} tiles: first difference at {at}: got {:?} want {:?}",
                    keys.len(),
                    b.max_log_tile,
                    b.log_e,
                    b.own_split_max_tiles,
                    got[at],
                    want[at]
                );
            }
        }
    }
}

/// `n` random 64-bit keys, or with `few` keys below 40 (ties across every tile and run).
fn few_or_random(rng: &mut StdRng, n: usize, few: bool) -> Vec<u64> {
    (0..n)
        .map(|_| {
            if few {
                rng.gen_range(0..40)
            } else {
                rng.r#gen()
            }
        })
        .collect()
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
                let label = format!(
                    "n={n} descending={descending} tile<=2^{} rounds of 2^{}",
                    b.max_log_tile, b.log_e
                );
                assert_same_pairs((&got_k, &got_v), (&want_k, &want_v), &label);
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
    assert_eq!(list[backends[0].device().index], *backends[0].device());
    for (i, d) in list.iter().enumerate() {
        assert_eq!(d.index, i);
        assert_eq!(d.backend, BackendKind::OpenCl);
    }
    let p = backends[0].tile_params(4, None).expect("tile params");
    assert!((1..=MAX_LOG_TILE).contains(&p.log_tile));
    let p = backends[1].tile_params(8, Some(8)).expect("tile params");
    assert_eq!(p.log_tile, 2);
    let p = backends[3].tile_params(4, Some(4)).expect("tile params");
    assert_eq!(p.log_tile, 7);
    assert_eq!(p.max_global_levels, 4);
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
            );
            // What a caller prints shows the whole log.
            let shown = Error::KernelBuild { log: log.clone() }.to_string();
            assert!(
                shown.contains(&log),
                "the error's text shows the log: {shown}"
            );
        }
        Err(other) => panic!("expected a build log, got {other}"),
        Ok(_) => panic!("a broken program built"),
    }
}

/// Sorts `rows` rows of `row_len` through `sort_rows_words` on `b` and checks every row
/// against the CPU backend's network run on that row alone (keys and values bit for bit).
fn check_rows(b: &OpenClBackend, rng: &mut StdRng, row_len: usize, rows: usize, ties: bool) {
    let n = row_len * rows;
    let range = if ties { 5 } else { u64::MAX };
    let keys: Vec<u32> = (0..n).map(|_| rng.gen_range(0..range) as u32).collect();
    let values: Vec<u32> = (0..n as u32).collect();
    let cpu = CpuBackend::new();
    for descending in [false, true] {
        let encoding = KeyEncoding {
            kind: KeyKind::Signed,
            descending,
        };
        let (mut want_k, mut want_v) = (keys.clone(), values.clone());
        for (k, v) in want_k.chunks_mut(row_len).zip(want_v.chunks_mut(row_len)) {
            cpu.sort_words(WordsMut::U32(k), Some(WordsMut::U32(v)), encoding)
                .expect("cpu sort");
        }
        let label = format!(
            "{rows} rows of {row_len} descending={descending} tile<=2^{} rounds of 2^{}",
            b.max_log_tile, b.log_e
        );
        // Keys alone.
        let mut got_k = keys.clone();
        b.sort_rows_words(WordsMut::U32(&mut got_k), None, encoding, row_len)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert!(got_k == want_k, "keys differ: {label}");
        // Key-value pairs.
        let (mut got_k, mut got_v) = (keys.clone(), values.clone());
        b.sort_rows_words(
            WordsMut::U32(&mut got_k),
            Some(WordsMut::U32(&mut got_v)),
            encoding,
            row_len,
        )
        .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert!(got_k == want_k, "keys differ (pairs): {label}");
        assert!(got_v == want_v, "values differ: {label}");
    }
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_rows_independently() {
    let mut rng = StdRng::seed_from_u64(21);
    for b in backends() {
        for row_len in [1, 2, 3, 1000, 1024, 1025, 5000] {
            for rows in [1, 2, 3, 7, 16] {
                check_rows(b, &mut rng, row_len, rows, rows % 2 == 0);
            }
        }
    }
    // Many short rows packed into each tile, and long rows that need global passes.
    let b = &backends()[0];
    check_rows(b, &mut rng, 17, 999, true);
    check_rows(b, &mut rng, 70_001, 3, false);
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

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn builds_without_the_unroll_pragma() {
    let b = &backends()[0];
    for log_e in 1..=LOG_E {
        let key = VariantKey {
            key: Width::W64,
            value: Some(Width::W32),
            log_e,
        };
        let options = format!("{} -D NO_UNROLL_PRAGMA", key.build_options());
        let _lifecycle = lifecycle_lock();
        let program = b.compile(&program_source(), &options).expect("builds");
        drop(program);
    }
}

/// Fused tails (`Pass::GlobalMerge::tail_bits > 0`): on devices limited to small tiles, every
/// stage past the tile hands its last half-cleaners to the next stage's first global pass,
/// which runs them inside the rows of its tile (the mirrored rows reversed) before its own
/// levels. Lengths 2^k - 1, 2^k, 2^k + 1 up to 2^18, random and few distinct keys (one of
/// the two, in turn, above 2^16), `u32` and `u64` keys alone (against `sort_unstable`) and
/// with `u32` values (the keys against `sort_unstable`, the values against the schedule's
/// emulation, ties included). The plans must contain fused passes, among them ones of few
/// enough levels for `bitonic_global` had they no tail.
#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn fused_tails_sort_on_small_tiles() {
    // Tiles of 2^3 .. 2^11: 2^1 .. 2^5 columns, up to 6 levels a global pass.
    let tiles = [3u32, 5, 7, 9, 11];
    let mut lengths = vec![];
    for k in 1..=18 {
        lengths.extend([(1usize << k) - 1, 1 << k, (1 << k) + 1]);
    }
    // The shared backends first: the ICD loader found no platform when this test's first
    // `open` and their first `devices()` ran at once (ocl-icd, first calls in two threads).
    backends();
    let mut rng = StdRng::seed_from_u64(24);
    let (mut fused, mut few) = (0usize, 0usize);
    let mut shapes = std::collections::BTreeSet::new();
    for max_log_tile in tiles {
        let mut b = OpenClBackend::open(0).expect("open OpenCL device 0");
        b.max_log_tile = max_log_tile;
        for (i, &n) in lengths.iter().enumerate() {
            for few_keys in [false, true] {
                if n > 1 << 16 && few_keys != (i % 2 == 0) {
                    continue;
                }
                let range = if few_keys { 5 } else { u64::MAX };
                let raw: Vec<u64> = (0..n).map(|_| rng.gen_range(0..range)).collect();
                let label = format!("n={n} few={few_keys} tile<=2^{max_log_tile}");
                for key_bytes in [4usize, 8] {
                    // The plans this sort runs: keys alone and pairs with u32 values.
                    for value_bytes in [None, Some(4)] {
                        let variant = b
                            .variant_of_widths(key_bytes, value_bytes)
                            .expect("program");
                        let shape = Shape::new(n as u64, 1);
                        for launch in plan::plan(&variant.limits, shape, variant.element_bytes) {
                            if let Kind::Tile { c, m, tail, .. } = launch.kind
                                && tail > 0
                            {
                                assert!(tail <= c, "{label}: {launch:?}");
                                fused += 1;
                                few += usize::from(m <= variant.limits.log_e);
                                shapes.insert((c, m, tail));
                            }
                        }
                    }
                    if key_bytes == 4 {
                        let keys: Vec<u32> = raw.iter().map(|&k| k as u32).collect();
                        check_fused(&b, &keys, &label);
                    } else {
                        check_fused(&b, &raw, &label);
                    }
                }
            }
        }
    }
    eprintln!(
        "{fused} fused passes ({few} of few levels), {} shapes (c, m, tail): {shapes:?}",
        shapes.len()
    );
    assert!(
        fused > 0 && few > 0,
        "{fused} fused passes, {few} of few levels"
    );
}

/// Sorts `keys` alone and with their positions as `u32` values on `b` (unsigned, ascending)
/// and checks the keys against `sort_unstable`, the values against the emulation.
fn check_fused<W: SortKey + crate::keys::Word + std::fmt::Debug>(
    b: &OpenClBackend,
    keys: &[W],
    label: &str,
) {
    use crate::schedule::{Schedule, TileParams, emulate};
    let encoding = KeyEncoding {
        kind: KeyKind::Unsigned,
        descending: false,
    };
    let mut want = keys.to_vec();
    want.sort_unstable();
    let mut got = keys.to_vec();
    let (w, _) = as_words(&mut got);
    b.sort_words(w, None, encoding)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    if let Some(at) = (0..keys.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "keys alone, {label}, {} bytes: first difference at {at}: got {:?} want {:?}",
            size_of::<W>(),
            got[at],
            want[at]
        );
    }
    // The network does not depend on how the passes group its levels.
    let mut want_v: Vec<u32> = (0..keys.len() as u32).collect();
    let mut emulated = keys.to_vec();
    let params = TileParams {
        log_tile: 4,
        max_global_levels: 2,
        fuse_tails: false,
    };
    emulate(
        &Schedule::new(keys.len() as u64, params),
        &mut emulated,
        Some(&mut want_v),
    );
    let mut got = keys.to_vec();
    let mut got_v: Vec<u32> = (0..keys.len() as u32).collect();
    let (w, _) = as_words(&mut got);
    b.sort_words(w, Some(WordsMut::U32(&mut got_v)), encoding)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(
        got == want,
        "pairs' keys differ: {label}, {} bytes",
        size_of::<W>()
    );
    assert!(
        got_v == want_v,
        "values differ: {label}, {} bytes",
        size_of::<W>()
    );
}

#[test]
fn program_source_inlines_every_include() {
    let source = program_source();
    assert!(!source.contains("#include"), "an include was left");
    for part in [
        "#define MODE_GLOBAL 2u",       // contract.h
        "inline KEY_T encode_key",      // words.clh
        "#define NETWORK_RUNS",         // rounds.clh
        "inline TileMap tile_map",      // tile_io.clh
        "__kernel void bitonic_global", // bitonic.cl
    ] {
        assert_eq!(source.matches(part).count(), 1, "{part}");
    }
}

/// Merge path: sorts of keys alone above one tile (and the device's threshold) take it (the
/// plan says so, and the oblivious mode does not), and `u32`, `u64` and `f32` keys of
/// lengths around every sort tile, merge tile and run boundary past the threshold come out
/// as `sort_unstable` (`total_cmp` for floats) has them, both ways, from host slices and from
/// device buffers, where two queues take turns at the backend's scratch.
#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn merge_path_sorts_keys() {
    use opencl3::memory::CL_MEM_READ_WRITE;
    use opencl3::types::CL_BLOCKING;
    let b = &backends()[0];
    let limits = b.variant_of_widths(4, None).expect("program").limits;
    let SortPlan::MergePath(merge) = plan::choose(&limits, Shape::new(1 << 22, 1), 4, 0, false)
    else {
        panic!("2^22 keys alone do not take merge path on {}", b.info);
    };
    assert!(merge.merges.len() >= 2 && merge.merges.len() % 2 == 0);
    assert!(matches!(
        plan::choose(&limits, Shape::new(1 << 22, 1), 4, 0, true),
        SortPlan::Network(_)
    ));
    // Pairs take it past 8 MiB on every device.
    assert!(matches!(
        plan::choose(&limits, Shape::new(1 << 20, 1), 4, 4, false),
        SortPlan::Network(_)
    ));
    // Few rows of keys alone longer than a tile too, each merged on its own (the suite's
    // rows trials sort them: `LONG_ROWS` in tests/support/derived/rows.rs).
    let SortPlan::MergePath(rows) = plan::choose(&limits, Shape::new(20_001, 3), 4, 0, false)
    else {
        panic!("3 rows of 20001 keys do not take merge path on {}", b.info);
    };
    assert_eq!((rows.shape.rows, rows.shape.row_len), (3, 20_001));
    let sort_tile = crate::schedule::merge_path::choose_sort_tile(
        1 << 22,
        plan::max_log_tile(&limits, 4),
        limits.compute_units,
    )
    .expect("a sort tile");
    let merge_tile = plan::merge_log_tile(&limits, 4, 0);
    // From the device's threshold on (every length on a CPU device, only long ones on a GPU;
    // 8-byte keys reach it at half the length of 4-byte ones).
    let from = ((1usize << limits.min_log_merge_bytes.saturating_sub(1)) / 4).max(1 << 13);
    let mut lengths = vec![from + 1, 3 * from / 2, from + 100_003, 2 * from + 1];
    for bits in [sort_tile, merge_tile, 14, 15, 16, 17] {
        for k in [1usize, 3, 5] {
            let at = from + (k << bits);
            lengths.extend([at - 1, at, at + 1]);
        }
    }
    lengths.sort_unstable();
    lengths.dedup();
    let queues = [
        CommandQueue::create_default(&b.context, 0).expect("queue"),
        CommandQueue::create_default(&b.context, 0).expect("queue"),
    ];
    let mut rng = StdRng::seed_from_u64(29);
    for (case, &n) in lengths.iter().enumerate() {
        // Few distinct keys in every other case: ties across every tile and run boundary.
        let raw = few_or_random(&mut rng, n, case % 2 == 0);
        let u32s: Vec<u32> = raw.iter().map(|&x| x as u32).collect();
        check_keys(&u32s, |a, b| a.cmp(b));
        check_keys(&raw, |a, b| a.cmp(b));
        if case < 4 {
            let splitter = std::iter::once(splitter_backend());
            check_keys_on(splitter.clone(), &u32s, |a, b| a.cmp(b));
            check_keys_on(splitter, &raw, |a, b| a.cmp(b));
        }
        let floats: Vec<f32> = raw
            .iter()
            .map(|&x| match x % 7 {
                0 => f32::NAN,
                1 => -0.0,
                2 => f32::NEG_INFINITY,
                _ => f32::from_bits(x as u32),
            })
            .collect();
        check_keys(&floats, f32::total_cmp);
        // Device buffers, on one queue and then the other.
        let queue = &queues[case % 2];
        let mut want = u32s.clone();
        want.sort_unstable();
        // SAFETY: no host pointer; the buffer is written before it is read.
        let mut keys =
            unsafe { Buffer::<u32>::create(&b.context, CL_MEM_READ_WRITE, n, ptr::null_mut()) }
                .expect("buffer");
        // SAFETY: blocking copies of `n` words each way.
        unsafe { queue.enqueue_write_buffer(&mut keys, CL_BLOCKING, 0, &u32s, &[]) }
            .expect("write");
        b.sort_device(&mut keys, crate::keys::Order::Ascending, queue)
            .expect("sort_device");
        let mut got = vec![0u32; n];
        unsafe { queue.enqueue_read_buffer(&keys, CL_BLOCKING, 0, &mut got, &[]) }.expect("read");
        assert!(got == want, "device buffer of {n} keys");
    }
}

/// Merge path for key-value pairs: past 8 MiB of pairs the plan takes it on every device
/// (and not in the oblivious mode), and keys and values come out bit for bit as the CPU
/// backend's emulation has them (values of equal keys included), for every width of key and
/// value, both ways, from host slices and from device buffers on two queues; in the
/// oblivious mode both run the network and still agree.
#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn merge_path_sorts_pairs() {
    use crate::schedule::merge_path::pair_sort_tile;
    use opencl3::memory::CL_MEM_READ_WRITE;
    use opencl3::types::CL_BLOCKING;
    let b = &backends()[0];
    let cpu = CpuBackend::new();
    let limits = b.variant_of_widths(4, Some(4)).expect("program").limits;
    let first = (1usize << 20) + 1;
    assert!(matches!(
        plan::choose(&limits, Shape::new(first as u64, 1), 4, 4, false),
        SortPlan::MergePath(_)
    ));
    assert!(matches!(
        plan::choose(&limits, Shape::new(first as u64, 1), 4, 4, true),
        SortPlan::Network(_)
    ));
    let mut rng = StdRng::seed_from_u64(31);
    // Past the threshold, around the sort tiles (2^11 and 2^12) and where the tile changes
    // with the number of merge passes (2^21 + 1).
    let mut lengths = vec![
        first,
        first + (1 << 11) - 1,
        first + 3 * (1 << 12) + 1,
        1_600_003,
    ];
    lengths.push((1 << 21) + 1);
    for (i, &n) in lengths.iter().enumerate() {
        assert!(pair_sort_tile(n as u64, 8).is_some());
        let raw = few_or_random(&mut rng, n, i % 4 != 3);
        let keys: Vec<u32> = raw.iter().map(|&x| x as u32).collect();
        let values: Vec<u32> = (0..n as u32).collect();
        check_pairs_like_cpu(b, &cpu, &keys, &values, i % 2 == 1);
        if i == 0 {
            check_pairs_like_cpu(splitter_backend(), &cpu, &keys, &values, true);
            // Every other width of key and value, just past its threshold.
            let wide: Vec<u64> = raw
                .iter()
                .map(|&x| x.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 64)
                .collect();
            let wide_values: Vec<u64> = (0..n as u64).map(|i| i << 20).collect();
            check_pairs_like_cpu(b, &cpu, &keys, &wide_values, false);
            check_pairs_like_cpu(b, &cpu, &wide, &values, true);
            check_pairs_like_cpu(
                b,
                &cpu,
                &wide[..(1 << 19) + 3],
                &wide_values[..(1 << 19) + 3],
                false,
            );
            let floats: Vec<f32> = raw
                .iter()
                .map(|&x| match x % 7 {
                    0 => f32::NAN,
                    1 => -0.0,
                    2 => 0.0,
                    3 => f32::NEG_INFINITY,
                    _ => (x % 5) as f32,
                })
                .collect();
            check_pairs_like_cpu(b, &cpu, &floats, &values, true);
        }
    }
    // Device buffers on two queues taking turns at the scratch.
    let queues = [
        CommandQueue::create_default(&b.context, 0).expect("queue"),
        CommandQueue::create_default(&b.context, 0).expect("queue"),
    ];
    for (case, &n) in lengths.iter().take(2).enumerate() {
        let keys: Vec<u32> = (0..n).map(|_| rng.gen_range(0..40)).collect();
        let values: Vec<u32> = (0..n as u32).collect();
        let (mut want_k, mut want_v) = (keys.clone(), values.clone());
        cpu.sort_words(
            WordsMut::U32(&mut want_k),
            Some(WordsMut::U32(&mut want_v)),
            KeyEncoding::of::<u32>(crate::keys::Order::Ascending),
        )
        .expect("cpu sort");
        let queue = &queues[case % 2];
        let upload = |host: &[u32]| {
            // SAFETY: no host pointer; the buffer is written before it is read.
            let mut buffer =
                unsafe { Buffer::<u32>::create(&b.context, CL_MEM_READ_WRITE, n, ptr::null_mut()) }
                    .expect("buffer");
            // SAFETY: a blocking copy of `n` words.
            unsafe { queue.enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, host, &[]) }
                .expect("write");
            buffer
        };
        let download = |buffer: &Buffer<u32>| {
            let mut host = vec![0u32; n];
            // SAFETY: a blocking copy of `n` words.
            unsafe { queue.enqueue_read_buffer(buffer, CL_BLOCKING, 0, &mut host, &[]) }
                .expect("read");
            host
        };
        let (mut k, mut v) = (upload(&keys), upload(&values));
        b.sort_device_by_key(&mut k, &mut v, crate::keys::Order::Ascending, queue)
            .expect("sort_device_by_key");
        assert!(download(&k) == want_k, "device keys, n={n}");
        assert!(download(&v) == want_v, "device values, n={n}");
    }
    // The oblivious mode: both run the network.
    b.set_oblivious(true);
    cpu.set_oblivious(true);
    let n = lengths[0];
    let keys: Vec<u32> = (0..n).map(|_| rng.gen_range(0..40)).collect();
    let values: Vec<u32> = (0..n as u32).collect();
    check_pairs_like_cpu(b, &cpu, &keys, &values, false);
    b.set_oblivious(false);
}

/// Sorts `keys` and `values` on `b` and on `cpu` and checks both bit for bit.
fn check_pairs_like_cpu<K: SortKey + std::fmt::Debug, V: bytemuck::Pod + std::fmt::Debug>(
    b: &OpenClBackend,
    cpu: &CpuBackend,
    keys: &[K],
    values: &[V],
    descending: bool,
) {
    let (mut want_k, mut want_v) = (keys.to_vec(), values.to_vec());
    let (w, kind) = as_words(&mut want_k);
    let encoding = KeyEncoding { kind, descending };
    cpu.sort_words(w, Some(value_words(&mut want_v)), encoding)
        .expect("cpu sort");
    let (mut got_k, mut got_v) = (keys.to_vec(), values.to_vec());
    let (w, _) = as_words(&mut got_k);
    b.sort_words(w, Some(value_words(&mut got_v)), encoding)
        .expect("opencl sort");
    let label = format!(
        "n={} keys of {} bytes, values of {} bytes, descending={descending}",
        keys.len(),
        std::mem::size_of::<K>(),
        std::mem::size_of::<V>()
    );
    assert_same_pairs((&got_k, &got_v), (&want_k, &want_v), &label);
}

/// Keys and values bit for bit as wanted (`label` says which sort failed).
fn assert_same_pairs<K: bytemuck::Pod, V: bytemuck::Pod>(
    got: (&[K], &[V]),
    want: (&[K], &[V]),
    label: &str,
) {
    assert!(
        bytemuck::cast_slice::<K, u8>(got.0) == bytemuck::cast_slice::<K, u8>(want.0),
        "keys differ: {label}"
    );
    assert!(
        bytemuck::cast_slice::<V, u8>(got.1) == bytemuck::cast_slice::<V, u8>(want.1),
        "values differ: {label}"
    );
}

/// From 32 MiB a merge-path sort of host slices sorts each chunk while the rest uploads
/// (`chunked.rs`): the same result, bit for bit, as the CPU backend (which follows the
/// sort that uploads first): keys alone in four chunks and a last one of one element, pairs
/// in two chunks and one of one element, floats descending with NaN, -0.0 and infinities.
#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_while_uploading_as_after() {
    let b = &backends()[0];
    let cpu = CpuBackend::new();
    let mut rng = StdRng::seed_from_u64(38);
    let n = (1usize << 23) + 1;
    let keys: Vec<u32> = (0..n).map(|_| rng.r#gen()).collect();
    let limits = b.variant_of_widths(4, None).expect("program").limits;
    let SortPlan::MergePath(whole) = plan::choose(&limits, Shape::new(n as u64, 1), 4, 0, false)
    else {
        panic!("{n} keys do not take merge path on {}", b.info);
    };
    let Kind::Tile { log_net, .. } = whole.tile_sort.kind else {
        panic!("a merge-path plan without a tile sort");
    };
    // The sort is cut into chunks, and the device lets sub-buffers start at them.
    let log_chunk =
        crate::schedule::merge_path::upload_chunk(n as u64, 4, log_net).expect("chunks");
    assert!((4u64 << log_chunk).is_multiple_of(b.limits.base_align_bytes.max(1)));
    let want = {
        let mut k = keys.clone();
        k.sort_unstable();
        k
    };
    let mut got = keys.clone();
    b.sort_words(
        WordsMut::U32(&mut got),
        None,
        KeyEncoding::of::<u32>(crate::keys::Order::Ascending),
    )
    .expect("opencl sort");
    assert!(got == want, "u32 keys, n = {n}");
    let n = (1usize << 22) + 1;
    let floats: Vec<f32> = (0..n)
        .map(|i| match rng.gen_range(0..9) {
            0 => f32::NAN,
            1 => -0.0,
            2 => 0.0,
            3 => f32::NEG_INFINITY,
            4 => f32::INFINITY,
            _ => (i % 1000) as f32 - 500.0,
        })
        .collect();
    let values: Vec<u32> = (0..n as u32).collect();
    check_pairs_like_cpu(b, &cpu, &floats, &values, true);
    let few: Vec<u32> = (0..n).map(|_| rng.gen_range(0..50)).collect();
    check_pairs_like_cpu(b, &cpu, &few, &values, false);
}

/// How long the calling thread spends enqueueing the staged path's copies against how long
/// they take: 64 MiB between a mapped host buffer (as the pinned ring's slots are) and a
/// device buffer, in pieces of 1, 4 and 64 MiB, each way. If enqueueing takes about as long
/// as the copies, the driver copies while the calling thread waits, and the staged path's
/// host copies cannot overlap the bus as they do on CUDA. Median of 5 after one untimed; the
/// data that comes back is checked. Then pieces each waited for before the next is sent, and
/// the host copies of the staged path into and out of a mapped buffer against the same copy
/// between vectors. Run with `cargo test --release --features opencl --lib
/// opencl_staged_copy_enqueue_times -- --ignored --nocapture`.
#[test]
#[ignore = "needs an OpenCL device; a timing, with a check of the data"]
fn opencl_staged_copy_enqueue_times() {
    use crate::host_transfer::Link;
    use std::time::Instant;
    let b = &backends()[0];
    let link = ClLink {
        backend: b,
        queue: &b.queue,
        requested: 0,
        targets: None,
    };
    let bytes = 64usize << 20;
    let mut up = link.alloc_pinned(bytes).expect("mapped buffer");
    let mut down = link.alloc_pinned(bytes).expect("mapped buffer");
    let pattern: Vec<u8> = (0..bytes).map(|i| (i * 31 + 7) as u8).collect();
    ClLink::pinned_bytes(&mut up).copy_from_slice(&pattern);
    let device = b.alloc(bytes, bytes as u64).expect("device buffer");
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    eprintln!("{} ({} MiB each way)", b.info, bytes >> 20);
    eprintln!("piece    up: enqueued / done ms    down: enqueued / done ms");
    for piece in [1usize << 20, 4 << 20, bytes] {
        let mut times: [Vec<f64>; 4] = Default::default();
        for round in 0..6 {
            let source = ClLink::pinned_bytes(&mut up);
            let start = Instant::now();
            for offset in (0..bytes).step_by(piece) {
                link.upload(&source[offset..offset + piece], device.get(), offset)
                    .expect("upload");
            }
            let up_enqueued = start.elapsed();
            link.wait(link.mark().expect("mark")).expect("upload done");
            let up_done = start.elapsed();
            let target = ClLink::pinned_bytes(&mut down);
            target.fill(0);
            let start = Instant::now();
            for (i, part) in target.chunks_mut(piece).enumerate() {
                link.download(device.get(), i * piece, part)
                    .expect("download");
            }
            let down_enqueued = start.elapsed();
            link.wait(link.mark().expect("mark"))
                .expect("download done");
            let down_done = start.elapsed();
            assert!(
                ClLink::pinned_bytes(&mut down)[..] == pattern[..],
                "pieces of {piece} bytes: the data came back changed"
            );
            if round > 0 {
                for (t, d) in times
                    .iter_mut()
                    .zip([up_enqueued, up_done, down_enqueued, down_done])
                {
                    t.push(ms(d));
                }
            }
        }
        let [a, b2, c, d] = times.map(median);
        eprintln!(
            "{:>3} MiB  {a:>8.3} / {b2:>8.3}           {c:>8.3} / {d:>8.3}",
            piece >> 20
        );
    }
    // A wait for every piece of 1 MiB before the next is sent: what each wait for a piece
    // costs beyond the copies above (a driver that sleeps in clWaitForEvents and wakes late
    // would show here).
    let mut times = Vec::new();
    for round in 0..6 {
        let source = ClLink::pinned_bytes(&mut up);
        let start = Instant::now();
        for offset in (0..bytes).step_by(1 << 20) {
            link.upload(&source[offset..offset + (1 << 20)], device.get(), offset)
                .expect("upload");
            link.wait(link.mark().expect("mark")).expect("upload done");
        }
        if round > 0 {
            times.push(ms(start.elapsed()));
        }
    }
    eprintln!(
        "1 MiB pieces up, each waited for before the next: {:.3} ms for {} MiB",
        median(times),
        bytes >> 20
    );
    // The staged path's host copies: into a mapped buffer (an upload's) and out of one (a
    // download's), against the same copy between two ordinary vectors. If the driver maps
    // uncached or write-combined memory, the copy out of it is the slow one.
    let mut plain = vec![0u8; bytes];
    let mut other = pattern.clone();
    let mut times: [Vec<f64>; 3] = Default::default();
    for round in 0..6 {
        let start = Instant::now();
        crate::host_transfer::par_copy(ClLink::pinned_bytes(&mut up), &pattern);
        let into_mapped = start.elapsed();
        let start = Instant::now();
        crate::host_transfer::par_copy(&mut plain, ClLink::pinned_bytes(&mut up));
        let out_of_mapped = start.elapsed();
        let start = Instant::now();
        crate::host_transfer::par_copy(&mut other, &plain);
        let between_vectors = start.elapsed();
        assert!(other == pattern, "a host copy changed the data");
        if round > 0 {
            for (t, d) in times
                .iter_mut()
                .zip([into_mapped, out_of_mapped, between_vectors])
            {
                t.push(ms(d));
            }
        }
    }
    let [a, b2, c] = times.map(median);
    eprintln!(
        "host copies of {} MiB (ms): into a mapped buffer {a:.3}, out of one {b2:.3}, between vectors {c:.3}",
        bytes >> 20
    );
}
