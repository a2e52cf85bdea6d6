//! Engines back to back on the five-node chain of the KOM captures, without the simulator:
//! H1 10.200.0.1 – R1 – R2 – R3 – H2 10.200.3.2, link k being 10.200.k.0/24 (node k holds
//! 10.200.k.1 downstream and node k+1 holds 10.200.k.2 upstream). Messages go to the
//! neighbour on the interface they name; a neighbour not addressed and without the Router Alert
//! option forwards them on in IP, as a router would. Time stands still (no refreshes).
#![allow(dead_code)]

use pathwise_core::engine::Engine;
use pathwise_core::io::{IPPROTO_RSVP, IfIndex, Received, Transmit, Transport};
use pathwise_core::route::{Route, RouteChange};
use pathwise_core::time::{Duration, Instant};
use pathwise_rsvp::engine::{Config, InterfaceConfig, RsvpEngine};
use pathwise_rsvp::wire::Message;
use std::net::{IpAddr, Ipv4Addr};

/// Towards H1.
pub const UP: IfIndex = IfIndex(1);
/// Towards H2.
pub const DOWN: IfIndex = IfIndex(2);
/// Nodes of the chain.
pub const NAMES: [&str; 5] = ["H1", "R1", "R2", "R3", "H2"];

/// Node `n`'s address on link `k` (`k` = `n - 1` upstream, `n` downstream).
pub fn addr(n: usize, k: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 200, k as u8, if k == n { 1 } else { 2 })
}

/// One message sent: by which node, and what.
#[derive(Debug)]
pub struct Sent {
    pub from: usize,
    pub to: usize,
    pub t: Transmit,
}

impl Sent {
    pub fn msg(&self) -> Message {
        Message::parse(&self.t.payload)
            .unwrap_or_else(|e| panic!("{} sent bytes it cannot parse: {e:?}", NAMES[self.from]))
            .1
    }
}

/// The chain; `nodes[n]` is `None` where another implementation stands (a test injects what it
/// sends, and what is sent to it is only logged).
pub struct Chain {
    pub nodes: Vec<Option<RsvpEngine>>,
    pub now: Instant,
    pub log: Vec<Sent>,
}

fn engine(n: usize) -> RsvpEngine {
    let iface = |ifindex, a: Ipv4Addr| InterfaceConfig {
        ifindex,
        addrs: vec![IpAddr::V4(a)],
        bandwidth_bps: 100_000_000,
        reservable_bps: 80_000_000,
        mtu: 1500,
        latency: Duration::from_micros(50),
        integrity: Default::default(),
        hello: None,
    };
    let mut interfaces = Vec::new();
    if n > 0 {
        interfaces.push(iface(UP, addr(n, n - 1)));
    }
    if n < 4 {
        interfaces.push(iface(DOWN, addr(n, n)));
    }
    let cfg = Config {
        interfaces,
        ..Config::default()
    };
    let mut e = RsvpEngine::with_memory_tc(cfg, Instant::ZERO);
    for k in 0..4usize {
        let prefix = format!("10.200.{k}.0/24").parse().unwrap();
        let (ifindex, next_hop) = if k + 1 == n {
            (UP, None)
        } else if k == n {
            (DOWN, None)
        } else if k < n {
            (UP, Some(IpAddr::V4(addr(n - 1, n - 1))))
        } else {
            (DOWN, Some(IpAddr::V4(addr(n + 1, n))))
        };
        e.handle_route_change(
            Instant::ZERO,
            RouteChange::Add(Route {
                prefix,
                next_hop,
                ifindex,
                metric: 1,
            }),
        );
    }
    e
}

impl Chain {
    /// Pathwise on the nodes `ours` says, another implementation elsewhere.
    pub fn new(ours: [bool; 5]) -> Self {
        Chain {
            nodes: (0..5).map(|n| ours[n].then(|| engine(n))).collect(),
            now: Instant::ZERO,
            log: Vec::new(),
        }
    }

    pub fn node(&mut self, n: usize) -> &mut RsvpEngine {
        self.nodes[n].as_mut().expect("a pathwise node")
    }

    /// Hand `payload` to node `n` as received on `ifindex` from `src` to `dst` with IP TTL
    /// `ttl`, with or without Router Alert.
    pub fn inject(
        &mut self,
        n: usize,
        ifindex: IfIndex,
        (src, dst, ttl, router_alert): (Ipv4Addr, Ipv4Addr, u8, Option<u16>),
        payload: &[u8],
    ) {
        let now = self.now;
        self.node(n).handle_datagram(
            now,
            Received {
                src: src.into(),
                dst: dst.into(),
                ifindex,
                transport: Transport::Raw(IPPROTO_RSVP),
                router_alert,
                ttl,
                payload,
            },
        );
    }

    /// Whether node `n` owns `a`.
    fn owns(n: usize, a: IpAddr) -> bool {
        (0..4).any(|k| (k + 1 == n || k == n) && IpAddr::V4(addr(n, k)) == a)
    }

    /// Deliver what every pathwise node sends until none sends anything; returns what was
    /// sent, in order (also appended to `log`).
    pub fn run(&mut self) -> Vec<Sent> {
        let mut sent = Vec::new();
        loop {
            let mut batch = Vec::new();
            for n in 0..5 {
                if let Some(e) = self.nodes[n].as_mut() {
                    while let Some(t) = e.poll_transmit() {
                        batch.push((n, t));
                    }
                }
            }
            if batch.is_empty() {
                break;
            }
            for (from, t) in batch {
                let down = match t.ifindex {
                    Some(i) => i == DOWN,
                    None => {
                        let IpAddr::V4(d) = t.dst else {
                            panic!("IPv4 only")
                        };
                        usize::from(d.octets()[2]) >= from
                    }
                };
                // Hop by hop towards the destination: each node either takes the message
                // (addressed to it, or Router Alert) or forwards it in IP.
                let mut to = if down { from + 1 } else { from - 1 };
                let mut ttl = t.ttl;
                loop {
                    let take = t.router_alert.is_some() || Self::owns(to, t.dst);
                    if take || to == 0 || to == 4 {
                        break;
                    }
                    ttl -= 1;
                    to = if down { to + 1 } else { to - 1 };
                }
                let ifindex = if down { UP } else { DOWN };
                let IpAddr::V4(src) = t
                    .src
                    .unwrap_or(IpAddr::V4(addr(from, if down { from } else { from - 1 })))
                else {
                    panic!("IPv4 only")
                };
                let IpAddr::V4(dst) = t.dst else {
                    panic!("IPv4 only")
                };
                if self.nodes[to].is_some() {
                    let (ra, payload) = (t.router_alert, t.payload.clone());
                    self.inject(to, ifindex, (src, dst, ttl, ra), &payload);
                }
                sent.push(Sent { from, to, t });
            }
        }
        self.log.extend(sent.iter().map(|s| Sent {
            from: s.from,
            to: s.to,
            t: s.t.clone(),
        }));
        sent
    }
}
