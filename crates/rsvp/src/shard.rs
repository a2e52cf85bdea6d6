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
//! too malformed to read goes to shard 0, whose engine counts it as an unsharded engine would;
//! a Hello and an Integrity Challenge go to every shard, each watching its own neighbours and
//! resending its own messages, shard 0 answering for the node; an Integrity Response goes to
//! the shard whose Challenge it answers, named by the cookie ([`OwnShard::cookie`]).
//!
//! **Integrity** (RFC 2747): a signed message the dispatcher cuts into parts (below) is
//! verified here under the interface's policy ([`ShardMap::set_integrity`]) and each part
//! signed again with its key, sequence number and flags, one part per shard, so every shard
//! checks what it is handed and records each number once; one that does not verify goes uncut
//! to one shard, which refuses it and counts why. The shards sign from one sequence per key
//! ([`shard_configs`]).
//! Acknowledgements and Srefresh identifiers (RFC 2961) go by identifier
//! ([`ShardMap::dispatch`]).
//!
//! **Bundles** (RFC 2961 §3.3: "each sub-message is processed as if it was received
//! individually"): when every sub-message of a valid Bundle belongs to one shard, the Bundle
//! goes there whole; otherwise it is split and each sub-message handed to its shard as a
//! message of its own, a sub-message that cannot be read counted as dropped (`bad_bundle`), as
//! the engine does.

use crate::Config;
use crate::engine::MessageIdSpace;
use crate::wire::integrity::{Signed, sending_system, sign};
use crate::wire::message::refresh::bundle_messages;
use crate::wire::message::{Ack, Refresh, Srefresh};
use crate::wire::objects::{Challenge, ObjectHeader, class};
use crate::wire::te::{MessageIdAck, MessageIdList, MessageIds, class as te_class};
use crate::wire::{Message, MsgType, Packet, Session};
use listed::ListedIds;
use pathwise_auth::{Key, Mode, Policy};
use pathwise_core::io::IfIndex;
use pathwise_core::table::KeyedState;
use pathwise_core::time::{Duration, Instant};
use std::hash::BuildHasher;
use std::net::IpAddr;

mod listed;

/// The most shards a daemon runs.
pub const MAX_SHARDS: usize = 64;

/// Which of a node's shards holds a session: the keyed hash of its identity. Part of every
/// [`ShardMap`], and of each shard's engine configuration ([`OwnShard`]), so an engine that
/// picks a session itself (a head end's Tunnel ID) picks one it holds.
#[derive(Clone, Debug)]
pub struct SessionShards {
    shards: usize,
    hasher: KeyedState,
}

impl SessionShards {
    /// The shard holding `session`: the same whatever its Flags (RFC 2205 §A.1, E_Police).
    pub fn of_session(&self, session: &Session) -> usize {
        self.pick(session.identity())
    }

    /// The shard that heads the LSP of this name (`rsvp lsp add`, `[[rsvp.lsp]]`): its
    /// session is only known once that shard has picked a Tunnel ID, so the name decides.
    pub fn of_lsp(&self, name: &str) -> usize {
        self.pick(name.as_bytes())
    }

    /// The shard `key` hashes to.
    fn pick(&self, key: impl std::hash::Hash) -> usize {
        if self.shards == 1 {
            return 0;
        }
        (self.hasher.hash_one(key) % self.shards as u64) as usize
    }
}

/// The shard an engine is, in a sharded node: what it needs to keep to its own sessions.
#[derive(Clone, Debug)]
pub struct OwnShard {
    /// The node's session-to-shard hash.
    pub sessions: SessionShards,
    /// This shard.
    pub index: usize,
}

impl OwnShard {
    /// Whether this shard holds `session`.
    pub fn holds(&self, session: &Session) -> bool {
        self.sessions.of_session(session) == self.index
    }

    /// The cookie of an Integrity Challenge this shard sends, from a random `drawn`: its low
    /// bits name the shard, so the Integrity Response echoing it (RFC 2747 §4.3) is handed
    /// back to the shard waiting for it ([`ShardMap::dispatch`]).
    pub fn cookie(&self, drawn: u64) -> u64 {
        drawn & !COOKIE_SHARD_MASK | self.index as u64
    }
}

/// The low bits of a Challenge cookie that carry the shard ([`OwnShard::cookie`]): room for
/// [`MAX_SHARDS`].
const COOKIE_SHARD_MASK: u64 = 0xff;
const _: () = assert!(MAX_SHARDS as u64 <= COOKIE_SHARD_MASK + 1);

/// Which shard holds a session, and where a received datagram goes.
#[derive(Clone, Debug)]
pub struct ShardMap {
    sessions: SessionShards,
    /// Where neighbours' identified messages went, for their Srefreshes (RFC 2961 §5.3).
    listed: ListedIds,
    /// Messages the dispatcher writes (Srefresh and Ack parts), reused.
    scratch: Vec<u8>,
    /// The interfaces' integrity policies, to vouch for the parts of a signed message it cuts.
    integrity: Vec<(IfIndex, Policy)>,
    /// Unix time in seconds at `Instant` zero (key lifetimes; as the engines' `Config`).
    wall_clock_at_zero: u64,
    /// Parts of signed messages verified and signed again ([`Self::signed_parts`]).
    signed_parts: u64,
}

/// What the dispatcher makes of a message it cuts into parts (RFC 2747 §4.2).
enum Vouch {
    /// Unsigned, or integrity is off on the interface: the parts go unsigned, as it came.
    Unsigned,
    /// Its digest verified: each part goes signed again with its key, sequence number and
    /// flags, so the shard handed it checks it as it would the whole and records the number
    /// once in its window.
    Signed(Box<Key>, u64, u8),
    /// Its digest did not verify (or no key accepts it): it goes whole, uncut, to its
    /// SESSION's shard (0 without one), whose engine refuses it and counts why.
    Refused,
}

/// How one message (not a Bundle) is handed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// Unchanged to this shard.
    One(usize),
    /// Unchanged to every shard: a Hello.
    Every,
    /// In parts: its identifiers or acknowledgements belong to several shards.
    Split,
}

impl ShardMap {
    /// `shards` shards (at least 1), the hash keyed from `seed`.
    pub fn new(shards: usize, seed: u64) -> Self {
        let mut rng = pathwise_core::rng::seeded(seed ^ 0x5348_4152_4453_u64);
        let hasher = KeyedState::from_rng(&mut rng);
        ShardMap {
            sessions: SessionShards {
                shards: shards.max(1),
                hasher,
            },
            listed: ListedIds::new(KeyedState::from_rng(&mut rng)),
            scratch: Vec::new(),
            integrity: Vec::new(),
            wall_clock_at_zero: 0,
            signed_parts: 0,
        }
    }

    /// The integrity policy of interface `ifindex` (as `RsvpEngine::set_integrity`), for the
    /// messages the dispatcher has to cut: with integrity, an Ack or Srefresh naming several
    /// shards' messages, or a message carrying another shard's acknowledgements, is verified
    /// here and each part signed again ([`Self::dispatch`]). Also after a reload, as the
    /// shards' engines are given it.
    pub fn set_integrity(&mut self, ifindex: IfIndex, policy: Policy) {
        self.integrity.retain(|(i, _)| *i != ifindex);
        if policy.mode != Mode::Off {
            self.integrity.push((ifindex, policy));
        }
    }

    /// The integrity policies of every interface of `node`, the node's configuration that
    /// [`shard_configs`] cuts into its shards' ([`Self::set_integrity`]).
    /// Its wall clock (key lifetimes) is theirs too: `Config::wall_clock_at_zero`.
    pub fn set_integrity_of(&mut self, node: &Config) {
        self.wall_clock_at_zero = node.wall_clock_at_zero;
        for i in &node.interfaces {
            self.set_integrity(i.ifindex, i.integrity.clone());
        }
    }

    /// Parts of signed messages this dispatcher verified and signed again for the shards
    /// they went to ([`Self::dispatch`]).
    pub fn signed_parts(&self) -> u64 {
        self.signed_parts
    }

    /// Whether `msg`, received on `ifindex` from `src`, may be cut, and how its parts go.
    fn vouch(&self, now: Instant, ifindex: IfIndex, src: IpAddr, msg: &[u8]) -> Vouch {
        let Some((_, policy)) = self.integrity.iter().find(|(i, _)| *i == ifindex) else {
            return Vouch::Unsigned;
        };
        let signed = match Signed::locate(msg) {
            Ok(Some(signed)) => signed,
            Ok(None) => return Vouch::Unsigned,
            Err(_) => return Vouch::Refused,
        };
        let sender = sending_system(msg, src);
        let p = signed.presented();
        let now_secs = self.wall_clock_at_zero + now.as_nanos() / 1_000_000_000;
        match policy.verify(sender, &p, &signed.digested(), now_secs) {
            Ok(key) => Vouch::Signed(Box::new(key.clone()), p.seq, p.flags),
            Err(_) => Vouch::Refused,
        }
    }

    /// How many shards.
    pub fn len(&self) -> usize {
        self.sessions.shards
    }

    /// The session-to-shard hash alone.
    pub fn sessions(&self) -> &SessionShards {
        &self.sessions
    }

    /// The shard that heads the LSP of this name ([`SessionShards::of_lsp`]).
    pub fn of_lsp(&self, name: &str) -> usize {
        self.sessions.of_lsp(name)
    }

    /// Always false: a map has at least one shard.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Neighbours' identifiers the map knows the shard of, and the heap bytes they take.
    pub fn listed_ids(&self) -> (usize, usize) {
        (self.listed.len(), self.listed.heap_bytes())
    }

    /// The shard holding `session`: the same whatever its Flags (RFC 2205 §A.1, E_Police).
    pub fn of_session(&self, session: &Session) -> usize {
        self.sessions.of_session(session)
    }

    /// The shard of one RSVP message (not a Bundle): its SESSION's, or 0 when it has none
    /// that can be read.
    pub fn of_message(&self, msg: &[u8]) -> usize {
        if self.len() == 1 {
            return 0;
        }
        session_of(msg).map_or(0, |s| self.of_session(&s))
    }

    /// The shard that sent the message a MESSAGE_ID_ACK or NACK names (its identifier's low
    /// bits, [`MessageIdSpace`]); `None` for one none of ours could have sent.
    pub fn of_our_id(&self, message_id: u32) -> Option<usize> {
        MessageIdSpace::owner(message_id, self.len())
    }

    /// Hand a datagram from `src` to its shard(s) at `now`: `to(shard, bytes, src)` with the
    /// source the shard is to see it from. Returns the sub-messages of a Bundle that could not
    /// be read (dropped: `bad_bundle`).
    ///
    /// - A message goes to its SESSION's shard (0 without one), unchanged.
    /// - MESSAGE_ID_ACK/NACKs (RFC 2961 §4.3) name identifiers this node chose, which carry
    ///   the shard that sent the message (§4.5, [`MessageIdSpace`]): acknowledgements for
    ///   another shard than the message's go to it in an Ack message of their own (§4.4), from
    ///   the neighbour that sent them (§4.5: the RSVP_HOP's address, else the IP source).
    /// - An Srefresh's identifiers (§5.3) were chosen by the neighbour: each goes to the shard
    ///   its identified Path or Resv went to, as learned here (`ListedIds`), or to shard 0 when
    ///   that is not known (which NACKs it, §5.4, unless it holds the state); an Srefresh whose
    ///   identifiers belong to several shards is cut into one per shard, each list keeping its
    ///   Epoch and form, the MESSAGE_ID (if any) on the first part.
    /// - A Hello (RFC 3209 §5) goes to every shard: each tracks the liveness of the neighbours
    ///   it has state with, and shard 0 answers for the node (the engine's `Config::shard`).
    /// - A Bundle (§3.3) goes whole to one shard when all its sub-messages would go there
    ///   unchanged, else each sub-message is handed on as above.
    pub fn dispatch(
        &mut self,
        now: Instant,
        (src, ifindex): (IpAddr, IfIndex),
        payload: &[u8],
        mut to: impl FnMut(usize, &[u8], IpAddr),
    ) -> u64 {
        if self.len() == 1 {
            to(0, payload, src);
            return 0;
        }
        let bundle = Packet::new_checked(payload)
            .is_ok_and(|p| p.msg_type() == MsgType::Bundle && p.verify_checksum());
        if !bundle {
            self.learn(now, payload);
            self.route(now, (src, ifindex), payload, &mut to);
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
            self.learn(now, sub);
            match (self.plan(now, src, sub), one) {
                (Plan::Split | Plan::Every, _) => split = true,
                (Plan::One(s), None) => one = Some(s),
                (Plan::One(s), Some(o)) if o != s => split = true,
                (Plan::One(_), Some(_)) => {}
            }
        }
        if !split {
            to(one.unwrap_or(0), payload, src);
            return 0;
        }
        let mut bad = 0;
        for sub in bundle_messages(payload) {
            match sub {
                Ok(sub) => self.route(now, (src, ifindex), sub, &mut to),
                Err(_) => bad += 1,
            }
        }
        bad
    }

    /// Note where an identified Path or Resv goes (RFC 2961 §5.3: an Srefresh names the
    /// identifier of the message that installed the state), keyed by its generator's address,
    /// the RSVP_HOP's (§4.5).
    fn learn(&mut self, now: Instant, msg: &[u8]) {
        let Ok(p) = Packet::new_checked(msg) else {
            return;
        };
        if !matches!(p.msg_type(), MsgType::Path | MsgType::Resv) {
            return;
        }
        let (mut mid, mut hop, mut session, mut refresh) = (None, None, None, Duration::ZERO);
        for obj in ObjectHeader::iter(p.objects()) {
            let Ok((h, body)) = obj else {
                return;
            };
            match h.class {
                te_class::MESSAGE_ID if body.len() >= 8 => {
                    let epoch = u32::from_be_bytes([0, body[1], body[2], body[3]]);
                    let id = u32::from_be_bytes([body[4], body[5], body[6], body[7]]);
                    mid = Some((epoch, id));
                }
                class::RSVP_HOP => hop = addr_at(h.ctype, body),
                class::SESSION => session = Session::parse(h.ctype, body).ok(),
                class::TIME_VALUES if body.len() >= 4 => {
                    let ms = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
                    refresh = Duration::from_millis(u64::from(ms));
                }
                _ => {}
            }
        }
        if let (Some((epoch, id)), Some(hop), Some(session)) = (mid, hop, session) {
            let shard = self.of_session(&session);
            self.listed.learn(now, hop, epoch, id, refresh, shard);
        }
    }

    /// The shard a listed identifier from `nbr` goes to (RFC 2961 §5.3), 0 when not known.
    fn of_listed(&mut self, now: Instant, nbr: IpAddr, epoch: u32, id: u32) -> usize {
        self.listed.lookup(now, nbr, epoch, id).unwrap_or(0)
    }

    /// The shard whose Integrity Challenge an Integrity Response answers: the one its echoed
    /// cookie names ([`OwnShard::cookie`]), 0 when it names none (which then refuses it).
    fn of_response(&self, p: &Packet<&[u8]>) -> usize {
        let cookie = ObjectHeader::iter(p.objects())
            .map_while(Result::ok)
            .find(|(h, _)| h.class == class::CHALLENGE)
            .and_then(|(h, body)| Challenge::parse(h.ctype, body).ok())
            .map_or(0, |c| c.cookie);
        let s = (cookie & COOKIE_SHARD_MASK) as usize;
        if s < self.len() { s } else { 0 }
    }

    /// The shard an acknowledgement in a message bound for `base` goes to.
    fn of_ack(&self, id: u32, base: usize) -> usize {
        self.of_our_id(id).unwrap_or(base)
    }

    /// Whether a message goes unchanged to one shard, read from its object headers (no
    /// allocation).
    fn plan(&mut self, now: Instant, src: IpAddr, msg: &[u8]) -> Plan {
        let Ok(p) = Packet::new_checked(msg) else {
            return Plan::One(0);
        };
        match p.msg_type() {
            // RFC 2747 §4.3: a neighbour challenging this node; every shard resends and
            // refreshes what it sent that way, shard 0 answers for the node.
            MsgType::Hello | MsgType::IntegrityChallenge => return Plan::Every,
            MsgType::IntegrityResponse => return Plan::One(self.of_response(&p)),
            _ => {}
        }
        let srefresh = p.msg_type() == MsgType::Srefresh;
        let base = self.of_message(msg);
        // An Ack or Srefresh is nothing but what it names; any other message goes to its
        // SESSION's shard whatever it carries.
        let parts_only = srefresh || p.msg_type() == MsgType::Ack;
        let mut one: Option<usize> = (!parts_only).then_some(base);
        for obj in ObjectHeader::iter(p.objects()) {
            let Ok((h, body)) = obj else {
                break;
            };
            match h.class {
                te_class::MESSAGE_ID_ACK if body.len() >= 8 => {
                    let id = u32::from_be_bytes([body[4], body[5], body[6], body[7]]);
                    if !same(&mut one, self.of_ack(id, base)) {
                        return Plan::Split;
                    }
                }
                te_class::MESSAGE_ID_LIST if srefresh && body.len() >= 4 => {
                    let epoch = u32::from_be_bytes([0, body[1], body[2], body[3]]);
                    let Some(entry) = list_entry_len(h.ctype) else {
                        continue;
                    };
                    for e in body[4..].chunks_exact(entry) {
                        let id = u32::from_be_bytes([e[0], e[1], e[2], e[3]]);
                        if !same(&mut one, self.of_listed(now, src, epoch, id)) {
                            return Plan::Split;
                        }
                    }
                }
                _ => {}
            }
        }
        Plan::One(one.unwrap_or(base))
    }

    /// Hand one message (not a Bundle) to its shard, or in parts to several ([`Self::dispatch`]).
    fn route(
        &mut self,
        now: Instant,
        (src, ifindex): (IpAddr, IfIndex),
        msg: &[u8],
        to: &mut impl FnMut(usize, &[u8], IpAddr),
    ) {
        match self.plan(now, src, msg) {
            Plan::One(s) => return to(s, msg, src),
            Plan::Every => return (0..self.len()).for_each(|s| to(s, msg, src)),
            Plan::Split => {}
        }
        // Rare: acknowledgements for several shards, or an Srefresh naming several shards'
        // state; parsed in full and written again per shard.
        let base = self.of_message(msg);
        let Ok((hdr, message, refresh)) = Message::parse_refresh(msg) else {
            to(base, msg, src);
            return;
        };
        // RFC 2747: the digest covers the whole message, which its parts no longer are.
        let key = match self.vouch(now, ifindex, src, msg) {
            Vouch::Unsigned => None,
            Vouch::Signed(key, seq, flags) => Some((key, seq, flags)),
            Vouch::Refused => return to(base, msg, src),
        };
        let mut signed_parts = 0;
        let mut sign_part = |part: &mut Vec<u8>| {
            if let Some((key, seq, flags)) = &key {
                sign(part, key, *seq, *flags);
                signed_parts += 1;
            }
        };
        let mut acks: Vec<Vec<MessageIdAck>> = vec![Vec::new(); self.len()];
        for a in &refresh.acks {
            acks[self.of_ack(a.message_id, base)].push(*a);
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        if let Message::Srefresh(_) | Message::Ack(_) = &message {
            let mut lists: Vec<Vec<MessageIdList>> = vec![Vec::new(); self.len()];
            let listed = match &message {
                Message::Srefresh(s) => s.lists.as_slice(),
                _ => &[],
            };
            for list in listed {
                for (shard, ids) in self.cut_list(now, src, list) {
                    lists[shard].push(MessageIdList {
                        flags: list.flags,
                        epoch: list.epoch,
                        ids,
                    });
                }
            }
            let first = lists.iter().position(|l| !l.is_empty());
            for shard in 0..self.len() {
                let acks = std::mem::take(&mut acks[shard]);
                let lists = std::mem::take(&mut lists[shard]);
                let refresh = Refresh {
                    acks,
                    message_id: refresh.message_id.filter(|_| Some(shard) == first),
                };
                let part = if lists.is_empty() {
                    Message::Ack(Ack { integrity: None })
                } else {
                    Message::Srefresh(Srefresh {
                        integrity: None,
                        lists,
                    })
                };
                if lists_or_acks(&part, &refresh) {
                    scratch.clear();
                    part.emit_with(hdr.send_ttl, hdr.flags, &refresh, &mut scratch);
                    sign_part(&mut scratch);
                    to(shard, &scratch, src);
                }
            }
        } else {
            // The message itself to its shard, which ignores acknowledgements of identifiers
            // it did not send; the others' in Ack messages from the same neighbour.
            to(base, msg, src);
            let nbr = generator_of(&message).unwrap_or(src);
            for (shard, acks) in acks.into_iter().enumerate() {
                if shard == base || acks.is_empty() {
                    continue;
                }
                scratch.clear();
                let refresh = Refresh {
                    acks,
                    message_id: None,
                };
                Message::Ack(Ack { integrity: None }).emit_with(
                    hdr.send_ttl,
                    hdr.flags,
                    &refresh,
                    &mut scratch,
                );
                sign_part(&mut scratch);
                to(shard, &scratch, nbr);
            }
        }
        self.scratch = scratch;
        self.signed_parts += signed_parts;
    }

    /// A MESSAGE_ID_LIST's identifiers by the shard each goes to, in the list's form.
    fn cut_list(
        &mut self,
        now: Instant,
        src: IpAddr,
        list: &MessageIdList,
    ) -> Vec<(usize, MessageIds)> {
        fn cut<E: Copy>(
            v: &[E],
            shard_of: &mut impl FnMut(&E) -> usize,
            wrap: fn(Vec<E>) -> MessageIds,
        ) -> Vec<(usize, MessageIds)> {
            let mut by: Vec<(usize, Vec<E>)> = Vec::new();
            for e in v {
                let s = shard_of(e);
                match by.iter_mut().find(|(k, _)| *k == s) {
                    Some((_, l)) => l.push(*e),
                    None => by.push((s, vec![*e])),
                }
            }
            by.into_iter().map(|(s, l)| (s, wrap(l))).collect()
        }
        let epoch = list.epoch;
        let mut of = |id: u32| self.of_listed(now, src, epoch, id);
        match &list.ids {
            MessageIds::List(v) => cut(v, &mut |e| of(*e), MessageIds::List),
            MessageIds::Ipv4SrcList(v) => {
                cut(v, &mut |e| of(e.message_id), MessageIds::Ipv4SrcList)
            }
            MessageIds::Ipv6SrcList(v) => {
                cut(v, &mut |e| of(e.message_id), MessageIds::Ipv6SrcList)
            }
            MessageIds::Ipv4McastList(v) => {
                cut(v, &mut |e| of(e.message_id), MessageIds::Ipv4McastList)
            }
            MessageIds::Ipv6McastList(v) => {
                cut(v, &mut |e| of(e.message_id), MessageIds::Ipv6McastList)
            }
        }
    }
}

/// Whether `s` is the one shard seen so far (and note it if none was).
fn same(one: &mut Option<usize>, s: usize) -> bool {
    *one.get_or_insert(s) == s
}

/// Whether a part of a cut message carries anything.
fn lists_or_acks(part: &Message, refresh: &Refresh) -> bool {
    match part {
        Message::Srefresh(s) => !s.lists.is_empty(),
        _ => !refresh.acks.is_empty(),
    }
}

/// The node that generated a message's MESSAGE_ID objects (RFC 2961 §4.5): its RSVP_HOP's
/// address, for messages with one. A hostile RSVP_HOP of 0.0.0.0 names no node (`None`).
fn generator_of(msg: &Message) -> Option<IpAddr> {
    let addr = match msg {
        Message::Path(m) => m.hop.addr,
        Message::Resv(m) => m.hop.addr,
        Message::PathTear(m) => m.hop.addr,
        Message::ResvTear(m) => m.hop.addr,
        Message::ResvErr(m) => m.hop.addr,
        _ => return None,
    };
    Some(addr).filter(|a| !a.is_unspecified())
}

/// The address an RSVP_HOP body starts with (RFC 2205 §A.2; RFC 3473 §8.1.1 for C-Types 3, 4).
fn addr_at(ctype: u8, body: &[u8]) -> Option<IpAddr> {
    match ctype {
        1 | 3 => <[u8; 4]>::try_from(body.get(..4)?).ok().map(IpAddr::from),
        2 | 4 => <[u8; 16]>::try_from(body.get(..16)?).ok().map(IpAddr::from),
        _ => None,
    }
}

/// Bytes per entry of a MESSAGE_ID_LIST form (RFC 2961 §5.1), the identifier first.
fn list_entry_len(ctype: u8) -> Option<usize> {
    use crate::wire::te::ctype as c;
    match ctype {
        c::MESSAGE_ID_LIST => Some(4),
        c::MESSAGE_ID_SRC_LIST_IPV4 => Some(8),
        c::MESSAGE_ID_SRC_LIST_IPV6 => Some(20),
        c::MESSAGE_ID_MCAST_LIST_IPV4 => Some(12),
        c::MESSAGE_ID_MCAST_LIST_IPV6 => Some(36),
        _ => None,
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

/// The engine configuration of each shard of `map`: `node`'s, each with a seed of its own,
/// its share of the expected sessions, a disjoint slice of the label range (RFC 3209 §4.1:
/// a label is allocated by one node; here by one shard of it) and the map's session hash, so
/// the Tunnel IDs it picks as a head end name sessions it holds.
pub fn shard_configs(node: &Config, map: &ShardMap) -> Vec<Config> {
    let shards = map.len();
    if shards == 1 {
        return vec![node.clone()];
    }
    // RFC 2961 §4.5: one Epoch for the node, "randomly" selected at startup, and one
    // increasing sequence of identifiers, each carrying its shard.
    let epoch = pathwise_core::rand::Rng::random::<u32>(&mut pathwise_core::rng::seeded(
        node.seed ^ 0x0045_504f_4348_u64,
    ));
    let ids = MessageIdSpace::for_shards(shards, epoch);
    let hello_instance = node.hello_instance.unwrap_or_else(|| {
        pathwise_core::rand::Rng::random::<u32>(&mut pathwise_core::rng::seeded(
            node.seed ^ 0x0048_454c_4c4f_u64,
        ))
        .max(1)
    });
    // RFC 2747 §3: one strictly increasing sequence per key for the node.
    let sequences = pathwise_auth::SharedSequences::default();
    label_ranges(node.label_range, shards)
        .into_iter()
        .zip(ids)
        .enumerate()
        .map(|(i, (label_range, message_ids))| Config {
            message_ids,
            seed: node
                .seed
                .wrapping_add((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            expected_sessions: node.expected_sessions.div_ceil(shards),
            label_range,
            shard: Some(OwnShard {
                sessions: map.sessions().clone(),
                index: i,
            }),
            // RFC 3209 §5.3: one Src_Instance for the node; it changes only when the node
            // restarts, so no neighbour takes one shard's Hellos for a restart.
            hello_instance: Some(hello_instance),
            integrity_sequences: Some(sequences.clone()),
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
