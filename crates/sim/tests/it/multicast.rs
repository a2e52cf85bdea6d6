use crate::toy::{Relay, Toy, ToyEvent, alert, heard, plain, udp};
use pathwise_core::io::IfIndex;
use pathwise_core::route::{MulticastRoute, RouteChange};
use pathwise_core::time::Duration;
use pathwise_sim::{DropReason, Sim, SimConfig, testbeds};
use std::net::IpAddr;

fn n1_source(sim: &Sim<Toy>) -> IpAddr {
    // N1's address on its only link.
    let a: IpAddr = "10.0.1.1".parse().unwrap();
    assert_eq!(sim.topology().owner(a), sim.node("N1"));
    a
}

#[test]
fn tree_delivers_to_members_only() {
    let mut sim = plain(testbeds::kom_rsvp(), SimConfig::seeded(1));
    let id = |n: &str| sim.node(n).unwrap();
    let (n1, n2, n3, n4, n5, n6) = (id("N1"), id("N2"), id("N3"), id("N4"), id("N5"), id("N6"));
    let group: IpAddr = "232.1.1.1".parse().unwrap();
    let src = n1_source(&sim);
    sim.add_multicast_source(n1, src, group);
    sim.join_group(n2, group);
    sim.join_group(n5, group);
    sim.run_for(Duration::from_millis(1));

    let entry = |sim: &Sim<Toy>, n| sim.engine(n).unwrap().mroutes.get(&(src, group)).cloned();
    assert_eq!(
        entry(&sim, n1),
        Some(MulticastRoute {
            source: src,
            group,
            iif: None,
            oifs: vec![IfIndex(1)],
            local_member: false
        })
    );
    // N3: from N1 on if1, to N2 (if2) and N4 (if3).
    let e3 = entry(&sim, n3).unwrap();
    assert_eq!(
        (e3.iif, e3.oifs.clone()),
        (Some(IfIndex(1)), vec![IfIndex(2), IfIndex(3)])
    );
    let e4 = entry(&sim, n4).unwrap();
    assert_eq!(
        (e4.iif, e4.oifs.clone(), e4.local_member),
        (Some(IfIndex(1)), vec![IfIndex(2)], false)
    );
    assert!(entry(&sim, n2).unwrap().local_member);
    assert!(entry(&sim, n5).unwrap().local_member);
    assert_eq!(entry(&sim, n6), None);
    // What the simulator installed is what engines were told.
    assert_eq!(sim.multicast_routes(n3).next(), Some(&e3));

    for i in 0..10u8 {
        sim.with_engine(n1, |e, _| e.send(udp(group, &[i])));
    }
    sim.run_for(Duration::from_secs(1));
    assert_eq!(heard(&sim, "N2").len(), 10);
    assert_eq!(heard(&sim, "N5").len(), 10);
    assert!(heard(&sim, "N3").is_empty());
    assert!(heard(&sim, "N4").is_empty());
    assert!(heard(&sim, "N6").is_empty());
    assert_eq!(sim.node_stats(n3).forwarded, 20);
    // The source address defaulted to the registered source.
    assert!(matches!(&heard(&sim, "N5")[0], ToyEvent::Heard { src: s, ttl: 62, .. } if *s == src));

    // N5 leaves: N4 is pruned, N3 keeps only the branch to N2.
    sim.drain_events();
    sim.leave_group(n5, group);
    sim.run_for(Duration::from_millis(1));
    assert!(
        sim.events_of(n4)
            .any(|e| *e == ToyEvent::Route(RouteChange::RemoveMulticast { source: src, group }))
    );
    assert_eq!(entry(&sim, n3).unwrap().oifs, vec![IfIndex(2)]);
    assert_eq!(entry(&sim, n4), None);
    sim.with_engine(n1, |e, _| e.send(udp(group, b"again")));
    sim.run_for(Duration::from_secs(1));
    assert!(heard(&sim, "N5").is_empty());
    assert_eq!(heard(&sim, "N2").len(), 1);
}

#[test]
fn router_alert_multicast_is_intercepted_not_forwarded() {
    let mut sim = Sim::new(testbeds::kom_rsvp(), SimConfig::seeded(1), |s| {
        let toy = Toy::new(s);
        Some(if s.name == "N3" {
            toy.intercepting(Relay::Routed)
        } else {
            toy
        })
    });
    let (n1, n5) = (sim.node("N1").unwrap(), sim.node("N5").unwrap());
    let group: IpAddr = "232.1.1.2".parse().unwrap();
    let src = n1_source(&sim);
    sim.add_multicast_source(n1, src, group);
    sim.join_group(n5, group);
    sim.run_for(Duration::from_millis(1));
    sim.with_engine(n1, |e, _| e.send(alert(group, b"mpath")));
    sim.run_for(Duration::from_secs(1));
    assert_eq!(heard(&sim, "N3").len(), 1);
    // The routed relay has no unicast route for a group: nothing goes further.
    assert!(heard(&sim, "N5").is_empty());
    assert_eq!(sim.node_stats(sim.node("N3").unwrap()).intercepted, 1);
}

#[test]
fn wrong_incoming_interface_fails_rpf() {
    let mut sim = plain(testbeds::kom_rsvp(), SimConfig::seeded(1));
    let (n1, n5, n6, n4) = (
        sim.node("N1").unwrap(),
        sim.node("N5").unwrap(),
        sim.node("N6").unwrap(),
        sim.node("N4").unwrap(),
    );
    let group: IpAddr = "232.1.1.3".parse().unwrap();
    let src = n1_source(&sim);
    sim.add_multicast_source(n1, src, group);
    sim.join_group(n5, group);
    sim.run_for(Duration::from_millis(1));
    // N6 spoofs N1's source address towards N4.
    let mut t = udp(group, b"spoof");
    t.src = Some(src);
    t.ifindex = Some(IfIndex(1));
    sim.with_engine(n6, |e, _| e.send(t));
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.node_stats(n4).drops.get(DropReason::RpfFailure), 1);
    assert!(heard(&sim, "N5").is_empty());
}

#[test]
fn ipv6_groups_and_trees_follow_topology_changes() {
    let mut sim = plain(testbeds::gist_thesis(), SimConfig::seeded(1));
    let id = |n: &str| sim.node(n).unwrap();
    let (n1, n4, n5, n6, n7) = (id("N1"), id("N4"), id("N5"), id("N6"), id("N7"));
    let group: IpAddr = "ff3e::4242".parse().unwrap();
    let src: IpAddr = "fd00:1::1".parse().unwrap();
    sim.add_multicast_source(n1, src, group);
    sim.join_group(n6, group);
    sim.join_group(n7, group);
    sim.run_for(Duration::from_millis(1));
    sim.with_engine(n1, |e, _| e.send(udp(group, b"v6")));
    sim.run_for(Duration::from_secs(1));
    assert_eq!(heard(&sim, "N6").len(), 1);
    assert_eq!(heard(&sim, "N7").len(), 1);
    // Cut N4-N5: the tree shrinks to the source's own entry.
    let l = sim.link_between(n4, n5).unwrap();
    sim.link_down(l);
    sim.run_for(Duration::from_millis(1));
    assert_eq!(sim.engine(n4).unwrap().mroutes.len(), 0);
    assert_eq!(
        sim.engine(n1).unwrap().mroutes[&(src, group)].oifs,
        Vec::<IfIndex>::new()
    );
    sim.link_up(l);
    sim.run_for(Duration::from_millis(1));
    assert_eq!(sim.engine(n4).unwrap().mroutes.len(), 1);
}
