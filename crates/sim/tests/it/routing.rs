use crate::toy::{Toy, ToyEvent, lo4, lo6, plain, udp};
use pathwise_core::io::IfIndex;
use pathwise_core::route::RouteChange;
use pathwise_core::time::{Duration, Instant};
use pathwise_sim::{
    Control, Direction, LinkParams, NodeId, NodeRole, Sim, SimConfig, Topology, testbeds,
};
use proptest::prelude::*;
use std::collections::VecDeque;
use std::net::IpAddr;

/// Follow each engine's own FIB hop by hop from `s` to `dst`; the cost of the path taken.
fn walk(sim: &Sim<Toy>, s: NodeId, dst: IpAddr, owner: NodeId) -> Option<u64> {
    let t = sim.topology();
    let (mut at, mut cost) = (s, 0u64);
    for _ in 0..=t.nodes().len() {
        if at == owner {
            return Some(cost);
        }
        if at != s && t.node(at).role == NodeRole::Host {
            return None; // hosts do not forward
        }
        let fib = &sim.engine(at)?.fib;
        let (_, route) = fib.lookup(dst)?;
        let iface = t.interface(at, route.ifindex)?;
        cost += u64::from(t.link(iface.link).params[iface.direction.index()].cost);
        let (next, _) = t.peer(at, route.ifindex)?;
        // A connected route's next hop is the destination itself; otherwise it is the peer.
        if let Some(nh) = route.next_hop {
            assert_eq!(
                t.owner(nh),
                Some(next),
                "next hop address belongs to the peer"
            );
        }
        at = next;
    }
    None
}

/// Cheapest path costs from `s` with hosts as end points only (Bellman-Ford, independent of
/// the simulator's Dijkstra).
fn cheapest(t: &Topology, s: NodeId) -> Vec<Option<u64>> {
    let mut d = vec![None; t.nodes().len()];
    d[s.index()] = Some(0);
    let mut queue = VecDeque::from([s]);
    while let Some(u) = queue.pop_front() {
        if u != s && t.node(u).role == NodeRole::Host {
            continue;
        }
        for i in &t.node(u).interfaces {
            let l = t.link(i.link);
            if !l.up {
                continue;
            }
            let (v, _) = l.far_end(i.direction);
            let nd = d[u.index()].unwrap() + u64::from(l.params[i.direction.index()].cost);
            if d[v.index()].is_none_or(|old| nd < old) {
                d[v.index()] = Some(nd);
                queue.push_back(v);
            }
        }
    }
    d
}

fn check_all_paths(sim: &Sim<Toy>) {
    let t = sim.topology();
    for s in t.node_ids() {
        let best = cheapest(t, s);
        // Loopbacks: exactly the cheapest path.
        for owner in t.node_ids() {
            let n = t.node(owner);
            for dst in [
                IpAddr::V4(n.loopback_v4.addr()),
                IpAddr::V6(n.loopback_v6.addr()),
            ] {
                assert_eq!(
                    walk(sim, s, dst, owner),
                    best[owner.index()],
                    "{} -> {} ({dst})",
                    sim.name(s),
                    n.name
                );
            }
        }
        // Interface addresses: routed towards the nearer end of their link, then across it.
        for l in t.links() {
            for (end, &(owner, ifindex)) in l.ends.iter().enumerate() {
                let iface = t.interface(owner, ifindex).unwrap();
                let (other, _) = l.ends[1 - end];
                let crossing = u64::from(l.params[1 - end].cost);
                // Only routers advertise a subnet; each hop heads for the nearer router end,
                // then the packet crosses the link if that end is not the owner.
                let nearest_router = [owner, other]
                    .into_iter()
                    .filter(|e| t.node(*e).role == NodeRole::Router)
                    .filter_map(|e| best[e.index()])
                    .min();
                let bound = if !l.up {
                    (s == owner).then_some(0)
                } else if s == owner {
                    Some(0)
                } else if s == other {
                    Some(crossing) // a connected subnet is reached directly, whatever the cost
                } else {
                    nearest_router.map(|d| d + crossing)
                };
                for dst in [IpAddr::V4(iface.v4.addr()), IpAddr::V6(iface.v6.addr())] {
                    let taken = walk(sim, s, dst, owner);
                    let what = format!("{} -> {} ({dst})", sim.name(s), t.node(owner).name);
                    let reachable = bound.is_some();
                    assert_eq!(taken.is_some(), reachable, "{what}: reachability");
                    if let (Some(taken), Some(bound)) = (taken, bound) {
                        assert!(taken <= bound, "{what}: cost {taken} > {bound}");
                        assert!(best[owner.index()].is_none_or(|b| taken >= b), "{what}");
                    }
                }
            }
        }
    }
}

#[test]
fn testbed_routes_reach_every_address_on_shortest_paths() {
    for (name, _) in testbeds::ALL {
        let sim = plain(testbeds::by_name(name).unwrap(), SimConfig::seeded(1));
        check_all_paths(&sim);
        // What the engines were told is what the simulator forwards by.
        for n in sim.topology().node_ids() {
            let told: Vec<_> = sim
                .engine(n)
                .unwrap()
                .fib
                .iter()
                .map(|(_, r)| r.clone())
                .collect();
            let installed: Vec<_> = sim.routes(n).cloned().collect();
            let mut told_sorted = told.clone();
            told_sorted.sort_by_key(|r| r.prefix);
            assert_eq!(told_sorted, installed, "{name}: {}", sim.name(n));
            // At start, every change is an Add.
            let log = &sim.engine(n).unwrap().route_log;
            assert!(log.iter().all(|c| matches!(c, RouteChange::Add(_))));
        }
    }
}

#[test]
fn kom_next_hops() {
    let sim = plain(testbeds::kom_rsvp(), SimConfig::seeded(1));
    let n1 = sim.node("N1").unwrap();
    let n3 = sim.node("N3").unwrap();
    // N1's only interface is link 1 (10.0.1.0/30); N3 is 10.0.1.2.
    let r = sim.route_to(n1, lo4(&sim, "N5")).unwrap();
    assert_eq!(r.ifindex, IfIndex(1));
    assert_eq!(r.next_hop, Some("10.0.1.2".parse().unwrap()));
    let r = sim.route_to(n1, lo6(&sim, "N5")).unwrap();
    assert_eq!(r.next_hop, Some("fd00:1::2".parse().unwrap()));
    // N3 reaches N5 over link 3 (its third interface: N1, N2, N4 in declaration order).
    let r = sim.route_to(n3, lo4(&sim, "N5")).unwrap();
    assert_eq!(r.ifindex, IfIndex(3));
    assert_eq!(r.next_hop, Some("10.0.3.2".parse().unwrap()));
    assert_eq!(r.metric, 2);
    // Connected subnets have no next hop.
    let r = sim.route_to(n3, "10.0.2.1".parse().unwrap()).unwrap();
    assert_eq!((r.next_hop, r.ifindex, r.metric), (None, IfIndex(2), 0));
    // Hosts are not transit: N1's table has no route through N5 to anything beyond it, but
    // every address is reachable (the testbed is a tree of routers with hosts at the edge).
    assert_eq!(sim.routes(n1).count(), 2 * (5 + 5)); // 5 subnets + 5 loopbacks, two families
}

/// A ring A-B-C-D-A of routers with unit costs.
fn ring() -> Topology {
    let mut b = Topology::builder();
    let ids: Vec<_> = ["A", "B", "C", "D"].iter().map(|n| b.router(*n)).collect();
    for i in 0..4 {
        b.link(ids[i], ids[(i + 1) % 4], LinkParams::default());
    }
    b.build().unwrap()
}

#[test]
fn link_down_reroutes_after_convergence_delay() {
    let delay = Duration::from_millis(50);
    let mut sim = plain(ring(), SimConfig::seeded(1).with_routing_delay(delay));
    let (a, b) = (sim.node("A").unwrap(), sim.node("B").unwrap());
    let c_addr = lo4(&sim, "C");
    // A-B is link 0 (A's if1), D-A is link 3 (A's if2). Equal cost: lowest ifindex wins.
    assert_eq!(sim.route_to(a, c_addr).unwrap().ifindex, IfIndex(1));
    sim.drain_events();
    let ab = sim.link_between(a, b).unwrap();
    sim.schedule(Instant::from_secs(1), Control::LinkDown(ab));
    // During convergence, traffic still follows the old route into the dead link.
    sim.schedule_call(
        Instant::from_secs(1) + Duration::from_millis(10),
        a,
        move |e, _| e.send(udp(c_addr, b"x")),
    );
    sim.run_until(Instant::from_nanos(1_050_000_000 - 1));
    assert!(sim.events_of(a).all(|e| !matches!(e, ToyEvent::Route(_))));
    assert_eq!(sim.drops().get(pathwise_sim::DropReason::LinkDown), 1);
    sim.run_for(Duration::from_millis(1));
    let changes: Vec<_> = sim
        .events_where(|r| r.node == a)
        .filter_map(|r| match &r.event {
            ToyEvent::Route(c) => Some((r.time, c.clone())),
            _ => None,
        })
        .collect();
    assert!(!changes.is_empty());
    assert!(
        changes
            .iter()
            .all(|(t, _)| *t == Instant::from_secs(1) + delay)
    );
    // The A-B subnet is gone, and C is now via D.
    assert!(
        changes
            .iter()
            .any(|(_, c)| *c == RouteChange::Remove("10.0.1.0/30".parse().unwrap()))
    );
    assert_eq!(sim.route_to(a, c_addr).unwrap().ifindex, IfIndex(2));
    assert_eq!(
        sim.engine(a).unwrap().fib.lookup(c_addr).unwrap().1.ifindex,
        IfIndex(2)
    );
    check_all_paths(&sim);
    // And back.
    sim.link_up(ab);
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.route_to(a, c_addr).unwrap().ifindex, IfIndex(1));
    check_all_paths(&sim);
}

#[test]
fn cost_change_reroutes() {
    let mut sim = plain(ring(), SimConfig::seeded(1));
    let (a, b) = (sim.node("A").unwrap(), sim.node("B").unwrap());
    let b_addr = lo4(&sim, "B");
    assert_eq!(sim.route_to(a, b_addr).unwrap().ifindex, IfIndex(1));
    let ab = sim.link_between(a, b).unwrap();
    let params = sim.link_params(ab, Direction::AToB).clone().cost(10);
    sim.apply(Control::SetLinkParams {
        link: ab,
        direction: None,
        params,
    });
    sim.run_for(Duration::from_millis(1));
    // A -> D -> C -> B costs 3 < 10.
    let r = sim.route_to(a, b_addr).unwrap();
    assert_eq!((r.ifindex, r.metric), (IfIndex(2), 3));
    check_all_paths(&sim);
}

fn arb_topology() -> impl Strategy<Value = Topology> {
    (2usize..9)
        .prop_flat_map(|n| {
            let extra = proptest::collection::vec((0..n, 0..n, 1u32..5), 0..n * 2);
            let tree_costs = proptest::collection::vec(1u32..5, n - 1);
            let hosts = proptest::collection::vec(any::<bool>(), n);
            (Just(n), tree_costs, extra, hosts)
        })
        .prop_map(|(n, tree_costs, extra, hosts)| {
            let mut b = Topology::builder();
            let ids: Vec<_> = (0..n)
                .map(|i| {
                    if hosts[i] && i > 0 {
                        b.host(format!("n{i}"))
                    } else {
                        b.router(format!("n{i}"))
                    }
                })
                .collect();
            // A spanning chain keeps it connected; extra links add loops and parallels.
            for (i, c) in tree_costs.into_iter().enumerate() {
                b.link(ids[i], ids[i + 1], LinkParams::default().cost(c));
            }
            for (x, y, c) in extra {
                if x != y {
                    b.link(ids[x], ids[y], LinkParams::default().cost(c));
                }
            }
            b.build().unwrap()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_topologies_route_on_cheapest_paths(t in arb_topology()) {
        let sim: Sim<Toy> = plain(t, SimConfig::seeded(3));
        check_all_paths(&sim);
    }
}
