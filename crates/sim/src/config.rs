//! Topologies in TOML.
//!
//! ```toml
//! name = "example"
//! description = "two hosts and a router"
//!
//! [defaults]                # link parameters applied to every link unless overridden
//! bandwidth = "100Mbit"     # bit/s: an integer, or a number with bit|kbit|Mbit|Gbit (or bps, kbps, ...)
//! delay = "100us"           # a number with ns|us|ms|s
//!
//! [[node]]
//! name = "H1"
//! role = "host"             # "router" (default) or "host"
//! # engine = false          # run no engine: a plain IP node
//! # loopback_v4 = "192.0.2.1/32"
//! # processing_delay = "50us"
//!
//! [[node]]
//! name = "R1"
//!
//! [[link]]
//! a = "H1"
//! b = "R1"
//! cost = 10                 # any of: delay bandwidth loss duplicate reorder reorder_jitter
//!                           #         mtu cost queue_bytes (both directions)
//! a_v4 = "192.168.1.1/24"   # explicit addresses: a_v4 b_v4 a_v6 b_v6 (both ends or neither)
//! b_v4 = "192.168.1.2/24"
//! # up = false, a_name = "eth7", reservable = "50Mbit", a_reservable, b_reservable
//! [link.a_to_b]             # per-direction overrides (same keys as [defaults])
//! loss = 0.01
//! ```
//!
//! Unknown keys are errors. Errors name the field: TOML syntax and type errors carry line,
//! column and key; semantic errors say `link[0].b: unknown node "R9"`.

use crate::link::LinkParams;
use crate::topology::{
    EndSpec, LinkSpec, NodeId, NodeRole, NodeSpec, Topology, TopologyError, invalid,
};
use ipnet::{Ipv4Net, Ipv6Net};
use pathwise_core::units::{Bandwidth, TimeSpan};
use serde::Deserialize;

impl Topology {
    /// Parse and validate a topology written in TOML (format in the [`crate::config`] docs).
    pub fn from_toml(text: &str) -> Result<Topology, TopologyError> {
        let file: TopologyFile = toml::from_str(text)?;
        file.build()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TopologyFile {
    #[serde(default)]
    name: String,
    #[serde(default)]
    #[allow(dead_code)] // documentation for readers of the file
    description: String,
    #[serde(default)]
    defaults: DirEntry,
    #[serde(default, rename = "node")]
    nodes: Vec<NodeEntry>,
    #[serde(default, rename = "link")]
    links: Vec<LinkEntry>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct DirEntry {
    delay: Option<TimeSpan>,
    bandwidth: Option<Bandwidth>,
    loss: Option<f64>,
    duplicate: Option<f64>,
    reorder: Option<f64>,
    reorder_jitter: Option<TimeSpan>,
    mtu: Option<u32>,
    cost: Option<u32>,
    queue_bytes: Option<u64>,
}

impl DirEntry {
    fn apply(&self, p: &mut LinkParams) {
        if let Some(d) = self.delay {
            p.delay = d.0;
        }
        if let Some(b) = self.bandwidth {
            p.bandwidth_bps = b.0;
        }
        if let Some(x) = self.loss {
            p.loss = x;
        }
        if let Some(x) = self.duplicate {
            p.duplicate = x;
        }
        if let Some(x) = self.reorder {
            p.reorder = x;
        }
        if let Some(d) = self.reorder_jitter {
            p.reorder_jitter = d.0;
        }
        if let Some(x) = self.mtu {
            p.mtu = x;
        }
        if let Some(x) = self.cost {
            p.cost = x;
        }
        if self.queue_bytes.is_some() {
            p.queue_bytes = self.queue_bytes;
        }
    }
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Role {
    #[default]
    Router,
    Host,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeEntry {
    name: String,
    #[serde(default)]
    role: Role,
    #[serde(default = "yes")]
    engine: bool,
    loopback_v4: Option<Ipv4Net>,
    loopback_v6: Option<Ipv6Net>,
    processing_delay: Option<TimeSpan>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkEntry {
    a: String,
    b: String,
    // Both directions (serde cannot flatten with deny_unknown_fields, hence the repetition).
    delay: Option<TimeSpan>,
    bandwidth: Option<Bandwidth>,
    loss: Option<f64>,
    duplicate: Option<f64>,
    reorder: Option<f64>,
    reorder_jitter: Option<TimeSpan>,
    mtu: Option<u32>,
    cost: Option<u32>,
    queue_bytes: Option<u64>,
    up: Option<bool>,
    a_to_b: Option<DirEntry>,
    b_to_a: Option<DirEntry>,
    a_name: Option<String>,
    b_name: Option<String>,
    a_v4: Option<Ipv4Net>,
    b_v4: Option<Ipv4Net>,
    a_v6: Option<Ipv6Net>,
    b_v6: Option<Ipv6Net>,
    reservable: Option<Bandwidth>,
    a_reservable: Option<Bandwidth>,
    b_reservable: Option<Bandwidth>,
}

impl LinkEntry {
    fn both(&self) -> DirEntry {
        DirEntry {
            delay: self.delay,
            bandwidth: self.bandwidth,
            loss: self.loss,
            duplicate: self.duplicate,
            reorder: self.reorder,
            reorder_jitter: self.reorder_jitter,
            mtu: self.mtu,
            cost: self.cost,
            queue_bytes: self.queue_bytes,
        }
    }
}

impl TopologyFile {
    fn build(self) -> Result<Topology, TopologyError> {
        let mut b = Topology::builder();
        b.name(self.name);
        let mut defaults = LinkParams::default();
        self.defaults.apply(&mut defaults);
        // Names resolve to the first node declared with them; the builder reports duplicates.
        let mut ids = std::collections::HashMap::new();
        for (i, n) in self.nodes.into_iter().enumerate() {
            ids.entry(n.name.clone()).or_insert(i);
            b.node(NodeSpec {
                name: n.name,
                role: match n.role {
                    Role::Router => NodeRole::Router,
                    Role::Host => NodeRole::Host,
                },
                engine: n.engine,
                loopback_v4: n.loopback_v4,
                loopback_v6: n.loopback_v6,
                processing_delay: n
                    .processing_delay
                    .map_or(pathwise_core::time::Duration::ZERO, |d| d.0),
            });
        }
        for (i, l) in self.links.into_iter().enumerate() {
            let resolve = |end: &str, name: &str| {
                ids.get(name).map(|&p| NodeId(p as u32)).ok_or_else(|| {
                    invalid(format!("link[{i}].{end}"), format!("unknown node {name:?}"))
                })
            };
            let (a, bn) = (resolve("a", &l.a)?, resolve("b", &l.b)?);
            let mut a_to_b = defaults.clone();
            let mut b_to_a = defaults.clone();
            let both = l.both();
            both.apply(&mut a_to_b);
            both.apply(&mut b_to_a);
            if let Some(d) = &l.a_to_b {
                d.apply(&mut a_to_b);
            }
            if let Some(d) = &l.b_to_a {
                d.apply(&mut b_to_a);
            }
            let reservable = |own: Option<Bandwidth>| own.or(l.reservable).map(|r| r.0);
            b.link_spec(LinkSpec {
                a,
                b: bn,
                a_to_b,
                b_to_a,
                up: l.up.unwrap_or(true),
                a_end: EndSpec {
                    name: l.a_name.clone(),
                    v4: l.a_v4,
                    v6: l.a_v6,
                    reservable_bps: reservable(l.a_reservable),
                },
                b_end: EndSpec {
                    name: l.b_name.clone(),
                    v4: l.b_v4,
                    v6: l.b_v6,
                    reservable_bps: reservable(l.b_reservable),
                },
            });
        }
        b.build()
    }
}
