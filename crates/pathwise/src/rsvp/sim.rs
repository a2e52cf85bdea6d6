//! RSVP engines on the simulator: one [`RsvpEngine`] per node, configured from what the
//! simulator says about the node's interfaces.

use pathwise_auth::Policy;
use pathwise_core::time::Duration;
use pathwise_rsvp::{Config, InterfaceConfig, RsvpEngine};
use pathwise_sim::{InterfaceSetup, NodeSetup, Sim, SimConfig, Topology};

/// Picks the integrity policy of each simulated interface.
pub type IntegrityFn = dyn Fn(&NodeSetup, &InterfaceSetup) -> Policy + Send + Sync;

/// The engine configuration for a simulated node: its interfaces, addresses and seed, the
/// integrity policy `integrity` picks per interface, and everything else from `base`.
pub fn node_config(setup: &NodeSetup, base: &Config, integrity: &IntegrityFn) -> Config {
    Config {
        seed: setup.seed,
        interfaces: setup
            .interfaces
            .iter()
            .map(|i| InterfaceConfig {
                ifindex: i.ifindex,
                addrs: i.addrs.iter().map(|n| n.addr()).collect(),
                bandwidth_bps: i.bandwidth_bps,
                reservable_bps: i.reservable_bps,
                mtu: i.mtu,
                latency: i.latency,
                integrity: integrity(setup, i),
                hello: None,
            })
            .collect(),
        local_addrs: setup.loopbacks().iter().map(|n| n.addr()).collect(),
        ..base.clone()
    }
}

/// A simulation of `topology` with an RSVP engine on every node.
pub fn rsvp_sim(topology: Topology, sim: SimConfig, base: Config) -> Sim<RsvpEngine> {
    rsvp_sim_with(topology, sim, base, Box::new(|_, _| Policy::default()))
}

/// [`rsvp_sim`] with message integrity configured per interface by `integrity`.
pub fn rsvp_sim_with(
    topology: Topology,
    sim: SimConfig,
    base: Config,
    integrity: Box<IntegrityFn>,
) -> Sim<RsvpEngine> {
    Sim::new(topology, sim, move |setup: &NodeSetup| {
        Some(RsvpEngine::with_memory_tc(
            node_config(setup, &base, &*integrity),
            pathwise_core::time::Instant::ZERO,
        ))
    })
}

/// Engine settings for simulations: the RFC defaults, with a refresh period that keeps long
/// simulated runs short.
pub fn sim_engine_config(refresh: Duration) -> Config {
    Config {
        refresh,
        ..Config::default()
    }
}

use pathwise_core::time::Instant;
use pathwise_rsvp::Event;
use pathwise_rsvp::wire::{FilterSpec, FlowDescriptor, FlowSpec, Session, StyleKind};
use pathwise_sim::{EventRecord, NodeId};

/// A receiver application: reserves for a session as soon as path state for it arrives, and
/// re-reserves when senders come and go (RAPI-style receiver reacting to PATH_EVENTs).
#[derive(Clone, Debug)]
pub struct Receiver {
    /// The receiving node.
    pub node: NodeId,
    /// The session it listens to.
    pub session: Session,
    /// The style it reserves with.
    pub style: StyleKind,
    /// What it asks for (per sender for FF; shared for SE and WF).
    pub flowspec: FlowSpec,
    /// Whether it asks for a confirmation.
    pub confirm: bool,
}

/// A simulation with receiver applications attached, and the log of every engine event.
pub struct Scenario {
    /// The simulation.
    pub sim: Sim<RsvpEngine>,
    /// Receiver applications.
    pub receivers: Vec<Receiver>,
    /// Every engine event so far, in order.
    pub log: Vec<EventRecord<Event>>,
    senders_seen: Vec<(NodeId, Session, Vec<FilterSpec>)>,
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scenario")
            .field("now", &self.sim.now())
            .field("receivers", &self.receivers.len())
            .finish()
    }
}

impl Scenario {
    /// Wrap a simulation.
    pub fn new(sim: Sim<RsvpEngine>) -> Self {
        Scenario {
            sim,
            receivers: Vec::new(),
            log: Vec::new(),
            senders_seen: Vec::new(),
        }
    }

    /// Attach a receiver application.
    pub fn add_receiver(&mut self, r: Receiver) {
        self.receivers.push(r);
    }

    /// Run until virtual time `t`, letting receivers react to what they hear.
    pub fn run_until(&mut self, t: Instant) {
        while self.sim.next_event_at().is_some_and(|at| at <= t) {
            self.sim.step();
            self.react();
        }
        self.sim.run_until(t);
        self.react();
    }

    /// Run for `d` of virtual time.
    pub fn run_for(&mut self, d: Duration) {
        let t = self.sim.now() + d;
        self.run_until(t);
    }

    fn react(&mut self) {
        let fresh = self.sim.drain_events();
        for rec in &fresh {
            let (session, sender, present) = match &rec.event {
                Event::PathState {
                    session, sender, ..
                } => (*session, *sender, true),
                Event::PathGone { session, sender } => (*session, *sender, false),
                _ => continue,
            };
            let Some(r) = self
                .receivers
                .iter()
                .find(|r| r.node == rec.node && r.session == session)
                .cloned()
            else {
                continue;
            };
            let idx = match self
                .senders_seen
                .iter()
                .position(|(n, s, _)| *n == r.node && *s == session)
            {
                Some(i) => i,
                None => {
                    self.senders_seen.push((r.node, session, Vec::new()));
                    self.senders_seen.len() - 1
                }
            };
            let known = &mut self.senders_seen[idx].2;
            let before = known.clone();
            if present && !known.contains(&sender) {
                known.push(sender);
            } else if !present {
                known.retain(|s| *s != sender);
            }
            if *known == before {
                continue;
            }
            let senders = known.clone();
            if senders.is_empty() {
                continue;
            }
            let flows = match r.style {
                StyleKind::Ff => senders
                    .iter()
                    .map(|s| FlowDescriptor {
                        flowspec: Some(r.flowspec),
                        filters: vec![*s],
                        te: Vec::new(),
                    })
                    .collect(),
                StyleKind::Se => vec![FlowDescriptor {
                    flowspec: Some(r.flowspec),
                    filters: senders,
                    te: Vec::new(),
                }],
                _ => vec![FlowDescriptor {
                    flowspec: Some(r.flowspec),
                    filters: Vec::new(),
                    te: Vec::new(),
                }],
            };
            self.sim.with_engine(r.node, |e, now| {
                // Path state can vanish between the event and now; the next PathState retries.
                let _ = e.reserve(now, session, r.style, flows, r.confirm);
            });
        }
        self.log.extend(fresh);
    }
}
