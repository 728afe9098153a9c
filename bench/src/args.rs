//! The command line, parsed by clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Sorting with bitonic on every device found: device listing, benchmarks, and comparisons
/// with CUB, torch and rayon. `docs/bench.md` explains every column.
#[derive(Parser, Debug)]
#[command(name = "bitonic", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum Command {
    /// Lists every device of every compiled backend, and why a backend is unavailable.
    Devices,
    /// Sorts random u32 and f32 keys on every available device and on the CPU, checks every
    /// result against Rust's sort, and prints the median host round trip (upload, sort,
    /// download) of R runs after a warm-up. With --compare: device-resident times and host
    /// round trips of our backends next to CUB, torch and rayon, in one run.
    Bench(BenchArgs),
}

/// Options of `bitonic bench` (the ones marked "--compare" need it).
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Per case and size, our CUDA and OpenCL backends (every device), Rust's
    /// par_sort_unstable, CUB's radix and merge sorts (when built with `cuda`) and
    /// torch.sort (when python3 has torch with CUDA): device-resident time (device events,
    /// median of R runs after W warm-ups) and, separately, the host round trip; every result
    /// checked; a table, a CSV and an SVG plot.
    #[arg(long)]
    pub compare: bool,
    /// Key counts, e.g. 2^10,1000,1<<20 [default: 2^10,2^14,2^18,2^22; with --compare
    /// 2^10,2^12,...,2^max-log].
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Vec<usize>,
    /// Timed runs of each measurement [default: 7; with --compare 15].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub runs: Option<u64>,
    /// Seed of the random keys.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// --compare: the largest size is 2^K (default sizes), or sizes above it are dropped.
    #[arg(long, value_name = "K", requires = "compare")]
    pub max_log: Option<u32>,
    /// --compare: untimed runs before the timed device-resident runs.
    #[arg(long, default_value_t = 3, requires = "compare")]
    pub warmup: usize,
    /// --compare: timed host round trips of ours and torch's [default: as many as --runs].
    #[arg(long, requires = "compare")]
    pub roundtrip_runs: Option<usize>,
    /// --compare: the input's pattern: random (the default), sorted, reversed, few (four
    /// distinct keys) or organ (ascending, then descending). Merge-path sorts' speed depends
    /// on it.
    #[arg(long, default_value = "random", value_parser = ["random", "sorted", "reversed", "few", "organ"], requires = "compare")]
    pub pattern: String,
    /// --compare: add u32 keys with u32 values.
    #[arg(long, requires = "compare")]
    pub kv: bool,
    /// --compare: add u64 keys.
    #[arg(long, requires = "compare")]
    pub u64: bool,
    /// --compare: add ROWSxCOLS u32 keys, each row sorted on its own (batched).
    #[arg(long, value_name = "ROWSxCOLS", value_parser = parse_rows, requires = "compare")]
    pub rows: Vec<(usize, usize)>,
    /// --compare: the cases, replacing the default u32 and the flags above: u32, kv, u64,
    /// rows (16384x1024) or rowsRxC.
    #[arg(long, value_delimiter = ',', requires = "compare")]
    pub cases: Vec<String>,
    /// --compare: the CPU sort runs up to 2^K keys.
    #[arg(long, value_name = "K", default_value_t = 26, requires = "compare")]
    pub cpu_max_log: u32,
    /// --compare: OpenCL CPU devices (PoCL) run up to 2^K keys.
    #[arg(long, value_name = "K", default_value_t = 22, requires = "compare")]
    pub opencl_cpu_max_log: u32,
    /// --compare: leave out sorters whose label contains PART (ignoring case).
    #[arg(long, value_name = "PART", value_delimiter = ',', requires = "compare")]
    pub skip: Vec<String>,
    /// --compare: the Python interpreter that runs the torch peer.
    #[arg(long, default_value = "python3", requires = "compare")]
    pub python: String,
    /// --compare: where the CSV goes.
    #[arg(long, default_value = "bench-compare.csv", requires = "compare")]
    pub csv: PathBuf,
    /// --compare: where the SVG plot goes.
    #[arg(long, default_value = "bench-compare.svg", requires = "compare")]
    pub plot: PathBuf,
    /// --compare: time CUDA sorts (ours and CUB's) without holding the stream while the
    /// timed work is queued (the host's launch latency is then inside the time).
    #[arg(long, requires = "compare")]
    pub no_hold: bool,
    /// --compare: time our CUDA sorts with plain launches instead of a replayed CUDA graph.
    #[arg(long, requires = "compare")]
    pub no_graph: bool,
    /// --compare: GPU counts, e.g. 1,2,4: the u32, kv and u64 cases sort host slices on a
    /// sorter over the first N CUDA devices (1 always measured, the baseline), beside rayon
    /// (timed at 2^30 and scaled by n log n above 2^31 keys); speedup and efficiency.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..), requires = "compare")]
    pub gpus: Vec<u64>,
}

/// Accepts `1000`, `2^20` or `1<<20`.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let shift = s.strip_prefix("2^").or_else(|| s.strip_prefix("1<<"));
    let parsed = match shift {
        Some(k) => k.parse::<u32>().ok().and_then(|k| 1usize.checked_shl(k)),
        None => s.parse::<usize>().ok(),
    };
    parsed.ok_or_else(|| format!("{s:?} is not a size (use 1000, 2^20 or 1<<20)"))
}

/// Parses `16384x1024` into (rows, columns), both positive.
pub fn parse_rows(s: &str) -> Result<(usize, usize), String> {
    let (r, c) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("{s}: use ROWSxCOLS, e.g. 16384x1024"))?;
    let (rows, cols) = (parse_size(r)?, parse_size(c)?);
    if rows == 0 || cols == 0 {
        return Err(format!("{s}: rows and columns must be positive"));
    }
    Ok((rows, cols))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("2^10").unwrap(), 1024);
        assert_eq!(parse_size(" 1<<3").unwrap(), 8);
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert!(parse_size("2^x").is_err());
        assert!(parse_size("2^99").is_err());
        assert_eq!(parse_rows("16x2^10").unwrap(), (16, 1024));
        assert!(parse_rows("12").is_err());
        assert!(parse_rows("0x5").is_err());
    }

    #[test]
    fn compare_options_need_compare() {
        assert!(Cli::try_parse_from(["bitonic", "bench", "--kv"]).is_err());
        assert!(Cli::try_parse_from(["bitonic", "bench", "--compare", "--kv"]).is_ok());
        assert!(Cli::try_parse_from(["bitonic", "bench", "--runs", "0"]).is_err());
        let cli = Cli::try_parse_from(["bitonic", "bench", "--sizes", "2^10,1000"]).unwrap();
        match cli.command {
            Command::Bench(b) => assert_eq!(b.sizes, [1024, 1000]),
            Command::Devices => panic!("parsed as devices"),
        }
    }

    #[test]
    fn gpus_parse() {
        let cli =
            Cli::try_parse_from(["bitonic", "bench", "--compare", "--gpus", "1,2,4"]).unwrap();
        match cli.command {
            Command::Bench(b) => assert_eq!(b.gpus, [1, 2, 4]),
            Command::Devices => panic!("parsed as devices"),
        }
        assert!(Cli::try_parse_from(["bitonic", "bench", "--compare", "--gpus", "0"]).is_err());
        assert!(Cli::try_parse_from(["bitonic", "bench", "--compare", "--gpus", "x"]).is_err());
        assert!(Cli::try_parse_from(["bitonic", "bench", "--gpus", "2"]).is_err());
        let cli =
            Cli::try_parse_from(["bitonic", "bench", "--compare", "--sizes", "2^34"]).unwrap();
        match cli.command {
            Command::Bench(b) => assert_eq!(b.sizes, [1usize << 34]),
            Command::Devices => panic!("parsed as devices"),
        }
    }

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
