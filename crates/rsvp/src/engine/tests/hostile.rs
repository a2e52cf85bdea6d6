//! Hostile input without integrity: martian senders and hops, SESSION flags, tampered signed
//! messages.

use super::kom::{drain, ip, node, node_with, receive};
use super::*;

fn path_from(s: Session, f: FilterSpec, hop: IpAddr) -> Vec<u8> {
    let Message::Path(mut p) = path(s, f) else {
        panic!()
    };
    p.hop.addr = hop;
    bytes(&Message::Path(p), 63)
}

fn sender_at(src: Ipv4Addr) -> FilterSpec {
    FilterSpec::V4 { src, src_port: 1 }
}

#[test]
fn martian_senders_are_refused_with_policy_control_failure() {
    for (src, reason) in [
        ("127.0.0.1", "martian_sender_loopback"),
        ("127.3.2.1", "martian_sender_loopback"),
        ("255.255.255.255", "martian_sender_broadcast"),
        ("224.0.0.5", "martian_sender_multicast"),
        ("0.0.0.0", "martian_sender_unspecified"),
        // The router's own address.
        ("10.0.2.1", "martian_sender_local"),
    ] {
        let mut e = engine();
        let f = sender_at(src.parse().unwrap());
        let out = feed(
            &mut e,
            Instant::ZERO,
            &path_from(session(1), f, PHOP.into()),
            PHOP,
            UP,
            63,
        );
        assert_eq!(e.counters().drops.get(reason), Some(&1), "{src}");
        assert_eq!(e.state_stats().psbs, 0, "{src}: no path state");
        assert_eq!(out.len(), 1, "{src}: only the error, no Path forwarded");
        assert_eq!(out[0].dst, IpAddr::V4(PHOP));
        // RFC 2205 App. B: "Policy Control failure ... may appear in a PathErr".
        assert_eq!(error_of(&out[0]), (2, 0), "{src}");
        // Refreshed every period: still nothing forwarded with that source.
        let later = Instant::ZERO + Duration::from_secs(45);
        e.handle_timeout(later);
        assert!(drain(&mut e).iter().all(|t| t.src != Some(f.src())));
    }
}

#[test]
fn a_martian_previous_hop_gets_nothing_sent_to_it() {
    for (hop, reason) in [
        ("224.0.0.1", "martian_hop_multicast"),
        ("127.0.0.1", "martian_hop_loopback"),
        ("0.0.0.0", "martian_hop_unspecified"),
        ("255.255.255.255", "martian_hop_broadcast"),
        ("10.0.1.2", "martian_hop_local"),
    ] {
        let mut e = engine();
        let bytes = path_from(session(1), sender(1), ip(hop));
        let out = feed(&mut e, Instant::ZERO, &bytes, PHOP, UP, 63);
        assert!(out.is_empty(), "{hop}: {out:?}");
        assert_eq!(e.counters().drops.get(reason), Some(&1), "{hop}");
        assert_eq!(e.state_stats().psbs, 0);
        // A Resv for the session from downstream: no path state, and certainly no Resv to the
        // martian hop.
        let r = bytes_of_resv();
        let out = feed(&mut e, Instant::ZERO, &r, NHOP, DOWN, 63);
        assert!(out.iter().all(|t| t.dst != ip(hop)), "{hop}");
        assert_eq!(
            e.counters().unsent,
            0,
            "refused on receipt, before any send"
        );
    }
}

fn bytes_of_resv() -> Vec<u8> {
    bytes(&resv(session(1), StyleKind::Ff, ff(500.0, sender(1))), 63)
}

#[test]
fn a_resv_from_a_martian_next_hop_is_dropped_without_an_error() {
    let mut e = engine();
    feed(
        &mut e,
        Instant::ZERO,
        &bytes(&path(session(1), sender(1)), 63),
        PHOP,
        UP,
        63,
    );
    let Message::Resv(mut r) = resv(session(1), StyleKind::Ff, ff(500.0, sender(1))) else {
        panic!()
    };
    r.hop.addr = ip("224.0.0.1");
    let out = feed(
        &mut e,
        Instant::ZERO,
        &bytes(&Message::Resv(r), 63),
        NHOP,
        DOWN,
        63,
    );
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(e.counters().drops.get("martian_hop_multicast"), Some(&1));
    assert_eq!(e.state_stats().rsbs, 0);
}

#[test]
fn ipv6_martians_are_refused_too() {
    let mut e = node(
        &[(1, "2001:db8:1::2"), (2, "2001:db8:2::1")],
        &[("2001:db8:20::/48", Some("2001:db8:2::2"), 2)],
    );
    let s = Session::ip(ip("2001:db8:20::1"), 17, 1);
    let good_hop = ip("2001:db8:1::1");
    for (src, hop, reason) in [
        ("::1", good_hop, "martian_sender_loopback"),
        ("::", good_hop, "martian_sender_unspecified"),
        ("ff02::1", good_hop, "martian_sender_multicast"),
        ("2001:db8:2::1", good_hop, "martian_sender_local"),
        ("2001:db8:30::1", ip("ff02::1"), "martian_hop_multicast"),
        ("2001:db8:30::1", ip("::1"), "martian_hop_loopback"),
        ("2001:db8:30::1", ip("::"), "martian_hop_unspecified"),
    ] {
        let IpAddr::V6(a) = ip(src) else { panic!() };
        let f = FilterSpec::V6 {
            src: a,
            src_port: 1,
        };
        let out = receive(
            &mut e,
            Instant::ZERO,
            &path_from(s, f, hop),
            good_hop,
            s.dest,
            1,
        );
        assert_eq!(e.counters().drops.get(reason), Some(&1), "{src} via {hop}");
        assert!(
            out.iter().all(|t| t.dst == good_hop),
            "{src}: only an error to the hop"
        );
        assert_eq!(e.state_stats().psbs, 0);
    }
}

#[test]
fn nothing_is_ever_sent_to_a_martian_address() {
    // An unparsable Path from a loopback IP source: the error would go to the IP source.
    let mut e = engine();
    // The RSVP_HOP's C-Type changed to an unknown one so the hop itself is unreadable.
    let mut raw = bytes(&path(session(1), sender(1)), 63);
    let hop_at = 8 + 12 + 3; // header, SESSION; the C-Type byte of RSVP_HOP
    assert_eq!(raw[hop_at - 1], 3, "RSVP_HOP follows SESSION");
    raw[hop_at] = 9;
    raw[2..4].fill(0);
    let out = feed(&mut e, Instant::ZERO, &raw, Ipv4Addr::LOCALHOST, UP, 63);
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(e.counters().unsent, 1);
    assert_eq!(e.counters().drops.get("unknown_ctype"), Some(&1));
}

#[test]
fn session_flags_do_not_make_another_session() {
    let mut e = engine();
    feed(
        &mut e,
        Instant::ZERO,
        &bytes(&path(session(1), sender(1)), 63),
        PHOP,
        UP,
        63,
    );
    let mut policed = session(1);
    policed.flags = Session::E_POLICE;
    let out = feed(
        &mut e,
        Instant::ZERO,
        &bytes(&path(policed, sender(1)), 63),
        PHOP,
        UP,
        63,
    );
    assert_eq!(
        e.state_stats().sessions,
        1,
        "RFC 2205 §3.2: (DestAddress, ProtocolId, DstPort)"
    );
    assert_eq!(e.state_stats().psbs, 1);
    // The E_Police flag is the Path's and goes on downstream.
    let Message::Path(p) = parsed(&out[0]) else {
        panic!()
    };
    assert_eq!(p.session.flags, Session::E_POLICE);
    // A Resv without the flag reaches the same session.
    let out = feed(&mut e, Instant::ZERO, &bytes_of_resv(), NHOP, DOWN, 63);
    assert_eq!(e.state_stats().rsbs, 1);
    assert!(
        out.iter().any(|t| t.dst == IpAddr::V4(PHOP)),
        "Resv goes upstream"
    );
}

#[test]
fn a_tampered_signed_message_counts_as_tampered_not_replayed() {
    use pathwise_auth::{Algorithm, Key, KeyChain, Mode, Policy};
    let mut keys = KeyChain::new();
    keys.insert(Key::new(1, Algorithm::HmacSha256, b"secret").unwrap())
        .unwrap();
    // Without the handshake, so the first message starts the window.
    let policy = Policy {
        challenge: false,
        ..Policy::new(Mode::Require, keys)
    };
    let signed_node = |ifaces: &[(u32, &str)], routes: &[(&str, Option<&str>, u32)]| {
        let mut e = node_with(ifaces, routes, Config::default());
        let mut cfg = e.config().clone();
        for i in &mut cfg.interfaces {
            i.integrity = policy.clone();
        }
        e = RsvpEngine::with_memory_tc(cfg, Instant::ZERO);
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
    };
    let mut h = signed_node(&[(1, "10.0.1.1")], &[("0.0.0.0/0", Some("10.0.1.2"), 1)]);
    let mut r = signed_node(
        &[(1, "10.0.1.2"), (2, "10.0.2.1")],
        &[("20.0.0.0/8", Some("10.0.2.2"), 2)],
    );
    let f = sender_at(Ipv4Addr::new(10, 0, 1, 1));
    h.register_sender(Instant::ZERO, session(1), f, SenderTspec(tb(1000.0)))
        .unwrap();
    let sent = drain(&mut h);
    assert_eq!(sent.len(), 1);
    let t = &sent[0];
    let src = t.src.unwrap();
    receive(&mut r, Instant::ZERO, &t.payload, src, t.dst, 1);
    assert_eq!(
        r.counters().integrity.verified,
        1,
        "{:?}",
        r.counters().drops
    );
    // The same message with one byte of its SENDER_TSPEC changed: same sequence number.
    let mut tampered = t.payload.clone();
    let n = tampered.len();
    tampered[n - 1] ^= 0x40;
    receive(&mut r, Instant::ZERO, &tampered, src, t.dst, 1);
    assert_eq!(r.counters().drops.get("integrity_bad_digest"), Some(&1));
    assert_eq!(r.counters().drops.get("integrity_replayed"), None);
    // The untouched copy again is a replay.
    receive(&mut r, Instant::ZERO, &t.payload, src, t.dst, 1);
    assert_eq!(r.counters().drops.get("integrity_replayed"), Some(&1));
}

#[test]
fn an_integrity_policy_set_live_applies_from_the_next_message() {
    use pathwise_auth::{Algorithm, Key, KeyChain, Mode, Policy};
    let mut keys = KeyChain::new();
    keys.insert(Key::new(1, Algorithm::HmacSha256, b"secret").unwrap())
        .unwrap();
    let policy = Policy {
        challenge: false,
        ..Policy::new(Mode::Require, keys)
    };
    let routes = [("20.0.0.0/8", Some("10.0.2.2"), 2)];
    let mut h = node_with(
        &[(1, "10.0.1.1")],
        &[("0.0.0.0/0", Some("10.0.1.2"), 1)],
        Config::default(),
    );
    let mut r = node_with(
        &[(1, "10.0.1.2"), (2, "10.0.2.1")],
        &routes,
        Config::default(),
    );
    assert!(
        !r.set_integrity(IfIndex(9), policy.clone()),
        "no such interface"
    );
    let send = |h: &mut RsvpEngine, r: &mut RsvpEngine, port: u16| {
        let f = sender_at(Ipv4Addr::new(10, 0, 1, 1));
        h.register_sender(Instant::ZERO, session(port), f, SenderTspec(tb(1000.0)))
            .unwrap();
        for t in drain(h) {
            receive(r, Instant::ZERO, &t.payload, t.src.unwrap(), t.dst, 1);
        }
    };
    // Both off: accepted.
    send(&mut h, &mut r, 1);
    assert_eq!(r.state_stats().psbs, 1);
    // The router now requires integrity on interface 1: the unsigned Path is dropped.
    assert!(r.set_integrity(IfIndex(1), policy.clone()));
    send(&mut h, &mut r, 2);
    assert_eq!(r.state_stats().psbs, 1);
    assert_eq!(r.counters().integrity.verified, 0);
    assert!(r.counters().total_drops() > 0, "{:?}", r.counters().drops);
    // The host signs with the same key from its next message on: accepted and verified.
    assert!(h.set_integrity(IfIndex(1), policy));
    send(&mut h, &mut r, 3);
    assert_eq!(r.state_stats().psbs, 2);
    assert_eq!(r.counters().integrity.verified, 1);
}
