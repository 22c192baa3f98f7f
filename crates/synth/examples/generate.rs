//! Writes what one parameter record generates: the SWX twin (`<name>.spec`, one entries
//! file per table, `<name>.io`) and the traffic (`<name>.pcap`), and prints the pktvec
//! graph's nodes.
//!
//! ```text
//! cargo run -p pktvec-synth --example generate -- crates/synth/records/tables-dependent.toml /tmp/twin
//! ```
use pktvec_graph::{GraphBuilder, GraphConfig};
use pktvec_synth::{pipeline, record::Record, swx::Twin, traffic};
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(file), Some(dir)) = (args.next(), args.next()) else {
        return Err("usage: generate RECORD.toml OUT_DIR".into());
    };
    let r: Record = toml::from_str(&std::fs::read_to_string(&file)?)?;
    r.validate()?;
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir)?;
    let name = r.name().replace('/', "_");
    let twin = Twin::new(&r);
    std::fs::write(dir.join(format!("{name}.spec")), &twin.spec)?;
    for (table, entries) in &twin.tables {
        std::fs::write(dir.join(format!("{name}.{table}.entries")), entries)?;
    }
    let pcap = dir.join(format!("{name}.pcap"));
    traffic::write_pcap(&r, &pcap)?;
    let outs = ["none", "none", "none"];
    let io = Twin::iospec(&pcap.display().to_string(), 1, r.packets, &outs);
    std::fs::write(dir.join(format!("{name}.io")), io)?;
    let mut b = GraphBuilder::new(GraphConfig::default());
    let built = pipeline::add_to(&r, &mut b, "tx")?;
    println!(
        "{}: pktvec graph input -> {} -> tx",
        r.name(),
        built.nodes.join(" -> ")
    );
    println!(
        "wrote {}/{name}.{{spec,io,pcap}} and {} entries files",
        dir.display(),
        twin.tables.len()
    );
    Ok(())
}
