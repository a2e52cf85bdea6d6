//! The RSVP load generator's sans-IO core: the end hosts of KOM's experiments (seed 001 §IV) —
//! senders that create and delete sessions by the churn rule of [`super::churn`] and refresh
//! their Path state, receivers that answer each new Path at once with a Resv and refresh it.
//!
//! It is a host-side RSVP implementation, not a second engine: a sender keeps, per flow, when it
//! was born, when a Resv last came, its refresh timer and a state byte; the flow's identity
//! (session and sender) is computed from its slot. A receiver keeps a packed key (interned
//! session address, port, interned sender address, source port), the previous hop and its
//! timer. Messages are encoded and parsed by `pathwise_rsvp::wire` (RFC 2205 §3.1) into one
//! reused buffer per message; nothing is stored per flow but those few words.
//!
//! Driven like every engine here: `handle_datagram(now, …)`, `handle_timeout(now)`, then
//! `poll_transmit` until it returns `false` and `poll_timeout` for the next wake-up. [`RsvpLoad::stop`]
//! tears every flow down (PathTear from senders, ResvTear from receivers) at the rate limit.

use super::churn::{Churn, ChurnOp};
use pathwise_core::io::{IPPROTO_RSVP, Received, Transmit, Transport};
use pathwise_core::rng::SeededRng;
use pathwise_core::table::{KeyedMap, keyed_map};
use pathwise_core::time::{Duration, Instant};
use pathwise_core::timer::{TimerHandle, TimerWheel, WheelConfig};
use pathwise_rsvp::wire::{
    FilterSpec, FlowDescriptor, FlowSpec, Message, Path, PathTear, Resv, ResvConfirm, ResvTear,
    RsvpHop, SenderDescriptor, SenderTspec, Session, Style, StyleKind, TimeValues, TokenBucket,
};
use rand::Rng as _;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;

/// Timer values of receiver flows carry this bit; sender flows' are their slot.
const RECEIVER_BIT: u32 = 1 << 31;
/// IP TTL of everything sent.
const TTL: u8 = 64;

/// What the sender hosts do.
#[derive(Clone, Debug)]
pub struct SenderConfig {
    /// The senders' address (SENDER_TEMPLATE, RSVP_HOP, IP source).
    pub src: IpAddr,
    /// Session destinations; flows are spread over them.
    pub dests: Vec<IpAddr>,
    /// The target number of flows n (seed 001 §IV).
    pub flows: u64,
    /// Upper bound of the randomized interval between creations and between deletions once n
    /// flows exist (seed 001 §IV).
    pub max_interval: Duration,
    /// Upper bound of the interval while ramping up to n (the seed used `max_interval`).
    pub ramp_interval: Duration,
    /// Protocol Id of the sessions (17, UDP).
    pub protocol: u8,
    /// First destination port; sessions use `dst_port_base..=65535` on each destination.
    pub dst_port_base: u16,
    /// First source port; when there are more flows than destinations × ports, further
    /// senders of a session use the following source ports.
    pub src_port_base: u16,
    /// SENDER_TSPEC of every flow.
    pub tspec: TokenBucket,
}

/// What the receiver hosts do.
#[derive(Clone, Debug)]
pub struct ReceiverConfig {
    /// FF (one reservation per sender) or WF (one per session).
    pub style: StyleKind,
    /// The FLOWSPEC requested.
    pub flowspec: FlowSpec,
    /// Ask for a ResvConf with each new reservation (RFC 2205 §3.1.4; the seed's experiments
    /// "encompass the generation and transmission of confirmation messages", §IV).
    pub confirm: bool,
}

/// The load generator's configuration.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// Seed of every random draw (churn intervals, refresh jitter).
    pub seed: u64,
    /// Play the senders.
    pub sender: Option<SenderConfig>,
    /// Play the receivers.
    pub receiver: Option<ReceiverConfig>,
    /// Refresh period R (TIME_VALUES; RFC 2205 §3.7).
    pub refresh: Duration,
    /// K: state not refreshed for (K + 0.5) · 1.5 · R is timed out (RFC 2205 §3.7).
    pub keep_multiplier: u32,
    /// Messages sent per second at most (`None`: no limit).
    pub max_rate: Option<u32>,
    /// Messages sent per second at most while [`RsvpLoad::stop`] tears the flows down (`None`:
    /// only `max_rate`). Torn down all at once, 100,000 flows overflowed the routers' receive
    /// buffers and left tens of thousands of states to time out.
    pub teardown_rate: Option<u32>,
    /// The refresh timers' wheel.
    pub wheel: WheelConfig,
}

impl LoadConfig {
    /// L = (K + 0.5) · 1.5 · R (RFC 2205 §3.7).
    pub fn state_lifetime(&self) -> Duration {
        self.refresh
            .mul_f64((f64::from(self.keep_multiplier) + 0.5) * 1.5)
    }
}

/// A configuration the generator cannot run.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// Neither role.
    #[error("neither sender nor receiver: nothing to do")]
    NoRole,
    /// No destination.
    #[error("no destination")]
    NoDest,
    /// More flows than a slot can name.
    #[error("at most {max} flows")]
    TooManyFlows {
        /// The limit.
        max: u64,
    },
    /// More flows than destinations × ports × source ports.
    #[error(
        "{flows} flows need more than {dests} destination(s) × {ports} ports × the source ports above {src_base}"
    )]
    NotEnoughIdentities {
        /// Flows asked for.
        flows: u64,
        /// Destinations.
        dests: usize,
        /// Ports per destination.
        ports: u32,
        /// First source port.
        src_base: u16,
    },
    /// The sender address and a destination are of different families.
    #[error("sender {src} and destination {dest} are not of one address family")]
    MixedFamilies {
        /// The sender.
        src: IpAddr,
        /// The destination.
        dest: IpAddr,
    },
    /// A zero refresh period.
    #[error("refresh period must be positive")]
    ZeroRefresh,
}

/// Per-reason counts of what was received and dropped, and of the failures reported.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct LoadStats {
    /// Flows the senders created (each an initial Path).
    pub flows_created: u64,
    /// Flows the churn deleted (each a PathTear), not counting the teardown at stop.
    pub flows_deleted: u64,
    /// Flows torn down at stop.
    pub flows_torn_down: u64,
    /// Sum of the lifetimes of churn-deleted flows, ms.
    pub lifetime_sum_ms: u64,
    /// Flows whose first Resv reached their sender.
    pub reservations_established: u64,
    /// Sum of the times from a flow's first Path to its first Resv, µs.
    pub setup_sum_us: u64,
    /// Path messages sent: initial.
    pub paths_sent: u64,
    /// Path messages sent: refreshes.
    pub path_refreshes_sent: u64,
    /// PathTear messages sent.
    pub path_tears_sent: u64,
    /// Resv messages sent: initial (and after a previous-hop change).
    pub resvs_sent: u64,
    /// Resv messages sent: refreshes.
    pub resv_refreshes_sent: u64,
    /// ResvTear messages sent (at stop).
    pub resv_tears_sent: u64,
    /// Resv messages received by the senders.
    pub resvs_received: u64,
    /// Path messages received by the receivers: new state.
    pub paths_received: u64,
    /// Path messages received by the receivers: refreshes of known state.
    pub path_refreshes_received: u64,
    /// PathTear messages received by the receivers.
    pub path_tears_received: u64,
    /// ResvConf messages received by the receivers.
    pub resv_confs_received: u64,
    /// Receiver flows created by a Path (sessions reserved for).
    pub receiver_flows_created: u64,
    /// Receiver flows removed by a PathTear.
    pub receiver_flows_torn: u64,
    /// Sum of the lifetimes of receiver flows removed by a PathTear (first Path to PathTear), ms.
    pub receiver_lifetime_sum_ms: u64,
    /// PathErr received, by "code/value" (RFC 2205 App. B).
    pub path_errors: BTreeMap<String, u64>,
    /// ResvErr received, by "code/value".
    pub resv_errors: BTreeMap<String, u64>,
    /// Timeouts, by kind: `setup` (no Resv within L of the first Path), `resv` (a reserved
    /// flow's Resv not refreshed within L), `path` (a receiver's Path state not refreshed within L).
    pub timeouts: BTreeMap<&'static str, u64>,
    /// Datagrams dropped, by reason.
    pub drops: BTreeMap<&'static str, u64>,
}

impl LoadStats {
    fn drop(&mut self, reason: &'static str) {
        *self.drops.entry(reason).or_default() += 1;
    }
    fn timeout(&mut self, kind: &'static str) {
        *self.timeouts.entry(kind).or_default() += 1;
    }
}

/// Sender flow states.
const VACANT: u8 = 0;
const WAITING: u8 = 1;
const RESERVED: u8 = 2;
/// Flag: the setup timeout of this flow was counted.
const SETUP_LATE: u8 = 0x80;

/// One sender flow: 24 bytes.
#[derive(Clone, Copy, Debug)]
struct SenderFlow {
    /// Ticks since the generator's start.
    born: u32,
    last_resv: u32,
    timer: Option<TimerHandle>,
    state: u8,
}

const EMPTY_SENDER: SenderFlow = SenderFlow {
    born: 0,
    last_resv: 0,
    timer: None,
    state: VACANT,
};

/// What to send, named compactly: the bytes are made when the driver polls.
#[derive(Clone, Copy, Debug)]
enum Out {
    Path(u32),
    PathRefresh(u32),
    PathTear(u32),
    Resv(u32),
    ResvRefresh(u32),
    ResvTear(u32),
}

struct SenderSide {
    cfg: SenderConfig,
    churn: Churn,
    /// Slot `seq % cap` holds the flow created `seq`-th: live flows are the contiguous range
    /// `oldest..next` of creation numbers and `cap > n`, so slots never collide and deleting the
    /// oldest needs no search.
    flows: Vec<SenderFlow>,
    cap: u64,
    oldest: u64,
    next: u64,
    ports: u32,
    live: u64,
    reserved: u64,
}

impl SenderSide {
    /// The session and sender template of slot `s`.
    fn identity(&self, s: u32) -> (Session, FilterSpec) {
        let s = u64::from(s);
        let nd = self.cfg.dests.len() as u64;
        let dest = self.cfg.dests[(s % nd) as usize];
        let rest = s / nd;
        let port = u64::from(self.cfg.dst_port_base) + rest % u64::from(self.ports);
        let src_port = u64::from(self.cfg.src_port_base) + rest / u64::from(self.ports);
        (
            Session::ip(dest, self.cfg.protocol, port as u16),
            FilterSpec::ip(self.cfg.src, src_port as u16),
        )
    }

    /// The slot of the flow of `session` from `src_port`, if it is one of ours.
    fn slot(&self, session: &Session, src_port: u16) -> Option<u32> {
        if session.protocol_id != self.cfg.protocol || session.is_lsp_tunnel() {
            return None;
        }
        let j = self.cfg.dests.iter().position(|d| *d == session.dest)? as u64;
        let port = session.dst_port.checked_sub(self.cfg.dst_port_base)?;
        let sp = src_port.checked_sub(self.cfg.src_port_base)?;
        let nd = self.cfg.dests.len() as u64;
        let s = j + nd * (u64::from(port) + u64::from(self.ports) * u64::from(sp));
        (s < self.cap).then_some(s as u32)
    }

    /// Slots of `session` (any source port): WF reservations name no sender.
    fn slots_of(&self, session: &Session) -> impl Iterator<Item = u32> + '_ {
        let first = self.slot(session, self.cfg.src_port_base);
        let stride = self.cfg.dests.len() as u64 * u64::from(self.ports);
        let cap = self.cap;
        first
            .into_iter()
            .flat_map(move |f| (u64::from(f)..cap).step_by(stride as usize))
            .map(|s| s as u32)
    }
}

/// One receiver flow: 32 bytes.
#[derive(Clone, Copy, Debug)]
struct ReceiverFlow {
    key: u64,
    born: u32,
    last_path: u32,
    timer: Option<TimerHandle>,
    /// Interned previous hop (address, LIH).
    hop: u16,
    live: bool,
}

/// A small table of distinct values named by 16-bit indices.
#[derive(Debug)]
struct Interner<T: std::hash::Hash + Eq + Copy> {
    values: Vec<T>,
    index: KeyedMap<T, u16>,
}

impl<T: std::hash::Hash + Eq + Copy> Interner<T> {
    fn new(rng: &mut SeededRng) -> Self {
        Interner {
            values: Vec::new(),
            index: keyed_map(rng),
        }
    }
    fn intern(&mut self, v: T) -> Option<u16> {
        if let Some(i) = self.index.get(&v) {
            return Some(*i);
        }
        let i = u16::try_from(self.values.len()).ok()?;
        self.values.push(v);
        self.index.insert(v, i);
        Some(i)
    }
    fn get(&self, i: u16) -> T {
        self.values[usize::from(i)]
    }
}

struct ReceiverSide {
    cfg: ReceiverConfig,
    index: KeyedMap<u64, u32>,
    flows: Vec<ReceiverFlow>,
    free: Vec<u32>,
    /// (session address, protocol id).
    sessions: Interner<(IpAddr, u8)>,
    senders: Interner<IpAddr>,
    hops: Interner<(IpAddr, u32)>,
}

impl ReceiverSide {
    fn key(&mut self, session: &Session, sender: &FilterSpec) -> Option<u64> {
        let port = match *sender {
            FilterSpec::V4 { src_port, .. } | FilterSpec::V6 { src_port, .. } => src_port,
            _ => return None,
        };
        let s = self.sessions.intern((session.dest, session.protocol_id))?;
        let a = self.senders.intern(sender.src())?;
        Some(
            (u64::from(s) << 48)
                | (u64::from(session.dst_port) << 32)
                | (u64::from(a) << 16)
                | u64::from(port),
        )
    }

    fn identity(&self, key: u64) -> (Session, FilterSpec) {
        let (dest, proto) = self.sessions.get((key >> 48) as u16);
        let src = self.senders.get((key >> 16) as u16);
        (
            Session::ip(dest, proto, (key >> 32) as u16),
            FilterSpec::ip(src, key as u16),
        )
    }
}

/// Where the teardown at [`RsvpLoad::stop`] has got to.
#[derive(Clone, Copy, Debug, Default)]
struct Teardown {
    sender: u64,
    receiver: usize,
}

/// The load generator (see the module documentation).
pub struct RsvpLoad {
    cfg: LoadConfig,
    rng: SeededRng,
    wheel: TimerWheel<u32>,
    sender: Option<SenderSide>,
    receiver: Option<ReceiverSide>,
    out: VecDeque<Out>,
    stats: LoadStats,
    teardown: Option<Teardown>,
    /// Token bucket of the rate limit ([`RsvpLoad::rate`]): tokens, and when they were last
    /// topped up.
    tokens: f64,
    tokens_at: Instant,
    lifetime_l: Duration,
    /// Reused messages, rewritten field by field (no allocation per message): Path, PathTear,
    /// Resv, ResvTear.
    path: Message,
    tear: Message,
    resv: Message,
    resv_tear: Message,
    /// Reused list of the slots a Resv names.
    scratch: Vec<u32>,
}

impl std::fmt::Debug for RsvpLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RsvpLoad")
            .field("sender_flows", &self.sender_flows())
            .field("receiver_flows", &self.receiver_flows())
            .field("queued", &self.out.len())
            .finish_non_exhaustive()
    }
}

/// Per-flow times are kept in ticks of 100 µs in 32 bits: they wrap after 4.9 days, and ages
/// (always far shorter) are taken with wrapping subtraction.
const TICK_NS: u64 = 100_000;

fn ticks(t: Instant) -> u32 {
    (t.as_nanos() / TICK_NS) as u32
}

fn age(now: Instant, then: u32) -> u32 {
    ticks(now).wrapping_sub(then)
}

fn to_ticks(d: Duration) -> u32 {
    u32::try_from(d.as_nanos() / u128::from(TICK_NS)).unwrap_or(u32::MAX)
}

fn dummy_session() -> Session {
    Session::ip(IpAddr::from([0, 0, 0, 0]), 17, 0)
}

impl RsvpLoad {
    /// The largest number of sender flows (a slot is 31 bits).
    pub const MAX_FLOWS: u64 = (RECEIVER_BIT as u64) / 2;

    /// A generator starting at `now`.
    pub fn new(cfg: LoadConfig, now: Instant) -> Result<RsvpLoad, ConfigError> {
        if cfg.sender.is_none() && cfg.receiver.is_none() {
            return Err(ConfigError::NoRole);
        }
        if cfg.refresh.is_zero() {
            return Err(ConfigError::ZeroRefresh);
        }
        let mut rng = pathwise_core::rng::seeded(cfg.seed);
        let sender = match &cfg.sender {
            None => None,
            Some(s) => Some(Self::sender_side(s, now, &mut rng)?),
        };
        let receiver = cfg.receiver.as_ref().map(|r| ReceiverSide {
            cfg: r.clone(),
            index: keyed_map(&mut rng),
            flows: Vec::new(),
            free: Vec::new(),
            sessions: Interner::new(&mut rng),
            senders: Interner::new(&mut rng),
            hops: Interner::new(&mut rng),
        });
        let hop = RsvpHop {
            addr: IpAddr::from([0, 0, 0, 0]),
            lih: 0,
            if_id: None,
        };
        let tspec = cfg.sender.as_ref().map_or(
            TokenBucket {
                rate: 0.0,
                bucket: 0.0,
                peak: f32::INFINITY,
                min_policed: 0,
                max_packet: 0,
            },
            |s| s.tspec,
        );
        let time_values = TimeValues {
            refresh_ms: u32::try_from(cfg.refresh.as_millis()).unwrap_or(u32::MAX),
        };
        let any_filter = FilterSpec::ip(IpAddr::from([0, 0, 0, 0]), 0);
        let style = Style {
            flags: 0,
            kind: cfg.receiver.as_ref().map_or(StyleKind::Ff, |r| r.style),
        };
        let flowspec = cfg.receiver.as_ref().map(|r| r.flowspec);
        let ff = style.kind == StyleKind::Ff;
        let filters = || if ff { vec![any_filter] } else { Vec::new() };
        Ok(RsvpLoad {
            lifetime_l: cfg.state_lifetime(),
            wheel: TimerWheel::new(cfg.wheel, now),
            tokens: cfg.max_rate.map_or(0.0, burst),
            tokens_at: now,
            // RFC 2205 §3.1.3: <Path Message> ::= <Common Header> [ <INTEGRITY> ] <SESSION>
            // <RSVP_HOP> <TIME_VALUES> [ <POLICY_DATA> ... ] [ <sender descriptor> ].
            path: Message::Path(Path {
                integrity: None,
                session: dummy_session(),
                hop: hop.clone(),
                time_values,
                explicit_route: None,
                label_request: None,
                session_attribute: None,
                policy: Vec::new(),
                sender: SenderDescriptor {
                    template: any_filter,
                    tspec: SenderTspec(tspec),
                    adspec: None,
                    record_route: None,
                },
                forward: Vec::new(),
            }),
            // RFC 2205 §3.1.5: <PathTear Message> ::= <Common Header> [ <INTEGRITY> ] <SESSION>
            // <RSVP_HOP> [ <sender descriptor> ].
            tear: Message::PathTear(PathTear {
                integrity: None,
                session: dummy_session(),
                hop: hop.clone(),
                sender_template: Some(any_filter),
                sender_tspec: Some(SenderTspec(tspec)),
                forward: Vec::new(),
            }),
            // RFC 2205 §3.1.4: <Resv Message> ::= <Common Header> [ <INTEGRITY> ] <SESSION>
            // <RSVP_HOP> <TIME_VALUES> [ <RESV_CONFIRM> ] [ <SCOPE> ] [ <POLICY_DATA> ... ]
            // <STYLE> <flow descriptor list>.
            resv: Message::Resv(Resv {
                integrity: None,
                session: dummy_session(),
                hop: hop.clone(),
                time_values,
                confirm: None,
                scope: None,
                policy: Vec::new(),
                style,
                flows: vec![FlowDescriptor::new(flowspec, filters())].into(),
                forward: Vec::new(),
            }),
            // RFC 2205 §3.1.6: <ResvTear Message> ::= <Common Header> [<INTEGRITY>] <SESSION>
            // <RSVP_HOP> [ <SCOPE> ] <STYLE> <flow descriptor list>.
            resv_tear: Message::ResvTear(ResvTear {
                integrity: None,
                session: dummy_session(),
                hop,
                scope: None,
                style,
                flows: vec![FlowDescriptor::new(None, filters())].into(),
                forward: Vec::new(),
            }),
            scratch: Vec::new(),
            rng,
            sender,
            receiver,
            out: VecDeque::new(),
            stats: LoadStats::default(),
            teardown: None,
            cfg,
        })
    }

    fn sender_side(
        s: &SenderConfig,
        now: Instant,
        rng: &mut SeededRng,
    ) -> Result<SenderSide, ConfigError> {
        if s.dests.is_empty() {
            return Err(ConfigError::NoDest);
        }
        if let Some(d) = s.dests.iter().find(|d| d.is_ipv4() != s.src.is_ipv4()) {
            return Err(ConfigError::MixedFamilies {
                src: s.src,
                dest: *d,
            });
        }
        if s.flows > Self::MAX_FLOWS {
            return Err(ConfigError::TooManyFlows {
                max: Self::MAX_FLOWS,
            });
        }
        // Slack over n so that a deleted flow's session is not reused at once by the next one.
        let cap = s.flows + (s.flows / 64).clamp(16, 4096);
        let ports = 65536 - u32::from(s.dst_port_base.max(1));
        let identities =
            s.dests.len() as u64 * u64::from(ports) * (65536 - u64::from(s.src_port_base.max(1)));
        if cap > identities {
            return Err(ConfigError::NotEnoughIdentities {
                flows: s.flows,
                dests: s.dests.len(),
                ports,
                src_base: s.src_port_base,
            });
        }
        let mut cfg = s.clone();
        cfg.dst_port_base = cfg.dst_port_base.max(1);
        cfg.src_port_base = cfg.src_port_base.max(1);
        Ok(SenderSide {
            churn: Churn::new(s.flows, s.ramp_interval, s.max_interval, now, rng),
            flows: vec![EMPTY_SENDER; cap as usize],
            cap,
            oldest: 0,
            next: 0,
            ports,
            live: 0,
            reserved: 0,
            cfg,
        })
    }

    /// What was counted so far.
    pub fn stats(&self) -> &LoadStats {
        &self.stats
    }

    /// Sender flows that exist.
    pub fn sender_flows(&self) -> u64 {
        self.sender.as_ref().map_or(0, |s| s.live)
    }

    /// Sender flows whose reservation is in place (a Resv came within L).
    pub fn reserved_flows(&self) -> u64 {
        self.sender.as_ref().map_or(0, |s| s.reserved)
    }

    /// Receiver flows (Path state held, Resv sent).
    pub fn receiver_flows(&self) -> u64 {
        self.receiver.as_ref().map_or(0, |r| r.index.len() as u64)
    }

    /// Whether the senders have reached n flows once.
    pub fn ramped_up(&self) -> bool {
        self.sender.as_ref().is_none_or(|s| s.churn.ramped_up())
    }

    /// The average flow lifetime the parameters imply (seed 001 §V.A: n · max / 2).
    pub fn implied_lifetime(&self) -> Option<Duration> {
        self.sender.as_ref().map(|s| s.churn.implied_lifetime())
    }

    /// Heap bytes of the per-flow state, by capacity (the flow tables, the receivers' index,
    /// the timer wheel, the send queue).
    pub fn state_bytes(&self) -> usize {
        let s = self.sender.as_ref().map_or(0, |s| {
            s.flows.capacity() * std::mem::size_of::<SenderFlow>()
        });
        let r = self.receiver.as_ref().map_or(0, |r| {
            r.flows.capacity() * std::mem::size_of::<ReceiverFlow>()
                + r.free.capacity() * 4
                // hashbrown: a bucket per capacity slot plus one control byte.
                + r.index.capacity() * (std::mem::size_of::<(u64, u32)>() + 1)
        });
        s + r + self.wheel.heap_bytes() + self.out.capacity() * std::mem::size_of::<Out>()
    }

    /// Stop the churn and tear every flow down: PathTear for each sender flow, ResvTear for each
    /// receiver flow, at the rate limit. [`RsvpLoad::is_idle`] says when all is sent.
    pub fn stop(&mut self, now: Instant) {
        if let Some(s) = &mut self.sender {
            s.churn.stop();
        }
        if self.teardown.is_none() {
            self.teardown = Some(Teardown::default());
            // The teardown's own limit starts with a full bucket; one it shares with
            // `max_rate` keeps what was left.
            if self.cfg.max_rate.is_none()
                && let Some(r) = self.rate()
            {
                self.tokens = burst(r);
                self.tokens_at = now;
            }
        }
    }

    /// Messages per second at most now: `max_rate`, and during the teardown also
    /// `teardown_rate`.
    fn rate(&self) -> Option<u32> {
        let teardown = self.teardown.and(self.cfg.teardown_rate);
        match (self.cfg.max_rate, teardown) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Stopped, and every teardown sent.
    pub fn is_idle(&self) -> bool {
        self.teardown.is_some() && self.out.is_empty() && self.teardown_next().is_none()
    }

    fn teardown_next(&self) -> Option<()> {
        let t = self.teardown?;
        let s = self.sender.as_ref().is_some_and(|s| t.sender < s.next);
        let r = self
            .receiver
            .as_ref()
            .is_some_and(|r| t.receiver < r.flows.len());
        (s || r).then_some(())
    }

    /// When the generator next needs [`RsvpLoad::handle_timeout`] (or can send again, when
    /// the rate limit held messages back).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let churn = self.sender.as_ref().and_then(|s| s.churn.next_due());
        let wheel = self.wheel.next_deadline();
        let rate = match self.rate() {
            Some(r)
                if self.tokens < 1.0
                    && (!self.out.is_empty() || self.teardown_next().is_some()) =>
            {
                Some(
                    self.tokens_at
                        + Duration::from_secs_f64((1.0 - self.tokens) / f64::from(r.max(1))),
                )
            }
            _ => None,
        };
        [churn, wheel, rate].into_iter().flatten().min()
    }

    /// Time passed: churn operations and refresh timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(op) = self
            .sender
            .as_mut()
            .and_then(|s| s.churn.poll(now, &mut self.rng))
        {
            match op {
                ChurnOp::Create => self.create(now),
                ChurnOp::Delete => self.delete_oldest(now),
            }
        }
        while let Some((_, v)) = self.wheel.expire(now) {
            if v & RECEIVER_BIT == 0 {
                self.sender_refresh(now, v);
            } else {
                self.receiver_refresh(now, v & !RECEIVER_BIT);
            }
        }
    }

    /// RFC 2205 §3.7: refreshes are sent at intervals drawn from [0.5 R, 1.5 R].
    fn jitter(&mut self) -> Duration {
        self.cfg.refresh.mul_f64(self.rng.random_range(0.5..1.5))
    }

    fn create(&mut self, now: Instant) {
        let jitter = self.jitter();
        let Some(s) = self.sender.as_mut() else {
            return;
        };
        let slot = (s.next % s.cap) as u32;
        s.next += 1;
        s.live += 1;
        let timer = self.wheel.insert(now + jitter, slot);
        s.flows[slot as usize] = SenderFlow {
            born: ticks(now),
            last_resv: 0,
            timer: Some(timer),
            state: WAITING,
        };
        self.stats.flows_created += 1;
        self.out.push_back(Out::Path(slot));
    }

    /// Vacate sender slot `slot`; `churn`: a deletion by the churn rule (its lifetime counts).
    fn vacate(&mut self, now: Instant, slot: u32, churn: bool) -> bool {
        let Some(s) = self.sender.as_mut() else {
            return false;
        };
        let f = std::mem::replace(&mut s.flows[slot as usize], EMPTY_SENDER);
        if f.state == VACANT {
            return false;
        }
        if let Some(t) = f.timer {
            self.wheel.cancel(t);
        }
        s.live -= 1;
        if f.state & !SETUP_LATE == RESERVED {
            s.reserved -= 1;
        }
        if churn {
            self.stats.flows_deleted += 1;
            self.stats.lifetime_sum_ms += u64::from(age(now, f.born)) / 10;
        } else {
            self.stats.flows_torn_down += 1;
        }
        true
    }

    fn delete_oldest(&mut self, now: Instant) {
        let Some(s) = self.sender.as_mut() else {
            return;
        };
        if s.oldest >= s.next {
            return;
        }
        let slot = (s.oldest % s.cap) as u32;
        s.oldest += 1;
        if self.vacate(now, slot, true) {
            // RFC 2205 §3.1.5: the sender tears its path state down at once.
            self.out.push_back(Out::PathTear(slot));
        }
    }

    fn sender_refresh(&mut self, now: Instant, slot: u32) {
        let jitter = self.jitter();
        let l = to_ticks(self.lifetime_l);
        let Some(s) = self.sender.as_mut() else {
            return;
        };
        let f = &mut s.flows[slot as usize];
        if f.state == VACANT {
            return;
        }
        if self.teardown.is_some() {
            // Stopping: the flow's PathTear is coming (RFC 2205 §3.1.5); a refresh first would
            // only spend the teardown's rate and delay the tears behind it.
            f.timer = None;
            return;
        }
        // RFC 2205 §3.7: reservation state not refreshed within L is gone; a flow that never
        // got its Resv within L of its first Path counts once as a setup timeout.
        match f.state & !SETUP_LATE {
            RESERVED if age(now, f.last_resv) > l => {
                f.state = WAITING | (f.state & SETUP_LATE);
                s.reserved -= 1;
                self.stats.timeout("resv");
            }
            WAITING if f.state & SETUP_LATE == 0 && age(now, f.born) > l => {
                f.state |= SETUP_LATE;
                self.stats.timeout("setup");
            }
            _ => {}
        }
        f.timer = Some(self.wheel.insert(now + jitter, slot));
        self.out.push_back(Out::PathRefresh(slot));
    }

    fn receiver_refresh(&mut self, now: Instant, idx: u32) {
        let jitter = self.jitter();
        let l = to_ticks(self.lifetime_l);
        let Some(r) = self.receiver.as_mut() else {
            return;
        };
        let Some(f) = r.flows.get_mut(idx as usize).filter(|f| f.live) else {
            return;
        };
        f.timer = None;
        if self.teardown.is_some() {
            return; // stopping: the flow's ResvTear is coming, as for senders
        }
        if age(now, f.last_path) > l {
            // RFC 2205 §3.7: path state times out; the reservation with it.
            self.stats.timeout("path");
            remove_receiver_flow(r, idx);
            return;
        }
        f.timer = Some(self.wheel.insert(now + jitter, idx | RECEIVER_BIT));
        self.out.push_back(Out::ResvRefresh(idx));
    }

    /// A datagram arrived.
    pub fn handle_datagram(&mut self, now: Instant, d: Received<'_>) {
        if d.transport != Transport::Raw(IPPROTO_RSVP) {
            self.stats.drop("not_rsvp");
            return;
        }
        let msg = match Message::parse(d.payload) {
            Ok((_, m)) => m,
            Err(e) => {
                self.stats.drop(e.kind.reason());
                return;
            }
        };
        match msg {
            Message::Path(p) if self.receiver.is_some() => self.on_path(now, d.dst, &p),
            Message::PathTear(t) if self.receiver.is_some() => self.on_path_tear(now, &t),
            Message::Resv(r) if self.sender.is_some() => self.on_resv(now, &r),
            Message::ResvConf(_) if self.receiver.is_some() => {
                self.stats.resv_confs_received += 1;
            }
            Message::PathErr(e) => {
                let k = format!("{}/{}", e.error.code, e.error.value);
                *self.stats.path_errors.entry(k).or_default() += 1;
            }
            Message::ResvErr(e) => {
                let k = format!("{}/{}", e.error.code, e.error.value);
                *self.stats.resv_errors.entry(k).or_default() += 1;
            }
            _ => self.stats.drop("unexpected_type"),
        }
    }

    fn on_path(&mut self, now: Instant, dst: IpAddr, p: &Path) {
        if self.teardown.is_some() {
            self.stats.drop("stopped");
            return;
        }
        let jitter = self.jitter();
        let Some(r) = self.receiver.as_mut() else {
            return;
        };
        if p.session.dest != dst || p.session.is_lsp_tunnel() {
            // Not a session to this host (an LSP tunnel is not what the receivers reserve for).
            self.stats.drop("not_for_us");
            return;
        }
        let Some(key) = r.key(&p.session, &p.sender.template) else {
            self.stats.drop("unsupported_sender");
            return;
        };
        let Some(hop) = r.hops.intern((p.hop.addr, p.hop.lih)) else {
            self.stats.drop("too_many_hops");
            return;
        };
        if let Some(&idx) = r.index.get(&key) {
            let f = &mut r.flows[idx as usize];
            f.last_path = ticks(now);
            self.stats.path_refreshes_received += 1;
            if f.hop != hop {
                // RFC 2205 §3.1.3: a new previous hop (the route changed) gets the Resv at once.
                f.hop = hop;
                self.out.push_back(Out::Resv(idx));
            }
            return;
        }
        let idx = match r.free.pop() {
            Some(i) => i,
            None => {
                let i = r.flows.len() as u32;
                if i >= RECEIVER_BIT {
                    self.stats.drop("too_many_flows");
                    return;
                }
                r.flows.push(ReceiverFlow {
                    key: 0,
                    born: 0,
                    last_path: 0,
                    timer: None,
                    hop: 0,
                    live: false,
                });
                i
            }
        };
        r.flows[idx as usize] = ReceiverFlow {
            key,
            born: ticks(now),
            last_path: ticks(now),
            timer: Some(self.wheel.insert(now + jitter, idx | RECEIVER_BIT)),
            hop,
            live: true,
        };
        r.index.insert(key, idx);
        self.stats.paths_received += 1;
        self.stats.receiver_flows_created += 1;
        // Seed 001 §IV: the receiver "responds to each path advertisement by immediately
        // generating reservation requests".
        self.out.push_back(Out::Resv(idx));
    }

    fn on_path_tear(&mut self, now: Instant, t: &PathTear) {
        let Some(r) = self.receiver.as_mut() else {
            return;
        };
        self.stats.path_tears_received += 1;
        let Some(sender) = t.sender_template else {
            self.stats.drop("tear_without_sender");
            return;
        };
        let Some(key) = r.key(&t.session, &sender) else {
            self.stats.drop("unsupported_sender");
            return;
        };
        let Some(idx) = r.index.get(&key).copied() else {
            self.stats.drop("unknown_flow");
            return;
        };
        // RFC 2205 §3.1.5: PathTear removes the path state and the reservation that depends
        // on it; the receiver sends nothing.
        if let Some(t) = r.flows[idx as usize].timer.take() {
            self.wheel.cancel(t);
        }
        self.stats.receiver_lifetime_sum_ms += u64::from(age(now, r.flows[idx as usize].born)) / 10;
        remove_receiver_flow(r, idx);
        self.stats.receiver_flows_torn += 1;
    }

    fn on_resv(&mut self, now: Instant, resv: &Resv) {
        let Some(s) = self.sender.as_mut() else {
            return;
        };
        self.stats.resvs_received += 1;
        let mut slots = std::mem::take(&mut self.scratch);
        slots.clear();
        match resv.style.kind {
            // WF names no sender: the reservation covers every sender of the session.
            StyleKind::Wf => slots.extend(s.slots_of(&resv.session)),
            _ => {
                for f in resv.flows.iter().flat_map(|fd| fd.filters.iter()) {
                    let port = match *f {
                        FilterSpec::V4 { src_port, .. } | FilterSpec::V6 { src_port, .. } => {
                            src_port
                        }
                        _ => continue,
                    };
                    if f.src() == s.cfg.src
                        && let Some(slot) = s.slot(&resv.session, port)
                    {
                        slots.push(slot);
                    }
                }
            }
        }
        let mut any = false;
        for &slot in &slots {
            let f = &mut s.flows[slot as usize];
            if f.state == VACANT {
                continue;
            }
            any = true;
            f.last_resv = ticks(now);
            if f.state & !SETUP_LATE == WAITING {
                if f.state & SETUP_LATE == 0 {
                    self.stats.reservations_established += 1;
                    self.stats.setup_sum_us += u64::from(age(now, f.born)) * 100;
                }
                f.state = RESERVED | (f.state & SETUP_LATE);
                s.reserved += 1;
            }
        }
        self.scratch = slots;
        if !any {
            self.stats.drop("unknown_flow");
        }
    }

    /// The next datagram to send, written into `t` (its payload buffer is reused); `false`
    /// when there is none (or the rate limit holds it back until [`RsvpLoad::poll_timeout`]).
    pub fn poll_transmit(&mut self, now: Instant, t: &mut Transmit) -> bool {
        loop {
            let rate = self.rate();
            if let Some(r) = rate {
                let dt = now.saturating_duration_since(self.tokens_at).as_secs_f64();
                self.tokens = (self.tokens + dt * f64::from(r)).min(burst(r));
                self.tokens_at = now.max(self.tokens_at);
                if self.tokens < 1.0 {
                    return false;
                }
            }
            let out = match self.out.pop_front() {
                Some(o) => o,
                None => match self.next_teardown(now) {
                    Some(o) => o,
                    None => return false,
                },
            };
            if self.encode(out, t) {
                if rate.is_some() {
                    self.tokens -= 1.0;
                }
                return true;
            }
        }
    }

    /// The next teardown of [`RsvpLoad::stop`]'s walk: sender flows in creation order, then
    /// receiver flows.
    fn next_teardown(&mut self, now: Instant) -> Option<Out> {
        let mut t = self.teardown?;
        loop {
            let slot = match &self.sender {
                Some(s) if t.sender.max(s.oldest) < s.next => {
                    let seq = t.sender.max(s.oldest);
                    t.sender = seq + 1;
                    (seq % s.cap) as u32
                }
                _ => break,
            };
            if self.vacate(now, slot, false) {
                self.teardown = Some(t);
                return Some(Out::PathTear(slot));
            }
        }
        if let Some(r) = &self.receiver {
            while t.receiver < r.flows.len() {
                let idx = t.receiver;
                t.receiver += 1;
                if r.flows[idx].live {
                    self.teardown = Some(t);
                    return Some(Out::ResvTear(idx as u32));
                }
            }
        }
        self.teardown = Some(t);
        None
    }

    /// Write `out` into `t`; `false` when it has nothing to send any more.
    fn encode(&mut self, out: Out, t: &mut Transmit) -> bool {
        t.payload.clear();
        t.ifindex = None;
        t.transport = Transport::Raw(IPPROTO_RSVP);
        t.ttl = TTL;
        match out {
            Out::Path(slot) | Out::PathRefresh(slot) | Out::PathTear(slot) => {
                let Some(s) = &self.sender else { return false };
                let tear = matches!(out, Out::PathTear(_));
                if !tear && s.flows[slot as usize].state == VACANT {
                    return false;
                }
                let (session, template) = s.identity(slot);
                let hop = RsvpHop {
                    addr: s.cfg.src,
                    lih: 0,
                    if_id: None,
                };
                // RFC 2205 §3.1.3, §3.1.5: Path and PathTear go towards the destination with
                // the Router Alert option, so every RSVP hop intercepts them.
                t.src = Some(s.cfg.src);
                t.dst = session.dest;
                // The option's value is 0 for RSVP over IPv4 (RFC 2113 §2.1), 1 over IPv6 (RFC 2711 §2.1).
                t.router_alert = Some(u16::from(session.dest.is_ipv6()));
                let msg = if tear { &mut self.tear } else { &mut self.path };
                match msg {
                    Message::Path(p) => {
                        p.session = session;
                        p.hop = hop;
                        p.sender.template = template;
                    }
                    Message::PathTear(p) => {
                        p.session = session;
                        p.hop = hop;
                        p.sender_template = Some(template);
                    }
                    _ => {}
                }
                msg.emit(TTL, &mut t.payload);
                match out {
                    Out::Path(_) => self.stats.paths_sent += 1,
                    Out::PathRefresh(_) => self.stats.path_refreshes_sent += 1,
                    _ => self.stats.path_tears_sent += 1,
                }
                true
            }
            Out::Resv(idx) | Out::ResvRefresh(idx) | Out::ResvTear(idx) => {
                let Some(r) = self.receiver.as_mut() else {
                    return false;
                };
                let Some(f) = r.flows.get(idx as usize).copied().filter(|f| f.live) else {
                    return false;
                };
                let (session, sender) = r.identity(f.key);
                let (phop, lih) = r.hops.get(f.hop);
                // RFC 2205 §3.1.4: the Resv goes hop by hop to the previous hop, with our
                // address and the LIH the Path carried in its RSVP_HOP.
                let hop = RsvpHop {
                    addr: session.dest,
                    lih,
                    if_id: None,
                };
                t.src = Some(session.dest);
                t.dst = phop;
                t.router_alert = None;
                let tear = matches!(out, Out::ResvTear(_));
                let confirm =
                    (matches!(out, Out::Resv(_)) && r.cfg.confirm).then_some(ResvConfirm {
                        receiver: session.dest,
                    });
                let msg = if tear {
                    &mut self.resv_tear
                } else {
                    &mut self.resv
                };
                let (flows, hop_slot) = match msg {
                    Message::Resv(m) => {
                        m.session = session;
                        m.confirm = confirm;
                        (&mut m.flows, &mut m.hop)
                    }
                    Message::ResvTear(m) => {
                        m.session = session;
                        (&mut m.flows, &mut m.hop)
                    }
                    _ => return false,
                };
                *hop_slot = hop;
                // FF: one flow descriptor naming the sender; WF: no filter (RFC 2205 §3.1.4).
                if let Some(fs) = flows.first_mut().and_then(|fd| fd.filters.first_mut()) {
                    *fs = sender;
                }
                msg.emit(TTL, &mut t.payload);
                match out {
                    Out::Resv(_) => self.stats.resvs_sent += 1,
                    Out::ResvRefresh(_) => self.stats.resv_refreshes_sent += 1,
                    _ => {
                        // RFC 2205 §3.1.6: the receiver's reservation is gone once torn.
                        if let Some(h) = f.timer {
                            self.wheel.cancel(h);
                        }
                        remove_receiver_flow(r, idx);
                        self.stats.resv_tears_sent += 1;
                    }
                }
                true
            }
        }
    }
}

fn remove_receiver_flow(r: &mut ReceiverSide, idx: u32) {
    let f = &mut r.flows[idx as usize];
    if !f.live {
        return;
    }
    f.live = false;
    f.timer = None;
    r.index.remove(&f.key);
    r.free.push(idx);
}

/// Burst of the rate limit: a hundredth of a second's worth, at least one message.
fn burst(rate: u32) -> f64 {
    (f64::from(rate) / 100.0).max(1.0)
}

#[cfg(test)]
mod tests;
