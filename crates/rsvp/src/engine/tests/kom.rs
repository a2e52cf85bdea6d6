//! The KOM RSVP engine's messages (`wire::message::vectors::kom`, from the captures in
//! `shared/captures/kom/`) fed to engines laid out as in the capture: H1 10.200.0.1 – R1
//! 10.200.0.2 / 10.200.1.1 – KOM R2 10.200.1.2 – … – H2 10.200.3.2.

use super::super::te::{LspSpec, LspStatus};
use super::super::{Config, InterfaceConfig, RsvpEngine};
use crate::wire::message::vectors::kom::*;
use crate::wire::{ErrorSpec, Message, MsgType};
use pathwise_core::engine::Engine;
use pathwise_core::io::{IPPROTO_RSVP, IfIndex, Received, Transmit, Transport};
use pathwise_core::route::{Route, RouteChange};
use pathwise_core::time::{Duration, Instant};
use std::net::IpAddr;

pub(super) fn ip(a: &str) -> IpAddr {
    a.parse().unwrap()
}

/// A node with one interface per `(ifindex, address)` and routes `(prefix, next hop, ifindex)`.
pub(super) fn node(ifaces: &[(u32, &str)], routes: &[(&str, Option<&str>, u32)]) -> RsvpEngine {
    node_with(ifaces, routes, Config::default())
}

pub(super) fn node_with(
    ifaces: &[(u32, &str)],
    routes: &[(&str, Option<&str>, u32)],
    base: Config,
) -> RsvpEngine {
    let cfg = Config {
        interfaces: ifaces
            .iter()
            .map(|&(ix, a)| InterfaceConfig {
                ifindex: IfIndex(ix),
                addrs: vec![ip(a)],
                bandwidth_bps: 100_000_000,
                reservable_bps: 100_000_000,
                mtu: 1500,
                latency: Duration::from_micros(50),
                integrity: Default::default(),
                hello: None,
            })
            .collect(),
        ..base
    };
    let mut e = RsvpEngine::with_memory_tc(cfg, Instant::ZERO);
    for &(prefix, nh, ix) in routes {
        e.handle_route_change(
            Instant::ZERO,
            RouteChange::Add(Route {
                prefix: prefix.parse().unwrap(),
                next_hop: nh.map(ip),
                ifindex: IfIndex(ix),
                metric: 1,
            }),
        );
    }
    e
}

/// Hand `payload` to `e` as received from `src` on `ifindex`.
pub(super) fn receive(
    e: &mut RsvpEngine,
    now: Instant,
    payload: &[u8],
    src: IpAddr,
    dst: IpAddr,
    ifindex: u32,
) -> Vec<Transmit> {
    e.handle_datagram(
        now,
        Received {
            src,
            dst,
            ifindex: IfIndex(ifindex),
            transport: Transport::Raw(IPPROTO_RSVP),
            router_alert: Some(0),
            ttl: payload.get(4).copied().unwrap_or(64),
            payload,
        },
    );
    drain(e)
}

pub(super) fn drain(e: &mut RsvpEngine) -> Vec<Transmit> {
    std::iter::from_fn(|| e.poll_transmit()).collect()
}

/// Deliver a message one engine sent to the next, arriving on `ifindex`.
pub(super) fn deliver(
    e: &mut RsvpEngine,
    now: Instant,
    t: &Transmit,
    ifindex: u32,
) -> Vec<Transmit> {
    let src = t.src.expect("the engine names its source");
    receive(e, now, &t.payload, src, t.dst, ifindex)
}

pub(super) fn msg_type(t: &Transmit) -> MsgType {
    Message::parse(&t.payload).unwrap().0.msg_type
}

fn h1() -> RsvpEngine {
    node(
        &[(1, "10.200.0.1")],
        &[("0.0.0.0/0", Some("10.200.0.2"), 1)],
    )
}

fn r1() -> RsvpEngine {
    node(
        &[(1, "10.200.0.2"), (2, "10.200.1.1")],
        &[
            ("10.200.0.0/24", None, 1),
            ("10.200.1.0/24", None, 2),
            ("10.200.2.0/23", Some("10.200.1.2"), 2),
        ],
    )
}

fn toh2() -> LspSpec {
    LspSpec {
        name: "toh2".into(),
        to: ip("10.200.3.2"),
        from: Some(ip("10.200.0.1")),
        ero: None,
        bandwidth_bps: 1_000_000,
        setup_priority: 7,
        hold_priority: 0,
        record_route: true,
        label_recording: false,
        gmpls: None,
    }
}

#[test]
fn kom_path_err_with_label_request_reaches_the_head_end_lsp_view() {
    let (mut h1, mut r1) = (h1(), r1());
    let t0 = Instant::ZERO;
    h1.open_lsp(t0, toh2()).unwrap();
    let path = drain(&mut h1);
    assert_eq!(path.len(), 1);
    let fwd = deliver(&mut r1, t0, &path[0], 1);
    assert_eq!(fwd.len(), 1, "R1 passes the Path on towards KOM");
    assert_eq!(fwd[0].dst, ip("10.200.3.2"));
    // The LSP is the capture's: the same session and sender as in KOM's PathErr.
    let Message::Path(p) = Message::parse(&fwd[0].payload).unwrap().1 else {
        panic!()
    };
    let Message::PathErr(kom) = Message::parse(KOM_PATHERR_WITH_LABEL_REQUEST).unwrap().1 else {
        panic!()
    };
    assert_eq!(p.session, kom.session);
    assert_eq!(Some(p.sender.template), kom.sender.map(|s| s.template));

    let t1 = t0 + Duration::from_millis(11);
    let up = receive(
        &mut r1,
        t1,
        KOM_PATHERR_WITH_LABEL_REQUEST,
        ip("10.200.1.2"),
        ip("10.200.1.1"),
        2,
    );
    assert_eq!(r1.counters().total_drops(), 0, "{:?}", r1.counters().drops);
    assert_eq!(r1.counters().skipped_objects, 1, "LABEL_REQUEST");
    assert_eq!(up.len(), 1, "R1 passes the PathErr to its previous hop");
    assert_eq!(
        (up[0].dst, msg_type(&up[0])),
        (ip("10.200.0.1"), MsgType::PathErr)
    );
    deliver(&mut h1, t1, &up[0], 1);
    let v = h1.lsps().into_iter().find(|v| v.name == "toh2").unwrap();
    assert_eq!(
        v.status,
        LspStatus::Failed(ErrorSpec {
            node: ip("127.0.0.1"),
            flags: 0,
            code: 24,
            value: 5,
        }),
        "KOM's No route available, from KOM's error node"
    );
}

/// `bytes` with the C-Type of its RSVP_HOP (class 3) set to `ctype` and the checksum cleared
/// (0: none, RFC 2205 §3.1.1). KOM's IF_ID hop (C-Type 3) is understood since GMPLS (RFC 3473
/// §8.1.1); a C-Type no RFC defines stands in for a hop that cannot be read.
fn with_hop_ctype(bytes: &[u8], ctype: u8) -> Vec<u8> {
    let mut m = bytes.to_vec();
    m[2..4].copy_from_slice(&[0, 0]);
    let mut at = 8;
    while at + 4 <= m.len() {
        let len = usize::from(u16::from_be_bytes([m[at], m[at + 1]]));
        if m[at + 2] == 3 {
            m[at + 3] = ctype;
            return m;
        }
        at += len.max(4);
    }
    panic!("no RSVP_HOP")
}

#[test]
fn an_unreadable_hop_path_is_answered_with_path_err_14_to_its_ip_source() {
    // A pathwise router in place of R1 receiving the KOM head end's Path, its hop of a C-Type
    // nobody defines.
    let mut r1 = r1();
    let out = receive(
        &mut r1,
        Instant::ZERO,
        &with_hop_ctype(KOM_PATH_IF_ID_HOP, 9),
        ip("10.200.0.1"),
        ip("10.200.3.2"),
        1,
    );
    assert_eq!(r1.counters().drops.get("unknown_ctype"), Some(&1));
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].dst, out[0].ifindex, out[0].src),
        (ip("10.200.0.1"), Some(IfIndex(1)), Some(ip("10.200.0.2")))
    );
    let Message::PathErr(e) = Message::parse(&out[0].payload).unwrap().1 else {
        panic!()
    };
    // RFC 2205 App. B: Unknown object C-Type, value (Class-Num, C-Type) = RSVP_HOP, 9.
    assert_eq!((e.error.code, e.error.value), (14, 0x0309));
    assert_eq!(r1.state_stats().psbs, 0);
    // Its PathTear is dropped, counted, and answered with nothing (RFC 2205 §3.10's error
    // reply is for Path and Resv).
    let out = receive(
        &mut r1,
        Instant::ZERO,
        &with_hop_ctype(KOM_PATHTEAR_IF_ID_HOP, 9),
        ip("10.200.0.1"),
        ip("10.200.3.2"),
        1,
    );
    assert!(out.is_empty());
    assert_eq!(r1.counters().drops.get("unknown_ctype"), Some(&2));
}

#[test]
fn an_unreadable_hop_resv_is_answered_with_resv_err_14_to_its_ip_source() {
    // A pathwise R2 (10.200.2.1 towards KOM's R3 10.200.2.2) receiving KOM's Resv.
    let mut r2 = node(
        &[(1, "10.200.1.2"), (2, "10.200.2.1")],
        &[("10.200.3.0/24", Some("10.200.2.2"), 2)],
    );
    let out = receive(
        &mut r2,
        Instant::ZERO,
        &with_hop_ctype(KOM_RESV_IF_ID_HOP, 9),
        ip("10.200.2.2"),
        ip("10.200.2.1"),
        2,
    );
    assert_eq!(r2.counters().drops.get("unknown_ctype"), Some(&1));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].dst, ip("10.200.2.2"));
    let Message::ResvErr(e) = Message::parse(&out[0].payload).unwrap().1 else {
        panic!()
    };
    assert_eq!((e.error.code, e.error.value), (14, 0x0309));
    assert_eq!(e.hop.lih, 0, "the LIH could not be read");
    // KOM's ResvTear with the same hop: dropped and counted, never answered.
    let out = receive(
        &mut r2,
        Instant::ZERO,
        &with_hop_ctype(KOM_RESVTEAR_IF_ID_HOP, 9),
        ip("10.200.2.2"),
        ip("10.200.2.1"),
        2,
    );
    assert!(out.is_empty());
    assert_eq!(r2.counters().drops.get("unknown_ctype"), Some(&2));
}

#[test]
fn a_generalized_label_resv_is_no_longer_answered_with_resv_err_14() {
    // kom-receiver-generalized-label.pcap: pathwise answered KOM's Generalized LABEL (RFC 3473
    // §2.3) with ResvErr 14/0x1002. Understood now, it draws no error at all (that it is
    // bound is `tests/kom_captures.rs`'s to show, with the Path that comes first).
    let mut r3 = node(
        &[(1, "10.200.2.2"), (2, "10.200.3.1")],
        &[("10.200.3.0/24", None, 2)],
    );
    let out = receive(
        &mut r3,
        Instant::ZERO,
        KOM_RESV_GENERALIZED_LABEL,
        ip("10.200.3.2"),
        ip("10.200.3.1"),
        2,
    );
    let errs: Vec<Message> = out
        .iter()
        .map(|t| Message::parse(&t.payload).unwrap().1)
        .filter(|m| matches!(m, Message::ResvErr(e) if e.error.code == 14))
        .collect();
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(r3.counters().drops.get("unknown_ctype"), None);
}
