//! `pathwise sim campaign qos`: per seed, GIST with the QoS NSLP (RFC 5974) on every node of a
//! random network (or a seed paper's testbed), admitting through in-memory traffic control with
//! the topology's budgets; a random workload of sender- and receiver-initiated reservations,
//! resource QUERYs and releases, at rates drawn so admission fails on the smaller budgets; the
//! faults [`crate::sim::faults`] draws; and hostile nodes whose QoS NSLP injects replayed and
//! malformed QoS NSLP messages inside valid GIST Data.
//!
//! Each node's QoS NSLP runs inside a [`Watched`] plug-in that checks, around every call GIST
//! makes, that each message handed to the NSLP ends in exactly one of its counters (received
//! once parsed, otherwise dropped by reason) and that RSNs never go backwards (RFC 5974
//! §5.3.1: a node's own RSN per session, and the RSN it holds from an unchanged peer in one
//! epoch). The rest is checked on snapshots the workload takes every step.

use crate::sim::faults::{FaultPlan, random_network, v4};
use crate::sim::invariants::{self as inv, Checks, Invariant, Violation};
use crate::sim::{Activity, Budget, Phases, SeedRun, Stage, Workload, run_plan};
use pathwise_core::io::IfIndex;
use pathwise_core::rand::Rng;
use pathwise_core::rng::SeededRng;
use pathwise_core::tc::{MemoryTrafficControl, SharedTrafficControl};
use pathwise_core::time::{Duration, Instant};
use pathwise_gist::nslp::{
    GistApi, MessageStatus, NetworkNotification, Nslp, RecvMessage, RoutingDecision, SendMessage,
    SiiHandle,
};
use pathwise_gist::sim_stream::StreamAdapter;
use pathwise_gist::wire::{Mri, SessionId};
use pathwise_gist::{Config, GistEngine, InterfaceConfig};
use pathwise_qos_nslp::engine::state::rsn_cmp;
use pathwise_qos_nslp::wire::qspec::Tmod;
use pathwise_qos_nslp::wire::{Body, Message, Rsn};
use pathwise_qos_nslp::{
    Initiation, QosConfig, QosEvent, QosNslp, ReserveRequest, Role, engine::Counters,
};
use pathwise_sim::{NodeId, NodeSetup, Sim, SimConfig, Topology};
use std::cmp::Ordering;
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::net::IpAddr;

type Tc = SharedTrafficControl<MemoryTrafficControl>;
type Qos = QosNslp<Tc>;
type Node = StreamAdapter;

/// The QoS NSLP's refresh period R: its state lifetime is 5.25 R (RFC 5974 §5.3.4).
const REFRESH: Duration = Duration::from_secs(5);

/// GIST timers as in the GIST campaign: many refreshes and lifetimes in a run.
fn short_timers(c: &mut Config) {
    c.refresh_period = Duration::from_secs(5);
    c.rs_validity = Duration::from_secs(15);
    c.state_lifetime = Duration::from_secs(15);
    c.max_state_lifetime = Duration::from_secs(30);
    c.ma_hold_time = Duration::from_secs(10);
    c.ma_idle_timeout = Duration::from_secs(10);
    c.secret_rotation = Duration::from_secs(20);
}

/// What a hostile node's QoS NSLP does besides its own work: it remembers the QoS NSLP messages
/// it hears and injects replays and mutated copies of them through GIST (so they arrive inside
/// well-formed GIST Data), one every 50–500 ms until the faults end.
#[derive(Debug)]
struct NslpHostile {
    rng: SeededRng,
    seen: VecDeque<(SessionId, Mri, Vec<u8>)>,
    next_at: Instant,
    until: Instant,
}

const SEEN: usize = 32;

impl NslpHostile {
    /// A copy of one message seen: replayed as is (one in four), truncated, extended, or with
    /// bytes changed; sent on (or, one in four, back the way it came).
    fn draw(&mut self) -> Option<(SessionId, Mri, Vec<u8>)> {
        if self.seen.is_empty() {
            return None;
        }
        for _ in 0..8 {
            let (sid, mut mri, mut data) =
                self.seen[self.rng.random_range(0..self.seen.len())].clone();
            match self.rng.random_range(0..8) {
                0 | 1 => {}
                2 => {
                    let keep = self.rng.random_range(0..=data.len());
                    data.truncate(keep);
                }
                3 => {
                    let extra = self.rng.random_range(1..=16);
                    data.extend((0..extra).map(|_| self.rng.random::<u8>()));
                }
                _ => {
                    if data.is_empty() {
                        continue;
                    }
                    for _ in 0..self.rng.random_range(1..=4) {
                        let i = self.rng.random_range(0..data.len());
                        data[i] = self.rng.random();
                    }
                }
            }
            if data.is_empty() || !vet(&data) {
                continue;
            }
            if self.rng.random_range(0..4) == 0
                && let Mri::PathCoupled(p) = &mut mri
            {
                p.upstream = !p.upstream;
            }
            return Some((sid, mri, data));
        }
        None
    }
}

/// Keeps out what would legitimately hold state beyond the run: a RESERVE whose REFRESH-PERIOD
/// grants more than 2 R (its state lifetime follows the peer's R, §5.3.4), which no quiescent
/// phase could wait out. The engine takes a peer's R as given (see docs/CAMPAIGNS.md).
fn vet(data: &[u8]) -> bool {
    match Message::parse(data) {
        Ok(Message {
            body: Body::Reserve(r),
            ..
        }) => r
            .refresh_period
            .is_none_or(|p| u128::from(p.0) <= 2 * REFRESH.as_millis()),
        _ => true,
    }
}

/// The RSN marks of one session: previous peer, RSN held from it, own RSN.
type RsnMark = (SessionId, Option<SiiHandle>, Option<Rsn>, u32);

/// A node's QoS NSLP as the campaign runs it: the engine, checked around each call.
#[derive(Debug)]
pub struct Watched {
    qos: Qos,
    budgets: Vec<(IfIndex, f64)>,
    /// QoS NSLP messages GIST handed over (not GIST refresh Queries with no NSLP data).
    handed: u64,
    /// The first message or call that broke counting or RSN order.
    fault: Option<(Invariant, String)>,
    hostile: Option<NslpHostile>,
    injected: u64,
    /// What the engine reported to its application, by kind.
    events: BTreeMap<&'static str, u64>,
}

impl Watched {
    fn rsn_marks(&self) -> Vec<RsnMark> {
        self.qos
            .sessions()
            .map(|(sid, s)| (*sid, s.prev_peer, s.rsn_in, s.rsn_out))
            .collect()
    }

    /// RFC 5974 §5.3.1: while a session's state lasts, this node's own RSN never goes back,
    /// and neither does the RSN held from one peer within one epoch.
    fn check_rsns(&mut self, before: &[RsnMark], what: &str) {
        if self.fault.is_some() {
            return;
        }
        for (sid, peer, rsn_in, rsn_out) in before {
            let Some(s) = self.qos.session(sid) else {
                continue;
            };
            if rsn_cmp(s.rsn_out, *rsn_out) == Ordering::Less {
                self.fault = Some((
                    Invariant::RsnMonotonic,
                    format!(
                        "{what}: own RSN of session {sid:?} went from {rsn_out} to {}",
                        s.rsn_out
                    ),
                ));
                return;
            }
            if let (Some(old), Some(new)) = (rsn_in, s.rsn_in)
                && s.prev_peer == *peer
                && old.epoch == new.epoch
                && rsn_cmp(new.rsn, old.rsn) == Ordering::Less
            {
                self.fault = Some((
                    Invariant::RsnMonotonic,
                    format!(
                        "{what}: RSN held for session {sid:?} from peer {peer:?} went from {} to {} (epoch {})",
                        old.rsn, new.rsn, new.epoch
                    ),
                ));
                return;
            }
        }
    }

    fn received(c: &Counters) -> u64 {
        c.received.iter().sum()
    }

    /// Take what the engine reported to its application, counting it by kind.
    fn drain_events(&mut self) {
        while let Some(e) = self.qos.poll_event() {
            let kind = match &e {
                QosEvent::Reserved { .. } => "reserved (QNI confirmed)",
                QosEvent::Failed { .. } => "failed (QNI told)",
                QosEvent::Installed { .. } => "installed at QNR",
                QosEvent::Torn { .. } => "torn by peer",
                QosEvent::Expired { .. } => "expired",
                QosEvent::QueryAnswered { .. } => "queries answered",
                QosEvent::NoResponse { .. } => "no response",
                QosEvent::Notified { .. } => "notified",
            };
            *self.events.entry(kind).or_insert(0) += 1;
        }
    }

    fn view(&mut self) -> NodeView {
        self.drain_events();
        let tc = self.qos.traffic_control().lock();
        let reserved = self
            .budgets
            .iter()
            .map(|(i, b)| (*i, tc.reserved(*i), *b))
            .collect();
        let tc_len = tc.len();
        drop(tc);
        NodeView {
            up: true,
            sessions: self
                .qos
                .sessions()
                .map(|(sid, s)| SessionView {
                    sid: *sid,
                    role: s.role,
                    initiation: s.initiation,
                    source: s.flow.source,
                    destination: s.flow.destination,
                    tc: s.tc.map(|(i, _)| i),
                    rate: s.rate,
                })
                .collect(),
            timers: self.qos.timers(),
            tc_len,
            reserved,
            handed: self.handed,
            counters: self.qos.counters().clone(),
            fault: self.fault.clone(),
            injected: self.injected,
            events: self.events.clone(),
            explicit: (0, 0),
        }
    }
}

impl Nslp for Watched {
    fn nslpid(&self) -> u16 {
        self.qos.nslpid()
    }

    fn recv_message(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        m: RecvMessage,
    ) -> RoutingDecision {
        if m.nslp_data.is_empty() {
            return self.qos.recv_message(now, gist, m);
        }
        if let Some(h) = self.hostile.as_mut() {
            if h.seen.len() == SEEN {
                h.seen.pop_front();
            }
            h.seen
                .push_back((m.session_id, m.mri.clone(), m.nslp_data.clone()));
        }
        self.handed += 1;
        let (r0, d0) = (
            Self::received(self.qos.counters()),
            self.qos.counters().dropped_total(),
        );
        let marks = self.rsn_marks();
        let d = self.qos.recv_message(now, gist, m);
        let (r1, d1) = (
            Self::received(self.qos.counters()),
            self.qos.counters().dropped_total(),
        );
        // Exactly one of: received once, or not received and dropped by a reason.
        let once = r1 == r0 + 1 || (r1 == r0 && d1 > d0);
        if !once && self.fault.is_none() {
            self.fault = Some((
                Invariant::CountersAddUp,
                format!(
                    "message {}: received {r0} -> {r1}, dropped {d0} -> {d1}",
                    self.handed
                ),
            ));
        }
        self.check_rsns(&marks, "a message");
        d
    }

    fn message_status(&mut self, now: Instant, gist: &mut dyn GistApi, status: MessageStatus) {
        let marks = self.rsn_marks();
        self.qos.message_status(now, gist, status);
        self.check_rsns(&marks, "a message status");
    }

    fn network_notification(
        &mut self,
        now: Instant,
        gist: &mut dyn GistApi,
        n: NetworkNotification,
    ) {
        let marks = self.rsn_marks();
        self.qos.network_notification(now, gist, n);
        self.check_rsns(&marks, "a network notification");
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let own = self.hostile.as_ref().map(|h| h.next_at);
        match (own, self.qos.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout(&mut self, now: Instant, gist: &mut dyn GistApi) {
        if let Some(h) = self.hostile.as_mut()
            && h.next_at <= now
        {
            if now < h.until {
                if let Some((sid, mri, data)) = h.draw() {
                    let nslpid = self.qos.nslpid();
                    if gist
                        .send_message(now, SendMessage::new(nslpid, sid, mri, data))
                        .is_ok()
                    {
                        self.injected += 1;
                    }
                }
                h.next_at = now + Duration::from_millis(h.rng.random_range(50..=500));
            } else {
                self.hostile = None;
            }
        }
        if self.qos.poll_timeout().is_some_and(|t| t <= now) {
            let marks = self.rsn_marks();
            self.qos.handle_timeout(now, gist);
            self.check_rsns(&marks, "a timer");
        }
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

/// A GIST node with the watched QoS NSLP over in-memory traffic control with the node's
/// reservable budgets.
fn qos_node(setup: &NodeSetup, hostile_until: Option<Instant>) -> Node {
    let mut cfg = Config {
        seed: setup.seed,
        interfaces: setup
            .interfaces
            .iter()
            .map(|i| InterfaceConfig {
                ifindex: i.ifindex,
                addrs: i.addrs.iter().map(|n| n.addr()).collect(),
            })
            .collect(),
        local_addrs: setup.loopbacks().iter().map(|n| n.addr()).collect(),
        ..Config::default()
    };
    short_timers(&mut cfg);
    let tc = setup.memory_tc();
    let budgets: Vec<_> = setup
        .interfaces
        .iter()
        .map(|i| (i.ifindex, i.tc_interface().reservable))
        .collect();
    let qcfg = QosConfig {
        seed: setup.seed ^ 0x9e37,
        refresh_period: REFRESH,
        max_refresh_period: REFRESH,
        ..QosConfig::default()
    };
    let hostile = hostile_until.map(|until| {
        let mut rng = pathwise_core::rng::seeded(setup.seed ^ 0x0071_6f73);
        NslpHostile {
            next_at: Instant::ZERO + Duration::from_millis(rng.random_range(50..=500)),
            rng,
            seen: VecDeque::new(),
            until,
        }
    });
    let mut e = GistEngine::new(cfg, Instant::ZERO);
    e.register(Box::new(Watched {
        qos: QosNslp::new(qcfg, SharedTrafficControl::new(tc)),
        budgets,
        handed: 0,
        fault: None,
        hostile,
        injected: 0,
        events: BTreeMap::new(),
    }));
    StreamAdapter::new(e)
}

/// One session's state as a snapshot shows it.
#[derive(Clone, Debug)]
struct SessionView {
    sid: SessionId,
    role: Role,
    initiation: Initiation,
    source: IpAddr,
    destination: IpAddr,
    tc: Option<IfIndex>,
    rate: f64,
}

/// A node's QoS NSLP as seen after the last step.
#[derive(Clone, Debug, Default)]
struct NodeView {
    up: bool,
    sessions: Vec<SessionView>,
    timers: usize,
    tc_len: usize,
    /// Per interface: reserved, budget (bytes per second).
    reserved: Vec<(IfIndex, f64, f64)>,
    handed: u64,
    counters: Counters,
    fault: Option<(Invariant, String)>,
    injected: u64,
    events: BTreeMap<&'static str, u64>,
    /// GIST's explicitly routed Data sent and received (the QoS NSLP's old-branch tears,
    /// RFC 5974 §5.2.5.2).
    explicit: (u64, u64),
}

/// What an application asks of the QoS NSLP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// RFC 5974 §4.1: the data sender is the QNI.
    Sender,
    /// RFC 5974 §4.3: the data sender asks, the data receiver is the QNI.
    Receiver,
    /// RFC 5974 §4.2: a resource QUERY, answered by the QNR.
    Query,
}

/// One application: a flow from `from` to `to` and what it asks for it.
#[derive(Clone, Debug)]
struct App {
    kind: Kind,
    from: NodeId,
    to: NodeId,
    src: IpAddr,
    dst: IpAddr,
    mbit: f32,
    /// When it (re)asks next.
    next_at: Instant,
    /// How long it waits before asking again once its reservation is gone (or, for
    /// queries, between queries).
    period: Duration,
    /// When it releases for good, if during the run.
    release_at: Option<Instant>,
    released: bool,
    /// Every session it started: an earlier one may still reach its QNI after a later one
    /// was asked for (a delayed QUERY or RESERVE), and all are released at the end.
    sessions: Vec<SessionId>,
}

impl App {
    /// The node that initiates (and releases) the reservation.
    fn qni(&self) -> NodeId {
        match self.kind {
            Kind::Receiver => self.to,
            Kind::Sender | Kind::Query => self.from,
        }
    }

    fn request(&self) -> ReserveRequest {
        let tmod = Tmod {
            rate: self.mbit * 125_000.0,
            bucket_size: 15_000.0,
            peak_rate: f32::INFINITY,
            min_policed_unit: 64,
            max_packet_size: 1500,
        };
        ReserveRequest::new(self.src, self.dst, tmod)
    }

    fn ask(&mut self, sim: &mut Sim<Node>) {
        let req = self.request();
        let kind = self.kind;
        let sid = sim
            .with_engine(self.from, |e, now| {
                e.with_nslp::<Watched, _>(now, |w, g| match kind {
                    Kind::Sender => w.qos.reserve(g, now, &req),
                    Kind::Receiver => w.qos.reserve_receiver_initiated(g, now, &req),
                    Kind::Query => w.qos.query(g, now, &req),
                })
            })
            .flatten()
            .and_then(Result::ok);
        if self.kind != Kind::Query {
            self.sessions.extend(sid);
        }
        self.next_at = sim.now() + self.period;
    }

    /// Release every session it started that its QNI still holds.
    fn release(&mut self, sim: &mut Sim<Node>) {
        for sid in std::mem::take(&mut self.sessions) {
            sim.with_engine(self.qni(), |e, now| {
                e.with_nslp::<Watched, _>(now, |w, g| {
                    if w.qos.session(&sid).is_some_and(|s| s.role == Role::Qni) {
                        let _ = w.qos.release(g, now, sid);
                    }
                })
            });
        }
        self.released = true;
    }
}

#[derive(Debug, Default)]
struct QosWorkload {
    apps: Vec<App>,
    views: Vec<NodeView>,
    /// Reports from nodes' earlier lives (before a crash), kept for the activity.
    past_events: BTreeMap<&'static str, u64>,
    torn_down: bool,
}

impl QosWorkload {
    fn snapshot(&mut self, sim: &mut Sim<Node>) {
        let nodes: Vec<NodeId> = sim.topology().node_ids().collect();
        self.views.resize_with(nodes.len(), NodeView::default);
        for n in nodes {
            let v = sim
                .with_engine(n, |e, now| e.with_nslp::<Watched, _>(now, |w, _| w.view()))
                .flatten()
                .unwrap_or_default();
            let mut v = v;
            v.explicit = sim.engine(n).map_or((0, 0), |e| {
                let c = e.inner().counters();
                (c.explicit_sent, c.explicit_received)
            });
            let old = &mut self.views[n.index()];
            // A node that crashed lost its counts with its engine; keep what it reported.
            if v.events.values().sum::<u64>() < old.events.values().sum::<u64>() {
                for (k, c) in &old.events {
                    *self.past_events.entry(k).or_insert(0) += c;
                }
            }
            *old = v;
        }
    }

    /// Every node's QNI sessions are released: the applications have left. Also after the
    /// teardown, at every step: a QUERY with RESERVE-INIT still in flight then makes its
    /// receiver a QNI (RFC 5974 §4.3: it accepts receiver-initiated reservations), which no
    /// application is left to release (seed 5861785519592256).
    fn release_every_qni(sim: &mut Sim<Node>) {
        for n in sim.topology().node_ids().collect::<Vec<_>>() {
            sim.with_engine(n, |e, now| {
                e.with_nslp::<Watched, _>(now, |w, g| {
                    let own: Vec<SessionId> = w
                        .qos
                        .sessions()
                        .filter(|(_, s)| s.role == Role::Qni)
                        .map(|(sid, _)| *sid)
                        .collect();
                    for sid in own {
                        let _ = w.qos.release(g, now, sid);
                    }
                })
            });
        }
    }

    /// The nodes a flow's packets cross from `src`'s owner to `dst`'s owner, on the routes the
    /// simulator holds now; `None` if they cannot be followed.
    fn data_path(sim: &Sim<Node>, src: IpAddr, dst: IpAddr) -> Option<Vec<(NodeId, IfIndex)>> {
        let topo = sim.topology();
        let (mut at, end) = (topo.owner(src)?, topo.owner(dst)?);
        let mut path = Vec::new();
        while at != end {
            let r = sim.route_to(at, dst)?;
            path.push((at, r.ifindex));
            at = topo.owner(r.next_hop?)?;
            if path.len() > topo.node_ids().count() {
                return None;
            }
        }
        Some(path)
    }
}

impl Workload for QosWorkload {
    type Engine = Node;

    fn react(&mut self, sim: &mut Sim<Node>) {
        sim.drain_events();
        if self.torn_down {
            Self::release_every_qni(sim);
            self.snapshot(sim);
            return;
        }
        self.snapshot(sim);
        let now = sim.now();
        for i in 0..self.apps.len() {
            let a = &self.apps[i];
            if a.released || !sim.is_up(a.from) {
                continue;
            }
            if a.release_at.is_some_and(|t| t <= now) {
                self.apps[i].release(sim);
                continue;
            }
            if a.next_at > now {
                continue;
            }
            // A reservation is asked for again once its QNI holds no state of it (refused,
            // failed, expired, or lost with a crash); a query is repeated.
            let held = self.views[a.qni().index()]
                .sessions
                .iter()
                .any(|s| a.sessions.contains(&s.sid));
            if a.kind == Kind::Query || !held {
                self.apps[i].ask(sim);
            } else {
                self.apps[i].next_at = now + a.period;
            }
        }
    }

    fn restarted(&mut self, sim: &mut Sim<Node>, node: NodeId) {
        let now = sim.now();
        for a in self.apps.iter_mut().filter(|a| a.qni() == node) {
            // The QNI's sessions went with it: the application starts again, in a new one.
            a.sessions.clear();
            a.next_at = now;
        }
    }

    fn check(&self, sim: &Sim<Node>, stage: Stage, checks: &mut Checks) -> Result<(), Violation> {
        let now = sim.now();
        let topo = sim.topology();
        for n in topo.node_ids() {
            let v = &self.views[n.index()];
            if !v.up {
                continue;
            }
            let name = sim.name(n);
            let fail = |i: Invariant, d: String| Violation::new(i, now, name, d);
            checks.count(Invariant::CountersAddUp);
            checks.count(Invariant::RsnMonotonic);
            if let Some((i, d)) = &v.fault {
                return Err(fail(*i, d.clone()));
            }
            let c = &v.counters;
            inv::counters_add_up(v.handed, c.received.iter().sum(), c.dropped_total(), false)
                .map_err(|d| fail(Invariant::CountersAddUp, format!("{d}: {c:?}")))?;
            for (i, reserved, budget) in &v.reserved {
                checks.count(Invariant::Admission);
                inv::admission(i.0, *reserved, *budget)
                    .map_err(|d| fail(Invariant::Admission, d))?;
            }
            // Every TC reservation is a session's: count and rate per interface.
            checks.count(Invariant::ClassesMatchState);
            let with_tc = v.sessions.iter().filter(|s| s.tc.is_some()).count();
            inv::classes_match_state(0, (v.tc_len, 0.0), (with_tc, 0.0))
                .map_err(|d| fail(Invariant::ClassesMatchState, format!("all interfaces: {d}")))?;
            for (i, reserved, _) in &v.reserved {
                let of_sessions: Vec<f64> = v
                    .sessions
                    .iter()
                    .filter(|s| s.tc == Some(*i))
                    .map(|s| s.rate)
                    .collect();
                // Traffic control tells rates per interface, not counts: the rate decides.
                let count = of_sessions.len();
                inv::classes_match_state(
                    i.0,
                    (count, *reserved),
                    (count, of_sessions.iter().sum()),
                )
                .map_err(|d| fail(Invariant::ClassesMatchState, d))?;
            }
            if stage == Stage::Settled {
                // Every TC reservation belongs to a session held by its QNI, and lies on the
                // flow's data path, on the interface the flow leaves by.
                for s in v.sessions.iter().filter(|s| s.tc.is_some()) {
                    let Some(path) = Self::data_path(sim, s.source, s.destination) else {
                        continue;
                    };
                    let qni_addr = match s.initiation {
                        Initiation::Sender => s.source,
                        Initiation::Receiver => s.destination,
                    };
                    let qni = topo.owner(qni_addr);
                    let qni_holds = qni.is_some_and(|q| {
                        self.views[q.index()]
                            .sessions
                            .iter()
                            .any(|x| x.sid == s.sid && x.role == Role::Qni)
                    });
                    checks.count(Invariant::ResvHasPath);
                    let installed = [inv::InstalledOn {
                        ifindex: s.tc.map_or(0, |i| i.0),
                        senders: vec![s.sid],
                    }];
                    let oifs: Vec<u32> = path
                        .iter()
                        .filter(|(x, _)| *x == n)
                        .map(|(_, i)| i.0)
                        .collect();
                    let paths = if qni_holds {
                        vec![(s.sid, oifs)]
                    } else {
                        Vec::new()
                    };
                    inv::resv_has_path(&installed, &paths).map_err(|d| {
                        fail(
                            Invariant::ResvHasPath,
                            format!(
                                "{d} ({:?} {:?}, {} -> {}; QNI {} holds it: {qni_holds}; data path {:?})",
                                s.role,
                                s.initiation,
                                s.source,
                                s.destination,
                                qni.map_or("?", |q| sim.name(q)),
                                path.iter()
                                    .map(|(x, i)| format!("{}/{}", sim.name(*x), i.0))
                                    .collect::<Vec<_>>()
                            ),
                        )
                    })?;
                }
            }
            if stage == Stage::Quiescent {
                checks.count(Invariant::NoStateLeft);
                let reserved = v.reserved.iter().filter(|(_, r, _)| *r > 0.0).count();
                inv::no_state_left(&[
                    ("QoS NSLP sessions", v.sessions.len()),
                    ("QoS NSLP timers", v.timers),
                    ("TC reservations", v.tc_len),
                    ("interfaces with bandwidth reserved", reserved),
                ])
                .map_err(|d| {
                    let left: Vec<String> = v
                        .sessions
                        .iter()
                        .map(|s| {
                            format!(
                                "{:?} {:?} {} -> {} (TC {:?})",
                                s.role, s.initiation, s.source, s.destination, s.tc
                            )
                        })
                        .collect();
                    fail(Invariant::NoStateLeft, format!("{d}: {}", left.join("; ")))
                })?;
            }
        }
        Ok(())
    }

    fn activity(&self, _sim: &Sim<Node>, out: &mut Activity) {
        for v in &self.views {
            let c = &v.counters;
            out.add("sessions with state at settle", v.sessions.len() as u64);
            out.add("TC reservations at settle", v.tc_len as u64);
            out.add(
                "receiver-initiated states at settle",
                v.sessions
                    .iter()
                    .filter(|s| s.initiation == Initiation::Receiver)
                    .count() as u64,
            );
            out.add("admission failures", c.admission_failures);
            out.add("reduced refreshes", c.reduced_refreshes);
            out.add("summary refreshes", c.summary_refreshes);
            out.add("state lifetimes run out", c.expired);
            out.add("route changes acted on", c.route_changes);
            out.add("retransmissions", c.retransmissions);
            out.add("hostile QoS NSLP messages injected", v.injected);
            out.add("messages dropped by QoS NSLP engines", c.dropped_total());
            out.add("old-branch tears sent by SII-Handle", v.explicit.0);
            out.add("explicitly routed messages received", v.explicit.1);
            for (k, n) in &v.events {
                out.add(k, *n);
            }
        }
        for (k, n) in &self.past_events {
            out.add(k, *n);
        }
    }

    /// Every application leaves: the QNI of each reservation releases it, also those it did
    /// not ask for itself (a receiver-initiated one answered for a QUERY with RESERVE-INIT,
    /// perhaps a replayed one, or one whose application restarted meanwhile).
    fn teardown(&mut self, sim: &mut Sim<Node>) {
        for a in &mut self.apps {
            if !a.released {
                a.release(sim);
            }
        }
        Self::release_every_qni(sim);
        self.torn_down = true;
    }
}

/// Run one seed of the QoS NSLP campaign.
pub fn run_seed(seed: u64, budget: Budget) -> SeedRun {
    let mut rng = pathwise_core::rng::seeded(seed);
    let topo: Topology = random_network(&mut rng);
    let original = topo.clone();
    let lifetime = REFRESH.mul_f64(3.5 * 1.5);
    let phases = Phases {
        faults: Duration::from_secs(60),
        settle: Duration::from_secs(75),
        quiesce: Duration::from_secs(120),
        step: Duration::from_millis(250),
        check_every: 4,
    };
    let plan = FaultPlan::draw(&mut rng, &topo, phases.faults, lifetime);
    let hostile = plan.hostile.clone();
    let fault_end = Instant::ZERO + phases.faults;
    let mut sim = Sim::new(topo, SimConfig::seeded(seed), move |setup: &NodeSetup| {
        // A restarted hostile node stays hostile until the faults end.
        Some(qos_node(
            setup,
            hostile.contains(&setup.id).then_some(fault_end),
        ))
    });
    let topo = sim.topology();
    let nodes: Vec<NodeId> = topo
        .node_ids()
        .filter(|n| topo.node(*n).runs_engine)
        .collect();
    let mut drawn = format!(
        "{} ({} nodes, {} links);",
        topo.name(),
        topo.node_ids().count(),
        topo.links().len()
    );
    let mut w = QosWorkload::default();
    for _ in 0..rng.random_range(1..=6) {
        let (from, to) = (
            nodes[rng.random_range(0..nodes.len())],
            nodes[rng.random_range(0..nodes.len())],
        );
        if from == to {
            continue;
        }
        let kind = match rng.random_range(0..5) {
            0 | 1 => Kind::Sender,
            2 | 3 => Kind::Receiver,
            _ => Kind::Query,
        };
        // 0.5–6 Mbit/s against budgets of 1–10 Mbit/s: some are refused.
        let mbit = f32::from(rng.random_range(1..=12u8)) / 2.0;
        let release_at = rng
            .random_bool(0.3)
            .then(|| Instant::from_millis(rng.random_range(5_000..=90_000)));
        let _ = write!(
            drawn,
            " {:?} {}->{} {mbit} Mbit/s{};",
            kind,
            topo.node(from).name,
            topo.node(to).name,
            release_at.map_or(String::new(), |t| format!(
                " released at {:.1} s",
                t.as_nanos() as f64 / 1e9
            ))
        );
        w.apps.push(App {
            kind,
            from,
            to,
            src: v4(topo, from),
            dst: v4(topo, to),
            mbit,
            next_at: Instant::from_millis(rng.random_range(1..=3000)),
            period: Duration::from_millis(rng.random_range(5_000..=15_000)),
            release_at,
            released: false,
            sessions: Vec::new(),
        });
    }
    run_plan(
        &mut sim,
        &mut w,
        &plan,
        &original,
        phases,
        budget,
        drawn,
        |_, _| {},
    )
}
