//! Changes to the network (faults, parameters, membership) and the routing pushes they cause.

use crate::link::{Direction, LinkParams};
use crate::multicast;
use crate::routing;
use crate::sim::{Action, Sim};
use crate::topology::{LinkId, NodeId};
use pathwise_core::engine::Engine;
use pathwise_core::fib::Fib;
use pathwise_core::route::RouteChange;
use pathwise_core::time::Instant;
use std::net::IpAddr;

/// A change to the network, applied now ([`Sim::apply`]) or later ([`Sim::schedule`]).
///
/// Anything that changes routing (links up or down, cost, nodes, membership, sources) is
/// followed by a route recomputation after [`crate::SimConfig::routing_delay`].
#[derive(Clone, Debug, PartialEq)]
pub enum Control {
    /// Bring a link up.
    LinkUp(LinkId),
    /// Take a link down: packets queued or in flight on it are lost.
    LinkDown(LinkId),
    /// Replace a link's parameters in one direction, or both when `direction` is `None`.
    SetLinkParams {
        /// The link.
        link: LinkId,
        /// One direction, or both.
        direction: Option<Direction>,
        /// The new parameters.
        params: LinkParams,
    },
    /// Crash a node: its engine and all its state are dropped, packets to it are dropped, and
    /// routing treats it as down (its links stay physically up).
    Crash(NodeId),
    /// Restart a crashed node: the factory is called again and routes are pushed afresh.
    Restart(NodeId),
    /// A node joins a multicast group.
    JoinGroup(NodeId, IpAddr),
    /// A node leaves a multicast group.
    LeaveGroup(NodeId, IpAddr),
    /// A node sends from `source` to `group`: build the source-specific tree.
    AddMulticastSource {
        /// The sending node.
        node: NodeId,
        /// The source address in the data packets.
        source: IpAddr,
        /// The group.
        group: IpAddr,
    },
    /// Forget the tree of `(source, group)`.
    RemoveMulticastSource {
        /// The source address.
        source: IpAddr,
        /// The group.
        group: IpAddr,
    },
}

impl<E: Engine> Sim<E> {
    // ---- network control ----

    /// Apply a change now.
    ///
    /// # Panics
    /// On invalid [`LinkParams`], or a group address that is not multicast.
    pub fn apply(&mut self, control: Control) {
        validate(&control);
        self.control(control);
    }

    /// Apply a change at `at` (now, if `at` has passed).
    ///
    /// # Panics
    /// As [`Sim::apply`], when called.
    pub fn schedule(&mut self, at: Instant, control: Control) {
        validate(&control);
        self.push(at, Action::Control(control));
    }

    /// Take a link down now.
    pub fn link_down(&mut self, link: LinkId) {
        self.apply(Control::LinkDown(link));
    }

    /// Bring a link up now.
    pub fn link_up(&mut self, link: LinkId) {
        self.apply(Control::LinkUp(link));
    }

    /// Crash a node now.
    pub fn crash(&mut self, node: NodeId) {
        self.apply(Control::Crash(node));
    }

    /// Restart a crashed node now.
    pub fn restart(&mut self, node: NodeId) {
        self.apply(Control::Restart(node));
    }

    /// `node` joins `group` now.
    pub fn join_group(&mut self, node: NodeId, group: IpAddr) {
        self.apply(Control::JoinGroup(node, group));
    }

    /// `node` leaves `group` now.
    pub fn leave_group(&mut self, node: NodeId, group: IpAddr) {
        self.apply(Control::LeaveGroup(node, group));
    }

    /// `node` sends to `group` from `source` (normally one of its addresses).
    pub fn add_multicast_source(&mut self, node: NodeId, source: IpAddr, group: IpAddr) {
        self.apply(Control::AddMulticastSource {
            node,
            source,
            group,
        });
    }

    /// Change a link's parameters now, in one direction or both (`None`), by editing a copy:
    /// `sim.update_link(l, None, |p| p.loss = 0.01)`.
    ///
    /// # Panics
    /// If the edited parameters are invalid.
    pub fn update_link(
        &mut self,
        link: LinkId,
        direction: Option<Direction>,
        edit: impl Fn(&mut LinkParams),
    ) {
        let dirs = match direction {
            Some(d) => vec![d],
            None => vec![Direction::AToB, Direction::BToA],
        };
        for d in dirs {
            let mut params = self.link_params(link, d).clone();
            edit(&mut params);
            self.apply(Control::SetLinkParams {
                link,
                direction: Some(d),
                params,
            });
        }
    }

    /// The parameters of one direction of a link, as they are now.
    pub fn link_params(&self, link: LinkId, dir: Direction) -> &LinkParams {
        &self.topo.link(link).params[dir.index()]
    }

    /// Schedule a route recomputation after the convergence delay (once per instant).
    pub(crate) fn routing_changed(&mut self) {
        let at = self.now + self.config.routing_delay;
        if self.recompute_at != Some(at) {
            self.recompute_at = Some(at);
            self.push(at, Action::Recompute);
        }
    }

    /// Recompute routes and multicast trees; install and push the differences to every node
    /// (or only to `only`), draining each engine that was told something.
    pub(crate) fn recompute(&mut self, only: Option<NodeId>) {
        let up: Vec<bool> = self.nodes.iter().map(|n| n.up).collect();
        self.groups
            .trees(&self.topo, &up, &mut self.spt, &mut self.mtables);
        let mut changes = std::mem::take(&mut self.changes);
        for s in self.topo.node_ids() {
            if only.is_some_and(|o| o != s) {
                continue;
            }
            self.spt.compute(&self.topo, &up, s);
            let table = routing::unicast_table(&self.topo, &up, s, &self.spt);
            let rt = &mut self.nodes[s.index()];
            changes.clear();
            routing::diff(&rt.routes, &table, &mut changes);
            multicast::diff(&rt.mroutes, &self.mtables[s.index()], &mut changes);
            if changes.is_empty() {
                continue;
            }
            for c in &changes {
                match c {
                    RouteChange::Add(r) => {
                        rt.fib.insert(r.prefix, r.ifindex);
                    }
                    RouteChange::Remove(p) => {
                        rt.fib.remove(p);
                    }
                    _ => {}
                }
            }
            rt.routes = table;
            rt.mroutes = std::mem::take(&mut self.mtables[s.index()]);
            if let Some(e) = rt.engine.as_mut() {
                for c in changes.drain(..) {
                    e.handle_route_change(self.now, c);
                }
                self.drain(s);
            }
        }
        self.changes = changes;
    }

    pub(crate) fn control(&mut self, c: Control) {
        tracing::debug!(now = %self.now, control = ?c, "control");
        match c {
            Control::LinkUp(l) => {
                let link = &mut self.topo.links[l.index()];
                if !link.up {
                    link.up = true;
                    self.routing_changed();
                }
            }
            Control::LinkDown(l) => {
                let link = &mut self.topo.links[l.index()];
                if link.up {
                    link.up = false;
                    // Whatever is queued or on the wire is lost (checked on arrival).
                    self.link_epoch[l.index()] += 1;
                    for d in &mut self.links[l.index()] {
                        d.busy_until = self.now;
                    }
                    self.routing_changed();
                }
            }
            Control::SetLinkParams {
                link,
                direction,
                params,
            } => {
                let l = &mut self.topo.links[link.index()];
                let dirs: &[usize] = match direction {
                    None => &[0, 1],
                    Some(Direction::AToB) => &[0],
                    Some(_) => &[1],
                };
                let mut cost_changed = false;
                for &d in dirs {
                    cost_changed |= l.params[d].cost != params.cost;
                    l.params[d] = params.clone();
                }
                if cost_changed && l.up {
                    self.routing_changed();
                }
            }
            Control::Crash(n) => {
                let rt = &mut self.nodes[n.index()];
                if rt.up {
                    rt.up = false;
                    rt.engine = None;
                    rt.incarnation += 1;
                    rt.wake_gen += 1;
                    rt.wake_at = None;
                    rt.cpu_free = self.now;
                    rt.routes.clear();
                    rt.fib = Fib::new();
                    rt.mroutes.clear();
                    self.routing_changed();
                }
            }
            Control::Restart(n) => {
                if !self.nodes[n.index()].up {
                    self.nodes[n.index()].up = true;
                    self.create_engine(n);
                    // The restarted node learns its routes at once (as at start); everyone
                    // else converges after the routing delay.
                    self.recompute(Some(n));
                    self.drain(n);
                    self.routing_changed();
                }
            }
            Control::JoinGroup(n, g) => {
                if self.groups.join(n, g) {
                    self.routing_changed();
                }
            }
            Control::LeaveGroup(n, g) => {
                if self.groups.leave(n, g) {
                    self.routing_changed();
                }
            }
            Control::AddMulticastSource {
                node,
                source,
                group,
            } => {
                if self.groups.add_source(node, source, group) {
                    self.routing_changed();
                }
            }
            Control::RemoveMulticastSource { source, group } => {
                if self.groups.remove_source(source, group) {
                    self.routing_changed();
                }
            }
        }
    }
}

fn validate(c: &Control) {
    match c {
        Control::SetLinkParams { params, .. } => {
            if let Err(e) = params.check() {
                panic!("invalid LinkParams: {e}");
            }
        }
        Control::JoinGroup(_, g) | Control::LeaveGroup(_, g) => {
            assert!(g.is_multicast(), "{g} is not a multicast group address");
        }
        Control::AddMulticastSource { source, group, .. } => {
            assert!(
                group.is_multicast(),
                "{group} is not a multicast group address"
            );
            assert_eq!(
                source.is_ipv4(),
                group.is_ipv4(),
                "source {source} and group {group} are of different families"
            );
        }
        _ => {}
    }
}
