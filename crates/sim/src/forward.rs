//! IP-level packet handling: originating, link transmission, and what a node does with an
//! arriving packet (deliver, intercept on router alert, forward, drop).

use crate::link::Direction;
use crate::sim::{Action, Packet, Sim};
use crate::stats::{DropReason, Outcome, PacketRecord};
use crate::topology::{LinkId, NodeId};
use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Received, Transmit, Transport};
use std::net::IpAddr;

/// The ifindex reported for datagrams a node sends to one of its own addresses.
pub const LOOPBACK_IFINDEX: IfIndex = IfIndex(0);

/// One hop of a packet, for the trace.
#[derive(Clone, Copy)]
struct Hop {
    from: NodeId,
    from_ifindex: IfIndex,
    to: Option<NodeId>,
}

/// IP packet length: IPv4 header 20 bytes (+4 for the router alert option), IPv6 header 40
/// (+8 for a hop-by-hop header carrying router alert), UDP header 8, then the payload.
pub fn ip_len(dst: IpAddr, transport: Transport, router_alert: bool, payload: usize) -> usize {
    let ip = match (dst, router_alert) {
        (IpAddr::V4(_), false) => 20,
        (IpAddr::V4(_), true) => 24,
        (IpAddr::V6(_), false) => 40,
        (IpAddr::V6(_), true) => 48,
    };
    let l4 = match transport {
        Transport::Raw(_) => 0,
        Transport::Udp { .. } => 8,
    };
    ip + l4 + payload
}

fn len_of(p: &Packet) -> usize {
    ip_len(
        p.dst,
        p.transport,
        p.router_alert.is_some(),
        p.payload.len(),
    )
}

/// Multicast scoped to one link (224.0.0.0/24, ff02::/16): delivered, never forwarded.
fn link_local_multicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(a) => a.octets()[..3] == [224, 0, 0],
        IpAddr::V6(a) => a.segments()[0] & 0xff0f == 0xff02,
    }
}

fn received(p: &Packet, ifindex: IfIndex) -> Received<'_> {
    Received {
        src: p.src,
        dst: p.dst,
        ifindex,
        transport: p.transport,
        router_alert: p.router_alert,
        ttl: p.ttl,
        payload: &p.payload,
    }
}

impl<E: Engine> Sim<E> {
    /// Send a datagram from `node` as if its engine had: for nodes without an engine (traffic
    /// sources, attackers), or to inject a packet in a test.
    pub fn send(&mut self, node: NodeId, t: Transmit) {
        self.originate(node, t);
    }

    pub(crate) fn originate(&mut self, node: NodeId, t: Transmit) {
        let Transmit {
            src,
            dst,
            ifindex,
            transport,
            router_alert,
            ttl,
            payload,
        } = t;
        let mut pkt = Packet {
            src: src.unwrap_or_else(|| self.topo.loopback_for(node, dst)),
            dst,
            transport,
            router_alert,
            ttl,
            payload,
        };
        let len = len_of(&pkt) as u64;
        let rt = &mut self.nodes[node.index()];
        rt.stats.originated += 1;
        rt.stats.originated_bytes += len;
        let here = Hop {
            from: node,
            from_ifindex: IfIndex(0),
            to: None,
        };
        if !rt.up {
            return self.node_drop(node, DropReason::NodeDown, here, &pkt);
        }
        if ttl == 0 {
            return self.node_drop(node, DropReason::TtlExpired, here, &pkt);
        }
        if self.topo.owner(dst) == Some(node) {
            if src.is_none() {
                pkt.src = dst;
            }
            return self.loopback(node, pkt);
        }
        if let Some(ifindex) = ifindex {
            let Some(iface) = self.topo.interface(node, ifindex) else {
                return self.node_drop(node, DropReason::NoInterface, here, &pkt);
            };
            if src.is_none() {
                pkt.src = iface.addr_for(dst);
            }
            return self.transmit(node, ifindex, pkt);
        }
        if dst.is_multicast() {
            if src.is_none() {
                // The source this node registered for the group, if any.
                if let Some(r) = rt
                    .mroutes
                    .values()
                    .find(|r| r.group == dst && r.iif.is_none())
                {
                    pkt.src = r.source;
                }
            }
            if !rt.mroutes.contains_key(&(pkt.src, dst)) {
                return self.node_drop(node, DropReason::NoRoute, here, &pkt);
            }
            return self.fan_out(node, pkt);
        }
        let Some((_, &oif)) = rt.fib.lookup(dst) else {
            return self.node_drop(node, DropReason::NoRoute, here, &pkt);
        };
        if src.is_none() {
            pkt.src = self
                .topo
                .interface(node, oif)
                .expect("routes name existing interfaces")
                .addr_for(dst);
        }
        self.transmit(node, oif, pkt);
    }

    /// A datagram to one of the node's own addresses: back up the stack, after this drain.
    fn loopback(&mut self, node: NodeId, pkt: Packet) {
        let rt = &mut self.nodes[node.index()];
        if rt.engine.is_none() {
            let here = Hop {
                from: node,
                from_ifindex: LOOPBACK_IFINDEX,
                to: Some(node),
            };
            return self.node_drop(node, DropReason::NoEngine, here, &pkt);
        }
        rt.stats.delivered += 1;
        rt.stats.delivered_bytes += len_of(&pkt) as u64;
        let incarnation = rt.incarnation;
        self.push(
            self.now,
            Action::Deliver {
                node,
                incarnation,
                ifindex: LOOPBACK_IFINDEX,
                pkt,
            },
        );
    }

    /// Copy a multicast packet out of every outgoing interface of its tree entry at `node`.
    fn fan_out(&mut self, node: NodeId, pkt: Packet) {
        let key = (pkt.src, pkt.dst);
        let n = self.nodes[node.index()].mroutes[&key].oifs.len();
        let mut pkt = Some(pkt);
        for k in 0..n {
            let oif = self.nodes[node.index()].mroutes[&key].oifs[k];
            let copy = if k + 1 == n {
                pkt.take().expect("last copy")
            } else {
                pkt.as_ref().expect("copies remain").clone()
            };
            self.transmit(node, oif, copy);
        }
    }

    /// Put a packet on the link behind `(node, ifindex)`.
    fn transmit(&mut self, node: NodeId, ifindex: IfIndex, pkt: Packet) {
        let iface = self
            .topo
            .interface(node, ifindex)
            .expect("caller checked the interface");
        let (link, dir) = (iface.link, iface.direction);
        let l = &self.topo.links[link.index()];
        let hop = Hop {
            from: node,
            from_ifindex: ifindex,
            to: Some(l.far_end(dir).0),
        };
        if !l.up {
            return self.link_drop(link, dir, DropReason::LinkDown, hop, &pkt);
        }
        let len = len_of(&pkt);
        let state = &mut self.links[link.index()][dir.index()];
        match state.transmit(&l.params[dir.index()], self.now, len, &mut self.rng) {
            Err(reason) => self.link_drop(link, dir, reason, hop, &pkt),
            Ok(d) => {
                let epoch = self.link_epoch[link.index()];
                if d.duplicate {
                    let copy = pkt.clone();
                    self.push(
                        d.arrival,
                        Action::Arrive {
                            link,
                            dir,
                            epoch,
                            pkt: copy,
                        },
                    );
                }
                self.push(
                    d.arrival,
                    Action::Arrive {
                        link,
                        dir,
                        epoch,
                        pkt,
                    },
                );
            }
        }
    }

    pub(crate) fn arrive(&mut self, link: LinkId, dir: Direction, epoch: u32, pkt: Packet) {
        let l = &self.topo.links[link.index()];
        let (from, from_ifindex) = l.ends[dir.index()];
        let (to, ifindex) = l.far_end(dir);
        let hop = Hop {
            from,
            from_ifindex,
            to: Some(to),
        };
        if epoch != self.link_epoch[link.index()] || !l.up {
            return self.link_drop(link, dir, DropReason::LinkDown, hop, &pkt);
        }
        let stats = &mut self.links[link.index()][dir.index()].stats;
        stats.arrived += 1;
        stats.arrived_bytes += len_of(&pkt) as u64;
        if !self.nodes[to.index()].up {
            return self.node_drop(to, DropReason::NodeDown, hop, &pkt);
        }
        self.receive(to, ifindex, hop, pkt);
    }

    /// What node `v` does with a packet that arrived on `ifindex`.
    fn receive(&mut self, v: NodeId, ifindex: IfIndex, hop: Hop, mut pkt: Packet) {
        let is_router = self.topo.node(v).is_router();
        let has_engine = self.nodes[v.index()].engine.is_some();
        if !pkt.dst.is_multicast() {
            if self.topo.owner(pkt.dst) == Some(v) {
                if !has_engine {
                    return self.node_drop(v, DropReason::NoEngine, hop, &pkt);
                }
                self.record(hop, &pkt, Outcome::Delivered);
                return self.deliver(v, ifindex, pkt, false);
            }
            if !is_router {
                return self.node_drop(v, DropReason::NotRouter, hop, &pkt);
            }
            if pkt.router_alert.is_some() && self.wants_router_alert(v, ifindex, &pkt) {
                self.record(hop, &pkt, Outcome::Intercepted);
                return self.deliver(v, ifindex, pkt, true);
            }
            if pkt.ttl <= 1 {
                return self.node_drop(v, DropReason::TtlExpired, hop, &pkt);
            }
            let Some((_, &oif)) = self.nodes[v.index()].fib.lookup(pkt.dst) else {
                return self.node_drop(v, DropReason::NoRoute, hop, &pkt);
            };
            self.record(hop, &pkt, Outcome::Forwarded);
            pkt.ttl -= 1;
            let stats = &mut self.nodes[v.index()].stats;
            stats.forwarded += 1;
            stats.forwarded_bytes += len_of(&pkt) as u64;
            return self.transmit(v, oif, pkt);
        }
        if link_local_multicast(pkt.dst) {
            if !has_engine {
                return self.node_drop(v, DropReason::NoEngine, hop, &pkt);
            }
            self.record(hop, &pkt, Outcome::Delivered);
            return self.deliver(v, ifindex, pkt, false);
        }
        if is_router && pkt.router_alert.is_some() && self.wants_router_alert(v, ifindex, &pkt) {
            self.record(hop, &pkt, Outcome::Intercepted);
            return self.deliver(v, ifindex, pkt, true);
        }
        let Some(route) = self.nodes[v.index()].mroutes.get(&(pkt.src, pkt.dst)) else {
            return self.node_drop(v, DropReason::NoRoute, hop, &pkt);
        };
        if route.iif != Some(ifindex) {
            return self.node_drop(v, DropReason::RpfFailure, hop, &pkt);
        }
        let member = route.local_member && has_engine;
        let copies = if is_router { route.oifs.len() } else { 0 };
        if copies > 0 && pkt.ttl <= 1 {
            if !member {
                return self.node_drop(v, DropReason::TtlExpired, hop, &pkt);
            }
            self.count_node_drop(v, DropReason::TtlExpired);
        }
        let forward = copies > 0 && pkt.ttl > 1;
        match (member, forward) {
            (false, false) => self.node_drop(v, DropReason::NoRoute, hop, &pkt),
            (true, false) => {
                self.record(hop, &pkt, Outcome::Delivered);
                self.deliver(v, ifindex, pkt, false);
            }
            (member, true) => {
                let outcome = if member {
                    Outcome::DeliveredAndForwarded
                } else {
                    Outcome::Forwarded
                };
                self.record(hop, &pkt, outcome);
                if member {
                    self.deliver(v, ifindex, pkt.clone(), false);
                }
                pkt.ttl -= 1;
                let stats = &mut self.nodes[v.index()].stats;
                stats.forwarded += copies as u64;
                stats.forwarded_bytes += (copies * len_of(&pkt)) as u64;
                self.fan_out(v, pkt);
            }
        }
    }

    fn wants_router_alert(&self, v: NodeId, ifindex: IfIndex, pkt: &Packet) -> bool {
        self.nodes[v.index()]
            .engine
            .as_ref()
            .is_some_and(|e| e.wants_router_alert(&received(pkt, ifindex)))
    }

    /// Hand a packet to `v`'s engine, after queueing for its CPU if it has a processing delay.
    fn deliver(&mut self, v: NodeId, ifindex: IfIndex, pkt: Packet, intercepted: bool) {
        let delay = self.topo.node(v).processing_delay;
        let rt = &mut self.nodes[v.index()];
        if intercepted {
            rt.stats.intercepted += 1;
        } else {
            rt.stats.delivered += 1;
            rt.stats.delivered_bytes += len_of(&pkt) as u64;
        }
        if delay.is_zero() {
            return self.hand_to_engine(v, ifindex, &pkt);
        }
        let at = rt.cpu_free.max(self.now) + delay;
        rt.cpu_free = at;
        let incarnation = rt.incarnation;
        self.push(
            at,
            Action::Deliver {
                node: v,
                incarnation,
                ifindex,
                pkt,
            },
        );
    }

    pub(crate) fn hand_to_engine(&mut self, v: NodeId, ifindex: IfIndex, pkt: &Packet) {
        let now = self.now;
        let Some(e) = self.nodes[v.index()].engine.as_mut() else {
            return;
        };
        e.handle_datagram(now, received(pkt, ifindex));
        self.drain(v);
    }

    fn record(&mut self, hop: Hop, pkt: &Packet, outcome: Outcome) {
        if !self.config.trace {
            return;
        }
        let record = PacketRecord {
            time: self.now,
            from: hop.from,
            from_ifindex: hop.from_ifindex,
            to: hop.to,
            src: pkt.src,
            dst: pkt.dst,
            router_alert: pkt.router_alert,
            ttl: pkt.ttl,
            len: len_of(pkt) as u32,
            outcome,
        };
        self.trace.push(record);
        if self.config.capture {
            self.captures.push(crate::Captured {
                record,
                transport: pkt.transport,
                payload: pkt.payload.clone(),
            });
        }
    }

    fn count_node_drop(&mut self, v: NodeId, reason: DropReason) {
        self.nodes[v.index()].stats.drops.count(reason);
        self.drops.count(reason);
    }

    fn node_drop(&mut self, v: NodeId, reason: DropReason, hop: Hop, pkt: &Packet) {
        tracing::trace!(node = v.index(), ?reason, src = %pkt.src, dst = %pkt.dst, "drop");
        self.count_node_drop(v, reason);
        self.record(hop, pkt, Outcome::Dropped(reason));
    }

    fn link_drop(
        &mut self,
        link: LinkId,
        dir: Direction,
        reason: DropReason,
        hop: Hop,
        pkt: &Packet,
    ) {
        tracing::trace!(link = link.index(), ?reason, src = %pkt.src, dst = %pkt.dst, "drop");
        self.links[link.index()][dir.index()]
            .stats
            .drops
            .count(reason);
        self.drops.count(reason);
        self.record(hop, pkt, Outcome::Dropped(reason));
    }
}
