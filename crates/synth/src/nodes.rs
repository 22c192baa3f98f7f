//! The generated nodes: each one feature of the benchmark programs, configured from a
//! record at build time, each on the usual loops (the prefetching loop, or sub-batches of
//! `b` that prefetch the table buckets of a whole sub-batch before looking any of them up).
//!
//! Parse state travels in the buffer metadata: `user[0]` = generic headers parsed,
//! `user[1]` = the last selector read (chain variant), `l3_offset` = the offset after the
//! parsed headers; the dependent tables' key travels in `opaque`.
//!
//! ```
//! use pktvec_synth::nodes::{Parse, ParseSpec};
//! let p = Parse::new(ParseSpec { headers: 4, fields: 1, fanout: 1, kv: false });
//! assert_eq!(p.spec().headers, 4);
//! ```

use crate::layout::*;
use crate::record::{Registers, Writes};
use pktvec_graph::{next_nodes, node_errors, Context, Frame, Node, Verdict, MAX_SUB_BATCH};
use pktvec_lookup::hash::{HashKey, HashTable, Hashed};
use pktvec_packet::{BufferMeta, PacketMut};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

next_nodes! {
    /// Arcs of the pipeline stages (each rewired by [`crate::pipeline::add_to`]).
    pub enum StageNext {
        /// The next stage.
        Next = "drop",
        /// Past the remaining parse stages (chain variant: parsing ended early).
        Done = "drop",
        /// Not PTP: straight to `forward_table`, untouched (the twin's `jmpneq FWD`).
        Unparsed = "drop",
    }
}

node_errors! {
    /// Why the generated nodes drop.
    pub enum SynthError {
        /// The packet ends inside a header the program parses.
        Truncated = "truncated header",
        /// The key/value header the program needs is absent.
        NoKey = "no key/value header",
        /// `forward_table` has no entry for the destination MAC.
        ForwardMiss = "forward_table miss",
        /// The key/value table has no entry for the key.
        TableMiss = "table miss",
        /// Not an IPv4 packet (checksum benchmark).
        NotIpv4 = "not ipv4",
        /// IPv4 header length field below 5 or past the packet.
        BadIpv4 = "bad ipv4 header",
        /// TTL 0 on arrival.
        TtlExpired = "ttl expired",
        /// No headroom for the headers to add.
        NoHeadroom = "no headroom",
    }
}

type V = Verdict<StageNext, SynthError>;

#[inline(always)]
fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

/// What a parse node parses after Ethernet + PTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseSpec {
    /// Generic header levels the program declares.
    pub headers: u32,
    /// 16-bit fields per generic header.
    pub fields: u32,
    /// Selector values `1..=fanout` go on to the next level; any other ends parsing.
    pub fanout: u32,
    /// The program parses the key/value header (selector 1) instead of generic headers.
    pub kv: bool,
}

/// Parses Ethernet + PTP and what follows ([`ParseSpec`]): one node for every level (the
/// fused variant), or, with [`Parse::stage`], the Ethernet + PTP stage of a chain.
pub struct Parse {
    spec: ParseSpec,
    all_levels: bool,
}

impl Parse {
    /// The fused parser: every level in one node.
    pub fn new(spec: ParseSpec) -> Parse {
        Parse {
            spec,
            all_levels: true,
        }
    }
    /// The first stage of a chain: Ethernet + PTP only; [`ParseLevel`] nodes follow.
    pub fn stage(spec: ParseSpec) -> Parse {
        Parse {
            spec,
            all_levels: false,
        }
    }
    /// What it parses.
    pub fn spec(&self) -> ParseSpec {
        self.spec
    }
}

#[inline(always)]
fn set_parsed(m: &mut BufferMeta, n: u32, sel: u16, off: usize) {
    m.user[0] = n as u8;
    m.user[1] = sel.min(255) as u8;
    m.l3_offset = off as u16;
}

#[inline(always)]
fn parse_one(s: &ParseSpec, all: bool, p: &mut PacketMut<'_>) -> V {
    let d = p.data();
    if d.len() < ETH_LEN {
        return Verdict::Drop(SynthError::Truncated);
    }
    if be16(d, 12) != ETHERTYPE_PTP {
        set_parsed(p.meta_mut(), 0, 0, ETH_LEN);
        return Verdict::Next(StageNext::Unparsed);
    }
    if d.len() < GENERIC {
        return Verdict::Drop(SynthError::Truncated);
    }
    let mut sel = u16::from(d[PTP_RESERVED2]);
    if s.kv {
        if sel != 1 {
            return Verdict::Drop(SynthError::NoKey);
        }
        if d.len() < GENERIC + KV_LEN {
            return Verdict::Drop(SynthError::Truncated);
        }
        set_parsed(p.meta_mut(), 0, 0, GENERIC + KV_LEN);
        return Verdict::Next(StageNext::Next);
    }
    let (mut off, mut n) = (GENERIC, 0u32);
    let hlen = 2 * s.fields as usize;
    if all {
        while n < s.headers && sel >= 1 && u32::from(sel) <= s.fanout {
            if off + hlen > d.len() {
                return Verdict::Drop(SynthError::Truncated);
            }
            sel = be16(d, off);
            off += hlen;
            n += 1;
        }
        set_parsed(p.meta_mut(), n, sel, off);
        Verdict::Next(StageNext::Next)
    } else {
        set_parsed(p.meta_mut(), 0, sel, off);
        if s.headers > 0 && sel >= 1 && u32::from(sel) <= s.fanout {
            Verdict::Next(StageNext::Next)
        } else {
            Verdict::Next(StageNext::Done)
        }
    }
}

impl Node for Parse {
    type Next = StageNext;
    type Error = SynthError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let (s, all) = (self.spec, self.all_levels);
        cx.process_packets(frame, |p| parse_one(&s, all, p));
    }
}

/// One generic header level of a chain parser: parses the header the previous stage's
/// selector chose; `Next` when the header selects a further level, `Done` otherwise.
pub struct ParseLevel {
    spec: ParseSpec,
    level: u32,
}

impl ParseLevel {
    /// The stage parsing level `level` (0-based) of `spec`.
    pub fn new(spec: ParseSpec, level: u32) -> ParseLevel {
        ParseLevel { spec, level }
    }
}

impl Node for ParseLevel {
    type Next = StageNext;
    type Error = SynthError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let (s, level) = (self.spec, self.level);
        let hlen = 2 * s.fields as usize;
        // The packets' lines are hot (the previous stage just read them): a plain loop, no
        // prefetch.
        let map = cx.verdict_map();
        let (bufs, nexts) = frame.split_mut();
        let mut pk = cx.pool_mut().packets_mut();
        for (slot, &bi) in nexts.iter_mut().zip(bufs) {
            let mut p = pk.packet_mut(bi);
            let off = usize::from(p.meta().l3_offset);
            let d = p.data();
            let v = if off + hlen > d.len() {
                Verdict::Drop(SynthError::Truncated)
            } else {
                let sel = be16(d, off);
                set_parsed(p.meta_mut(), level + 1, sel, off + hlen);
                if level + 1 < s.headers && sel >= 1 && u32::from(sel) <= s.fanout {
                    Verdict::Next(StageNext::Next)
                } else {
                    Verdict::Next(StageNext::Done)
                }
            };
            *slot = map.slot(v, p.meta_mut());
        }
        cx.enqueue_frame(frame);
    }
}

/// `forward_table`: exact match on the destination MAC, the entry's port as `tx_if`;
/// no entry: dropped.
pub struct Forward {
    table: HashTable<[u8; 6], u32>,
}

impl Forward {
    /// The seed's two entries: `0C:C4:7A:A3:25:34` → port 1, `…:35` → port 2.
    pub fn new() -> Forward {
        let mut table = HashTable::new(16).expect("16 entries fit");
        table.insert(MAC_PORT1, 1).expect("room");
        table.insert(MAC_PORT2, 2).expect("room");
        Forward { table }
    }
}

impl Default for Forward {
    fn default() -> Self {
        Forward::new()
    }
}

impl Node for Forward {
    type Next = StageNext;
    type Error = SynthError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let t = &self.table;
        cx.process_packets(frame, |p| {
            let Some(&dst) = p.as_packet().bytes_at::<6>(0) else {
                return Verdict::Drop(SynthError::Truncated);
            };
            match t.lookup(&dst) {
                Some(port) => {
                    p.meta_mut().tx_if = port as u16;
                    Verdict::Next(StageNext::Next)
                }
                None => Verdict::Drop(SynthError::ForwardMiss),
            }
        });
    }
}

/// One exact-match table of a table node.
pub enum Table {
    /// Keyed on the destination MAC; a hit sets `tx_if` (tables-independent) or, with
    /// `dependent`, the key the next table reads.
    Mac {
        /// The entries (MAC → value).
        table: HashTable<[u8; 6], u32>,
        /// Whether the value is the next table's key (else the port).
        dependent: bool,
    },
    /// Keyed on the key the previous table wrote; a hit writes the next key.
    Chained(HashTable<u32, u32>),
    /// Keyed on the key/value header's key; a hit writes the value into the packet, a miss
    /// drops it.
    Kv(HashTable<u32, u32>),
}

impl Table {
    /// Bytes of table memory.
    pub fn memory_bytes(&self) -> usize {
        match self {
            Table::Mac { table, .. } => table.memory_bytes(),
            Table::Chained(t) | Table::Kv(t) => t.memory_bytes(),
        }
    }
    /// Entries.
    pub fn len(&self) -> usize {
        match self {
            Table::Mac { table, .. } => table.len(),
            Table::Chained(t) | Table::Kv(t) => t.len(),
        }
    }
    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Per-packet state of a sub-batch in a table node.
#[derive(Clone, Copy, Default)]
struct Lane {
    key: u32,
    hash: u64,
    drop: bool,
    /// The last stage's answer (`hit`: found).
    val: u32,
    hit: bool,
}

/// Applies `tables` in order to every packet, a sub-batch at a time: for each table, the
/// keys and hashes of the whole sub-batch first (prefetching their buckets), then the
/// lookups. The chain variant is one such node per table; the fused variant one node with
/// all of them. The last table of tables-dependent writes the final key into PTP's
/// `reserved3` (`write_key`).
pub struct Tables {
    tables: Vec<Table>,
    prefetch: bool,
    write_key: bool,
    /// Per-packet state of one sub-batch (allocated once).
    lanes: Box<[Lane; MAX_SUB_BATCH]>,
}

impl Tables {
    /// A node over `tables`; `prefetch` false looks up packet by packet with no prefetch.
    pub fn new(tables: Vec<Table>, prefetch: bool, write_key: bool) -> Tables {
        Tables {
            tables,
            prefetch,
            write_key,
            lanes: Box::new([Lane::default(); MAX_SUB_BATCH]),
        }
    }
    /// The tables.
    pub fn tables(&self) -> &[Table] {
        &self.tables
    }
}

#[inline(always)]
fn stage<K: HashKey>(
    t: &HashTable<K, u32>,
    prefetch: bool,
    lanes: &mut [Lane],
    key_of: impl Fn(usize, &Lane) -> Option<K>,
    mut hit: impl FnMut(usize, &mut Lane, Option<u32>),
) {
    if prefetch {
        for (j, l) in lanes.iter_mut().enumerate() {
            if let Some(k) = key_of(j, l) {
                let h = t.hash(&k);
                t.prefetch(h);
                l.hash = h.0;
            }
        }
        for (j, l) in lanes.iter_mut().enumerate() {
            if let Some(k) = key_of(j, l) {
                let v = t.lookup_hashed(&k, Hashed(l.hash));
                hit(j, l, v);
            }
        }
    } else {
        for (j, l) in lanes.iter_mut().enumerate() {
            if let Some(k) = key_of(j, l) {
                let v = t.lookup(&k);
                hit(j, l, v);
            }
        }
    }
}

impl Node for Tables {
    type Next = StageNext;
    type Error = SynthError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let b = if self.prefetch {
            cx.sub_batch().clamp(1, MAX_SUB_BATCH)
        } else {
            1
        };
        let map = cx.verdict_map();
        let (bufs, nexts) = frame.split_mut();
        let mut pk = cx.pool_mut().packets_mut();
        let Tables {
            tables,
            prefetch,
            write_key,
            lanes,
        } = self;
        let (prefetch, write_key) = (*prefetch, *write_key);
        let mut s = 0;
        while s < bufs.len() {
            let e = (s + b).min(bufs.len());
            let idx = &bufs[s..e];
            let lanes = &mut lanes[..e - s];
            for (j, (l, &bi)) in lanes.iter_mut().zip(idx).enumerate() {
                if prefetch {
                    if let Some(&ahead) = bufs.get(s + j + b) {
                        pk.prefetch(ahead);
                    }
                }
                *l = Lane {
                    key: pk.meta(bi).opaque,
                    ..Lane::default()
                };
            }
            for t in tables.iter() {
                for l in lanes.iter_mut() {
                    l.hit = false;
                }
                let found = |_: usize, l: &mut Lane, v: Option<u32>| {
                    l.hit = v.is_some();
                    l.val = v.unwrap_or(0);
                };
                match t {
                    Table::Mac { table, dependent } => {
                        let pkr = &pk;
                        stage(
                            table,
                            prefetch,
                            lanes,
                            |j, _| pkr.packet(idx[j]).bytes_at::<6>(0).copied(),
                            found,
                        );
                        for (l, &bi) in lanes.iter_mut().zip(idx) {
                            if l.hit {
                                if *dependent {
                                    l.key = l.val;
                                } else {
                                    pk.meta_mut(bi).tx_if = l.val as u16;
                                }
                            }
                        }
                    }
                    Table::Chained(table) => {
                        stage(table, prefetch, lanes, |_, l| Some(l.key), found);
                        for l in lanes.iter_mut() {
                            if l.hit {
                                l.key = l.val;
                            }
                        }
                    }
                    Table::Kv(table) => {
                        let pkr = &pk;
                        stage(
                            table,
                            prefetch,
                            lanes,
                            |j, l| {
                                if l.drop {
                                    return None;
                                }
                                pkr.packet(idx[j])
                                    .bytes_at::<4>(KV_KEY)
                                    .map(|k| u32::from_be_bytes(*k))
                            },
                            found,
                        );
                        for (l, &bi) in lanes.iter_mut().zip(idx) {
                            if l.hit {
                                let mut p = pk.packet_mut(bi);
                                if let Some(d) = p.data_mut().get_mut(KV_VALUE..KV_VALUE + 4) {
                                    d.copy_from_slice(&l.val.to_be_bytes());
                                }
                            } else {
                                l.drop = true;
                            }
                        }
                    }
                }
            }
            for (j, &bi) in idx.iter().enumerate() {
                let l = lanes[j];
                let m = pk.meta_mut(bi);
                m.opaque = l.key;
                nexts[s + j] = if l.drop {
                    map.slot(Verdict::Drop(SynthError::TableMiss), m)
                } else {
                    map.slot(Verdict::Next(StageNext::Next), m)
                };
            }
            if write_key {
                for (j, &bi) in idx.iter().enumerate() {
                    if !lanes[j].drop {
                        let mut p = pk.packet_mut(bi);
                        if let Some(d) = p.data_mut().get_mut(PTP_RESERVED3..PTP_RESERVED3 + 4) {
                            d.copy_from_slice(&lanes[j].key.to_be_bytes());
                        }
                    }
                }
            }
            s = e;
        }
        cx.enqueue_frame(frame);
    }
}

/// The IPv4 header checksum on a TTL decrement: `Off` (the checksum is left stale),
/// `Incremental` (RFC 1624 over the TTL/protocol word) or `Full` (recomputed over the
/// header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumMode {
    /// No update.
    Off,
    /// Incremental update.
    Incremental,
    /// Full recomputation.
    Full,
}

/// Decrements the TTL of an IPv4 packet with its checksum kept by [`ChecksumMode`].
pub struct Ttl {
    mode: ChecksumMode,
}

impl Ttl {
    /// The node in `mode`.
    pub fn new(mode: ChecksumMode) -> Ttl {
        Ttl { mode }
    }
}

/// One's complement sum folded to 16 bits.
#[inline(always)]
fn fold(s: u32) -> u16 {
    // At most three 16-bit words are added: two end-around carries suffice.
    let s = (s & 0xFFFF) + (s >> 16);
    ((s & 0xFFFF) + (s >> 16)) as u16
}

/// RFC 1624 eq. 3: the checksum `hc` after a 16-bit word changes from `old` to `new`.
#[inline(always)]
pub fn checksum_update(hc: u16, old: u16, new: u16) -> u16 {
    !fold(u32::from(!hc) + u32::from(!old) + u32::from(new))
}

impl Node for Ttl {
    type Next = StageNext;
    type Error = SynthError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let mode = self.mode;
        cx.process_packets(frame, |p| {
            let d = p.data_mut();
            if d.len() < ETH_LEN + 20 {
                return Verdict::Drop(SynthError::Truncated);
            }
            if be16(d, 12) != ETHERTYPE_IPV4 || d[ETH_LEN] >> 4 != 4 {
                return Verdict::Drop(SynthError::NotIpv4);
            }
            let hl = usize::from(d[ETH_LEN] & 0xF) * 4;
            if hl < 20 || ETH_LEN + hl > d.len() {
                return Verdict::Drop(SynthError::BadIpv4);
            }
            let ip = &mut d[ETH_LEN..ETH_LEN + hl];
            if ip[8] == 0 {
                return Verdict::Drop(SynthError::TtlExpired);
            }
            let old = be16(ip, 8);
            let csum = be16(ip, 10);
            let c = match mode {
                ChecksumMode::Off => csum,
                ChecksumMode::Incremental => checksum_update(csum, old, old - 0x100),
                ChecksumMode::Full => {
                    // The header's words summed before anything is stored (a store into
                    // the words being loaded would stall their loads): all of them, less
                    // the checksum word, less the TTL's 0x0100. The usual 20 bytes at a
                    // fixed length (unrolled), options by slice.
                    let all = match <&[u8; 20]>::try_from(&ip[..]) {
                        Ok(h) => pktvec_packet::checksum::sum(h),
                        Err(_) => pktvec_packet::checksum::sum(ip),
                    };
                    pktvec_packet::checksum::finish(all + u64::from(!csum) + u64::from(!0x0100u16))
                }
            };
            ip[8] -= 1;
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            Verdict::Next(StageNext::Next)
        });
    }
}

/// Register reads or writes at the key/value header's key (masked to the array size):
/// `ops` operations on register 0 ([`Registers::Same`]) or on registers `0..ops`. A read
/// leaves the value read last in the header's value; a write stores the header's value.
pub struct RegisterOps {
    regs: Vec<Box<[u32]>>,
    ops: u32,
    same: bool,
    write: bool,
}

impl RegisterOps {
    /// `ops` reads (`write` false) or writes.
    pub fn new(ops: u32, registers: Registers, write: bool) -> RegisterOps {
        let same = registers == Registers::Same;
        let n = if same { 1 } else { ops.max(1) };
        RegisterOps {
            regs: (0..n)
                .map(|_| vec![REGISTER_INIT; REGISTER_SIZE as usize].into_boxed_slice())
                .collect(),
            ops,
            same,
            write,
        }
    }
    /// Register `r`'s element `i`.
    pub fn get(&self, r: usize, i: usize) -> Option<u32> {
        self.regs.get(r).and_then(|a| a.get(i)).copied()
    }
}

impl Node for RegisterOps {
    type Next = StageNext;
    type Error = SynthError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let (ops, same, write) = (self.ops, self.same, self.write);
        let regs = &mut self.regs;
        cx.process_packets(frame, |p| {
            let d = p.data_mut();
            let Some(kv) = d.get_mut(KV_KEY..KV_KEY + KV_LEN) else {
                return Verdict::Drop(SynthError::Truncated);
            };
            let idx =
                (u32::from_be_bytes([kv[0], kv[1], kv[2], kv[3]]) & (REGISTER_SIZE - 1)) as usize;
            if write {
                let v = u32::from_be_bytes([kv[4], kv[5], kv[6], kv[7]]);
                for i in 0..ops {
                    let r = black_box(if same { 0 } else { i as usize });
                    regs[r][idx] = v;
                }
            } else {
                let mut v = 0;
                for i in 0..ops {
                    let r = black_box(if same { 0 } else { i as usize });
                    v = regs[r][idx];
                }
                kv[4..8].copy_from_slice(&v.to_be_bytes());
            }
            Verdict::Next(StageNext::Next)
        });
    }
}

/// Adds `n` generic headers of [`crate::record::MOD_FIELDS`] fields after PTP (field 0
/// chains them, field 1 is the header's number, the others 0) and sets PTP's selector.
pub struct HeaderAdd {
    n: u32,
}

impl HeaderAdd {
    /// Adds `n` headers.
    pub fn new(n: u32) -> HeaderAdd {
        HeaderAdd { n }
    }
}

impl Node for HeaderAdd {
    type Next = StageNext;
    type Error = SynthError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let n = self.n as usize;
        let hl = 2 * crate::record::MOD_FIELDS as usize;
        cx.process_packets(frame, |p| {
            if p.len() < GENERIC {
                return Verdict::Drop(SynthError::Truncated);
            }
            if p.prepend(n * hl).is_err() {
                return Verdict::Drop(SynthError::NoHeadroom);
            }
            let d = p.data_mut();
            d.copy_within(n * hl..n * hl + GENERIC, 0);
            d[PTP_RESERVED2] = 1;
            for (i, h) in d[GENERIC..GENERIC + n * hl]
                .chunks_exact_mut(hl)
                .enumerate()
            {
                h.fill(0);
                h[1] = u8::from(i + 1 < n);
                h[2..4].copy_from_slice(&(i as u16).to_be_bytes());
            }
            Verdict::Next(StageNext::Next)
        });
    }
}

/// Removes the generic headers the parser found (`user[0]` of them) and clears PTP's
/// selector.
pub struct HeaderRemove;

impl Node for HeaderRemove {
    type Next = StageNext;
    type Error = SynthError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let hl = 2 * crate::record::MOD_FIELDS as usize;
        cx.process_packets(frame, |p| {
            let cut = usize::from(p.meta().user[0]) * hl;
            if p.len() < GENERIC + cut {
                return Verdict::Drop(SynthError::Truncated);
            }
            let d = p.data_mut();
            d.copy_within(0..GENERIC, cut);
            d[cut + PTP_RESERVED2] = 0;
            let _ = p.advance(cut);
            Verdict::Next(StageNext::Next)
        });
    }
}

/// Field writes on the 16-field header after PTP: write `i` targets field `(i + 1) % 16`
/// ([`Writes`]). A packet without that header (the parser found none) passes untouched.
pub struct FieldWrites {
    n: u32,
    kind: Writes,
}

impl FieldWrites {
    /// `n` writes of `kind`.
    pub fn new(n: u32, kind: Writes) -> FieldWrites {
        FieldWrites { n, kind }
    }
}

impl Node for FieldWrites {
    type Next = StageNext;
    type Error = SynthError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let (n, kind) = (self.n as usize, self.kind);
        const F: usize = crate::record::WRITE_FIELDS as usize;
        cx.process_packets(frame, |p| {
            if p.meta().user[0] == 0 {
                return Verdict::Next(StageNext::Next);
            }
            let Some(h) = p.data_mut().get_mut(GENERIC..GENERIC + 2 * F) else {
                return Verdict::Drop(SynthError::Truncated);
            };
            let mut f = [0u16; F];
            for (x, c) in f.iter_mut().zip(h.chunks_exact(2)) {
                *x = u16::from_be_bytes([c[0], c[1]]);
            }
            for i in 0..n {
                let (s, t) = (i % F, (i + 1) % F);
                f[t] = match kind {
                    Writes::Chained => f[s],
                    Writes::Independent => 0x100 + i as u16,
                    Writes::Arithmetic => f[t].wrapping_add(f[s]),
                    Writes::Boolean => f[t] ^ f[s],
                };
            }
            for (x, c) in f.iter().zip(h.chunks_exact_mut(2)) {
                c.copy_from_slice(&x.to_be_bytes());
            }
            Verdict::Next(StageNext::Next)
        });
    }
}

/// A per-packet counter at the key/value header's key, in one register shared by every
/// worker (atomic adds) or in a shard of the worker's own.
pub struct SharedRegister {
    shared: Option<Arc<[AtomicU64]>>,
    shard: Box<[u64]>,
}

impl SharedRegister {
    /// Counting into `shared` (atomic) or, with `None`, into this node's own shard.
    pub fn new(shared: Option<Arc<[AtomicU64]>>) -> SharedRegister {
        SharedRegister {
            shared,
            shard: vec![0; REGISTER_SIZE as usize].into_boxed_slice(),
        }
    }
    /// The register array shared by every worker, zeroed.
    pub fn shared_array() -> Arc<[AtomicU64]> {
        (0..REGISTER_SIZE).map(|_| AtomicU64::new(0)).collect()
    }
    /// This node's shard's total (0 when counting into the shared register).
    pub fn shard_total(&self) -> u64 {
        self.shard.iter().sum()
    }
}

impl Node for SharedRegister {
    type Next = StageNext;
    type Error = SynthError;
    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let shared = self.shared.as_deref();
        let shard = &mut self.shard;
        cx.process_packets(frame, |p| {
            let Some(k) = p
                .as_packet()
                .bytes_at::<4>(KV_KEY)
                .map(|k| u32::from_be_bytes(*k))
            else {
                return Verdict::Drop(SynthError::Truncated);
            };
            let i = (k & (REGISTER_SIZE - 1)) as usize;
            match shared {
                Some(a) => {
                    a[i].fetch_add(1, Ordering::Relaxed);
                }
                None => shard[i] += 1,
            }
            Verdict::Next(StageNext::Next)
        });
    }
}
