//! RSVP-TE (RFC 3209) and refresh-reduction (RFC 2961) objects: wire codecs.
//!
//! What is here, by RFC section:
//!
//! - [`Label`]: LABEL (§4.1); [`LabelRequest`]: LABEL_REQUEST without label range, with an
//!   ATM or a Frame Relay label range (§4.2.1–§4.2.3), and RFC 3473's Generalized
//!   LABEL_REQUEST (§2.1); [`GeneralizedLabel`]: RFC 3473's Generalized LABEL (§2.3), in
//!   [`generalized`] with the GMPLS encoding and switching types (RFC 3471 §3.1.1);
//! - [`ExplicitRoute`]: EXPLICIT_ROUTE and its IPv4 prefix, IPv6 prefix and AS number
//!   subobjects (§4.3);
//! - [`RecordRoute`]: RECORD_ROUTE and its IPv4 address, IPv6 address and Label subobjects
//!   (§4.4);
//! - [`SessionAttribute`]: SESSION_ATTRIBUTE with and without resource affinities (§4.7);
//! - [`Hello`]: HELLO REQUEST and HELLO ACK (§5.2);
//! - [`MessageId`] (RFC 2961 §4.2), [`MessageIdAck`] (MESSAGE_ID_ACK and MESSAGE_ID_NACK,
//!   §4.3) and [`MessageIdList`] (§5.1);
//! - the class numbers ([`class`]), C-Types ([`ctype`]), message types ([`msg_type`]: Hello,
//!   Bundle, Ack, Srefresh) and the common header's [`REFRESH_REDUCTION_CAPABLE`] flag.
//!
//! The LSP_TUNNEL_IPv4/IPv6 SESSION, SENDER_TEMPLATE and FILTER_SPEC (§4.6) are C-Types 7 and
//! 8 of the RFC 2205 objects: [`Session`](super::Session) with an `extended_tunnel_id`, and
//! [`FilterSpec::LspTunnelV4`](super::FilterSpec::LspTunnelV4) /
//! [`FilterSpec::LspTunnelV6`](super::FilterSpec::LspTunnelV6).
//!
//! [`Message`](super::Message) carries the RSVP-TE objects of RFC 3209 §3.1.1 and §3.2.1: a
//! Path its EXPLICIT_ROUTE, LABEL_REQUEST, SESSION_ATTRIBUTE and, in the sender descriptor, a
//! RECORD_ROUTE; each FILTER_SPEC of a Resv-family flow descriptor its LABEL and RECORD_ROUTE
//! ([`FilterTe`](super::FilterTe)); [`Message::parse`](super::Message::parse) says where each
//! is accepted. HELLO (class 22) is carried by the Hello message
//! ([`Hello`](super::message::Hello), RFC 3209 §5.1). MESSAGE_ID and MESSAGE_ID_ACK/NACK
//! (classes 23, 24) go in front of any message's own objects and MESSAGE_ID_LIST (class 25) in
//! the Srefresh message ([`message::refresh`](super::message::refresh), RFC 2961).
//!
//! Every object has the codec surface of [`objects`](super::objects): `parse(ctype, body)` on
//! the body after the 4-byte object header (a known class with an unknown C-Type is
//! [`ParseErrorKind::UnknownCType`], a body that does not fit its C-Type
//! [`ParseErrorKind::BadObject`]); `ctype()`; `emit(&self, w)` writing the whole object, header
//! included; `buffer_len()`, the number of bytes `emit` writes.
//!
//! No-panic contract: parsing reads through [`Reader`] and returns
//! a value or an error for any input; emitting never panics and writes exactly `buffer_len()`
//! bytes. Reserved and "MUST be zero" fields are ignored on receipt and written as zero. Values
//! the wire cannot carry are written in a defined, documented way rather than refused (each
//! type says how: fields wider than theirs are masked, names and uninterpreted contents longer
//! than an 8-bit length are cut).

use pathwise_core::wire::{Reader, Writer};

#[allow(unused_imports)] // for rustdoc links
use super::ParseErrorKind;

mod ero;
pub mod generalized;
mod hello;
mod label;
#[cfg(test)]
pub(crate) mod proptests;
mod refresh_reduction;
mod rro;
mod session_attribute;

pub use ero::{AbstractNode, EroSubobject, ExplicitRoute};
pub use generalized::{GeneralizedLabel, GeneralizedLabelRequest, lsp_encoding, switching};
pub use hello::{Hello, HelloKind};
pub use label::{AtmLabelRange, FrameRelayLabelRange, Label, LabelRange, LabelRequest};
pub use refresh_reduction::{
    AckKind, ListedId, MessageId, MessageIdAck, MessageIdList, MessageIds, MulticastMessageId,
    SourceMessageId,
};
pub use rro::{RecordRoute, RroSubobject};
pub use session_attribute::{ResourceAffinities, SessionAttribute};

/// Class numbers of the RSVP-TE (RFC 3209) and refresh-reduction (RFC 2961) objects. SESSION,
/// SENDER_TEMPLATE and FILTER_SPEC keep theirs ([`objects::class`](super::objects::class)).
pub mod class {
    /// LABEL (RFC 3209 §4.1).
    pub const LABEL: u8 = 16;
    /// LABEL_REQUEST (RFC 3209 §4.2).
    pub const LABEL_REQUEST: u8 = 19;
    /// EXPLICIT_ROUTE (RFC 3209 §4.3).
    pub const EXPLICIT_ROUTE: u8 = 20;
    /// RECORD_ROUTE (RFC 3209 §4.4).
    pub const RECORD_ROUTE: u8 = 21;
    /// HELLO (RFC 3209 §5.2).
    pub const HELLO: u8 = 22;
    /// MESSAGE_ID (RFC 2961 §4.2).
    pub const MESSAGE_ID: u8 = 23;
    /// MESSAGE_ID_ACK, which also carries MESSAGE_ID_NACK (RFC 2961 §4.3).
    pub const MESSAGE_ID_ACK: u8 = 24;
    /// MESSAGE_ID_LIST (RFC 2961 §5.1).
    pub const MESSAGE_ID_LIST: u8 = 25;
    /// SESSION_ATTRIBUTE (RFC 3209 §4.7); of the form 11bbbbbb, so forwarded unexamined by nodes
    /// that do not know it (and by [`Message::parse`](crate::wire::Message::parse) in the messages
    /// other than Path).
    pub const SESSION_ATTRIBUTE: u8 = 207;
}

/// C-Types of the RSVP-TE and refresh-reduction objects, by class.
pub mod ctype {
    /// LSP_TUNNEL_IPv4 SESSION, SENDER_TEMPLATE and FILTER_SPEC (RFC 3209 §4.6).
    pub const LSP_TUNNEL_IPV4: u8 = 7;
    /// LSP_TUNNEL_IPv6 SESSION, SENDER_TEMPLATE and FILTER_SPEC (RFC 3209 §4.6).
    pub const LSP_TUNNEL_IPV6: u8 = 8;
    /// LABEL (RFC 3209 §4.1).
    pub const LABEL: u8 = 1;
    /// LABEL_REQUEST without label range (RFC 3209 §4.2.1).
    pub const LABEL_REQUEST: u8 = 1;
    /// LABEL_REQUEST with ATM label range (RFC 3209 §4.2.2).
    pub const LABEL_REQUEST_ATM: u8 = 2;
    /// LABEL_REQUEST with Frame Relay label range (RFC 3209 §4.2.3).
    pub const LABEL_REQUEST_FRAME_RELAY: u8 = 3;
    /// Generalized LABEL_REQUEST (RFC 3473 §2.1).
    pub const LABEL_REQUEST_GENERALIZED: u8 = 4;
    /// Generalized LABEL (RFC 3473 §2.3).
    pub const GENERALIZED_LABEL: u8 = 2;
    /// EXPLICIT_ROUTE Type 1 (RFC 3209 §4.3.2).
    pub const EXPLICIT_ROUTE: u8 = 1;
    /// RECORD_ROUTE Type 1 (RFC 3209 §4.4.1).
    pub const RECORD_ROUTE: u8 = 1;
    /// SESSION_ATTRIBUTE LSP_TUNNEL_RA, with resource affinities (RFC 3209 §4.7.2).
    pub const SESSION_ATTRIBUTE_RA: u8 = 1;
    /// SESSION_ATTRIBUTE LSP_TUNNEL, without resource affinities (RFC 3209 §4.7.1).
    pub const SESSION_ATTRIBUTE: u8 = 7;
    /// HELLO REQUEST (RFC 3209 §5.2.1).
    pub const HELLO_REQUEST: u8 = 1;
    /// HELLO ACK (RFC 3209 §5.2.2).
    pub const HELLO_ACK: u8 = 2;
    /// MESSAGE_ID (RFC 2961 §4.2).
    pub const MESSAGE_ID: u8 = 1;
    /// MESSAGE_ID_ACK (RFC 2961 §4.3).
    pub const MESSAGE_ID_ACK: u8 = 1;
    /// MESSAGE_ID_NACK, in the MESSAGE_ID_ACK class (RFC 2961 §4.3).
    pub const MESSAGE_ID_NACK: u8 = 2;
    /// MESSAGE_ID LIST (RFC 2961 §5.1).
    pub const MESSAGE_ID_LIST: u8 = 1;
    /// IPv4/MESSAGE_ID SRC_LIST (RFC 2961 §5.1).
    pub const MESSAGE_ID_SRC_LIST_IPV4: u8 = 2;
    /// IPv6/MESSAGE_ID SRC_LIST (RFC 2961 §5.1).
    pub const MESSAGE_ID_SRC_LIST_IPV6: u8 = 3;
    /// IPv4/MESSAGE_ID MCAST_LIST (RFC 2961 §5.1).
    pub const MESSAGE_ID_MCAST_LIST_IPV4: u8 = 4;
    /// IPv6/MESSAGE_ID MCAST_LIST (RFC 2961 §5.1).
    pub const MESSAGE_ID_MCAST_LIST_IPV6: u8 = 5;
}

/// Message types added by RFC 2961 and RFC 3209 (the numbers of RFC 2205's are in
/// [`MsgType`](super::MsgType), where these still parse as `Unknown`).
pub mod msg_type {
    /// Bundle (RFC 2961 §3.1).
    pub const BUNDLE: u8 = 12;
    /// Ack (RFC 2961 §4.4).
    pub const ACK: u8 = 13;
    /// Srefresh (RFC 2961 §5.2).
    pub const SREFRESH: u8 = 15;
    /// Hello (RFC 3209 §5.1).
    pub const HELLO: u8 = 20;
}

/// The common header's Refresh-Reduction-Capable flag (RFC 2961 §2): bit 0x01 of the 4-bit
/// Flags field ([`CommonHeader::flags`](super::CommonHeader::flags)). Set, it says the sender is
/// willing and able to receive the messages and objects RFC 2961 defines (Bundle, Ack and
/// Srefresh messages; MESSAGE_ID, MESSAGE_ID_ACK/NACK and MESSAGE_ID_LIST objects); it is
/// meaningful only between RSVP neighbours.
pub const REFRESH_REDUCTION_CAPABLE: u8 = 0x01;

/// Largest subobject an 8-bit Length can describe while staying a multiple of 4.
const MAX_SUBOBJECT_LEN: usize = 252;

/// Read one EXPLICIT_ROUTE or RECORD_ROUTE subobject (RFC 3209 §4.3.3, §4.4.1): its first byte
/// (L bit and Type, or Type) and its contents after the 2-byte Type/Length header. `None` when
/// the Length is below 4, not a multiple of 4 (both "MUST"s of §4.3.3 and §4.4.1), or runs
/// past the body.
fn read_subobject<'a>(r: &mut Reader<'a>) -> Option<(u8, &'a [u8])> {
    let first = r.u8().ok()?;
    let length = usize::from(r.u8().ok()?);
    if length < 4 || !length.is_multiple_of(4) {
        return None;
    }
    let contents = r.bytes(length - 2).ok()?;
    Some((first, contents))
}

/// Length of a subobject written with `header` bytes before uninterpreted `contents`: padded
/// to a multiple of 4, and no longer than [`MAX_SUBOBJECT_LEN`].
fn raw_subobject_len(header: usize, contents: &[u8]) -> usize {
    (header + contents.len())
        .next_multiple_of(4)
        .min(MAX_SUBOBJECT_LEN)
}

/// Write the contents of a subobject of `total` bytes after its `header`: `contents`, cut or
/// zero-padded to fit.
fn write_raw_contents(w: &mut Writer<'_>, total: usize, header: usize, contents: &[u8]) {
    let room = total.saturating_sub(header);
    let n = room.min(contents.len());
    w.bytes(&contents[..n]);
    w.zeros(room - n);
}

/// Emit into a fresh buffer that starts with three `0xa5` bytes, and check they were left
/// alone (a write before the object's start would show); returns the object's bytes.
#[cfg(test)]
fn emitted(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
    let mut v = vec![0xa5; 3];
    f(&mut Writer::new(&mut v));
    assert_eq!(&v[..3], &[0xa5; 3]);
    v.split_off(3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_match_the_rfcs() {
        // RFC 3209 §4.1–§4.7, §5; RFC 2961 §2–§5, spelled out once more.
        assert_eq!(
            [
                class::LABEL,
                class::LABEL_REQUEST,
                class::EXPLICIT_ROUTE,
                class::RECORD_ROUTE,
                class::HELLO,
                class::MESSAGE_ID,
                class::MESSAGE_ID_ACK,
                class::MESSAGE_ID_LIST,
                class::SESSION_ATTRIBUTE
            ],
            [16, 19, 20, 21, 22, 23, 24, 25, 207]
        );
        assert_eq!((ctype::LSP_TUNNEL_IPV4, ctype::LSP_TUNNEL_IPV6), (7, 8));
        assert_eq!(
            (ctype::SESSION_ATTRIBUTE, ctype::SESSION_ATTRIBUTE_RA),
            (7, 1)
        );
        assert_eq!(
            [
                msg_type::BUNDLE,
                msg_type::ACK,
                msg_type::SREFRESH,
                msg_type::HELLO
            ],
            [12, 13, 15, 20]
        );
        assert_eq!(REFRESH_REDUCTION_CAPABLE, 0x01);
    }

    #[test]
    fn subobject_lengths() {
        // Length 4 with 2 bytes of contents; then lengths 2, 6 and 12 past the end.
        let mut r = Reader::new(&[0x20, 4, 0xfd, 0xe8]);
        assert_eq!(read_subobject(&mut r), Some((0x20, &[0xfd, 0xe8][..])));
        for bad in [
            &[1, 2][..],
            &[1, 6, 0, 0, 0, 0],
            &[1, 12, 0, 0, 0, 0, 0, 0],
            &[1],
        ] {
            assert_eq!(read_subobject(&mut Reader::new(bad)), None, "{bad:?}");
        }
        assert_eq!(raw_subobject_len(2, &[]), 4);
        assert_eq!(raw_subobject_len(2, &[0; 3]), 8);
        assert_eq!(raw_subobject_len(2, &[0; 400]), 252);
    }
}
