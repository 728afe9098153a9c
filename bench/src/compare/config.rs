//! What `bitonic bench --compare` is asked to measure: the configuration from the command
//! line, and the names of `--cases`.

use super::*;

/// What `bitonic bench --compare` measures.
pub struct CompareConfig {
    /// Key counts (the rows case has its own).
    pub sizes: Vec<usize>,
    /// Timed runs of each device-resident measurement.
    pub runs: usize,
    /// Untimed runs before them.
    pub warmup: usize,
    /// Timed host round trips of our backends and torch (after one untimed one); inputs of
    /// at most [`SHORT_TRIP_BYTES`] take [`CompareConfig::trip_runs`] instead.
    pub roundtrip_runs: usize,
    /// Seed of the random input.
    pub seed: u64,
    /// The input's pattern (`measure::arrange`): random, sorted, reversed, few or organ.
    pub pattern: String,
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
    /// Row counts of the arrow case's `sort_to_indices`.
    pub arrow_sizes: Vec<usize>,
    /// Row counts of the arrow case's `lexsort_to_indices`.
    pub lex_sizes: Vec<usize>,
    /// GPU counts of `--gpus` (empty: no scaling measurement; see `scaling`).
    pub gpus: Vec<usize>,
}

/// Inputs of at most this many bytes (keys and values) time their host round trips as the
/// device-resident times are timed, `warmup` untimed and at least `runs` timed: such a round
/// trip takes microseconds, where a median of a few is as noisy as the host's scheduling,
/// and the CPU peer beside them is timed that way too.
pub const SHORT_TRIP_BYTES: usize = 1 << 20;

impl CompareConfig {
    /// Untimed and timed host round trips of an input of `bytes`.
    pub fn trip_runs(&self, bytes: usize) -> (usize, usize) {
        if bytes <= SHORT_TRIP_BYTES {
            (self.warmup.max(1), self.runs.max(self.roundtrip_runs))
        } else {
            (1, self.roundtrip_runs)
        }
    }
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
        pattern: a.pattern.clone(),
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
        arrow_sizes: Vec::new(),
        lex_sizes: Vec::new(),
        gpus: a.gpus.iter().map(|&g| g as usize).collect(),
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
    // The arrow case's own sizes, unless --sizes gives them all: sort_to_indices from 2^20 to
    // 2^26, lexsort_to_indices at 2^24, cut at --max-log.
    if a.sizes.is_empty() {
        let top = a.max_log.unwrap_or(26).min(26);
        cfg.arrow_sizes = (20..=top).step_by(2).map(|k| 1usize << k).collect();
        cfg.lex_sizes = vec![1 << 24.min(a.max_log.unwrap_or(24))];
    } else {
        cfg.arrow_sizes = cfg.sizes.clone();
        cfg.lex_sizes = cfg.sizes.clone();
    }
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
    if cfg.gpus.is_empty() && cfg.cases.contains(&Case::Kv64) {
        return Err("--cases kv64 is measured over GPUs only: give --gpus (1 for one GPU)".into());
    }
    Ok(cfg)
}

/// One name of `--cases`.
pub(super) fn parse_case(c: &str) -> Result<Case, String> {
    Ok(match c {
        "u32" => Case::U32,
        "kv" | "u32+u32" => Case::Kv,
        "u64" => Case::U64,
        "kv64" | "u64+u64" => Case::Kv64,
        "rows" => Case::Rows {
            rows: 16384,
            cols: 1024,
        },
        "topk" => Case::TopK(None),
        "bf16" => Case::Bf16,
        "arrow" => Case::Arrow,
        other if other.starts_with("topk") => {
            Case::TopK(Some(top_k::parse_shape(other.trim_start_matches("topk"))?))
        }
        other if other.starts_with("rows") => {
            let (rows, cols) =
                args::parse_rows(other.trim_start_matches("rows").trim_start_matches(':'))?;
            Case::Rows { rows, cols }
        }
        other => {
            return Err(format!(
                "--cases: unknown case {other:?} (u32, kv, u64, kv64, rows, rowsRxC, topk, \
                 topkRxC:K, bf16, arrow)"
            ));
        }
    })
}
