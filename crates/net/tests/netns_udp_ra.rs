//! UDP with Router Alert (GIST D-mode's Queries) over real network namespaces A — R — B (root
//! only; see `common/mod.rs`): R's socket for port 270 takes RA datagrams for the port off the
//! forwarding path, lets datagrams without RA pass, sends on RA datagrams for other ports, and
//! each datagram addressed to a node arrives there exactly once.

mod common;

use common::*;
use pathwise_core::io::{Transmit, Transport};
use pathwise_net::{Family, RaUdpSocket, RawOptions};
use std::time::{Duration, Instant};

const GIST_PORT: u16 = 270;

/// What a socket received: (source, destination, source port, destination port, RA, TTL,
/// payload).
type Seen = (String, String, u16, u16, bool, u8, Vec<u8>);

fn collect(sock: &mut RaUdpSocket, marker: &[u8], want: usize, timeout: Duration) -> Vec<Seen> {
    let deadline = Instant::now() + timeout;
    let mut got = Vec::new();
    loop {
        for r in sock.recv_batch().expect("recv_batch") {
            let Transport::Udp { src_port, dst_port } = r.transport else {
                panic!("not UDP: {r:?}");
            };
            if r.payload.starts_with(marker) {
                got.push((
                    r.src.to_string(),
                    r.dst.to_string(),
                    src_port,
                    dst_port,
                    r.router_alert.is_some(),
                    r.ttl,
                    r.payload.to_vec(),
                ));
            }
        }
        if got.len() >= want || Instant::now() >= deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn udp(src: &str, dst: &str, dst_port: u16, ra: bool, payload: &[u8]) -> Transmit {
    Transmit {
        src: Some(addr(src)),
        dst: addr(dst),
        ifindex: None,
        transport: Transport::Udp {
            src_port: 40_000,
            dst_port,
        },
        // The values the sockets intercept: 0 over IPv4, `RawOptions`' default (1) over IPv6.
        router_alert: ra.then_some(u16::from(addr(dst).is_ipv6())),
        ttl: 64,
        payload: payload.to_vec(),
    }
}

fn open(ns: &Netns, family: Family) -> RaUdpSocket {
    ns.run(|| RaUdpSocket::open(family, GIST_PORT, RawOptions::default(), true))
        .expect("open RA UDP socket")
}

fn run(family: Family, a_addr: &str, b_addr: &str, tag: &str) {
    let c = Chain::new(tag);
    let mut r = open(&c.r, family);
    let mut b = open(&c.b, family);
    let a = open(&c.a, family);

    // A Query-like datagram with RA stops at R, as sent (TTL not yet decremented).
    a.send(&udp(a_addr, b_addr, GIST_PORT, true, b"query"))
        .expect("send with RA");
    let got = collect(&mut r, b"query", 1, ARRIVES);
    assert_eq!(got.len(), 1, "R intercepts: {got:?}");
    let (src, dst, sp, dp, ra, ttl, _) = &got[0];
    assert_eq!(
        (src.as_str(), dst.as_str(), *sp, *dp, *ra, *ttl),
        (a_addr, b_addr, 40_000, GIST_PORT, true, 64)
    );
    assert!(
        collect(&mut b, b"query", 1, ABSENT).is_empty(),
        "B must not get it"
    );

    // Without RA (D-mode Response, Data): forwarded by the kernel, B gets it exactly once.
    a.send(&udp(a_addr, b_addr, GIST_PORT, false, b"response"))
        .expect("send without RA");
    let got = collect(&mut b, b"response", 2, ABSENT * 3);
    assert_eq!(got.len(), 1, "B receives it once: {got:?}");
    assert_eq!(got[0].5, 63);
    assert!(collect(&mut r, b"response", 1, ABSENT).is_empty());

    // RA for another port: R sends it on (TTL − 1) when it reads its socket, instead of
    // swallowing it.
    let mut b271 =
        c.b.run(|| RaUdpSocket::open(family, 271, RawOptions::default(), true))
            .expect("open 271");
    let before = r.forwarded();
    a.send(&udp(a_addr, b_addr, 271, true, b"other"))
        .expect("send other port");
    assert!(
        collect(&mut r, b"other", 1, ABSENT).is_empty(),
        "not R's port"
    );
    assert_eq!(r.forwarded(), before + 1);
    let got = collect(&mut b271, b"other", 1, ARRIVES);
    assert_eq!(got.len(), 1, "the other port's datagram reaches B: {got:?}");
    assert_eq!((got[0].4, got[0].5), (true, 63));

    // A datagram with a bad checksum is dropped and counted.
    let mut bad = udp(a_addr, b_addr, GIST_PORT, false, b"bad");
    bad.src = None; // IPv4: sent without a checksum, which is valid; IPv6 refuses below
    if family == Family::V6 {
        assert!(a.send(&bad).is_err(), "IPv6 UDP needs a checksum");
    } else {
        a.send(&bad).expect("send without checksum");
        assert_eq!(collect(&mut b, b"bad", 1, ARRIVES).len(), 1);
    }
}

#[test]
fn udp_router_alert_ipv4() {
    if !available("udp_router_alert_ipv4") {
        return;
    }
    run(Family::V4, A4, B4, "ura4");
}

#[test]
fn udp_router_alert_ipv6() {
    if !available("udp_router_alert_ipv6") {
        return;
    }
    run(Family::V6, A6, B6, "ura6");
}
