//! A small SVG line plot written as text: keys/s against n on log-log axes, one line per
//! sorter, one panel per case, with a legend.

use std::fmt::Write;

/// One sorter's points: (n, keys per second).
pub struct Series {
    /// The legend's text.
    pub label: String,
    /// Points with n > 0 and keys/s > 0 (others are left out).
    pub points: Vec<(f64, f64)>,
}

/// One case: a titled pair of axes.
pub struct Panel {
    /// The title above the axes.
    pub title: String,
    /// The lines.
    pub series: Vec<Series>,
}

const WIDTH: f64 = 980.0;
const PANEL_HEIGHT: f64 = 430.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 330.0; // the legend's column
const TOP: f64 = 40.0;
const BOTTOM: f64 = 55.0;
const COLORS: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// The SVG document; a series keeps its color (by label) across panels.
pub fn svg(panels: &[Panel]) -> String {
    let mut labels: Vec<&str> = Vec::new();
    for s in panels.iter().flat_map(|p| &p.series) {
        if !labels.contains(&s.label.as_str()) {
            labels.push(&s.label);
        }
    }
    let color = |label: &str| {
        let i = labels.iter().position(|l| *l == label).unwrap_or(0);
        COLORS[i % COLORS.len()]
    };
    let height = PANEL_HEIGHT * panels.len().max(1) as f64;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r#"<rect width="{WIDTH}" height="{height}" fill="white"/>"#
    );
    for (i, panel) in panels.iter().enumerate() {
        panel_svg(&mut out, panel, i as f64 * PANEL_HEIGHT, &color);
    }
    out.push_str("</svg>\n");
    out
}

fn panel_svg(out: &mut String, panel: &Panel, y0: f64, color: &dyn Fn(&str) -> &'static str) {
    let points = || {
        panel
            .series
            .iter()
            .flat_map(|s| &s.points)
            .filter(|(n, k)| *n > 0.0 && *k > 0.0 && k.is_finite())
    };
    let (x_lo, x_hi) = bounds(points().map(|p| p.0.log2()));
    let (y_lo, y_hi) = bounds(points().map(|p| p.1.log10()));
    let (mut x_lo, mut x_hi) = (x_lo.floor(), x_hi.ceil());
    if x_hi - x_lo < 2.0 {
        // One size (the rows case): centre it.
        x_lo -= 1.0;
        x_hi += 1.0;
    }
    let (y_lo, y_hi) = (y_lo.floor(), y_hi.ceil().max(y_lo.floor() + 1.0));
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = PANEL_HEIGHT - TOP - BOTTOM;
    let top = y0 + TOP;
    let x_of = |n: f64| LEFT + (n.log2() - x_lo) / (x_hi - x_lo) * plot_w;
    let y_of = |k: f64| top + plot_h - (k.log10() - y_lo) / (y_hi - y_lo) * plot_h;

    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" font-size="14" font-weight="bold">{}</text>"#,
        LEFT,
        y0 + 24.0,
        escape(&panel.title)
    );
    // Grid and ticks: every power of two on x (every second one when crowded), every decade
    // on y.
    let x_step = if x_hi - x_lo > 12.0 { 2.0 } else { 1.0 };
    let mut k = x_lo;
    while k <= x_hi + 1e-9 {
        let x = LEFT + (k - x_lo) / (x_hi - x_lo) * plot_w;
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{:.1}" stroke="#e0e0e0"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">2^{k}</text>"##,
            top + plot_h,
            top + plot_h + 16.0
        );
        k += x_step;
    }
    let mut d = y_lo;
    while d <= y_hi + 1e-9 {
        let y = top + plot_h - (d - y_lo) / (y_hi - y_lo) * plot_h;
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e0e0e0"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0,
            decade_label(d as i32)
        );
        d += 1.0;
    }
    let _ = writeln!(
        out,
        r#"<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">n (keys, log scale)</text>"#,
        LEFT + plot_w / 2.0,
        top + plot_h + 38.0
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle">keys/s (device-resident, log scale)</text>"#,
        top + plot_h / 2.0
    );

    // Lines and markers, then the legend.
    for (i, s) in panel.series.iter().enumerate() {
        let c = color(&s.label);
        let mut sorted = s.points.clone();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let pts: Vec<String> = sorted
            .iter()
            .filter(|(n, k)| *n > 0.0 && *k > 0.0 && k.is_finite())
            .map(|&(n, k)| format!("{:.1},{:.1}", x_of(n), y_of(k)))
            .collect();
        if pts.len() > 1 {
            let _ = writeln!(
                out,
                r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="2"/>"#,
                pts.join(" ")
            );
        }
        for p in &pts {
            let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(out, r#"<circle cx="{x}" cy="{y}" r="3" fill="{c}"/>"#);
        }
        let ly = top + 10.0 + i as f64 * 18.0;
        let lx = LEFT + plot_w + 16.0;
        let _ = writeln!(
            out,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{c}" stroke-width="3"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 22.0,
            lx + 28.0,
            ly + 4.0,
            escape(&super::truncate(&s.label, 44))
        );
    }
}

/// (min, max) of the values, or (0, 1) when there are none.
fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values
        .fold(None, |acc: Option<(f64, f64)>, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
        .unwrap_or((0.0, 1.0))
}

/// 10^d keys/s as `1M`, `10G`, ...
fn decade_label(d: i32) -> String {
    let (unit, base) = match d {
        ..=2 => ("", 0),
        3..=5 => ("k", 3),
        6..=8 => ("M", 6),
        9..=11 => ("G", 9),
        _ => ("T", 12),
    };
    if d < 0 {
        return format!("1e{d}");
    }
    format!("{}{unit}", 10u64.pow((d - base) as u32))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decades() {
        assert_eq!(decade_label(6), "1M");
        assert_eq!(decade_label(10), "10G");
        assert_eq!(decade_label(2), "100");
    }

    #[test]
    fn document_has_one_line_per_series() {
        let panels = [Panel {
            title: "u32 <keys>".into(),
            series: vec![
                Series {
                    label: "a".into(),
                    points: vec![(1024.0, 1e7), (65536.0, 1e9)],
                },
                Series {
                    label: "b".into(),
                    points: vec![(1024.0, 2e7)],
                },
            ],
        }];
        let doc = svg(&panels);
        assert!(doc.starts_with("<svg"));
        assert!(doc.trim_end().ends_with("</svg>"));
        assert_eq!(doc.matches("<polyline").count(), 1);
        assert_eq!(doc.matches("<circle").count(), 3);
        assert!(doc.contains("u32 &lt;keys&gt;"));
    }
}
