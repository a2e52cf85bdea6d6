//! Sender- and receiver-initiated reservations end to end, refresh under loss, tear, route
//! change, admission failure.

use super::common::*;
use pathwise_qos_nslp::wire::qspec::{ParamValue, parameter_id};
use pathwise_qos_nslp::wire::{ErrorClass, QspecObjectType, code};
use pathwise_qos_nslp::{Initiation, QosEvent, Role};
use pathwise_sim::{Topology, testbeds};

const PATH: [&str; 5] = ["N1", "N3", "N4", "N5", "N6"];
const ALL: [&str; 7] = ["N1", "N2", "N3", "N4", "N5", "N6", "N7"];
/// 4 Mbit/s in bytes per second.
const RATE: f64 = 500_000.0;

/// The data path's hops and the next hop of each.
fn hops() -> impl Iterator<Item = (&'static str, &'static str)> {
    PATH.iter().copied().zip(PATH.iter().copied().skip(1))
}

#[test]
fn sender_initiated_reservation_end_to_end() {
    let mut sim = sim(testbeds::gist_thesis(), 1, |_| {}, |_| {});
    let sid = reserve(&mut sim, "N1", "N6", 4.0);
    run_secs(&mut sim, 1);

    let ev = events(&mut sim, "N1");
    let Some(QosEvent::Reserved { qspec: Some(q), .. }) =
        ev.iter().find(|e| matches!(e, QosEvent::Reserved { .. }))
    else {
        panic!("no confirmation at the QNI: {ev:?}");
    };
    // RFC 5975 §4.3.1: QoS Reserved as desired; QoS Available collected 4 links of 100 us.
    let reserved = q.object(QspecObjectType::QosReserved).unwrap();
    assert_eq!(reserved.tmod1().unwrap().rate, 500_000.0);
    let latency = q
        .object(QspecObjectType::QosAvailable)
        .unwrap()
        .param(parameter_id::PATH_LATENCY)
        .map(|p| p.value.clone());
    assert_eq!(latency, Some(ParamValue::PathLatency(400)));

    // Every hop but the destination holds the rate on its interface towards the next.
    for (n, next) in hops() {
        let s = state(&mut sim, n, sid).unwrap_or_else(|| panic!("{n} has state"));
        let want = if n == "N1" { Role::Qni } else { Role::Qne };
        assert_eq!(s.role, want, "{n}");
        let ifx = ifindex_to(&sim, n, next);
        assert_eq!(s.tc.map(|(i, _)| i.0), Some(ifx), "{n}");
        assert_eq!(tc_of(&mut sim, n, ifx), (1, RATE), "{n} -> {next}");
    }
    let qnr = state(&mut sim, "N6", sid).expect("N6 has state");
    assert_eq!((qnr.role, qnr.tc), (Role::Qnr, None));
    assert!(
        events(&mut sim, "N6").contains(&QosEvent::Installed { session_id: sid }),
        "the QNR reports the reservation"
    );
    for n in ["N2", "N7"] {
        assert!(state(&mut sim, n, sid).is_none(), "{n} is off the path");
    }
    for n in ALL {
        assert_eq!(
            counters(&mut sim, n).dropped_total(),
            0,
            "{n} dropped nothing"
        );
    }
}

#[test]
fn receiver_initiated_reservation_end_to_end() {
    let mut sim = sim(testbeds::gist_thesis(), 2, |_| {}, |_| {});
    let req = pathwise_qos_nslp::ReserveRequest::new(lo(&sim, "N1"), lo(&sim, "N6"), tmod(4.0));
    let sid = with_qos(&mut sim, "N1", |q, g, now| {
        q.reserve_receiver_initiated(g, now, &req)
    })
    .unwrap();
    run_secs(&mut sim, 1);

    // RFC 5974 §4.3: the flow's receiver N6 is the QNI, its sender N1 the QNR.
    let qni = state(&mut sim, "N6", sid).expect("N6 has state");
    assert_eq!(
        (qni.role, qni.initiation),
        (Role::Qni, Initiation::Receiver)
    );
    assert_eq!(qni.tc, None, "nothing to reserve where the flow ends");
    assert!(
        events(&mut sim, "N6")
            .iter()
            .any(|e| matches!(e, QosEvent::Reserved { session_id, .. } if *session_id == sid)),
        "the QNI got its RESPONSE"
    );
    assert_eq!(state(&mut sim, "N1", sid).unwrap().role, Role::Qnr);
    // The reservation is for the data direction, N1 towards N6, at every hop.
    for (n, next) in hops() {
        let ifx = ifindex_to(&sim, n, next);
        assert_eq!(tc_of(&mut sim, n, ifx), (1, RATE), "{n} -> {next}");
        assert_eq!(
            state(&mut sim, n, sid).unwrap().initiation,
            Initiation::Receiver
        );
    }
    // Refreshes go upstream from the QNI and keep it all up.
    run_secs(&mut sim, 300);
    for n in PATH {
        assert!(state(&mut sim, n, sid).is_some(), "{n} kept its state");
    }
    assert!(
        counters(&mut sim, "N6").reduced_refreshes + counters(&mut sim, "N6").summary_refreshes > 0
    );
}

#[test]
fn refresh_keeps_the_reservation_under_ten_percent_loss() {
    let mut sim = sim(testbeds::gist_thesis(), 3, |_| {}, short);
    for l in sim.topology().link_ids().collect::<Vec<_>>() {
        sim.update_link(l, None, |p| p.loss = 0.10);
    }
    let sid = reserve(&mut sim, "N1", "N6", 4.0);
    run_secs(&mut sim, 30);
    for _ in 0..120 {
        run_secs(&mut sim, 5);
        for n in PATH {
            if state(&mut sim, n, sid).is_none() {
                for m in PATH {
                    eprintln!("{m}: {:?} {:?}", counters(&mut sim, m), events(&mut sim, m));
                }
                panic!("{n} lost the reservation at {}", sim.now());
            }
        }
    }
    let mut reduced = 0;
    for n in PATH {
        let c = counters(&mut sim, n);
        assert_eq!(c.expired, 0, "{n}");
        reduced += c.reduced_refreshes + c.summary_refreshes;
    }
    // 10 minutes at R = 5 s: some hundred refreshes, RSN-only once the QSPEC is known.
    assert!(reduced > 100, "reduced refreshes {reduced}");
    assert!(sim.drops().get(pathwise_sim::DropReason::Loss) > 20);
    for (n, next) in hops() {
        let ifx = ifindex_to(&sim, n, next);
        assert_eq!(tc_of(&mut sim, n, ifx), (1, RATE), "{n} -> {next}");
    }
}

#[test]
fn tear_leaves_nothing_anywhere() {
    let mut sim = sim(testbeds::gist_thesis(), 4, |_| {}, short);
    let a = reserve(&mut sim, "N1", "N6", 4.0);
    let b = reserve(&mut sim, "N2", "N7", 1.0);
    run_secs(&mut sim, 20);
    for n in PATH {
        assert!(state(&mut sim, n, a).is_some(), "{n}");
    }
    for (n, sid) in [("N1", a), ("N2", b)] {
        with_qos(&mut sim, n, |q, g, now| q.release(g, now, sid)).unwrap();
    }
    run_secs(&mut sim, 1);
    assert_clean(&mut sim, &ALL);
    assert!(events(&mut sim, "N6").contains(&QosEvent::Torn { session_id: a }));
    assert!(events(&mut sim, "N7").contains(&QosEvent::Torn { session_id: b }));
    // And nothing comes back later (no stray refresh re-installs anything).
    run_secs(&mut sim, 60);
    assert_clean(&mut sim, &ALL);
    for n in ALL {
        assert_eq!(
            counters(&mut sim, n).expired,
            0,
            "{n}: removed by the tear, not by time"
        );
    }
}

/// The thesis testbed plus a longer N3 - N5 link, so N3 can reach N5 without N4.
fn with_bypass() -> Topology {
    let text = format!(
        "{}\n[[link]]\na = \"N3\"\nb = \"N5\"\ncost = 3\n",
        testbeds::GIST_THESIS
    );
    Topology::from_toml(&text).expect("topology")
}

#[test]
fn a_route_change_moves_the_reservation() {
    let mut sim = sim(with_bypass(), 5, short_gist, short);
    let sid = reserve(&mut sim, "N1", "N6", 4.0);
    run_secs(&mut sim, 2);
    let to_n4 = ifindex_to(&sim, "N3", "N4");
    assert_eq!(tc_of(&mut sim, "N3", to_n4), (1, RATE));
    assert!(state(&mut sim, "N4", sid).is_some());

    let l = sim.link_between(id(&sim, "N3"), id(&sim, "N4")).unwrap();
    sim.link_down(l);
    run_secs(&mut sim, 120);

    // N3 found its new peer N5 (GIST), moved its reservation to the bypass and re-reserved
    // along the new path (RFC 5974 §5.2.5.2).
    let to_n5 = ifindex_to(&sim, "N3", "N5");
    assert_ne!(to_n4, to_n5);
    assert_eq!(
        tc_of(&mut sim, "N3", to_n5),
        (1, RATE),
        "N3 holds it on the bypass"
    );
    assert_eq!(
        tc_of(&mut sim, "N3", to_n4).1,
        0.0,
        "and no more towards N4"
    );
    assert!(counters(&mut sim, "N3").route_changes >= 1);
    let n5 = state(&mut sim, "N5", sid).expect("N5 kept the reservation");
    assert_eq!(
        n5.prev_peer.and_then(|p| sim.topology().owner(p.0)),
        Some(id(&sim, "N3")),
        "N5's previous peer is N3 now"
    );
    // The old branch timed out: N4 holds nothing.
    assert!(state(&mut sim, "N4", sid).is_none(), "N4's state is gone");
    let n4_out = ifindex_to(&sim, "N4", "N5");
    assert_eq!(tc_of(&mut sim, "N4", n4_out), (0, 0.0));
    assert!(state(&mut sim, "N6", sid).is_some());
    // The QNI still has its reservation and was never told it failed.
    assert!(
        !events(&mut sim, "N1")
            .iter()
            .any(|e| matches!(e, QosEvent::Failed { .. }))
    );
}

#[test]
fn admission_failure_reports_the_info_spec_and_leaves_no_partial_state() {
    let mut sim = sim_with_small_n4();
    let sid = reserve(&mut sim, "N1", "N6", 4.0);
    run_secs(&mut sim, 2);
    let ev = events(&mut sim, "N1");
    let Some(QosEvent::Failed { info, qspec, .. }) = ev
        .iter()
        .find(|e| matches!(e, QosEvent::Failed { session_id, .. } if *session_id == sid))
    else {
        panic!("no failure at the QNI: {ev:?}");
    };
    // RFC 5975 §4.2.3: Transient Failure / 0x07 Reservation Failure, from N4, with the
    // parameter that could not be met flagged E.
    assert_eq!(
        (info.class, info.code),
        (
            ErrorClass::TransientFailure,
            code::transient::RESERVATION_FAILURE
        )
    );
    let pathwise_qos_nslp::wire::ErrorSource::Ipv4(source) = info.source else {
        panic!("no error source: {:?}", info.source);
    };
    assert_eq!(
        sim.topology().owner(source.into()),
        Some(id(&sim, "N4")),
        "reported by N4"
    );
    let avail = qspec
        .as_ref()
        .unwrap()
        .object(QspecObjectType::QosAvailable)
        .unwrap();
    assert!(
        avail.error && avail.params[0].flags.error,
        "E flags on <TMOD-1>"
    );
    assert_eq!(counters(&mut sim, "N4").admission_failures, 1);
    // No partial state anywhere: N1 and N3 released theirs when the RESPONSE passed.
    assert_clean(&mut sim, &ALL);
    run_secs(&mut sim, 60);
    assert_clean(&mut sim, &ALL);
}

fn sim_with_small_n4() -> QosSim {
    // N4 may reserve only 1 Mbit/s on its links.
    pathwise_sim::Sim::new(
        testbeds::gist_thesis(),
        pathwise_sim::SimConfig::seeded(6),
        |s| {
            let mut tc = traffic_control(s);
            if s.name == "N4" {
                for i in &s.interfaces {
                    tc.add_interface(
                        i.ifindex,
                        pathwise_core::tc::TcInterface {
                            reservable: 125_000.0,
                            bandwidth: i.bandwidth_bps as f64 / 8.0,
                            latency_us: 100,
                            mtu: i.mtu,
                        },
                    );
                }
            }
            Some(node_with(
                s,
                pathwise_core::tc::SharedTrafficControl::new(tc),
                &|_| {},
                &short,
            ))
        },
    )
}

#[test]
fn summary_refreshes_keep_many_sessions_with_few_messages() {
    let mut sim = sim(testbeds::gist_thesis(), 8, |_| {}, short);
    let sids: Vec<_> = (0..20)
        .map(|_| reserve(&mut sim, "N1", "N6", 0.1))
        .collect();
    run_secs(&mut sim, 300);
    for n in PATH {
        for sid in &sids {
            assert!(state(&mut sim, n, *sid).is_some(), "{n} kept every session");
        }
        let c = counters(&mut sim, n);
        assert_eq!(c.expired, 0, "{n}");
        assert_eq!(c.dropped_total(), 0, "{n} dropped nothing: {:?}", c.dropped);
        if n != "N6" {
            // §3.2.6: sessions to the same next peer ride in SESSION-ID-LISTs.
            assert!(c.summarised_sessions > c.reduced_refreshes, "{n}: {c:?}");
        }
    }
    let out = ifindex_to(&sim, "N1", "N3");
    assert_eq!(tc_of(&mut sim, "N1", out).0, 20);
}

#[test]
fn a_query_collects_the_path_and_reserves_nothing() {
    let mut sim = sim(testbeds::gist_thesis(), 9, |_| {}, |_| {});
    // More than the 100 Mbit/s links carry: QoS Available comes back capped.
    let req = pathwise_qos_nslp::ReserveRequest::new(lo(&sim, "N1"), lo(&sim, "N6"), tmod(500.0));
    let sid = with_qos(&mut sim, "N1", |q, g, now| q.query(g, now, &req)).unwrap();
    run_secs(&mut sim, 1);
    let ev = events(&mut sim, "N1");
    let Some(QosEvent::QueryAnswered {
        info,
        qspec: Some(q),
        ..
    }) = ev
        .iter()
        .find(|e| matches!(e, QosEvent::QueryAnswered { session_id, .. } if *session_id == sid))
    else {
        panic!("no answer: {ev:?}");
    };
    assert!(info.is_success());
    let avail = q.object(QspecObjectType::QosAvailable).unwrap();
    assert_eq!(
        avail.tmod1().unwrap().rate,
        12_500_000.0,
        "capped at 100 Mbit/s"
    );
    assert_eq!(
        avail
            .param(parameter_id::PATH_LATENCY)
            .map(|p| p.value.clone()),
        Some(ParamValue::PathLatency(400))
    );
    assert_clean(&mut sim, &ALL);
}

#[test]
fn a_route_change_moves_a_receiver_initiated_reservation() {
    let mut sim = sim(with_bypass(), 10, short_gist, short);
    let req = pathwise_qos_nslp::ReserveRequest::new(lo(&sim, "N1"), lo(&sim, "N6"), tmod(4.0));
    let sid = with_qos(&mut sim, "N1", |q, g, now| {
        q.reserve_receiver_initiated(g, now, &req)
    })
    .unwrap();
    run_secs(&mut sim, 2);
    let to_n4 = ifindex_to(&sim, "N3", "N4");
    assert_eq!(tc_of(&mut sim, "N3", to_n4), (1, RATE));

    let l = sim.link_between(id(&sim, "N3"), id(&sim, "N4")).unwrap();
    sim.link_down(l);
    run_secs(&mut sim, 120);

    // RFC 5974 §3.2.12: N3 (divergence) sent a QUERY with RESERVE-INIT down the bypass; N5
    // (convergence) answered with a full RESERVE up it; the reservation follows the data.
    let to_n5 = ifindex_to(&sim, "N3", "N5");
    assert_eq!(
        tc_of(&mut sim, "N3", to_n5),
        (1, RATE),
        "N3 holds it on the bypass"
    );
    assert_eq!(tc_of(&mut sim, "N3", to_n4).1, 0.0);
    // The old branch: N5, answered along the new path, tore N4 by N4's SII-Handle
    // (§5.2.5.2), rather than leave it to time out once GIST lost its state towards N3.
    assert!(state(&mut sim, "N4", sid).is_none(), "N4's state is gone");
    let n4_out = ifindex_to(&sim, "N4", "N5");
    assert_eq!(tc_of(&mut sim, "N4", n4_out), (0, 0.0));
    assert_eq!(counters(&mut sim, "N4").torn, 1);
    assert_eq!(counters(&mut sim, "N4").expired, 0);
    for n in ["N1", "N3", "N5", "N6"] {
        assert!(
            state(&mut sim, n, sid).is_some(),
            "{n} keeps the reservation"
        );
    }
    assert!(counters(&mut sim, "N3").route_changes >= 1);
}

/// RFC 5974 §5.4.1, §3.2.8: N6 reserves the reverse flow N6 → N1 bound to N1's reservation
/// N1 → N6 as dependent (Binding Code 0x04); the BOUND-SESSION-ID travels in its RESERVEs and
/// is kept hop by hop (§5.3.3). When N1 releases its reservation, every node holding both
/// sends a NOTIFY "Unknown BOUND-SESSION-ID" for the dependent one towards its QNI N6 (N6 —
/// the QNR of the released one — reports its own); N6 reports them and its application
/// decides (§5.4.4): it releases the dependent reservation, and nothing is left anywhere.
#[test]
fn a_dependent_reservation_is_notified_end_to_end_when_its_bound_session_goes() {
    use pathwise_qos_nslp::wire::{BindingCode, BoundSessionId, MsgType};
    let mut sim = sim(testbeds::gist_thesis(), 3, |_| {}, short);
    let forward = reserve(&mut sim, "N1", "N6", 4.0);
    run_secs(&mut sim, 1);
    let req = pathwise_qos_nslp::ReserveRequest::new(lo(&sim, "N6"), lo(&sim, "N1"), tmod(2.0))
        .bound_to(forward, BindingCode::DEPENDENT);
    let reverse = with_qos(&mut sim, "N6", |q, g, now| q.reserve(g, now, &req)).unwrap();
    run_secs(&mut sim, 1);
    let binding = BoundSessionId {
        code: BindingCode::DEPENDENT,
        session_id: forward,
    };
    for n in PATH {
        let s = state(&mut sim, n, reverse).unwrap_or_else(|| panic!("{n} holds it"));
        assert_eq!(s.bound, vec![binding], "{n} keeps the BOUND-SESSION-ID");
    }
    events(&mut sim, "N6");

    with_qos(&mut sim, "N1", |q, g, now| q.release(g, now, forward)).unwrap();
    run_secs(&mut sim, 1);
    for n in PATH {
        assert!(state(&mut sim, n, forward).is_none(), "{n}: released");
        assert_eq!(counters(&mut sim, n).bound_notifies, 1, "{n}");
    }
    let sent: u64 = ["N1", "N3", "N4", "N5"]
        .iter()
        .map(|n| counters(&mut sim, n).sent(MsgType::Notify))
        .sum();
    assert_eq!(
        sent,
        4 + 3 + 2 + 1,
        "each NOTIFY, and each passed on, hop by hop"
    );
    let notified: Vec<_> = events(&mut sim, "N6")
        .into_iter()
        .filter_map(|e| match e {
            QosEvent::Notified { session_id, info } => Some((session_id, info)),
            _ => None,
        })
        .collect();
    assert_eq!(
        notified.len(),
        5,
        "one from each node holding both: {notified:?}"
    );
    for (sid, info) in &notified {
        assert_eq!(*sid, reverse);
        assert_eq!(
            (info.class, info.code),
            (
                ErrorClass::Informational,
                code::informational::UNKNOWN_BOUND_SESSION_ID
            )
        );
    }
    assert!(
        state(&mut sim, "N6", reverse).is_some(),
        "the QNI's to decide"
    );
    with_qos(&mut sim, "N6", |q, g, now| q.release(g, now, reverse)).unwrap();
    run_secs(&mut sim, 30);
    assert_clean(&mut sim, &ALL);
}
