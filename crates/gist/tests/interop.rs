//! Interoperability with NSIS-ka 0.98 and the older C++ GIST, from the exact bytes of every GIST
//! message in the reference captures (`tests/captures/`, extracted from
//! `shared/captures/{nsis-ka,gist}/*.pcap` by `tests/captures/extract.py`; each vector names its
//! pcap and frame).
//!
//! What RFC 5971 requires of them: every message parses — except pathwise's own old Confirms
//! with Stack-Configuration-Data but no Stack-Proposal, which §5.1 does not allow and which now
//! get the Error NSIS-ka sent; NSIS-ka's Responses over an existing MA, which carry no
//! Stack-Proposal, get a Confirm with neither Stack-Proposal nor SCD; NSIS-ka's Error after our
//! Confirm makes the engine restart the handshake and tell the NSLP; a repeated Response gets
//! the Confirm again; our MA-Hellos are keep-alives NSIS-ka accepts (R=0, Hello-ID 0).

use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Received, Transport as IpTransport};
use pathwise_core::time::{Duration, Instant};
use pathwise_gist::nslp::{
    Direction, GistApi, NotificationKind, SendMessage, SiiHandle, TransferAttributes,
};
use pathwise_gist::wire::{
    Body, ErrorClass, GIST_PORT, Message, MsgType, ParseErrorKind, error_code, object_type,
};
use pathwise_gist::{
    Config, GistEngine, GistEvent, MrsKey, QueryingState, StreamInput, StreamOp, StreamTransmit,
};
use std::net::IpAddr;

/// How a captured message travelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    /// D-mode: the UDP payload, magic number first.
    Udp,
    /// C-mode: one message cut from the TCP stream.
    Tcp,
}

/// One GIST message of a reference capture.
#[allow(dead_code)]
struct Vector {
    pcap: &'static str,
    frame: u32,
    src: &'static str,
    dst: &'static str,
    transport: Transport,
    src_port: u16,
    dst_port: u16,
    router_alert: Option<u16>,
    ttl: u8,
    bytes: &'static [u8],
}

mod captures {
    use super::{Transport, Vector};
    include!("captures/vectors.rs");
}
use captures::VECTORS;

impl Vector {
    fn parse(&self) -> Result<Message, pathwise_gist::wire::ParseError> {
        match self.transport {
            Transport::Udp => Message::parse_datagram(self.bytes),
            Transport::Tcp => Message::parse(self.bytes),
        }
    }

    fn emit(&self, m: &Message) -> Vec<u8> {
        match self.transport {
            Transport::Udp => m.to_datagram(),
            Transport::Tcp => {
                let mut v = Vec::new();
                m.emit(&mut v);
                v
            }
        }
    }
}

fn vector(pcap: &str, frame: u32) -> &'static Vector {
    VECTORS
        .iter()
        .find(|v| v.pcap == pcap && v.frame == frame)
        .unwrap_or_else(|| panic!("no vector {pcap} frame {frame}"))
}

fn msg(pcap: &str, frame: u32) -> Message {
    vector(pcap, frame).parse().expect("parses")
}

const THREE: &str = "nsis-ka/cmode-pathwise-queries-3-sessions.pcap";
const REFRESH: &str = "nsis-ka/cmode-refresh-70s.pcap";
const PATHWISE: &str = "10.210.0.1";

/// pathwise's Confirms from before the fix: Stack-Configuration-Data without Stack-Proposal.
fn is_old_pathwise_confirm(v: &Vector) -> bool {
    v.src == PATHWISE
        && v.transport == Transport::Tcp
        && v.bytes.get(6).is_some_and(|b| b & 0x7f == 2)
}

#[test]
fn every_captured_message_parses_and_re_emits_byte_for_byte() {
    assert!(VECTORS.len() > 350, "{} vectors", VECTORS.len());
    let mut rejected = Vec::new();
    for v in VECTORS {
        match v.parse() {
            Ok(m) => assert_eq!(
                v.emit(&m),
                v.bytes,
                "{} frame {} re-emits byte for byte",
                v.pcap,
                v.frame
            ),
            Err(e) => rejected.push((v, e)),
        }
    }
    // The only messages RFC 5971 §5.1 does not allow are pathwise's own old Confirms that
    // carried SCD without SP; the strict parser answers them as NSIS-ka did (frame 17 of the
    // three-session capture): Object Type Error, Missing Object, Stack-Proposal.
    assert!(!rejected.is_empty());
    for (v, e) in &rejected {
        assert!(
            is_old_pathwise_confirm(v),
            "{} frame {}: {e:?}",
            v.pcap,
            v.frame
        );
        assert_eq!(
            e.kind,
            ParseErrorKind::MissingObject(object_type::STACK_PROPOSAL)
        );
        assert_eq!(
            e.kind.error_code(),
            Some((ErrorClass::ProtocolError, error_code::OBJECT_TYPE_ERROR, 2))
        );
    }
    let Body::Error(nsiska) = msg(THREE, 17).body else {
        panic!("frame 17 is NSIS-ka's Error")
    };
    assert_eq!(
        (nsiska.error.code, nsiska.error.subcode),
        (error_code::OBJECT_TYPE_ERROR, 2)
    );
    assert_eq!(
        nsiska.error.original_header.kind(),
        Some(MsgType::Confirm),
        "about our Confirm"
    );
}

#[test]
fn nsiska_messages_keep_the_rules_pathwise_checks() {
    // pathwise's address in each capture (the rest is NSIS-ka; README of shared/captures).
    let pathwise = |pcap: &str| match pcap {
        "nsis-ka/dmode-nsiska-queries.pcap" | "nsis-ka/nsiska-query-rao-42-transit.pcap" => {
            "10.210.1.2"
        }
        "nsis-ka/query-rao-42-then-0.pcap" => "10.210.0.2",
        _ => PATHWISE,
    };
    for v in VECTORS
        .iter()
        .filter(|v| v.pcap.starts_with("nsis-ka/") && v.src != pathwise(v.pcap))
    {
        let Ok(m) = v.parse() else { continue };
        match &m.body {
            // §5.6: an Error's NSLPID is zero; NSIS-ka sends them D-mode with its NLI.
            Body::Error(e) => {
                assert_eq!(m.nslpid, 0);
                assert!(e.nli.is_some());
            }
            // §5.1: a Response over a reused MA carries no Stack-Proposal; one that sets up an
            // MA carries both and a Responder-Cookie.
            Body::Response(r) if v.transport == Transport::Tcp => {
                assert!(r.stack_proposal.is_none() && r.stack_config.is_none());
                assert!(m.r_flag && r.responder_cookie.is_some());
            }
            Body::Query(_) => assert!(m.c_flag && m.r_flag),
            _ => {}
        }
    }
}

// --- One pathwise engine in the place of 10.210.0.1, NSIS-ka's captured answers fed to it. ---

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

struct Node {
    e: GistEngine,
    now: Instant,
}

impl Node {
    fn new() -> Self {
        let cfg = Config {
            seed: 11,
            nslpids: vec![42],
            ..Config::default()
        };
        Node {
            e: GistEngine::on_one_link(cfg, ip(PATHWISE)),
            now: Instant::from_secs(1),
        }
    }

    /// SendMessage for the session of `query` (a captured Query of pathwise), reliable.
    fn send_for(&mut self, query: &Message) {
        let Body::Query(q) = &query.body else {
            panic!("a Query")
        };
        let mut m = SendMessage::new(42, q.session_id, q.mri.clone(), b"nslp".to_vec());
        m.transfer = TransferAttributes {
            reliable: true,
            ..TransferAttributes::default()
        };
        self.e.send_message(self.now, m).expect("accepted");
    }

    /// The Queries the engine sent since the last call.
    fn queries(&mut self) -> Vec<Message> {
        std::iter::from_fn(|| self.e.poll_transmit())
            .map(|t| Message::parse_datagram(&t.payload).unwrap())
            .filter(|m| m.msg_type() == MsgType::Query)
            .collect()
    }

    fn streams(&mut self) -> Vec<StreamTransmit> {
        std::iter::from_fn(|| self.e.poll_stream()).collect()
    }

    /// The messages the engine sent over its MA since the last call.
    fn ma_messages(&mut self) -> Vec<Message> {
        self.streams()
            .into_iter()
            .filter_map(|s| match s.op {
                StreamOp::Send(b) => Some(Message::parse(&b).expect("we send what we parse")),
                _ => None,
            })
            .collect()
    }

    fn events(&mut self) -> Vec<GistEvent> {
        std::iter::from_fn(|| self.e.poll_event()).collect()
    }

    fn udp_from(&mut self, src: &str, bytes: &[u8]) {
        self.e.handle_datagram(
            self.now,
            Received {
                src: ip(src),
                dst: ip(PATHWISE),
                ifindex: IfIndex(1),
                transport: IpTransport::Udp {
                    src_port: GIST_PORT,
                    dst_port: GIST_PORT,
                },
                router_alert: None,
                ttl: 63,
                payload: bytes,
            },
        );
    }

    fn stream_from(&mut self, src: &str, bytes: &[u8]) {
        self.e.handle_stream(
            self.now,
            StreamInput::Data {
                peer: ip(src),
                bytes,
            },
        );
    }

    /// Feed a captured Response answering our last Query: the capture's bytes with the
    /// Query-Cookie object replaced by the one our Query carried (the captured run chose its
    /// own), everything else as NSIS-ka sent it.
    fn answer(&mut self, v: &Vector, our_query: &Message) {
        let mut m = v.parse().expect("parses");
        let (Body::Response(r), Body::Query(q)) = (&mut m.body, &our_query.body) else {
            panic!("a Response to a Query")
        };
        r.query_cookie = q.query_cookie.clone();
        let bytes = v.emit(&m);
        match v.transport {
            Transport::Udp => self.udp_from(v.src, &bytes),
            Transport::Tcp => self.stream_from(v.src, &bytes),
        }
    }

    fn state(&self, query: &Message) -> Option<QueryingState> {
        let Body::Query(q) = &query.body else {
            return None;
        };
        let key = MrsKey::new(&q.mri, 42, q.session_id);
        self.e.routing_state(&key)?.downstream.map(|d| d.0)
    }
}

/// The first session: its Query (frame 1), NSIS-ka's D-mode Response with SP and SCD (frame 2)
/// and the MA it opens. Returns the Confirm sent over the new MA.
fn first_session(n: &mut Node) -> Message {
    let captured = msg(THREE, 1);
    n.send_for(&captured);
    let q = n.queries().pop().expect("a Query");
    n.answer(vector(THREE, 2), &q);
    let open = n.streams();
    assert!(
        open.iter()
            .any(|s| s.op == StreamOp::Open && s.peer == ip("10.210.1.2") && s.port == 30002),
        "{open:?}"
    );
    n.e.handle_stream(
        n.now,
        StreamInput::Connected {
            peer: ip("10.210.1.2"),
        },
    );
    let sent = n.ma_messages();
    assert_eq!(sent[0].msg_type(), MsgType::Confirm);
    sent[0].clone()
}

#[test]
fn first_confirm_on_a_new_ma_echoes_the_proposal_and_repeats_the_hold_time() {
    let mut n = Node::new();
    let c = first_session(&mut n);
    let Body::Confirm(c) = c.body else {
        unreachable!()
    };
    // §4.4.1, §4.4.5: echo the Response's Stack-Proposal, repeat the SCD (MA-Hold-Time only).
    let Body::Response(r) = msg(THREE, 2).body else {
        unreachable!()
    };
    assert_eq!(c.stack_proposal, r.stack_proposal);
    let scd = c
        .stack_config
        .expect("SCD on the first Confirm of a new MA");
    assert!(scd.options.is_empty());
    assert_eq!(c.responder_cookie, r.responder_cookie);
}

#[test]
fn nsiska_sp_less_response_over_the_ma_gets_a_confirm_with_neither_sp_nor_scd() {
    let mut n = Node::new();
    first_session(&mut n);
    // Session 2: our Query (frame 10), NSIS-ka's Response over the MA without SP (frame 11).
    let captured = msg(THREE, 10);
    n.send_for(&captured);
    let q = n.queries().pop().expect("a Query");
    n.answer(vector(THREE, 11), &q);
    let sent = n.ma_messages();
    let Body::Confirm(c) = &sent[0].body else {
        panic!("{sent:?}")
    };
    assert!(c.stack_proposal.is_none(), "§5.1: no SP to echo");
    assert!(c.stack_config.is_none(), "§5.1: no SCD without SP");
    let Body::Response(r) = msg(THREE, 11).body else {
        unreachable!()
    };
    assert_eq!(c.responder_cookie, r.responder_cookie);
    // What NSIS-ka checks: the Confirm is grammatical (it parses strictly, as NSIS-ka's does).
    let mut bytes = Vec::new();
    sent[0].emit(&mut bytes);
    assert!(Message::parse(&bytes).is_ok());
    // The queued NSLP message follows the Confirm over the MA (§4.4.1: Confirm first).
    assert_eq!(sent[1].msg_type(), MsgType::Data);
    assert_eq!(n.state(&captured), Some(QueryingState::Established));
}

#[test]
fn nsiska_error_after_our_confirm_restarts_the_handshake_and_informs_the_nslp() {
    let mut n = Node::new();
    first_session(&mut n);
    let captured = msg(THREE, 10);
    n.send_for(&captured);
    let q = n.queries().pop().unwrap();
    n.answer(vector(THREE, 11), &q);
    n.ma_messages();
    n.events();
    // NSIS-ka's Error about the (old, SP-less) Confirm of this session: frame 17, D-mode, from
    // 10.210.1.2 with its NLI; Object Type Error / Missing Object.
    n.now += Duration::from_millis(1);
    n.udp_from("10.210.1.2", vector(THREE, 17).bytes);
    // RFC 5971 §4.4.6 / §6.2 Rule 3: a new Query at once; queued data waits for it.
    let again = n.queries();
    assert_eq!(again.len(), 1, "the handshake restarts");
    assert_ne!(again[0], q, "with a fresh Query-Cookie");
    assert_eq!(n.state(&captured), Some(QueryingState::AwaitingResponse));
    let Body::Query(cq) = &captured.body else {
        unreachable!()
    };
    // B.4: the NSLP hears Communication Failure with the peer.
    let ev = n.events();
    assert!(
        ev.contains(&GistEvent::Notify(
            pathwise_gist::nslp::NetworkNotification {
                nslpid: 42,
                session_id: cq.session_id,
                mri: cq.mri.clone(),
                kind: NotificationKind::CommunicationFailure {
                    direction: Direction::Downstream,
                    peer: SiiHandle(ip("10.210.1.2")),
                },
            }
        )),
        "{ev:?}"
    );
    assert_eq!(n.e.counters().error_restarts, 1);
    // NSIS-ka's second Error (frame 18, over the MA: No Routing State for the Data that
    // followed the Confirm) is about the same loss: nothing more to do while the new
    // handshake runs.
    n.stream_from("10.210.1.2", vector(THREE, 18).bytes);
    assert!(n.queries().is_empty());
    assert_eq!(
        n.e.counters().dropped("error_while_awaiting_response"),
        1,
        "counted"
    );
    // NSIS-ka answers the new Query over the MA (frame 20, the retry in the capture): the
    // state is back, the NSLP hears Routing Status Change, and the Confirm is grammatical.
    n.answer(vector(THREE, 20), &again[0]);
    let sent = n.ma_messages();
    let Body::Confirm(c) = &sent[0].body else {
        panic!("{sent:?}")
    };
    assert!(c.stack_proposal.is_none() && c.stack_config.is_none());
    assert_eq!(n.state(&captured), Some(QueryingState::Established));
    assert!(n.events().iter().any(|e| matches!(
        e,
        GistEvent::Notify(x) if matches!(x.kind, NotificationKind::RoutingStatusChange { .. })
    )));
}

#[test]
fn an_error_from_someone_else_changes_nothing() {
    let mut n = Node::new();
    first_session(&mut n);
    let captured = msg(THREE, 10);
    n.send_for(&captured);
    let q = n.queries().pop().unwrap();
    n.answer(vector(THREE, 11), &q);
    // NSIS-ka's Error, re-sent by an off-path node with its own NLI address.
    let mut m = msg(THREE, 17);
    if let Body::Error(e) = &mut m.body
        && let Some(nli) = e.nli.as_mut()
    {
        nli.interface_address = ip("10.210.1.9");
    }
    n.udp_from("10.210.1.9", &m.to_datagram());
    assert!(n.queries().is_empty());
    assert_eq!(n.state(&captured), Some(QueryingState::Established));
    assert_eq!(n.e.counters().dropped("error_not_from_peer"), 1);
}

#[test]
fn nsiska_repeated_response_gets_the_confirm_again() {
    // cmode-refresh-70s.pcap: NSIS-ka retransmits its Response (frames 25, 27, 29 repeat frame
    // 20) when it sees no valid Confirm. RFC 5971 §6.2: each is answered with the Confirm.
    let mut n = Node::new();
    let first = msg(REFRESH, 4);
    n.send_for(&first);
    let q = n.queries().pop().unwrap();
    n.answer(vector(REFRESH, 5), &q);
    n.streams();
    n.e.handle_stream(
        n.now,
        StreamInput::Connected {
            peer: ip("10.210.1.2"),
        },
    );
    n.ma_messages();
    // The refresh of that session (frame 19) answered over the MA (frame 20), then repeated.
    let refresh = (0..200)
        .find_map(|_| {
            n.now += Duration::from_secs(1);
            n.e.handle_timeout(n.now);
            n.ma_messages();
            n.queries().pop()
        })
        .expect("a refresh Query");
    let before = n.e.counters().sent(MsgType::Confirm);
    n.answer(vector(REFRESH, 20), &refresh);
    for frame in [25, 27, 29] {
        n.answer(vector(REFRESH, frame), &refresh);
    }
    let confirms: Vec<Message> = n
        .ma_messages()
        .into_iter()
        .filter(|m| m.msg_type() == MsgType::Confirm)
        .collect();
    assert_eq!(confirms.len(), 4, "one per Response");
    assert_eq!(n.e.counters().sent(MsgType::Confirm) - before, 4);
    assert_eq!(n.e.counters().confirm_retransmits, 3);
    for c in &confirms {
        let Body::Confirm(c) = &c.body else {
            unreachable!()
        };
        assert!(c.stack_proposal.is_none() && c.stack_config.is_none());
    }
    assert_eq!(n.e.counters().dropped("response_duplicate"), 0);
}

#[test]
fn our_ma_hello_is_a_keep_alive_nsiska_accepts() {
    // NSIS-ka logged "Mismatching HelloID" for pathwise's R=0 Hellos with IDs 1, 2, 3, …
    // (cmode-refresh-70s.pcap frames 13, 31, 51, …). RFC 5971 §5.2.2: zero unless R=1.
    for v in VECTORS
        .iter()
        .filter(|v| v.pcap == REFRESH && v.src == PATHWISE)
    {
        if let Ok(m) = v.parse()
            && let Body::MaHello(h) = &m.body
        {
            assert!(!m.r_flag && h.hello_id != 0, "the old, wrong keep-alive");
        }
    }
    let mut n = Node::new();
    first_session(&mut n);
    let hold = n.e.config().ma_hold_time;
    n.now += hold.mul_f64(0.8);
    n.e.handle_timeout(n.now);
    let hellos: Vec<Message> = n
        .ma_messages()
        .into_iter()
        .filter(|m| m.msg_type() == MsgType::MaHello)
        .collect();
    assert!(
        !hellos.is_empty(),
        "a keep-alive within 3/4 of the hold time"
    );
    for m in hellos {
        let Body::MaHello(h) = &m.body else {
            unreachable!()
        };
        assert_eq!((m.r_flag, h.hello_id), (false, 0));
        assert!(m.s_flag, "§5.2.1: S is always set in C-mode");
        assert_eq!(m.nslpid, 0);
    }
    // A request (R=1, non-zero ID) from the peer is answered with R=0 and the same ID.
    let req = Message {
        gist_hops: 1,
        nslpid: 0,
        c_flag: false,
        s_flag: true,
        r_flag: true,
        e_flag: false,
        body: Body::MaHello(pathwise_gist::wire::MaHello {
            hello_id: 0x1234,
            unknown: Vec::new(),
        }),
    };
    let mut b = Vec::new();
    req.emit(&mut b);
    n.stream_from("10.210.1.2", &b);
    let reply = n.ma_messages();
    let Body::MaHello(h) = &reply[0].body else {
        panic!("{reply:?}")
    };
    assert_eq!((reply[0].r_flag, h.hello_id), (false, 0x1234));
}
