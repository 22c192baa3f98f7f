//! The conflict profiler: each packet's read and write sets, per object and per 64-byte
//! line, and how often packets processed together would conflict (seed `004_*`, Fig. 1).

use std::collections::HashSet;

/// One recorded access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Access {
    /// Registered object tag (high 16 bits) and the object's index.
    object: u64,
    /// First and last 64-byte line touched.
    first_line: u64,
    last_line: u64,
    write: bool,
}

/// Records the read and write sets of every packet a worker processes.
///
/// Sections feed it through [`Section::note_read`](crate::Section::note_read) and
/// [`note_write`](crate::Section::note_write) (the tables and arrays do so themselves);
/// the NF marks packet boundaries.
///
/// ```
/// use pktvec_state::profile::Profiler;
/// let mut p = Profiler::default();
/// for flow in [1u64, 2, 1, 3] {
///     p.begin_packet();
///     p.access(0, flow, 64 * flow as usize, 8, true); // each packet writes its flow's record
///     p.end_packet();
/// }
/// let rows = p.conflicts(2..=3);
/// // window 2 pairs neighbours (flows 1-2, 2-1, 1-3): none conflict; window 3 also pairs
/// // packets two apart, and the two packets of flow 1 do
/// assert_eq!(rows[0].pairs_by_object, 0.0);
/// assert!(rows[1].pairs_by_object > 0.0);
/// ```
#[derive(Debug, Default, Clone)]
pub struct Profiler {
    accesses: Vec<Access>,
    /// Per packet: its accesses' range.
    packets: Vec<(u32, u32)>,
    open: Option<u32>,
}

/// Conflicts among packets processed together, for one window size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConflictRow {
    /// Consecutive packets considered together.
    pub window: usize,
    /// Share of packet pairs within a window whose sets conflict (a write of one meets a
    /// read or write of the other), objects compared.
    pub pairs_by_object: f64,
    /// The same, 64-byte lines compared (false sharing shows here).
    pub pairs_by_line: f64,
    /// Share of packets that conflict with at least one other packet of their window,
    /// objects compared.
    pub packets_by_object: f64,
    /// The same, lines compared.
    pub packets_by_line: f64,
}

impl ConflictRow {
    /// The rows as a text table, one line a window, shares in percent.
    ///
    /// ```
    /// use pktvec_state::profile::{ConflictRow, Profiler};
    /// let t = ConflictRow::table(&Profiler::default().conflicts(2..=3));
    /// assert!(t.starts_with("  window  pairs/object"));
    /// assert_eq!(t.lines().count(), 3);
    /// ```
    pub fn table(rows: &[ConflictRow]) -> String {
        let mut s =
            String::from("  window  pairs/object  pairs/line  packets/object  packets/line\n");
        for r in rows {
            s += &format!(
                "  {:>6}  {:>11.1}%  {:>9.1}%  {:>13.1}%  {:>11.1}%\n",
                r.window,
                100.0 * r.pairs_by_object,
                100.0 * r.pairs_by_line,
                100.0 * r.packets_by_object,
                100.0 * r.packets_by_line
            );
        }
        s
    }
}

impl Profiler {
    /// Starts a packet's sets.
    pub fn begin_packet(&mut self) {
        self.open = Some(self.accesses.len() as u32);
    }

    /// Ends the packet's sets.
    pub fn end_packet(&mut self) {
        if let Some(start) = self.open.take() {
            self.packets.push((start, self.accesses.len() as u32));
        }
    }

    /// Records an access of `len` bytes at `addr` to object `index` of tag `tag` (outside a
    /// packet it is ignored: expiry sweeps are not packets).
    pub fn access(&mut self, tag: u16, index: u64, addr: usize, len: usize, write: bool) {
        if self.open.is_none() {
            return;
        }
        let first = addr as u64 >> 6;
        let last = (addr + len.max(1) - 1) as u64 >> 6;
        self.accesses.push(Access {
            object: (u64::from(tag) << 48) | (index & ((1 << 48) - 1)),
            first_line: first,
            last_line: last,
            write,
        });
    }

    /// Packets recorded.
    pub fn packets(&self) -> usize {
        self.packets.len()
    }

    /// Conflict shares for each window size in `windows` (sliding windows over the packets
    /// in the order they were processed).
    pub fn conflicts(&self, windows: std::ops::RangeInclusive<usize>) -> Vec<ConflictRow> {
        let n = self.packets.len();
        let max_w = *windows.end();
        let sets: Vec<Sets> = self
            .packets
            .iter()
            .map(|&(a, b)| Sets::of(&self.accesses[a as usize..b as usize]))
            .collect();
        // conflict of each packet with each of the `max_w - 1` before it
        let mut obj = vec![0u32; n]; // bit d-1: conflicts with the packet d before
        let mut line = vec![0u32; n];
        for i in 0..n {
            for d in 1..max_w.min(i + 1) {
                let (a, b) = (&sets[i], &sets[i - d]);
                if a.conflicts_objects(b) {
                    obj[i] |= 1 << (d - 1);
                }
                if a.conflicts_lines(b) {
                    line[i] |= 1 << (d - 1);
                }
            }
        }
        windows
            .map(|w| {
                let w = w.max(2);
                let mask = (1u32 << (w - 1)) - 1;
                let (mut pairs, mut po, mut pl) = (0u64, 0u64, 0u64);
                let (mut packets, mut ko, mut kl) = (0u64, 0u64, 0u64);
                // every window [s, s+w): pairs and conflicting packets
                for s in 0..n.saturating_sub(w - 1) {
                    let mut in_o = 0u32; // bit j: packet s+j conflicts within the window
                    let mut in_l = 0u32;
                    for j in 1..w {
                        let i = s + j;
                        let m = mask & ((1u32 << j) - 1); // partners inside the window
                        let (co, cl) = (obj[i] & m, line[i] & m);
                        pairs += j as u64;
                        po += co.count_ones() as u64;
                        pl += cl.count_ones() as u64;
                        if co != 0 {
                            in_o |= 1 << j;
                            for d in 1..=j {
                                if co & (1 << (d - 1)) != 0 {
                                    in_o |= 1 << (j - d);
                                }
                            }
                        }
                        if cl != 0 {
                            in_l |= 1 << j;
                            for d in 1..=j {
                                if cl & (1 << (d - 1)) != 0 {
                                    in_l |= 1 << (j - d);
                                }
                            }
                        }
                    }
                    packets += w as u64;
                    ko += in_o.count_ones() as u64;
                    kl += in_l.count_ones() as u64;
                }
                let r = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
                ConflictRow {
                    window: w,
                    pairs_by_object: r(po, pairs),
                    pairs_by_line: r(pl, pairs),
                    packets_by_object: r(ko, packets),
                    packets_by_line: r(kl, packets),
                }
            })
            .collect()
    }
}

/// One packet's read and write sets.
struct Sets {
    read_obj: HashSet<u64>,
    write_obj: HashSet<u64>,
    read_line: HashSet<u64>,
    write_line: HashSet<u64>,
}

impl Sets {
    fn of(acc: &[Access]) -> Sets {
        let mut s = Sets {
            read_obj: HashSet::new(),
            write_obj: HashSet::new(),
            read_line: HashSet::new(),
            write_line: HashSet::new(),
        };
        for a in acc {
            let (o, l) = match a.write {
                true => (&mut s.write_obj, &mut s.write_line),
                false => (&mut s.read_obj, &mut s.read_line),
            };
            o.insert(a.object);
            l.extend(a.first_line..=a.last_line);
        }
        s
    }

    fn conflicts_objects(&self, o: &Sets) -> bool {
        meets(&self.write_obj, &o.write_obj)
            || meets(&self.write_obj, &o.read_obj)
            || meets(&self.read_obj, &o.write_obj)
    }

    fn conflicts_lines(&self, o: &Sets) -> bool {
        meets(&self.write_line, &o.write_line)
            || meets(&self.write_line, &o.read_line)
            || meets(&self.read_line, &o.write_line)
    }
}

fn meets(a: &HashSet<u64>, b: &HashSet<u64>) -> bool {
    let (small, big) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    small.iter().any(|x| big.contains(x))
}
