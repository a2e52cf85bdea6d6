//! What the engine counts: messages by type, reservation outcomes, refresh kinds, and every
//! dropped message by reason.

use crate::wire::MsgType;
use std::collections::BTreeMap;

/// Counters of one QoS NSLP engine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Messages sent, by type (RESERVE, QUERY, RESPONSE, NOTIFY).
    pub sent: [u64; 4],
    /// Messages received and parsed, by type.
    pub received: [u64; 4],
    /// NSLP bytes handed to GIST.
    pub bytes_sent: u64,
    /// Reservations admitted by traffic control (new or modified).
    pub admitted: u64,
    /// Reservations traffic control (or the QSPEC's constraints) refused.
    pub admission_failures: u64,
    /// Refreshing RESERVEs sent with the full QSPEC.
    pub full_refreshes: u64,
    /// Reduced refreshes sent (RSN only, RFC 5974 §3.2.5).
    pub reduced_refreshes: u64,
    /// Summary refreshes sent (SESSION-ID-LIST and RSN-LIST, §3.2.6).
    pub summary_refreshes: u64,
    /// Sessions refreshed inside summaries (not counting their primary sessions).
    pub summarised_sessions: u64,
    /// Tearing RESERVEs sent.
    pub tears_sent: u64,
    /// Reservations removed by a tearing RESERVE.
    pub torn: u64,
    /// Reservations whose state lifetime ran out.
    pub expired: u64,
    /// Receiver-initiated reservations given up because the reverse path towards their QNR
    /// went (this node is off the path).
    pub reverse_path_lost: u64,
    /// Route changes acted on (§5.2.5.2).
    pub route_changes: u64,
    /// NOTIFYs with Informational "Route Change" sent to an old upstream peer by its
    /// SII-Handle (§5.2.5.3).
    pub route_change_notifies: u64,
    /// Routing state GIST was asked to re-check (InvalidateRoutingState, RFC 5971 B.6) on a
    /// "Route Change" NOTIFY received (§5.2.5.3).
    pub routing_state_invalidated: u64,
    /// Dependent reservations (BOUND-SESSION-ID with Binding Code 0x04) notified because the
    /// session they are bound to went here (§5.4.1): NOTIFYs sent towards their QNIs, or
    /// reported at the QNI itself.
    pub bound_notifies: u64,
    /// Reservations moved to the interface the flow leaves by after a route change.
    pub readmitted: u64,
    /// Reservations given up because the interface the flow now leaves by refused them.
    pub readmission_failures: u64,
    /// Messages retransmitted for want of a RESPONSE (§5.2.4).
    pub retransmissions: u64,
    /// Requests that got no RESPONSE within QOSNSLP_RETRY_MAX.
    pub request_timeouts: u64,
    /// RESERVEs whose REFRESH-PERIOD exceeded `max_refresh_period` and was taken as that
    /// (RFC 5974 §5.3.4: R and L have local significance).
    pub refresh_periods_capped: u64,
    /// Messages dropped, by reason.
    pub dropped: BTreeMap<&'static str, u64>,
}

fn index(t: MsgType) -> usize {
    match t {
        MsgType::Reserve => 0,
        MsgType::Query => 1,
        MsgType::Response => 2,
        MsgType::Notify => 3,
    }
}

impl Counters {
    /// Count a message dropped for `reason`.
    pub(crate) fn drop(&mut self, reason: &'static str) {
        *self.dropped.entry(reason).or_default() += 1;
    }

    pub(crate) fn count_sent(&mut self, t: MsgType, bytes: usize) {
        self.sent[index(t)] += 1;
        self.bytes_sent += bytes as u64;
    }

    pub(crate) fn count_received(&mut self, t: MsgType) {
        self.received[index(t)] += 1;
    }

    /// Messages of type `t` sent.
    pub fn sent(&self, t: MsgType) -> u64 {
        self.sent[index(t)]
    }

    /// Messages of type `t` received.
    pub fn received(&self, t: MsgType) -> u64 {
        self.received[index(t)]
    }

    /// Messages dropped for `reason`.
    pub fn dropped(&self, reason: &str) -> u64 {
        self.dropped.get(reason).copied().unwrap_or(0)
    }

    /// Messages dropped, all reasons.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.values().sum()
    }
}
