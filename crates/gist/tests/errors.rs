//! One engine fed by hand: malformed, unknown and misdelivered input is answered with the right
//! GIST Error (RFC 5971 A.4.4) and every drop is counted by reason.

use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Received, Transmit, Transport};
use pathwise_core::time::Instant;
use pathwise_gist::wire::{
    Body, Confirm, Cookie, Data, ErrorObject, GIST_PORT, Message, Mri, MsgType, Nli,
    PathCoupledMri, Query, SessionId, error_code, object_type,
};
use pathwise_gist::{
    Config, CookieMode, GistEngine, GistEvent, InterfaceConfig, StreamInput, StreamOp,
};
use std::net::{IpAddr, Ipv4Addr};

const ME: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
const PEER: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const FAR: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 9, 9));

fn engine(mode: CookieMode) -> GistEngine {
    GistEngine::new(
        Config {
            seed: 5,
            interfaces: vec![InterfaceConfig {
                ifindex: IfIndex(1),
                addrs: vec![ME],
            }],
            nslpids: vec![42],
            cookie_mode: mode,
            ..Config::default()
        },
        Instant::ZERO,
    )
}

fn nli() -> Nli {
    Nli {
        ip_ttl: 64,
        rs_validity_ms: 30_000,
        peer_identity: vec![1; 16].into(),
        interface_address: PEER,
    }
}

fn mri(dst: IpAddr) -> Mri {
    Mri::PathCoupled(PathCoupledMri::flow(PEER, dst))
}

fn query(dst: IpAddr, nslpid: u16, hops: u8) -> Message {
    Message {
        gist_hops: hops,
        nslpid,
        c_flag: true,
        s_flag: true,
        r_flag: true,
        e_flag: false,
        body: Body::Query(Query {
            mri: mri(dst),
            session_id: SessionId([3; 16]),
            nli: nli(),
            query_cookie: Cookie(vec![1, 2, 3, 4].into()),
            ..Query::default()
        }),
    }
}

fn feed(e: &mut GistEngine, payload: &[u8], dst: IpAddr) -> Vec<Transmit> {
    e.handle_datagram(
        Instant::from_secs(1),
        Received {
            src: PEER,
            dst,
            ifindex: IfIndex(1),
            transport: Transport::Udp {
                src_port: GIST_PORT,
                dst_port: GIST_PORT,
            },
            router_alert: (dst != ME).then_some(0),
            ttl: 64,
            payload,
        },
    );
    std::iter::from_fn(|| e.poll_transmit()).collect()
}

/// The Error object of the one Error message sent.
fn the_error(out: &[Transmit]) -> ErrorObject {
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].dst, PEER, "sent to the sender's NLI address");
    let m = Message::parse_datagram(&out[0].payload).unwrap();
    let Body::Error(e) = m.body else {
        panic!("not an Error: {m:?}")
    };
    e.error
}

#[test]
fn query_is_answered_statelessly_with_hash_cookies_and_with_state_with_random_ones() {
    for (mode, states) in [(CookieMode::Hash, 0), (CookieMode::Random, 1)] {
        let mut e = engine(mode);
        let out = feed(&mut e, &query(FAR, 42, 32).to_datagram(), FAR);
        assert_eq!(out.len(), 1);
        let m = Message::parse_datagram(&out[0].payload).unwrap();
        assert_eq!(m.msg_type(), MsgType::Response);
        assert!(m.r_flag, "asks for a Confirm");
        assert_eq!(out[0].dst, PEER);
        assert_eq!(e.state_stats().routing_states, states, "{mode:?}");
        assert!(matches!(e.poll_event(), Some(GistEvent::Recv(r)) if r.routing_state_check));
        // The Confirm echoing the cookie installs the state.
        let Body::Response(r) = m.body else { panic!() };
        let c = Message {
            c_flag: false,
            r_flag: false,
            body: Body::Confirm(Confirm {
                mri: mri(FAR),
                session_id: r.session_id,
                nli: nli(),
                responder_cookie: r.responder_cookie,
                ..Confirm::default()
            }),
            ..query(FAR, 42, 32)
        };
        assert!(feed(&mut e, &c.to_datagram(), ME).is_empty());
        let s = e.state_stats();
        assert_eq!(
            (s.routing_states, s.upstream_established),
            (1, 1),
            "{mode:?}"
        );
    }
}

#[test]
fn forged_confirm_is_refused_with_invalid_cookie() {
    let mut e = engine(CookieMode::Hash);
    let c = Message {
        c_flag: false,
        r_flag: false,
        body: Body::Confirm(Confirm {
            mri: mri(FAR),
            session_id: SessionId([3; 16]),
            nli: nli(),
            responder_cookie: Some(Cookie(vec![0; 28].into())),
            ..Confirm::default()
        }),
        ..query(FAR, 42, 32)
    };
    let err = the_error(&feed(&mut e, &c.to_datagram(), ME));
    assert_eq!((err.code, err.subcode), (error_code::OBJECT_VALUE_ERROR, 4));
    assert_eq!(err.session_id, Some(SessionId([3; 16])));
    assert_eq!(e.state_stats().routing_states, 0);
    assert_eq!(e.counters().cookies_rejected, 1);
}

#[test]
fn malformed_unknown_and_misdelivered_messages_get_errors() {
    let mut e = engine(CookieMode::Hash);
    // Unknown mandatory object: Object Type Error, Unrecognised Object, with its type.
    let mut b = query(FAR, 42, 32).to_datagram();
    b.extend_from_slice(&[0x01, 0x23, 0x00, 0x00]);
    let w = u16::from_be_bytes([b[6], b[7]]) + 1;
    b[6..8].copy_from_slice(&w.to_be_bytes());
    let err = the_error(&feed(&mut e, &b, FAR));
    assert_eq!((err.code, err.subcode), (error_code::OBJECT_TYPE_ERROR, 1));
    assert_eq!(err.object_type_info(), Some(0x123));
    assert!(err.dmode && err.qmode);

    // Wrong length: Common Header Parse Error without MRI or Session ID (A.4.4.1).
    let mut b = query(FAR, 42, 32).to_datagram();
    b.extend_from_slice(&[0; 4]);
    let err = the_error(&feed(&mut e, &b, FAR));
    assert_eq!(
        (err.code, err.subcode),
        (error_code::COMMON_HEADER_PARSE_ERROR, 3)
    );
    assert!(err.mri.is_none() && err.session_id.is_none());

    // GIST hop count zero.
    let err = the_error(&feed(&mut e, &query(FAR, 42, 0).to_datagram(), FAR));
    assert_eq!(err.code, error_code::HOP_LIMIT_EXCEEDED);

    // A Query for an NSLP not served here, at the flow's end.
    let err = the_error(&feed(&mut e, &query(ME, 7, 32).to_datagram(), ME));
    assert_eq!(err.code, error_code::ENDPOINT_FOUND);
    // Directly addressed Data for an unknown NSLP.
    let data = |nslpid| Message {
        c_flag: false,
        r_flag: false,
        nslpid,
        body: Body::Data(Data {
            mri: mri(FAR),
            session_id: SessionId([4; 16]),
            nli: Some(nli()),
            nslp_data: vec![1, 2, 3, 4],
            ..Data::default()
        }),
        ..query(FAR, 42, 32)
    };
    let err = the_error(&feed(&mut e, &data(7).to_datagram(), ME));
    assert_eq!(err.code, error_code::UNKNOWN_NSLPID);
    // D-mode Data with no routing state.
    let err = the_error(&feed(&mut e, &data(42).to_datagram(), ME));
    assert_eq!(err.code, error_code::NO_ROUTING_STATE);
    assert_eq!(err.mri, Some(mri(FAR)));

    // Not GIST at all: dropped silently, but counted.
    assert!(feed(&mut e, b"hello, world", ME).is_empty());
    let c = e.counters();
    for reason in [
        "bad_magic",
        "unrecognised_object",
        "incorrect_length",
        "hop_limit",
        "unknown_nslpid",
        "data_no_state",
    ] {
        assert!(c.dropped(reason) >= 1, "{reason}: {:?}", c.drops);
    }
    assert_eq!(c.errors_sent.values().sum::<u64>(), 6);
}

#[test]
fn a_query_over_an_ma_is_incorrect_encapsulation() {
    let mut e = engine(CookieMode::Hash);
    let now = Instant::from_secs(1);
    e.handle_stream(now, StreamInput::Accepted { peer: PEER });
    let mut bytes = Vec::new();
    query(FAR, 42, 32).emit(&mut bytes);
    e.handle_stream(
        now,
        StreamInput::Data {
            peer: PEER,
            bytes: &bytes,
        },
    );
    let st = e.poll_stream().expect("an answer on the stream");
    let StreamOp::Send(b) = st.op else { panic!() };
    let m = Message::parse(&b).unwrap();
    let Body::Error(err) = m.body else { panic!() };
    assert_eq!(err.error.code, error_code::INCORRECT_ENCAPSULATION);
    assert!(!err.error.dmode);
    // A message cut across two reads is reassembled.
    let mut half = Vec::new();
    query(FAR, 42, 32).emit(&mut half);
    e.handle_stream(
        now,
        StreamInput::Data {
            peer: PEER,
            bytes: &half[..10],
        },
    );
    assert!(e.poll_stream().is_none());
    e.handle_stream(
        now,
        StreamInput::Data {
            peer: PEER,
            bytes: &half[10..],
        },
    );
    assert!(e.poll_stream().is_some());
    let _ = object_type::MRI;
}
