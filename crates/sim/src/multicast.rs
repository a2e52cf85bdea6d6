//! Source-specific multicast trees.
//!
//! For every registered `(source, group)` the simulator builds the shortest-path tree rooted
//! at the source's node (the same Dijkstra and tie-breaking as unicast, see [`crate::routing`])
//! and keeps the branches that lead to member nodes that are up. Every node on the tree gets a
//! [`MulticastRoute`]: the interface data arrives on (`None` at the source's node), the
//! interfaces it is copied to, and whether the node is itself a member. The source's node
//! always has an entry, even with no members, so its engine knows where data would go.

use crate::routing::Spt;
use crate::topology::{NodeId, Topology};
use pathwise_core::io::IfIndex;
use pathwise_core::route::{MulticastRoute, RouteChange};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// A node's multicast entries keyed by `(source, group)`.
pub(crate) type MulticastTable = BTreeMap<(IpAddr, IpAddr), MulticastRoute>;

/// Group membership and registered sources.
#[derive(Clone, Debug, Default)]
pub(crate) struct Groups {
    members: BTreeMap<IpAddr, BTreeSet<NodeId>>,
    sources: BTreeMap<(IpAddr, IpAddr), NodeId>,
}

impl Groups {
    /// Returns whether membership changed.
    pub fn join(&mut self, node: NodeId, group: IpAddr) -> bool {
        self.members.entry(group).or_default().insert(node)
    }

    /// Returns whether membership changed.
    pub fn leave(&mut self, node: NodeId, group: IpAddr) -> bool {
        let Some(m) = self.members.get_mut(&group) else {
            return false;
        };
        let changed = m.remove(&node);
        if m.is_empty() {
            self.members.remove(&group);
        }
        changed
    }

    /// Register `node` as the sender of `source` to `group`; replaces an earlier owner.
    pub fn add_source(&mut self, node: NodeId, source: IpAddr, group: IpAddr) -> bool {
        self.sources.insert((source, group), node) != Some(node)
    }

    /// Returns whether a source was removed.
    pub fn remove_source(&mut self, source: IpAddr, group: IpAddr) -> bool {
        self.sources.remove(&(source, group)).is_some()
    }

    /// Whether `node` has joined `group`.
    pub fn is_member(&self, node: NodeId, group: IpAddr) -> bool {
        self.members.get(&group).is_some_and(|m| m.contains(&node))
    }

    /// Fill `tables` (one per node, cleared first) with every tree.
    pub fn trees(
        &self,
        topo: &Topology,
        up: &[bool],
        spt: &mut Spt,
        tables: &mut [MulticastTable],
    ) {
        for t in tables.iter_mut() {
            t.clear();
        }
        let mut path: Vec<(NodeId, NodeId, IfIndex)> = Vec::new();
        for (&(source, group), &root) in &self.sources {
            if !up[root.index()] {
                continue;
            }
            spt.compute(topo, up, root);
            let key = (source, group);
            tables[root.index()].insert(
                key,
                MulticastRoute {
                    source,
                    group,
                    iif: None,
                    oifs: Vec::new(),
                    local_member: self.is_member(root, group),
                },
            );
            let Some(members) = self.members.get(&group) else {
                continue;
            };
            for &m in members {
                if !up[m.index()] || !spt.reached(m) {
                    continue;
                }
                // Walk towards the root until joining the part of the tree already built,
                // then graft the branch from the top down so each parent exists first.
                path.clear();
                let mut v = m;
                while !tables[v.index()].contains_key(&key) {
                    let (p, out) = spt.pred[v.index()];
                    path.push((v, NodeId(p), out));
                    v = NodeId(p);
                }
                for &(v, p, out) in path.iter().rev() {
                    let (_, arrival) = topo.peer(p, out).expect("tree edge is a link");
                    let iif = arrival.ifindex;
                    tables[v.index()].insert(
                        key,
                        MulticastRoute {
                            source,
                            group,
                            iif: Some(iif),
                            oifs: Vec::new(),
                            local_member: self.is_member(v, group),
                        },
                    );
                    if let Some(parent) = tables[p.index()].get_mut(&key) {
                        parent.oifs.push(out);
                    }
                }
            }
        }
        for t in tables.iter_mut() {
            for r in t.values_mut() {
                r.oifs.sort_unstable();
                r.oifs.dedup();
            }
        }
    }
}

/// The changes that turn `old` into `new`, in key order.
pub(crate) fn diff(old: &MulticastTable, new: &MulticastTable, out: &mut Vec<RouteChange>) {
    for (key, _) in old.iter().filter(|(k, _)| !new.contains_key(k)) {
        out.push(RouteChange::RemoveMulticast {
            source: key.0,
            group: key.1,
        });
    }
    for (key, route) in new {
        if old.get(key) != Some(route) {
            out.push(RouteChange::AddMulticast(route.clone()));
        }
    }
}
