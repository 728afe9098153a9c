//! Measuring one sorter on one input: the device-resident time, the host round trip and the
//! check of every result.

use super::*;
use crate::torch::Timing;

/// Random words from a seed, filled in parallel chunks (the same words for any thread
/// count).
pub(super) fn random_words<W: Word>(n: usize, seed: u64) -> Vec<W>
where
    Standard: Distribution<W>,
{
    const CHUNK: usize = 1 << 18;
    let mut out = vec![W::ZERO; n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut rng =
                rand::rngs::StdRng::seed_from_u64(seed.wrapping_add(i as u64 * 0x9E37_79B9));
            for w in chunk {
                *w = rng.r#gen();
            }
        });
    out
}

/// Random words rearranged into `pattern`: `random` as they are, `sorted`, `reversed`, `few`
/// (only their two lowest bits kept: four distinct keys) or `organ` (the sorted words'
/// even ranks ascending, then the odd ranks descending).
pub(super) fn arrange<W: Word>(mut words: Vec<W>, pattern: &str) -> Vec<W> {
    match pattern {
        "sorted" => words.par_sort_unstable(),
        "reversed" => {
            words.par_sort_unstable();
            words.reverse();
        }
        "few" => {
            let mut mask = W::ZERO;
            bytemuck::bytes_of_mut(&mut mask)[0] = 3;
            words.par_iter_mut().for_each(|w| *w = *w & mask);
        }
        "organ" => {
            words.par_sort_unstable();
            let up = words.iter().step_by(2).copied();
            let down = words.iter().skip(1).step_by(2).rev().copied();
            words = up.chain(down).collect();
        }
        _ => {}
    }
    words
}

/// The input of one case and size, and the CPU's sort of it.
pub(super) struct Input<W> {
    pub(super) keys: Vec<W>,
    /// `0..n` as u32, so that each value names its key's input position.
    pub(super) values: Option<Vec<u32>>,
    pub(super) row_len: usize,
    pub(super) want: Vec<W>,
}

impl<W: Word> Input<W> {
    /// Checks sorted output against the CPU's sort: keys equal word for word; each value,
    /// when present, is a distinct input position whose key is the key next to it.
    pub(super) fn check(&self, keys: &[W], values: Option<&[u32]>) -> Result<(), String> {
        if keys.len() != self.want.len() {
            return Err(format!(
                "{} keys came back, {} expected",
                keys.len(),
                self.want.len()
            ));
        }
        if let Some(i) = keys
            .par_iter()
            .zip(&self.want)
            .position_first(|(a, b)| a != b)
        {
            return Err(format!(
                "key {i} is {:?}, the CPU's sort has {:?}",
                keys[i], self.want[i]
            ));
        }
        match (values, &self.values) {
            (None, None) => Ok(()),
            (Some(values), Some(_)) => {
                if values.len() != keys.len() {
                    return Err(format!("{} values for {} keys", values.len(), keys.len()));
                }
                let seen: Vec<AtomicU64> = (0..keys.len().div_ceil(64))
                    .map(|_| AtomicU64::new(0))
                    .collect();
                let bad = values.par_iter().enumerate().find_first(|&(i, &v)| {
                    let v = v as usize;
                    if v >= keys.len() || self.keys[v] != keys[i] {
                        return true;
                    }
                    let bit = 1u64 << (v % 64);
                    seen[v / 64].fetch_or(bit, Ordering::Relaxed) & bit != 0
                });
                match bad {
                    Some((i, v)) => Err(format!(
                        "value {i} is {v}: not the input position of key {:?}, or repeated",
                        keys[i]
                    )),
                    None => Ok(()),
                }
            }
            _ => Err("values missing from the result".into()),
        }
    }
}

/// Measures every entry on one case and size, printing a row each.
#[allow(clippy::too_many_arguments)]
pub(super) fn measure<W: CubKey + SortKey>(
    cfg: &CompareConfig,
    case: Case,
    n: usize,
    with_values: bool,
    row_len: usize,
    seed: u64,
    entries: &[Entry],
    failures: &mut Failures,
) -> Vec<Row>
where
    Standard: Distribution<W>,
{
    if with_values && n > u32::MAX as usize {
        println!(
            "{:>6}  skipped: values are u32 positions, n must be below 2^32",
            size_label(n)
        );
        return Vec::new();
    }
    let keys: Vec<W> = arrange(random_words(n, seed), &cfg.pattern);
    let mut want = keys.clone();
    if row_len > 0 {
        want.par_chunks_mut(row_len).for_each(|r| r.sort_unstable());
    } else {
        want.par_sort_unstable();
    }
    let input = Input {
        values: with_values.then(|| (0..n as u32).collect()),
        keys,
        row_len,
        want,
    };
    let bytes_per_key = std::mem::size_of::<W>() + if with_values { 4 } else { 0 };
    let reference = reference(entries);
    let mut reference_ms: Option<f64> = None;
    let mut out = Vec::new();
    for (e_index, entry) in entries.iter().enumerate() {
        if !runs_case(entry, case) {
            continue;
        }
        let mut row = Row {
            case: case.name(),
            sorter: entry.sorter.clone(),
            device: entry.device.clone(),
            label: entry.label(),
            n,
            device_ms: Vec::new(),
            roundtrip_ms: Vec::new(),
            pinned_ms: Vec::new(),
        };
        let mut notes: Vec<String> = Vec::new();
        if let Some(why) = entry.skip_reason(cfg, n, bytes_per_key) {
            print_row(&row, None, &why);
            continue;
        }
        let what = format!("{} on case {}, n = {n}", entry.label(), case.name());
        match &entry.runner {
            Runner::Ours(sorter) => {
                let got = time_ours(sorter, &input, cfg.warmup, cfg.runs, cfg.cuda);
                if let Some(ms) = measured(
                    &input,
                    got,
                    "device",
                    "device timing error",
                    &what,
                    failures,
                    &mut notes,
                ) {
                    row.device_ms = ms;
                }
                let trips = cfg.trip_runs(n * bytes_per_key);
                for pinned in [false, true] {
                    let got = if pinned {
                        roundtrip_pinned_ours(sorter, &input, trips)
                    } else {
                        roundtrip_ours(sorter, &input, trips)
                    };
                    let stage = trip_stage(pinned);
                    let got = got.map_err(|e| e.to_string());
                    let kind = format!("{stage} error");
                    if let Some(ms) =
                        measured(&input, got, stage, &kind, &what, failures, &mut notes)
                    {
                        *row.trip_ms(pinned) = ms;
                    }
                }
            }
            Runner::Cpu => {
                let timed = time_cpu(&input, cfg.warmup, cfg.runs);
                if let Some(ms) = checked_times(&input, timed, &what, "cpu", failures, &mut notes) {
                    row.roundtrip_ms = ms.clone();
                    row.device_ms = ms;
                }
            }
            Runner::Cub(device, algo) => {
                let got = cub::time(
                    device,
                    *algo,
                    &input.keys,
                    input.values.as_deref(),
                    row_len,
                    cfg.warmup,
                    cfg.runs,
                    cfg.cuda.hold,
                );
                if let Some(ms) =
                    measured(&input, got, "device", "error", &what, failures, &mut notes)
                {
                    row.device_ms = ms;
                }
            }
            Runner::Torch(peer) => {
                let got = peer.time(
                    Timing::Device,
                    &input.keys,
                    input.values.as_deref(),
                    row_len,
                    cfg.warmup,
                    cfg.runs,
                );
                let mut note = String::new();
                let got = got.map(|(timed, n)| {
                    note = n;
                    timed
                });
                if let Some(ms) =
                    measured(&input, got, "device", "error", &what, failures, &mut notes)
                {
                    row.device_ms = ms;
                }
                if !note.is_empty() {
                    notes.push(truncate(&note, 120));
                }
                let (warmup, runs) = cfg.trip_runs(n * bytes_per_key);
                for pinned in [false, true] {
                    let timing = if pinned {
                        Timing::PinnedTrip
                    } else {
                        Timing::PageableTrip
                    };
                    let got = peer.time(
                        timing,
                        &input.keys,
                        input.values.as_deref(),
                        row_len,
                        warmup,
                        runs,
                    );
                    let stage = trip_stage(pinned);
                    let got = got.map(|(timed, _)| timed);
                    if let Some(ms) =
                        measured(&input, got, stage, "error", &what, failures, &mut notes)
                    {
                        *row.trip_ms(pinned) = ms;
                    }
                }
            }
            // skip_reason has said why already; nothing to measure.
            Runner::TorchUnavailable(why) => notes.push(format!("unavailable: {why}")),
        }
        if !row.device_ms.is_empty() && reference == Some(e_index) {
            reference_ms = Some(median(&row.device_ms));
        }
        print_row(&row, reference_ms, &notes.join("; "));
        out.push(row);
    }
    out
}

/// The name of a round trip from ordinary or from pinned memory, in notes and check messages.
fn trip_stage(pinned: bool) -> &'static str {
    if pinned {
        "pinned round trip"
    } else {
        "round trip"
    }
}

/// The first line of an error for the row's note; the whole error goes to stderr when it
/// has more (an OpenCL build log, say).
pub(super) fn error_note(what: &str, kind: &str, error: &str) -> String {
    let first = error.lines().next().unwrap_or("");
    if error.lines().nth(1).is_some() {
        eprintln!("{what}: {kind}:\n{error}");
    }
    format!("{kind}: {}", truncate(first, 160))
}

/// The times of a measurement that ran and whose output passed the check; none when it
/// failed to run (an error, counted, with its note) or its check failed.
pub(super) fn measured<W: Word>(
    input: &Input<W>,
    got: Result<Timed<W>, String>,
    stage: &str,
    error_kind: &str,
    what: &str,
    failures: &mut Failures,
    notes: &mut Vec<String>,
) -> Option<Vec<f64>> {
    match got {
        Ok(timed) => checked_times(input, timed, what, stage, failures, notes),
        Err(e) => {
            failures.errors += 1;
            notes.push(error_note(what, error_kind, &e));
            None
        }
    }
}

/// The times of a run whose output passed the check against the CPU's sort; none when it
/// failed (recorded by [`record_check`]).
pub(super) fn checked_times<W: Word>(
    input: &Input<W>,
    (ms, keys, values): Timed<W>,
    what: &str,
    stage: &str,
    failures: &mut Failures,
    notes: &mut Vec<String>,
) -> Option<Vec<f64>> {
    record_check(
        input.check(&keys, values.as_deref()),
        what,
        stage,
        failures,
        notes,
    )
    .then_some(ms)
}

/// Records a failed check loudly: on stderr at once, in the row's note, and for the exit
/// status. Returns whether the check passed.
pub(super) fn record_check(
    result: Result<(), String>,
    what: &str,
    stage: &str,
    failures: &mut Failures,
    notes: &mut Vec<String>,
) -> bool {
    match result {
        Ok(()) => true,
        Err(e) => {
            eprintln!("\n!!! WRONG RESULT: {what} ({stage}): {e}\n");
            failures.wrong.push(format!("{what} ({stage}): {e}"));
            notes.push(format!("WRONG RESULT ({stage})"));
            false
        }
    }
}

/// Sorted output of one measurement: keys, and values when the case has them.
pub(super) type Sorted<W> = (Vec<W>, Option<Vec<u32>>);

/// Milliseconds of each timed run, and the sorted output of the last one.
pub(super) type Timed<W> = (Vec<f64>, Vec<W>, Option<Vec<u32>>);

/// Our device-resident time: the library's device-buffer calls between device events
/// (`src/device_timing`).
pub(super) fn time_ours<W: Word>(
    sorter: &Sorter,
    input: &Input<W>,
    warmup: usize,
    runs: usize,
    cuda: CudaOptions,
) -> Result<Timed<W>, String> {
    let mut keys = input.keys.clone();
    let mut values = input.values.clone();
    let ms = device_timing::time_sort(
        sorter,
        W::words_mut(&mut keys),
        values.as_deref_mut(),
        input.row_len,
        warmup,
        runs,
        cuda,
    )?;
    Ok((ms, keys, values))
}

/// Our host round trip: the wall clock of `Sorter::sort` / `sort_by_key` (rows:
/// `sort_rows` / `sort_rows_by_key`) on vectors in ordinary memory: upload, sort, download;
/// one untimed run first.
pub(super) fn roundtrip_ours<W: Word + SortKey>(
    sorter: &Sorter,
    input: &Input<W>,
    trips: (usize, usize),
) -> Result<Timed<W>, Error> {
    let mut keys = input.keys.clone();
    let mut values = input.values.clone();
    let ms = time_host_sorts(sorter, input, trips, &mut keys, values.as_deref_mut())?;
    Ok((ms, keys, values))
}

/// As [`roundtrip_ours`], with keys and values in the sorter's pinned buffers
/// (`Sorter::pinned_buffer`, allocated untimed): the bus copies them directly.
pub(super) fn roundtrip_pinned_ours<W: Word + SortKey>(
    sorter: &Sorter,
    input: &Input<W>,
    trips: (usize, usize),
) -> Result<Timed<W>, Error> {
    let mut keys = sorter.pinned_buffer::<W>(input.keys.len())?;
    let mut values = match &input.values {
        Some(v) => Some(sorter.pinned_buffer::<u32>(v.len())?),
        None => None,
    };
    let ms = time_host_sorts(sorter, input, trips, &mut keys, values.as_deref_mut())?;
    Ok((ms, keys.to_vec(), values.map(|v| v.to_vec())))
}

/// Restores `keys` and `values` from `input` (untimed) and times one host-slice sort of
/// them, `runs` times after `warmup` untimed runs (`trips`).
fn time_host_sorts<W: Word + SortKey>(
    sorter: &Sorter,
    input: &Input<W>,
    (warmup, runs): (usize, usize),
    keys: &mut [W],
    mut values: Option<&mut [u32]>,
) -> Result<Vec<f64>, Error> {
    let mut ms = Vec::with_capacity(runs);
    for run in 0..warmup + runs {
        keys.copy_from_slice(&input.keys);
        if let (Some(v), Some(src)) = (values.as_deref_mut(), input.values.as_ref()) {
            v.copy_from_slice(src);
        }
        let start = Instant::now();
        match (values.as_deref_mut(), input.row_len) {
            (Some(v), 0) => sorter.sort_by_key(keys, v, bitonic::Order::Ascending)?,
            (None, 0) => sorter.sort(keys, bitonic::Order::Ascending)?,
            (Some(v), row_len) => {
                sorter.sort_rows_by_key(keys, v, row_len, bitonic::Order::Ascending)?
            }
            (None, row_len) => sorter.sort_rows(keys, row_len, bitonic::Order::Ascending)?,
        }
        let elapsed = start.elapsed().as_secs_f64() * 1e3;
        if run >= warmup {
            ms.push(elapsed);
        }
    }
    Ok(ms)
}

/// The CPU peer, timed with the wall clock on host data: `par_sort_unstable` for keys,
/// `par_sort_unstable_by_key` on (key, value) pairs, `sort_unstable` per row in parallel.
pub(super) fn time_cpu<W: Word>(input: &Input<W>, warmup: usize, runs: usize) -> Timed<W> {
    let mut ms = Vec::with_capacity(runs);
    let (keys, values): Sorted<W> = if let Some(values) = &input.values {
        let pristine: Vec<(W, u32)> = input
            .keys
            .par_iter()
            .copied()
            .zip(values.par_iter().copied())
            .collect();
        let mut pairs = pristine.clone();
        for run in 0..warmup + runs {
            pairs.copy_from_slice(&pristine);
            let start = Instant::now();
            pairs.par_sort_unstable_by_key(|p| p.0);
            let elapsed = start.elapsed().as_secs_f64() * 1e3;
            if run >= warmup {
                ms.push(elapsed);
            }
        }
        let (k, v): (Vec<W>, Vec<u32>) = pairs.into_par_iter().unzip();
        (k, Some(v))
    } else {
        let mut keys = input.keys.clone();
        for run in 0..warmup + runs {
            keys.copy_from_slice(&input.keys);
            let start = Instant::now();
            if input.row_len > 0 {
                keys.par_chunks_mut(input.row_len)
                    .for_each(|r| r.sort_unstable());
            } else {
                keys.par_sort_unstable();
            }
            let elapsed = start.elapsed().as_secs_f64() * 1e3;
            if run >= warmup {
                ms.push(elapsed);
            }
        }
        (keys, None)
    };
    (ms, keys, values)
}
