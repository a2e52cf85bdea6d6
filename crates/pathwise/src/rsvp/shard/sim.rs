//! A sharded RSVP node as one sans-IO [`Engine`]: N unchanged [`RsvpEngine`]s behind the
//! daemon's [`ShardMap`], driven one after the other in shard order, so the simulator runs a
//! sharded node deterministically and the same routing code is tested in simulation and run
//! by the daemon's threads ([`super::runtime`]).

use super::{ShardMap, shard_configs};
use crate::rsvp::sim::{IntegrityFn, node_config};
use pathwise_core::engine::Engine;
use pathwise_core::io::Received;
use pathwise_core::io::Transmit;
use pathwise_core::route::RouteChange;
use pathwise_core::tc::SharedTrafficControl;
use pathwise_core::time::Instant;
use pathwise_rsvp::engine::{MemoryTrafficControl, TrafficControl};
use pathwise_rsvp::wire::Session;
use pathwise_rsvp::{Config, Event, RsvpEngine};
use pathwise_sim::{NodeSetup, Sim, SimConfig, Topology};

/// N shards of one RSVP node.
#[derive(Debug)]
pub struct ShardedRsvp<T: TrafficControl> {
    map: ShardMap,
    shards: Vec<RsvpEngine<T>>,
    /// Bundle sub-messages the dispatcher could not read.
    bad_bundle: u64,
}

impl<T: TrafficControl> ShardedRsvp<T> {
    /// `shards` engines configured from `cfg` ([`shard_configs`]), shard `i` admitting through
    /// `tc(i)` (clones of one shared instance, so the node has one budget per interface).
    pub fn new(cfg: &Config, shards: usize, mut tc: impl FnMut(usize) -> T, now: Instant) -> Self {
        let mut map = ShardMap::new(shards, cfg.seed);
        map.set_integrity_of(cfg);
        let shards = shard_configs(cfg, &map)
            .into_iter()
            .enumerate()
            .map(|(i, c)| RsvpEngine::new(c, tc(i), now))
            .collect();
        ShardedRsvp {
            map,
            shards,
            bad_bundle: 0,
        }
    }

    /// The routing of sessions and datagrams.
    pub fn map(&self) -> &ShardMap {
        &self.map
    }

    /// The shards, in order.
    pub fn shards(&self) -> &[RsvpEngine<T>] {
        &self.shards
    }

    /// Bundle sub-messages dropped because they could not be read.
    pub fn bad_bundle(&self) -> u64 {
        self.bad_bundle
    }

    /// Parts of signed messages the dispatcher verified and signed again
    /// ([`ShardMap::signed_parts`]).
    pub fn signed_parts(&self) -> u64 {
        self.map.signed_parts()
    }

    /// The engine that heads the LSP of this name ([`ShardMap::of_lsp`]), as the daemon's
    /// dispatcher hands it `rsvp lsp add` and `rsvp lsp del`.
    pub fn head_of(&mut self, lsp: &str) -> &mut RsvpEngine<T> {
        let i = self.map.of_lsp(lsp);
        &mut self.shards[i]
    }

    /// Whether every shard is idle (no state, no pending requests).
    pub fn is_idle(&self) -> bool {
        self.shards.iter().all(RsvpEngine::is_idle)
    }
}

impl ShardedRsvp<SharedTrafficControl<MemoryTrafficControl>> {
    /// Shards admitting through one in-memory traffic control over `cfg`'s interfaces.
    pub fn with_memory_tc(cfg: &Config, shards: usize, now: Instant) -> Self {
        let tc = SharedTrafficControl::new(cfg.memory_tc());
        Self::new(cfg, shards, |_| tc.clone(), now)
    }
}

/// The engine that holds a session's state on a node: the node's only engine, or the shard the
/// session hashes to. Local applications (senders, receivers) talk to it.
pub trait SessionEngine {
    /// Its traffic control.
    type Tc: TrafficControl;
    /// The engine holding `session`.
    fn engine_for(&mut self, session: &Session) -> &mut RsvpEngine<Self::Tc>;
}

impl<T: TrafficControl> SessionEngine for RsvpEngine<T> {
    type Tc = T;
    fn engine_for(&mut self, _: &Session) -> &mut RsvpEngine<T> {
        self
    }
}

impl<T: TrafficControl> SessionEngine for ShardedRsvp<T> {
    type Tc = T;
    fn engine_for(&mut self, session: &Session) -> &mut RsvpEngine<T> {
        let i = self.map.of_session(session);
        &mut self.shards[i]
    }
}

impl<T: TrafficControl> Engine for ShardedRsvp<T> {
    type Event = Event;

    fn handle_datagram(&mut self, now: Instant, dgram: Received<'_>) {
        let ShardedRsvp { map, shards, .. } = self;
        let from = (dgram.src, dgram.ifindex);
        self.bad_bundle += map.dispatch(now, from, dgram.payload, |i, payload, src| {
            shards[i].handle_datagram(
                now,
                Received {
                    payload,
                    src,
                    ..dgram
                },
            );
        });
    }

    fn handle_timeout(&mut self, now: Instant) {
        for s in &mut self.shards {
            if s.poll_timeout().is_some_and(|t| t <= now) {
                s.handle_timeout(now);
            }
        }
    }

    fn handle_route_change(&mut self, now: Instant, change: RouteChange) {
        for s in &mut self.shards {
            s.handle_route_change(now, change.clone());
        }
    }

    fn poll_transmit(&mut self) -> Option<Transmit> {
        self.shards.iter_mut().find_map(|s| s.poll_transmit())
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.shards.iter_mut().find_map(|s| s.poll_event())
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.shards.iter().filter_map(|s| s.poll_timeout()).min()
    }

    fn wants_router_alert(&self, dgram: &Received<'_>) -> bool {
        self.shards[0].wants_router_alert(dgram)
    }
}

/// A simulation of `topology` with a node of `shards` shards on every node (engine settings
/// from `base`, integrity from `integrity`, as [`crate::rsvp::sim::rsvp_sim_with`]).
pub fn sharded_sim(
    topology: Topology,
    sim: SimConfig,
    base: Config,
    shards: usize,
    integrity: Box<IntegrityFn>,
) -> Sim<ShardedRsvp<SharedTrafficControl<MemoryTrafficControl>>> {
    sharded_sim_with(topology, sim, base, move |_| shards, integrity)
}

/// [`sharded_sim`] with a number of shards per node (1: an unsharded node).
pub fn sharded_sim_with(
    topology: Topology,
    sim: SimConfig,
    base: Config,
    shards: impl Fn(&NodeSetup) -> usize + 'static,
    integrity: Box<IntegrityFn>,
) -> Sim<ShardedRsvp<SharedTrafficControl<MemoryTrafficControl>>> {
    Sim::new(topology, sim, move |setup: &NodeSetup| {
        let cfg = node_config(setup, &base, &*integrity);
        Some(ShardedRsvp::with_memory_tc(
            &cfg,
            shards(setup),
            Instant::ZERO,
        ))
    })
}
