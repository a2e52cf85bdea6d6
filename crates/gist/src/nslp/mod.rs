//! The GIST–NSLP API (RFC 5971 Appendix B) as in-process Rust traits: the thesis's plug-in
//! architecture (seed 000 §3.7, §4.3.2: callbacks, no copies, no IPC).
//!
//! - NSLP → GIST: [`GistApi`] — `SendMessage` (B.1), `SetStateLifetime` (B.5),
//!   `InvalidateRoutingState` (B.6), plus helpers an NSLP needs (its own address, fresh Session
//!   IDs, reporting to the application).
//! - GIST → NSLP: [`Nslp`] — `RecvMessage` (B.2, with the Routing-State-Check answer as the
//!   return value), `MessageStatus` (B.3), `NetworkNotification` (B.4).
//!
//! An NSLP is registered with [`GistEngine::register`](crate::GistEngine::register). Messages for
//! an NSLPID with no registered plug-in but listed in
//! [`Config::nslpids`](crate::Config::nslpids) surface as [`GistEvent`](crate::GistEvent)s
//! instead, so an application outside the engine (or a future IPC bridge) can use the same API
//! through `GistEngine`'s own [`GistApi`] implementation.
//!
//! [`SessionTable`] is the per-NSLP session store the thesis puts in the API layer (§3.7): a
//! hash table keyed by Session ID with a seeded hasher.

pub mod ping;
pub mod relay;

use crate::wire::{Mri, SessionId};
use core::any::Any;
use pathwise_core::io::IfIndex;
use pathwise_core::rng::SeededRng;
use pathwise_core::table::{KeyedMap, keyed_map};
use pathwise_core::time::{Duration, Instant};
use std::net::IpAddr;

/// Names a message handed to GIST, so its [`MessageStatus`] can be matched (B.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageHandle(pub u64);

/// Names a signalling peer (B.1 SII-Handle): its interface address, as GIST reports it in
/// RecvMessage (B.2) and NetworkNotification (B.4). Stable while GIST holds state with that
/// peer; a handle stays usable for explicit routing ([`SendMessage::sii_handle`]) for a while
/// after that (RFC 5971 §7.1.4: "the use of prior signalling paths for some period").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SiiHandle(pub IpAddr);

/// Direction relative to the flow (B.5, B.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Towards the flow's destination.
    Downstream,
    /// Towards the flow's source.
    Upstream,
}

impl Direction {
    /// The direction an MRI's D flag says.
    pub fn of(mri: &Mri) -> Self {
        if mri.is_upstream() {
            Direction::Upstream
        } else {
            Direction::Downstream
        }
    }
}

/// How a message is to be transferred (B.1 Transfer-Attributes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TransferAttributes {
    /// Reliable, in-order delivery: C-mode over a messaging association.
    pub reliable: bool,
    /// Secure transfer (channel security): C-mode over TLS (RFC 5971 §5.7.3). A message fails
    /// with [`DeliveryError::Unsupported`] when this node or its peer runs no TLS; it never
    /// goes in the clear.
    pub secure: bool,
    /// Local processing hint: whether GIST should set up (or use) message routing state. With
    /// `false` and no state, the message goes Q-mode encapsulated to the next GIST node
    /// without any handshake (a stateless Data message, RFC 5971 §4.3.2).
    pub setup_state: bool,
}

impl Default for TransferAttributes {
    fn default() -> Self {
        TransferAttributes {
            reliable: false,
            secure: false,
            setup_state: true,
        }
    }
}

/// SendMessage (B.1): an NSLP message for GIST to deliver to the next peer along `mri`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendMessage {
    /// NSLP-Data.
    pub nslp_data: Vec<u8>,
    /// NSLPID.
    pub nslpid: u16,
    /// Session-ID.
    pub session_id: SessionId,
    /// MRI; its D flag gives the direction.
    pub mri: Mri,
    /// Route the message explicitly to this peer (B.1 SII-Handle; RFC 5971 §7.1.4): a Data
    /// message with the E flag (A.1), bypassing the routing state tables, over a messaging
    /// association to that peer if one is up, else D-mode to its address. A handle GIST does
    /// not know (never reported, or forgotten since: [`DeliveryError::UnknownSiiHandle`]) or a
    /// reliable or secure transfer with no such association ([`DeliveryError::Unsupported`])
    /// fails with a [`MessageStatus`]. `None`: routed by routing state.
    pub sii_handle: Option<SiiHandle>,
    /// Transfer-Attributes.
    pub transfer: TransferAttributes,
    /// How long GIST may keep trying (B.1 Timeout); `None`: the configured handshake limit.
    pub timeout: Option<Duration>,
    /// IP-TTL for a Q-mode message; `None`: the configured default.
    pub ip_ttl: Option<u8>,
    /// GIST-Hop-Count; `None`: the configured default.
    pub gist_hops: Option<u8>,
    /// Ask for a [`MessageStatus`] with no error once GIST has handed the message to the
    /// transport (D-mode, or the Query or Confirm carrying it answered) or to a messaging
    /// association, naming the transfer attributes used (B.3: MessageStatus also informs "about
    /// the transfer attributes that have been selected for the message"). `false` (the
    /// default): only failures are reported.
    pub report_dispatch: bool,
}

impl SendMessage {
    /// A message with default attributes.
    pub fn new(nslpid: u16, session_id: SessionId, mri: Mri, nslp_data: Vec<u8>) -> Self {
        SendMessage {
            nslp_data,
            nslpid,
            session_id,
            mri,
            sii_handle: None,
            transfer: TransferAttributes::default(),
            timeout: None,
            ip_ttl: None,
            gist_hops: None,
            report_dispatch: false,
        }
    }
}

/// RecvMessage (B.2): an NSLP message GIST received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecvMessage {
    /// NSLP-Data (empty for a Query that carried none: GIST only asks the Routing-State-Check).
    pub nslp_data: Vec<u8>,
    /// NSLPID.
    pub nslpid: u16,
    /// Session-ID.
    pub session_id: SessionId,
    /// MRI; its D flag says which way the message travelled.
    pub mri: Mri,
    /// Routing-State-Check: this came in a Query and the NSLP decides, by its return value,
    /// whether this node becomes the querying node's peer ([`RoutingDecision`]).
    pub routing_state_check: bool,
    /// The peer the message came from, if known (its NLI).
    pub sii_handle: Option<SiiHandle>,
    /// How it was transferred.
    pub transfer: TransferAttributes,
    /// IP TTL as received.
    pub ip_ttl: u8,
    /// IP hops from the peer, from the TTL its NLI reports (B.2 IP-Distance).
    pub ip_distance: Option<u8>,
    /// GIST hop count as received.
    pub gist_hops: u8,
    /// Inbound interface.
    pub inbound_interface: IfIndex,
    /// The message was explicitly routed to this node by its sender's SII-Handle (E flag):
    /// GIST did not validate it against routing state (RFC 5971 §4.3.2 rule 1, §7.1.4, B.2
    /// Transfer-Attributes), so the NSLP validates its source and effect itself.
    pub explicitly_routed: bool,
}

/// The NSLP's answer to a Routing-State-Check (B.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoutingDecision {
    /// Become the peer: GIST answers the Query with a Response, carrying `response_data` if
    /// given (piggybacked NSLP data).
    Accept {
        /// NSLP data for the Response.
        response_data: Option<Vec<u8>>,
    },
    /// Do not peer here: GIST forwards the Query towards the flow destination unchanged
    /// (GIST hop count less one).
    Decline,
}

impl RoutingDecision {
    /// Accept with no payload.
    pub const ACCEPT: RoutingDecision = RoutingDecision::Accept {
        response_data: None,
    };
}

/// Why a message was not delivered (B.3 Error-Type).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeliveryError {
    /// No routing state exists for an upstream message, and none is being set up.
    NoRoutingState,
    /// The handshake found no peer: Query retransmissions ran out, or the end of the path was
    /// reached (Endpoint Found).
    NoPeer,
    /// The peer answered with a GIST Error.
    PeerError {
        /// Error class number.
        class: u8,
        /// Error code.
        code: u16,
    },
    /// Larger than an object can carry.
    MessageTooLarge,
    /// The queue for state being set up is full.
    QueueFull,
    /// A transfer attribute this node or its peer does not support (secure transfer without
    /// TLS).
    Unsupported,
    /// GIST refused the SendMessage at once; reported this way to an NSLP that did not wait
    /// for the call's result (over IPC, [`crate::ipc`]).
    Refused(ApiError),
    /// An explicitly routed message ([`SendMessage::sii_handle`]) named a peer GIST does not
    /// know: never reported to the NSLP, or forgotten since (RFC 5971 B.1: the handle must
    /// have been "previously supplied by GIST").
    UnknownSiiHandle,
}

/// MessageStatus (B.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageStatus {
    /// The message.
    pub handle: MessageHandle,
    /// NSLPID.
    pub nslpid: u16,
    /// Session-ID.
    pub session_id: SessionId,
    /// What happened: `None` when the message was handed to the transport (D-mode) or the MA
    /// (reported only for a message sent with [`SendMessage::report_dispatch`]).
    pub error: Option<DeliveryError>,
    /// For a dispatched message, the transfer attributes GIST used (B.3).
    pub transfer: Option<TransferAttributes>,
}

/// NetworkNotification types (B.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotificationKind {
    /// No further GIST node for this NSLP on the path: this node is the last.
    LastNode,
    /// Routing Status Change: the peer in `direction` is now `peer` (first established, or
    /// changed after a route change).
    RoutingStatusChange {
        /// Which side changed.
        direction: Direction,
        /// The new peer.
        peer: SiiHandle,
        /// Whether a different peer was there before (a route change).
        changed: bool,
    },
    /// Routing state in `direction` was lost: a refresh found no peer, the state expired, or
    /// the peer kept rejecting it.
    RoutingStateLost {
        /// Which side.
        direction: Direction,
    },
    /// Communication Failure (B.4): "communication with the peer has failed; messages may have
    /// been lost" — the peer answered a Confirm or Data with an Error, or the messaging
    /// association to it failed. GIST is setting the state up again (a Routing Status Change
    /// follows when it is); messages sent to the peer before may not have arrived.
    CommunicationFailure {
        /// Which side.
        direction: Direction,
        /// The peer.
        peer: SiiHandle,
    },
}

/// NetworkNotification (B.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkNotification {
    /// NSLPID.
    pub nslpid: u16,
    /// Session-ID.
    pub session_id: SessionId,
    /// MRI (downstream form).
    pub mri: Mri,
    /// What happened.
    pub kind: NotificationKind,
}

/// An API call GIST refused at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum ApiError {
    /// The NSLPID is not served by this node.
    #[error("NSLPID {0} not served here")]
    UnknownNslpid(u16),
    /// A routing method GIST cannot route (only path-coupled is).
    #[error("unsupported message routing method")]
    UnsupportedMri,
    /// The data does not fit in an NSLP-Data object.
    #[error("message too large")]
    MessageTooLarge,
    /// Upstream, with no routing state to the upstream peer.
    #[error("no routing state")]
    NoRoutingState,
    /// No local address of the MRI's family to send from.
    #[error("no local address")]
    NoLocalAddress,
    /// Secure transfer requested; pathwise has no channel security yet.
    #[error("secure transfer unsupported")]
    Unsupported,
    /// The MRI names a flow no message may be routed along: a loopback, unspecified,
    /// multicast or broadcast address, or (downstream) this node itself (RFC 5971 §5.8.1.1:
    /// "real node addresses"; §4.3.4: no looping); or its flags are a combination A.3.1.1
    /// forbids (ports or an SPI without the protocol, both, a flow label in IPv4).
    #[error("MRI names no routable flow, or has flags RFC 5971 A.3.1.1 forbids")]
    InvalidMri,
    /// A GIST hop count of zero (RFC 5971 §4.3.2: "GIST MUST reject messages for which the
    /// signalling application has specified a value of zero").
    #[error("GIST hop count of zero")]
    ZeroHopCount,
}

/// What a plug-in NSLP reports to the application above it (events the driver collects).
#[derive(Clone, Debug, PartialEq)]
pub enum NslpEvent {
    /// From the Ping NSLP.
    Ping(ping::PingEvent),
    /// From any other NSLP: its NSLPID and an opaque report.
    Other {
        /// Reporting NSLP.
        nslpid: u16,
        /// The report.
        data: Vec<u8>,
    },
}

/// NSLP → GIST (RFC 5971 B.1, B.5, B.6).
pub trait GistApi {
    /// SendMessage (B.1): deliver `msg` to the next peer along its MRI, setting up routing
    /// state first if needed. The outcome may also arrive later as a [`MessageStatus`].
    fn send_message(&mut self, now: Instant, msg: SendMessage) -> Result<MessageHandle, ApiError>;

    /// SendMessage under a handle the NSLP chose (unique among its own messages; GIST only
    /// echoes it in [`MessageStatus`]): for an NSLP that does not wait for GIST's answer, as
    /// one over IPC ([`crate::ipc`]) does not.
    fn send_message_with_handle(
        &mut self,
        now: Instant,
        handle: MessageHandle,
        msg: SendMessage,
    ) -> Result<(), ApiError>;

    /// SetStateLifetime (B.5): keep (downstream) routing state for this session for
    /// `lifetime` from now, refreshing it as needed; zero lets it lapse at once.
    fn set_state_lifetime(
        &mut self,
        now: Instant,
        nslpid: u16,
        session_id: SessionId,
        mri: &Mri,
        direction: Direction,
        lifetime: Duration,
    );

    /// InvalidateRoutingState (B.6): the NSLP believes the routing state is wrong; GIST
    /// re-runs the handshake (`urgent`: at once, else at the next refresh).
    fn invalidate_routing_state(
        &mut self,
        now: Instant,
        nslpid: u16,
        session_id: SessionId,
        mri: &Mri,
        direction: Direction,
        urgent: bool,
    );

    /// This node's address of `like`'s family (what an NSLP records as "this node").
    fn local_address(&self, like: IpAddr) -> Option<IpAddr>;

    /// Whether `addr` is this node's.
    fn is_local(&self, addr: IpAddr) -> bool;

    /// The interface data for `destination` leaves this node by (the route the engine knows),
    /// for an NSLP that reserves resources on the flow's outgoing link (the QoS NSLP); `None`
    /// when there is no route or the implementation does not know (the default).
    fn outgoing_interface(&self, destination: IpAddr) -> Option<IfIndex> {
        let _ = destination;
        None
    }

    /// A new random Session ID (RFC 5971 §4.1.3: chosen at random by the NSLP), from the
    /// engine's seeded generator.
    fn new_session_id(&mut self) -> SessionId;

    /// Report something to the application above (collected as an engine event).
    fn report(&mut self, event: NslpEvent);
}

/// GIST → NSLP (RFC 5971 B.2–B.4): a signalling application plugged into the engine.
///
/// Each callback gets the engine as `gist` to answer through. Callbacks run inside the
/// engine's input processing; a second NSLP is another implementation of this trait, registered
/// under its own NSLPID.
pub trait Nslp {
    /// The NSLPID served.
    fn nslpid(&self) -> u16;

    /// RecvMessage (B.2). For a Query (`msg.routing_state_check`) the return value decides
    /// whether this node peers; otherwise it is ignored.
    fn recv_message(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        msg: RecvMessage,
    ) -> RoutingDecision;

    /// MessageStatus (B.3).
    fn message_status(&mut self, now: Instant, gist: &mut dyn GistApi, status: MessageStatus) {
        let _ = (now, gist, status);
    }

    /// NetworkNotification (B.4).
    fn network_notification(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        n: NetworkNotification,
    ) {
        let _ = (now, gist, n);
    }

    /// When this NSLP next wants [`Nslp::handle_timeout`] (its own refresh or retransmission
    /// timers; not in RFC 5971 Appendix B, which leaves an NSLP's timers to it). GIST counts it
    /// among its own deadlines, so whoever drives the engine wakes it in time; the NSLP stays
    /// sans-IO. `None` (the default): no timer.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// Called by the engine once [`Nslp::poll_timeout`]'s deadline has passed.
    fn handle_timeout(&mut self, now: Instant, gist: &mut dyn GistApi) {
        let _ = (now, gist);
    }

    /// Self as `Any`, so the application can reach its concrete NSLP
    /// ([`GistEngine::with_nslp`](crate::GistEngine::with_nslp)).
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// A per-NSLP session table keyed by Session ID (seed 000 §3.7): the same seeded hash table
/// GIST uses for its routing state, with expiry by time.
#[derive(Debug)]
pub struct SessionTable<S> {
    map: KeyedMap<SessionId, (Instant, S)>,
}

impl<S> SessionTable<S> {
    /// An empty table keyed from `rng`.
    pub fn new(rng: &mut SeededRng) -> Self {
        SessionTable {
            map: keyed_map(rng),
        }
    }

    /// Insert or replace a session's state, expiring at `expires`.
    pub fn insert(&mut self, sid: SessionId, expires: Instant, state: S) -> Option<S> {
        self.map.insert(sid, (expires, state)).map(|(_, s)| s)
    }

    /// The state of a session.
    pub fn get(&self, sid: &SessionId) -> Option<&S> {
        self.map.get(sid).map(|(_, s)| s)
    }

    /// The state of a session, mutably.
    pub fn get_mut(&mut self, sid: &SessionId) -> Option<&mut S> {
        self.map.get_mut(sid).map(|(_, s)| s)
    }

    /// Remove a session.
    pub fn remove(&mut self, sid: &SessionId) -> Option<S> {
        self.map.remove(sid).map(|(_, s)| s)
    }

    /// Move a session's expiry.
    pub fn touch(&mut self, sid: &SessionId, expires: Instant) -> bool {
        self.map.get_mut(sid).map(|e| e.0 = expires).is_some()
    }

    /// Remove every session whose expiry has passed, returning them.
    pub fn expire(&mut self, now: Instant) -> Vec<(SessionId, S)> {
        let gone: Vec<SessionId> = self
            .map
            .iter()
            .filter(|(_, (t, _))| *t <= now)
            .map(|(k, _)| *k)
            .collect();
        gone.into_iter()
            .filter_map(|k| self.map.remove(&k).map(|(_, s)| (k, s)))
            .collect()
    }

    /// Number of sessions.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Sessions and their state.
    pub fn iter(&self) -> impl Iterator<Item = (&SessionId, &S)> {
        self.map.iter().map(|(k, (_, s))| (k, s))
    }
}
