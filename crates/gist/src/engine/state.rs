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
use crate::wire::{Confirm, Mri, SessionId};
use pathwise_core::time::Instant;
use pathwise_core::timer::TimerHandle;
use std::net::IpAddr;

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

/// A peer, by index into the peer table.
pub(crate) type PeerId = u32;
/// A messaging association, by index into the MA table.
pub(crate) type MaId = u32;

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
    /// NSLP data carried in the Query (re-sent with every retransmission).
    pub piggyback: Option<Box<Pending>>,
    /// Messages waiting for the handshake.
    pub queue: Vec<Pending>,
    /// A Confirm waiting for its MA to connect.
    pub confirm: Option<Box<Confirm>>,
    /// GIST hop count and IP TTL for Queries.
    pub gist_hops: u8,
    /// IP TTL for Queries.
    pub ip_ttl: u8,
}

/// The upstream half: this node responded.
#[derive(Debug)]
pub(crate) struct RespondSide {
    pub state: RespondingState,
    pub peer: PeerId,
    /// Expiry: the Confirm wait (awaiting) or the querying node's validity time (established).
    pub expires: Instant,
    /// Random-cookie mode: the cookie the Response carried.
    pub cookie: Option<Box<[u8; 16]>>,
    /// The MA the Confirm arrived over.
    pub ma: Option<MaId>,
}

/// Message routing state for one (MRI, NSLPID, Session ID).
#[derive(Debug)]
pub(crate) struct RoutingState {
    pub key: MrsKey,
    /// Boxed: responder-only state (the common case at a flow's end, and all a Query flood
    /// can create) then costs 8 bytes for it.
    pub down: Option<Box<QuerySide>>,
    pub up: Option<RespondSide>,
    /// Upstream NSLP messages waiting for the Confirm that installs the upstream half.
    pub pending_up: Option<Box<PendingUp>>,
    pub timer: Option<TimerHandle>,
    /// When the timer is due.
    pub wake: Instant,
}

impl RoutingState {
    pub fn new(key: MrsKey) -> Self {
        RoutingState {
            key,
            down: None,
            up: None,
            pending_up: None,
            timer: None,
            wake: Instant::MAX,
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
        let mri = match &self.key.mri {
            Mri::Other { data, .. } => data.capacity(),
            _ => 0,
        };
        mri + self
            .pending_up
            .as_ref()
            .map_or(0, |p| size_of::<PendingUp>() + pend(&p.msgs))
            + self.down.as_ref().map_or(0, |d| {
                size_of::<QuerySide>()
                    + pend(&d.queue)
                    + d.piggyback
                        .as_ref()
                        .map_or(0, |p| size_of::<Pending>() + p.data.capacity())
                    + d.confirm.as_ref().map_or(0, |_| size_of::<Confirm>())
            })
            + self
                .up
                .as_ref()
                .map_or(0, |u| u.cookie.as_ref().map_or(0, |_| 16))
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
