//! The RSVP engine (RFC 2205 §3, processing rules of RFC 2209), sans-IO.
//!
//! Driven through [`pathwise_core::engine::Engine`]: the driver hands in datagrams
//! (`handle_datagram`), route changes (`handle_route_change`) and the passing of time
//! (`handle_timeout`), then drains `poll_transmit` and `poll_event` and sleeps until
//! `poll_timeout`. Applications use the end-host API ([`RsvpEngine::register_sender`],
//! [`RsvpEngine::reserve`], …) and hear back through [`Event`]s. Reservations are admitted and
//! installed through a [`TrafficControl`] implementation.
//!
//! State follows the KOM engine's model (seed 001 §III.A): see [`state`]. Neighbour liveness
//! with Hello messages (RFC 3209 §5) is in [`hello`]; message integrity (RFC 2747) in
//! [`integrity`]; RSVP-TE's LSPs, labels and explicit routes (RFC 3209) in [`te`].

pub mod api;
pub mod counters;
pub mod hello;
pub mod inspect;
pub mod integrity;
pub mod intern;
mod list;
pub mod martian;
pub mod merge;
mod path;
pub mod refresh;
mod resv;
mod routes;
mod send;
pub mod state;
pub mod tc;
pub mod te;

pub use api::{ApiError, Event};
pub use counters::{Counters, StateStats};
pub use hello::{HelloConfig, HelloCounters, HelloNeighbor};
pub use refresh::MessageIdSpace;
pub use tc::{
    AdmissionError, MemoryTrafficControl, TcHandle, TcInterface, TcRequest, TrafficControl,
};

use crate::few::Few;
use crate::wire::{FlowSpec, Message, MsgType, Packet, RsvpHop, Session};
use hashbrown::HashTable;
use intern::Interner;
use pathwise_core::arena::Arena;
use pathwise_core::engine::Engine;
use pathwise_core::fib::Fib;
use pathwise_core::io::{IPPROTO_RSVP, IfIndex, Received, Transmit, Transport};
use pathwise_core::rand::Rng;
use pathwise_core::rng::SeededRng;
use pathwise_core::route::{MulticastRoute, Route, RouteChange};
use pathwise_core::table::{KeyedMap, KeyedState, keyed_map};
use pathwise_core::time::{Duration, Instant};
use pathwise_core::timer::{TimerWheel, WheelConfig};
use smallvec::SmallVec;
use state::{
    OiatPsb, OutIsb, OutIsbRef, PhopSb, Psb, PsbId, Rsb, RsbId, SessionDest, SessionId,
    SessionState,
};
use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::net::IpAddr;

/// One local interface.
#[derive(Clone, Debug)]
pub struct InterfaceConfig {
    /// Its index.
    pub ifindex: IfIndex,
    /// Its addresses (an RSVP_HOP names the one of the session's family).
    pub addrs: Vec<IpAddr>,
    /// Link bandwidth, bits per second.
    pub bandwidth_bps: u64,
    /// Bandwidth reservations may take, bits per second.
    pub reservable_bps: u64,
    /// MTU, bytes.
    pub mtu: u32,
    /// One-way latency of the attached link.
    pub latency: Duration,
    /// Message integrity on this interface (RFC 2747): off, accept or require, with its keys.
    pub integrity: pathwise_auth::Policy,
    /// Neighbour liveness with Hello messages (RFC 3209 §5) on this interface; `None`: off.
    pub hello: Option<HelloConfig>,
}

/// Engine configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Seed of the engine's random generator (refresh jitter, hash keys).
    pub seed: u64,
    /// Refresh period R (RFC 2205 §3.7; default 30 s).
    pub refresh: Duration,
    /// K, the number of refreshes that may be lost before state times out (default 3).
    pub keep_multiplier: u32,
    /// Kb, the number of refresh periods blockade state lasts (RFC 2205 §3.5; default 4, the
    /// RSVP-MIB's `rsvpIfRefreshBlockadeMultiple`, RFC 2206).
    pub blockade_multiplier: u32,
    /// IP TTL of messages this node originates.
    pub ttl: u8,
    /// Timer wheel layout.
    pub wheel: WheelConfig,
    /// Delay W between a route change and local repair (RFC 2205 §3.6).
    pub local_repair_delay: Duration,
    /// A receiver whose new request is refused by admission control somewhere upstream
    /// (ResvErr code 1 without the InPlace flag) withdraws it with a ResvTear, so no partial
    /// reservation is left along the path. RFC 2205 §3.5 leaves this to the receiver
    /// application; this is the end-host API doing it on the application's behalf.
    pub release_on_admission_failure: bool,
    /// Local interfaces.
    pub interfaces: Vec<InterfaceConfig>,
    /// Further local addresses (loopback / router id).
    pub local_addrs: Vec<IpAddr>,
    /// Sessions to make room for up front (0: grow as needed). Saves rehashing and arena growth
    /// on a node that knows its load.
    pub expected_sessions: usize,
    /// The labels this node allocates for LSPs (RFC 3209 §4.1), first and last; clamped to
    /// 16 ..= 2^20 − 1 (RFC 3032 §2.1 reserves 0–15).
    pub label_range: (u32, u32),
    /// Refresh reduction (RFC 2961) towards neighbours that are capable of it: identified,
    /// acknowledged and retransmitted trigger messages, Summary Refresh, Bundles.
    pub refresh_reduction: bool,
    /// As an LSP egress, advertise the explicit null label of the LSP's protocol (0 for IPv4,
    /// 2 for IPv6) instead of implicit null (3), so the last hop keeps the label (RFC 3032 §2.1).
    pub explicit_null: bool,
    /// How long an LSP's head end waits for a label from downstream before it gives the LSP
    /// up (RFC 3209 sets no limit; without one an LSP whose Path vanished downstream stays
    /// signalling forever). The LSP then shows as failed with error 20 ("Reserved for API",
    /// RFC 2205 App. B), value [`crate::wire::error_code::api::LSP_SETUP_TIMED_OUT`], is torn
    /// down (PathTear) and tried again after [`Config::lsp_retry`]'s back-off. `None` (the
    /// default): the lifetime L of state refreshed every [`Config::refresh`] (RFC 2205 §3.7,
    /// 157.5 s with R = 30 s and K = 3), by which time a lost Path or Resv has had its
    /// refreshes to get through, and path state the Path left downstream has timed out.
    pub lsp_setup_timeout: Option<Duration>,
    /// Back-off between attempts to set up an LSP that timed out.
    pub lsp_retry: LspRetry,
    /// Unix time in seconds at the engine's `Instant` zero. Key lifetimes and RFC 2747
    /// sequence numbers are wall-clock based; the engine reads no clock, so the driver says how
    /// its instants map to wall-clock time.
    pub wall_clock_at_zero: u64,
    /// Message_Identifiers and Epoch of refresh reduction (RFC 2961 §4.5): by default the
    /// engine's own; a shard of a sharded node shares the node's ([`crate::shard`]).
    pub message_ids: MessageIdSpace,
    /// The shard this engine is of a sharded node (`None`: the whole node). A head end then
    /// picks only Tunnel IDs whose session hashes to it, and only shard 0 answers Hello
    /// REQUESTs ([`crate::shard`]).
    pub shard: Option<crate::shard::OwnShard>,
    /// Our Hello Src_Instance (RFC 3209 §5.3), when it is the node's and not this engine's:
    /// the shards of a node share one. `None`: drawn from [`Config::seed`].
    pub hello_instance: Option<u32>,
    /// The RFC 2747 sequence numbers this engine signs with, when they are the node's and not
    /// this engine's: the shards of a node draw from one strictly increasing sequence per key
    /// (§3). `None`: the engine's own.
    pub integrity_sequences: Option<pathwise_auth::SharedSequences>,
}

/// Back-off between attempts to set up an LSP whose setup timed out
/// ([`Config::lsp_setup_timeout`]): the first wait, doubled after each further timeout up to
/// a bound, and optionally a limit on the number of attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LspRetry {
    /// Wait after the first timeout (default 5 s).
    pub first: Duration,
    /// The longest wait (default 300 s).
    pub max: Duration,
    /// Timeouts after which the head end stops trying and the LSP stays failed until opened
    /// again (`None`, the default: keep trying every `max` at most, so the LSP comes up once
    /// the network lets it).
    pub attempts: Option<u32>,
}

impl Default for LspRetry {
    fn default() -> Self {
        LspRetry {
            first: Duration::from_secs(5),
            max: Duration::from_secs(300),
            attempts: None,
        }
    }
}

impl LspRetry {
    /// The wait after the `n`-th consecutive timeout (n ≥ 1): first · 2^(n−1), at most `max`.
    pub fn backoff(&self, n: u32) -> Duration {
        let doublings = n.saturating_sub(1).min(32);
        self.first
            .saturating_mul(1u32 << doublings.min(31))
            .min(self.max)
    }
}

impl Config {
    /// In-memory admission control over the configured interfaces (what
    /// [`RsvpEngine::with_memory_tc`] admits through).
    pub fn memory_tc(&self) -> MemoryTrafficControl {
        let mut tc: MemoryTrafficControl = self
            .interfaces
            .iter()
            .map(|i| {
                let link =
                    TcInterface::from_link(i.reservable_bps, i.bandwidth_bps, i.latency, i.mtu);
                (i.ifindex, link)
            })
            .collect();
        // A reservation per expected session (FF at a transit: one sender, one interface).
        tc.make_room(self.expected_sessions);
        tc
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 0,
            refresh: Duration::from_secs(30),
            keep_multiplier: 3,
            blockade_multiplier: 4,
            ttl: 64,
            wheel: WheelConfig::default(),
            // RFC 2205 §3.6: "Currently W = 2 sec is suggested".
            local_repair_delay: Duration::from_secs(2),
            release_on_admission_failure: true,
            interfaces: Vec::new(),
            local_addrs: Vec::new(),
            expected_sessions: 0,
            wall_clock_at_zero: 0,
            lsp_setup_timeout: None,
            lsp_retry: LspRetry::default(),
            label_range: (16, pathwise_core::mpls::MAX_LABEL),
            explicit_null: false,
            refresh_reduction: false,
            message_ids: MessageIdSpace::default(),
            shard: None,
            hello_instance: None,
            integrity_sequences: None,
        }
    }
}

/// An RSVP node: router or host.
#[derive(Debug)]
pub struct RsvpEngine<T: TrafficControl = MemoryTrafficControl> {
    cfg: Config,
    rng: SeededRng,
    tc: T,
    /// One timer per session (see [`SessionState::timer`]).
    timers: TimerWheel<SessionId>,
    fib: Fib<Route>,
    mcast: KeyedMap<(IpAddr, IpAddr), MulticastRoute>,
    local: KeyedMap<IpAddr, ()>,
    /// Sessions by SESSION object: the table holds only ids; keys are read from the arena.
    session_index: HashTable<SessionId>,
    session_hasher: KeyedState,
    /// Sessions per (destination, protocol) with a zero and a non-zero port, for the
    /// "Conflicting Dest Ports" check without a scan.
    dest_ports: KeyedMap<(IpAddr, u8), [u32; 2]>,
    phop_index: KeyedMap<(IpAddr, u32), state::PhopId>,
    sessions: Arena<SessionState>,
    psbs: Arena<Psb>,
    phops: Arena<PhopSb>,
    rsbs: Arena<Rsb>,
    out_isbs: Arena<OutIsb>,
    oiats: Arena<OiatPsb>,
    /// OutISBs held in PSBs ([`state::Psb::ff_installed`]), counted as they come and go so
    /// that [`Self::state_stats`] counts them without a walk.
    out_isbs_in_psbs: usize,
    adspecs: Interner<crate::wire::Adspec>,
    flowspecs: Interner<FlowSpec>,
    hops: Interner<RsvpHop>,
    tspecs: Interner<crate::wire::SenderTspec>,
    /// Where sessions go: destination and Extended Tunnel ID ([`state::SessionKey::dest`]).
    dests: Interner<SessionDest>,
    /// Sessions with a local repair pending after a route change (RFC 2205 §3.6), and when:
    /// rare, so kept here rather than in every session.
    repairs: KeyedMap<SessionId, Instant>,
    /// Reservation last reported to each local sender (RESV_EVENT only on change).
    reported: KeyedMap<PsbId, FlowSpec>,
    /// Local receivers' requests by session identity, kept until released (RFC 2205 §3.11.1),
    /// whether or not path state is there.
    receivers: KeyedMap<Session, api::ReceiverRequest>,
    transmits: VecDeque<Transmit>,
    /// Payloads the driver handed back once sent ([`Self::recycle`]), written into again.
    spare: pathwise_core::spare::SpareBuffers,
    events: VecDeque<Event>,
    counters: Counters,
    /// Sessions to re-merge once the current input is processed.
    pending_updates: Vec<SessionId>,
    /// The time of the input being processed.
    now: Instant,
    /// Replay windows and outstanding challenges (RFC 2747 §4.2, §4.3).
    integrity_rx: pathwise_auth::Receiver,
    /// Sequence numbers per sending key (RFC 2747 §3.2).
    integrity_tx: pathwise_auth::Sender,
    integrity_log: integrity::LogLimiter,
    /// When a challenge last made us refresh towards an interface (wall-clock seconds).
    challenge_refreshed: KeyedMap<IfIndex, u64>,
    /// Messages recently signed, for resending to a neighbour that challenges us.
    recent: VecDeque<integrity::Recent>,
    /// Challenges to the node this shard answers later, after shard 0's Response
    /// ([`integrity::CHALLENGE_FOLLOW_DELAY`]): when, on which interface, from whom.
    challenge_follow_ups: VecDeque<(Instant, IfIndex, IpAddr)>,
    /// Neighbours Hello tracks, with their timers (RFC 3209 §5).
    hello: hello::HelloState,
    /// Labels for LSPs (RFC 3209 §4.1).
    labels: te::LabelSpace,
    /// The label-forwarding table built from LSP bindings.
    lfib: pathwise_core::mpls::MemoryLfib,
    /// LSPs this node heads, by name.
    lsps: Vec<te::lsp::HeadEnd>,
    /// PSBs holding RSVP-TE state, counted as they come, change and go: the LSPs a counters
    /// request reports without a walk over every PSB.
    te_psbs: usize,
    /// The last tunnel id given to a new LSP.
    next_tunnel_id: u16,
    /// Creation counter of head-end LSPs.
    te_seq: u64,
    /// Head-end LSPs to tear down once the current input is processed (replaced or failed).
    superseded: Vec<(Session, crate::wire::FilterSpec)>,
    /// Head-end LSPs to try again after a setup timeout, by time and name (an entry whose
    /// LSP was reopened, closed or retried already is skipped when it comes due).
    lsp_retries: std::collections::BinaryHeap<std::cmp::Reverse<(Instant, String)>>,
    /// Refresh reduction (RFC 2961).
    rr: refresh::RefreshState,
}

impl RsvpEngine<MemoryTrafficControl> {
    /// An engine with in-memory admission control over the configured interfaces.
    pub fn with_memory_tc(cfg: Config, now: Instant) -> Self {
        let tc = cfg.memory_tc();
        Self::new(cfg, tc, now)
    }
}

impl<T: TrafficControl> RsvpEngine<T> {
    /// An engine whose time starts at `now`.
    pub fn new(cfg: Config, tc: T, now: Instant) -> Self {
        let mut rng = pathwise_core::rng::seeded(cfg.seed);
        let mut local = keyed_map(&mut rng);
        for a in cfg
            .interfaces
            .iter()
            .flat_map(|i| i.addrs.iter())
            .chain(&cfg.local_addrs)
        {
            local.insert(*a, ());
        }
        let n = cfg.expected_sessions;
        // Tables added later are keyed from their own generator, so the engine's stream (jitter,
        // and the keys of the tables above) stays what it was for a given seed.
        let mut later = pathwise_core::rng::seeded(cfg.seed ^ 0x7370_6563_7300_0001);
        let mut timers = TimerWheel::new(cfg.wheel, now);
        // One timer per session.
        timers.reserve(n);
        RsvpEngine {
            timers,
            mcast: keyed_map(&mut rng),
            session_index: HashTable::with_capacity(n),
            session_hasher: KeyedState::from_rng(&mut rng),
            dest_ports: keyed_map(&mut rng),
            phop_index: keyed_map(&mut rng),
            adspecs: Interner::new(&mut rng),
            flowspecs: Interner::new(&mut rng),
            hops: Interner::new(&mut rng),
            tspecs: Interner::new(&mut later),
            repairs: keyed_map(&mut later),
            dests: Interner::new(&mut later),
            reported: keyed_map(&mut rng),
            receivers: keyed_map(&mut rng),
            integrity_rx: pathwise_auth::Receiver::new(KeyedState::from_rng(&mut rng)),
            integrity_tx: match &cfg.integrity_sequences {
                Some(shared) => {
                    pathwise_auth::Sender::sharing(KeyedState::from_rng(&mut rng), shared.clone())
                }
                None => pathwise_auth::Sender::new(KeyedState::from_rng(&mut rng)),
            },
            integrity_log: integrity::LogLimiter::default(),
            challenge_refreshed: keyed_map(&mut rng),
            recent: VecDeque::new(),
            challenge_follow_ups: VecDeque::new(),
            hello: hello::HelloState::new(cfg.seed, cfg.hello_instance, cfg.wheel, now),
            labels: te::LabelSpace::new(cfg.label_range.0, cfg.label_range.1),
            lfib: pathwise_core::mpls::MemoryLfib::new(),
            lsps: Vec::new(),
            te_psbs: 0,
            next_tunnel_id: 0,
            te_seq: 0,
            superseded: Vec::new(),
            lsp_retries: Default::default(),
            rr: refresh::RefreshState::new(
                &mut rng,
                if cfg.refresh_reduction { 2 * n } else { 0 },
                cfg.message_ids.clone(),
            ),
            now,
            local,
            fib: Fib::new(),
            sessions: Arena::with_capacity(n),
            psbs: Arena::with_capacity(n),
            phops: Arena::new(),
            rsbs: Arena::with_capacity(n),
            // Not presized: a fixed-filter reservation for one sender, the common case, is
            // held in its PSB; blocks are for shared and multi-interface ones.
            out_isbs: Arena::new(),
            oiats: Arena::new(),
            out_isbs_in_psbs: 0,
            transmits: VecDeque::new(),
            spare: pathwise_core::spare::SpareBuffers::new(),
            events: VecDeque::new(),
            counters: Counters::default(),
            pending_updates: Vec::new(),
            tc,
            rng,
            cfg,
        }
    }

    /// When local repair is due for a session after a route change ([`Instant::MAX`]: none
    /// pending).
    fn repair_at(&self, sid: SessionId) -> Instant {
        if self.repairs.is_empty() {
            return Instant::MAX;
        }
        self.repairs.get(&sid).copied().unwrap_or(Instant::MAX)
    }

    /// A PSB's SENDER_TSPEC.
    pub(crate) fn tspec(&self, p: PsbId) -> crate::wire::SenderTspec {
        *self.tspecs.get(self.psbs[p].tspec)
    }

    /// Point a PSB's interned SENDER_TSPEC at `t`: the new reference is taken before the old
    /// is let go, so an unchanged value is never freed and made again, and the bytes are kept
    /// exactly as received (no float comparison decides).
    pub(crate) fn set_tspec(
        tspecs: &mut Interner<crate::wire::SenderTspec>,
        slot: &mut state::TspecRef,
        t: crate::wire::SenderTspec,
    ) {
        let new = tspecs.acquire(t);
        tspecs.release(std::mem::replace(slot, new));
    }

    /// The SESSION object of a session.
    pub(crate) fn session_key(&self, sid: SessionId) -> Session {
        session_of(&self.sessions, &self.dests, sid)
    }

    /// Where session `sid` goes: its destination and Extended Tunnel ID.
    pub(crate) fn session_dest(&self, sid: SessionId) -> &SessionDest {
        self.dests.get(self.sessions[sid].key.dest)
    }

    /// Whether session `sid` is an LSP tunnel (RFC 3209 §4.6.1: its SESSION has an Extended
    /// Tunnel ID).
    pub(crate) fn is_lsp_session(&self, sid: SessionId) -> bool {
        self.session_dest(sid).ext_tunnel_id.is_some()
    }

    /// The session with this SESSION object: the same (destination, protocol, port) whatever
    /// its Flags (see [`Session::identity`]).
    pub(crate) fn find_session(&self, key: &Session) -> Option<SessionId> {
        let key = key.identity();
        let hash = self.session_hasher.hash_one(key);
        self.session_index
            .find(hash, |&sid| self.session_key(sid).identity() == key)
            .copied()
    }

    fn index_session(&mut self, sid: SessionId) {
        let (sessions, dests, hasher) = (&self.sessions, &self.dests, &self.session_hasher);
        let hash = hasher.hash_one(self.session_key(sid).identity());
        self.session_index.insert_unique(hash, sid, |&s| {
            hasher.hash_one(session_of(sessions, dests, s).identity())
        });
    }

    fn unindex_session(&mut self, sid: SessionId) {
        let hash = self
            .session_hasher
            .hash_one(self.session_key(sid).identity());
        if let Ok(e) = self.session_index.find_entry(hash, |&s| s == sid) {
            e.remove();
        }
    }

    /// The session's PSBs, front to back.
    pub(crate) fn psbs_of(&self, sid: SessionId) -> impl Iterator<Item = PsbId> + '_ {
        list::iter(&self.psbs, self.sessions[sid].psbs, |p| p.next)
    }

    /// The session's RSBs.
    pub(crate) fn rsbs_of(&self, sid: SessionId) -> impl Iterator<Item = RsbId> + '_ {
        list::iter(&self.rsbs, self.sessions[sid].rsbs, |r| r.next)
    }

    /// The session's OutISBs: those its PSBs hold, then the blocks.
    pub(crate) fn out_isbs_of(&self, sid: SessionId) -> impl Iterator<Item = OutIsbRef> + '_ {
        self.psbs_of(sid)
            .filter(|&p| self.psbs[p].ff_installed.is_some())
            .map(OutIsbRef::InPsb)
            .chain(
                list::iter(&self.out_isbs, self.sessions[sid].out_isbs, |o| o.next)
                    .map(OutIsbRef::Block),
            )
    }

    /// What an OutISB has installed.
    pub(crate) fn installed(&self, o: OutIsbRef) -> &state::Installed {
        match o {
            OutIsbRef::InPsb(p) => self.psbs[p]
                .ff_installed
                .as_ref()
                .expect("an OutIsbRef::InPsb names a PSB holding a reservation"),
            OutIsbRef::Block(b) => &self.out_isbs[b].installed,
        }
    }

    /// What an OutISB has installed, to change.
    pub(crate) fn installed_mut(&mut self, o: OutIsbRef) -> &mut state::Installed {
        match o {
            OutIsbRef::InPsb(p) => self.psbs[p]
                .ff_installed
                .as_mut()
                .expect("an OutIsbRef::InPsb names a PSB holding a reservation"),
            OutIsbRef::Block(b) => &mut self.out_isbs[b].installed,
        }
    }

    /// Whether an OutISB is a fixed-filter reservation for one sender.
    pub(crate) fn is_ff(&self, o: OutIsbRef) -> bool {
        match o {
            OutIsbRef::InPsb(_) => true,
            OutIsbRef::Block(b) => self.out_isbs[b].ff,
        }
    }

    /// The PSBs an OutISB serves.
    pub(crate) fn psbs_served(&self, o: OutIsbRef) -> impl Iterator<Item = PsbId> + '_ {
        let (held_by, blocks) = match o {
            OutIsbRef::InPsb(p) => (Some(p), None),
            OutIsbRef::Block(b) => (None, self.out_isbs[b].oiats),
        };
        held_by
            .into_iter()
            .chain(list::iter(&self.oiats, blocks, |x| x.next_of_out).map(|x| self.oiats[x].psb))
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Traffic control, to inspect what is installed.
    pub fn traffic_control(&self) -> &T {
        &self.tc
    }

    /// Message and drop counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Whether `addr` is one of this node's addresses.
    pub fn is_local(&self, addr: IpAddr) -> bool {
        self.local.contains_key(&addr)
    }

    /// Lifetime L of state refreshed every `refresh_ms` (RFC 2205 §3.7: L ≥ (K + 0.5) · 1.5 · R).
    fn lifetime(&self, refresh_ms: u32) -> Duration {
        let r = Duration::from_millis(u64::from(refresh_ms.max(1)));
        r.mul_f64((f64::from(self.cfg.keep_multiplier) + 0.5) * 1.5)
    }

    /// A refresh interval drawn uniformly from [0.5 R, 1.5 R] (RFC 2205 §3.7), so neighbours'
    /// refreshes do not synchronise.
    fn refresh_interval(&mut self) -> Duration {
        self.cfg.refresh.mul_f64(self.rng.random_range(0.5..1.5))
    }

    fn refresh_ms(&self) -> u32 {
        u32::try_from(self.cfg.refresh.as_millis()).unwrap_or(u32::MAX)
    }

    /// Make sure the session's timer is due no later than the earliest of its deadlines. Only
    /// an earlier deadline moves the timer; a later one is found when the timer fires.
    fn schedule_session(&mut self, sid: SessionId) {
        let s = &self.sessions[sid];
        let earliest = self
            .psbs_of(sid)
            .map(|p| {
                self.psbs[p].blockade().map_or(self.psbs[p].expires, |b| {
                    b.expires.min(self.psbs[p].expires)
                })
            })
            .chain(self.rsbs_of(sid).map(|r| self.rsbs[r].expires))
            .chain(
                self.psbs_of(sid)
                    .filter_map(|p| self.psbs[p].te()?.setup_by),
            )
            .fold(s.refresh_at.min(self.repair_at(sid)), Instant::min);
        let wake = s
            .timer
            .and_then(|h| self.timers.deadline(h))
            .unwrap_or(Instant::MAX);
        if earliest >= wake {
            return;
        }
        if let Some(h) = s.timer {
            self.timers.cancel(h);
        }
        self.sessions[sid].timer =
            (earliest != Instant::MAX).then(|| self.timers.insert(earliest, sid));
    }

    fn drop_msg(&mut self, reason: &'static str) {
        self.counters.drop(reason);
        tracing::debug!(reason, "rsvp message dropped");
    }

    /// The session's timer fired: time out state whose lifetime ran out (RFC 2205 §3.7), run a
    /// pending local repair (§3.6), refresh if due, and re-arm.
    fn on_session_timer(&mut self, now: Instant, sid: SessionId) {
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        s.timer = None;
        let expired: SmallVec<[PsbId; 2]> = self
            .psbs_of(sid)
            .filter(|&p| self.psbs[p].expires <= now)
            .collect();
        for &id in &expired {
            self.counters.path_timeouts += 1;
            self.remove_psb(id, true);
        }
        if self.sessions[sid].psbs.is_none() {
            self.remove_session(sid);
            return;
        }
        let stale: SmallVec<[RsbId; 2]> = self
            .rsbs_of(sid)
            .filter(|&r| self.rsbs[r].expires <= now)
            .collect();
        for &id in &stale {
            self.counters.resv_timeouts += 1;
            self.remove_rsb(sid, id);
        }
        let lapsed: SmallVec<[PsbId; 2]> = self
            .psbs_of(sid)
            .filter(|&p| self.psbs[p].blockade().is_some_and(|b| b.expires <= now))
            .collect();
        for &p in &lapsed {
            self.psbs[p].set_blockade(None);
        }
        if !expired.is_empty() || !stale.is_empty() || !lapsed.is_empty() {
            self.update_reservations(sid);
        }
        self.check_lsp_setup(now, sid);
        if !self.sessions.contains(sid) {
            return;
        }
        if self.repair_at(sid) <= now {
            self.repairs.remove(&sid);
            self.local_repair(sid);
        }
        if self.sessions[sid].refresh_at <= now {
            self.refresh_session(sid);
            self.sessions[sid].refresh_at = now + self.refresh_interval();
        }
        self.schedule_session(sid);
    }

    /// Send every Path and Resv of a session again (RFC 2205 §3.7 refresh).
    fn refresh_session(&mut self, sid: SessionId) {
        let psbs: SmallVec<[PsbId; 4]> = self.psbs_of(sid).collect();
        for id in psbs {
            let oifs = self.psbs[id].oifs.clone();
            self.send_path(id, &oifs);
        }
        self.refresh_upstream(sid, true);
    }

    fn dispatch(&mut self, now: Instant, rx: &Received<'_>) {
        let crate::wire::Parsed {
            header: hdr,
            message: msg,
            refresh,
            skipped,
        } = match Message::parse_full(rx.payload) {
            Ok(p) => p,
            Err(e) => {
                self.on_parse_error(rx, &e);
                return;
            }
        };
        let msg = match msg {
            // A shard's copy of a Hello (`crate::shard`): liveness only; shard 0 counts it.
            Message::Hello(h) if !self.speaks_for_node() => return self.on_hello(now, rx, h),
            m => m,
        };
        self.counters.count_in(msg.msg_type());
        for o in &skipped {
            // RFC 2205 §3.1.5–§3.1.9: an error, teardown or confirmation is processed without
            // the known object its grammar has no place for (see `wire::message`).
            self.counters.skipped_objects += 1;
            tracing::debug!(
                msg_type = ?msg.msg_type(),
                class = o.class,
                ctype = o.ctype,
                src = %rx.src,
                "rsvp object outside the message grammar skipped"
            );
        }
        let Ok(noted) = self.on_refresh_objects(&hdr, &msg, &refresh, rx.src, rx.ifindex) else {
            return;
        };
        match msg {
            Message::Path(p) => self.on_path(now, rx, &hdr, p),
            Message::PathTear(t) => self.on_path_tear(t),
            Message::PathErr(e) => self.on_path_err(e),
            Message::Resv(r) => self.on_resv(now, rx, r),
            Message::ResvTear(t) => self.on_resv_tear(rx, t),
            Message::ResvErr(e) => self.on_resv_err(now, e),
            Message::ResvConf(c) => self.on_resv_conf(rx, c),
            Message::Hello(h) => self.on_hello(now, rx, h),
            Message::Ack(_) => {}
            Message::Srefresh(sr) => self.on_srefresh(&sr, rx),
            // Consumed by `check_integrity` before parsing.
            Message::IntegrityChallenge(_) | Message::IntegrityResponse(_) => {}
        }
        if let Some(n) = noted {
            self.note_received_id(n);
        }
    }

    /// One message (or one Bundle sub-message): integrity first, then parsing and processing.
    fn handle_one(&mut self, now: Instant, rx: &Received<'_>) {
        if self.check_integrity(rx) {
            self.dispatch(now, rx);
        }
    }

    /// A message that does not parse is dropped and counted. Where RFC 2205 asks for an error
    /// reply (unknown object class or C-Type, §3.10; unknown style; bad traffic parameters) and
    /// enough of the message was readable to address one, a Path is answered with PathErr to the
    /// previous hop and a Resv with ResvErr to the next hop. Error messages, teardowns and
    /// confirmations are never answered with an error.
    ///
    /// When the RSVP_HOP itself could not be read (an unknown C-Type such as GMPLS's IF_ID
    /// RSVP_HOP, RFC 3473 §8.1.1), the error goes to the IP source: RFC 2205 §3.10 wants the
    /// message rejected "and generation of an error message (ResvErr or PathErr as
    /// appropriate)" so the originator can fall back to another C-Type, and the IP source is
    /// who that is — a Path's "must be an address of the sender it describes", to whom "a
    /// PathErr message is sent" (§3.1.3), a Resv's "is an address of the node that sent the
    /// message" (§3.1.4). The hop's LIH is unknown then and sent as 0 ("no logical interface
    /// handle", §A.2). Never to a martian address.
    fn on_parse_error(&mut self, rx: &Received<'_>, e: &crate::wire::ParseError) {
        if e.msg_type == Some(MsgType::Hello) && !self.speaks_for_node() {
            return; // a shard's copy of a Hello: shard 0 counts the drop
        }
        self.drop_msg(e.kind.reason());
        let (Some((code, value)), Some(session)) = (e.kind.error_code(), e.session) else {
            return;
        };
        let hop = e.hop.clone().unwrap_or_else(|| RsvpHop::new(rx.src, 0));

        match e.msg_type {
            Some(MsgType::Path) => {
                self.send_path_err_raw(session, hop.addr, rx.ifindex, code, value, None)
            }
            Some(MsgType::Resv) => {
                let style = match &e.kind {
                    crate::wire::ParseErrorKind::UnknownStyle { style } => Some(*style),
                    _ => e.style,
                };
                if let Some(style) = style {
                    let oi = self.resv_oi(&hop, rx);
                    self.resv_err_to(session, hop, Some(oi), style, Few::default(), (code, value));
                }
            }
            _ => {}
        }
    }
}

/// A session's SESSION object, from its inline part and its interned destination.
fn session_of(
    sessions: &Arena<SessionState>,
    dests: &Interner<SessionDest>,
    sid: SessionId,
) -> Session {
    let k = sessions[sid].key;
    k.session(dests.get(k.dest))
}

impl<T: TrafficControl> Engine for RsvpEngine<T> {
    type Event = Event;

    fn handle_datagram(&mut self, now: Instant, dgram: Received<'_>) {
        self.now = now;
        if dgram.transport != Transport::Raw(IPPROTO_RSVP) {
            self.drop_msg("not_rsvp");
            return;
        }
        if Packet::new_checked(dgram.payload)
            .is_ok_and(|p| p.msg_type() == MsgType::Bundle && p.verify_checksum())
        {
            // RFC 2961 §3.3: each sub-message is handled as if received on its own.
            self.counters.count_in(MsgType::Bundle);
            self.counters.refresh.bundles_received += 1;
            for sub in crate::wire::message::refresh::bundle_messages(dgram.payload) {
                match sub {
                    Ok(payload) => self.handle_one(now, &Received { payload, ..dgram }),
                    Err(_) => self.drop_msg("bad_bundle"),
                }
            }
        } else {
            self.handle_one(now, &dgram);
        }
        self.flush_pending();
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        while let Some((_, sid)) = self.timers.expire(now) {
            self.on_session_timer(now, sid);
        }
        self.on_hello_timers(now);
        self.on_retransmit_timers(now);
        self.on_lsp_retries(now);
        self.on_challenge_follow_ups(now);
        self.flush_pending();
    }

    fn handle_route_change(&mut self, now: Instant, change: RouteChange) {
        self.now = now;
        self.on_route_change(now, change);
        self.flush_pending();
    }

    fn poll_transmit(&mut self) -> Option<Transmit> {
        self.bundle_if_due();
        self.transmits.pop_front()
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        [
            self.timers.next_deadline(),
            self.hello.next_deadline(),
            self.rr.next_deadline(),
            self.lsp_retries.peek().map(|r| r.0.0),
            self.challenge_follow_ups.front().map(|f| f.0),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn wants_router_alert(&self, dgram: &Received<'_>) -> bool {
        dgram.transport == Transport::Raw(IPPROTO_RSVP)
    }
}
#[cfg(test)]
mod tests;
