//! Handshake, routing state on every aware hop, ping path and RTT, pass-through of nodes that
//! do not run the NSLP.

use super::common::*;
use pathwise_gist::{QueryingState, RespondingState};
use pathwise_sim::testbeds;

#[test]
fn handshake_installs_routing_state_on_every_aware_hop_and_ping_returns_the_path() {
    let mut sim = sim(testbeds::gist_thesis(), 1, &[], &[], |_, _| {});
    let sid = ping(&mut sim, "N1", "N6");
    run_secs(&mut sim, 1);

    let r = replies(&sim, "N1");
    assert_eq!(r.len(), 1, "one reply");
    let (_, rsid, path, rtt) = &r[0];
    assert_eq!(*rsid, sid);
    let want: Vec<_> = ["N3", "N4", "N5", "N6"]
        .iter()
        .map(|n| lo(&sim, n))
        .collect();
    assert_eq!(
        path, &want,
        "every NSIS-aware node on the path, the destination last"
    );
    // Four links of 100 us there and back, plus serialisation: more than 0.8 ms.
    assert!(rtt.as_micros() >= 800, "rtt {rtt:?}");

    let k = key(&sim, "N1", "N6", sid);
    // Downstream halves: each querying node found the next aware hop.
    for (node, next) in [("N1", "N3"), ("N3", "N4"), ("N4", "N5"), ("N5", "N6")] {
        let v = mrs(&sim, node, &k).unwrap_or_else(|| panic!("{node} has routing state"));
        assert_eq!(
            v.downstream.map(|d| d.0),
            Some(QueryingState::Established),
            "{node}"
        );
        assert_eq!(
            peers(&sim, node, &k).0.as_deref(),
            Some(next),
            "{node} -> {next}"
        );
    }
    // Upstream halves: installed by the Confirm (late state installation).
    for (node, prev) in [("N3", "N1"), ("N4", "N3"), ("N5", "N4"), ("N6", "N5")] {
        let v = mrs(&sim, node, &k).unwrap();
        assert_eq!(
            v.upstream.map(|u| u.0),
            Some(RespondingState::Established),
            "{node}"
        );
        assert_eq!(
            peers(&sim, node, &k).1.as_deref(),
            Some(prev),
            "{node} <- {prev}"
        );
    }
    assert!(
        mrs(&sim, "N6", &k).unwrap().downstream.is_none(),
        "the destination queries no further"
    );
    for n in ["N2", "N7"] {
        assert!(mrs(&sim, n, &k).is_none(), "{n} is off the path");
    }
    // The handshake ran once per hop: four Queries, Responses and Confirms, no errors.
    let c = |n: &str| sim.engine(id(&sim, n)).unwrap().inner().counters().clone();
    use pathwise_gist::wire::MsgType::*;
    let total = |t| {
        ["N1", "N3", "N4", "N5", "N6"]
            .iter()
            .map(|n| c(n).sent(t))
            .sum::<u64>()
    };
    assert_eq!((total(Query), total(Response), total(Confirm)), (4, 4, 4));
    assert!(
        ["N1", "N3", "N4", "N5", "N6"]
            .iter()
            .all(|n| c(n).errors_sent.is_empty())
    );
}

#[test]
fn routing_state_lapses_without_nslp_activity_and_refreshes_with_it() {
    let mut sim = sim(testbeds::gist_thesis(), 2, &[], &[], |c, _| {
        c.refresh_period = std::time::Duration::from_secs(20);
        c.rs_validity = std::time::Duration::from_secs(60);
        c.state_lifetime = std::time::Duration::from_secs(60);
    });
    let sid = ping(&mut sim, "N2", "N7");
    let k = key(&sim, "N2", "N7", sid);
    // Pinging every 15 s keeps it; refreshes run underneath.
    for _ in 0..8 {
        run_secs(&mut sim, 15);
        assert!(
            mrs(&sim, "N4", &k).is_some_and(|v| v.upstream.is_some() && v.downstream.is_some())
        );
        ping_again(&mut sim, "N2", "N7", sid);
    }
    let refreshes: u64 = ["N2", "N3", "N4", "N5"]
        .iter()
        .map(|n| {
            sim.engine(id(&sim, n))
                .unwrap()
                .inner()
                .counters()
                .refreshes
        })
        .sum();
    assert!(refreshes >= 8, "refreshes {refreshes}");
    assert_eq!(replies(&sim, "N2").len(), 8);
    // Then silence: the querying nodes let their state lapse, the responders' expires.
    run_secs(&mut sim, 200);
    for n in ["N2", "N3", "N4", "N5", "N7"] {
        assert!(mrs(&sim, n, &k).is_none(), "{n} forgot the session");
        let s = sim.engine(id(&sim, n)).unwrap().inner().state_stats();
        assert_eq!((s.routing_states, s.peers), (0, 0), "{n}: {s:?}");
    }
}

#[test]
fn nodes_without_the_nslp_are_passed_through() {
    // N4 runs GIST but not ping: the Query's NSLPID is not its, so it forwards it as IP.
    let mut sim = sim(testbeds::gist_thesis(), 3, &["N4"], &[], |_, _| {});
    let sid = ping(&mut sim, "N1", "N6");
    run_secs(&mut sim, 1);
    let r = replies(&sim, "N1");
    let want: Vec<_> = ["N3", "N5", "N6"].iter().map(|n| lo(&sim, n)).collect();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].2, want);
    let k = key(&sim, "N1", "N6", sid);
    assert!(mrs(&sim, "N4", &k).is_none(), "N4 keeps nothing");
    assert_eq!(
        peers(&sim, "N3", &k).0.as_deref(),
        Some("N5"),
        "N3 peers with N5 across N4"
    );
    assert_eq!(peers(&sim, "N5", &k).1.as_deref(), Some("N3"));
    assert!(sim.node_stats(id(&sim, "N4")).forwarded >= 2);

    // No engine at all on N4: the same.
    let mut sim2 = super::common::sim(testbeds::gist_thesis(), 3, &[], &["N4"], |_, _| {});
    let sid = ping(&mut sim2, "N1", "N6");
    run_secs(&mut sim2, 1);
    let r = replies(&sim2, "N1");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].2, want);
    let k = key(&sim2, "N1", "N6", sid);
    assert_eq!(peers(&sim2, "N3", &k).0.as_deref(), Some("N5"));
}

#[test]
fn data_without_routing_state_goes_q_mode_to_the_next_aware_node() {
    use pathwise_gist::GistEvent;
    use pathwise_gist::nslp::{GistApi, SendMessage};
    use pathwise_gist::wire::{Mri, PathCoupledMri};
    // NSLPID 42 served without a plug-in everywhere: deliveries surface as events.
    let mut sim = sim(testbeds::gist_thesis(), 4, &[], &[], |c, _| {
        c.nslpids = vec![42]
    });
    let (src, dst) = (lo(&sim, "N1"), lo(&sim, "N6"));
    let n1 = id(&sim, "N1");
    let sid = sim
        .with_engine(n1, |e, now| {
            let g = e.inner_mut();
            let sid = g.new_session_id();
            let mut m = SendMessage::new(
                42,
                sid,
                Mri::PathCoupled(PathCoupledMri::flow(src, dst)),
                b"stateless!!!".to_vec(),
            );
            m.transfer.setup_state = false;
            g.send_message(now, m).unwrap();
            sid
        })
        .unwrap();
    run_secs(&mut sim, 1);
    let n3 = id(&sim, "N3");
    let got: Vec<_> = sim
        .events_where(|r| r.node == n3)
        .filter_map(|r| match &r.event {
            GistEvent::Recv(m) => Some(m.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(got.len(), 1, "N3 intercepted it");
    assert_eq!(got[0].nslp_data, b"stateless!!!");
    assert_eq!(got[0].session_id, sid);
    assert!(!got[0].transfer.setup_state && !got[0].routing_state_check);
    for n in ["N1", "N3"] {
        assert_eq!(
            sim.engine(id(&sim, n))
                .unwrap()
                .inner()
                .state_stats()
                .routing_states,
            0,
            "{n} keeps no state"
        );
    }
    use pathwise_gist::wire::MsgType;
    assert_eq!(
        sim.engine(n1)
            .unwrap()
            .inner()
            .counters()
            .sent(MsgType::Query),
        0,
        "no handshake"
    );
}
