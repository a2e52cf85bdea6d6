//! RSVP end to end in simulation (issue: "Foundation + RSVP"): reservations on the KOM testbed,
//! style merging, teardown, crashes, loss, admission failure, local repair, determinism.

mod common;

use common::rsvp::*;
use pathwise::rsvp::sim::{Receiver, Scenario, rsvp_sim, sim_engine_config};
use pathwise_core::time::{Duration, Instant};
use pathwise_rsvp::wire::{FlowSpec, Session, StyleKind};
use pathwise_rsvp::{Config, Event};
use pathwise_sim::{LinkParams, NodeId, SimConfig, Topology, testbeds};
use std::net::IpAddr;

const R: Duration = Duration::from_secs(3);

fn kom(seed: u64) -> Scenario {
    Scenario::new(rsvp_sim(
        testbeds::kom_rsvp(),
        SimConfig::seeded(seed),
        sim_engine_config(R),
    ))
}

fn all_idle(sc: &Scenario) -> bool {
    sc.sim.topology().node_ids().all(|n| {
        sc.sim
            .engine(n)
            .is_none_or(|e| e.is_idle() && e.traffic_control().is_empty())
    })
}

fn resv_at_sender(sc: &Scenario, n: NodeId, session: &Session) -> Option<FlowSpec> {
    sc.log.iter().rev().find_map(|r| match &r.event {
        Event::ResvState {
            session: s,
            flowspec,
            ..
        } if r.node == n && s == session => Some(*flowspec),
        _ => None,
    })?
}

#[test]
fn reservation_established_end_to_end_on_kom_testbed() {
    let mut sc = kom(1);
    let (n1, n3, n4, n5) = (
        node(&sc, "N1"),
        node(&sc, "N3"),
        node(&sc, "N4"),
        node(&sc, "N5"),
    );
    let s = udp(v4(&sc, n5), 5000);
    sc.add_receiver(Receiver {
        node: n5,
        session: s,
        style: StyleKind::Ff,
        flowspec: cl(1000.0),
        confirm: true,
    });
    let sender = filter(v4(&sc, n1), 6000);
    register(&mut sc, Instant::from_millis(1), n1, s, sender, 1000.0);
    sc.run_until(Instant::from_secs(1));
    // Path state on every hop, the reservation installed on every router's outgoing link and
    // on the sender's, and both ends told.
    for n in [n1, n3, n4] {
        assert_eq!(
            installed_kbps(&sc, n, &s),
            1000.0,
            "node {}",
            sc.sim.name(n)
        );
    }
    assert_eq!(resv_at_sender(&sc, n1, &s), Some(cl(1000.0)));
    assert!(
        sc.log
            .iter()
            .any(|r| r.node == n5 && matches!(r.event, Event::Confirmed { .. }))
    );
    // And it stays up across many refresh periods.
    sc.run_until(Instant::from_secs(60));
    for n in [n1, n3, n4] {
        assert_eq!(installed_kbps(&sc, n, &s), 1000.0);
    }
    let c = sc.sim.engine(n3).unwrap().counters();
    assert!(
        c.received(pathwise_rsvp::wire::MsgType::Path) > 10,
        "refreshes arrive: {c:?}"
    );
    assert_eq!(c.total_drops(), 0);
}

#[test]
fn ipv6_reservation_end_to_end() {
    let mut sc = kom(2);
    let (n1, n4, n6) = (node(&sc, "N1"), node(&sc, "N4"), node(&sc, "N6"));
    let dest = sc.sim.topology().loopbacks(n6)[1];
    let s = udp(dest, 5000);
    sc.add_receiver(Receiver {
        node: n6,
        session: s,
        style: StyleKind::Se,
        flowspec: cl(300.0),
        confirm: false,
    });
    let src = sc.sim.topology().loopbacks(n1)[1];
    register(
        &mut sc,
        Instant::from_millis(1),
        n1,
        s,
        filter(src, 7000),
        300.0,
    );
    sc.run_until(Instant::from_secs(1));
    assert_eq!(installed_kbps(&sc, n4, &s), 300.0);
    assert_eq!(resv_at_sender(&sc, n1, &s), Some(cl(300.0)));
}

/// Multicast session, both senders (N1, N2) and both receivers (N5, N6): N4 is the merge point
/// of the two receivers' requests, N3 splits them towards the two senders.
fn conference(style: StyleKind, kbps5: f32, kbps6: f32) -> (Scenario, Session) {
    let mut sc = kom(3);
    let (n1, n2, n5, n6) = (
        node(&sc, "N1"),
        node(&sc, "N2"),
        node(&sc, "N5"),
        node(&sc, "N6"),
    );
    let group: IpAddr = "224.9.9.9".parse().unwrap();
    let s = udp(group, 9000);
    sc.sim.join_group(n5, group);
    sc.sim.join_group(n6, group);
    for (n, kbps) in [(n5, kbps5), (n6, kbps6)] {
        sc.add_receiver(Receiver {
            node: n,
            session: s,
            style,
            flowspec: cl(kbps),
            confirm: true,
        });
    }
    for (i, n) in [n1, n2].into_iter().enumerate() {
        let src = v4(&sc, n);
        sc.sim.add_multicast_source(n, src, group);
        register(
            &mut sc,
            Instant::from_millis(1 + i as u64),
            n,
            s,
            filter(src, 9001),
            500.0,
        );
    }
    sc.run_until(Instant::from_secs(2));
    (sc, s)
}

#[test]
fn wildcard_filter_merges_to_one_shared_reservation() {
    let (sc, s) = conference(StyleKind::Wf, 200.0, 700.0);
    let (n1, n2, n3, n4) = (
        node(&sc, "N1"),
        node(&sc, "N2"),
        node(&sc, "N3"),
        node(&sc, "N4"),
    );
    let e4 = sc.sim.engine(n4).unwrap().session(&s).unwrap();
    // One reservation per downstream link, each shared by both senders.
    assert_eq!(e4.installed.len(), 2);
    assert!(e4.installed.iter().all(|i| i.senders.len() == 2));
    // N3's single link towards N4 carries the merge (the larger, 700) — not the sum.
    let e3 = sc.sim.engine(n3).unwrap().session(&s).unwrap();
    assert_eq!(e3.installed.len(), 1);
    assert_eq!(
        f64::from(e3.installed[0].flowspec.reserved_rate()) / 125.0,
        700.0
    );
    // Each sender sees the merged request.
    assert_eq!(
        resv_at_sender(&sc, n1, &s),
        Some(cl(700.0).max_with(&cl(200.0)))
    );
    assert_eq!(
        resv_at_sender(&sc, n2, &s),
        Some(cl(700.0).max_with(&cl(200.0)))
    );
}

trait MaxWith {
    fn max_with(&self, other: &FlowSpec) -> FlowSpec;
}

impl MaxWith for FlowSpec {
    fn max_with(&self, other: &FlowSpec) -> FlowSpec {
        pathwise_rsvp::engine::merge::lub(self, other)
    }
}

#[test]
fn fixed_filter_keeps_one_reservation_per_sender() {
    let (sc, s) = conference(StyleKind::Ff, 200.0, 700.0);
    let (n1, n3) = (node(&sc, "N1"), node(&sc, "N3"));
    let e3 = sc.sim.engine(n3).unwrap().session(&s).unwrap();
    // N3 → N4: one reservation per sender, each the merge of the receivers' requests.
    assert_eq!(e3.installed.len(), 2);
    assert!(e3.installed.iter().all(|i| i.senders.len() == 1 && f64::from(i.flowspec.reserved_rate()) / 125.0 == 700.0));
    assert_eq!(installed_kbps(&sc, n3, &s), 1400.0);
    assert_eq!(
        resv_at_sender(&sc, n1, &s),
        Some(cl(700.0).max_with(&cl(200.0)))
    );
}

#[test]
fn shared_explicit_shares_among_listed_senders() {
    let (sc, s) = conference(StyleKind::Se, 200.0, 700.0);
    let n3 = node(&sc, "N3");
    let e3 = sc.sim.engine(n3).unwrap().session(&s).unwrap();
    assert_eq!(e3.installed.len(), 1);
    assert_eq!(e3.installed[0].senders.len(), 2);
    assert_eq!(installed_kbps(&sc, n3, &s), 700.0);
}

#[test]
fn conflicting_styles_are_refused_with_resv_err() {
    let mut sc = kom(4);
    let (n1, n5, n6) = (node(&sc, "N1"), node(&sc, "N5"), node(&sc, "N6"));
    let group: IpAddr = "224.7.7.7".parse().unwrap();
    let s = udp(group, 1);
    sc.sim.join_group(n5, group);
    sc.sim.join_group(n6, group);
    sc.add_receiver(Receiver {
        node: n5,
        session: s,
        style: StyleKind::Wf,
        flowspec: cl(100.0),
        confirm: false,
    });
    sc.add_receiver(Receiver {
        node: n6,
        session: s,
        style: StyleKind::Ff,
        flowspec: cl(100.0),
        confirm: false,
    });
    let src = v4(&sc, n1);
    sc.sim.add_multicast_source(n1, src, group);
    register(
        &mut sc,
        Instant::from_millis(1),
        n1,
        s,
        filter(src, 1),
        100.0,
    );
    sc.run_until(Instant::from_secs(1));
    let conflict = pathwise_rsvp::wire::error::error_code::CONFLICTING_RESERVATION_STYLE;
    let errors: Vec<_> = sc
        .log
        .iter()
        .filter(|r| matches!(&r.event, Event::ResvError { error, .. } if error.code == conflict))
        .collect();
    assert_eq!(
        errors.len(),
        1,
        "exactly the later receiver is refused: {errors:?}"
    );
}

#[test]
fn teardown_leaves_no_state_anywhere() {
    let mut sc = kom(5);
    let (n1, n2, n5, n6) = (
        node(&sc, "N1"),
        node(&sc, "N2"),
        node(&sc, "N5"),
        node(&sc, "N6"),
    );
    let s1 = udp(v4(&sc, n5), 1);
    let s2 = udp(v4(&sc, n6), 2);
    sc.add_receiver(Receiver {
        node: n5,
        session: s1,
        style: StyleKind::Ff,
        flowspec: cl(100.0),
        confirm: false,
    });
    sc.add_receiver(Receiver {
        node: n6,
        session: s2,
        style: StyleKind::Wf,
        flowspec: cl(100.0),
        confirm: false,
    });
    let (f1, f2) = (filter(v4(&sc, n1), 1), filter(v4(&sc, n2), 2));
    register(&mut sc, Instant::from_millis(1), n1, s1, f1, 100.0);
    register(&mut sc, Instant::from_millis(1), n2, s2, f2, 100.0);
    sc.run_until(Instant::from_secs(1));
    assert!(!all_idle(&sc));
    // Receiver releases first (ResvTear upstream), then senders leave (PathTear downstream).
    sc.sim
        .schedule_call(Instant::from_secs(2), n5, move |e, now| {
            e.release(now, s1).unwrap()
        });
    sc.sim
        .schedule_call(Instant::from_secs(3), n1, move |e, now| {
            e.unregister_sender(now, s1, f1).unwrap()
        });
    sc.sim
        .schedule_call(Instant::from_secs(3), n2, move |e, now| {
            e.unregister_sender(now, s2, f2).unwrap()
        });
    sc.run_until(Instant::from_secs(4));
    assert!(all_idle(&sc), "state left behind");
    // No timer-driven straggler reappears later.
    sc.run_until(Instant::from_secs(60));
    assert!(all_idle(&sc));
}

#[test]
fn crashed_router_state_times_out_on_neighbours() {
    let mut sc = kom(6);
    let (n1, n3, n4, n5) = (
        node(&sc, "N1"),
        node(&sc, "N3"),
        node(&sc, "N4"),
        node(&sc, "N5"),
    );
    let s = udp(v4(&sc, n5), 1);
    sc.add_receiver(Receiver {
        node: n5,
        session: s,
        style: StyleKind::Ff,
        flowspec: cl(100.0),
        confirm: false,
    });
    register_v4(&mut sc, Instant::from_millis(1), n1, s, 1, 100.0);
    sc.run_until(Instant::from_secs(1));
    assert_eq!(installed_kbps(&sc, n4, &s), 100.0);
    sc.sim.crash(n3);
    // Lifetime L = (K + 0.5) · 1.5 · R = 5.25 R; after that N4 (downstream) has dropped its
    // path state and reservation, N5 its path state, and N1 its reservation.
    sc.run_for(R.mul_f64(5.25 * 1.6));
    assert!(
        sc.sim.engine(n4).unwrap().is_idle(),
        "{:?}",
        sc.sim.engine(n4).unwrap().state_stats()
    );
    assert!(sc.sim.engine(n5).unwrap().is_idle());
    assert_eq!(installed_kbps(&sc, n1, &s), 0.0);
    assert!(sc.sim.engine(n4).unwrap().counters().path_timeouts >= 1);
    assert!(sc.sim.engine(n1).unwrap().counters().resv_timeouts >= 1);
    assert_eq!(resv_at_sender(&sc, n1, &s), None);
}

#[test]
fn ten_percent_loss_with_refresh_keeps_reservations() {
    let mut sc = kom(7);
    for l in sc.sim.topology().link_ids().collect::<Vec<_>>() {
        for d in [pathwise_sim::Direction::AToB, pathwise_sim::Direction::BToA] {
            sc.sim.update_link(l, Some(d), |p| p.loss = 0.10);
        }
    }
    let (n1, n3, n4, n5) = (
        node(&sc, "N1"),
        node(&sc, "N3"),
        node(&sc, "N4"),
        node(&sc, "N5"),
    );
    let s = udp(v4(&sc, n5), 1);
    sc.add_receiver(Receiver {
        node: n5,
        session: s,
        style: StyleKind::Ff,
        flowspec: cl(100.0),
        confirm: false,
    });
    register_v4(&mut sc, Instant::from_millis(1), n1, s, 1, 100.0);
    // Lost initial messages are recovered by the next refresh.
    sc.run_until(Instant::from_secs(10));
    let mut samples = 0;
    for t in (20..600).step_by(10) {
        sc.run_until(Instant::from_secs(t));
        for n in [n1, n3, n4] {
            assert_eq!(
                installed_kbps(&sc, n, &s),
                100.0,
                "lost at {t}s on {}",
                sc.sim.name(n)
            );
        }
        samples += 1;
    }
    assert!(samples > 50);
    assert!(sc.sim.drops().total() > 0, "loss was applied");
}

#[test]
fn admission_failure_returns_resv_err_and_leaves_no_partial_reservation() {
    // Only 500 kbit/s reservable from N3 towards N4.
    let text = testbeds::KOM_RSVP.replace(
        "a = \"N3\"\nb = \"N4\"\n",
        "a = \"N3\"\nb = \"N4\"\na_reservable = \"500kbit\"\n",
    );
    assert_ne!(text, testbeds::KOM_RSVP);
    let topo = Topology::from_toml(&text).unwrap();
    let mut sc = Scenario::new(rsvp_sim(topo, SimConfig::seeded(8), sim_engine_config(R)));
    let (n1, n3, n4, n5) = (
        node(&sc, "N1"),
        node(&sc, "N3"),
        node(&sc, "N4"),
        node(&sc, "N5"),
    );
    let s = udp(v4(&sc, n5), 1);
    sc.add_receiver(Receiver {
        node: n5,
        session: s,
        style: StyleKind::Ff,
        flowspec: cl(800.0),
        confirm: true,
    });
    register_v4(&mut sc, Instant::from_millis(1), n1, s, 1, 800.0);
    sc.run_until(Instant::from_secs(2));
    let err = sc.log.iter().find_map(|r| match &r.event {
        Event::ResvError {
            error, released, ..
        } if r.node == n5 => Some((*error, *released)),
        _ => None,
    });
    let (error, released) = err.expect("receiver hears the ResvErr");
    assert_eq!(
        error.code,
        pathwise_rsvp::wire::error::error_code::ADMISSION_CONTROL_FAILURE
    );
    assert_eq!(error.value, 2, "requested bandwidth unavailable");
    assert!(released);
    for n in sc.sim.topology().node_ids() {
        assert_eq!(
            sc.sim.engine(n).unwrap().traffic_control().len(),
            0,
            "partial reservation on {}",
            sc.sim.name(n)
        );
    }
    assert_eq!(resv_at_sender(&sc, n1, &s), None);
    assert!(
        !sc.log
            .iter()
            .any(|r| matches!(r.event, Event::Confirmed { .. }))
    );
    // Path state stays: a smaller request can still be made.
    assert_eq!(
        sc.sim.engine(n4).unwrap().session(&s).unwrap().paths.len(),
        1
    );
    let sender = filter(v4(&sc, n1), 1);
    sc.sim.with_engine(n5, |e, now| {
        let flows = vec![pathwise_rsvp::wire::FlowDescriptor {
            flowspec: Some(cl(400.0)),
            filters: vec![sender].into(),
            te: Vec::new(),
        }];
        e.reserve(now, s, StyleKind::Ff, flows, false).unwrap();
    });
    sc.run_for(Duration::from_secs(1));
    assert_eq!(installed_kbps(&sc, n3, &s), 400.0);
}

/// H1 – A – B – D – H2 with a longer detour A – C – D.
fn diamond() -> Topology {
    let mut b = Topology::builder();
    b.name("diamond");
    let h1 = b.host("H1");
    let a = b.router("A");
    let bb = b.router("B");
    let c = b.router("C");
    let d = b.router("D");
    let h2 = b.host("H2");
    let p = LinkParams::default().delay(Duration::from_millis(1));
    b.link(h1, a, p.clone());
    b.link(a, bb, p.clone());
    b.link(bb, d, p.clone());
    b.link(a, c, p.clone().cost(5));
    b.link(c, d, p.clone().cost(5));
    b.link(d, h2, p);
    b.build().unwrap()
}

#[test]
fn route_change_triggers_local_repair() {
    let mut sc = Scenario::new(rsvp_sim(
        diamond(),
        SimConfig::seeded(9),
        sim_engine_config(Duration::from_secs(30)),
    ));
    let (h1, a, bb, c, d, h2) = (
        node(&sc, "H1"),
        node(&sc, "A"),
        node(&sc, "B"),
        node(&sc, "C"),
        node(&sc, "D"),
        node(&sc, "H2"),
    );
    let s = udp(v4(&sc, h2), 1);
    sc.add_receiver(Receiver {
        node: h2,
        session: s,
        style: StyleKind::Ff,
        flowspec: cl(100.0),
        confirm: false,
    });
    register_v4(&mut sc, Instant::from_millis(1), h1, s, 1, 100.0);
    sc.run_until(Instant::from_secs(1));
    assert_eq!(installed_kbps(&sc, bb, &s), 100.0);
    assert_eq!(installed_kbps(&sc, c, &s), 0.0);
    let ab = sc.sim.link_between(a, bb).unwrap();
    sc.sim.link_down(ab);
    // After the repair delay W (2 s, RFC 2205 §3.6) — well within one refresh period (30 s) —
    // the reservation follows the new route.
    sc.run_until(Instant::from_secs(2));
    assert_eq!(installed_kbps(&sc, c, &s), 0.0, "not before W");
    sc.run_until(Instant::from_secs(4));
    assert_eq!(
        installed_kbps(&sc, c, &s),
        100.0,
        "reservation on the detour"
    );
    assert_eq!(installed_kbps(&sc, a, &s), 100.0);
    assert_eq!(installed_kbps(&sc, d, &s), 100.0);
    assert!(sc.sim.engine(a).unwrap().counters().local_repairs >= 1);
    // The old branch's state goes (B's path state times out; nothing keeps it).
    sc.run_until(Instant::from_secs(300));
    assert!(sc.sim.engine(bb).unwrap().is_idle());
    assert_eq!(installed_kbps(&sc, c, &s), 100.0);
}

fn replay(seed: u64) -> (Vec<String>, Vec<String>) {
    let mut sc = kom(seed);
    let (n1, n2, n5, n6) = (
        node(&sc, "N1"),
        node(&sc, "N2"),
        node(&sc, "N5"),
        node(&sc, "N6"),
    );
    for l in sc.sim.topology().link_ids().collect::<Vec<_>>() {
        sc.sim
            .update_link(l, Some(pathwise_sim::Direction::AToB), |p| p.loss = 0.05);
    }
    let (s1, s2) = (udp(v4(&sc, n5), 1), udp(v4(&sc, n6), 2));
    sc.add_receiver(Receiver {
        node: n5,
        session: s1,
        style: StyleKind::Ff,
        flowspec: cl(10.0),
        confirm: true,
    });
    sc.add_receiver(Receiver {
        node: n6,
        session: s2,
        style: StyleKind::Se,
        flowspec: cl(10.0),
        confirm: true,
    });
    register_v4(&mut sc, Instant::from_millis(1), n1, s1, 1, 10.0);
    register_v4(&mut sc, Instant::from_millis(1), n2, s2, 2, 10.0);
    sc.sim.crash(node(&sc, "N4"));
    sc.sim.schedule(
        Instant::from_secs(5),
        pathwise_sim::Control::Restart(node(&sc, "N4")),
    );
    sc.run_until(Instant::from_secs(40));
    let events = sc
        .log
        .iter()
        .map(|r| format!("{:?} {:?} {:?}", r.time, r.node, r.event))
        .collect();
    let trace = sc
        .sim
        .topology()
        .node_ids()
        .map(|n| format!("{:?}", sc.sim.node_stats(n)))
        .collect();
    (events, trace)
}

#[test]
fn runs_replay_exactly_by_seed() {
    assert_eq!(replay(11), replay(11));
    assert_ne!(replay(11).0, replay(12).0);
}

#[test]
fn engine_config_defaults_follow_rfc_2205() {
    let c = Config::default();
    assert_eq!(c.refresh, Duration::from_secs(30));
    assert_eq!(c.keep_multiplier, 3);
}

/// RFC 2205 §3.5: a receiver keeps asking for more than the N3 → N4 link can give (a "killer
/// reservation", and it never withdraws it). Blockade state at N4 keeps it out of the merge, so
/// the other receiver's smaller request is still installed upstream; the killer's next hop is told
/// it caused the failure, the other is marked NotGuilty.
#[test]
fn blockade_state_lets_smaller_requests_past_a_killer_reservation() {
    let text = testbeds::KOM_RSVP.replace(
        "a = \"N3\"\nb = \"N4\"\n",
        "a = \"N3\"\nb = \"N4\"\na_reservable = \"1000kbit\"\n",
    );
    let topo = Topology::from_toml(&text).unwrap();
    let cfg = Config {
        refresh: R,
        release_on_admission_failure: false,
        ..Config::default()
    };
    let mut sc = Scenario::new(rsvp_sim(topo, SimConfig::seeded(21), cfg));
    let (n1, n3, n4, n5, n6) = (
        node(&sc, "N1"),
        node(&sc, "N3"),
        node(&sc, "N4"),
        node(&sc, "N5"),
        node(&sc, "N6"),
    );
    let group: IpAddr = "224.3.3.3".parse().unwrap();
    let s = udp(group, 3000);
    // The killer comes first; the modest receiver joins a second later.
    sc.sim.join_group(n6, group);
    sc.sim.schedule(
        Instant::from_secs(1),
        pathwise_sim::Control::JoinGroup(n5, group),
    );
    sc.add_receiver(Receiver {
        node: n5,
        session: s,
        style: StyleKind::Wf,
        flowspec: cl(200.0),
        confirm: false,
    });
    sc.add_receiver(Receiver {
        node: n6,
        session: s,
        style: StyleKind::Wf,
        flowspec: cl(2000.0),
        confirm: false,
    });
    let src = v4(&sc, n1);
    sc.sim.add_multicast_source(n1, src, group);
    register(
        &mut sc,
        Instant::from_millis(1),
        n1,
        s,
        filter(src, 3000),
        2000.0,
    );
    sc.run_until(Instant::from_millis(900));
    assert_eq!(
        installed_kbps(&sc, n3, &s),
        0.0,
        "the killer alone gets nothing"
    );
    // N5's join reaches the routers' multicast trees; local repair (W = 2 s) sends it the Path.
    sc.run_until(Instant::from_secs(5));
    let not_guilty = pathwise_rsvp::wire::ErrorSpec::NOT_GUILTY;
    let flags_at = |sc: &Scenario, n| {
        sc.log.iter().find_map(|r| match &r.event {
            Event::ResvError {
                error, released, ..
            } if r.node == n => Some((error.flags, *released)),
            _ => None,
        })
    };
    let (f6, released6) = flags_at(&sc, n6).expect("the killer's receiver hears the ResvErr");
    assert_eq!(f6 & not_guilty, 0);
    assert!(!released6);

    // N4's two links carry each receiver's own request; upstream, only the smaller one fits.
    assert_eq!(installed_kbps(&sc, n4, &s), 2200.0);
    assert_eq!(installed_kbps(&sc, n3, &s), 200.0);
    assert_eq!(resv_at_sender(&sc, n1, &s), Some(cl(200.0)));
    // The blockade lapses after Kb·R and the killer is tried again, fails again, and the
    // smaller reservation stays in place throughout.
    for t in (5..60).step_by(5) {
        sc.run_until(Instant::from_secs(t));
        assert_eq!(installed_kbps(&sc, n3, &s), 200.0, "at {t}s");
    }
    let retries = sc.sim.engine(n3).unwrap().counters().admission_failures;
    assert!(
        retries >= 3,
        "the killer is retried after each blockade: {retries}"
    );
}
