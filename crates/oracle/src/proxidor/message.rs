//! A whole Proxidor v0.2 datagram: fixed header, optional authentication block, optional
//! source-address extensions, and TLVs chained by NH (seed §4.8.1, Table 2).
//!
//! ```text
//! TLV header
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |     Type      |N| AL|   AT    |             Size              |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Attribute Value (0, 4, 8 or 16 bytes per AL)          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |        Payload: Size - 4 - attribute bytes of addresses        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Two layers, after smoltcp: [`DatagramView`] checks the structure once and then hands out
//! borrowed fields and TLVs without copying (the server's path); [`Message`] is the owned form
//! with `parse`, `emit` and `buffer_len`. No-panic contract: parsing never panics on any input;
//! `emit` appends to a `Vec` and never panics.

use super::header::{HEADER_LEN, Header};
use pathwise_core::wire::{Reader, Truncated, Writer};
use std::net::{Ipv4Addr, Ipv6Addr};
use thiserror::Error;

/// Length of the authentication block (AD set).
pub const AUTH_LEN: usize = 8;
/// Length of the IPv4 source extension: address and prefix length.
pub const SOURCE_V4_LEN: usize = 5;
/// Length of the IPv6 source extension: address and prefix length.
pub const SOURCE_V6_LEN: usize = 17;
/// Length of a TLV header.
pub const TLV_HEADER_LEN: usize = 4;

/// TLV type (Table 2 "Type").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TlvType {
    /// 1: a list of IPv4 addresses, 4 bytes each.
    Ipv4List,
    /// 2: a list of IPv6 addresses, 16 bytes each (ours; the seed defines only type 1).
    Ipv6List,
    /// Anything else; the payload is kept as bytes.
    Unknown(u8),
}

impl From<u8> for TlvType {
    fn from(v: u8) -> Self {
        match v {
            1 => TlvType::Ipv4List,
            2 => TlvType::Ipv6List,
            n => TlvType::Unknown(n),
        }
    }
}

impl From<TlvType> for u8 {
    fn from(t: TlvType) -> u8 {
        match t {
            TlvType::Ipv4List => 1,
            TlvType::Ipv6List => 2,
            TlvType::Unknown(n) => n,
        }
    }
}

/// Why a datagram is structurally malformed. Offsets are from the start of the datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum WireError {
    /// A field runs past the end.
    #[error(transparent)]
    Truncated(#[from] Truncated),
    /// A source extension's prefix length is longer than the address.
    #[error("source prefix length {len} is too long for {family}")]
    BadSourcePrefix {
        /// `IPv4` or `IPv6`.
        family: &'static str,
        /// The length given.
        len: u8,
    },
    /// A TLV's Size is smaller than its header and attribute.
    #[error("TLV at offset {offset}: size {size} is below its header and attribute ({min})")]
    TlvTooShort {
        /// Where the TLV starts.
        offset: usize,
        /// Its Size field.
        size: u16,
        /// The least it could be.
        min: usize,
    },
    /// A TLV's Size runs past the end of the datagram.
    #[error("TLV at offset {offset}: size {size} runs past the end ({available} bytes left)")]
    TlvOverrun {
        /// Where the TLV starts.
        offset: usize,
        /// Its Size field.
        size: u16,
        /// Bytes left from its start.
        available: usize,
    },
    /// NH says another TLV follows, but the datagram ends.
    #[error("TLV chain announces another TLV at offset {offset}, but the datagram ends")]
    MissingTlv {
        /// Where the next TLV should start.
        offset: usize,
    },
    /// NH says the chain ends, but bytes remain.
    #[error("{count} bytes after the last TLV at offset {offset}")]
    TrailingBytes {
        /// Where they start.
        offset: usize,
        /// How many.
        count: usize,
    },
    /// An address list whose length is not a multiple of the address size.
    #[error(
        "TLV at offset {offset}: {len} payload bytes are not a whole number of {width}-byte addresses"
    )]
    BadListLength {
        /// Where the TLV starts.
        offset: usize,
        /// Payload length.
        len: usize,
        /// Address width.
        width: usize,
    },
}

/// One TLV, borrowed from a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlvView<'a> {
    /// Offset of the TLV within the datagram.
    pub offset: usize,
    /// Type.
    pub kind: TlvType,
    /// NH: another TLV follows.
    pub next: bool,
    /// AT: attribute type (5 bits).
    pub attr_type: u8,
    /// The attribute value (0, 4, 8 or 16 bytes, per AL).
    pub attribute: &'a [u8],
    /// The payload.
    pub payload: &'a [u8],
}

/// Attribute length in bytes for an AL code.
fn attr_len(al: u8) -> usize {
    match al & 3 {
        0 => 0,
        1 => 4,
        2 => 8,
        _ => 16,
    }
}

/// AL code for an attribute length (only 0, 4, 8, 16 are representable).
fn al_code(len: usize) -> Option<u8> {
    match len {
        0 => Some(0),
        4 => Some(1),
        8 => Some(2),
        16 => Some(3),
        _ => None,
    }
}

/// A structurally checked datagram; its accessors never fail.
#[derive(Clone, Copy, Debug)]
pub struct DatagramView<'a> {
    /// The fixed header.
    pub header: Header,
    /// The authentication block, when AD is set.
    pub auth: Option<&'a [u8; AUTH_LEN]>,
    /// The IPv4 source extension, when the IPv4 flag is set.
    pub source_v4: Option<(Ipv4Addr, u8)>,
    /// The IPv6 source extension, when the IPv6 flag is set.
    pub source_v6: Option<(Ipv6Addr, u8)>,
    tlv_area: &'a [u8],
    tlv_offset: usize,
}

impl<'a> DatagramView<'a> {
    /// Check the whole structure: header, extensions, every TLV's size and list length, the NH
    /// chain and that nothing trails it.
    pub fn parse(buf: &'a [u8]) -> Result<DatagramView<'a>, WireError> {
        let mut r = Reader::new(buf);
        let header = Header::parse(&mut r)?;
        let auth = if header.authenticated {
            let b = r.bytes(AUTH_LEN)?;
            <&[u8; AUTH_LEN]>::try_from(b).ok()
        } else {
            None
        };
        let source_v4 = if header.ipv4_source {
            let (a, len) = (r.ipv4()?, r.u8()?);
            if len > 32 {
                return Err(WireError::BadSourcePrefix {
                    family: "IPv4",
                    len,
                });
            }
            Some((a, len))
        } else {
            None
        };
        let source_v6 = if header.ipv6_source {
            let (a, len) = (r.ipv6()?, r.u8()?);
            if len > 128 {
                return Err(WireError::BadSourcePrefix {
                    family: "IPv6",
                    len,
                });
            }
            Some((a, len))
        } else {
            None
        };
        let view = DatagramView {
            header,
            auth,
            source_v4,
            source_v6,
            tlv_offset: r.position(),
            tlv_area: r.rest(),
        };
        for t in view.tlvs() {
            t?;
        }
        Ok(view)
    }

    /// The TLVs in order. On a view from [`parse`](Self::parse) every item is `Ok`.
    pub fn tlvs(&self) -> TlvIter<'a> {
        TlvIter {
            r: Reader::new(self.tlv_area),
            base: self.tlv_offset,
            expect_more: !self.tlv_area.is_empty(),
            failed: false,
        }
    }
}

/// Walks a TLV chain.
#[derive(Clone, Debug)]
pub struct TlvIter<'a> {
    r: Reader<'a>,
    base: usize,
    expect_more: bool,
    failed: bool,
}

impl<'a> Iterator for TlvIter<'a> {
    type Item = Result<TlvView<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let offset = self.base + self.r.position();
        if !self.expect_more {
            if self.r.is_empty() {
                return None;
            }
            self.failed = true;
            return Some(Err(WireError::TrailingBytes {
                offset,
                count: self.r.remaining(),
            }));
        }
        let item = self.read(offset);
        self.failed = item.is_err();
        Some(item)
    }
}

impl<'a> TlvIter<'a> {
    fn read(&mut self, offset: usize) -> Result<TlvView<'a>, WireError> {
        if self.r.is_empty() {
            return Err(WireError::MissingTlv { offset });
        }
        let available = self.r.remaining();
        let kind = TlvType::from(self.r.u8()?);
        let bits = self.r.u8()?;
        let size = self.r.u16()?;
        let next = bits & 0x80 != 0;
        let alen = attr_len((bits >> 5) & 3);
        let min = TLV_HEADER_LEN + alen;
        if usize::from(size) < min {
            return Err(WireError::TlvTooShort { offset, size, min });
        }
        if usize::from(size) > available {
            return Err(WireError::TlvOverrun {
                offset,
                size,
                available,
            });
        }
        let attribute = self.r.bytes(alen)?;
        let payload = self.r.bytes(usize::from(size) - min)?;
        let width = match kind {
            TlvType::Ipv4List => 4,
            TlvType::Ipv6List => 16,
            TlvType::Unknown(_) => 1,
        };
        if payload.len() % width != 0 {
            return Err(WireError::BadListLength {
                offset,
                len: payload.len(),
                width,
            });
        }
        self.expect_more = next;
        Ok(TlvView {
            offset,
            kind,
            next,
            attr_type: bits & 0x1f,
            attribute,
            payload,
        })
    }
}

/// A TLV's payload, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    /// Type 1.
    Ipv4(Vec<Ipv4Addr>),
    /// Type 2.
    Ipv6(Vec<Ipv6Addr>),
    /// Any other type: the raw bytes.
    Unknown(u8, Vec<u8>),
}

/// One TLV, owned. NH and Size are derived when emitting; a TLV longer than 65,535 bytes cannot
/// be represented (emit would write Size 65,535), so keep payloads within one datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tlv {
    /// AT: attribute type (5 bits).
    pub attr_type: u8,
    /// Attribute value: 0, 4, 8 or 16 bytes (other lengths are not emitted).
    pub attribute: Vec<u8>,
    /// The payload (which fixes the type).
    pub payload: Payload,
}

impl Tlv {
    /// An IPv4 list without attribute.
    pub fn ipv4(addrs: Vec<Ipv4Addr>) -> Tlv {
        Tlv {
            attr_type: 0,
            attribute: Vec::new(),
            payload: Payload::Ipv4(addrs),
        }
    }

    /// An IPv6 list without attribute.
    pub fn ipv6(addrs: Vec<Ipv6Addr>) -> Tlv {
        Tlv {
            attr_type: 0,
            attribute: Vec::new(),
            payload: Payload::Ipv6(addrs),
        }
    }

    fn from_view(t: &TlvView<'_>) -> Tlv {
        let payload = match t.kind {
            TlvType::Ipv4List => Payload::Ipv4(
                t.payload
                    .chunks_exact(4)
                    .map(|c| Ipv4Addr::new(c[0], c[1], c[2], c[3]))
                    .collect(),
            ),
            TlvType::Ipv6List => Payload::Ipv6(
                t.payload
                    .chunks_exact(16)
                    .filter_map(|c| <[u8; 16]>::try_from(c).ok().map(Ipv6Addr::from))
                    .collect(),
            ),
            TlvType::Unknown(n) => Payload::Unknown(n, t.payload.to_vec()),
        };
        Tlv {
            attr_type: t.attr_type,
            attribute: t.attribute.to_vec(),
            payload,
        }
    }

    /// Bytes on the wire.
    pub fn buffer_len(&self) -> usize {
        TLV_HEADER_LEN + self.attribute_len() + self.payload_len()
    }

    fn attribute_len(&self) -> usize {
        if al_code(self.attribute.len()).is_some() {
            self.attribute.len()
        } else {
            0
        }
    }

    fn payload_len(&self) -> usize {
        match &self.payload {
            Payload::Ipv4(a) => 4 * a.len(),
            Payload::Ipv6(a) => 16 * a.len(),
            Payload::Unknown(_, b) => b.len(),
        }
    }

    fn emit(&self, next: bool, w: &mut Writer<'_>) {
        let kind = match &self.payload {
            Payload::Ipv4(_) => TlvType::Ipv4List,
            Payload::Ipv6(_) => TlvType::Ipv6List,
            Payload::Unknown(n, _) => TlvType::from(*n),
        };
        let al = al_code(self.attribute.len()).unwrap_or(0);
        w.u8(kind.into());
        w.u8(u8::from(next) << 7 | al << 5 | (self.attr_type & 0x1f));
        w.u16(u16::try_from(self.buffer_len()).unwrap_or(u16::MAX));
        if al != 0 {
            w.bytes(&self.attribute);
        }
        match &self.payload {
            Payload::Ipv4(a) => a.iter().for_each(|a| w.bytes(&a.octets())),
            Payload::Ipv6(a) => a.iter().for_each(|a| w.bytes(&a.octets())),
            Payload::Unknown(_, b) => w.bytes(b),
        }
    }
}

/// A whole datagram, owned.
///
/// The AD, IPv4 and IPv6 flags of `header` are ignored by [`emit`](Self::emit), which sets them
/// from `auth`, `source_v4` and `source_v6`; [`parse`](Self::parse) fills both consistently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The fixed header.
    pub header: Header,
    /// The authentication block.
    pub auth: Option<[u8; AUTH_LEN]>,
    /// The IPv4 source extension: address and prefix length.
    pub source_v4: Option<(Ipv4Addr, u8)>,
    /// The IPv6 source extension: address and prefix length.
    pub source_v6: Option<(Ipv6Addr, u8)>,
    /// The TLVs, in order.
    pub tlvs: Vec<Tlv>,
}

impl Message {
    /// Parse a datagram.
    pub fn parse(buf: &[u8]) -> Result<Message, WireError> {
        let v = DatagramView::parse(buf)?;
        let mut tlvs = Vec::new();
        for t in v.tlvs() {
            tlvs.push(Tlv::from_view(&t?));
        }
        Ok(Message {
            header: v.header,
            auth: v.auth.copied(),
            source_v4: v.source_v4,
            source_v6: v.source_v6,
            tlvs,
        })
    }

    /// Bytes on the wire.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
            + self.auth.map_or(0, |_| AUTH_LEN)
            + self.source_v4.map_or(0, |_| SOURCE_V4_LEN)
            + self.source_v6.map_or(0, |_| SOURCE_V6_LEN)
            + self.tlvs.iter().map(Tlv::buffer_len).sum::<usize>()
    }

    /// Append the datagram to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let mut w = Writer::new(out);
        let mut h = self.header;
        h.authenticated = self.auth.is_some();
        h.ipv4_source = self.source_v4.is_some();
        h.ipv6_source = self.source_v6.is_some();
        h.emit(&mut w);
        if let Some(a) = &self.auth {
            w.bytes(a);
        }
        if let Some((a, len)) = self.source_v4 {
            w.bytes(&a.octets());
            w.u8(len);
        }
        if let Some((a, len)) = self.source_v6 {
            w.bytes(&a.octets());
            w.u8(len);
        }
        for (i, t) in self.tlvs.iter().enumerate() {
            t.emit(i + 1 < self.tlvs.len(), &mut w);
        }
    }
}
