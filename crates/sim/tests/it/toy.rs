//! A toy engine for exercising the simulator: it records everything it is told, can intercept
//! router-alert packets and relay them onwards (as RSVP does with Path), echo, and tick.

use pathwise_core::engine::Engine;
use pathwise_core::fib::Fib;
use pathwise_core::io::{IfIndex, Received, Transmit, Transport};
use pathwise_core::route::{MulticastRoute, Route, RouteChange};
use pathwise_core::time::{Duration, Instant};
use pathwise_sim::{NodeSetup, Sim, SimConfig, Topology};
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;

/// What a relaying toy does with an intercepted router-alert packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relay {
    /// Send it on by its own unicast route, out of that interface (RSVP Path style).
    Routed,
    /// Send it out of every interface but the one it came in on.
    Flood,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToyEvent {
    Heard {
        src: IpAddr,
        dst: IpAddr,
        ifindex: IfIndex,
        ttl: u8,
        router_alert: Option<u16>,
        /// Not addressed to this node: intercepted in transit.
        transit: bool,
        payload: Vec<u8>,
    },
    Route(RouteChange),
    Tick(Instant),
}

#[derive(Debug)]
pub struct Toy {
    pub setup: NodeSetup,
    pub fib: Fib<Route>,
    pub mroutes: BTreeMap<(IpAddr, IpAddr), MulticastRoute>,
    pub route_log: Vec<RouteChange>,
    pub heard: u64,
    pub intercept: bool,
    pub relay: Option<Relay>,
    pub echo: bool,
    /// Tick every period, sending `tick_to` a datagram if set.
    pub period: Option<Duration>,
    pub tick_to: Option<IpAddr>,
    pub next_tick: Option<Instant>,
    pub counter: u64,
    out: VecDeque<Transmit>,
    events: VecDeque<ToyEvent>,
}

impl Toy {
    pub fn new(setup: &NodeSetup) -> Self {
        Toy {
            setup: setup.clone(),
            fib: Fib::new(),
            mroutes: BTreeMap::new(),
            route_log: Vec::new(),
            heard: 0,
            intercept: false,
            relay: None,
            echo: false,
            period: None,
            tick_to: None,
            next_tick: None,
            counter: 0,
            out: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    pub fn intercepting(mut self, relay: Relay) -> Self {
        self.intercept = true;
        self.relay = Some(relay);
        self
    }

    pub fn ticking(mut self, start: Instant, period: Duration, to: Option<IpAddr>) -> Self {
        self.period = Some(period);
        self.next_tick = Some(start);
        self.tick_to = to;
        self
    }

    pub fn send(&mut self, t: Transmit) {
        self.out.push_back(t);
    }

    fn owns(&self, a: IpAddr) -> bool {
        self.setup.owns(a)
    }
}

pub fn udp(dst: IpAddr, payload: &[u8]) -> Transmit {
    Transmit {
        src: None,
        dst,
        ifindex: None,
        transport: Transport::Udp {
            src_port: 9,
            dst_port: 9,
        },
        router_alert: None,
        ttl: 64,
        payload: payload.to_vec(),
    }
}

pub fn raw(dst: IpAddr, len: usize) -> Transmit {
    Transmit {
        transport: Transport::Raw(253),
        payload: vec![0xa5; len],
        ..udp(dst, &[])
    }
}

pub fn alert(dst: IpAddr, payload: &[u8]) -> Transmit {
    Transmit {
        router_alert: Some(0),
        transport: Transport::Raw(pathwise_core::io::IPPROTO_RSVP),
        ..udp(dst, payload)
    }
}

impl Engine for Toy {
    type Event = ToyEvent;

    fn handle_datagram(&mut self, _now: Instant, d: Received<'_>) {
        self.heard += 1;
        let transit = !self.owns(d.dst) && !d.dst.is_multicast();
        self.events.push_back(ToyEvent::Heard {
            src: d.src,
            dst: d.dst,
            ifindex: d.ifindex,
            ttl: d.ttl,
            router_alert: d.router_alert,
            transit,
            payload: d.payload.to_vec(),
        });
        let forward_on = |ifindex| Transmit {
            src: Some(d.src),
            dst: d.dst,
            ifindex: Some(ifindex),
            transport: d.transport,
            router_alert: d.router_alert,
            ttl: d.ttl.saturating_sub(1),
            payload: d.payload.to_vec(),
        };
        if d.router_alert.is_some() && (transit || d.dst.is_multicast()) {
            match self.relay {
                Some(Relay::Routed) => {
                    if let Some((_, r)) = self.fib.lookup(d.dst) {
                        let t = forward_on(r.ifindex);
                        self.out.push_back(t);
                    }
                }
                Some(Relay::Flood) => {
                    for i in &self.setup.interfaces {
                        if i.ifindex != d.ifindex {
                            let t = forward_on(i.ifindex);
                            self.out.push_back(t);
                        }
                    }
                }
                None => {}
            }
        }
        if self.echo && !transit && d.payload.first() != Some(&b'R') {
            let mut reply = udp(d.src, b"R");
            reply.payload.extend_from_slice(d.payload);
            self.out.push_back(reply);
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        let (Some(at), Some(period)) = (self.next_tick, self.period) else {
            return;
        };
        if now < at {
            return;
        }
        self.events.push_back(ToyEvent::Tick(now));
        self.counter += 1;
        if let Some(to) = self.tick_to {
            let seq = self.counter.to_be_bytes();
            self.out.push_back(udp(to, &seq));
        }
        self.next_tick = Some(at + period);
    }

    fn handle_route_change(&mut self, _now: Instant, change: RouteChange) {
        match &change {
            RouteChange::Add(r) => {
                self.fib.insert(r.prefix, r.clone());
            }
            RouteChange::Remove(p) => {
                self.fib.remove(p);
            }
            RouteChange::AddMulticast(m) => {
                self.mroutes.insert((m.source, m.group), m.clone());
            }
            RouteChange::RemoveMulticast { source, group } => {
                self.mroutes.remove(&(*source, *group));
            }
        }
        self.route_log.push(change.clone());
        self.events.push_back(ToyEvent::Route(change));
    }

    fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    fn poll_event(&mut self) -> Option<ToyEvent> {
        self.events.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.next_tick
    }

    fn wants_router_alert(&self, _d: &Received<'_>) -> bool {
        self.intercept
    }
}

/// A simulation with a plain toy on every node that runs an engine.
pub fn plain(topo: Topology, config: SimConfig) -> Sim<Toy> {
    Sim::new(topo, config, |s| Some(Toy::new(s)))
}

/// The node's IPv4 loopback.
pub fn lo4(sim: &Sim<Toy>, name: &str) -> IpAddr {
    sim.topology()
        .loopbacks(sim.node(name).expect("node exists"))[0]
}

/// The node's IPv6 loopback.
pub fn lo6(sim: &Sim<Toy>, name: &str) -> IpAddr {
    sim.topology()
        .loopbacks(sim.node(name).expect("node exists"))[1]
}

/// The datagrams a node's engine heard, in order.
pub fn heard(sim: &Sim<Toy>, name: &str) -> Vec<ToyEvent> {
    let n = sim.node(name).expect("node exists");
    sim.events_of(n)
        .filter(|e| matches!(e, ToyEvent::Heard { .. }))
        .cloned()
        .collect()
}

/// Times at which a node heard datagrams.
pub fn heard_at(sim: &Sim<Toy>, name: &str) -> Vec<Instant> {
    let n = sim.node(name).expect("node exists");
    sim.events_where(|r| r.node == n && matches!(r.event, ToyEvent::Heard { .. }))
        .map(|r| r.time)
        .collect()
}

/// A chain of nodes `names[0] - names[1] - ...`, ends hosts, middle routers.
pub fn chain(names: &[&str], params: pathwise_sim::LinkParams) -> Topology {
    let mut b = Topology::builder();
    let ids: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            if i == 0 || i + 1 == names.len() {
                b.host(*n)
            } else {
                b.router(*n)
            }
        })
        .collect();
    for w in ids.windows(2) {
        b.link(w[0], w[1], params.clone());
    }
    b.build().expect("valid chain")
}
