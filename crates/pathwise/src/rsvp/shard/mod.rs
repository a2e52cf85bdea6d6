//! Sharded RSVP (`[daemon] threads = N`, issue #21): sessions spread over N engines by a hash
//! of their SESSION, each engine with its own state tables and timer wheel, so N cores share the
//! work with no lock on the message path.
//!
//! # The pieces
//!
//! - [`ShardMap`] says which shard holds a session and which shard a received datagram goes
//!   to. The daemon's dispatcher ([`runtime`]) and the simulator's sharded node
//!   ([`sim::ShardedRsvp`]) both route with it, and both run the unchanged
//!   [`pathwise_rsvp::RsvpEngine`] per shard: the same code is tested in simulation and run on
//!   sockets.
//! - [`shard_configs`] derives each shard's engine configuration from the node's: its own
//!   random seed and its own slice of the label range.
//! - [`check_config`] refuses, at `pathwise daemon --check` and at start, the combinations the
//!   shards cannot yet keep correct (below).
//!
//! # Design decisions
//!
//! **Shard key.** The SESSION object with its Flags cleared ([`Session::identity`]: destination,
//! protocol and port; for an LSP tunnel the end point, Tunnel ID and Extended Tunnel ID, RFC
//! 2205 §3.2 / §A.1, RFC 3209 §4.6.1), hashed with a keyed hash whose key comes from the node's
//! seed. Every message that names a session (Path, Resv, their teardowns, errors and ResvConf)
//! carries a SESSION, so all the state of one session (PSBs, RSBs, blockade, the local API's
//! requests) lives in exactly one engine and its processing is exactly the unsharded engine's.
//! A message without a readable SESSION (Hello, Ack, Srefresh, Integrity Challenge/Response,
//! or one too malformed to read) goes to shard 0, whose engine counts and answers it as an
//! unsharded engine would.
//!
//! **Bundles** (RFC 2961 §3.3: "each sub-message is processed as if it was received
//! individually"): when every sub-message of a valid Bundle belongs to one shard, the Bundle
//! goes there whole; otherwise the dispatcher splits it and hands each sub-message to its
//! shard as a message of its own, counting a sub-message it cannot read as dropped
//! (`bad_bundle`), as the engine does.
//!
//! **Receive path.** Raw IP sockets of protocol 46 cannot be spread by the kernel
//! (`SO_REUSEPORT` is for UDP and TCP; every raw socket of a protocol gets a copy of every
//! packet), and a classic BPF filter per shard socket would see the SESSION only at a fixed
//! offset, which INTEGRITY objects, IPv6 and Bundles move. So one dispatcher thread (the
//! daemon's loop) reads the sockets with `recvmmsg`, reads the SESSION of each datagram (a walk
//! over object headers, no parsing of the rest) and hands it to its shard over a lock-free
//! single-producer single-consumer ring ([`rtrb`]), recycling the buffers over a second ring so
//! the steady state allocates nothing. KOM's dispatcher (seed 001 §III.C, Table IV) also locked
//! a central state repository per session, a central timer container, and traffic control per
//! interface on every message; ours takes no lock on the message path: each shard sends on
//! its own sockets, runs its own timer wheel, and takes a lock only when a reservation is
//! installed, changed or removed (below), never for a refresh.
//!
//! **Admission across shards.** All shards (and the QoS NSLP) admit through one
//! [`pathwise_core::tc::SharedTrafficControl`]: the interface budget is checked and taken
//! under its lock in one step, so concurrent reservations on one interface from different
//! shards never over-commit it. The lock is held for one admission (and, with HTB, the netlink
//! exchange that installs the class), not per message.
//!
//! **Labels** (RSVP-TE, RFC 3209 §4.1): the node's label range is cut into N disjoint ranges,
//! one per shard, so label allocation needs no coordination and no two shards hand out the
//! same label.
//!
//! **Management.** Verbs about one session (`rsvp.sender.add`, `rsvp.reserve`, …) go to its
//! shard; views and counters (`show sessions`, `counters`, metrics, `labels`, `neighbors`,
//! `events`) are gathered from every shard and merged.
//!
//! # Not yet with more than one shard
//!
//! Refused by [`check_config`] with the reason, rather than run wrongly:
//!
//! - refresh reduction (RFC 2961): Srefresh lists and MESSAGE_ID_ACKs name messages, not
//!   sessions, and must reach the shard that sent the message (RFC 2961 §4.5 lets the sender
//!   choose Message_Identifiers, so the shard can be encoded in them);
//! - Hello (RFC 3209 §5): one instance per neighbour for the whole node, with neighbour-down
//!   fanned out to every shard;
//! - message integrity (RFC 2747): the sequence numbers of a sending key must increase across
//!   all shards (§3.2, §4.1), and the receive window per sender (§4.2) must see every message;
//! - LSPs headed by this node (`[[rsvp.lsp]]`, `rsvp lsp add`): the head end picks a Tunnel ID
//!   per LSP, and that picks the shard.
//!
//! The default is one shard until these are done; the goal is the number of cores.

pub mod runtime;
pub mod sim;

use crate::config::ConfigError;
use crate::config::{NodeConfig, Source};
use pathwise_core::table::KeyedState;
use pathwise_rsvp::Config;
use pathwise_rsvp::wire::message::refresh::bundle_messages;
use pathwise_rsvp::wire::objects::{ObjectHeader, class};
use pathwise_rsvp::wire::{MsgType, Packet, Session};
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

/// Refuse what the shards cannot yet keep correct (see the module documentation), at the
/// `threads` line.
pub(crate) fn check_config(cx: &Source<'_>, cfg: &NodeConfig, errs: &mut Vec<ConfigError>) {
    let Some(t) = &cfg.daemon.threads else {
        return;
    };
    let n = *t.get_ref();
    let at = |message: String| cx.at(t.span(), "daemon.threads", message);
    if n == 0 || n > MAX_SHARDS {
        errs.push(at(format!("{n}: 1 to {MAX_SHARDS} RSVP shards")));
        return;
    }
    let Some(r) = &cfg.rsvp else {
        return;
    };
    if n == 1 {
        return;
    }
    let why = "(docs/daemon.md, \"Sharded RSVP\")";
    if r.refresh_reduction {
        errs.push(at(format!(
            "threads = {n} cannot run with rsvp.refresh_reduction yet: Srefresh and Ack \
             messages name message IDs, not sessions, and are not routed to the shard that \
             sent them {why}"
        )));
    }
    for (i, iface) in r.interfaces.iter().enumerate() {
        if iface.hello.is_some() {
            errs.push(at(format!(
                "threads = {n} cannot run with rsvp.interface[{i}].hello yet: Hello state is \
                 per neighbour, not per session, and is not shared between shards {why}"
            )));
        }
        if iface
            .integrity
            .as_ref()
            .is_some_and(|s| s.mode.get_ref() != "off")
        {
            errs.push(at(format!(
                "threads = {n} cannot run with rsvp.interface[{i}].integrity yet: RFC 2747 \
                 sequence numbers and replay windows are per key and sender, not per session, \
                 and are not shared between shards {why}"
            )));
        }
    }
    if !r.lsps.is_empty() {
        errs.push(at(format!(
            "threads = {n} cannot run with [[rsvp.lsp]] yet: a head end's Tunnel ID picks its \
             shard, and head-end LSPs are not placed on shards {why}"
        )));
    }
    let (first, last) = r.label_range();
    if u64::from(last.saturating_sub(first.max(16))) + 1 < n as u64 {
        errs.push(at(format!(
            "threads = {n}: rsvp.labels [{first}, {last}] has fewer labels than shards"
        )));
    }
}

#[cfg(test)]
mod tests;
