//! Raw sockets and Router Alert over real network namespaces A — R — B (root only; see
//! `common/mod.rs` for how the namespaces are entered and cleaned up).

mod common;

use common::*;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use pathwise_core::io::{IfIndex, Transmit, Transport};
use pathwise_net::{Family, RawConfig, RawSocket};
use std::os::fd::AsFd;

fn tx(
    src: Option<&str>,
    dst: &str,
    ifindex: Option<IfIndex>,
    ra: bool,
    ttl: u8,
    payload: &[u8],
) -> Transmit {
    Transmit {
        src: src.map(addr),
        dst: addr(dst),
        ifindex,
        transport: Transport::Raw(46),
        // RSVP's values: 0 over IPv4 (RFC 2113), 1 over IPv6 (RFC 2711).
        router_alert: ra.then_some(u16::from(addr(dst).is_ipv6())),
        ttl,
        payload: payload.to_vec(),
    }
}

fn plain(family: Family) -> RawConfig {
    RawConfig::new(46, family)
}

/// Waits (bounded) until `sock`'s descriptor polls readable.
fn readable(sock: &RawSocket) -> bool {
    let mut fds = [PollFd::new(sock.as_fd(), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::from(3000u16)).expect("poll") == 1
}

/// (a) and (b): RA packets stop at R's intercepting socket; packets without RA are forwarded.
/// Also: the intercepting socket still gets packets addressed to R, and its descriptor polls.
fn interception(family: Family, a_addr: &str, r_addr: &str, b_addr: &str, tag: &str) {
    let c = Chain::new(tag);
    let mut r = c.r.raw(RawConfig::rsvp(family));
    let mut b = c.b.raw(plain(family));
    let a = c.a.raw(plain(family));

    // (a) With Router Alert: R gets it as sent (TTL not yet decremented), B does not.
    a.send(&tx(None, b_addr, None, true, 64, b"with-ra"))
        .expect("send with RA");
    assert!(readable(&r), "R's descriptor polls readable");
    let got = collect(&mut r, b"with-ra", 1, ARRIVES);
    assert_eq!(got.len(), 1, "R intercepts the RA packet: {got:?}");
    let g = &got[0];
    assert_eq!((g.src, g.dst), (addr(a_addr), addr(b_addr)));
    assert_eq!(g.ifindex, c.ra_if, "arrival interface is R's A side");
    assert_eq!(g.ttl, 64);
    assert!(g.router_alert);
    assert_eq!(g.payload, b"with-ra");
    assert!(
        collect(&mut b, b"with-ra", 1, ABSENT).is_empty(),
        "R must not forward RA packets"
    );

    // (b) Without Router Alert: forwarded to B (TTL decremented), not seen by R.
    a.send(&tx(None, b_addr, None, false, 64, b"no-ra"))
        .expect("send without RA");
    let got = collect(&mut b, b"no-ra", 1, ARRIVES);
    assert_eq!(got.len(), 1, "B receives the forwarded packet");
    let g = &got[0];
    assert_eq!(
        (g.src, g.dst, g.ifindex),
        (addr(a_addr), addr(b_addr), c.b_if)
    );
    assert_eq!(g.ttl, 63);
    assert!(!g.router_alert);
    assert!(
        collect(&mut r, b"no-ra", 1, ABSENT).is_empty(),
        "R must not intercept non-RA packets"
    );

    // Addressed to R itself: delivered locally, to the same socket.
    a.send(&tx(None, r_addr, None, false, 64, b"to-r"))
        .expect("send to R");
    let got = collect(&mut r, b"to-r", 1, ARRIVES);
    assert_eq!(got.len(), 1, "R receives packets addressed to it");
    assert_eq!(
        (got[0].src, got[0].dst, got[0].ifindex, got[0].ttl),
        (addr(a_addr), addr(r_addr), c.ra_if, 64)
    );
    assert_eq!(r.stats().received, 2);
    assert_eq!(r.stats().total_drops(), 0);
}

/// (c): R re-sends with the original sender's address as source, out of a chosen interface.
fn spoofed_resend(family: Family, a_addr: &str, b_addr: &str, tag: &str) {
    let c = Chain::new(tag);
    let r = c.r.raw(RawConfig::rsvp(family));
    let mut a = c.a.raw(plain(family));
    let mut b = c.b.raw(plain(family));
    r.send(&tx(Some(a_addr), b_addr, Some(c.rb_if), true, 63, b"spoof"))
        .expect("send spoofed");
    let got = collect(&mut b, b"spoof", 1, ARRIVES);
    assert_eq!(got.len(), 1, "B receives R's packet");
    let g = &got[0];
    assert_eq!(
        (g.src, g.dst, g.ifindex),
        (addr(a_addr), addr(b_addr), c.b_if)
    );
    assert_eq!((g.ttl, g.router_alert), (63, true));
    assert!(collect(&mut a, b"spoof", 1, ABSENT).is_empty());
}

/// Multicast out of the interface `Transmit::ifindex` names, and nowhere else.
fn multicast_by_ifindex(family: Family, group: &str, tag: &str) {
    let c = Chain::new(tag);
    let r = c.r.raw(plain(family));
    let mut a = c.a.raw(plain(family));
    let mut b = c.b.raw(plain(family));
    r.send(&tx(None, group, Some(c.rb_if), true, 1, b"mc-to-b"))
        .expect("multicast to B side");
    r.send(&tx(None, group, Some(c.ra_if), false, 1, b"mc-to-a"))
        .expect("multicast to A side");
    let got = collect(&mut b, b"mc-to-b", 1, ARRIVES);
    assert_eq!(got.len(), 1, "B gets the multicast sent out of rb");
    assert_eq!(
        (got[0].dst, got[0].ifindex, got[0].ttl, got[0].router_alert),
        (addr(group), c.b_if, 1, true)
    );
    let got = collect(&mut a, b"mc-to-a", 1, ARRIVES);
    assert_eq!(got.len(), 1, "A gets the multicast sent out of ra");
    assert_eq!((got[0].ifindex, got[0].router_alert), (c.a_if, false));
    assert!(collect(&mut a, b"mc-to-b", 1, ABSENT).is_empty());
    assert!(collect(&mut b, b"mc-to-a", 1, ABSENT).is_empty());
}

/// sendmmsg / recvmmsg: a mixed batch splits between R (RA) and B (no RA); a bad entry stops
/// the batch where it is.
fn batches(family: Family, b_addr: &str, wrong: &str, tag: &str) {
    let c = Chain::new(tag);
    let mut r = c.r.raw(RawConfig::rsvp(family));
    let mut b = c.b.raw(plain(family));
    let a = c.a.raw(plain(family));
    let batch: Vec<Transmit> = (0..8u8)
        .map(|i| tx(None, b_addr, None, i % 2 == 0, 64, &[b'm', b'x', i]))
        .collect();
    assert_eq!(a.send_batch(&batch).expect("send_batch"), 8);
    let at_r = collect(&mut r, b"mx", 4, ARRIVES);
    let at_b = collect(&mut b, b"mx", 4, ARRIVES);
    let ids = |v: &[Got]| v.iter().map(|g| g.payload[2]).collect::<Vec<_>>();
    assert_eq!(ids(&at_r), [0, 2, 4, 6]);
    assert_eq!(ids(&at_b), [1, 3, 5, 7]);
    // An entry of the wrong family stops the batch after the first; alone it is an error.
    let bad = [
        tx(None, b_addr, None, false, 64, b"ok1"),
        tx(None, wrong, None, false, 64, b"bad"),
    ];
    assert_eq!(a.send_batch(&bad).expect("partial batch"), 1);
    assert!(a.send_batch(&bad[1..]).is_err());
    assert_eq!(a.stats().sent, 9);
    assert_eq!(a.stats().send_errors, 2);
}

#[test]
fn ipv4_router_alert_interception() {
    if available("ipv4_router_alert_interception") {
        interception(Family::V4, A4, RA4, B4, "i4");
    }
}

#[test]
fn ipv6_router_alert_interception() {
    if available("ipv6_router_alert_interception") {
        interception(Family::V6, A6, RA6, B6, "i6");
    }
}

#[test]
fn ipv4_spoofed_source_out_of_interface() {
    if available("ipv4_spoofed_source_out_of_interface") {
        spoofed_resend(Family::V4, A4, B4, "s4");
    }
}

#[test]
fn ipv6_spoofed_source_out_of_interface() {
    if available("ipv6_spoofed_source_out_of_interface") {
        spoofed_resend(Family::V6, A6, B6, "s6");
    }
}

#[test]
fn ipv4_multicast_by_ifindex() {
    if available("ipv4_multicast_by_ifindex") {
        multicast_by_ifindex(Family::V4, "224.0.0.1", "m4");
    }
}

#[test]
fn ipv6_multicast_by_ifindex() {
    if available("ipv6_multicast_by_ifindex") {
        multicast_by_ifindex(Family::V6, "ff02::1", "m6");
    }
}

#[test]
fn ipv4_batches() {
    if available("ipv4_batches") {
        batches(Family::V4, B4, B6, "b4");
    }
}

#[test]
fn ipv6_batches() {
    if available("ipv6_batches") {
        batches(Family::V6, B6, B4, "b6");
    }
}

#[test]
fn open_fails_cleanly_for_bad_config() {
    // Works without root too: either permission is denied or the socket opens.
    match RawSocket::open(RawConfig::rsvp(Family::V4)) {
        Ok(s) => assert_eq!(s.config().protocol, 46),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied),
    }
}
