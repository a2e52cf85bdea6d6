//! Message integrity in the engine (RFC 2747): every outgoing message is signed under the policy
//! of the interface it leaves by, and every incoming message is checked under the policy of the
//! interface it arrived on *before* it is parsed, so a message that fails can change no state.
//!
//! The "sending system" whose sequence numbers a window tracks (RFC 2747 §4.2) is the neighbour
//! named by the message's RSVP_HOP — a Path keeps the data sender's IP source address hop by
//! hop, so the IP source would name the wrong node — and, for messages without RSVP_HOP
//! (PathErr, ResvConf, the handshake), the IP source.
//!
//! The handshake (§4.3): a receiver without sequence state for a (neighbour, key) whose message
//! sets the handshake flag drops it and sends an Integrity Challenge; the neighbour answers with
//! a signed Integrity Response echoing the cookie, whose sequence number starts the window. A
//! challenged node also refreshes, right away, the state it keeps with the challenger (Path out
//! of that interface, Resv towards previous hops behind it), so a restarted neighbour is back in
//! sync within a round trip instead of a refresh period.

use super::{RsvpEngine, TrafficControl};
use crate::wire::integrity::{Signed, sending_system, sign};
use crate::wire::objects::Challenge;
use crate::wire::{IntegrityResponse, Message, MsgType, Packet};
use pathwise_auth::{Accepted, Mode, Policy, Reject};
use pathwise_core::io::{IfIndex, Received, Transmit};
use pathwise_core::rand::Rng;
use smallvec::SmallVec;
use std::net::IpAddr;
use std::sync::LazyLock;

/// The policy of an interface the configuration does not list: integrity off.
static OFF: LazyLock<Policy> = LazyLock::new(Policy::default);

/// Seconds between refreshes triggered by challenges from one interface: challenges are not
/// authenticated, so they must not be able to make the node re-send all its state at will.
const CHALLENGE_REFRESH_SECS: u64 = 5;

/// How long sent messages are kept for resending to a neighbour that challenges us: the
/// neighbour drops what it receives between its challenge's trigger and our response, a round
/// trip at most.
pub(super) const RESEND_WINDOW: pathwise_core::time::Duration =
    pathwise_core::time::Duration::from_secs(2);

/// At most this many messages are kept for resending.
const RESEND_MAX: usize = 512;

/// How long a shard other than shard 0 waits after a Challenge to the node before it resends
/// and refreshes what it sent the challenger. Shard 0 answers at once; the Response must reach
/// the challenger first, or what the other shards send would find the challenge still pending
/// and be dropped again, and its sequence numbers must be drawn after the Response's, which a
/// handshake makes the start of the window (RFC 2747 §4.3). Well inside [`RESEND_WINDOW`].
pub(super) const CHALLENGE_FOLLOW_DELAY: pathwise_core::time::Duration =
    pathwise_core::time::Duration::from_millis(200);

/// A message recently signed and sent, kept unsigned for resending after a challenge.
#[derive(Debug)]
pub(super) struct Recent {
    at: pathwise_core::time::Instant,
    ifindex: IfIndex,
    peer: Option<IpAddr>,
    unsigned: Transmit,
}

/// Seconds between log lines of one drop reason.
const LOG_INTERVAL_SECS: u64 = 10;

/// What integrity did, beyond drops (which [`super::Counters::drops`] counts by reason).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntegrityCounters {
    /// Messages sent with an INTEGRITY object.
    pub signed: u64,
    /// Messages sent unsigned because the policy signs but no key was valid for sending.
    pub unsigned_no_key: u64,
    /// Received messages whose digest verified.
    pub verified: u64,
    /// Integrity Challenges sent.
    pub challenges_sent: u64,
    /// Integrity Responses sent.
    pub responses_sent: u64,
    /// Messages sent again, freshly signed, to a neighbour that challenged us.
    pub resent: u64,
    /// Challenges answered correctly: sequence state established.
    pub handshakes: u64,
}

/// Log lines per reason at most every [`LOG_INTERVAL_SECS`], with a count of those held back.
#[derive(Debug, Default)]
pub(super) struct LogLimiter {
    last: std::collections::BTreeMap<&'static str, (u64, u64)>,
}

impl LogLimiter {
    /// Whether to log `reason` now, and how many were suppressed since the last line.
    fn admit(&mut self, reason: &'static str, now_secs: u64) -> Option<u64> {
        let (last, held) = self.last.entry(reason).or_insert((0, 0));
        if *last != 0 && now_secs.saturating_sub(*last) < LOG_INTERVAL_SECS {
            *held += 1;
            return None;
        }
        *last = now_secs.max(1);
        Some(std::mem::take(held))
    }
}

impl<T: TrafficControl> RsvpEngine<T> {
    /// Wall-clock seconds (Unix time) at the current input: key lifetimes and sequence numbers
    /// are in wall-clock time, which the engine knows only as an offset to its own clock.
    pub(super) fn wall_secs(&self) -> u64 {
        self.cfg.wall_clock_at_zero + self.now.as_nanos() / 1_000_000_000
    }

    /// Replace the integrity policy — mode and key chain — of interface `ifindex`, e.g. after
    /// the daemon re-read its configuration and key files: it applies from the next message
    /// sent or received. Sequence numbers and replay windows are kept: RFC 2747 §5.1 wants keys
    /// switched "without loss of RSVP state", and §3 sequence numbers that keep increasing.
    /// `false` when `ifindex` is not one of the engine's interfaces.
    pub fn set_integrity(&mut self, ifindex: IfIndex, policy: Policy) -> bool {
        match self
            .cfg
            .interfaces
            .iter_mut()
            .find(|i| i.ifindex == ifindex)
        {
            Some(i) => {
                i.integrity = policy;
                true
            }
            None => false,
        }
    }

    /// The integrity policy of `ifindex`.
    fn policy_of(cfg: &super::Config, ifindex: Option<IfIndex>) -> &Policy {
        ifindex
            .and_then(|ix| cfg.interfaces.iter().find(|i| i.ifindex == ix))
            .map_or(&OFF, |i| &i.integrity)
    }

    /// Sign `t` (an emitted message) under the policy of the interface it leaves by (found by
    /// route lookup when `t.ifindex` is `None`), if that policy signs. With the handshake on and
    /// `keep` set, an unsigned copy is kept for [`RESEND_WINDOW`] so a challenger can be sent
    /// again what it dropped while its sequence state was being established; `keep` is for
    /// what no refresh repeats (Path and plain Resv state is refreshed at once after a
    /// challenge instead).
    pub(super) fn sign_outgoing(&mut self, t: &mut Transmit, keep: bool) {
        // Route lookups only when signing needs them: not on a node without integrity.
        let Some(ifindex) = t
            .ifindex
            .or_else(|| self.fib.lookup(t.dst).map(|(_, r)| r.ifindex))
        else {
            return;
        };
        let policy = Self::policy_of(&self.cfg, Some(ifindex));
        if !policy.signs() {
            return;
        }
        // The neighbour: the destination of a hop-by-hop message, the route's next hop (or the
        // destination itself on a connected prefix) for one that follows the data path.
        let peer = if t.router_alert.is_some() {
            self.fib
                .lookup(t.dst)
                .map(|(_, r)| r.next_hop.unwrap_or(t.dst))
        } else {
            Some(t.dst)
        };
        let now = self.wall_secs();
        let Some((key, seq)) = self.integrity_tx.next(policy, peer, now) else {
            self.counters.integrity.unsigned_no_key += 1;
            return;
        };
        if policy.challenge && keep {
            while self.recent.len() >= RESEND_MAX
                || self
                    .recent
                    .front()
                    .is_some_and(|r| r.at + RESEND_WINDOW < self.now)
            {
                self.recent.pop_front();
            }
            self.recent.push_back(Recent {
                at: self.now,
                ifindex,
                peer,
                unsigned: t.clone(),
            });
        }
        sign(&mut t.payload, key, seq, policy.flags());
        self.counters.integrity.signed += 1;
    }

    /// RFC 2747 §4.2: whether a received message may be processed. Handshake messages are
    /// consumed here.
    pub(super) fn check_integrity(&mut self, rx: &Received<'_>) -> bool {
        let Ok(header) = Packet::new_checked(rx.payload) else {
            return true; // the parser counts it
        };
        match header.msg_type() {
            MsgType::IntegrityChallenge => {
                self.on_challenge(rx);
                return false;
            }
            MsgType::IntegrityResponse => {
                self.on_response(rx);
                return false;
            }
            _ => {}
        }
        let policy = Self::policy_of(&self.cfg, Some(rx.ifindex));
        if policy.mode == Mode::Off {
            return true; // nothing to check, and no reason to look for the object
        }
        let signed = match Signed::locate(rx.payload) {
            Ok(s) => s,
            Err(_) => return true, // a malformed INTEGRITY object fails parsing, counted there
        };
        let sender = sending_system(rx.payload, rx.src);
        let presented = signed.as_ref().map(Signed::presented);
        let digested = signed.as_ref().map(Signed::digested);
        let now = self.wall_secs();
        let parts: &[&[u8]] = digested.as_ref().map_or(&[], |d| &d[..]);
        match self
            .integrity_rx
            .check(policy, sender, presented.as_ref(), parts, now)
        {
            Ok(Accepted::Verified { .. }) => {
                self.counters.integrity.verified += 1;
                true
            }
            Ok(Accepted::Unchecked) => true,
            Err(Reject::AwaitingChallenge) => {
                let key_id = presented.map_or(0, |p| p.key_id);
                self.integrity_reject(Reject::AwaitingChallenge, sender, rx.ifindex);
                self.send_challenge(sender, key_id, rx.ifindex);
                false
            }
            Err(r) => {
                self.integrity_reject(r, sender, rx.ifindex);
                false
            }
        }
    }

    /// Count a refused message by reason and log it, rate-limited.
    fn integrity_reject(&mut self, r: Reject, sender: IpAddr, ifindex: IfIndex) {
        self.counters.drop(r.reason());
        if let Some(held) = self.integrity_log.admit(r.reason(), self.wall_secs()) {
            tracing::warn!(
                reason = r.reason(),
                %sender,
                ifindex = ifindex.0,
                suppressed = held,
                "rsvp message failed integrity check"
            );
        }
    }

    fn send_challenge(&mut self, to: IpAddr, key_id: u64, ifindex: IfIndex) {
        let drawn = self.rng.random::<u64>();
        let cookie = self.cfg.shard.as_ref().map_or(drawn, |s| s.cookie(drawn));
        let now = self.wall_secs();
        let Some(cookie) = self.integrity_rx.challenge(to, key_id, cookie, now) else {
            return;
        };
        let msg = Message::IntegrityChallenge(crate::wire::IntegrityChallenge {
            challenge: Challenge { key_id, cookie },
        });
        let mut payload = Vec::with_capacity(msg.buffer_len());
        // Flagged as every message of this node is (RFC 2961 §2: the bit describes the node).
        msg.emit_with(
            self.cfg.ttl,
            self.header_flags(),
            &crate::wire::message::Refresh::default(),
            &mut payload,
        );
        let src = self.iface_addr(Some(ifindex), to);
        self.counters.integrity.challenges_sent += 1;
        self.push_transmit(MsgType::IntegrityChallenge, payload, src, to, ifindex);
    }

    /// An Integrity Challenge (RFC 2747 §4.3): answer with a Response signed under the key it
    /// names, then refresh the state shared with the challenger. Every shard of a sharded node
    /// is handed the Challenge and resends and refreshes its own state; shard 0 alone answers
    /// and counts it, for the node ([`Self::speaks_for_node`]).
    fn on_challenge(&mut self, rx: &Received<'_>) {
        let speaks = self.speaks_for_node();
        let Ok((_, Message::IntegrityChallenge(c))) = Message::parse(rx.payload) else {
            if speaks {
                self.drop_msg("integrity_bad_challenge");
            }
            return;
        };
        let policy = Self::policy_of(&self.cfg, Some(rx.ifindex));
        if !speaks {
            let follow = (rx.ifindex, rx.src);
            if policy.signs()
                && !self
                    .challenge_follow_ups
                    .iter()
                    .any(|f| (f.1, f.2) == follow)
            {
                let at = self.now + CHALLENGE_FOLLOW_DELAY;
                self.challenge_follow_ups
                    .push_back((at, follow.0, follow.1));
            }
            return;
        }
        self.counters.count_in(MsgType::IntegrityChallenge);
        if !policy.signs() {
            self.drop_msg("integrity_off");
            return;
        }
        let now = self.wall_secs();
        // The challenger names a key it received from us: answer only with a key we may still
        // sign or be verified with.
        let Some(key) = policy
            .chain_for(Some(rx.src))
            .get(c.challenge.key_id)
            .filter(|k| k.send.contains(now) || k.accept.contains(now))
        else {
            self.integrity_reject(Reject::UnknownKey, rx.src, rx.ifindex);
            return;
        };
        let Some(seq) = self.integrity_tx.next_for(key, now) else {
            return;
        };
        let msg = Message::IntegrityResponse(IntegrityResponse {
            integrity: None,
            challenge: c.challenge,
        });
        let mut payload = Vec::with_capacity(msg.buffer_len() + super::send::MAX_INTEGRITY_LEN);
        // Flagged as every message of this node is (RFC 2961 §2: the bit describes the node).
        msg.emit_with(
            self.cfg.ttl,
            self.header_flags(),
            &crate::wire::message::Refresh::default(),
            &mut payload,
        );
        sign(&mut payload, key, seq, policy.flags());
        let src = self.iface_addr(Some(rx.ifindex), rx.src);
        self.counters.integrity.responses_sent += 1;
        self.push_transmit(MsgType::IntegrityResponse, payload, src, rx.src, rx.ifindex);
        self.resend_after_challenge(rx.ifindex, rx.src);
        self.refresh_after_challenge(rx.ifindex);
    }

    /// The follow-ups of Challenges to the node that are due ([`CHALLENGE_FOLLOW_DELAY`]).
    pub(super) fn on_challenge_follow_ups(&mut self, now: pathwise_core::time::Instant) {
        while let Some(&(at, ifindex, challenger)) = self.challenge_follow_ups.front() {
            if at > now {
                break;
            }
            self.challenge_follow_ups.pop_front();
            self.resend_after_challenge(ifindex, challenger);
            self.refresh_after_challenge(ifindex);
        }
    }

    /// Send the challenger, freshly signed, what we sent it during the last [`RESEND_WINDOW`]
    /// that no refresh would repeat (a Resv asking for a confirmation, teardowns, errors,
    /// confirmations): it dropped those while waiting for our response.
    fn resend_after_challenge(&mut self, ifindex: IfIndex, challenger: IpAddr) {
        let since = self.now.checked_sub(RESEND_WINDOW).unwrap_or_default();
        let again: Vec<Transmit> = self
            .recent
            .iter()
            .filter(|r| r.at >= since && r.ifindex == ifindex && r.peer == Some(challenger))
            .map(|r| r.unsigned.clone())
            .collect();
        for mut t in again {
            // Not kept again: the original stays in `recent` for the rest of its window.
            self.sign_outgoing(&mut t, false);
            self.counters.integrity.resent += 1;
            self.transmits.push_back(t);
        }
    }

    /// An Integrity Response: it must answer our outstanding challenge and verify.
    fn on_response(&mut self, rx: &Received<'_>) {
        let parsed = Message::parse(rx.payload);
        let (Ok(Some(signed)), Ok((_, Message::IntegrityResponse(r)))) =
            (Signed::locate(rx.payload), parsed)
        else {
            self.drop_msg("integrity_bad_response_format");
            return;
        };
        self.counters.count_in(MsgType::IntegrityResponse);
        let now = self.wall_secs();
        let policy = Self::policy_of(&self.cfg, Some(rx.ifindex));
        let presented = signed.presented();
        let result = if presented.key_id == r.challenge.key_id {
            self.integrity_rx.response(
                policy,
                rx.src,
                &presented,
                r.challenge.cookie,
                &signed.digested(),
                now,
            )
        } else {
            Err(Reject::BadResponse)
        };
        match result {
            Ok(_) => self.counters.integrity.handshakes += 1,
            Err(e) => self.integrity_reject(e, rx.src, rx.ifindex),
        }
    }

    /// Refresh, now, the Path state sent out of `ifindex` and the Resv state sent to previous
    /// hops behind it — at most every [`CHALLENGE_REFRESH_SECS`] per interface.
    fn refresh_after_challenge(&mut self, ifindex: IfIndex) {
        let now = self.wall_secs();
        let last = self.challenge_refreshed.entry(ifindex).or_insert(0);
        if *last != 0 && now.saturating_sub(*last) < CHALLENGE_REFRESH_SECS {
            return;
        }
        *last = now.max(1);
        let sids: Vec<_> = self.sessions.iter().map(|(id, _)| id).collect();
        for sid in sids {
            let psbs: SmallVec<[_; 4]> = self.psbs_of(sid).collect();
            let mut upstream = false;
            for p in psbs {
                if self.psbs[p].oifs.contains(&Some(ifindex)) {
                    self.send_path(p, &[Some(ifindex)]);
                }
                upstream |= self.psbs[p].iif() == Some(ifindex);
            }
            if upstream {
                self.refresh_upstream(sid, true);
            }
        }
    }
}
