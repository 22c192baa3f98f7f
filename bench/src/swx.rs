//! DPDK's P4 software pipeline (SWX, `rte_swx_pipeline`) as a comparison target: our C
//! harness `benches/dpdk/swx_bench.c` translates a pipeline spec into C
//! (`rte_swx_pipeline_codegen`), this module compiles that into a shared object, and the
//! harness builds the pipeline from it and runs it memory to memory (`serve` for timing
//! rounds, `once` for equivalence checks against pipeline-produced pcap files).
//!
//! The generated C includes two of DPDK's internal headers
//! (`lib/pipeline/rte_swx_pipeline_internal.h` and `rte_swx_pipeline_spec.h`) that Debian's
//! `libdpdk-dev` does not ship. [`headers_dir`] takes them from the source package of the
//! installed DPDK release (`apt-get source --download-only`), caches them in the temporary
//! directory, and never puts them in this repository.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::c_harness::{self, Error, Served};

/// The internal headers the generated C includes.
const HEADERS: [&str; 2] = ["rte_swx_pipeline_internal.h", "rte_swx_pipeline_spec.h"];

/// EAL memory (MiB, 4 KiB pages) a harness process gets unless [`Swx::mem_mib`] says
/// otherwise: the mbuf pool (the traces' packets plus 4096, about 2.3 KiB each) and the tables.
const DEFAULT_MEM_MIB: usize = 1024;

/// What to do when the headers cannot be had: the same line ends every such error.
const HEADERS_FIX: &str = "Enable Debian source packages and refresh the index, as root: \
     echo 'deb-src http://deb.debian.org/debian bookworm main' > /etc/apt/sources.list.d/deb-src.list \
     (and a deb-src line for bookworm-updates / bookworm-security as well if that is where the \
     installed version came from: mirror the deb lines of /etc/apt/sources.list*), then \
     apt-get update. Or set PKTVEC_SWX_HEADERS to a directory holding both headers from \
     lib/pipeline/ of the installed DPDK release's source.";

/// The directory holding DPDK's two internal pipeline headers for the INSTALLED DPDK
/// release: `$PKTVEC_SWX_HEADERS` if set; else the cache
/// `<temp_dir>/pktvec-swx-headers/<Debian version of libdpdk-dev>/` if it holds both; else
/// they are fetched into that cache from the Debian source package of exactly that version
/// (`apt-get source --download-only dpdk=<version>`, which needs no root but does need
/// `deb-src` entries in apt's index). The error says why and how to fix it.
pub fn headers_dir() -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os("PKTVEC_SWX_HEADERS") {
        let dir = PathBuf::from(dir);
        if let Some(missing) = HEADERS.iter().find(|h| !dir.join(h).is_file()) {
            return Err(format!(
                "PKTVEC_SWX_HEADERS={} has no {missing}: it must name a directory holding {} \
                 (lib/pipeline/ of the installed DPDK release's source)",
                dir.display(),
                HEADERS.join(" and ")
            )
            .into());
        }
        return Ok(dir);
    }
    let (upstream, debian) = installed_versions()?;
    let cache = std::env::temp_dir()
        .join("pktvec-swx-headers")
        .join(&debian);
    if HEADERS.iter().all(|h| cache.join(h).is_file()) {
        return Ok(cache);
    }
    fetch_headers(&upstream, &debian, &cache)?;
    Ok(cache)
}

/// The installed DPDK release: `pkg-config --modversion libdpdk` (e.g. `22.11.11`) and the
/// Debian version of `libdpdk-dev` (e.g. `22.11.11-0+deb12u1`), checked to agree.
fn installed_versions() -> Result<(String, String), Error> {
    let run = |cmd: &str, args: &[&str]| -> Result<String, String> {
        let out = Command::new(cmd)
            .args(args)
            .output()
            .map_err(|e| format!("{cmd}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{cmd} {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let upstream = run("pkg-config", &["--modversion", "libdpdk"]).map_err(|e| {
        format!("DPDK's SWX pipeline needs libdpdk-dev and pkg-config ({e}): apt-get install -y libdpdk-dev pkg-config")
    })?;
    let debian = run("dpkg-query", &["-W", "-f=${Version}", "libdpdk-dev"]).map_err(|e| {
        format!(
            "cannot tell which Debian source package matches the installed DPDK {upstream} \
             ({e}). Set PKTVEC_SWX_HEADERS to a directory holding {} from lib/pipeline/ of \
             the DPDK {upstream} source.",
            HEADERS.join(" and ")
        )
    })?;
    if !debian.starts_with(&upstream) {
        return Err(format!(
            "pkg-config finds DPDK {upstream} but libdpdk-dev is {debian}: they must be the \
             same release for the pipeline headers to match. Set PKTVEC_SWX_HEADERS to \
             lib/pipeline/ of the DPDK {upstream} source."
        )
        .into());
    }
    Ok((upstream, debian))
}

/// Downloads the source package of `debian` into a scratch directory, extracts only the two
/// headers from its upstream tarball and copies them into `cache`.
fn fetch_headers(upstream: &str, debian: &str, cache: &Path) -> Result<(), Error> {
    let work = c_harness::Scratch::new("swx-headers")?;
    let dir = work.path("src");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let spec = format!("dpdk={debian}");
    eprintln!("fetching DPDK {upstream}'s pipeline headers: apt-get source --download-only {spec}");
    let out = Command::new("apt-get")
        .args(["source", "--download-only", &spec])
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("apt-get: {e}. {HEADERS_FIX}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "apt-get source --download-only {spec} failed ({}): {}. The SWX pipeline's \
             generated C needs {} from that source package, which libdpdk-dev does not \
             ship. {HEADERS_FIX}",
            out.status,
            stderr.trim(),
            HEADERS.join(" and ")
        )
        .into());
    }
    let tarball = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(".orig.tar."))
        })
        .ok_or_else(|| {
            format!(
                "apt-get source {spec} left no *.orig.tar.* in {}. {HEADERS_FIX}",
                dir.display()
            )
        })?;
    let mut tar = Command::new("tar");
    tar.arg("-xf")
        .arg(&tarball)
        .arg("--wildcards")
        .current_dir(&dir);
    for h in HEADERS {
        tar.arg(format!("*/lib/pipeline/{h}"));
    }
    let st = tar.status().map_err(|e| format!("tar: {e}"))?;
    if !st.success() {
        return Err(format!(
            "tar could not extract {} from {} ({st})",
            HEADERS.join(" and "),
            tarball.display()
        )
        .into());
    }
    // The tarball's top directory is dpdk-<version> or dpdk-stable-<version>.
    let top = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.join("lib/pipeline").join(HEADERS[0]).is_file())
        .ok_or_else(|| format!("{} held no lib/pipeline/{}", tarball.display(), HEADERS[0]))?;
    std::fs::create_dir_all(cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    for h in HEADERS {
        // Copy then rename, so that a concurrent run never sees half a header.
        let part = cache.join(format!("{h}.part-{}", std::process::id()));
        std::fs::copy(top.join("lib/pipeline").join(h), &part)
            .map_err(|e| format!("{}: {e}", part.display()))?;
        std::fs::rename(&part, cache.join(h)).map_err(|e| format!("{}: {e}", cache.display()))?;
    }
    eprintln!(
        "DPDK {upstream}'s pipeline headers cached in {}",
        cache.display()
    );
    Ok(())
}

/// The tags of the harness processes' EAL file prefixes, unique within this process.
static NEXT_TAG: AtomicUsize = AtomicUsize::new(0);

/// DPDK's SWX pipeline, ready to compile specs and run them: the built `swx_bench` harness
/// and the directory of the internal headers the generated C needs.
pub struct Swx {
    bin: PathBuf,
    headers: PathBuf,
    mem_mib: usize,
    burst_instr: u32,
    direct: bool,
    /// `cc`'s optimisation flag for the generated pipelines.
    opt: &'static str,
    /// EAL prefixes of `serve` processes, whose runtime directories are removed on drop
    /// (those of `codegen` and `once` go as soon as the process ends).
    tags: Mutex<Vec<String>>,
}

impl Swx {
    /// Finds the headers ([`headers_dir`]) and builds `swx_bench` ([`c_harness::build`]).
    pub fn new() -> Result<Swx, Error> {
        let headers = headers_dir()?;
        let bin = c_harness::build("swx_bench")?;
        Ok(Swx {
            bin,
            headers,
            mem_mib: DEFAULT_MEM_MIB,
            burst_instr: 1000,
            direct: true,
            opt: "-O3",
            tags: Mutex::new(Vec::new()),
        })
    }

    /// The EAL memory (MiB) each harness process gets (default 1024): it must hold the mbuf
    /// pool (every packet of the traces the iospec's sources load, plus 4096, about 2.3 KiB
    /// each) and the tables.
    pub fn mem_mib(mut self, mib: usize) -> Swx {
        self.mem_mib = mib;
        self
    }

    /// The instructions per `rte_swx_pipeline_run` call in [`Swx::serve`] (default 1000;
    /// the harness checks the input port's count between calls).
    pub fn burst_instr(mut self, k: u32) -> Swx {
        self.burst_instr = k;
        self
    }

    /// Compiles the generated pipelines with `-O1` instead of `-O3`: for checking outputs
    /// (a third of the compile time), never for timing.
    pub fn quick_compile(mut self) -> Swx {
        self.opt = "-O1";
        self
    }

    /// Whether the exact-match tables' entries go straight into the pipeline's table objects
    /// with the table's own add (swx_bench `--direct`, the default) or through the control
    /// API, whose add is O(n^2) in the entries loaded (16K take about a second, 2^20 would
    /// take hours). Wildcard/lpm tables and default entries always use the control API.
    pub fn direct(mut self, direct: bool) -> Swx {
        self.direct = direct;
        self
    }

    /// A fresh EAL file-prefix tag and the harness's EAL arguments for it.
    fn eal(mem_mib: usize) -> (String, Vec<String>) {
        let tag = format!("swx{}", NEXT_TAG.fetch_add(1, Ordering::Relaxed));
        let args = c_harness::eal_args(&tag, mem_mib);
        (tag, args)
    }

    /// Translates `spec` into C (`<out_dir>/<stem>.c`) and compiles it into
    /// `<out_dir>/<stem>.so`, which it returns. A spec error names the spec's line and shows
    /// it (line 0: found after parsing, when DPDK configured the pipeline; its message then
    /// names only the part, e.g. "Action configuration error.").
    pub fn compile(&self, spec: &Path, out_dir: &Path) -> Result<PathBuf, Error> {
        let stem = spec
            .file_stem()
            .and_then(|s| s.to_str())
            .ok_or_else(|| format!("{}: no file name", spec.display()))?;
        std::fs::create_dir_all(out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
        let c = out_dir.join(format!("{stem}.c"));
        let so = out_dir.join(format!("{stem}.so"));
        let (tag, mut args) = Swx::eal(64);
        args.extend([
            "codegen".to_string(),
            spec.display().to_string(),
            c.display().to_string(),
        ]);
        let out = Command::new(&self.bin).args(&args).output();
        c_harness::remove_eal_dir(&tag);
        let out = out?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(codegen_error(spec, &stderr).into());
        }
        let cmd = format!(
            "cc {} -shared -fPIC -DALLOW_EXPERIMENTAL_API -I'{}' $(pkg-config --cflags libdpdk) '{}' -o '{}'",
            self.opt,
            self.headers.display(),
            c.display(),
            so.display()
        );
        let out = Command::new("sh").arg("-c").arg(&cmd).output()?;
        if !out.status.success() {
            return Err(format!(
                "compiling the generated pipeline failed ({}): {cmd}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        Ok(so)
    }

    fn pipeline_args(
        &self,
        mode: &str,
        lib: &Path,
        iospec: &Path,
        tables: &[(String, PathBuf)],
    ) -> (String, Vec<String>) {
        let (tag, mut args) = Swx::eal(self.mem_mib);
        args.extend([
            mode.to_string(),
            "--lib".into(),
            lib.display().to_string(),
            "--iospec".into(),
            iospec.display().to_string(),
        ]);
        for (name, file) in tables {
            args.push("--table".into());
            args.push(format!("{name}={}", file.display()));
        }
        if self.direct {
            args.push("--direct".into());
        }
        (tag, args)
    }

    /// Builds the pipeline from `lib` (from [`Swx::compile`]) and `iospec`, loads each
    /// table's entries file (`(table name, file)`), and returns the harness waiting for
    /// `run` rounds ([`Served::round`]): each runs `packets` packets through input port 0 after
    /// a warm-up and yields the lines `packets P cycles C`, `out_packets O`, `drop_packets D`.
    /// Its info lines: `tsc_hz`, `entries`, `load` (`direct` or `ctl`), `mem_bytes` (DPDK
    /// heap held by the data path's tables and register arrays), `ctl_mem_bytes` (the control
    /// API's shadow table copies), `libc_bytes`, `ports_in`, `ports_out`. The iospec's input
    /// should be a source with `loop 0`, its outputs sinks with `file none`; paths in it are
    /// relative to this process's working directory, so write them absolute.
    pub fn serve(
        &self,
        lib: &Path,
        iospec: &Path,
        tables: &[(String, PathBuf)],
        packets: u64,
    ) -> Result<Served, Error> {
        let (tag, mut args) = self.pipeline_args("serve", lib, iospec, tables);
        self.tags
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(tag);
        args.extend([
            "--burst-instr".to_string(),
            self.burst_instr.to_string(),
            "--packets".to_string(),
            packets.to_string(),
        ]);
        Served::start(&self.bin, &args)
    }

    /// Builds the pipeline as [`Swx::serve`] does, runs it until its input stops (the
    /// iospec's source should have `loop 1`, its outputs sinks writing pcap files), flushes
    /// and frees it so that the pcap files are complete, and returns the harness's output:
    /// the info lines, then `in X out Y drop Z` (packets read; sent to the iospec's output
    /// ports; sent to the drop port the pipeline adds after them).
    pub fn once(
        &self,
        lib: &Path,
        iospec: &Path,
        tables: &[(String, PathBuf)],
    ) -> Result<String, Error> {
        let (tag, args) = self.pipeline_args("once", lib, iospec, tables);
        let out = c_harness::run_once(&self.bin, &args);
        c_harness::remove_eal_dir(&tag);
        out
    }
}

impl Drop for Swx {
    fn drop(&mut self) {
        for tag in self.tags.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            c_harness::remove_eal_dir(tag);
        }
    }
}

/// The error for a failed codegen: swx_bench's `codegen error: line L: MESSAGE (errno)`
/// with the spec's line L shown when there is one.
fn codegen_error(spec: &Path, stderr: &str) -> String {
    let Some(rest) = stderr
        .lines()
        .find_map(|l| l.strip_prefix("codegen error: line "))
    else {
        return format!("codegen of {} failed: {}", spec.display(), stderr.trim());
    };
    let (line_no, msg) = rest.split_once(": ").unwrap_or(("0", rest));
    let line_no: usize = line_no.parse().unwrap_or(0);
    if line_no == 0 {
        return format!(
            "{}: {msg} (found when DPDK configured the pipeline, after parsing, so without \
             a line: a bad field, width, name or instruction in the part it names)",
            spec.display()
        );
    }
    let text = std::fs::read_to_string(spec)
        .ok()
        .and_then(|s| s.lines().nth(line_no - 1).map(|l| l.trim().to_string()))
        .unwrap_or_default();
    format!("{}:{line_no}: {msg}: {text}", spec.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codegen_errors_name_the_line() {
        let dir = c_harness::Scratch::new("swx-test-codegen").unwrap();
        let spec = dir.path("bad.spec");
        std::fs::write(&spec, "struct s {\n\tbit<7> x\n}\n").unwrap();
        let e = codegen_error(
            &spec,
            "codegen error: line 2: Invalid struct field size. (Invalid argument)\n",
        );
        assert!(e.ends_with("bad.spec:2: Invalid struct field size. (Invalid argument): bit<7> x"));
        let e = codegen_error(
            &spec,
            "codegen error: line 0: Action configuration error. (Invalid argument)\n",
        );
        assert!(e.contains("Action configuration error.") && e.contains("without a line"));
        assert!(codegen_error(&spec, "rte_eal_init failed\n").contains("rte_eal_init failed"));
    }

    /// Writes a classic pcap file of Ethernet frames.
    fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
        let mut b = Vec::new();
        for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        for (i, f) in frames.iter().enumerate() {
            for v in [i as u32, 0, f.len() as u32, f.len() as u32] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.extend_from_slice(f);
        }
        std::fs::write(path, b).unwrap();
    }

    /// The frames of a classic little-endian pcap file.
    fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
        let d = std::fs::read(path).unwrap();
        let mut off = 24;
        let mut out = Vec::new();
        while off + 16 <= d.len() {
            let incl = u32::from_le_bytes(d[off + 8..off + 12].try_into().unwrap()) as usize;
            off += 16;
            out.push(d[off..off + incl].to_vec());
            off += incl;
        }
        out
    }

    /// The forward example of benches/dpdk/swx end to end: compile, `once` with the entries
    /// loaded both ways (the frames for port 1 and port 2 come out unchanged, the others are
    /// dropped), and a short `serve`. Runs where DPDK is installed and its pipeline headers
    /// can be had (see benches/dpdk/README.md); elsewhere it says why and checks nothing.
    #[test]
    fn forward_example_end_to_end() {
        let dpdk = Command::new("pkg-config")
            .args(["--exists", "libdpdk"])
            .status()
            .is_ok_and(|s| s.success());
        if !dpdk {
            eprintln!("skipped: DPDK is not installed (pkg-config libdpdk)");
            return;
        }
        let swx = match Swx::new() {
            Ok(s) => s.mem_mib(256),
            Err(e) if e.to_string().contains("deb-src") || e.to_string().contains(HEADERS[0]) => {
                eprintln!("skipped: the pipeline headers cannot be had here: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/dpdk/swx");
        let dir = c_harness::Scratch::new("swx-test-forward").unwrap();
        let lib = swx
            .compile(&ex.join("forward.spec"), &dir.path("build"))
            .unwrap();
        let dsts: [u64; 3] = [0x0CC4_7AA3_2534, 0x0CC4_7AA3_2535, 0x0CC4_7AA3_2536];
        let frames: Vec<Vec<u8>> = (0..30u64)
            .map(|i| {
                let mut f = dsts[(i % 3) as usize].to_be_bytes()[2..].to_vec();
                f.extend_from_slice(&(0x0200_0000_0000 + i).to_be_bytes()[2..]);
                f.extend_from_slice(&[0x08, 0x00]);
                f.extend((0..242u64).map(|k| (i + k) as u8));
                f
            })
            .collect();
        let input = dir.path("in.pcap");
        write_pcap(&input, &frames);
        let io = dir.path("once.io");
        let mut text = format!(
            "port in 0 source mempool MEMPOOL0 file {} loop 1 packets 0\n",
            input.display()
        );
        for p in 0..3 {
            text += &format!(
                "port out {p} sink file {}\n",
                dir.path(&format!("out{p}.pcap")).display()
            );
        }
        std::fs::write(&io, text).unwrap();
        let tables = [("forward_table".to_string(), ex.join("forward.entries"))];
        // Both ways of loading the entries.
        for direct in [false, true] {
            let out = Swx::new()
                .unwrap()
                .mem_mib(256)
                .direct(direct)
                .once(&lib, &io, &tables)
                .unwrap();
            assert!(out.contains("in 30 out 20 drop 10"), "{out}");
            let load = if direct { "load direct" } else { "load ctl" };
            assert!(out.contains(load), "{out}");
            for (port, dst) in [(1, dsts[0]), (2, dsts[1])] {
                let want: Vec<Vec<u8>> = frames
                    .iter()
                    .filter(|f| f[..6] == dst.to_be_bytes()[2..])
                    .cloned()
                    .collect();
                assert_eq!(read_pcap(&dir.path(&format!("out{port}.pcap"))), want);
            }
            assert!(read_pcap(&dir.path("out0.pcap")).is_empty());
        }

        let io = dir.path("serve.io");
        let mut text = format!(
            "port in 0 source mempool MEMPOOL0 file {} loop 0 packets 0\n",
            input.display()
        );
        for p in 0..3 {
            text += &format!("port out {p} sink file none\n");
        }
        std::fs::write(&io, text).unwrap();
        let mut served = swx.serve(&lib, &io, &tables, 3000).unwrap();
        assert_eq!(served.info_value::<u64>("entries"), Some(2));
        let round = served.round().unwrap();
        let value = |key: &str, at: usize| -> u64 {
            let f = round.iter().find(|f| f[0] == key).unwrap();
            f[at].parse().unwrap()
        };
        assert!(value("packets", 1) >= 3000);
        assert!(value("packets", 3) > 0);
        assert!(value("out_packets", 1) > 0 && value("drop_packets", 1) > 0);
    }
}
