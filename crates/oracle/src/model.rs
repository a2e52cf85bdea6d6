//! The oracle database as configuration: what the TOML file and the seed-format importer load
//! into, what [`TopologySnapshot::build`](crate::TopologySnapshot::build) compiles and what
//! [`TopologySnapshot::to_config`](crate::TopologySnapshot::to_config) (`dump`) writes back out.
//!
//! Units follow the seed (§4.6): bandwidth in Mbit/s, latency in milliseconds, weights as the
//! interior routing protocol's link metric. Links are directed (§4.5.1: "the links defined are
//! asynchronous and specify the outgoing properties"): a router's NIC carries the properties of
//! the link leaving through it.

use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// Default for `max_routers` (the seed's `-maxrouter` default is 100; ours is roomier).
pub const DEFAULT_MAX_ROUTERS: u32 = 100_000;
/// Default TTL the server writes into answers, in seconds (seed §4.8.1: "a static number of 60").
pub const DEFAULT_TTL: u16 = 60;

/// A whole oracle database.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OracleConfig {
    /// Global settings (seed Fig. 10 `routers`, `threads`; the CLI's `-iroutes`).
    #[serde(default)]
    pub oracle: Settings,
    /// The internal routers (seed Fig. 10 `router` lines and Fig. 11 router files).
    #[serde(default, rename = "router", skip_serializing_if = "Vec::is_empty")]
    pub routers: Vec<RouterConfig>,
    /// Networks attached to internal routers (seed `snetwork`), `[prefix, router, nic]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_networks: Vec<SourceNetwork>,
    /// Networks reached through exit routers (seed `enetwork`), one entry per (prefix, exit):
    /// `[prefix, exit router, nic, AS number, AS distance]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub external_networks: Vec<ExternalNetwork>,
}

/// Global settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Most routers the database accepts (seed `routers`).
    pub max_routers: u32,
    /// Worker threads the server should run (seed `threads`); the library does not use it.
    pub threads: u16,
    /// How internal routes are found (seed `-iroutes expl|impl`).
    pub routing: RouteMode,
    /// Which rows of the router-pair path cache are kept.
    pub path_cache: CacheScope,
    /// The oracle's own AS number, reported as `as_number` for internal destinations.
    pub local_as: u32,
    /// TTL written into answers, in seconds.
    pub ttl: u16,
    /// The ranking: a built-in name (`seed`, `latency-first`, `fewest-hops`, `lowest-weight`,
    /// `widest-bandwidth`) or a cost expression over the path metrics (see [`crate::rank`]).
    pub ranking: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_routers: DEFAULT_MAX_ROUTERS,
            threads: 1,
            routing: RouteMode::Computed,
            path_cache: CacheScope::AllPairs,
            local_as: 0,
            ttl: DEFAULT_TTL,
            ranking: "seed".to_owned(),
        }
    }
}

/// How internal routes are found (seed §4.5.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouteMode {
    /// Shortest paths over link weights, ties to fewer hops, then to the lower neighbour address
    /// (seed `-iroutes impl`).
    #[default]
    Computed,
    /// Only the `route` entries of the router files (seed `-iroutes expl`).
    Explicit,
}

/// Which rows of the path cache are built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheScope {
    /// A row for every router: the seed's cache of every router pair (§4.5.1).
    #[default]
    AllPairs,
    /// Rows only for routers with a source network attached. A query's source is always located
    /// in a source network, so these are the only rows ranking reads; memory is then
    /// `source routers × routers` instead of `routers²` (for very large networks).
    SourceRouters,
}

/// Administrative state of a router or NIC (seed `UP`/`DOWN`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// In service.
    #[default]
    Up,
    /// Out of service: no path crosses it.
    Down,
}

impl State {
    /// Whether the state is [`State::Up`].
    pub fn is_up(self) -> bool {
        self == State::Up
    }
}

/// One internal router.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterConfig {
    /// The router's identifying (loopback) address.
    pub address: IpAddr,
    /// Number of NICs (seed `router ADDR COUNT`); NIC indices are `0..nic_count`, at most 256.
    pub nic_count: u16,
    /// Administrative state.
    #[serde(default)]
    pub state: State,
    /// Configured NICs.
    #[serde(default, rename = "nic", skip_serializing_if = "Vec::is_empty")]
    pub nics: Vec<NicConfig>,
    /// Explicit routes to other routers (seed `route NIC ROUTER`), used in
    /// [`RouteMode::Explicit`].
    #[serde(default, rename = "route", skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteConfig>,
}

/// One NIC of a router: a point-to-point interface (seed `nic INDEX LOCAL PEER STATE`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicConfig {
    /// Index on the router.
    pub index: u8,
    /// This side's address.
    pub local: IpAddr,
    /// The far side's address; a link exists when another router has a NIC with this local
    /// address.
    pub peer: IpAddr,
    /// Administrative state.
    #[serde(default)]
    pub state: State,
    /// Properties of the link leaving through this NIC (seed `link`); without them no link
    /// leaves through this NIC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkConfig>,
}

/// Properties of one direction of a link (seed `link NIC LATENCY BANDWIDTH CONGESTION WEIGHT`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Bandwidth in Mbit/s (positive, finite).
    pub bandwidth: f64,
    /// Latency in milliseconds (non-negative, finite).
    pub latency: f64,
    /// Interior routing weight (at most [`MAX_LINK_WEIGHT`](crate::MAX_LINK_WEIGHT)).
    pub weight: u32,
    /// Congestion as a fraction of capacity in `0..=1` (the seed defines it and keeps it 0).
    #[serde(default)]
    pub congestion: f64,
}

/// An explicit route: to reach `destination` (a router address), leave through `nic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    /// Outgoing NIC.
    pub nic: u8,
    /// Destination router address.
    pub destination: IpAddr,
}

/// A network attached to an internal router (seed `snetwork PREFIX ROUTER NIC`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "(IpNet, IpAddr, u8)", into = "(IpNet, IpAddr, u8)")]
pub struct SourceNetwork {
    /// The network.
    pub prefix: IpNet,
    /// The router it is attached to.
    pub router: IpAddr,
    /// The NIC it hangs off.
    pub nic: u8,
}

impl From<(IpNet, IpAddr, u8)> for SourceNetwork {
    fn from((prefix, router, nic): (IpNet, IpAddr, u8)) -> Self {
        SourceNetwork {
            prefix,
            router,
            nic,
        }
    }
}

impl From<SourceNetwork> for (IpNet, IpAddr, u8) {
    fn from(n: SourceNetwork) -> Self {
        (n.prefix, n.router, n.nic)
    }
}

/// A network outside the AS, reached through an exit router
/// (seed `enetwork PREFIX ROUTER NIC ASNUMBER ASDISTANCE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(
    from = "(IpNet, IpAddr, u8, u32, u16)",
    into = "(IpNet, IpAddr, u8, u32, u16)"
)]
pub struct ExternalNetwork {
    /// The network.
    pub prefix: IpNet,
    /// The exit (border) router that knows it.
    pub router: IpAddr,
    /// The exit's NIC towards the neighbouring AS.
    pub nic: u8,
    /// The AS the network belongs to (origin AS).
    pub as_number: u32,
    /// AS hops from the exit to the network.
    pub as_distance: u16,
}

impl From<(IpNet, IpAddr, u8, u32, u16)> for ExternalNetwork {
    fn from((prefix, router, nic, as_number, as_distance): (IpNet, IpAddr, u8, u32, u16)) -> Self {
        ExternalNetwork {
            prefix,
            router,
            nic,
            as_number,
            as_distance,
        }
    }
}

impl From<ExternalNetwork> for (IpNet, IpAddr, u8, u32, u16) {
    fn from(n: ExternalNetwork) -> Self {
        (n.prefix, n.router, n.nic, n.as_number, n.as_distance)
    }
}
