//! pathwise-sim: a seeded, deterministic discrete-event network that drives any
//! [`Engine`](pathwise_core::engine::Engine).
//!
//! # How it is driven
//!
//! 1. Describe a network as a [`Topology`]: nodes (routers or hosts, with or without an
//!    engine) and point-to-point links with per-direction delay, bandwidth, loss,
//!    duplication, reordering, MTU and cost. Build it in code ([`Topology::builder`]), load
//!    TOML ([`Topology::from_toml`], format in [`config`]) or take a seed paper's testbed
//!    ([`testbeds`]). Addresses follow a deterministic plan ([`topology`]).
//! 2. [`Sim::new`] calls your factory once per node with a [`NodeSetup`] (interfaces,
//!    addresses, bandwidths, a per-node seed) and pushes each engine its routing table as
//!    `RouteChange::Add`s.
//! 3. Poke engines through API calls — now with [`Sim::with_engine`], later with
//!    [`Sim::schedule_call`] — and schedule faults ([`Control`]: links down/up, parameter
//!    changes, crashes and restarts, multicast membership) with [`Sim::schedule`].
//! 4. Run virtual time: [`Sim::run_until`], [`Sim::run_for`], [`Sim::step`],
//!    [`Sim::run_until_idle`]. After every input the simulator drains the engine's
//!    `poll_transmit` and `poll_event` until `None`, then schedules a wake-up at its
//!    `poll_timeout` (replacing the previous one).
//! 5. Observe: engine events as [`EventRecord`]s ([`Sim::events`]), counters per node and per
//!    link direction ([`NodeStats`], [`LinkStats`], drops by [`DropReason`]), an optional
//!    per-hop packet trace ([`SimConfig::trace`]), the routes each node has installed, and the
//!    engines themselves ([`Sim::engine`]).
//!
//! One generator seeded from [`SimConfig::seed`] draws every link-level random value, and
//! events at the same instant run in the order they were scheduled, so a seed replays a run
//! exactly. Engines get their own seeds ([`NodeSetup::seed`]) derived from it.
//!
//! # IP semantics
//!
//! An engine's [`Transmit`](pathwise_core::io::Transmit) leaves by its `ifindex` if set
//! (to the link peer, ignoring routing), else by the unicast route, else (multicast) down the
//! `(source, group)` tree. At each node a packet is delivered if addressed to the node; else,
//! at a router, handed to the engine instead of forwarded if it carries router alert and
//! [`Engine::wants_router_alert`](pathwise_core::engine::Engine::wants_router_alert) says so
//! (how RSVP Path messages are processed hop by hop); multicast is delivered to members and
//! copied along the tree; anything else is forwarded with TTL − 1. Hosts never forward.
//! Nodes without an engine forward like plain IP routers.
//!
//! # Example
//!
//! ```
//! use pathwise_core::engine::Engine;
//! use pathwise_core::io::{Received, Transmit, Transport};
//! use pathwise_core::route::RouteChange;
//! use pathwise_core::time::{Duration, Instant};
//! use pathwise_sim::{Sim, SimConfig, testbeds};
//! use std::collections::VecDeque;
//! use std::net::IpAddr;
//!
//! /// Answers "ping" with "pong" and reports every datagram it hears.
//! #[derive(Default)]
//! struct Echo {
//!     out: VecDeque<Transmit>,
//!     heard: VecDeque<(IpAddr, Vec<u8>)>,
//! }
//!
//! impl Echo {
//!     fn send(&mut self, dst: IpAddr, payload: &[u8]) {
//!         self.out.push_back(Transmit {
//!             src: None,
//!             dst,
//!             ifindex: None,
//!             transport: Transport::Udp { src_port: 7, dst_port: 7 },
//!             router_alert: None,
//!             ttl: 64,
//!             payload: payload.to_vec(),
//!         });
//!     }
//! }
//!
//! impl Engine for Echo {
//!     type Event = (IpAddr, Vec<u8>);
//!     fn handle_datagram(&mut self, _now: Instant, d: Received<'_>) {
//!         self.heard.push_back((d.src, d.payload.to_vec()));
//!         if d.payload == b"ping" {
//!             self.send(d.src, b"pong");
//!         }
//!     }
//!     fn handle_timeout(&mut self, _now: Instant) {}
//!     fn handle_route_change(&mut self, _now: Instant, _change: RouteChange) {}
//!     fn poll_transmit(&mut self) -> Option<Transmit> {
//!         self.out.pop_front()
//!     }
//!     fn poll_event(&mut self) -> Option<Self::Event> {
//!         self.heard.pop_front()
//!     }
//!     fn poll_timeout(&self) -> Option<Instant> {
//!         None
//!     }
//!     fn wants_router_alert(&self, _d: &Received<'_>) -> bool {
//!         false
//!     }
//! }
//!
//! let mut sim = Sim::new(testbeds::kom_rsvp(), SimConfig::seeded(7), |_setup| {
//!     Some(Echo::default())
//! });
//! let (n1, n5) = (sim.node("N1").unwrap(), sim.node("N5").unwrap());
//! let n5_addr = IpAddr::V4(sim.topology().node(n5).loopback_v4.addr());
//! sim.schedule_call(Instant::from_millis(10), n1, move |e, _now| e.send(n5_addr, b"ping"));
//! sim.run_for(Duration::from_secs(1));
//!
//! // The reply comes from N5's address on the link it left by.
//! let (from, reply) = sim.events_of(n1).next().unwrap();
//! assert_eq!(sim.topology().owner(*from), Some(n5));
//! assert_eq!(reply.as_slice(), b"pong");
//! assert_eq!(sim.node_stats(sim.node("N3").unwrap()).forwarded, 2);
//! ```
#![warn(missing_docs)]

pub mod config;
mod control;
mod forward;
pub mod link;
mod multicast;
pub mod routing;
mod setup;
mod sim;
pub mod stats;
pub mod testbeds;
pub mod topology;

pub use control::Control;
pub use forward::{LOOPBACK_IFINDEX, ip_len};
pub use link::{Direction, LinkParams};
pub use setup::{EventRecord, InterfaceSetup, NodeSetup, SimConfig};
pub use sim::Sim;
pub use stats::{Captured, DropReason, Drops, LinkStats, NodeStats, Outcome, PacketRecord};
pub use topology::{
    EndSpec, Interface, Link, LinkId, LinkSpec, Node, NodeId, NodeRole, NodeSpec, Topology,
    TopologyBuilder, TopologyError,
};
