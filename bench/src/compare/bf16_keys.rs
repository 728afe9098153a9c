//! The `bf16` case: bf16 keys at the usual sizes, ours (device-resident and round trips)
//! beside our `u32` keys of the same count, `torch.sort` on a bfloat16 tensor and Rust's
//! `par_sort_unstable_by(total_cmp)`.

use half::bf16;

use super::floats::*;
use super::*;
use crate::torch::FloatOp;

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
    let mut run = CaseRun::new(cfg, entries, failures);
    run.at_sizes(Case::Bf16, &cfg.sizes, 1, measure_size)
}

/// Measures every sorter on `n` keys.
fn measure_size(run: &mut CaseRun<'_>, n: usize, seed: u64) -> Vec<Row> {
    let (cfg, entries, failures) = (run.cfg, run.entries, &mut *run.failures);
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
        let Some(mut row) = row_unless_skipped(&case, "bitonic", entry, cfg, n, 2) else {
            continue;
        };
        let what = format!("bitonic {} on bf16, n = {n}", entry.device);
        let mut notes = Vec::new();
        let got = device_sort(sorter, &keys, 0, cfg);
        let check = |sorted: &Vec<bf16>| same_keys(sorted, &want, "keys");
        if let Some(ms) = device_checked::<bf16, _>(sorter, got, check, &what, failures, &mut notes)
        {
            row.device_ms = ms;
        }
        let got = time_sorts(trips, &keys, |w| sorter.sort(w, bitonic::Order::Ascending));
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
        let Some(mut row) = row_unless_skipped(&case, "bitonic-u32", entry, cfg, n, 4) else {
            continue;
        };
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
                let Some(mut row) = row_unless_skipped(&case, torch::NAME, entry, cfg, n, 2) else {
                    continue;
                };
                let what = format!("{} {} on bf16, n = {n}", torch::NAME, entry.device);
                let mut notes = Vec::new();
                for (timing, stage) in TORCH_TIMINGS {
                    let got = time_torch(peer, FloatOp::Sort, timing, &keys, n, cfg, &mut notes);
                    let check = |s: &Vec<bf16>| same_keys(s, &want, "keys");
                    if let Some(ms) =
                        timed_and_checked(got, check, &what, stage, failures, &mut notes)
                    {
                        *torch_times(&mut row, timing) = ms;
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
                let Some(mut row) = row_unless_skipped(&case, "rust-cpu", entry, cfg, n, 2) else {
                    continue;
                };
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
