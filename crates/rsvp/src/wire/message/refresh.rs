//! Refresh reduction on the wire (RFC 2961): the MESSAGE_ID and MESSAGE_ID_ACK/NACK objects any
//! standard message may carry ([`Refresh`]), the Ack and Srefresh messages, and Bundle messages
//! (§3), which carry whole messages one after another.
//!
//! ```text
//! <any standard message> ::= <Common Header> [ <INTEGRITY> ]
//!                            [ [<MESSAGE_ID_ACK> | <MESSAGE_ID_NACK>] ... ]
//!                            [ <MESSAGE_ID> ] <the message's objects>       (§4.1, §4.5)
//! <ACK Message>          ::= <Common Header> [ <INTEGRITY> ]
//!                            <MESSAGE_ID_ACK> | <MESSAGE_ID_NACK>
//!                            [ [<MESSAGE_ID_ACK> | <MESSAGE_ID_NACK>] ... ]  (§4.4)
//! <Srefresh Message>     ::= <Common Header> [ <INTEGRITY> ]
//!                            [ [<MESSAGE_ID_ACK> | <MESSAGE_ID_NACK>] ... ]
//!                            [ <MESSAGE_ID> ]
//!                            <srefresh list> | <source srefresh list>       (§5.2)
//! <srefresh list>        ::= <MESSAGE_ID LIST> | <MESSAGE_ID MCAST_LIST> [ <srefresh list> ]
//! <source srefresh list> ::= <MESSAGE_ID SRC_LIST> [ <source srefresh list> ]
//! <Bundle Message>       ::= <Common Header> [ <INTEGRITY> ]
//!                            <RSVP Message> [ <RSVP Message> ... ]          (§3.1)
//! ```
//!
//! Every form of MESSAGE_ID_LIST is decoded ([`MessageIds`](crate::wire::te::MessageIds)); a
//! SRC_LIST next to a LIST or MCAST_LIST is refused, as §5.2 does not allow it.

use pathwise_core::wire::Writer;

use super::{CommonHeader, Packet};
use crate::wire::ParseErrorKind;
use crate::wire::objects::{Integrity, ObjectHeader};
use crate::wire::te::{MessageId, MessageIdAck, MessageIdList};

/// The refresh-reduction objects in front of a message's own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Refresh {
    /// MESSAGE_ID_ACK and MESSAGE_ID_NACK objects, piggybacked.
    pub acks: Vec<MessageIdAck>,
    /// The message's MESSAGE_ID.
    pub message_id: Option<MessageId>,
}

impl Refresh {
    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.acks.is_empty() && self.message_id.is_none()
    }

    /// Bytes the objects take.
    pub fn buffer_len(&self) -> usize {
        self.acks.len() * (ObjectHeader::LEN + 8) + self.message_id.map_or(0, |m| m.buffer_len())
    }

    /// Write the objects in the order of RFC 2961 §4.1: acknowledgements, then the identifier.
    pub fn emit(&self, w: &mut Writer<'_>) {
        self.acks.iter().for_each(|a| a.emit(w));
        if let Some(m) = &self.message_id {
            m.emit(w);
        }
    }
}

/// Ack (RFC 2961 §4.4, message type 13): acknowledgements alone; they are in the [`Refresh`]
/// the message was parsed with (at least one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ack {
    /// INTEGRITY (RFC 2747), when the message was signed.
    pub integrity: Option<Integrity>,
}

/// Srefresh (RFC 2961 §5.2, message type 15): refreshes the state installed by the messages
/// whose identifiers it lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Srefresh {
    /// INTEGRITY (RFC 2747), when the message was signed.
    pub integrity: Option<Integrity>,
    /// The identifiers refreshed: one or more MESSAGE_ID_LIST objects, in order; either
    /// SRC_LISTs only or LISTs and MCAST_LISTs (§5.2).
    pub lists: Vec<MessageIdList>,
}

/// The messages of a Bundle (RFC 2961 §3.1), each a whole RSVP message with its own common
/// header, after the Bundle's header and optional INTEGRITY. A sub-message whose RSVP Length
/// does not fit ends the walk with an error; a Bundle inside a Bundle is refused (§3.2: "A
/// sub-message MAY be any message type except for another Bundle message") with an error of
/// its own, and the walk goes on after it: its length is known, so the sub-messages after it
/// are still whole messages from the neighbour and are not lost with it.
pub fn bundle_messages(buf: &[u8]) -> impl Iterator<Item = Result<&[u8], ParseErrorKind>> + '_ {
    let length = Packet::new_checked(buf).map_or(0, |p| usize::from(p.length()));
    let mut rest = buf.get(CommonHeader::LEN..length).unwrap_or(&[]);
    // Skip an INTEGRITY object of the Bundle itself.
    if let Some(Ok((h, body))) = ObjectHeader::iter(rest).next()
        && h.class == crate::wire::objects::class::INTEGRITY
    {
        rest = rest.get(ObjectHeader::LEN + body.len()..).unwrap_or(&[]);
    }
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || rest.is_empty() {
            return None;
        }
        match Packet::new_checked(rest) {
            Ok(p) => {
                let nested = u8::from(p.msg_type()) == crate::wire::te::msg_type::BUNDLE;
                let (m, tail) = rest.split_at(usize::from(p.length()));
                rest = tail;
                Some(if nested {
                    Err(ParseErrorKind::UnknownMsgType(
                        crate::wire::te::msg_type::BUNDLE,
                    ))
                } else {
                    Ok(m)
                })
            }
            Err(e) => {
                failed = true;
                Some(Err(e))
            }
        }
    })
}

/// Write a Bundle (RFC 2961 §3.1) of whole messages: header (flags as given; Send_TTL 1, since
/// Bundles go to a neighbour), the messages, then RSVP Length and the checksum.
pub fn emit_bundle<'a>(flags: u8, messages: impl IntoIterator<Item = &'a [u8]>, out: &mut Vec<u8>) {
    let start = out.len();
    let mut w = Writer::new(out);
    w.u8((CommonHeader::VERSION << 4) | (flags & 0x0f));
    w.u8(crate::wire::te::msg_type::BUNDLE);
    w.u16(0);
    w.u8(1);
    w.u8(0);
    w.u16(0);
    for m in messages {
        out.extend_from_slice(m);
    }
    let length = u16::try_from(out.len() - start).unwrap_or(u16::MAX);
    if let Ok(mut p) = Packet::new_header(&mut out[start..]) {
        p.set_length(length);
        p.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Message;
    use crate::wire::te::MessageIds;
    use crate::wire::te::proptests::{message_id, message_id_ack};
    use proptest::prelude::*;

    proptest! {
        /// Acks and Srefreshes of any content, with any identifier, round-trip; and a Bundle of
        /// them splits back into exactly those messages.
        #[test]
        fn ack_and_srefresh_round_trip(
            acks in proptest::collection::vec(message_id_ack(), 1..20),
            ids in proptest::collection::vec(any::<u32>(), 0..50),
            mid in proptest::option::of(message_id()),
        ) {
            let refresh = Refresh { acks: acks.clone(), message_id: mid };
            let ack = Message::Ack(Ack { integrity: None });
            let mut a = Vec::new();
            ack.emit_with(1, 1, &Refresh { acks, message_id: None }, &mut a);
            let sr = Message::Srefresh(Srefresh {
                integrity: None,
                lists: vec![MessageIdList { flags: 0, epoch: 3, ids: MessageIds::List(ids) }],
            });
            let mut b = Vec::new();
            sr.emit_with(1, 1, &refresh, &mut b);
            let (h, m, r) = Message::parse_refresh(&b).unwrap();
            prop_assert_eq!((h.flags, &m, &r), (1, &sr, &refresh));
            prop_assert_eq!(Message::parse_refresh(&a).unwrap().1, ack);
            let mut bundle = Vec::new();
            emit_bundle(1, [a.as_slice(), b.as_slice()], &mut bundle);
            let subs: Vec<_> = bundle_messages(&bundle).collect();
            prop_assert_eq!(subs, vec![Ok(a.as_slice()), Ok(b.as_slice())]);
        }

        /// Splitting never panics and never yields bytes outside the buffer.
        #[test]
        fn bundle_split_never_panics(buf in proptest::collection::vec(any::<u8>(), 0..300)) {
            for m in bundle_messages(&buf).flatten() {
                prop_assert!(m.len() >= CommonHeader::LEN);
            }
        }
    }

    proptest! {
        /// An Srefresh of several lists of any form round-trips when §5.2 allows the mix (SRC_LISTs
        /// alone, or LISTs and MCAST_LISTs), and is refused otherwise.
        #[test]
        fn srefresh_lists_round_trip(
            lists in proptest::collection::vec(crate::wire::te::proptests::message_id_list(), 1..5),
        ) {
            let sr = Message::Srefresh(Srefresh { integrity: None, lists: lists.clone() });
            let mut b = Vec::new();
            sr.emit_with(1, 1, &Refresh::default(), &mut b);
            let mixed = lists.iter().any(|l| l.ids.is_src_list())
                && lists.iter().any(|l| !l.ids.is_src_list());
            match Message::parse(&b) {
                Ok((_, m)) => prop_assert!(!mixed && m == sr),
                Err(e) => prop_assert!(
                    mixed && matches!(e.kind, ParseErrorKind::UnexpectedObject { class: 25, .. }),
                    "{e:?}"
                ),
            }
        }
    }

    #[test]
    fn an_srefresh_needs_a_list() {
        let mut out = Vec::new();
        let sr = Message::Srefresh(Srefresh {
            integrity: None,
            lists: Vec::new(),
        });
        sr.emit(1, &mut out);
        assert_eq!(
            Message::parse(&out).map(|_| ()).map_err(|e| e.kind),
            Err(ParseErrorKind::MissingObject { class: 25 })
        );
    }

    #[test]
    fn an_ack_message_needs_an_acknowledgement() {
        let mut out = Vec::new();
        Message::Ack(Ack { integrity: None }).emit(1, &mut out);
        assert!(Message::parse(&out).is_err());
    }

    fn ack_message() -> Vec<u8> {
        let mut out = Vec::new();
        let refresh = Refresh {
            acks: vec![MessageIdAck {
                kind: crate::wire::te::AckKind::Ack,
                flags: 0,
                epoch: 7,
                message_id: 42,
            }],
            message_id: None,
        };
        Message::Ack(Ack { integrity: None }).emit_with(1, 1, &refresh, &mut out);
        out
    }

    #[test]
    fn bundles_split_into_their_messages() {
        let a = ack_message();
        let mut b = Vec::new();
        emit_bundle(1, [a.as_slice(), a.as_slice()], &mut b);
        assert_eq!(b.len(), 8 + 2 * a.len());
        assert!(Message::parse_header(&b).is_ok());
        let subs: Vec<_> = bundle_messages(&b).collect();
        assert_eq!(subs, vec![Ok(a.as_slice()), Ok(a.as_slice())]);
        // A Bundle in a Bundle is refused; a cut sub-message ends the walk with an error.
        let mut nested = Vec::new();
        emit_bundle(1, [b.as_slice()], &mut nested);
        assert!(bundle_messages(&nested).next().unwrap().is_err());
        // ... and only it: what follows it is still read.
        let mut mixed = Vec::new();
        emit_bundle(1, [a.as_slice(), b.as_slice(), a.as_slice()], &mut mixed);
        let subs: Vec<_> = bundle_messages(&mixed).collect();
        assert_eq!(subs.len(), 3);
        assert_eq!(subs[0], Ok(a.as_slice()));
        assert!(subs[1].is_err());
        assert_eq!(subs[2], Ok(a.as_slice()));
        let mut cut = b.clone();
        cut.truncate(b.len() - 4);
        let cut_len = u16::try_from(cut.len()).unwrap();
        cut[6..8].copy_from_slice(&cut_len.to_be_bytes());
        let subs: Vec<_> = bundle_messages(&cut).collect();
        assert_eq!(subs.len(), 2);
        assert!(subs[1].is_err());
    }

    /// A PathTear signed and carrying a piggybacked MESSAGE_ID_ACK after its EXPLICIT_ROUTE (an
    /// object its BNF does not have, skipped), as `fuzz/` found it: 192 bytes of its datagram.
    /// Re-emitted, the acknowledgement used to go in front of the INTEGRITY, which then no
    /// longer parsed (RFC 2747 §3.1 wants INTEGRITY right behind the header; RFC 2961 §4.1 has
    /// the acknowledgements "immediately follow the INTEGRITY object").
    #[test]
    fn a_signed_message_re_emits_integrity_before_its_acknowledgements() {
        #[rustfmt::skip]
        let datagram: [u8; 192] = [
        0x10, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x24, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, 0x11, 0x11, 0xef, 0xee,
        0xee, 0xee, 0xee, 0xee, 0xee, 0xf7, 0x11, 0x1d, 0x11, 0x00, 0x00, 0xc8, 0x00, 0x10, 0x01, 0x07,
        0x0a, 0xc8, 0x03, 0x02, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0xc8, 0x0a, 0x00, 0x14, 0x03, 0x03,
        0x0a, 0xc8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x81, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x08, 0x05, 0x01, 0x00, 0x00, 0x75, 0x30, 0x00, 0x08, 0x13, 0x01, 0x00, 0x00, 0x08, 0x00,
        0x00, 0x24, 0x14, 0x01, 0x01, 0x08, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x38, 0x00, 0x18, 0x01, 0x02,
        0x10, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x64, 0x00, 0x0c, 0x01, 0x01, 0x0a, 0x00, 0x00, 0x09,
        0x11, 0x00, 0x13, 0x8c, 0x00, 0x0c, 0x18, 0x01, 0x02, 0x10, 0x4b, 0x05, 0x00, 0x00, 0x00, 0x01,
        0x00, 0x0c, 0xf0, 0xfe, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x24, 0xf4, 0xfd,
        0xff, 0xf8, 0x00, 0x07, 0x01, 0x00, 0x00, 0x06, 0x7f, 0x00, 0x00, 0x05, 0x47, 0xf4, 0x24, 0x00,
        0x46, 0x74, 0x24, 0x00, 0x47, 0xf4, 0x24, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x05, 0xdc,
        ];
        let (header, msg, refresh) = Message::parse_refresh(&datagram).unwrap();
        assert_eq!(msg.msg_type(), crate::wire::MsgType::PathTear);
        assert!(msg.integrity().is_some());
        assert_eq!(refresh.acks.len(), 1);
        let mut out = Vec::new();
        msg.emit_with(header.send_ttl, header.flags, &refresh, &mut out);
        let classes: Vec<u8> = ObjectHeader::iter(&out[CommonHeader::LEN..])
            .map(|o| o.unwrap().0.class)
            .collect();
        // INTEGRITY (4), MESSAGE_ID_ACK (24), SESSION (1), RSVP_HOP (3), the two 11bbbbbb
        // objects forwarded unexamined (RFC 2205 §3.10).
        assert_eq!(classes, [4, 24, 1, 3, 240, 244]);
        let (_, again, again_refresh) = Message::parse_refresh(&out).unwrap();
        assert_eq!((again, again_refresh), (msg, refresh));
    }
}
