//! Nodes, point-to-point links, interfaces and the address plan.
//!
//! A [`Topology`] is built once, either in code with [`TopologyBuilder`] or from TOML with
//! [`Topology::from_toml`], and validated as a whole. Identifiers are dense indices
//! ([`NodeId`], [`LinkId`]) in declaration order, so runs are reproducible.
//!
//! # Address plan
//!
//! Addresses not given explicitly are assigned deterministically:
//!
//! | what | IPv4 | IPv6 |
//! |---|---|---|
//! | link `L` (1-based, declaration order), end `a` | `10.<L/256>.<L%256>.1/30` | `fd00:<L>::1/64` |
//! | link `L`, end `b` | `10.<L/256>.<L%256>.2/30` | `fd00:<L>::2/64` |
//! | loopback of node `N` (1-based) | `10.255.<N/256>.<N%256>/32` | `fd00:ffff::<N>/128` |
//!
//! (`<L>` and `<N>` in IPv6 addresses are written in hex, as IPv6 is.) So link 3 joins
//! `10.0.3.1` and `10.0.3.2`, and node 2's router id is `10.255.0.2`. At most 65,279 links and
//! 65,535 nodes. Interfaces are numbered per node from [`IfIndex`]`(1)`, in the order of the
//! links that attach them, and named `eth0`, `eth1`, … unless named explicitly.

use crate::link::{Direction, LinkParams};
use core::fmt;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use pathwise_core::io::IfIndex;
use pathwise_core::table::{KeyedMap, KeyedState};
use pathwise_core::time::Duration;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A node, by index in declaration order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The index (0-based, declaration order).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node{}", self.0)
    }
}

/// A link, by index in declaration order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(pub(crate) u32);

impl LinkId {
    /// The index (0-based, declaration order).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Debug for LinkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "link{}", self.0)
    }
}

/// Whether a node forwards transit traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum NodeRole {
    /// Forwards packets not addressed to it, and may intercept router-alert packets.
    #[default]
    Router,
    /// An end system: never a transit hop in routing, drops transit packets.
    Host,
}

/// A node as declared.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    /// Unique name.
    pub name: String,
    /// Router or host.
    pub role: NodeRole,
    /// Whether the simulator asks the factory for an engine for this node.
    pub engine: bool,
    /// Explicit IPv4 loopback / router id (a /32), instead of the plan's.
    pub loopback_v4: Option<Ipv4Net>,
    /// Explicit IPv6 loopback (a /128), instead of the plan's.
    pub loopback_v6: Option<Ipv6Net>,
    /// CPU time per datagram handed to the engine; datagrams queue for the CPU (FIFO).
    pub processing_delay: Duration,
}

impl NodeSpec {
    /// A node running an engine, with planned addresses and no processing delay.
    pub fn new(name: impl Into<String>, role: NodeRole) -> Self {
        NodeSpec {
            name: name.into(),
            role,
            engine: true,
            loopback_v4: None,
            loopback_v6: None,
            processing_delay: Duration::ZERO,
        }
    }
}

/// One end of a link as declared; everything optional.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndSpec {
    /// Interface name (default `eth<ifindex-1>`).
    pub name: Option<String>,
    /// IPv4 address with prefix length.
    pub v4: Option<Ipv4Net>,
    /// IPv6 address with prefix length.
    pub v6: Option<Ipv6Net>,
    /// Reservable bandwidth in bit/s for admission control (default: the outgoing bandwidth).
    pub reservable_bps: Option<u64>,
}

/// A link as declared.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    /// End `a`.
    pub a: NodeId,
    /// End `b`.
    pub b: NodeId,
    /// Parameters from `a` to `b`.
    pub a_to_b: LinkParams,
    /// Parameters from `b` to `a`.
    pub b_to_a: LinkParams,
    /// Whether the link starts up.
    pub up: bool,
    /// Interface details at `a`.
    pub a_end: EndSpec,
    /// Interface details at `b`.
    pub b_end: EndSpec,
}

impl LinkSpec {
    /// A symmetric link that starts up, with planned addresses.
    pub fn new(a: NodeId, b: NodeId, params: LinkParams) -> Self {
        LinkSpec {
            a,
            b,
            a_to_b: params.clone(),
            b_to_a: params,
            up: true,
            a_end: EndSpec::default(),
            b_end: EndSpec::default(),
        }
    }
}

/// An invalid topology; `field` names the offending declaration, e.g. `link[2].b_v4`.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// A declaration is invalid.
    #[error("{field}: {message}")]
    Invalid {
        /// Which field, as `node[i].x` or `link[i].x` (0-based declaration order).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// The TOML text did not parse (the message names line, column and key).
    #[error("{0}")]
    Toml(#[from] toml::de::Error),
}

pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> TopologyError {
    TopologyError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

/// A node of a built topology.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// Unique name.
    pub name: String,
    /// Router or host.
    pub role: NodeRole,
    /// Whether the factory is asked for an engine.
    pub runs_engine: bool,
    /// IPv4 loopback / router id.
    pub loopback_v4: Ipv4Net,
    /// IPv6 loopback.
    pub loopback_v6: Ipv6Net,
    /// CPU time per datagram handed to the engine.
    pub processing_delay: Duration,
    /// The node's interfaces; `interfaces[i]` has ifindex `i + 1`.
    pub interfaces: Vec<Interface>,
}

impl Node {
    /// Whether the node is a router.
    pub fn is_router(&self) -> bool {
        self.role == NodeRole::Router
    }

    /// The interface with this ifindex.
    pub fn interface(&self, ifindex: IfIndex) -> Option<&Interface> {
        (ifindex.0 as usize)
            .checked_sub(1)
            .and_then(|i| self.interfaces.get(i))
    }
}

/// One end of a link, as an interface of its node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    /// Per-node index, from 1.
    pub ifindex: IfIndex,
    /// Name (`eth0`, …).
    pub name: String,
    /// The link it attaches to.
    pub link: LinkId,
    /// Which way packets leave by this interface.
    pub direction: Direction,
    /// IPv4 address and prefix.
    pub v4: Ipv4Net,
    /// IPv6 address and prefix.
    pub v6: Ipv6Net,
    /// Reservable bandwidth in bit/s.
    pub reservable_bps: u64,
}

impl Interface {
    /// The interface address of `addr`'s family.
    pub fn addr_for(&self, addr: IpAddr) -> IpAddr {
        match addr {
            IpAddr::V4(_) => IpAddr::V4(self.v4.addr()),
            IpAddr::V6(_) => IpAddr::V6(self.v6.addr()),
        }
    }

    /// Both addresses with their prefixes, IPv4 first.
    pub fn addrs(&self) -> [IpNet; 2] {
        [IpNet::V4(self.v4), IpNet::V6(self.v6)]
    }
}

/// A link of a built topology.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// The two ends: `(node, ifindex)` for `a` then `b`.
    pub ends: [(NodeId, IfIndex); 2],
    /// Parameters per direction, indexed by [`Direction::index`].
    pub params: [LinkParams; 2],
    /// Whether the link is up.
    pub up: bool,
}

impl Link {
    /// The end a packet leaving in `dir` arrives at.
    pub fn far_end(&self, dir: Direction) -> (NodeId, IfIndex) {
        self.ends[1 - dir.index()]
    }
}

/// A validated network: nodes, links, interfaces with addresses.
#[derive(Clone, Debug)]
pub struct Topology {
    pub(crate) name: String,
    pub(crate) nodes: Vec<Node>,
    pub(crate) links: Vec<Link>,
    by_name: HashMap<String, NodeId>,
    owners: KeyedMap<IpAddr, NodeId>,
}

impl Topology {
    /// Start building a topology in code.
    pub fn builder() -> TopologyBuilder {
        TopologyBuilder::default()
    }

    /// The topology's name (from TOML `name`, or empty).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// All nodes, indexed by [`NodeId::index`].
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// All links, indexed by [`LinkId::index`].
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// The node ids, in order.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + use<> {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// The link ids, in order.
    pub fn link_ids(&self) -> impl Iterator<Item = LinkId> + use<> {
        (0..self.links.len() as u32).map(LinkId)
    }

    /// One node.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// One link.
    pub fn link(&self, id: LinkId) -> &Link {
        &self.links[id.index()]
    }

    /// The node called `name`.
    pub fn find_node(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    /// The first link joining `a` and `b` (either way round).
    pub fn find_link(&self, a: NodeId, b: NodeId) -> Option<LinkId> {
        self.link_ids().find(|&l| {
            let [(x, _), (y, _)] = self.link(l).ends;
            (x, y) == (a, b) || (x, y) == (b, a)
        })
    }

    /// The interface at `node` with `ifindex`.
    pub fn interface(&self, node: NodeId, ifindex: IfIndex) -> Option<&Interface> {
        self.node(node).interface(ifindex)
    }

    /// The interface at the other end of the link behind `(node, ifindex)`.
    pub fn peer(&self, node: NodeId, ifindex: IfIndex) -> Option<(NodeId, &Interface)> {
        let i = self.interface(node, ifindex)?;
        let (n, x) = self.link(i.link).far_end(i.direction);
        Some((n, self.node(n).interface(x)?))
    }

    /// The node that owns `addr` (an interface or loopback address).
    pub fn owner(&self, addr: IpAddr) -> Option<NodeId> {
        self.owners.get(&addr).copied()
    }

    /// The node's loopback addresses (IPv4 router id, IPv6).
    pub fn loopbacks(&self, node: NodeId) -> [IpAddr; 2] {
        let n = self.node(node);
        [
            IpAddr::V4(n.loopback_v4.addr()),
            IpAddr::V6(n.loopback_v6.addr()),
        ]
    }

    /// The node's loopback of `addr`'s family.
    pub fn loopback_for(&self, node: NodeId, addr: IpAddr) -> IpAddr {
        let n = self.node(node);
        match addr {
            IpAddr::V4(_) => IpAddr::V4(n.loopback_v4.addr()),
            IpAddr::V6(_) => IpAddr::V6(n.loopback_v6.addr()),
        }
    }
}

/// Builds a [`Topology`] in code.
///
/// ```
/// use pathwise_sim::{LinkParams, Topology};
/// let mut b = Topology::builder();
/// let h1 = b.host("H1");
/// let r1 = b.router("R1");
/// let h2 = b.host("H2");
/// b.link(h1, r1, LinkParams::default());
/// b.link(r1, h2, LinkParams::default().bandwidth(10_000_000));
/// let topo = b.build().unwrap();
/// assert_eq!(topo.find_node("R1"), Some(r1));
/// ```
#[derive(Clone, Debug, Default)]
pub struct TopologyBuilder {
    name: String,
    nodes: Vec<NodeSpec>,
    links: Vec<LinkSpec>,
}

impl TopologyBuilder {
    /// Name the topology.
    pub fn name(&mut self, name: impl Into<String>) -> &mut Self {
        self.name = name.into();
        self
    }

    /// Add a router running an engine.
    pub fn router(&mut self, name: impl Into<String>) -> NodeId {
        self.node(NodeSpec::new(name, NodeRole::Router))
    }

    /// Add a host running an engine.
    pub fn host(&mut self, name: impl Into<String>) -> NodeId {
        self.node(NodeSpec::new(name, NodeRole::Host))
    }

    /// Add a node.
    pub fn node(&mut self, spec: NodeSpec) -> NodeId {
        self.nodes.push(spec);
        NodeId(self.nodes.len() as u32 - 1)
    }

    /// Change a node already added (e.g. to turn its engine off).
    pub fn node_mut(&mut self, id: NodeId) -> &mut NodeSpec {
        &mut self.nodes[id.index()]
    }

    /// Add a symmetric link.
    pub fn link(&mut self, a: NodeId, b: NodeId, params: LinkParams) -> LinkId {
        self.link_spec(LinkSpec::new(a, b, params))
    }

    /// Add a link with full control over each direction and end.
    pub fn link_spec(&mut self, spec: LinkSpec) -> LinkId {
        self.links.push(spec);
        LinkId(self.links.len() as u32 - 1)
    }

    /// Change a link already added.
    pub fn link_mut(&mut self, id: LinkId) -> &mut LinkSpec {
        &mut self.links[id.index()]
    }

    /// Validate and assign interfaces and addresses.
    pub fn build(self) -> Result<Topology, TopologyError> {
        const MAX_LINKS: usize = 255 * 256 - 1;
        if self.links.len() > MAX_LINKS {
            return Err(invalid("link", format!("more than {MAX_LINKS} links")));
        }
        if self.nodes.len() > u16::MAX as usize {
            return Err(invalid("node", "more than 65535 nodes"));
        }
        let mut by_name = HashMap::new();
        let mut nodes = Vec::with_capacity(self.nodes.len());
        for (i, spec) in self.nodes.into_iter().enumerate() {
            if spec.name.is_empty() {
                return Err(invalid(format!("node[{i}].name"), "must not be empty"));
            }
            if by_name
                .insert(spec.name.clone(), NodeId(i as u32))
                .is_some()
            {
                return Err(invalid(
                    format!("node[{i}].name"),
                    format!("duplicate node name {:?}", spec.name),
                ));
            }
            if spec.loopback_v4.is_some_and(|l| l.prefix_len() != 32) {
                return Err(invalid(format!("node[{i}].loopback_v4"), "must be a /32"));
            }
            if spec.loopback_v6.is_some_and(|l| l.prefix_len() != 128) {
                return Err(invalid(format!("node[{i}].loopback_v6"), "must be a /128"));
            }
            let n = (i + 1) as u16;
            let loopback_v4 = spec.loopback_v4.unwrap_or_else(|| {
                let [hi, lo] = n.to_be_bytes();
                Ipv4Net::new(Ipv4Addr::new(10, 255, hi, lo), 32).expect("valid /32")
            });
            let loopback_v6 = spec.loopback_v6.unwrap_or_else(|| {
                Ipv6Net::new(Ipv6Addr::new(0xfd00, 0xffff, 0, 0, 0, 0, 0, n), 128)
                    .expect("valid /128")
            });
            nodes.push(Node {
                name: spec.name,
                role: spec.role,
                runs_engine: spec.engine,
                loopback_v4,
                loopback_v6,
                processing_delay: spec.processing_delay,
                interfaces: Vec::new(),
            });
        }
        let mut links = Vec::with_capacity(self.links.len());
        for (i, spec) in self.links.into_iter().enumerate() {
            let f = |x: &str| format!("link[{i}].{x}");
            for (end, id) in [("a", spec.a), ("b", spec.b)] {
                if id.index() >= nodes.len() {
                    return Err(invalid(f(end), format!("no node {id:?}")));
                }
            }
            if spec.a == spec.b {
                return Err(invalid(f("b"), "a link must join two different nodes"));
            }
            for (dir, p) in [("a_to_b", &spec.a_to_b), ("b_to_a", &spec.b_to_a)] {
                p.check()
                    .map_err(|m| invalid(format!("link[{i}].{dir}"), m))?;
            }
            let (a4, b4) = end_pair(&f, "v4", spec.a_end.v4, spec.b_end.v4, || {
                let l = (i + 1) as u16;
                let [hi, lo] = l.to_be_bytes();
                let net = |h| Ipv4Net::new(Ipv4Addr::new(10, hi, lo, h), 30).expect("valid /30");
                (net(1), net(2))
            })?;
            let (a6, b6) = end_pair(&f, "v6", spec.a_end.v6, spec.b_end.v6, || {
                let l = (i + 1) as u16;
                let net = |h| {
                    Ipv6Net::new(Ipv6Addr::new(0xfd00, l, 0, 0, 0, 0, 0, h), 64).expect("valid /64")
                };
                (net(1), net(2))
            })?;
            let id = LinkId(i as u32);
            let mut ends = [(spec.a, IfIndex(0)); 2];
            for (side, (node, end, v4, v6, params)) in [
                (spec.a, &spec.a_end, a4, a6, &spec.a_to_b),
                (spec.b, &spec.b_end, b4, b6, &spec.b_to_a),
            ]
            .into_iter()
            .enumerate()
            {
                let ifaces = &mut nodes[node.index()].interfaces;
                let ifindex = IfIndex(ifaces.len() as u32 + 1);
                ifaces.push(Interface {
                    ifindex,
                    name: end
                        .name
                        .clone()
                        .unwrap_or_else(|| format!("eth{}", ifindex.0 - 1)),
                    link: id,
                    direction: Direction::from_index(side),
                    v4,
                    v6,
                    reservable_bps: end.reservable_bps.unwrap_or(params.bandwidth_bps),
                });
                ends[side] = (node, ifindex);
            }
            links.push(Link {
                ends,
                params: [spec.a_to_b, spec.b_to_a],
                up: spec.up,
            });
        }
        // Every address names exactly one node.
        let mut owners: KeyedMap<IpAddr, NodeId> = HashMap::with_hasher(KeyedState::from_seed(0));
        let mut where_: HashMap<IpAddr, String> = HashMap::new();
        for (i, node) in nodes.iter().enumerate() {
            let mut claim = |addr: IpAddr, field: String| match where_.get(&addr) {
                Some(prev) => Err(invalid(
                    field,
                    format!("address {addr} already used by {prev}"),
                )),
                None => {
                    owners.insert(addr, NodeId(i as u32));
                    where_.insert(addr, field);
                    Ok(())
                }
            };
            claim(
                IpAddr::V4(node.loopback_v4.addr()),
                format!("node[{i}].loopback_v4"),
            )?;
            claim(
                IpAddr::V6(node.loopback_v6.addr()),
                format!("node[{i}].loopback_v6"),
            )?;
            for iface in &node.interfaces {
                let l = iface.link.index();
                let end = if iface.direction == Direction::AToB {
                    "a"
                } else {
                    "b"
                };
                claim(IpAddr::V4(iface.v4.addr()), format!("link[{l}].{end}_v4"))?;
                claim(IpAddr::V6(iface.v6.addr()), format!("link[{l}].{end}_v6"))?;
            }
        }
        Ok(Topology {
            name: self.name,
            nodes,
            links,
            by_name,
            owners,
        })
    }
}

/// Both ends' addresses of one family: both explicit (and on one subnet) or both planned.
fn end_pair<N: Copy + PartialEq + fmt::Display>(
    field: &dyn Fn(&str) -> String,
    family: &str,
    a: Option<N>,
    b: Option<N>,
    plan: impl FnOnce() -> (N, N),
) -> Result<(N, N), TopologyError>
where
    IpNet: From<N>,
{
    match (a, b) {
        (None, None) => Ok(plan()),
        (Some(a), Some(b)) => {
            let (na, nb) = (IpNet::from(a), IpNet::from(b));
            if na.trunc() != nb.trunc() {
                return Err(invalid(
                    field(&format!("b_{family}")),
                    format!("{b} is not on the same subnet as a_{family} {a}"),
                ));
            }
            if na.addr() == nb.addr() {
                return Err(invalid(
                    field(&format!("b_{family}")),
                    format!("{b} is the same address as a_{family}"),
                ));
            }
            Ok((a, b))
        }
        (Some(_), None) => Err(invalid(
            field(&format!("b_{family}")),
            format!("required when a_{family} is given"),
        )),
        (None, Some(_)) => Err(invalid(
            field(&format!("a_{family}")),
            format!("required when b_{family} is given"),
        )),
    }
}
