//! MPLS label forwarding (RFC 3031, RFC 3032): labels, the label-forwarding table an LSR keeps,
//! and the dataplane trait that carries it into a forwarding plane.
//!
//! A label-switching engine (RSVP-TE) decides bindings; it describes each change as an
//! [`LfibChange`], applies it to its own [`MemoryLfib`] (what `show labels` lists) and hands it
//! to the driver, which applies it to whatever [`LabelDataplane`] the node has — the Linux
//! kernel's MPLS routes, or nothing more than the in-memory table.

use crate::io::IfIndex;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// IPv4 Explicit NULL (RFC 3032 §2.1): the egress pops it and forwards on the IPv4 header.
pub const IPV4_EXPLICIT_NULL: u32 = 0;
/// IPv6 Explicit NULL (RFC 3032 §2.1).
pub const IPV6_EXPLICIT_NULL: u32 = 2;
/// Implicit NULL (RFC 3032 §2.1): advertised, never sent; the upstream LSR pops instead of
/// swapping (penultimate hop popping).
pub const IMPLICIT_NULL: u32 = 3;
/// The lowest label not reserved by RFC 3032 §2.1 (0–15 are reserved).
pub const FIRST_UNRESERVED: u32 = 16;
/// The highest 20-bit label.
pub const MAX_LABEL: u32 = (1 << 20) - 1;

/// Whether `label` is one an LSR may allocate: 20 bits and not reserved.
pub fn is_allocatable(label: u32) -> bool {
    (FIRST_UNRESERVED..=MAX_LABEL).contains(&label)
}

/// Whether `label` may appear as an outgoing label: allocatable, or one of the null labels.
pub fn is_valid_out_label(label: u32) -> bool {
    is_allocatable(label)
        || matches!(
            label,
            IPV4_EXPLICIT_NULL | IPV6_EXPLICIT_NULL | IMPLICIT_NULL
        )
}

/// Where labelled packets leave: the interface and the neighbour's address on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NextHop {
    /// Outgoing interface.
    pub ifindex: IfIndex,
    /// The next LSR's address on that interface.
    pub addr: IpAddr,
}

/// What an LSR does to a packet arriving with an entry's incoming label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LabelOp {
    /// Replace the top label (an explicit null from downstream is swapped to like any label).
    Swap(u32),
    /// Pop the top label and forward what is underneath (downstream advertised implicit null).
    Pop,
}

/// One incoming-label entry of the LFIB (an ILM, RFC 3031 §3.11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LfibEntry {
    /// The label this node allocated and advertised upstream.
    pub in_label: u32,
    /// What to do with it.
    pub op: LabelOp,
    /// Where the packet goes.
    pub next_hop: NextHop,
}

/// An ingress binding (an FTN, RFC 3031 §3.12): traffic for a tunnel enters the LSP with a label
/// pushed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FtnEntry {
    /// The tunnel's end point (the traffic this binding carries goes there).
    pub dest: IpAddr,
    /// The tunnel's id at the ingress.
    pub tunnel_id: u16,
    /// The label to push; `None` when the next hop is the egress and asked for implicit null.
    pub push: Option<u32>,
    /// Where the packet goes.
    pub next_hop: NextHop,
}

/// One change to a node's label forwarding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LfibChange {
    /// Add or replace the entry for its incoming label.
    Install(LfibEntry),
    /// Remove the entry for this incoming label.
    Remove(u32),
    /// Add or replace the ingress binding of a tunnel.
    InstallFtn(FtnEntry),
    /// Remove the ingress binding of a tunnel.
    RemoveFtn {
        /// The tunnel's end point.
        dest: IpAddr,
        /// The tunnel id.
        tunnel_id: u16,
    },
}

/// A forwarding plane that label bindings are installed into.
pub trait LabelDataplane {
    /// Apply one change. An error leaves the dataplane as it was for that change; the caller
    /// decides whether to retry or report it.
    fn apply(&mut self, change: &LfibChange) -> Result<(), DataplaneError>;
}

/// Why a dataplane refused a change.
#[derive(Debug, thiserror::Error)]
pub enum DataplaneError {
    /// The platform cannot forward MPLS (e.g. a Linux kernel without `CONFIG_MPLS_ROUTING`).
    #[error("MPLS forwarding is not available: {0}")]
    Unsupported(String),
    /// The platform refused the change.
    #[error("dataplane refused the change: {0}")]
    Refused(String),
}

/// The label-forwarding table in memory: incoming-label entries and ingress bindings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryLfib {
    entries: BTreeMap<u32, LfibEntry>,
    ftn: BTreeMap<(IpAddr, u16), FtnEntry>,
}

impl MemoryLfib {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The entry for an incoming label.
    pub fn get(&self, in_label: u32) -> Option<&LfibEntry> {
        self.entries.get(&in_label)
    }

    /// Incoming-label entries in label order.
    pub fn entries(&self) -> impl Iterator<Item = &LfibEntry> {
        self.entries.values()
    }

    /// The ingress binding of a tunnel.
    pub fn ftn(&self, dest: IpAddr, tunnel_id: u16) -> Option<&FtnEntry> {
        self.ftn.get(&(dest, tunnel_id))
    }

    /// Ingress bindings, by end point and tunnel id.
    pub fn ftns(&self) -> impl Iterator<Item = &FtnEntry> {
        self.ftn.values()
    }

    /// Number of incoming-label entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table has neither entries nor bindings.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.ftn.is_empty()
    }

    /// Apply a change; returns whether it changed anything (installing what is already there,
    /// or removing what is not, does not).
    pub fn update(&mut self, change: &LfibChange) -> bool {
        match *change {
            LfibChange::Install(e) => self.entries.insert(e.in_label, e) != Some(e),
            LfibChange::Remove(l) => self.entries.remove(&l).is_some(),
            LfibChange::InstallFtn(f) => self.ftn.insert((f.dest, f.tunnel_id), f) != Some(f),
            LfibChange::RemoveFtn { dest, tunnel_id } => {
                self.ftn.remove(&(dest, tunnel_id)).is_some()
            }
        }
    }
}

impl LabelDataplane for MemoryLfib {
    fn apply(&mut self, change: &LfibChange) -> Result<(), DataplaneError> {
        self.update(change);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop() -> NextHop {
        NextHop {
            ifindex: IfIndex(2),
            addr: "10.0.0.2".parse().unwrap(),
        }
    }

    #[test]
    fn reserved_labels_are_not_allocatable() {
        assert!(!is_allocatable(0) && !is_allocatable(15) && !is_allocatable(1 << 20));
        assert!(is_allocatable(16) && is_allocatable(MAX_LABEL));
        assert!(is_valid_out_label(IMPLICIT_NULL) && is_valid_out_label(IPV6_EXPLICIT_NULL));
        assert!(!is_valid_out_label(1) && !is_valid_out_label(7));
    }

    #[test]
    fn updates_report_whether_anything_changed() {
        let mut t = MemoryLfib::new();
        let e = LfibEntry {
            in_label: 100,
            op: LabelOp::Swap(200),
            next_hop: hop(),
        };
        assert!(t.update(&LfibChange::Install(e)));
        assert!(!t.update(&LfibChange::Install(e)));
        let e2 = LfibEntry {
            op: LabelOp::Pop,
            ..e
        };
        assert!(t.update(&LfibChange::Install(e2)));
        assert_eq!(t.get(100), Some(&e2));
        assert!(t.update(&LfibChange::Remove(100)));
        assert!(!t.update(&LfibChange::Remove(100)));
        let f = FtnEntry {
            dest: "10.9.9.9".parse().unwrap(),
            tunnel_id: 7,
            push: Some(300),
            next_hop: hop(),
        };
        assert!(t.update(&LfibChange::InstallFtn(f)));
        assert_eq!(t.ftn(f.dest, 7), Some(&f));
        assert!(t.update(&LfibChange::RemoveFtn {
            dest: f.dest,
            tunnel_id: 7
        }));
        assert!(t.is_empty());
    }
}
