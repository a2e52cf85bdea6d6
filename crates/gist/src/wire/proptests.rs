//! Property tests over the whole codec: `parse(emit(x)) == x` for every message type with
//! every optional object; the parser never panics, on arbitrary bytes or on valid messages
//! flipped, truncated and extended, and whatever it accepts re-emits to bytes that parse back
//! to the same value. Values are drawn in canonical form (word-aligned opaque bodies, address
//! families matching within an MRI, comments without NUL).

use super::*;
use pathwise_core::wire::Writer;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub(crate) fn addr(v6: bool) -> BoxedStrategy<IpAddr> {
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

fn words(max: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<[u8; 4]>(), 0..=max).prop_map(|w| w.concat())
}

fn path_coupled() -> BoxedStrategy<PathCoupledMri> {
    any::<bool>()
        .prop_flat_map(|v6| {
            let max: u8 = if v6 { 128 } else { 32 };
            (
                (any::<bool>(), addr(v6), addr(v6), 0..=max, 0..=max),
                (
                    option::of(any::<u8>()),
                    option::of(0u8..64),
                    option::of(0u32..1 << 20),
                ),
                (
                    0u8..3,
                    any::<u32>(),
                    option::of(any::<u16>()),
                    option::of(any::<u16>()),
                    any::<bool>(),
                ),
            )
                .prop_map(
                    move |((nat, s, d, sp, dp), (proto, ds, fl), (ports, spi, a, b, up))| {
                        // Ports or SPI need the protocol; a flow label needs IPv6 (A.3.1.1).
                        let transport = proto.is_some();
                        PathCoupledMri {
                            nat,
                            source: s,
                            destination: d,
                            source_prefix: sp,
                            dest_prefix: dp,
                            protocol: proto,
                            ds_field: ds,
                            flow_label: fl.filter(|_| v6),
                            spi: (transport && ports == 1).then_some(spi),
                            source_port: a.filter(|_| transport && ports == 2),
                            dest_port: b.filter(|_| transport && ports == 2),
                            upstream: up,
                        }
                    },
                )
        })
        .boxed()
}

pub(crate) fn mri() -> BoxedStrategy<Mri> {
    prop_oneof![
        4 => path_coupled().prop_map(Mri::PathCoupled),
        1 => (any::<bool>(), any::<bool>(), any::<bool>()).prop_flat_map(|(v6, nat, up)| {
            (addr(v6), addr(v6)).prop_map(move |(source, destination)| {
                Mri::LooseEnd(LooseEndMri { nat, source, destination, upstream: up })
            })
        }),
        1 => (2u8..=255, any::<bool>(), words(4)).prop_map(|(mrm, nat, w)| {
            let mut data = vec![0, 0];
            data.extend(w);
            Mri::Other { mrm, nat, data }
        }),
    ]
    .boxed()
}

fn nli() -> BoxedStrategy<Nli> {
    (
        any::<u8>(),
        any::<u32>(),
        vec(any::<u8>(), 0..40),
        any::<bool>(),
    )
        .prop_flat_map(|(ttl, v, pi, v6)| {
            addr(v6).prop_map(move |a| Nli {
                ip_ttl: ttl,
                rs_validity_ms: v,
                peer_identity: pi.as_slice().into(),
                interface_address: a,
            })
        })
        .boxed()
}

fn cookie() -> BoxedStrategy<Cookie> {
    words(8).prop_map(|v| Cookie(v.into())).boxed()
}

fn sp() -> BoxedStrategy<StackProposal> {
    vec(vec(1u8..=255, 1..5), 1..4)
        .prop_map(|profiles| StackProposal { profiles })
        .boxed()
}

fn scd() -> BoxedStrategy<StackConfigData> {
    (
        any::<u32>(),
        vec(
            (
                any::<u8>(),
                any::<u8>(),
                any::<bool>(),
                vec(any::<u8>(), 0..12),
            ),
            0..4,
        ),
    )
        .prop_map(|(h, o)| StackConfigData {
            ma_hold_time_ms: h,
            options: o
                .into_iter()
                .map(|(protocol, profile, d_flag, data)| MaProtocolOptions {
                    protocol,
                    profile,
                    d_flag,
                    data,
                })
                .collect(),
        })
        .boxed()
}

fn unknown() -> BoxedStrategy<Vec<UnknownObject>> {
    vec(
        (11u16..4096, words(3)).prop_map(|(object_type, body)| UnknownObject { object_type, body }),
        0..2,
    )
    .boxed()
}

fn header() -> BoxedStrategy<CommonHeader> {
    (
        any::<u8>(),
        any::<u16>(),
        any::<u16>(),
        any::<bool>(),
        0u8..128,
        any::<[bool; 3]>(),
    )
        .prop_map(
            |(gist_hops, length_words, nslpid, c_flag, msg_type, [s, r, e])| CommonHeader {
                version: 1,
                gist_hops,
                length_words,
                nslpid,
                c_flag,
                msg_type,
                s_flag: s,
                r_flag: r,
                e_flag: e,
            },
        )
        .boxed()
}

fn info() -> BoxedStrategy<AdditionalInfo> {
    prop_oneof![
        any::<u16>().prop_map(AdditionalInfo::MessageLength),
        any::<u16>().prop_map(AdditionalInfo::Mtu),
        (0u16..4096).prop_map(AdditionalInfo::ObjectType),
        (0u16..4096, any::<u16>(), words(4)).prop_map(|(real_length_words, offset, object)| {
            AdditionalInfo::ObjectValue {
                real_length_words,
                offset,
                object,
            }
        }),
        (5u16..100, words(2)).prop_map(|(ai_type, value)| AdditionalInfo::Other { ai_type, value }),
    ]
    .boxed()
}

fn error_object() -> BoxedStrategy<ErrorObject> {
    (
        (
            any::<u8>(),
            any::<u16>(),
            any::<u8>(),
            any::<bool>(),
            any::<bool>(),
        ),
        header(),
        option::of(any::<[u8; 16]>().prop_map(SessionId)),
        option::of(mri()),
        vec(info(), 0..4),
        option::of(vec(1u8..=255, 0..20)),
    )
        .prop_map(
            |(
                (class, code, subcode, dmode, qmode),
                original_header,
                session_id,
                mri,
                info,
                comment,
            )| ErrorObject {
                class: ErrorClass::from_number(class),
                code,
                subcode,
                dmode,
                qmode,
                original_header,
                session_id,
                mri,
                info,
                comment,
            },
        )
        .boxed()
}

fn data_opt() -> BoxedStrategy<Option<Vec<u8>>> {
    option::of(words(6)).boxed()
}

fn body() -> BoxedStrategy<(Body, bool)> {
    let sid = any::<[u8; 16]>().prop_map(SessionId);
    prop_oneof![
        (
            mri(),
            sid.clone(),
            nli(),
            cookie(),
            option::of((sp(), scd())),
            data_opt(),
            option::of(words(2)),
            unknown()
        )
            .prop_map(
                |(mri, session_id, nli, query_cookie, stack, nslp_data, nat, unknown)| {
                    let (stack_proposal, stack_config) =
                        stack.map_or((None, None), |(a, b)| (Some(a), Some(b)));
                    (
                        Body::Query(Query {
                            nat,
                            mri,
                            session_id,
                            nli,
                            query_cookie,
                            stack_proposal,
                            stack_config,
                            nslp_data,
                            unknown,
                        }),
                        true,
                    )
                }
            ),
        (
            mri(),
            sid.clone(),
            nli(),
            cookie(),
            // RFC 5971 §5.1: [ Responder-Cookie [ Stack-Proposal Stack-Configuration-Data ] ]
            option::of((cookie(), option::of((sp(), scd())))),
            data_opt(),
            unknown(),
            any::<bool>()
        )
            .prop_map(
                |(mri, session_id, nli, query_cookie, rc_stack, nslp_data, unknown, r)| {
                    let responder_cookie = rc_stack.as_ref().map(|x| x.0.clone());
                    let (stack_proposal, stack_config) = rc_stack
                        .and_then(|x| x.1)
                        .map_or((None, None), |(p, c)| (Some(p), Some(c)));
                    // A.1: R=1 whenever a Responder-Cookie is present.
                    let r = r || responder_cookie.is_some();
                    (
                        Body::Response(Response {
                            nat: None,
                            mri,
                            session_id,
                            nli,
                            query_cookie,
                            responder_cookie,
                            stack_proposal,
                            stack_config,
                            nslp_data,
                            unknown,
                        }),
                        r,
                    )
                }
            ),
        (
            mri(),
            sid.clone(),
            nli(),
            // RFC 5971 §5.1: [ Responder-Cookie [ Stack-Proposal [ Stack-Configuration-Data ] ] ]
            option::of((cookie(), option::of((sp(), option::of(scd()))))),
            data_opt(),
            unknown()
        )
            .prop_map(|(mri, session_id, nli, rc_stack, nslp_data, unknown)| {
                let responder_cookie = rc_stack.as_ref().map(|x| x.0.clone());
                let stack = rc_stack.and_then(|x| x.1);
                let stack_proposal = stack.as_ref().map(|x| x.0.clone());
                let stack_config = stack.and_then(|x| x.1);
                (
                    Body::Confirm(Confirm {
                        mri,
                        session_id,
                        nli,
                        responder_cookie,
                        stack_proposal,
                        stack_config,
                        nslp_data,
                        unknown,
                    }),
                    false,
                )
            }),
        (
            mri(),
            sid,
            option::of(nli()),
            words(8),
            option::of(words(2)),
            unknown()
        )
            .prop_map(|(mri, session_id, nli, nslp_data, nat, unknown)| (
                Body::Data(Data {
                    nat,
                    mri,
                    session_id,
                    nli,
                    nslp_data,
                    unknown
                }),
                false
            )),
        (option::of(nli()), error_object(), unknown()).prop_map(|(nli, error, unknown)| (
            Body::Error(ErrorMsg {
                nat: None,
                nli,
                error,
                unknown
            }),
            false
        )),
        (any::<u32>(), unknown(), any::<bool>())
            // §5.2.2: a request (R=1) carries a non-zero Hello-ID.
            .prop_map(|(hello_id, unknown, r)| (
                Body::MaHello(MaHello { hello_id, unknown }),
                r && hello_id != 0
            )),
    ]
    .boxed()
}

fn message() -> BoxedStrategy<Message> {
    (body(), any::<u8>(), any::<u16>(), any::<[bool; 3]>())
        .prop_map(|((body, r_flag), gist_hops, nslpid, [c, s, e])| {
            let is_data = matches!(body, Body::Data(_));
            Message {
                gist_hops,
                nslpid,
                c_flag: c,
                s_flag: s,
                r_flag,
                e_flag: e && is_data,
                body,
            }
        })
        .boxed()
}

/// Path-coupled MRIs with every optional field free, legal flag combinations or not.
fn path_coupled_any_flags() -> BoxedStrategy<PathCoupledMri> {
    (
        path_coupled(),
        option::of(any::<u8>()),
        option::of(0u32..1 << 20),
        option::of(any::<u32>()),
        option::of(any::<u16>()),
        option::of(any::<u16>()),
    )
        .prop_map(|(mut m, proto, fl, spi, a, b)| {
            m.protocol = proto;
            m.flow_label = fl;
            m.spi = spi;
            m.source_port = a;
            m.dest_port = b;
            m
        })
        .boxed()
}

proptest! {
    /// `flags_allowed` (what GIST checks before sending) is the receiver's rule: an MRI
    /// parses back exactly when it says so (A.3.1.1).
    #[test]
    fn flags_allowed_is_what_a_receiver_accepts(m in path_coupled_any_flags()) {
        let m = Mri::PathCoupled(m);
        let mut b = Vec::new();
        m.emit(&mut Writer::new(&mut b));
        let Mri::PathCoupled(p) = &m else { unreachable!() };
        prop_assert_eq!(Mri::parse(&b).is_ok(), p.flags_allowed(), "{:?}", m);
    }

    #[test]
    fn messages_round_trip(m in message()) {
        let b = m.to_datagram();
        prop_assert_eq!(b.len(), 4 + m.buffer_len());
        prop_assert_eq!(Message::parse_datagram(&b), Ok(m.clone()));
        let mut c = Vec::new();
        m.emit(&mut c);
        prop_assert_eq!(frame_len(&c), Some(c.len()));
    }

    #[test]
    fn parser_never_panics_on_arbitrary_bytes(b in vec(any::<u8>(), 0..300)) {
        let _ = Message::parse(&b);
        let mut d = MAGIC.to_be_bytes().to_vec();
        d.extend_from_slice(&b);
        if let Ok(m) = Message::parse_datagram(&d) {
            prop_assert_eq!(Message::parse_datagram(&m.to_datagram()), Ok(m));
        }
    }

    #[test]
    fn parser_never_panics_on_damaged_messages(
        m in message(),
        flips in vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        cut in any::<prop::sample::Index>(),
        tail in vec(any::<u8>(), 0..12),
    ) {
        let mut b = m.to_datagram();
        for (i, x) in flips {
            let i = i.index(b.len());
            b[i] ^= x;
        }
        let n = cut.index(b.len() + 1);
        for bytes in [&b[..], &b[..n], &[&b[..], &tail[..]].concat()[..]] {
            if let Ok(m) = Message::parse_datagram(bytes) {
                // Whatever parses re-emits to something that parses back the same.
                prop_assert_eq!(Message::parse_datagram(&m.to_datagram()), Ok(m));
            }
        }
    }
}
