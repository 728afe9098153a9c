//! Fused tails on devices limited to small tiles: the plans contain them, and the sorts
//! that run them come out right.

use super::*;

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
                        let widths = (key_bytes as u64, value_bytes.map_or(0, |v| v as u64));
                        for launch in plan::plan(&variant.limits, shape, widths) {
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
