//! The QoS NSLP state machine (RFC 5974 §5.2–§5.4) as a plug-in of the GIST engine
//! (`pathwise_gist::nslp::Nslp`), sans-IO: time is the `now` argument of each call, messages
//! go out through [`GistApi::send_message`], and the engine reports its next deadline
//! ([`Nslp::poll_timeout`]) so GIST's driver wakes it.
//!
//! - [`state`]: per-session reservation state (§5.2.1);
//! - [`rmf`]: the Resource Management Function for the QSPEC template (RFC 5975), admitting
//!   through the node's [`TrafficControl`] — the same one RSVP uses, shared through
//!   [`pathwise_core::tc::SharedTrafficControl`] so both protocols draw on one budget per
//!   interface;
//! - `reserve`: RESERVE and RESPONSE processing (§5.4.1, §5.4.3), tear, summary lists
//!   (§5.3.6, §5.3.7);
//! - `query`: QUERY (§5.4.2), receiver-initiated reservations (§4.3);
//! - `notify`: NOTIFY (§5.4.4) and GIST's NetworkNotifications: route changes (§5.2.5);
//! - `refresh`: refresh timers, reduced and summary refreshes (§3.2.5, §3.2.6), state
//!   lifetime (§5.3.4), retransmission (§5.2.4).
//!
//! Roles: the node whose application calls [`QosNslp::reserve`] is the QNI of a
//! sender-initiated reservation (§4.1); [`QosNslp::reserve_receiver_initiated`] sends the
//! QUERY with RESERVE-INIT from the data sender and the flow's destination becomes the QNI
//! of a receiver-initiated one (§4.3). Nodes on the way are QNEs; the end of the RESERVE's
//! path is the QNR.

mod counters;
mod notify;
mod query;
mod refresh;
mod reserve;
pub mod rmf;
pub mod state;
#[cfg(test)]
mod tests;

pub use counters::Counters;
pub use state::{Initiation, Reservation, Role};

use crate::wire::qspec::{ParamFlags, ParamValue, Parameter, Tmod};
use crate::wire::{
    BindingCode, BoundSessionId, InfoSpec, Message, MsgType, PacketClassifier, Qspec, QspecObject,
    QspecObjectType, QspecProcedure, RefreshPeriod, Rii, Rsn,
};
use core::any::Any;
use pathwise_core::rng::SeededRng;
use pathwise_core::table::{KeyedMap, keyed_map};
use pathwise_core::tc::{AdmissionError, MemoryTrafficControl, TrafficControl};
use pathwise_core::time::{Duration, Instant};
use pathwise_gist::nslp::{
    ApiError, Direction, GistApi, MessageStatus, NetworkNotification, Nslp, RecvMessage,
    RoutingDecision, SendMessage, SiiHandle,
};
use pathwise_gist::wire::{Mri, PathCoupledMri, SessionId};
use rand::Rng;
use state::{TimerKind, reverse};
use std::collections::{BTreeSet, VecDeque};
use std::net::IpAddr;

/// The QoS NSLP's NSLPID at aggregation level 0 (RFC 5974 §6.6; IANA: NSLPIDs 1–32 for levels
/// 0–31).
pub const NSLPID: u16 = 1;

/// Configuration of a QoS NSLP engine.
#[derive(Clone, Debug, PartialEq)]
pub struct QosConfig {
    /// NSLPID served.
    pub nslpid: u16,
    /// This node's refresh period R, sent in REFRESH-PERIOD (§5.3.4; default 30 s).
    pub refresh_period: Duration,
    /// The longest refresh period R taken from a peer's REFRESH-PERIOD: a longer one is taken
    /// as this, so the state lifetime L derived from it stays bounded (RFC 5974 §5.3.4: R and
    /// L have local significance; without a cap a forged 2^32 ms would hold state for weeks).
    /// Default 5 minutes, like GIST's `max_state_lifetime` bounding its routing state.
    pub max_refresh_period: Duration,
    /// Refresh with RSN-only RESERVEs when nothing changed (§3.2.5).
    pub reduced_refresh: bool,
    /// Fold the reduced refreshes of sessions with the same next peer into summary refreshes
    /// (§3.2.6).
    pub summary_refresh: bool,
    /// Most sessions in one SESSION-ID-LIST (keeps a summary within one datagram).
    pub summary_max: usize,
    /// QOSNSLP_REQUEST_RETRY (§5.2.4; 2 s).
    pub request_retry: Duration,
    /// QOSNSLP_RETRY_MAX (§5.2.4; 30 s).
    pub retry_max: Duration,
    /// Ask GIST for reliable transfer.
    pub reliable: bool,
    /// Answer a QUERY with RESERVE-INIT at the flow's destination with a RESERVE (§5.4.2:
    /// otherwise "an error MUST be sent back").
    pub accept_reserve_init: bool,
    /// Epoch Identifier of the RSNs (§5.3.1); `None`: drawn from `seed`.
    pub epoch: Option<u32>,
    /// Seed of the tables' hash keys, the RIIs and the refresh jitter.
    pub seed: u64,
}

impl Default for QosConfig {
    fn default() -> Self {
        QosConfig {
            nslpid: NSLPID,
            refresh_period: Duration::from_secs(30),
            max_refresh_period: Duration::from_secs(300),
            reduced_refresh: true,
            summary_refresh: true,
            summary_max: 50,
            request_retry: Duration::from_secs(2),
            retry_max: Duration::from_secs(30),
            reliable: false,
            accept_reserve_init: true,
            epoch: None,
            seed: 0,
        }
    }
}

/// What a QNI (or the data sender of a receiver-initiated reservation) asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct ReserveRequest {
    /// Flow source (this node, for [`QosNslp::reserve`]).
    pub source: IpAddr,
    /// Flow destination.
    pub destination: IpAddr,
    /// IP protocol of the flow, if classified by it.
    pub protocol: Option<u8>,
    /// Source port, if classified by it.
    pub source_port: Option<u16>,
    /// Destination port, if classified by it.
    pub dest_port: Option<u16>,
    /// The traffic to reserve for (`<TMOD-1>` of QoS Desired).
    pub tmod: Tmod,
    /// The least acceptable (`<TMOD-1>` of Minimum QoS, RFC 5975 §4.3.1 case 3).
    pub minimum: Option<Tmod>,
    /// The largest acceptable path latency, microseconds (`<Path Latency>` of Minimum QoS).
    pub max_latency_us: Option<u32>,
    /// Ask for a RESPONSE from the QNR (an RII, §5.3.2).
    pub confirm: bool,
    /// Sessions this reservation is bound to (RFC 5974 §3.2.8, §5.1.3.4), sent in its
    /// BOUND-SESSION-IDs (a receiver-initiated one's in the QUERY, whose answering QNI copies
    /// them, §5.3.3). With [`BindingCode::DEPENDENT`] every node holding both learns when the
    /// bound session goes and tells this reservation's QNI by a NOTIFY (§5.4.1), which the
    /// QNI reports as [`QosEvent::Notified`].
    pub bound_sessions: Vec<BoundSessionId>,
}

impl ReserveRequest {
    /// A request for `tmod` from `source` to `destination`, confirmed.
    pub fn new(source: IpAddr, destination: IpAddr, tmod: Tmod) -> Self {
        ReserveRequest {
            source,
            destination,
            protocol: None,
            source_port: None,
            dest_port: None,
            tmod,
            minimum: None,
            max_latency_us: None,
            confirm: true,
            bound_sessions: Vec::new(),
        }
    }

    /// The same request bound to session `sid` with binding `code` (§5.1.3.4; a request may
    /// be bound to several sessions).
    pub fn bound_to(mut self, sid: SessionId, code: BindingCode) -> Self {
        self.bound_sessions.push(BoundSessionId {
            code,
            session_id: sid,
        });
        self
    }

    fn flow(&self) -> PathCoupledMri {
        let mut f = PathCoupledMri::flow(self.source, self.destination);
        f.protocol = self.protocol;
        f.source_port = self.source_port;
        f.dest_port = self.dest_port;
        f
    }

    /// The QSPEC (RFC 5975 §4.3.1): QoS Desired with `<TMOD-1>` (M set); QoS Available seeded
    /// with the same `<TMOD-1>` and a zero `<Path Latency>` to collect; Minimum QoS when a
    /// minimum or a latency bound is given.
    fn qspec(&self, message_sequence: u8) -> Qspec {
        let tmod = |t: Tmod, flags| Parameter::new(flags, ParamValue::Tmod1(t));
        let mut objects = vec![
            QspecObject::new(
                QspecObjectType::QosDesired,
                vec![tmod(self.tmod, ParamFlags::MANDATORY)],
            ),
            QspecObject::new(
                QspecObjectType::QosAvailable,
                vec![
                    tmod(self.tmod, ParamFlags::default()),
                    Parameter::new(ParamFlags::default(), ParamValue::PathLatency(0)),
                ],
            ),
        ];
        let mut min = Vec::new();
        if let Some(m) = self.minimum {
            min.push(tmod(m, ParamFlags::default()));
        }
        if let Some(l) = self.max_latency_us {
            min.push(Parameter::new(
                ParamFlags::default(),
                ParamValue::PathLatency(l),
            ));
        }
        let combination = if min.is_empty() { 1 } else { 2 };
        if !min.is_empty() {
            objects.push(QspecObject::new(QspecObjectType::MinimumQos, min));
        }
        Qspec::new(
            QspecProcedure {
                message_sequence,
                object_combination: combination,
            },
            objects,
        )
    }
}

/// Why a request was not started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// This node's traffic control refused the reservation on the flow's outgoing interface.
    #[error("admission refused here: {0}")]
    Admission(#[from] AdmissionError),
    /// GIST refused to send.
    #[error("GIST refused: {0}")]
    Gist(#[from] ApiError),
    /// The flow's source is not this node.
    #[error("the flow's source is not this node")]
    NotSource,
    /// No such session initiated here.
    #[error("no such reservation")]
    UnknownSession,
}

/// What the engine reports to its application.
#[derive(Clone, Debug, PartialEq)]
pub enum QosEvent {
    /// The QNR confirmed the reservation (a Success RESPONSE to our RII).
    Reserved {
        /// Session.
        session_id: SessionId,
        /// The RESPONSE's QSPEC (QoS Reserved, QoS Available).
        qspec: Option<Qspec>,
    },
    /// The reservation failed or was refused on the way; its state here is gone.
    Failed {
        /// Session.
        session_id: SessionId,
        /// What the RESPONSE or NOTIFY said.
        info: InfoSpec,
        /// The QSPEC it carried (E flags on what failed).
        qspec: Option<Qspec>,
    },
    /// A reservation arrived at this node as its QNR.
    Installed {
        /// Session.
        session_id: SessionId,
    },
    /// A reservation this node held was torn down by its peer.
    Torn {
        /// Session.
        session_id: SessionId,
    },
    /// A reservation's state lifetime ran out here.
    Expired {
        /// Session.
        session_id: SessionId,
    },
    /// The answer to a QUERY.
    QueryAnswered {
        /// Session.
        session_id: SessionId,
        /// INFO-SPEC.
        info: InfoSpec,
        /// The QSPEC collected along the path.
        qspec: Option<Qspec>,
    },
    /// A request got no RESPONSE within QOSNSLP_RETRY_MAX (§5.2.4).
    NoResponse {
        /// Session.
        session_id: SessionId,
    },
    /// A NOTIFY arrived.
    Notified {
        /// Session.
        session_id: SessionId,
        /// What it said.
        info: InfoSpec,
    },
}

/// A QUERY of ours awaiting its RESPONSE.
#[derive(Clone, Debug)]
struct OwnQuery {
    rii: Rii,
    expires: Instant,
}

/// The QoS NSLP engine of one node.
pub struct QosNslp<T: TrafficControl = MemoryTrafficControl> {
    cfg: QosConfig,
    tc: T,
    epoch: u32,
    rng: SeededRng,
    sessions: KeyedMap<SessionId, Reservation>,
    queries: KeyedMap<SessionId, OwnQuery>,
    /// Receiver-initiated sessions whose reverse path went, until when their RESERVEs are
    /// refused with "No reverse path state".
    orphaned: KeyedMap<SessionId, Instant>,
    timers: BTreeSet<(Instant, SessionId, TimerKind)>,
    /// (bound-to session, dependent session) for every reservation held here whose
    /// BOUND-SESSION-ID names a session with Binding Code 0x04, so that a session's going finds
    /// its dependents (§5.4.1) without a walk over every reservation.
    dependents: BTreeSet<(SessionId, SessionId)>,
    events: VecDeque<QosEvent>,
    counters: Counters,
    /// The session whose GIST Query is being answered (its Routing-State-Check): a message of
    /// that session back to the querying node rides the GIST Response (no upstream routing
    /// state exists before the Confirm). Another session's message sent meanwhile (a NOTIFY
    /// for a reservation bound to the one torn) goes by its own routing state.
    in_query: Option<SessionId>,
    piggyback: Option<Vec<u8>>,
}

impl<T: TrafficControl> core::fmt::Debug for QosNslp<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QosNslp")
            .field("sessions", &self.sessions.len())
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

impl<T: TrafficControl> QosNslp<T> {
    /// An engine admitting through `tc`.
    pub fn new(cfg: QosConfig, tc: T) -> Self {
        let mut rng = pathwise_core::rng::seeded(cfg.seed);
        let epoch = cfg.epoch.unwrap_or_else(|| rng.random());
        QosNslp {
            sessions: keyed_map(&mut rng),
            queries: keyed_map(&mut rng),
            orphaned: keyed_map(&mut rng),
            timers: BTreeSet::new(),
            dependents: BTreeSet::new(),
            events: VecDeque::new(),
            counters: Counters::default(),
            in_query: None,
            piggyback: None,
            epoch,
            rng,
            tc,
            cfg,
        }
    }

    /// Configuration.
    pub fn config(&self) -> &QosConfig {
        &self.cfg
    }

    /// Counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The traffic control admitted through.
    pub fn traffic_control(&self) -> &T {
        &self.tc
    }

    /// The state of a session.
    pub fn session(&self, sid: &SessionId) -> Option<&Reservation> {
        self.sessions.get(sid)
    }

    /// Every session and its state.
    pub fn sessions(&self) -> impl Iterator<Item = (&SessionId, &Reservation)> {
        self.sessions.iter()
    }

    /// Number of sessions with state here.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether no session has state here.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Pending timers (for checks that nothing is left behind).
    pub fn timers(&self) -> usize {
        self.timers.len()
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<QosEvent> {
        self.events.pop_front()
    }

    /// RFC 5974 §4.1: a sender-initiated reservation from this node. Admits on the flow's
    /// outgoing interface here first (a refusal starts nothing), then sends the RESERVE
    /// downstream; its RESPONSE arrives as [`QosEvent::Reserved`] or [`QosEvent::Failed`].
    pub fn reserve(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        req: &ReserveRequest,
    ) -> Result<SessionId, RequestError> {
        if !gist.is_local(req.source) {
            return Err(RequestError::NotSource);
        }
        let sid = gist.new_session_id();
        self.initiate(
            gist,
            now,
            sid,
            req.flow(),
            req.qspec(0),
            req.bound_sessions.clone(),
            req.confirm,
            Initiation::Sender,
        )?;
        Ok(sid)
    }

    /// RFC 5974 §4.3: a receiver-initiated reservation of the flow from this node (the data
    /// sender, which is the QNR): a QUERY with RESERVE-INIT travels to the flow's destination,
    /// which answers with a RESERVE back along the path.
    pub fn reserve_receiver_initiated(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        req: &ReserveRequest,
    ) -> Result<SessionId, RequestError> {
        if !gist.is_local(req.source) {
            return Err(RequestError::NotSource);
        }
        let sid = gist.new_session_id();
        let mut q = crate::wire::Query::new(req.qspec(1));
        // §4.3: "the QNI must not include the RII object" in this QUERY.
        q.reserve_init = true;
        q.packet_classifier = Some(packet_classifier(&req.flow()));
        // §5.4.1: "If the session of this message is bound to another session, then the
        // RESERVE message MUST include the SESSION-ID of that other session"; the QNI
        // answering this QUERY copies them into its RESERVEs (§5.3.3).
        q.bound_sessions = req.bound_sessions.clone();
        let msg = Message::new(crate::wire::Body::Query(q));
        self.send(gist, now, sid, &req.flow(), Direction::Downstream, &msg)?;
        Ok(sid)
    }

    /// RFC 5974 §4.2: ask the path what it could give (a QUERY with an RII); the answer
    /// arrives as [`QosEvent::QueryAnswered`].
    pub fn query(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        req: &ReserveRequest,
    ) -> Result<SessionId, RequestError> {
        if !gist.is_local(req.source) {
            return Err(RequestError::NotSource);
        }
        let sid = gist.new_session_id();
        let rii = Rii(self.rng.random());
        let mut qspec = req.qspec(2);
        // This node's own hop counts too (§5.4.2: the QSPEC passes the RMF at every QNE).
        let oif = self.outgoing_interface(gist, &req.flow());
        rmf::query_hop(&mut qspec, &self.tc, oif);
        let mut q = crate::wire::Query::new(qspec);
        q.rii = Some(rii);
        let msg = Message::new(crate::wire::Body::Query(q));
        self.send(gist, now, sid, &req.flow(), Direction::Downstream, &msg)?;
        self.queries.retain(|_, q| q.expires > now);
        self.queries.insert(
            sid,
            OwnQuery {
                rii,
                expires: now + self.cfg.retry_max,
            },
        );
        Ok(sid)
    }

    /// Tear down a reservation this node initiated (RFC 5974 §5.4.1: a RESERVE with TEAR),
    /// releasing it here first.
    pub fn release(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        sid: SessionId,
    ) -> Result<(), RequestError> {
        match self.sessions.get(&sid) {
            Some(s) if s.role == Role::Qni => {}
            _ => return Err(RequestError::UnknownSession),
        }
        self.tear_session(gist, now, sid);
        Ok(())
    }

    /// Start a reservation as QNI: admit here, keep state, send the RESERVE towards the QNR.
    #[allow(clippy::too_many_arguments)]
    fn initiate(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        sid: SessionId,
        flow: PathCoupledMri,
        mut qspec: Qspec,
        bound: Vec<BoundSessionId>,
        confirm: bool,
        initiation: Initiation,
    ) -> Result<(), RequestError> {
        let pc = packet_classifier(&flow);
        let oif = self.outgoing_interface(gist, &flow);
        let requested = qspec.clone();
        let admitted = rmf::admit(
            &mut qspec,
            &mut self.tc,
            oif,
            None,
            state::classifier(&flow, Some(pc)),
        )
        .map_err(|r| {
            self.counters.admission_failures += 1;
            match r.info.code {
                crate::wire::code::permanent::INTERNAL_ERROR => AdmissionError::UnknownInterface,
                _ => AdmissionError::BandwidthUnavailable,
            }
        })?;
        self.counters.admitted += 1;
        let s = Reservation {
            flow,
            role: Role::Qni,
            initiation,
            prev_peer: None,
            abandoned_peer: None,
            notified_peer: None,
            next_peer: None,
            abandoned_next: None,
            old_branch: None,
            rsn_in: None,
            rsn_out: 0, // §5.3.1: "The RSN starts at zero."
            refresh_in: self.cfg.refresh_period,
            qspec,
            requested,
            packet_classifier: Some(pc),
            bound,
            tc: admitted.tc,
            rate: admitted.rate,
            full_refresh: true,
            own_request: None,
            forwarded_riis: Vec::new(),
            rii_forwarded_at: None,
            reverse_lost: false,
            break_flag: false,
            refresh_at: None,
            expires_at: None,
            retry_at: None,
        };
        self.index_bindings(sid, &[], &s.bound);
        self.sessions.insert(sid, s);
        let rii = confirm.then(|| Rii(self.rng.random()));
        if let Err(e) = self.send_reserve(gist, now, sid, rii, true, true) {
            self.remove_session(gist, now, sid);
            return Err(e.into());
        }
        self.schedule_refresh(now, sid);
        Ok(())
    }

    /// The interface the flow leaves this node by; `None` where it ends here.
    fn outgoing_interface(
        &self,
        gist: &dyn GistApi,
        flow: &PathCoupledMri,
    ) -> Option<pathwise_core::io::IfIndex> {
        if gist.is_local(flow.destination) {
            None
        } else {
            gist.outgoing_interface(flow.destination)
        }
    }

    /// Hand `msg` to GIST for the session's flow in direction `dir`, by GIST's routing state;
    /// a message back to the node whose Query is being answered rides the GIST Response.
    fn send(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        sid: SessionId,
        flow: &PathCoupledMri,
        dir: Direction,
        msg: &Message,
    ) -> Result<(), ApiError> {
        self.send_via(gist, now, sid, flow, dir, msg, None)
    }

    /// [`send`](Self::send), or with `peer` explicitly to that peer (see
    /// [`send_bytes`](Self::send_bytes)).
    #[allow(clippy::too_many_arguments)]
    fn send_via(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        sid: SessionId,
        flow: &PathCoupledMri,
        dir: Direction,
        msg: &Message,
        peer: Option<SiiHandle>,
    ) -> Result<(), ApiError> {
        let bytes = msg.to_bytes();
        self.dispatch(gist, now, sid, flow, dir, msg.msg_type(), bytes, peer)
    }

    /// Count and send encoded bytes (riding the GIST Response when answering a Query).
    #[allow(clippy::too_many_arguments)]
    fn dispatch(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        sid: SessionId,
        flow: &PathCoupledMri,
        dir: Direction,
        t: MsgType,
        bytes: Vec<u8>,
        peer: Option<SiiHandle>,
    ) -> Result<(), ApiError> {
        self.counters.count_sent(t, bytes.len());
        if self.in_query == Some(sid) && dir == Direction::Upstream && self.piggyback.is_none() {
            self.piggyback = Some(bytes);
            return Ok(());
        }
        self.send_bytes(gist, now, sid, flow, dir, bytes, peer)
    }

    /// Hand encoded bytes to GIST: by routing state (`peer` `None`, reliably if so
    /// configured), or explicitly routed to `peer`'s SII-Handle (RFC 5971 §7.1.4, B.1) —
    /// over an association GIST still has to it, else D-mode; a handle GIST no longer knows
    /// comes back as a MessageStatus. Explicit routing is for what must reach one peer
    /// whatever the routes say now: a tear of a branch the path left (RFC 5974 §5.2.5.2), a
    /// NOTIFY to an old peer (§5.2.5.3), an error RESPONSE to the peer that asked and on
    /// its way back along the reservation's path towards the QNI (§5.4.3).
    #[allow(clippy::too_many_arguments)]
    fn send_bytes(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        sid: SessionId,
        flow: &PathCoupledMri,
        dir: Direction,
        bytes: Vec<u8>,
        peer: Option<SiiHandle>,
    ) -> Result<(), ApiError> {
        let mut mri = *flow;
        mri.upstream = dir == Direction::Upstream;
        let mut m = SendMessage::new(self.cfg.nslpid, sid, Mri::PathCoupled(mri), bytes);
        match peer {
            Some(p) => m.sii_handle = Some(p),
            None => m.transfer.reliable = self.cfg.reliable,
        }
        gist.send_message(now, m).map(|_| ()).inspect_err(|_| {
            self.counters.drop("gist_refused");
        })
    }

    /// Pass a message this node did not originate (a QUERY, a NOTIFY) on along `dir` with
    /// `hops`, the GIST hop count it arrived with less one, stopping at zero: RFC 5971 §4.3.2
    /// makes GIST's hop count the lightweight loop control of messages an NSLP passes on (as
    /// the Ping NSLP does). Without it a QUERY caught in a routing loop (GIST states pointing
    /// at each other while routes change) went round for ever.
    #[allow(clippy::too_many_arguments)]
    fn pass_on(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        sid: SessionId,
        flow: &PathCoupledMri,
        dir: Direction,
        msg: &Message,
        hops: u8,
    ) {
        if hops == 0 {
            self.counters.drop("hop_limit");
            return;
        }
        let mut m = self.counted_send(sid, flow, dir, msg);
        m.transfer.reliable = self.cfg.reliable;
        m.gist_hops = Some(hops);
        if gist.send_message(now, m).is_err() {
            self.counters.drop("not_forwarded");
        }
    }

    /// `msg` for the session's flow in direction `dir` as GIST's SendMessage, counted as sent.
    fn counted_send(
        &mut self,
        sid: SessionId,
        flow: &PathCoupledMri,
        dir: Direction,
        msg: &Message,
    ) -> SendMessage {
        let bytes = msg.to_bytes();
        self.counters.count_sent(msg.msg_type(), bytes.len());
        let mut mri = *flow;
        mri.upstream = dir == Direction::Upstream;
        SendMessage::new(self.cfg.nslpid, sid, Mri::PathCoupled(mri), bytes)
    }

    /// Send `msg` along `dir` to one peer, explicitly routed by its SII-Handle
    /// ([`send_bytes`](Self::send_bytes)), best effort; never folded into a GIST Response.
    #[allow(clippy::too_many_arguments)]
    fn send_to_peer(
        &mut self,
        gist: &mut dyn GistApi,
        now: Instant,
        sid: SessionId,
        flow: &PathCoupledMri,
        dir: Direction,
        msg: &Message,
        peer: SiiHandle,
    ) {
        let bytes = msg.to_bytes();
        self.counters.count_sent(msg.msg_type(), bytes.len());
        let _ = self.send_bytes(gist, now, sid, flow, dir, bytes, Some(peer));
    }

    /// Set (or clear) one timer of a session.
    fn set_timer(&mut self, sid: SessionId, kind: TimerKind, at: Option<Instant>) {
        let Some(s) = self.sessions.get_mut(&sid) else {
            return;
        };
        let slot = match kind {
            TimerKind::Refresh => &mut s.refresh_at,
            TimerKind::Expire => &mut s.expires_at,
            TimerKind::Retry => &mut s.retry_at,
        };
        if let Some(old) = slot.take() {
            self.timers.remove(&(old, sid, kind));
        }
        *slot = at;
        if let Some(t) = at {
            self.timers.insert((t, sid, kind));
        }
    }

    /// Remove a session's state: its timers, its traffic-control reservation, its GIST
    /// routing state's lifetime.
    fn remove_session(&mut self, gist: &mut dyn GistApi, now: Instant, sid: SessionId) {
        for k in [TimerKind::Refresh, TimerKind::Expire, TimerKind::Retry] {
            self.set_timer(sid, k, None);
        }
        if let Some(s) = self.sessions.remove(&sid) {
            self.index_bindings(sid, &s.bound, &[]);
            if let Some((_, h)) = s.tc {
                self.tc.release(h);
            }
            if s.role != Role::Qnr {
                let mut mri = s.flow;
                mri.upstream = s.initiation.toward_qnr() == Direction::Upstream;
                // B.5: the routing state towards the QNR is no longer needed.
                gist.set_state_lifetime(
                    now,
                    self.cfg.nslpid,
                    sid,
                    &Mri::PathCoupled(mri),
                    s.initiation.toward_qnr(),
                    Duration::ZERO,
                );
            }
            if s.initiation == Initiation::Receiver && s.role != Role::Qni {
                // B.5 likewise for the reverse path this node kept for the RESERVEs
                // (`keep_reverse_path`): RFC 5971 §7.1.4 — a node on an old path should tell
                // GIST "that routing state is no longer required for this flow ... to prevent
                // GIST in nodes on the old path initiating routing state refresh and thus
                // causing state conflicts at the crossover router" (whose GIST would take this
                // node back as its upstream peer at each refresh Query).
                let mut mri = s.flow;
                mri.upstream = false;
                gist.set_state_lifetime(
                    now,
                    self.cfg.nslpid,
                    sid,
                    &Mri::PathCoupled(mri),
                    Direction::Downstream,
                    Duration::ZERO,
                );
            }
            self.notify_dependents(gist, now, sid);
        }
    }

    /// Keep [`dependents`](Self::dependents) in step with session `sid`'s BOUND-SESSION-IDs
    /// going from `old` to `new`.
    pub(super) fn index_bindings(
        &mut self,
        sid: SessionId,
        old: &[BoundSessionId],
        new: &[BoundSessionId],
    ) {
        let dependent = |b: &&BoundSessionId| b.code == BindingCode::DEPENDENT;
        for b in old.iter().filter(dependent) {
            self.dependents.remove(&(b.session_id, sid));
        }
        for b in new.iter().filter(dependent) {
            self.dependents.insert((b.session_id, sid));
        }
    }

    /// The direction a message received over `mri` travelled.
    fn travelled(mri: &Mri) -> Direction {
        Direction::of(mri)
    }

    fn reply_direction(mri: &Mri) -> Direction {
        reverse(Self::travelled(mri))
    }
}

/// The PACKET-CLASSIFIER naming the fields a flow's MRI carries (§5.1.3.5).
fn packet_classifier(flow: &PathCoupledMri) -> PacketClassifier {
    let mut b = PacketClassifier::SOURCE_ADDRESS | PacketClassifier::DESTINATION_ADDRESS;
    if flow.protocol.is_some() {
        b |= PacketClassifier::PROTOCOL;
    }
    if flow.source_port.is_some() {
        b |= PacketClassifier::SOURCE_PORT;
    }
    if flow.dest_port.is_some() {
        b |= PacketClassifier::DESTINATION_PORT;
    }
    if flow.flow_label.is_some() {
        b |= PacketClassifier::FLOW_LABEL;
    }
    PacketClassifier(b)
}

fn refresh_period(d: Duration) -> RefreshPeriod {
    RefreshPeriod(u32::try_from(d.as_millis()).unwrap_or(u32::MAX))
}

/// The message type byte of a message that did not parse, if it names one.
fn msg_type_of(bytes: &[u8]) -> Option<MsgType> {
    bytes.first().and_then(|b| MsgType::from_number(*b))
}

impl<T: TrafficControl + 'static> Nslp for QosNslp<T> {
    fn nslpid(&self) -> u16 {
        self.cfg.nslpid
    }

    fn recv_message(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: RecvMessage,
    ) -> RoutingDecision {
        if m.nslp_data.is_empty() {
            return RoutingDecision::ACCEPT; // a GIST refresh Query: keep peering
        }
        self.in_query = m.routing_state_check.then_some(m.session_id);
        self.piggyback = None;
        self.on_message(now, gist, &m);
        self.in_query = None;
        RoutingDecision::Accept {
            response_data: self.piggyback.take(),
        }
    }

    fn message_status(&mut self, _now: Instant, _gist: &mut dyn GistApi, status: MessageStatus) {
        if status.error.is_some() {
            self.counters.drop("gist_undelivered");
        }
        if status.error == Some(pathwise_gist::nslp::DeliveryError::NoRoutingState) {
            // B.3: an upstream message waited for routing state that never came (no Confirm
            // from upstream): for a receiver-initiated QNE, its RESERVE towards the QNR.
            self.no_reverse_path(status.session_id);
        }
    }

    fn network_notification(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        n: NetworkNotification,
    ) {
        self.on_network_notification(now, gist, n);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.timers.first().map(|(t, _, _)| *t)
    }

    fn handle_timeout(&mut self, now: Instant, gist: &mut dyn GistApi) {
        self.on_timeout(now, gist);
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl<T: TrafficControl> QosNslp<T> {
    fn on_message(&mut self, now: Instant, gist: &mut dyn GistApi, m: &RecvMessage) {
        let Mri::PathCoupled(flow) = &m.mri else {
            self.counters.drop("unsupported_mri");
            return;
        };
        let mut flow = *flow;
        flow.upstream = false;
        let msg = match Message::parse(&m.nslp_data) {
            Ok(msg) => msg,
            Err(e) => {
                self.counters.drop(e.kind.name());
                self.on_malformed(now, gist, m, &flow, &e);
                return;
            }
        };
        self.counters.count_received(msg.msg_type());
        let explicit_ok = match &msg.body {
            crate::wire::Body::Reserve(r) => r.tear,
            crate::wire::Body::Notify(_) | crate::wire::Body::Response(_) => true,
            crate::wire::Body::Query(_) => false,
        };
        if m.explicitly_routed && !explicit_ok {
            // RFC 5971 §7.1.4: GIST did not check an explicitly routed message against its
            // routing state, so the NSLP validates it. The QoS NSLP routes explicitly only the
            // tear of an old branch (RFC 5974 §5.2.5.2; a tear is still checked against the
            // current peer and RSN, `tear_allowed`), the NOTIFY to an old upstream peer
            // (§5.2.5.3; a NOTIFY installs no state, §5.4.4) and an error RESPONSE on its way
            // back along the reservation's path (§5.4.3; a RESPONSE installs no state and is
            // matched against the RII or RSN and the peer); anything else arriving that way
            // could install or refresh state off the path.
            self.counters.drop("explicitly_routed_not_tear");
            return;
        }
        let flags = msg.flags;
        match msg.body {
            crate::wire::Body::Reserve(r) => self.on_reserve(now, gist, m, flow, flags, r),
            crate::wire::Body::Query(q) => self.on_query(now, gist, m, flow, flags, q),
            crate::wire::Body::Response(r) => self.on_response(now, gist, m, flow, r),
            crate::wire::Body::Notify(n) => self.on_notify(now, gist, m, flow, n),
        }
    }

    /// RFC 5974 §5.4.1: a malformed RESERVE or QUERY "MAY" get a RESPONSE "with the
    /// appropriate INFO-SPEC" — the parse error's (§5.1.3.6 Protocol Error codes). RESPONSEs,
    /// NOTIFYs and tears get none (§5.3.5: no RESPONSE to a tear).
    fn on_malformed(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: &RecvMessage,
        flow: &PathCoupledMri,
        e: &crate::wire::ParseError,
    ) {
        let tear = m
            .nslp_data
            .get(1)
            .is_some_and(|f| f & crate::wire::reserve_flags::TEAR != 0);
        match msg_type_of(&m.nslp_data) {
            Some(MsgType::Reserve) if !tear => {}
            Some(MsgType::Query) => {}
            _ => return,
        }
        let (class, code) = e.kind.info_spec();
        let mut info = InfoSpec::new(class, code);
        info.source = self.error_source(gist, flow);
        if let Some(t) = e.kind.object_type() {
            info = info.object_type_info(t);
        }
        let resp = crate::wire::Response::new(info);
        let msg = Message::new(crate::wire::Body::Response(resp));
        let _ = self.send(
            gist,
            now,
            m.session_id,
            flow,
            Self::reply_direction(&m.mri),
            &msg,
        );
    }

    /// This node as an INFO-SPEC's Error Source Identifier.
    fn error_source(&self, gist: &dyn GistApi, flow: &PathCoupledMri) -> crate::wire::ErrorSource {
        match gist.local_address(flow.destination) {
            Some(IpAddr::V4(a)) => crate::wire::ErrorSource::Ipv4(a),
            Some(IpAddr::V6(a)) => crate::wire::ErrorSource::Ipv6(a),
            None => crate::wire::ErrorSource::None,
        }
    }

    /// The RSN this node sends.
    fn own_rsn(&self, rsn: u32) -> Rsn {
        Rsn {
            rsn,
            epoch: self.epoch,
        }
    }

    /// Refresh jitter: a refresh goes out at a random point of [R/2, 3R/2) (RFC 2205 §3.7,
    /// which §5.3.4 adopts), so refreshes do not synchronise.
    fn jittered(&mut self, r: Duration) -> Duration {
        let f: f64 = self.rng.random_range(0.5..1.5);
        r.mul_f64(f)
    }

    /// The peer's refresh period R from its REFRESH-PERIOD (ours when it sent none), capped at
    /// `max_refresh_period` (RFC 5974 §5.3.4: local significance).
    fn peer_refresh_period(&mut self, p: Option<RefreshPeriod>) -> Duration {
        let r = p.map_or(self.cfg.refresh_period, |p| {
            Duration::from_millis(u64::from(p.0))
        });
        if r > self.cfg.max_refresh_period {
            self.counters.refresh_periods_capped += 1;
            self.cfg.max_refresh_period
        } else {
            r
        }
    }

    /// The state lifetime L for a refresh period R (RFC 2205 §3.7, via RFC 5974 §5.3.4):
    /// L ≥ (K + 0.5) · 1.5 · R with K = 3.
    fn lifetime(r: Duration) -> Duration {
        r.mul_f64(3.5 * 1.5)
    }
}
