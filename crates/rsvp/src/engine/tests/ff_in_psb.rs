//! A fixed-filter reservation for one sender is held in the sender's PSB; shared reservations
//! and a sender's further FF ones (another interface) are OutISB blocks with OIatPSB relations.
//! The two forms must be one state to the protocol: these tests move reservations between
//! them and check what is installed, what is counted, and that teardown leaves nothing.

use super::messages::*;
use super::*;
use crate::few::Few;
use crate::wire::{FlowDescriptor, FlowSpec};
use pathwise_core::route::MulticastRoute;

/// A second next hop, on [`DOWN`] like [`NHOP`].
const NHOP2: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 3);
/// The third interface of the multicast engine, and a next hop on it.
const SIDE: IfIndex = IfIndex(3);
const SIDE_NHOP: Ipv4Addr = Ipv4Addr::new(10, 0, 3, 2);
const GROUP: Ipv4Addr = Ipv4Addr::new(224, 1, 1, 1);

/// (OutISBs held in PSBs, OutISB blocks, OIatPSB blocks): where the reservations are.
fn forms(e: &RsvpEngine) -> (usize, usize, usize) {
    (e.out_isbs_in_psbs, e.out_isbs.len(), e.oiats.len())
}

/// The rate installed on `ifindex` for the reservation serving `sender`.
fn installed_rate(e: &RsvpEngine, s: Session, ifindex: IfIndex, sender: FilterSpec) -> Option<f32> {
    let v = e.session(&s)?;
    v.installed
        .iter()
        .find(|i| i.ifindex == ifindex && i.senders.contains(&sender))
        .map(|i| match i.flowspec {
            FlowSpec::ControlledLoad(t) => t.rate,
            f => panic!("unexpected flowspec {f:?}"),
        })
}

/// A second sender joining an FF session gets its own reservation, held in its own PSB, and
/// leaving takes exactly that one away (RFC 2205 §3.4: FF is one reservation per sender).
#[test]
fn a_second_ff_sender_joins_and_leaves() {
    let mut e = engine();
    let s = session(1);
    held_ff_reservation(&mut e, s);
    assert_eq!(forms(&e), (1, 0, 0));
    let st = e.state_stats();
    assert_eq!((st.rsbs, st.out_isbs, st.oiats), (1, 1, 1));

    from_upstream(&mut e, &path_of(s, sender_b()));
    let both: Few<FlowDescriptor> = ff(10.0, sender(1))
        .iter()
        .cloned()
        .chain(ff(20.0, sender_b()).iter().cloned())
        .collect();
    from_downstream(&mut e, &resv_from(s, StyleKind::Ff, both, down(NHOP)), NHOP);
    assert_eq!(forms(&e), (2, 0, 0));
    assert_eq!(e.traffic_control().len(), 2);
    assert_eq!(installed_rate(&e, s, DOWN, sender(1)), Some(10.0));
    assert_eq!(installed_rate(&e, s, DOWN, sender_b()), Some(20.0));

    // The second sender leaves: its reservation goes with its PSB, the first stays.
    from_upstream(&mut e, &path_tear_of(s, sender_b()));
    assert_eq!(forms(&e), (1, 0, 0));
    assert_eq!(e.traffic_control().len(), 1);
    assert_eq!(installed_rate(&e, s, DOWN, sender(1)), Some(10.0));
    assert_eq!(installed_rate(&e, s, DOWN, sender_b()), None);

    from_upstream(&mut e, &path_tear_of(s, sender(1)));
    assert!(e.is_idle(), "{:?}", e.state_stats());
    assert!(e.traffic_control().is_empty());
}

/// Two next hops asking FF for one sender on one interface make one reservation, the LUB of
/// both (RFC 2205 §3.4); still held in the PSB, and back to the remaining request when one goes.
#[test]
fn a_second_next_hop_merges_into_the_held_reservation() {
    let mut e = engine();
    let s = session(1);
    held_ff_reservation(&mut e, s);
    from_downstream(
        &mut e,
        &resv_from(s, StyleKind::Ff, ff(30.0, sender(1)), down(NHOP2)),
        NHOP2,
    );
    assert_eq!(forms(&e), (1, 0, 0));
    assert_eq!(e.state_stats().rsbs, 2);
    assert_eq!(installed_rate(&e, s, DOWN, sender(1)), Some(30.0));

    from_downstream(
        &mut e,
        &resv_tear_from(s, StyleKind::Ff, ff(30.0, sender(1)), down(NHOP2)),
        NHOP2,
    );
    assert_eq!(forms(&e), (1, 0, 0));
    assert_eq!(installed_rate(&e, s, DOWN, sender(1)), Some(10.0));

    from_downstream(
        &mut e,
        &resv_tear_from(s, StyleKind::Ff, ff(10.0, sender(1)), down(NHOP)),
        NHOP,
    );
    assert_eq!(forms(&e), (0, 0, 0));
    assert!(e.traffic_control().is_empty());
    from_upstream(&mut e, &path_tear_of(s, sender(1)));
    assert!(e.is_idle(), "{:?}", e.state_stats());
}

/// A style change (torn down, then requested again in another style: RFC 2205 §3.1.4 refuses
/// mixed styles) moves the reservation between the forms: WF is shared, so a block serving
/// every sender; FF again is held in the PSB.
#[test]
fn a_style_change_moves_the_reservation_between_forms() {
    let mut e = engine();
    let s = session(1);
    from_upstream(&mut e, &path_of(s, sender(1)));
    from_upstream(&mut e, &path_of(s, sender_b()));
    from_downstream(
        &mut e,
        &resv_from(s, StyleKind::Ff, ff(10.0, sender(1)), down(NHOP)),
        NHOP,
    );
    assert_eq!(forms(&e), (1, 0, 0));

    from_downstream(
        &mut e,
        &resv_tear_from(s, StyleKind::Ff, ff(10.0, sender(1)), down(NHOP)),
        NHOP,
    );
    from_downstream(
        &mut e,
        &resv_from(s, StyleKind::Wf, wf(15.0), down(NHOP)),
        NHOP,
    );
    assert_eq!(forms(&e), (0, 1, 2));
    let st = e.state_stats();
    assert_eq!((st.out_isbs, st.oiats), (1, 2));
    assert_eq!(installed_rate(&e, s, DOWN, sender(1)), Some(15.0));
    assert_eq!(installed_rate(&e, s, DOWN, sender_b()), Some(15.0));

    from_downstream(
        &mut e,
        &resv_tear_from(s, StyleKind::Wf, wf(15.0), down(NHOP)),
        NHOP,
    );
    assert_eq!(forms(&e), (0, 0, 0));
    from_downstream(
        &mut e,
        &resv_from(s, StyleKind::Ff, ff(20.0, sender_b()), down(NHOP)),
        NHOP,
    );
    assert_eq!(forms(&e), (1, 0, 0));
    assert_eq!(installed_rate(&e, s, DOWN, sender_b()), Some(20.0));
    assert_eq!(e.traffic_control().len(), 1);

    from_upstream(&mut e, &path_tear_of(s, sender(1)));
    from_upstream(&mut e, &path_tear_of(s, sender_b()));
    assert!(e.is_idle(), "{:?}", e.state_stats());
    assert!(e.traffic_control().is_empty());
}

/// A multicast sender whose data leaves by two interfaces has an FF reservation on each: the
/// PSB holds one, the other is a block; when the held one goes the block stays a block, and a
/// new one is held again.
#[test]
fn a_second_interface_is_a_block_beside_the_held_reservation() {
    let mut cfg = router_config(8_000_000);
    let mut side = cfg.interfaces[1].clone();
    side.ifindex = SIDE;
    side.addrs = vec![IpAddr::V4(Ipv4Addr::new(10, 0, 3, 1))];
    cfg.interfaces.push(side);
    let mut e = RsvpEngine::with_memory_tc(cfg, Instant::ZERO);
    let src = Ipv4Addr::new(30, 0, 0, 1);
    e.handle_route_change(
        Instant::ZERO,
        RouteChange::AddMulticast(MulticastRoute {
            source: src.into(),
            group: GROUP.into(),
            iif: Some(UP),
            oifs: vec![DOWN, SIDE],
            local_member: false,
        }),
    );
    let s = Session::ip(IpAddr::V4(GROUP), 17, 1);
    let side_hop = RsvpHop::new(SIDE_NHOP.into(), SIDE.0);
    held_ff_reservation(&mut e, s);
    feed(
        &mut e,
        Instant::ZERO,
        &resv_from(s, StyleKind::Ff, ff(20.0, sender(1)), side_hop.clone()),
        SIDE_NHOP,
        SIDE,
        64,
    );
    assert_eq!(forms(&e), (1, 1, 1));
    let st = e.state_stats();
    assert_eq!((st.out_isbs, st.oiats), (2, 2));
    assert_eq!(installed_rate(&e, s, DOWN, sender(1)), Some(10.0));
    assert_eq!(installed_rate(&e, s, SIDE, sender(1)), Some(20.0));

    // The held one goes; the block stays.
    from_downstream(
        &mut e,
        &resv_tear_from(s, StyleKind::Ff, ff(10.0, sender(1)), down(NHOP)),
        NHOP,
    );
    assert_eq!(forms(&e), (0, 1, 1));
    assert_eq!(installed_rate(&e, s, SIDE, sender(1)), Some(20.0));
    assert_eq!(e.traffic_control().len(), 1);
    // A new one on DOWN is held in the PSB again.
    from_downstream(
        &mut e,
        &resv_from(s, StyleKind::Ff, ff(12.0, sender(1)), down(NHOP)),
        NHOP,
    );
    assert_eq!(forms(&e), (1, 1, 1));
    assert_eq!(installed_rate(&e, s, DOWN, sender(1)), Some(12.0));

    // The sender leaves: both forms go.
    from_upstream(&mut e, &path_tear_of(s, sender(1)));
    assert!(e.is_idle(), "{:?}", e.state_stats());
    assert!(e.traffic_control().is_empty());
}
