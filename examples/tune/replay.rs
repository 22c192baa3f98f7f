//! `tune --replay SITTINGS.json`: re-fits the calibration of every run stored by
//! `scripts/model_pool.py` (per grid setting, each node's measured cycles per packet) with a
//! given [`SpanRule`] (and optionally more grid settings as calibration runs: every grid
//! setting was measured in the same runs) and recomputes the prediction errors over the
//! grid — the same measurements, a different fit, no new timing.

use pktvec::model::calibrate::{Calibration, Sample, SpanRule};
use pktvec::model::tuner::{CacheFit, Tuner, TunerConfig};
use serde_json::{json, Value};
use std::path::Path;

/// Median and worst absolute relative error of `pred` against `meas`.
fn errors(pairs: &[(f64, f64)]) -> (f64, f64) {
    let mut e: Vec<f64> = pairs.iter().map(|(p, m)| ((p - m) / m).abs()).collect();
    e.sort_by(f64::total_cmp);
    (e[e.len() / 2], *e.last().unwrap_or(&0.0))
}

/// The grid of a stored run re-normalised with a reference window (`--reference-window`):
/// from the run's `runs_raw` (every run in measurement order with its reference and raw
/// per-node cycles), each run divided by [`super::speed_factors`] of that window, then per
/// setting and node the run's statistic (median or minimum) as the live run computes it.
/// `None` when the run stored no `runs_raw` (sittings before session 9) or no references.
fn renormalised(r: &Value, window: usize) -> Option<Vec<Value>> {
    let raw = r.get("runs_raw")?;
    let names: Vec<&str> = raw["nodes"]
        .as_array()?
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    let runs = raw["runs"].as_array()?;
    let refs: Vec<f64> = runs.iter().map(|x| x[2].as_f64()).collect::<Option<_>>()?;
    let speed = super::speed_factors(&refs, window);
    let min = r["stat"].as_str() == Some("min");
    let stat = |xs: Vec<f64>| {
        if min {
            xs.into_iter().fold(f64::INFINITY, f64::min)
        } else {
            super::median(xs)
        }
    };
    let mut grid = r["grid"].as_array()?.clone();
    for g in grid.iter_mut() {
        let set = (g["vector"].as_u64()?, g["sub_batch"].as_u64()?);
        let mine: Vec<(f64, Vec<f64>)> = runs
            .iter()
            .zip(&speed)
            .filter(|(x, _)| (x[0].as_u64(), x[1].as_u64()) == (Some(set.0), Some(set.1)))
            .map(|(x, f)| {
                let nodes = x[3].as_array().map_or(Vec::new(), |a| {
                    a.iter().map(|c| c.as_f64().unwrap_or(0.0) / f).collect()
                });
                (*f, nodes)
            })
            .collect();
        if mine.is_empty() {
            return None;
        }
        g["measured"] = json!(stat(mine.iter().map(|(_, n)| n.iter().sum()).collect()));
        g["measured_raw"] = json!(stat(
            mine.iter()
                .map(|(f, n)| f * n.iter().sum::<f64>())
                .collect()
        ));
        for n in g["nodes"].as_array_mut()? {
            let i = names.iter().position(|&m| Some(m) == n["node"].as_str())?;
            n["measured"] = json!(stat(mine.iter().map(|(_, v)| v[i]).collect()));
        }
    }
    Some(grid)
}

/// The pooled quality of a setting: its median relative throughput over the file's
/// sittings (`pooled`, written by `scripts/model_pool.py`: per case and setting, the median
/// over sittings of best / measured) over the best setting's. Less biased than one grid's
/// own best, which is the minimum of noisy measurements. `None` without pooled rows.
fn pooled_quality(d: &Value, app: &str, table: &str, v: usize, b: usize) -> Option<f64> {
    let rows = d["pooled"][format!("{app}-{table}")].as_array()?;
    let rel = |r: &Value| r["median_rel"].as_f64();
    let best = rows.iter().filter_map(rel).fold(f64::NAN, f64::max);
    let at = rows.iter().find(|r| {
        r["vector"].as_u64() == Some(v as u64) && r["sub_batch"].as_u64() == Some(b as u64)
    })?;
    Some(rel(at)? / best)
}

/// Replays every run of `path` under `rules`; returns one JSON row per run and rule.
/// `window`: re-normalise the runs with this reference window first (runs that stored
/// their raw runs only; the others keep their stored normalisation). `beyond_min`: the
/// replayed tuner's [`TunerConfig::beyond_min_sub_batch`].
pub fn run(
    path: &Path,
    rules: &[SpanRule],
    extra: &[(u64, u64)],
    window: Option<usize>,
    beyond_min: usize,
    json: bool,
) -> Result<Value, Box<dyn std::error::Error>> {
    let d: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let mut rows = Vec::new();
    for sit in d["sittings"].as_array().ok_or("sittings")? {
        let tag = sit["tag"].as_str().unwrap_or("?");
        for r in sit["runs"].as_array().ok_or("runs")? {
            let regrid = window.and_then(|w| renormalised(r, w));
            let grid = match &regrid {
                Some(g) => g,
                None => r["grid"].as_array().ok_or("grid")?,
            };
            let cal: Vec<(u64, u64)> = r["calibration_runs"]
                .as_array()
                .ok_or("calibration_runs")?
                .iter()
                .map(|c| (c[0].as_u64().unwrap_or(0), c[1].as_u64().unwrap_or(0)))
                .chain(extra.iter().copied())
                .collect();
            let mut samples = Vec::new();
            for g in grid {
                let set = (
                    g["vector"].as_u64().unwrap_or(0),
                    g["sub_batch"].as_u64().unwrap_or(0),
                );
                if !cal.contains(&set) {
                    continue;
                }
                for n in g["nodes"].as_array().ok_or("nodes")? {
                    samples.push((
                        n["node"].as_str().unwrap_or("").to_string(),
                        Sample {
                            vector: set.0 as usize,
                            sub_batch: set.1 as usize,
                            cycles_per_packet: n["measured"].as_f64().unwrap_or(0.0),
                        },
                    ));
                }
            }
            for &rule in rules {
                let c = Calibration::fit_with(&samples, rule);
                let pred = |g: &Value| {
                    c.predict(
                        g["vector"].as_u64().unwrap_or(0) as usize,
                        g["sub_batch"].as_u64().unwrap_or(0) as usize,
                        |_| 1.0,
                    )
                };
                let norm: Vec<(f64, f64)> = grid
                    .iter()
                    .map(|g| (pred(g), g["measured"].as_f64().unwrap_or(f64::NAN)))
                    .collect();
                let raw: Vec<(f64, f64)> = grid
                    .iter()
                    .map(|g| (pred(g), g["measured_raw"].as_f64().unwrap_or(f64::NAN)))
                    .collect();
                let out: Vec<(f64, f64)> = grid
                    .iter()
                    .zip(&norm)
                    .filter(|(g, _)| {
                        !cal.contains(&(
                            g["vector"].as_u64().unwrap_or(0),
                            g["sub_batch"].as_u64().unwrap_or(0),
                        ))
                    })
                    .map(|(_, x)| *x)
                    .collect();
                let (om, ow) = errors(&out);
                // The tuner's choice from this calibration (the example's configuration) and
                // its grid quality: the grid's best measured over the choice's measured.
                let fit: Option<CacheFit> = serde_json::from_value(r["table_fit"].clone()).ok();
                let choice = Tuner::new(
                    TunerConfig {
                        vectors: vec![16, 32, 64, 128, 256],
                        sub_batches: vec![1, 2, 4, 8, 16, 32, 64],
                        table_fit: fit,
                        beyond_min_sub_batch: beyond_min,
                        ..TunerConfig::default()
                    },
                    c.clone(),
                )
                .setting();
                let measured_at = |v: usize, b: usize| {
                    grid.iter()
                        .find(|g| {
                            g["vector"].as_u64() == Some(v as u64)
                                && g["sub_batch"].as_u64() == Some(b as u64)
                        })
                        .and_then(|g| g["measured"].as_f64())
                        .unwrap_or(f64::NAN)
                };
                let best = grid
                    .iter()
                    .filter_map(|g| g["measured"].as_f64())
                    .fold(f64::INFINITY, f64::min);
                let quality = best / measured_at(choice.vector, choice.sub_batch);
                let pooled = pooled_quality(
                    &d,
                    r["app"].as_str().unwrap_or(""),
                    r["table"].as_str().unwrap_or(""),
                    choice.vector,
                    choice.sub_batch,
                );
                let (nm, nw) = errors(&norm);
                let (rm, rw) = errors(&raw);
                let spans: Vec<Value> = c
                    .nodes
                    .iter()
                    .filter(|(_, n)| n.stall.delta_hide > 0.0)
                    .map(|(name, n)| json!([name, n.stall.hide_span]))
                    .collect();
                let row = json!({
                    "sitting": tag, "app": r["app"], "table": r["table"], "rule": format!("{rule:?}"),
                    "window": if regrid.is_some() { json!(window) } else { r["reference"]["window"].clone() },
                    "reference": r["reference"], "median": nm, "worst": nw,
                    "predicted_points": out.len(), "predicted_median": om, "predicted_worst": ow,
                    "tuner": [choice.vector, choice.sub_batch], "grid_quality": quality, "pooled_quality": pooled,
                    "stored_tuner": [r["tuner"]["vector"], r["tuner"]["sub_batch"]], "raw_median": rm, "raw_worst": rw,
                    "stored_median": r["median_abs_error"], "stored_worst": r["worst_abs_error"],
                    "spans": spans,
                });
                if !json {
                    println!(
                        "{tag} {:5} {:5} {:12} window {:4} normalised {:5.1}% / {:5.1}%  raw {:5.1}% / {:5.1}%  (stored {:5.1}% / {:5.1}%)  predicted only {:5.1}% / {:5.1}% ({})  tuner V {} b {} grid quality {:5.1}% pooled {:5.1}%  spans {}",
                        r["app"].as_str().unwrap_or(""),
                        r["table"].as_str().unwrap_or(""),
                        format!("{rule:?}"),
                        row["window"],
                        100.0 * nm,
                        100.0 * nw,
                        100.0 * rm,
                        100.0 * rw,
                        100.0 * r["median_abs_error"].as_f64().unwrap_or(f64::NAN),
                        100.0 * r["worst_abs_error"].as_f64().unwrap_or(f64::NAN),
                        100.0 * om,
                        100.0 * ow,
                        out.len(),
                        choice.vector,
                        choice.sub_batch,
                        100.0 * quality,
                        100.0 * pooled.unwrap_or(f64::NAN),
                        row["spans"]
                    );
                }
                rows.push(row);
            }
        }
    }
    Ok(json!({ "data": path.display().to_string(), "rows": rows }))
}
