//! What the float-key cases (`topk`, `bf16`) share: the key types with their device calls,
//! the input, the CPU models the results are checked against, and wall-clock timing.

use std::cmp::Ordering;

use half::bf16;

use super::*;
use crate::device_timing::DeviceKey;
use crate::torch::{FloatDtype, FloatOp, Timing, TorchPeer};

/// A float key type of the float cases: `f32` or `bf16`.
pub(super) trait FloatKey: SortKey + DeviceKey + std::fmt::Debug {
    /// The dtype torch gets.
    const DTYPE: FloatDtype;
    /// The type's name in tables and the CSV.
    const NAME: &'static str;

    /// The nearest key to `x`.
    fn of_f32(x: f32) -> Self;

    /// The crate's order: IEEE 754 `totalOrder`.
    fn total_order(&self, other: &Self) -> Ordering;
}

/// One run of a case: the configuration, the entries it measures and the failures it
/// counts, which every measurement of the case takes.
pub(super) struct CaseRun<'a> {
    pub(super) cfg: &'a CompareConfig,
    pub(super) entries: &'a [Entry],
    pub(super) failures: &'a mut Failures,
}

impl<'a> CaseRun<'a> {
    pub(super) fn new(
        cfg: &'a CompareConfig,
        entries: &'a [Entry],
        failures: &'a mut Failures,
    ) -> Self {
        CaseRun {
            cfg,
            entries,
            failures,
        }
    }

    /// The rows of `measure` at each of `sizes`, the `i`-th seeded from the configuration's
    /// seed, `case` and `first_index + i`, so that every size of every part of a case (each
    /// part with its own `first_index`) sorts keys of its own.
    pub(super) fn at_sizes(
        &mut self,
        case: Case,
        sizes: &[usize],
        first_index: u64,
        measure: impl Fn(&mut CaseRun<'a>, usize, u64) -> Vec<Row>,
    ) -> Vec<Row> {
        let mut out = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let seed = self.cfg.seed ^ ((i as u64 + first_index) << 32) ^ (case_id(case) << 56);
            out.extend(measure(self, n, seed));
        }
        out
    }
}

/// Milliseconds of each of our device-resident runs and the last one's output, or why they
/// failed; `None` where the sorter has no device-resident timing of the keys.
pub(super) type DeviceTimed<T> = Option<Result<(Vec<f64>, T), String>>;

/// Times our device-resident sort of a copy of `keys` in rows of `row_len` (ascending; 0:
/// one array), with the sorted copy; `None` where `sorter` has no device-resident sort of `K`
/// keys.
pub(super) fn device_sort<K: FloatKey>(
    sorter: &Sorter,
    keys: &[K],
    row_len: usize,
    cfg: &CompareConfig,
) -> DeviceTimed<Vec<K>> {
    if !on_device(sorter) {
        return None;
    }
    let mut sorted = keys.to_vec();
    let (warmup, runs) = (cfg.warmup, cfg.runs);
    let timed =
        device_timing::time_sort_keys(sorter, &mut sorted, None, row_len, warmup, runs, cfg.cuda)?;
    Some(timed.map(|ms| (ms, sorted)))
}

/// Times our device-resident top-k (largest first) of every row of `row_len`, with the last
/// run's values and indices; `None` where this build or the device has none for `K` keys.
pub(super) fn device_top_k<K: FloatKey>(
    sorter: &Sorter,
    keys: &[K],
    row_len: usize,
    k: usize,
    cfg: &CompareConfig,
) -> DeviceTimed<(Vec<K>, Vec<u32>)> {
    let order = bitonic::Order::Descending;
    let (warmup, runs) = (cfg.warmup, cfg.runs);
    let timed = on_device(sorter).then(|| {
        device_timing::time_top_k(sorter, keys, row_len, k, order, warmup, runs, cfg.cuda)
    });
    Some(
        timed
            .flatten()?
            .map(|(ms, values, indices)| (ms, (values, indices))),
    )
}

/// The device-resident times of `got` (a [`device_sort`] or [`device_top_k`] by `sorter`)
/// whose output passed `check`, as [`timed_and_checked`] gives them; none where `sorter` has
/// no device-resident timing of `K` keys, which is noted.
pub(super) fn device_checked<K: FloatKey, T>(
    sorter: &Sorter,
    got: DeviceTimed<T>,
    check: impl FnOnce(&T) -> Result<(), String>,
    what: &str,
    failures: &mut Failures,
    notes: &mut Vec<String>,
) -> Option<Vec<f64>> {
    match got {
        Some(got) => timed_and_checked(got, check, what, "device", failures, notes),
        None => {
            notes.push(no_device_note::<K>(sorter));
            None
        }
    }
}

impl FloatKey for f32 {
    const DTYPE: FloatDtype = FloatDtype::F32;
    const NAME: &'static str = "f32";

    fn of_f32(x: f32) -> Self {
        x
    }

    fn total_order(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
}

impl FloatKey for bf16 {
    const DTYPE: FloatDtype = FloatDtype::Bf16;
    const NAME: &'static str = "bf16";

    fn of_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }

    fn total_order(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
}

/// `n` keys spread evenly over [-8, 8) from the seeded generator: values such as logits,
/// with no NaN and no negative zero (torch orders -0.0 and +0.0 as equal, the crate does not,
/// so their relative order would be a difference of definitions, not an error). `bf16`
/// rounds them to 8 significant bits: many ties.
pub(super) fn float_keys<K: FloatKey>(n: usize, seed: u64) -> Vec<K> {
    random_words::<u32>(n, seed)
        .into_par_iter()
        .map(|w| K::of_f32((w >> 8) as f32 * (1.0 / (1u32 << 20) as f32) - 8.0))
        .collect()
}

/// Every row of `row_len` keys sorted ascending in the crate's order (the CPU's model of a
/// rows sort).
pub(super) fn sorted_rows<K: FloatKey>(keys: &[K], row_len: usize) -> Vec<K> {
    let mut out = keys.to_vec();
    out.par_chunks_mut(row_len)
        .for_each(|row| row.sort_unstable_by(K::total_order));
    out
}

/// The CPU's top-k: for every row, the `k` largest keys, largest first, equal keys by lower
/// position first, and their positions within the row.
pub(super) fn top_k_model<K: FloatKey>(keys: &[K], row_len: usize, k: usize) -> (Vec<K>, Vec<u32>) {
    let rows: Vec<Vec<u32>> = keys
        .par_chunks(row_len)
        .map(|row| {
            let better = |a: &u32, b: &u32| {
                row[*b as usize]
                    .total_order(&row[*a as usize])
                    .then(a.cmp(b))
            };
            let mut positions: Vec<u32> = (0..row.len() as u32).collect();
            if k < positions.len() {
                positions.select_nth_unstable_by(k - 1, better);
                positions.truncate(k);
            }
            positions.sort_unstable_by(better);
            positions
        })
        .collect();
    let values = keys
        .par_chunks(row_len)
        .zip(&rows)
        .flat_map_iter(|(row, positions)| positions.iter().map(|&p| row[p as usize]))
        .collect();
    (values, rows.concat())
}

/// The first position where two key slices differ bit for bit, described; `what` names
/// the compared slices.
pub(super) fn same_keys<K: FloatKey>(got: &[K], want: &[K], what: &str) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{} {what} came back, {} expected",
            got.len(),
            want.len()
        ));
    }
    let bytes = std::mem::size_of::<K>();
    let (g, w): (&[u8], &[u8]) = (bytemuck::cast_slice(got), bytemuck::cast_slice(want));
    match g
        .par_chunks(bytes)
        .zip(w.par_chunks(bytes))
        .position_first(|(a, b)| a != b)
    {
        Some(i) => Err(format!(
            "{what}[{i}] is {:?}, the CPU's model has {:?}",
            got[i], want[i]
        )),
        None => Ok(()),
    }
}

/// Checks a top-k whose tie order is not defined (torch's): every row's values, as a
/// multiset, must be the model's.
pub(super) fn same_values_per_row<K: FloatKey>(
    got: &[K],
    want: &[K],
    k: usize,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{} values came back, {} expected",
            got.len(),
            want.len()
        ));
    }
    let bad = got
        .par_chunks(k)
        .zip(want.par_chunks(k))
        .position_first(|(g, w)| {
            let mut g = g.to_vec();
            let mut w = w.to_vec();
            g.sort_unstable_by(K::total_order);
            w.sort_unstable_by(K::total_order);
            bytemuck::cast_slice::<K, u8>(&g) != bytemuck::cast_slice::<K, u8>(&w)
        });
    match bad {
        Some(r) => Err(format!(
            "row {r}: other values than the CPU's top {k} (first {:?}, expected {:?})",
            got[r * k],
            want[r * k]
        )),
        None => Ok(()),
    }
}

/// Wall-clock times of `run` on `state`: `warmup` untimed runs, then `runs` timed ones, each
/// after `prepare` (untimed); the last run's result.
pub(super) fn time_wall<S, T>(
    (warmup, runs): (usize, usize),
    state: &mut S,
    prepare: impl Fn(&mut S),
    mut run: impl FnMut(&mut S) -> Result<T, String>,
) -> Result<(Vec<f64>, T), String> {
    let mut ms = Vec::with_capacity(runs);
    let mut last = None;
    for i in 0..warmup + runs.max(1) {
        prepare(state);
        drop(last.take()); // the previous result goes before the next run allocates its own
        let start = Instant::now();
        let out = run(state)?;
        let elapsed = start.elapsed().as_secs_f64() * 1e3;
        last = Some(out);
        if i >= warmup {
            ms.push(elapsed);
        }
    }
    let last = last.ok_or("no run")?;
    Ok((ms, last))
}

/// Wall-clock times of `sort` on a copy of `keys`, restored before each run (see
/// [`time_wall`]), with the last run's output.
pub(super) fn time_sorts<K: FloatKey>(
    runs: (usize, usize),
    keys: &[K],
    mut sort: impl FnMut(&mut [K]) -> Result<(), bitonic::Error>,
) -> Result<(Vec<f64>, Vec<K>), String> {
    let mut work = keys.to_vec();
    let restore = |w: &mut Vec<K>| w.copy_from_slice(keys);
    let (ms, ()) = time_wall(runs, &mut work, restore, |w| {
        sort(w).map_err(|e| e.to_string())
    })?;
    Ok((ms, work))
}

/// Wall-clock times of `call`, with nothing to prepare between runs (see [`time_wall`]).
pub(super) fn time_calls<T, E: ToString>(
    runs: (usize, usize),
    mut call: impl FnMut() -> Result<T, E>,
) -> Result<(Vec<f64>, T), String> {
    time_wall(runs, &mut (), |_| {}, |_| call().map_err(|e| e.to_string()))
}

/// How torch's rows are timed, each with the stage its notes name.
pub(super) const TORCH_TIMINGS: [(Timing, &str); 3] = [
    (Timing::Device, "device"),
    (Timing::PageableTrip, "round trip"),
    (Timing::PinnedTrip, "pinned round trip"),
];

/// torch's times of `op` on `keys` in rows of `row_len` as `timing` says (`cfg`'s runs on
/// the device, its round-trip runs for `keys` otherwise) and its last output; the script's
/// note, where it has one, goes to `notes`.
pub(super) fn time_torch<K: FloatKey>(
    peer: &TorchPeer,
    op: FloatOp,
    timing: Timing,
    keys: &[K],
    row_len: usize,
    cfg: &CompareConfig,
    notes: &mut Vec<String>,
) -> Result<(Vec<f64>, Vec<K>), String> {
    let (warmup, runs) = match timing {
        Timing::Device => (cfg.warmup, cfg.runs),
        _ => cfg.trip_runs(std::mem::size_of_val(keys)),
    };
    let (ms, out, note) = peer.time_float(op, timing, K::DTYPE, keys, row_len, warmup, runs)?;
    if !note.is_empty() {
        notes.push(truncate(&note, 120));
    }
    Ok((ms, out))
}

/// The times of `row` that `timing` measures.
pub(super) fn torch_times(row: &mut Row, timing: Timing) -> &mut Vec<f64> {
    match timing {
        Timing::Device => &mut row.device_ms,
        Timing::PageableTrip => &mut row.roundtrip_ms,
        Timing::PinnedTrip => &mut row.pinned_ms,
    }
}

/// A row of `sorter` on `entry`'s device for `case` and `n` keys of `key_bytes`, nothing
/// measured yet; none where the entry skips that size, the reason printed.
pub(super) fn row_unless_skipped(
    case: &str,
    sorter: &str,
    entry: &Entry,
    cfg: &CompareConfig,
    n: usize,
    key_bytes: usize,
) -> Option<Row> {
    let row = new_row(case, sorter, &entry.device, n);
    match entry.skip_reason(cfg, n, key_bytes) {
        Some(why) => {
            print_row(&row, None, &why);
            None
        }
        None => Some(row),
    }
}

/// A row of `sorter` on `device` for `case` and `n`, nothing measured yet.
pub(super) fn new_row(case: &str, sorter: &str, device: &str, n: usize) -> Row {
    Row {
        case: case.to_string(),
        sorter: sorter.to_string(),
        device: device.to_string(),
        label: format!("{sorter} {device}"),
        n,
        device_ms: Vec::new(),
        roundtrip_ms: Vec::new(),
        pinned_ms: Vec::new(),
    }
}

/// The times of a measurement whose output passed `check`; none when it failed to run (an
/// error, counted, with its note) or its check failed (recorded loudly).
pub(super) fn timed_and_checked<T>(
    got: Result<(Vec<f64>, T), String>,
    check: impl FnOnce(&T) -> Result<(), String>,
    what: &str,
    stage: &str,
    failures: &mut Failures,
    notes: &mut Vec<String>,
) -> Option<Vec<f64>> {
    match got {
        Ok((ms, out)) => record_check(check(&out), what, stage, failures, notes).then_some(ms),
        Err(e) => {
            failures.errors += 1;
            notes.push(error_note(what, &format!("{stage} error"), &e));
            None
        }
    }
}

/// Whether `sorter` has device events to time with (not the CPU backend, which the tests
/// use for round trips).
pub(super) fn on_device(sorter: &Sorter) -> bool {
    sorter.device().backend != BackendKind::Cpu
}

/// The note of a row whose device-resident time `sorter`'s backend cannot give for `K`.
pub(super) fn no_device_note<K: FloatKey>(sorter: &Sorter) -> String {
    format!(
        "no device-resident {} keys on {}",
        K::NAME,
        sorter.device().backend
    )
}

/// Our device entries of a case that is not about the sorting network: the default mode
/// of each device (the oblivious mode sorts; it selects no differently).
pub(super) fn our_sorters(entries: &[Entry]) -> impl Iterator<Item = (&Entry, &Sorter)> {
    entries.iter().filter_map(|e| match &e.runner {
        Runner::Ours(s) if e.sorter == "bitonic" => Some((e, s)),
        _ => None,
    })
}
