//! Soft state under faults: loss, a route change, a crashed node.

use super::common::*;
use pathwise_core::time::Duration;
use pathwise_gist::{QueryingState, RespondingState};
use pathwise_sim::{Topology, testbeds};

fn short_timers(c: &mut pathwise_gist::Config) {
    c.refresh_period = Duration::from_secs(20);
    c.rs_validity = Duration::from_secs(60);
    c.state_lifetime = Duration::from_secs(60);
}

#[test]
fn refresh_keeps_state_alive_under_ten_percent_loss() {
    let mut sim = sim(testbeds::gist_thesis(), 11, &[], &[], |c, _| {
        c.refresh_period = Duration::from_secs(30);
        c.rs_validity = Duration::from_secs(90);
    });
    for l in sim.topology().link_ids().collect::<Vec<_>>() {
        sim.update_link(l, None, |p| p.loss = 0.10);
    }
    // The thesis's NSLP refresh: a ping every 30 s keeps the session in use.
    let sid = ping(&mut sim, "N1", "N6");
    let k = key(&sim, "N1", "N6", sid);
    run_secs(&mut sim, 60);
    let hops = ["N1", "N3", "N4", "N5", "N6"];
    let mut samples = 0;
    for step in 0..240 {
        if step % 6 == 0 {
            ping_again(&mut sim, "N1", "N6", sid);
        }
        run_secs(&mut sim, 5);
        for (i, n) in hops.iter().enumerate() {
            let v =
                mrs(&sim, n, &k).unwrap_or_else(|| panic!("{n} lost the session at {}", sim.now()));
            if i + 1 < hops.len() {
                assert!(
                    v.downstream
                        .is_some_and(|d| d.0 != QueryingState::AwaitingResponse),
                    "{n} downstream at {}",
                    sim.now()
                );
            }
            if i > 0 {
                assert_eq!(
                    v.upstream.map(|u| u.0),
                    Some(RespondingState::Established),
                    "{n} upstream at {}",
                    sim.now()
                );
            }
        }
        samples += 1;
    }
    assert_eq!(samples, 240);
    let c = |n: &str| sim.engine(id(&sim, n)).unwrap().inner().counters().clone();
    for n in hops {
        assert_eq!(c(n).upstream_expiries, 0, "{n}");
        assert_eq!(c(n).handshake_failures, 0, "{n}");
    }
    // Loss was real: Queries were retransmitted and refreshes ran (20 min / 30 s per hop).
    let retx: u64 = hops.iter().map(|n| c(n).query_retransmits).sum();
    let refreshes: u64 = hops.iter().map(|n| c(n).refreshes).sum();
    assert!(retx > 0, "no retransmissions at 10 % loss?");
    assert!(refreshes >= 4 * 30, "refreshes {refreshes}");
    assert!(sim.drops().get(pathwise_sim::DropReason::Loss) > 100);
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
fn a_route_change_moves_the_state_to_the_new_path() {
    let mut sim = sim(with_bypass(), 12, &[], &[], |c, _| short_timers(c));
    let sid = ping(&mut sim, "N1", "N6");
    let k = key(&sim, "N1", "N6", sid);
    run_secs(&mut sim, 1);
    assert_eq!(peers(&sim, "N3", &k).0.as_deref(), Some("N4"));
    assert_eq!(replies(&sim, "N1")[0].2.len(), 4);

    let l = sim.link_between(id(&sim, "N3"), id(&sim, "N4")).unwrap();
    sim.link_down(l);
    for _ in 0..30 {
        ping_again(&mut sim, "N1", "N6", sid);
        run_secs(&mut sim, 10);
    }
    // A refresh Query from N3 now reaches N5 first: the state moved.
    assert_eq!(
        peers(&sim, "N3", &k).0.as_deref(),
        Some("N5"),
        "N3 queries N5 directly"
    );
    assert_eq!(
        peers(&sim, "N5", &k).1.as_deref(),
        Some("N3"),
        "N5 answers N3"
    );
    assert!(mrs(&sim, "N4", &k).is_none(), "N4's state expired");
    assert!(
        sim.engine(id(&sim, "N3"))
            .unwrap()
            .inner()
            .counters()
            .peer_changes
            >= 1
    );
    let last = replies(&sim, "N1").last().cloned().unwrap();
    let want: Vec<_> = ["N3", "N5", "N6"].iter().map(|n| lo(&sim, n)).collect();
    assert_eq!(last.2, want, "pings follow the new path");
}

#[test]
fn a_crashed_nodes_peers_expire_its_state() {
    let mut sim = sim(testbeds::gist_thesis(), 13, &[], &[], |c, _| {
        short_timers(c)
    });
    let sid = ping(&mut sim, "N1", "N6");
    let k = key(&sim, "N1", "N6", sid);
    for _ in 0..3 {
        run_secs(&mut sim, 10);
        ping_again(&mut sim, "N1", "N6", sid);
    }
    run_secs(&mut sim, 1);
    assert_eq!(peers(&sim, "N3", &k).0.as_deref(), Some("N4"));
    assert_eq!(peers(&sim, "N5", &k).1.as_deref(), Some("N4"));
    sim.crash(id(&sim, "N4"));
    run_secs(&mut sim, 200);
    // Upstream of the crash: N3's refreshes found no peer and its state went — by No_Response,
    // or earlier by Inactive_QNode, since no ping uses the state after the crash (RFC 5971 §6.2
    // Rule 6 ends it from Awaiting Refresh too).
    assert_eq!(peers(&sim, "N3", &k).0, None, "N3 dropped N4 as its peer");
    let n3 = sim
        .engine(id(&sim, "N3"))
        .unwrap()
        .inner()
        .counters()
        .clone();
    assert!(n3.refreshes >= 1, "{n3:?}");
    assert!(n3.handshake_failures + n3.downstream_lapses >= 1, "{n3:?}");
    // Downstream: N5 heard no refresh from N4 and expired its upstream half.
    assert!(
        mrs(&sim, "N5", &k).is_none_or(|v| v.upstream.is_none()),
        "N5 forgot N4"
    );
    assert!(
        sim.engine(id(&sim, "N5"))
            .unwrap()
            .inner()
            .counters()
            .upstream_expiries
            >= 1
    );
    // Nothing anywhere still names N4.
    for n in ["N1", "N3", "N5", "N6"] {
        let (d, u) = peers(&sim, n, &k);
        assert_ne!(d.as_deref(), Some("N4"), "{n}");
        assert_ne!(u.as_deref(), Some("N4"), "{n}");
    }
}
