//! The `topk` case: the `k` largest keys of every row, f32 and bf16, ours beside
//! `torch.topk`, beside a full sort of the rows (ours and `torch.sort`) and beside the CPU's
//! selection, which is also the model every result is checked against.

use half::bf16;

use super::floats::*;
use super::*;
use crate::torch::{FloatOp, Timing};

/// One shape of the case: `rows` rows of `cols` keys, the `k` largest of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopKShape {
    /// Rows.
    pub rows: usize,
    /// Keys per row.
    pub cols: usize,
    /// Keys selected per row.
    pub k: usize,
}

impl TopKShape {
    const fn new(rows: usize, cols: usize, k: usize) -> Self {
        TopKShape { rows, cols, k }
    }

    /// `RxC:k`, as `--cases topkRxC:k` takes it.
    pub fn label(self) -> String {
        format!("{}x{}:{}", self.rows, size_label(self.cols), self.k)
    }
}

/// The shapes `--cases topk` runs: one long row, many short rows, and `k` from 32 to 16384
/// (the largest past what a GPU keeps on chip).
pub const TOP_K_SHAPES: [TopKShape; 7] = [
    TopKShape::new(1, 1 << 24, 100),
    TopKShape::new(64, 131072, 50),
    TopKShape::new(4, 131072, 2048),
    TopKShape::new(256, 262144, 256),
    TopKShape::new(2048, 131072, 1024),
    TopKShape::new(16384, 1024, 32),
    TopKShape::new(8, 1 << 20, 16384),
];

/// Parses the part of `topkRxC:K` after `topk` (`64x131072:50`).
pub fn parse_shape(s: &str) -> Result<TopKShape, String> {
    let (rows_cols, k) = s
        .split_once(':')
        .ok_or_else(|| format!("topk{s}: use topkROWSxCOLS:K, e.g. topk64x131072:50"))?;
    let (rows, cols) = args::parse_rows(rows_cols)?;
    let k = args::parse_size(k)?;
    if k == 0 || k > cols {
        return Err(format!("topk{s}: k must be between 1 and the row length"));
    }
    Ok(TopKShape { rows, cols, k })
}

/// Runs the case on `shape`, or on every shape of [`TOP_K_SHAPES`], f32 then bf16.
pub(super) fn run(
    cfg: &CompareConfig,
    shape: Option<TopKShape>,
    entries: &[Entry],
    failures: &mut Failures,
) -> Vec<Row> {
    println!(
        "   bitonic-topk: Sorter::top_k_rows (round trips) and top_k_device_rows of the CUDA \
         and OpenCL backends (device-resident), largest first; bitonic-sort-rows: the full sort of every row; \
         torch-topk: torch.topk(keys, k, dim=-1); torch-sort-rows: torch.sort(keys, dim=-1); \
         rust-cpu: select_nth_unstable_by per row on rayon's threads, the model every result \
         is checked against (torch's top-k by each row's values only)"
    );
    println!(
        "   ratio = this row's device ms / our first device's top-k device ms (CUDA where \
         there is one) for the same shape and type (above 1: our top-k is faster)"
    );
    print_columns();
    let shapes = shape.map_or_else(|| TOP_K_SHAPES.to_vec(), |s| vec![s]);
    let mut run = CaseRun::new(cfg, entries, failures);
    let mut out = Vec::new();
    for (i, &shape) in shapes.iter().enumerate() {
        let seed = cfg.seed ^ ((i as u64 + 1) << 32) ^ (case_id(Case::TopK(None)) << 56);
        out.extend(measure_shape::<f32>(&mut run, shape, seed));
        out.extend(measure_shape::<bf16>(&mut run, shape, seed));
    }
    out
}

/// The case's name of one shape and type in the CSV: `topk-f32-64x131072-k50`.
fn case_name<K: FloatKey>(shape: TopKShape) -> String {
    format!(
        "topk-{}-{}x{}-k{}",
        K::NAME,
        shape.rows,
        shape.cols,
        shape.k
    )
}

/// Checks our top-k: values bit for bit and indices exactly as the model's.
fn check_ours<K: FloatKey>(got: (&[K], &[u32]), want: (&[K], &[u32])) -> Result<(), String> {
    same_keys(got.0, want.0, "values")?;
    if got.1.len() != want.1.len() {
        return Err(format!(
            "{} indices, {} expected",
            got.1.len(),
            want.1.len()
        ));
    }
    match got.1.iter().zip(want.1).position(|(a, b)| a != b) {
        Some(i) => Err(format!(
            "indices[{i}] is {}, the model's is {} (ties go to the lower position)",
            got.1[i], want.1[i]
        )),
        None => Ok(()),
    }
}

/// Measures every sorter on one shape and key type.
fn measure_shape<K: FloatKey>(run: &mut CaseRun<'_>, shape: TopKShape, seed: u64) -> Vec<Row> {
    let (cfg, entries, failures) = (run.cfg, run.entries, &mut *run.failures);
    let TopKShape { rows, cols, k } = shape;
    let case = case_name::<K>(shape);
    let Some(n) = rows.checked_mul(cols) else {
        println!("-- {case}: skipped, too many keys");
        return Vec::new();
    };
    println!("-- {} keys, {rows} x {cols}, k = {k}", K::NAME);
    let keys: Vec<K> = float_keys(n, seed);
    let cpu = entries
        .iter()
        .find(|e| matches!(e.runner, Runner::Cpu))
        .filter(|e| e.skip_reason(cfg, n, size_of::<K>()).is_none());
    // The model, timed as the CPU's row where that runs at this size.
    let (cpu_ms, (want_values, want_indices)) = if cpu.is_some() {
        let timed = time_calls((cfg.warmup, cfg.runs), || {
            Ok::<_, String>(top_k_model(&keys, cols, k))
        });
        timed.unwrap_or_else(|_| (Vec::new(), top_k_model(&keys, cols, k)))
    } else {
        (Vec::new(), top_k_model(&keys, cols, k))
    };
    let want = (&want_values[..], &want_indices[..]);
    let want_sorted = sorted_rows(&keys, cols);
    let trips = cfg.trip_runs(n * size_of::<K>());
    let mut reference_ms: Option<f64> = None;
    let mut out = Vec::new();

    for (entry, sorter) in our_sorters(entries) {
        let name = "bitonic-topk";
        let Some(mut row) = row_unless_skipped(&case, name, entry, cfg, n, size_of::<K>()) else {
            continue;
        };
        let what = format!("{name} {} on {case}", entry.device);
        let mut notes = Vec::new();
        let got = device_top_k(sorter, &keys, cols, k, cfg);
        let check = |(v, i): &(Vec<K>, Vec<u32>)| check_ours((v, i), want);
        if let Some(ms) = device_checked::<K, _>(sorter, got, check, &what, failures, &mut notes) {
            row.device_ms = ms;
        }
        for pinned in [false, true] {
            let got = if pinned {
                sorter
                    .pinned_buffer::<K>(n)
                    .map_err(|e| e.to_string())
                    .and_then(|mut buf| {
                        buf.copy_from_slice(&keys);
                        time_calls(trips, || {
                            sorter.top_k_rows(&buf, cols, k, bitonic::Order::Descending)
                        })
                    })
            } else {
                time_calls(trips, || {
                    sorter.top_k_rows(&keys, cols, k, bitonic::Order::Descending)
                })
            };
            let check = |t: &bitonic::TopK<K>| check_ours((&t.values, &t.indices), want);
            let stage = if pinned {
                "pinned round trip"
            } else {
                "round trip"
            };
            if let Some(ms) = timed_and_checked(got, check, &what, stage, failures, &mut notes) {
                *row.trip_ms(pinned) = ms;
            }
        }
        if reference_ms.is_none() && !row.device_ms.is_empty() {
            reference_ms = Some(median(&row.device_ms));
        }
        print_row(&row, reference_ms, &notes.join("; "));
        out.push(row);
    }

    for (entry, sorter) in our_sorters(entries) {
        let name = "bitonic-sort-rows";
        let Some(mut row) = row_unless_skipped(&case, name, entry, cfg, n, size_of::<K>()) else {
            continue;
        };
        let what = format!("{name} {} on {case}", entry.device);
        let mut notes = Vec::new();
        let got = device_sort(sorter, &keys, cols, cfg);
        let check = |sorted: &Vec<K>| same_keys(sorted, &want_sorted, "keys");
        if let Some(ms) = device_checked::<K, _>(sorter, got, check, &what, failures, &mut notes) {
            row.device_ms = ms;
        }
        let got = time_sorts(trips, &keys, |w| {
            sorter.sort_rows(w, cols, bitonic::Order::Ascending)
        });
        if let Some(ms) = timed_and_checked(got, check, &what, "round trip", failures, &mut notes) {
            row.roundtrip_ms = ms;
        }
        print_row(&row, reference_ms, &notes.join("; "));
        out.push(row);
    }

    for entry in entries {
        match &entry.runner {
            Runner::Torch(peer) => {
                let what = |sorter: &str| format!("{sorter} {} on {case}", entry.device);
                let Some(mut row) =
                    row_unless_skipped(&case, "torch-topk", entry, cfg, n, size_of::<K>())
                else {
                    continue;
                };
                let mut notes = Vec::new();
                for (timing, stage) in TORCH_TIMINGS {
                    let op = FloatOp::TopK(k);
                    let got = time_torch(peer, op, timing, &keys, cols, cfg, &mut notes);
                    let check = |v: &Vec<K>| same_values_per_row(v, &want_values, k);
                    let what = what("torch-topk");
                    if let Some(ms) =
                        timed_and_checked(got, check, &what, stage, failures, &mut notes)
                    {
                        *torch_times(&mut row, timing) = ms;
                    }
                }
                print_row(&row, reference_ms, &notes.join("; "));
                out.push(row);

                let mut row = new_row(&case, "torch-sort-rows", &entry.device, n);
                let mut notes = Vec::new();
                let (op, timing) = (FloatOp::Sort, Timing::Device);
                let got = time_torch(peer, op, timing, &keys, cols, cfg, &mut notes);
                let check = |s: &Vec<K>| same_keys(s, &want_sorted, "keys");
                let what = what("torch-sort-rows");
                if let Some(ms) =
                    timed_and_checked(got, check, &what, "device", failures, &mut notes)
                {
                    row.device_ms = ms;
                }
                print_row(&row, reference_ms, &notes.join("; "));
                out.push(row);
            }
            Runner::TorchUnavailable(why) => {
                let row = new_row(&case, "torch-topk", &entry.device, n);
                print_row(&row, None, &format!("unavailable: {why}"));
            }
            Runner::Cpu => {
                let mut row = new_row(&case, "rust-cpu", &entry.device, n);
                match entry.skip_reason(cfg, n, size_of::<K>()) {
                    Some(why) => print_row(&row, None, &why),
                    None => {
                        row.device_ms = cpu_ms.clone();
                        row.roundtrip_ms = cpu_ms.clone();
                        print_row(&row, reference_ms, "");
                        out.push(row);
                    }
                }
            }
            _ => {}
        }
    }
    out
}
