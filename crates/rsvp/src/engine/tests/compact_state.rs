//! State kept in compact forms must behave as the fields it replaced: a session's destination
//! interned ([`super::super::state::SessionDest`]), a PSB's previous hop and incoming interface
//! as one field, an RSB's next hop and outgoing interface as one field and its style as the
//! enum of its filters ([`super::super::state::Selection`]). These tests move state through
//! each form's transitions and check what the engine reports and that teardown leaves nothing.

use super::messages::*;
use super::*;
use crate::wire::FlowSpec;

/// A second previous hop on [`UP`], and a third interface with a previous hop on it.
const PHOP2: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 3);
const SIDE: IfIndex = IfIndex(3);
const SIDE_PHOP: Ipv4Addr = Ipv4Addr::new(10, 0, 3, 2);

/// The (style, senders, next hop, outgoing interface) of each request of session `s`.
type Requests = Vec<(StyleKind, Vec<FilterSpec>, Option<IpAddr>, Option<IfIndex>)>;

fn requests(e: &RsvpEngine, s: Session) -> Requests {
    e.session(&s).map_or_else(Vec::new, |v| {
        v.resvs
            .iter()
            .map(|r| (r.style, r.filters.clone(), r.nhop, r.oi))
            .collect()
    })
}

/// Sessions to one destination share its interned copy; each keeps its own port, and the
/// copy goes with the last of them (RFC 2205 §3.2: a session is (DestAddress, ProtocolId,
/// DstPort), so sharing the address must not merge sessions).
#[test]
fn sessions_to_one_destination_share_it_and_stay_apart() {
    let mut e = engine();
    let (a, b) = (session(1), session(2));
    let other = Session::ip(IpAddr::V4(Ipv4Addr::new(20, 0, 0, 9)), 17, 1);
    for s in [a, b, other] {
        from_upstream(&mut e, &path_from(s, sender(1), PHOP, 7));
    }
    assert_eq!(e.state_stats().sessions, 3);
    assert_eq!(e.dests.len(), 2);
    for s in [a, b, other] {
        assert_eq!(e.session(&s).map(|v| v.session), Some(s));
    }
    from_upstream(&mut e, &path_tear_of(a, sender(1)));
    assert_eq!(e.state_stats().sessions, 2);
    assert_eq!(e.dests.len(), 2);
    assert_eq!(e.session(&b).map(|v| v.session), Some(b));
    from_upstream(&mut e, &path_tear_of(b, sender(1)));
    assert_eq!(e.dests.len(), 1);
    // A session to the same address again interns it again.
    from_upstream(&mut e, &path_from(a, sender(1), PHOP, 7));
    assert_eq!(e.dests.len(), 2);
    for s in [a, other] {
        from_upstream(&mut e, &path_tear_of(s, sender(1)));
    }
    assert!(e.is_idle(), "{:?}", e.state_stats());
}

/// A sender's Path moving to another previous hop, then to another interface, moves both
/// halves of the PSB's upstream together (RFC 2209 §3: PHOP and IncInterface are updated
/// from each Path), and the old neighbour's hop state goes.
#[test]
fn a_sender_moves_to_another_previous_hop_and_interface() {
    let mut cfg = router_config(8_000_000);
    let mut side = cfg.interfaces[0].clone();
    side.ifindex = SIDE;
    side.addrs = vec![IpAddr::V4(Ipv4Addr::new(10, 0, 3, 1))];
    cfg.interfaces.push(side);
    let mut e = RsvpEngine::with_memory_tc(cfg, Instant::ZERO);
    e.handle_route_change(Instant::ZERO, route());
    let s = session(1);
    let upstream = |e: &RsvpEngine| {
        let v = e.session(&s).expect("session");
        v.paths.iter().map(|p| (p.phop, p.iif)).collect::<Vec<_>>()
    };
    from_upstream(&mut e, &path_from(s, sender(1), PHOP, 7));
    assert_eq!(upstream(&e), vec![(Some(PHOP.into()), Some(UP))]);
    feed(
        &mut e,
        Instant::ZERO,
        &path_from(s, sender(1), PHOP2, 8),
        PHOP2,
        UP,
        63,
    );
    assert_eq!(upstream(&e), vec![(Some(PHOP2.into()), Some(UP))]);
    assert_eq!(e.state_stats().phops, 1);
    feed(
        &mut e,
        Instant::ZERO,
        &path_from(s, sender(1), SIDE_PHOP, 9),
        SIDE_PHOP,
        SIDE,
        63,
    );
    assert_eq!(upstream(&e), vec![(Some(SIDE_PHOP.into()), Some(SIDE))]);
    assert_eq!(e.state_stats().phops, 1);
    // A second sender from the first neighbour: two upstreams side by side.
    from_upstream(&mut e, &path_from(s, sender_b(), PHOP, 7));
    let mut both = upstream(&e);
    both.sort();
    assert_eq!(
        both,
        vec![
            (Some(PHOP.into()), Some(UP)),
            (Some(SIDE_PHOP.into()), Some(SIDE))
        ]
    );
    assert_eq!(e.state_stats().phops, 2);
    feed(
        &mut e,
        Instant::ZERO,
        &path_tear_from(s, sender(1), SIDE_PHOP, 9),
        SIDE_PHOP,
        SIDE,
        63,
    );
    from_upstream(&mut e, &path_tear_of(s, sender_b()));
    assert!(e.is_idle(), "{:?}", e.state_stats());
}

/// An SE request's list shrinks as its senders leave, by PathTear (RFC 2209 §3: RSBs "that no
/// longer match any PSB" go) or by a ResvTear naming one of them (RFC 2205 §3.1.6); the RSB
/// goes with its last sender, and the session can then take FF, held inline again.
#[test]
fn a_shared_explicit_list_shrinks_and_the_request_goes_with_its_last_sender() {
    let mut e = engine();
    let s = session(1);
    let c = FilterSpec::ip(IpAddr::V4(Ipv4Addr::new(30, 0, 0, 3)), 1);
    for f in [sender(1), sender_b(), c] {
        from_upstream(&mut e, &path_from(s, f, PHOP, 7));
    }
    let all = [sender(1), sender_b(), c];
    from_downstream(
        &mut e,
        &bytes(&resv(s, StyleKind::Se, se(10.0, &all)), 64),
        NHOP,
    );
    let nhop = Some(IpAddr::V4(NHOP));
    assert_eq!(
        requests(&e, s),
        vec![(StyleKind::Se, all.to_vec(), nhop, Some(DOWN))]
    );
    // One sender's path goes: the list loses it.
    from_upstream(&mut e, &path_tear_of(s, sender_b()));
    assert_eq!(
        requests(&e, s),
        vec![(StyleKind::Se, vec![sender(1), c], nhop, Some(DOWN))]
    );
    // The next hop tears down one sender: one left, still SE.
    from_downstream(
        &mut e,
        &resv_tear_of(s, StyleKind::Se, se(10.0, &[c])),
        NHOP,
    );
    assert_eq!(
        requests(&e, s),
        vec![(StyleKind::Se, vec![sender(1)], nhop, Some(DOWN))]
    );
    assert_eq!(e.traffic_control().len(), 1);
    // The last sender's path goes: so does the request and its reservation.
    from_upstream(&mut e, &path_tear_of(s, sender(1)));
    assert_eq!(requests(&e, s), Vec::new());
    assert_eq!(e.state_stats().rsbs, 0);
    assert!(e.traffic_control().is_empty());
    // The session is left with sender C's path; FF for it now is accepted (no SE request is
    // left to conflict with, RFC 2205 §3.1.4) and held as one filter.
    from_downstream(
        &mut e,
        &bytes(&resv(s, StyleKind::Ff, ff(5.0, c)), 64),
        NHOP,
    );
    assert_eq!(
        requests(&e, s),
        vec![(StyleKind::Ff, vec![c], nhop, Some(DOWN))]
    );
    from_upstream(&mut e, &path_tear_of(s, c));
    assert!(e.is_idle(), "{:?}", e.state_stats());
    assert!(e.traffic_control().is_empty());
}

/// A changed SE request that traffic control refuses is undone: the RSB keeps the senders and
/// flowspec it had (RFC 2205 §2.5: "when admission control fails for a reservation request,
/// any existing reservation is left in place"), and the next hop is told with a ResvErr.
#[test]
fn a_refused_change_of_a_shared_explicit_list_is_undone() {
    let mut e = engine();
    let s = session(1);
    for f in [sender(1), sender_b()] {
        from_upstream(&mut e, &path_from(s, f, PHOP, 7));
    }
    let both = [sender(1), sender_b()];
    from_downstream(
        &mut e,
        &bytes(&resv(s, StyleKind::Se, se(10.0, &both)), 64),
        NHOP,
    );
    let nhop = Some(IpAddr::V4(NHOP));
    let before = vec![(StyleKind::Se, both.to_vec(), nhop, Some(DOWN))];
    assert_eq!(requests(&e, s), before);
    // 8 Mbit/s reservable: 10 MB/s for one sender cannot be had.
    let out = from_downstream(
        &mut e,
        &bytes(&resv(s, StyleKind::Se, se(10_000_000.0, &[sender(1)])), 64),
        NHOP,
    );
    assert!(
        out.iter()
            .any(|t| matches!(parsed(t), Message::ResvErr(_)) && error_of(t).0 == 1),
        "{out:?}"
    );
    assert_eq!(requests(&e, s), before);
    let rate = e
        .session(&s)
        .and_then(|v| v.resvs.first().map(|r| r.flowspec));
    assert_eq!(rate, Some(FlowSpec::ControlledLoad(tb(10.0))));
    for f in both {
        from_upstream(&mut e, &path_tear_of(s, f));
    }
    assert!(e.is_idle(), "{:?}", e.state_stats());
    assert!(e.traffic_control().is_empty());
}
