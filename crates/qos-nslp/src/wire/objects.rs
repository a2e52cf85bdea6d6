//! The fixed and list objects of RFC 5974 §5.1.3.1–§5.1.3.10, and unknown objects kept by their
//! extensibility flags (§5.1.3). Each body codec parses the Value only; the message codec reads
//! the object header.

use super::error::BodyError;
use super::header::Extensibility;
use pathwise_core::wire::{Reader, Writer};
use pathwise_gist::wire::SessionId;

/// Reads exactly `N` bytes: a body of any other length is the wrong length.
fn exact<const N: usize>(body: &[u8]) -> Result<[u8; N], BodyError> {
    <[u8; N]>::try_from(body).map_err(|_| BodyError::Length)
}

/// Request Identification Information (type 0x001, §5.1.3.1): one word, matching a RESPONSE to
/// the RESERVE or QUERY that asked for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rii(pub u32);

impl Rii {
    /// Body length.
    pub const LEN: usize = 4;

    pub(crate) fn parse(body: &[u8]) -> Result<Self, BodyError> {
        Ok(Rii(u32::from_be_bytes(exact(body)?)))
    }

    pub(crate) fn emit(&self, w: &mut Writer<'_>) {
        w.u32(self.0);
    }
}

/// Reservation Sequence Number (type 0x002, §5.1.3.2): two words, the RSN then the Epoch
/// Identifier.
///
/// ```text
///  |               Reservation Sequence Number (RSN)               |
///  |                       Epoch Identifier                        |
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rsn {
    /// The sequence number (serial-number arithmetic, RFC 1982, §5.3.1).
    pub rsn: u32,
    /// Identifies the sender's restart epoch.
    pub epoch: u32,
}

impl Rsn {
    /// Body length.
    pub const LEN: usize = 8;

    pub(crate) fn parse(body: &[u8]) -> Result<Self, BodyError> {
        let b: [u8; 8] = exact(body)?;
        let mut r = Reader::new(&b);
        Ok(Rsn {
            rsn: r.u32()?,
            epoch: r.u32()?,
        })
    }

    pub(crate) fn emit(&self, w: &mut Writer<'_>) {
        w.u32(self.rsn);
        w.u32(self.epoch);
    }
}

/// REFRESH-PERIOD (type 0x003, §5.1.3.3): the refresh period R in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RefreshPeriod(pub u32);

impl RefreshPeriod {
    /// Body length.
    pub const LEN: usize = 4;
    /// The period assumed when a RESERVE carries none (§5.1.2.1: 30 seconds).
    pub const DEFAULT: RefreshPeriod = RefreshPeriod(30_000);

    pub(crate) fn parse(body: &[u8]) -> Result<Self, BodyError> {
        Ok(RefreshPeriod(u32::from_be_bytes(exact(body)?)))
    }

    pub(crate) fn emit(&self, w: &mut Writer<'_>) {
        w.u32(self.0);
    }
}

/// Binding codes of BOUND-SESSION-ID (§5.1.3.4, registry §6.3). Other values are kept as
/// received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BindingCode(pub u8);

impl BindingCode {
    /// 0x01: tunnel and end-to-end sessions.
    pub const TUNNEL: BindingCode = BindingCode(0x01);
    /// 0x02: bidirectional sessions.
    pub const BIDIRECTIONAL: BindingCode = BindingCode(0x02);
    /// 0x03: aggregate sessions.
    pub const AGGREGATE: BindingCode = BindingCode(0x03);
    /// 0x04: dependent sessions (alive only while the other is).
    pub const DEPENDENT: BindingCode = BindingCode(0x04);
    /// 0x05: the indicated session caused preemption.
    pub const PREEMPTION: BindingCode = BindingCode(0x05);
}

/// BOUND-SESSION-ID (type 0x004, §5.1.3.4): five words.
///
/// ```text
///  |                  RESERVED                     |  Binding Code |
///  |                    Session ID (128 bits)                      |
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BoundSessionId {
    /// Nature of the binding.
    pub code: BindingCode,
    /// The session bound to.
    pub session_id: SessionId,
}

impl BoundSessionId {
    /// Body length.
    pub const LEN: usize = 20;

    pub(crate) fn parse(body: &[u8]) -> Result<Self, BodyError> {
        let b: [u8; 20] = exact(body)?;
        let mut r = Reader::new(&b);
        r.skip(3)?;
        Ok(BoundSessionId {
            code: BindingCode(r.u8()?),
            session_id: SessionId(r.array()?),
        })
    }

    pub(crate) fn emit(&self, w: &mut Writer<'_>) {
        w.zeros(3);
        w.u8(self.code.0);
        w.bytes(&self.session_id.0);
    }

    /// The whole object, header included, as an INFO-SPEC's Object Value Info quotes it
    /// (§5.1.3.6) — e.g. to say which binding a NOTIFY is about.
    pub fn to_object_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(super::header::OBJECT_HEADER_LEN + Self::LEN);
        let mut w = Writer::new(&mut out);
        super::header::ObjectHeader::new(
            super::object_type::BOUND_SESSION_ID,
            Extensibility::Mandatory,
            Self::LEN,
        )
        .emit(&mut w);
        self.emit(&mut w);
        out
    }
}

/// The flags of a path-coupled PACKET-CLASSIFIER (§5.1.3.5): which fields of the GIST MRI the
/// classifier uses.
///
/// ```text
///  |X|Y|P|T|F|S|A|B|                      Reserved                |
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PacketClassifier(pub u8);

impl PacketClassifier {
    /// X: source address and prefix.
    pub const SOURCE_ADDRESS: u8 = 0x80;
    /// Y: destination address and prefix.
    pub const DESTINATION_ADDRESS: u8 = 0x40;
    /// P: protocol.
    pub const PROTOCOL: u8 = 0x20;
    /// T: Diffserv code point.
    pub const DSCP: u8 = 0x10;
    /// F: flow label.
    pub const FLOW_LABEL: u8 = 0x08;
    /// S: SPI.
    pub const SPI: u8 = 0x04;
    /// A: source port.
    pub const SOURCE_PORT: u8 = 0x02;
    /// B: destination port.
    pub const DESTINATION_PORT: u8 = 0x01;
    /// Body length: the path-coupled MRM's four bytes, the only method-specific data the RFC
    /// defines ("At this stage, the QoS NSLP only uses the path-coupled routing MRM"), so any
    /// other length is refused as a wrong object length.
    pub const LEN: usize = 4;

    /// Whether every flag in `mask` is set.
    pub fn has(self, mask: u8) -> bool {
        self.0 & mask == mask
    }

    pub(crate) fn parse(body: &[u8]) -> Result<Self, BodyError> {
        let b: [u8; 4] = exact(body)?;
        Ok(PacketClassifier(b[0]))
    }

    pub(crate) fn emit(&self, w: &mut Writer<'_>) {
        w.u8(self.0);
        w.zeros(3);
    }
}

/// SESSION-ID-LIST (type 0x007, §5.1.3.7): 128-bit Session IDs concatenated, for summary
/// refresh and summary tear.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SessionIdList(pub Vec<SessionId>);

impl SessionIdList {
    /// Body length.
    pub fn buffer_len(&self) -> usize {
        self.0.len() * SessionId::LEN
    }

    pub(crate) fn parse(body: &[u8]) -> Result<Self, BodyError> {
        let chunks = body.chunks_exact(SessionId::LEN);
        if !chunks.remainder().is_empty() {
            return Err(BodyError::Length);
        }
        Ok(SessionIdList(
            chunks
                .map(|c| exact(c).map(SessionId))
                .collect::<Result<_, _>>()?,
        ))
    }

    pub(crate) fn emit(&self, w: &mut Writer<'_>) {
        for s in &self.0 {
            w.bytes(&s.0);
        }
    }
}

/// RSN-LIST (type 0x008, §5.1.3.8): an Epoch Identifier, then RSNs in the order of the
/// SESSION-ID-LIST. Note the order differs from the RSN object, where the epoch comes second.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RsnList {
    /// Epoch Identifier.
    pub epoch: u32,
    /// One RSN per session of the SESSION-ID-LIST.
    pub rsns: Vec<u32>,
}

impl RsnList {
    /// Body length.
    pub fn buffer_len(&self) -> usize {
        4 + 4 * self.rsns.len()
    }

    pub(crate) fn parse(body: &[u8]) -> Result<Self, BodyError> {
        let mut r = Reader::new(body);
        let epoch = r.u32()?;
        let mut rsns = Vec::with_capacity(r.remaining() / 4);
        while !r.is_empty() {
            rsns.push(r.u32()?);
        }
        Ok(RsnList { epoch, rsns })
    }

    pub(crate) fn emit(&self, w: &mut Writer<'_>) {
        w.u32(self.epoch);
        for rsn in &self.rsns {
            w.u32(*rsn);
        }
    }
}

/// Message binding types, the D bit of MSG-ID and BOUND-MSG-ID (§5.1.3.9, §5.1.3.10).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BindingType {
    /// D=0: unidirectional binding dependency.
    Unidirectional,
    /// D=1: bidirectional binding dependency.
    Bidirectional,
}

/// MSG-ID (type 0x009, §5.1.3.9) or BOUND-MSG-ID (type 0x00A, §5.1.3.10): five words, a
/// binding type bit and a 128-bit message identifier. A RESERVE carries at most one of the two
/// (`[ MSG-ID / BOUND-MSG-ID ]`).
///
/// ```text
///  |                  RESERVED                                   |D|
///  |                    Message ID (128 bits)                      |
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MessageBinding {
    /// MSG-ID: identifies this message.
    MsgId {
        /// D bit.
        binding: BindingType,
        /// The message's identifier.
        id: [u8; 16],
    },
    /// BOUND-MSG-ID: refers to the MSG-ID of another message.
    BoundMsgId {
        /// D bit.
        binding: BindingType,
        /// The other message's identifier.
        id: [u8; 16],
    },
}

impl MessageBinding {
    /// Body length.
    pub const LEN: usize = 20;

    /// The object type (MSG-ID or BOUND-MSG-ID).
    pub fn object_type(&self) -> u16 {
        match self {
            MessageBinding::MsgId { .. } => super::object_type::MSG_ID,
            MessageBinding::BoundMsgId { .. } => super::object_type::BOUND_MSG_ID,
        }
    }

    pub(crate) fn parse(object_type: u16, body: &[u8]) -> Result<Self, BodyError> {
        let b: [u8; 20] = exact(body)?;
        let mut r = Reader::new(&b);
        let binding = if r.u32()? & 1 == 1 {
            BindingType::Bidirectional
        } else {
            BindingType::Unidirectional
        };
        let id = r.array()?;
        Ok(if object_type == super::object_type::MSG_ID {
            MessageBinding::MsgId { binding, id }
        } else {
            MessageBinding::BoundMsgId { binding, id }
        })
    }

    pub(crate) fn emit(&self, w: &mut Writer<'_>) {
        let (MessageBinding::MsgId { binding, id } | MessageBinding::BoundMsgId { binding, id }) =
            self;
        w.u32(u32::from(*binding == BindingType::Bidirectional));
        w.bytes(id);
    }
}

/// An object of a type this codec does not know, kept with its flags and bytes so it survives a
/// round trip. Only AB≠00 objects are ever kept (an unknown AB=00 object rejects the message);
/// what the engine does with one is [`UnknownObject::treatment`] (§5.1.3): drop it (Ignore),
/// forward it unchanged (Forward), or also store it with the session and repeat it in refreshes
/// (Refresh).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UnknownObject {
    /// The 12-bit object type.
    pub object_type: u16,
    /// The AB flags.
    pub treatment: Extensibility,
    /// The body as received (a whole number of words).
    pub body: Vec<u8>,
}

impl UnknownObject {
    /// Body length.
    pub fn buffer_len(&self) -> usize {
        super::pad4(self.body.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emitted(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
        let mut v = vec![0xa5; 2];
        f(&mut Writer::new(&mut v));
        assert!(v[..2] == [0xa5, 0xa5]);
        v.split_off(2)
    }

    #[test]
    fn rii_and_refresh_period() {
        let b = [0x12, 0x34, 0x56, 0x78];
        assert_eq!(Rii::parse(&b), Ok(Rii(0x1234_5678)));
        assert_eq!(emitted(|w| Rii(0x1234_5678).emit(w)), b);
        assert_eq!(Rii::parse(&b[..3]), Err(BodyError::Length));
        assert_eq!(Rii::parse(&[0; 8]), Err(BodyError::Length));
        assert_eq!(
            RefreshPeriod::parse(&[0, 0, 0x75, 0x30]),
            Ok(RefreshPeriod::DEFAULT)
        );
        assert_eq!(emitted(|w| RefreshPeriod(1).emit(w)), [0, 0, 0, 1]);
        assert_eq!(RefreshPeriod::parse(&[]), Err(BodyError::Length));
    }

    #[test]
    fn rsn_layout() {
        // §5.1.3.2: the RSN first, then the Epoch Identifier.
        let b = [0, 0, 0, 7, 0xca, 0xfe, 0xba, 0xbe];
        let rsn = Rsn {
            rsn: 7,
            epoch: 0xcafe_babe,
        };
        assert_eq!(Rsn::parse(&b), Ok(rsn));
        assert_eq!(emitted(|w| rsn.emit(w)), b);
        assert_eq!(Rsn::parse(&b[..4]), Err(BodyError::Length));
    }

    #[test]
    fn bound_session_id_layout() {
        let mut b = vec![0xff, 0xff, 0xff, 0x03];
        b.extend(1..=16);
        let o = BoundSessionId::parse(&b).unwrap();
        assert_eq!(o.code, BindingCode::AGGREGATE);
        assert_eq!(o.session_id.0[0], 1);
        assert_eq!(o.session_id.0[15], 16);
        // The reserved bits are written as zero.
        let mut expect = b.clone();
        expect[..3].fill(0);
        assert_eq!(emitted(|w| o.emit(w)), expect);
        assert_eq!(BoundSessionId::parse(&b[..16]), Err(BodyError::Length));
        // As a whole object: type 0x004, AB = 00, five words.
        let whole = o.to_object_bytes();
        assert_eq!(&whole[..4], &[0x00, 0x04, 0x00, 0x05]);
        assert_eq!(&whole[4..], &expect[..]);
    }

    #[test]
    fn packet_classifier_layout() {
        let pc = PacketClassifier::parse(&[0xe3, 0xff, 0xff, 0xff]).unwrap();
        assert!(pc.has(PacketClassifier::SOURCE_ADDRESS | PacketClassifier::DESTINATION_ADDRESS));
        assert!(pc.has(PacketClassifier::PROTOCOL | PacketClassifier::DESTINATION_PORT));
        assert!(!pc.has(PacketClassifier::DSCP));
        assert_eq!(emitted(|w| pc.emit(w)), [0xe3, 0, 0, 0]);
        assert_eq!(PacketClassifier::parse(&[0; 8]), Err(BodyError::Length));
    }

    #[test]
    fn lists() {
        let mut b = Vec::new();
        b.extend([0x11; 16]);
        b.extend([0x22; 16]);
        let l = SessionIdList::parse(&b).unwrap();
        assert_eq!(l.0, [SessionId([0x11; 16]), SessionId([0x22; 16])]);
        assert_eq!(emitted(|w| l.emit(w)), b);
        assert_eq!(l.buffer_len(), 32);
        assert_eq!(SessionIdList::parse(&b[..20]), Err(BodyError::Length));

        // §5.1.3.8: the epoch first, then the RSNs.
        let b = [0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 2];
        let l = RsnList::parse(&b).unwrap();
        assert_eq!(
            l,
            RsnList {
                epoch: 9,
                rsns: vec![1, 2]
            }
        );
        assert_eq!(emitted(|w| l.emit(w)), b);
        assert_eq!(RsnList::parse(&[]), Err(BodyError::Length));
        assert_eq!(RsnList::parse(&b[..6]), Err(BodyError::Length));
    }

    #[test]
    fn message_binding_layout() {
        let mut b = vec![0, 0, 0, 1];
        b.extend([0x5a; 16]);
        let m = MessageBinding::parse(super::super::object_type::BOUND_MSG_ID, &b).unwrap();
        assert_eq!(
            m,
            MessageBinding::BoundMsgId {
                binding: BindingType::Bidirectional,
                id: [0x5a; 16]
            }
        );
        assert_eq!(m.object_type(), super::super::object_type::BOUND_MSG_ID);
        assert_eq!(emitted(|w| m.emit(w)), b);
        b[3] = 0xfe; // reserved bits ignored, D = 0
        let m = MessageBinding::parse(super::super::object_type::MSG_ID, &b).unwrap();
        assert!(matches!(
            m,
            MessageBinding::MsgId {
                binding: BindingType::Unidirectional,
                ..
            }
        ));
        assert_eq!(emitted(|w| m.emit(w))[..4], [0, 0, 0, 0]);
        assert_eq!(
            MessageBinding::parse(super::super::object_type::MSG_ID, &b[..16]),
            Err(BodyError::Length)
        );
    }
}
