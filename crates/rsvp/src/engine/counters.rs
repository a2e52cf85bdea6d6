//! What the engine counts: messages in and out by type, drops by reason, timeouts, and the size
//! of its state. Every dropped message is counted under a stable snake_case reason.

use crate::wire::MsgType;
use std::collections::BTreeMap;

/// Message types in counter order.
pub const MSG_TYPES: [MsgType; 13] = [
    MsgType::Path,
    MsgType::Resv,
    MsgType::PathErr,
    MsgType::ResvErr,
    MsgType::PathTear,
    MsgType::ResvTear,
    MsgType::ResvConf,
    MsgType::IntegrityChallenge,
    MsgType::IntegrityResponse,
    MsgType::Hello,
    MsgType::Ack,
    MsgType::Srefresh,
    MsgType::Bundle,
];

fn slot(t: MsgType) -> Option<usize> {
    MSG_TYPES.iter().position(|m| *m == t)
}

/// Counters of one engine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Messages received, by type (order of [`MSG_TYPES`]).
    pub rx: [u64; MSG_TYPES.len()],
    /// Messages sent, by type.
    pub tx: [u64; MSG_TYPES.len()],
    /// Dropped messages by reason.
    pub drops: BTreeMap<&'static str, u64>,
    /// Known objects skipped in error messages, teardowns and confirmations whose grammar does
    /// not list them (the message itself was processed; see `wire::message`).
    pub skipped_objects: u64,
    /// Messages the engine refused to send to a martian destination (see
    /// [`super::martian`]). Counted here only: `drops` counts messages received.
    pub unsent: u64,
    /// Path state blocks that timed out.
    pub path_timeouts: u64,
    /// Reservation state blocks that timed out.
    pub resv_timeouts: u64,
    /// Reservation requests refused by admission control.
    pub admission_failures: u64,
    /// Local repairs performed after route changes.
    pub local_repairs: u64,
    /// LSP reservations preempted by LSPs of higher priority (RFC 3209 §4.7.1).
    pub preemptions: u64,
    /// Head-end LSPs given up because no label came within the setup time.
    pub lsp_setup_timeouts: u64,
    /// LSPs refused for want of a free label.
    pub label_allocation_failures: u64,
    /// Signing, verification and the integrity handshake (RFC 2747).
    pub integrity: super::integrity::IntegrityCounters,
    /// Neighbour liveness (RFC 3209 §5).
    pub hello: super::hello::HelloCounters,
    /// Refresh reduction (RFC 2961).
    pub refresh: super::refresh::RefreshCounters,
}

impl Counters {
    pub(crate) fn count_in(&mut self, t: MsgType) {
        if let Some(i) = slot(t) {
            self.rx[i] += 1;
        }
    }

    pub(crate) fn count_out(&mut self, t: MsgType) {
        if let Some(i) = slot(t) {
            self.tx[i] += 1;
        }
    }

    pub(crate) fn drop(&mut self, reason: &'static str) {
        *self.drops.entry(reason).or_insert(0) += 1;
    }

    /// Messages of type `t` received.
    pub fn received(&self, t: MsgType) -> u64 {
        slot(t).map_or(0, |i| self.rx[i])
    }

    /// Messages of type `t` sent.
    pub fn sent(&self, t: MsgType) -> u64 {
        slot(t).map_or(0, |i| self.tx[i])
    }

    /// All drops.
    pub fn total_drops(&self) -> u64 {
        self.drops.values().sum()
    }
}

/// How much state an engine holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateStats {
    /// Sessions.
    pub sessions: usize,
    /// Path state blocks.
    pub psbs: usize,
    /// Reservation state blocks.
    pub rsbs: usize,
    /// Previous-hop state blocks.
    pub phops: usize,
    /// Installed reservations (OutISBs).
    pub out_isbs: usize,
    /// OIatPSB relations.
    pub oiats: usize,
    /// Pending timers.
    pub timers: usize,
}
