//! The RSVP engine (RFC 2205 §3, processing rules of RFC 2209), sans-IO.
//!
//! Driven through [`pathwise_core::engine::Engine`]: the driver hands in datagrams
//! (`handle_datagram`), route changes (`handle_route_change`) and the passing of time
//! (`handle_timeout`), then drains `poll_transmit` and `poll_event` and sleeps until
//! `poll_timeout`. Applications use the end-host API ([`RsvpEngine::register_sender`],
//! [`RsvpEngine::reserve`], …) and hear back through [`Event`]s. Reservations are admitted and
//! installed through a [`TrafficControl`] implementation.
//!
//! State follows the KOM engine's model (seed 001 §III.A): see [`state`].

pub mod api;
pub mod counters;
pub mod inspect;
pub mod merge;
mod path;
mod resv;
mod routes;
mod send;
pub mod state;
pub mod tc;

pub use api::{ApiError, Event};
pub use counters::{Counters, StateStats};
pub use tc::{
    AdmissionError, MemoryTrafficControl, TcHandle, TcInterface, TcRequest, TrafficControl,
};

use crate::wire::{Message, MsgType};
use pathwise_core::engine::Engine;
use pathwise_core::fib::Fib;
use pathwise_core::io::{IPPROTO_RSVP, IfIndex, Received, Transmit, Transport};
use pathwise_core::rand::Rng;
use pathwise_core::rng::SeededRng;
use pathwise_core::route::{MulticastRoute, Route, RouteChange};
use pathwise_core::table::{KeyedMap, keyed_map};
use pathwise_core::time::{Duration, Instant};
use pathwise_core::timer::{TimerWheel, WheelConfig};
use slab::Slab;
use state::{OiatPsb, OutIsb, PhopSb, Psb, PsbId, Rsb, SessionId, SessionState};
use std::collections::VecDeque;
use std::net::IpAddr;

/// One local interface.
#[derive(Clone, Debug, PartialEq)]
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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 0,
            refresh: Duration::from_secs(30),
            keep_multiplier: 3,
            ttl: 64,
            wheel: WheelConfig::default(),
            local_repair_delay: Duration::from_millis(100),
            release_on_admission_failure: true,
            interfaces: Vec::new(),
            local_addrs: Vec::new(),
        }
    }
}

/// What a timer does when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timer {
    /// Path state lifetime ran out (RFC 2205 §3.7).
    PathCleanup(PsbId),
    /// Reservation state lifetime ran out.
    ResvCleanup(state::RsbId),
    /// Time to refresh the session's Path and Resv state.
    Refresh(SessionId),
    /// Local repair after a route change (RFC 2205 §3.6).
    Repair(SessionId),
}

/// An RSVP node: router or host.
#[derive(Debug)]
pub struct RsvpEngine<T: TrafficControl = MemoryTrafficControl> {
    cfg: Config,
    rng: SeededRng,
    tc: T,
    timers: TimerWheel<Timer>,
    fib: Fib<Route>,
    mcast: KeyedMap<(IpAddr, IpAddr), MulticastRoute>,
    local: KeyedMap<IpAddr, ()>,
    session_index: KeyedMap<crate::wire::Session, SessionId>,
    phop_index: KeyedMap<(IpAddr, u32), state::PhopId>,
    sessions: Slab<SessionState>,
    psbs: Slab<Psb>,
    phops: Slab<PhopSb>,
    rsbs: Slab<Rsb>,
    out_isbs: Slab<OutIsb>,
    oiats: Slab<OiatPsb>,
    /// Reservation last reported to each local sender (RESV_EVENT only on change).
    reported: KeyedMap<PsbId, crate::wire::FlowSpec>,
    transmits: VecDeque<Transmit>,
    events: VecDeque<Event>,
    counters: Counters,
    /// Sessions to re-merge once the current input is processed.
    pending_updates: Vec<SessionId>,
}

impl RsvpEngine<MemoryTrafficControl> {
    /// An engine with in-memory admission control over the configured interfaces.
    pub fn with_memory_tc(cfg: Config, now: Instant) -> Self {
        let mut tc = MemoryTrafficControl::new();
        for i in &cfg.interfaces {
            tc.add_interface(
                i.ifindex,
                TcInterface {
                    reservable: i.reservable_bps as f64 / 8.0,
                    bandwidth: i.bandwidth_bps as f64 / 8.0,
                    latency_us: u32::try_from(i.latency.as_micros()).unwrap_or(u32::MAX),
                    mtu: i.mtu,
                },
            );
        }
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
        RsvpEngine {
            timers: TimerWheel::new(cfg.wheel, now),
            mcast: keyed_map(&mut rng),
            session_index: keyed_map(&mut rng),
            phop_index: keyed_map(&mut rng),
            reported: keyed_map(&mut rng),
            local,
            fib: Fib::new(),
            sessions: Slab::new(),
            psbs: Slab::new(),
            phops: Slab::new(),
            rsbs: Slab::new(),
            out_isbs: Slab::new(),
            oiats: Slab::new(),
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            counters: Counters::default(),
            pending_updates: Vec::new(),
            tc,
            rng,
            cfg,
        }
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

    fn ensure_refresh(&mut self, now: Instant, sid: SessionId) {
        if self.sessions[sid].refresh.is_none() {
            let at = now + self.refresh_interval();
            self.sessions[sid].refresh = Some(self.timers.insert(at, Timer::Refresh(sid)));
        }
    }

    fn drop_msg(&mut self, reason: &'static str) {
        self.counters.drop(reason);
        tracing::debug!(reason, "rsvp message dropped");
    }

    fn on_timer(&mut self, now: Instant, t: Timer) {
        match t {
            Timer::PathCleanup(id) => {
                if let Some(p) = self.psbs.get_mut(id) {
                    p.cleanup = None;
                    self.counters.path_timeouts += 1;
                    let sid = p.session;
                    self.remove_psb(now, id, true);
                    self.after_path_removal(now, sid);
                }
            }
            Timer::ResvCleanup(id) => {
                if let Some(r) = self.rsbs.get_mut(id) {
                    r.cleanup = None;
                    self.counters.resv_timeouts += 1;
                    let sid = r.session;
                    self.remove_rsb(id);
                    self.update_reservations(now, sid);
                }
            }
            Timer::Refresh(sid) => {
                if self.sessions.contains(sid) {
                    self.sessions[sid].refresh = None;
                    self.refresh_session(now, sid);
                    self.ensure_refresh(now, sid);
                }
            }
            Timer::Repair(sid) => {
                if self.sessions.contains(sid) {
                    self.sessions[sid].repair = None;
                    self.local_repair(now, sid);
                }
            }
        }
    }

    /// Send every Path and Resv of a session again (RFC 2205 §3.7 refresh).
    fn refresh_session(&mut self, now: Instant, sid: SessionId) {
        let psbs = self.sessions[sid].psbs.clone();
        for id in psbs {
            let oifs = self.psbs[id].oifs.clone();
            self.send_path(id, &oifs);
        }
        self.refresh_upstream(now, sid, true);
    }

    fn dispatch(&mut self, now: Instant, rx: &Received<'_>) {
        let parsed = Message::parse(rx.payload);
        let (hdr, msg) = match parsed {
            Ok(m) => m,
            Err(e) => {
                self.on_parse_error(rx, &e);
                return;
            }
        };
        self.counters.count_in(msg.msg_type());
        match msg {
            Message::Path(p) => self.on_path(now, rx, &hdr, p),
            Message::PathTear(t) => self.on_path_tear(now, rx, t),
            Message::PathErr(e) => self.on_path_err(e),
            Message::Resv(r) => self.on_resv(now, rx, r),
            Message::ResvTear(t) => self.on_resv_tear(now, rx, t),
            Message::ResvErr(e) => self.on_resv_err(now, e),
            Message::ResvConf(c) => self.on_resv_conf(rx, c),
        }
    }

    /// A message that does not parse is dropped and counted; where RFC 2205 asks for an error
    /// reply (unknown object class or C-Type, §3.10; bad traffic parameters) and enough of the
    /// message was readable to address one, a PathErr goes back to the previous hop.
    fn on_parse_error(&mut self, rx: &Received<'_>, e: &crate::wire::ParseError) {
        self.drop_msg(e.kind.reason());
        if let (Some((code, value)), Some(MsgType::Path), Some(session), Some(hop)) =
            (e.kind.error_code(), e.msg_type, e.session, e.hop)
        {
            self.send_path_err_raw(session, hop.addr, rx.ifindex, code, value, None);
        }
    }
}

impl<T: TrafficControl> Engine for RsvpEngine<T> {
    type Event = Event;

    fn handle_datagram(&mut self, now: Instant, dgram: Received<'_>) {
        if dgram.transport != Transport::Raw(IPPROTO_RSVP) {
            self.drop_msg("not_rsvp");
            return;
        }
        self.dispatch(now, &dgram);
        self.flush_pending(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        while let Some((_, t)) = self.timers.expire(now) {
            self.on_timer(now, t);
        }
        self.flush_pending(now);
    }

    fn handle_route_change(&mut self, now: Instant, change: RouteChange) {
        self.on_route_change(now, change);
        self.flush_pending(now);
    }

    fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next_deadline()
    }

    fn wants_router_alert(&self, dgram: &Received<'_>) -> bool {
        dgram.transport == Transport::Raw(IPPROTO_RSVP)
    }
}
