//! Capture taps: copy the packets leaving a node to a pcap file (readable by tshark and
//! Wireshark), as VPP's `pcap trace` does.
//!
//! A tap on node X records every packet X sends on, whichever arc it takes (drops
//! included), with its bytes as they leave X. Writing goes through a buffered writer; the
//! file is complete after [`Graph::capture_stop`](crate::Graph::capture_stop) or when the
//! graph is dropped.
//!
//! ```no_run
//! # fn demo(graph: &mut pktvec_graph::Graph) -> Result<(), pktvec_graph::CaptureError> {
//! graph.capture_start("ip4-input", "/tmp/ip4-input.pcap", Some(1000))?;
//! graph.run_until_idle();
//! let written = graph.capture_stop("ip4-input")?;
//! println!("{written} packets captured");
//! # Ok(()) }
//! ```

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;
use pktvec_packet::BufferPool;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Errors starting or stopping a capture.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// No node of that name (the error lists the known names).
    #[error(transparent)]
    UnknownNode(#[from] crate::graph::NodeLookupError),
    /// No capture is running on the node.
    #[error("no capture running on node `{0}`")]
    NotCapturing(String),
    /// The file could not be created or written.
    #[error("capture file {path}: {source}")]
    Io {
        /// File path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The pcap writer failed.
    #[error("capture file {path}: {msg}")]
    Pcap {
        /// File path.
        path: PathBuf,
        /// What went wrong.
        msg: String,
    },
}

pub(crate) struct Tap {
    writer: Option<PcapWriter<BufWriter<File>>>,
    path: PathBuf,
    remaining: Option<u64>,
    written: u64,
    error: Option<String>,
}

impl Tap {
    pub(crate) fn create(path: &Path, max_packets: Option<u64>) -> Result<Tap, CaptureError> {
        let file = File::create(path).map_err(|source| CaptureError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let header = PcapHeader {
            datalink: DataLink::ETHERNET,
            snaplen: 65535,
            ..PcapHeader::default()
        };
        let writer = PcapWriter::with_header(BufWriter::new(file), header).map_err(|e| {
            CaptureError::Pcap {
                path: path.to_path_buf(),
                msg: e.to_string(),
            }
        })?;
        Ok(Tap {
            writer: Some(writer),
            path: path.to_path_buf(),
            remaining: max_packets,
            written: 0,
            error: None,
        })
    }

    /// Writes the packets `bis` (until the packet limit or the first write error).
    pub(crate) fn write(&mut self, pool: &BufferPool, bis: &[u32]) {
        let Some(w) = self.writer.as_mut() else {
            return;
        };
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        for &bi in bis {
            if self.remaining == Some(0) {
                return;
            }
            let data = pool.data(bi);
            let pkt = PcapPacket::new(ts, data.len() as u32, data);
            if let Err(e) = w.write_packet(&pkt) {
                self.error = Some(e.to_string());
                self.writer = None;
                return;
            }
            self.written += 1;
            if let Some(r) = self.remaining.as_mut() {
                *r -= 1;
            }
        }
    }

    /// Flushes and closes the file; returns the number of packets written.
    pub(crate) fn finish(mut self) -> Result<u64, CaptureError> {
        if let Some(msg) = self.error.take() {
            return Err(CaptureError::Pcap {
                path: self.path,
                msg,
            });
        }
        if let Some(w) = self.writer.take() {
            let mut inner = w.into_writer();
            std::io::Write::flush(&mut inner).map_err(|source| CaptureError::Io {
                path: self.path.clone(),
                source,
            })?;
        }
        Ok(self.written)
    }
}
