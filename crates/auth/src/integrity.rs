//! Hop-by-hop integrity checking of received messages and signing state for sent ones
//! (RFC 2747 §3 sending, §4.2 receiving, §4.3 challenge/response), independent of the wire
//! format.
//!
//! The protocol codec finds the integrity object, hands its fields in as [`Presented`] together
//! with the message bytes *as they were digested* (checksum and digest fields zeroed, passed as
//! slices so nothing is copied), and acts on the answer: process the message, drop it and count
//! the [`Reject`] reason, or send a challenge. Nothing here changes any state before the digest
//! has verified, so a forger can neither create replay state nor move a window.

use crate::key::{Key, KeyChain, KeyError};
use crate::replay::{ReplayOutcome, ReplayTable};
use crate::seq::SequenceNumbers;
use core::fmt;
use core::str::FromStr;
use pathwise_core::table::{KeyedMap, KeyedState};
use std::net::IpAddr;

/// The handshake flag of the INTEGRITY object (RFC 2747 §2.1): the sender answers Integrity
/// Challenge messages.
pub const HANDSHAKE: u8 = 0x01;

/// How long an unanswered challenge is left before another may be sent, in seconds.
pub const CHALLENGE_RETRY_SECS: u64 = 1;

/// What an interface does about integrity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// No signing and no checking; integrity objects on received messages are ignored.
    #[default]
    Off,
    /// Sign outgoing messages when a send key is valid; verify messages that carry an integrity
    /// object and accept those that do not.
    Accept,
    /// Sign outgoing messages; drop every received message without a valid integrity object.
    Require,
}

impl Mode {
    /// The configuration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Accept => "accept",
            Mode::Require => "require",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name other than `off`, `accept` or `require`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown integrity mode {0:?} (expected off, accept or require)")]
pub struct UnknownMode(pub String);

impl FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "off" => Ok(Mode::Off),
            "accept" => Ok(Mode::Accept),
            "require" => Ok(Mode::Require),
            other => Err(UnknownMode(other.to_owned())),
        }
    }
}

/// The integrity configuration of one interface: its mode, its key chain, per-neighbour chains
/// that replace it for messages to and from particular neighbours, and whether the handshake of
/// RFC 2747 §4.3 is used.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Off, accept or require.
    pub mode: Mode,
    /// Keys for every neighbour on the interface without a chain of its own.
    pub keys: KeyChain,
    /// Neighbour-specific chains, by the neighbour's address.
    pub neighbors: Vec<(IpAddr, KeyChain)>,
    /// Set the handshake flag on sent messages, and challenge a sender whose sequence state is
    /// unknown instead of trusting its first sequence number (RFC 2747 §4.3). On by default in
    /// configuration files; a receiver that restarted would otherwise accept one replayed
    /// message per sender.
    pub challenge: bool,
    /// The receiver's tolerance to out-of-order delivery (RFC 2747 §4.2: "An implementation
    /// SHOULD allow administrative configuration that sets the receiver's tolerance to
    /// out-of-order message delivery"): numbers up to this many below the largest received
    /// from a sender are accepted once each. 1 ..= [`crate::MAX_REPLAY_WINDOW`]; default
    /// [`crate::REPLAY_WINDOW`].
    pub window: u64,
}

impl Default for Policy {
    /// Integrity off (no keys, no handshake), the default window.
    fn default() -> Self {
        Policy {
            mode: Mode::Off,
            keys: KeyChain::new(),
            neighbors: Vec::new(),
            challenge: false,
            window: crate::REPLAY_WINDOW,
        }
    }
}

impl Policy {
    /// A policy of `mode` with one chain for the whole interface, the handshake enabled and
    /// the default window.
    pub fn new(mode: Mode, keys: KeyChain) -> Self {
        Policy {
            mode,
            keys,
            challenge: true,
            ..Policy::default()
        }
    }

    /// The chain for messages to or from `peer` (the interface's unless the neighbour has one).
    pub fn chain_for(&self, peer: Option<IpAddr>) -> &KeyChain {
        peer.and_then(|p| self.neighbors.iter().find(|(a, _)| *a == p))
            .map_or(&self.keys, |(_, c)| c)
    }

    /// Whether messages sent under this policy are signed (when a send key is valid).
    pub fn signs(&self) -> bool {
        self.mode != Mode::Off
    }

    /// The flags to put in the integrity objects of sent messages.
    pub fn flags(&self) -> u8 {
        if self.challenge { HANDSHAKE } else { 0 }
    }

    /// The key that verifies `presented` from `sender`, the message as digested being
    /// `digested` (RFC 2747 §4.2 steps 4 and 5): one of the sender's chain, valid for accepting
    /// at `now_secs`, whose digest matches. The sequence number is the caller's to check.
    pub fn verify(
        &self,
        sender: IpAddr,
        presented: &Presented<'_>,
        digested: &[&[u8]],
        now_secs: u64,
    ) -> Result<&Key, Reject> {
        let key = self
            .chain_for(Some(sender))
            .accept_key(presented.key_id, now_secs)?;
        if key.verify(digested, presented.digest) {
            Ok(key)
        } else {
            Err(Reject::BadDigest)
        }
    }
}

/// The fields of a received integrity object (RFC 2747 §2.1), as the codec read them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Presented<'a> {
    /// Flags ([`HANDSHAKE`]).
    pub flags: u8,
    /// 48-bit key identifier.
    pub key_id: u64,
    /// 64-bit sequence number.
    pub seq: u64,
    /// The keyed message digest as received.
    pub digest: &'a [u8],
}

/// Why a received message was refused. Every one is a drop the caller counts by
/// [`Reject::reason`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Reject {
    /// No integrity object where the policy requires one.
    #[error("integrity object missing")]
    Missing,
    /// No key with this id for this neighbour.
    #[error("unknown key id")]
    UnknownKey,
    /// The key exists but is outside its accept lifetime.
    #[error("key expired or not yet valid")]
    ExpiredKey,
    /// The digest does not verify (or has the wrong length for the key's algorithm).
    #[error("bad digest")]
    BadDigest,
    /// The sequence number was seen before or is too old for the window (RFC 2747 §4.2).
    #[error("replayed or too old")]
    Replayed,
    /// The sender's sequence state is being established by a challenge (RFC 2747 §4.3); the
    /// message is dropped and the sender will refresh.
    #[error("awaiting challenge response")]
    AwaitingChallenge,
    /// An Integrity Response that answers no outstanding challenge of ours, or carries the wrong
    /// cookie.
    #[error("unsolicited or mismatched challenge response")]
    BadResponse,
}

impl Reject {
    /// Every reason, in a fixed order (for metrics that list zeros too).
    pub const ALL: [Reject; 7] = [
        Reject::Missing,
        Reject::UnknownKey,
        Reject::ExpiredKey,
        Reject::BadDigest,
        Reject::Replayed,
        Reject::AwaitingChallenge,
        Reject::BadResponse,
    ];

    /// A short, stable snake_case label for drop counters.
    pub fn reason(self) -> &'static str {
        match self {
            Reject::Missing => "integrity_missing",
            Reject::UnknownKey => "integrity_unknown_key",
            Reject::ExpiredKey => "integrity_expired_key",
            Reject::BadDigest => "integrity_bad_digest",
            Reject::Replayed => "integrity_replayed",
            Reject::AwaitingChallenge => "integrity_awaiting_challenge",
            Reject::BadResponse => "integrity_bad_response",
        }
    }
}

impl From<KeyError> for Reject {
    fn from(e: KeyError) -> Self {
        match e {
            KeyError::Unknown => Reject::UnknownKey,
            KeyError::Expired => Reject::ExpiredKey,
        }
    }
}

/// A message the receiver accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// Integrity is off, or the policy accepts unsigned messages and this one was unsigned.
    Unchecked,
    /// The digest verified under `key_id` and `seq` was new.
    Verified {
        /// The key that verified.
        key_id: u64,
        /// The sequence number, now recorded.
        seq: u64,
    },
}

/// An outstanding challenge.
#[derive(Clone, Copy, Debug)]
struct Pending {
    cookie: u64,
    sent_secs: u64,
}

/// Receive-side state: replay windows per (sender, key id) and outstanding challenges.
#[derive(Clone, Debug)]
pub struct Receiver {
    replay: ReplayTable<IpAddr>,
    pending: KeyedMap<(IpAddr, u64), Pending>,
}

impl Receiver {
    /// Empty state, hashing with `state`.
    pub fn new(state: KeyedState) -> Self {
        Receiver {
            replay: ReplayTable::new(state.clone()),
            pending: KeyedMap::with_hasher(state),
        }
    }

    /// Check a received message from `sender` (the neighbour that sent it) under `policy`
    /// (RFC 2747 §4.2): present the integrity object if the message has one, and the message as
    /// digested. On success the sequence number is recorded.
    ///
    /// A sender with no sequence state yet whose message sets the handshake flag, under a policy
    /// with challenges enabled, gets [`Reject::AwaitingChallenge`] once its digest has verified:
    /// the caller then sends the challenge [`Receiver::challenge`] allows.
    pub fn check(
        &mut self,
        policy: &Policy,
        sender: IpAddr,
        presented: Option<&Presented<'_>>,
        digested: &[&[u8]],
        now_secs: u64,
    ) -> Result<Accepted, Reject> {
        let Some(p) = presented else {
            return match policy.mode {
                Mode::Require => Err(Reject::Missing),
                Mode::Off | Mode::Accept => Ok(Accepted::Unchecked),
            };
        };
        if policy.mode == Mode::Off {
            return Ok(Accepted::Unchecked);
        }
        // RFC 2747 §4.2 steps (4)-(6): the digest first ("If the calculated digest does not
        // match ..., the message is discarded without further processing"), the sequence
        // number only then. A tampered copy of a message already seen carries that message's
        // sequence number; checked the other way round it was counted as a replay, hiding the
        // tampering.
        policy.verify(sender, p, digested, now_secs)?;
        let known = match self.replay.window(&sender, p.key_id) {
            Some(w) if w.check(p.seq, policy.window) != ReplayOutcome::Accepted => {
                return Err(Reject::Replayed);
            }
            Some(_) => true,
            None => false,
        };
        // RFC 2747 §4.3: while a challenge is out the sender's numbers cannot be trusted, and a
        // sender that offers the handshake is challenged rather than trusted on its first one.
        let challenging = self.pending.contains_key(&(sender, p.key_id))
            || (policy.challenge && p.flags & HANDSHAKE != 0);
        if !known && challenging {
            return Err(Reject::AwaitingChallenge);
        }
        self.replay.record(&sender, p.key_id, p.seq, policy.window);
        Ok(Accepted::Verified {
            key_id: p.key_id,
            seq: p.seq,
        })
    }

    /// Whether to send a challenge to `sender` for `key_id` now, and with which cookie: a new
    /// challenge with `fresh_cookie`, or the outstanding one again once
    /// [`CHALLENGE_RETRY_SECS`] have passed; `None` while a challenge is fresh.
    pub fn challenge(
        &mut self,
        sender: IpAddr,
        key_id: u64,
        fresh_cookie: u64,
        now_secs: u64,
    ) -> Option<u64> {
        let p = self.pending.entry((sender, key_id)).or_insert(Pending {
            cookie: fresh_cookie,
            sent_secs: now_secs.wrapping_sub(CHALLENGE_RETRY_SECS),
        });
        if now_secs.saturating_sub(p.sent_secs) < CHALLENGE_RETRY_SECS {
            return None;
        }
        p.sent_secs = now_secs;
        Some(p.cookie)
    }

    /// Take an Integrity Response (RFC 2747 §4.3): it must answer our outstanding challenge to
    /// `sender` for the response's key with the same cookie, and verify. Its sequence number
    /// then starts the sender's window (replacing any old state).
    pub fn response(
        &mut self,
        policy: &Policy,
        sender: IpAddr,
        presented: &Presented<'_>,
        cookie: u64,
        digested: &[&[u8]],
        now_secs: u64,
    ) -> Result<Accepted, Reject> {
        if policy.mode == Mode::Off {
            return Err(Reject::BadResponse);
        }
        // RFC 2747 §4.2: the digest (step 5) before the CHALLENGE match (step 6), so a tampered
        // response counts as tampered.
        policy.verify(sender, presented, digested, now_secs)?;
        let slot = (sender, presented.key_id);
        match self.pending.get(&slot) {
            Some(p) if p.cookie == cookie => {}
            _ => return Err(Reject::BadResponse),
        }
        self.pending.remove(&slot);
        // RFC 2747 §4.3: the Response's number is "the latest sequence number received";
        // nothing signed before it is accepted after it, reordered or replayed.
        self.replay
            .start_at(&sender, presented.key_id, presented.seq);
        Ok(Accepted::Verified {
            key_id: presented.key_id,
            seq: presented.seq,
        })
    }

    /// Forget everything about `sender` (a neighbour that went away).
    pub fn forget_sender(&mut self, sender: IpAddr) {
        self.pending.retain(|(a, _), _| *a != sender);
        self.replay.forget_sender(&sender);
    }

    /// (sender, key id) pairs with sequence state.
    pub fn windows(&self) -> usize {
        self.replay.len()
    }

    /// Outstanding challenges.
    pub fn pending_challenges(&self) -> usize {
        self.pending.len()
    }
}

/// Send-side state: one time-based sequence per key id (RFC 2747 §3.2: strictly increasing per
/// key, whichever interface the key signs on).
#[derive(Clone, Debug)]
pub struct Sender {
    seqs: KeyedMap<u64, SequenceNumbers>,
    /// The node's numbers when several senders sign for it (`None`: `seqs`).
    shared: Option<SharedSequences>,
}

/// One node's sequence numbers shared by several [`Sender`]s — the shards of a sharded node,
/// which all sign as that node: RFC 2747 §3 wants one strictly increasing sequence per key for
/// the sending system, so each number is drawn under a lock, unique and larger than every
/// number drawn before it by any of them. Clones share the numbers.
#[derive(Clone, Debug, Default)]
pub struct SharedSequences(std::sync::Arc<std::sync::Mutex<Vec<(u64, SequenceNumbers)>>>);

impl SharedSequences {
    /// The next number of key `key_id` at `now_secs`.
    fn next(&self, key_id: u64, now_secs: u64) -> Option<u64> {
        // A panic while the lock was held cannot leave a number half drawn: take the state.
        let mut keys = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let at = match keys.iter().position(|(id, _)| *id == key_id) {
            Some(at) => at,
            None => {
                keys.push((key_id, SequenceNumbers::new()));
                keys.len() - 1
            }
        };
        keys[at].1.next(now_secs)
    }
}

impl Sender {
    /// No numbers handed out yet.
    pub fn new(state: KeyedState) -> Self {
        Sender {
            seqs: KeyedMap::with_hasher(state),
            shared: None,
        }
    }

    /// A sender drawing its numbers from `shared`, with every other sender of the node.
    pub fn sharing(state: KeyedState, shared: SharedSequences) -> Self {
        Sender {
            shared: Some(shared),
            ..Sender::new(state)
        }
    }

    /// The key to sign a message to `peer` with under `policy` at `now_secs` and its next
    /// sequence number, or `None` when the policy does not sign or no key is valid for sending.
    pub fn next<'p>(
        &mut self,
        policy: &'p Policy,
        peer: Option<IpAddr>,
        now_secs: u64,
    ) -> Option<(&'p Key, u64)> {
        if !policy.signs() {
            return None;
        }
        let key = policy.chain_for(peer).send_key(now_secs)?;
        self.next_for(key, now_secs).map(|seq| (key, seq))
    }

    /// The next sequence number of `key` at `now_secs` (`None` once its space is exhausted).
    pub fn next_for(&mut self, key: &Key, now_secs: u64) -> Option<u64> {
        match &self.shared {
            Some(shared) => shared.next(key.id(), now_secs),
            None => self.seqs.entry(key.id()).or_default().next(now_secs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Algorithm, Lifetime};
    use std::net::Ipv4Addr;

    const N: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));

    fn state() -> KeyedState {
        KeyedState::from_rng(&mut pathwise_core::rng::seeded(1))
    }

    fn policy(mode: Mode, challenge: bool) -> Policy {
        let mut keys = KeyChain::new();
        keys.insert(Key::new(7, Algorithm::HmacSha256, b"k7").unwrap())
            .unwrap();
        keys.insert(
            Key::new(8, Algorithm::HmacMd5, b"k8")
                .unwrap()
                .with_accept(Lifetime::new(0, 100)),
        )
        .unwrap();
        Policy {
            challenge,
            ..Policy::new(mode, keys)
        }
    }

    /// A signed "message" and its digest.
    fn signed(p: &Policy, key_id: u64, msg: &[u8]) -> Vec<u8> {
        p.keys
            .get(key_id)
            .unwrap()
            .digest(&[msg])
            .as_bytes()
            .to_vec()
    }

    fn presented(key_id: u64, seq: u64, flags: u8, digest: &[u8]) -> Presented<'_> {
        Presented {
            flags,
            key_id,
            seq,
            digest,
        }
    }

    /// RFC 2747 §4.2: the receiver's tolerance to out-of-order delivery is the policy's
    /// `window`: a number that far below the largest received passes once, further is refused.
    #[test]
    fn the_policys_window_sets_the_reordering_tolerated() {
        for (window, accepted) in [(2, false), (3, true), (crate::REPLAY_WINDOW, true)] {
            let p = Policy {
                window,
                ..policy(Mode::Require, false)
            };
            let d = signed(&p, 7, b"m");
            let mut r = Receiver::new(state());
            let mut at = |seq| r.check(&p, N, Some(&presented(7, seq, 0, &d)), &[b"m"], 10);
            assert!(at(100).is_ok());
            assert_eq!(at(98).is_ok(), accepted, "window {window}");
            assert_eq!(at(98), Err(Reject::Replayed), "window {window}: once");
        }
    }

    #[test]
    fn modes_treat_unsigned_messages() {
        let mut r = Receiver::new(state());
        for (mode, ok) in [
            (Mode::Off, true),
            (Mode::Accept, true),
            (Mode::Require, false),
        ] {
            let got = r.check(&policy(mode, false), N, None, &[b"m"], 10);
            assert_eq!(got.is_ok(), ok, "{mode}");
        }
        assert_eq!(
            r.check(&policy(Mode::Require, false), N, None, &[b"m"], 10),
            Err(Reject::Missing)
        );
    }

    #[test]
    fn verifies_rejects_and_records() {
        let p = policy(Mode::Require, false);
        let mut r = Receiver::new(state());
        let d = signed(&p, 7, b"msg");
        let ok = r.check(&p, N, Some(&presented(7, 5, 0, &d)), &[b"msg"], 10);
        assert_eq!(ok, Ok(Accepted::Verified { key_id: 7, seq: 5 }));
        // Same number again: replay.
        let again = r.check(&p, N, Some(&presented(7, 5, 0, &d)), &[b"msg"], 10);
        assert_eq!(again, Err(Reject::Replayed));
        // A tampered copy of it (same sequence number, other bytes) fails its digest, and is
        // counted as such rather than as a replay (RFC 2747 §4.2 checks the digest first).
        let tampered = r.check(&p, N, Some(&presented(7, 5, 0, &d)), &[b"msG"], 10);
        assert_eq!(tampered, Err(Reject::BadDigest));
        // So is a tampered copy with a sequence number below the window.
        let stale = r.check(&p, N, Some(&presented(7, 1, 0, &d)), &[b"msG"], 10);
        assert_eq!(stale, Err(Reject::BadDigest));
        // A forged digest never moves the window.
        let forged = r.check(&p, N, Some(&presented(7, 50, 0, &[0; 32])), &[b"msg"], 10);
        assert_eq!(forged, Err(Reject::BadDigest));
        assert_eq!(r.replay.window(&N, 7).unwrap().highest(), Some(5));
        // Unknown and expired keys.
        let unknown = r.check(&p, N, Some(&presented(9, 6, 0, &d)), &[b"msg"], 10);
        assert_eq!(unknown, Err(Reject::UnknownKey));
        let d8 = signed(&p, 8, b"msg");
        let expired = r.check(&p, N, Some(&presented(8, 6, 0, &d8)), &[b"msg"], 100);
        assert_eq!(expired, Err(Reject::ExpiredKey));
        // A digest of the wrong length fails as a bad digest.
        let short = r.check(&p, N, Some(&presented(7, 6, 0, &d[..16])), &[b"msg"], 10);
        assert_eq!(short, Err(Reject::BadDigest));
    }

    #[test]
    fn challenge_establishes_the_window() {
        let p = policy(Mode::Require, true);
        let mut r = Receiver::new(state());
        let d = signed(&p, 7, b"old");
        // First message from an unknown sender with the handshake flag: challenge.
        let first = r.check(
            &p,
            N,
            Some(&presented(7, 100, HANDSHAKE, &d)),
            &[b"old"],
            10,
        );
        assert_eq!(first, Err(Reject::AwaitingChallenge));
        assert_eq!(r.challenge(N, 7, 0xc0ffee, 10), Some(0xc0ffee));
        // Not again within the retry interval, but again after it, with the same cookie.
        assert_eq!(r.challenge(N, 7, 0xbad, 10), None);
        assert_eq!(r.challenge(N, 7, 0xbad, 11), Some(0xc0ffee));
        // A response with the wrong cookie, or a forged one, is refused.
        let resp = signed(&p, 7, b"resp");
        let wrong = r.response(&p, N, &presented(7, 200, 1, &resp), 1, &[b"resp"], 11);
        assert_eq!(wrong, Err(Reject::BadResponse));
        let forged = r.response(
            &p,
            N,
            &presented(7, 200, 1, &[0; 32]),
            0xc0ffee,
            &[b"resp"],
            11,
        );
        assert_eq!(forged, Err(Reject::BadDigest));
        // Messages before the response stay dropped.
        let during = r.check(&p, N, Some(&presented(7, 150, 1, &d)), &[b"old"], 11);
        assert_eq!(during, Err(Reject::AwaitingChallenge));
        let ok = r.response(
            &p,
            N,
            &presented(7, 200, 1, &resp),
            0xc0ffee,
            &[b"resp"],
            11,
        );
        assert!(ok.is_ok());
        assert_eq!(r.pending_challenges(), 0);
        // The old message, replayed now, is refused; a newer one passes.
        let replay = r.check(
            &p,
            N,
            Some(&presented(7, 100, HANDSHAKE, &d)),
            &[b"old"],
            12,
        );
        assert_eq!(replay, Err(Reject::Replayed));
        let newer = r.check(
            &p,
            N,
            Some(&presented(7, 201, HANDSHAKE, &d)),
            &[b"old"],
            12,
        );
        assert!(newer.is_ok());
        // A second response to the (now answered) challenge is unsolicited.
        let late = r.response(
            &p,
            N,
            &presented(7, 300, 1, &resp),
            0xc0ffee,
            &[b"resp"],
            12,
        );
        assert_eq!(late, Err(Reject::BadResponse));
    }

    #[test]
    fn without_handshake_the_first_number_is_trusted() {
        let p = policy(Mode::Require, true);
        let mut r = Receiver::new(state());
        let d = signed(&p, 7, b"m");
        assert!(
            r.check(&p, N, Some(&presented(7, 1, 0, &d)), &[b"m"], 1)
                .is_ok()
        );
        let forged = r.check(
            &p,
            N,
            Some(&presented(7, 2, HANDSHAKE, &[1; 32])),
            &[b"m"],
            1,
        );
        assert_eq!(forged, Err(Reject::BadDigest));
        assert_eq!(r.pending_challenges(), 0);
    }

    #[test]
    fn neighbour_chains_override_the_interface_chain() {
        let mut p = policy(Mode::Require, false);
        let mut other = KeyChain::new();
        other
            .insert(Key::new(7, Algorithm::HmacSha1, b"neighbour").unwrap())
            .unwrap();
        p.neighbors.push((N, other));
        let mut r = Receiver::new(state());
        let by_iface = signed(&p, 7, b"m");
        let got = r.check(&p, N, Some(&presented(7, 1, 0, &by_iface)), &[b"m"], 1);
        assert_eq!(got, Err(Reject::BadDigest));
        let by_neighbour = p.neighbors[0].1.get(7).unwrap().digest(&[b"m"]);
        let got = r.check(
            &p,
            N,
            Some(&presented(7, 1, 0, by_neighbour.as_bytes())),
            &[b"m"],
            1,
        );
        assert!(got.is_ok());
    }

    #[test]
    fn sender_numbers_increase_per_key_and_follow_the_send_key() {
        let mut keys = KeyChain::new();
        keys.insert(
            Key::new(1, Algorithm::HmacMd5, b"a")
                .unwrap()
                .with_send(Lifetime::new(0, 20)),
        )
        .unwrap();
        keys.insert(
            Key::new(2, Algorithm::HmacMd5, b"b")
                .unwrap()
                .with_send(Lifetime::new(15, u64::MAX)),
        )
        .unwrap();
        let p = Policy::new(Mode::Require, keys);
        let mut s = Sender::new(state());
        let (k, a) = s.next(&p, None, 10).unwrap();
        assert_eq!(k.id(), 1);
        let (_, b) = s.next(&p, None, 10).unwrap();
        assert!(b > a);
        // Rollover: the newer key takes over during the overlap.
        let (k, c) = s.next(&p, None, 16).unwrap();
        assert_eq!(k.id(), 2);
        assert_eq!(c, 16 << 32);
        assert!(s.next(&Policy::default(), None, 16).is_none());
    }

    /// Senders sharing the node's numbers (the shards of a sharded node) draw, between them,
    /// one strictly increasing sequence per key; separate ones each start their own.
    #[test]
    fn shared_senders_draw_one_increasing_sequence_per_key() {
        let k1 = Key::new(1, Algorithm::HmacSha256, b"a").unwrap();
        let k2 = Key::new(2, Algorithm::HmacSha256, b"b").unwrap();
        let shared = SharedSequences::default();
        let mut a = Sender::sharing(state(), shared.clone());
        let mut b = Sender::sharing(state(), shared);
        let mut drawn = Vec::new();
        for i in 0..10 {
            let s = if i % 3 == 0 { &mut a } else { &mut b };
            drawn.push(s.next_for(&k1, 100).unwrap());
        }
        assert!(drawn.windows(2).all(|w| w[1] > w[0]), "{drawn:?}");
        assert_eq!(b.next_for(&k2, 100), Some(100 << 32), "a key of its own");
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let mut s = a.clone();
                let k1 = k1.clone();
                std::thread::spawn(move || {
                    (0..1000)
                        .map(|_| s.next_for(&k1, 100).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<u64> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        for v in all.chunks(1000) {
            assert!(v.windows(2).all(|w| w[1] > w[0]));
        }
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "unique across senders");
        assert!(all[0] > drawn[9]);
        let (mut c, mut d) = (Sender::new(state()), Sender::new(state()));
        assert_eq!(
            c.next_for(&k1, 100),
            d.next_for(&k1, 100),
            "unshared: each its own"
        );
    }

    #[test]
    fn mode_names_round_trip() {
        for m in [Mode::Off, Mode::Accept, Mode::Require] {
            assert_eq!(m.as_str().parse::<Mode>(), Ok(m));
        }
        assert!("maybe".parse::<Mode>().is_err());
        let reasons: std::collections::HashSet<_> =
            Reject::ALL.iter().map(|r| r.reason()).collect();
        assert_eq!(reasons.len(), Reject::ALL.len());
    }
}
