//! The booster encapsulation header (documented in `docs/booster-wire.md`).
//!
//! The seed's prototype named the booster of a boosted packet by overwriting the IP header's
//! type-of-service and protocol fields (seed §4.2.1, Fig. 4–5), which leaves room for one
//! booster and loses the original TOS. We tunnel instead: every boosted packet travels in a UDP
//! datagram between the two gateways, behind this header, which names the whole ordered chain
//! so the far side knows how to deboost without sharing the near side's policy (seed §1.2: the
//! debooster of a partitioned booster must recover the original packet on its own).
//!
//! ```text
//!  0       4       8              16              24              32
//! +-------+-------+---------------+---------------+---------------+
//! |Version| Type  |  Chain length |     Flags     |   Reserved    |
//! +-------+-------+---------------+---------------+---------------+
//! |                     Link sequence number                      |
//! +---------------+---------------+---------------+---------------+
//! |P|  Booster 0  |P|  Booster 1  |      ...      |P| Booster n-1 |
//! +---------------+---------------+---------------+---------------+
//! |                  payload (the boosted packet) ...
//! ```
//!
//! `P` ("passed") set on entry `i` means stage `i` left this packet as it was — a compression
//! booster whose output did not shrink sends the packet as is and marks it so.
//!
//! Driven by: the pipeline ([`crate::pipeline`]) emits a header in front of every datagram it
//! sends and parses the header of every datagram it receives. No-panic contract: [`Header::parse`]
//! reads through [`pathwise_core::wire::Reader`], so every access is length-checked and any input
//! yields a header or an [`EncapError`]; [`Header::emit`] appends to a `Vec` through
//! [`pathwise_core::wire::Writer`] and cannot index out of bounds.

use pathwise_core::wire::{Reader, Truncated, Writer};
use thiserror::Error;

/// Version carried in the high nibble of byte 0.
pub const VERSION: u8 = 1;
/// Most boosters a chain may hold.
pub const MAX_CHAIN: usize = 8;
/// Length of the fixed part of the header.
pub const FIXED_LEN: usize = 8;
/// Longest possible header.
pub const MAX_HEADER_LEN: usize = FIXED_LEN + MAX_CHAIN;

mod field {
    //! Bit fields (the byte fields are read in order through `Reader`, see the figure above).
    /// The "passed" bit of a chain entry.
    pub const PASSED: u8 = 0x80;
}

/// Booster identifiers as they appear on the wire. Unknown values survive a round trip.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum BoosterId {
    /// Passes packets unchanged (seed Fig. 4–5): measures the framework's own cost.
    Null,
    /// LZ4 block compression (seed §3.1, Lempel-Ziv).
    Lz4,
    /// Zstandard compression.
    Zstd,
    /// The seed's "dumb" Lempel-Ziv booster: compresses (LZ4) but sends the original (seed §5.1).
    DumbLz4,
    /// ChaCha20-Poly1305 AEAD encryption with a replay window (seed §3.2's role, modern cipher).
    ChaCha20Poly1305,
    /// Forward error correction: Reed-Solomon parity over groups of packets (seed §1.1–1.2).
    Fec,
    /// Zstandard with a history across the packets of a run
    /// ([`crate::boosters::ZstdStream`]).
    ZstdStream,
    /// An identifier this implementation does not know.
    Unknown(u8),
}

impl BoosterId {
    /// The 7-bit wire value.
    pub fn to_u8(self) -> u8 {
        match self {
            BoosterId::Null => 1,
            BoosterId::Lz4 => 2,
            BoosterId::Zstd => 3,
            BoosterId::DumbLz4 => 4,
            BoosterId::ChaCha20Poly1305 => 5,
            BoosterId::Fec => 6,
            BoosterId::ZstdStream => 7,
            BoosterId::Unknown(n) => n & !field::PASSED,
        }
    }

    /// From a 7-bit wire value.
    pub fn from_u8(v: u8) -> Self {
        match v & !field::PASSED {
            1 => BoosterId::Null,
            2 => BoosterId::Lz4,
            3 => BoosterId::Zstd,
            4 => BoosterId::DumbLz4,
            5 => BoosterId::ChaCha20Poly1305,
            6 => BoosterId::Fec,
            7 => BoosterId::ZstdStream,
            n => BoosterId::Unknown(n),
        }
    }
}

/// What a datagram carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum MessageType {
    /// A boosted packet.
    Data,
    /// A gateway-to-gateway control message ([`crate::control`]).
    Control,
    /// A type this implementation does not know.
    Unknown(u8),
}

impl MessageType {
    fn to_u8(self) -> u8 {
        match self {
            MessageType::Data => 0,
            MessageType::Control => 1,
            MessageType::Unknown(n) => n & 0x0f,
        }
    }
    fn from_u8(v: u8) -> Self {
        match v & 0x0f {
            0 => MessageType::Data,
            1 => MessageType::Control,
            n => MessageType::Unknown(n),
        }
    }
}

/// An ordered booster chain with per-stage "passed" marks, as the header carries it.
/// Fixed-size (no allocation) and `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Chain {
    ids: [BoosterId; MAX_CHAIN],
    len: u8,
    /// Bit `i` set: stage `i` passed the packet unchanged.
    pub marks: u8,
}

impl core::fmt::Debug for Chain {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Chain")
            .field("ids", &self.ids())
            .field("marks", &format_args!("{:#04x}", self.marks))
            .finish()
    }
}

impl Default for Chain {
    fn default() -> Self {
        Chain {
            ids: [BoosterId::Null; MAX_CHAIN],
            len: 0,
            marks: 0,
        }
    }
}

impl Chain {
    /// A chain of `ids`, no marks; `None` if longer than [`MAX_CHAIN`].
    pub fn new(ids: &[BoosterId]) -> Option<Self> {
        if ids.len() > MAX_CHAIN {
            return None;
        }
        let mut c = Chain::default();
        c.ids[..ids.len()].copy_from_slice(ids);
        c.len = ids.len() as u8;
        Some(c)
    }

    /// The boosters in boost order.
    pub fn ids(&self) -> &[BoosterId] {
        &self.ids[..usize::from(self.len)]
    }

    /// Number of stages.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether the chain is empty (the packet is tunnelled unboosted).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether stage `i` passed the packet unchanged.
    pub fn passed(&self, i: usize) -> bool {
        i < MAX_CHAIN && self.marks & (1 << i) != 0
    }

    /// The same chain without marks: the identity of the booster instances that handle it.
    pub fn signature(&self) -> Chain {
        Chain { marks: 0, ..*self }
    }
}

/// Errors from parsing the encapsulation header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum EncapError {
    /// Shorter than the header it announces.
    #[error(transparent)]
    Truncated(#[from] Truncated),
    /// Version nibble other than [`VERSION`].
    #[error("unsupported encapsulation version {0}")]
    Version(u8),
    /// Chain length above [`MAX_CHAIN`].
    #[error("chain of {0} boosters (at most {MAX_CHAIN})")]
    ChainTooLong(u8),
}

/// The parsed header (the owned representation; the payload is what follows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Data or control.
    pub message_type: MessageType,
    /// Flags byte (none defined; sent as zero, ignored on receipt).
    pub flags: u8,
    /// Reserved byte (sent as zero, ignored on receipt, kept so a header re-emits as parsed).
    pub reserved: u8,
    /// Per-sender link sequence number (loss estimation; not authenticated).
    pub sequence: u32,
    /// Booster chain in boost order, with "passed" marks.
    pub chain: Chain,
}

impl Header {
    /// A data header.
    pub fn data(sequence: u32, chain: Chain) -> Self {
        Header {
            message_type: MessageType::Data,
            flags: 0,
            reserved: 0,
            sequence,
            chain,
        }
    }

    /// Parse a header from the front of `buf`; returns it and the payload that follows.
    pub fn parse(buf: &[u8]) -> Result<(Header, &[u8]), EncapError> {
        let mut r = Reader::new(buf);
        let vt = r.u8()?;
        if vt >> 4 != VERSION {
            return Err(EncapError::Version(vt >> 4));
        }
        let n = r.u8()?;
        if usize::from(n) > MAX_CHAIN {
            return Err(EncapError::ChainTooLong(n));
        }
        let flags = r.u8()?;
        let reserved = r.u8()?;
        let sequence = r.u32()?;
        let entries = r.bytes(usize::from(n))?;
        let mut chain = Chain {
            len: n,
            ..Chain::default()
        };
        for (i, &e) in entries.iter().enumerate() {
            chain.ids[i] = BoosterId::from_u8(e);
            if e & field::PASSED != 0 {
                chain.marks |= 1 << i;
            }
        }
        let header = Header {
            message_type: MessageType::from_u8(vt),
            flags,
            reserved,
            sequence,
            chain,
        };
        Ok((header, r.rest()))
    }

    /// Bytes [`Header::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        FIXED_LEN + self.chain.len()
    }

    /// Append the header.
    pub fn emit(&self, w: &mut Writer<'_>) {
        let start = w.position();
        w.u8(VERSION << 4 | self.message_type.to_u8());
        w.u8(self.chain.len);
        w.u8(self.flags);
        w.u8(self.reserved);
        w.u32(self.sequence);
        for (i, id) in self.chain.ids().iter().enumerate() {
            let passed = if self.chain.passed(i) {
                field::PASSED
            } else {
                0
            };
            w.u8(id.to_u8() | passed);
        }
        debug_assert_eq!(w.position() - start, self.buffer_len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A two-stage chain (LZ4, passed; ChaCha20-Poly1305), sequence 0x01020304.
    const BYTES: [u8; 10] = [0x10, 2, 0, 0, 1, 2, 3, 4, 0x82, 0x05];

    fn header() -> Header {
        let mut chain = Chain::new(&[BoosterId::Lz4, BoosterId::ChaCha20Poly1305]).unwrap();
        chain.marks = 0b01;
        Header::data(0x0102_0304, chain)
    }

    #[test]
    fn deconstruct() {
        let bytes = [&BYTES[..], b"xy"].concat();
        let (h, rest) = Header::parse(&bytes).unwrap();
        assert_eq!(h, header());
        assert_eq!(rest, b"xy");
        assert!(h.chain.passed(0) && !h.chain.passed(1));
    }

    #[test]
    fn construct() {
        let mut v = vec![0xa5; 3];
        header().emit(&mut Writer::new(&mut v));
        assert_eq!(&v[3..], &BYTES[..]);
        assert_eq!(v.len() - 3, header().buffer_len());
    }

    #[test]
    fn impossible_lengths() {
        assert!(matches!(
            Header::parse(&BYTES[..9]),
            Err(EncapError::Truncated(_))
        ));
        assert!(matches!(Header::parse(&[]), Err(EncapError::Truncated(_))));
        let mut long = BYTES;
        long[1] = 9;
        assert_eq!(Header::parse(&long), Err(EncapError::ChainTooLong(9)));
        let mut v2 = BYTES;
        v2[0] = 0x20;
        assert_eq!(Header::parse(&v2), Err(EncapError::Version(2)));
    }

    #[test]
    fn unknown_values_survive() {
        let bytes = [0x1f, 1, 0, 0, 0, 0, 0, 9, 0x7f];
        let (h, _) = Header::parse(&bytes).unwrap();
        assert_eq!(h.message_type, MessageType::Unknown(15));
        assert_eq!(h.chain.ids(), &[BoosterId::Unknown(0x7f)]);
        let mut v = Vec::new();
        h.emit(&mut Writer::new(&mut v));
        assert_eq!(v, bytes);
    }

    fn booster_id() -> impl Strategy<Value = BoosterId> {
        (0u8..0x80).prop_map(BoosterId::from_u8)
    }

    proptest! {
        #[test]
        fn parse_never_panics(buf in prop::collection::vec(any::<u8>(), 0..40)) {
            if let Ok((h, rest)) = Header::parse(&buf) {
                prop_assert_eq!(h.buffer_len() + rest.len(), buf.len());
            }
        }

        #[test]
        fn emit_parse_round_trip(
            ids in prop::collection::vec(booster_id(), 0..=MAX_CHAIN),
            marks: u8, seq: u32, ty in 0u8..16, flags: u8, reserved: u8,
            payload in prop::collection::vec(any::<u8>(), 0..20),
        ) {
            let mut chain = Chain::new(&ids).unwrap();
            chain.marks = if ids.is_empty() { 0 } else { marks & (u8::MAX >> (8 - ids.len())) };
            let h = Header { message_type: MessageType::from_u8(ty), flags, reserved, sequence: seq, chain };
            let mut v = Vec::new();
            h.emit(&mut Writer::new(&mut v));
            prop_assert_eq!(v.len(), h.buffer_len());
            v.extend_from_slice(&payload);
            let (back, rest) = Header::parse(&v).unwrap();
            prop_assert_eq!(back, h);
            prop_assert_eq!(rest, &payload[..]);
        }
    }
}
