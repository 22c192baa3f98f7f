//! Prints a record's SWX twin (its `.spec`, then each table's entries): `cargo run -p
//! pktvec-synth --example dump_twin -- 'bench = "parse-headers"' 'param = 2'`.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let toml_text: Vec<String> = std::env::args().skip(1).collect();
    let r: pktvec_synth::record::Record = toml::from_str(&toml_text.join("\n"))?;
    r.validate()?;
    let twin = pktvec_synth::swx::Twin::new(&r);
    print!("{}", twin.spec);
    for (name, entries) in &twin.tables {
        println!("// {name}: {} entries", entries.lines().count());
    }
    Ok(())
}
