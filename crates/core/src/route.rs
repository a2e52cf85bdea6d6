//! Routes as a driver reports them to an engine.
//!
//! Engines keep their own mirror of the routes they need (a [`crate::fib::Fib`] for unicast, a
//! table for multicast trees) and are told of every change through
//! [`crate::engine::Engine::handle_route_change`]: no routing syscall per message, and a changed
//! route is the trigger for local repair (RFC 2205 §3.6).

use crate::io::IfIndex;
use ipnet::IpNet;
use std::net::IpAddr;

/// A unicast route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// The destination prefix.
    pub prefix: IpNet,
    /// The next-hop router, `None` for a directly connected prefix.
    pub next_hop: Option<IpAddr>,
    /// The outgoing interface.
    pub ifindex: IfIndex,
    /// Route metric (lower is preferred); informational.
    pub metric: u32,
}

/// A multicast forwarding entry for one (source, group) pair, as a source-specific tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MulticastRoute {
    /// The sender's address.
    pub source: IpAddr,
    /// The group address.
    pub group: IpAddr,
    /// The interface data from `source` arrives on (`None` at the source's own node).
    pub iif: Option<IfIndex>,
    /// The interfaces data is forwarded out of, downstream on the tree.
    pub oifs: Vec<IfIndex>,
    /// Whether this node itself is a member of the group (data is delivered locally).
    pub local_member: bool,
}

/// One change to a node's routes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteChange {
    /// A unicast route was added or replaced (same prefix).
    Add(Route),
    /// The unicast route for this prefix was removed.
    Remove(IpNet),
    /// A multicast entry was added or replaced (same source and group).
    AddMulticast(MulticastRoute),
    /// The multicast entry for (source, group) was removed.
    RemoveMulticast {
        /// The sender's address.
        source: IpAddr,
        /// The group address.
        group: IpAddr,
    },
}
