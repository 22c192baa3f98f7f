//! The traffic of a record: the frames both pktvec and the SWX twin receive, as bytes and
//! as a pcap file.
//!
//! ```
//! use pktvec_synth::record::{Bench, Record};
//! use pktvec_synth::traffic::frames;
//! let f = frames(&Record::new(Bench::ParseHeaders, 3));
//! assert_eq!(f.len(), 1);
//! assert_eq!(f[0].len(), 256);
//! assert_eq!(&f[0][58..64], &[0, 1, 0, 1, 0, 0]); // three headers, the last ends the chain
//! ```

use crate::layout::*;
use crate::record::{Bench, Record};

fn ethernet(out: &mut Vec<u8>, ethertype: u16) {
    out.extend_from_slice(&MAC_PORT2);
    out.extend_from_slice(&MAC_PORT1);
    out.extend_from_slice(&ethertype.to_be_bytes());
}

/// Ethernet + PTP with `reserved2` = `select` (the seed generator's PTP defaults).
fn ptp(select: u8) -> Vec<u8> {
    let mut f = Vec::with_capacity(256);
    ethernet(&mut f, ETHERTYPE_PTP);
    f.extend_from_slice(&[0x10, 0x22, 0x00, 0x2C, 0x00, select, 0x00, 0x00]);
    f.extend_from_slice(&[0; 8]); // correction
    f.extend_from_slice(&[0; 4]); // reserved3
    f.extend_from_slice(&[0x00, 0x00, 0x00, 0x80, 0x63, 0xFF, 0xFF, 0x00, 0x09, 0xBA]);
    f.extend_from_slice(&[0x9E, 0x48, 0x05, 0x0F]);
    f.extend_from_slice(&[0x00, 0x00, 0x45, 0xB1, 0x11, 0x51, 0x04, 0x72, 0xF9, 0xC1]);
    debug_assert_eq!(f.len(), GENERIC);
    f
}

/// `n` generic headers of `fields` fields: field 0 is 1 (go on) but in the last (0), field
/// `k > 0` is `k`.
fn generic_chain(f: &mut Vec<u8>, n: u32, fields: u32) {
    for i in 0..n {
        let go = u16::from(i + 1 < n);
        f.extend_from_slice(&go.to_be_bytes());
        for k in 1..fields {
            f.extend_from_slice(&(k as u16).to_be_bytes());
        }
    }
}

fn pad(mut f: Vec<u8>, size: usize) -> Vec<u8> {
    if f.len() < size {
        f.resize(size, 0);
    }
    f
}

fn kv_frame(r: &Record, key: u32, value: u32) -> Vec<u8> {
    let mut f = ptp(1);
    f.extend_from_slice(&key.to_be_bytes());
    f.extend_from_slice(&value.to_be_bytes());
    pad(f, r.packet_size)
}

/// The IPv4/UDP frame of the checksum benchmark (TTL 64, a valid header checksum).
fn ipv4_frame(size: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(size);
    ethernet(&mut f, ETHERTYPE_IPV4);
    let total = (size - ETH_LEN) as u16;
    let mut ip = [
        0x45, 0, 0, 0, 0x12, 0x34, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    let c = pktvec_packet::checksum::checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    let udp_len = total - 20;
    f.extend_from_slice(&[0xFE, 0xCF, 0x3C, 0x48]);
    f.extend_from_slice(&udp_len.to_be_bytes());
    f.extend_from_slice(&[0, 0]); // no UDP checksum
    pad(f, size)
}

/// The record's frames, in the order they are sent (replayed in a loop when timing).
pub fn frames(r: &Record) -> Vec<Vec<u8>> {
    let size = r.packet_size;
    let mut rng = Rng(r.seed ^ 0x5EED_0F7A_FF1C);
    match r.bench {
        Bench::ParseHeaders | Bench::ParseBranches => {
            let mut f = ptp(1);
            generic_chain(&mut f, r.param, r.fields_per_header());
            vec![pad(f, size)]
        }
        Bench::ParseFields | Bench::FieldWrites => {
            let mut f = ptp(1);
            for k in 0..r.fields_per_header() {
                // Field 0 is 0: the header ends the chain.
                f.extend_from_slice(&((k as u16).wrapping_mul(0x0101)).to_be_bytes());
            }
            vec![pad(f, size)]
        }
        Bench::HeaderRemove => {
            let mut f = ptp(1);
            generic_chain(&mut f, r.param, r.fields_per_header());
            vec![pad(f, size)]
        }
        Bench::TablesIndependent | Bench::TablesDependent | Bench::HeaderAdd => {
            vec![pad(ptp(0), size)]
        }
        Bench::Checksum => vec![ipv4_frame(size)],
        Bench::StateRead | Bench::StateWrite | Bench::SharedRegister => {
            vec![kv_frame(r, 1, 0xF1F2_F3F4)]
        }
        Bench::TableSize => {
            let entries = 1u64 << r.param;
            (0..r.packets)
                .map(|_| kv_frame(r, kv_key(rng.below(entries) as u32, r.seed), 0))
                .collect()
        }
        Bench::FlowChurn => {
            let entries = 1u32 << r.kv_table_log2();
            let hot = 1024;
            let mut fresh = hot;
            (0..r.packets)
                .map(|_| {
                    let j = if rng.below(100) < u64::from(r.param) {
                        fresh = if fresh + 1 >= entries { hot } else { fresh + 1 };
                        fresh
                    } else {
                        rng.below(u64::from(hot)) as u32
                    };
                    kv_frame(r, kv_key(j, r.seed), 0)
                })
                .collect()
        }
        Bench::FlowSize => {
            let entries = 1u64 << r.kv_table_log2();
            let mut out = Vec::with_capacity(r.packets as usize);
            while out.len() < r.packets as usize {
                let f = kv_frame(r, kv_key(rng.below(entries) as u32, r.seed), 0);
                for _ in 0..r.param.min(r.packets - out.len() as u32) {
                    out.push(f.clone());
                }
            }
            out
        }
    }
}

/// Writes the record's frames to a pcap file (Ethernet) that tshark and DPDK's source
/// port read.
pub fn write_pcap(
    r: &Record,
    path: &std::path::Path,
) -> Result<(), pktvec_io::capture::CaptureIoError> {
    pktvec_io::capture::write_pcap(path, &frames(r))
}
