//! Property tests for the RSVP-TE and refresh-reduction objects: for every type,
//! `parse(emit(x)) == x` and `emit` writes `buffer_len()` bytes with the right header; every
//! parser, under every C-Type, never panics on arbitrary bodies, subobject-shaped bodies or
//! mutated valid objects, and whatever it accepts re-emits to something that parses back to the
//! same value under the same C-Type.
//!
//! Values are drawn in their canonical forms: fields within their widths, addresses of the
//! family the C-Type names, uninterpreted subobject contents of a length the wire can carry and
//! of a Type no codec here interprets.

use std::fmt::Debug;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use pathwise_core::wire::Writer;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

use super::*;
use crate::wire::objects::class as rsvp_class;
use crate::wire::{FilterSpec, ParseErrorKind, Session};

/// The codec surface every object shares, so one set of checks covers them all.
trait Object: Sized + PartialEq + Debug {
    const CLASS: u8;
    fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind>;
    fn ctype(&self) -> u8;
    fn emit(&self, w: &mut Writer<'_>);
    fn buffer_len(&self) -> usize;
}

macro_rules! object {
    ($ty:ty, $class:expr) => {
        impl Object for $ty {
            const CLASS: u8 = $class;
            fn parse(ctype: u8, body: &[u8]) -> Result<Self, ParseErrorKind> {
                <$ty>::parse(ctype, body)
            }
            fn ctype(&self) -> u8 {
                <$ty>::ctype(self)
            }
            fn emit(&self, w: &mut Writer<'_>) {
                <$ty>::emit(self, w)
            }
            fn buffer_len(&self) -> usize {
                <$ty>::buffer_len(self)
            }
        }
    };
}

// The LSP_TUNNEL forms (RFC 3209 §4.6) are C-Types of these RFC 2205 objects.
object!(Session, rsvp_class::SESSION);
object!(FilterSpec, rsvp_class::FILTER_SPEC);
object!(Label, class::LABEL);
object!(GeneralizedLabel, class::LABEL);
object!(LabelRequest, class::LABEL_REQUEST);
object!(ExplicitRoute, class::EXPLICIT_ROUTE);
object!(RecordRoute, class::RECORD_ROUTE);
object!(SessionAttribute, class::SESSION_ATTRIBUTE);
object!(Hello, class::HELLO);
object!(MessageId, class::MESSAGE_ID);
object!(MessageIdAck, class::MESSAGE_ID_ACK);
object!(MessageIdList, class::MESSAGE_ID_LIST);

/// Emit `x` and split it into (class, C-Type, body), checking its length on the way.
fn emit_object<T: Object>(x: &T) -> (u8, u8, Vec<u8>) {
    let mut v = Vec::new();
    x.emit(&mut Writer::new(&mut v));
    assert_eq!(v.len(), x.buffer_len(), "buffer_len of {x:?}");
    assert_eq!(usize::from(u16::from_be_bytes([v[0], v[1]])), v.len());
    assert_eq!(v.len() % 4, 0, "object length of {x:?}");
    (v[2], v[3], v.split_off(4))
}

fn round_trip<T: Object>(x: &T) -> Result<(), TestCaseError> {
    let (class, ctype, body) = emit_object(x);
    prop_assert_eq!(class, T::CLASS);
    prop_assert_eq!(ctype, x.ctype());
    prop_assert_eq!(&T::parse(ctype, &body)?, x);
    Ok(())
}

/// Parse; if accepted, the value re-emits under the same C-Type and parses back to itself.
fn reparse<T: Object>(ctype: u8, body: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(x) = T::parse(ctype, body) {
        prop_assert_eq!(x.ctype(), ctype);
        let (_, again_ctype, again) = emit_object(&x);
        prop_assert_eq!(again_ctype, ctype);
        prop_assert_eq!(T::parse(ctype, &again), Ok(x));
    }
    Ok(())
}

/// Every parser on one body under one C-Type.
fn reparse_all(ctype: u8, body: &[u8]) -> Result<(), TestCaseError> {
    reparse::<Session>(ctype, body)?;
    reparse::<FilterSpec>(ctype, body)?;
    reparse::<Label>(ctype, body)?;
    reparse::<GeneralizedLabel>(ctype, body)?;
    reparse::<LabelRequest>(ctype, body)?;
    reparse::<ExplicitRoute>(ctype, body)?;
    reparse::<RecordRoute>(ctype, body)?;
    reparse::<SessionAttribute>(ctype, body)?;
    reparse::<Hello>(ctype, body)?;
    reparse::<MessageId>(ctype, body)?;
    reparse::<MessageIdAck>(ctype, body)?;
    reparse::<MessageIdList>(ctype, body)
}

// ---- strategies -------------------------------------------------------------------------

fn addr(v6: bool) -> BoxedStrategy<IpAddr> {
    if v6 {
        any::<[u8; 16]>()
            .prop_map(|o| IpAddr::V6(Ipv6Addr::from(o)))
            .boxed()
    } else {
        any::<[u8; 4]>()
            .prop_map(|o| IpAddr::V4(Ipv4Addr::from(o)))
            .boxed()
    }
}

fn epoch() -> impl Strategy<Value = u32> {
    0u32..1 << 24
}

/// Uninterpreted subobject contents the wire carries unchanged after a `header`-byte header:
/// `header + len` a multiple of 4, at most 252.
fn raw_contents(header: usize, min_words: usize) -> impl Strategy<Value = Vec<u8>> {
    (min_words..=8usize).prop_flat_map(move |words| vec(any::<u8>(), words * 4 + 4 - header))
}

fn lsp_tunnel_session() -> impl Strategy<Value = Session> {
    any::<bool>().prop_flat_map(|v6| {
        (addr(v6), any::<u16>(), addr(v6)).prop_map(|(end_point, tunnel_id, extended)| {
            Session::lsp_tunnel(end_point, tunnel_id, extended)
        })
    })
}

fn lsp_tunnel_sender() -> impl Strategy<Value = FilterSpec> {
    (any::<bool>().prop_flat_map(addr), any::<u16>()).prop_map(|(sender, lsp_id)| match sender {
        IpAddr::V4(src) => FilterSpec::LspTunnelV4 { src, lsp_id },
        IpAddr::V6(src) => FilterSpec::LspTunnelV6 { src, lsp_id },
    })
}

pub(in crate::wire) fn label() -> impl Strategy<Value = Label> {
    any::<u32>().prop_map(|label| Label { label })
}

/// A Generalized LABEL (RFC 3473 §2.3): one to four words.
pub(in crate::wire) fn generalized_label() -> impl Strategy<Value = GeneralizedLabel> {
    (1usize..=4)
        .prop_flat_map(|words| vec(any::<u8>(), words * 4))
        .prop_map(|b| GeneralizedLabel {
            label: b.as_slice().into(),
        })
}

pub(in crate::wire) fn label_request() -> impl Strategy<Value = LabelRequest> {
    let atm = (
        any::<bool>(),
        0u16..1 << 12,
        any::<u16>(),
        0u16..1 << 12,
        any::<u16>(),
    )
        .prop_map(|(merge, min_vpi, min_vci, max_vpi, max_vci)| {
            LabelRange::Atm(AtmLabelRange {
                merge,
                min_vpi,
                min_vci,
                max_vpi,
                max_vci,
            })
        });
    let frame_relay =
        (0u8..4, 0u32..1 << 23, 0u32..1 << 23).prop_map(|(dli, min_dlci, max_dlci)| {
            LabelRange::FrameRelay(FrameRelayLabelRange {
                dli,
                min_dlci,
                max_dlci,
            })
        });
    // RFC 3473 §2.1: the Generalized LABEL_REQUEST.
    let generalized = (any::<u8>(), any::<u8>()).prop_map(|(encoding, switching)| {
        LabelRange::Generalized(GeneralizedLabelRequest {
            encoding,
            switching,
        })
    });
    (
        any::<u16>(),
        option::of(prop_oneof![atm, frame_relay, generalized]),
    )
        .prop_map(|(l3pid, range)| LabelRequest { l3pid, range })
}

fn ero_subobject() -> impl Strategy<Value = EroSubobject> {
    let node = prop_oneof![
        (any::<[u8; 4]>(), 0u8..=32).prop_map(|(a, prefix_len)| AbstractNode::Ipv4Prefix {
            addr: Ipv4Addr::from(a),
            prefix_len
        }),
        (any::<[u8; 16]>(), 0u8..=128).prop_map(|(a, prefix_len)| AbstractNode::Ipv6Prefix {
            addr: Ipv6Addr::from(a),
            prefix_len
        }),
        any::<u16>().prop_map(AbstractNode::AutonomousSystem),
        (
            (0u8..0x80).prop_filter("interpreted type", |t| ![1, 2, 32].contains(t)),
            raw_contents(2, 0)
        )
            .prop_map(|(subobject_type, contents)| AbstractNode::Other {
                subobject_type,
                contents
            }),
    ];
    (any::<bool>(), node).prop_map(|(loose, node)| EroSubobject { loose, node })
}

pub(in crate::wire) fn explicit_route() -> impl Strategy<Value = ExplicitRoute> {
    vec(ero_subobject(), 1..8).prop_map(|subobjects| ExplicitRoute { subobjects })
}

fn rro_subobject() -> impl Strategy<Value = RroSubobject> {
    prop_oneof![
        (any::<[u8; 4]>(), 0u8..=32, any::<u8>()).prop_map(|(a, prefix_len, flags)| {
            RroSubobject::Ipv4 {
                addr: Ipv4Addr::from(a),
                prefix_len,
                flags,
            }
        }),
        (any::<[u8; 16]>(), 0u8..=128, any::<u8>()).prop_map(|(a, prefix_len, flags)| {
            RroSubobject::Ipv6 {
                addr: Ipv6Addr::from(a),
                prefix_len,
                flags,
            }
        }),
        (any::<u8>(), any::<u8>(), raw_contents(4, 1)).prop_map(|(flags, ctype, contents)| {
            RroSubobject::Label {
                flags,
                ctype,
                contents,
            }
        }),
        (
            any::<u8>().prop_filter("interpreted type", |t| ![1, 2, 3].contains(t)),
            raw_contents(2, 0)
        )
            .prop_map(|(subobject_type, contents)| RroSubobject::Other {
                subobject_type,
                contents
            }),
    ]
}

pub(in crate::wire) fn record_route() -> impl Strategy<Value = RecordRoute> {
    vec(rro_subobject(), 1..8).prop_map(|subobjects| RecordRoute { subobjects })
}

pub(in crate::wire) fn session_attribute() -> impl Strategy<Value = SessionAttribute> {
    let affinities =
        any::<[u32; 3]>().prop_map(
            |[exclude_any, include_any, include_all]| ResourceAffinities {
                exclude_any,
                include_any,
                include_all,
            },
        );
    (
        option::of(affinities),
        any::<[u8; 3]>(),
        vec(any::<u8>(), 0..=SessionAttribute::MAX_NAME_LEN),
    )
        .prop_map(
            |(affinities, [setup_priority, holding_priority, flags], name)| SessionAttribute {
                affinities,
                setup_priority,
                holding_priority,
                flags,
                name,
            },
        )
}

pub(in crate::wire) fn hello() -> impl Strategy<Value = Hello> {
    (any::<bool>(), any::<u32>(), any::<u32>()).prop_map(|(ack, src_instance, dst_instance)| {
        Hello {
            kind: if ack {
                HelloKind::Ack
            } else {
                HelloKind::Request
            },
            src_instance,
            dst_instance,
        }
    })
}

/// A MESSAGE_ID of any flags, epoch and identifier (RFC 2961 §4.2).
pub(crate) fn message_id() -> impl Strategy<Value = MessageId> {
    (any::<u8>(), epoch(), any::<u32>()).prop_map(|(flags, epoch, message_id)| MessageId {
        flags,
        epoch,
        message_id,
    })
}

/// A MESSAGE_ID_ACK or MESSAGE_ID_NACK (RFC 2961 §4.3).
pub(crate) fn message_id_ack() -> impl Strategy<Value = MessageIdAck> {
    (any::<bool>(), message_id()).prop_map(|(nack, m)| MessageIdAck {
        kind: if nack { AckKind::Nack } else { AckKind::Ack },
        flags: m.flags,
        epoch: m.epoch,
        message_id: m.message_id,
    })
}

fn source_ids<A: std::fmt::Debug>(
    a: impl Strategy<Value = A>,
) -> impl Strategy<Value = Vec<crate::wire::te::SourceMessageId<A>>> {
    vec((any::<u32>(), a), 0..20).prop_map(|v| {
        v.into_iter()
            .map(|(message_id, source)| crate::wire::te::SourceMessageId { message_id, source })
            .collect()
    })
}

fn multicast_ids<A: std::fmt::Debug + Clone>(
    a: impl Strategy<Value = A> + Clone,
) -> impl Strategy<Value = Vec<crate::wire::te::MulticastMessageId<A>>> {
    vec((any::<u32>(), a.clone(), a), 0..20).prop_map(|v| {
        v.into_iter()
            .map(
                |(message_id, source, destination)| crate::wire::te::MulticastMessageId {
                    message_id,
                    source,
                    destination,
                },
            )
            .collect()
    })
}

/// A MESSAGE_ID_LIST of any of its five forms (RFC 2961 §5.1).
pub(crate) fn message_id_list() -> impl Strategy<Value = MessageIdList> {
    use crate::wire::te::MessageIds;
    use std::net::{Ipv4Addr, Ipv6Addr};
    let v4 = any::<[u8; 4]>().prop_map(Ipv4Addr::from);
    let v6 = any::<[u8; 16]>().prop_map(Ipv6Addr::from);
    let ids = prop_oneof![
        vec(any::<u32>(), 0..40).prop_map(MessageIds::List),
        source_ids(v4.clone()).prop_map(MessageIds::Ipv4SrcList),
        source_ids(v6.clone()).prop_map(MessageIds::Ipv6SrcList),
        multicast_ids(v4).prop_map(MessageIds::Ipv4McastList),
        multicast_ids(v6).prop_map(MessageIds::Ipv6McastList),
    ];
    (any::<u8>(), epoch(), ids).prop_map(|(flags, epoch, ids)| MessageIdList { flags, epoch, ids })
}

/// Any object, emitted: (C-Type, body).
fn any_emitted() -> impl Strategy<Value = (u8, Vec<u8>)> {
    fn split<T: Object>(x: T) -> (u8, Vec<u8>) {
        let (_, ctype, body) = emit_object(&x);
        (ctype, body)
    }
    prop_oneof![
        lsp_tunnel_session().prop_map(split),
        lsp_tunnel_sender().prop_map(split),
        label().prop_map(split),
        generalized_label().prop_map(split),
        label_request().prop_map(split),
        explicit_route().prop_map(split),
        record_route().prop_map(split),
        session_attribute().prop_map(split),
        hello().prop_map(split),
        message_id().prop_map(split),
        message_id_ack().prop_map(split),
        message_id_list().prop_map(split),
    ]
}

/// A body of subobjects with plausible, mostly valid headers: (Type byte, Length, filler).
fn subobject_shaped() -> impl Strategy<Value = Vec<u8>> {
    let sub = (
        prop_oneof![
            Just(1u8),
            Just(2),
            Just(3),
            Just(32),
            Just(0x81),
            any::<u8>()
        ],
        prop_oneof![Just(4u8), Just(8), Just(12), Just(20), 0u8..24],
        any::<u8>(),
    );
    vec(sub, 0..6).prop_map(|subs| {
        let mut body = Vec::new();
        for (t, len, fill) in subs {
            body.push(t);
            body.push(len);
            body.extend(std::iter::repeat_n(
                fill,
                usize::from(len).saturating_sub(2),
            ));
        }
        body
    })
}

// ---- properties -------------------------------------------------------------------------

proptest! {
    #[test]
    fn lsp_tunnel_session_round_trip(x in lsp_tunnel_session()) {
        round_trip(&x)?;
    }

    #[test]
    fn lsp_tunnel_sender_round_trip(x in lsp_tunnel_sender()) {
        round_trip(&x)?;
        // The SENDER_TEMPLATE form (§4.6.2).
        let mut v = Vec::new();
        x.emit_as(rsvp_class::SENDER_TEMPLATE, &mut Writer::new(&mut v));
        prop_assert_eq!(v.len(), x.buffer_len());
        prop_assert_eq!(v[2], rsvp_class::SENDER_TEMPLATE);
        prop_assert_eq!(FilterSpec::parse_as(rsvp_class::SENDER_TEMPLATE, v[3], &v[4..]), Ok(x));
    }

    #[test]
    fn label_round_trip(x in label()) {
        round_trip(&x)?;
    }

    #[test]
    fn label_request_round_trip(x in label_request()) {
        round_trip(&x)?;
    }

    #[test]
    fn explicit_route_round_trip(x in explicit_route()) {
        round_trip(&x)?;
    }

    #[test]
    fn record_route_round_trip(x in record_route()) {
        round_trip(&x)?;
    }

    #[test]
    fn session_attribute_round_trip(x in session_attribute()) {
        round_trip(&x)?;
    }

    #[test]
    fn hello_round_trip(x in hello()) {
        round_trip(&x)?;
    }

    #[test]
    fn generalized_label_round_trip(x in generalized_label()) {
        round_trip(&x)?;
    }

    #[test]
    fn message_id_round_trip(x in message_id()) {
        round_trip(&x)?;
    }

    #[test]
    fn message_id_ack_round_trip(x in message_id_ack()) {
        round_trip(&x)?;
    }

    #[test]
    fn message_id_list_round_trip(x in message_id_list()) {
        round_trip(&x)?;
    }

    /// Every parser under every C-Type (0–255) on arbitrary bytes.
    #[test]
    fn parsers_never_panic_on_arbitrary_bodies(body in vec(any::<u8>(), 0..160)) {
        for ctype in 0..=u8::MAX {
            reparse_all(ctype, &body)?;
        }
    }

    /// Bodies of a whole number of words, the only kind an object header lets through.
    #[test]
    fn parsers_never_panic_on_word_bodies(words in vec(any::<[u8; 4]>(), 0..12), ctype in 0u8..10) {
        reparse_all(ctype, &words.concat())?;
    }

    /// ERO and RRO bodies made of subobject headers, to get past the length checks.
    #[test]
    fn route_parsers_never_panic_on_subobject_bodies(body in subobject_shaped(), ctype in 0u8..3) {
        reparse::<ExplicitRoute>(ctype, &body)?;
        reparse::<RecordRoute>(ctype, &body)?;
    }

    /// Valid objects with bytes flipped, cut or extended, under their own C-Type and others.
    #[test]
    fn mutated_objects_never_panic(
        (ctype, mut body) in any_emitted(),
        flips in vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in option::of(any::<prop::sample::Index>()),
        tail in vec(any::<u8>(), 0..8),
        other_ctype in any::<u8>(),
    ) {
        if !body.is_empty() {
            for (i, x) in flips {
                let i = i.index(body.len());
                body[i] ^= x;
            }
        }
        if let Some(c) = cut {
            body.truncate(c.index(body.len() + 1));
        }
        body.extend_from_slice(&tail);
        reparse_all(ctype, &body)?;
        reparse_all(other_ctype, &body)?;
    }
}
