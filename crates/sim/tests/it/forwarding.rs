use crate::toy::{Relay, Toy, ToyEvent, alert, chain, heard, lo4, lo6, plain, udp};
use pathwise_core::io::IfIndex;
use pathwise_core::time::{Duration, Instant};
use pathwise_sim::{
    DropReason, LOOPBACK_IFINDEX, LinkParams, Outcome, Sim, SimConfig, Topology, testbeds,
};

fn ttl_and_ifindex(e: &ToyEvent) -> (u8, IfIndex, bool) {
    match e {
        ToyEvent::Heard {
            ttl,
            ifindex,
            transit,
            ..
        } => (*ttl, *ifindex, *transit),
        _ => unreachable!(),
    }
}

#[test]
fn router_alert_is_intercepted_hop_by_hop() {
    let topo = chain(&["H1", "R1", "R2", "H2"], LinkParams::default());
    let mut sim = Sim::new(topo, SimConfig::seeded(1).with_trace(), |s| {
        Some(Toy::new(s).intercepting(Relay::Routed))
    });
    let h1 = sim.node("H1").unwrap();
    let h2_addr = lo4(&sim, "H2");
    sim.with_engine(h1, |e, _| e.send(alert(h2_addr, b"path")));
    sim.run_for(Duration::from_secs(1));
    // Each router got it from the previous hop on its first interface, TTL one less each time.
    assert_eq!(
        heard(&sim, "R1")
            .iter()
            .map(ttl_and_ifindex)
            .collect::<Vec<_>>(),
        [(64, IfIndex(1), true)]
    );
    assert_eq!(
        heard(&sim, "R2")
            .iter()
            .map(ttl_and_ifindex)
            .collect::<Vec<_>>(),
        [(63, IfIndex(1), true)]
    );
    assert_eq!(
        heard(&sim, "H2")
            .iter()
            .map(ttl_and_ifindex)
            .collect::<Vec<_>>(),
        [(62, IfIndex(1), false)]
    );
    let outcomes: Vec<_> = sim.trace().iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        [
            Outcome::Intercepted,
            Outcome::Intercepted,
            Outcome::Delivered
        ]
    );
    for r in ["R1", "R2"] {
        let s = sim.node_stats(sim.node(r).unwrap());
        assert_eq!((s.intercepted, s.forwarded), (1, 0), "{r}");
    }
    // One hop of 1 ms plus 100 Mbit/s serialization of 20+4 bytes of header and 4 of payload.
    let per_hop = Duration::from_millis(1) + Duration::from_nanos(28 * 80);
    assert_eq!(sim.trace()[2].time, Instant::ZERO + per_hop * 3);
}

#[test]
fn router_alert_crosses_routers_without_engines() {
    let mut b = Topology::builder();
    let h1 = b.host("H1");
    let r1 = b.router("R1");
    let r2 = b.router("R2");
    let h2 = b.host("H2");
    b.node_mut(r1).engine = false;
    b.node_mut(r2).engine = false;
    for (x, y) in [(h1, r1), (r1, r2), (r2, h2)] {
        b.link(x, y, LinkParams::default());
    }
    let mut sim = Sim::new(b.build().unwrap(), SimConfig::seeded(1), |s| {
        Some(Toy::new(s).intercepting(Relay::Routed))
    });
    assert!(sim.engine(r1).is_none());
    let h2_addr = lo6(&sim, "H2");
    sim.with_engine(h1, |e, _| e.send(alert(h2_addr, b"path")));
    sim.run_for(Duration::from_secs(1));
    assert_eq!(
        heard(&sim, "H2")
            .iter()
            .map(ttl_and_ifindex)
            .collect::<Vec<_>>(),
        [(62, IfIndex(1), false)]
    );
    assert_eq!(sim.node_stats(r1).forwarded, 1);
    assert_eq!(sim.node_stats(r2).forwarded, 1);
}

#[test]
fn routers_that_decline_router_alert_forward() {
    let topo = chain(&["H1", "R1", "H2"], LinkParams::default());
    let mut sim = plain(topo, SimConfig::seeded(1));
    let h1 = sim.node("H1").unwrap();
    let h2_addr = lo4(&sim, "H2");
    sim.with_engine(h1, |e, _| e.send(alert(h2_addr, b"x")));
    sim.run_for(Duration::from_secs(1));
    assert!(heard(&sim, "R1").is_empty());
    assert_eq!(heard(&sim, "H2").len(), 1);
}

#[test]
fn flooding_relay_reaches_every_branch() {
    // Intercepting routers flood out of every other interface (a multicast-Path stand-in).
    let mut sim = Sim::new(testbeds::kom_rsvp(), SimConfig::seeded(1), |s| {
        Some(Toy::new(s).intercepting(Relay::Flood))
    });
    let n1 = sim.node("N1").unwrap();
    let n5_addr = lo4(&sim, "N5");
    sim.with_engine(n1, |e, _| e.send(alert(n5_addr, b"flood")));
    sim.run_for(Duration::from_secs(1));
    // N3 floods to N2 and N4; N4 floods to N5 and N6. N5 is the destination; N2 and N6 are
    // hosts, so the copies addressed to N5 die there.
    assert_eq!(heard(&sim, "N3").len(), 1);
    assert_eq!(heard(&sim, "N4").len(), 1);
    assert_eq!(heard(&sim, "N5").len(), 1);
    assert!(heard(&sim, "N6").is_empty());
    assert_eq!(sim.drops().get(DropReason::NotRouter), 2);
}

#[test]
fn ttl_runs_out() {
    let topo = chain(&["H1", "R1", "R2", "R3", "H2"], LinkParams::default());
    let mut sim = plain(topo, SimConfig::seeded(1).with_trace());
    let h1 = sim.node("H1").unwrap();
    let r2 = sim.node("R2").unwrap();
    let h2_addr = lo4(&sim, "H2");
    let mut t = udp(h2_addr, b"short");
    t.ttl = 2;
    sim.with_engine(h1, |e, _| e.send(t));
    let mut t = udp(h2_addr, b"enough");
    t.ttl = 4;
    sim.with_engine(h1, |e, _| e.send(t));
    sim.run_for(Duration::from_secs(1));
    // TTL 2 leaves R1 with 1 and dies at R2; TTL 4 arrives with 1.
    assert_eq!(sim.node_stats(r2).drops.get(DropReason::TtlExpired), 1);
    let got = heard(&sim, "H2");
    assert_eq!(got.len(), 1);
    assert_eq!(ttl_and_ifindex(&got[0]).0, 1);
    let dead = sim
        .trace()
        .iter()
        .find(|r| r.outcome == Outcome::Dropped(DropReason::TtlExpired))
        .unwrap();
    assert_eq!((dead.to, dead.ttl), (Some(r2), 1));
}

#[test]
fn hosts_do_not_forward() {
    let mut b = Topology::builder();
    let h1 = b.host("H1");
    let h2 = b.host("H2");
    let h3 = b.host("H3");
    b.link(h1, h2, LinkParams::default());
    b.link(h2, h3, LinkParams::default());
    let mut sim = plain(b.build().unwrap(), SimConfig::seeded(1));
    let h3_addr = lo4(&sim, "H3");
    // No route through a host...
    assert!(sim.route_to(h1, h3_addr).is_none());
    sim.with_engine(h1, |e, _| e.send(udp(h3_addr, b"x")));
    assert_eq!(sim.node_stats(h1).drops.get(DropReason::NoRoute), 1);
    // ...and a packet pushed at one by interface is dropped there.
    let mut t = udp(h3_addr, b"x");
    t.ifindex = Some(IfIndex(1));
    sim.with_engine(h1, |e, _| e.send(t));
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.node_stats(h2).drops.get(DropReason::NotRouter), 1);
    assert!(heard(&sim, "H3").is_empty());
}

#[test]
fn ifindex_overrides_routing() {
    // Ring A-B-C-D-A: A reaches C via B (lowest ifindex); send it via D instead.
    let mut b = Topology::builder();
    let ids: Vec<_> = ["A", "B", "C", "D"].iter().map(|n| b.router(*n)).collect();
    for i in 0..4 {
        b.link(ids[i], ids[(i + 1) % 4], LinkParams::default());
    }
    let mut sim = plain(b.build().unwrap(), SimConfig::seeded(1));
    let c_addr = lo4(&sim, "C");
    let mut t = udp(c_addr, b"x");
    t.ifindex = Some(IfIndex(2));
    sim.with_engine(ids[0], |e, _| e.send(t));
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.node_stats(ids[3]).forwarded, 1);
    assert_eq!(sim.node_stats(ids[1]).forwarded, 0);
    // The source address defaulted to the chosen interface's (A's end of link 4).
    match &heard(&sim, "C")[0] {
        ToyEvent::Heard { src, .. } => assert_eq!(src.to_string(), "10.0.4.2"),
        _ => unreachable!(),
    }
    // A missing interface is a counted drop.
    let mut t = udp(c_addr, b"x");
    t.ifindex = Some(IfIndex(9));
    sim.with_engine(ids[0], |e, _| e.send(t));
    assert_eq!(sim.drops().get(DropReason::NoInterface), 1);
}

#[test]
fn own_address_loops_back_and_engineless_destination_drops() {
    let mut b = Topology::builder();
    let h1 = b.host("H1");
    let h2 = b.host("H2");
    b.node_mut(h2).engine = false;
    b.link(h1, h2, LinkParams::default());
    let mut sim = plain(b.build().unwrap(), SimConfig::seeded(1));
    let own = lo4(&sim, "H1");
    sim.with_engine(h1, |e, _| e.send(udp(own, b"me")));
    sim.run_for(Duration::from_millis(1));
    let got = heard(&sim, "H1");
    assert_eq!(ttl_and_ifindex(&got[0]).1, LOOPBACK_IFINDEX);
    let h2_addr = lo4(&sim, "H2");
    sim.with_engine(h1, |e, _| e.send(udp(h2_addr, b"anyone?")));
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.node_stats(h2).drops.get(DropReason::NoEngine), 1);
}

#[test]
fn echo_round_trip_on_gist_testbed() {
    let mut sim = Sim::new(testbeds::gist_thesis(), SimConfig::seeded(1), |s| {
        let mut t = Toy::new(s);
        t.echo = true;
        Some(t)
    });
    let n1 = sim.node("N1").unwrap();
    let n7 = lo4(&sim, "N7");
    sim.with_engine(n1, |e, _| e.send(udp(n7, b"ping")));
    assert!(sim.run_until_idle(Duration::from_secs(1)));
    // N1 - N3 - N4 - N5 - N7: four hops each way, through three routers.
    let reply = &heard(&sim, "N1")[0];
    assert!(matches!(reply, ToyEvent::Heard { ttl: 61, payload, .. } if payload == b"Rping"));
    for r in ["N3", "N4", "N5"] {
        assert_eq!(sim.node_stats(sim.node(r).unwrap()).forwarded, 2, "{r}");
    }
}
