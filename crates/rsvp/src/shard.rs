//! Which shard of a sharded node holds a session, and where a received datagram goes
//! (issue #21; the daemon's `[daemon] threads = N`).
//!
//! Pure and sans-IO like the engine: the daemon's dispatcher thread and the simulator's sharded
//! node both route with [`ShardMap`], and run one unchanged [`crate::RsvpEngine`] per shard,
//! each configured by [`shard_configs`].
//!
//! **Shard key.** The SESSION object with its Flags cleared ([`Session::identity`]: destination,
//! protocol and port; for an LSP tunnel the end point, Tunnel ID and Extended Tunnel ID, RFC
//! 2205 §3.2 / §A.1, RFC 3209 §4.6.1), hashed with a keyed hash whose key comes from the node's
//! seed. Every message that names a session (Path, Resv, their teardowns, errors and ResvConf)
//! carries a SESSION, so all the state of one session lives in exactly one engine. A message
//! without a readable SESSION (Hello, Ack, Srefresh, Integrity Challenge/Response, or one too
//! malformed to read) goes to shard 0, whose engine counts and answers it as an unsharded
//! engine would.
//!
//! **Bundles** (RFC 2961 §3.3: "each sub-message is processed as if it was received
//! individually"): when every sub-message of a valid Bundle belongs to one shard, the Bundle
//! goes there whole; otherwise it is split and each sub-message handed to its shard as a
//! message of its own, a sub-message that cannot be read counted as dropped (`bad_bundle`), as
//! the engine does.

use crate::Config;
use crate::wire::message::refresh::bundle_messages;
use crate::wire::objects::{ObjectHeader, class};
use crate::wire::{MsgType, Packet, Session};
use pathwise_core::table::KeyedState;
use std::hash::BuildHasher;

/// The most shards a daemon runs.
pub const MAX_SHARDS: usize = 64;

/// Which shard holds a session, and where a received datagram goes.
#[derive(Clone, Debug)]
pub struct ShardMap {
    shards: usize,
    hasher: KeyedState,
}

impl ShardMap {
    /// `shards` shards (at least 1), the hash keyed from `seed`.
    pub fn new(shards: usize, seed: u64) -> Self {
        let mut rng = pathwise_core::rng::seeded(seed ^ 0x5348_4152_4453_u64);
        ShardMap {
            shards: shards.max(1),
            hasher: KeyedState::from_rng(&mut rng),
        }
    }

    /// How many shards.
    pub fn len(&self) -> usize {
        self.shards
    }

    /// Always false: a map has at least one shard.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The shard holding `session`: the same whatever its Flags (RFC 2205 §A.1, E_Police).
    pub fn of_session(&self, session: &Session) -> usize {
        if self.shards == 1 {
            return 0;
        }
        (self.hasher.hash_one(session.identity()) % self.shards as u64) as usize
    }

    /// The shard of one RSVP message (not a Bundle): its SESSION's, or 0 when it has none
    /// that can be read.
    pub fn of_message(&self, msg: &[u8]) -> usize {
        if self.shards == 1 {
            return 0;
        }
        session_of(msg).map_or(0, |s| self.of_session(&s))
    }

    /// Hand `payload` to its shard(s): `to(shard, bytes)` once for a message, once for a
    /// valid Bundle whose sub-messages all belong to one shard, and once per sub-message
    /// otherwise. Returns the sub-messages that could not be read (dropped: `bad_bundle`).
    pub fn dispatch<'a>(&self, payload: &'a [u8], mut to: impl FnMut(usize, &'a [u8])) -> u64 {
        let bundle = Packet::new_checked(payload)
            .is_ok_and(|p| p.msg_type() == MsgType::Bundle && p.verify_checksum());
        if !bundle || self.shards == 1 {
            to(self.of_message(payload), payload);
            return 0;
        }
        // RFC 2961 §3.3: each sub-message is processed as if received on its own.
        let mut one: Option<usize> = None;
        let mut split = false;
        for sub in bundle_messages(payload) {
            let Ok(sub) = sub else {
                split = true;
                continue;
            };
            let s = self.of_message(sub);
            match one {
                None => one = Some(s),
                Some(o) if o != s => split = true,
                Some(_) => {}
            }
        }
        if !split {
            to(one.unwrap_or(0), payload);
            return 0;
        }
        let mut bad = 0;
        for sub in bundle_messages(payload) {
            match sub {
                Ok(sub) => to(self.of_message(sub), sub),
                Err(_) => bad += 1,
            }
        }
        bad
    }
}

/// The SESSION of one RSVP message, if it has one that can be read: a walk over the object
/// headers (RFC 2205 §3.1.2), parsing only the SESSION.
pub fn session_of(msg: &[u8]) -> Option<Session> {
    let p = Packet::new_checked(msg).ok()?;
    for obj in ObjectHeader::iter(p.objects()) {
        let (h, body) = obj.ok()?;
        if h.class == class::SESSION {
            return Session::parse(h.ctype, body).ok();
        }
    }
    None
}

/// The engine configuration of each of `shards` shards: `node`'s, each with a seed of its own,
/// its share of the expected sessions and a disjoint slice of the label range (RFC 3209 §4.1:
/// a label is allocated by one node; here by one shard of it).
pub fn shard_configs(node: &Config, shards: usize) -> Vec<Config> {
    let shards = shards.max(1);
    if shards == 1 {
        return vec![node.clone()];
    }
    label_ranges(node.label_range, shards)
        .into_iter()
        .enumerate()
        .map(|(i, label_range)| Config {
            seed: node
                .seed
                .wrapping_add((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            expected_sessions: node.expected_sessions.div_ceil(shards),
            label_range,
            ..node.clone()
        })
        .collect()
}

/// `range` (first, last; clamped to 16 ..= 2^20 − 1 as the engine does, RFC 3032 §2.1) cut
/// into `n` disjoint contiguous ranges of (nearly) equal size. A range with fewer labels than
/// `n` gives the last shards an empty range (first > last): they allocate none.
pub fn label_ranges(range: (u32, u32), n: usize) -> Vec<(u32, u32)> {
    let first = range.0.max(16);
    let last = range.1.min(pathwise_core::mpls::MAX_LABEL);
    let total = u64::from(last.saturating_sub(first)) + u64::from(last >= first);
    let n64 = n.max(1) as u64;
    let mut at = u64::from(first);
    (0..n64)
        .map(|i| {
            let size = total / n64 + u64::from(i < total % n64);
            let r = (at as u32, (at + size) as u32 - 1);
            at += size;
            if size == 0 {
                (first.max(1), first.max(1) - 1)
            } else {
                r
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
