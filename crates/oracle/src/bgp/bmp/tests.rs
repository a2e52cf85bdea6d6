use super::*;
use crate::Update;
use crate::bgp::wire::{self, Peer};

fn net(s: &str) -> IpNet {
    s.parse().unwrap()
}

fn exit() -> IpAddr {
    "10.255.0.1".parse().unwrap()
}

fn session() -> BmpSession {
    BmpSession::new(
        exit(),
        vec![ExitNic {
            index: 3,
            local: "192.0.2.2".parse().unwrap(),
            peer: "192.0.2.1".parse().unwrap(),
        }],
    )
}

fn upstream() -> Peer {
    Peer::global("192.0.2.1".parse().unwrap(), 64510)
}

fn networks(rib: &mut BgpRib) -> Vec<(IpNet, u8, u32, u16)> {
    let mut v: Vec<_> = rib
        .external_networks()
        .into_iter()
        .map(|n| (n.prefix, n.nic, n.as_number, n.as_distance))
        .collect();
    v.sort();
    v
}

#[test]
fn a_session_turns_route_monitoring_into_external_networks() {
    let mut s = session();
    let mut rib = BgpRib::new();
    let mut stream = wire::initiation("exit1", "FRR test");
    stream.extend(wire::peer_up(
        &upstream(),
        "192.0.2.2".parse().unwrap(),
        64500,
    ));
    stream.extend(wire::route_monitoring(
        &upstream(),
        &wire::update(
            &[net("203.0.113.0/24"), net("2001:db8:1::/48")],
            &[64510, 64511, 64512],
            &[],
        ),
    ));
    // Fed a byte at a time: framing holds partial messages.
    for b in &stream {
        s.handle_bytes(std::slice::from_ref(b), &mut rib).unwrap();
    }
    assert_eq!(
        networks(&mut rib),
        vec![
            (net("203.0.113.0/24"), 3, 64512, 3),
            (net("2001:db8:1::/48"), 3, 64512, 3)
        ]
    );
    assert_eq!(s.sys_name(), (Some("exit1"), Some("FRR test")));
    let c = s.counters();
    assert_eq!(c.messages[0], 1);
    assert_eq!(c.messages[3], 1);
    assert_eq!(c.messages[4], 1);
    assert_eq!(c.announced, 2);
    // Withdraw the IPv6 prefix (MP_UNREACH_NLRI), shorten the IPv4 path.
    let mut more = wire::route_monitoring(
        &upstream(),
        &wire::update(&[], &[], &[net("2001:db8:1::/48")]),
    );
    more.extend(wire::route_monitoring(
        &upstream(),
        &wire::update(&[net("203.0.113.0/24")], &[64510], &[]),
    ));
    assert_eq!(s.handle_bytes(&more, &mut rib), Ok(2));
    assert_eq!(
        networks(&mut rib),
        vec![(net("203.0.113.0/24"), 3, 64510, 1)]
    );
    assert_eq!(s.counters().withdrawn, 1);
    // End-of-RIB: counted, nothing changes.
    let eor = wire::route_monitoring(&upstream(), &wire::update(&[], &[], &[]));
    s.handle_bytes(&eor, &mut rib).unwrap();
    assert_eq!(s.counters().end_of_rib, 1);
    // Peer down: the peer's routes go.
    s.handle_bytes(&wire::peer_down(&upstream()), &mut rib)
        .unwrap();
    assert!(networks(&mut rib).is_empty());
    let updates = rib.take_updates();
    assert!(
        updates.is_empty(),
        "announced and gone within one batch: {updates:?}"
    );
}

#[test]
fn termination_and_session_end_remove_the_exits_routes() {
    let mut s = session();
    let mut rib = BgpRib::new();
    let rm = wire::route_monitoring(
        &upstream(),
        &wire::update(&[net("198.51.100.0/24")], &[64510, 64520], &[]),
    );
    s.handle_bytes(&rm, &mut rib).unwrap();
    assert!(
        matches!(&rib.take_updates()[..], [Update::AddExternalNetwork(n)] if n.as_distance == 2 && n.nic == 3)
    );
    assert_eq!(
        s.handle_bytes(&wire::termination(), &mut rib),
        Err(BmpError::Terminated)
    );
    s.end(&mut rib);
    assert!(matches!(
        &rib.take_updates()[..],
        [Update::RemoveExternalNetwork { .. }]
    ));
}

#[test]
fn what_is_not_the_exits_adj_rib_in_is_dropped_and_counted() {
    let mut s = session();
    let mut rib = BgpRib::new();
    let up = wire::update(&[net("198.51.100.0/24")], &[64510], &[]);
    let mut rd = upstream();
    rd.peer_type = 1;
    let mut out = upstream();
    out.flags = 0x10;
    let mut stream = wire::route_monitoring(&rd, &up);
    stream.extend(wire::route_monitoring(&out, &up));
    // A route monitoring message carrying a KEEPALIVE.
    stream.extend(wire::route_monitoring(
        &upstream(),
        &[0xff; 16]
            .iter()
            .copied()
            .chain([0, 19, 4])
            .collect::<Vec<u8>>(),
    ));
    // An announcement without AS_PATH: a truncated UPDATE body is malformed; build one by hand
    // with ORIGIN and NEXT_HOP only.
    let mut body = vec![0, 0];
    let attrs = [0x40, 1, 1, 0, 0x40, 3, 4, 192, 0, 2, 1];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend_from_slice(&attrs);
    body.extend_from_slice(&[24, 198, 51, 100]);
    let mut bgp = vec![0xff; 16];
    bgp.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    bgp.push(2);
    bgp.extend_from_slice(&body);
    stream.extend(wire::route_monitoring(&upstream(), &bgp));
    // Garbage inside a well-framed message.
    let mut junk = wire::route_monitoring(&upstream(), &up);
    // An unknown BGP message type (after the 6-byte BMP and 42-byte per-peer headers, the
    // 16-byte marker and the length).
    junk[66] = 9;
    stream.extend(junk);
    s.handle_bytes(&stream, &mut rib).unwrap();
    let d = s.counters().drops;
    assert_eq!(d.peer_type, 1);
    assert_eq!(d.adj_rib_out, 1);
    assert_eq!(d.not_update, 1);
    assert_eq!(d.missing_as_path + d.malformed, 2, "{d:?}");
    assert!(rib.external_networks().is_empty());
}

#[test]
fn a_broken_stream_ends_the_session() {
    let mut rib = BgpRib::new();
    assert_eq!(
        session().handle_bytes(&[4, 0, 0, 0, 6, 4], &mut rib),
        Err(BmpError::Version(4))
    );
    assert_eq!(
        session().handle_bytes(&[3, 0, 0, 0, 5, 4], &mut rib),
        Err(BmpError::Length(5))
    );
    assert_eq!(
        session().handle_bytes(&[3, 0xff, 0, 0, 0, 0], &mut rib),
        Err(BmpError::Length(0xff00_0000))
    );
    // A partial header waits for more.
    assert_eq!(session().handle_bytes(&[3, 0, 0], &mut rib), Ok(0));
}

#[test]
fn as_sets_count_once_and_an_empty_path_is_the_peers_as() {
    use bgpkit_parser::models::{AsPath, AsPathSegment};
    let p = AsPath::from_segments(vec![
        AsPathSegment::sequence([1, 2]),
        AsPathSegment::set([7, 5, 9]),
    ]);
    assert_eq!(
        route_of_path(&p, 99),
        Route {
            as_distance: 3,
            origin_as: 5
        }
    );
    assert_eq!(
        route_of_path(&AsPath::new(), 99),
        Route {
            as_distance: 0,
            origin_as: 99
        }
    );
}

/// A BMP session from FRR 8.4.4's bgpd (`-M bmp`, `bmp monitor ipv4 unicast pre-policy`,
/// `soft-reconfiguration inbound`), recorded by the station side in the namespace lab of
/// `crates/pathwise/tests/oracle_bgp_netns.rs`: Initiation, two Peer Downs (the peer not up
/// yet), Peer Up for 10.1.1.1 (AS 65001), then 198.51.100.0/24 (path 65001 ×4) and
/// 203.0.113.0/24 (65001), each twice. FRR writes its own AS 65000 in front of the paths.
#[test]
fn an_frr_session_parses_and_frrs_own_as_in_front_is_not_counted() {
    let bytes = include_bytes!("../../../tests/data/frr-8.4-bmp-session.bin");
    let exit: IpAddr = "10.255.0.1".parse().unwrap();
    let mut s = BmpSession::new(
        exit,
        vec![ExitNic {
            index: 1,
            local: "10.1.1.2".parse().unwrap(),
            peer: "10.1.1.1".parse().unwrap(),
        }],
    );
    let mut rib = BgpRib::new();
    assert_eq!(s.handle_bytes(bytes, &mut rib), Ok(8));
    assert_eq!(
        s.counters().drops,
        BmpDrops::default(),
        "{:?}",
        s.last_error()
    );
    assert_eq!(s.counters().messages, [4, 0, 2, 1, 1, 0, 0]);
    assert_eq!(s.counters().own_as_removed, 4);
    assert_eq!(s.sys_name(), (Some("ex1"), Some("FRRouting 8.4.4")));
    assert_eq!(
        networks(&mut rib),
        vec![
            (net("198.51.100.0/24"), 1, 65001, 4),
            (net("203.0.113.0/24"), 1, 65001, 1)
        ]
    );
}

/// FRR 8.4 can send a Peer Up without the received OPEN ("bmp: missing RX OPEN message for
/// peer", seen in CI on 2026-11-24), which the parser refuses: the exit's own AS is then not
/// known from the sent OPEN, yet the AS it writes in front of the path must still not count.
#[test]
fn without_the_peer_up_the_routers_own_as_in_front_is_still_not_counted() {
    let p = |v: &[u32]| AsPath::from_sequence(v);
    // From eBGP peer 65001, written by exit AS 65000 with its own AS in front.
    assert!(prepended_by_router(&p(&[65000, 65001]), 65001, None));
    assert!(prepended_by_router(&p(&[65000, 65001, 65001]), 65001, None));
    // As received: the peer's AS first.
    assert!(!prepended_by_router(&p(&[65001, 65002]), 65001, None));
    // Another AS first and the peer's nowhere second: not ours to remove.
    assert!(!prepended_by_router(&p(&[65009, 65002]), 65001, None));
    // With the sent OPEN known, the rule of the Peer Up.
    assert!(prepended_by_router(&p(&[65000, 65001]), 65001, Some(65000)));
    assert!(!prepended_by_router(
        &p(&[65001, 65001]),
        65001,
        Some(65001)
    ));
}
