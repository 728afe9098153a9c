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

use bitonic::keys::Word;
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

/// One kind of input the comparison sorts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// `u32` keys.
    U32,
    /// `u32` keys with `u32` values.
    Kv,
    /// `u64` keys.
    U64,
    /// `rows` rows of `cols` `u32` keys, each row sorted on its own (all rows at once).
    Rows {
        /// Number of rows.
        rows: usize,
        /// Keys per row.
        cols: usize,
    },
}

impl Case {
    /// The case's name in tables and the CSV.
    pub fn name(self) -> String {
        match self {
            Case::U32 => "u32".into(),
            Case::Kv => "u32+u32".into(),
            Case::U64 => "u64".into(),
            Case::Rows { rows, cols } => format!("rows{rows}x{cols}"),
        }
    }

    /// A sentence describing the case.
    pub fn title(self) -> String {
        match self {
            Case::U32 => "u32 keys".into(),
            Case::Kv => "u32 keys + u32 values (sort by key)".into(),
            Case::U64 => "u64 keys".into(),
            Case::Rows { rows, cols } => {
                format!("{rows} rows x {cols} u32 keys, each row sorted independently")
            }
        }
    }
}

/// What `bitonic bench --compare` measures.
pub struct CompareConfig {
    /// Key counts (the rows case has its own).
    pub sizes: Vec<usize>,
    /// Timed runs of each device-resident measurement.
    pub runs: usize,
    /// Untimed runs before them.
    pub warmup: usize,
    /// Timed host round trips of our backends (after one untimed one).
    pub roundtrip_runs: usize,
    /// Seed of the random input.
    pub seed: u64,
    /// The cases, in order.
    pub cases: Vec<Case>,
    /// The CPU sort runs up to 2^this keys.
    pub cpu_max_log: u32,
    /// OpenCL CPU devices (PoCL) run up to 2^this keys.
    pub opencl_cpu_max_log: u32,
    /// Sorters whose label contains one of these (ignoring case) are left out.
    pub skip: Vec<String>,
    /// The Python interpreter that runs the torch peer.
    pub python: String,
    /// Where the CSV goes.
    pub csv: PathBuf,
    /// Where the SVG plot goes.
    pub plot: PathBuf,
    /// How our CUDA sorts are timed (and whether CUB's stream is held too).
    pub cuda: CudaOptions,
}

/// The configuration that `args` (with `--compare`) asks for.
pub fn config(a: &BenchArgs) -> Result<CompareConfig, String> {
    let runs = a.runs.map_or(15, |r| r as usize);
    let mut cfg = CompareConfig {
        sizes: a.sizes.clone(),
        runs,
        warmup: a.warmup,
        roundtrip_runs: a.roundtrip_runs.filter(|&r| r > 0).unwrap_or(runs),
        seed: a.seed,
        cases: Vec::new(),
        cpu_max_log: a.cpu_max_log,
        opencl_cpu_max_log: a.opencl_cpu_max_log,
        skip: a
            .skip
            .iter()
            .map(|s| s.trim().to_lowercase())
            .filter(|s| !s.is_empty())
            .collect(),
        python: a.python.clone(),
        csv: a.csv.clone(),
        plot: a.plot.clone(),
        cuda: CudaOptions {
            hold: !a.no_hold,
            graph: !a.no_graph,
        },
    };
    if a.sizes.is_empty() {
        let top = a.max_log.unwrap_or(28).min(40);
        cfg.sizes = (10..=top).step_by(2).map(|k| 1usize << k).collect();
        if cfg.sizes.is_empty() {
            cfg.sizes.push(1 << top);
        }
    } else if let Some(k) = a.max_log {
        cfg.sizes.retain(|&n| (n as u128) <= 1u128 << k);
    }
    cfg.sizes.retain(|&n| n > 0);
    cfg.sizes.sort_unstable();
    cfg.sizes.dedup();
    cfg.cases = if a.cases.is_empty() {
        let mut cases = vec![Case::U32];
        if a.kv {
            cases.push(Case::Kv);
        }
        if a.u64 {
            cases.push(Case::U64);
        }
        cases.extend(a.rows.iter().map(|&(rows, cols)| Case::Rows { rows, cols }));
        cases
    } else {
        a.cases
            .iter()
            .map(|c| parse_case(c.trim()))
            .collect::<Result<_, _>>()?
    };
    cfg.cases.dedup();
    if cfg.cases.is_empty() {
        return Err("no case to run".into());
    }
    Ok(cfg)
}

/// One name of `--cases`.
fn parse_case(c: &str) -> Result<Case, String> {
    Ok(match c {
        "u32" => Case::U32,
        "kv" | "u32+u32" => Case::Kv,
        "u64" => Case::U64,
        "rows" => Case::Rows {
            rows: 16384,
            cols: 1024,
        },
        other if other.starts_with("rows") => {
            let (rows, cols) =
                args::parse_rows(other.trim_start_matches("rows").trim_start_matches(':'))?;
            Case::Rows { rows, cols }
        }
        other => {
            return Err(format!(
                "--cases: unknown case {other:?} (u32, kv, u64, rows, rowsRxC)"
            ));
        }
    })
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
    roundtrip_ms: Vec<f64>,
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
         host round trip (ours: upload + sort + download through Sorter::sort): median of {} runs, \
         reported separately. Random keys (seed {}); every result checked against the CPU's \
         sort of the same input.",
        cfg.runs, cfg.warmup, cfg.roundtrip_runs, cfg.seed
    );
    let mut failures = Failures::default();
    let mut rows: Vec<Row> = Vec::new();
    for &case in &cfg.cases {
        let reference = reference(&entries);
        println!();
        println!("== case {}: {}", case.name(), case.title());
        match reference {
            Some(r) => println!(
                "   ratio = this sorter's device ms / {}'s device ms at the same n \
                 (above 1: {} is faster; below 1: this sorter is faster)",
                entries[r].label(),
                entries[r].sorter
            ),
            None => println!("   ratio: none (no bitonic device to compare with)"),
        }
        println!(
            "{:>6}  {:<14} {:<34} {:>11} {:>11} {:>9} {:>7} {:>13}  note",
            "n", "sorter", "device", "dev ms med", "dev ms min", "Gkeys/s", "ratio", "roundtrip ms"
        );
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
            };
            rows.extend(new_rows);
        }
    }

    println!();
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
        let skip = cfg.skip.iter().any(|s| label.contains(s.as_str()));
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

/// Random words from a seed, filled in parallel chunks (the same words for any thread
/// count).
fn random_words<W: Word>(n: usize, seed: u64) -> Vec<W>
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

/// The input of one case and size, and the CPU's sort of it.
struct Input<W> {
    keys: Vec<W>,
    /// `0..n` as u32, so that each value names its key's input position.
    values: Option<Vec<u32>>,
    row_len: usize,
    want: Vec<W>,
}

impl<W: Word> Input<W> {
    /// Checks sorted output against the CPU's sort: keys equal word for word; each value,
    /// when present, is a distinct input position whose key is the key next to it.
    fn check(&self, keys: &[W], values: Option<&[u32]>) -> Result<(), String> {
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
fn measure<W: CubKey + SortKey>(
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
    let keys: Vec<W> = random_words(n, seed);
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
                let got = roundtrip_ours(sorter, &input, cfg.roundtrip_runs);
                let got = got.map_err(|e| e.to_string());
                if let Some(ms) = measured(
                    &input,
                    got,
                    "round trip",
                    "round trip error",
                    &what,
                    failures,
                    &mut notes,
                ) {
                    row.roundtrip_ms = ms;
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

/// The first line of an error for the row's note; the whole error goes to stderr when it
/// has more (an OpenCL build log, say).
fn error_note(what: &str, kind: &str, error: &str) -> String {
    let first = error.lines().next().unwrap_or("");
    if error.lines().nth(1).is_some() {
        eprintln!("{what}: {kind}:\n{error}");
    }
    format!("{kind}: {}", truncate(first, 160))
}

/// The times of a measurement that ran and whose output passed the check; none when it
/// failed to run (an error, counted, with its note) or its check failed.
fn measured<W: Word>(
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
fn checked_times<W: Word>(
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
fn record_check(
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

fn print_row(row: &Row, reference_ms: Option<f64>, note: &str) {
    let dash = || "-".to_string();
    let (med, min, gkeys, ratio) = if row.device_ms.is_empty() {
        (dash(), dash(), dash(), dash())
    } else {
        let med = median(&row.device_ms);
        (
            format!("{med:.4}"),
            format!("{:.4}", minimum(&row.device_ms)),
            format!("{:.3}", row.n as f64 / (med * 1e-3) / 1e9),
            reference_ms.map_or_else(dash, |r| format!("{:.2}", med / r)),
        )
    };
    let roundtrip = if row.roundtrip_ms.is_empty() {
        dash()
    } else {
        format!("{:.3}", median(&row.roundtrip_ms))
    };
    println!(
        "{:>6}  {:<14} {:<34} {:>11} {:>11} {:>9} {:>7} {:>13}  {}",
        size_label(row.n),
        row.sorter,
        truncate(&row.device, 34),
        med,
        min,
        gkeys,
        ratio,
        roundtrip,
        note
    );
    let _ = std::io::stdout().flush();
}

/// Sorted output of one measurement: keys, and values when the case has them.
type Sorted<W> = (Vec<W>, Option<Vec<u32>>);

/// Milliseconds of each timed run, and the sorted output of the last one.
type Timed<W> = (Vec<f64>, Vec<W>, Option<Vec<u32>>);

/// Our device-resident time: the library's device-buffer calls between device events
/// (`src/device_timing`).
fn time_ours<W: Word>(
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
/// `sort_rows` / `sort_rows_by_key`): upload, sort, download; one untimed run first.
fn roundtrip_ours<W: Word + SortKey>(
    sorter: &Sorter,
    input: &Input<W>,
    runs: usize,
) -> Result<Timed<W>, Error> {
    let mut keys = input.keys.clone();
    let mut values = input.values.clone();
    let mut ms = Vec::with_capacity(runs);
    for run in 0..=runs {
        keys.copy_from_slice(&input.keys);
        if let (Some(v), Some(src)) = (values.as_mut(), input.values.as_ref()) {
            v.copy_from_slice(src);
        }
        let start = Instant::now();
        match (values.as_mut(), input.row_len) {
            (Some(v), 0) => sorter.sort_by_key(&mut keys, v)?,
            (None, 0) => sorter.sort(&mut keys)?,
            (Some(v), row_len) => sorter.sort_rows_by_key(&mut keys, v, row_len)?,
            (None, row_len) => sorter.sort_rows(&mut keys, row_len)?,
        }
        let elapsed = start.elapsed().as_secs_f64() * 1e3;
        if run > 0 {
            ms.push(elapsed);
        }
    }
    Ok((ms, keys, values))
}

/// The CPU peer, timed with the wall clock on host data: `par_sort_unstable` for keys,
/// `par_sort_unstable_by_key` on (key, value) pairs, `sort_unstable` per row in parallel.
fn time_cpu<W: Word>(input: &Input<W>, warmup: usize, runs: usize) -> Timed<W> {
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

/// One CSV field, quoted when it needs to be.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn write_csv(cfg: &CompareConfig, rows: &[Row]) -> std::io::Result<()> {
    let mut text = String::from(
        "case,sorter,device,n,device_ms_median,device_ms_min,runs,roundtrip_ms_median,keys_per_s\n",
    );
    let num = |v: f64| {
        if v.is_finite() {
            format!("{v:.6}")
        } else {
            String::new()
        }
    };
    for r in rows {
        if r.device_ms.is_empty() && r.roundtrip_ms.is_empty() {
            continue;
        }
        let med = median(&r.device_ms);
        text.push_str(&format!(
            "{},{},{},{},{},{},{},{},{}\n",
            csv_field(&r.case),
            csv_field(&r.sorter),
            csv_field(&r.device),
            r.n,
            num(med),
            num(minimum(&r.device_ms)),
            if r.device_ms.is_empty() {
                0
            } else {
                r.device_ms.len()
            },
            num(median(&r.roundtrip_ms)),
            if med.is_finite() && med > 0.0 {
                format!("{:.0}", r.n as f64 / (med * 1e-3))
            } else {
                String::new()
            },
        ));
    }
    std::fs::write(&cfg.csv, text)
}

/// One panel per case; one line per sorter with device-resident times.
fn plot_svg(cfg: &CompareConfig, rows: &[Row]) -> Result<String, String> {
    let mut panels = Vec::new();
    for case in &cfg.cases {
        let name = case.name();
        let mut series: Vec<Series> = Vec::new();
        for r in rows
            .iter()
            .filter(|r| r.case == name && !r.device_ms.is_empty())
        {
            let keys_per_s = r.n as f64 / (median(&r.device_ms) * 1e-3);
            match series.iter_mut().find(|s| s.label == r.label) {
                Some(s) => s.points.push((r.n as f64, keys_per_s)),
                None => series.push(Series {
                    label: r.label.clone(),
                    points: vec![(r.n as f64, keys_per_s)],
                }),
            }
        }
        panels.push(Panel {
            title: format!(
                "{}: device-resident keys/s (median of {} runs)",
                case.title(),
                cfg.runs
            ),
            series,
        });
    }
    plot::svg(&panels)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// `bitonic bench <args>` through clap, then [`config`].
    fn parse(a: &[String], _: &str) -> Result<CompareConfig, String> {
        use clap::Parser;
        let argv = ["bitonic", "bench"]
            .into_iter()
            .map(String::from)
            .chain(a.iter().cloned());
        match crate::args::Cli::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .command
        {
            crate::args::Command::Bench(b) => config(&b),
            crate::args::Command::Devices => Err("parsed as devices".into()),
        }
    }

    #[test]
    fn defaults() {
        let cfg = parse(&args("--compare"), "").unwrap();
        assert_eq!(cfg.sizes.first(), Some(&(1 << 10)));
        assert_eq!(cfg.sizes.last(), Some(&(1 << 28)));
        assert_eq!(cfg.sizes.len(), 10);
        assert_eq!(cfg.runs, 15);
        assert_eq!(cfg.roundtrip_runs, 15);
        assert_eq!(cfg.cases, [Case::U32]);
    }

    #[test]
    fn options() {
        let cfg = parse(
            &args("--compare --max-log 16 --kv --u64 --rows 128x1024 --runs 5"),
            "",
        )
        .unwrap();
        assert_eq!(cfg.sizes, [1 << 10, 1 << 12, 1 << 14, 1 << 16]);
        assert_eq!(
            cfg.cases,
            [
                Case::U32,
                Case::Kv,
                Case::U64,
                Case::Rows {
                    rows: 128,
                    cols: 1024
                }
            ]
        );
        let cfg = parse(
            &args("--compare --sizes 2^10,1000,2^20 --max-log 12 --cases kv"),
            "",
        )
        .unwrap();
        assert_eq!(cfg.sizes, [1000, 1 << 10]);
        assert_eq!(cfg.cases, [Case::Kv]);
        assert!(parse(&args("--compare --rows 12"), "").is_err());
        assert!(parse(&args("--compare --runs 0"), "").is_err());
    }

    #[test]
    fn check_finds_wrong_values() {
        let keys = vec![5u32, 3, 5, 1];
        let mut want = keys.clone();
        want.sort_unstable();
        let input = Input {
            keys,
            values: Some(vec![0, 1, 2, 3]),
            row_len: 0,
            want,
        };
        assert!(input.check(&[1, 3, 5, 5], Some(&[3, 1, 2, 0])).is_ok());
        assert!(input.check(&[1, 3, 5, 5], Some(&[3, 1, 0, 0])).is_err());
        assert!(input.check(&[1, 3, 5, 5], Some(&[3, 1, 2, 1])).is_err());
        assert!(input.check(&[1, 5, 3, 5], Some(&[3, 0, 1, 2])).is_err());
    }

    #[test]
    fn torch_options() {
        let cfg = parse(
            &args("--compare --python /opt/py/bin/python3 --skip Torch"),
            "",
        )
        .unwrap();
        assert_eq!(cfg.python, "/opt/py/bin/python3");
        assert!(skips_name(&cfg, torch::NAME));
        assert!(
            torch_entry(&cfg, 0).is_none(),
            "--skip torch starts nothing"
        );
        let cfg = parse(&args("--compare --skip cub"), "").unwrap();
        assert_eq!(cfg.python, "python3");
        assert!(!skips_name(&cfg, torch::NAME));
    }

    #[test]
    fn missing_torch_is_a_note_not_an_error() {
        let mut cfg = parse(&args("--compare --runs 2 --warmup 0"), "").unwrap();
        cfg.python = "/nonexistent/bitonic-test/python3".into();
        let entry = torch_entry(&cfg, 0).expect("an entry that says why");
        let Runner::TorchUnavailable(why) = &entry.runner else {
            panic!("torch cannot run without python");
        };
        assert!(why.contains("not found"), "{why}");
        assert_eq!(entry.sorter, "torch-sort");
        assert!(
            entry
                .skip_reason(&cfg, 1024, 4)
                .unwrap()
                .contains("not found")
        );
        let mut failures = Failures::default();
        let rows = measure::<u32>(&cfg, Case::U32, 1024, false, 0, 5, &[entry], &mut failures);
        assert!(rows.is_empty());
        assert_eq!(failures.errors, 0);
        assert!(failures.wrong.is_empty());
    }

    /// The torch peer started by `launch` as the only entry; python3 (which
    /// `scripts/setup.sh` needs as well) must run here.
    fn torch_entries(launch: &Launch) -> [Entry; 1] {
        let peer = torch::probe(launch).expect("python3 runs the torch peer's script here");
        [Entry {
            sorter: torch::NAME.into(),
            device: peer.label.clone(),
            runner: Runner::Torch(Box::new(peer)),
        }]
    }

    /// The torch entry through `measure`, with the script's host-only backend (needs
    /// python3, not torch).
    #[test]
    fn torch_entry_measures_and_checks() {
        let entries = torch_entries(&Launch::host_test("python3"));
        let cfg = parse(&args("--compare --runs 2 --warmup 1"), "").unwrap();
        let mut failures = Failures::default();
        let cases = [
            (Case::U32, false, 0),
            (Case::Kv, true, 0),
            (Case::Rows { rows: 8, cols: 64 }, false, 64),
        ];
        for (case, with_values, row_len) in cases {
            let rows = measure::<u32>(
                &cfg,
                case,
                512,
                with_values,
                row_len,
                3,
                &entries,
                &mut failures,
            );
            assert_eq!(rows.len(), 1);
            assert_eq!(rows[0].device_ms.len(), 2, "{case:?}");
            assert_eq!(rows[0].sorter, "torch-sort");
        }
        let rows = measure::<u64>(&cfg, Case::U64, 300, false, 0, 4, &entries, &mut failures);
        assert_eq!(rows[0].device_ms.len(), 2);
        assert_eq!(failures.errors, 0);
        assert!(failures.wrong.is_empty(), "{:?}", failures.wrong);
    }

    /// A note from the script reaches the row; the measurement stands.
    #[test]
    fn torch_notes_reach_the_row() {
        let mut launch = Launch::host_test("python3");
        launch.set_env("BITONIC_TORCH_PEER_TEST_NOTE", "1 of 2 timed runs not held");
        let entries = torch_entries(&launch);
        let cfg = parse(&args("--compare --runs 2 --warmup 0"), "").unwrap();
        let mut failures = Failures::default();
        let rows = measure::<u32>(&cfg, Case::U32, 100, false, 0, 6, &entries, &mut failures);
        assert_eq!(rows[0].device_ms.len(), 2);
        assert_eq!(failures.errors, 0);
        assert!(failures.wrong.is_empty(), "{:?}", failures.wrong);
    }

    #[test]
    fn random_words_do_not_depend_on_threads() {
        let a: Vec<u32> = random_words(1 << 19, 9);
        let b: Vec<u32> = random_words(1 << 19, 9);
        assert_eq!(a, b);
        assert!(a.iter().filter(|&&w| w == 0).count() < 4);
    }
}
