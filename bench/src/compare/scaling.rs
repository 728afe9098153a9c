//! `bitonic bench --compare --gpus 1,2,4`: host-slice sorts (u32 keys, u32 keys with u32
//! values, u64 keys, u64 keys with u64 values) on a sorter over the first N GPUs (`SorterBuilder::devices`), timed as
//! a host round trip from a `Vec` (the partition pass included), beside rayon's
//! `par_sort_unstable`; speedup over one GPU and efficiency (speedup / N). Sizes may exceed
//! one GPU's memory (the sorter partitions them into ranges). Memory stays bounded: the
//! input is made once per size and one work buffer is reused; results are checked by
//! sortedness and an order-independent fingerprint of the (key, value) multiset, not by a
//! reference sort (which would need another copy and minutes at 2^34).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use bitonic::{BackendKind, Order, SortKey, Sorter};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use super::{Case, CompareConfig, Failures, skips_name};
use crate::common::{median, minimum, size_label};

mod partition_phases;

/// Rayon is timed on the whole input up to this many keys; above it, at
/// [`RAYON_SCALED_FROM`] keys and scaled by n log n, since a full sort would take minutes.
pub const RAYON_DIRECT_MAX: usize = 1 << 31;

/// The size rayon is timed at when the input is larger than [`RAYON_DIRECT_MAX`].
pub const RAYON_SCALED_FROM: usize = 1 << 30;

/// Inputs of at least this many bytes (keys and values) take one untimed and
/// [`HUGE_RUNS`] timed runs, whatever `--roundtrip-runs` says: each run moves the whole
/// input over the bus and back, seconds at these sizes.
pub const HUGE_BYTES: usize = 4 << 30;

/// Timed runs of an input of at least [`HUGE_BYTES`].
pub const HUGE_RUNS: usize = 3;

/// The name of the sorters of rows measured here, in the table and the CSV.
const OURS: &str = "bitonic";
const RAYON: &str = "rust-cpu";

/// How the sorters of one scaling measurement are made.
pub struct Target {
    /// The backend whose devices are used.
    pub backend: BackendKind,
    /// Per GPU count N, the device indices of the sorter (the first N devices).
    pub lists: Vec<(usize, Vec<usize>)>,
    /// `SorterBuilder::split_from`, when not the default.
    pub split_from: Option<usize>,
    /// `SorterBuilder::device_memory_limit`, when not the device's own.
    pub memory_limit: Option<u64>,
}

/// One line of the scaling table and CSV.
#[derive(Clone, Debug)]
pub struct ScalingRow {
    /// The case's name.
    pub case: String,
    /// Keys sorted.
    pub n: usize,
    /// `bitonic` or `rust-cpu`.
    pub sorter: String,
    /// GPUs of the sorter (0 for rayon).
    pub gpus: usize,
    /// Timed runs.
    pub ms: Vec<f64>,
    /// For a scaled rayon time: the size it was measured at.
    pub scaled_from: Option<usize>,
    /// Why the row has no time, or other remarks.
    pub note: String,
}

impl ScalingRow {
    /// The median time in ms (NaN when none).
    pub fn median_ms(&self) -> f64 {
        median(&self.ms)
    }
}

/// The device lists for `gpus` (each N the first N of `available`), and a note for each N
/// above the number of devices. N = 1 is always measured first, the baseline of the speedup.
pub fn device_lists(
    available: &[usize],
    gpus: &[usize],
) -> (Vec<(usize, Vec<usize>)>, Vec<String>) {
    let mut counts: Vec<usize> = std::iter::once(1).chain(gpus.iter().copied()).collect();
    counts.retain(|&c| c > 0);
    counts.sort_unstable();
    counts.dedup();
    let mut lists = Vec::new();
    let mut notes = Vec::new();
    for c in counts {
        if c > available.len() {
            notes.push(format!(
                "--gpus {c}: skipped, only {} CUDA device(s) here",
                available.len()
            ));
        } else {
            lists.push((c, available[..c].to_vec()));
        }
    }
    (lists, notes)
}

/// Rayon's time at `n` keys from its time `ms_at_m` at `m` keys, scaled by n log2 n (the
/// work of a comparison sort).
pub fn scale_n_log_n(ms_at_m: f64, m: usize, n: usize) -> f64 {
    let work = |k: usize| k as f64 * (k.max(2) as f64).log2();
    ms_at_m * work(n) / work(m)
}

/// The size rayon is timed at for an input of `n` keys.
pub fn rayon_size(n: usize) -> usize {
    if n > RAYON_DIRECT_MAX {
        RAYON_SCALED_FROM
    } else {
        n
    }
}

/// Untimed and timed runs for an input of `bytes`.
pub fn scaling_runs(cfg: &CompareConfig, bytes: usize) -> (usize, usize) {
    if bytes >= HUGE_BYTES {
        (1, HUGE_RUNS)
    } else {
        (1, cfg.roundtrip_runs.max(1))
    }
}

/// Whether `case` is measured here when `--gpus` is given.
pub fn is_scaling_case(case: Case) -> bool {
    matches!(case, Case::U32 | Case::Kv | Case::U64 | Case::Kv64)
}

/// The target over the first N CUDA devices, with notes for the counts skipped.
pub fn cuda_target(cfg: &CompareConfig) -> (Option<Target>, Vec<String>) {
    let available: Vec<usize> = bitonic::devices()
        .into_iter()
        .filter(|b| b.backend == BackendKind::Cuda && b.unavailable.is_none())
        .flat_map(|b| b.devices.into_iter().map(|d| d.index))
        .collect();
    if available.is_empty() {
        return (
            None,
            vec!["--gpus: no CUDA device here; only rayon is measured".into()],
        );
    }
    let (lists, notes) = device_lists(&available, &cfg.gpus);
    let target = Target {
        backend: BackendKind::Cuda,
        lists,
        // Every size is spread over the listed GPUs: the library's default spreads only
        // slices past one GPU's memory.
        split_from: Some(0),
        memory_limit: None,
    };
    (Some(target), notes)
}

/// Measures `case` at every size of `cfg` on `target` (none: rayon alone) and prints its
/// table.
pub(super) fn run_case(
    cfg: &CompareConfig,
    case: Case,
    target: Option<&Target>,
    failures: &mut Failures,
) -> Vec<ScalingRow> {
    println!(
        "   host round trip from a Vec over the first N GPUs (partition pass included); \
         speedup = 1-GPU ms / N-GPU ms, efficiency = speedup / N; checked by sortedness and \
         a fingerprint of the (key, value) multiset"
    );
    println!(
        "   {:>6} {:<10} {:>4} {:>5} {:>12} {:>12} {:>8} {:>6}  note",
        "n", "sorter", "gpus", "runs", "median ms", "min ms", "speedup", "eff"
    );
    let mut rows = Vec::new();
    for (i, &n) in cfg.sizes.iter().enumerate() {
        let seed = cfg.seed ^ ((i as u64 + 1) << 32) ^ 0x5CA1_0000_0000_0000;
        let new_rows = match case {
            Case::U32 => measure_size::<u32, u32>(cfg, case, n, false, seed, target, failures),
            Case::Kv => measure_size::<u32, u32>(cfg, case, n, true, seed, target, failures),
            Case::U64 => measure_size::<u64, u32>(cfg, case, n, false, seed, target, failures),
            Case::Kv64 => measure_size::<u64, u64>(cfg, case, n, true, seed, target, failures),
            _ => Vec::new(),
        };
        print_rows(&new_rows);
        rows.extend(new_rows);
    }
    rows
}

/// Keys of the cases measured here: made at random, compared, folded into a fingerprint.
pub trait ScalingKey: SortKey + Ord + bytemuck::Pod + Send + Sync + Into<u64> {
    /// A random key.
    fn random(rng: &mut StdRng) -> Self;
}

impl ScalingKey for u32 {
    fn random(rng: &mut StdRng) -> Self {
        rng.r#gen()
    }
}

impl ScalingKey for u64 {
    fn random(rng: &mut StdRng) -> Self {
        rng.r#gen()
    }
}

/// Values of the cases measured here: each input position's own, folded into a fingerprint.
pub trait ScalingValue: bytemuck::Pod + Send + Sync + Into<u64> {
    /// The value of position `i`.
    fn at(i: usize) -> Self;
}

impl ScalingValue for u32 {
    fn at(i: usize) -> Self {
        i as u32
    }
}

impl ScalingValue for u64 {
    fn at(i: usize) -> Self {
        i as u64
    }
}

/// Elements made per seeded chunk of the input (the same input for any thread count).
const CHUNK: usize = 1 << 20;

/// `n` random keys (and values `0..n` when `with_values`), made in parallel.
pub fn make_input<K: ScalingKey, V: ScalingValue>(
    n: usize,
    with_values: bool,
    seed: u64,
) -> (Vec<K>, Option<Vec<V>>) {
    // Zeroed pages from the allocator, each first touched by the thread that fills it: at
    // 2^34 keys a sequential pass over the memory takes longer than the sorts.
    let mut keys: Vec<K> = bytemuck::zeroed_vec(n);
    keys.par_chunks_mut(CHUNK).enumerate().for_each(|(c, out)| {
        let mut rng = StdRng::seed_from_u64(seed ^ (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        out.iter_mut().for_each(|k| *k = K::random(&mut rng));
    });
    let values = with_values.then(|| (0..n).into_par_iter().map(V::at).collect());
    (keys, values)
}

/// A 64-bit mix of one word (splitmix64's finaliser).
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A fingerprint of the multiset of (key, value) pairs, the same for any order: the
/// wrapping sum and the xor of a mix of each pair.
pub fn fingerprint<K: ScalingKey, V: ScalingValue>(keys: &[K], values: Option<&[V]>) -> (u64, u64) {
    let one = |k: K, v: u64| mix(mix(k.into()) ^ v.wrapping_mul(0xD6E8_FEB8_6659_FD93));
    let fold = |(s, x): (u64, u64), h: u64| (s.wrapping_add(h), x ^ h);
    let join = |a: (u64, u64), b: (u64, u64)| (a.0.wrapping_add(b.0), a.1 ^ b.1);
    match values {
        Some(v) => keys
            .par_iter()
            .zip(v.par_iter())
            .map(|(&k, &v)| one(k, v.into().wrapping_add(1)))
            .fold(|| (0, 0), fold)
            .reduce(|| (0, 0), join),
        None => keys
            .par_iter()
            .map(|&k| one(k, 0))
            .fold(|| (0, 0), fold)
            .reduce(|| (0, 0), join),
    }
}

/// Whether `keys` ascend.
pub fn ascends<K: ScalingKey>(keys: &[K]) -> bool {
    keys.par_windows(2).all(|w| w[0] <= w[1])
}

/// Copies `src` into `dst` in parallel (both the same length).
fn copy_into<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    dst.par_chunks_mut(CHUNK)
        .zip(src.par_chunks(CHUNK))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// Every row of one case and size: N GPUs for each device list of `target`, then rayon.
#[allow(clippy::too_many_arguments)]
fn measure_size<K: ScalingKey, V: ScalingValue>(
    cfg: &CompareConfig,
    case: Case,
    n: usize,
    with_values: bool,
    seed: u64,
    target: Option<&Target>,
    failures: &mut Failures,
) -> Vec<ScalingRow> {
    let value_bytes = if with_values {
        std::mem::size_of::<V>()
    } else {
        0
    };
    let bytes = n * (std::mem::size_of::<K>() + value_bytes);
    let (warmup, runs) = scaling_runs(cfg, bytes);
    let (keys, values) = make_input::<K, V>(n, with_values, seed);
    let expected = fingerprint(&keys, values.as_deref());
    let row = |sorter: &str, gpus: usize| ScalingRow {
        case: case.name(),
        n,
        sorter: sorter.into(),
        gpus,
        ms: Vec::new(),
        scaled_from: None,
        note: String::new(),
    };
    let mut out = Vec::new();
    // One work buffer for every sorter of this size, filled before each run.
    let mut work_keys: Vec<K> = bytemuck::zeroed_vec(n);
    let mut work_values: Option<Vec<V>> = values.as_ref().map(|v| bytemuck::zeroed_vec(v.len()));
    for (gpus, list) in target.map(|t| t.lists.as_slice()).unwrap_or_default() {
        let mut r = row(OURS, *gpus);
        let t = target.expect("lists come from a target");
        let mut builder = Sorter::builder()
            .ignore_env()
            .backend(t.backend)
            .devices(list);
        if let Some(s) = t.split_from {
            builder = builder.split_from(s);
        }
        if let Some(limit) = t.memory_limit {
            builder = builder.device_memory_limit(limit);
        }
        let sorter = match builder.build() {
            Ok(s) => s,
            Err(e) => {
                r.note = format!("error: {e}");
                failures.errors += 1;
                out.push(r);
                continue;
            }
        };
        for run in 0..warmup + runs {
            copy_into(&mut work_keys, &keys);
            if let (Some(w), Some(v)) = (&mut work_values, &values) {
                copy_into(w, v);
            }
            let start = Instant::now();
            let result = match &mut work_values {
                Some(w) => sorter.sort_by_key(&mut work_keys, w, Order::Ascending),
                None => sorter.sort(&mut work_keys, Order::Ascending),
            };
            let ms = start.elapsed().as_secs_f64() * 1e3;
            if let Err(e) = result {
                r.note = format!("error: {e}");
                failures.errors += 1;
                r.ms.clear();
                break;
            }
            if run >= warmup {
                r.ms.push(ms);
            }
        }
        if r.note.is_empty() {
            check(
                &work_keys,
                work_values.as_deref(),
                expected,
                &mut r,
                failures,
            );
        }
        out.push(r);
    }
    if target.is_some_and(|t| t.lists.len() > 1) {
        partition_phases::print(&keys, values.as_deref());
    }
    if !skips_name(cfg, RAYON) {
        out.push(time_rayon(
            &keys,
            values.as_deref(),
            &mut work_keys,
            work_values.as_deref_mut(),
            (warmup, runs),
            row(RAYON, 0),
            failures,
        ));
    }
    out
}

/// Checks the sorted buffers against the input's fingerprint.
fn check<K: ScalingKey, V: ScalingValue>(
    keys: &[K],
    values: Option<&[V]>,
    expected: (u64, u64),
    r: &mut ScalingRow,
    failures: &mut Failures,
) {
    let what = format!(
        "{} {} at {} on {} GPU(s)",
        r.sorter,
        r.case,
        size_label(r.n),
        r.gpus
    );
    if !ascends(keys) {
        r.note = "WRONG: not sorted".into();
        failures.wrong.push(format!("{what}: not sorted"));
    } else if fingerprint(keys, values) != expected {
        r.note = "WRONG: keys or values changed".into();
        failures
            .wrong
            .push(format!("{what}: keys or values changed"));
    }
}

/// Rayon's `par_sort_unstable` (pairs: by key) on the input, or on its first
/// [`RAYON_SCALED_FROM`] keys scaled by n log n. Uses the work buffers' front as its buffer
/// for keys alone; pairs are zipped into a buffer of their own (of the measured size).
fn time_rayon<K: ScalingKey, V: ScalingValue>(
    keys: &[K],
    values: Option<&[V]>,
    work_keys: &mut [K],
    work_values: Option<&mut [V]>,
    (warmup, runs): (usize, usize),
    mut r: ScalingRow,
    failures: &mut Failures,
) -> ScalingRow {
    let n = keys.len();
    let m = rayon_size(n);
    let mut ms = Vec::new();
    match values {
        Some(values) => {
            let pristine: Vec<(K, V)> = keys[..m]
                .par_iter()
                .copied()
                .zip(values[..m].par_iter().copied())
                .collect();
            let mut pairs = pristine.clone();
            for run in 0..warmup + runs {
                copy_into(&mut pairs, &pristine);
                let start = Instant::now();
                pairs.par_sort_unstable_by_key(|p| p.0);
                if run >= warmup {
                    ms.push(start.elapsed().as_secs_f64() * 1e3);
                }
            }
            drop(pristine);
            let work_values = work_values.expect("values come with a work buffer");
            work_keys[..m]
                .par_iter_mut()
                .zip(work_values[..m].par_iter_mut())
                .zip(pairs.par_iter())
                .for_each(|((k, v), p)| (*k, *v) = *p);
            let expected = fingerprint(&keys[..m], Some(&values[..m]));
            check(
                &work_keys[..m],
                Some(&work_values[..m]),
                expected,
                &mut r,
                failures,
            );
        }
        None => {
            let buf = &mut work_keys[..m];
            for run in 0..warmup + runs {
                copy_into(buf, &keys[..m]);
                let start = Instant::now();
                buf.par_sort_unstable();
                if run >= warmup {
                    ms.push(start.elapsed().as_secs_f64() * 1e3);
                }
            }
            let expected = fingerprint::<K, V>(&keys[..m], None);
            check::<K, V>(buf, None, expected, &mut r, failures);
        }
    }
    if m < n {
        r.ms = ms.iter().map(|&t| scale_n_log_n(t, m, n)).collect();
        r.scaled_from = Some(m);
        if r.note.is_empty() {
            r.note = format!("SCALED: timed at {} keys, x n log n", size_label(m));
        }
    } else {
        r.ms = ms;
    }
    r
}

/// The 1-GPU median of the rows of the same case and size as `r`.
fn base_ms(rows: &[ScalingRow], r: &ScalingRow) -> Option<f64> {
    rows.iter()
        .find(|b| b.sorter == OURS && b.gpus == 1 && b.case == r.case && b.n == r.n)
        .map(ScalingRow::median_ms)
        .filter(|t| t.is_finite() && *t > 0.0)
}

/// Speedup over one GPU and efficiency (speedup / N) of a row of ours.
pub fn speedup(rows: &[ScalingRow], r: &ScalingRow) -> Option<(f64, f64)> {
    if r.sorter != OURS || r.gpus == 0 {
        return None;
    }
    let s = base_ms(rows, r)? / r.median_ms();
    s.is_finite().then(|| (s, s / r.gpus as f64))
}

fn print_rows(rows: &[ScalingRow]) {
    for r in rows {
        let (s, e) = speedup(rows, r)
            .map(|(s, e)| (format!("{s:.2}x"), format!("{:.0}%", e * 100.0)))
            .unwrap_or(("-".into(), "-".into()));
        let gpus = if r.gpus == 0 {
            "-".into()
        } else {
            r.gpus.to_string()
        };
        let sorter = match r.scaled_from {
            Some(_) => format!("{}*", r.sorter),
            None => r.sorter.clone(),
        };
        println!(
            "   {:>6} {:<10} {:>4} {:>5} {:>12.1} {:>12.1} {:>8} {:>6}  {}",
            size_label(r.n),
            sorter,
            gpus,
            r.ms.len(),
            r.median_ms(),
            minimum(&r.ms),
            s,
            e,
            r.note
        );
    }
}

/// Where the scaling CSV goes: beside `csv`, `-scaling` added to its stem.
pub fn csv_path(csv: &Path) -> PathBuf {
    let stem = csv
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("bench-compare");
    csv.with_file_name(format!("{stem}-scaling.csv"))
}

/// Writes the scaling rows as CSV.
pub fn write_csv(path: &Path, rows: &[ScalingRow]) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(
        f,
        "case,n,sorter,gpus,runs,median_ms,min_ms,speedup,efficiency,rayon_scaled_from,note"
    )?;
    for r in rows {
        let (s, e) = speedup(rows, r).unwrap_or((f64::NAN, f64::NAN));
        writeln!(
            f,
            "{},{},{},{},{},{:.3},{:.3},{:.4},{:.4},{},{}",
            r.case,
            r.n,
            r.sorter,
            r.gpus,
            r.ms.len(),
            r.median_ms(),
            minimum(&r.ms),
            s,
            e,
            r.scaled_from.map(|m| m.to_string()).unwrap_or_default(),
            r.note.replace(',', ";")
        )?;
    }
    f.flush()
}
