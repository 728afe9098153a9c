//! `bitonic bench --compare`: per case and size, our backends (every CUDA and OpenCL
//! device), Rust's `par_sort_unstable` on the CPU, when linked, CUB's sorts and, when
//! `python3` has torch with CUDA, `torch.sort` (in a child process, `src/torch.rs`),
//! measured in one run on the same random input; device-resident time and host round trip
//! reported separately; every result checked; a table, a CSV file and an SVG plot.
//! `docs/bench.md` explains the output.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bitonic::internals::Word;
use bitonic::{BackendKind, DeviceType, Error, SortKey, Sorter};
use rand::distributions::{Distribution, Standard};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use crate::args::{self, BenchArgs};
use crate::common::{self, median, minimum, size_label, truncate};
use crate::cub::{self, CubAlgo, CubDevice, CubKey};
use crate::device_timing::{self, CudaOptions};
use crate::plot::{self, Panel, Series};
use crate::torch::{self, Launch, TorchPeer};

mod arrow;
mod bf16_keys;
#[cfg(test)]
mod case_tests;
mod config;
mod floats;
mod measure;
mod report;
pub mod scaling;
#[cfg(test)]
mod scaling_tests;
#[cfg(test)]
mod tests;
mod top_k;

pub use config::{CompareConfig, config};
#[cfg(test)]
use config::{SHORT_TRIP_BYTES, parse_case};
use measure::*;
use report::*;

/// One kind of input the comparison sorts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// `u32` keys.
    U32,
    /// `u32` keys with `u32` values.
    Kv,
    /// `u64` keys.
    U64,
    /// `u64` keys with `u64` values, measured over GPUs only (`--gpus`).
    Kv64,
    /// `rows` rows of `cols` `u32` keys, each row sorted on its own (all rows at once).
    Rows {
        /// Number of rows.
        rows: usize,
        /// Keys per row.
        cols: usize,
    },
    /// Top-k of f32 and bf16 rows: one shape, or every shape of [`top_k::TOP_K_SHAPES`].
    TopK(Option<top_k::TopKShape>),
    /// bf16 keys beside u32 keys and torch's bfloat16 sort.
    Bf16,
    /// Arrow arrays: `sort_to_indices` of Float64 with nulls, `lexsort_to_indices` of
    /// (Int32, Float64), beside arrow-ord.
    Arrow,
}

impl Case {
    /// The case's name in tables and the CSV.
    pub fn name(self) -> String {
        match self {
            Case::U32 => "u32".into(),
            Case::Kv => "u32+u32".into(),
            Case::U64 => "u64".into(),
            Case::Kv64 => "u64+u64".into(),
            Case::Rows { rows, cols } => format!("rows{rows}x{cols}"),
            Case::TopK(None) => "topk".into(),
            Case::TopK(Some(shape)) => format!("topk{}", shape.label()),
            Case::Bf16 => "bf16".into(),
            Case::Arrow => "arrow".into(),
        }
    }

    /// A sentence describing the case.
    pub fn title(self) -> String {
        match self {
            Case::U32 => "u32 keys".into(),
            Case::Kv => "u32 keys + u32 values (sort by key)".into(),
            Case::U64 => "u64 keys".into(),
            Case::Kv64 => "u64 keys + u64 values (sort by key)".into(),
            Case::Rows { rows, cols } => {
                format!("{rows} rows x {cols} u32 keys, each row sorted independently")
            }
            Case::TopK(None) => "top-k of f32 and bf16 rows, largest first, every shape".into(),
            Case::TopK(Some(s)) => format!(
                "top-k of f32 and bf16 rows, largest first: {} rows x {} keys, k = {}",
                s.rows, s.cols, s.k
            ),
            Case::Bf16 => "bf16 keys".into(),
            Case::Arrow => {
                "Arrow arrays: sort_to_indices of Float64 with 10% nulls, lexsort_to_indices \
                 of (Int32, Float64)"
                    .into()
            }
        }
    }
}

/// How a sorter of the comparison runs.
enum Runner {
    /// One of our backends on one device (device events, `src/device_timing`).
    Ours(Sorter),
    /// Rust's `par_sort_unstable` on the host (wall clock).
    Cpu,
    /// A CUB sort (CUDA events in `bench/cuda/peers.cu`).
    Cub(CubDevice, CubAlgo),
    /// `torch.sort` in a Python child process (CUDA events in `bench/scripts/torch_peer.py`).
    Torch(Box<TorchPeer>),
    /// The torch peer cannot run here; why, for the note of its rows.
    TorchUnavailable(String),
}

/// A row label and what runs it.
struct Entry {
    sorter: String,
    device: String,
    runner: Runner,
}

impl Entry {
    fn label(&self) -> String {
        format!("{} {}", self.sorter, self.device)
    }

    /// Why `n` keys of `bytes_per_key` (values included) are not run here, if they are not.
    fn skip_reason(&self, cfg: &CompareConfig, n: usize, bytes_per_key: usize) -> Option<String> {
        let fits = |copies: u64, memory: u64| {
            let need = copies * n as u64 * bytes_per_key as u64;
            (memory > 0 && need as f64 > 0.9 * memory as f64).then(|| {
                format!(
                    "skipped: needs about {:.1} GiB of the device's {:.1} GiB",
                    need as f64 / (1u64 << 30) as f64,
                    memory as f64 / (1u64 << 30) as f64
                )
            })
        };
        match &self.runner {
            Runner::Cpu if (n as u128) > 1u128 << cfg.cpu_max_log => Some(format!(
                "skipped: above 2^{} (--cpu-max-log)",
                cfg.cpu_max_log
            )),
            Runner::Cpu => None,
            Runner::Ours(s) => {
                let d = s.device();
                if d.backend == BackendKind::OpenCl
                    && d.device_type == DeviceType::Cpu
                    && (n as u128) > 1u128 << cfg.opencl_cpu_max_log
                {
                    return Some(format!(
                        "skipped: OpenCL CPU device above 2^{} (--opencl-cpu-max-log)",
                        cfg.opencl_cpu_max_log
                    ));
                }
                // The pristine copy and the work buffer.
                fits(2, d.memory_bytes)
            }
            // Input, output and CUB's temporary storage (about one more copy).
            Runner::Cub(d, _) => fits(3, d.memory_bytes),
            // Pristine and work keys (and values), sorted keys, gathered values, torch's
            // radix-sort buffers (about two copies more), plus the int64 indices torch.sort
            // always returns and their second buffer (16 bytes a key).
            Runner::Torch(peer) => {
                let need = n as u64 * (5 * bytes_per_key as u64 + 16);
                let memory = peer.memory_bytes;
                (memory > 0 && need as f64 > 0.9 * memory as f64).then(|| {
                    format!(
                        "skipped: needs about {:.1} GiB of the device's {:.1} GiB",
                        need as f64 / (1u64 << 30) as f64,
                        memory as f64 / (1u64 << 30) as f64
                    )
                })
            }
            Runner::TorchUnavailable(why) => Some(format!("unavailable: {why}")),
        }
    }
}

/// What one sorter gave for one case and size.
struct Row {
    case: String,
    sorter: String,
    device: String,
    label: String,
    n: usize,
    device_ms: Vec<f64>,
    /// Host round trips from and to ordinary memory.
    roundtrip_ms: Vec<f64>,
    /// Host round trips from and to pinned memory.
    pinned_ms: Vec<f64>,
}

impl Row {
    /// The round trips from pinned memory, or from ordinary memory.
    fn trip_ms(&mut self, pinned: bool) -> &mut Vec<f64> {
        if pinned {
            &mut self.pinned_ms
        } else {
            &mut self.roundtrip_ms
        }
    }
}

/// Counts of what went wrong, for the exit status.
#[derive(Default)]
struct Failures {
    wrong: Vec<String>,
    errors: usize,
}

/// Runs `bitonic bench --compare`.
pub fn run(cfg: &CompareConfig) -> Result<(), String> {
    let entries = entries(cfg);
    if entries.is_empty() {
        return Err("no sorter to compare (all skipped?)".into());
    }
    println!(
        "device-resident time: median (and min) of {} timed runs after {} warm-ups, our \
         backends, CUB and torch.sort timed with device events, the CPU with the wall clock; \
         host round trip, host data in and out, median of {} runs after one warm-up (inputs of \
         at most 1 MiB: of {} runs after {}, as the device times), wall clock (ours: Sorter::sort on a Vec, and on a Sorter::pinned_buffer; torch: a CPU tensor \
         .to(device), torch.sort, .cpu(), and the same from pinned tensors with non-blocking \
         copies), reported separately. Keys: {} (seed {}); every result checked against \
         the CPU's sort of the same input.",
        cfg.runs,
        cfg.warmup,
        cfg.roundtrip_runs,
        cfg.runs.max(cfg.roundtrip_runs),
        cfg.warmup.max(1),
        cfg.pattern,
        cfg.seed
    );
    let mut failures = Failures::default();
    let mut rows: Vec<Row> = Vec::new();
    let mut scaling_rows = Vec::new();
    let scaling_target = (!cfg.gpus.is_empty()).then(|| {
        let (target, notes) = scaling::cuda_target(cfg);
        for note in notes {
            println!("note: {note}");
        }
        target
    });
    for &case in &cfg.cases {
        println!();
        println!("== case {}: {}", case.name(), case.title());
        if let Some(target) = &scaling_target
            && scaling::is_scaling_case(case)
        {
            scaling_rows.extend(scaling::run_case(cfg, case, target.as_ref(), &mut failures));
            continue;
        }
        let new_rows = match case {
            Case::TopK(shape) => Some(top_k::run(cfg, shape, &entries, &mut failures)),
            Case::Bf16 => Some(bf16_keys::run(cfg, &entries, &mut failures)),
            Case::Arrow => Some(arrow::run(cfg, &entries, &mut failures)),
            _ => None,
        };
        if let Some(new_rows) = new_rows {
            rows.extend(new_rows);
            continue;
        }
        match reference(&entries) {
            Some(r) => println!(
                "   ratio = this sorter's device ms / {}'s device ms at the same n \
                 (above 1: {} is faster; below 1: this sorter is faster)",
                entries[r].label(),
                entries[r].sorter
            ),
            None => println!("   ratio: none (no bitonic device to compare with)"),
        }
        print_columns();
        let sizes: Vec<usize> = match case {
            Case::Rows { rows, cols } => vec![rows * cols],
            _ => cfg.sizes.clone(),
        };
        for (i, &n) in sizes.iter().enumerate() {
            let seed = cfg.seed ^ ((i as u64 + 1) << 32) ^ (case_id(case) << 56);
            let new_rows = match case {
                Case::U32 => measure::<u32>(cfg, case, n, false, 0, seed, &entries, &mut failures),
                Case::Kv => measure::<u32>(cfg, case, n, true, 0, seed, &entries, &mut failures),
                Case::U64 => measure::<u64>(cfg, case, n, false, 0, seed, &entries, &mut failures),
                Case::Rows { cols, .. } => {
                    measure::<u32>(cfg, case, n, false, cols, seed, &entries, &mut failures)
                }
                // Measured above, or over GPUs only (the configuration asks for --gpus).
                Case::TopK(_) | Case::Bf16 | Case::Arrow | Case::Kv64 => Vec::new(),
            };
            rows.extend(new_rows);
        }
    }

    println!();
    if scaling_target.is_some() {
        let path = scaling::csv_path(&cfg.csv);
        match scaling::write_csv(&path, &scaling_rows) {
            Ok(()) => println!("CSV:  {} (GPU scaling)", path.display()),
            Err(e) => {
                eprintln!("bitonic: cannot write {}: {e}", path.display());
                failures.errors += 1;
            }
        }
    }
    match write_csv(cfg, &rows) {
        Ok(()) => println!("CSV:  {}", cfg.csv.display()),
        Err(e) => {
            eprintln!("bitonic: cannot write {}: {e}", cfg.csv.display());
            failures.errors += 1;
        }
    }
    let plotted = plot_svg(cfg, &rows)
        .and_then(|doc| std::fs::write(&cfg.plot, doc).map_err(|e| e.to_string()));
    match plotted {
        Ok(()) => println!("plot: {}", cfg.plot.display()),
        Err(e) => {
            eprintln!("bitonic: cannot write {}: {e}", cfg.plot.display());
            failures.errors += 1;
        }
    }
    if !failures.wrong.is_empty() {
        eprintln!();
        for w in &failures.wrong {
            eprintln!("!!! WRONG RESULT: {w}");
        }
        return Err(format!(
            "{} WRONG RESULT(S) (and {} other error(s)); see above",
            failures.wrong.len(),
            failures.errors
        ));
    }
    if failures.errors > 0 {
        return Err(format!(
            "{} sorter error(s); see the notes in the tables",
            failures.errors
        ));
    }
    Ok(())
}

fn case_id(case: Case) -> u64 {
    match case {
        Case::U32 => 1,
        Case::Kv => 2,
        Case::U64 => 3,
        Case::Rows { .. } => 4,
        Case::TopK(_) => 5,
        Case::Bf16 => 6,
        Case::Arrow => 7,
        Case::Kv64 => 8,
    }
}

/// Every sorter of the comparison, ours first (CUDA, then OpenCL), then CUB, then the CPU.
/// Prints what is available and why the rest is not.
fn entries(cfg: &CompareConfig) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut cuda_ordinal = 0;
    for b in bitonic::devices() {
        let name = match b.backend {
            BackendKind::Cuda => "CUDA",
            BackendKind::OpenCl => "OpenCL",
            BackendKind::Cpu => continue, // the CPU row is Rust's own sort, below
        };
        if let Some(why) = &b.unavailable {
            println!("{name:<7} unavailable ({why})");
            continue;
        }
        if b.devices.is_empty() {
            println!("{name:<7} unavailable (no devices)");
        }
        for d in &b.devices {
            match common::open(d) {
                Ok(s) => {
                    println!("{name:<7} {d}");
                    if d.backend == BackendKind::Cuda && out.is_empty() {
                        // CUB runs on the GPU of our first CUDA device.
                        cuda_ordinal = d.index as i32;
                    }
                    out.push(Entry {
                        sorter: "bitonic".into(),
                        device: format!("{}:{} {}", d.backend, d.index, d.name),
                        runner: Runner::Ours(s),
                    });
                }
                Err(e) => println!("{name:<7} {d}: unavailable ({e})"),
            }
            // A GPU's data-oblivious mode (the network alone) beside its default, which
            // merges sorted tiles.
            let gpu = d.backend != BackendKind::Cpu && d.device_type == DeviceType::Gpu;
            let oblivious = gpu.then(|| common::open_in_mode(d, true));
            if let Some(Ok(s)) = oblivious {
                out.push(Entry {
                    sorter: "bitonic-oblivious".into(),
                    device: format!("{}:{} {}", d.backend, d.index, d.name),
                    runner: Runner::Ours(s),
                });
            }
        }
    }
    // Ours in the order the ratios want: CUDA, then OpenCL GPUs, then other OpenCL devices
    // (the reference is measured first at each size).
    out.sort_by_key(|e| match &e.runner {
        Runner::Ours(s) => (
            s.device().backend != BackendKind::Cuda,
            s.device().device_type != DeviceType::Gpu,
        ),
        _ => (true, true),
    });
    match cub::probe(cuda_ordinal) {
        Ok(dev) => {
            println!(
                "CUB     {} on {} ({})",
                cub::version().unwrap_or_default(),
                dev.label,
                cub::build_status()
            );
            for algo in [CubAlgo::Radix, CubAlgo::Merge, CubAlgo::Segmented] {
                out.push(Entry {
                    sorter: algo.name().into(),
                    device: dev.label.clone(),
                    runner: Runner::Cub(dev.clone(), algo),
                });
            }
        }
        Err(why) => println!("CUB     {why}"),
    }
    out.extend(torch_entry(cfg, cuda_ordinal));
    println!(
        "CPU     Rust par_sort_unstable on the host ({} rayon threads), up to 2^{}",
        rayon::current_num_threads(),
        cfg.cpu_max_log
    );
    out.push(Entry {
        sorter: "rust-cpu".into(),
        device: format!("host CPU ({} threads)", rayon::current_num_threads()),
        runner: Runner::Cpu,
    });
    out.retain(|e| {
        let label = e.label().to_lowercase();
        // Our sorters also answer to their backend and device type ("opencl-cpu" for PoCL,
        // whose devices are named after the processor, not the driver).
        let kind = match &e.runner {
            Runner::Ours(s) => {
                let d = s.device();
                let ty = if d.device_type == DeviceType::Gpu {
                    "gpu"
                } else {
                    "cpu"
                };
                Some(format!("{}-{ty}", d.backend))
            }
            _ => None,
        };
        let skip = cfg
            .skip
            .iter()
            .any(|s| label.contains(s.as_str()) || kind.as_deref() == Some(s.as_str()));
        if skip {
            println!("(left out by --skip: {})", e.label());
        }
        !skip
    });
    out
}

/// Whether `--skip` leaves out every sorter whose label starts with `name`.
fn skips_name(cfg: &CompareConfig, name: &str) -> bool {
    let name = name.to_lowercase();
    cfg.skip.iter().any(|s| name.contains(s.as_str()))
}

/// The torch peer on CUDA device `ordinal`: started once for the whole run, so that a
/// missing python3, torch or CUDA is found once (its rows then say why in their note) and
/// each size costs one request. None when `--skip` names it (then nothing is started).
fn torch_entry(cfg: &CompareConfig, ordinal: i32) -> Option<Entry> {
    if skips_name(cfg, torch::NAME) {
        println!("(left out by --skip: {}, not started)", torch::NAME);
        return None;
    }
    let mut launch = Launch::new(&cfg.python, ordinal);
    launch.hold = cfg.cuda.hold;
    Some(match torch::probe(&launch) {
        Ok(peer) => {
            println!(
                "torch   torch.sort, torch {} on {} ({})",
                peer.version, peer.label, cfg.python
            );
            Entry {
                sorter: torch::NAME.into(),
                device: peer.label.clone(),
                runner: Runner::Torch(Box::new(peer)),
            }
        }
        Err(why) => {
            println!("torch   unavailable ({why})");
            Entry {
                sorter: torch::NAME.into(),
                device: "(unavailable)".into(),
                runner: Runner::TorchUnavailable(why),
            }
        }
    })
}

/// The entry the ratios divide by: our CUDA backend, else our first GPU, else our first
/// device.
fn reference(entries: &[Entry]) -> Option<usize> {
    let ours = |pred: &dyn Fn(&Sorter) -> bool| {
        entries
            .iter()
            .position(|e| matches!(&e.runner, Runner::Ours(s) if pred(s)))
    };
    ours(&|s| s.device().backend == BackendKind::Cuda)
        .or_else(|| ours(&|s| s.device().device_type == DeviceType::Gpu))
        .or_else(|| ours(&|_| true))
}

/// Whether `entry` runs in `case`: the segmented sort only for rows, the other CUB sorts
/// only for whole arrays.
fn runs_case(entry: &Entry, case: Case) -> bool {
    match (&entry.runner, case) {
        (Runner::Cub(_, CubAlgo::Segmented), Case::Rows { .. }) => true,
        (Runner::Cub(_, CubAlgo::Segmented), _) => false,
        (Runner::Cub(_, _), Case::Rows { .. }) => false,
        _ => true,
    }
}
