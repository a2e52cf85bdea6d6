//! The Proxidor v0.2 fixed header (seed §4.8.1, Table 1; layout in docs/proxidor.md).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |    Version    |   Servcode    |Q| Opcode|A|4|6| Resv. | Rcode |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        Identification                         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |              TTL              |Service Categ. |  Auth. Type   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use pathwise_core::wire::{Reader, Truncated, Writer};

/// Length of the fixed header.
pub const HEADER_LEN: usize = 12;

/// Flag bits within the 16-bit flags field.
mod flag {
    pub const QR: u16 = 0x8000;
    pub const OPCODE_SHIFT: u16 = 11;
    pub const OPCODE_MASK: u16 = 0x0f;
    pub const AD: u16 = 0x0400;
    pub const IPV4: u16 = 0x0200;
    pub const IPV6: u16 = 0x0100;
    pub const RESERVED_SHIFT: u16 = 4;
    pub const RESERVED_MASK: u16 = 0x0f;
    pub const RCODE_MASK: u16 = 0x0f;
}

/// Type of a request (Table 1 "Opcode").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// 0: Client Oracle Query.
    Coq,
    /// Any other value (4 bits).
    Unknown(u8),
}

impl From<u8> for Opcode {
    fn from(v: u8) -> Self {
        match v & 0x0f {
            0 => Opcode::Coq,
            n => Opcode::Unknown(n),
        }
    }
}

impl From<Opcode> for u8 {
    fn from(o: Opcode) -> u8 {
        match o {
            Opcode::Coq => 0,
            Opcode::Unknown(n) => n & 0x0f,
        }
    }
}

/// Type of a reply (Table 1 "Rcode"; the seed defines only 0, the rest are ours, after DNS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rcode {
    /// 0: no error.
    NoError,
    /// 1: the query is malformed (bad lengths, reserved bits set, bad source prefix).
    FormatError,
    /// 2: the server could not answer.
    ServerFailure,
    /// 3: an opcode, servcode, service category or TLV type the server does not implement.
    NotImplemented,
    /// 4: refused by policy.
    Refused,
    /// 5: more candidate addresses than one datagram may carry (363 IPv4 / 90 IPv6).
    TooManyAddresses,
    /// 6: a protocol version the server does not speak (it speaks 0).
    BadVersion,
    /// Any other value (4 bits).
    Unknown(u8),
}

impl From<u8> for Rcode {
    fn from(v: u8) -> Self {
        match v & 0x0f {
            0 => Rcode::NoError,
            1 => Rcode::FormatError,
            2 => Rcode::ServerFailure,
            3 => Rcode::NotImplemented,
            4 => Rcode::Refused,
            5 => Rcode::TooManyAddresses,
            6 => Rcode::BadVersion,
            n => Rcode::Unknown(n),
        }
    }
}

impl From<Rcode> for u8 {
    fn from(r: Rcode) -> u8 {
        match r {
            Rcode::NoError => 0,
            Rcode::FormatError => 1,
            Rcode::ServerFailure => 2,
            Rcode::NotImplemented => 3,
            Rcode::Refused => 4,
            Rcode::TooManyAddresses => 5,
            Rcode::BadVersion => 6,
            Rcode::Unknown(n) => n & 0x0f,
        }
    }
}

/// The fixed header, every field as on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Protocol version; this implementation speaks 0.
    pub version: u8,
    /// Metric bit set; checked to be 0 (one metric).
    pub servcode: u8,
    /// QR: false for a query, true for a reply.
    pub response: bool,
    /// Opcode (4 bits).
    pub opcode: Opcode,
    /// AD: an 8-byte authentication block follows the fixed header.
    pub authenticated: bool,
    /// IPv4: an IPv4 source address extension follows.
    pub ipv4_source: bool,
    /// IPv6: an IPv6 source address extension follows.
    pub ipv6_source: bool,
    /// The four reserved flag bits; 0 in a well-formed query.
    pub reserved: u8,
    /// Rcode (4 bits).
    pub rcode: Rcode,
    /// Identification, echoed in the reply.
    pub id: u32,
    /// Seconds the reply stays valid; set by the server.
    pub ttl: u16,
    /// Service category; 0 is an oracle query.
    pub service_category: u8,
    /// Authentication type (not interpreted).
    pub auth_type: u8,
}

impl Header {
    /// A query header with identification `id` and everything else zero.
    pub fn query(id: u32) -> Header {
        Header {
            version: 0,
            servcode: 0,
            response: false,
            opcode: Opcode::Coq,
            authenticated: false,
            ipv4_source: false,
            ipv6_source: false,
            reserved: 0,
            rcode: Rcode::NoError,
            id,
            ttl: 0,
            service_category: 0,
            auth_type: 0,
        }
    }

    /// Read the fixed header.
    pub fn parse(r: &mut Reader<'_>) -> Result<Header, Truncated> {
        let version = r.u8()?;
        let servcode = r.u8()?;
        let flags = r.u16()?;
        let id = r.u32()?;
        let ttl = r.u16()?;
        let service_category = r.u8()?;
        let auth_type = r.u8()?;
        Ok(Header {
            version,
            servcode,
            response: flags & flag::QR != 0,
            opcode: Opcode::from(((flags >> flag::OPCODE_SHIFT) & flag::OPCODE_MASK) as u8),
            authenticated: flags & flag::AD != 0,
            ipv4_source: flags & flag::IPV4 != 0,
            ipv6_source: flags & flag::IPV6 != 0,
            reserved: ((flags >> flag::RESERVED_SHIFT) & flag::RESERVED_MASK) as u8,
            rcode: Rcode::from((flags & flag::RCODE_MASK) as u8),
            id,
            ttl,
            service_category,
            auth_type,
        })
    }

    /// The 16-bit flags field.
    pub fn flags(&self) -> u16 {
        let bit = |b: bool, v: u16| if b { v } else { 0 };
        bit(self.response, flag::QR)
            | (u16::from(u8::from(self.opcode)) & flag::OPCODE_MASK) << flag::OPCODE_SHIFT
            | bit(self.authenticated, flag::AD)
            | bit(self.ipv4_source, flag::IPV4)
            | bit(self.ipv6_source, flag::IPV6)
            | (u16::from(self.reserved) & flag::RESERVED_MASK) << flag::RESERVED_SHIFT
            | u16::from(u8::from(self.rcode)) & flag::RCODE_MASK
    }

    /// Write the fixed header.
    pub fn emit(&self, w: &mut Writer<'_>) {
        w.u8(self.version);
        w.u8(self.servcode);
        w.u16(self.flags());
        w.u32(self.id);
        w.u16(self.ttl);
        w.u8(self.service_category);
        w.u8(self.auth_type);
    }
}
