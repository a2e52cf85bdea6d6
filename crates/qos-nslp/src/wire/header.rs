//! The QoS NSLP common header (RFC 5974 §5.1.1) and the NSLP object header (§5.1.3).

use pathwise_core::wire::{Reader, TlvHeader, Truncated, Writer};

/// Field offsets of the common header (§5.1.1).
mod field {
    pub const MSG_TYPE: usize = 0;
    pub const MSG_FLAGS: usize = 1;
    pub const GENERIC_FLAGS: core::ops::Range<usize> = 2..4;
}

/// Field offsets and masks of the object header (§5.1.3).
mod object_field {
    /// A, B flags (top two bits), two reserved bits, then the top four bits of Type.
    pub const AB_TYPE: core::ops::Range<usize> = 0..2;
    /// Four reserved bits, then the 12-bit Length in words.
    pub const LENGTH: core::ops::Range<usize> = 2..4;
    pub const A: u16 = 0x8000;
    pub const B: u16 = 0x4000;
    pub const TYPE_MASK: u16 = 0x0fff;
    pub const LENGTH_MASK: u16 = 0x0fff;
}

/// Length of the common header in bytes.
pub const HEADER_LEN: usize = 4;
/// Length of an object header in bytes.
pub const OBJECT_HEADER_LEN: usize = 4;
/// Largest object body the 12-bit word length can describe: 4095 words.
pub const MAX_OBJECT_BODY: usize = 4095 * 4;

/// QoS NSLP message types (§5.1.1, IANA §6.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MsgType {
    /// 1: RESERVE.
    Reserve,
    /// 2: QUERY.
    Query,
    /// 3: RESPONSE.
    Response,
    /// 4: NOTIFY.
    Notify,
}

impl MsgType {
    /// Every type, in number order.
    pub const ALL: [MsgType; 4] = [
        MsgType::Reserve,
        MsgType::Query,
        MsgType::Response,
        MsgType::Notify,
    ];

    /// The type number.
    pub fn number(self) -> u8 {
        self as u8 + 1
    }

    /// The type with this number (0 is reserved, 240–255 experimental: both `None`).
    pub fn from_number(n: u8) -> Option<Self> {
        Self::ALL.get(usize::from(n).wrapping_sub(1)).copied()
    }

    /// A stable snake_case name (counters, logs).
    pub fn name(self) -> &'static str {
        match self {
            MsgType::Reserve => "reserve",
            MsgType::Query => "query",
            MsgType::Response => "response",
            MsgType::Notify => "notify",
        }
    }
}

/// Message-specific flags of RESERVE (§5.1.2.1: `|Reserved |T|R|`).
pub mod reserve_flags {
    /// REPLACE (R).
    pub const REPLACE: u8 = 0x01;
    /// TEAR (T).
    pub const TEAR: u8 = 0x02;
}

/// Message-specific flags of QUERY (§5.1.2.2: `|Reserved |R|`).
pub mod query_flags {
    /// RESERVE-INIT (R).
    pub const RESERVE_INIT: u8 = 0x01;
}

/// The generic flags (§5.1.1: `|Reserved |B|A|P|S|` in the low bits of 16).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GenericFlags {
    /// SCOPING (S): the message goes only as far as the next QNE.
    pub scoping: bool,
    /// PROXY (P): the message goes only as far as the P-QNE.
    pub proxy: bool,
    /// ACK-REQ (A): the receiving peer should acknowledge (RESERVE and QUERY only).
    pub ack_req: bool,
    /// BREAK (B): routers on the path cannot provide QoS.
    pub break_: bool,
}

impl GenericFlags {
    /// S.
    pub const SCOPING: u16 = 0x0001;
    /// P.
    pub const PROXY: u16 = 0x0002;
    /// A.
    pub const ACK_REQ: u16 = 0x0004;
    /// B.
    pub const BREAK: u16 = 0x0008;

    /// The flags from the 16-bit field; reserved bits are ignored (§5.1.1: "MUST be ignored on
    /// receiving").
    pub fn from_bits(bits: u16) -> Self {
        GenericFlags {
            scoping: bits & Self::SCOPING != 0,
            proxy: bits & Self::PROXY != 0,
            ack_req: bits & Self::ACK_REQ != 0,
            break_: bits & Self::BREAK != 0,
        }
    }

    /// The 16-bit field.
    pub fn bits(self) -> u16 {
        (u16::from(self.scoping) * Self::SCOPING)
            | (u16::from(self.proxy) * Self::PROXY)
            | (u16::from(self.ack_req) * Self::ACK_REQ)
            | (u16::from(self.break_) * Self::BREAK)
    }
}

/// The common header (§5.1.1) as received: the type byte is kept raw so an unknown type can be
/// reported with its value.
///
/// ```text
///  | Message Type  | Message Flags |      Generic Flags            |
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CommonHeader {
    /// Message type number.
    pub msg_type: u8,
    /// Message-specific flags, all eight bits as received.
    pub msg_flags: u8,
    /// Generic flags, all sixteen bits as received.
    pub generic_flags: u16,
}

impl CommonHeader {
    /// Read the header from the first four bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Self, Truncated> {
        let b: [u8; HEADER_LEN] = Reader::new(buf).array()?;
        Ok(CommonHeader {
            msg_type: b[field::MSG_TYPE],
            msg_flags: b[field::MSG_FLAGS],
            generic_flags: u16::from_be_bytes([
                b[field::GENERIC_FLAGS.start],
                b[field::GENERIC_FLAGS.start + 1],
            ]),
        })
    }

    /// Write the header.
    pub fn emit(&self, w: &mut Writer<'_>) {
        let mut b = [0u8; HEADER_LEN];
        b[field::MSG_TYPE] = self.msg_type;
        b[field::MSG_FLAGS] = self.msg_flags;
        b[field::GENERIC_FLAGS].copy_from_slice(&self.generic_flags.to_be_bytes());
        w.bytes(&b);
    }
}

/// NSLP object types defined by RFC 5974 (§5.1.3, IANA §6.2: the shared NSLP object registry).
pub mod object_type {
    /// Request Identification Information (§5.1.3.1).
    pub const RII: u16 = 0x001;
    /// Reservation Sequence Number (§5.1.3.2).
    pub const RSN: u16 = 0x002;
    /// REFRESH-PERIOD (§5.1.3.3).
    pub const REFRESH_PERIOD: u16 = 0x003;
    /// BOUND-SESSION-ID (§5.1.3.4).
    pub const BOUND_SESSION_ID: u16 = 0x004;
    /// PACKET-CLASSIFIER (§5.1.3.5).
    pub const PACKET_CLASSIFIER: u16 = 0x005;
    /// INFO-SPEC (§5.1.3.6).
    pub const INFO_SPEC: u16 = 0x006;
    /// SESSION-ID-LIST (§5.1.3.7).
    pub const SESSION_ID_LIST: u16 = 0x007;
    /// RSN-LIST (§5.1.3.8).
    pub const RSN_LIST: u16 = 0x008;
    /// MSG-ID (§5.1.3.9).
    pub const MSG_ID: u16 = 0x009;
    /// BOUND-MSG-ID (§5.1.3.10).
    pub const BOUND_MSG_ID: u16 = 0x00a;
    /// QSPEC (§5.1.3.11).
    pub const QSPEC: u16 = 0x00b;

    /// Whether this codec understands the type.
    pub fn is_known(t: u16) -> bool {
        (RII..=QSPEC).contains(&t)
    }

    /// The RFC's name for a type, or `None` for types this codec does not know.
    pub fn name(t: u16) -> Option<&'static str> {
        Some(match t {
            RII => "RII",
            RSN => "RSN",
            REFRESH_PERIOD => "REFRESH-PERIOD",
            BOUND_SESSION_ID => "BOUND-SESSION-ID",
            PACKET_CLASSIFIER => "PACKET-CLASSIFIER",
            INFO_SPEC => "INFO-SPEC",
            SESSION_ID_LIST => "SESSION-ID-LIST",
            RSN_LIST => "RSN-LIST",
            MSG_ID => "MSG-ID",
            BOUND_MSG_ID => "BOUND-MSG-ID",
            QSPEC => "QSPEC",
            _ => return None,
        })
    }
}

/// Treatment of an object whose type the receiver does not know, from its AB flags (§5.1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extensibility {
    /// AB=00 "Mandatory": the whole message is rejected with an error.
    Mandatory,
    /// AB=01 "Ignore": the object is deleted and the rest of the message processed as usual.
    Ignore,
    /// AB=10 "Forward": retained unchanged in any message forwarded as a result, not stored.
    Forward,
    /// AB=11 "Refresh": stored with the session's state as bytes, forwarded, and used in any
    /// refresh or repair message generated locally.
    Refresh,
}

impl Extensibility {
    /// From the A and B bits.
    pub fn from_ab(a: bool, b: bool) -> Self {
        match (a, b) {
            (false, false) => Extensibility::Mandatory,
            (false, true) => Extensibility::Ignore,
            (true, false) => Extensibility::Forward,
            (true, true) => Extensibility::Refresh,
        }
    }

    /// The (A, B) bits.
    pub fn ab(self) -> (bool, bool) {
        match self {
            Extensibility::Mandatory => (false, false),
            Extensibility::Ignore => (false, true),
            Extensibility::Forward => (true, false),
            Extensibility::Refresh => (true, true),
        }
    }

    /// Whether an unknown object with these flags goes into messages forwarded as a result of
    /// processing the one that carried it.
    pub fn forwarded(self) -> bool {
        matches!(self, Extensibility::Forward | Extensibility::Refresh)
    }

    /// Whether an unknown object with these flags is kept with the session's state and repeated
    /// in locally generated refreshes.
    pub fn stored(self) -> bool {
        self == Extensibility::Refresh
    }
}

/// The object header (§5.1.3).
///
/// ```text
///  |A|B|r|r|         Type          |r|r|r|r|        Length         |
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ObjectHeader {
    /// Treatment if the type is unknown (the A and B bits).
    pub extensibility: Extensibility,
    /// 12-bit object type.
    pub object_type: u16,
    /// Body length in 32-bit words (the header excluded).
    pub length_words: u16,
}

impl ObjectHeader {
    /// A header for a body of `body_len` bytes (a multiple of four; truncated to the 12-bit
    /// field rather than panic if larger than [`MAX_OBJECT_BODY`]).
    pub fn new(object_type: u16, extensibility: Extensibility, body_len: usize) -> Self {
        ObjectHeader {
            extensibility,
            object_type: object_type & object_field::TYPE_MASK,
            length_words: (body_len / 4) as u16 & object_field::LENGTH_MASK,
        }
    }

    /// Write the header; reserved bits are zero.
    pub fn emit(&self, w: &mut Writer<'_>) {
        let (a, b) = self.extensibility.ab();
        let first = (u16::from(a) * object_field::A)
            | (u16::from(b) * object_field::B)
            | (self.object_type & object_field::TYPE_MASK);
        let mut out = [0u8; OBJECT_HEADER_LEN];
        out[object_field::AB_TYPE].copy_from_slice(&first.to_be_bytes());
        out[object_field::LENGTH]
            .copy_from_slice(&(self.length_words & object_field::LENGTH_MASK).to_be_bytes());
        w.bytes(&out);
    }
}

impl TlvHeader for ObjectHeader {
    type Error = Truncated;

    fn read(r: &mut Reader<'_>) -> Result<Self, Truncated> {
        let first = r.u16()?;
        let second = r.u16()?;
        Ok(ObjectHeader {
            extensibility: Extensibility::from_ab(
                first & object_field::A != 0,
                first & object_field::B != 0,
            ),
            object_type: first & object_field::TYPE_MASK,
            length_words: second & object_field::LENGTH_MASK,
        })
    }

    fn body_len(&self) -> usize {
        usize::from(self.length_words) * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msg_type_numbers() {
        // RFC 5974 §5.1.1 / §6.1: 1 RESERVE, 2 QUERY, 3 RESPONSE, 4 NOTIFY; 0 reserved.
        assert_eq!(MsgType::from_number(0), None);
        for (n, t) in [
            (1, MsgType::Reserve),
            (2, MsgType::Query),
            (3, MsgType::Response),
            (4, MsgType::Notify),
        ] {
            assert_eq!(MsgType::from_number(n), Some(t));
            assert_eq!(t.number(), n);
        }
        assert_eq!(MsgType::from_number(5), None);
        assert_eq!(MsgType::from_number(255), None);
    }

    #[test]
    fn common_header_deconstruct() {
        // RESERVE with T and R, generic flags B, A, P, S all set plus a reserved bit.
        let h = CommonHeader::parse(&[0x01, 0x03, 0x80, 0x0f]).unwrap();
        assert_eq!(h.msg_type, 1);
        assert_eq!(h.msg_flags, reserve_flags::TEAR | reserve_flags::REPLACE);
        let g = GenericFlags::from_bits(h.generic_flags);
        assert!(g.scoping && g.proxy && g.ack_req && g.break_);
        assert_eq!(g.bits(), 0x000f, "the reserved bit is not kept");
        assert_eq!(
            GenericFlags::from_bits(0x0001).bits(),
            GenericFlags::SCOPING
        );
        assert!(CommonHeader::parse(&[1, 2, 3]).is_err());
    }

    #[test]
    fn common_header_construct() {
        let mut v = vec![0xa5; 2];
        let mut w = Writer::new(&mut v);
        CommonHeader {
            msg_type: 2,
            msg_flags: query_flags::RESERVE_INIT,
            generic_flags: GenericFlags::PROXY | GenericFlags::BREAK,
        }
        .emit(&mut w);
        assert_eq!(&v[2..], &[0x02, 0x01, 0x00, 0x0a]);
    }

    #[test]
    fn object_header_deconstruct() {
        // A=1 B=0, reserved bits set (ignored), type 0x00b, reserved length bits set, length 3.
        let mut r = Reader::new(&[0xb0, 0x0b, 0xf0, 0x03]);
        let h = ObjectHeader::read(&mut r).unwrap();
        assert_eq!(h.extensibility, Extensibility::Forward);
        assert_eq!(h.object_type, object_type::QSPEC);
        assert_eq!(h.length_words, 3);
        assert_eq!(h.body_len(), 12);
        let mut r = Reader::new(&[0x40, 0x01, 0x00]);
        assert!(ObjectHeader::read(&mut r).is_err());
    }

    #[test]
    fn object_header_construct() {
        let mut v = vec![0xa5; 1];
        let mut w = Writer::new(&mut v);
        ObjectHeader::new(0x7ff, Extensibility::Refresh, 8).emit(&mut w);
        ObjectHeader::new(object_type::RII, Extensibility::Mandatory, 4).emit(&mut w);
        assert_eq!(&v[1..], &[0xc7, 0xff, 0x00, 0x02, 0x00, 0x01, 0x00, 0x01]);
    }

    #[test]
    fn extensibility_rules() {
        // RFC 5974 §5.1.3: 00 reject, 01 delete, 10 forward not store, 11 store and forward.
        for e in [
            Extensibility::Mandatory,
            Extensibility::Ignore,
            Extensibility::Forward,
            Extensibility::Refresh,
        ] {
            let (a, b) = e.ab();
            assert_eq!(Extensibility::from_ab(a, b), e);
        }
        assert!(!Extensibility::Ignore.forwarded() && !Extensibility::Ignore.stored());
        assert!(Extensibility::Forward.forwarded() && !Extensibility::Forward.stored());
        assert!(Extensibility::Refresh.forwarded() && Extensibility::Refresh.stored());
    }
}
