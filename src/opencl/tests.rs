//! Tests of the opencl backend that need its internals.

use super::kernels::{Width, program_source};
use super::plan::{Kind, SortPlan};
use super::*;
use crate::backend::Backend;
use crate::cpu::CpuBackend;
use crate::keys::{KeyKind, KeyRepr, SortKey, WordsMut};
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
/// rounds per stage and global passes of several rounds too; none takes the radix sort
/// (its tests open their own). Panics without a device: these tests run only when asked for.
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
            // Long rows of keys alone and long pairs take merge path here, which these tests
            // cover; the radix sort, which would take them, has its own (`radix.rs`).
            b.radix = false;
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
        b.radix = false;
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

/// Floats of few distinct values from `raw`: NaN, -0.0, 0.0 and -inf among small integers,
/// so that equal keys and the total order's special cases meet in every tile.
fn special_floats(raw: &[u64]) -> Vec<f32> {
    raw.iter()
        .map(|&x| match x % 7 {
            0 => f32::NAN,
            1 => -0.0,
            2 => 0.0,
            3 => f32::NEG_INFINITY,
            _ => (x % 5) as f32,
        })
        .collect()
}

fn value_words<V: bytemuck::Pod>(values: &mut [V]) -> WordsMut<'_> {
    match std::mem::size_of::<V>() {
        4 => WordsMut::U32(bytemuck::cast_slice_mut(values)),
        8 => WordsMut::U64(bytemuck::cast_slice_mut(values)),
        other => unreachable!("values of {other} bytes"),
    }
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

mod counting;
mod fused_tails;
mod kernels;
mod keys;
mod launches;
mod long_pairs;
mod merge_path;
mod pairs;
mod radix;
mod rows;
mod timings;
mod top_k;
