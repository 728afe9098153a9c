//! The `bf16` case: bf16 keys at the usual sizes, ours (device-resident and round trips)
//! beside our `u32` keys of the same count, `torch.sort` on a bfloat16 tensor and Rust's
//! `par_sort_unstable_by(total_cmp)`.

use half::bf16;

use super::floats::*;
use super::*;
use crate::torch::{FloatOp, FloatTiming};

/// Runs the case at every size of `cfg.sizes`.
pub(super) fn run(cfg: &CompareConfig, entries: &[Entry], failures: &mut Failures) -> Vec<Row> {
    println!(
        "   bitonic: our sort of the bf16 keys (device-resident: sort_device, OpenCL only; \
         round trips: Sorter::sort); bitonic-u32: the same of as many random u32 keys; \
         torch-sort: torch.sort on a bfloat16 tensor; rust-cpu: par_sort_unstable_by(total_cmp)"
    );
    println!(
        "   ratio = this row's device ms / the first device ms of each size (our bf16 sort where \
         it runs device-resident, else our u32 sort); above 1: that one is faster"
    );
    print_columns();
    let mut out = Vec::new();
    for (i, &n) in cfg.sizes.iter().enumerate() {
        let seed = cfg.seed ^ ((i as u64 + 1) << 32) ^ (case_id(Case::Bf16) << 56);
        out.extend(measure_size(cfg, n, seed, entries, failures));
    }
    out
}

/// Measures every sorter on `n` keys.
fn measure_size(
    cfg: &CompareConfig,
    n: usize,
    seed: u64,
    entries: &[Entry],
    failures: &mut Failures,
) -> Vec<Row> {
    let case = Case::Bf16.name();
    let keys: Vec<bf16> = float_keys(n, seed);
    let mut want = keys.clone();
    want.par_sort_unstable_by(bf16::total_cmp);
    let words: Vec<u32> = random_words(n, seed);
    let mut want_words = words.clone();
    want_words.par_sort_unstable();
    let words = Input {
        keys: words,
        values: None,
        row_len: 0,
        want: want_words,
    };
    let trips = cfg.trip_runs(n * 2);
    let mut reference_ms: Option<f64> = None;
    let mut out = Vec::new();

    for (entry, sorter) in our_sorters(entries) {
        let mut row = new_row(&case, "bitonic", &entry.device, n);
        if let Some(why) = entry.skip_reason(cfg, n, 2) {
            print_row(&row, None, &why);
            continue;
        }
        let what = format!("bitonic {} on bf16, n = {n}", entry.device);
        let mut notes = Vec::new();
        let mut work = keys.clone();
        match on_device(sorter)
            .then(|| bf16::device_sort(sorter, &mut work, 0, cfg))
            .flatten()
        {
            Some(got) => {
                let got = got.map(|ms| (ms, ()));
                let check = |_: &()| same_keys(&work, &want, "keys");
                if let Some(ms) =
                    timed_and_checked(got, check, &what, "device", failures, &mut notes)
                {
                    row.device_ms = ms;
                }
            }
            None => notes.push(no_device_note::<bf16>(sorter)),
        }
        let got = time_wall(
            trips,
            &mut work,
            |w| w.copy_from_slice(&keys),
            |w| {
                sorter
                    .sort(w, bitonic::Order::Ascending)
                    .map_err(|e| e.to_string())
            },
        );
        let check = |_: &()| same_keys(&work, &want, "keys");
        if let Some(ms) = timed_and_checked(got, check, &what, "round trip", failures, &mut notes) {
            row.roundtrip_ms = ms;
        }
        let got = sorter
            .pinned_buffer::<bf16>(n)
            .map_err(|e| e.to_string())
            .and_then(|mut buf| {
                let (ms, ()) = time_wall(
                    trips,
                    &mut buf,
                    |b| b.copy_from_slice(&keys),
                    |b| {
                        sorter
                            .sort(b, bitonic::Order::Ascending)
                            .map_err(|e| e.to_string())
                    },
                )?;
                Ok((ms, buf.to_vec()))
            });
        let check = |sorted: &Vec<bf16>| same_keys(sorted, &want, "keys");
        let stage = "pinned round trip";
        if let Some(ms) = timed_and_checked(got, check, &what, stage, failures, &mut notes) {
            row.pinned_ms = ms;
        }
        if reference_ms.is_none() && !row.device_ms.is_empty() {
            reference_ms = Some(median(&row.device_ms));
        }
        print_row(&row, reference_ms, &notes.join("; "));
        out.push(row);
    }

    for (entry, sorter) in our_sorters(entries) {
        let mut row = new_row(&case, "bitonic-u32", &entry.device, n);
        if let Some(why) = entry.skip_reason(cfg, n, 4) {
            print_row(&row, None, &why);
            continue;
        }
        let what = format!("bitonic-u32 {} on bf16, n = {n}", entry.device);
        let mut notes = Vec::new();
        if on_device(sorter) {
            let got = time_ours(sorter, &words, cfg.warmup, cfg.runs, cfg.cuda);
            let kind = "device timing error";
            if let Some(ms) = measured(&words, got, "device", kind, &what, failures, &mut notes) {
                row.device_ms = ms;
            }
        }
        for pinned in [false, true] {
            let got = if pinned {
                roundtrip_pinned_ours(sorter, &words, trips)
            } else {
                roundtrip_ours(sorter, &words, trips)
            };
            let stage = if pinned {
                "pinned round trip"
            } else {
                "round trip"
            };
            let got = got.map_err(|e| e.to_string());
            let kind = format!("{stage} error");
            if let Some(ms) = measured(&words, got, stage, &kind, &what, failures, &mut notes) {
                *row.trip_ms(pinned) = ms;
            }
        }
        if reference_ms.is_none() && !row.device_ms.is_empty() {
            reference_ms = Some(median(&row.device_ms));
        }
        print_row(&row, reference_ms, &notes.join("; "));
        out.push(row);
    }

    for entry in entries {
        match &entry.runner {
            Runner::Torch(peer) => {
                let mut row = new_row(&case, torch::NAME, &entry.device, n);
                if let Some(why) = entry.skip_reason(cfg, n, 2) {
                    print_row(&row, None, &why);
                    continue;
                }
                let what = format!("{} {} on bf16, n = {n}", torch::NAME, entry.device);
                let mut notes = Vec::new();
                let timings = [
                    (FloatTiming::Device, "device"),
                    (FloatTiming::PageableTrip, "round trip"),
                    (FloatTiming::PinnedTrip, "pinned round trip"),
                ];
                for (timing, stage) in timings {
                    let (warmup, runs) = match timing {
                        FloatTiming::Device => (cfg.warmup, cfg.runs),
                        _ => trips,
                    };
                    let got = peer
                        .time_float(FloatOp::Sort, timing, bf16::DTYPE, &keys, n, warmup, runs)
                        .map(|(ms, sorted, note)| {
                            if !note.is_empty() {
                                notes.push(truncate(&note, 120));
                            }
                            (ms, sorted)
                        });
                    let check = |s: &Vec<bf16>| same_keys(s, &want, "keys");
                    match timed_and_checked(got, check, &what, stage, failures, &mut notes) {
                        Some(ms) if timing == FloatTiming::Device => row.device_ms = ms,
                        Some(ms) => *row.trip_ms(timing == FloatTiming::PinnedTrip) = ms,
                        None => {}
                    }
                }
                print_row(&row, reference_ms, &notes.join("; "));
                out.push(row);
            }
            Runner::TorchUnavailable(why) => {
                let row = new_row(&case, torch::NAME, &entry.device, n);
                print_row(&row, None, &format!("unavailable: {why}"));
            }
            Runner::Cpu => {
                let mut row = new_row(&case, "rust-cpu", &entry.device, n);
                if let Some(why) = entry.skip_reason(cfg, n, 2) {
                    print_row(&row, None, &why);
                    continue;
                }
                let mut notes = Vec::new();
                let mut work = keys.clone();
                let got = time_wall(
                    (cfg.warmup, cfg.runs),
                    &mut work,
                    |w| w.copy_from_slice(&keys),
                    |w| {
                        w.par_sort_unstable_by(bf16::total_cmp);
                        Ok(())
                    },
                );
                let what = format!("rust-cpu on bf16, n = {n}");
                let check = |_: &()| same_keys(&work, &want, "keys");
                if let Some(ms) = timed_and_checked(got, check, &what, "cpu", failures, &mut notes)
                {
                    row.roundtrip_ms = ms.clone();
                    row.device_ms = ms;
                }
                print_row(&row, reference_ms, &notes.join("; "));
                out.push(row);
            }
            _ => {}
        }
    }
    out
}
