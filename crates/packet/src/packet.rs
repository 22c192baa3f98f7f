//! Access to one packet: its metadata and its bytes, with headroom for encapsulation.
//!
//! ```
//! use pktvec_packet::{BufferPool, PoolConfig};
//! let mut pool = BufferPool::new(PoolConfig::default()).unwrap();
//! let bi = pool.alloc_with(b"payload").unwrap();
//! let mut p = pool.packet_mut(bi);
//! p.prepend(4).unwrap().copy_from_slice(b"hdr:"); // encapsulate in the headroom
//! assert_eq!(p.data(), b"hdr:payload");
//! p.advance(4).unwrap(); // decapsulate
//! p.truncate(3);
//! assert_eq!(p.data(), b"pay");
//! ```

use crate::meta::BufferMeta;

/// Why an edit of a packet's extent was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    /// Not enough headroom left to prepend.
    #[error("not enough headroom: {wanted} wanted, {have} available")]
    NoHeadroom {
        /// Bytes asked for.
        wanted: usize,
        /// Bytes available.
        have: usize,
    },
    /// Not enough room after the data to append.
    #[error("not enough tailroom: {wanted} wanted, {have} available")]
    NoTailroom {
        /// Bytes asked for.
        wanted: usize,
        /// Bytes available.
        have: usize,
    },
    /// Tried to advance past the end of the packet.
    #[error("cannot advance {wanted} bytes in a packet of {len}")]
    TooShort {
        /// Bytes asked for.
        wanted: usize,
        /// Packet length.
        len: usize,
    },
}

/// The packet's bytes inside a buffer of `buf_len` bytes, as `start..end`: the metadata's
/// place cut to the buffer (a node may set any offset and length).
#[inline]
pub(crate) fn window(meta: &BufferMeta, buf_len: usize) -> (usize, usize) {
    let start = (meta.data_offset as usize).min(buf_len);
    let end = (start + meta.len as usize).min(buf_len);
    (start, end)
}

/// Read access to one packet.
#[derive(Clone, Copy)]
pub struct Packet<'a> {
    meta: &'a BufferMeta,
    buf: &'a [u8],
}

impl<'a> Packet<'a> {
    /// A packet over a whole buffer (headroom included) and its metadata.
    #[inline]
    pub fn new(meta: &'a BufferMeta, buf: &'a [u8]) -> Self {
        Packet { meta, buf }
    }
    /// The metadata.
    #[inline]
    pub fn meta(&self) -> &'a BufferMeta {
        self.meta
    }
    /// The packet bytes (clamped to the buffer if the metadata is inconsistent).
    #[inline]
    pub fn data(&self) -> &'a [u8] {
        let (s, e) = window(self.meta, self.buf.len());
        &self.buf[s..e]
    }
    /// The `N` packet bytes at offset `at`, if the packet has them: the same bytes as
    /// `data().get(at..at + N)`, found with fewer tests (no clamping of the window), for
    /// nodes that read one field of every packet.
    ///
    /// ```
    /// use pktvec_packet::BufferPool;
    /// let mut pool = BufferPool::new(Default::default())?;
    /// let bi = pool.alloc_with(&[1, 2, 3, 4, 5])?;
    /// assert_eq!(pool.packet(bi).bytes_at::<2>(3), Some(&[4, 5]));
    /// assert_eq!(pool.packet(bi).bytes_at::<2>(4), None);
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    #[inline(always)]
    pub fn bytes_at<const N: usize>(&self, at: usize) -> Option<&'a [u8; N]> {
        // Within the packet's length and within the buffer: then the window starts at
        // `data_offset` and reaches past `at + N`, so these are `data()[at..at + N]`.
        if at.checked_add(N)? > self.meta.len as usize {
            return None;
        }
        self.buf
            .get((self.meta.data_offset as usize).checked_add(at)?..)?
            .first_chunk::<N>()
    }
    /// Packet length.
    #[inline]
    pub fn len(&self) -> usize {
        self.data().len()
    }
    /// True for a zero-length packet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes free in front of the packet.
    #[inline]
    pub fn headroom(&self) -> usize {
        window(self.meta, self.buf.len()).0
    }
    /// Bytes free after the packet.
    #[inline]
    pub fn tailroom(&self) -> usize {
        self.buf.len() - window(self.meta, self.buf.len()).1
    }
}

/// Write access to one packet.
pub struct PacketMut<'a> {
    meta: &'a mut BufferMeta,
    buf: &'a mut [u8],
}

impl<'a> PacketMut<'a> {
    /// A shorter-lived `PacketMut` over the same packet (what `&mut *r` is for a
    /// reference). Lets a node hand the packet by value to an out-of-line slow path, so the
    /// fast path never has to keep the packet in memory for a call it rarely makes.
    ///
    /// ```
    /// use pktvec_packet::{BufferPool, PacketMut};
    /// fn slow(mut p: PacketMut<'_>) { p.truncate(1) }
    /// let mut pool = BufferPool::new(Default::default())?;
    /// let bi = pool.alloc_with(b"abc")?;
    /// let mut p = pool.packet_mut(bi);
    /// slow(p.reborrow());
    /// assert_eq!(p.data(), b"a");
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    #[inline(always)]
    pub fn reborrow(&mut self) -> PacketMut<'_> {
        PacketMut {
            meta: self.meta,
            buf: self.buf,
        }
    }

    /// A packet over a whole buffer (headroom included) and its metadata.
    #[inline]
    pub fn new(meta: &'a mut BufferMeta, buf: &'a mut [u8]) -> Self {
        PacketMut { meta, buf }
    }
    /// Read-only view of the same packet.
    #[inline]
    pub fn as_packet(&self) -> Packet<'_> {
        Packet::new(self.meta, self.buf)
    }
    /// The metadata.
    #[inline]
    pub fn meta(&self) -> &BufferMeta {
        self.meta
    }
    /// The metadata, writable.
    #[inline]
    pub fn meta_mut(&mut self) -> &mut BufferMeta {
        self.meta
    }
    /// The packet bytes.
    #[inline]
    pub fn data(&self) -> &[u8] {
        let (s, e) = window(self.meta, self.buf.len());
        &self.buf[s..e]
    }
    /// The packet bytes, writable.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        let (s, e) = window(self.meta, self.buf.len());
        &mut self.buf[s..e]
    }
    /// Metadata and the whole buffer (headroom and tailroom included), for fast paths that
    /// check the packet's window themselves and then edit headers around its start in one
    /// go (e.g. a rewrite that updates the IP header and writes the Ethernet header in
    /// front of it). The packet is `buf[data_offset..data_offset + len]` when that range
    /// is inside the buffer; the caller must keep the metadata consistent.
    ///
    /// ```
    /// # use pktvec_packet::{BufferPool, PoolConfig};
    /// let mut pool = BufferPool::new(PoolConfig::default())?;
    /// let bi = pool.alloc_with(b"payload")?;
    /// let mut p = pool.packet_mut(bi);
    /// let (m, buf) = p.meta_and_buffer_mut();
    /// let s = m.data_offset as usize;
    /// buf[s - 2..s].copy_from_slice(b"hi"); // a 2-byte header in the headroom
    /// m.data_offset -= 2;
    /// m.len += 2;
    /// assert_eq!(pool.data(bi), b"hipayload");
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    #[inline(always)]
    pub fn meta_and_buffer_mut(&mut self) -> (&mut BufferMeta, &mut [u8]) {
        (self.meta, self.buf)
    }
    /// Metadata and the packet's first `N` bytes, when its window
    /// `data_offset..data_offset + len` lies inside the buffer (the metadata is
    /// consistent, so [`data`](Self::data) is exactly `len` bytes) and holds at least `N`
    /// bytes; `None` otherwise, where [`split`](Self::split) gives the clamped view. For
    /// fast paths: two tests, no clamping, and `meta.len` is the packet length.
    ///
    /// ```
    /// use pktvec_packet::BufferPool;
    /// let mut pool = BufferPool::new(Default::default())?;
    /// let bi = pool.alloc_with(&[1, 2, 3, 4])?;
    /// let mut p = pool.packet_mut(bi);
    /// let (m, h) = p.head_mut::<2>().unwrap();
    /// assert_eq!((m.len, *h), (4, [1, 2]));
    /// assert!(p.head_mut::<5>().is_none());
    /// p.meta_mut().len = 60_000; // past the buffer: no fast view
    /// assert!(p.head_mut::<2>().is_none());
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    #[inline(always)]
    pub fn head_mut<const N: usize>(&mut self) -> Option<(&mut BufferMeta, &mut [u8; N])> {
        let (s, len) = (self.meta.data_offset as usize, self.meta.len as usize);
        if len < N || s + len > self.buf.len() {
            return None;
        }
        let h = self.buf.get_mut(s..)?.first_chunk_mut::<N>()?;
        Some((self.meta, h))
    }
    /// [`head_mut`](Self::head_mut) with the `H` bytes of headroom just before the
    /// packet: metadata, those `H` bytes and the packet's first `N` bytes, when the window
    /// is inside the buffer, holds at least `N` bytes and starts at least `H` bytes in;
    /// `None` otherwise. For fast paths that edit a header and write a new one in front of
    /// it (a rewrite), with no further bounds tests.
    ///
    /// ```
    /// use pktvec_packet::{BufferPool, PoolConfig};
    /// let mut pool = BufferPool::new(PoolConfig { headroom: 2, ..PoolConfig::default() })?;
    /// let bi = pool.alloc_with(&[1, 2, 3])?;
    /// let mut p = pool.packet_mut(bi);
    /// let (m, room, h) = p.head_and_room_mut::<2, 3>().unwrap();
    /// *room = [8, 9];
    /// m.data_offset -= 2;
    /// m.len += 2;
    /// assert_eq!(*h, [1, 2, 3]);
    /// assert!(p.head_and_room_mut::<1, 1>().is_none()); // no headroom left
    /// assert_eq!(p.data(), &[8, 9, 1, 2, 3]);
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    pub fn head_and_room_mut<const H: usize, const N: usize>(
        &mut self,
    ) -> Option<(&mut BufferMeta, &mut [u8; H], &mut [u8; N])> {
        let (s, len) = (self.meta.data_offset as usize, self.meta.len as usize);
        if s < H || len < N || s + len > self.buf.len() {
            return None;
        }
        let (room, rest) = self.buf.get_mut(s - H..)?.split_at_mut(H);
        let room: &mut [u8; H] = room.try_into().ok()?;
        let h = rest.first_chunk_mut::<N>()?;
        Some((self.meta, room, h))
    }
    /// Metadata and bytes at once (for nodes that read one and write the other).
    #[inline]
    pub fn split(&mut self) -> (&mut BufferMeta, &mut [u8]) {
        let (s, e) = window(self.meta, self.buf.len());
        (self.meta, &mut self.buf[s..e])
    }
    /// Packet length.
    #[inline]
    pub fn len(&self) -> usize {
        self.data().len()
    }
    /// True for a zero-length packet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes free in front of the packet.
    #[inline]
    pub fn headroom(&self) -> usize {
        window(self.meta, self.buf.len()).0
    }
    /// Bytes free after the packet.
    #[inline]
    pub fn tailroom(&self) -> usize {
        self.buf.len() - window(self.meta, self.buf.len()).1
    }

    /// Grows the packet at the front by `n` bytes taken from the headroom (encapsulation)
    /// and returns the new first `n` bytes to fill.
    #[inline]
    pub fn prepend(&mut self, n: usize) -> Result<&mut [u8], PacketError> {
        let (s, e) = window(self.meta, self.buf.len());
        if n > s {
            return Err(PacketError::NoHeadroom { wanted: n, have: s });
        }
        let ns = s - n;
        self.meta.data_offset = ns as u16;
        self.meta.len = (e - ns) as u16;
        Ok(&mut self.buf[ns..s])
    }

    /// Removes `n` bytes from the front of the packet (decapsulation).
    #[inline]
    pub fn advance(&mut self, n: usize) -> Result<(), PacketError> {
        let (s, e) = window(self.meta, self.buf.len());
        if n > e - s {
            return Err(PacketError::TooShort {
                wanted: n,
                len: e - s,
            });
        }
        self.meta.data_offset = (s + n) as u16;
        self.meta.len = (e - s - n) as u16;
        Ok(())
    }

    /// Grows the packet at the end by `n` bytes and returns them to fill.
    #[inline]
    pub fn append(&mut self, n: usize) -> Result<&mut [u8], PacketError> {
        let (s, e) = window(self.meta, self.buf.len());
        let have = self.buf.len() - e;
        if n > have {
            return Err(PacketError::NoTailroom { wanted: n, have });
        }
        self.meta.data_offset = s as u16;
        self.meta.len = (e + n - s) as u16;
        Ok(&mut self.buf[e..e + n])
    }

    /// Appends the first `n` bytes of a 64-byte block by copying the whole block (four
    /// vector moves, no call, no variable-length copy) and returns `n`; appends nothing and
    /// returns 0 when `n` > 64 or the tailroom is under 64 bytes. For replaying sources of
    /// minimum-size frames; bytes past the new end of the packet are tailroom.
    ///
    /// ```
    /// # use pktvec_packet::{BufferPool, PoolConfig};
    /// let mut pool = BufferPool::new(PoolConfig::default())?;
    /// let bi = pool.alloc().unwrap();
    /// let mut block = [0u8; 64];
    /// block[..5].copy_from_slice(b"hello");
    /// assert_eq!(pool.packet_mut(bi).append_block64(&block, 5), 5);
    /// assert_eq!(pool.packet_mut(bi).append_block64(&block, 65), 0);
    /// assert_eq!(pool.data(bi), b"hello");
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    #[inline(always)]
    pub fn append_block64(&mut self, block: &[u8; 64], n: usize) -> usize {
        let (s, e) = window(self.meta, self.buf.len());
        match self
            .buf
            .get_mut(e..)
            .and_then(|b| b.first_chunk_mut::<64>())
        {
            Some(d) if n <= 64 => {
                *d = *block;
                self.meta.data_offset = s as u16;
                self.meta.len = (e + n - s) as u16;
                n
            }
            _ => 0,
        }
    }

    /// Appends the first `n` bytes of `src` (at most `src.len()`, at most the tailroom:
    /// the rest is cut, as a receive ring cuts an oversize frame) and returns how many were
    /// appended. When `n` ≤ 64 and both `src` and the tailroom hold 64 bytes, it copies one
    /// fixed 64-byte block (a few vector moves instead of a `memcpy` call): a replaying
    /// source that pads its packets gets minimum-size frames in at the cost of a load and a
    /// store. Bytes past the new end of the packet are tailroom and may be overwritten.
    ///
    /// ```
    /// # use pktvec_packet::{BufferPool, PoolConfig};
    /// let mut pool = BufferPool::new(PoolConfig::default())?;
    /// let bi = pool.alloc().unwrap();
    /// let mut padded = [0u8; 64];
    /// padded[..5].copy_from_slice(b"hello");
    /// assert_eq!(pool.packet_mut(bi).append_chunks(&padded, 5), 5);
    /// assert_eq!(pool.data(bi), b"hello");
    /// # Ok::<(), pktvec_packet::PoolError>(())
    /// ```
    #[inline(always)]
    pub fn append_chunks(&mut self, src: &[u8], n: usize) -> usize {
        let (s, e) = window(self.meta, self.buf.len());
        let room = self.buf.len() - e;
        let n = n.min(src.len()).min(room);
        let block = if n <= 64 {
            src.first_chunk::<64>()
                .zip(self.buf[e..].first_chunk_mut::<64>())
        } else {
            None
        };
        match block {
            Some((c, d)) => *d = *c,
            None => self.buf[e..e + n].copy_from_slice(&src[..n]),
        }
        self.meta.data_offset = s as u16;
        self.meta.len = (e + n - s) as u16;
        n
    }

    /// Shortens the packet to `len` bytes (no effect if it is already shorter).
    #[inline]
    pub fn truncate(&mut self, len: usize) {
        let (s, e) = window(self.meta, self.buf.len());
        self.meta.data_offset = s as u16;
        self.meta.len = (e - s).min(len) as u16;
    }
}

#[cfg(test)]
mod tests {
    use crate::{BufferPool, PacketError, PoolConfig};
    use proptest::prelude::*;

    /// A pool of two buffers (headroom 32, `data_room`), both holding the same first
    /// `before` bytes (cut to the data room).
    fn two_buffers_holding(before: usize, data_room: u16) -> (BufferPool, u32, u32, Vec<u8>) {
        let cfg = PoolConfig {
            buffers: 2,
            headroom: 32,
            data_room,
        };
        let mut pool = BufferPool::new(cfg).unwrap();
        let (a, b) = (pool.alloc().unwrap(), pool.alloc().unwrap());
        let pre: Vec<u8> = (0..before.min(data_room as usize))
            .map(|i| i as u8)
            .collect();
        for bi in [a, b] {
            pool.packet_mut(bi)
                .append(pre.len())
                .unwrap()
                .copy_from_slice(&pre);
        }
        (pool, a, b, pre)
    }

    /// Offsets near `usize::MAX` do not wrap around to the headroom.
    #[test]
    fn bytes_at_far_offsets_are_none() {
        let (pool, a, _, _) = two_buffers_holding(100, 400);
        let p = pool.packet(a);
        assert_eq!(p.bytes_at::<4>(usize::MAX - 1), None);
        assert_eq!(p.bytes_at::<4>(usize::MAX), None);
        assert_eq!(p.bytes_at::<4>(96), Some(&[96, 97, 98, 99]));
    }

    proptest! {
        /// `bytes_at` agrees with slicing `data()` for any (even inconsistent) metadata.
        #[test]
        fn bytes_at_equals_data_slice(off in 0u16..600, len in 0u16..600, at in 0usize..600) {
            let cfg = PoolConfig { buffers: 1, headroom: 64, data_room: 400 };
            let mut pool = BufferPool::new(cfg).unwrap();
            let bi = pool.alloc().unwrap();
            for (i, b) in pool.packet_mut(bi).meta_and_buffer_mut().1.iter_mut().enumerate() {
                *b = i as u8;
            }
            let m = pool.meta_mut(bi);
            m.data_offset = off;
            m.len = len;
            let p = pool.packet(bi);
            prop_assert_eq!(p.bytes_at::<4>(at).map(|x| x.as_slice()), p.data().get(at..at + 4));
            prop_assert_eq!(p.bytes_at::<20>(at).map(|x| x.as_slice()), p.data().get(at..at + 20));
        }

        /// `append_block64` appends what `append_chunks` does whenever it appends at all,
        /// and appends nothing otherwise.
        #[test]
        fn append_block64_equals_append_chunks(
            block in proptest::array::uniform32(any::<u8>()),
            n in 0usize..80,
            before in 0usize..100,
            data_room in 1u16..200,
        ) {
            let mut b64 = [0u8; 64];
            b64[..32].copy_from_slice(&block);
            b64[32..].copy_from_slice(&block);
            let (mut pool, a, b, pre) = two_buffers_holding(before, data_room);
            let room = pool.packet(a).tailroom();
            let got = pool.packet_mut(a).append_block64(&b64, n);
            if n <= 64 && room >= 64 {
                prop_assert_eq!(got, n);
                prop_assert_eq!(pool.packet_mut(b).append_chunks(&b64, n), n);
                prop_assert_eq!(pool.data(a), pool.data(b));
            } else {
                prop_assert_eq!(got, 0);
                prop_assert_eq!(pool.data(a), &pre[..]);
            }
        }

        /// `append_chunks` appends exactly what an exact copy would, whatever the padding,
        /// tailroom and existing length, and never touches the headroom or earlier bytes.
        #[test]
        fn append_chunks_equals_an_exact_copy(
            src in proptest::collection::vec(any::<u8>(), 0..300),
            n in 0usize..320,
            before in 0usize..100,
            data_room in 1u16..400,
        ) {
            let (mut pool, a, b, _) = two_buffers_holding(before, data_room);
            let got = pool.packet_mut(a).append_chunks(&src, n);
            let want = n.min(src.len()).min(pool.packet(b).tailroom());
            prop_assert_eq!(got, want);
            pool.packet_mut(b).append(want).unwrap().copy_from_slice(&src[..want]);
            prop_assert_eq!(pool.data(a), pool.data(b));
            prop_assert_eq!(pool.packet(a).headroom(), 32);
        }
    }

    #[test]
    fn headroom_and_tailroom_limits() {
        let mut pool = BufferPool::new(PoolConfig {
            buffers: 1,
            headroom: 16,
            data_room: 32,
        })
        .unwrap();
        let bi = pool.alloc().unwrap();
        let mut p = pool.packet_mut(bi);
        assert_eq!((p.headroom(), p.tailroom()), (16, 48 - 16));
        assert!(matches!(
            p.append(33),
            Err(PacketError::NoTailroom { wanted: 33, .. })
        ));
        p.append(32).unwrap();
        assert_eq!(p.tailroom(), 0);
        assert!(matches!(
            p.prepend(17),
            Err(PacketError::NoHeadroom {
                wanted: 17,
                have: 16
            })
        ));
        p.prepend(16).unwrap();
        assert_eq!((p.headroom(), p.len()), (0, 48));
        assert!(p.advance(49).is_err());
        p.advance(48).unwrap();
        assert!(p.is_empty());
        p.truncate(10);
        assert!(p.is_empty());
    }

    proptest! {
        /// `head_mut` gives the first bytes of `split`'s window exactly when that window is
        /// unclamped and long enough.
        #[test]
        fn head_mut_is_splits_unclamped_head(off in 0u16..600, len in 0u16..600) {
            let mut pool = BufferPool::new(PoolConfig::default()).unwrap();
            let bi = pool.alloc_with(&[7u8; 64]).unwrap();
            let mut p = pool.packet_mut(bi);
            p.meta_mut().data_offset = off;
            p.meta_mut().len = len;
            let buf_len = p.meta_and_buffer_mut().1.len();
            let fast = p.head_mut::<14>().map(|(_, h)| *h);
            let (_, d) = p.split();
            let unclamped = usize::from(off) + usize::from(len) <= buf_len;
            if unclamped && len >= 14 {
                prop_assert_eq!(fast.as_ref().map(|h| &h[..]), Some(&d[..14]));
            } else {
                prop_assert!(fast.is_none());
            }
        }
    }

    #[test]
    fn split_gives_meta_and_data() {
        let mut pool = BufferPool::new(PoolConfig::default()).unwrap();
        let bi = pool.alloc_with(&[1, 2, 3]).unwrap();
        let mut p = pool.packet_mut(bi);
        let (m, d) = p.split();
        m.opaque = d[2] as u32;
        d[0] = 9;
        assert_eq!(p.meta().opaque, 3);
        assert_eq!(p.as_packet().data(), &[9, 2, 3]);
    }
}
