//! The scoreboard: runs every area in one sitting under one lock (each in a fresh process of
//! this tool), then regenerates `docs/results/README.md` and the headline table of every
//! results page from the data files. `--render-only` regenerates without measuring.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::sitting::{Common, Headline, Record, Sitting};

/// Every area, in the order the sitting runs them and the scoreboard lists them. `host`
/// (this machine's memory, no anchor) comes first, so each sitting records the caches its
/// figures were measured with.
pub const AREAS: [&str; 18] = [
    "host",
    "dispatch",
    "prefetch",
    "lpm4",
    "lpm6",
    "hash",
    "forwarders",
    "l3fwd-graph",
    "seed-figures",
    "dpdk-io",
    "batcher",
    "model",
    "multicore",
    "handoff",
    "rss",
    "route-updates",
    "shared-state",
    "whippersnapper",
];

/// Options of `scoreboard`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    common: Common,
    /// Regenerate the README and the pages' tables from the data files; measure nothing
    #[arg(long)]
    render_only: bool,
    /// Run only these areas (comma-separated), then regenerate from all data files
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Skip these areas (comma-separated)
    #[arg(long, value_delimiter = ',')]
    skip: Vec<String>,
}

/// Runs the sitting (unless `--render-only`), then renders.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    for a in args.only.iter().chain(&args.skip) {
        if !AREAS.contains(&a.as_str()) {
            return Err(format!("unknown area {a:?} (areas: {})", AREAS.join(", ")).into());
        }
    }
    let mut failed = Vec::new();
    if !args.render_only {
        let sitting = Sitting::begin(
            "scoreboard",
            "every area in one sitting",
            "README.md",
            &args.common,
        )?;
        let exe = std::env::current_exe()?;
        for area in AREAS {
            if (!args.only.is_empty() && !args.only.iter().any(|a| a == area))
                || args.skip.iter().any(|a| a == area)
            {
                continue;
            }
            println!("\n===== {area} =====");
            let mut cmd = Command::new(&exe);
            cmd.arg(area)
                .arg("--lock")
                .arg("")
                .arg("--data-dir")
                .arg(args.common.data_dir());
            if args.common.quick {
                cmd.arg("--quick");
            } else if area == "batcher" && has_valgrind() {
                // the batcher's cache misses per packet (the path-batching paper's Fig. 5)
                cmd.arg("--cachegrind");
            }
            if args.common.no_save {
                cmd.arg("--no-save");
            }
            let status = cmd.status()?;
            if !status.success() {
                eprintln!("scoreboard: {area} failed ({status})");
                failed.push(area);
            }
        }
        drop(sitting);
    }
    if !args.common.no_save {
        let written = render(&args.common.data_dir())?;
        for p in written {
            println!("wrote {}", p.display());
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("areas that failed: {}", failed.join(", ")).into())
    }
}

/// Whether valgrind (for `batcher --cachegrind`) is installed.
fn has_valgrind() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The headline rows as a plain-text table for the terminal.
pub fn text_table(rows: &[Headline]) -> String {
    let mut s = String::new();
    let w = rows.iter().map(|r| r.case.len()).max().unwrap_or(4).max(4);
    let wa = rows
        .iter()
        .map(|r| r.anchor_name.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let _ = writeln!(
        s,
        "{:<w$}  {:>12}  {:<wa$}  {:>12}  {:>8}  target",
        "case", "pktvec", "anchor", "", "ratio"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<w$}  {:>12}  {:<wa$}  {:>12}  {:>7.2}×  {}",
            r.case,
            value(r.pktvec),
            r.anchor_name,
            value(r.anchor),
            r.ratio,
            target(r)
        );
    }
    s
}

fn value(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn target(r: &Headline) -> String {
    // Two decimals at most (a cost target of 1.2× the anchor is a ratio of 0.83).
    let t = r.target.map(|t| {
        let s = format!("{t:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    });
    match (t, r.met()) {
        (Some(t), Some(true)) => format!("≥ {t}×: met"),
        (Some(t), _) => format!("≥ {t}×: **not met**"),
        _ => String::new(),
    }
}

/// One headline row's markdown cells, `| case | pktvec unit | anchor | anchor's | ratio | target`.
fn cells(r: &Headline) -> String {
    format!(
        "| {} | {} {} | {} | {} | **{:.2}×** | {}",
        r.case,
        value(r.pktvec),
        r.unit,
        r.anchor_name,
        value(r.anchor),
        r.ratio,
        target(r)
    )
}

/// One line on the host's memory from `host`'s data file: load cost at a few working sets,
/// one at a time and 16 in flight, and the streaming-read cost (`None` if the file lacks
/// them).
fn host_summary(rec: &Record) -> Option<String> {
    let lat = rec.detail.get("latency")?.as_array()?;
    let at = |kib: u64, field: &str| {
        lat.iter()
            .find(|l| l.get("kib").and_then(|v| v.as_u64()) == Some(kib))
            .and_then(|l| l.get(field)?.as_f64())
    };
    let points: Vec<String> = [(1024, "1"), (4096, "4"), (8192, "8"), (65536, "64")]
        .iter()
        .filter_map(|&(kib, mib)| at(kib, "small_pages").map(|c| format!("{c:.0} at {mib} MiB")))
        .collect();
    let parallel: Vec<String> = [(8192, "8"), (65536, "64")]
        .iter()
        .filter_map(|&(kib, mib)| {
            at(kib, "parallel_small_pages").map(|c| format!("{c:.1} at {mib} MiB"))
        })
        .collect();
    let stream = rec.detail.get("stream")?;
    Some(format!(
        "memory ([`pktvec-bench host`](host.md), {}): cycles a dependent load {} (4 KiB \
         pages), with 16 loads in flight {}; a 64 MiB stream reads at {:.1} cycles a line \
         ({:.1} on huge pages)",
        rec.machine.date,
        points.join(", "),
        parallel.join(", "),
        stream.get("cycles_per_line_small_pages")?.as_f64()?,
        stream.get("cycles_per_line_huge_pages")?.as_f64()?
    ))
}

/// `host`'s page table: cycles a load by working set, one at a time and 16 in flight.
fn host_table(rec: &Record) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| working set | one load at a time, 4 KiB pages | huge pages | 16 in flight, 4 KiB pages | huge pages |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|");
    for l in rec
        .detail
        .get("latency")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
    {
        let size = crate::host::size_label(l.get("kib").and_then(|v| v.as_u64()).unwrap_or(0));
        let c = |k: &str| l.get(k).and_then(|v| v.as_f64()).unwrap_or(f64::NAN);
        let _ = writeln!(
            s,
            "| {size} | {:.1} | {:.1} | {:.1} | {:.1} |",
            c("small_pages"),
            c("huge_pages"),
            c("parallel_small_pages"),
            c("parallel_huge_pages")
        );
    }
    if let Some(st) = rec.detail.get("stream") {
        let c = |k: &str| st.get(k).and_then(|v| v.as_f64()).unwrap_or(f64::NAN);
        let _ = writeln!(
            s,
            "\nStreaming read of 64 MiB, 64-byte lines in address order: {:.1} cycles a line on \
             4 KiB pages, {:.1} on huge pages.",
            c("cycles_per_line_small_pages"),
            c("cycles_per_line_huge_pages")
        );
    }
    s
}

/// A markdown table of one area's headline rows (`host`: its latency table).
pub fn markdown_table(record: &Record) -> String {
    let mut s = String::new();
    if record.area == "host" {
        s.push_str(&host_table(record));
    } else {
        let _ = writeln!(s, "| case | pktvec | anchor | anchor's | ratio | target |");
        let _ = writeln!(s, "|---|---:|---|---:|---:|---|");
        for r in &record.headline {
            let _ = writeln!(s, "{} |", cells(r));
        }
    }
    if let Some(note) = skipped(record) {
        let _ = writeln!(s, "\nLeft out: {note}.");
    }
    let _ = writeln!(
        s,
        "\n{}, TSC {:.3} GHz, {} UTC{}; `{}` ({:.0} s).",
        record.machine.cpu_model,
        record.machine.tsc_ghz,
        record.machine.date,
        if record.quick { ", **quick run**" } else { "" },
        record.command,
        record.seconds
    );
    s
}

/// What the area left out for want of data it reads (`detail.skipped`, e.g. "tier1/union
/// rows skipped (real route tables not found)"), if anything.
fn skipped(record: &Record) -> Option<&str> {
    record.detail.get("skipped")?.as_str()
}

fn load_all(data_dir: &Path) -> Vec<Record> {
    AREAS
        .iter()
        .filter_map(|a| Record::load(&data_dir.join(format!("{a}.json"))).ok())
        .collect()
}

/// Writes `<data-dir>/../README.md` and refreshes every page's marked headline table.
pub fn render(data_dir: &Path) -> Result<Vec<PathBuf>, Box<dyn std::error::Error>> {
    let records = load_all(data_dir);
    let results = data_dir.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut written = Vec::new();

    let mut s = String::new();
    let _ = writeln!(s, "# Results: pktvec against its anchors\n");
    let _ = writeln!(
        s,
        "<!-- generated by `cargo run --release -p pktvec-bench -- scoreboard` from data/*.json; do not edit -->\n"
    );
    let _ = writeln!(
        s,
        "Every headline figure, each against the anchor it is measured with on the same machine in \
         the same sitting (DPDK 22.11's libraries and tools) or against the seed paper's reported \
         figure. Ratio = how many times better pktvec is (anchor ÷ pktvec for costs, pktvec ÷ \
         anchor for rates and gains); > 1 favours pktvec. Regenerate the whole page in one sitting:\n"
    );
    let _ = writeln!(
        s,
        "```sh\ncargo run --release -p pktvec-bench -- scoreboard\n```\n"
    );
    let _ = writeln!(
        s,
        "| area | case | pktvec | anchor | anchor's | ratio | target | CPU, date |"
    );
    let _ = writeln!(s, "|---|---|---:|---|---:|---:|---|---|");
    for rec in &records {
        for (i, r) in rec.headline.iter().enumerate() {
            let area = if i == 0 {
                format!("[{}]({})", rec.title, rec.page)
            } else {
                String::new()
            };
            let when = if i == 0 {
                format!(
                    "{}, {}{}",
                    rec.machine.cpu_model,
                    &rec.machine.date[..10.min(rec.machine.date.len())],
                    if rec.quick { " (quick)" } else { "" }
                )
            } else {
                String::new()
            };
            let _ = writeln!(s, "| {area} {} | {when} |", cells(r));
        }
    }
    let missing: Vec<&str> = AREAS
        .iter()
        .copied()
        .filter(|a| !records.iter().any(|r| r.area == *a))
        .collect();
    if !missing.is_empty() {
        let _ = writeln!(s, "\nNot measured in this sitting: {}.", missing.join(", "));
    }
    let partial: Vec<String> = records
        .iter()
        .filter_map(|r| Some(format!("{}: {}", r.area, skipped(r)?)))
        .collect();
    if !partial.is_empty() {
        let _ = writeln!(s, "\nLeft out: {}.", partial.join("; "));
    }
    let _ = writeln!(s, "\n## Machines\n");
    let mut machines: Vec<String> = records
        .iter()
        .map(|r| {
            format!(
                "- {}: {} CPUs, TSC {:.3} GHz, {}, DPDK {}",
                r.machine.cpu_model,
                r.machine.cpus,
                r.machine.tsc_ghz,
                if r.machine.rtm { "RTM" } else { "no RTM" },
                r.machine.dpdk.as_deref().unwrap_or("not installed")
            )
        })
        .collect();
    // Each machine once, in the order of the areas (a sitting on one host between two
    // on another must not list the first host twice).
    let mut seen = std::collections::HashSet::new();
    machines.retain(|m| seen.insert(m.clone()));
    for m in machines {
        let _ = writeln!(s, "{m}");
    }
    if let Some(h) = records
        .iter()
        .find(|r| r.area == "host")
        .and_then(host_summary)
    {
        let _ = writeln!(s, "- {h}");
    }
    let _ = writeln!(s, "\n## Areas\n");
    for rec in &records {
        let _ = writeln!(
            s,
            "- [{}]({}): `{}` ({:.0} s, {})",
            rec.title, rec.page, rec.command, rec.seconds, rec.machine.date
        );
    }
    if let Some(first) = records.first() {
        // one chart of every headline row (the README's plot)
        let all = Record {
            area: "scoreboard".into(),
            title: "every area".into(),
            page: "README.md".into(),
            headline: records
                .iter()
                .flat_map(|r| {
                    r.headline.iter().map(|h| Headline {
                        case: format!("{}: {}", r.area, h.case),
                        ..h.clone()
                    })
                })
                .collect(),
            detail: serde_json::Value::Null,
            ..first.clone()
        };
        let svg = data_dir.join("scoreboard.svg");
        crate::plot::ratios(&svg, &all)?;
        written.push(svg);
    }
    let readme = results.join("README.md");
    std::fs::write(&readme, s).map_err(|e| format!("{}: {e}", readme.display()))?;
    written.push(readme);

    // the pages' headline tables, between `<!-- headline: AREA -->` and `<!-- end headline -->`
    if let Ok(dir) = std::fs::read_dir(&results) {
        for entry in dir.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "md")
                && path.file_name() != Some("README.md".as_ref())
            {
                let text = std::fs::read_to_string(&path)?;
                let new = refresh_page(&text, &records);
                if new != text {
                    std::fs::write(&path, new)?;
                    written.push(path);
                }
            }
        }
    }
    Ok(written)
}

/// Replaces each marked block with the area's current table (a block whose area has no
/// data file is left as it is).
pub fn refresh_page(text: &str, records: &[Record]) -> String {
    const END: &str = "<!-- end headline -->";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("<!-- headline: ") {
        let after = &rest[i..];
        let Some(close) = after.find("-->") else {
            break;
        };
        let area = after["<!-- headline: ".len()..close].trim();
        let Some(end) = after.find(END) else { break };
        out.push_str(&rest[..i]);
        match records.iter().find(|r| r.area == area) {
            Some(rec) => {
                out.push_str(&after[..close + 3]);
                out.push('\n');
                out.push_str(&markdown_table(rec));
                out.push_str(END);
            }
            None => out.push_str(&after[..end + END.len()]),
        }
        rest = &after[end + END.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sitting::Machine;

    fn record(area: &str) -> Record {
        Record {
            area: area.into(),
            title: "IPv4 LPM vs rte_lpm".into(),
            page: "lookup-tables.md".into(),
            machine: Machine {
                cpu_model: "AMD EPYC".into(),
                cpus: 2,
                tsc_ghz: 2.6,
                rtm: false,
                dpdk: Some("22.11.11".into()),
                date: "2026-11-26 23:00".into(),
            },
            command: "cargo run --release -p pktvec-bench -- lpm4".into(),
            quick: false,
            seconds: 60.0,
            headline: vec![Headline::cost(
                "tier1",
                "cycles/lookup",
                9.0,
                "rte_lpm_lookup_bulk",
                20.0,
            )
            .target(2.0)],
            detail: serde_json::Value::Null,
        }
    }

    #[test]
    fn a_marked_block_is_replaced_and_the_rest_kept() {
        let page = "# t\n\n<!-- headline: lpm4 -->\nold\n<!-- end headline -->\n\nprose\n<!-- headline: hash -->\nkept\n<!-- end headline -->\n";
        let new = refresh_page(page, &[record("lpm4")]);
        assert!(new.contains(
            "| tier1 | 9.00 cycles/lookup | rte_lpm_lookup_bulk | 20.0 | **2.22×** | ≥ 2×: met |"
        ));
        assert!(!new.contains("old"));
        assert!(new.contains("kept"));
        assert!(new.ends_with("prose\n<!-- headline: hash -->\nkept\n<!-- end headline -->\n"));
        // idempotent
        assert_eq!(refresh_page(&new, &[record("lpm4")]), new);
    }

    #[test]
    fn the_readme_lists_every_row_with_its_machine() {
        let dir = std::env::temp_dir().join(format!("pktvec-scoreboard-{}", std::process::id()));
        let data = dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(
            data.join("lpm4.json"),
            serde_json::to_string(&record("lpm4")).unwrap(),
        )
        .unwrap();
        render(&data).unwrap();
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        assert!(readme.contains("| [IPv4 LPM vs rte_lpm](lookup-tables.md) | tier1 |"));
        assert!(readme.contains("AMD EPYC, 2026-11-26"));
        assert!(readme.contains("Not measured in this sitting: host, dispatch, prefetch"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn rows_left_out_for_want_of_data_are_said_so() {
        let mut rec = record("lpm4");
        assert!(!markdown_table(&rec).contains("Left out"));
        rec.detail = serde_json::json!({
            "skipped": "tier1/union rows skipped (real route tables not found)"
        });
        let table = markdown_table(&rec);
        assert!(
            table.contains("\nLeft out: tier1/union rows skipped (real route tables not found).\n"),
            "{table}"
        );
        let dir = std::env::temp_dir().join(format!("pktvec-left-out-{}", std::process::id()));
        let data = dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("lpm4.json"), serde_json::to_string(&rec).unwrap()).unwrap();
        render(&data).unwrap();
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        assert!(
            readme.contains(
                "\nLeft out: lpm4: tier1/union rows skipped (real route tables not found).\n"
            ),
            "{readme}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_host_probe_renders_as_a_latency_table_and_a_machine_line() {
        let mut rec = record("host");
        rec.headline.clear();
        rec.detail = serde_json::json!({
            "latency": [
                {"kib": 1024, "small_pages": 36.1, "huge_pages": 36.7,
                 "parallel_small_pages": 1.9, "parallel_huge_pages": 1.9},
                {"kib": 4096, "small_pages": 47.9, "huge_pages": 44.0,
                 "parallel_small_pages": 2.8, "parallel_huge_pages": 2.9},
                {"kib": 8192, "small_pages": 368.6, "huge_pages": 363.7,
                 "parallel_small_pages": 3.1, "parallel_huge_pages": 3.2},
            ],
            "stream": {"cycles_per_line_small_pages": 9.4, "cycles_per_line_huge_pages": 7.5},
        });
        let table = markdown_table(&rec);
        assert!(
            table.contains("| 4 MiB | 47.9 | 44.0 | 2.8 | 2.9 |"),
            "{table}"
        );
        assert!(table.contains("9.4 cycles a line on 4 KiB pages, 7.5 on huge pages"));
        let line = host_summary(&rec).unwrap();
        assert!(
            line.contains("36 at 1 MiB, 48 at 4 MiB, 369 at 8 MiB (4 KiB"),
            "{line}"
        );
        assert!(
            line.contains("with 16 loads in flight 3.1 at 8 MiB;"),
            "{line}"
        );
        // a data file without the probe's figures gives no line
        rec.detail = serde_json::Value::Null;
        assert!(host_summary(&rec).is_none());
    }
}
