//! Fuzz target `synth_pipelines`: frames from the input (the graph targets' format, see
//! `pktvec_fuzz::Input`) through the generated pipelines of the Whippersnapper suite
//! (`pktvec-synth`): one record per benchmark (the first point of its sweep, tables of at
//! most 2^10 entries), chosen by byte 2 bits 0..=3 (mod 13, the flow benchmarks left out); byte 0 bit 5 picks the chain
//! variant of the parse and table benchmarks. A synthetic frame is the record's own
//! traffic frame with 3-byte edits (big-endian offset mod the length, byte written there),
//! a last 1 or 2 bytes cutting it to that length.
//! Checks: no panic, conservation balanced, every buffer back in the pool, no double free,
//! and every frame equal to the record's own traffic sent out on port 2 when the pool
//! had buffers for all of them.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pktvec::graph::{GraphBuilder, GraphConfig};
use pktvec::io::capture::{Capture, CountingSink, PcapSource, PcapSourceNext};
use pktvec::packet::{BufferPool, PoolConfig};
use pktvec_fuzz::{hex, targets::run_under_pressure, Input};
use pktvec_synth::record::{Bench, Record, Variant};
use pktvec_synth::{pipeline, traffic};

fn record(i: u8, chain: bool) -> Record {
    // Every benchmark but the flow ones (the table-size nodes over a 2^20 table).
    let benches: Vec<Bench> = Bench::ALL
        .into_iter()
        .filter(|b| !matches!(b, Bench::FlowChurn | Bench::FlowSize))
        .collect();
    let b = benches[usize::from(i) % benches.len()];
    let mut r = Record::new(b, b.sweep()[1.min(b.sweep().len() - 1)]);
    if b == Bench::TableSize {
        r.param = 10;
    }
    r.packets = 64;
    r.variant = if chain { Variant::Chain } else { Variant::Fused };
    r
}

fuzz_target!(|data: &[u8]| {
    let input = Input::parse(data);
    let r = record(data.get(2).copied().unwrap_or(0) & 0x0f, input.variant);
    let own = traffic::frames(&r);
    let mut frames = Vec::with_capacity(input.frames.len());
    for f in &input.frames {
        if !f.synthetic {
            frames.push(f.bytes.to_vec());
            continue;
        }
        let mut x = own[usize::from(f.bytes.first().copied().unwrap_or(0)) % own.len()].clone();
        let edits = f.bytes.get(1..).unwrap_or_default();
        let mut chunks = edits.chunks_exact(3);
        for e in &mut chunks {
            let at = usize::from(u16::from_be_bytes([e[0], e[1]])) % x.len();
            x[at] = e[2];
        }
        if let Some(&cut) = chunks.remainder().first() {
            x.truncate(usize::from(cut) % (x.len() + 1));
        }
        frames.push(x);
    }
    let unchanged = frames.iter().filter(|f| own.contains(f)).count() as u64;
    let cfg = GraphConfig {
        vector_size: input.vector_size,
        prefetch_distance: input.prefetch,
        sub_batch: input.sub_batch,
        ..GraphConfig::default()
    };
    let mut b = GraphBuilder::new(cfg);
    let cap = Capture {
        packets: frames,
        ..Default::default()
    };
    b.add("input", PcapSource::new(cap).with_timestamps(false))
        .add("tx", CountingSink::new(4));
    let built = pipeline::add_to(&r, &mut b, "tx").expect("the records are valid");
    b.set_next("input", PcapSourceNext::Out, &built.entry);
    let pool = BufferPool::new(PoolConfig {
        buffers: 512,
        ..PoolConfig::default()
    })
    .expect("pool");
    let mut g = b.build(pool).expect("graph");
    let mut held = Vec::new();
    run_under_pressure(&mut g, input.free_buffers, &mut held);
    let c = g.conservation();
    assert!(c.is_balanced(), "{}: conservation: {c}\ninput: {}", r.name(), hex(data));
    assert_eq!(g.pool().in_use(), 0, "{}: buffers in use\ninput: {}", r.name(), hex(data));
    assert_eq!(g.pool().double_frees(), 0, "{}: double free\ninput: {}", r.name(), hex(data));
    if input.free_buffers.is_none() {
        let sent = g.node::<CountingSink>("tx").map_or(0, |s| s.packets[2]);
        assert!(
            sent >= unchanged,
            "{}: {sent} sent on port 2, {unchanged} of the record's own frames in\n{}\ninput: {}",
            r.name(),
            g.errors(),
            hex(data)
        );
    }
});
