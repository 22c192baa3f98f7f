//! What the lookup-table comparisons (`lpm4`, `lpm6`, `hash`) share: building and running
//! our C harnesses in `benches/dpdk/` against the system's DPDK, the scratch directory for
//! the route and key files both sides read, where the real data (route tables, captures)
//! lives and what to say when it is not there, and the median.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

/// Errors of this tool.
pub type Error = Box<dyn std::error::Error>;

/// The environment variable that moves the real data: `PKTVEC_SHARED_DATA=DIR` reads
/// `DIR/routes/…` and `DIR/pcap/…` instead of `shared/data` next to this checkout.
pub const SHARED_DATA_ENV: &str = "PKTVEC_SHARED_DATA";

/// The real data the measurements read (route tables, update streams, captures):
/// `$PKTVEC_SHARED_DATA` when set and not empty, else `shared/data` next to this checkout
/// (`../shared/data` from the repository root). A clone elsewhere has none; the areas that
/// read it then leave out the rows that need it ([`skip_note`]).
pub fn shared_data_dir() -> PathBuf {
    match std::env::var_os(SHARED_DATA_ENV) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"),
    }
}

/// `<shared data>/<rel>` ([`shared_data_dir`]).
pub fn shared_data(rel: &str) -> PathBuf {
    shared_data_dir().join(rel)
}

/// `<shared data>/routes` (the real route tables and update streams, xz-compressed).
pub fn default_routes_dir() -> PathBuf {
    shared_data("routes")
}

/// The files of `files` that are not there.
pub fn missing(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut m: Vec<PathBuf> = Vec::new();
    for p in files {
        if !p.is_file() && !m.contains(p) {
            m.push(p.clone());
        }
    }
    m
}

/// Says, in one line on stdout, that `what` (e.g. "real route tables") was not found and
/// what is left out without it: `real route tables not found at <where>: tier1/union rows
/// skipped`, where `<where>` is the directory when the directory itself is missing, else the
/// missing files. Returns the note without the paths, for the data file (the pages show
/// it under the area's table).
pub fn skip_note(what: &str, missing: &[PathBuf], skipped: &str) -> String {
    let mut places: Vec<String> = Vec::new();
    for p in missing {
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty() && !d.is_dir());
        let place = dir.unwrap_or(p).display().to_string();
        if !places.contains(&place) {
            places.push(place);
        }
    }
    println!("{what} not found at {}: {skipped}", places.join(", "));
    format!("{skipped} ({what} not found)")
}

/// The median of `v` (the upper one for an even count); 0 for an empty `v`.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `1048576` as `1,048,576`.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Compiles `benches/dpdk/<name>.c` with `cc -O3 $(pkg-config --cflags/--libs libdpdk)`
/// into the temporary directory (again only when the source is newer than the binary) and
/// returns the binary's path.
pub fn build(name: &str) -> Result<PathBuf, Error> {
    build_with(name, "")
}

/// [`build`] with `libs` (e.g. `-lrte_net_ring`: a driver that `pkg-config --libs libdpdk`
/// leaves out) after DPDK's libraries on the link line.
pub fn build_with(name: &str, libs: &str) -> Result<PathBuf, Error> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../benches/dpdk")
        .join(format!("{name}.c"));
    let dir = std::env::temp_dir().join("pktvec-bench-harnesses");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let bin = dir.join(name);
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    // The source or any header beside it (the harnesses share `lpm4_fill.h`).
    let newest_source = std::fs::read_dir(src.parent().unwrap_or(Path::new(".")))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "h"))
        .chain([src.clone()])
        .map(|p| modified(&p))
        .max()
        .flatten();
    if let (Some(b), Some(s)) = (modified(&bin), newest_source) {
        if b >= s {
            return Ok(bin);
        }
    }
    let cmd = format!(
        "cc -O3 $(pkg-config --cflags libdpdk) '{}' -o '{}' $(pkg-config --libs libdpdk) {libs}",
        src.display(),
        bin.display()
    );
    eprintln!("building: {cmd}");
    let st = Command::new("sh").arg("-c").arg(&cmd).status()?;
    if !st.success() {
        return Err(format!(
            "building {name} failed (needs cc, pkg-config and libdpdk-dev; --no-dpdk skips DPDK): {cmd}"
        )
        .into());
    }
    Ok(bin)
}

/// A harness's EAL arguments: `--no-huge -m MEM_MIB` (4 KiB pages, as every lookup
/// comparison has run), no PCI, core 0, quiet, and a file prefix of this process's own, so
/// that another DPDK process on the machine does not stop it. Ends with `--`.
pub fn eal_args(tag: &str, mem_mib: usize) -> Vec<String> {
    [
        "--no-huge".to_string(),
        "-m".into(),
        mem_mib.to_string(),
        "--no-pci".into(),
        "-l".into(),
        "0".into(),
        "--log-level=1".into(),
        "--file-prefix".into(),
        eal_prefix(tag),
        "--".into(),
    ]
    .into()
}

fn eal_prefix(tag: &str) -> String {
    format!("pktvec-bench-{tag}-{}", std::process::id())
}

/// Removes the EAL runtime directory that a harness run with [`eal_args`]`(tag, ..)` left.
pub fn remove_eal_dir(tag: &str) {
    let _ = std::fs::remove_dir_all(Path::new("/var/run/dpdk").join(eal_prefix(tag)));
}

/// Runs a harness to completion; returns its standard output.
pub fn run_once(bin: &Path, args: &[String]) -> Result<String, Error> {
    eprintln!("running: {} {}", bin.display(), args.join(" "));
    let out = Command::new(bin).args(args).output()?;
    if !out.status.success() {
        return Err(format!(
            "{} failed ({}): {}{}",
            bin.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A harness in `serve` mode: it builds its table once, prints `ready`, then times its
/// methods each time it reads `run` (printing its result lines and `end`), until end of
/// input. So that DPDK's side is timed in the same rounds as pktvec's, alternating, without
/// building its table again.
pub struct Served {
    child: Child,
    out: BufReader<ChildStdout>,
    name: String,
    /// The lines it printed before `ready` (table size, memory, ...), split into fields.
    pub info: Vec<Vec<String>>,
}

impl Served {
    /// Starts the harness and waits until it has built its table.
    pub fn start(bin: &Path, args: &[String]) -> Result<Served, Error> {
        eprintln!("starting: {} {}", bin.display(), args.join(" "));
        let mut child = Command::new(bin)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let out = BufReader::new(child.stdout.take().ok_or("harness: no stdout")?);
        let name = bin
            .file_name()
            .map_or("harness".into(), |n| n.to_string_lossy().into_owned());
        let mut s = Served {
            child,
            out,
            name,
            info: Vec::new(),
        };
        loop {
            let f = s.next_line()?;
            if f.first().map(String::as_str) == Some("ready") {
                return Ok(s);
            }
            s.info.push(f);
        }
    }

    /// The first info line that starts with `key`, its second field parsed.
    pub fn info_value<T: std::str::FromStr>(&self, key: &str) -> Option<T> {
        self.info
            .iter()
            .find(|f| f.first().map(String::as_str) == Some(key))
            .and_then(|f| f.get(1))
            .and_then(|v| v.parse().ok())
    }

    fn next_line(&mut self) -> Result<Vec<String>, Error> {
        let mut line = String::new();
        if self.out.read_line(&mut line)? == 0 {
            return Err(format!("{} exited: {:?}", self.name, self.child.wait()?).into());
        }
        Ok(line.split_whitespace().map(String::from).collect())
    }

    /// One timing round: the lines it printed before `end`, split into fields.
    pub fn round(&mut self) -> Result<Vec<Vec<String>>, Error> {
        self.command("run")
    }

    /// Sends the line `cmd` and returns the lines it printed before `end`, split into
    /// fields.
    pub fn command(&mut self, cmd: &str) -> Result<Vec<Vec<String>>, Error> {
        let stdin = self.child.stdin.as_mut().ok_or("harness: no stdin")?;
        stdin.write_all(cmd.as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()?;
        let mut lines = Vec::new();
        loop {
            let f = self.next_line()?;
            if f.first().map(String::as_str) == Some("end") {
                return Ok(lines);
            }
            lines.push(f);
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        drop(self.child.stdin.take()); // end of input: the harness exits
        let _ = self.child.wait();
    }
}

/// A scratch directory for the files both sides read, removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    /// Creates `<tmp>/pktvec-bench-<area>-<pid>`.
    pub fn new(area: &str) -> Result<Scratch, Error> {
        let p = std::env::temp_dir().join(format!("pktvec-bench-{area}-{}", std::process::id()));
        std::fs::create_dir_all(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(Scratch(p))
    }

    /// A file in it.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_takes_the_middle() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 3.0);
        assert_eq!(median(vec![]), 0.0);
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(1_048_576), "1,048,576");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
    }

    #[test]
    fn eal_args_end_with_the_separator() {
        let a = eal_args("t", 64);
        assert_eq!(a.last().map(String::as_str), Some("--"));
        assert!(a.contains(&"--no-huge".to_string()));
    }

    #[test]
    fn missing_files_are_named_once_and_the_note_names_what_is_left_out() {
        let dir = std::env::temp_dir().join(format!("pktvec-missing-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let here = dir.join("here.txt");
        std::fs::write(&here, "x").unwrap();
        let gone = dir.join("gone.txt");
        let elsewhere = dir.join("no-such-dir/t.txt.xz");
        let lost = missing(&[here.clone(), gone.clone(), elsewhere.clone(), gone.clone()]);
        assert_eq!(lost, vec![gone.clone(), elsewhere]);
        assert!(missing(std::slice::from_ref(&here)).is_empty());
        assert_eq!(
            skip_note("real route tables", &lost, "tier1 rows skipped"),
            "tier1 rows skipped (real route tables not found)"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_routes_live_in_the_shared_data() {
        assert!(default_routes_dir().starts_with(shared_data_dir()));
        assert!(shared_data("routes/x.txt.xz").ends_with("routes/x.txt.xz"));
    }
}
