//! pcap and pcapng files: read a capture into memory and replay it into the graph
//! ([`PcapSource`]), write what reaches a node to a pcap file ([`PcapSink`]).
//!
//! Parsing is done by the maintained `pcap-file` crate; this module only adapts it to
//! buffers and nodes. Only Ethernet captures are replayed: packets of other link types are
//! skipped and counted in [`Capture::skipped`].
//!
//! ```
//! use pktvec_io::capture::{read_capture, write_pcap};
//! let dir = std::env::temp_dir().join(format!("pktvec-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("two.pcap");
//! write_pcap(&path, &[vec![0xffu8; 60], vec![0x01; 64]])?;
//! let cap = read_capture(&path)?;
//! assert_eq!(cap.packets.len(), 2);
//! assert_eq!(cap.packets[1].len(), 64);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::DataLink;
use pktvec_graph::builtin::fill_frame;
use pktvec_graph::{next_nodes, Context, Frame, NoError, NoNext, Node, NodeKind};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Errors reading or writing captures.
#[derive(Debug, thiserror::Error)]
pub enum CaptureIoError {
    /// The file could not be opened, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a pcap or pcapng capture, or is corrupt.
    #[error("{path}: {msg}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        msg: String,
    },
}

/// A capture read into memory.
#[derive(Debug, Clone, Default)]
pub struct Capture {
    /// Ethernet frames, in file order.
    pub packets: Vec<Vec<u8>>,
    /// Packets skipped because their link type is not Ethernet.
    pub skipped: u64,
    /// True if the capture was truncated or corrupt after some packets (they are kept).
    pub truncated: bool,
}

/// Reads a pcap or pcapng file (detected by its magic number) into memory.
///
/// A corrupt tail after valid packets is not an error: the packets before it are returned
/// and [`Capture::truncated`] is set. A file that is not a capture at all is an error.
pub fn read_capture(path: impl AsRef<Path>) -> Result<Capture, CaptureIoError> {
    let path = path.as_ref();
    let io = |source| CaptureIoError::Io {
        path: path.to_path_buf(),
        source,
    };
    let fmt = |msg: String| CaptureIoError::Format {
        path: path.to_path_buf(),
        msg,
    };
    let mut magic = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map_err(io)?;
    let reader = BufReader::new(File::open(path).map_err(io)?);
    let mut cap = Capture::default();
    if magic == [0x0a, 0x0d, 0x0d, 0x0a] {
        let mut r = PcapNgReader::new(reader).map_err(|e| fmt(e.to_string()))?;
        while let Some(block) = r.next_block() {
            let block = match block {
                Ok(b) => b,
                Err(_) => {
                    cap.truncated = true;
                    break;
                }
            };
            let (iface, data) = match block {
                Block::EnhancedPacket(p) => (Some(p.interface_id), p.data.into_owned()),
                Block::SimplePacket(p) => (Some(0), p.data.into_owned()),
                Block::Packet(p) => (Some(p.interface_id as u32), p.data.into_owned()),
                _ => (None, Vec::new()),
            };
            if let Some(i) = iface {
                let ethernet = r
                    .interfaces()
                    .get(i as usize)
                    .is_some_and(|d| d.linktype == DataLink::ETHERNET);
                if ethernet {
                    cap.packets.push(data);
                } else {
                    cap.skipped += 1;
                }
            }
        }
    } else {
        let mut r = PcapReader::new(reader).map_err(|e| fmt(e.to_string()))?;
        let ethernet = r.header().datalink == DataLink::ETHERNET;
        while let Some(p) = r.next_packet() {
            match p {
                Ok(p) if ethernet => cap.packets.push(p.data.into_owned()),
                Ok(_) => cap.skipped += 1,
                Err(_) => {
                    cap.truncated = true;
                    break;
                }
            }
        }
    }
    Ok(cap)
}

/// Writes Ethernet frames to a pcap file (timestamps 1 µs apart from now).
pub fn write_pcap(path: impl AsRef<Path>, packets: &[Vec<u8>]) -> Result<(), CaptureIoError> {
    let mut w = PcapFileWriter::create(path)?;
    for p in packets {
        w.write(p)?;
    }
    w.finish()
}

/// A buffered pcap writer (Ethernet link type).
pub struct PcapFileWriter {
    writer: PcapWriter<BufWriter<File>>,
    path: PathBuf,
    written: u64,
}

impl PcapFileWriter {
    /// Creates (truncates) the file and writes the pcap header.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, CaptureIoError> {
        let path = path.as_ref().to_path_buf();
        let file = File::create(&path).map_err(|source| CaptureIoError::Io {
            path: path.clone(),
            source,
        })?;
        let header = PcapHeader {
            datalink: DataLink::ETHERNET,
            snaplen: 65535,
            ..PcapHeader::default()
        };
        let writer = PcapWriter::with_header(BufWriter::new(file), header).map_err(|e| {
            CaptureIoError::Format {
                path: path.clone(),
                msg: e.to_string(),
            }
        })?;
        Ok(PcapFileWriter {
            writer,
            path,
            written: 0,
        })
    }

    /// Appends one frame.
    pub fn write(&mut self, data: &[u8]) -> Result<(), CaptureIoError> {
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            + std::time::Duration::from_micros(self.written);
        self.writer
            .write_packet(&PcapPacket::new(ts, data.len() as u32, data))
            .map_err(|e| CaptureIoError::Format {
                path: self.path.clone(),
                msg: e.to_string(),
            })?;
        self.written += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Flushes and closes the file.
    pub fn finish(self) -> Result<(), CaptureIoError> {
        let mut inner = self.writer.into_writer();
        std::io::Write::flush(&mut inner).map_err(|source| CaptureIoError::Io {
            path: self.path,
            source,
        })
    }
}

next_nodes! {
    /// The one arc of [`PcapSource`].
    pub enum PcapSourceNext {
        /// Every packet (by default to `ethernet-input`).
        Out = "ethernet-input",
    }
}

/// Input node replaying a capture held in memory: one vector per poll, optionally looping
/// (for benchmarks), with an optional packet limit.
///
/// ```
/// use pktvec_graph::{builtin::NullSink, GraphBuilder, GraphConfig};
/// use pktvec_io::capture::{Capture, PcapSource, PcapSourceNext};
/// use pktvec_packet::{BufferPool, PoolConfig};
/// let cap = Capture { packets: vec![vec![0u8; 60]; 10], ..Default::default() };
/// let mut b = GraphBuilder::new(GraphConfig::default());
/// b.add("pcap-input", PcapSource::new(cap).looping(true).with_limit(1000))
///     .add("tx", NullSink)
///     .set_next("pcap-input", PcapSourceNext::Out, "tx");
/// let mut g = b.build(BufferPool::new(PoolConfig::default())?)?;
/// assert_eq!(g.run_until_idle(), 1000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PcapSource {
    packets: Vec<Vec<u8>>,
    pos: usize,
    looping: bool,
    limit: Option<u64>,
    produced: u64,
    too_long: u64,
    rx_if: u16,
}

impl PcapSource {
    /// A source over a capture.
    pub fn new(capture: Capture) -> Self {
        PcapSource {
            packets: capture.packets,
            pos: 0,
            looping: false,
            limit: None,
            produced: 0,
            too_long: 0,
            rx_if: 0,
        }
    }

    /// Reads a file and makes a source of it.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CaptureIoError> {
        Ok(Self::new(read_capture(path)?))
    }

    /// Starts again at the first packet after the last one.
    pub fn looping(mut self, on: bool) -> Self {
        self.looping = on;
        self
    }

    /// Stops after `n` packets in all.
    pub fn with_limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }

    /// Receive interface recorded in the packets' metadata.
    pub fn with_rx_interface(mut self, rx_if: u16) -> Self {
        self.rx_if = rx_if;
        self
    }

    /// Packets produced so far.
    pub fn produced(&self) -> u64 {
        self.produced
    }

    /// Packets truncated to the buffer's data room.
    pub fn truncated_to_room(&self) -> u64 {
        self.too_long
    }
}

impl Node for PcapSource {
    type Next = PcapSourceNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Input;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        if self.packets.is_empty() {
            return;
        }
        let mut want = cx.vector_size();
        if let Some(limit) = self.limit {
            want = want.min(limit.saturating_sub(self.produced) as usize);
        }
        if !self.looping {
            want = want.min(self.packets.len() - self.pos);
        }
        let (packets, pos, looping) = (&self.packets, &mut self.pos, self.looping);
        let (got, truncated) = fill_frame(cx, frame, want, self.rx_if, || {
            let data = &packets[*pos];
            *pos += 1;
            if *pos == packets.len() && looping {
                *pos = 0;
            }
            data
        });
        self.too_long += truncated;
        self.produced += got as u64;
        cx.enqueue_all(frame, PcapSourceNext::Out);
    }
}

/// Sink node writing every packet it receives to a pcap file, then freeing it. Write errors
/// stop the writing (counted in [`PcapSink::errors`]); packets are still freed.
pub struct PcapSink {
    writer: Option<PcapFileWriter>,
    errors: u64,
}

impl PcapSink {
    /// A sink writing to `path`.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, CaptureIoError> {
        Ok(PcapSink {
            writer: Some(PcapFileWriter::create(path)?),
            errors: 0,
        })
    }

    /// Write errors seen.
    pub fn errors(&self) -> u64 {
        self.errors
    }
}

impl Drop for PcapSink {
    fn drop(&mut self) {
        if let Some(w) = self.writer.take() {
            let _ = w.finish();
        }
    }
}

impl Node for PcapSink {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        if let Some(w) = self.writer.as_mut() {
            for &bi in frame.buffers() {
                if w.write(cx.pool().data(bi)).is_err() {
                    self.errors += 1;
                    self.writer = None;
                    break;
                }
            }
        }
        cx.free_frame(frame);
    }
}

/// Sink node counting packets and bytes per transmit interface, then freeing them.
#[derive(Debug, Default, Clone)]
pub struct CountingSink {
    /// Packets per `tx_if` (index = interface; packets without one are counted last).
    pub packets: Vec<u64>,
    /// Bytes per `tx_if`, same indexing.
    pub bytes: Vec<u64>,
}

impl CountingSink {
    /// A sink for interfaces `0..interfaces` (and one more slot for "no interface").
    pub fn new(interfaces: usize) -> Self {
        CountingSink {
            packets: vec![0; interfaces + 1],
            bytes: vec![0; interfaces + 1],
        }
    }
}

impl Node for CountingSink {
    type Next = NoNext;
    type Error = NoError;
    const KIND: NodeKind = NodeKind::Sink;

    fn process(&mut self, cx: &mut Context<'_, Self>, frame: &mut Frame) {
        let last = self.packets.len().saturating_sub(1);
        if !self.packets.is_empty() {
            for &bi in frame.buffers() {
                let m = cx.pool().meta(bi);
                let i = (m.tx_if as usize).min(last);
                self.packets[i] += 1;
                self.bytes[i] += m.len as u64;
            }
        }
        cx.free_frame(frame);
    }
}
