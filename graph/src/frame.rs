//! [`Frame`]: the vector of buffer indices a node is called with.
//!
//! A frame holds up to `V` buffer indices (the graph's vector size) and a scratch array of
//! next-arc indices, one per packet. Its memory is allocated when the graph is built and
//! reused for ever after: frames are handed between nodes by swapping, never reallocated
//! in steady state.
//!
//! ```
//! use pktvec_graph::Frame;
//! let mut f = Frame::with_capacity(4);
//! assert!(f.push(7) && f.push(9));
//! assert_eq!(f.buffers(), &[7, 9]);
//! let (bufs, nexts) = f.split_mut();
//! nexts[1] = 3;
//! assert_eq!((bufs.len(), nexts.len()), (2, 2));
//! ```

/// A vector of buffer indices with a per-packet next-arc scratch array.
#[derive(Debug, Default)]
pub struct Frame {
    pub(crate) bufs: Vec<u32>,
    pub(crate) nexts: Vec<u16>,
    pub(crate) limit: usize,
    /// How many of the first indices are *raw*: buffers an input node lent without
    /// handing them to the pool (see [`Context::enqueue_raw`](crate::Context::enqueue_raw)).
    /// Only the graph sets it; 0 for every frame a node can build itself.
    pub(crate) raw: usize,
}

impl Frame {
    /// An empty frame that accepts up to `limit` packets.
    pub fn with_capacity(limit: usize) -> Self {
        Frame {
            bufs: Vec::with_capacity(limit),
            nexts: vec![0; limit],
            limit,
            raw: 0,
        }
    }

    /// Number of packets.
    #[inline]
    pub fn len(&self) -> usize {
        self.bufs.len()
    }

    /// True if there is no packet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bufs.is_empty()
    }

    /// Packets the frame can still take (input nodes fill up to this).
    #[inline]
    pub fn room(&self) -> usize {
        self.limit.saturating_sub(self.bufs.len())
    }

    /// The buffer indices.
    #[inline]
    pub fn buffers(&self) -> &[u32] {
        &self.bufs
    }

    /// How many of the first [`buffers`](Self::buffers) are *raw*: lent by an input node
    /// without being handed to the buffer pool, so their metadata and bytes are not
    /// readable through it (the pool shows them as empty). Always 0 except in a frame
    /// given to a node whose [`Node::takes_raw`](crate::Node::takes_raw) is true; such a
    /// node must send or adopt them (see [`Context::enqueue_raw`](crate::Context::enqueue_raw)).
    ///
    /// ```
    /// let f = pktvec_graph::Frame::with_capacity(4);
    /// assert_eq!(f.raw_len(), 0);
    /// ```
    #[inline]
    pub fn raw_len(&self) -> usize {
        self.raw
    }

    /// The per-packet next-arc indices, writable (for nodes that compute nexts themselves
    /// and then call [`Context::enqueue_frame`](crate::Context::enqueue_frame)).
    #[inline]
    pub fn nexts_mut(&mut self) -> &mut [u16] {
        let n = self.bufs.len();
        &mut self.nexts[..n]
    }

    /// Buffer indices and next-arc scratch at once.
    #[inline]
    pub fn split_mut(&mut self) -> (&[u32], &mut [u16]) {
        let n = self.bufs.len();
        (&self.bufs, &mut self.nexts[..n])
    }

    /// Appends a buffer index; returns false (and does nothing) if the frame is full.
    #[inline]
    pub fn push(&mut self, bi: u32) -> bool {
        if self.bufs.len() < self.limit {
            self.bufs.push(bi);
            true
        } else {
            false
        }
    }

    /// Appends as many indices of `bis` as fit and returns how many did.
    #[inline]
    pub fn extend_from_slice(&mut self, bis: &[u32]) -> usize {
        let n = bis.len().min(self.room());
        self.bufs.extend_from_slice(&bis[..n]);
        n
    }

    /// Removes all packets (they are not freed: the caller owns them).
    #[inline]
    pub fn clear(&mut self) {
        self.bufs.clear();
        self.raw = 0;
    }

    pub(crate) fn set_limit(&mut self, limit: usize) {
        if self.nexts.len() < limit {
            self.nexts.resize(limit, 0);
        }
        if self.bufs.capacity() < limit {
            self.bufs.reserve(limit - self.bufs.len());
        }
        self.limit = limit;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_is_enforced_without_growth() {
        let mut f = Frame::with_capacity(3);
        let cap = f.bufs.capacity();
        assert_eq!(f.extend_from_slice(&[1, 2, 3, 4, 5]), 3);
        assert!(!f.push(6));
        assert_eq!(f.room(), 0);
        assert_eq!(f.bufs.capacity(), cap);
        f.clear();
        assert!(f.is_empty());
        f.set_limit(8);
        assert_eq!(f.room(), 8);
        assert_eq!(f.nexts_mut().len(), 0);
    }
}
