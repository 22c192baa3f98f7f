//! Plots: the ratio chart every area gets (one bar per headline row, parity and target
//! marked), and a small line-chart helper for the areas that plot curves.

use std::path::Path;

use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::sitting::Record;

type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// One horizontal bar per headline row: how many times better pktvec is than its anchor.
pub fn ratios(path: &Path, record: &Record) -> PlotResult {
    let rows = &record.headline;
    if rows.is_empty() {
        return Ok(());
    }
    let height = 110 + 34 * rows.len() as u32;
    let root = SVGBackend::new(path, (1000, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let max = rows
        .iter()
        .flat_map(|r| [r.ratio, r.target.unwrap_or(0.0)])
        .fold(1.0f64, f64::max)
        * 1.15;
    let n = rows.len() as i32;
    let title = format!(
        "{}: pktvec vs anchor (× better) — {}, {}",
        record.title, record.machine.cpu_model, record.machine.date
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 15))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(430)
        .build_cartesian_2d(0.0..max, (0..n).into_segmented())?;
    let labels: Vec<String> = rows
        .iter()
        .map(|r| format!("{} ({})", shorten(&r.case, 46), shorten(&r.anchor_name, 22)))
        .collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(rows.len())
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels
                .get((n - 1 - *i) as usize)
                .cloned()
                .unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc("ratio (> 1: pktvec better)")
        .draw()?;
    chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
        // red: below its target, or below parity where there is no target
        let color = match r.met() {
            Some(false) => RGBColor(214, 96, 77),
            None if r.ratio < 1.0 => RGBColor(214, 96, 77),
            _ => RGBColor(67, 147, 195),
        };
        let i = n - 1 - i as i32; // the first row on top
        Rectangle::new(
            [
                (0.0, SegmentValue::Exact(i)),
                (r.ratio, SegmentValue::Exact(i + 1)),
            ],
            color.filled(),
        )
    }))?;
    chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
        Text::new(
            format!("{:.2}×", r.ratio),
            (
                r.ratio + max * 0.01,
                SegmentValue::CenterOf(n - 1 - i as i32),
            ),
            ("sans-serif", 12),
        )
    }))?;
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(1.0, SegmentValue::Exact(0)), (1.0, SegmentValue::Exact(n))],
        BLACK.stroke_width(1),
    )))?;
    for (i, r) in rows.iter().enumerate() {
        if let Some(t) = r.target {
            let i = n - 1 - i as i32;
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(t, SegmentValue::Exact(i)), (t, SegmentValue::Exact(i + 1))],
                RGBColor(60, 60, 60).stroke_width(2),
            )))?;
        }
    }
    root.present()?;
    Ok(())
}

/// A line chart: one series per (name, points), x on a log2 axis (vector and batch sizes).
pub fn lines(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> PlotResult {
    let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let (x0, x1) = x_range(series);
    let y1 = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .fold(0.0f64, f64::max)
        * 1.1;
    if !(x0 < x1 && y1 > 0.0) {
        return Ok(());
    }
    let mut chart =
        chart_builder(&root, title).build_cartesian_2d((x0..x1).log_scale().base(2.0), 0.0..y1)?;
    draw_lines(&mut chart, x_desc, y_desc, series)?;
    root.present()?;
    Ok(())
}

/// A line chart as [`lines`] with a linear x axis (parameters that start at 0) and a y
/// axis that takes negative values too.
pub fn lines_linear(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> PlotResult {
    let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let (x0, x1) = x_range(series);
    let ys = series.iter().flat_map(|s| s.1.iter().map(|p| p.1));
    let (y0, y1) = ys.fold((0.0f64, 0.0f64), |(a, b), y| (a.min(y), b.max(y)));
    if !(x0 < x1 && y1 > y0) {
        return Ok(());
    }
    let pad = (y1 - y0) * 0.1;
    let mut chart = chart_builder(&root, title)
        .build_cartesian_2d(x0..x1, (y0 - pad.min(-y0).max(0.0))..(y1 + pad))?;
    draw_lines(&mut chart, x_desc, y_desc, series)?;
    root.present()?;
    Ok(())
}

fn x_range(series: &[(String, Vec<(f64, f64)>)]) -> (f64, f64) {
    let xs = series.iter().flat_map(|s| s.1.iter().map(|p| p.0));
    xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)))
}

fn chart_builder<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, ("sans-serif", 15))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60);
    b
}

/// The mesh, one line with points per series, and the legend.
fn draw_lines<'a, 'b: 'a, X>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, RangedCoordf64>>,
    x_desc: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> PlotResult
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()?;
    for (k, (name, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(k).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}
