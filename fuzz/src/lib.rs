//! What the graph-level fuzz targets share.
//!
//! Every graph target reads the same input format ([`Input::parse`]): a 3-byte header, then
//! up to [`MAX_FRAMES`] frames, each with a 2-byte header (synthetic flag, receive
//! interface, length). A *raw* frame is injected as it is; a *synthetic* frame's bytes are
//! parameters for [`synth`], which builds a valid frame that reaches deep into the
//! forwarder (an IPv4/IPv6 packet whose destination is inside a route, an ARP request for
//! the router, an NDN Interest under a FIB prefix, a frame between known stations) with the
//! rest of the bytes as its payload.
//!
//! Each target builds its forwarder's real graph once per process ([`targets`]), with the
//! library's `pktvec::nodes::apps` builders as the examples use them, and replaces the
//! transmit node by a checking sink ([`sink::CheckSink`]). For each input it computes what
//! the forwarder must transmit from an independent reference model ([`model`]), injects
//! the frames, runs the graph until idle and asserts: no panic, conservation balanced,
//! every buffer back in the pool, and the transmitted frames those the model expects.

pub mod acl;
pub mod model;
pub mod sink;
pub mod synth;
pub mod targets;

/// Most frames one input carries.
pub const MAX_FRAMES: usize = 32;

/// Vector sizes byte 1 selects (bits 0..=2): the default, and small ones that split an
/// input's frames over several vectors (partial vectors, re-queued nodes, the prefetching
/// loops' tails).
pub const VECTOR_SIZES: [usize; 8] = [256, 1, 2, 3, 4, 5, 8, 64];
/// Prefetch distances byte 1 selects (bits 3..=4).
pub const PREFETCH: [usize; 4] = [4, 0, 1, 2];
/// Sub-batch sizes of the two-phase loops byte 1 selects (bits 5..=7).
pub const SUB_BATCHES: [usize; 8] = [16, 1, 2, 3, 4, 8, 32, 64];
/// Receive interfaces a frame header selects (bits 12..=14): the four ports of the
/// forwarders, two beyond them, a large one and `NO_INTERFACE`.
pub const RX_IFS: [u16; 8] = [0, 1, 2, 3, 4, 5, 1000, u16::MAX];

/// Batch sizes of `ppb_l3fwd`'s batcher byte 2 selects (bits 0..=1; `None`: off).
pub const BATCH_SIZES: [Option<usize>; 4] = [Some(128), Some(4), Some(32), None];

/// Bytes of packet data a pool buffer holds (the pool's default data room); longer frames
/// are cut to this.
pub const DATA_ROOM: usize = 2048;

/// One frame of an input.
#[derive(Clone, Copy, Debug)]
pub struct FrameSpec<'a> {
    /// Receive interface recorded in the buffer's metadata.
    pub rx_if: u16,
    /// The bytes are parameters for [`synth`] rather than the frame itself.
    pub synthetic: bool,
    /// The frame's bytes (at most [`DATA_ROOM`] for a raw frame).
    pub bytes: &'a [u8],
}

/// A parsed fuzz input.
///
/// ```text
/// byte 0   bits 0..=4: frames - 1 (1..=32); bit 5: variant (a second graph of the
///          target, see `targets`); bit 6: trace the input's packets; bit 7: inject the
///          frames into the entry node instead of our input node (not ppb_l3fwd)
/// byte 1   bits 0..=2: vector size (VECTOR_SIZES); 3..=4: prefetch distance (PREFETCH);
///          5..=7: sub-batch size (SUB_BATCHES)
/// byte 2   pool pressure: 0xc0 + n leaves only n (0..=63) buffers free in the pool while
///          the input runs (frames that find no buffer are dropped at receive, flood copies
///          fail); below 0xc0, none. Bits 0..=1 (ppb_l3fwd): the batcher's batch size
///          (BATCH_SIZES; None: batching off)
/// frames   per frame a big-endian u16: bit 15 synthetic, bits 12..=14 receive
///          interface (RX_IFS), bits 0..=11 length; then that many bytes (fewer if the
///          input ends first). Parsing stops at the frame count or the end of the input.
/// ```
#[derive(Clone, Debug)]
pub struct Input<'a> {
    /// Byte 0, bit 5.
    pub variant: bool,
    /// Byte 0, bits 6..=7.
    pub extra: u8,
    /// Graph vector size.
    pub vector_size: usize,
    /// Prefetch distance of the prefetching loops.
    pub prefetch: usize,
    /// Sub-batch size of the two-phase loops.
    pub sub_batch: usize,
    /// Buffers left free in the pool during the run, if limited.
    pub free_buffers: Option<usize>,
    /// The batcher's batch size (`ppb_l3fwd`), `None` for batching off.
    pub batch: Option<usize>,
    /// The frames, in injection order.
    pub frames: Vec<FrameSpec<'a>>,
}

impl<'a> Input<'a> {
    /// Parses any bytes (missing header bytes read as 0; an input without a complete
    /// frame header has no frames).
    pub fn parse(data: &'a [u8]) -> Self {
        let b0 = data.first().copied().unwrap_or(0);
        let b1 = data.get(1).copied().unwrap_or(0);
        let b2 = data.get(2).copied().unwrap_or(0);
        let count = usize::from(b0 & 0x1f) + 1;
        let mut frames = Vec::with_capacity(count);
        let mut rest = data.get(3..).unwrap_or_default();
        while frames.len() < count && rest.len() >= 2 {
            let h = u16::from_be_bytes([rest[0], rest[1]]);
            rest = &rest[2..];
            let len = usize::from(h & 0x0fff).min(rest.len());
            let (bytes, tail) = rest.split_at(len);
            rest = tail;
            let synthetic = h & 0x8000 != 0;
            frames.push(FrameSpec {
                rx_if: RX_IFS[usize::from((h >> 12) & 7)],
                synthetic,
                bytes: if synthetic {
                    bytes
                } else {
                    &bytes[..bytes.len().min(DATA_ROOM)]
                },
            });
        }
        Input {
            variant: b0 & 0x20 != 0,
            extra: b0 >> 6,
            vector_size: VECTOR_SIZES[usize::from(b1 & 7)],
            prefetch: PREFETCH[usize::from((b1 >> 3) & 3)],
            sub_batch: SUB_BATCHES[usize::from(b1 >> 5)],
            free_buffers: (b2 >= 0xc0).then(|| usize::from(b2 - 0xc0)),
            batch: BATCH_SIZES[usize::from(b2 & 3)],
            frames,
        }
    }
}

/// Encodes frames in the input format (for seed corpora): `b0_high` supplies byte 0's bits
/// 5..=7 (variant and extra), `b1` and `b2` are bytes 1 and 2, and each frame is (index into [`RX_IFS`],
/// synthetic, bytes); bytes beyond 4095 are cut, frames beyond [`MAX_FRAMES`] left out.
pub fn encode(b0_high: u8, b1: u8, b2: u8, frames: &[(u8, bool, &[u8])]) -> Vec<u8> {
    let frames = &frames[..frames.len().min(MAX_FRAMES)];
    let n = frames.len().max(1) as u8 - 1;
    let mut out = vec![(b0_high & 0xe0) | n, b1, b2];
    for &(rx, synthetic, bytes) in frames {
        let bytes = &bytes[..bytes.len().min(0x0fff)];
        let h = (u16::from(synthetic) << 15) | (u16::from(rx & 7) << 12) | bytes.len() as u16;
        out.extend_from_slice(&h.to_be_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// Lower-case hex of `b` (for panic messages and reports).
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
