//! Explicit routes (RFC 3209 §4.3.4): which interface an LSP's Path leaves by, and the
//! EXPLICIT_ROUTE passed on.

use super::PsbTe;
use crate::engine::state::Oifs;
use crate::engine::{RsvpEngine, TrafficControl};
use crate::wire::Session;
use crate::wire::error::error_code::routing;
use crate::wire::te::{AbstractNode, EroSubobject, ExplicitRoute};
use pathwise_core::io::IfIndex;
use std::net::IpAddr;

/// Where an explicit route leads from this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EroStep {
    /// Every subobject is behind us: route towards the tunnel end point (§4.3.4.1 step 2: "the
    /// EXPLICIT_ROUTE object is removed from the Path message").
    End,
    /// The next hop leaves by `ifindex`; `ero_out` is the route to pass on.
    Hop {
        /// Outgoing interface.
        ifindex: IfIndex,
        /// The EXPLICIT_ROUTE for the next hop.
        ero_out: ExplicitRoute,
    },
}

/// Whether `addr` is within `prefix`/`len` (bits beyond the prefix ignored, §4.3.3.2).
pub fn prefix_contains(prefix: IpAddr, len: u8, addr: IpAddr) -> bool {
    match (prefix, addr) {
        (IpAddr::V4(p), IpAddr::V4(a)) => {
            let len = u32::from(len.min(32));
            let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
            u32::from(p) & mask == u32::from(a) & mask
        }
        (IpAddr::V6(p), IpAddr::V6(a)) => {
            let len = u32::from(len.min(128));
            let mask = u128::MAX.checked_shl(128 - len).unwrap_or(0);
            u128::from(p) & mask == u128::from(a) & mask
        }
        _ => false,
    }
}

/// The prefix an IPv4 or IPv6 subobject names.
fn prefix_of(n: &AbstractNode) -> Option<(IpAddr, u8)> {
    match *n {
        AbstractNode::Ipv4Prefix { addr, prefix_len } => Some((IpAddr::V4(addr), prefix_len)),
        AbstractNode::Ipv6Prefix { addr, prefix_len } => Some((IpAddr::V6(addr), prefix_len)),
        _ => None,
    }
}

/// A strict subobject naming one address.
pub fn strict_hop(addr: IpAddr) -> EroSubobject {
    EroSubobject {
        loose: false,
        node: host_node(addr),
    }
}

/// An abstract node of one address.
pub fn host_node(addr: IpAddr) -> AbstractNode {
    match addr {
        IpAddr::V4(addr) => AbstractNode::Ipv4Prefix {
            addr,
            prefix_len: 32,
        },
        IpAddr::V6(addr) => AbstractNode::Ipv6Prefix {
            addr,
            prefix_len: 128,
        },
    }
}

impl<T: TrafficControl> RsvpEngine<T> {
    /// Whether this node is part of an abstract node (§4.3.4.1): a prefix holding one of its
    /// addresses. An AS number is never taken to include us: the engine has no AS of its own.
    fn in_abstract_node(&self, n: &AbstractNode) -> bool {
        prefix_of(n).is_some_and(|(p, len)| self.local.keys().any(|a| prefix_contains(p, len, *a)))
    }

    /// Process an explicit route (§4.3.4.1–§4.3.4.3). A transit node must be in the first
    /// abstract node ("Bad initial subobject" otherwise); the head end starts with the route as
    /// configured, which may or may not name itself first. Subobjects naming this node are
    /// removed; the next one picks the next hop: a strict hop must be adjacent (reached over
    /// a connected route), a loose one is followed along the routing table, and when the route's
    /// next hop is not the loose node itself it is inserted in front as a strict hop — loose-hop
    /// expansion, one hop at a time. Errors are Routing Problem (code 24) values.
    pub(crate) fn process_ero(&self, ero: &ExplicitRoute, head_end: bool) -> Result<EroStep, u16> {
        let subs = ero.subobjects.as_slice();
        let mut i = 0;
        if !head_end {
            let Some(first) = subs.first() else {
                return Err(routing::BAD_EXPLICIT_ROUTE_OBJECT);
            };
            if !self.in_abstract_node(&first.node) {
                return Err(routing::BAD_INITIAL_SUBOBJECT);
            }
            i = 1;
        }
        while subs.get(i).is_some_and(|s| self.in_abstract_node(&s.node)) {
            i += 1;
        }
        let rest = &subs[i..];
        let Some(next) = rest.first() else {
            return Ok(EroStep::End);
        };
        let bad_node = if next.loose {
            routing::BAD_LOOSE_NODE
        } else {
            routing::BAD_STRICT_NODE
        };
        let (addr, len) = match &next.node {
            AbstractNode::AutonomousSystem(_) => return Err(bad_node),
            AbstractNode::Other { .. } => return Err(routing::BAD_EXPLICIT_ROUTE_OBJECT),
            n => prefix_of(n).ok_or(routing::BAD_EXPLICIT_ROUTE_OBJECT)?,
        };
        let Some((_, route)) = self.fib.lookup(addr) else {
            return Err(bad_node);
        };
        let via = route.next_hop.filter(|g| !prefix_contains(addr, len, *g));
        let mut out = Vec::with_capacity(rest.len() + 1);
        match (next.loose, via) {
            // §4.3.4.3: a strict next hop must be directly connected.
            (false, Some(_)) => return Err(routing::BAD_STRICT_NODE),
            (true, Some(g)) => out.push(strict_hop(g)),
            (_, None) => {}
        }
        out.extend(rest.iter().cloned());
        Ok(EroStep::Hop {
            ifindex: route.ifindex,
            ero_out: ExplicitRoute { subobjects: out },
        })
    }

    /// Where an LSP's Path goes: along its explicit route while it has one, then by routing to
    /// the tunnel end point; also the route to pass on. An LSP with nowhere to go is an error
    /// ("No route available toward destination", §4.5).
    pub(crate) fn lsp_oifs(
        &self,
        session: &Session,
        sender: IpAddr,
        te: &PsbTe,
        iif: Option<IfIndex>,
    ) -> Result<(Oifs, Option<ExplicitRoute>), u16> {
        if let Some(ero) = &te.ero
            && let EroStep::Hop { ifindex, ero_out } = self.process_ero(ero, iif.is_none())?
        {
            return Ok((Oifs::One(Some(ifindex)), Some(ero_out)));
        }
        let oifs = self.route_oifs(session, sender, iif);
        if oifs.is_empty() {
            return Err(routing::NO_ROUTE_AVAILABLE);
        }
        Ok((oifs, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::net::Ipv4Addr;

    #[test]
    fn prefixes() {
        let p = IpAddr::V4(Ipv4Addr::new(10, 1, 2, 0));
        assert!(prefix_contains(p, 24, "10.1.2.77".parse().unwrap()));
        assert!(!prefix_contains(p, 24, "10.1.3.1".parse().unwrap()));
        assert!(prefix_contains(p, 0, "192.0.2.1".parse().unwrap()));
        assert!(!prefix_contains(p, 32, "10.1.2.1".parse().unwrap()));
        assert!(prefix_contains(p, 200, p));
        assert!(!prefix_contains(p, 0, "::1".parse().unwrap()));
        let q: IpAddr = "2001:db8::".parse().unwrap();
        assert!(prefix_contains(q, 32, "2001:db8:1::1".parse().unwrap()));
        assert!(!prefix_contains(q, 33, "2001:db8:8000::1".parse().unwrap()));
    }
}
