//! What the engine counts: messages in and out by type, drops by reason, errors, handshake and
//! state events. Every dropped message is counted under a stable snake_case reason.

use crate::wire::MsgType;
use std::collections::BTreeMap;

/// Counters of one engine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Messages received, by type number (Query … MA-Hello).
    pub rx: [u64; 6],
    /// Messages sent, by type number.
    pub tx: [u64; 6],
    /// Dropped messages by reason.
    pub drops: BTreeMap<&'static str, u64>,
    /// GIST Error messages sent, by error code.
    pub errors_sent: BTreeMap<u16, u64>,
    /// GIST Error messages received, by error code.
    pub errors_received: BTreeMap<u16, u64>,
    /// Query retransmissions.
    pub query_retransmits: u64,
    /// Refresh handshakes started.
    pub refreshes: u64,
    /// Queries intercepted that the NSLP declined and GIST forwarded.
    pub queries_forwarded: u64,
    /// Responder cookies minted (hash) or drawn (random).
    pub cookies_minted: u64,
    /// Confirms whose cookie did not verify (by reason in `drops`: `cookie_malformed`,
    /// `cookie_expired`, `cookie_mismatch`).
    pub cookies_rejected: u64,
    /// Confirms asking for a Routing State Validity Time beyond `max_state_lifetime`, kept
    /// for that maximum instead.
    pub validity_capped: u64,
    /// Downstream halves whose handshake ran out of retransmissions.
    pub handshake_failures: u64,
    /// Upstream halves that expired without a refresh.
    pub upstream_expiries: u64,
    /// Downstream halves the NSLP let lapse.
    pub downstream_lapses: u64,
    /// Refreshes that found a different peer (route changes).
    pub peer_changes: u64,
    /// Messaging associations opened (as initiator) or accepted.
    pub mas_opened: u64,
    /// Messaging associations closed.
    pub mas_closed: u64,
    /// Streams torn down for what came over them: a Common Header Parse Error (framing
    /// lost) or a message longer than `MAX_STREAM_MESSAGE`.
    pub streams_refused: u64,
    /// Second streams from a peer that proved themselves (a Confirm with a valid cookie as
    /// their first message) and replaced its association.
    pub ma_takeovers: u64,
    /// Second streams from a peer refused, the working association kept (by reason in
    /// `drops`: `ma_takeover_*`).
    pub ma_takeovers_refused: u64,
    /// Confirms sent again for a repeated Response in Established (a lost Confirm; RFC 5971
    /// §6.2).
    pub confirm_retransmits: u64,
    /// Handshakes restarted because the peer answered our Confirm or Data with an Error
    /// (RFC 5971 §4.4.6).
    pub error_restarts: u64,
    /// Routing-state halves deleted because the peer kept rejecting them with Errors (RFC 5972
    /// transition 18), or upstream halves the querying node said it has no state for.
    pub peer_error_teardowns: u64,
    /// Handshakes for secure transfer whose responder offered no TLS (the secure messages
    /// failed instead of going in the clear).
    pub tls_refused_by_peer: u64,
    /// Data messages routed explicitly to an SII-Handle (E flag; RFC 5971 §7.1.4).
    pub explicit_sent: u64,
    /// Explicitly routed Data messages received (delivered without routing-state checks).
    pub explicit_received: u64,
    /// Explicitly routed messages that failed (unknown SII-Handle, or no association for a
    /// reliable or secure one), each reported in a MessageStatus.
    pub explicit_failures: u64,
}

impl Counters {
    pub(crate) fn count_in(&mut self, t: MsgType) {
        self.rx[usize::from(t.number())] += 1;
    }

    pub(crate) fn count_out(&mut self, t: MsgType) {
        self.tx[usize::from(t.number())] += 1;
    }

    pub(crate) fn drop(&mut self, reason: &'static str) {
        *self.drops.entry(reason).or_insert(0) += 1;
    }

    /// Messages of type `t` received.
    pub fn received(&self, t: MsgType) -> u64 {
        self.rx[usize::from(t.number())]
    }

    /// Messages of type `t` sent.
    pub fn sent(&self, t: MsgType) -> u64 {
        self.tx[usize::from(t.number())]
    }

    /// Drops for `reason`.
    pub fn dropped(&self, reason: &str) -> u64 {
        self.drops.get(reason).copied().unwrap_or(0)
    }

    /// All drops.
    pub fn total_drops(&self) -> u64 {
        self.drops.values().sum()
    }
}

/// How much state an engine holds, and an estimate of its memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateStats {
    /// Routing state entries.
    pub routing_states: usize,
    /// Entries with an established downstream half.
    pub downstream_established: usize,
    /// Entries with an established upstream half.
    pub upstream_established: usize,
    /// Upstream halves waiting for a Confirm (random-cookie mode).
    pub awaiting_confirm: usize,
    /// Peers.
    pub peers: usize,
    /// Messaging associations.
    pub mas: usize,
    /// Pending timers.
    pub timers: usize,
    /// Estimated bytes of heap memory held by routing state, peers, MAs and timers (capacity,
    /// not just length: what the allocator has handed out).
    pub bytes: usize,
}
