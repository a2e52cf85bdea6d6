//! The encryption booster (seed §3.2: "for passage across insecure subnets"), with
//! ChaCha20-Poly1305 (RFC 8439) in place of the seed's Lucifer.
//!
//! Booster header, then ciphertext, then the 16-byte Poly1305 tag:
//!
//! ```text
//! +-------------------------------+-------------------------------------------------------+
//! | sender id (32 bits)           | counter (64 bits)                                     |
//! +-------------------------------+-------------------------------------------------------+
//! ```
//!
//! The 12 bytes are the AEAD nonce itself. Nonces never repeat under one key:
//! - each gateway has its own sender id (two gateways sharing a pre-shared key use different
//!   ids; a packet carrying one of the receiver's own ids is a reflection and is dropped);
//! - a gateway running several lanes (multi-queue, docs/booster-wire.md "Lanes") sends on
//!   lane `l` as [`lane_sender_id`]`(id, l)`: the lane in the top byte of the configured id,
//!   lane 0 being the id itself (so one lane is the wire of a gateway without lanes);
//! - the counter is shared by every encryption instance of a sender ([`CryptoContext`]) and
//!   starts at the wall-clock time in nanoseconds when the context is made. A sender cannot
//!   send more than one packet per nanosecond, so after a restart the counter starts beyond
//!   every value it used before (the trick WireGuard plays with TAI64N timestamps).
//!
//! The receiver keeps a sliding window of [`REPLAY_WINDOW`] counters per sender id (RFC 6479's
//! bitmap scheme, [`MAX_SENDERS`] senders at most): a counter left of the window, or seen
//! before, is a replay and is dropped before any decryption work. The windows live in the
//! shared context, so a datagram of one lane replayed into another lane's socket meets the
//! window of the lane that sent it. Each lane's window sees only that lane's counters: the
//! lanes draw from one counter, so one lane's counters jump by whatever the others took in
//! between, and a window shared by the lanes would drop a quiet lane's packets as too old
//! once a busy lane had drawn more than [`REPLAY_WINDOW`] counters past them. The associated data binds the packet to its chain and to the "passed"
//! marks of the earlier stages ([`StageCtx::binding`]), so flipping a mark in the
//! encapsulation header fails authentication. Driven by the pipeline; `now` is not needed.

use crate::booster::{Booster, StageCtx, StageIo, Verdict};
use crate::packet::Packet;
use crate::stats::DropReason;
use crate::wire::BoosterId;
use pathwise_core::replay::{ReplayOutcome, SlidingWindow};
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, Tag, UnboundKey};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Nonce (sender id + counter) length.
pub const NONCE_LEN: usize = 12;
/// Poly1305 tag length.
pub const TAG_LEN: usize = 16;
/// Counters tracked behind the highest one seen.
pub const REPLAY_WINDOW: u64 = 2048;

/// The shared state of one gateway's encryption: key, own sender id, the next counter and
/// the replay window of the peer. Shared (behind an `Arc`) by every encryption instance.
pub struct CryptoContext {
    /// ChaCha20-Poly1305 as RFC 8439 §2.8 defines the AEAD, from `ring` (its assembly keeps
    /// the vector code in one routine per packet; the RustCrypto crates' AVX2 backend left
    /// intrinsics out of line in this build, a fifth of the encrypting thread in the
    /// 2026-11-24 profile, docs/BENCHMARKS.md). The nonces are ours (sender id ‖ counter), so
    /// the key is `LessSafeKey`: ring's nonce-sequence wrapper has nothing to add.
    cipher: LessSafeKey,
    sender_id: u32,
    /// Lanes this gateway sends on (1: no lanes), each with its own sender id.
    lanes: u8,
    next_counter: AtomicU64,
    replay: Mutex<ReplayWindows>,
}

/// Most peers (sender ids) whose replay windows are kept: room for a peer with every lane
/// ([`MAX_LANES`]) and as many other senders. A window dropped here and made again later would
/// accept its sender's old counters, so the bound must stay above what one peer uses.
pub const MAX_SENDERS: usize = 2 * MAX_LANES as usize;

/// Most lanes (TUN queues with a socket each) a gateway runs.
pub const MAX_LANES: u8 = 16;
/// Where the lane goes in a sender id: the top byte, so configured ids of gateways with lanes
/// must fit in the low 24 bits ([`MAX_LANE_BASE_ID`]).
const LANE_SHIFT: u32 = 24;
/// Largest configured sender id of a gateway with more than one lane.
pub const MAX_LANE_BASE_ID: u32 = (1 << LANE_SHIFT) - 1;

/// The sender id of `lane` of a gateway configured with sender id `base`: the lane in the top
/// byte (lane 0: `base` itself). `base` must fit in 24 bits when there is more than one lane.
pub fn lane_sender_id(base: u32, lane: u8) -> u32 {
    base | (u32::from(lane) << LANE_SHIFT)
}

/// Why a context cannot run the lanes asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaneError {
    /// Not 1..=[`MAX_LANES`].
    #[error("lanes must be 1..={MAX_LANES}, got {0}")]
    Count(u8),
    /// The configured sender id leaves no room for the lane in the top byte.
    #[error(
        "sender id {0} does not fit in 24 bits: with more than one lane the lane is the top byte of the sender id"
    )]
    SenderId(u32),
}

/// Replay windows by sender id, least recently used dropped beyond [`MAX_SENDERS`].
#[derive(Debug, Default)]
struct ReplayWindows {
    windows: Vec<(u32, ReplayWindow, u64)>,
    clock: u64,
}

impl ReplayWindows {
    fn check(&self, sender: u32, counter: u64) -> bool {
        self.windows
            .iter()
            .find(|w| w.0 == sender)
            .is_none_or(|w| w.1.check(counter))
    }

    fn update(&mut self, sender: u32, counter: u64) -> bool {
        self.clock += 1;
        if let Some(w) = self.windows.iter_mut().find(|w| w.0 == sender) {
            w.2 = self.clock;
            return w.1.update(counter);
        }
        if self.windows.len() >= MAX_SENDERS
            && let Some(i) = (0..self.windows.len()).min_by_key(|&i| self.windows[i].2)
        {
            self.windows.swap_remove(i);
        }
        let mut w = ReplayWindow::default();
        w.update(counter);
        self.windows.push((sender, w, self.clock));
        true
    }
}

impl std::fmt::Debug for CryptoContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CryptoContext")
            .field("sender_id", &self.sender_id)
            .field("next_counter", &self.next_counter)
            .finish_non_exhaustive()
    }
}

impl CryptoContext {
    /// A context for `key`, sending as `sender_id`, with the counter starting at
    /// `counter_start` (the wall-clock time in nanoseconds, supplied by the driver).
    pub fn new(key: &[u8; 32], sender_id: u32, counter_start: u64) -> Self {
        CryptoContext {
            cipher: LessSafeKey::new(
                // A 32-byte key is the algorithm's key length: this cannot fail.
                UnboundKey::new(&CHACHA20_POLY1305, key)
                    .expect("ChaCha20-Poly1305 takes 32-byte keys"),
            ),
            sender_id,
            lanes: 1,
            next_counter: AtomicU64::new(counter_start),
            replay: Mutex::new(ReplayWindows::default()),
        }
    }

    /// The same context sending on `lanes` lanes, each under its own sender id
    /// ([`lane_sender_id`]); every one of them counts as a reflection on receipt.
    pub fn with_lanes(mut self, lanes: u8) -> Result<Self, LaneError> {
        if !(1..=MAX_LANES).contains(&lanes) {
            return Err(LaneError::Count(lanes));
        }
        if lanes > 1 && self.sender_id > MAX_LANE_BASE_ID {
            return Err(LaneError::SenderId(self.sender_id));
        }
        self.lanes = lanes;
        Ok(self)
    }

    /// This gateway's sender id (lane 0's).
    pub fn sender_id(&self) -> u32 {
        self.sender_id
    }

    /// The sender id `lane` sends under (lanes beyond the context's count send as lane 0).
    pub fn lane_sender_id(&self, lane: u8) -> u32 {
        if lane < self.lanes {
            lane_sender_id(self.sender_id, lane)
        } else {
            self.sender_id
        }
    }

    /// Whether `sender` is one of this gateway's own ids: a datagram carrying it was sent by
    /// us and reflected back.
    fn is_own(&self, sender: u32) -> bool {
        if self.lanes <= 1 {
            return sender == self.sender_id;
        }
        sender & MAX_LANE_BASE_ID == self.sender_id
            && (sender >> LANE_SHIFT) < u32::from(self.lanes)
    }
}

/// A sliding bitmap of the last [`REPLAY_WINDOW`] counters (RFC 6479): the shared window of
/// [`pathwise_core::replay`], accepting counters up to its full span below the highest.
#[derive(Debug, Default, Clone)]
pub struct ReplayWindow(SlidingWindow<{ (REPLAY_WINDOW / 64) as usize }>);

impl ReplayWindow {
    const SPAN: u64 = SlidingWindow::<{ (REPLAY_WINDOW / 64) as usize }>::MAX_SPAN;

    /// Whether `counter` would be accepted (not a replay, not too old).
    pub fn check(&self, counter: u64) -> bool {
        self.0.check(counter, Self::SPAN) == ReplayOutcome::Accepted
    }

    /// Record `counter` (call after it authenticated); returns false if it was a replay.
    pub fn update(&mut self, counter: u64) -> bool {
        self.0.record(counter, Self::SPAN) == ReplayOutcome::Accepted
    }
}

/// ChaCha20-Poly1305 per packet.
#[derive(Debug)]
pub struct Encrypt {
    ctx: std::sync::Arc<CryptoContext>,
    /// The sender id of the lane this instance sends on.
    sender_id: u32,
}

impl Encrypt {
    /// An instance using the gateway's shared context, sending on lane 0.
    pub fn new(ctx: std::sync::Arc<CryptoContext>) -> Self {
        Self::on_lane(ctx, 0)
    }

    /// An instance using the gateway's shared context, sending on `lane`.
    pub fn on_lane(ctx: std::sync::Arc<CryptoContext>, lane: u8) -> Self {
        let sender_id = ctx.lane_sender_id(lane);
        Encrypt { ctx, sender_id }
    }
}

impl Booster for Encrypt {
    fn id(&self) -> BoosterId {
        BoosterId::ChaCha20Poly1305
    }

    fn overhead(&self) -> usize {
        NONCE_LEN + TAG_LEN
    }

    fn boost(
        &mut self,
        cx: &StageCtx<'_>,
        pkt: &mut Packet,
        _: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason> {
        if pkt.tailroom() < TAG_LEN || pkt.headroom() < NONCE_LEN {
            return Err(DropReason::NoRoom);
        }
        let counter = self.ctx.next_counter.fetch_add(1, Ordering::Relaxed);
        let mut nonce = [0u8; NONCE_LEN];
        nonce[..4].copy_from_slice(&self.sender_id.to_be_bytes());
        nonce[4..].copy_from_slice(&counter.to_be_bytes());
        let aad = cx.binding(pkt.marks);
        let tag = self
            .ctx
            .cipher
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                pkt.payload_mut(),
            )
            .map_err(|_| DropReason::NoRoom)?;
        pkt.push_back(TAG_LEN)
            .ok_or(DropReason::NoRoom)?
            .copy_from_slice(tag.as_ref());
        pkt.push_front(NONCE_LEN)
            .ok_or(DropReason::NoRoom)?
            .copy_from_slice(&nonce);
        Ok(Verdict::Forward)
    }

    fn deboost(
        &mut self,
        cx: &StageCtx<'_>,
        pkt: &mut Packet,
        _: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason> {
        let len = pkt.len();
        if len < NONCE_LEN + TAG_LEN {
            return Err(DropReason::CryptoTruncated);
        }
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&pkt.payload()[..NONCE_LEN]);
        let sender = u32::from_be_bytes([nonce[0], nonce[1], nonce[2], nonce[3]]);
        if self.ctx.is_own(sender) {
            return Err(DropReason::Reflected);
        }
        let mut c = [0u8; 8];
        c.copy_from_slice(&nonce[4..]);
        let counter = u64::from_be_bytes(c);
        // Cheap rejection before any cryptography.
        if !self
            .ctx
            .replay
            .lock()
            .map(|w| w.check(sender, counter))
            .unwrap_or(false)
        {
            return Err(DropReason::Replay);
        }
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&pkt.payload()[len - TAG_LEN..]);
        let aad = cx.binding(pkt.marks);
        let body = &mut pkt.payload_mut()[NONCE_LEN..len - TAG_LEN];
        self.ctx
            .cipher
            .open_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                Tag::from(tag),
                body,
                0..,
            )
            .map_err(|_| DropReason::AuthFailed)?;
        // Record only authenticated counters, so forgeries cannot advance the window.
        if !self
            .ctx
            .replay
            .lock()
            .map(|mut w| w.update(sender, counter))
            .unwrap_or(false)
        {
            return Err(DropReason::Replay);
        }
        pkt.truncate(len - TAG_LEN);
        pkt.pull_front(NONCE_LEN);
        Ok(Verdict::Forward)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_window_accepts_new_rejects_seen_and_old() {
        let mut w = ReplayWindow::default();
        assert!(w.update(1_000_000));
        assert!(!w.update(1_000_000));
        assert!(w.update(999_999));
        assert!(w.update(1_000_005));
        assert!(!w.update(999_999));
        assert!(w.update(1_000_001));
        // Far ahead: the window slides; the old ones are now too old.
        assert!(w.update(1_000_000 + 10 * REPLAY_WINDOW));
        assert!(!w.check(1_000_005));
        assert!(w.check(1_000_000 + 10 * REPLAY_WINDOW - 100));
        assert!(w.update(1_000_000 + 10 * REPLAY_WINDOW - 100));
        assert!(!w.update(1_000_000 + 10 * REPLAY_WINDOW - 100));
    }

    #[test]
    fn replay_window_matches_a_set_model() {
        use std::collections::BTreeSet;
        let mut w = ReplayWindow::default();
        let mut seen = BTreeSet::new();
        let mut x: u64 = 12345;
        let mut highest = 0u64;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let c = 10_000 + highest.saturating_sub(1500) + (x >> 33) % 1600;
            let fresh = !seen.contains(&c) && (seen.is_empty() || c + REPLAY_WINDOW - 64 > highest);
            assert_eq!(w.update(c), fresh, "counter {c}, highest {highest}");
            if fresh {
                seen.insert(c);
                highest = highest.max(c);
            }
        }
    }
}
