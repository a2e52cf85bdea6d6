//! Packet buffers with headroom, and the pool that recycles them.
//!
//! The seed's FreeBSD prototype spilled every mbuf chain into one contiguous 32 KB buffer so a
//! booster could work on plain bytes (seed §4.3.1). We keep that property — a booster sees one
//! contiguous slice — without the copy: a [`Packet`] is a fixed-capacity buffer whose payload
//! starts after some headroom, so a booster prepends its header (and the pipeline prepends the
//! encapsulation header) in place. Buffers come from a [`PacketPool`] and go back to it, so the
//! datapath allocates only while the pool warms up; [`PacketPool::allocations`] counts the
//! buffers it ever had to create, which tests use to prove the steady state allocates nothing.

/// Bytes reserved in front of the payload of a fresh packet: room for the encapsulation header
/// (at most 16 bytes) and every booster's header in a chain of eight.
pub const HEADROOM: usize = 128;
/// Largest payload a packet can hold (an IPv4/IPv6 packet of at most this many bytes, plus what
/// boosters add).
pub const MAX_PAYLOAD: usize = 9216;
/// Capacity of every buffer.
pub const CAPACITY: usize = HEADROOM + MAX_PAYLOAD;

/// One packet: a contiguous payload inside a fixed buffer, with headroom in front.
#[derive(Debug)]
pub struct Packet {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Per-stage "passed" marks: bit `i` set means stage `i` of the chain left this packet as it
    /// was (for example, compression that did not shrink it). They travel in the encapsulation
    /// header so the far side skips that stage when deboosting.
    pub marks: u8,
}

impl Packet {
    fn new() -> Self {
        Packet {
            buf: vec![0; CAPACITY].into_boxed_slice(),
            start: HEADROOM,
            end: HEADROOM,
            marks: 0,
        }
    }

    /// Reset to an empty payload at the default headroom.
    pub fn clear(&mut self) {
        self.start = HEADROOM;
        self.end = HEADROOM;
        self.marks = 0;
    }

    /// The payload.
    pub fn payload(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// The payload, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.end]
    }

    /// Payload length.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Bytes free in front of the payload.
    pub fn headroom(&self) -> usize {
        self.start
    }

    /// Bytes free behind the payload.
    pub fn tailroom(&self) -> usize {
        self.buf.len() - self.end
    }

    /// Replace the payload with `bytes` (at the default headroom). `None` if it does not fit.
    pub fn set_payload(&mut self, bytes: &[u8]) -> Option<()> {
        if bytes.len() > MAX_PAYLOAD {
            return None;
        }
        self.start = HEADROOM;
        self.end = HEADROOM + bytes.len();
        self.buf[self.start..self.end].copy_from_slice(bytes);
        Some(())
    }

    /// Grow the payload at the front by `n` bytes and return them. `None` if the headroom is
    /// too small.
    pub fn push_front(&mut self, n: usize) -> Option<&mut [u8]> {
        let start = self.start.checked_sub(n)?;
        self.start = start;
        Some(&mut self.buf[start..start + n])
    }

    /// Remove `n` bytes from the front of the payload and return them. `None` if the payload is
    /// shorter.
    pub fn pull_front(&mut self, n: usize) -> Option<&[u8]> {
        if n > self.len() {
            return None;
        }
        let old = self.start;
        self.start += n;
        Some(&self.buf[old..old + n])
    }

    /// Grow the payload at the back by `n` bytes and return them. `None` without room.
    pub fn push_back(&mut self, n: usize) -> Option<&mut [u8]> {
        if n > self.tailroom() {
            return None;
        }
        let old = self.end;
        self.end += n;
        Some(&mut self.buf[old..old + n])
    }

    /// Shorten the payload to `len` bytes (no effect if it is already shorter).
    pub fn truncate(&mut self, len: usize) {
        self.end = self.start + len.min(self.len());
    }

    /// The whole space from the payload's start to the end of the buffer, for a booster that
    /// writes its output in place and then calls [`Packet::truncate`]/[`Packet::set_len`].
    pub fn writable_tail(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..]
    }

    /// Set the payload length (clamped to the buffer).
    pub fn set_len(&mut self, len: usize) {
        self.end = (self.start + len).min(self.buf.len());
    }

    /// Move the payload so that exactly `headroom` bytes precede it (clamped so it fits).
    pub fn reserve_headroom(&mut self, headroom: usize) {
        let len = self.len();
        let headroom = headroom.min(self.buf.len() - len);
        self.buf.copy_within(self.start..self.end, headroom);
        self.start = headroom;
        self.end = headroom + len;
    }
}

/// A free list of packets: `get` reuses a returned packet or, while warming up, allocates one.
#[derive(Debug, Default)]
pub struct PacketPool {
    free: Vec<Packet>,
    allocations: u64,
}

impl PacketPool {
    /// A pool with `n` packets ready.
    pub fn with_capacity(n: usize) -> Self {
        let mut free = Vec::with_capacity(n.max(1) * 2);
        free.extend((0..n).map(|_| Packet::new()));
        PacketPool {
            free,
            allocations: n as u64,
        }
    }

    /// An empty packet (default headroom, no marks).
    pub fn get(&mut self) -> Packet {
        match self.free.pop() {
            Some(mut p) => {
                p.clear();
                p
            }
            None => {
                self.allocations += 1;
                Packet::new()
            }
        }
    }

    /// Give a packet back.
    pub fn put(&mut self, p: Packet) {
        self.free.push(p);
    }

    /// Packets ready to be reused.
    pub fn available(&self) -> usize {
        self.free.len()
    }

    /// Buffers ever allocated by this pool (constant in the steady state).
    pub fn allocations(&self) -> u64 {
        self.allocations
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_pull_and_bounds() {
        let mut pool = PacketPool::with_capacity(1);
        let mut p = pool.get();
        p.set_payload(b"hello").unwrap();
        p.push_front(2).unwrap().copy_from_slice(b"AB");
        assert_eq!(p.payload(), b"ABhello");
        assert_eq!(p.pull_front(2).unwrap(), b"AB");
        assert!(p.pull_front(6).is_none());
        assert!(p.push_front(HEADROOM + 1).is_none());
        p.push_back(1).unwrap()[0] = b'!';
        assert_eq!(p.payload(), b"hello!");
        p.truncate(3);
        assert_eq!(p.payload(), b"hel");
        p.reserve_headroom(10);
        assert_eq!((p.headroom(), p.payload()), (10, &b"hel"[..]));
        assert!(p.set_payload(&vec![0; MAX_PAYLOAD + 1]).is_none());
        pool.put(p);
        let q = pool.get();
        assert!(q.is_empty());
        assert_eq!(pool.allocations(), 1);
    }
}
