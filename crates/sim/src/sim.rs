//! The simulator: event queue, engine driving, run control and observation.

use crate::control::Control;
use crate::link::{DirState, Direction};
use crate::multicast::{Groups, MulticastTable};
use crate::routing::{RouteTable, Spt};
use crate::setup::{EventRecord, NodeSetup, SimConfig};
use crate::stats::{Drops, LinkStats, NodeStats, PacketRecord};
use crate::topology::{LinkId, NodeId, Topology};
use core::cmp::Ordering;
use core::fmt;
use pathwise_core::engine::Engine;
use pathwise_core::fib::Fib;
use pathwise_core::io::{IfIndex, Transport};
use pathwise_core::rng::SeededRng;
use pathwise_core::route::{MulticastRoute, Route, RouteChange};
use pathwise_core::time::{Duration, Instant};
use std::collections::BinaryHeap;
use std::net::IpAddr;

/// A packet in the network.
#[derive(Clone, Debug)]
pub(crate) struct Packet {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub transport: Transport,
    pub router_alert: Option<u16>,
    pub ttl: u8,
    pub payload: Vec<u8>,
}

pub(crate) type Call<E> = Box<dyn FnOnce(&mut E, Instant)>;
type Factory<E> = Box<dyn FnMut(&NodeSetup) -> Option<E>>;

pub(crate) enum Action<E> {
    /// A packet reaches the far end of a link.
    Arrive {
        link: LinkId,
        dir: Direction,
        epoch: u32,
        pkt: Packet,
    },
    /// A packet has waited for the node's CPU and goes to its engine.
    Deliver {
        node: NodeId,
        incarnation: u32,
        ifindex: IfIndex,
        pkt: Packet,
    },
    Wake {
        node: NodeId,
        generation: u64,
    },
    Recompute,
    Control(Control),
    Call {
        node: NodeId,
        f: Call<E>,
    },
}

pub(crate) struct Scheduled<E> {
    at: Instant,
    pub(crate) seq: u64,
    action: Action<E>,
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<E> Eq for Scheduled<E> {}
impl<E> PartialOrd for Scheduled<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Scheduled<E> {
    /// Reversed, so the max-heap pops the earliest (time, sequence) first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// The runtime state of one node.
pub(crate) struct NodeRt<E> {
    pub engine: Option<E>,
    pub up: bool,
    pub incarnation: u32,
    pub wake_gen: u64,
    pub wake_at: Option<Instant>,
    /// When the CPU finishes the datagrams queued for the engine.
    pub cpu_free: Instant,
    pub routes: RouteTable,
    pub fib: Fib<IfIndex>,
    pub mroutes: MulticastTable,
    pub stats: NodeStats,
}

/// A seeded discrete-event network running one engine of type `E` per node.
///
/// See the [crate documentation](crate) for how it is driven.
pub struct Sim<E: Engine> {
    pub(crate) topo: Topology,
    pub(crate) config: SimConfig,
    pub(crate) factory: Factory<E>,
    pub(crate) now: Instant,
    pub(crate) queue: BinaryHeap<Scheduled<E>>,
    seq: u64,
    pub(crate) rng: SeededRng,
    pub(crate) nodes: Vec<NodeRt<E>>,
    pub(crate) links: Vec<[DirState; 2]>,
    pub(crate) link_epoch: Vec<u32>,
    pub(crate) groups: Groups,
    pub(crate) spt: Spt,
    pub(crate) recompute_at: Option<Instant>,
    pub(crate) events: Vec<EventRecord<E::Event>>,
    pub(crate) trace: Vec<PacketRecord>,
    pub(crate) captures: Vec<crate::Captured>,
    pub(crate) drops: Drops,
    pub(crate) changes: Vec<RouteChange>,
    pub(crate) mtables: Vec<MulticastTable>,
}

impl<E: Engine> fmt::Debug for Sim<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sim")
            .field("now", &self.now)
            .field("nodes", &self.nodes.len())
            .field("links", &self.links.len())
            .field("queued", &self.queue.len())
            .field("events", &self.events.len())
            .field("drops", &self.drops)
            .finish_non_exhaustive()
    }
}

impl<E: Engine> Sim<E> {
    /// Build the network at time zero: call `factory` for every node that runs an engine,
    /// push each engine its full routing table (all `RouteChange::Add`), then drain it.
    pub fn new(
        topology: Topology,
        config: SimConfig,
        factory: impl FnMut(&NodeSetup) -> Option<E> + 'static,
    ) -> Self {
        let n = topology.nodes.len();
        let mut sim = Sim {
            rng: pathwise_core::rng::seeded(config.seed),
            links: vec![Default::default(); topology.links.len()],
            link_epoch: vec![0; topology.links.len()],
            nodes: (0..n)
                .map(|_| NodeRt {
                    engine: None,
                    up: true,
                    incarnation: 0,
                    wake_gen: 0,
                    wake_at: None,
                    cpu_free: Instant::ZERO,
                    routes: RouteTable::new(),
                    fib: Fib::new(),
                    mroutes: MulticastTable::new(),
                    stats: NodeStats::default(),
                })
                .collect(),
            mtables: vec![MulticastTable::new(); n],
            topo: topology,
            config,
            factory: Box::new(factory),
            now: Instant::ZERO,
            queue: BinaryHeap::new(),
            seq: 0,
            groups: Groups::default(),
            spt: Spt::default(),
            recompute_at: None,
            events: Vec::new(),
            trace: Vec::new(),
            captures: Vec::new(),
            drops: Drops::default(),
            changes: Vec::new(),
        };
        for id in sim.topo.node_ids() {
            sim.create_engine(id);
        }
        sim.recompute(None);
        // Engines that were told no routes still get their first drain.
        for id in sim.topo.node_ids() {
            sim.drain(id);
        }
        sim
    }

    // ---- run control ----

    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// When the next queued event happens, if any.
    pub fn next_event_at(&self) -> Option<Instant> {
        self.queue.peek().map(|s| s.at)
    }

    /// Process the next event; `false` if there was none.
    pub fn step(&mut self) -> bool {
        let Some(Scheduled { at, action, .. }) = self.queue.pop() else {
            return false;
        };
        self.now = self.now.max(at);
        self.dispatch(action);
        true
    }

    /// Process every event up to and including `t`, then set the clock to `t`.
    pub fn run_until(&mut self, t: Instant) {
        while self.next_event_at().is_some_and(|at| at <= t) {
            self.step();
        }
        self.now = self.now.max(t);
    }

    /// [`Sim::run_until`] `now + d`.
    pub fn run_for(&mut self, d: Duration) {
        self.run_until(self.now + d);
    }

    /// Run until no event is left or `limit` has passed; returns whether it went idle.
    /// Engines with periodic timers never go idle.
    pub fn run_until_idle(&mut self, limit: Duration) -> bool {
        let end = self.now + limit;
        while self.next_event_at().is_some_and(|at| at <= end) {
            self.step();
        }
        if self.queue.is_empty() {
            true
        } else {
            self.now = self.now.max(end);
            false
        }
    }

    // ---- engines and API calls ----

    /// The topology, with link parameters and states as they are now.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The configuration.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<NodeId> {
        self.topo.find_node(name)
    }

    /// The name of `node`.
    pub fn name(&self, node: NodeId) -> &str {
        &self.topo.node(node).name
    }

    /// The first link joining two nodes.
    pub fn link_between(&self, a: NodeId, b: NodeId) -> Option<LinkId> {
        self.topo.find_link(a, b)
    }

    /// The engine of `node`, if it runs one and is up.
    pub fn engine(&self, node: NodeId) -> Option<&E> {
        self.nodes[node.index()].engine.as_ref()
    }

    /// The engine of `node`, mutably. Prefer [`Sim::with_engine`], which also drains its
    /// outputs; after changing an engine through this, call [`Sim::poll_engine`].
    pub fn engine_mut(&mut self, node: NodeId) -> Option<&mut E> {
        self.nodes[node.index()].engine.as_mut()
    }

    /// Whether `node` is up (not crashed).
    pub fn is_up(&self, node: NodeId) -> bool {
        self.nodes[node.index()].up
    }

    /// Call `f` on the engine of `node` now, then drain its outputs. `None` if it has none.
    pub fn with_engine<R>(
        &mut self,
        node: NodeId,
        f: impl FnOnce(&mut E, Instant) -> R,
    ) -> Option<R> {
        let now = self.now;
        let r = f(self.nodes[node.index()].engine.as_mut()?, now);
        self.drain(node);
        Some(r)
    }

    /// Drain the outputs of `node`'s engine (after changing it through [`Sim::engine_mut`]).
    pub fn poll_engine(&mut self, node: NodeId) {
        self.drain(node);
    }

    /// Call `f` on the engine of `node` at time `at` (skipped if the node then has none).
    pub fn schedule_call(
        &mut self,
        at: Instant,
        node: NodeId,
        f: impl FnOnce(&mut E, Instant) + 'static,
    ) {
        self.push(
            at,
            Action::Call {
                node,
                f: Box::new(f),
            },
        );
    }

    // ---- observation ----

    /// Every engine event so far (since the last [`Sim::drain_events`]).
    pub fn events(&self) -> &[EventRecord<E::Event>] {
        &self.events
    }

    /// Take the collected engine events.
    pub fn drain_events(&mut self) -> Vec<EventRecord<E::Event>> {
        std::mem::take(&mut self.events)
    }

    /// The collected events of one node.
    pub fn events_of(&self, node: NodeId) -> impl Iterator<Item = &E::Event> + '_ {
        self.events
            .iter()
            .filter(move |r| r.node == node)
            .map(|r| &r.event)
    }

    /// The collected events that satisfy `pred`.
    pub fn events_where<'a>(
        &'a self,
        mut pred: impl FnMut(&EventRecord<E::Event>) -> bool + 'a,
    ) -> impl Iterator<Item = &'a EventRecord<E::Event>> + 'a {
        self.events.iter().filter(move |r| pred(r))
    }

    /// The packet trace (empty unless [`SimConfig::trace`]).
    pub fn trace(&self) -> &[PacketRecord] {
        &self.trace
    }

    /// Packets with their payloads (empty unless [`SimConfig::capture`]), in trace order.
    pub fn captures(&self) -> &[crate::Captured] {
        &self.captures
    }

    /// Take the packet trace.
    pub fn take_trace(&mut self) -> Vec<PacketRecord> {
        std::mem::take(&mut self.trace)
    }

    /// Counters of one node.
    pub fn node_stats(&self, node: NodeId) -> &NodeStats {
        &self.nodes[node.index()].stats
    }

    /// Counters of one link direction.
    pub fn link_stats(&self, link: LinkId, dir: Direction) -> &LinkStats {
        &self.links[link.index()][dir.index()].stats
    }

    /// Every drop in the network, by reason.
    pub fn drops(&self) -> &Drops {
        &self.drops
    }

    /// The unicast routes `node` has installed now, by prefix.
    pub fn routes(&self, node: NodeId) -> impl Iterator<Item = &Route> + '_ {
        self.nodes[node.index()].routes.values()
    }

    /// The route `node` would forward `dst` by.
    pub fn route_to(&self, node: NodeId, dst: IpAddr) -> Option<&Route> {
        let rt = &self.nodes[node.index()];
        let (prefix, _) = rt.fib.lookup(dst)?;
        rt.routes.get(&prefix)
    }

    /// The multicast entries `node` has installed now.
    pub fn multicast_routes(&self, node: NodeId) -> impl Iterator<Item = &MulticastRoute> + '_ {
        self.nodes[node.index()].mroutes.values()
    }

    // ---- internals ----

    pub(crate) fn push(&mut self, at: Instant, action: Action<E>) {
        let at = at.max(self.now);
        self.seq += 1;
        self.queue.push(Scheduled {
            at,
            seq: self.seq,
            action,
        });
    }

    fn dispatch(&mut self, action: Action<E>) {
        match action {
            Action::Arrive {
                link,
                dir,
                epoch,
                pkt,
            } => self.arrive(link, dir, epoch, pkt),
            Action::Deliver {
                node,
                incarnation,
                ifindex,
                pkt,
            } => {
                if self.nodes[node.index()].incarnation == incarnation {
                    self.hand_to_engine(node, ifindex, &pkt);
                }
            }
            Action::Wake { node, generation } => self.wake(node, generation),
            Action::Recompute => {
                if self.recompute_at == Some(self.now) {
                    self.recompute_at = None;
                }
                self.recompute(None);
            }
            Action::Control(c) => self.control(c),
            Action::Call { node, f } => {
                let now = self.now;
                if let Some(e) = self.nodes[node.index()].engine.as_mut() {
                    f(e, now);
                    self.drain(node);
                }
            }
        }
    }

    fn wake(&mut self, node: NodeId, generation: u64) {
        let now = self.now;
        let rt = &mut self.nodes[node.index()];
        if rt.wake_gen != generation {
            return; // superseded
        }
        let Some(e) = rt.engine.as_mut() else { return };
        rt.wake_at = None;
        e.handle_timeout(now);
        self.drain(node);
        let rt = &mut self.nodes[node.index()];
        if rt.wake_at.is_some_and(|at| at <= now) {
            // A deadline not after the one just handled would spin forever at one instant.
            tracing::warn!(node = node.index(), %now, "engine deadline did not advance");
            rt.wake_gen += 1;
            let generation = rt.wake_gen;
            self.push(
                now + Duration::from_micros(1),
                Action::Wake { node, generation },
            );
        }
    }

    /// Drain transmits and events, then (re)schedule the engine's wake-up.
    pub(crate) fn drain(&mut self, node: NodeId) {
        let i = node.index();
        loop {
            let Some(e) = self.nodes[i].engine.as_mut() else {
                return;
            };
            let Some(t) = e.poll_transmit() else { break };
            self.originate(node, t);
        }
        let now = self.now;
        let rt = &mut self.nodes[i];
        let Some(e) = rt.engine.as_mut() else { return };
        while let Some(event) = e.poll_event() {
            self.events.push(EventRecord {
                time: now,
                node,
                event,
            });
        }
        let next = e.poll_timeout();
        if next != rt.wake_at {
            rt.wake_at = next;
            rt.wake_gen += 1;
            let generation = rt.wake_gen;
            if let Some(at) = next {
                self.push(at, Action::Wake { node, generation });
            }
        }
    }
}
