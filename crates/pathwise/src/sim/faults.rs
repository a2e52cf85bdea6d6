//! What a campaign draws from a seed: the network ([`random_network`]), the faults
//! ([`FaultPlan`]), and the engine wrapper every node runs in ([`Probe`]): it counts what the
//! engine is handed and, on hostile nodes, injects replayed and byte-mutated copies of the
//! messages the node has seen.

use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Received, Transmit, Transport};
use pathwise_core::rand::Rng;
use pathwise_core::rng::SeededRng;
use pathwise_core::route::RouteChange;
use pathwise_core::time::{Duration, Instant};
use pathwise_sim::{
    Control, EndSpec, LinkId, LinkParams, LinkSpec, NodeId, NodeSetup, Topology, testbeds,
};
use std::collections::VecDeque;
use std::net::IpAddr;

/// A random connected network of 4–12 routers, or one of the seed papers' testbeds (one seed
/// in five). Random links have small reservable budgets so admission control is exercised.
pub fn random_network(rng: &mut SeededRng) -> Topology {
    if rng.random_range(0..5) == 0 {
        let (name, _) = testbeds::ALL[rng.random_range(0..testbeds::ALL.len())];
        return testbeds::by_name(name).expect("shipped testbed");
    }
    let n = rng.random_range(4..=12usize);
    let mut b = Topology::builder();
    b.name(format!("random-{n}"));
    let nodes: Vec<NodeId> = (0..n).map(|i| b.router(format!("R{i}"))).collect();
    let mut edges: Vec<(usize, usize)> = (1..n).map(|i| (rng.random_range(0..i), i)).collect();
    for _ in 0..rng.random_range(0..=n / 2) {
        let (x, y) = (rng.random_range(0..n), rng.random_range(0..n));
        let e = (x.min(y), x.max(y));
        if x != y && !edges.contains(&e) {
            edges.push(e);
        }
    }
    for (x, y) in edges {
        let params = LinkParams::default()
            .delay(Duration::from_micros(rng.random_range(100..=5_000)))
            .bandwidth(rng.random_range(10..=1000) * 1_000_000);
        let mut spec = LinkSpec::new(nodes[x], nodes[y], params);
        for end in [&mut spec.a_end, &mut spec.b_end] {
            *end = EndSpec {
                reservable_bps: Some(rng.random_range(1..=10) * 1_000_000),
                ..EndSpec::default()
            };
        }
        b.link_spec(spec);
    }
    b.build().expect("random network is valid")
}

/// The faults of one run, all during the fault phase: link impairments from the start, then
/// timed flaps, crashes and restarts, and route changes; and the nodes that turn hostile.
#[derive(Clone, Debug, Default)]
pub struct FaultPlan {
    /// Link parameters from the start (loss 0–30 %, duplication, reordering).
    pub impaired: Vec<(LinkId, LinkParams)>,
    /// Timed changes, in time order.
    pub timed: Vec<(Instant, Control)>,
    /// Nodes that inject replayed and mutated messages during the fault phase.
    pub hostile: Vec<NodeId>,
}

impl FaultPlan {
    /// Draw the faults of a fault phase of length `phase` on `topo`. `lifetime` scales outages:
    /// some outlast a state lifetime, so state times out.
    pub fn draw(rng: &mut SeededRng, topo: &Topology, phase: Duration, lifetime: Duration) -> Self {
        let mut plan = FaultPlan::default();
        let links: Vec<LinkId> = topo.link_ids().collect();
        let nodes: Vec<NodeId> = topo.node_ids().collect();
        let at = |rng: &mut SeededRng, from: Duration, to: Duration| {
            Instant::ZERO
                + Duration::from_micros(
                    rng.random_range(from.as_micros() as u64..to.as_micros() as u64),
                )
        };
        let outage = |rng: &mut SeededRng| {
            Duration::from_millis(rng.random_range(200..=(lifetime.as_millis() as u64 * 3 / 2)))
        };
        let max_loss: f64 = rng.random_range(0.0..=0.3);
        for &l in &links {
            if rng.random_bool(0.5) {
                let base = topo.link(l).params[0].clone();
                let mut p = base.loss(rng.random_range(0.0..=max_loss));
                if rng.random_bool(0.3) {
                    p = p.duplicate(rng.random_range(0.0..=0.1));
                }
                if rng.random_bool(0.3) {
                    p = p.reorder(
                        rng.random_range(0.0..=0.2),
                        Duration::from_millis(rng.random_range(1..=50)),
                    );
                }
                plan.impaired.push((l, p));
            }
        }
        let last = phase - lifetime.min(phase / 2);
        for _ in 0..rng.random_range(0..=3) {
            let l = links[rng.random_range(0..links.len())];
            let down = at(rng, Duration::from_secs(1), last);
            plan.timed.push((down, Control::LinkDown(l)));
            plan.timed.push((down + outage(rng), Control::LinkUp(l)));
        }
        for _ in 0..rng.random_range(0..=2) {
            let n = nodes[rng.random_range(0..nodes.len())];
            let crash = at(rng, Duration::from_secs(1), last);
            plan.timed.push((crash, Control::Crash(n)));
            plan.timed.push((crash + outage(rng), Control::Restart(n)));
        }
        for _ in 0..rng.random_range(0..=3) {
            let l = links[rng.random_range(0..links.len())];
            let when = at(rng, Duration::from_secs(1), last);
            let mut params = plan
                .impaired
                .iter()
                .find(|(x, _)| *x == l)
                .map_or_else(|| topo.link(l).params[0].clone(), |(_, p)| p.clone());
            params.cost = rng.random_range(1..=10);
            plan.timed.push((
                when,
                Control::SetLinkParams {
                    link: l,
                    direction: None,
                    params,
                },
            ));
        }
        plan.timed.sort_by_key(|(t, _)| *t);
        for _ in 0..rng.random_range(0..=2) {
            let n = nodes[rng.random_range(0..nodes.len())];
            if !plan.hostile.contains(&n) && topo.node(n).runs_engine {
                plan.hostile.push(n);
            }
        }
        plan
    }

    /// What turns the faults off: every link up with its original parameters, every node up.
    pub fn restore(topo: &Topology) -> Vec<Control> {
        let mut out: Vec<Control> = topo
            .link_ids()
            .flat_map(|l| {
                [
                    Control::LinkUp(l),
                    Control::SetLinkParams {
                        link: l,
                        direction: Some(pathwise_sim::Direction::AToB),
                        params: topo.link(l).params[0].clone(),
                    },
                    Control::SetLinkParams {
                        link: l,
                        direction: Some(pathwise_sim::Direction::BToA),
                        params: topo.link(l).params[1].clone(),
                    },
                ]
            })
            .collect();
        out.extend(topo.node_ids().map(Control::Restart));
        out
    }
}

/// Decides whether a message may be injected (checked on what a hostile node hears and sends,
/// and again on each mutated copy: `false` redraws it). Campaigns use it to keep out messages
/// that would legitimately hold state beyond the run (an RSVP TIME_VALUES of weeks), which no
/// quiescent phase could wait out, and datagrams that are not the protocol's own messages.
pub type Vet = fn(&Transmit) -> bool;

/// Builds a blind message from what a hostile node has seen (addresses to spoof and aim at):
/// a forgery no node sent, such as a stream segment with guessed sequence numbers. `None`:
/// nothing to forge from.
pub type Forge = fn(&mut SeededRng, &VecDeque<Transmit>) -> Option<Transmit>;

/// What hostile nodes injected, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Injections {
    /// Copies of what the node heard or sent, as they were.
    pub replayed: u64,
    /// Copies cut short.
    pub truncated: u64,
    /// Copies with random bytes appended.
    pub extended: u64,
    /// Copies with one to four bytes changed.
    pub mutated: u64,
    /// Blind forgeries ([`Forge`]).
    pub forged: u64,
}

/// Which datagrams [`Probe`] counts as handed to the engine's own message handling.
pub type Counted = fn(&Received<'_>) -> bool;

/// What a hostile node does besides running its engine.
#[derive(Debug)]
struct Hostile {
    rng: SeededRng,
    seen: VecDeque<Transmit>,
    next_at: Instant,
    until: Instant,
    ifaces: Vec<IfIndex>,
    vet: Vet,
    forge: Option<Forge>,
    out: VecDeque<Transmit>,
}

const SEEN: usize = 64;

impl Hostile {
    fn remember(&mut self, t: Transmit) {
        if !(self.vet)(&t) {
            return;
        }
        if self.seen.len() == SEEN {
            self.seen.pop_front();
        }
        self.seen.push_back(t);
    }

    /// Inject one message: with a forger, a forgery one time in four; otherwise a replay (one
    /// in four) or a truncated, extended or mutated copy of one seen.
    fn inject(&mut self, counts: &mut Injections) {
        if self.seen.is_empty() || self.ifaces.is_empty() {
            return;
        }
        if let Some(forge) = self.forge
            && self.rng.random_range(0..4) == 0
            && let Some(t) = forge(&mut self.rng, &self.seen)
        {
            // Routed from its spoofed source like any datagram the node sends.
            counts.forged += 1;
            self.out.push_back(t);
            return;
        }
        for _ in 0..8 {
            let mut t = self.seen[self.rng.random_range(0..self.seen.len())].clone();
            let count = match self.rng.random_range(0..8) {
                0 | 1 => &mut counts.replayed,
                2 => {
                    let keep = self.rng.random_range(0..=t.payload.len());
                    t.payload.truncate(keep);
                    &mut counts.truncated
                }
                3 => {
                    let extra = self.rng.random_range(1..=16);
                    t.payload
                        .extend((0..extra).map(|_| self.rng.random::<u8>()));
                    &mut counts.extended
                }
                _ => {
                    if t.payload.is_empty() {
                        continue;
                    }
                    for _ in 0..self.rng.random_range(1..=4) {
                        let i = self.rng.random_range(0..t.payload.len());
                        t.payload[i] = self.rng.random();
                    }
                    &mut counts.mutated
                }
            };
            if !(self.vet)(&t) {
                continue;
            }
            *count += 1;
            t.ifindex = Some(self.ifaces[self.rng.random_range(0..self.ifaces.len())]);
            t.ttl = 64;
            self.out.push_back(t);
            return;
        }
    }
}

/// An engine as a campaign runs it: counts the datagrams handed to it and, on a hostile node,
/// injects replays and mutations of what the node hears and sends until the faults end.
#[derive(Debug)]
pub struct Probe<E> {
    /// The engine.
    pub inner: E,
    /// Datagrams handed to the engine that `counted` selects.
    pub handed: u64,
    /// Messages a hostile node injected.
    pub injected: u64,
    /// What it injected, by kind.
    pub injections: Injections,
    counted: Counted,
    hostile: Option<Hostile>,
}

impl<E> Probe<E> {
    /// Wrap `inner`, counting the datagrams `counted` selects.
    pub fn new(inner: E, counted: Counted) -> Self {
        Probe {
            inner,
            handed: 0,
            injected: 0,
            injections: Injections::default(),
            counted,
            hostile: None,
        }
    }

    /// Make the node hostile until `until`: one injection every 50–500 ms, through a random
    /// interface, of messages `vet` lets through.
    pub fn hostile(mut self, setup: &NodeSetup, now: Instant, until: Instant, vet: Vet) -> Self {
        if now < until {
            let mut rng = pathwise_core::rng::seeded(setup.seed ^ 0x006e_6173_7479);
            let next_at = now + Duration::from_millis(rng.random_range(50..=500));
            self.hostile = Some(Hostile {
                rng,
                seen: VecDeque::new(),
                next_at,
                until,
                ifaces: setup.interfaces.iter().map(|i| i.ifindex).collect(),
                vet,
                forge: None,
                out: VecDeque::new(),
            });
        }
        self
    }

    /// A hostile node also forges messages with `forge` (one injection in four).
    pub fn forging(mut self, forge: Forge) -> Self {
        if let Some(h) = self.hostile.as_mut() {
            h.forge = Some(forge);
        }
        self
    }
}

impl<E: Engine> Engine for Probe<E> {
    type Event = E::Event;

    fn handle_datagram(&mut self, now: Instant, d: Received<'_>) {
        if (self.counted)(&d) {
            self.handed += 1;
        }
        if let Some(h) = self.hostile.as_mut() {
            h.remember(Transmit {
                src: Some(d.src),
                dst: d.dst,
                ifindex: None,
                transport: d.transport,
                router_alert: d.router_alert,
                ttl: d.ttl,
                payload: d.payload.to_vec(),
            });
        }
        self.inner.handle_datagram(now, d);
    }

    fn handle_timeout(&mut self, now: Instant) {
        if let Some(h) = self.hostile.as_mut()
            && h.next_at <= now
        {
            if now < h.until {
                h.inject(&mut self.injections);
                h.next_at = now + Duration::from_millis(h.rng.random_range(50..=500));
            } else {
                self.hostile = None;
            }
        }
        if self.inner.poll_timeout().is_some_and(|t| t <= now) {
            self.inner.handle_timeout(now);
        }
    }

    fn handle_route_change(&mut self, now: Instant, change: RouteChange) {
        self.inner.handle_route_change(now, change);
    }

    fn poll_transmit(&mut self) -> Option<Transmit> {
        if let Some(h) = self.hostile.as_mut() {
            if let Some(t) = h.out.pop_front() {
                self.injected += 1;
                return Some(t);
            }
            let t = self.inner.poll_transmit()?;
            h.remember(t.clone());
            return Some(t);
        }
        self.inner.poll_transmit()
    }

    fn poll_event(&mut self) -> Option<E::Event> {
        self.inner.poll_event()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let own = self.hostile.as_ref().map(|h| h.next_at);
        match (own, self.inner.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn wants_router_alert(&self, d: &Received<'_>) -> bool {
        self.inner.wants_router_alert(d)
    }
}

/// Whether a datagram is addressed to `port` over UDP.
pub fn is_udp_to(d: &Received<'_>, port: u16) -> bool {
    matches!(d.transport, Transport::Udp { dst_port, .. } if dst_port == port)
}

/// A node's IPv4 loopback.
pub fn v4(topo: &Topology, n: NodeId) -> IpAddr {
    topo.loopbacks(n)[0]
}
