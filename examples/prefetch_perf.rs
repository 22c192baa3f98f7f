//! Gain of the prefetching 4/2/1 loop: cycles per packet of a header-touching node
//! (`pktvec::perf::prefetch_graph`) at prefetch distance 0, 2, 4, 8 and 16, over pools that
//! fit in L2 and pools larger than the last-level cache, packets visited in random order.
//!
//! ```text
//! cargo run --release --example prefetch_perf -- --svg docs/results/prefetch.svg
//! ```

use pktvec::graph::clock;
use pktvec::perf::{prefetch_graph, BYTES_PER_BUFFER};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let svg = args
        .iter()
        .position(|a| a == "--svg")
        .and_then(|i| args.get(i + 1).cloned());
    let distances = [0usize, 2, 4, 8, 16];
    let pools = [512u32, 65_536, 262_144];
    let mut results: Vec<(String, Vec<f64>)> = Vec::new();
    println!(
        "{:<22} {}",
        "pool",
        distances
            .iter()
            .map(|d| format!("{:>10}", format!("d={d}")))
            .collect::<String>()
    );
    for &buffers in &pools {
        let mut g = prefetch_graph(buffers)?;
        let label = format!(
            "{buffers} buffers, {:.0} MiB",
            buffers as f64 * BYTES_PER_BUFFER as f64 / (1 << 20) as f64
        );
        let mut row = Vec::new();
        for &d in &distances {
            g.set_prefetch_distance(d);
            // Warm up one full pass over the pool, then measure the median of 7 passes.
            let turns = (buffers as usize / 256).max(64);
            for _ in 0..turns {
                g.run_once();
            }
            let mut reps = Vec::new();
            for _ in 0..7 {
                let t0 = clock::now();
                for _ in 0..turns {
                    g.run_once();
                }
                reps.push((clock::now() - t0) as f64 / (turns * 256) as f64);
            }
            reps.sort_by(f64::total_cmp);
            row.push(reps[3]);
        }
        println!(
            "{:<22} {}",
            label,
            row.iter().map(|c| format!("{c:>10.1}")).collect::<String>()
        );
        results.push((label, row));
    }
    println!("cycles per packet (whole graph: source + ip4-ttl + sink); gain = d=0 / best");
    for (label, row) in &results {
        let best = row[1..].iter().cloned().fold(f64::MAX, f64::min);
        println!("  {label}: {:.2}x", row[0] / best);
    }
    if let Some(path) = svg {
        use plotters::prelude::*;
        let root = SVGBackend::new(&path, (800, 450)).into_drawing_area();
        root.fill(&WHITE)?;
        let max = results
            .iter()
            .flat_map(|(_, r)| r.iter().cloned())
            .fold(0.0, f64::max)
            * 1.1;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "ip4-ttl node, random buffer order: cycles per packet vs prefetch distance",
                ("sans-serif", 18),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(0f64..16f64, 0f64..max)?;
        chart
            .configure_mesh()
            .x_desc("prefetch distance d (packets)")
            .y_desc("TSC cycles per packet")
            .draw()?;
        let colors = [BLUE, RED, GREEN];
        for ((label, row), color) in results.iter().zip(colors) {
            chart
                .draw_series(LineSeries::new(
                    distances.iter().zip(row).map(|(&d, &c)| (d as f64, c)),
                    color.stroke_width(2),
                ))?
                .label(label.clone())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 15, y)], color));
            chart.draw_series(
                distances
                    .iter()
                    .zip(row)
                    .map(|(&d, &c)| Circle::new((d as f64, c), 3, color.filled())),
            )?;
        }
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()?;
        root.present()?;
        eprintln!("wrote {path}");
    }
    Ok(())
}
