//! The comparison's output: the table rows, the CSV file and the plot.

use super::*;

/// The column header of a case's table.
pub(super) fn print_columns() {
    println!(
        "{:>6}  {:<17} {:<34} {:>11} {:>11} {:>9} {:>7} {:>13} {:>10}  note",
        "n",
        "sorter",
        "device",
        "dev ms med",
        "dev ms min",
        "Gkeys/s",
        "ratio",
        "roundtrip ms",
        "pinned ms"
    );
}

/// Prints `row` with its ratio of device times to `reference_ms` (the reference row's
/// median device time).
pub(super) fn print_row(row: &Row, reference_ms: Option<f64>, note: &str) {
    let ratio = reference_ms
        .filter(|_| !row.device_ms.is_empty())
        .map(|r| median(&row.device_ms) / r);
    print_row_ratio(row, ratio, note);
}

/// Prints `row` with the ratio given (cases whose ratio is not one of device times).
pub(super) fn print_row_ratio(row: &Row, ratio: Option<f64>, note: &str) {
    let dash = || "-".to_string();
    let (med, min, gkeys) = if row.device_ms.is_empty() {
        (dash(), dash(), dash())
    } else {
        let med = median(&row.device_ms);
        (
            format!("{med:.4}"),
            format!("{:.4}", minimum(&row.device_ms)),
            format!("{:.3}", row.n as f64 / (med * 1e-3) / 1e9),
        )
    };
    let ratio = ratio.map_or_else(dash, |r| format!("{r:.2}"));
    let trip = |ms: &[f64]| {
        if ms.is_empty() {
            dash()
        } else {
            format!("{:.3}", median(ms))
        }
    };
    println!(
        "{:>6}  {:<17} {:<34} {:>11} {:>11} {:>9} {:>7} {:>13} {:>10}  {}",
        size_label(row.n),
        row.sorter,
        truncate(&row.device, 34),
        med,
        min,
        gkeys,
        ratio,
        trip(&row.roundtrip_ms),
        trip(&row.pinned_ms),
        note
    );
    let _ = std::io::stdout().flush();
}

/// One CSV field, quoted when it needs to be.
pub(super) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub(super) fn write_csv(cfg: &CompareConfig, rows: &[Row]) -> std::io::Result<()> {
    let mut text = String::from(
        "case,sorter,device,n,device_ms_median,device_ms_min,runs,roundtrip_ms_median,\
         pinned_roundtrip_ms_median,keys_per_s\n",
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
            "{},{},{},{},{},{},{},{},{},{}\n",
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
            num(median(&r.pinned_ms)),
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
pub(super) fn plot_svg(cfg: &CompareConfig, rows: &[Row]) -> Result<String, String> {
    let mut panels = Vec::new();
    for case in &cfg.cases {
        // Top-k's shapes share key counts, and the Arrow case's times are round trips:
        // their tables and the CSV have them, the plot of keys/s against n does not.
        if matches!(case, Case::TopK(_) | Case::Arrow) {
            continue;
        }
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
