//! Counters and the optional packet trace.
//!
//! Every packet that does not reach an engine or a next hop is counted exactly once, by
//! [`DropReason`], where it died: on the link direction for link-level fates (loss, queue,
//! MTU, link down), on the node otherwise. [`crate::Sim::drops`] sums them all.

use crate::topology::NodeId;
use core::fmt;
use pathwise_core::io::IfIndex;
use pathwise_core::time::Instant;
use std::net::IpAddr;

/// Why the simulator dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropReason {
    /// No unicast route, or no multicast tree entry, for the destination.
    NoRoute,
    /// The TTL / hop limit ran out (or an engine sent with TTL 0).
    TtlExpired,
    /// The link was down when the packet was sent or went down while it was in flight.
    LinkDown,
    /// The receiving node had crashed.
    NodeDown,
    /// Lost on the wire ([`crate::LinkParams::loss`]).
    Loss,
    /// The link's drop-tail queue was full.
    QueueFull,
    /// Larger than the link MTU.
    MtuExceeded,
    /// Addressed to a node that runs no engine.
    NoEngine,
    /// In transit at a host (hosts do not forward).
    NotRouter,
    /// An engine named an interface its node does not have.
    NoInterface,
    /// A multicast packet arrived on an interface other than its tree's incoming interface.
    RpfFailure,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; 11] = [
        DropReason::NoRoute,
        DropReason::TtlExpired,
        DropReason::LinkDown,
        DropReason::NodeDown,
        DropReason::Loss,
        DropReason::QueueFull,
        DropReason::MtuExceeded,
        DropReason::NoEngine,
        DropReason::NotRouter,
        DropReason::NoInterface,
        DropReason::RpfFailure,
    ];

    fn index(self) -> usize {
        self as usize
    }
}

/// Drop counters, one per [`DropReason`].
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Drops([u64; DropReason::ALL.len()]);

impl Drops {
    /// Packets dropped for `reason`.
    pub fn get(&self, reason: DropReason) -> u64 {
        self.0[reason.index()]
    }

    /// Packets dropped for any reason.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The non-zero counters.
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL
            .iter()
            .map(|&r| (r, self.get(r)))
            .filter(|&(_, n)| n > 0)
    }

    pub(crate) fn count(&mut self, reason: DropReason) {
        self.0[reason.index()] += 1;
    }
}

impl fmt::Debug for Drops {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Counters of one node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Datagrams the node's engine sent (or [`crate::Sim::send`] injected).
    pub originated: u64,
    /// Their IP bytes.
    pub originated_bytes: u64,
    /// Datagrams handed to the engine because they were addressed to the node or its groups.
    pub delivered: u64,
    /// Their IP bytes.
    pub delivered_bytes: u64,
    /// Transit datagrams with router alert handed to the engine instead of being forwarded.
    pub intercepted: u64,
    /// Datagrams (copies, for multicast) forwarded to a next hop.
    pub forwarded: u64,
    /// Their IP bytes.
    pub forwarded_bytes: u64,
    /// Datagrams dropped at this node.
    pub drops: Drops,
}

/// Counters of one link direction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets put on the wire (lost ones included).
    pub sent: u64,
    /// Their bytes.
    pub sent_bytes: u64,
    /// Packets that reached the far end (duplicates included).
    pub arrived: u64,
    /// Their bytes.
    pub arrived_bytes: u64,
    /// Packets that were duplicated.
    pub duplicated: u64,
    /// Packets that were held back to be reordered.
    pub reordered: u64,
    /// Packets dropped on this link direction (loss, queue, MTU, link down).
    pub drops: Drops,
}

/// What became of a packet at one hop (see [`PacketRecord`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Arrived and was handed to the receiving node's engine as addressed to it.
    Delivered,
    /// Arrived in transit and was handed to the engine because of its router alert.
    Intercepted,
    /// Arrived and was forwarded (multicast: and possibly also delivered locally).
    Forwarded,
    /// Multicast that was both delivered to a local member and forwarded.
    DeliveredAndForwarded,
    /// Dropped, on the link or at the receiving node.
    Dropped(DropReason),
}

/// A traced packet with its contents ([`crate::SimConfig::capture`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    /// Where and when it was seen.
    pub record: PacketRecord,
    /// The transport above IP.
    pub transport: pathwise_core::io::Transport,
    /// The transport payload.
    pub payload: Vec<u8>,
}

/// One packet crossing (or failing to cross) one hop; recorded when
/// [`crate::SimConfig::trace`] is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketRecord {
    /// When its fate at this hop was decided (on arrival, or on sending for link-level drops).
    pub time: Instant,
    /// The node that sent it over this hop (or where it was dropped before any link).
    pub from: NodeId,
    /// The interface it left `from` by (`IfIndex(0)` when it never reached a link).
    pub from_ifindex: IfIndex,
    /// The node at the far end of the hop, if a link was chosen.
    pub to: Option<NodeId>,
    /// IP source.
    pub src: IpAddr,
    /// IP destination.
    pub dst: IpAddr,
    /// The Router Alert option's value, if present.
    pub router_alert: Option<u16>,
    /// TTL as sent over this hop.
    pub ttl: u8,
    /// IP length in bytes.
    pub len: u32,
    /// What happened.
    pub outcome: Outcome,
}
