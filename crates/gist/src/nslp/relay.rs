//! The relay NSLP: makes a node a GIST-aware hop for an NSLP it does not understand.
//!
//! RFC 5971 §3.5: nodes become GIST peers when one issues a Query and another answers it; a
//! node hosting the NSLP decides whether to peer (§4.3.2), one that does not forwards the Query
//! transparently (§4.3.4). An NSLP message therefore travels end to end as a chain of GIST hops
//! between the nodes that host its NSLP (§4.3, Figure 4): at each, GIST delivers the payload up
//! (RecvMessage, B.2) and the NSLP sends it on (SendMessage, B.1). An NSLP that wants to be on
//! the path answers the Routing-State-Check of a Query with "peer" (§4.3.2 option 1), so GIST
//! sets up routing state with the querying node; every later message with an NSLP payload is
//! delivered to it (§4.3.2, last paragraph), and what it sends goes out under the same MRI and
//! Session ID to the next peer in the direction the MRI's D flag names (§4.3.3, §5.8.1.1).
//!
//! This NSLP does exactly that and nothing else, for one NSLPID: it peers with every Query and
//! passes each payload on unchanged, in the direction it was going (downstream messages to the
//! downstream peer, setting that routing state up hop by hop; upstream messages, such as the
//! NSLP's answers and the data piggybacked on a Response, to the upstream peer). The GIST hop
//! count is carried across, one less (§4.3.3: NSLPs "can preserve it on outgoing messages as
//! they are forwarded further along the path", the lightweight loop control of NSLPs that have
//! none of their own). Transfer attributes are kept: a message that came reliably or securely
//! goes on the same way.
//!
//! A relay keeps no per-session state: GIST's routing state is the state. A message that reaches
//! the end of its flow at a relay (the relay is the flow's source or destination) has nowhere
//! to go and is dropped; every drop is counted by reason ([`RelayStats`]).

use super::{
    ApiError, Direction, GistApi, MessageStatus, NetworkNotification, NotificationKind, Nslp,
    RecvMessage, RoutingDecision, SendMessage,
};
use core::any::Any;
use pathwise_core::time::Instant;

/// Counters of a relay NSLP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RelayStats {
    /// Queries peered with (Routing-State-Checks answered "peer").
    pub peered: u64,
    /// Payloads passed on towards the flow's destination.
    pub forwarded_downstream: u64,
    /// Payloads passed on towards the flow's source.
    pub forwarded_upstream: u64,
    /// Dropped: the flow ends at this node, so there is no next hop to pass it to.
    pub dropped_at_flow_end: u64,
    /// Dropped: the GIST hop count would reach zero (§4.3.3 loop control).
    pub dropped_hop_limit: u64,
    /// Dropped: GIST refused the SendMessage (no routing state upstream, no local address…).
    pub dropped_refused: u64,
    /// Passed on but not delivered: a MessageStatus with an error came back (B.3).
    pub delivery_failures: u64,
    /// Routing state lost or communication with a peer failed (B.4), seen.
    pub network_failures: u64,
}

impl RelayStats {
    /// Drops by reason, for counters and metrics.
    pub fn drops(&self) -> [(&'static str, u64); 4] {
        [
            ("at_flow_end", self.dropped_at_flow_end),
            ("hop_limit", self.dropped_hop_limit),
            ("refused", self.dropped_refused),
            ("not_delivered", self.delivery_failures),
        ]
    }
}

/// The relay NSLP for one NSLPID (see the module documentation).
#[derive(Debug)]
pub struct RelayNslp {
    nslpid: u16,
    stats: RelayStats,
}

impl RelayNslp {
    /// A relay for `nslpid`.
    pub fn new(nslpid: u16) -> Self {
        RelayNslp {
            nslpid,
            stats: RelayStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> RelayStats {
        self.stats
    }

    /// Pass `m`'s payload on in the direction it travels.
    fn pass_on(&mut self, now: Instant, gist: &mut dyn GistApi, m: RecvMessage) {
        let direction = Direction::of(&m.mri);
        // The far end of the flow in that direction: if it is this node, nobody is beyond.
        let end = match direction {
            Direction::Downstream => m.mri.destination(),
            Direction::Upstream => m.mri.source(),
        };
        if end.is_some_and(|a| gist.is_local(a)) {
            self.stats.dropped_at_flow_end += 1;
            tracing::debug!(
                nslpid = self.nslpid,
                "relay: message at the end of its flow"
            );
            return;
        }
        // §4.3.3: keep the incoming hop count, one less; never send zero.
        let hops = m.gist_hops.saturating_sub(1);
        if hops == 0 {
            self.stats.dropped_hop_limit += 1;
            return;
        }
        let mut s = SendMessage::new(self.nslpid, m.session_id, m.mri, m.nslp_data);
        s.gist_hops = Some(hops);
        s.transfer.reliable = m.transfer.reliable;
        s.transfer.secure = m.transfer.secure;
        match gist.send_message(now, s) {
            Ok(_) => match direction {
                Direction::Downstream => self.stats.forwarded_downstream += 1,
                Direction::Upstream => self.stats.forwarded_upstream += 1,
            },
            Err(e) => {
                self.stats.dropped_refused += 1;
                log_refusal(self.nslpid, e);
            }
        }
    }
}

fn log_refusal(nslpid: u16, e: ApiError) {
    tracing::debug!(nslpid, error = %e, "relay: message not passed on");
}

impl Nslp for RelayNslp {
    fn nslpid(&self) -> u16 {
        self.nslpid
    }

    fn recv_message(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: RecvMessage,
    ) -> RoutingDecision {
        if m.routing_state_check {
            // §4.3.2 option 1: peer, so that this node is on the NSLP's path.
            self.stats.peered += 1;
        }
        if !m.nslp_data.is_empty() {
            self.pass_on(now, gist, m);
        }
        RoutingDecision::ACCEPT
    }

    fn message_status(&mut self, _now: Instant, _gist: &mut dyn GistApi, status: MessageStatus) {
        if status.error.is_some() {
            self.stats.delivery_failures += 1;
            tracing::debug!(nslpid = self.nslpid, error = ?status.error, "relay: not delivered");
        }
    }

    fn network_notification(
        &mut self,
        _now: Instant,
        _gist: &mut dyn GistApi,
        n: NetworkNotification,
    ) {
        if matches!(
            n.kind,
            NotificationKind::RoutingStateLost { .. }
                | NotificationKind::CommunicationFailure { .. }
        ) {
            self.stats.network_failures += 1;
        }
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
