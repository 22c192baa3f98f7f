//! What every measurement shares: the command-line options common to all subcommands, the
//! machine it ran on, the lock that keeps one benchmark at a time, and the data file it
//! leaves (`docs/results/data/<area>.json`), whose headline rows the scoreboard collects.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Options every subcommand takes.
#[derive(clap::Args, Clone, Debug)]
pub struct Common {
    /// A short run (under a minute) that checks the harness end to end; its figures are
    /// noisy and not for publishing
    #[arg(long)]
    pub quick: bool,
    /// Directory of the data files: the results go to <DATA_DIR>/<area>.json, plots next to
    /// them [default: docs/results/data of this checkout; with --quick
    /// $TMPDIR/pktvec-quick/data, so that a quick run never replaces the committed figures]
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Print only; write no data file or plot
    #[arg(long)]
    pub no_save: bool,
    /// Hold this lock file while measuring, so that one benchmark runs at a time ("" for none)
    #[arg(long, default_value = "/tmp/pktvec-bench.lock")]
    pub lock: String,
}

impl Common {
    /// Where the data files go: `--data-dir`, else [`default_data_dir`].
    pub fn data_dir(&self) -> PathBuf {
        self.data_dir
            .clone()
            .unwrap_or_else(|| default_data_dir(self.quick))
    }
}

/// `docs/results/data` of this checkout; for a `--quick` run `pktvec-quick/data` in the
/// temporary directory (its figures are not for publishing, and the scoreboard renders the
/// README and pages next to the data directory).
pub fn default_data_dir(quick: bool) -> PathBuf {
    if quick {
        return std::env::temp_dir().join("pktvec-quick/data");
    }
    let bench = Path::new(env!("CARGO_MANIFEST_DIR"));
    bench.parent().unwrap_or(bench).join("docs/results/data")
}

/// The machine a sitting ran on.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Machine {
    /// `model name` of /proc/cpuinfo (what `lscpu` prints as "Model name").
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus: usize,
    /// Measured TSC rate, GHz.
    pub tsc_ghz: f64,
    /// Whether the CPU has Intel's restricted transactional memory (RTM).
    pub rtm: bool,
    /// `pkg-config --modversion libdpdk`, if DPDK is installed.
    pub dpdk: Option<String>,
    /// UTC date and time the sitting began, `YYYY-MM-DD HH:MM`.
    pub date: String,
}

impl Machine {
    /// Reads the machine's description (and measures the TSC rate).
    pub fn this() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = describe_cpu(&cpuinfo, &sysfs_cache_kib);
        let rtm = cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .is_some_and(|l| l.split_whitespace().any(|f| f == "rtm"));
        let dpdk = std::process::Command::new("pkg-config")
            .args(["--modversion", "libdpdk"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        Machine {
            cpu_model,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            tsc_ghz: pktvec::graph::clock::tsc_hz() / 1e9,
            rtm,
            dpdk,
            date: utc_now(),
        }
    }

    /// One line for the top of a run's output.
    pub fn line(&self) -> String {
        format!(
            "machine: {} ({} CPUs, TSC {:.3} GHz{}), DPDK {}, {} UTC",
            self.cpu_model,
            self.cpus,
            self.tsc_ghz,
            if self.rtm { ", RTM" } else { ", no RTM" },
            self.dpdk.as_deref().unwrap_or("not installed"),
            self.date
        )
    }
}

/// The CPU as a reader of a results page needs it: `model name` of /proc/cpuinfo, then, in
/// parentheses, the core generation where it is known (AMD families 23, 25, 26), family and
/// model, and the L2 and L3 sizes of CPU 0 (`cache_kib(level)`, from sysfs). A hypervisor
/// often shows only "AMD EPYC" or "Intel Xeon Processor": two such hosts with different
/// caches then still read differently.
///
/// ```text
/// AMD EPYC (Zen 3, family 25 model 1; L2 512 KiB, L3 32 MiB)
/// ```
///
/// (the unit test `hosts_of_one_model_name_read_apart` checks it).
pub fn describe_cpu(cpuinfo: &str, cache_kib: &dyn Fn(u32) -> u64) -> String {
    let field = |name: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    let name = field("model name").unwrap_or_else(|| "unknown CPU".into());
    let family: Option<u32> = field("cpu family").and_then(|v| v.parse().ok());
    let model: Option<u32> = field("model").and_then(|v| v.parse().ok());
    let amd = field("vendor_id").is_some_and(|v| v == "AuthenticAMD");
    let mut parts = Vec::new();
    if let (Some(f), Some(m)) = (family, model) {
        let core = match (amd, f, m) {
            (true, 23, 0..=0x2f) => Some("Zen/Zen+"),
            (true, 23, _) => Some("Zen 2"),
            (true, 25, 0x10..=0x1f | 0x60..=0x7f | 0xa0..=0xaf) => Some("Zen 4"),
            (true, 25, _) => Some("Zen 3"),
            (true, 26, _) => Some("Zen 5"),
            _ => None,
        };
        parts.push(match core {
            Some(c) => format!("{c}, family {f} model {m}"),
            None => format!("family {f} model {m}"),
        });
    }
    let caches: Vec<String> = [2, 3]
        .into_iter()
        .filter(|&l| cache_kib(l) > 0)
        .map(|l| format!("L{l} {}", crate::host::size_label(cache_kib(l))))
        .collect();
    if !caches.is_empty() {
        parts.push(caches.join(", "));
    }
    if parts.is_empty() {
        name
    } else {
        format!("{name} ({})", parts.join("; "))
    }
}

/// Size in KiB of CPU 0's unified or data cache of `level` as sysfs reports it (0 when
/// sysfs has none).
fn sysfs_cache_kib(level: u32) -> u64 {
    (0..8)
        .filter_map(|i| {
            let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
            let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).ok();
            let l: u32 = read("level")?.trim().parse().ok()?;
            let kind = read("type")?;
            if l != level || kind.trim() == "Instruction" {
                return None;
            }
            let size = read("size")?;
            let size = size.trim();
            let (num, mult) = match size.strip_suffix('K') {
                Some(n) => (n, 1),
                None => match size.strip_suffix('M') {
                    Some(n) => (n, 1024),
                    None => (size, 1),
                },
            };
            num.parse::<u64>().ok().map(|n| n * mult)
        })
        .next()
        .unwrap_or(0)
}

/// UTC now as `YYYY-MM-DD HH:MM` (civil-from-days, no time crate needed).
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// One headline figure: pktvec against its anchor on one case.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Headline {
    /// The case, as a reader names it ("tier1, 901,899 real prefixes").
    pub case: String,
    /// Unit of the two values ("cycles/lookup", "Mpps", "% gain").
    pub unit: String,
    /// pktvec's value.
    pub pktvec: f64,
    /// What pktvec is set against ("rte_lpm_lookup_bulk", "paper's Fig. 4").
    pub anchor_name: String,
    /// The anchor's value.
    pub anchor: f64,
    /// Whether a lower value is better (cycles) or a higher one (Mpps, gain).
    pub lower_is_better: bool,
    /// How many times better pktvec is: anchor/pktvec for costs, pktvec/anchor for rates.
    pub ratio: f64,
    /// The ratio the project aims for, if it has one.
    pub target: Option<f64>,
}

impl Headline {
    /// A cost (cycles, nanoseconds): ratio = anchor / pktvec.
    pub fn cost(case: &str, unit: &str, pktvec: f64, anchor_name: &str, anchor: f64) -> Headline {
        Headline {
            case: case.into(),
            unit: unit.into(),
            pktvec,
            anchor_name: anchor_name.into(),
            anchor,
            lower_is_better: true,
            ratio: anchor / pktvec,
            target: None,
        }
    }

    /// A rate or a gain (Mpps, %): ratio = pktvec / anchor.
    pub fn rate(case: &str, unit: &str, pktvec: f64, anchor_name: &str, anchor: f64) -> Headline {
        Headline {
            lower_is_better: false,
            ratio: pktvec / anchor,
            ..Headline::cost(case, unit, pktvec, anchor_name, anchor)
        }
    }

    /// The same row with a target ratio.
    pub fn target(mut self, target: f64) -> Headline {
        self.target = Some(target);
        self
    }

    /// Whether the target (if any) is met.
    pub fn met(&self) -> Option<bool> {
        self.target.map(|t| self.ratio >= t)
    }
}

/// What a subcommand leaves in `<data-dir>/<area>.json`.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Record {
    /// The subcommand ("lpm4").
    pub area: String,
    /// What it measures, for the scoreboard ("IPv4 LPM vs rte_lpm").
    pub title: String,
    /// The results page that explains it (file name under docs/results/).
    pub page: String,
    /// The machine and date.
    pub machine: Machine,
    /// The command that produced this file.
    pub command: String,
    /// Whether it was a `--quick` run.
    pub quick: bool,
    /// Wall-clock seconds the measurement took.
    pub seconds: f64,
    /// The headline rows.
    pub headline: Vec<Headline>,
    /// Everything else the page's tables and plots need.
    pub detail: serde_json::Value,
}

impl Record {
    /// Reads one data file.
    pub fn load(path: &Path) -> Result<Record, Box<dyn std::error::Error>> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?)
    }
}

/// A measurement in progress: holds the lock, knows the machine and the start time.
pub struct Sitting {
    area: &'static str,
    title: &'static str,
    page: &'static str,
    common: Common,
    /// The machine, read when the sitting began.
    pub machine: Machine,
    start: Instant,
    _lock: Option<File>,
}

impl Sitting {
    /// Takes the lock (waiting for whoever holds it), prints the machine line.
    pub fn begin(
        area: &'static str,
        title: &'static str,
        page: &'static str,
        common: &Common,
    ) -> Result<Sitting, Box<dyn std::error::Error>> {
        let lock = if common.lock.is_empty() {
            None
        } else {
            let f = File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&common.lock)
                .map_err(|e| format!("lock {}: {e}", common.lock))?;
            if f.try_lock().is_err() {
                eprintln!("waiting for {} (another benchmark holds it)", common.lock);
                f.lock().map_err(|e| format!("lock {}: {e}", common.lock))?;
            }
            Some(f)
        };
        let machine = Machine::this();
        println!(
            "{area}: {title}{}",
            if common.quick { " (--quick)" } else { "" }
        );
        println!("{}", machine.line());
        Ok(Sitting {
            area,
            title,
            page,
            common: common.clone(),
            machine,
            start: Instant::now(),
            _lock: lock,
        })
    }

    /// Whether this is a `--quick` run.
    pub fn quick(&self) -> bool {
        self.common.quick
    }

    /// Where this area's extra plots go (`None` with `--no-save`): `<data-dir>/<area>-<what>.svg`.
    pub fn plot_path(&self, what: &str) -> Option<PathBuf> {
        (!self.common.no_save).then(|| {
            let name = if what.is_empty() {
                format!("{}.svg", self.area)
            } else {
                format!("{}-{what}.svg", self.area)
            };
            // the caller draws into it before `finish` creates it for the data file
            let dir = self.common.data_dir();
            let _ = std::fs::create_dir_all(&dir);
            dir.join(name)
        })
    }

    /// Prints the headline table, writes the data file and the ratio plot; returns the record.
    pub fn finish(
        self,
        headline: Vec<Headline>,
        detail: serde_json::Value,
    ) -> Result<Record, Box<dyn std::error::Error>> {
        let record = Record {
            area: self.area.into(),
            title: self.title.into(),
            page: self.page.into(),
            machine: self.machine.clone(),
            command: command_line(),
            quick: self.common.quick,
            seconds: self.start.elapsed().as_secs_f64(),
            headline,
            detail,
        };
        if !record.headline.is_empty() {
            println!();
            print!("{}", crate::scoreboard::text_table(&record.headline));
        }
        if !self.common.no_save {
            let dir = self.common.data_dir();
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let path = dir.join(format!("{}.json", self.area));
            std::fs::write(&path, serde_json::to_string_pretty(&record)? + "\n")
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if let Some(svg) = self.plot_path("") {
                crate::plot::ratios(&svg, &record)?;
            }
            println!("wrote {}", path.display());
        }
        Ok(record)
    }
}

/// This process's command line as a user would type it.
pub fn command_line() -> String {
    let mut args = std::env::args();
    let _ = args.next();
    // what only locates this checkout or a scoreboard's children (`--lock ''`, the default
    // data directory) is left out: the command reads as a user would type it
    let default_dir = default_data_dir(std::env::args().any(|a| a == "--quick"));
    let mut kept = Vec::new();
    while let Some(a) = args.next() {
        if a == "--lock" {
            let _ = args.next();
        } else if a == "--data-dir" {
            match args.next() {
                Some(d) if Path::new(&d) == default_dir => {}
                Some(d) => kept.extend([a, d]),
                None => kept.push(a),
            }
        } else {
            kept.push(a);
        }
    }
    let rest: Vec<String> = kept
        .into_iter()
        .map(|a| {
            if a.contains(' ') || a.is_empty() {
                format!("'{a}'")
            } else {
                a
            }
        })
        .collect();
    format!("cargo run --release -p pktvec-bench -- {}", rest.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_read_as_times_better() {
        let c = Headline::cost("t", "cycles", 10.0, "dpdk", 25.0).target(2.0);
        assert_eq!(c.ratio, 2.5);
        assert_eq!(c.met(), Some(true));
        let r = Headline::rate("t", "Mpps", 10.0, "dpdk", 25.0);
        assert_eq!(r.ratio, 0.4);
        assert_eq!(r.met(), None);
    }

    #[test]
    fn hosts_of_one_model_name_read_apart() {
        let zen3 =
            "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n";
        let zen4 = zen3.replace("model\t\t: 1\n", "model\t\t: 17\n");
        let milan = |l: u32| [0, 32, 512, 32768][l as usize];
        let genoa = |l: u32| [0, 32, 1024, 32768][l as usize];
        assert_eq!(
            describe_cpu(zen3, &milan),
            "AMD EPYC (Zen 3, family 25 model 1; L2 512 KiB, L3 32 MiB)"
        );
        assert_eq!(
            describe_cpu(&zen4, &genoa),
            "AMD EPYC (Zen 4, family 25 model 17; L2 1 MiB, L3 32 MiB)"
        );
        let intel = "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel Xeon Processor\n";
        assert_eq!(
            describe_cpu(intel, &|l| if l == 3 { 266_240 } else { 2048 }),
            "Intel Xeon Processor (family 6 model 143; L2 2 MiB, L3 260 MiB)"
        );
        // Nothing known beyond the name: the name alone; no cpuinfo at all: "unknown CPU".
        assert_eq!(describe_cpu("model name\t: X\n", &|_| 0), "X");
        assert_eq!(describe_cpu("", &|_| 0), "unknown CPU");
        // the model line is `model`, not `model name`
        assert!(!describe_cpu(zen3, &|_| 0).contains("model AMD"));
    }

    #[test]
    fn a_quick_run_writes_outside_the_committed_results() {
        assert!(default_data_dir(false).ends_with("docs/results/data"));
        let quick = default_data_dir(true);
        assert!(
            quick.starts_with(std::env::temp_dir()),
            "{}",
            quick.display()
        );
        assert!(!quick.starts_with(env!("CARGO_MANIFEST_DIR")));
    }

    #[test]
    fn utc_dates_are_civil() {
        let d = utc_now();
        assert_eq!(d.len(), 16);
        assert!(d.starts_with("20"));
    }
}
