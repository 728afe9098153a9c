//! The comparison's plot, drawn with plotters into an SVG document: keys/s against n on
//! log-log axes, one line per sorter, one panel per case, with a legend.

use plotters::prelude::*;

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

const WIDTH: u32 = 980;
const PANEL_HEIGHT: u32 = 430;

/// The SVG document; a series keeps its color (by label) across panels.
pub fn svg(panels: &[Panel]) -> Result<String, String> {
    let mut labels: Vec<&str> = Vec::new();
    for s in panels.iter().flat_map(|p| &p.series) {
        if !labels.contains(&s.label.as_str()) {
            labels.push(&s.label);
        }
    }
    let mut doc = String::new();
    {
        let height = PANEL_HEIGHT * panels.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut doc, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let areas = root.split_evenly((panels.len().max(1), 1));
        for (panel, area) in panels.iter().zip(&areas) {
            draw_panel(area, panel, &labels).map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(doc)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The smallest and largest positive values, widened to whole decades.
fn decades(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if hi == 0.0 {
        return (1.0, 10.0);
    }
    let lo = 10f64.powf(lo.log10().floor());
    let hi = 10f64.powf(hi.log10().ceil()).max(lo * 10.0);
    (lo, hi)
}

fn draw_panel(
    area: &Area<'_>,
    panel: &Panel,
    labels: &[&str],
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let points = || {
        panel
            .series
            .iter()
            .flat_map(|s| &s.points)
            .filter(|(x, y)| *x > 0.0 && *y > 0.0)
    };
    let x = decades(points().map(|p| p.0));
    let y = decades(points().map(|p| p.1));
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((x.0..x.1).log_scale(), (y.0..y.1).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("n (keys)")
        .y_desc("keys/s")
        .x_label_formatter(&|v| short(*v))
        .y_label_formatter(&|v| short(*v))
        .draw()?;
    for s in &panel.series {
        let i = labels.iter().position(|l| *l == s.label).unwrap_or(0);
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|(x, y)| *x > 0.0 && *y > 0.0)
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(s.label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// 1000 -> "1k", 1e6 -> "1M", 1e9 -> "1G"; other values as they are.
fn short(v: f64) -> String {
    for (scale, suffix) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if v >= scale {
            return format!("{}{suffix}", v / scale);
        }
    }
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_labels() {
        assert_eq!(short(1e6), "1M");
        assert_eq!(short(1e10), "10G");
        assert_eq!(short(100.0), "100");
    }

    #[test]
    fn document_has_every_series() {
        let panels = [Panel {
            title: "u32 <keys>".into(),
            series: vec![
                Series {
                    label: "alpha".into(),
                    points: vec![(1024.0, 1e7), (65536.0, 1e9)],
                },
                Series {
                    label: "beta".into(),
                    points: vec![(1024.0, 2e7)],
                },
            ],
        }];
        let doc = svg(&panels).unwrap();
        assert!(doc.starts_with("<svg"));
        assert!(doc.trim_end().ends_with("</svg>"));
        assert!(doc.contains("alpha") && doc.contains("beta"));
        assert!(doc.contains("u32 &lt;keys&gt;"));
        // Three points, one circle each.
        assert_eq!(doc.matches("<circle").count(), 3);
    }
}
