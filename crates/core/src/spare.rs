//! Byte buffers kept for reuse (issue #21: no allocation per message in steady state).
//!
//! A driver hands back the payloads it has sent (RSVP and GIST), an application the NSLP data
//! it has read (GIST); the next message is written, or the next NSLP data copied, into one of
//! them instead of a fresh allocation.

/// Spare byte buffers: at most [`SpareBuffers::KEEP`], none over [`SpareBuffers::MAX_CAPACITY`].
#[derive(Debug, Default)]
pub struct SpareBuffers {
    bufs: Vec<Vec<u8>>,
}

impl SpareBuffers {
    /// Most buffers kept: more than a burst of messages in flight at once in steady state
    /// (a refresh timer slot's GIST Queries, a flush of RSVP refreshes), few enough to cost
    /// little when idle.
    pub const KEEP: usize = 64;
    /// Largest buffer kept: a D-mode message fits in far less.
    pub const MAX_CAPACITY: usize = 64 * 1024;
    /// Least capacity a buffer is grown to: every message of a GIST D-mode handshake of this
    /// implementation fits, and a plain RSVP Path or Resv, so a buffer grown once serves any
    /// of them after.
    pub const MIN_CAPACITY: usize = 256;

    /// An empty pool (allocates nothing).
    pub const fn new() -> Self {
        SpareBuffers { bufs: Vec::new() }
    }

    /// Buffers held.
    pub fn len(&self) -> usize {
        self.bufs.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.bufs.is_empty()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.bufs.capacity() * size_of::<Vec<u8>>()
            + self.bufs.iter().map(Vec::capacity).sum::<usize>()
    }

    /// Keep `buf` (emptied) for reuse, unless the pool is full or it is too large.
    pub fn put(&mut self, mut buf: Vec<u8>) {
        if self.bufs.len() < Self::KEEP
            && buf.capacity() > 0
            && buf.capacity() <= Self::MAX_CAPACITY
        {
            buf.clear();
            self.bufs.push(buf);
        }
    }

    /// An empty buffer with room for `len` bytes: a spare one when there is one (grown to at
    /// least [`Self::MIN_CAPACITY`] if it is too small), else a fresh one of that size.
    pub fn take(&mut self, len: usize) -> Vec<u8> {
        match self.bufs.pop() {
            Some(mut b) => {
                if b.capacity() < len {
                    b.reserve_exact(len.max(Self::MIN_CAPACITY));
                }
                b
            }
            None => Vec::with_capacity(len.max(Self::MIN_CAPACITY)),
        }
    }

    /// `bytes` in a spare buffer when there is one, else in a fresh one of exactly their
    /// length (what a caller that never hands buffers back would have allocated anyway).
    pub fn copy_of(&mut self, bytes: &[u8]) -> Vec<u8> {
        match self.bufs.pop() {
            Some(mut b) => {
                b.extend_from_slice(bytes);
                b
            }
            None => bytes.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SpareBuffers;

    #[test]
    fn reuses_what_it_was_given_and_bounds_what_it_keeps() {
        let mut s = SpareBuffers::new();
        let b = s.take(10);
        assert!(b.capacity() >= SpareBuffers::MIN_CAPACITY);
        let ptr = b.as_ptr();
        s.put(b);
        let c = s.copy_of(b"hello");
        assert_eq!((c.as_ptr(), c.as_slice()), (ptr, &b"hello"[..]));
        s.put(c);
        let d = s.take(4);
        assert_eq!((d.as_ptr(), d.len()), (ptr, 0), "emptied when kept");
        // Without spares, a copy is exact.
        assert_eq!(s.copy_of(b"abc").capacity(), 3);
        for _ in 0..SpareBuffers::KEEP + 5 {
            s.put(Vec::with_capacity(8));
        }
        assert_eq!(s.len(), SpareBuffers::KEEP);
        let mut s = SpareBuffers::new();
        s.put(Vec::with_capacity(SpareBuffers::MAX_CAPACITY + 1));
        s.put(Vec::new());
        assert!(s.is_empty(), "too large, or nothing to reuse");
    }
}
