//! Every GIST message in the reference captures (another, independent GIST implementation;
//! `tests/data/README`) parses, and re-emits to exactly the captured bytes; the handshakes'
//! messages are the byte vectors of `pathwise_gist::wire::vectors`.
//!
//! A tiny pcap reader (classic libpcap format, Ethernet link type) pulls out IPv4 UDP payloads
//! (D-mode, each beginning with the magic number) and TCP payloads (C-mode: a byte stream per
//! direction, cut into messages by the common header's length).

use pathwise_gist::wire::vectors::CAPTURES;
use pathwise_gist::wire::{Body, GIST_PORT, MAGIC, Message, Mri, MsgType, frame_len, ma_protocol};
use std::collections::BTreeMap;

#[derive(Debug)]
enum Payload {
    Udp {
        src_port: u16,
        dst_port: u16,
        router_alert: bool,
        bytes: Vec<u8>,
    },
    Tcp {
        src: [u8; 4],
        src_port: u16,
        dst_port: u16,
        seq: u32,
        bytes: Vec<u8>,
    },
}

/// IPv4 UDP and TCP payloads of a classic pcap file with Ethernet framing.
fn read_pcap(path: &str) -> Vec<Payload> {
    let full = format!("{}/tests/data/{path}", env!("CARGO_MANIFEST_DIR"));
    let d = std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"));
    assert_eq!(
        &d[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "little-endian microsecond pcap"
    );
    let linktype = u32::from_le_bytes(d[20..24].try_into().unwrap());
    assert_eq!(linktype, 1, "Ethernet");
    let mut out = Vec::new();
    let mut off = 24;
    while off + 16 <= d.len() {
        let incl = u32::from_le_bytes(d[off + 8..off + 12].try_into().unwrap()) as usize;
        let frame = &d[off + 16..off + 16 + incl];
        off += 16 + incl;
        if frame.len() < 34 || frame[12..14] != [0x08, 0x00] {
            continue; // not IPv4
        }
        let ip = &frame[14..];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let ip = &ip[..total];
        let options = &ip[20..ihl];
        let router_alert = options.windows(2).any(|w| w == [0x94, 0x04]);
        let l4 = &ip[ihl..];
        match ip[9] {
            17 => out.push(Payload::Udp {
                src_port: u16::from_be_bytes([l4[0], l4[1]]),
                dst_port: u16::from_be_bytes([l4[2], l4[3]]),
                router_alert,
                bytes: l4[8..].to_vec(),
            }),
            6 => {
                let thl = usize::from(l4[12] >> 4) * 4;
                out.push(Payload::Tcp {
                    src: ip[12..16].try_into().unwrap(),
                    src_port: u16::from_be_bytes([l4[0], l4[1]]),
                    dst_port: u16::from_be_bytes([l4[2], l4[3]]),
                    seq: u32::from_be_bytes(l4[4..8].try_into().unwrap()),
                    bytes: l4[thl..].to_vec(),
                })
            }
            _ => {}
        }
    }
    out
}

/// Parses a D-mode payload, checks the byte-exact round trip, returns the message.
fn dmode(bytes: &[u8]) -> Message {
    assert_eq!(&bytes[..4], &MAGIC.to_be_bytes());
    let m = Message::parse_datagram(bytes).unwrap_or_else(|e| panic!("{e:?}: {bytes:02x?}"));
    assert_eq!(m.to_datagram(), bytes, "re-emits byte for byte");
    m
}

/// One TCP direction: source address and the two ports.
type Direction = ([u8; 4], u16, u16);
/// A TCP segment: sequence number and payload.
type Segment = (u32, Vec<u8>);

/// Cuts each TCP direction's stream into messages.
fn stream_messages(payloads: &[Payload]) -> Vec<Vec<u8>> {
    let mut streams: BTreeMap<Direction, Vec<Segment>> = BTreeMap::new();
    for p in payloads {
        if let Payload::Tcp {
            src,
            src_port,
            dst_port,
            seq,
            bytes,
        } = p
            && !bytes.is_empty()
        {
            streams
                .entry((*src, *src_port, *dst_port))
                .or_default()
                .push((*seq, bytes.clone()));
        }
    }
    let mut out = Vec::new();
    for (_, mut segs) in streams {
        segs.sort_by_key(|s| s.0);
        let stream: Vec<u8> = segs.into_iter().flat_map(|s| s.1).collect();
        let mut rest = &stream[..];
        while !rest.is_empty() {
            let n = frame_len(rest).expect("a header");
            out.push(rest[..n].to_vec());
            rest = &rest[n..];
        }
    }
    out
}

/// Parses each C-mode message and checks the byte-exact round trip.
fn cmode(payloads: &[Payload]) -> Vec<Message> {
    stream_messages(payloads)
        .iter()
        .map(|bytes| {
            let m = Message::parse(bytes).unwrap_or_else(|e| panic!("{e:?}"));
            let mut again = Vec::new();
            m.emit(&mut again);
            assert_eq!(&again, bytes);
            m
        })
        .collect()
}

fn udp(payloads: &[Payload]) -> Vec<(bool, Message)> {
    payloads
        .iter()
        .filter_map(|p| match p {
            Payload::Udp {
                src_port,
                dst_port,
                router_alert,
                bytes,
            } => {
                assert_eq!((*src_port, *dst_port), (GIST_PORT, GIST_PORT));
                Some((*router_alert, dmode(bytes)))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn dmode_handshake_parses_and_round_trips() {
    let msgs = udp(&read_pcap("gist-dmode-handshake.pcap"));
    let types: Vec<MsgType> = msgs.iter().map(|(_, m)| m.msg_type()).collect();
    use MsgType::*;
    assert_eq!(
        types,
        [Query, Response, Confirm, Data, Query, Response, Confirm]
    );
    // Only Queries carry router alert (Q-mode, RFC 5971 §5.3.2) and the C flag.
    for (ra, m) in &msgs {
        assert_eq!(*ra, m.msg_type() == Query);
        assert_eq!(m.c_flag, m.msg_type() == Query);
        assert_eq!(m.nslpid, 42);
        assert!(m.s_flag);
    }
    let Body::Query(q) = &msgs[0].1.body else {
        unreachable!()
    };
    assert_eq!(msgs[0].1.gist_hops, 32);
    assert!(msgs[0].1.r_flag);
    let Mri::PathCoupled(pc) = &q.mri else {
        panic!("path-coupled")
    };
    assert_eq!(pc.source.to_string(), "10.77.0.1");
    assert_eq!(pc.destination.to_string(), "10.77.0.2");
    assert_eq!((pc.source_prefix, pc.dest_prefix), (32, 32));
    assert!(!pc.upstream);
    assert_eq!(q.nli.ip_ttl, 64);
    assert_eq!(q.nli.rs_validity_ms, 30_000);
    assert_eq!(q.nli.peer_identity.len(), 16);
    assert_eq!(q.query_cookie.0.len(), 4);
    let Body::Response(r) = &msgs[1].1.body else {
        unreachable!()
    };
    assert!(msgs[1].1.r_flag, "the Response asks for a Confirm");
    assert!(r.mri.is_upstream(), "the Response's MRI is inverted");
    assert_eq!(r.query_cookie, q.query_cookie);
    let rc = r.responder_cookie.clone().expect("responder cookie");
    let Body::Confirm(c) = &msgs[2].1.body else {
        unreachable!()
    };
    assert_eq!(c.responder_cookie.as_ref(), Some(&rc));
    assert!(!c.mri.is_upstream());
    let Body::Data(d) = &msgs[3].1.body else {
        unreachable!()
    };
    assert_eq!(d.nslp_data, b"Hello World!");
    assert!(d.nli.is_some());
}

#[test]
fn cmode_handshake_parses_and_round_trips() {
    let payloads = read_pcap("gist-cmode-handshake.pcap");
    let dm = udp(&payloads);
    assert_eq!(dm.len(), 2);
    let Body::Query(q) = &dm[0].1.body else {
        panic!()
    };
    let sp = q.stack_proposal.as_ref().expect("stack proposal");
    assert_eq!(
        sp.profiles,
        vec![
            vec![ma_protocol::TCP],
            vec![ma_protocol::TLS, ma_protocol::TCP]
        ]
    );
    let scd = q.stack_config.as_ref().expect("SCD");
    assert_eq!(scd.ma_hold_time_ms, 180_000);
    assert_eq!(scd.options.len(), 2);
    assert!(scd.options.iter().all(|o| o.data.is_empty()));
    let Body::Response(r) = &dm[1].1.body else {
        panic!()
    };
    let scd = r.stack_config.as_ref().expect("SCD");
    assert_eq!(
        scd.find(ma_protocol::TCP).and_then(|o| o.port()),
        Some(30000)
    );
    assert_eq!(scd.options[1].port(), Some(30001));
    let cm = cmode(&payloads);
    let types: Vec<MsgType> = cm.iter().map(Message::msg_type).collect();
    assert_eq!(types, [MsgType::Confirm, MsgType::Data]);
    let Body::Confirm(c) = &cm[0].body else {
        panic!()
    };
    assert!(c.stack_proposal.is_some() && c.stack_config.is_some());
    let Body::Data(d) = &cm[1].body else { panic!() };
    assert!(d.nli.is_none(), "C-mode Data carries no NLI");
    assert_eq!(d.nslp_data, b"Hello World!");
}

#[test]
fn two_hundred_session_burst_parses() {
    let msgs = udp(&read_pcap("gist-dmode-200sessions.pcap"));
    assert!(msgs.len() >= 200, "{} messages", msgs.len());
    let mut sessions = std::collections::BTreeSet::new();
    for (ra, m) in &msgs {
        assert!(ra);
        assert_eq!(m.msg_type(), MsgType::Query);
        sessions.insert(m.session_id().unwrap());
    }
    // 200 sessions in the burst plus the one set up before it; the rest are retransmissions.
    assert_eq!(sessions.len(), 201);
}

#[test]
fn capture_vectors_are_the_captured_messages() {
    // Datagrams first, then the MA's stream, each message once (the refresh handshake's
    // Confirm repeats the first byte for byte).
    let mut captured: Vec<Vec<u8>> = Vec::new();
    for file in ["gist-dmode-handshake.pcap", "gist-cmode-handshake.pcap"] {
        let payloads = read_pcap(file);
        let datagrams = payloads.iter().filter_map(|p| match p {
            Payload::Udp { bytes, .. } => Some(bytes.clone()),
            Payload::Tcp { .. } => None,
        });
        for m in datagrams.chain(stream_messages(&payloads)) {
            if !captured.contains(&m) {
                captured.push(m);
            }
        }
    }
    let vectors: Vec<&[u8]> = CAPTURES.iter().map(|(_, bytes)| *bytes).collect();
    assert_eq!(vectors, captured);
}
