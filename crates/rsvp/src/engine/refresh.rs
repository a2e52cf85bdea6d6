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
//! The receiving side keeps, per Path or Resv state a neighbour installed, the last identifier
//! received about it, so a message older than the one the state was last changed by is dropped
//! as out of order (§4.5), and the identifier of the message that installed it, so an Srefresh
//! naming (neighbour, Epoch, identifier) can extend its lifetime (any of the §5.1 list forms);
//! identifiers it does not know are answered with MESSAGE_ID_NACK. Per neighbour it keeps the
//! Epoch, so a restart is noticed (§4.5) and the neighbour is sent this node's state towards it
//! at once instead of at the next refresh.
//!
//! Both sides name state by the engine's own indices (a PSB, a session, a neighbour's number),
//! never by copies of SESSION and SENDER_TEMPLATE, and keep one record per state in a table
//! found both by state and by identifier ([`records`]): about 170 bytes per reservation at a
//! transit node where copies of the keys in four hash maps took about 776 (issue #21).

mod records;

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
use records::{Record, Records};
use std::collections::BTreeSet;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

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

/// A neighbour as the refresh tables name it: its number in [`RefreshState`]'s list of
/// neighbours (4 bytes where an address takes 17).
type Nbr = u32;
/// No neighbour (an outgoing message not acknowledged yet).
const NO_NBR: Nbr = Nbr::MAX;

/// What an identified outgoing message refreshes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutKey {
    /// A sender's Path out of an interface.
    Path(PsbId, IfIndex),
    /// A session's Resv to a previous hop.
    Resv(SessionId, IpAddr),
}

/// [`OutKey`] as the table holds it, the previous hop numbered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum OutState {
    Path(PsbId, IfIndex),
    Resv(SessionId, Nbr),
}

/// An identified message this node sent (RFC 2961 §4.5: "the same Message_Identifier value
/// that was used in the RSVP message that first advertised the state being refreshed").
#[derive(Clone, Copy, Debug)]
struct OutMsg {
    state: OutState,
    id: u32,
    digest: u64,
    /// Who acknowledged it (the Srefresh goes there); [`NO_NBR`] until someone did.
    neighbor: Nbr,
    acked: bool,
    tries: u8,
}

impl Record for OutMsg {
    type State = OutState;
    type Id = u32;
    fn state(&self) -> OutState {
        self.state
    }
    fn id(&self) -> Option<u32> {
        Some(self.id)
    }
}

/// State a neighbour's identified messages installed: a sender's Path state, or a session's
/// Resv state from that neighbour (the next hop is part of it: one per next hop).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum InState {
    Path(PsbId),
    Resv(SessionId, Nbr),
}

/// What a neighbour's identified messages about one state last said (RFC 2961 §4.5: "the
/// receiver MUST store the received Message_Identifier value as part of the local Path or Resv
/// state for future reference").
#[derive(Clone, Copy, Debug)]
struct InIds {
    state: InState,
    /// The neighbour that sent them.
    nbr: Nbr,
    /// Epoch of `last` and `installing`.
    epoch: u32,
    /// The Message_Identifier of the last message about the state (Path, Resv or a teardown)
    /// that was not out of order (RFC 2961 §4.5).
    last: u32,
    /// The identifier of the Path or Resv that installed it, which an Srefresh names.
    installing: Option<u32>,
    /// The refresh period that message gave, for the lifetime an Srefresh extends it by.
    refresh_ms: u32,
}

impl Record for InIds {
    type State = InState;
    /// (neighbour, Epoch, Message_Identifier): what an Srefresh names (RFC 2961 §5.3).
    type Id = (Nbr, u32, u32);
    fn state(&self) -> InState {
        self.state
    }
    fn id(&self) -> Option<(Nbr, u32, u32)> {
        self.installing.map(|i| (self.nbr, self.epoch, i))
    }
}

/// Where an engine draws the Message_Identifiers of its trigger messages from and which Epoch
/// it sends (RFC 2961 §4.5): an unsharded engine is shard 0 of 1 with an Epoch of its own; the
/// shards of a node ([`MessageIdSpace::for_shards`]) share the node's Epoch and one counter,
/// each writing its shard number in the low bits of every identifier, so that a neighbour's
/// MESSAGE_ID_ACK or MESSAGE_ID_NACK names the shard that sent the message
/// ([`MessageIdSpace::owner`]).
///
/// §4.5: "The value MUST NOT be changed unless the node or the RSVP agent is restarted" -- the
/// Epoch is the node's, so every shard sends the same one (a neighbour seeing two would take
/// each change for a restart). "When a node is sending a trigger message, the
/// Message_Identifier value MUST have a value that is greater than any other value
/// previously used with the same Epoch field value" -- per address and Epoch, so across
/// shards: identifiers are `counter << bits | shard` from one shared counter, increasing in
/// the order the shards draw them (one atomic add per new or changed message, never per
/// refresh). They wrap at 2^32 together, the low bits unchanged, as §4.5's wrap-around
/// comparison allows.
#[derive(Clone, Debug, Default)]
pub struct MessageIdSpace {
    shard: u32,
    bits: u32,
    epoch: Option<u32>,
    /// `None`: the engine's own counter.
    shared: Option<Arc<AtomicU32>>,
}

impl MessageIdSpace {
    /// The spaces of `shards` shards of one node, sharing `epoch` (24 bits) and one counter.
    pub fn for_shards(shards: usize, epoch: u32) -> Vec<MessageIdSpace> {
        let shards = shards.max(1);
        let counter = Arc::new(AtomicU32::new(1));
        let bits = Self::bits_for(shards);
        (0..shards)
            .map(|i| MessageIdSpace {
                shard: i as u32,
                bits,
                epoch: Some(epoch & 0x00ff_ffff),
                shared: Some(counter.clone()),
            })
            .collect()
    }

    /// Low bits that carry the shard among `shards`.
    fn bits_for(shards: usize) -> u32 {
        shards.max(1).next_power_of_two().trailing_zeros()
    }

    /// The shard among `shards` that sent the message identified by `message_id`, when it is
    /// one this node's shards could have sent.
    pub fn owner(message_id: u32, shards: usize) -> Option<usize> {
        let mask = (1u32 << Self::bits_for(shards)) - 1;
        let s = (message_id & mask) as usize;
        (s < shards.max(1)).then_some(s)
    }

    /// The Epoch it was given (`None`: the engine draws its own).
    pub fn epoch(&self) -> Option<u32> {
        self.epoch
    }

    /// The next identifier, from `local` (the engine's own counter) or the shared one; never 0.
    pub(crate) fn next(&self, local: &mut u32) -> u32 {
        loop {
            let c = match &self.shared {
                Some(c) => c.fetch_add(1, Ordering::Relaxed),
                None => std::mem::replace(local, local.wrapping_add(1)),
            };
            let id = (c << self.bits) | self.shard;
            if id != 0 {
                return id;
            }
        }
    }
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
    /// Neighbours that stopped setting the Refresh-Reduction-Capable flag (RFC 2961 §2): no
    /// Srefresh or Bundle goes to them after it, and their state is refreshed in full.
    pub capability_lost: u64,
    /// Unmatched identifiers of SRC_LIST and MCAST_LIST objects ignored because this node
    /// would not forward the sender's data to the group (RFC 2961 §5.3, the RPF check).
    pub unforwarded_ids: u64,
}

/// Refresh-reduction state of an engine.
#[derive(Debug)]
pub struct RefreshState {
    epoch: u32,
    /// The engine's own counter of identifiers (when [`MessageIdSpace`] shares none).
    next_id: u32,
    ids: MessageIdSpace,
    /// What this node sent, by state and by identifier.
    out: Records<OutMsg>,
    /// (Epoch, Message_Identifier) of the last PathErr or ResvErr received about state this
    /// node sent, for the out-of-order check (RFC 2961 §4.5); rare, so beside `out`.
    err_ids: KeyedMap<OutState, (u32, u32)>,
    /// Capable neighbours by address, and the last heard on each interface.
    capable: KeyedMap<IpAddr, IfIndex>,
    on_iface: KeyedMap<IfIndex, IpAddr>,
    /// What neighbours' identified messages installed, by state and by (neighbour, Epoch,
    /// identifier); forgotten with the state.
    received: Records<InIds>,
    /// Neighbours named in the tables, by number, and their numbers.
    nbrs: Vec<IpAddr>,
    nbr_index: KeyedMap<IpAddr, Nbr>,
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
    /// Fresh state; `rng` picks the epoch. `capacity`: records to make room for on each side
    /// (two per reservation at a transit node: its Path and its Resv).
    pub fn new(
        rng: &mut pathwise_core::rng::SeededRng,
        capacity: usize,
        ids: MessageIdSpace,
    ) -> Self {
        // The same draws from `rng`, in the same order, as before the tables were re-keyed, so
        // the engine's refresh jitter (drawn from the same generator later) is unchanged.
        let drawn = pathwise_core::rand::Rng::random::<u32>(rng) & 0x00ff_ffff;
        RefreshState {
            epoch: ids.epoch.unwrap_or(drawn),
            next_id: 1,
            ids,
            out: Records::with_capacity(capacity, KeyedState::from_rng(rng)),
            err_ids: keyed_map(rng),
            capable: keyed_map(rng),
            on_iface: keyed_map(rng),
            received: Records::with_capacity(capacity, KeyedState::from_rng(rng)),
            nbrs: Vec::new(),
            nbr_index: keyed_map(rng),
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
        self.out.heap_bytes()
            + self.received.heap_bytes()
            + map(&self.err_ids)
            + map(&self.capable)
            + map(&self.on_iface)
            + map(&self.nbr_index)
            + self.nbrs.capacity() * std::mem::size_of::<IpAddr>()
            + map(&self.epochs)
    }

    /// Identified messages this node remembers sending, and states neighbours' identified
    /// messages installed (for tests and the management view).
    pub fn records(&self) -> (usize, usize) {
        (self.out.len(), self.received.len())
    }

    /// The number of a neighbour, if the tables name it.
    fn nbr(&self, addr: IpAddr) -> Option<Nbr> {
        self.nbr_index.get(&addr).copied()
    }

    /// The number of a neighbour, numbered now if it was not. Neighbours stay numbered (like
    /// their Epochs): they are few, and a number is never reused for another address.
    fn nbr_or_insert(&mut self, addr: IpAddr) -> Nbr {
        if let Some(&n) = self.nbr_index.get(&addr) {
            return n;
        }
        let n = Nbr::try_from(self.nbrs.len()).unwrap_or(NO_NBR - 1);
        self.nbrs.push(addr);
        self.nbr_index.insert(addr, n);
        n
    }

    fn nbr_addr(&self, n: Nbr) -> Option<IpAddr> {
        self.nbrs.get(n as usize).copied()
    }

    /// The table's form of an outgoing key.
    fn out_state(&self, key: OutKey) -> Option<OutState> {
        Some(match key {
            OutKey::Path(p, ifx) => OutState::Path(p, ifx),
            OutKey::Resv(sid, addr) => OutState::Resv(sid, self.nbr(addr)?),
        })
    }

    /// Forget an outgoing message (its state went).
    fn forget(&mut self, state: OutState) {
        if let Some(o) = self.out.remove_state(&state) {
            self.err_ids.remove(&o.state);
        }
    }

    /// Forget what a neighbour's messages about one state said (the state went).
    fn forget_received(&mut self, state: InState) {
        self.received.remove_state(&state);
    }
}

/// Whether `new` is below `old` with wrap-around (RFC 2961 §4.5:
/// `if ((int) old_id - (int) new_id > 0) { new value is less than old value; }`).
fn is_older(new: u32, old: u32) -> bool {
    (old.wrapping_sub(new) as i32) > 0
}

/// The state a message from a neighbour is about, as the message names it (RFC 2961 §4.5
/// "the value previously received for the state associated with the message").
#[derive(Clone, Copy, Debug)]
enum MsgState {
    /// Path or PathTear: a sender's Path state.
    Path(Session, FilterSpec),
    /// Resv or ResvTear: the session's Resv state from the neighbour.
    Resv(Session),
    /// PathErr about the Path state this node sent out of an interface.
    PathErr(Session, FilterSpec, IfIndex),
    /// ResvErr about the Resv this node sent to the neighbour.
    ResvErr(Session),
}

/// What a not-out-of-order identified Path, Resv or teardown leaves to be noted once the
/// message is processed (§4.5: "When fully processing a Path or Resv message, the receiver
/// MUST store the received Message_Identifier value as part of the local Path or Resv state"):
/// a new Path or Resv only has state to be part of after its processing made it.
#[derive(Clone, Copy, Debug)]
pub(super) struct ReceivedId {
    nbr: IpAddr,
    mid: MessageId,
    state: MsgState,
    /// The refresh period of a Path or Resv; `None` for a teardown, which installs nothing.
    installs: Option<u32>,
}

/// The state a message is about, for the six messages §4.5 names ("at least: Path, Resv,
/// PathTear, ResvTear, PathErr and ResvErr"); `None` for the others.
fn msg_state(msg: &Message, ifindex: IfIndex) -> Option<MsgState> {
    Some(match msg {
        Message::Path(p) => MsgState::Path(p.session, p.sender.template),
        Message::PathTear(t) => MsgState::Path(t.session, t.sender_template?),
        Message::Resv(r) => MsgState::Resv(r.session),
        Message::ResvTear(t) => MsgState::Resv(t.session),
        // A PathErr comes from a next hop about the Path state sent out of the interface it
        // arrived on; a ResvErr from the previous hop about the Resv sent to it.
        Message::PathErr(e) => MsgState::PathErr(e.session, e.sender.as_ref()?.template, ifindex),
        Message::ResvErr(e) => MsgState::ResvErr(e.session),
        _ => return None,
    })
}

/// Whether installed state is what a listed identifier may name (RFC 2961 §5.3): from a LIST,
/// Resv state or Path state of a unicast session; from a SRC_LIST or MCAST_LIST, Path state of
/// the multicast session `group` from `e.source`.
fn listed_as(
    session: &Session,
    sender: Option<&FilterSpec>,
    e: &ListedId,
    group: Option<IpAddr>,
) -> bool {
    match (e.source, sender) {
        (None, None) => true,
        (None, Some(_)) => !session.dest.is_multicast(),
        (Some(source), Some(sender)) => {
            session.dest.is_multicast() && Some(session.dest) == group && sender.src() == source
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
            OutKey::Path(_, ifx) => self.rr.on_iface.get(&ifx).copied(),
            OutKey::Resv(_, addr) => self.rr.capable.contains_key(&addr).then_some(addr),
        }
    }

    /// Whether an outgoing message is Path state of a multicast session.
    fn is_multicast_path(&self, state: OutState) -> bool {
        match state {
            OutState::Path(p, _) => self
                .psbs
                .get(p)
                .is_some_and(|psb| self.session_dest(psb.session).addr.is_multicast()),
            OutState::Resv(..) => false,
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
            self.payload_buffer(msg.buffer_len() + MESSAGE_ID_LEN + super::send::MAX_INTEGRITY_LEN);
        let Some(key) = key.filter(|k| self.rr_neighbor(k).is_some()) else {
            msg.emit_with(ttl, flags, &Refresh::default(), &mut payload);
            return Some(payload);
        };
        let state = match key {
            OutKey::Path(p, ifx) => OutState::Path(p, ifx),
            OutKey::Resv(sid, addr) => OutState::Resv(sid, self.rr.nbr_or_insert(addr)),
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
        let old = self.rr.out.get_state(&state).copied();
        let id = match old {
            // RFC 2961 §5.3: multicast Path state is refreshed in full (see the module doc).
            Some(o) if o.digest == digest && o.acked && !self.is_multicast_path(state) => {
                if let Some(n) = self.rr.nbr_addr(o.neighbor) {
                    let ifx = match key {
                        OutKey::Path(_, ifx) => ifx,
                        OutKey::Resv(..) => self.rr.capable.get(&n).copied().unwrap_or_default(),
                    };
                    self.rr.summaries.push((n, ifx, o.id));
                    self.counters.refresh.summarized += 1;
                    // Sessions refresh on their own jittered timers; their identifiers are
                    // gathered for a while so one Srefresh carries many.
                    let delay = SUMMARY_DELAY.min(self.cfg.refresh / 4);
                    self.rr.summaries_due.get_or_insert(now + delay);
                    self.recycle(payload);
                    return None;
                }
                o.id
            }
            Some(o) if o.digest == digest => o.id,
            _ => {
                // §4.5: a trigger message's identifier "MUST have a value that is greater than
                // any other value previously used with the same Epoch".
                // Sharded, the identifier also names the shard (see [`MessageIdSpace`]).
                let id = self.rr.ids.next(&mut self.rr.next_id);
                // A new message about the state: the record (and any error identifier noted
                // against the one it replaces) starts afresh.
                self.rr.forget(state);
                self.rr.out.insert(
                    OutMsg {
                        state,
                        id,
                        digest,
                        neighbor: NO_NBR,
                        acked: false,
                        tries: 0,
                    },
                    // Identifiers are this node's own and unique until they wrap; one still
                    // held after 2^32 messages names the new state now.
                    |o| o.id = 0,
                );
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
    /// acknowledge it if asked. `Err(())`: the message is not to be processed; `Ok(Some(_))`:
    /// the identifier to note against the state once it is ([`Self::note_received_id`]).
    pub(super) fn on_refresh_objects(
        &mut self,
        hdr: &CommonHeader,
        msg: &Message,
        refresh: &Refresh,
        src: IpAddr,
        ifindex: IfIndex,
    ) -> Result<Option<ReceivedId>, ()> {
        if !self.cfg.refresh_reduction {
            return Ok(None);
        }
        let nbr = neighbor_of(msg, src);
        if !self.is_local(nbr) {
            if hdr.flags & REFRESH_REDUCTION_CAPABLE != 0 {
                self.rr.capable.insert(nbr, ifindex);
                self.rr.on_iface.insert(ifindex, nbr);
            } else {
                self.lose_capability(nbr);
            }
        }
        // Acknowledgements are taken even from a message dropped below: an acknowledgement
        // stays true however late it comes, and ignoring it only draws retransmissions.
        for a in &refresh.acks {
            self.on_ack(a, nbr);
        }
        let Some(mid) = refresh.message_id else {
            return Ok(None);
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
        let state = msg_state(msg, ifindex);
        if !restarted
            && let Some(state) = state
            && self.is_out_of_order(state, nbr, mid)
        {
            // §4.5: "Out of order messages SHOULD be ignored, i.e., silently dropped", and
            // only "a non-out of order message" is acknowledged.
            self.drop_msg("out_of_order");
            return Err(());
        }
        let mut noted = None;
        match state {
            Some(MsgState::PathErr(session, sender, ifx)) => {
                self.note_error_id(self.sent_path_state(&session, &sender, ifx), mid)
            }
            Some(MsgState::ResvErr(session)) => {
                self.note_error_id(self.sent_resv_state(&session, nbr), mid)
            }
            Some(state @ (MsgState::Path(..) | MsgState::Resv(_))) => {
                let installs = match msg {
                    Message::Path(p) => Some(p.time_values.refresh_ms),
                    Message::Resv(r) => Some(r.time_values.refresh_ms),
                    _ => None,
                };
                noted = Some(ReceivedId {
                    nbr,
                    mid,
                    state,
                    installs,
                });
            }
            None => {}
        }
        if mid.flags & MessageId::ACK_DESIRED != 0 {
            self.queue_ack(nbr, ifindex, AckKind::Ack, mid.epoch, mid.message_id);
        }
        Ok(noted)
    }

    /// The (epoch, identifier) of a PathErr or ResvErr, against the message it is about.
    fn note_error_id(&mut self, state: Option<OutState>, mid: MessageId) {
        if let Some(state) = state
            && self.rr.out.find_state(&state).is_some()
        {
            self.rr.err_ids.insert(state, (mid.epoch, mid.message_id));
        }
    }

    /// The outgoing Path state a PathErr names: a sender's Path out of the interface it came
    /// in on.
    fn sent_path_state(
        &self,
        session: &Session,
        sender: &FilterSpec,
        ifx: IfIndex,
    ) -> Option<OutState> {
        let p = self.find_psb(self.find_session(session)?, sender)?;
        Some(OutState::Path(p, ifx))
    }

    /// The outgoing Resv state a ResvErr from `nbr` names.
    fn sent_resv_state(&self, session: &Session, nbr: IpAddr) -> Option<OutState> {
        Some(OutState::Resv(
            self.find_session(session)?,
            self.rr.nbr(nbr)?,
        ))
    }

    /// The state `nbr` installed that a Path, Resv or teardown is about, as it is now: a PSB
    /// whose previous hop is `nbr`, or a session holding a reservation request from `nbr`;
    /// `None` if this node holds none from it.
    fn held_from(&self, state: MsgState, nbr: IpAddr) -> Option<InState> {
        match state {
            MsgState::Path(session, sender) => {
                let p = self.find_psb(self.find_session(&session)?, &sender)?;
                let from = self.psbs[p].phop().map(|ph| self.phops[ph].hop.addr);
                (from == Some(nbr)).then_some(InState::Path(p))
            }
            MsgState::Resv(session) => {
                let sid = self.find_session(&session)?;
                let n = self.rr.nbr(nbr)?;
                self.rsbs_of(sid)
                    .any(|r| {
                        self.rsbs[r]
                            .nhop()
                            .is_some_and(|h| self.hops.get(h).addr == nbr)
                    })
                    .then_some(InState::Resv(sid, n))
            }
            MsgState::PathErr(..) | MsgState::ResvErr(_) => None,
        }
    }

    /// After an identified Path, Resv or teardown was processed: note its identifier against
    /// the state it is about, if that state is (still) there and from its sender (RFC 2961
    /// §4.5). A Path or Resv's identifier is also the one an Srefresh will name (§5.3); a
    /// teardown leaves the installing identifier of the same Epoch in place.
    pub(super) fn note_received_id(&mut self, r: ReceivedId) {
        if matches!(r.state, MsgState::Resv(_)) {
            // Numbered first, so that the session's Resv state from it can be named.
            self.rr.nbr_or_insert(r.nbr);
        }
        let Some(state) = self.held_from(r.state, r.nbr) else {
            return;
        };
        let nbr = self.rr.nbr_or_insert(r.nbr);
        // A record from another neighbour (the previous hop changed) says nothing about this
        // one's messages.
        let old = self
            .rr
            .received
            .remove_state(&state)
            .filter(|o| o.nbr == nbr);
        let (installing, refresh_ms) = match r.installs {
            Some(refresh_ms) => (Some(r.mid.message_id), refresh_ms),
            None => (
                old.filter(|o| o.epoch == r.mid.epoch)
                    .and_then(|o| o.installing),
                old.map_or(0, |o| o.refresh_ms),
            ),
        };
        self.rr.received.insert(
            InIds {
                state,
                nbr,
                epoch: r.mid.epoch,
                last: r.mid.message_id,
                installing,
                refresh_ms,
            },
            // The neighbour named other state with the same identifier before: the identifier
            // now names this state only.
            |other| other.installing = None,
        );
    }

    /// RFC 2961 §4.5: with the neighbour's Epoch unchanged, a message is out of order when
    /// local state can be associated with it and its Message_Identifier is less than the one
    /// most recently received for that state. "If no local state information can be
    /// associated with the message, the receiver MUST NOT treat the message as out of order."
    /// (Checking the state's own value directly needs no comparison with the sender's largest
    /// identifier first, which §4.5 offers only as a shortcut.)
    fn is_out_of_order(&self, state: MsgState, nbr: IpAddr, mid: MessageId) -> bool {
        let prev = match state {
            MsgState::Path(..) | MsgState::Resv(_) => {
                let Some(held) = self.held_from(state, nbr) else {
                    return false;
                };
                let n = self.rr.nbr(nbr);
                self.rr
                    .received
                    .get_state(&held)
                    .filter(|i| Some(i.nbr) == n)
                    .map(|i| (i.epoch, i.last))
            }
            MsgState::PathErr(session, sender, ifx) => self
                .sent_path_state(&session, &sender, ifx)
                .and_then(|s| self.rr.err_ids.get(&s).copied()),
            MsgState::ResvErr(session) => self
                .sent_resv_state(&session, nbr)
                .and_then(|s| self.rr.err_ids.get(&s).copied()),
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
        let n = self.rr.nbr(nbr);
        let mut states: Vec<OutState> = self
            .rr
            .out
            .iter()
            .map(|o| o.state)
            .filter(|s| match *s {
                OutState::Path(_, ifx) => ifx == ifindex,
                OutState::Resv(_, to) => Some(to) == n,
            })
            .collect();
        // Resvs first, then Paths, in the engine's order; one Resv refresh per session sends
        // to every previous hop.
        states.sort_unstable_by_key(|s| match *s {
            OutState::Resv(sid, _) => (0, sid.index(), 0),
            OutState::Path(p, ifx) => (1, p.index(), ifx.0),
        });
        states.dedup_by(
            |a, b| matches!((a, b), (OutState::Resv(x, _), OutState::Resv(y, _)) if x == y),
        );
        for state in states {
            if let Some(slot) = self.rr.out.find_state(&state) {
                let o = self.rr.out.get_mut(slot);
                o.acked = false;
                o.tries = 0;
                self.rr.retransmit.insert((now + RAPID_RETRANSMIT, o.id));
            }
            self.resend(state);
        }
    }

    /// RFC 2961 §2: "nodes supporting the refresh overhead reduction extensions MUST examine
    /// the flags field of each received RSVP message. If the flag changes from indicating
    /// support to indicating non-support then, unless configured otherwise, Srefresh messages
    /// [...] MUST NOT be used for subsequent state refreshes to that neighbor and Bundle
    /// messages [...] MUST NOT be sent to that neighbor." Forgetting it as capable does both
    /// (Paths and Resvs towards it go out in full and unidentified, §5.6, and nothing is
    /// bundled for it); the summaries already queued for it are dropped, and what it had
    /// acknowledged counts as unacknowledged, so that if it sets the flag again it is sent its
    /// state in full before any summary names it (it may be another implementation now).
    /// Acknowledgements it asks for are still sent (§2: a node may do reliable delivery, §4,
    /// without the flag).
    fn lose_capability(&mut self, nbr: IpAddr) {
        if self.rr.capable.remove(&nbr).is_none() {
            return;
        }
        self.counters.refresh.capability_lost += 1;
        tracing::info!(neighbor = %nbr, "rsvp neighbour no longer refresh-reduction capable: refreshing it in full");
        self.rr.on_iface.retain(|_, a| *a != nbr);
        self.rr.summaries.retain(|s| s.0 != nbr);
        if let Some(n) = self.rr.nbr(nbr) {
            self.rr.out.for_each_mut(|o| {
                if o.neighbor == n {
                    o.acked = false;
                }
            });
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

    /// MESSAGE_ID_ACK: the message arrived, later refreshes may be summaries (RFC 2961 §4.6).
    /// MESSAGE_ID_NACK: the neighbour lost the state; send the full message now (§5.4).
    fn on_ack(&mut self, a: &MessageIdAck, nbr: IpAddr) {
        if a.epoch != self.rr.epoch {
            return;
        }
        let Some(slot) = self.rr.out.find_id(&a.message_id) else {
            return;
        };
        match a.kind {
            AckKind::Ack => {
                self.counters.refresh.acks_received += 1;
                let n = self.rr.nbr_or_insert(nbr);
                let o = self.rr.out.get_mut(slot);
                o.acked = true;
                o.neighbor = n;
            }
            AckKind::Nack => {
                // §5.4: the neighbour has no state for it; send it in full.
                self.counters.refresh.nacks_received += 1;
                let o = self.rr.out.get_mut(slot);
                o.acked = false;
                let state = o.state;
                self.resend(state);
            }
        }
    }

    /// Send the full message an outgoing state stands for again.
    fn resend(&mut self, state: OutState) {
        match state {
            OutState::Path(p, ifx) => {
                if self
                    .psbs
                    .get(p)
                    .is_some_and(|psb| psb.oifs.contains(&Some(ifx)))
                {
                    self.send_path(p, &[Some(ifx)]);
                }
            }
            OutState::Resv(sid, _) => {
                if self.sessions.contains(sid) {
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
        let n = self.rr.nbr(nbr);
        let now = self.now;
        for list in &s.lists {
            for e in list.ids.iter() {
                let group = match list.ids {
                    MessageIds::List(_) => None,
                    MessageIds::Ipv4SrcList(_) | MessageIds::Ipv6SrcList(_) => Some(rx.dst),
                    _ => e.destination,
                };
                let slot = n.and_then(|n| self.rr.received.find_id(&(n, list.epoch, e.message_id)));
                let refreshed = slot.is_some_and(|slot| {
                    let st = *self.rr.received.get(slot);
                    self.listed_state(st.state, &e, group) && self.refresh_installed(nbr, st, now)
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
                // §5.4: the identifier names no state any more; it is forgotten, and NACKed.
                if let Some(slot) = slot {
                    let mut r = self.rr.received.remove(slot);
                    r.installing = None;
                    self.rr.received.insert(r, |_| {});
                }
                self.counters.refresh.nacks_sent += 1;
                self.queue_ack(nbr, rx.ifindex, AckKind::Nack, list.epoch, e.message_id);
            }
        }
    }

    /// Whether installed state is what a listed identifier may name ([`listed_as`]).
    fn listed_state(&self, state: InState, e: &ListedId, group: Option<IpAddr>) -> bool {
        match state {
            InState::Path(p) => self.psbs.get(p).is_some_and(|psb| {
                listed_as(&self.session_key(psb.session), Some(&psb.sender), e, group)
            }),
            InState::Resv(sid, _) => {
                self.sessions.contains(sid) && listed_as(&self.session_key(sid), None, e, group)
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
    fn refresh_installed(&mut self, nbr: IpAddr, st: InIds, now: Instant) -> bool {
        let expires = now + self.lifetime(st.refresh_ms);
        match st.state {
            InState::Path(p) => {
                let Some(psb) = self.psbs.get(p) else {
                    return false;
                };
                let from = psb.phop().map(|ph| self.phops[ph].hop.addr);
                if from != Some(nbr) {
                    return false;
                }
                self.psbs[p].expires = expires;
                true
            }
            InState::Resv(sid, _) => {
                if !self.sessions.contains(sid) {
                    return false;
                }
                let rsbs: smallvec::SmallVec<[super::state::RsbId; 2]> = self
                    .rsbs_of(sid)
                    .filter(|&r| {
                        self.rsbs[r]
                            .nhop()
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
            let Some(slot) = self.rr.out.find_id(&id) else {
                continue;
            };
            let o = self.rr.out.get_mut(slot);
            if o.acked || o.tries >= RETRY_LIMIT {
                continue;
            }
            o.tries += 1;
            let next = RAPID_RETRANSMIT * (1u32 << o.tries);
            let state = o.state;
            self.rr.retransmit.insert((now + next, id));
            self.counters.refresh.retransmitted += 1;
            self.resend(state);
        }
    }

    /// Forget what a PSB's Path messages were identified by, out of every interface (one it
    /// no longer leaves by included), and what its previous hop's said about it: the PSB's
    /// number may be reused.
    pub(super) fn forget_path(&mut self, p: PsbId) {
        if !self.cfg.refresh_reduction {
            return;
        }
        if self.rr.out.len() > 0 {
            for i in 0..self.cfg.interfaces.len() {
                let ifx = self.cfg.interfaces[i].ifindex;
                self.rr.forget(OutState::Path(p, ifx));
            }
        }
        self.rr.forget_received(InState::Path(p));
    }

    /// Forget what a next hop said about a session's Resv state once none of its
    /// reservations is left.
    pub(super) fn forget_resv_from(&mut self, sid: SessionId, nhop: IpAddr) {
        if !self.cfg.refresh_reduction
            || self.rsbs_of(sid).any(|r| {
                self.rsbs[r]
                    .nhop()
                    .is_some_and(|h| self.hops.get(h).addr == nhop)
            })
        {
            return;
        }
        if let Some(n) = self.rr.nbr(nhop) {
            self.rr.forget_received(InState::Resv(sid, n));
        }
    }

    /// Forget a session's Resv identifiers towards `phop`.
    pub(super) fn forget_resv(&mut self, sid: SessionId, phop: IpAddr) {
        if self.cfg.refresh_reduction
            && let Some(state) = self.rr.out_state(OutKey::Resv(sid, phop))
        {
            self.rr.forget(state);
        }
    }

    /// Forget a session's Resv identifiers towards every previous hop, as the session goes:
    /// its number may be reused.
    pub(super) fn forget_session(&mut self, sid: SessionId) {
        if !self.cfg.refresh_reduction || self.rr.out.len() == 0 {
            return;
        }
        // Only capable neighbours are sent identified Resvs.
        let nbrs: smallvec::SmallVec<[Nbr; 8]> = (self.rr.capable.keys())
            .filter_map(|a| self.rr.nbr(*a))
            .collect();
        for n in nbrs {
            self.rr.forget(OutState::Resv(sid, n));
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

#[cfg(test)]
mod size_tests {
    /// Refresh reduction's bytes per reservation are a published figure (docs/BENCHMARKS.md):
    /// four record slots of these sizes per reservation at a transit node.
    #[test]
    fn refresh_records_stay_small() {
        use std::mem::size_of;
        assert!(size_of::<Option<super::OutMsg>>() <= 32);
        assert!(size_of::<Option<super::InIds>>() <= 32);
    }
}
