//! What the subcommands share: medians, labels, the list of devices.

use bitonic::{BackendKind, DeviceInfo, Sorter};

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

/// A sorter on exactly device `d`, whatever the environment asks for.
pub fn open(d: &DeviceInfo) -> bitonic::Result<Sorter> {
    open_in_mode(d, false)
}

/// A sorter on `d`, running the sorting network alone when `oblivious`
/// (`SorterBuilder::oblivious`).
pub fn open_in_mode(d: &DeviceInfo, oblivious: bool) -> bitonic::Result<Sorter> {
    Sorter::builder()
        .ignore_env()
        .backend(d.backend)
        .device_index(d.index)
        .oblivious(oblivious)
        .build()
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
            match open(d) {
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
