//! One engine, hand-fed bytes: the processing rules of RFC 2209 that the multi-node simulation
//! tests (crates/pathwise/tests/rsvp_sim.rs) do not reach — error replies, drops, lifetimes.

use super::{Config, RsvpEngine};
use crate::testing::*;
use crate::wire::error::error_code;
use crate::wire::{
    FilterSpec, FilterTe, Label, LabelRequest, Message, MsgType, PathErr, PathTear, Resv, RsvpHop,
    SenderTspec, Session, SessionAttribute, Style, StyleKind,
};
use pathwise_core::engine::Engine;
use pathwise_core::io::{IPPROTO_RSVP, IfIndex, Received, Transmit, Transport};
use pathwise_core::route::{Route, RouteChange};
use pathwise_core::time::{Duration, Instant};
use pathwise_core::wire::internet_checksum;
use std::net::{IpAddr, Ipv4Addr};

fn engine() -> RsvpEngine {
    let mut e = RsvpEngine::with_memory_tc(router_config(8_000_000), Instant::ZERO);
    e.handle_route_change(Instant::ZERO, route());
    e
}

/// Append a raw object and fix up RSVP Length and the checksum.
fn with_object(mut msg: Vec<u8>, class: u8, ctype: u8, body: &[u8]) -> Vec<u8> {
    msg.extend_from_slice(&((4 + body.len()) as u16).to_be_bytes());
    msg.extend_from_slice(&[class, ctype]);
    msg.extend_from_slice(body);
    let len = msg.len() as u16;
    msg[6..8].copy_from_slice(&len.to_be_bytes());
    msg[2..4].copy_from_slice(&[0, 0]);
    let sum = internet_checksum(&msg);
    msg[2..4].copy_from_slice(&sum.to_be_bytes());
    msg
}

/// `payload` at time zero from the previous hop [`PHOP`] on [`UP`]; what the engine sent.
fn from_upstream(e: &mut RsvpEngine, payload: &[u8]) -> Vec<Transmit> {
    feed(e, Instant::ZERO, payload, PHOP, UP, 63)
}

/// `payload` at time zero from the next hop `nhop` on [`DOWN`]; what the engine sent.
fn from_downstream(e: &mut RsvpEngine, payload: &[u8], nhop: Ipv4Addr) -> Vec<Transmit> {
    feed(e, Instant::ZERO, payload, nhop, DOWN, 64)
}

/// Feed one datagram and collect what the engine sends.
fn feed(
    e: &mut RsvpEngine,
    now: Instant,
    payload: &[u8],
    from: Ipv4Addr,
    ifindex: IfIndex,
    ttl: u8,
) -> Vec<Transmit> {
    e.handle_datagram(now, received(from, ifindex, ttl, payload));
    std::iter::from_fn(|| e.poll_transmit()).collect()
}

fn parsed(t: &Transmit) -> Message {
    Message::parse(&t.payload)
        .expect("the engine emits valid messages")
        .1
}

fn error_of(t: &Transmit) -> (u8, u16) {
    match parsed(t) {
        Message::PathErr(e) => (e.error.code, e.error.value),
        Message::ResvErr(e) => (e.error.code, e.error.value),
        m => panic!("not an error: {m:?}"),
    }
}

#[test]
fn path_is_forwarded_hop_by_hop_with_our_hop_and_composed_adspec() {
    let mut e = engine();
    let out = from_upstream(&mut e, &bytes(&path(session(1), sender(1)), 63));
    assert_eq!(out.len(), 1);
    let t = &out[0];
    assert_eq!(
        (t.ifindex, t.router_alert, t.ttl, t.dst),
        (Some(DOWN), Some(0), 62, session(1).dest)
    );
    assert_eq!(
        t.src,
        Some(sender(1).src()),
        "Path keeps the sender's address as IP source"
    );
    let Message::Path(p) = parsed(t) else {
        panic!()
    };
    assert_eq!(
        p.hop,
        RsvpHop::new(IpAddr::V4(Ipv4Addr::new(10, 0, 2, 1)), DOWN.0)
    );
    let a = p.sender.adspec.unwrap();
    assert_eq!(a.general.hop_count, 1);
    assert!(!a.general.break_bit);
    assert_eq!(e.state_stats().psbs, 1);
}

#[test]
fn non_rsvp_hop_sets_the_adspec_break_bit() {
    let mut e = engine();
    // Sent with TTL 64, arrives with 60: four plain routers were crossed (RFC 2205 §3.8).
    let out = feed(
        &mut e,
        Instant::ZERO,
        &bytes(&path(session(1), sender(1)), 64),
        PHOP,
        UP,
        60,
    );
    let Message::Path(p) = parsed(&out[0]) else {
        panic!()
    };
    assert!(p.sender.adspec.unwrap().general.break_bit);
}

#[test]
fn unknown_object_class_is_answered_per_rfc_2205_3_10() {
    let mut e = engine();
    // Class 0bbbbbbb: reject and answer "Unknown object class" with (class << 8) | C-Type.
    let msg = with_object(bytes(&path(session(1), sender(1)), 63), 0x42, 3, &[0; 4]);
    let out = from_upstream(&mut e, &msg);
    assert_eq!(out.len(), 1);
    assert_eq!(
        error_of(&out[0]),
        (error_code::UNKNOWN_OBJECT_CLASS, 0x4203)
    );
    assert_eq!(out[0].dst, IpAddr::V4(PHOP));
    assert_eq!(e.state_stats().psbs, 0, "nothing installed");
    // Class 10bbbbbb: ignored silently, the Path is processed and not forwarded with it.
    let msg = with_object(bytes(&path(session(1), sender(1)), 63), 0x85, 1, &[0; 4]);
    let out = from_upstream(&mut e, &msg);
    let Message::Path(p) = parsed(&out[0]) else {
        panic!()
    };
    assert!(p.forward.is_empty());
    // Class 11bbbbbb: forwarded unexamined.
    let msg = with_object(
        bytes(&path(session(2), sender(2)), 63),
        0xc5,
        1,
        &[1, 2, 3, 4],
    );
    let out = from_upstream(&mut e, &msg);
    let Message::Path(p) = parsed(&out[0]) else {
        panic!()
    };
    assert_eq!(p.forward.len(), 1);
    assert_eq!(p.forward[0].body, vec![1, 2, 3, 4]);
    // In a Resv: answered with ResvErr naming the style.
    let msg = with_object(
        bytes(&resv(session(2), StyleKind::Ff, ff(10.0, sender(2))), 64),
        0x43,
        1,
        &[0; 4],
    );
    let out = from_downstream(&mut e, &msg, NHOP);
    assert_eq!(
        error_of(&out[0]),
        (error_code::UNKNOWN_OBJECT_CLASS, 0x4301)
    );
    assert_eq!(out[0].dst, IpAddr::V4(NHOP));
}

#[test]
fn session_attribute_is_forwarded_unmodified() {
    // RFC 3209 §4.7: passed on as received, as when the engine knew it only as an unknown
    // class-11bbbbbb object.
    let mut e = engine();
    let sa = SessionAttribute {
        affinities: None,
        setup_priority: 3,
        holding_priority: 3,
        flags: SessionAttribute::SE_STYLE_DESIRED,
        name: b"tunnel".to_vec(),
    };
    let Message::Path(mut p) = path(session(1), sender(1)) else {
        panic!()
    };
    p.session_attribute = Some(sa.clone());
    let out = from_upstream(&mut e, &bytes(&Message::Path(p), 63));
    let Message::Path(p) = parsed(&out[0]) else {
        panic!()
    };
    assert_eq!(p.session_attribute, Some(sa));
}

/// An LSP tunnel from 30.0.0.1 to 20.0.0.1 and its LSP 1 (RFC 3209 §4.6).
fn lsp_tunnel() -> (Session, FilterSpec) {
    let ingress = Ipv4Addr::new(30, 0, 0, 1);
    (
        Session::lsp_tunnel(IpAddr::V4(Ipv4Addr::new(20, 0, 0, 1)), 5, ingress.into()),
        FilterSpec::LspTunnelV4 {
            src: ingress,
            lsp_id: 1,
        },
    )
}

#[test]
fn a_transit_lsr_binds_labels_downstream_on_demand() {
    let mut e = engine();
    let (s, lsp) = lsp_tunnel();
    let Message::Path(mut p) = path(s, lsp) else {
        panic!()
    };
    p.label_request = Some(LabelRequest {
        l3pid: 0x0800,
        range: None,
    });
    let out = from_upstream(&mut e, &bytes(&Message::Path(p), 63));
    assert_eq!((out.len(), e.state_stats().psbs), (1, 1));
    // RFC 3209 §4.2: the LABEL_REQUEST goes on with the Path.
    let Message::Path(fwd) = parsed(&out[0]) else {
        panic!()
    };
    assert_eq!(fwd.label_request.map(|l| l.l3pid), Some(0x0800));
    // §4.1: the Resv brings the next hop's label; this node binds one of its own, sends it
    // upstream bound to the FILTER_SPEC and installs the swap.
    let with_label = |label| {
        let mut flows = ff(10.0, lsp);
        flows[0].te = vec![FilterTe {
            label: Some(Label { label }),
            ..FilterTe::default()
        }];
        flows
    };
    let out = from_downstream(
        &mut e,
        &bytes(&resv(s, StyleKind::Ff, with_label(1000)), 64),
        NHOP,
    );
    assert_eq!(e.state_stats().out_isbs, 1);
    let Message::Resv(up) = parsed(&out[0]) else {
        panic!("{out:?}")
    };
    let ours = up.flows[0].te[0].label.unwrap().label;
    assert_eq!(ours, 16);
    let entry = e.lfib().get(ours).copied().unwrap();
    assert_eq!(entry.op, pathwise_core::mpls::LabelOp::Swap(1000));
    assert_eq!(entry.next_hop.addr, IpAddr::V4(NHOP));
    // A label in the reserved range is refused (§4.1.2, "Unacceptable label value").
    let out = from_downstream(
        &mut e,
        &bytes(&resv(s, StyleKind::Ff, with_label(7)), 64),
        NHOP,
    );
    assert_eq!(
        error_of(&out[0]),
        (
            error_code::ROUTING_PROBLEM,
            error_code::routing::UNACCEPTABLE_LABEL_VALUE
        )
    );
    assert_eq!(
        e.lfib().get(ours).unwrap().op,
        pathwise_core::mpls::LabelOp::Swap(1000)
    );
    // The FILTER_SPEC names the LSP exactly: another LSP ID has no path state.
    let other = FilterSpec::LspTunnelV4 {
        src: Ipv4Addr::new(30, 0, 0, 1),
        lsp_id: 2,
    };
    let mut flows = ff(10.0, other);
    flows[0].te = with_label(1000)[0].te.clone();
    let out = from_downstream(&mut e, &bytes(&resv(s, StyleKind::Ff, flows), 64), NHOP);
    assert_eq!(error_of(&out[0]), (error_code::NO_SENDER_INFORMATION, 0));
    // PathTear: the binding and its label go.
    let tear = Message::PathTear(crate::wire::PathTear {
        integrity: None,
        session: s,
        hop: crate::wire::RsvpHop::new(PHOP.into(), 0),
        sender_template: Some(lsp),
        sender_tspec: None,
        forward: Vec::new(),
    });
    from_upstream(&mut e, &bytes(&tear, 63));
    assert!(e.lfib().is_empty());
    assert_eq!(e.labels_in_use(), 0);
}

#[test]
fn errors_are_never_answered_with_errors() {
    let mut e = engine();
    let err = Message::PathErr(PathErr {
        integrity: None,
        session: session(1),
        error: crate::wire::ErrorSpec {
            node: PHOP.into(),
            flags: 0,
            code: 1,
            value: 2,
        },
        policy: Vec::new(),
        sender: None,
        forward: Vec::new(),
    });
    let msg = with_object(bytes(&err, 64), 0x42, 1, &[0; 4]);
    assert!(from_downstream(&mut e, &msg, NHOP).is_empty());
    assert_eq!(e.counters().drops.get("unknown_class"), Some(&1));
}

#[test]
fn resv_without_path_state_gets_no_path_information() {
    let mut e = engine();
    let out = from_downstream(
        &mut e,
        &bytes(&resv(session(1), StyleKind::Ff, ff(10.0, sender(1))), 64),
        NHOP,
    );
    assert_eq!(error_of(&out[0]), (error_code::NO_PATH_INFORMATION, 0));
    assert_eq!(e.counters().drops.get("no_path_state"), Some(&1));
}

#[test]
fn ff_resv_for_unknown_sender_gets_no_sender_information() {
    let mut e = engine();
    from_upstream(&mut e, &bytes(&path(session(1), sender(1)), 63));
    let out = from_downstream(
        &mut e,
        &bytes(&resv(session(1), StyleKind::Ff, ff(10.0, sender(9))), 64),
        NHOP,
    );
    assert_eq!(error_of(&out[0]), (error_code::NO_SENDER_INFORMATION, 0));
    assert!(e.traffic_control().is_empty());
}

#[test]
fn unknown_style_gets_unknown_reservation_style() {
    let mut e = engine();
    from_upstream(&mut e, &bytes(&path(session(1), sender(1)), 63));
    let out = from_downstream(
        &mut e,
        &bytes(
            &resv(session(1), StyleKind::Other(0b11111), ff(10.0, sender(1))),
            64,
        ),
        NHOP,
    );
    assert_eq!(
        error_of(&out[0]),
        (error_code::UNKNOWN_RESERVATION_STYLE, 0)
    );
}

#[test]
fn lsp_tunnel_ids_are_not_ports() {
    // Tunnel ids 5 and 0 to the same end point are two tunnels, not a port conflict.
    let mut e = engine();
    let (s5, lsp) = lsp_tunnel();
    let s0 = Session { dst_port: 0, ..s5 };
    // The Extended Tunnel ID is part of the session (RFC 3209 §4.6.1.1), though it is kept
    // out of line and shared: another ingress's tunnel 5 is a third session.
    let other = Session {
        extended_tunnel_id: Some(Ipv4Addr::new(30, 0, 0, 2).into()),
        ..s5
    };
    for s in [s5, s0, other] {
        let Message::Path(mut p) = path(s, lsp) else {
            panic!()
        };
        p.label_request = Some(LabelRequest {
            l3pid: 0x0800,
            range: None,
        });
        let out = from_upstream(&mut e, &bytes(&Message::Path(p), 63));
        // Forwarded, not answered with a PathErr (read from the header: the forwarded Path
        // lacks its LABEL_REQUEST until labels are handled).
        let types: Vec<_> = out
            .iter()
            .map(|t| Message::parse_header(&t.payload).map(|h| h.msg_type))
            .collect();
        assert_eq!(types, vec![Ok(MsgType::Path)]);
    }
    assert_eq!(e.state_stats().sessions, 3);
    // A Path again finds its session, Extended Tunnel ID and all.
    let Message::Path(mut p) = path(other, lsp) else {
        panic!()
    };
    p.label_request = Some(LabelRequest {
        l3pid: 0x0800,
        range: None,
    });
    from_upstream(&mut e, &bytes(&Message::Path(p), 63));
    assert_eq!(e.state_stats().sessions, 3);
    // Timed out, the sessions leave no Extended Tunnel ID behind (`is_idle` checks the interner).
    while let Some(t) = e.poll_timeout().filter(|t| *t < Instant::from_secs(200)) {
        e.handle_timeout(t);
        while e.poll_transmit().is_some() {}
    }
    assert!(e.is_idle(), "{:?}", e.state_stats());
}

#[test]
fn conflicting_ports_are_refused() {
    let mut e = engine();
    from_upstream(&mut e, &bytes(&path(session(0), sender(1)), 63));
    // A non-zero port next to a zero port for the same destination and protocol.
    let out = from_upstream(&mut e, &bytes(&path(session(5), sender(1)), 63));
    assert_eq!(error_of(&out[0]), (error_code::CONFLICTING_DEST_PORTS, 0));
    // Same sender address with and without a port in one session.
    let out = from_upstream(&mut e, &bytes(&path(session(0), sender(0)), 63));
    assert_eq!(error_of(&out[0]), (error_code::CONFLICTING_SENDER_PORTS, 0));
    assert_eq!(e.state_stats().sessions, 1);
}

#[test]
fn bad_checksum_is_dropped_and_counted() {
    let mut e = engine();
    let mut msg = bytes(&path(session(1), sender(1)), 63);
    let last = msg.len() - 1;
    msg[last] ^= 0x40;
    assert!(from_upstream(&mut e, &msg).is_empty());
    assert_eq!(e.counters().drops.get("bad_checksum"), Some(&1));
    assert!(e.is_idle());
}

/// A receiver's ResvTear that crosses its sender's PathTear finds no session (RFC 2209 §3,
/// RTEAR processing): nothing to tear, counted apart from other unknown-session drops.
#[test]
fn a_resv_tear_after_the_path_tear_is_counted_as_a_crossing() {
    let mut e = engine();
    from_upstream(&mut e, &bytes(&path(session(1), sender(1)), 63));
    let tear = bytes(&path_tear(session(1)), 63);
    from_upstream(&mut e, &tear);
    assert_eq!(e.state_stats().sessions, 0);
    let tear = bytes(&resv_tear(session(1)), 63);
    assert!(feed(&mut e, Instant::ZERO, &tear, NHOP, DOWN, 63).is_empty());
    assert_eq!(
        e.counters().drops.get("resv_tear_unknown_session"),
        Some(&1)
    );
    assert_eq!(e.counters().drops.get("unknown_session"), None);
}

#[test]
fn path_tear_from_another_hop_is_stale() {
    let mut e = engine();
    from_upstream(&mut e, &bytes(&path(session(1), sender(1)), 63));
    let tear = |addr: Ipv4Addr| {
        bytes(
            &Message::PathTear(PathTear {
                integrity: None,
                session: session(1),
                hop: RsvpHop::new(addr.into(), 7),
                sender_template: Some(sender(1)),
                sender_tspec: None,
                forward: Vec::new(),
            }),
            63,
        )
    };
    assert!(from_upstream(&mut e, &tear(Ipv4Addr::new(10, 9, 9, 9))).is_empty());
    assert_eq!(e.state_stats().psbs, 1);
    assert_eq!(e.counters().drops.get("no_matching_path_state"), Some(&1));
    let out = from_upstream(&mut e, &tear(PHOP));
    assert!(
        matches!(parsed(&out[0]), Message::PathTear(_)),
        "passed downstream"
    );
    assert!(e.is_idle());
}

#[test]
fn unrefreshed_state_times_out_and_is_torn_downstream() {
    let mut e = engine();
    from_upstream(&mut e, &bytes(&path(session(1), sender(1)), 63));
    from_downstream(
        &mut e,
        &bytes(&resv(session(1), StyleKind::Ff, ff(10.0, sender(1))), 64),
        NHOP,
    );
    assert_eq!(e.traffic_control().len(), 1);
    // L = (K + 0.5) · 1.5 · R = 157.5 s for R = 30 s (RFC 2205 §3.7). Our own refreshes go out
    // meanwhile; nothing comes back.
    let mut sent = Vec::new();
    let mut now = Instant::ZERO;
    while let Some(t) = e.poll_timeout().filter(|t| *t < Instant::from_secs(200)) {
        now = t;
        e.handle_timeout(now);
        sent.extend(std::iter::from_fn(|| e.poll_transmit()));
    }
    assert!(
        now >= Instant::from_millis(157_500),
        "not before the lifetime: {now:?}"
    );
    assert!(e.is_idle(), "{:?}", e.state_stats());
    assert!(e.traffic_control().is_empty());
    let types: Vec<MsgType> = sent.iter().map(|t| parsed(t).msg_type()).collect();
    assert!(
        types.contains(&MsgType::Path) && types.contains(&MsgType::Resv),
        "refreshes: {types:?}"
    );
    assert_eq!(types.last(), Some(&MsgType::PathTear));
    assert_eq!(e.counters().path_timeouts, 1);
}

#[test]
fn unchanged_resv_refresh_sends_nothing_new_upstream() {
    let mut e = engine();
    from_upstream(&mut e, &bytes(&path(session(1), sender(1)), 63));
    let r = bytes(&resv(session(1), StyleKind::Ff, ff(10.0, sender(1))), 64);
    let first = from_downstream(&mut e, &r, NHOP);
    assert_eq!(first.len(), 1);
    assert!(matches!(parsed(&first[0]), Message::Resv(_)));
    assert_eq!(first[0].dst, IpAddr::V4(PHOP));
    assert!(feed(&mut e, Instant::from_secs(1), &r, NHOP, DOWN, 64).is_empty());
}

mod compact_state;
mod ff_in_psb;
mod hostile;
mod kom;
mod lsp_timeout;
mod messages;
mod receiver;
mod refresh_reduction;
mod shard;
