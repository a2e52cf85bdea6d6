//! The GIST common header (RFC 5971 A.1) and the object TLV header (A.2).

use pathwise_core::wire::{Reader, TlvHeader, Truncated, Writer};

/// Field offsets of the common header (A.1).
mod field {
    pub const VERSION: usize = 0;
    pub const HOPS: usize = 1;
    pub const LENGTH: core::ops::Range<usize> = 2..4;
    pub const NSLPID: core::ops::Range<usize> = 4..6;
    /// C flag (top bit) and the 7-bit Type.
    pub const C_TYPE: usize = 6;
    /// S, R, E flags (top three bits) and 5 reserved bits.
    pub const FLAGS: usize = 7;
}

/// GIST message types (A.1, IANA "GIST Message Types").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MsgType {
    /// 0: Query.
    Query,
    /// 1: Response.
    Response,
    /// 2: Confirm.
    Confirm,
    /// 3: Data.
    Data,
    /// 4: Error.
    Error,
    /// 5: MA-Hello.
    MaHello,
}

impl MsgType {
    /// Every type, in number order.
    pub const ALL: [MsgType; 6] = [
        MsgType::Query,
        MsgType::Response,
        MsgType::Confirm,
        MsgType::Data,
        MsgType::Error,
        MsgType::MaHello,
    ];

    /// The type number.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// The type with this number.
    pub fn from_number(n: u8) -> Option<Self> {
        Self::ALL.get(usize::from(n)).copied()
    }

    /// A stable snake_case name (counters, logs).
    pub fn name(self) -> &'static str {
        match self {
            MsgType::Query => "query",
            MsgType::Response => "response",
            MsgType::Confirm => "confirm",
            MsgType::Data => "data",
            MsgType::Error => "error",
            MsgType::MaHello => "ma_hello",
        }
    }
}

/// The common header as read off the wire (A.1). Kept raw: the message type is a number, so a
/// header with an unknown type can still be echoed in an Error object.
///
/// ```text
///  |    Version    |   GIST hops   |        Message Length         |
///  |           NSLPID              |C|   Type      |S|R|E| Reserved|
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct CommonHeader {
    /// Version (1).
    pub version: u8,
    /// GIST hop count: how many more GIST nodes may process the message.
    pub gist_hops: u8,
    /// Message length in 32-bit words, the common header excluded.
    pub length_words: u16,
    /// Signalling application (NSLP) identifier.
    pub nslpid: u16,
    /// C flag: the message was sent in Q-mode (Query encapsulation, RFC 5971 §5.3.2).
    pub c_flag: bool,
    /// Type number (7 bits).
    pub msg_type: u8,
    /// S flag: the IP source address is the signalling source address.
    pub s_flag: bool,
    /// R flag: a reply is requested (Response for a Query, Confirm for a Response, a reply
    /// MA-Hello).
    pub r_flag: bool,
    /// E flag: the message was explicitly routed (Data only, §7.1.5).
    pub e_flag: bool,
}

impl CommonHeader {
    /// Read the 8 header bytes. Only a short buffer fails; values are checked by the message
    /// parser.
    pub fn parse(buf: &[u8]) -> Result<Self, Truncated> {
        let b: [u8; 8] = Reader::new(buf).array()?;
        Ok(CommonHeader {
            version: b[field::VERSION],
            gist_hops: b[field::HOPS],
            length_words: u16::from_be_bytes([b[field::LENGTH.start], b[field::LENGTH.end - 1]]),
            nslpid: u16::from_be_bytes([b[field::NSLPID.start], b[field::NSLPID.end - 1]]),
            c_flag: b[field::C_TYPE] & 0x80 != 0,
            msg_type: b[field::C_TYPE] & 0x7f,
            s_flag: b[field::FLAGS] & 0x80 != 0,
            r_flag: b[field::FLAGS] & 0x40 != 0,
            e_flag: b[field::FLAGS] & 0x20 != 0,
        })
    }

    /// The header as 8 bytes (reserved bits zero).
    pub fn to_bytes(&self) -> [u8; 8] {
        let len = self.length_words.to_be_bytes();
        let nslpid = self.nslpid.to_be_bytes();
        [
            self.version,
            self.gist_hops,
            len[0],
            len[1],
            nslpid[0],
            nslpid[1],
            (u8::from(self.c_flag) << 7) | (self.msg_type & 0x7f),
            (u8::from(self.s_flag) << 7)
                | (u8::from(self.r_flag) << 6)
                | (u8::from(self.e_flag) << 5),
        ]
    }

    /// Append the header.
    pub fn emit(&self, w: &mut Writer<'_>) {
        w.bytes(&self.to_bytes());
    }

    /// The message type, if known.
    pub fn kind(&self) -> Option<MsgType> {
        MsgType::from_number(self.msg_type)
    }
}

/// Object type numbers (A.3, IANA "GIST Object Types").
pub mod object_type {
    /// Message-Routing-Information (A.3.1).
    pub const MRI: u16 = 0;
    /// Session-Identification (A.3.2).
    pub const SESSION_ID: u16 = 1;
    /// Network-Layer-Information (A.3.3).
    pub const NLI: u16 = 2;
    /// Stack-Proposal (A.3.4).
    pub const STACK_PROPOSAL: u16 = 3;
    /// Stack-Configuration-Data (A.3.5).
    pub const STACK_CONFIG_DATA: u16 = 4;
    /// Query-Cookie (A.3.6).
    pub const QUERY_COOKIE: u16 = 5;
    /// Responder-Cookie (A.3.7).
    pub const RESPONDER_COOKIE: u16 = 6;
    /// NAT-Traversal (A.3.8), carried opaquely: pathwise does no NAT traversal.
    pub const NAT_TRAVERSAL: u16 = 7;
    /// NSLP-Data (A.3.9).
    pub const NSLP_DATA: u16 = 8;
    /// Error (A.4.1).
    pub const ERROR: u16 = 9;
    /// Hello-ID (A.3.10).
    pub const HELLO_ID: u16 = 10;

    /// A stable snake_case name for a known type.
    pub fn name(t: u16) -> &'static str {
        match t {
            MRI => "mri",
            SESSION_ID => "session_id",
            NLI => "nli",
            STACK_PROPOSAL => "stack_proposal",
            STACK_CONFIG_DATA => "stack_config_data",
            QUERY_COOKIE => "query_cookie",
            RESPONDER_COOKIE => "responder_cookie",
            NAT_TRAVERSAL => "nat_traversal",
            NSLP_DATA => "nslp_data",
            ERROR => "error",
            HELLO_ID => "hello_id",
            _ => "unknown",
        }
    }
}

/// What a node does with an object type it does not understand (RFC 5971 §5.2, A.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Extensibility {
    /// AB=00: reject the whole message (Object Type Error, Unrecognised Object).
    #[default]
    Mandatory,
    /// AB=01: delete the object and process the rest.
    Ignore,
    /// AB=10: keep it unchanged in any message forwarded as a result; do not store it.
    Forward,
    /// AB=11: reserved; an object arriving with it is an error (Invalid Extensibility Flags).
    Reserved,
}

impl Extensibility {
    fn from_bits(b: u8) -> Self {
        match b & 3 {
            0 => Extensibility::Mandatory,
            1 => Extensibility::Ignore,
            2 => Extensibility::Forward,
            _ => Extensibility::Reserved,
        }
    }

    fn bits(self) -> u16 {
        match self {
            Extensibility::Mandatory => 0,
            Extensibility::Ignore => 1,
            Extensibility::Forward => 2,
            Extensibility::Reserved => 3,
        }
    }
}

/// The object TLV header (A.2).
///
/// ```text
///  |A|B|r|r|         Type          |r|r|r|r|        Length         |
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ObjectHeader {
    /// The A and B extensibility flags.
    pub ab: Extensibility,
    /// Object type (12 bits).
    pub object_type: u16,
    /// Body length in 32-bit words (12 bits), the header excluded.
    pub length_words: u16,
}

impl ObjectHeader {
    /// Header length in bytes.
    pub const LEN: usize = 4;

    /// A header for a body of `body_len` bytes (rounded up to words, truncated to 12 bits).
    pub fn new(object_type: u16, body_len: usize) -> Self {
        ObjectHeader {
            ab: Extensibility::Mandatory,
            object_type,
            length_words: (super::pad4(body_len) / 4).min(0xfff) as u16,
        }
    }

    /// Append the header.
    pub fn emit(&self, w: &mut Writer<'_>) {
        w.u16((self.ab.bits() << 14) | (self.object_type & 0x0fff));
        w.u16(self.length_words & 0x0fff);
    }
}

impl TlvHeader for ObjectHeader {
    type Error = Truncated;

    fn read(r: &mut Reader<'_>) -> Result<Self, Truncated> {
        let a = r.u16()?;
        let b = r.u16()?;
        Ok(ObjectHeader {
            ab: Extensibility::from_bits((a >> 14) as u8),
            object_type: a & 0x0fff,
            length_words: b & 0x0fff,
        })
    }

    fn body_len(&self) -> usize {
        usize::from(self.length_words) * 4
    }
}

/// Write one object: header for `object_type`, then `body`, padded to a word.
pub(crate) fn emit_object(
    w: &mut Writer<'_>,
    ab: Extensibility,
    object_type: u16,
    body_len: usize,
    body: impl FnOnce(&mut Writer<'_>),
) {
    let mut h = ObjectHeader::new(object_type, body_len);
    h.ab = ab;
    h.emit(w);
    let start = w.position();
    body(w);
    let written = w.position() - start;
    debug_assert_eq!(written, body_len, "object {object_type} body length");
    w.pad_to(4);
}

/// Bytes an object with a body of `body_len` bytes takes, header and padding included.
pub(crate) const fn object_len(body_len: usize) -> usize {
    ObjectHeader::LEN + super::pad4(body_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_header_round_trip() {
        // The Query of gist-dmode-handshake.pcap, after the magic number.
        let bytes = [0x01, 0x20, 0x00, 0x14, 0x00, 0x2a, 0x80, 0xc0];
        let h = CommonHeader::parse(&bytes).unwrap();
        assert_eq!(h.version, 1);
        assert_eq!(h.gist_hops, 32);
        assert_eq!(h.length_words, 20);
        assert_eq!(h.nslpid, 42);
        assert!(h.c_flag && h.s_flag && h.r_flag && !h.e_flag);
        assert_eq!(h.kind(), Some(MsgType::Query));
        assert_eq!(h.to_bytes(), bytes);
        assert!(CommonHeader::parse(&bytes[..7]).is_err());
    }

    #[test]
    fn object_header_flags_and_lengths() {
        let mut v = vec![0xa5; 0];
        let mut w = Writer::new(&mut v);
        let h = ObjectHeader {
            ab: Extensibility::Forward,
            object_type: 0x123,
            length_words: 7,
        };
        h.emit(&mut w);
        assert_eq!(v, [0x81, 0x23, 0x00, 0x07]);
        let back = ObjectHeader::read(&mut Reader::new(&v)).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.body_len(), 28);
        assert_eq!(object_len(5), 12);
    }
}
