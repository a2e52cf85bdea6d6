//! Per-session reservation state (RFC 5974 §5.2.1): keyed by Session ID, with the flow, the
//! peers on either side, the RSNs, outstanding RIIs, the state lifetime and the traffic-control
//! reservation.

use crate::wire::{BoundSessionId, PacketClassifier, Qspec, Rii, Rsn};
use pathwise_core::io::IfIndex;
use pathwise_core::tc::{FlowClassifier, TcHandle};
use pathwise_core::time::{Duration, Instant};
use pathwise_gist::nslp::{Direction, SiiHandle};
use pathwise_gist::wire::PathCoupledMri;
use std::cmp::Ordering;
use std::net::IpAddr;

/// What this node is for a session (RFC 5974 §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// QoS NSIS Initiator: sent the first RESERVE and refreshes it.
    Qni,
    /// QoS NSIS Entity on the way: keeps state from its upstream peer, refreshes its downstream.
    Qne,
    /// QoS NSIS Responder: the last node of the RESERVE's path.
    Qnr,
}

/// How the reservation was initiated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Initiation {
    /// RFC 5974 §4.1: RESERVE from the data sender, downstream.
    Sender,
    /// RFC 5974 §4.3: QUERY with RESERVE-INIT from the data sender, RESERVE back upstream.
    Receiver,
}

impl Initiation {
    /// The direction RESERVEs travel: towards the QNR.
    pub fn toward_qnr(self) -> Direction {
        match self {
            Initiation::Sender => Direction::Downstream,
            Initiation::Receiver => Direction::Upstream,
        }
    }

    /// The initiation whose RESERVEs travel `d`.
    pub fn of(d: Direction) -> Self {
        match d {
            Direction::Downstream => Initiation::Sender,
            Direction::Upstream => Initiation::Receiver,
        }
    }
}

/// The opposite direction.
pub fn reverse(d: Direction) -> Direction {
    match d {
        Direction::Downstream => Direction::Upstream,
        Direction::Upstream => Direction::Downstream,
    }
}

/// A request this node put an RII in and waits to see answered (RFC 5974 §5.2.4, §5.3.2).
#[derive(Clone, Debug)]
pub struct OwnRequest {
    /// The RII.
    pub rii: Rii,
    /// The message, resent unchanged.
    pub bytes: Vec<u8>,
    /// Which way it went.
    pub direction: Direction,
    /// When it was first sent.
    pub first_sent: Instant,
    /// The wait before the next retransmission (doubling).
    pub wait: Duration,
}

/// The reservation state of one session at this node.
#[derive(Clone, Debug)]
pub struct Reservation {
    /// The flow (the MRI in its downstream form).
    pub flow: PathCoupledMri,
    /// This node's role.
    pub role: Role,
    /// Sender- or receiver-initiated.
    pub initiation: Initiation,
    /// The peer RESERVEs come from (its SII-Handle); `None` at the QNI.
    pub prev_peer: Option<SiiHandle>,
    /// The previous peer this node moved away from after a route change: its plain refreshes
    /// are ignored (§5.2.5.4, no fall-back to the old upstream peer).
    pub abandoned_peer: Option<SiiHandle>,
    /// The old upstream peer told of an upstream route change by a NOTIFY (RFC 5974
    /// §5.2.5.3), so that GIST's reports alternating between the old and the new peer while
    /// the old one's routing state lives (§5.2.5.4) tell it once.
    pub notified_peer: Option<SiiHandle>,
    /// The peer RESERVEs go to, as GIST last reported it.
    pub next_peer: Option<SiiHandle>,
    /// The peer towards the QNR this node moved away from after a route change: GIST
    /// naming it again as its upstream peer is not taken for another change (§5.2.5.4).
    pub abandoned_next: Option<SiiHandle>,
    /// The peer towards the QNR of the branch left after a route change, until the RESPONSE to
    /// the RESERVE sent along the new path arrives: then a tearing RESERVE goes to it,
    /// explicitly routed by its SII-Handle (RFC 5974 §5.2.5.2, §3.2.12).
    pub old_branch: Option<SiiHandle>,
    /// The RSN (and epoch) last accepted from the previous peer.
    pub rsn_in: Option<Rsn>,
    /// This node's own RSN for the session (§5.3.1), sent towards the QNR.
    pub rsn_out: u32,
    /// The previous peer's refresh period R (REFRESH-PERIOD, §5.3.4).
    pub refresh_in: Duration,
    /// The QSPEC as last sent towards the QNR (or received, at the QNR).
    pub qspec: Qspec,
    /// The QSPEC as it reached this node (as asked for, at the QNI), before this hop's
    /// processing: admitted again when the flow moves to another interface.
    pub requested: Qspec,
    /// PACKET-CLASSIFIER.
    pub packet_classifier: Option<PacketClassifier>,
    /// BOUND-SESSION-IDs, copied into every message of the session (§5.3.3).
    pub bound: Vec<BoundSessionId>,
    /// The traffic-control reservation on the flow's outgoing interface.
    pub tc: Option<(IfIndex, TcHandle)>,
    /// Rate reserved, bytes per second (0 where the flow leaves no interface here).
    pub rate: f64,
    /// The next refresh towards the QNR must carry the full QSPEC (a changed reservation, a
    /// new peer, or a peer that asked for it, §5.4.1).
    pub full_refresh: bool,
    /// A request of ours awaiting its RESPONSE.
    pub own_request: Option<OwnRequest>,
    /// RIIs of others this node forwarded, to pass their RESPONSEs on (§5.3.2).
    pub forwarded_riis: Vec<Rii>,
    /// The RII this node last passed on in a refreshing RESERVE, and when (a request coming
    /// round again sooner than a retransmission could is a routing loop, §5.2.4).
    pub rii_forwarded_at: Option<(Rii, Instant)>,
    /// Receiver-initiated: GIST lost the routing state towards the QNR (no QUERY passes here
    /// any more). Refreshes then no longer extend the state, which goes at its lifetime unless
    /// GIST finds a peer that way again.
    pub reverse_lost: bool,
    /// BREAK flag to set on the messages this node generates (§5.4.1).
    pub break_flag: bool,
    /// When the next refresh goes out.
    pub refresh_at: Option<Instant>,
    /// When the state lapses without a refresh.
    pub expires_at: Option<Instant>,
    /// When the own request is retransmitted.
    pub retry_at: Option<Instant>,
}

impl Reservation {
    /// The packets the reservation applies to: the MRI's flow fields (RFC 5974 §5.1.3.5: the
    /// PACKET-CLASSIFIER says which of them).
    pub fn classifier(&self) -> FlowClassifier {
        classifier(&self.flow, self.packet_classifier)
    }
}

/// The classifier of a flow, with the fields a PACKET-CLASSIFIER names (all, without one).
pub fn classifier(flow: &PathCoupledMri, pc: Option<PacketClassifier>) -> FlowClassifier {
    let has = |m| pc.is_none_or(|p| p.has(m));
    let full = if flow.source.is_ipv4() { 32 } else { 128 };
    let src: Option<IpAddr> = (has(PacketClassifier::SOURCE_ADDRESS) && flow.source_prefix == full)
        .then_some(flow.source);
    FlowClassifier {
        dst: flow.destination,
        src,
        protocol: flow
            .protocol
            .filter(|_| has(PacketClassifier::PROTOCOL))
            .unwrap_or(0),
        dst_port: flow
            .dest_port
            .filter(|_| has(PacketClassifier::DESTINATION_PORT))
            .unwrap_or(0),
        src_port: flow
            .source_port
            .filter(|_| has(PacketClassifier::SOURCE_PORT))
            .unwrap_or(0),
        flow_label: flow
            .flow_label
            .filter(|_| has(PacketClassifier::FLOW_LABEL))
            .unwrap_or(0),
    }
}

/// RSN comparison in serial number arithmetic (RFC 5974 §5.3.1, RFC 1982, SERIAL_BITS = 32).
pub fn rsn_cmp(a: u32, b: u32) -> Ordering {
    match a.wrapping_sub(b) {
        0 => Ordering::Equal,
        d if d < 0x8000_0000 => Ordering::Greater,
        _ => Ordering::Less,
    }
}

/// Which of a session's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TimerKind {
    /// Send a refresh towards the QNR.
    Refresh,
    /// The state lifetime runs out.
    Expire,
    /// Retransmit the own request.
    Retry,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsn_wraps() {
        assert_eq!(rsn_cmp(1, 0), Ordering::Greater);
        assert_eq!(rsn_cmp(0, u32::MAX), Ordering::Greater);
        assert_eq!(rsn_cmp(u32::MAX, 0), Ordering::Less);
        assert_eq!(rsn_cmp(7, 7), Ordering::Equal);
    }

    #[test]
    fn classifier_takes_the_fields_named() {
        let mut flow =
            PathCoupledMri::flow("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        flow.protocol = Some(17);
        flow.dest_port = Some(5001);
        let all = classifier(&flow, None);
        assert_eq!((all.protocol, all.dst_port), (17, 5001));
        assert_eq!(all.src, Some("10.0.0.1".parse().unwrap()));
        let only_dst = classifier(
            &flow,
            Some(PacketClassifier(PacketClassifier::DESTINATION_ADDRESS)),
        );
        assert_eq!(
            (only_dst.protocol, only_dst.dst_port, only_dst.src),
            (0, 0, None)
        );
    }
}
