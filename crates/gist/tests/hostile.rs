//! Hostile input from an attacker on the link, fed by hand to one engine: MRIs naming loopback,
//! unspecified, multicast or own addresses (no forwarding loop), replayed and over-long-lived
//! Confirms, a second stream claiming a peer's association, garbage on a stream, and transit
//! datagrams with an exhausted TTL. Each refusal is counted by reason.

use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Received, Transmit, Transport};
use pathwise_core::time::{Duration, Instant};
use pathwise_gist::nslp::ping::{NSLPID as PING, PingConfig, PingKind, PingMessage, PingNslp};
use pathwise_gist::nslp::{ApiError, GistApi, Nslp, RecvMessage, RoutingDecision, SendMessage};
use pathwise_gist::wire::{
    Body, Confirm, Cookie, Data, GIST_PORT, MaHello, Message, Mri, MsgType, Nli, PathCoupledMri,
    Query, SessionId, error_code,
};
use pathwise_gist::{
    Config, CookieMode, GistEngine, InterfaceConfig, StreamInput, StreamOp, StreamVetting,
};
use std::any::Any;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const ME: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
const PEER: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const FAR: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 9, 9));
const ME6: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2));
const PEER6: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1));

fn engine_at(me: IpAddr, mode: CookieMode) -> GistEngine {
    let mut e = GistEngine::new(
        Config {
            seed: 9,
            interfaces: vec![InterfaceConfig {
                ifindex: IfIndex(1),
                addrs: vec![me],
            }],
            nslpids: vec![42],
            cookie_mode: mode,
            ..Config::default()
        },
        Instant::ZERO,
    );
    e.register(Box::new(PingNslp::new(PingConfig::default())));
    e
}

fn nli(addr: IpAddr) -> Nli {
    Nli {
        ip_ttl: 64,
        rs_validity_ms: 30_000,
        peer_identity: vec![1; 16].into(),
        interface_address: addr,
    }
}

fn ping_request() -> Vec<u8> {
    PingMessage {
        kind: PingKind::Request,
        seq: 1,
        sent_at: Instant::ZERO,
        hops: Vec::new(),
    }
    .emit()
}

fn query(src: IpAddr, dst: IpAddr, nslpid: u16, sid: u8) -> Message {
    Message {
        gist_hops: 32,
        nslpid,
        c_flag: true,
        s_flag: true,
        r_flag: true,
        e_flag: false,
        body: Body::Query(Query {
            mri: Mri::PathCoupled(PathCoupledMri::flow(src, dst)),
            session_id: SessionId([sid; 16]),
            nli: nli(src),
            query_cookie: Cookie(vec![1, 2, 3, 4].into()),
            nslp_data: Some(ping_request()),
            ..Query::default()
        }),
    }
}

fn qmode_data(src: IpAddr, dst: IpAddr) -> Message {
    Message {
        gist_hops: 32,
        nslpid: PING,
        c_flag: true,
        s_flag: true,
        r_flag: false,
        e_flag: false,
        body: Body::Data(Data {
            mri: Mri::PathCoupled(PathCoupledMri::flow(src, dst)),
            session_id: SessionId([5; 16]),
            nli: Some(nli(src)),
            nslp_data: ping_request(),
            ..Data::default()
        }),
    }
}

fn rx<'a>(src: IpAddr, dst: IpAddr, ttl: u8, ra: bool, payload: &'a [u8]) -> Received<'a> {
    Received {
        src,
        dst,
        ifindex: IfIndex(1),
        transport: Transport::Udp {
            src_port: GIST_PORT,
            dst_port: GIST_PORT,
        },
        router_alert: ra.then_some(0),
        ttl,
        payload,
    }
}

fn feed_at(
    e: &mut GistEngine,
    now: Instant,
    src: IpAddr,
    dst: IpAddr,
    m: &Message,
) -> Vec<Transmit> {
    let b = m.to_datagram();
    e.handle_datagram(now, rx(src, dst, 64, dst != ME && dst != ME6, &b));
    std::iter::from_fn(|| e.poll_transmit()).collect()
}

fn feed(e: &mut GistEngine, src: IpAddr, dst: IpAddr, m: &Message) -> Vec<Transmit> {
    feed_at(e, Instant::from_secs(1), src, dst, m)
}

/// A transmit that would reach this node again: loopback, unspecified, multicast or own.
fn loops(t: &Transmit, me: IpAddr) -> bool {
    t.dst.is_loopback() || t.dst.is_unspecified() || t.dst.is_multicast() || t.dst == me
}

#[test]
fn mri_towards_loopback_unspecified_or_multicast_is_refused_with_mri_validation_failure() {
    let v4: [(IpAddr, &str, u8); 5] = [
        ("127.0.0.1".parse().unwrap(), "mri_loopback", 2),
        ("127.9.8.7".parse().unwrap(), "mri_loopback", 2),
        ("0.0.0.0".parse().unwrap(), "mri_unspecified", 0),
        ("224.0.0.9".parse().unwrap(), "mri_multicast", 0),
        ("255.255.255.255".parse().unwrap(), "mri_broadcast", 0),
    ];
    let v6: [(IpAddr, &str, u8); 3] = [
        ("::1".parse().unwrap(), "mri_loopback", 2),
        ("::".parse().unwrap(), "mri_unspecified", 0),
        ("ff02::1".parse().unwrap(), "mri_multicast", 0),
    ];
    for (me, peer, cases) in [(ME, PEER, &v4[..]), (ME6, PEER6, &v6[..])] {
        for &(dst, reason, subcode) in cases {
            for msg in [query(peer, dst, PING, 3), qmode_data(peer, dst)] {
                let mut e = engine_at(me, CookieMode::Hash);
                // Intercepted in transit (IP destination = the MRI's), as Q-mode is sent.
                let out = feed(&mut e, peer, dst, &msg);
                assert_eq!(out.len(), 1, "{dst} {:?}: {out:?}", msg.msg_type());
                assert_eq!(out[0].dst, peer, "the Error goes to the sender's NLI");
                let m = Message::parse_datagram(&out[0].payload).unwrap();
                let Body::Error(err) = m.body else {
                    panic!("not an Error: {m:?}")
                };
                assert_eq!(
                    (err.error.code, err.error.subcode),
                    (error_code::MRI_VALIDATION_FAILURE, subcode),
                    "{dst}"
                );
                assert_eq!(e.counters().dropped(reason), 1, "{dst}");
                assert_eq!(e.state_stats().routing_states, 0);
                assert!(e.poll_event().is_none(), "nothing reached an NSLP");
            }
        }
    }
}

/// The daemon's loopback: every transmit towards this node comes straight back in. With the
/// attack's MRI the node used to send itself each ping about 600 times.
#[test]
fn no_message_ever_loops_back_to_the_node() {
    for (me, peer) in [(ME, PEER), (ME6, PEER6)] {
        let lo: IpAddr = if me.is_ipv4() {
            Ipv4Addr::LOCALHOST.into()
        } else {
            Ipv6Addr::LOCALHOST.into()
        };
        for dst in [lo, me] {
            let mut e = engine_at(me, CookieMode::Hash);
            let mut inflight = feed(&mut e, peer, dst, &query(peer, dst, PING, 3));
            inflight.extend(feed(&mut e, peer, dst, &qmode_data(peer, dst)));
            let mut sent = 0;
            for round in 0..100 {
                let next: Vec<Transmit> = std::mem::take(&mut inflight);
                for t in &next {
                    sent += 1;
                    if loops(t, me) {
                        let now = Instant::from_secs(2 + round);
                        e.handle_datagram(now, rx(me, t.dst, t.ttl, true, &t.payload));
                    }
                }
                inflight.extend(std::iter::from_fn(|| e.poll_transmit()));
                if inflight.is_empty() {
                    break;
                }
            }
            assert!(sent <= 4, "{dst}: {sent} messages");
            assert!(
                !std::iter::from_fn(|| e.poll_transmit()).any(|t| loops(&t, me)),
                "{dst}"
            );
        }
    }
}

#[test]
fn messages_from_this_node_or_with_its_nli_are_dropped() {
    let mut e = engine_at(ME, CookieMode::Hash);
    // IP source is this node: it came back.
    assert!(feed(&mut e, ME, FAR, &query(PEER, FAR, PING, 3)).is_empty());
    assert_eq!(e.counters().dropped("from_self"), 1);
    let lo: IpAddr = Ipv4Addr::LOCALHOST.into();
    assert!(feed(&mut e, lo, lo, &query(PEER, FAR, PING, 3)).is_empty());
    assert_eq!(e.counters().dropped("from_self"), 2);
    // Our own NLI (the Peer Identity this node puts in its messages).
    let mut q = query(PEER, FAR, PING, 3);
    if let Body::Query(q) = &mut q.body {
        q.nli.peer_identity = e.peer_identity().into();
    }
    assert!(feed(&mut e, PEER, FAR, &q).is_empty());
    assert_eq!(e.counters().dropped("own_message"), 1);
    // An NLI address on loopback: nothing could be answered.
    let mut q = query(PEER, FAR, PING, 3);
    if let Body::Query(q) = &mut q.body {
        q.nli.interface_address = lo;
    }
    assert!(feed(&mut e, PEER, FAR, &q).is_empty());
    assert_eq!(e.counters().dropped("nli_address_invalid"), 1);
    // A flow towards this node is fine: the Ping NSLP answers in the Response, to the peer.
    let out = feed(&mut e, PEER, ME, &query(PEER, ME, PING, 4));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].dst, PEER);
    assert_eq!(
        Message::parse_datagram(&out[0].payload).unwrap().msg_type(),
        MsgType::Response
    );
}

#[test]
fn the_api_refuses_flows_that_cannot_be_routed_and_a_zero_hop_count() {
    let mut e = engine_at(ME, CookieMode::Hash);
    let now = Instant::from_secs(1);
    for dst in ["127.0.0.1", "0.0.0.0", "224.1.1.1", "10.0.0.2"] {
        let mri = Mri::PathCoupled(PathCoupledMri::flow(ME, dst.parse().unwrap()));
        let r = e.send_message(
            now,
            SendMessage::new(42, SessionId([1; 16]), mri, vec![0; 4]),
        );
        assert_eq!(r, Err(ApiError::InvalidMri), "{dst}");
    }
    // RFC 5971 A.3.1.1: ports without the protocol (as a user asking for a port alone would
    // have it), an SPI with ports, a flow label in IPv4 — a peer would answer each with an
    // Object Value Error, so none is sent.
    let flows = [
        PathCoupledMri {
            dest_port: Some(5001),
            ..PathCoupledMri::flow(ME, FAR)
        },
        PathCoupledMri {
            protocol: Some(17),
            spi: Some(7),
            source_port: Some(1),
            ..PathCoupledMri::flow(ME, FAR)
        },
        PathCoupledMri {
            flow_label: Some(1),
            ..PathCoupledMri::flow(ME, FAR)
        },
    ];
    for flow in flows {
        let mri = Mri::PathCoupled(flow);
        let r = e.send_message(
            now,
            SendMessage::new(42, SessionId([1; 16]), mri, vec![0; 4]),
        );
        assert_eq!(r, Err(ApiError::InvalidMri), "{flow:?}");
    }
    assert_eq!(e.counters().dropped("api_invalid_mri"), 4 + 3);
    let mri = Mri::PathCoupled(PathCoupledMri::flow(ME, FAR));
    let mut s = SendMessage::new(42, SessionId([1; 16]), mri, vec![0; 4]);
    s.gist_hops = Some(0);
    assert_eq!(e.send_message(now, s), Err(ApiError::ZeroHopCount));
    assert!(e.poll_transmit().is_none());
}

/// A Query, its Response's cookie, and the Confirm echoing it.
fn handshake(e: &mut GistEngine, now: Instant, sid: u8, validity_ms: u32) -> Message {
    let mut q = query(PEER, FAR, 42, sid);
    if let Body::Query(q) = &mut q.body {
        q.nli.rs_validity_ms = validity_ms;
        q.nslp_data = None;
    }
    let out = feed_at(e, now, PEER, FAR, &q);
    while e.poll_event().is_some() {}
    let m = Message::parse_datagram(&out[0].payload).unwrap();
    let Body::Response(r) = m.body else {
        panic!("{m:?}")
    };
    let Body::Query(q) = q.body else { panic!() };
    Message {
        c_flag: false,
        r_flag: false,
        s_flag: true,
        e_flag: false,
        gist_hops: 32,
        nslpid: 42,
        body: Body::Confirm(Confirm {
            mri: q.mri,
            session_id: q.session_id,
            nli: q.nli,
            responder_cookie: r.responder_cookie,
            ..Confirm::default()
        }),
    }
}

fn with_sid(c: &Message, sid: [u8; 16]) -> Message {
    let mut c = c.clone();
    if let Body::Confirm(x) = &mut c.body {
        x.session_id = SessionId(sid);
    }
    c
}

#[test]
fn a_replayed_confirm_with_fresh_session_ids_installs_nothing() {
    let mut e = engine_at(ME, CookieMode::Hash);
    let t = Instant::from_secs(1);
    let c = handshake(&mut e, t, 3, 30_000);
    assert!(feed_at(&mut e, t, PEER, ME, &c).is_empty());
    assert_eq!(e.state_stats().upstream_established, 1);
    for i in 0..2000u32 {
        let mut sid = [0u8; 16];
        sid[..4].copy_from_slice(&i.to_be_bytes());
        sid[15] = 0xee;
        feed_at(&mut e, t, PEER, ME, &with_sid(&c, sid));
    }
    assert_eq!(e.state_stats().routing_states, 1);
    assert_eq!(e.counters().dropped("cookie_mismatch"), 2000);
    assert_eq!(e.counters().cookies_rejected, 2000);
    // The same Confirm with another validity: refused too.
    let mut long = c.clone();
    if let Body::Confirm(x) = &mut long.body {
        x.nli.rs_validity_ms = u32::MAX;
    }
    feed_at(&mut e, t, PEER, ME, &long);
    assert_eq!(e.counters().dropped("cookie_mismatch"), 2001);
}

#[test]
fn a_huge_validity_is_capped_at_the_maximum_state_lifetime() {
    let mut e = engine_at(ME, CookieMode::Hash);
    let max = e.config().max_state_lifetime;
    assert_eq!(max, Duration::from_secs(900));
    let t = Instant::from_secs(1);
    let c = handshake(&mut e, t, 3, u32::MAX);
    assert!(feed_at(&mut e, t, PEER, ME, &c).is_empty());
    assert_eq!(e.state_stats().upstream_established, 1);
    assert_eq!(e.counters().validity_capped, 1);
    e.handle_timeout(t + (max - Duration::from_secs(1)));
    assert_eq!(e.state_stats().upstream_established, 1);
    e.handle_timeout(t + max + Duration::from_secs(1));
    assert_eq!(
        e.state_stats().routing_states,
        0,
        "gone after the cap, not 49.7 days"
    );
}

#[test]
fn a_cookie_from_two_rotations_ago_is_refused() {
    let mut e = engine_at(ME, CookieMode::Hash);
    let rot = e.config().secret_rotation;
    let t = Instant::from_secs(1);
    let c = handshake(&mut e, t, 3, 30_000);
    // One rotation later: still good (current or previous secret).
    let c1 = handshake(&mut e, t, 4, 30_000);
    assert!(feed_at(&mut e, t + rot, PEER, ME, &c1).is_empty());
    assert_eq!(e.state_stats().upstream_established, 1);
    let out = feed_at(&mut e, t + rot * 2, PEER, ME, &c);
    assert_eq!(out.len(), 1, "Invalid Cookie");
    assert_eq!(e.counters().dropped("cookie_expired"), 1);
    assert_eq!(e.state_stats().upstream_established, 1);
}

fn stream_ops(e: &mut GistEngine) -> Vec<StreamOp> {
    std::iter::from_fn(|| e.poll_stream())
        .map(|s| s.op)
        .collect()
}

#[test]
fn garbage_on_a_stream_gets_one_error_and_the_stream_closed() {
    let mut e = engine_at(ME, CookieMode::Hash);
    let t = Instant::from_secs(1);
    e.handle_stream(t, StreamInput::Accepted { peer: PEER });
    let zeros = vec![0u8; 64 * 1024];
    for chunk in zeros.chunks(16 * 1024) {
        e.handle_stream(
            t,
            StreamInput::Data {
                peer: PEER,
                bytes: chunk,
            },
        );
    }
    let ops = stream_ops(&mut e);
    assert_eq!(ops.len(), 2, "{ops:?}");
    let StreamOp::Send(b) = &ops[0] else {
        panic!("{ops:?}")
    };
    let m = Message::parse(b).unwrap();
    let Body::Error(err) = m.body else { panic!() };
    assert_eq!(err.error.code, error_code::COMMON_HEADER_PARSE_ERROR);
    assert_eq!(ops[1], StreamOp::Close);
    assert_eq!(e.counters().sent(MsgType::Error), 1);
    assert_eq!(e.counters().streams_refused, 1);
    assert_eq!(e.state_stats().mas, 0);
    // The rest of what the attacker sent on that stream finds no association: counted.
    assert!(e.counters().dropped("stream_unknown_peer") >= 3);

    // A length field beyond the largest message accepted: refused at once, no Error.
    e.handle_stream(t, StreamInput::Accepted { peer: PEER });
    e.handle_stream(
        t,
        StreamInput::Data {
            peer: PEER,
            bytes: &[0x01, 0x20, 0xff, 0xff, 0, 42, 0, 0],
        },
    );
    assert_eq!(stream_ops(&mut e), vec![StreamOp::Close]);
    assert_eq!(e.counters().dropped("stream_message_too_large"), 1);

    // Half a message when the stream closes: counted.
    e.handle_stream(t, StreamInput::Accepted { peer: PEER });
    let hello = Message {
        gist_hops: 1,
        nslpid: 0,
        c_flag: false,
        s_flag: true,
        r_flag: false,
        e_flag: false,
        body: Body::MaHello(MaHello {
            hello_id: 0,
            unknown: Vec::new(),
        }),
    };
    let mut b = Vec::new();
    hello.emit(&mut b);
    e.handle_stream(
        t,
        StreamInput::Data {
            peer: PEER,
            bytes: &b[..b.len() - 2],
        },
    );
    e.handle_stream(t, StreamInput::Closed { peer: PEER });
    assert_eq!(e.counters().dropped("stream_partial_message"), 1);
}

#[test]
fn a_second_stream_replaces_an_association_only_with_a_valid_confirm_from_the_peer() {
    let mut e = engine_at(ME, CookieMode::Hash);
    let t = Instant::from_secs(1);
    // A Confirm with this node's cookie, as the peer would send first on a new stream.
    let good = handshake(&mut e, t, 3, 30_000);
    e.handle_stream(t, StreamInput::Accepted { peer: PEER });
    let tcp = pathwise_gist::MaTransport::Tcp;
    let emit = |m: &Message| {
        let mut b = Vec::new();
        m.emit(&mut b);
        b
    };
    // Garbage, an MA-Hello, a Confirm with a forged cookie, a Confirm naming another peer.
    assert_eq!(
        e.vet_replacement_stream(t, PEER, tcp, &[0; 8]),
        StreamVetting::Refuse("ma_takeover_malformed")
    );
    assert_eq!(
        e.vet_replacement_stream(t, PEER, tcp, &[1, 0, 0]),
        StreamVetting::NeedMore
    );
    let hello = Message {
        gist_hops: 1,
        nslpid: 0,
        c_flag: false,
        s_flag: true,
        r_flag: false,
        e_flag: false,
        body: Body::MaHello(MaHello {
            hello_id: 0,
            unknown: Vec::new(),
        }),
    };
    assert_eq!(
        e.vet_replacement_stream(t, PEER, tcp, &emit(&hello)),
        StreamVetting::Refuse("ma_takeover_not_confirm")
    );
    let forged = with_sid(&good, [9; 16]);
    assert_eq!(
        e.vet_replacement_stream(t, PEER, tcp, &emit(&forged)),
        StreamVetting::Refuse("ma_takeover_bad_cookie")
    );
    let other: IpAddr = "10.0.0.7".parse().unwrap();
    e.handle_stream(t, StreamInput::Accepted { peer: other });
    assert_eq!(
        e.vet_replacement_stream(t, other, tcp, &emit(&good)),
        StreamVetting::Refuse("ma_takeover_wrong_peer")
    );
    assert_eq!(e.counters().ma_takeovers_refused, 4);
    assert_eq!(
        e.vet_replacement_stream(t, PEER, tcp, &emit(&good)),
        StreamVetting::Accept
    );
    assert_eq!(e.counters().ma_takeovers, 1);
    // Vetting installs nothing.
    assert_eq!(e.state_stats().routing_states, 0);
}

/// An NSLP that never peers: its Queries are forwarded.
struct Passer;

impl Nslp for Passer {
    fn nslpid(&self) -> u16 {
        77
    }
    fn recv_message(&mut self, _: Instant, _: &mut dyn GistApi, _: RecvMessage) -> RoutingDecision {
        RoutingDecision::Decline
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

#[test]
fn transit_queries_with_ttl_zero_or_one_are_counted_not_lost() {
    let mut e = engine_at(ME, CookieMode::Hash);
    e.register(Box::new(Passer));
    let q = query(PEER, FAR, 77, 3);
    let b = q.to_datagram();
    let t = Instant::from_secs(1);
    for ttl in [0, 1] {
        e.handle_datagram(t, rx(PEER, FAR, ttl, true, &b));
    }
    assert!(e.poll_transmit().is_none());
    assert_eq!(e.counters().dropped("forward_ttl_expired"), 2);
    let mut q1 = q.clone();
    q1.gist_hops = 1;
    e.handle_datagram(t, rx(PEER, FAR, 64, true, &q1.to_datagram()));
    assert_eq!(e.counters().dropped("forward_hop_limit"), 1);
    e.handle_datagram(t, rx(PEER, FAR, 64, true, &b));
    let out: Vec<Transmit> = std::iter::from_fn(|| e.poll_transmit()).collect();
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].dst, out[0].ttl), (FAR, 63));
    assert_eq!(e.counters().queries_forwarded, 1);
}
