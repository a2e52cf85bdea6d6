//! Route changes that the fault campaign (`pathwise sim campaign qos`, docs/CAMPAIGNS.md
//! finding 4) found leaving reservations off the data path.

use super::common::*;
use pathwise_qos_nslp::QosEvent;
use pathwise_sim::{Topology, testbeds};

/// 4 Mbit/s in bytes per second.
const RATE: f64 = 500_000.0;

/// The thesis testbed plus an N3 - N5 bypass on which N3 may reserve only 1 Mbit/s.
fn with_narrow_bypass() -> Topology {
    let text = format!(
        "{}\n[[link]]\na = \"N3\"\nb = \"N5\"\ncost = 3\na_reservable = \"1Mbit\"\n",
        testbeds::GIST_THESIS
    );
    Topology::from_toml(&text).expect("topology")
}

/// Move the flow off N3 - N4 and let the soft state of the old branch run out.
fn reroute_at_n3(sim: &mut QosSim) -> u32 {
    let to_n4 = ifindex_to(sim, "N3", "N4");
    let l = sim.link_between(id(sim, "N3"), id(sim, "N4")).unwrap();
    sim.link_down(l);
    run_secs(sim, 120);
    to_n4
}

fn failed(sim: &mut QosSim, name: &str, sid: pathwise_gist::wire::SessionId) -> bool {
    events(sim, name)
        .iter()
        .any(|e| matches!(e, QosEvent::Failed { session_id, .. } if *session_id == sid))
}

/// RFC 5974 §3.2.12, §5.4.1 (RFC 5975 §4.2.3): the QNI's flow moves to an interface that
/// refuses the reservation. Before the fix the QNI kept it on the interface the flow had
/// left, for as long as its application held the session.
#[test]
fn a_qni_whose_new_interface_refuses_gives_the_reservation_up() {
    let mut sim = sim(with_narrow_bypass(), 5, short_gist, short);
    let sid = reserve(&mut sim, "N3", "N6", 4.0);
    run_secs(&mut sim, 2);
    let to_n4 = ifindex_to(&sim, "N3", "N4");
    assert_eq!(tc_of(&mut sim, "N3", to_n4), (1, RATE));
    assert_eq!(reroute_at_n3(&mut sim), to_n4);
    assert_eq!(
        tc_of(&mut sim, "N3", to_n4),
        (0, 0.0),
        "nothing left on the interface the flow no longer takes"
    );
    assert!(state(&mut sim, "N3", sid).is_none(), "the QNI gave it up");
    assert!(failed(&mut sim, "N3", sid), "and told its application");
    assert!(counters(&mut sim, "N3").readmission_failures >= 1);
    assert_clean(&mut sim, &["N1", "N2", "N3", "N4", "N5", "N6", "N7"]);
}

/// The same at a QNE: its refusal on the new interface ends the reservation there and, by an
/// error RESPONSE, at the QNI; nothing stays on the old interface.
#[test]
fn a_qne_whose_new_interface_refuses_ends_the_reservation_up_to_the_qni() {
    let mut sim = sim(with_narrow_bypass(), 5, short_gist, short);
    let sid = reserve(&mut sim, "N1", "N6", 4.0);
    run_secs(&mut sim, 2);
    let to_n4 = ifindex_to(&sim, "N3", "N4");
    assert_eq!(tc_of(&mut sim, "N3", to_n4), (1, RATE));
    assert_eq!(reroute_at_n3(&mut sim), to_n4);
    assert_eq!(tc_of(&mut sim, "N3", to_n4), (0, 0.0));
    assert!(state(&mut sim, "N3", sid).is_none());
    assert!(state(&mut sim, "N1", sid).is_none(), "the QNI learnt of it");
    assert!(failed(&mut sim, "N1", sid));
    assert_clean(&mut sim, &["N1", "N2", "N3", "N4", "N5", "N6", "N7"]);
}

/// The thesis testbed plus an N3 - N5 bypass (cost 3, as wide as the rest): the flow N1 → N6
/// takes N3 - N4 - N5 until N3 - N4 costs more, then N3 - N5; N4 stays up and reachable, off
/// the path.
fn with_wide_bypass() -> Topology {
    let text = format!(
        "{}\n[[link]]\na = \"N3\"\nb = \"N5\"\ncost = 3\n",
        testbeds::GIST_THESIS
    );
    Topology::from_toml(&text).expect("topology")
}

/// Make N3 - N4 dearer than the bypass and step until `node` acts on the route change
/// (its `route_changes` counter moves); returns how long that took.
fn divert_at_n3_until_acted_on(sim: &mut QosSim, node: &str) -> pathwise_core::time::Duration {
    let before = counters(sim, node).route_changes;
    let l = sim.link_between(id(sim, "N3"), id(sim, "N4")).unwrap();
    sim.update_link(l, None, |p| p.cost = 10);
    let start = sim.now();
    while counters(sim, node).route_changes == before {
        sim.run_for(pathwise_core::time::Duration::from_millis(100));
        assert!(
            sim.now() - start < pathwise_core::time::Duration::from_secs(60),
            "{node} never saw the route change"
        );
    }
    sim.now() - start
}

/// The old branch N4 after the flow left it: no state, no class.
fn assert_old_branch_gone(sim: &mut QosSim, sid: pathwise_gist::wire::SessionId) {
    assert!(state(sim, "N4", sid).is_none(), "N4's state is gone");
    assert_eq!(
        with_qos(sim, "N4", |q, _, _| q.traffic_control().lock().len()),
        0,
        "and its traffic-control class"
    );
}

/// RFC 5974 §5.2.5.2, §3.2.12: after a route change, the divergence point of a
/// sender-initiated reservation (N3) tears the old branch (N4) by the old peer's SII-Handle
/// once the RESERVE down the new path is answered — within one refresh period R of acting on
/// the change, where soft state alone takes a lifetime (5.25 R). The tear, passed on by N4,
/// is ignored where the branches meet (N5: not from its current peer).
#[test]
fn a_sender_initiated_old_branch_is_torn_within_one_refresh_period() {
    let mut sim = sim(with_wide_bypass(), 11, short_gist, short);
    let sid = reserve(&mut sim, "N1", "N6", 4.0);
    run_secs(&mut sim, 2);
    let to_n4 = ifindex_to(&sim, "N3", "N4");
    assert_eq!(tc_of(&mut sim, "N3", to_n4), (1, RATE));
    assert!(state(&mut sim, "N4", sid).is_some());

    divert_at_n3_until_acted_on(&mut sim, "N3");
    run_secs(&mut sim, 5); // R
    assert_old_branch_gone(&mut sim, sid);
    assert_eq!(counters(&mut sim, "N4").torn, 1, "torn, not timed out");
    assert_eq!(counters(&mut sim, "N4").expired, 0);
    assert!(counters(&mut sim, "N3").tears_sent >= 1);
    assert!(
        counters(&mut sim, "N5").dropped("tear_not_from_peer") >= 1,
        "N4's tear, passed on, is ignored where the branches meet"
    );
    assert_eq!(counters(&mut sim, "N5").torn, 0);
    let to_n5 = ifindex_to(&sim, "N3", "N5");
    assert_eq!(
        tc_of(&mut sim, "N3", to_n5),
        (1, RATE),
        "N3 holds it on the bypass"
    );
    for n in ["N1", "N3", "N5", "N6"] {
        assert!(
            state(&mut sim, n, sid).is_some(),
            "{n} keeps the reservation"
        );
    }
    let explicit =
        |sim: &QosSim, n: &str| sim.engine(id(sim, n)).unwrap().inner().counters().clone();
    assert_eq!(explicit(&sim, "N3").explicit_sent, 1);
    assert_eq!(
        explicit(&sim, "N4").explicit_received,
        2,
        "N3's tear, and N5's Route Change NOTIFY (§5.2.5.3)"
    );

    // Released later, nothing is left anywhere.
    with_qos(&mut sim, "N1", |q, g, now| q.release(g, now, sid)).unwrap();
    run_secs(&mut sim, 60);
    assert_clean(&mut sim, &["N1", "N2", "N3", "N4", "N5", "N6", "N7"]);
}

/// The same for a receiver-initiated reservation (QNI N6, RESERVEs travelling up): N3 sends a
/// QUERY with RESERVE-INIT down the bypass (§3.2.12), N5 — where the branches meet, and the
/// node whose peer towards the QNR changed — answers with a full RESERVE carrying an RII up
/// the new path, and on its RESPONSE tears N4 by N4's SII-Handle. N4 releases its reverse path
/// too, so its GIST stops taking N5's upstream peer back (RFC 5971 §7.1.4).
#[test]
fn a_receiver_initiated_old_branch_is_torn_within_one_refresh_period() {
    let mut sim = sim(with_wide_bypass(), 12, short_gist, short);
    let req = pathwise_qos_nslp::ReserveRequest::new(lo(&sim, "N1"), lo(&sim, "N6"), tmod(4.0));
    let sid = with_qos(&mut sim, "N1", |q, g, now| {
        q.reserve_receiver_initiated(g, now, &req)
    })
    .unwrap();
    run_secs(&mut sim, 2);
    let to_n4 = ifindex_to(&sim, "N3", "N4");
    assert_eq!(tc_of(&mut sim, "N3", to_n4), (1, RATE));
    assert!(state(&mut sim, "N4", sid).is_some());

    divert_at_n3_until_acted_on(&mut sim, "N3");
    run_secs(&mut sim, 5); // R
    assert_old_branch_gone(&mut sim, sid);
    assert_eq!(counters(&mut sim, "N4").torn, 1, "torn, not timed out");
    assert!(counters(&mut sim, "N5").tears_sent >= 1);
    let to_n5 = ifindex_to(&sim, "N3", "N5");
    assert_eq!(
        tc_of(&mut sim, "N3", to_n5),
        (1, RATE),
        "N3 holds it on the bypass"
    );
    // Stays so: N5's refreshes go up the bypass, none wins N4 back.
    run_secs(&mut sim, 60);
    assert_old_branch_gone(&mut sim, sid);
    for n in ["N1", "N3", "N5", "N6"] {
        assert!(
            state(&mut sim, n, sid).is_some(),
            "{n} keeps the reservation"
        );
    }
    assert_eq!(tc_of(&mut sim, "N3", to_n5), (1, RATE));
}

/// RFC 5974 §5.2.5.3, §3.2.12: where the branches meet (N5) GIST reports the upstream peer
/// changed from N4 to N3; N5 sends N4 a NOTIFY "Route Change" (Informational 0x02), explicitly
/// routed by N4's SII-Handle. N4 has its GIST re-check the routing state the change lies
/// behind (InvalidateRoutingState, urgent) and passes the NOTIFY upstream; N3 does the same,
/// and the QNI N1 reports it. Nothing is torn by it: the reservation holds along the new path.
#[test]
fn an_upstream_route_change_is_notified_to_the_old_peer_and_reaches_the_qni() {
    let mut sim = sim(with_wide_bypass(), 11, short_gist, short);
    let sid = reserve(&mut sim, "N1", "N6", 4.0);
    run_secs(&mut sim, 2);
    events(&mut sim, "N1");
    assert_eq!(counters(&mut sim, "N5").route_change_notifies, 0);

    divert_at_n3_until_acted_on(&mut sim, "N3");
    run_secs(&mut sim, 5); // R
    let n5 = counters(&mut sim, "N5");
    assert_eq!(n5.route_change_notifies, 1, "one NOTIFY, to N4 only");
    let gist = |sim: &QosSim, n: &str| sim.engine(id(sim, n)).unwrap().inner().counters().clone();
    assert_eq!(gist(&sim, "N5").explicit_sent, 1, "by N4's SII-Handle");
    let notify = pathwise_qos_nslp::wire::MsgType::Notify;
    for n in ["N4", "N3"] {
        let c = counters(&mut sim, n);
        assert_eq!(c.received(notify), 1, "{n}");
        assert_eq!(c.routing_state_invalidated, 1, "{n}");
    }
    assert_eq!(counters(&mut sim, "N4").sent(notify), 1, "passed on to N3");
    let route_change = |e: &QosEvent| {
        matches!(e, QosEvent::Notified { session_id, info }
            if *session_id == sid
                && info.class == pathwise_qos_nslp::wire::ErrorClass::Informational
                && info.code == pathwise_qos_nslp::wire::code::informational::ROUTE_CHANGE)
    };
    let at_qni = events(&mut sim, "N1");
    assert_eq!(
        at_qni.iter().filter(|e| route_change(e)).count(),
        1,
        "the QNI reports it: {at_qni:?}"
    );
    assert!(state(&mut sim, "N1", sid).is_some());
    // GIST at N5 naming N4 again while N4's routing state lives (§5.2.5.4) sends no more.
    run_secs(&mut sim, 60);
    assert_eq!(counters(&mut sim, "N5").route_change_notifies, 1);
    for n in ["N1", "N3", "N5", "N6"] {
        assert!(
            state(&mut sim, n, sid).is_some(),
            "{n} keeps the reservation"
        );
    }
}
