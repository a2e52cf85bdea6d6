//! Refresh reduction (RFC 2961): identified messages acknowledged by their neighbour,
//! retransmitted until they are (§6), and once acknowledged refreshed by the identifier alone in
//! Summary Refresh messages (§5); messages to a neighbour sent together in Bundles (§3). All of
//! it only towards neighbours that set the Refresh-Reduction-Capable flag (§2).
//!
//! The sending side keys each Path (per outgoing interface) and Resv (per previous hop) by the
//! state it refreshes and remembers a digest of its contents: the same contents keep their
//! Message_Identifier, changed contents get a new one. The receiving side maps (neighbour,
//! identifier) to the state the message installed, so an Srefresh can extend its lifetime, and
//! answers identifiers it does not know with MESSAGE_ID_NACK.

use super::state::{PsbId, SessionId};
use super::{RsvpEngine, TrafficControl};
use crate::wire::te::{AckKind, MessageId, MessageIdAck, MessageIdList, REFRESH_REDUCTION_CAPABLE};
use crate::wire::{
    CommonHeader, FilterSpec, Message, MsgType, Packet, Session,
    message::refresh::emit_bundle,
    message::{Refresh, Srefresh},
};
use pathwise_core::io::{IPPROTO_RSVP, IfIndex, Transmit, Transport};
use pathwise_core::table::{KeyedMap, KeyedState, keyed_map};
use pathwise_core::time::{Duration, Instant};
use std::collections::BTreeSet;
use std::hash::BuildHasher;
use std::net::IpAddr;

/// Rf, the initial retransmission interval (RFC 2961 §6.2: "a suggested value of 500 ms").
const RAPID_RETRANSMIT: Duration = Duration::from_millis(500);
/// Rl, the number of retransmissions (§6.2: "suggested value of 3").
const RETRY_LIMIT: u8 = 3;
/// Identifiers per Srefresh and acknowledgements per Ack, so a message stays well under a
/// 1500-byte MTU with the largest INTEGRITY object.
const IDS_PER_SREFRESH: usize = 300;
const ACKS_PER_ACK: usize = 100;
/// How long identifiers due for summary refresh are gathered before an Srefresh goes (at most
/// a quarter of the refresh period): state lifetimes are several periods long, so a second's
/// delay costs nothing, and it lets one Srefresh carry the refreshes of many sessions.
const SUMMARY_DELAY: Duration = Duration::from_secs(1);
/// Bytes of the MESSAGE_ID object in front of an identified message's own objects.
const MESSAGE_ID_LEN: usize = 12;

/// A neighbour as messages are addressed to it: address and interface.
type Neighbor = (IpAddr, Option<IfIndex>);

/// What an identified outgoing message refreshes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutKey {
    /// A sender's Path out of an interface.
    Path(Session, FilterSpec, IfIndex),
    /// A session's Resv to a previous hop.
    Resv(Session, IpAddr),
}

#[derive(Clone, Copy, Debug)]
struct OutMsg {
    id: u32,
    digest: u64,
    acked: bool,
    /// Who acknowledged it (the Srefresh goes there).
    neighbor: Option<IpAddr>,
    tries: u8,
}

/// What the state an identified incoming message installed is.
#[derive(Clone, Copy, Debug)]
struct InState {
    session: Session,
    /// The sender, for Path state; `None` for a Resv.
    sender: Option<FilterSpec>,
    refresh_ms: u32,
}

/// Counters of refresh reduction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RefreshCounters {
    /// Identified messages sent (first transmissions and changes).
    pub identified: u64,
    /// Identifiers refreshed through Srefresh instead of a full message.
    pub summarized: u64,
    /// Retransmissions of unacknowledged messages.
    pub retransmitted: u64,
    /// MESSAGE_ID_ACKs sent / received.
    pub acks_sent: u64,
    /// MESSAGE_ID_ACKs received.
    pub acks_received: u64,
    /// MESSAGE_ID_NACKs sent (identifiers an Srefresh named that we did not know).
    pub nacks_sent: u64,
    /// MESSAGE_ID_NACKs received.
    pub nacks_received: u64,
    /// Bundle messages sent.
    pub bundles_sent: u64,
    /// Bundle messages received.
    pub bundles_received: u64,
}

/// Refresh-reduction state of an engine.
#[derive(Debug)]
pub struct RefreshState {
    epoch: u32,
    next_id: u32,
    out: KeyedMap<OutKey, OutMsg>,
    by_id: KeyedMap<u32, OutKey>,
    /// Capable neighbours by address, and the last heard on each interface.
    capable: KeyedMap<IpAddr, IfIndex>,
    on_iface: KeyedMap<IfIndex, IpAddr>,
    /// (neighbour, identifier) → the state its message installed.
    installed: KeyedMap<(IpAddr, u32), InState>,
    /// The identifier currently installing each (neighbour, session, sender).
    current: KeyedMap<(IpAddr, Session, Option<FilterSpec>), u32>,
    acks: Vec<(IpAddr, IfIndex, MessageIdAck)>,
    summaries: Vec<(IpAddr, IfIndex, u32)>,
    /// When the queued summaries go out.
    summaries_due: Option<Instant>,
    retransmit: BTreeSet<(Instant, u32)>,
    hasher: KeyedState,
}

impl RefreshState {
    /// Fresh state; `seed` picks the epoch.
    pub fn new(rng: &mut pathwise_core::rng::SeededRng) -> Self {
        RefreshState {
            epoch: pathwise_core::rand::Rng::random::<u32>(rng) & 0x00ff_ffff,
            next_id: 1,
            out: keyed_map(rng),
            by_id: keyed_map(rng),
            capable: keyed_map(rng),
            on_iface: keyed_map(rng),
            installed: keyed_map(rng),
            current: keyed_map(rng),
            acks: Vec::new(),
            summaries: Vec::new(),
            summaries_due: None,
            retransmit: BTreeSet::new(),
            hasher: KeyedState::from_rng(rng),
        }
    }

    /// When the next retransmission is due.
    pub fn next_deadline(&self) -> Option<Instant> {
        let r = self.retransmit.first().map(|(t, _)| *t);
        match (r, self.summaries_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Heap bytes of its tables.
    pub fn heap_bytes(&self) -> usize {
        fn map<K, V, S>(m: &std::collections::HashMap<K, V, S>) -> usize {
            m.capacity() * (std::mem::size_of::<(K, V)>() + 1)
        }
        map(&self.out)
            + map(&self.by_id)
            + map(&self.capable)
            + map(&self.on_iface)
            + map(&self.installed)
            + map(&self.current)
    }

    /// Forget an outgoing message (its state went).
    pub fn forget(&mut self, key: &OutKey) {
        if let Some(o) = self.out.remove(key) {
            self.by_id.remove(&o.id);
        }
    }
}

/// The neighbour a message came from: its RSVP_HOP (a Path keeps the data sender's IP source
/// hop by hop), else the IP source.
fn neighbor_of(msg: &Message, src: IpAddr) -> IpAddr {
    match msg {
        Message::Path(m) => m.hop.addr,
        Message::Resv(m) => m.hop.addr,
        Message::PathTear(m) => m.hop.addr,
        Message::ResvTear(m) => m.hop.addr,
        Message::ResvErr(m) => m.hop.addr,
        _ => src,
    }
}

impl<T: TrafficControl> RsvpEngine<T> {
    /// Header flags of every message this node sends.
    pub(super) fn header_flags(&self) -> u8 {
        if self.cfg.refresh_reduction {
            REFRESH_REDUCTION_CAPABLE
        } else {
            0
        }
    }

    /// The capable neighbour an identified message goes to, if refresh reduction is on and it
    /// is capable: a Resv's previous hop, or the neighbour heard on a Path's interface.
    fn rr_neighbor(&self, key: &OutKey) -> Option<IpAddr> {
        if !self.cfg.refresh_reduction {
            return None;
        }
        match *key {
            OutKey::Path(_, _, ifx) => self.rr.on_iface.get(&ifx).copied(),
            OutKey::Resv(_, addr) => self.rr.capable.contains_key(&addr).then_some(addr),
        }
    }

    /// Emit a Path or Resv keyed by `key`. Towards a capable neighbour it carries a MESSAGE_ID
    /// asking for an acknowledgement; when its contents are those already acknowledged, only
    /// the identifier is queued for the next Srefresh and `None` is returned (no message).
    pub(super) fn emit_identified(
        &mut self,
        msg: &Message,
        ttl: u8,
        key: Option<OutKey>,
    ) -> Option<Vec<u8>> {
        let flags = self.header_flags();
        let mut payload =
            Vec::with_capacity(msg.buffer_len() + MESSAGE_ID_LEN + super::send::MAX_INTEGRITY_LEN);
        let Some((key, _)) = key.and_then(|k| self.rr_neighbor(&k).map(|n| (k, n))) else {
            msg.emit_with(ttl, flags, &Refresh::default(), &mut payload);
            return Some(payload);
        };
        let placeholder = MessageId {
            flags: MessageId::ACK_DESIRED,
            epoch: self.rr.epoch,
            message_id: 0,
        };
        let refresh = Refresh {
            acks: Vec::new(),
            message_id: Some(placeholder),
        };
        msg.emit_with(ttl, flags, &refresh, &mut payload);
        let body = &payload[CommonHeader::LEN + MESSAGE_ID_LEN..];
        let digest = self.rr.hasher.hash_one(body);
        let now = self.now;
        let id = match self.rr.out.get(&key).copied() {
            Some(o) if o.digest == digest && o.acked => {
                if let Some(n) = o.neighbor {
                    let ifx = match key {
                        OutKey::Path(_, _, ifx) => ifx,
                        OutKey::Resv(..) => self.rr.capable.get(&n).copied().unwrap_or_default(),
                    };
                    self.rr.summaries.push((n, ifx, o.id));
                    self.counters.refresh.summarized += 1;
                    // Sessions refresh on their own jittered timers; their identifiers are
                    // gathered for a while so one Srefresh carries many.
                    let delay = SUMMARY_DELAY.min(self.cfg.refresh / 4);
                    self.rr.summaries_due.get_or_insert(now + delay);
                    return None;
                }
                o.id
            }
            Some(o) if o.digest == digest => o.id,
            old => {
                if let Some(o) = old {
                    self.rr.by_id.remove(&o.id);
                }
                let id = self.rr.next_id;
                self.rr.next_id = self.rr.next_id.wrapping_add(1).max(1);
                self.rr.out.insert(
                    key,
                    OutMsg {
                        id,
                        digest,
                        acked: false,
                        neighbor: None,
                        tries: 0,
                    },
                );
                self.rr.by_id.insert(id, key);
                self.rr.retransmit.insert((now + RAPID_RETRANSMIT, id));
                self.counters.refresh.identified += 1;
                id
            }
        };
        // Message_Identifier: after the 4-byte object header and the Flags/Epoch word.
        let at = CommonHeader::LEN + 8;
        payload[at..at + 4].copy_from_slice(&id.to_be_bytes());
        if let Ok(mut p) = Packet::new_header(&mut payload[..]) {
            p.fill_checksum();
        }
        Some(payload)
    }

    /// Before a message is dispatched: note a capable neighbour, take the acknowledgements it
    /// carries, and remember what its identifier installs (acknowledging it if asked).
    pub(super) fn on_refresh_objects(
        &mut self,
        hdr: &CommonHeader,
        msg: &Message,
        refresh: &Refresh,
        src: IpAddr,
        ifindex: IfIndex,
    ) {
        if !self.cfg.refresh_reduction {
            return;
        }
        let nbr = neighbor_of(msg, src);
        if hdr.flags & REFRESH_REDUCTION_CAPABLE != 0 && !self.is_local(nbr) {
            self.rr.capable.insert(nbr, ifindex);
            self.rr.on_iface.insert(ifindex, nbr);
        }
        for a in &refresh.acks {
            self.on_ack(a, nbr);
        }
        let Some(mid) = refresh.message_id else {
            return;
        };
        let state = match msg {
            Message::Path(p) => Some(InState {
                session: p.session,
                sender: Some(p.sender.template),
                refresh_ms: p.time_values.refresh_ms,
            }),
            Message::Resv(r) => Some(InState {
                session: r.session,
                sender: None,
                refresh_ms: r.time_values.refresh_ms,
            }),
            _ => None,
        };
        if let Some(st) = state {
            let slot = (nbr, st.session, st.sender);
            if let Some(old) = self.rr.current.insert(slot, mid.message_id)
                && old != mid.message_id
            {
                self.rr.installed.remove(&(nbr, old));
            }
            self.rr.installed.insert((nbr, mid.message_id), st);
        }
        if mid.flags & MessageId::ACK_DESIRED != 0 {
            self.queue_ack(nbr, ifindex, AckKind::Ack, mid.epoch, mid.message_id);
        }
    }

    fn queue_ack(&mut self, nbr: IpAddr, ifindex: IfIndex, kind: AckKind, epoch: u32, id: u32) {
        self.rr.acks.push((
            nbr,
            ifindex,
            MessageIdAck {
                kind,
                flags: 0,
                epoch,
                message_id: id,
            },
        ));
    }

    /// MESSAGE_ID_ACK: the message arrived, later refreshes may be summaries. MESSAGE_ID_NACK:
    /// the neighbour lost the state; send the full message now.
    fn on_ack(&mut self, a: &MessageIdAck, nbr: IpAddr) {
        if a.epoch != self.rr.epoch {
            return;
        }
        let Some(&key) = self.rr.by_id.get(&a.message_id) else {
            return;
        };
        let Some(o) = self.rr.out.get_mut(&key) else {
            return;
        };
        match a.kind {
            AckKind::Ack => {
                self.counters.refresh.acks_received += 1;
                o.acked = true;
                o.neighbor = Some(nbr);
            }
            AckKind::Nack => {
                self.counters.refresh.nacks_received += 1;
                o.acked = false;
                self.resend(key);
            }
        }
    }

    /// Send the full message an outgoing key stands for again.
    fn resend(&mut self, key: OutKey) {
        match key {
            OutKey::Path(session, sender, ifx) => {
                if let Some(sid) = self.find_session(&session)
                    && let Some(p) = self.find_psb(sid, &sender)
                    && self.psbs[p].oifs.contains(&Some(ifx))
                {
                    self.send_path(p, &[Some(ifx)]);
                }
            }
            OutKey::Resv(session, _) => {
                if let Some(sid) = self.find_session(&session) {
                    self.refresh_upstream(sid, true);
                }
            }
        }
    }

    /// Srefresh (RFC 2961 §5.3): each identifier known from this neighbour refreshes the state
    /// its message installed; unknown ones are answered with MESSAGE_ID_NACK.
    pub(super) fn on_srefresh(&mut self, s: &Srefresh, src: IpAddr, ifindex: IfIndex) {
        // Srefresh has no RSVP_HOP: the neighbour is the IP source.
        let nbr = src;
        let now = self.now;
        for &id in &s.list.message_ids {
            let refreshed = self
                .rr
                .installed
                .get(&(nbr, id))
                .copied()
                .is_some_and(|st| self.refresh_installed(nbr, st, now));
            if !refreshed {
                self.rr.installed.remove(&(nbr, id));
                self.counters.refresh.nacks_sent += 1;
                self.queue_ack(nbr, ifindex, AckKind::Nack, s.list.epoch, id);
            }
        }
    }

    /// Extend the lifetime of state an Srefresh names; whether it was there.
    fn refresh_installed(&mut self, nbr: IpAddr, st: InState, now: Instant) -> bool {
        let Some(sid) = self.find_session(&st.session) else {
            return false;
        };
        let expires = now + self.lifetime(st.refresh_ms);
        match st.sender {
            Some(sender) => {
                let Some(p) = self.find_psb(sid, &sender) else {
                    return false;
                };
                let from = self.psbs[p].phop.map(|ph| self.phops[ph].hop.addr);
                if from != Some(nbr) {
                    return false;
                }
                self.psbs[p].expires = expires;
                true
            }
            None => {
                let rsbs: smallvec::SmallVec<[super::state::RsbId; 2]> = self
                    .rsbs_of(sid)
                    .filter(|&r| {
                        self.rsbs[r]
                            .nhop
                            .is_some_and(|h| self.hops.get(h).addr == nbr)
                    })
                    .collect();
                for &r in &rsbs {
                    self.rsbs[r].expires = expires;
                }
                !rsbs.is_empty()
            }
        }
    }

    /// Retransmit identified messages not yet acknowledged (RFC 2961 §6.2): after Rf, then
    /// doubling, at most Rl times.
    pub(super) fn on_retransmit_timers(&mut self, now: Instant) {
        while let Some(&(at, id)) = self.rr.retransmit.first() {
            if at > now {
                break;
            }
            self.rr.retransmit.pop_first();
            let Some(&key) = self.rr.by_id.get(&id) else {
                continue;
            };
            let Some(o) = self.rr.out.get_mut(&key) else {
                continue;
            };
            if o.acked || o.tries >= RETRY_LIMIT {
                continue;
            }
            o.tries += 1;
            let next = RAPID_RETRANSMIT * (1u32 << o.tries);
            self.rr.retransmit.insert((now + next, id));
            self.counters.refresh.retransmitted += 1;
            self.resend(key);
        }
    }

    /// Forget what a PSB's Path messages were identified by.
    pub(super) fn forget_path(&mut self, p: PsbId) {
        if !self.cfg.refresh_reduction {
            return;
        }
        let psb = &self.psbs[p];
        let session = self.sessions[psb.session].key;
        for ifx in psb.oifs.iter().flatten() {
            self.rr.forget(&OutKey::Path(session, psb.sender, *ifx));
        }
    }

    /// Forget a session's Resv identifiers towards `phop`.
    pub(super) fn forget_resv(&mut self, sid: SessionId, phop: IpAddr) {
        if self.cfg.refresh_reduction {
            let session = self.sessions[sid].key;
            self.rr.forget(&OutKey::Resv(session, phop));
        }
    }

    /// Send what refresh reduction queued while processing an input: Acks and Srefreshes per
    /// neighbour, then everything unicast to one capable neighbour in Bundles.
    pub(super) fn flush_refresh(&mut self) {
        if !self.cfg.refresh_reduction {
            return;
        }
        let mut acks = std::mem::take(&mut self.rr.acks);
        acks.sort_by_key(|(n, i, _)| (*n, *i));
        for group in acks.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
            let (nbr, ifx) = (group[0].0, group[0].1);
            for chunk in group.chunks(ACKS_PER_ACK) {
                let refresh = Refresh {
                    acks: chunk.iter().map(|a| a.2).collect(),
                    message_id: None,
                };
                let n = chunk.iter().filter(|a| a.2.kind == AckKind::Ack).count();
                self.counters.refresh.acks_sent += n as u64;
                let msg = Message::Ack(crate::wire::message::Ack { integrity: None });
                self.send_to_neighbor(&msg, &refresh, nbr, ifx);
            }
        }
        if self.rr.summaries_due.is_some_and(|t| t <= self.now) {
            self.rr.summaries_due = None;
            self.send_summaries();
        }
        self.bundle_transmits();
    }

    /// One Srefresh per neighbour (more when the identifiers do not fit one).
    fn send_summaries(&mut self) {
        let mut ids = std::mem::take(&mut self.rr.summaries);
        ids.sort_unstable();
        ids.dedup();
        for group in ids.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
            let (nbr, ifx) = (group[0].0, group[0].1);
            for chunk in group.chunks(IDS_PER_SREFRESH) {
                let msg = Message::Srefresh(Srefresh {
                    integrity: None,
                    list: MessageIdList {
                        flags: 0,
                        epoch: self.rr.epoch,
                        message_ids: chunk.iter().map(|x| x.2).collect(),
                    },
                });
                self.send_to_neighbor(&msg, &Refresh::default(), nbr, ifx);
            }
        }
    }

    fn send_to_neighbor(&mut self, msg: &Message, refresh: &Refresh, nbr: IpAddr, ifx: IfIndex) {
        if !self.may_send_to(msg.msg_type(), nbr, false) {
            return;
        }
        let mut payload = Vec::with_capacity(
            msg.buffer_len() + refresh.buffer_len() + super::send::MAX_INTEGRITY_LEN,
        );
        msg.emit_with(self.cfg.ttl, self.header_flags(), refresh, &mut payload);
        let src = self.iface_addr(Some(ifx), nbr);
        let mut t = Transmit {
            src: Some(src),
            dst: nbr,
            ifindex: Some(ifx),
            transport: Transport::Raw(IPPROTO_RSVP),
            router_alert: None,
            ttl: self.cfg.ttl,
            payload,
        };
        self.sign_outgoing(&mut t, false);
        self.counters.count_out(msg.msg_type());
        self.transmits.push_back(t);
    }

    /// Put unicast messages queued to the same capable neighbour into Bundles (RFC 2961 §3),
    /// as many as fit an MTU each. Every sub-message is signed on its own, so a Bundle needs
    /// no INTEGRITY of its own; the receiver checks each sub-message.
    fn bundle_transmits(&mut self) {
        if self.transmits.len() < 2 {
            return;
        }
        let mut keep = std::collections::VecDeque::with_capacity(self.transmits.len());
        let mut groups: Vec<(Neighbor, Vec<Transmit>)> = Vec::new();
        for t in self.transmits.drain(..) {
            let bundlable = t.router_alert.is_none()
                && t.transport == Transport::Raw(IPPROTO_RSVP)
                && self.rr.capable.contains_key(&t.dst)
                && t.payload.get(1).is_some_and(|&ty| {
                    !matches!(
                        MsgType::from(ty),
                        MsgType::Hello | MsgType::IntegrityChallenge
                    )
                });
            if !bundlable {
                keep.push_back(t);
                continue;
            }
            match groups.iter_mut().find(|(k, _)| *k == (t.dst, t.ifindex)) {
                Some((_, v)) => v.push(t),
                None => groups.push(((t.dst, t.ifindex), vec![t])),
            }
        }
        let flags = self.header_flags();
        for (_, msgs) in groups {
            if msgs.len() < 2 {
                keep.extend(msgs);
                continue;
            }
            let mtu = msgs[0]
                .ifindex
                .and_then(|i| self.cfg.interfaces.iter().find(|c| c.ifindex == i))
                .map_or(1500, |c| c.mtu as usize)
                .saturating_sub(64);
            let template = msgs[0].clone();
            let mut batch: Vec<Vec<u8>> = Vec::new();
            let mut size = CommonHeader::LEN;
            let flush = |batch: &mut Vec<Vec<u8>>,
                         keep: &mut std::collections::VecDeque<Transmit>,
                         counters: &mut RefreshCounters| {
                match batch.len() {
                    0 => {}
                    1 => keep.push_back(Transmit {
                        payload: batch.pop().unwrap(),
                        ..template.clone()
                    }),
                    _ => {
                        let mut payload = Vec::new();
                        emit_bundle(flags, batch.iter().map(Vec::as_slice), &mut payload);
                        batch.clear();
                        counters.bundles_sent += 1;
                        keep.push_back(Transmit {
                            payload,
                            ..template.clone()
                        });
                    }
                }
            };
            for m in msgs {
                if size + m.payload.len() > mtu {
                    flush(&mut batch, &mut keep, &mut self.counters.refresh);
                    size = CommonHeader::LEN;
                }
                size += m.payload.len();
                batch.push(m.payload);
            }
            flush(&mut batch, &mut keep, &mut self.counters.refresh);
        }
        self.transmits = keep;
    }
}
