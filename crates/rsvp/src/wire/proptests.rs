//! Property tests over the whole codec: for every object and message, `parse(emit(x)) == x`
//! and the emitted length is `buffer_len()`; `Message::parse` never panics, on arbitrary bytes
//! or on valid messages flipped, truncated and extended, and whatever it accepts re-emits to
//! something that parses back to the same value.
//!
//! Messages are drawn for IP and LSP_TUNNEL sessions (RFC 3209) alike, with the RSVP-TE objects
//! their messages may carry present or not; the TE object strategies are `te::proptests`'.
//!
//! Floats are drawn finite and non-negative (plus +infinity where the format allows it), so
//! equality is exact. Values are drawn in their canonical forms (e.g. STYLE option vectors other
//! than WF/FF/SE in `Other`, flow descriptors shaped as their style requires).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use pathwise_core::wire::Writer;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

use super::intserv::{
    ControlledLoadAdspec, ErrorTerms, GeneralParameters, GuaranteedAdspec, IntServParam, Overrides,
    ServiceFragment,
};
use super::objects::class;
use super::*;
use messages::message;

/// The message strategies.
mod messages;

// ---- leaves -------------------------------------------------------------------------------

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

/// Finite, non-negative single-precision floats (all of them, subnormals included).
fn finite() -> impl Strategy<Value = f32> {
    (0u32..0x7f80_0000).prop_map(f32::from_bits)
}

/// A rate that may also be +infinity.
fn rate() -> impl Strategy<Value = f32> {
    prop_oneof![4 => finite(), 1 => Just(f32::INFINITY)]
}

/// Bytes that are a whole number of 32-bit words.
fn words(max: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<[u8; 4]>(), 0..=max).prop_map(|w| w.concat())
}

// ---- RFC 2205 objects ---------------------------------------------------------------------

/// A SESSION of the family `v6` names: an LSP_TUNNEL one (RFC 3209 §4.6.1) when `lsp`, else
/// an IP one.
fn session_of(v6: bool, lsp: bool) -> BoxedStrategy<Session> {
    if lsp {
        (addr(v6), any::<u16>(), addr(v6))
            .prop_map(|(end_point, tunnel_id, extended)| {
                Session::lsp_tunnel(end_point, tunnel_id, extended)
            })
            .boxed()
    } else {
        (addr(v6), any::<u8>(), any::<u8>(), any::<u16>())
            .prop_map(|(dest, protocol_id, flags, dst_port)| Session {
                flags,
                ..Session::ip(dest, protocol_id, dst_port)
            })
            .boxed()
    }
}

/// A SESSION of either kind.
fn session(v6: bool) -> impl Strategy<Value = Session> {
    any::<bool>().prop_flat_map(move |lsp| session_of(v6, lsp))
}

/// Interface_ID TLVs (RFC 3471 §9.1.1): each known type, and unknown ones with Values of any
/// length the 16-bit Length carries.
fn if_id_tlv() -> impl Strategy<Value = IfIdTlv> {
    let v4 = any::<[u8; 4]>().prop_map(Ipv4Addr::from);
    prop_oneof![
        v4.clone().prop_map(IfIdTlv::Ipv4),
        any::<[u8; 16]>().prop_map(|o| IfIdTlv::Ipv6(Ipv6Addr::from(o))),
        (v4.clone(), any::<u32>()).prop_map(|(addr, id)| IfIdTlv::IfIndex { addr, id }),
        (v4.clone(), any::<u32>()).prop_map(|(addr, id)| IfIdTlv::ComponentDownstream { addr, id }),
        (v4, any::<u32>()).prop_map(|(addr, id)| IfIdTlv::ComponentUpstream { addr, id }),
        ((6u16..), vec(any::<u8>(), 0..24))
            .prop_map(|(kind, value)| IfIdTlv::Unknown { kind, value }),
    ]
}

/// An RSVP_HOP: the RFC 2205 form, or the IF_ID form (RFC 3473 §8.1.1) with 0 to 3 TLVs.
fn hop(v6: bool) -> impl Strategy<Value = RsvpHop> {
    (addr(v6), any::<u32>(), option::of(vec(if_id_tlv(), 0..4))).prop_map(|(addr, lih, if_id)| {
        RsvpHop {
            addr,
            lih,
            if_id: if_id.map(std::sync::Arc::new),
        }
    })
}

fn time_values() -> impl Strategy<Value = TimeValues> {
    any::<u32>().prop_map(|refresh_ms| TimeValues { refresh_ms })
}

fn error_spec(v6: bool) -> impl Strategy<Value = ErrorSpec> {
    (addr(v6), any::<u8>(), any::<u8>(), any::<u16>()).prop_map(|(node, flags, code, value)| {
        ErrorSpec {
            node,
            flags,
            code,
            value,
        }
    })
}

fn scope(v6: bool) -> impl Strategy<Value = Scope> {
    vec(addr(v6), 1..5).prop_map(|addrs| Scope { addrs })
}

fn style_any() -> impl Strategy<Value = Style> {
    (any::<u8>(), any::<u32>()).prop_map(|(flags, v)| Style {
        flags,
        kind: StyleKind::from_option_vector(v),
    })
}

fn confirm(v6: bool) -> impl Strategy<Value = ResvConfirm> {
    addr(v6).prop_map(|receiver| ResvConfirm { receiver })
}

/// A FILTER_SPEC or SENDER_TEMPLATE for a session of the kind `lsp` names.
fn filter_of(v6: bool, lsp: bool) -> BoxedStrategy<FilterSpec> {
    if !lsp {
        return ip_filter(v6);
    }
    (addr(v6), any::<u16>())
        .prop_map(|(src, lsp_id)| match src {
            IpAddr::V4(src) => FilterSpec::LspTunnelV4 { src, lsp_id },
            IpAddr::V6(src) => FilterSpec::LspTunnelV6 { src, lsp_id },
        })
        .boxed()
}

/// A FILTER_SPEC or SENDER_TEMPLATE of any C-Type of the family.
fn filter(v6: bool) -> BoxedStrategy<FilterSpec> {
    any::<bool>()
        .prop_flat_map(move |lsp| filter_of(v6, lsp))
        .boxed()
}

fn ip_filter(v6: bool) -> BoxedStrategy<FilterSpec> {
    if v6 {
        prop_oneof![
            (any::<[u8; 16]>(), any::<u16>()).prop_map(|(a, src_port)| FilterSpec::V6 {
                src: Ipv6Addr::from(a),
                src_port
            }),
            (any::<[u8; 16]>(), 0u32..0x10_0000).prop_map(|(a, flow_label)| {
                FilterSpec::V6FlowLabel {
                    src: Ipv6Addr::from(a),
                    flow_label,
                }
            }),
        ]
        .boxed()
    } else {
        (any::<[u8; 4]>(), any::<u16>())
            .prop_map(|(a, src_port)| FilterSpec::V4 {
                src: Ipv4Addr::from(a),
                src_port,
            })
            .boxed()
    }
}

fn opaque(classes: std::ops::RangeInclusive<u8>, ctype: Option<u8>) -> BoxedStrategy<Opaque> {
    let ctype = match ctype {
        Some(c) => Just(c).boxed(),
        None => any::<u8>().boxed(),
    };
    (classes, ctype, words(6))
        .prop_map(|(class, ctype, body)| Opaque { class, ctype, body })
        .boxed()
}

fn integrity() -> BoxedStrategy<Integrity> {
    (
        any::<u8>(),
        0u64..(1 << 48),
        any::<u64>(),
        (1usize..=16).prop_flat_map(|n| vec(any::<u8>(), n * 4)),
    )
        .prop_map(|(flags, key_id, seq, digest)| Integrity {
            flags,
            key_id,
            seq,
            digest,
        })
        .boxed()
}

fn challenge() -> impl Strategy<Value = Challenge> {
    (0u64..(1 << 48), any::<u64>()).prop_map(|(key_id, cookie)| Challenge { key_id, cookie })
}

fn policy() -> BoxedStrategy<Opaque> {
    opaque(class::POLICY_DATA..=class::POLICY_DATA, Some(1))
}

/// Unknown objects of class 11bbbbbb, which are forwarded (SESSION_ATTRIBUTE, 207, is known).
fn forward() -> BoxedStrategy<Opaque> {
    opaque(0xc0..=0xff, None)
        .prop_filter("known class", |o| o.class != te::class::SESSION_ATTRIBUTE)
        .boxed()
}

// ---- IntServ objects ----------------------------------------------------------------------

fn bucket() -> impl Strategy<Value = TokenBucket> {
    (finite(), finite(), rate(), any::<u32>(), any::<u32>()).prop_map(|(r, b, p, x, y)| {
        TokenBucket {
            rate: r,
            bucket: b,
            peak: p,
            min_policed: x.min(y),
            max_packet: x.max(y),
        }
    })
}

fn tspec() -> impl Strategy<Value = SenderTspec> {
    bucket().prop_map(SenderTspec)
}

fn flowspec() -> impl Strategy<Value = FlowSpec> {
    prop_oneof![
        bucket().prop_map(FlowSpec::ControlledLoad),
        (bucket(), finite(), any::<u32>())
            .prop_map(|(tspec, rate, slack)| { FlowSpec::Guaranteed { tspec, rate, slack } }),
    ]
}

/// Parameters with IDs the ADSPEC codec does not interpret.
fn unknown_params(known: &'static [u8]) -> impl Strategy<Value = Vec<IntServParam>> {
    vec(
        (
            any::<u8>().prop_filter("known parameter", move |id| !known.contains(id)),
            any::<u8>(),
            words(3),
        )
            .prop_map(|(id, flags, data)| IntServParam { id, flags, data }),
        0..3,
    )
}

fn overrides() -> impl Strategy<Value = Overrides> {
    (
        option::of(any::<u32>()),
        option::of(rate()),
        option::of(any::<u32>()),
        option::of(any::<u32>()),
    )
        .prop_map(|(hop_count, path_bw, min_latency_us, mtu)| Overrides {
            hop_count,
            path_bw,
            min_latency_us,
            mtu,
        })
}

const GENERAL_IDS: &[u8] = &[4, 6, 8, 10];
const GUARANTEED_IDS: &[u8] = &[4, 6, 8, 10, 133, 134, 135, 136];

fn adspec() -> impl Strategy<Value = Adspec> {
    let general = (
        any::<bool>(),
        any::<u32>(),
        rate(),
        any::<u32>(),
        any::<u32>(),
        unknown_params(GENERAL_IDS),
    )
        .prop_map(
            |(break_bit, hop_count, path_bw, min_latency_us, mtu, unknown)| GeneralParameters {
                break_bit,
                hop_count,
                path_bw,
                min_latency_us,
                mtu,
                unknown,
            },
        );
    let terms = any::<[u32; 4]>().prop_map(|[c_tot, d_tot, c_sum, d_sum]| ErrorTerms {
        c_tot,
        d_tot,
        c_sum,
        d_sum,
    });
    let guaranteed = (
        any::<bool>(),
        option::of(terms),
        overrides(),
        unknown_params(GUARANTEED_IDS),
    )
        .prop_map(|(break_bit, errors, overrides, unknown)| GuaranteedAdspec {
            break_bit,
            errors,
            overrides,
            unknown,
        });
    let controlled_load = (any::<bool>(), overrides(), unknown_params(GENERAL_IDS)).prop_map(
        |(break_bit, overrides, unknown)| ControlledLoadAdspec {
            break_bit,
            overrides,
            unknown,
        },
    );
    let other = vec(
        (
            any::<u8>().prop_filter("known service", |s| ![1, 2, 5].contains(s)),
            any::<u8>(),
            words(3),
        )
            .prop_map(|(service, flags, data)| ServiceFragment {
                service,
                flags,
                data,
            }),
        0..2,
    );
    (
        general,
        option::of(guaranteed),
        option::of(controlled_load),
        other,
    )
        .prop_map(|(general, guaranteed, controlled_load, other)| Adspec {
            general,
            guaranteed,
            controlled_load,
            other,
        })
}

// ---- properties ---------------------------------------------------------------------------

/// Emit one object and split it into (header, body), checking the length on the way.
fn emit_object(len: usize, emit: impl FnOnce(&mut Writer<'_>)) -> (u8, u8, Vec<u8>) {
    let mut v = Vec::new();
    emit(&mut Writer::new(&mut v));
    assert_eq!(v.len(), len, "buffer_len");
    assert_eq!(usize::from(u16::from_be_bytes([v[0], v[1]])), len);
    (v[2], v[3], v.split_off(4))
}

macro_rules! object_round_trip {
    ($name:ident, $strategy:expr, $ty:ty, $class:expr) => {
        proptest! {
            #[test]
            fn $name(x in $strategy) {
                let (class, ctype, body) = emit_object(x.buffer_len(), |w| x.emit(w));
                prop_assert_eq!(class, $class);
                prop_assert_eq!(ctype, x.ctype());
                prop_assert_eq!(<$ty>::parse(ctype, &body), Ok(x));
            }
        }
    };
}

object_round_trip!(
    session_round_trip,
    any::<bool>().prop_flat_map(session),
    Session,
    class::SESSION
);
object_round_trip!(
    hop_round_trip,
    any::<bool>().prop_flat_map(hop),
    RsvpHop,
    class::RSVP_HOP
);
object_round_trip!(
    time_values_round_trip,
    time_values(),
    TimeValues,
    class::TIME_VALUES
);
object_round_trip!(
    error_spec_round_trip,
    any::<bool>().prop_flat_map(error_spec),
    ErrorSpec,
    class::ERROR_SPEC
);
object_round_trip!(
    scope_round_trip,
    any::<bool>().prop_flat_map(scope),
    Scope,
    class::SCOPE
);
object_round_trip!(style_round_trip, style_any(), Style, class::STYLE);
object_round_trip!(
    confirm_round_trip,
    any::<bool>().prop_flat_map(confirm),
    ResvConfirm,
    class::RESV_CONFIRM
);
object_round_trip!(
    filter_round_trip,
    any::<bool>().prop_flat_map(filter),
    FilterSpec,
    class::FILTER_SPEC
);
object_round_trip!(tspec_round_trip, tspec(), SenderTspec, class::SENDER_TSPEC);
object_round_trip!(flowspec_round_trip, flowspec(), FlowSpec, class::FLOWSPEC);
object_round_trip!(adspec_round_trip, adspec(), Adspec, class::ADSPEC);
object_round_trip!(
    integrity_round_trip,
    integrity(),
    Integrity,
    class::INTEGRITY
);
object_round_trip!(
    challenge_round_trip,
    challenge(),
    Challenge,
    class::CHALLENGE
);

proptest! {
    #[test]
    fn opaque_round_trip(x in forward()) {
        let (class, ctype, body) = emit_object(x.buffer_len(), |w| x.emit(w));
        prop_assert_eq!(Opaque::parse(class, ctype, &body), x);
    }

    #[test]
    fn sender_template_round_trip(x in any::<bool>().prop_flat_map(filter)) {
        let (class, ctype, body) =
            emit_object(x.buffer_len(), |w| x.emit_as(class::SENDER_TEMPLATE, w));
        prop_assert_eq!(class, class::SENDER_TEMPLATE);
        prop_assert_eq!(FilterSpec::parse_as(class, ctype, &body), Ok(x));
    }

    #[test]
    /// Any message, with any piggybacked acknowledgements and MESSAGE_ID (RFC 2961 §4.1),
    /// round-trips; a signed one keeps its INTEGRITY first, in front of them.
    fn message_round_trip(
        m in message(),
        ttl in any::<u8>(),
        acks in vec(te::proptests::message_id_ack(), 0..4),
        message_id in option::of(te::proptests::message_id()),
    ) {
        // Hello (RFC 3209 §5.1) and the integrity handshake (RFC 2747 §3.3) are not standard
        // messages of RFC 2205 and carry none.
        let standard = !matches!(
            m.msg_type(),
            MsgType::Hello | MsgType::IntegrityChallenge | MsgType::IntegrityResponse
        );
        let refresh = match standard {
            true => message::refresh::Refresh { acks, message_id },
            false => message::refresh::Refresh::default(),
        };
        let mut out = Vec::new();
        m.emit_with(ttl, 0, &refresh, &mut out);
        prop_assert_eq!(out.len(), m.buffer_len() + refresh.buffer_len());
        let (hdr, back, back_refresh) = Message::parse_refresh(&out).map_err(|e| {
            TestCaseError::fail(format!("{e:?}"))
        })?;
        prop_assert_eq!(hdr.send_ttl, ttl);
        prop_assert_eq!(usize::from(hdr.length), out.len());
        prop_assert_eq!(back, m);
        prop_assert_eq!(back_refresh, refresh);
    }

    /// RSVP_HOP under each C-Type, IF_ID ones included (RFC 3473 §8.1.1), on TLV-shaped and
    /// arbitrary bodies: never a panic, and what is accepted re-emits to itself.
    #[test]
    fn hop_parser_never_panics(
        ctype in 0u8..6,
        head in vec(any::<u8>(), 0..24),
        tlvs in vec((0u16..8, 0u16..28, any::<u8>()), 0..4),
    ) {
        let mut body = head;
        for (kind, length, fill) in tlvs {
            body.extend_from_slice(&kind.to_be_bytes());
            body.extend_from_slice(&length.to_be_bytes());
            body.extend(std::iter::repeat_n(fill, usize::from(length.saturating_sub(4)).next_multiple_of(4)));
        }
        if let Ok(h) = RsvpHop::parse(ctype, &body) {
            let (class, again_ctype, again) = emit_object(h.buffer_len(), |w| h.emit(w));
            prop_assert_eq!(class, class::RSVP_HOP);
            prop_assert_eq!(again_ctype, ctype);
            prop_assert_eq!(RsvpHop::parse(ctype, &again), Ok(h));
        }
    }

    #[test]
    fn parse_never_panics_on_arbitrary_bytes(bytes in vec(any::<u8>(), 0..600)) {
        let _ = Message::parse(&bytes);
    }

    #[test]
    fn parse_never_panics_on_header_shaped_bytes(
        t in prop_oneof![0u8..9, Just(25u8), Just(26u8)],
        body in vec(any::<u8>(), 0..400),
    ) {
        // A valid header (no checksum) over random objects, to get past the header checks.
        let mut b = vec![0x10, t, 0, 0, 1, 0];
        b.extend_from_slice(&((8 + body.len()) as u16).to_be_bytes());
        b.extend_from_slice(&body);
        check_reparse(&b)?;
    }

    #[test]
    fn mutated_messages_never_panic(
        m in message(),
        flips in vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in option::of(any::<prop::sample::Index>()),
        tail in vec(any::<u8>(), 0..8),
        clear_checksum in any::<bool>(),
    ) {
        let mut b = Vec::new();
        m.emit(64, &mut b);
        for (i, x) in flips {
            let i = i.index(b.len());
            b[i] ^= x;
        }
        if let Some(c) = cut {
            b.truncate(c.index(b.len() + 1));
        }
        b.extend_from_slice(&tail);
        if clear_checksum && b.len() >= 4 {
            // Skip the checksum so the mutation reaches the object parsers.
            b[2] = 0;
            b[3] = 0;
        }
        check_reparse(&b)?;
    }
}

proptest! {
    /// RFC 2747 §3: a message signed under any algorithm verifies, parses with its INTEGRITY
    /// object first, and stops verifying when any byte but the checksum (outside the digest by
    /// design, and checked on its own) changes.
    #[test]
    fn signed_messages_verify_and_any_flip_fails(
        m in message(),
        alg in prop::sample::select(pathwise_auth::Algorithm::ALL.to_vec()),
        seq in any::<u64>(),
        flip in any::<prop::sample::Index>(),
        x in 1u8..=255,
    ) {
        let key = pathwise_auth::Key::new(5, alg, b"proptest key").unwrap();
        let mut b = Vec::new();
        let m = match m {
            Message::IntegrityResponse(r) => Message::IntegrityResponse(IntegrityResponse {
                integrity: None,
                ..r
            }),
            other => other,
        };
        if message_integrity(&m).is_some() || m.msg_type() == MsgType::IntegrityChallenge {
            return Ok(()); // already carries one, or may not carry one
        }
        m.emit(64, &mut b);
        super::integrity::sign(&mut b, &key, seq, 1);
        let verifies = |b: &[u8]| match super::integrity::Signed::locate(b) {
            Ok(Some(s)) => key.verify(&s.digested(), s.presented().digest),
            _ => false,
        };
        prop_assert!(verifies(&b));
        let (_, parsed) = Message::parse(&b).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        prop_assert_eq!(message_integrity(&parsed).map(|i| (i.key_id, i.seq)), Some((5, seq)));
        let i = flip.index(b.len());
        if !(2..4).contains(&i) {
            b[i] ^= x;
            prop_assert!(!verifies(&b), "byte {} flipped still verifies", i);
        }
    }
}

/// The INTEGRITY object of any message.
fn message_integrity(m: &Message) -> Option<Integrity> {
    m.integrity().cloned()
}

/// Parse; if accepted, the re-emitted message must parse back to the same value.
fn check_reparse(b: &[u8]) -> Result<(), TestCaseError> {
    if let Ok((hdr, m, r)) = Message::parse_refresh(b) {
        let mut again = Vec::new();
        m.emit_with(hdr.send_ttl, hdr.flags, &r, &mut again);
        prop_assert_eq!(again.len(), m.buffer_len() + r.buffer_len());
        let back = Message::parse_refresh(&again).map(|(_, m, r)| (m, r));
        prop_assert_eq!(back, Ok((m, r)));
    }
    Ok(())
}
