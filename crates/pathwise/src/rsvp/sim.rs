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

/// A receiver application, RAPI-style (RFC 2205 §3.11.1): a wildcard-filter receiver reserves
/// once, when it is attached; a fixed-filter or shared-explicit one names its senders, so it
/// reserves for each sender the first time a PATH_EVENT tells it of one. The engine keeps the
/// request — made before any Path arrived, and across a PathTear or a timeout of path state —
/// so senders whose path state goes and comes back need nothing more from the receiver.
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

impl Receiver {
    /// Its request for `senders` (ignored by WF).
    fn flows(&self, senders: &[FilterSpec]) -> Vec<FlowDescriptor> {
        let descriptor = |filters| FlowDescriptor {
            flowspec: Some(self.flowspec),
            filters,
            te: Vec::new(),
        };
        match self.style {
            StyleKind::Ff => senders
                .iter()
                .map(|s| descriptor(vec![*s].into()))
                .collect(),
            StyleKind::Se => vec![descriptor(senders.to_vec().into())],
            _ => vec![descriptor(Vec::new().into())],
        }
    }

    fn reserve(&self, sim: &mut Sim<RsvpEngine>, senders: &[FilterSpec]) {
        let flows = self.flows(senders);
        sim.with_engine(self.node, |e, now| {
            // Only a request that does not fit its style is refused, and these all fit.
            let fits = e.reserve(now, self.session, self.style, flows, self.confirm);
            debug_assert!(fits.is_ok(), "{fits:?}");
        });
    }
}

/// A simulation with receiver applications attached, and the log of every engine event.
pub struct Scenario {
    /// The simulation.
    pub sim: Sim<RsvpEngine>,
    /// Receiver applications.
    pub receivers: Vec<Receiver>,
    /// Every engine event so far, in order.
    pub log: Vec<EventRecord<Event>>,
    /// The senders each FF/SE receiver has heard of, by receiver index.
    senders_heard: Vec<Vec<FilterSpec>>,
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
            senders_heard: Vec::new(),
        }
    }

    /// Attach a receiver application; a wildcard-filter one reserves now, before any Path.
    pub fn add_receiver(&mut self, r: Receiver) {
        if r.style == StyleKind::Wf {
            r.reserve(&mut self.sim, &[]);
        }
        self.receivers.push(r);
        self.senders_heard.push(Vec::new());
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

    /// FF and SE receivers add each sender they hear of for the first time to their request.
    fn react(&mut self) {
        let fresh = self.sim.drain_events();
        for rec in &fresh {
            let Event::PathState {
                session, sender, ..
            } = &rec.event
            else {
                continue;
            };
            for (i, r) in self.receivers.iter().enumerate() {
                if r.node != rec.node || r.session != *session || r.style == StyleKind::Wf {
                    continue;
                }
                let heard = &mut self.senders_heard[i];
                if heard.contains(sender) {
                    continue;
                }
                heard.push(*sender);
                r.reserve(&mut self.sim, heard);
            }
        }
        self.log.extend(fresh);
    }
}
