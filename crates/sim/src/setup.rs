//! What the run is configured with and what engine factories are told.

use crate::sim::Sim;
use crate::topology::NodeId;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use pathwise_core::engine::Engine;
use pathwise_core::io::IfIndex;
use pathwise_core::time::{Duration, Instant};
use std::net::{IpAddr, Ipv4Addr};

/// How a run behaves; everything but the topology.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimConfig {
    /// Seeds every random draw: the same seed replays the same run exactly.
    pub seed: u64,
    /// Record a [`crate::PacketRecord`] per packet per hop (see [`Sim::trace`]).
    pub trace: bool,
    /// Also keep each traced packet's transport and payload (see [`Sim::captures`]): what an
    /// eavesdropper on the links would have, for replay tests.
    pub capture: bool,
    /// Routing convergence delay: time from a topology change (link, cost, node, membership)
    /// to the new routes being installed and pushed to engines.
    pub routing_delay: Duration,
}

impl SimConfig {
    /// The default configuration with this seed.
    pub fn seeded(seed: u64) -> Self {
        SimConfig {
            seed,
            ..SimConfig::default()
        }
    }

    /// Turn the packet trace on.
    pub fn with_trace(mut self) -> Self {
        self.trace = true;
        self
    }

    /// Turn the packet trace on, keeping payloads too.
    pub fn with_capture(mut self) -> Self {
        self.trace = true;
        self.capture = true;
        self
    }

    /// Set the routing convergence delay.
    pub fn with_routing_delay(mut self, delay: Duration) -> Self {
        self.routing_delay = delay;
        self
    }
}

/// What the engine factory is told about the node it builds an engine for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSetup {
    /// The node.
    pub id: NodeId,
    /// Its name.
    pub name: String,
    /// Whether it forwards (a router) or not (a host).
    pub is_router: bool,
    /// Its interfaces, `interfaces[i]` having ifindex `i + 1`.
    pub interfaces: Vec<InterfaceSetup>,
    /// IPv4 loopback / router id.
    pub loopback_v4: Ipv4Net,
    /// IPv6 loopback.
    pub loopback_v6: Ipv6Net,
    /// A seed for the engine's generator, derived from the run's seed, the node and the
    /// incarnation (so a restarted engine draws fresh values, reproducibly).
    pub seed: u64,
    /// 0 at start, incremented at every restart.
    pub incarnation: u32,
}

impl NodeSetup {
    /// In-memory admission control over this node's interfaces (reservable as the topology
    /// says).
    pub fn memory_tc(&self) -> pathwise_core::tc::MemoryTrafficControl {
        self.interfaces
            .iter()
            .map(|i| (i.ifindex, i.tc_interface()))
            .collect()
    }

    /// The IPv4 router id (the loopback address).
    pub fn router_id(&self) -> Ipv4Addr {
        self.loopback_v4.addr()
    }

    /// Both loopbacks, IPv4 first.
    pub fn loopbacks(&self) -> [IpNet; 2] {
        [IpNet::V4(self.loopback_v4), IpNet::V6(self.loopback_v6)]
    }

    /// The interface with this ifindex.
    pub fn interface(&self, ifindex: IfIndex) -> Option<&InterfaceSetup> {
        (ifindex.0 as usize)
            .checked_sub(1)
            .and_then(|i| self.interfaces.get(i))
    }

    /// Whether `addr` is one of the node's addresses.
    pub fn owns(&self, addr: IpAddr) -> bool {
        self.loopbacks().iter().any(|n| n.addr() == addr)
            || self
                .interfaces
                .iter()
                .any(|i| i.addrs.iter().any(|n| n.addr() == addr))
    }
}

/// One interface as the factory sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterfaceSetup {
    /// Its index on the node.
    pub ifindex: IfIndex,
    /// Its name.
    pub name: String,
    /// Its addresses with prefixes (IPv4, then IPv6).
    pub addrs: Vec<IpNet>,
    /// Outgoing bandwidth in bit/s (`0` = unlimited).
    pub bandwidth_bps: u64,
    /// Bandwidth available to reservations (admission control), bit/s.
    pub reservable_bps: u64,
    /// Outgoing MTU.
    pub mtu: u32,
    /// Outgoing propagation delay.
    pub latency: Duration,
    /// The node at the other end.
    pub peer: NodeId,
    /// The interface at the other end.
    pub peer_ifindex: IfIndex,
    /// The addresses at the other end (IPv4, then IPv6).
    pub peer_addrs: Vec<IpAddr>,
    /// Whether the link was up when the engine was created.
    pub up: bool,
}

impl InterfaceSetup {
    /// This interface for in-memory admission control.
    pub fn tc_interface(&self) -> pathwise_core::tc::TcInterface {
        pathwise_core::tc::TcInterface::from_link(
            self.reservable_bps,
            self.bandwidth_bps,
            self.latency,
            self.mtu,
        )
    }
}

/// One engine event, stamped with when and where it was polled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRecord<V> {
    /// When the driver polled it.
    pub time: Instant,
    /// The node whose engine reported it.
    pub node: NodeId,
    /// The event.
    pub event: V,
}

/// SplitMix64: spreads (seed, node, incarnation) into independent engine seeds.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl<E: Engine> Sim<E> {
    fn setup(&self, id: NodeId) -> NodeSetup {
        let node = self.topo.node(id);
        let rt = &self.nodes[id.index()];
        let interfaces = node
            .interfaces
            .iter()
            .map(|i| {
                let link = self.topo.link(i.link);
                let p = &link.params[i.direction.index()];
                let (peer, peer_ifindex) = link.far_end(i.direction);
                let far = self
                    .topo
                    .interface(peer, peer_ifindex)
                    .expect("link ends exist");
                InterfaceSetup {
                    ifindex: i.ifindex,
                    name: i.name.clone(),
                    addrs: i.addrs().to_vec(),
                    bandwidth_bps: p.bandwidth_bps,
                    reservable_bps: i.reservable_bps,
                    mtu: p.mtu,
                    latency: p.delay,
                    peer,
                    peer_ifindex,
                    peer_addrs: far.addrs().iter().map(|n| n.addr()).collect(),
                    up: link.up,
                }
            })
            .collect();
        NodeSetup {
            id,
            name: node.name.clone(),
            is_router: node.is_router(),
            interfaces,
            loopback_v4: node.loopback_v4,
            loopback_v6: node.loopback_v6,
            seed: mix(mix(self.config.seed ^ mix(id.0 as u64)) ^ u64::from(rt.incarnation)),
            incarnation: rt.incarnation,
        }
    }

    pub(crate) fn create_engine(&mut self, id: NodeId) {
        if !self.topo.node(id).runs_engine {
            return;
        }
        let setup = self.setup(id);
        self.nodes[id.index()].engine = (self.factory)(&setup);
    }
}
