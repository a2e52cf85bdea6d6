//! Shortest-path unicast routing, as a link-state protocol would compute it.
//!
//! Every node runs Dijkstra over the links that are up and the nodes that are up, on the
//! per-direction link cost. Hosts terminate paths: they are reached but never crossed.
//! Equal-cost paths are broken deterministically: lowest total cost, then the lowest outgoing
//! ifindex at the computing node, then the lowest predecessor node id.
//!
//! A node's table holds a route to every link subnet (connected ones with no next hop) and to
//! every other node's loopback, for IPv4 and IPv6. A link's subnet is routed while the link is
//! up, towards the nearer of its ends that are routers and up (hosts advertise nothing, so a
//! subnet between two hosts is known only to them).

use crate::topology::{NodeId, Topology};
use core::cmp::Reverse;
use ipnet::IpNet;
use pathwise_core::io::IfIndex;
use pathwise_core::route::{Route, RouteChange};
use std::collections::{BTreeMap, BinaryHeap};
use std::net::IpAddr;

/// A node's unicast routes, ordered by prefix.
pub(crate) type RouteTable = BTreeMap<IpNet, Route>;

const UNREACHED: u64 = u64::MAX;

/// A shortest-path tree from one source, with reusable scratch space.
#[derive(Debug, Default)]
pub(crate) struct Spt {
    /// Distance from the source, `UNREACHED` if unreachable.
    pub dist: Vec<u64>,
    /// The source's outgoing interface towards each node (`IfIndex(0)` for the source).
    pub first: Vec<IfIndex>,
    /// Each node's predecessor and the predecessor's outgoing interface.
    pub pred: Vec<(u32, IfIndex)>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Spt {
    pub fn reached(&self, n: NodeId) -> bool {
        self.dist[n.index()] != UNREACHED
    }

    /// Dijkstra from `src`, over nodes with `up[n]` and links that are up.
    pub fn compute(&mut self, topo: &Topology, up: &[bool], src: NodeId) {
        let n = topo.nodes.len();
        self.dist.clear();
        self.dist.resize(n, UNREACHED);
        self.first.clear();
        self.first.resize(n, IfIndex(0));
        self.pred.clear();
        self.pred.resize(n, (u32::MAX, IfIndex(0)));
        self.heap.clear();
        if !up[src.index()] {
            return;
        }
        self.dist[src.index()] = 0;
        self.heap.push(Reverse((0, src.0)));
        while let Some(Reverse((d, u))) = self.heap.pop() {
            if d != self.dist[u as usize] {
                continue;
            }
            let node = &topo.nodes[u as usize];
            if u != src.0 && !node.is_router() {
                continue; // hosts are not transit
            }
            for iface in &node.interfaces {
                let link = &topo.links[iface.link.index()];
                if !link.up {
                    continue;
                }
                let (v, _) = link.far_end(iface.direction);
                if !up[v.index()] {
                    continue;
                }
                let nd = d + u64::from(link.params[iface.direction.index()].cost);
                let first = if u == src.0 {
                    iface.ifindex
                } else {
                    self.first[u as usize]
                };
                let vi = v.index();
                let better = (nd, first, u) < (self.dist[vi], self.first[vi], self.pred[vi].0);
                if better {
                    self.dist[vi] = nd;
                    self.first[vi] = first;
                    self.pred[vi] = (u, iface.ifindex);
                    self.heap.push(Reverse((nd, v.0)));
                }
            }
        }
    }
}

fn family_addr(net: [IpNet; 2], like: &IpNet) -> IpAddr {
    match like {
        IpNet::V4(_) => net[0].addr(),
        IpNet::V6(_) => net[1].addr(),
    }
}

/// The unicast routing table of `s`, from its shortest-path tree `spt`.
pub(crate) fn unicast_table(topo: &Topology, up: &[bool], s: NodeId, spt: &Spt) -> RouteTable {
    let mut table = RouteTable::new();
    if !up[s.index()] {
        return table;
    }
    let via = |target: NodeId, prefix: IpNet, metric: u64| {
        let first = spt.first[target.index()];
        let (_, peer) = topo.peer(s, first).expect("first hop is an interface");
        Route {
            prefix,
            next_hop: Some(family_addr(peer.addrs(), &prefix)),
            ifindex: first,
            metric: u32::try_from(metric).unwrap_or(u32::MAX),
        }
    };
    for link in &topo.links {
        if !link.up {
            continue;
        }
        let [(a, aif), (b, _)] = link.ends;
        let end_a = topo.interface(a, aif).expect("link end exists");
        for prefix in end_a.addrs().map(|p| p.trunc()) {
            if let Some(&(_, ifindex)) = link.ends.iter().find(|(n, _)| *n == s) {
                let route = Route {
                    prefix,
                    next_hop: None,
                    ifindex,
                    metric: 0,
                };
                table.insert(prefix, route);
                continue;
            }
            let nearer = [a, b]
                .into_iter()
                .filter(|e| up[e.index()] && spt.reached(*e) && topo.node(*e).is_router())
                .min_by_key(|e| (spt.dist[e.index()], *e));
            if let Some(e) = nearer {
                table.insert(prefix, via(e, prefix, spt.dist[e.index()]));
            }
        }
    }
    for t in topo.node_ids() {
        if t == s || !spt.reached(t) {
            continue;
        }
        let node = topo.node(t);
        for prefix in [IpNet::V4(node.loopback_v4), IpNet::V6(node.loopback_v6)] {
            let prefix = prefix.trunc();
            table.insert(prefix, via(t, prefix, spt.dist[t.index()]));
        }
    }
    table
}

/// The changes that turn `old` into `new`, in prefix order.
pub(crate) fn diff(old: &RouteTable, new: &RouteTable, out: &mut Vec<RouteChange>) {
    let mut o = old.iter().peekable();
    let mut n = new.iter().peekable();
    loop {
        match (o.peek(), n.peek()) {
            (None, None) => break,
            (Some((op, _)), None) => {
                out.push(RouteChange::Remove(**op));
                o.next();
            }
            (None, Some((_, nr))) => {
                out.push(RouteChange::Add((*nr).clone()));
                n.next();
            }
            (Some((op, or)), Some((np, nr))) => match op.cmp(np) {
                core::cmp::Ordering::Less => {
                    out.push(RouteChange::Remove(**op));
                    o.next();
                }
                core::cmp::Ordering::Greater => {
                    out.push(RouteChange::Add((*nr).clone()));
                    n.next();
                }
                core::cmp::Ordering::Equal => {
                    if or != nr {
                        out.push(RouteChange::Add((*nr).clone()));
                    }
                    o.next();
                    n.next();
                }
            },
        }
    }
}
