//! The `arrow` case: `bitonic::arrow::sort_to_indices` of a Float64 array with 10% nulls
//! beside arrow-ord's `sort_to_indices`, our plain `Sorter::argsort` of the same valid values
//! and Rust's `par_sort_unstable_by(total_cmp)` of them; and `bitonic::arrow::
//! lexsort_to_indices` of (Int32, Float64) columns beside arrow-ord's. Every call starts and
//! ends in host memory, so every time is a host round trip (wall clock).
//!
//! arrow-ord's kernels are unstable: the order they give equal keys is not defined, while
//! ours keeps them in input order. Our indices are checked against arrow-ord's with every
//! run of equal keys put in input order ([`canonical`]), as the library's tests compare them.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float64Array, Int32Array, UInt32Array};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_ord::sort::SortColumn;

use super::floats::*;
use super::*;

/// One null in this many rows.
const NULL_EVERY: u32 = 10;

/// Distinct values of the lexsort's Int32 column: few, so that the Float64 column decides
/// within each.
const LEX_INT_VALUES: u32 = 1000;

/// Runs the case: `sort_to_indices` at `cfg.arrow_sizes`, `lexsort_to_indices` at
/// `cfg.lex_sizes`.
pub(super) fn run(cfg: &CompareConfig, entries: &[Entry], failures: &mut Failures) -> Vec<Row> {
    println!(
        "   every time is a host round trip (wall clock, median of --roundtrip-runs after one \
         warm-up): bitonic-arrow: bitonic::arrow::sort_to_indices / lexsort_to_indices; \
         arrow-ord: arrow_ord::sort's; bitonic-argsort: Sorter::argsort of the valid values \
         alone; rust-cpu: par_sort_unstable_by(total_cmp) of them"
    );
    println!(
        "   ratio = this row's round trip / bitonic-arrow's on our first device (above 1: ours \
         is faster)"
    );
    print_columns();
    let mut run = CaseRun::new(cfg, entries, failures);
    let mut out = run.at_sizes(Case::Arrow, &cfg.arrow_sizes, 1, measure_single);
    out.extend(run.at_sizes(Case::Arrow, &cfg.lex_sizes, 101, measure_lex));
    out
}

/// `n` Float64 rows spread over [-1e6, 1e6), one in [`NULL_EVERY`] null (at random rows).
pub(super) fn float64_with_nulls(n: usize, seed: u64) -> Float64Array {
    let values: Vec<f64> = random_words::<u64>(n, seed)
        .into_par_iter()
        .map(|w| (w >> 11) as f64 * (2e6 / (1u64 << 53) as f64) - 1e6)
        .collect();
    let valid: Vec<bool> = random_words::<u32>(n, seed ^ 0x5eed)
        .into_par_iter()
        .map(|w| !w.is_multiple_of(NULL_EVERY))
        .collect();
    Float64Array::new(ScalarBuffer::from(values), Some(NullBuffer::from(valid)))
}

/// The row's key for comparisons of orders: `None` for a null, the value's bits otherwise.
fn key_of(a: &Float64Array, i: u32) -> Option<u64> {
    let i = i as usize;
    a.is_valid(i).then(|| a.value(i).to_bits())
}

/// `indices` with each run of positions whose `key` is equal sorted ascending: the stable
/// order among the orders an unstable sort may give.
pub(super) fn canonical<K: PartialEq>(indices: &[u32], key: impl Fn(u32) -> K) -> Vec<u32> {
    let mut out = indices.to_vec();
    let mut start = 0;
    while start < out.len() {
        let first = key(out[start]);
        let mut end = start + 1;
        while end < out.len() && key(out[end]) == first {
            end += 1;
        }
        out[start..end].sort_unstable();
        start = end;
    }
    out
}

/// Checks indices against the expected ones, describing the first difference by `key`.
pub(super) fn same_indices<K: std::fmt::Debug>(
    got: &[u32],
    want: &[u32],
    key: impl Fn(u32) -> K,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} indices, expected {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        Some(i) => Err(format!(
            "index {i}: row {} (key {:?}), expected row {} (key {:?})",
            got[i],
            key(got[i]),
            want[i],
            key(want[i])
        )),
        None => Ok(()),
    }
}

/// The values of an index array (it has no nulls).
fn indices_of(a: &UInt32Array) -> Vec<u32> {
    a.values().to_vec()
}

/// A row whose times are host round trips: ratio against `reference` (ms).
fn print_trip_row(row: &Row, reference: Option<f64>, note: &str) {
    let ratio = reference
        .filter(|_| !row.roundtrip_ms.is_empty())
        .map(|r| median(&row.roundtrip_ms) / r);
    print_row_ratio(row, ratio, note);
}

/// arrow-ord's `sort` timed as the `arrow-ord` row of `case` (`n` rows, host round trips),
/// and its indices with every run of equal `key`s put in input order: the oracle. None
/// where it failed, which is counted and printed.
fn arrow_ord_oracle<K: PartialEq>(
    case: &str,
    n: usize,
    trips: (usize, usize),
    sort: impl FnMut() -> Result<UInt32Array, arrow_schema::ArrowError>,
    key: impl Fn(u32) -> K,
    failures: &mut Failures,
) -> Option<(Row, Vec<u32>)> {
    let mut row = new_row(case, "arrow-ord", "host CPU (1 thread)", n);
    match time_calls(trips, sort) {
        Ok((ms, indices)) => {
            row.roundtrip_ms = ms;
            Some((row, canonical(&indices_of(&indices), key)))
        }
        Err(e) => {
            failures.errors += 1;
            print_row(&row, None, &error_note("arrow-ord", "error", &e));
            None
        }
    }
}

/// Prints the oracle's row (see [`arrow_ord_oracle`]) after ours, whose first is its
/// `reference`, and adds it to `out`.
fn push_oracle_row(out: &mut Vec<Row>, row: Row, reference: Option<f64>) {
    print_trip_row(&row, reference, "the oracle (tie runs put in input order)");
    out.push(row);
}

/// `sort_to_indices` of `n` Float64 rows with nulls, and its peers.
fn measure_single(run: &mut CaseRun<'_>, n: usize, seed: u64) -> Vec<Row> {
    let (cfg, entries, failures) = (run.cfg, run.entries, &mut *run.failures);
    let case = "arrow-sort_to_indices-f64";
    println!("-- sort_to_indices, Float64, 1 in {NULL_EVERY} rows null");
    let array = float64_with_nulls(n, seed);
    let valid: Vec<f64> = (0..n)
        .filter(|&i| array.is_valid(i))
        .map(|i| array.value(i))
        .collect();
    let trips = cfg.trip_runs(n * 8);
    let key = |i: u32| key_of(&array, i);
    let mut out = Vec::new();

    // arrow-ord first: its result is the oracle (tie runs normalized).
    let sort = || arrow_ord::sort::sort_to_indices(&array, None, None);
    let Some((arrow_ord_row, want)) = arrow_ord_oracle(case, n, trips, sort, key, failures) else {
        return Vec::new();
    };
    // The stable order of the valid values alone: our argsort's model.
    let mut want_argsort: Vec<u32> = (0..valid.len() as u32).collect();
    want_argsort.par_sort_by(|&a, &b| valid[a as usize].total_cmp(&valid[b as usize]));
    let mut reference: Option<f64> = None;

    for (entry, sorter) in our_sorters(entries) {
        for sorter_name in ["bitonic-arrow", "bitonic-argsort"] {
            let Some(mut row) = row_unless_skipped(case, sorter_name, entry, cfg, n, 8) else {
                continue;
            };
            let what = format!("{sorter_name} {} on {case}, n = {n}", entry.device);
            let mut notes = Vec::new();
            // Both give a UInt32Array, as arrow-ord does (a vector becomes one without a
            // copy), so that no row pays for a copy the others do not make.
            let got = time_calls(trips, || {
                if sorter_name == "bitonic-arrow" {
                    bitonic::arrow::sort_to_indices(sorter, &array, None, None)
                } else {
                    sorter
                        .argsort(&valid, bitonic::Order::Ascending)
                        .map(UInt32Array::from)
                }
            });
            let check = |got: &UInt32Array| {
                if sorter_name == "bitonic-arrow" {
                    same_indices(got.values(), &want, key)
                } else {
                    same_indices(got.values(), &want_argsort, |i| valid[i as usize])
                }
            };
            let stage = "round trip";
            if let Some(ms) = timed_and_checked(got, check, &what, stage, failures, &mut notes) {
                row.roundtrip_ms = ms;
            }
            if reference.is_none() && sorter_name == "bitonic-arrow" && !row.roundtrip_ms.is_empty()
            {
                reference = Some(median(&row.roundtrip_ms));
            }
            print_trip_row(&row, reference, &notes.join("; "));
            out.push(row);
        }
    }
    push_oracle_row(&mut out, arrow_ord_row, reference);

    let cpu = entries.iter().find(|e| matches!(e.runner, Runner::Cpu));
    if let Some(entry) = cpu
        && let Some(mut row) = row_unless_skipped(case, "rust-cpu", entry, cfg, n, 8)
    {
        let mut notes = Vec::new();
        let mut work = valid.clone();
        let got = time_wall(
            trips,
            &mut work,
            |w| w.copy_from_slice(&valid),
            |w| {
                w.par_sort_unstable_by(f64::total_cmp);
                Ok(())
            },
        );
        let check = |_: &()| match want_argsort
            .iter()
            .zip(&work)
            .position(|(&i, v)| valid[i as usize].to_bits() != v.to_bits())
        {
            Some(i) => Err(format!("value {i} is {}, not in sorted order", work[i])),
            None => Ok(()),
        };
        let what = format!("rust-cpu on {case}, n = {n}");
        if let Some(ms) = timed_and_checked(got, check, &what, "cpu", failures, &mut notes) {
            row.roundtrip_ms = ms;
        }
        print_trip_row(&row, reference, &notes.join("; "));
        out.push(row);
    }
    out
}

/// `lexsort_to_indices` of `n` rows of (Int32, Float64 with nulls), ours and arrow-ord's.
fn measure_lex(run: &mut CaseRun<'_>, n: usize, seed: u64) -> Vec<Row> {
    let (cfg, entries, failures) = (run.cfg, run.entries, &mut *run.failures);
    let case = "arrow-lexsort_to_indices-i32-f64";
    println!(
        "-- lexsort_to_indices, (Int32 of {LEX_INT_VALUES} values, Float64 with 1 in \
         {NULL_EVERY} null)"
    );
    let ints: Vec<i32> = random_words::<u32>(n, seed ^ 0x1e7)
        .into_par_iter()
        .map(|w| (w % LEX_INT_VALUES) as i32)
        .collect();
    let ints = Int32Array::from(ints);
    let floats = float64_with_nulls(n, seed);
    let columns = [
        SortColumn {
            values: Arc::new(ints.clone()) as ArrayRef,
            options: None,
        },
        SortColumn {
            values: Arc::new(floats.clone()) as ArrayRef,
            options: None,
        },
    ];
    let key = |i: u32| (ints.value(i as usize), key_of(&floats, i));
    let trips = cfg.trip_runs(n * 12);
    let mut out = Vec::new();

    let sort = || arrow_ord::sort::lexsort_to_indices(&columns, None);
    let Some((arrow_ord_row, want)) = arrow_ord_oracle(case, n, trips, sort, key, failures) else {
        return Vec::new();
    };
    let mut reference: Option<f64> = None;
    for (entry, sorter) in our_sorters(entries) {
        let Some(mut row) = row_unless_skipped(case, "bitonic-arrow", entry, cfg, n, 12) else {
            continue;
        };
        let what = format!("bitonic-arrow {} on {case}, n = {n}", entry.device);
        let mut notes = Vec::new();
        let got = time_calls(trips, || {
            bitonic::arrow::lexsort_to_indices(sorter, &columns, None)
        });
        let check = |got: &UInt32Array| same_indices(got.values(), &want, key);
        if let Some(ms) = timed_and_checked(got, check, &what, "round trip", failures, &mut notes) {
            row.roundtrip_ms = ms;
        }
        if reference.is_none() && !row.roundtrip_ms.is_empty() {
            reference = Some(median(&row.roundtrip_ms));
        }
        print_trip_row(&row, reference, &notes.join("; "));
        out.push(row);
    }
    push_oracle_row(&mut out, arrow_ord_row, reference);
    out
}
