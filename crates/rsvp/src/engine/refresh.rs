//! Refresh reduction (RFC 2961): identified messages acknowledged by their neighbour,
//! retransmitted until they are (§6), and once acknowledged refreshed by the identifier alone in
//! Summary Refresh messages (§5); messages to a neighbour sent together in Bundles (§3). All of
//! it only towards neighbours that set the Refresh-Reduction-Capable flag (§2).
//!
//! The sending side keys each Path (per outgoing interface) and Resv (per previous hop) by the
//! state it refreshes and remembers a digest of its contents: the same contents keep their
//! Message_Identifier, changed contents get a new one. Path state of multicast sessions is
//! identified but always refreshed by full Path messages: §5.3 lets the summary refresh of
//! multicast Path state (SRC_LIST, MCAST_LIST) be used, never requires it.
//!
//! The receiving side maps (neighbour, Epoch, identifier) to the state the message installed,
//! so an Srefresh can extend its lifetime (any of the §5.1 list forms), and answers identifiers
//! it does not know with MESSAGE_ID_NACK. Per state it keeps the last identifier received, so a
//! message older than the one the state was last changed by is dropped as out of order (§4.5);
//! per neighbour it keeps the Epoch, so a restart is noticed (§4.5) and the neighbour is sent
//! this node's state towards it at once instead of at the next refresh.

use super::state::{PsbId, SessionId};
use super::{RsvpEngine, TrafficControl};
use crate::wire::te::{
    AckKind, ListedId, MessageId, MessageIdAck, MessageIdList, MessageIds,
    REFRESH_REDUCTION_CAPABLE,
};
use crate::wire::{
    CommonHeader, FilterSpec, Message, MsgType, Packet, Session,
    message::refresh::emit_bundle,
    message::{Refresh, Srefresh},
};
use pathwise_core::io::{IPPROTO_RSVP, IfIndex, Received, Transmit, Transport};
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
    /// (Epoch, Message_Identifier) of the last PathErr or ResvErr received about this state,
    /// for the out-of-order check (RFC 2961 §4.5).
    err_id: Option<(u32, u32)>,
}

/// What a neighbour's identified messages about one state (a sender's Path state, or its
/// Resv state for a session) last said.
#[derive(Clone, Copy, Debug)]
struct InIds {
    /// Epoch of `last` and `installing`.
    epoch: u32,
    /// The Message_Identifier of the last message about the state (Path, Resv or a teardown)
    /// that was not out of order (RFC 2961 §4.5).
    last: u32,
    /// The identifier of the Path or Resv that installed it, which an Srefresh names.
    installing: Option<u32>,
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
    /// Neighbours found restarted by a changed Epoch (RFC 2961 §4.5), each sent this node's
    /// state towards it at once.
    pub epoch_changes: u64,
    /// Unmatched identifiers of SRC_LIST and MCAST_LIST objects ignored because this node
    /// would not forward the sender's data to the group (RFC 2961 §5.3, the RPF check).
    pub unforwarded_ids: u64,
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
    /// (neighbour, Epoch, identifier) → the state its message installed.
    installed: KeyedMap<(IpAddr, u32, u32), InState>,
    /// The identifiers last received about each (neighbour, session, sender) (`None`: the
    /// neighbour's Resv state); forgotten with the state.
    current: KeyedMap<(IpAddr, Session, Option<FilterSpec>), InIds>,
    /// The Epoch last received from each neighbour (RFC 2961 §4.5).
    epochs: KeyedMap<IpAddr, u32>,
    acks: Vec<(IpAddr, IfIndex, MessageIdAck)>,
    summaries: Vec<(IpAddr, IfIndex, u32)>,
    /// When the queued summaries go out.
    summaries_due: Option<Instant>,
    retransmit: BTreeSet<(Instant, u32)>,
    /// Messages were queued since the queue was last put into Bundles.
    bundle_due: bool,
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
            epochs: keyed_map(rng),
            acks: Vec::new(),
            summaries: Vec::new(),
            summaries_due: None,
            retransmit: BTreeSet::new(),
            bundle_due: false,
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
            + map(&self.epochs)
    }

    /// Forget an outgoing message (its state went).
    pub fn forget(&mut self, key: &OutKey) {
        if let Some(o) = self.out.remove(key) {
            self.by_id.remove(&o.id);
        }
    }

    /// Forget what a neighbour's messages about one state said (the state went).
    fn forget_received(&mut self, slot: &(IpAddr, Session, Option<FilterSpec>)) {
        if let Some(ids) = self.current.remove(slot)
            && let Some(id) = ids.installing
        {
            self.installed.remove(&(slot.0, ids.epoch, id));
        }
    }
}

/// Whether `new` is below `old` with wrap-around (RFC 2961 §4.5:
/// `if ((int) old_id - (int) new_id > 0) { new value is less than old value; }`).
fn is_older(new: u32, old: u32) -> bool {
    (old.wrapping_sub(new) as i32) > 0
}

/// Where the identifier of a message about some state was last kept (RFC 2961 §4.5 "the value
/// previously received for the state associated with the message").
enum IdSlot {
    /// Path, PathTear (`Some(sender)`), Resv, ResvTear (`None`) from a neighbour.
    Received((IpAddr, Session, Option<FilterSpec>)),
    /// PathErr or ResvErr about state this node sent.
    Error(OutKey),
}

/// Whether an outgoing key is Path state of a multicast session.
fn is_multicast_path(key: &OutKey) -> bool {
    matches!(key, OutKey::Path(s, ..) if s.dest.is_multicast())
}

/// Whether installed state is what a listed identifier may name (RFC 2961 §5.3): from a LIST,
/// Resv state or Path state of a unicast session; from a SRC_LIST or MCAST_LIST, Path state of
/// the multicast session `group` from `e.source`.
fn listed_as(st: InState, e: &ListedId, group: Option<IpAddr>) -> bool {
    match (e.source, st.sender) {
        (None, None) => true,
        (None, Some(_)) => !st.session.dest.is_multicast(),
        (Some(source), Some(sender)) => {
            st.session.dest.is_multicast()
                && Some(st.session.dest) == group
                && sender.src() == source
        }
        (Some(_), None) => false,
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
            // RFC 2961 §5.3: multicast Path state is refreshed in full (see the module doc).
            Some(o) if o.digest == digest && o.acked && !is_multicast_path(&key) => {
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
                        err_id: None,
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
    /// carries, notice a neighbour's restart by its Epoch, drop a message out of order, and
    /// remember what its identifier installs (acknowledging it if asked). Whether the message
    /// is to be processed.
    pub(super) fn on_refresh_objects(
        &mut self,
        hdr: &CommonHeader,
        msg: &Message,
        refresh: &Refresh,
        src: IpAddr,
        ifindex: IfIndex,
    ) -> bool {
        if !self.cfg.refresh_reduction {
            return true;
        }
        let nbr = neighbor_of(msg, src);
        if hdr.flags & REFRESH_REDUCTION_CAPABLE != 0 && !self.is_local(nbr) {
            self.rr.capable.insert(nbr, ifindex);
            self.rr.on_iface.insert(ifindex, nbr);
        }
        // Acknowledgements are taken even from a message dropped below: an acknowledgement
        // stays true however late it comes, and ignoring it only draws retransmissions.
        for a in &refresh.acks {
            self.on_ack(a, nbr);
        }
        let Some(mid) = refresh.message_id else {
            return true;
        };
        // §4.5: "If the received Epoch values differs from the value previously received from
        // the message sender, the message is a trigger message and the receiver MUST fully
        // process the message" -- and "MUST NOT treat the message as out of order".
        let restarted = self
            .rr
            .epochs
            .insert(nbr, mid.epoch)
            .is_some_and(|e| e != mid.epoch);
        if restarted {
            self.counters.refresh.epoch_changes += 1;
            tracing::info!(neighbor = %nbr, epoch = mid.epoch, "rsvp neighbour restarted (new Epoch), resending state");
            self.resync_neighbor(nbr, ifindex);
        }
        let slot = self.id_slot(msg, nbr, ifindex);
        if !restarted
            && let Some(slot) = &slot
            && self.is_out_of_order(slot, mid)
        {
            // §4.5: "Out of order messages SHOULD be ignored, i.e., silently dropped", and
            // only "a non-out of order message" is acknowledged.
            self.drop_msg("out_of_order");
            return false;
        }
        let installs = match msg {
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
        match slot {
            Some(IdSlot::Received(slot)) => {
                let old = self.rr.current.get(&slot).copied();
                // A teardown leaves the installing identifier of the same Epoch in place.
                let mut installing = old
                    .filter(|o| o.epoch == mid.epoch)
                    .and_then(|o| o.installing);
                if let Some(st) = installs {
                    installing = Some(mid.message_id);
                    self.rr
                        .installed
                        .insert((nbr, mid.epoch, mid.message_id), st);
                }
                if let Some(o) = old
                    && let Some(id) = o.installing
                    && (o.epoch, Some(id)) != (mid.epoch, installing)
                {
                    self.rr.installed.remove(&(nbr, o.epoch, id));
                }
                self.rr.current.insert(
                    slot,
                    InIds {
                        epoch: mid.epoch,
                        last: mid.message_id,
                        installing,
                    },
                );
            }
            Some(IdSlot::Error(key)) => {
                if let Some(o) = self.rr.out.get_mut(&key) {
                    o.err_id = Some((mid.epoch, mid.message_id));
                }
            }
            None => {}
        }
        if mid.flags & MessageId::ACK_DESIRED != 0 {
            self.queue_ack(nbr, ifindex, AckKind::Ack, mid.epoch, mid.message_id);
        }
        true
    }

    /// Where the identifiers of messages about the state `msg` installs or changes are kept,
    /// for the six messages §4.5 names ("at least: Path, Resv, PathTear, ResvTear, PathErr and
    /// ResvErr"); `None` for the others.
    fn id_slot(&self, msg: &Message, nbr: IpAddr, ifindex: IfIndex) -> Option<IdSlot> {
        Some(match msg {
            Message::Path(p) => IdSlot::Received((nbr, p.session, Some(p.sender.template))),
            Message::PathTear(t) => IdSlot::Received((nbr, t.session, Some(t.sender_template?))),
            Message::Resv(r) => IdSlot::Received((nbr, r.session, None)),
            Message::ResvTear(t) => IdSlot::Received((nbr, t.session, None)),
            // A PathErr comes from a next hop about the Path state sent out of the interface
            // it arrived on; a ResvErr from the previous hop about the Resv sent to it.
            Message::PathErr(e) => IdSlot::Error(OutKey::Path(
                e.session,
                e.sender.as_ref()?.template,
                ifindex,
            )),
            Message::ResvErr(e) => IdSlot::Error(OutKey::Resv(e.session, nbr)),
            _ => return None,
        })
    }

    /// RFC 2961 §4.5: with the neighbour's Epoch unchanged, a message is out of order when
    /// local state can be associated with it and its Message_Identifier is less than the one
    /// most recently received for that state. "If no local state information can be
    /// associated with the message, the receiver MUST NOT treat the message as out of order."
    /// (Checking the state's own value directly needs no comparison with the sender's largest
    /// identifier first, which §4.5 offers only as a shortcut.)
    fn is_out_of_order(&self, slot: &IdSlot, mid: MessageId) -> bool {
        let prev = match slot {
            IdSlot::Received(key) => {
                let (nbr, session, sender) = *key;
                let Some(sid) = self.find_session(&session) else {
                    return false;
                };
                let held = match sender {
                    Some(sender) => self.find_psb(sid, &sender).is_some_and(|p| {
                        self.psbs[p]
                            .phop
                            .is_some_and(|ph| self.phops[ph].hop.addr == nbr)
                    }),
                    None => self.rsbs_of(sid).any(|r| {
                        self.rsbs[r]
                            .nhop
                            .is_some_and(|h| self.hops.get(h).addr == nbr)
                    }),
                };
                if !held {
                    return false;
                }
                self.rr.current.get(key).map(|i| (i.epoch, i.last))
            }
            IdSlot::Error(key) => self.rr.out.get(key).and_then(|o| o.err_id),
        };
        prev.is_some_and(|(epoch, last)| epoch == mid.epoch && is_older(mid.message_id, last))
    }

    /// A neighbour restarted (its Epoch changed, RFC 2961 §4.5): it lost the state this node
    /// gave it. §4.5 and §5.4 only require that it be resent when the neighbour NACKs an
    /// Srefresh naming it -- at this node's next refresh, up to 1.5 R later (RFC 2205 §3.7).
    /// Sending a refresh early is always allowed (RFC 2205 §3.6 does so towards a new
    /// previous hop), and this happens once per restart, so every identified Path out of the
    /// interface the neighbour is on and every Resv to it is resent now in full, and
    /// retransmitted until the new incarnation acknowledges it (§6).
    fn resync_neighbor(&mut self, nbr: IpAddr, ifindex: IfIndex) {
        let now = self.now;
        let mut keys: Vec<OutKey> = self
            .rr
            .out
            .keys()
            .filter(|k| match **k {
                OutKey::Path(_, _, ifx) => ifx == ifindex,
                OutKey::Resv(_, addr) => addr == nbr,
            })
            .copied()
            .collect();
        // One Resv refresh per session sends to every previous hop.
        keys.sort_unstable_by_key(|k| match k {
            OutKey::Path(s, f, i) => (1, *s, Some(*f), Some(*i)),
            OutKey::Resv(s, _) => (0, *s, None, None),
        });
        keys.dedup_by(|a, b| matches!((a, b), (OutKey::Resv(x, _), OutKey::Resv(y, _)) if x == y));
        for key in keys {
            if let Some(o) = self.rr.out.get_mut(&key) {
                o.acked = false;
                o.tries = 0;
                self.rr.retransmit.insert((now + RAPID_RETRANSMIT, o.id));
            }
            self.resend(key);
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
                // §5.4: the neighbour has no state for it; send it in full.
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
    /// its message installed; unknown ones are answered with MESSAGE_ID_NACK (§5.4). A LIST
    /// names Resv state and Path state of unicast sessions; a SRC_LIST or MCAST_LIST names
    /// Path state of multicast sessions by sender and group (for a SRC_LIST the group is the
    /// Srefresh's IP destination), and an unknown one of those is NACKed only if this node
    /// would forward that sender's data to the group (the RPF check), else ignored.
    pub(super) fn on_srefresh(&mut self, s: &Srefresh, rx: &Received<'_>) {
        // Srefresh has no RSVP_HOP: the neighbour is the IP source.
        let nbr = rx.src;
        let now = self.now;
        for list in &s.lists {
            for e in list.ids.iter() {
                let group = match list.ids {
                    MessageIds::List(_) => None,
                    MessageIds::Ipv4SrcList(_) | MessageIds::Ipv6SrcList(_) => Some(rx.dst),
                    _ => e.destination,
                };
                let key = (nbr, list.epoch, e.message_id);
                let refreshed = self.rr.installed.get(&key).copied().is_some_and(|st| {
                    listed_as(st, &e, group) && self.refresh_installed(nbr, st, now)
                });
                if refreshed {
                    continue;
                }
                if let (Some(source), Some(group)) = (e.source, group)
                    && !self.would_forward(source, group, rx.ifindex)
                {
                    // §5.3: "If the node would not forward packets to the identified group
                    // from a listed sender, a corresponding unmatched Message_Identifier field
                    // is silently ignored."
                    self.counters.refresh.unforwarded_ids += 1;
                    continue;
                }
                self.rr.installed.remove(&key);
                self.counters.refresh.nacks_sent += 1;
                self.queue_ack(nbr, rx.ifindex, AckKind::Nack, list.epoch, e.message_id);
            }
        }
    }

    /// The RPF check of RFC 2961 §5.3: data from `source` to `group` arriving on `iif` is
    /// forwarded by this node (downstream interfaces or a local member).
    fn would_forward(&self, source: IpAddr, group: IpAddr, iif: IfIndex) -> bool {
        self.mcast
            .get(&(source, group))
            .is_some_and(|m| m.iif == Some(iif) && (!m.oifs.is_empty() || m.local_member))
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
        if let Some(ph) = psb.phop {
            let slot = (self.phops[ph].hop.addr, session, Some(psb.sender));
            self.rr.forget_received(&slot);
        }
    }

    /// Forget what a next hop said about a session's Resv state once none of its
    /// reservations is left.
    pub(super) fn forget_resv_from(&mut self, sid: SessionId, nhop: IpAddr) {
        if !self.cfg.refresh_reduction
            || self.rsbs_of(sid).any(|r| {
                self.rsbs[r]
                    .nhop
                    .is_some_and(|h| self.hops.get(h).addr == nhop)
            })
        {
            return;
        }
        let session = self.sessions[sid].key;
        self.rr.forget_received(&(nhop, session, None));
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
        self.rr.bundle_due = true;
    }

    /// Put what is queued into Bundles if anything was queued since the last time: called by
    /// `poll_transmit`, so a driver that hands the engine a batch of datagrams before polling
    /// has the queue bundled once per batch, not walked again after every datagram (which
    /// cost time quadratic in the batch).
    pub(super) fn bundle_if_due(&mut self) {
        if std::mem::take(&mut self.rr.bundle_due) {
            self.bundle_transmits();
        }
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
                    lists: vec![MessageIdList {
                        flags: 0,
                        epoch: self.rr.epoch,
                        ids: MessageIds::List(chunk.iter().map(|x| x.2).collect()),
                    }],
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
    ///
    /// The queue may already hold Bundles: a driver that hands the engine a batch of
    /// datagrams before polling (the daemon does, a whole `recvmmsg` batch) sees this run
    /// once per datagram over everything still queued. A Bundle is never bundled again:
    /// RFC 2961 §3.2 "A sub-message MAY be any message type except for another Bundle
    /// message", and a receiver stops at one (issue #21: neighbours lost the rest of the
    /// outer Bundle, counted `bad_bundle`).
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
                        MsgType::Hello | MsgType::IntegrityChallenge | MsgType::Bundle
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
