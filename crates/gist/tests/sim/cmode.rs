//! C-mode: messaging associations over the simulator's stream adapter.

use super::common::*;
use pathwise_core::time::Duration;
use pathwise_gist::MaState;
use pathwise_gist::wire::MsgType;
use pathwise_sim::testbeds;

#[test]
fn cmode_sessions_to_one_peer_share_one_messaging_association() {
    let mut sim = sim(testbeds::gist_thesis(), 21, &[], &[], |c, p| {
        p.reliable = true;
        c.ma_hold_time = Duration::from_secs(20);
        c.ma_idle_timeout = Duration::from_secs(15);
        c.state_lifetime = Duration::from_secs(60);
        c.refresh_period = Duration::from_secs(30);
        c.rs_validity = Duration::from_secs(90);
    });
    let sids: Vec<_> = (0..5).map(|_| ping(&mut sim, "N1", "N6")).collect();
    run_secs(&mut sim, 2);
    assert_eq!(replies(&sim, "N1").len(), 5, "every C-mode ping came back");

    // One MA per neighbouring pair, whatever the number of sessions.
    let n1 = mas(&sim, "N1");
    assert_eq!(n1.len(), 1, "{n1:?}");
    assert_eq!(owner(&sim, Some(n1[0].0)).as_deref(), Some("N3"));
    assert_eq!(
        (n1[0].1, n1[0].2),
        (MaState::Connected, 5),
        "five sessions use it"
    );
    let n3 = mas(&sim, "N3");
    assert_eq!(
        n3.len(),
        2,
        "N3: one MA to N1 (accepted), one to N4: {n3:?}"
    );
    for n in ["N3", "N4", "N5"] {
        assert_eq!(
            sim.engine(id(&sim, n))
                .unwrap()
                .inner()
                .counters()
                .mas_opened,
            2,
            "{n}"
        );
    }
    // The handshake's Confirm and the data went over the MAs; Queries stayed D-mode.
    for sid in &sids {
        let k = key(&sim, "N1", "N6", *sid);
        let v = mrs(&sim, "N3", &k).unwrap();
        assert_eq!(owner(&sim, v.downstream_ma).as_deref(), Some("N4"));
        assert_eq!(owner(&sim, v.upstream_ma).as_deref(), Some("N1"));
    }
    let adapter = sim.engine(id(&sim, "N1")).unwrap();
    assert!(adapter.stats().segments_sent > 0);

    // Keep one session busy for a while: MA-Hellos keep the associations up in between. A
    // keep-alive is due 1/2 to 3/4 of the peer's 20 s hold time after the last message sent
    // (RFC 5971 §4.4.5), so 16 s between pings always needs one.
    for _ in 0..6 {
        ping_again(&mut sim, "N1", "N6", sids[0]);
        run_secs(&mut sim, 16);
    }
    let hellos: u64 = ["N1", "N3", "N4", "N5", "N6"]
        .iter()
        .map(|n| {
            sim.engine(id(&sim, n))
                .unwrap()
                .inner()
                .counters()
                .sent(MsgType::MaHello)
        })
        .sum();
    assert!(hellos > 0, "MA-Hello keep-alive");
    assert_eq!(mas(&sim, "N1").len(), 1);
    assert_eq!(replies(&sim, "N1").len(), 11);

    // Silence: routing state lapses, the MAs go idle and are torn down.
    run_secs(&mut sim, 300);
    for n in ["N1", "N3", "N4", "N5", "N6"] {
        assert!(mas(&sim, n).is_empty(), "{n} still has {:?}", mas(&sim, n));
        assert!(
            sim.engine(id(&sim, n))
                .unwrap()
                .inner()
                .counters()
                .mas_closed
                >= 1,
            "{n}"
        );
        assert_eq!(
            sim.engine(id(&sim, n)).unwrap().connections(),
            0,
            "{n} adapter"
        );
    }
}

fn mas(sim: &GistSim, n: &str) -> Vec<(std::net::IpAddr, MaState, u32)> {
    sim.engine(id(sim, n))
        .unwrap()
        .inner()
        .messaging_associations()
        .collect()
}
