//! The `bitonic` command's subcommands, and what they share: size parsing and medians.

pub mod bench;
pub mod compare;
pub mod cub;
pub mod plot;
pub mod torch;

use bitonic::{BackendKind, Sorter};

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

/// Parses a comma-separated list of sizes (see [`parse_size`]).
pub fn parse_sizes(s: &str) -> Result<Vec<usize>, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(parse_size)
        .collect()
}

/// Parses a number given to `flag`.
pub fn parse_number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("{flag} {value}: not a number"))
}

/// `2^k` for powers of two, the plain number otherwise.
pub fn size_label(n: usize) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

/// The median of `times` (the upper one of the middle two for an even count); NaN if empty.
pub fn median(times: &[f64]) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The smallest of `times`; NaN if empty.
pub fn minimum(times: &[f64]) -> f64 {
    times
        .iter()
        .copied()
        .min_by(f64::total_cmp)
        .unwrap_or(f64::NAN)
}

/// `backend:index name`, the label of a device in tables.
pub fn device_label(sorter: &Sorter) -> String {
    let d = sorter.device();
    format!("{}:{} {}", d.backend, d.index, d.name)
}

/// Every available device: each GPU and OpenCL device found, and the host CPU (last).
/// Backends that cannot start are reported on stderr.
pub fn sorters() -> Vec<Sorter> {
    let mut out = Vec::new();
    for b in bitonic::devices() {
        if let Some(why) = &b.unavailable {
            eprintln!("note: {} not benchmarked: {why}", b.backend);
            continue;
        }
        for d in &b.devices {
            let built = Sorter::builder()
                .ignore_env()
                .backend(d.backend)
                .device_index(d.index)
                .build();
            match built {
                Ok(s) => out.push(s),
                Err(e) => eprintln!("note: {d} not benchmarked: {e}"),
            }
        }
    }
    // The CPU last, as the baseline row of each size.
    out.sort_by_key(|s| s.device().backend == BackendKind::Cpu);
    out
}

/// The first `max` characters of `s`.
pub fn truncate(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_sizes("2^10, 1000,1<<3").unwrap(), [1024, 1000, 8]);
        assert!(parse_size("2^x").is_err());
        assert!(parse_size("2^99").is_err());
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 3.0);
        assert!(median(&[]).is_nan());
        assert_eq!(minimum(&[3.0, 1.0, 2.0]), 1.0);
    }

    #[test]
    fn labels() {
        assert_eq!(size_label(1 << 20), "2^20");
        assert_eq!(size_label(1000), "1000");
    }
}
