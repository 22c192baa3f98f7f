//! What the table-and-graph benchmark examples (`graph_perf`, `hash_perf`, `lpm6_perf`)
//! share: the median of repeated measurements and a grouped bar chart written as SVG.
//!
//! Each example includes it with `mod perf_report;` and describes its chart as data:
//!
//! ```ignore
//! let chart = perf_report::BarChart {
//!     caption: "cycles per lookup".into(),
//!     y_desc: "TSC cycles".into(),
//!     size: (900, 480),
//!     groups: vec!["1K".into(), "1M".into()],
//!     series: vec![perf_report::Series {
//!         label: "pktvec".into(),
//!         rgb: (20, 60, 200),
//!         values: vec![Some(12.0), Some(30.0)],
//!     }],
//!     log_from: None,
//!     value_labels: true,
//!     headroom: 1.2,
//!     legend_upper_right: false,
//! };
//! chart.write_svg("docs/results/x.svg")?;
//! ```

use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// The median of `v` (the upper one for an even count); `v` must not be empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// One coloured series of a [`BarChart`]: a bar per group, `None` where it was not measured.
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Bar colour.
    pub rgb: (u8, u8, u8),
    /// One value per group of the chart.
    pub values: Vec<Option<f64>>,
}

impl Series {
    /// The series `label` in colour `rgb` with the value `f(row)` for each row (group).
    pub fn of<R>(
        label: &str,
        rgb: (u8, u8, u8),
        rows: &[R],
        f: impl Fn(&R) -> Option<f64>,
    ) -> Self {
        Series {
            label: label.into(),
            rgb,
            values: rows.iter().map(f).collect(),
        }
    }
}

/// A grouped bar chart: one group per table (or topology), one bar per series in each.
pub struct BarChart {
    /// Title above the plot.
    pub caption: String,
    /// Y-axis description.
    pub y_desc: String,
    /// Picture size in pixels.
    pub size: (u32, u32),
    /// Group names, written under each group.
    pub groups: Vec<String>,
    /// The series, drawn left to right inside every group.
    pub series: Vec<Series>,
    /// `Some(bottom)`: logarithmic y axis starting at `bottom`; `None`: linear from 0.
    pub log_from: Option<f64>,
    /// Write each bar's value above it.
    pub value_labels: bool,
    /// The y axis ends at the largest value times this (room for the legend).
    pub headroom: f64,
    /// Legend in the upper right corner instead of the upper left.
    pub legend_upper_right: bool,
}

type Error = Box<dyn std::error::Error>;

impl BarChart {
    /// Draws the chart into an SVG file at `path`.
    pub fn write_svg(&self, path: &str) -> Result<(), Error> {
        let root = SVGBackend::new(path, self.size).into_drawing_area();
        root.fill(&WHITE)?;
        let top = self
            .series
            .iter()
            .flat_map(|s| s.values.iter().flatten())
            .fold(0.0f64, |a, &b| a.max(b))
            * self.headroom;
        let n = self.groups.len() as f64;
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(&self.caption, ("sans-serif", 18))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(55);
        match self.log_from {
            Some(bottom) => {
                let chart = builder
                    .build_cartesian_2d(0f64..n, (bottom..top.max(bottom * 2.0)).log_scale())?;
                self.draw(chart, bottom, top)?;
            }
            None => {
                let chart = builder.build_cartesian_2d(0f64..n, 0f64..top.max(1e-9))?;
                self.draw(chart, 0.0, top)?;
            }
        }
        root.present()?;
        Ok(())
    }

    fn draw<'a, Y>(
        &self,
        mut chart: ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, Y>>,
        bottom: f64,
        top: f64,
    ) -> Result<(), Error>
    where
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let groups = &self.groups;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(2 * groups.len() + 1)
            .x_label_formatter(&|x| {
                // Label positions fall on multiples of 0.5: name each group at its centre.
                if (x - x.floor() - 0.5).abs() < 1e-6 {
                    groups.get(x.floor() as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_label_style(("sans-serif", 11))
            .y_desc(self.y_desc.as_str())
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()?;
        let w = 0.8 / self.series.len().max(1) as f64;
        for (si, s) in self.series.iter().enumerate() {
            let bars: Vec<(f64, f64)> = s
                .values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (i as f64 + 0.1 + si as f64 * w, v)))
                .collect();
            if bars.is_empty() {
                continue;
            }
            let c = RGBColor(s.rgb.0, s.rgb.1, s.rgb.2);
            chart
                .draw_series(
                    bars.iter()
                        .map(|&(x, v)| Rectangle::new([(x, bottom), (x + w * 0.9, v)], c.filled())),
                )?
                .label(s.label.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
            if self.value_labels {
                chart.draw_series(bars.iter().map(|&(x, v)| {
                    Text::new(
                        format!("{v:.0}"),
                        (x, v + top * 0.01),
                        ("sans-serif", 10).into_font(),
                    )
                }))?;
            }
        }
        chart
            .configure_series_labels()
            .position(if self.legend_upper_right {
                SeriesLabelPosition::UpperRight
            } else {
                SeriesLabelPosition::UpperLeft
            })
            .border_style(BLACK)
            .background_style(WHITE.mix(0.85))
            .draw()?;
        Ok(())
    }
}
