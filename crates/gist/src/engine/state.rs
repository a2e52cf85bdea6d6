//! Message routing state (RFC 5971 §4.2.1; thesis §3.3), its two state machines (RFC 5971 §6.2, §6.3;
//! RFC 5972 §6.2, §6.3: Querying-Node and Responding-Node), peers and messaging associations.
//!
//! One `RoutingState` per (MRI, NSLPID, Session ID), in a slab indexed by a seeded hash table.
//! The downstream half is this node's Querying-Node state machine towards the next peer; the
//! upstream half its Responding-Node state machine towards the previous peer. Peers are interned
//! (one `Peer` per interface address, reference counted), so a session holds 4-byte ids, not
//! addresses and identities. Each routing state has one timer, due at the earliest of its
//! deadlines (as the RSVP engine does).

use crate::nslp::{MessageHandle, TransferAttributes};
use crate::wire::{Confirm, Mri, PathCoupledMri, SessionId};
use pathwise_core::time::{Duration, Instant};
use pathwise_core::timer::TimerHandle;
use std::hash::BuildHasher;
use std::net::{IpAddr, Ipv4Addr};
use std::num::NonZeroU32;

/// The key of message routing state: the MRI in its downstream form, the NSLPID and the
/// Session ID (RFC 5971 §4.2.1).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MrsKey {
    /// MRI with the D flag clear.
    pub mri: Mri,
    /// NSLPID.
    pub nslpid: u16,
    /// Session ID.
    pub session_id: SessionId,
}

impl MrsKey {
    /// The key for a message's MRI (either direction).
    pub fn new(mri: &Mri, nslpid: u16, session_id: SessionId) -> Self {
        MrsKey {
            mri: if mri.is_upstream() {
                mri.with_direction(false)
            } else {
                mri.clone()
            },
            nslpid,
            session_id,
        }
    }
}

/// The hash of a routing-state key, from its parts: the same whether the key is a [`MrsKey`]
/// being looked up or a [`StoredKey`] in the slab.
pub(crate) fn key_hash(h: &impl BuildHasher, mri: &Mri, nslpid: u16, sid: &SessionId) -> u64 {
    h.hash_one((mri, nslpid, sid))
}

/// A path-coupled MRI with IPv4 addresses (the common case), packed: 28 bytes where [`Mri`]
/// takes 72. Exact: [`PackedV4::unpack`] gives back the MRI [`PackedV4::pack`] took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PackedV4 {
    source: [u8; 4],
    destination: [u8; 4],
    flow_label: u32,
    spi: u32,
    source_port: u16,
    dest_port: u16,
    source_prefix: u8,
    dest_prefix: u8,
    protocol: u8,
    ds_field: u8,
    /// Which optional fields are present, and the N and D flags (`PackedV4::*` bits).
    flags: u8,
}

impl PackedV4 {
    const NAT: u8 = 1;
    const UPSTREAM: u8 = 1 << 1;
    const PROTOCOL: u8 = 1 << 2;
    const DS_FIELD: u8 = 1 << 3;
    const FLOW_LABEL: u8 = 1 << 4;
    const SPI: u8 = 1 << 5;
    const SOURCE_PORT: u8 = 1 << 6;
    const DEST_PORT: u8 = 1 << 7;

    /// `Some` for a path-coupled MRI whose two addresses are IPv4.
    pub fn pack(mri: &Mri) -> Option<Self> {
        let Mri::PathCoupled(p) = mri else {
            return None;
        };
        let (IpAddr::V4(src), IpAddr::V4(dst)) = (p.source, p.destination) else {
            return None;
        };
        let bit = |present: bool, b: u8| if present { b } else { 0 };
        Some(PackedV4 {
            source: src.octets(),
            destination: dst.octets(),
            flow_label: p.flow_label.unwrap_or(0),
            spi: p.spi.unwrap_or(0),
            source_port: p.source_port.unwrap_or(0),
            dest_port: p.dest_port.unwrap_or(0),
            source_prefix: p.source_prefix,
            dest_prefix: p.dest_prefix,
            protocol: p.protocol.unwrap_or(0),
            ds_field: p.ds_field.unwrap_or(0),
            flags: bit(p.nat, Self::NAT)
                | bit(p.upstream, Self::UPSTREAM)
                | bit(p.protocol.is_some(), Self::PROTOCOL)
                | bit(p.ds_field.is_some(), Self::DS_FIELD)
                | bit(p.flow_label.is_some(), Self::FLOW_LABEL)
                | bit(p.spi.is_some(), Self::SPI)
                | bit(p.source_port.is_some(), Self::SOURCE_PORT)
                | bit(p.dest_port.is_some(), Self::DEST_PORT),
        })
    }

    pub fn unpack(&self) -> Mri {
        let has = |b: u8| self.flags & b != 0;
        let opt = |b: u8, v| has(b).then_some(v);
        Mri::PathCoupled(PathCoupledMri {
            nat: has(Self::NAT),
            source: IpAddr::V4(Ipv4Addr::from(self.source)),
            destination: IpAddr::V4(Ipv4Addr::from(self.destination)),
            source_prefix: self.source_prefix,
            dest_prefix: self.dest_prefix,
            protocol: opt(Self::PROTOCOL, self.protocol),
            ds_field: opt(Self::DS_FIELD, self.ds_field),
            flow_label: has(Self::FLOW_LABEL).then_some(self.flow_label),
            spi: has(Self::SPI).then_some(self.spi),
            source_port: has(Self::SOURCE_PORT).then_some(self.source_port),
            dest_port: has(Self::DEST_PORT).then_some(self.dest_port),
            upstream: has(Self::UPSTREAM),
        })
    }
}

/// The key of message routing state as the slab holds it (RFC 5971 §4.2.1: MRI, NSLPID,
/// Session ID): 48 bytes, where [`MrsKey`] takes 96. An IPv4 path-coupled MRI (the common
/// case) is packed inline, always when [`PackedV4::pack`] takes it (so two equal keys are never
/// stored in different forms); any other MRI is boxed. One enum rather than an MRI enum inside
/// a struct: the NSLPID and Session ID then share the variant's padding with the packed MRI,
/// which keeps the slab slot 8 bytes smaller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StoredKey {
    PathV4 {
        mri: PackedV4,
        nslpid: u16,
        session_id: SessionId,
    },
    Boxed {
        mri: Box<Mri>,
        nslpid: u16,
        session_id: SessionId,
    },
}

impl StoredKey {
    pub fn new(key: MrsKey) -> Self {
        let MrsKey {
            mri,
            nslpid,
            session_id,
        } = key;
        match PackedV4::pack(&mri) {
            Some(mri) => StoredKey::PathV4 {
                mri,
                nslpid,
                session_id,
            },
            None => StoredKey::Boxed {
                mri: Box::new(mri),
                nslpid,
                session_id,
            },
        }
    }

    /// NSLPID.
    pub fn nslpid(&self) -> u16 {
        match self {
            StoredKey::PathV4 { nslpid, .. } | StoredKey::Boxed { nslpid, .. } => *nslpid,
        }
    }

    /// Session ID.
    pub fn session_id(&self) -> SessionId {
        match self {
            StoredKey::PathV4 { session_id, .. } | StoredKey::Boxed { session_id, .. } => {
                *session_id
            }
        }
    }

    /// The MRI (a copy; no allocation unless the method is one GIST does not know).
    pub fn mri(&self) -> Mri {
        match self {
            StoredKey::PathV4 { mri, .. } => mri.unpack(),
            StoredKey::Boxed { mri, .. } => (**mri).clone(),
        }
    }

    /// The key as the rest of the engine names it.
    pub fn key(&self) -> MrsKey {
        MrsKey {
            mri: self.mri(),
            nslpid: self.nslpid(),
            session_id: self.session_id(),
        }
    }

    /// Whether this is `key`.
    pub fn matches(&self, key: &MrsKey) -> bool {
        self.nslpid() == key.nslpid
            && self.session_id() == key.session_id
            && match self {
                StoredKey::PathV4 { mri, .. } => PackedV4::pack(&key.mri).as_ref() == Some(mri),
                StoredKey::Boxed { mri, .. } => **mri == key.mri,
            }
    }

    /// [`key_hash`] of this key.
    pub fn hash(&self, h: &impl BuildHasher) -> u64 {
        let (nslpid, sid) = (self.nslpid(), self.session_id());
        match self {
            StoredKey::PathV4 { mri, .. } => key_hash(h, &mri.unpack(), nslpid, &sid),
            StoredKey::Boxed { mri, .. } => key_hash(h, mri, nslpid, &sid),
        }
    }

    /// Heap bytes it owns.
    pub fn heap_bytes(&self) -> usize {
        match self {
            StoredKey::PathV4 { .. } => 0,
            StoredKey::Boxed { mri, .. } => {
                size_of::<Mri>()
                    + match &**mri {
                        Mri::Other { data, .. } => data.capacity(),
                        _ => 0,
                    }
            }
        }
    }
}

/// Querying-Node states: the three of RFC 5971 §6.2 (Querying-SM). RFC 5972 §6.2 / A.1 draws
/// the same machine as IDLE, Wait Response, Wait MA Establishment and Established Downstream
/// MRS; here "no downstream half" is IDLE, Wait MA Establishment is Established with the
/// Confirm held until the MA connects, and a refresh Query out is RFC 5971's Awaiting Refresh
/// (a substate of Established: NSLP data still flows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueryingState {
    /// A Query is out; no peer yet (or the peer reported with an Error that it holds no state:
    /// RFC 5971 §6.2 Rule 3).
    AwaitingResponse,
    /// A peer answered and the state is in use.
    Established,
    /// A refresh Query is out; the old peer is still used meanwhile.
    AwaitingRefresh,
}

/// Responding-Node states (RFC 5971 §6.3; RFC 5972 §6.3 / A.2 "Wait Confirm" and "Established
/// Upstream MRS").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RespondingState {
    /// Random-cookie mode only: a Response went out and its cookie is kept until the Confirm.
    AwaitingConfirm,
    /// A valid Confirm installed the state.
    Established,
}

/// An index into one of the engine's slabs, kept as index + 1: never zero, so an `Option` of
/// it (each routing-state half holds an optional peer and MA) takes 4 bytes, not 8.
macro_rules! slab_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub(crate) struct $name(NonZeroU32);

        impl $name {
            /// The id of slab entry `index` (slab indices fit in `u32`: the tables are far
            /// smaller, as everywhere else in the engine).
            pub fn new(index: usize) -> Self {
                $name(NonZeroU32::MIN.saturating_add(index as u32))
            }

            /// The slab index.
            pub fn index(self) -> usize {
                (self.0.get() - 1) as usize
            }
        }
    };
}

slab_id!(
    /// A peer, by index into the peer table.
    PeerId
);
slab_id!(
    /// A messaging association, by index into the MA table.
    MaId
);

/// An NSLP message waiting for routing state.
#[derive(Clone, Debug)]
pub(crate) struct Pending {
    pub handle: MessageHandle,
    pub data: Vec<u8>,
    pub transfer: TransferAttributes,
    /// Report its dispatch with a MessageStatus (B.3; [`crate::nslp::SendMessage::report_dispatch`]).
    pub report: bool,
    /// The GIST hop count the NSLP asked for (RFC 5971 §4.3.2: preserved as the message is
    /// forwarded, the lightweight loop control); `None`: the configured one.
    pub hops: Option<u8>,
}

/// Upstream messages waiting for a Confirm, and until when.
#[derive(Debug)]
pub(crate) struct PendingUp {
    pub msgs: Vec<Pending>,
    pub deadline: Instant,
}

/// The downstream half: this node queries.
#[derive(Debug)]
pub(crate) struct QuerySide {
    pub state: QueryingState,
    pub peer: Option<PeerId>,
    pub cookie: u64,
    /// Query transmissions in the current handshake; transmission `n` carries Query-Cookie
    /// `cookie ‖ n` (RFC 5971 §5.3.3: retransmissions use different cookies, and a reply to
    /// any of them is matched).
    pub attempts: u8,
    /// Handshakes restarted because the peer answered our Confirm or Data with an Error, since
    /// the state last lived through a refresh period (bounds a peer that rejects every
    /// Confirm).
    pub restarts: u8,
    /// Current retransmission timeout, ms.
    pub rto_ms: u32,
    /// Retransmission deadline while awaiting a Response; refresh deadline when established.
    pub deadline: Instant,
    /// When the state lapses unless the NSLP keeps it alive (RFC 5971 §6.2 Inactive_QNode).
    pub expires: Instant,
    /// The peer's Routing State Validity Time, ms.
    pub peer_validity_ms: u32,
    /// The NSLP asked for reliable transfer: negotiate C-mode.
    pub cmode: bool,
    /// The NSLP asked for secure transfer: negotiate TLS (RFC 5971 §5.7.3), never fall back.
    pub secure: bool,
    /// The MA in use towards the peer.
    pub ma: Option<MaId>,
    /// What waits for the handshake or the MA; `None` when nothing does (established state
    /// in steady use), so state at rest does not carry three empty containers.
    waiting: Option<Box<Waiting>>,
    /// GIST hop count and IP TTL for Queries.
    pub gist_hops: u8,
    /// IP TTL for Queries.
    pub ip_ttl: u8,
}

/// What a [`QuerySide`] holds only while a handshake or an MA connection is under way.
#[derive(Debug, Default)]
pub(crate) struct Waiting {
    /// NSLP data carried in the Query (re-sent with every retransmission).
    pub piggyback: Option<Pending>,
    /// Messages waiting for the handshake.
    pub queue: Vec<Pending>,
    /// A Confirm waiting for its MA to connect.
    pub confirm: Option<Confirm>,
}

impl Waiting {
    fn is_empty(&self) -> bool {
        self.piggyback.is_none() && self.queue.is_empty() && self.confirm.is_none()
    }

    /// Heap bytes of the box and what it holds.
    fn heap_bytes(&self) -> usize {
        size_of::<Waiting>()
            + self.queue.capacity() * size_of::<Pending>()
            + self
                .piggyback
                .iter()
                .chain(&self.queue)
                .map(|p| p.data.capacity())
                .sum::<usize>()
    }
}

impl QuerySide {
    /// A new downstream half in AwaitingResponse, carrying `piggyback` in its Query.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        now: Instant,
        cookie: u64,
        rto_ms: u32,
        lifetime: Duration,
        cmode: bool,
        secure: bool,
        piggyback: Option<Pending>,
        gist_hops: u8,
        ip_ttl: u8,
    ) -> QuerySide {
        let mut d = QuerySide {
            state: QueryingState::AwaitingResponse,
            peer: None,
            cookie,
            attempts: 0,
            restarts: 0,
            rto_ms,
            deadline: now,
            expires: now + lifetime,
            peer_validity_ms: 0,
            cmode: cmode || secure,
            secure,
            ma: None,
            waiting: None,
            gist_hops,
            ip_ttl,
        };
        if piggyback.is_some() {
            d.waiting().piggyback = piggyback;
        }
        d
    }

    /// What waits, made on first use.
    pub fn waiting(&mut self) -> &mut Waiting {
        self.waiting.get_or_insert_with(Box::default)
    }

    /// Messages waiting for the handshake.
    pub fn queue(&self) -> &[Pending] {
        self.waiting.as_ref().map_or(&[], |w| &w.queue)
    }

    /// NSLP data the Query carries.
    pub fn piggyback(&self) -> Option<&Pending> {
        self.waiting.as_ref().and_then(|w| w.piggyback.as_ref())
    }

    /// Take the waiting messages (and free what no longer waits).
    pub fn take_queue(&mut self) -> Vec<Pending> {
        self.take(|w| std::mem::take(&mut w.queue))
    }

    /// Take the first waiting message.
    pub fn take_first(&mut self) -> Option<Pending> {
        self.take(|w| (!w.queue.is_empty()).then(|| w.queue.remove(0)))
    }

    /// Take the NSLP data the Query carried.
    pub fn take_piggyback(&mut self) -> Option<Pending> {
        self.take(|w| w.piggyback.take())
    }

    /// Take the Confirm waiting for its MA.
    pub fn take_confirm(&mut self) -> Option<Confirm> {
        self.take(|w| w.confirm.take())
    }

    /// Everything that waited, the piggybacked message first (the half is going away).
    pub fn into_waiting(self) -> impl Iterator<Item = Pending> {
        let w = self.waiting.map(|w| *w).unwrap_or_default();
        w.piggyback.into_iter().chain(w.queue)
    }

    fn take<T: Default>(&mut self, f: impl FnOnce(&mut Waiting) -> T) -> T {
        let Some(w) = self.waiting.as_mut() else {
            return T::default();
        };
        let taken = f(w);
        if w.is_empty() {
            self.waiting = None;
        }
        taken
    }

    /// Heap bytes of what waits.
    pub fn waiting_heap_bytes(&self) -> usize {
        self.waiting.as_ref().map_or(0, |w| w.heap_bytes())
    }
}

/// The upstream half: this node responded. In random-cookie mode the cookie its Response
/// carried is kept beside the slab (`GistEngine::responder_cookies`).
#[derive(Debug)]
pub(crate) struct RespondSide {
    pub state: RespondingState,
    pub peer: PeerId,
    /// Expiry: the Confirm wait (awaiting) or the querying node's validity time (established).
    pub expires: Instant,
    /// The MA the Confirm arrived over.
    pub ma: Option<MaId>,
}

/// Message routing state for one (MRI, NSLPID, Session ID).
#[derive(Debug)]
pub(crate) struct RoutingState {
    pub key: StoredKey,
    /// Boxed: responder-only state (the common case at a flow's end, and all a Query flood
    /// can create) then costs 8 bytes for it.
    pub down: Option<Box<QuerySide>>,
    pub up: Option<RespondSide>,
    /// Upstream NSLP messages waiting for the Confirm that installs the upstream half.
    pub pending_up: Option<Box<PendingUp>>,
    /// Due at [`RoutingState::next_deadline`] (the wheel keeps when: `TimerWheel::deadline`).
    pub timer: Option<TimerHandle>,
}

impl RoutingState {
    pub fn new(key: MrsKey) -> Self {
        RoutingState {
            key: StoredKey::new(key),
            down: None,
            up: None,
            pending_up: None,
            timer: None,
        }
    }

    /// The earliest deadline of either half.
    pub fn next_deadline(&self) -> Instant {
        let mut t = self
            .pending_up
            .as_ref()
            .map_or(Instant::MAX, |p| p.deadline);
        if let Some(d) = &self.down {
            t = t.min(d.deadline);
            // RFC 5971 §6.2: Inactive_QNode runs in Established and in its substate Awaiting
            // Refresh (a refresh Query out does not keep unused state alive).
            if d.state != QueryingState::AwaitingResponse {
                t = t.min(d.expires);
            }
        }
        if let Some(u) = &self.up {
            t = t.min(u.expires);
        }
        t
    }

    pub fn is_empty(&self) -> bool {
        self.down.is_none() && self.up.is_none() && self.pending_up.is_none()
    }

    /// Heap bytes owned by this entry (queues, cookies, unknown MRI bytes).
    pub fn heap_bytes(&self) -> usize {
        let pend = |v: &Vec<Pending>| {
            v.capacity() * size_of::<Pending>() + v.iter().map(|p| p.data.capacity()).sum::<usize>()
        };
        self.key.heap_bytes()
            + self
                .pending_up
                .as_ref()
                .map_or(0, |p| size_of::<PendingUp>() + pend(&p.msgs))
            + self
                .down
                .as_ref()
                .map_or(0, |d| size_of::<QuerySide>() + d.waiting_heap_bytes())
    }
}

/// A signalling peer.
#[derive(Debug)]
pub(crate) struct Peer {
    pub addr: IpAddr,
    pub identity: Vec<u8>,
    /// Routing-state halves naming this peer.
    pub refs: u32,
}

/// Messaging association states (RFC 5971 §6.4 "Awaiting Connection" and "Connected"; its Idle
/// state is `Connected` with no routing state using the MA, `Ma::idle_since`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MaState {
    /// This node asked the driver to open a stream; not connected yet.
    Connecting,
    /// The stream is up.
    Connected,
}

/// A messaging association: one reliable stream to a peer, shared by every session with that
/// peer (RFC 5971 §4.4.2 reuse; thesis §3.4).
#[derive(Debug)]
pub(crate) struct Ma {
    pub peer: IpAddr,
    pub port: u16,
    /// TCP or TLS over TCP.
    pub transport: super::MaTransport,
    pub state: MaState,
    /// Whether this node opened it.
    pub initiator: bool,
    /// Bytes received but not yet a whole message.
    pub rx_buf: Vec<u8>,
    /// Routing-state halves using it.
    pub users: u32,
    pub last_tx: Instant,
    pub last_rx: Instant,
    /// Since when no routing state uses it.
    pub idle_since: Option<Instant>,
    /// The peer's MA-Hold-Time, ms (how long it keeps the MA without hearing from us).
    pub peer_hold_ms: u32,
    /// Routing states whose Confirm waits for the connection.
    pub waiting: Vec<u32>,
    /// When, after the last message sent, the next MA-Hello is due: drawn afresh after each
    /// send between 1/2 and 3/4 of the peer's MA-Hold-Time (RFC 5971 §4.4.5).
    pub hello_gap_ms: u32,
    /// A Confirm has arrived over this MA (the peer opened it): later ones need not repeat the
    /// Stack-Configuration-Data (RFC 5971 §4.4.5).
    pub confirmed: bool,
    pub timer: Option<TimerHandle>,
    pub wake: Instant,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::Ipv6Addr;

    fn addr() -> impl Strategy<Value = IpAddr> {
        prop_oneof![
            4 => any::<[u8; 4]>().prop_map(|o| IpAddr::V4(Ipv4Addr::from(o))),
            1 => any::<[u8; 16]>().prop_map(|o| IpAddr::V6(Ipv6Addr::from(o))),
        ]
    }

    fn path_coupled() -> impl Strategy<Value = Mri> {
        (
            (any::<bool>(), addr(), addr(), any::<u8>(), any::<u8>()),
            (
                any::<Option<u8>>(),
                any::<Option<u8>>(),
                any::<Option<u32>>(),
                any::<Option<u32>>(),
            ),
            (any::<Option<u16>>(), any::<Option<u16>>(), any::<bool>()),
        )
            .prop_map(|((nat, s, d, sp, dp), (pr, ds, fl, spi), (a, b, up))| {
                Mri::PathCoupled(PathCoupledMri {
                    nat,
                    source: s,
                    destination: d,
                    source_prefix: sp,
                    dest_prefix: dp,
                    protocol: pr,
                    ds_field: ds,
                    flow_label: fl,
                    spi,
                    source_port: a,
                    dest_port: b,
                    upstream: up,
                })
            })
    }

    fn mri() -> impl Strategy<Value = Mri> {
        prop_oneof![
            6 => path_coupled(),
            1 => (any::<u8>(), any::<bool>(), proptest::collection::vec(any::<u8>(), 0..12))
                .prop_map(|(mrm, nat, data)| Mri::Other { mrm, nat, data }),
        ]
    }

    fn key() -> impl Strategy<Value = MrsKey> {
        (mri(), any::<u16>(), any::<[u8; 16]>()).prop_map(|(mri, nslpid, sid)| MrsKey {
            mri,
            nslpid,
            session_id: SessionId(sid),
        })
    }

    proptest! {
        /// The stored form gives back exactly the key it took, matches it and only keys equal
        /// to it, and hashes as the key does (lookups by `MrsKey` find stored entries).
        #[test]
        fn stored_key_is_the_key(k in key(), other in key()) {
            let h = pathwise_core::table::KeyedState::from_rng(&mut pathwise_core::rng::seeded(7));
            let s = StoredKey::new(k.clone());
            prop_assert_eq!(s.key(), k.clone());
            prop_assert!(s.matches(&k));
            prop_assert_eq!(s.matches(&other), other == k);
            prop_assert_eq!(s.hash(&h), key_hash(&h, &k.mri, k.nslpid, &k.session_id));
            let v4 = matches!(&k.mri, Mri::PathCoupled(p)
                if p.source.is_ipv4() && p.destination.is_ipv4());
            prop_assert_eq!(PackedV4::pack(&k.mri).is_some(), v4);
            prop_assert_eq!(s.heap_bytes() == 0, v4);
        }
    }

    fn pending(n: u64) -> Pending {
        Pending {
            handle: MessageHandle(n),
            data: vec![n as u8; 10],
            transfer: TransferAttributes::default(),
            report: false,
            hops: None,
        }
    }

    /// What waits is out of line and freed as soon as nothing waits, whichever way it was
    /// taken: established state at rest holds no box.
    #[test]
    fn the_waiting_box_lives_only_while_something_waits() {
        let now = Instant::ZERO;
        let life = Duration::from_secs(30);
        let d = QuerySide::new(now, 1, 500, life, false, false, None, 16, 64);
        assert!(d.waiting.is_none() && d.queue().is_empty() && d.piggyback().is_none());
        assert_eq!(d.waiting_heap_bytes(), 0);

        let mut d = QuerySide::new(now, 1, 500, life, false, false, Some(pending(1)), 16, 64);
        d.waiting().queue.push(pending(2));
        d.waiting().queue.push(pending(3));
        assert!(d.waiting_heap_bytes() > size_of::<Waiting>());
        assert_eq!(d.take_piggyback().map(|p| p.handle), Some(MessageHandle(1)));
        assert!(d.waiting.is_some(), "the queue still waits");
        assert_eq!(d.take_first().map(|p| p.handle), Some(MessageHandle(2)));
        assert_eq!(d.queue().len(), 1);
        assert_eq!(d.take_queue().len(), 1);
        assert!(d.waiting.is_none());
        assert!(d.take_first().is_none() && d.take_confirm().is_none());
        assert!(d.waiting.is_none(), "taking from nothing makes nothing");

        d.waiting().queue.push(pending(4));
        let all: Vec<u64> = d.into_waiting().map(|p| p.handle.0).collect();
        assert_eq!(all, [4]);
    }
}
