//! The GIST engine (RFC 5971 §4, its state machines §6 and RFC 5972), sans-IO.
//!
//! Driven through [`pathwise_core::engine::Engine`]: the driver hands in D-mode datagrams
//! (`handle_datagram`: UDP port 270, and router-alert interceptions it asked
//! [`Engine::wants_router_alert`] about), route changes and the passing of time, then drains
//! `poll_transmit` and `poll_event` and sleeps until `poll_timeout`. Messaging associations
//! (C-mode) are reliable in-order byte streams the driver runs: the engine asks for them with
//! [`GistEngine::poll_stream`] and hears back through [`GistEngine::handle_stream`] (TCP under
//! the Linux driver; [`crate::sim_stream`] in simulation).
//!
//! Signalling applications plug in as [`Nslp`] implementations
//! ([`GistEngine::register`]) and talk to GIST through [`GistApi`]; the engine implements that
//! trait too, for applications driving it from outside.

mod api;
mod cookie;
pub mod counters;
mod data;
mod handshake;
mod inspect;
mod ma;
pub mod router_alert;
pub mod state;
mod timers;
mod validate;

pub use cookie::COOKIE_LEN;
pub use counters::{Counters, StateStats};
pub use data::MAX_ERROR_RESTARTS;
pub use inspect::RoutingStateView;
pub use ma::{MAX_STREAM_MESSAGE, StreamVetting};
pub use router_alert::RouterAlertValues;
pub use state::{MaState, MrsKey, QueryingState, RespondingState};

use crate::nslp::{
    GistApi, MessageHandle, MessageStatus, NetworkNotification, Nslp, NslpEvent, RecvMessage,
    RoutingDecision,
};
use crate::wire::{GIST_PORT, Message, MsgType, Nli, SpareBuffers};
use cookie::CookieMint;
use hashbrown::HashTable;
use pathwise_core::engine::Engine;
use pathwise_core::fib::Fib;
use pathwise_core::io::{IfIndex, Received, Transmit, Transport};
use pathwise_core::rand::Rng;
use pathwise_core::rng::SeededRng;
use pathwise_core::route::RouteChange;
use pathwise_core::table::{KeyedMap, KeyedSet, KeyedState, keyed_map, keyed_set};
use pathwise_core::time::{Duration, Instant};
use pathwise_core::timer::{TimerWheel, WheelConfig};
use slab::Slab;
use state::{Ma, MaId, Peer, PeerId, RoutingState};
use std::collections::VecDeque;
use std::net::IpAddr;

/// Most SII-Handles remembered for explicit routing beyond the peers GIST holds state with
/// ([`GistEngine::knows_handle`]).
pub const HANDLE_MEMORY: usize = 16_384;

/// How the responding node proves a Confirm answers its Response (seed 000 §2.3.3, §4.5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CookieMode {
    /// Keyed hash over a rotating secret and the Query's data: no state until a valid Confirm
    /// (late state installation).
    Hash,
    /// A random cookie stored per Query until the Confirm or `confirm_wait`: the thesis's
    /// comparison mode, which a Query flood fills with state.
    Random,
}

/// One local interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterfaceConfig {
    /// Its index.
    pub ifindex: IfIndex,
    /// Its addresses.
    pub addrs: Vec<IpAddr>,
}

/// Engine configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Seed of the engine's generator (cookies, secrets, Session IDs, jitter, hash keys).
    pub seed: u64,
    /// Peer Identity in this node's NLI; `None`: 16 bytes drawn from the seed.
    pub peer_identity: Option<Vec<u8>>,
    /// Local interfaces.
    pub interfaces: Vec<InterfaceConfig>,
    /// Further local addresses (loopbacks).
    pub local_addrs: Vec<IpAddr>,
    /// NSLPIDs served without a plug-in: their messages surface as [`GistEvent`]s.
    pub nslpids: Vec<u16>,
    /// Refresh period of downstream routing state (thesis §4.3.1: 180 s), jittered down to
    /// 75–100 % of it and never beyond the peer's validity time.
    pub refresh_period: Duration,
    /// Routing State Validity Time advertised in this node's NLI: how long its peers may keep
    /// state without a refresh from it.
    pub rs_validity: Duration,
    /// How long downstream state lives without NSLP activity (RFC 5971 §6.2 Inactive_QNode), unless
    /// the NSLP sets a lifetime (SetStateLifetime).
    pub state_lifetime: Duration,
    /// Initial Query retransmission timeout (RFC 5971 §5.3.3 T1: 500 ms); doubled per
    /// retransmission.
    pub query_rto: Duration,
    /// Give up when the timeout would exceed this (RFC 5971 §5.3.3 T2 = 64 T1).
    pub query_rto_max: Duration,
    /// Responder cookie mode.
    pub cookie_mode: CookieMode,
    /// Random-cookie mode: how long per-Query state waits for the Confirm (thesis §4.5.1: 2 s);
    /// also how long upstream messages wait for a Confirm.
    pub confirm_wait: Duration,
    /// Hash cookies: secret rotation period. A cookie verifies under the current and the
    /// previous secret only, so it lives one to two periods (RFC 5971 §8.5 Liveness).
    pub secret_rotation: Duration,
    /// The longest a peer may have this node keep routing state without a refresh: the
    /// Routing State Validity Time in a Confirm's NLI is capped at this (RFC 5971 §8.4; the
    /// validity field allows 49.7 days). Default 15 minutes (five 180 s refresh periods).
    pub max_state_lifetime: Duration,
    /// IP TTL of messages this node sends.
    pub ip_ttl: u8,
    /// Initial GIST hop count.
    pub gist_hops: u8,
    /// Carry the first NSLP message in the Query (and answers in the Response) when unreliable
    /// transfer is asked for.
    pub piggyback: bool,
    /// Port this node accepts messaging associations on (TCP); `None`: D-mode only.
    pub cmode_port: Option<u16>,
    /// Port this node accepts TLS messaging associations on (RFC 5971 §5.7.3, TLS over TCP);
    /// `None`: no TLS, and secure transfer fails with `DeliveryError::Unsupported`.
    pub tls_port: Option<u16>,
    /// MA-Hold-Time this node advertises (A.3.5).
    pub ma_hold_time: Duration,
    /// Close a messaging association no routing state has used for this long.
    pub ma_idle_timeout: Duration,
    /// Most NSLP messages queued per session while its state is being set up.
    pub queue_limit: usize,
    /// Timer wheel layout.
    pub wheel: WheelConfig,
    /// Sessions to make room for up front.
    pub expected_sessions: usize,
    /// The Router Alert value of Q-mode messages per NSLPID (RFC 5971 §5.3.2).
    pub router_alert: RouterAlertValues,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 0,
            peer_identity: None,
            interfaces: Vec::new(),
            local_addrs: Vec::new(),
            nslpids: Vec::new(),
            refresh_period: Duration::from_secs(180),
            rs_validity: Duration::from_secs(540),
            state_lifetime: Duration::from_secs(180),
            query_rto: Duration::from_millis(500),
            query_rto_max: Duration::from_secs(32),
            cookie_mode: CookieMode::Hash,
            confirm_wait: Duration::from_secs(2),
            secret_rotation: Duration::from_secs(60),
            max_state_lifetime: Duration::from_secs(900),
            ip_ttl: 64,
            gist_hops: 32,
            piggyback: true,
            cmode_port: Some(30000),
            tls_port: None,
            ma_hold_time: Duration::from_secs(180),
            ma_idle_timeout: Duration::from_secs(30),
            queue_limit: 16,
            wheel: WheelConfig {
                slot_width: Duration::from_millis(10),
                slots: 256,
                levels: 4,
                fuzzy: false,
            },
            expected_sessions: 0,
            router_alert: RouterAlertValues::default(),
        }
    }
}

/// What the engine reports to the application above it.
#[derive(Clone, Debug, PartialEq)]
pub enum GistEvent {
    /// RecvMessage (B.2) for an NSLPID served without a plug-in. A Query's Routing-State-Check
    /// was answered "accept" already.
    Recv(RecvMessage),
    /// MessageStatus (B.3) for an NSLPID served without a plug-in.
    Status(MessageStatus),
    /// NetworkNotification (B.4) for an NSLPID served without a plug-in.
    Notify(NetworkNotification),
    /// A plug-in NSLP's report.
    Nslp(NslpEvent),
}

/// What the driver is asked to do with a messaging association's stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamOp {
    /// Open a reliable stream to the peer's port (TCP connect).
    Open,
    /// Send these bytes, in order, after everything sent before.
    Send(Vec<u8>),
    /// Close the stream.
    Close,
}

/// The protocol stack of a messaging association (RFC 5971 §5.7): what the driver runs under
/// the engine's byte stream. The engine keeps one association per peer and stack.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MaTransport {
    /// Forwards-TCP (MA-Protocol-ID 1, §5.7.2).
    #[default]
    Tcp,
    /// Forwards-TLS over Forwards-TCP (MA-Protocol-IDs 2 and 1, §5.7.3): channel security.
    Tls,
}

impl MaTransport {
    /// The Stack-Proposal profile of this stack, top layer first.
    pub fn profile(self) -> &'static [u8] {
        match self {
            MaTransport::Tcp => &[crate::wire::ma_protocol::TCP],
            MaTransport::Tls => &[crate::wire::ma_protocol::TLS, crate::wire::ma_protocol::TCP],
        }
    }

    /// Lower-case name ("tcp", "tls").
    pub fn name(self) -> &'static str {
        match self {
            MaTransport::Tcp => "tcp",
            MaTransport::Tls => "tls",
        }
    }
}

/// A stream request for the driver: `op` on the stream to `peer`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamTransmit {
    /// The peer's address.
    pub peer: IpAddr,
    /// The peer's port (for `Open`).
    pub port: u16,
    /// What to do.
    pub op: StreamOp,
    /// Which stack: the stream is the one to `peer` over this transport.
    pub transport: MaTransport,
}

/// What the driver reports about a stream (one per peer address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamInput<'a> {
    /// A stream this engine opened is connected.
    Connected {
        /// The peer.
        peer: IpAddr,
    },
    /// A peer opened a stream to this node's `cmode_port`.
    Accepted {
        /// The peer.
        peer: IpAddr,
    },
    /// Bytes arrived, in order.
    Data {
        /// The peer.
        peer: IpAddr,
        /// The bytes.
        bytes: &'a [u8],
    },
    /// The stream failed or the peer closed it.
    Closed {
        /// The peer.
        peer: IpAddr,
    },
}

/// An upcall waiting for dispatch to its NSLP.
#[derive(Debug)]
pub(crate) enum Upcall {
    Status(MessageStatus),
    Notify(NetworkNotification),
    Recv(RecvMessage),
}

/// A timer's meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimerKey {
    Mrs(u32),
    Ma(MaId),
}

/// A GIST node.
pub struct GistEngine {
    cfg: Config,
    rng: SeededRng,
    /// This node's Peer Identity, inline: every NLI it sends copies it.
    identity: crate::wire::ShortBytes,
    /// The latest time an input brought.
    now: Instant,
    timers: TimerWheel<TimerKey>,
    /// Routing state by key: the table holds slab indices only, the keys are read from the
    /// slab (a copy of each 96-byte key here cost about 130 bytes per session).
    mrs_index: HashTable<u32>,
    mrs_hasher: KeyedState,
    mrs: Slab<RoutingState>,
    /// Random-cookie mode: the Responder-Cookie each upstream half awaiting a Confirm handed
    /// out, by routing-state index. Beside the slab, not in it: only a responder in that mode
    /// has any, and inline they cost every session 8 bytes. An entry exists only while its
    /// routing state has an upstream half ([`GistEngine::take_up`] removes it with the half).
    responder_cookies: KeyedMap<u32, [u8; 16]>,
    peers: Slab<Peer>,
    peer_index: KeyedMap<IpAddr, PeerId>,
    /// SII-Handles reported to NSLPs, and peers forgotten, with when they stop being usable
    /// for explicit routing (RFC 5971 §7.1.4; [`GistEngine::knows_handle`]).
    recent_handles: KeyedMap<IpAddr, Instant>,
    /// When expired entries of `recent_handles` are next swept out.
    handles_swept_at: Instant,
    mas: Slab<Ma>,
    ma_index: KeyedMap<(IpAddr, MaTransport), MaId>,
    fib: Fib<IfIndex>,
    local: KeyedSet<IpAddr>,
    served: KeyedSet<u16>,
    cookies: CookieMint,
    transmits: VecDeque<Transmit>,
    /// Sent payloads handed back ([`GistEngine::recycle`]): messages are written into them.
    spare: SpareBuffers,
    /// NSLP data handed back ([`GistEngine::recycle_nslp_data`]): received NSLP data is
    /// copied into them.
    nslp_spare: SpareBuffers,
    streams: VecDeque<StreamTransmit>,
    events: VecDeque<GistEvent>,
    upcalls: VecDeque<Upcall>,
    nslps: Vec<(u16, Option<Box<dyn Nslp>>)>,
    next_handle: u64,
    counters: Counters,
}

impl core::fmt::Debug for GistEngine {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GistEngine")
            .field("routing_states", &self.mrs.len())
            .field("peers", &self.peers.len())
            .field("mas", &self.mas.len())
            .field("nslps", &self.nslps.iter().map(|n| n.0).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl GistEngine {
    /// A node with one interface (index 1) holding `addr` and a default route out of it, the
    /// rest from `cfg`: two of them connected back to back make the smallest GIST network
    /// (tests, benchmarks, examples).
    pub fn on_one_link(cfg: Config, addr: std::net::IpAddr) -> Self {
        use pathwise_core::route::{Route, RouteChange};
        let ifindex = pathwise_core::io::IfIndex(1);
        let mut e = GistEngine::new(
            Config {
                interfaces: vec![InterfaceConfig {
                    ifindex,
                    addrs: vec![addr],
                }],
                ..cfg
            },
            Instant::ZERO,
        );
        let prefix = if addr.is_ipv4() { "0.0.0.0/0" } else { "::/0" };
        e.handle_route_change(
            Instant::ZERO,
            RouteChange::Add(Route {
                prefix: prefix.parse().expect("default prefix"),
                next_hop: None,
                ifindex,
                metric: 1,
            }),
        );
        e
    }

    /// An engine whose time starts at `now`.
    pub fn new(cfg: Config, now: Instant) -> Self {
        let mut rng = pathwise_core::rng::seeded(cfg.seed);
        let identity = cfg.peer_identity.as_deref().map_or_else(
            || {
                let mut id = [0u8; 16];
                rng.fill(&mut id[..]);
                crate::wire::ShortBytes::from_slice(&id)
            },
            crate::wire::ShortBytes::from_slice,
        );
        let mut local = keyed_set(&mut rng);
        for a in cfg
            .interfaces
            .iter()
            .flat_map(|i| i.addrs.iter())
            .chain(&cfg.local_addrs)
        {
            local.insert(*a);
        }
        let mut served = keyed_set(&mut rng);
        served.extend(cfg.nslpids.iter().copied());
        // One draw from `rng`, as the keyed map this replaces took.
        let mrs_hasher = KeyedState::from_rng(&mut rng);
        // The routing-state hasher's keys: a draw from `rng` here would change every seeded run.
        let responder_cookies = KeyedMap::with_hasher(mrs_hasher.clone());
        let mrs_index = HashTable::with_capacity(cfg.expected_sessions);
        let mut timers = TimerWheel::new(cfg.wheel, now);
        // One timer per routing state.
        timers.reserve(cfg.expected_sessions);
        GistEngine {
            timers,
            mrs_index,
            mrs_hasher,
            mrs: Slab::with_capacity(cfg.expected_sessions),
            responder_cookies,
            peers: Slab::new(),
            peer_index: keyed_map(&mut rng),
            recent_handles: keyed_map(&mut rng),
            handles_swept_at: now,
            mas: Slab::new(),
            ma_index: keyed_map(&mut rng),
            fib: Fib::new(),
            local,
            served,
            cookies: CookieMint::new(&mut rng, cfg.secret_rotation, now),
            transmits: VecDeque::new(),
            spare: SpareBuffers::new(),
            nslp_spare: SpareBuffers::new(),
            streams: VecDeque::new(),
            events: VecDeque::new(),
            upcalls: VecDeque::new(),
            nslps: Vec::new(),
            next_handle: 1,
            counters: Counters::default(),
            identity,
            rng,
            cfg,
            now,
        }
    }

    /// Plug in a signalling application under its NSLPID (replacing one registered before).
    pub fn register(&mut self, nslp: Box<dyn Nslp>) {
        let id = nslp.nslpid();
        self.served.insert(id);
        match self.nslps.iter_mut().find(|(n, _)| *n == id) {
            Some(slot) => slot.1 = Some(nslp),
            None => self.nslps.push((id, Some(nslp))),
        }
    }

    /// Take out the plug-in registered under `nslpid`. The NSLPID stays served (its messages
    /// surface as [`GistEvent`]s) only if [`Config::nslpids`] lists it.
    pub fn unregister(&mut self, nslpid: u16) -> Option<Box<dyn Nslp>> {
        let i = self.nslp_slot(nslpid)?;
        let (_, app) = self.nslps.remove(i);
        if !self.cfg.nslpids.contains(&nslpid) {
            self.served.remove(&nslpid);
        }
        app
    }

    /// NSLPIDs with a registered plug-in.
    pub fn registered(&self) -> impl Iterator<Item = u16> + '_ {
        self.nslps.iter().map(|(n, _)| *n)
    }

    /// Call `f` with the plug-in registered under `nslpid` and the engine as its [`GistApi`]
    /// (like [`GistEngine::with_nslp`], by NSLPID: several plug-ins may share a type).
    pub fn with_nslpid<R>(
        &mut self,
        now: Instant,
        nslpid: u16,
        f: impl FnOnce(&mut dyn Nslp, &mut dyn GistApi) -> R,
    ) -> Option<R> {
        let i = self.nslp_slot(nslpid)?;
        let mut app = self.nslps[i].1.take()?;
        let r = f(app.as_mut(), self);
        self.nslps[i].1 = Some(app);
        self.dispatch_upcalls(now);
        Some(r)
    }

    /// Call `f` with the registered NSLP of type `T` and the engine as its [`GistApi`]; `None`
    /// if no such NSLP is registered. Outputs are drained by the driver as after any input.
    pub fn with_nslp<T: Nslp + 'static, R>(
        &mut self,
        now: Instant,
        f: impl FnOnce(&mut T, &mut dyn GistApi) -> R,
    ) -> Option<R> {
        let idx = self
            .nslps
            .iter_mut()
            .position(|(_, n)| n.as_mut().is_some_and(|n| n.as_any_mut().is::<T>()))?;
        let mut app = self.nslps[idx].1.take()?;
        let r = app.as_any_mut().downcast_mut::<T>().map(|t| f(t, self));
        self.nslps[idx].1 = Some(app);
        self.dispatch_upcalls(now);
        r
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// This node's Peer Identity.
    pub fn peer_identity(&self) -> &[u8] {
        &self.identity
    }

    /// Message and drop counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The next stream request for the driver, if any.
    pub fn poll_stream(&mut self) -> Option<StreamTransmit> {
        self.streams.pop_front()
    }

    /// Hand back a sent [`Transmit`]'s payload (or the bytes of a sent [`StreamOp::Send`]):
    /// the next message is written into it instead of a fresh allocation, so a driver that
    /// recycles what it sent sends without allocating in steady state (issue #21). Optional;
    /// a driver that keeps its payloads costs one allocation per message sent. A few dozen
    /// buffers are kept ([`SpareBuffers`]).
    pub fn recycle(&mut self, payload: Vec<u8>) {
        self.spare.put(payload);
    }

    /// Hand back the NSLP data of a [`RecvMessage`] the application is done with: the NSLP
    /// data of a message received later is copied into it. The data delivered is the
    /// application's own (B.2 RecvMessage hands it over), so without this each NSLP message
    /// received costs that one allocation; with it, none in steady state.
    pub fn recycle_nslp_data(&mut self, data: Vec<u8>) {
        self.nslp_spare.put(data);
    }

    fn alloc_handle(&mut self) -> MessageHandle {
        let h = MessageHandle(self.next_handle);
        self.next_handle += 1;
        h
    }

    fn drop_msg(&mut self, reason: &'static str) {
        self.counters.drop(reason);
        tracing::debug!(reason, "gist message dropped");
    }

    /// This node's address on `ifindex` of `like`'s family.
    fn iface_addr(&self, ifindex: IfIndex, like: IpAddr) -> Option<IpAddr> {
        self.cfg
            .interfaces
            .iter()
            .find(|i| i.ifindex == ifindex)
            .and_then(|i| {
                i.addrs
                    .iter()
                    .find(|a| a.is_ipv4() == like.is_ipv4())
                    .copied()
            })
    }

    /// The address this node sends towards `dst` from: its outgoing interface's, else any of
    /// the family.
    fn source_for(&self, dst: IpAddr) -> Option<IpAddr> {
        self.fib
            .lookup(dst)
            .and_then(|(_, &ifx)| self.iface_addr(ifx, dst))
            .or_else(|| self.local_address_of(dst))
    }

    fn local_address_of(&self, like: IpAddr) -> Option<IpAddr> {
        self.cfg
            .local_addrs
            .iter()
            .chain(self.cfg.interfaces.iter().flat_map(|i| i.addrs.iter()))
            .find(|a| a.is_ipv4() == like.is_ipv4())
            .copied()
    }

    /// This node's NLI, with `addr` as its interface address.
    fn nli(&self, addr: IpAddr) -> Nli {
        Nli {
            ip_ttl: self.cfg.ip_ttl,
            rs_validity_ms: u32::try_from(self.cfg.rs_validity.as_millis()).unwrap_or(u32::MAX),
            peer_identity: self.identity.clone(),
            interface_address: addr,
        }
    }

    /// Queue a D-mode message.
    fn send_dmode(
        &mut self,
        msg: &Message,
        src: Option<IpAddr>,
        dst: IpAddr,
        dst_port: u16,
        router_alert: bool,
        ttl: u8,
    ) {
        if !self.may_send_to(dst) {
            return;
        }
        self.counters.count_out(msg.msg_type());
        self.transmits.push_back(Transmit {
            src,
            dst,
            ifindex: None,
            transport: Transport::Udp {
                src_port: GIST_PORT,
                dst_port,
            },
            router_alert: router_alert
                .then(|| self.cfg.router_alert.value(msg.nslpid, dst.is_ipv6())),
            ttl,
            payload: msg.to_datagram_reusing(&mut self.spare),
        });
    }

    /// Intern a peer, taking a reference.
    fn peer_ref(&mut self, addr: IpAddr, identity: &[u8]) -> PeerId {
        if let Some(&id) = self.peer_index.get(&addr) {
            let p = &mut self.peers[id.index()];
            p.refs += 1;
            if p.identity != identity {
                p.identity = identity.to_vec();
            }
            return id;
        }
        let id = PeerId::new(self.peers.insert(Peer {
            addr,
            identity: identity.to_vec(),
            refs: 1,
        }));
        self.peer_index.insert(addr, id);
        id
    }

    fn peer_unref(&mut self, id: PeerId) {
        let Some(p) = self.peers.get_mut(id.index()) else {
            return;
        };
        p.refs = p.refs.saturating_sub(1);
        if p.refs == 0 {
            let addr = p.addr;
            self.peers.remove(id.index());
            self.peer_index.remove(&addr);
            // RFC 5971 §7.1.4: an NSLP may still route an explicit teardown to the old peer.
            self.remember_handle(addr);
        }
    }

    /// How long an SII-Handle stays usable for explicit routing after GIST last reported it
    /// or last held state with its peer: as long as routing state would live unrefreshed on
    /// either side (RFC 5971 §7.1.4: GIST "allows the use of prior signalling paths for some
    /// period while the signalling applications still need them").
    fn handle_retention(&self) -> Duration {
        self.cfg.state_lifetime.max(self.cfg.rs_validity)
    }

    /// Remember `addr` as an SII-Handle usable until [`GistEngine::handle_retention`] from now.
    /// Expired entries are swept once per retention period. Bounded: past [`HANDLE_MEMORY`] entries the expired ones go, and while it is still full
    /// nothing new is remembered (a flood of spoofed NLIs cannot grow it).
    fn remember_handle(&mut self, addr: IpAddr) {
        let (now, retention) = (self.now, self.handle_retention());
        if now >= self.handles_swept_at {
            // At most one sweep per retention period: entries live at most twice as long.
            self.recent_handles.retain(|_, t| *t > now);
            self.handles_swept_at = now + retention;
        }
        let until = now + retention;
        if let Some(t) = self.recent_handles.get_mut(&addr) {
            *t = until;
            return;
        }
        if self.recent_handles.len() >= HANDLE_MEMORY {
            self.recent_handles.retain(|_, t| *t > now);
            if self.recent_handles.len() >= HANDLE_MEMORY {
                self.counters.drop("sii_handle_memory_full");
                return;
            }
        }
        self.recent_handles.insert(addr, until);
    }

    /// Whether `addr` is an SII-Handle GIST can route explicitly to: a peer it holds state
    /// with, or one reported or forgotten within the retention period.
    fn knows_handle(&self, addr: IpAddr) -> bool {
        !self.local.contains(&addr)
            && (self.peer_index.contains_key(&addr)
                || self
                    .recent_handles
                    .get(&addr)
                    .is_some_and(|t| *t > self.now))
    }

    fn peer_addr(&self, id: PeerId) -> Option<IpAddr> {
        self.peers.get(id.index()).map(|p| p.addr)
    }

    /// Make sure routing state `idx`'s timer is due no later than its earliest deadline.
    fn schedule_mrs(&mut self, idx: u32) {
        let Some(s) = self.mrs.get(idx as usize) else {
            return;
        };
        let next = s.next_deadline();
        // When the timer is due is read from the wheel rather than kept in the slot (8 bytes
        // per session); a stale handle (the timer fired) reads as no timer.
        let old = s.timer;
        let wake = old
            .and_then(|h| self.timers.deadline(h))
            .unwrap_or(Instant::MAX);
        if next == wake {
            return;
        }
        if let Some(h) = old {
            self.timers.cancel(h);
        }
        let handle = (next != Instant::MAX).then(|| self.timers.insert(next, TimerKey::Mrs(idx)));
        self.mrs[idx as usize].timer = handle;
    }

    /// Remove routing state `idx` if both halves are gone.
    fn reap_mrs(&mut self, idx: u32) {
        let Some(s) = self.mrs.get(idx as usize) else {
            return;
        };
        if !s.is_empty() {
            self.schedule_mrs(idx);
            return;
        }
        let s = self.mrs.remove(idx as usize);
        if let Some(h) = s.timer {
            self.timers.cancel(h);
        }
        if let Ok(e) = self
            .mrs_index
            .find_entry(s.key.hash(&self.mrs_hasher), |&i| i == idx)
        {
            e.remove();
        }
    }

    fn lookup(&self, key: &MrsKey) -> Option<u32> {
        let mrs = &self.mrs;
        self.mrs_index
            .find(self.key_hash(key), |&i| mrs[i as usize].key.matches(key))
            .copied()
    }

    fn lookup_or_insert(&mut self, key: MrsKey) -> u32 {
        if let Some(i) = self.lookup(&key) {
            return i;
        }
        let hash = self.key_hash(&key);
        let idx = self.mrs.insert(RoutingState::new(key)) as u32;
        let (mrs, hasher) = (&self.mrs, &self.mrs_hasher);
        self.mrs_index
            .insert_unique(hash, idx, |&i| mrs[i as usize].key.hash(hasher));
        idx
    }

    fn key_hash(&self, key: &MrsKey) -> u64 {
        state::key_hash(&self.mrs_hasher, &key.mri, key.nslpid, &key.session_id)
    }

    /// Queue an upcall for `nslpid`'s NSLP (dispatched when the current input is done).
    fn upcall(&mut self, u: Upcall) {
        // B.2, B.4: a handle GIST reports may come back in SendMessage (§7.1.4).
        let handle = match &u {
            Upcall::Recv(r) => r.sii_handle,
            Upcall::Notify(n) => match n.kind {
                crate::nslp::NotificationKind::RoutingStatusChange { peer, .. }
                | crate::nslp::NotificationKind::CommunicationFailure { peer, .. } => Some(peer),
                _ => None,
            },
            Upcall::Status(_) => None,
        };
        if let Some(h) = handle {
            self.remember_handle(h.0);
        }
        self.upcalls.push_back(u);
    }

    fn nslp_slot(&self, nslpid: u16) -> Option<usize> {
        self.nslps.iter().position(|(n, _)| *n == nslpid)
    }

    /// Deliver queued upcalls to their plug-ins, or as events.
    fn dispatch_upcalls(&mut self, now: Instant) {
        // Bounded: an NSLP answering every upcall with a call that causes another would spin.
        let mut budget = 10_000;
        while let Some(u) = self.upcalls.pop_front() {
            budget -= 1;
            if budget == 0 {
                self.upcalls.clear();
                self.drop_msg("upcall_budget");
                break;
            }
            let nslpid = match &u {
                Upcall::Status(s) => s.nslpid,
                Upcall::Notify(n) => n.nslpid,
                Upcall::Recv(r) => r.nslpid,
            };
            let app = self
                .nslp_slot(nslpid)
                .and_then(|i| self.nslps[i].1.take().map(|a| (i, a)));
            match app {
                Some((i, mut app)) => {
                    match u {
                        Upcall::Status(s) => app.message_status(now, self, s),
                        Upcall::Notify(n) => app.network_notification(now, self, n),
                        Upcall::Recv(r) => {
                            app.recv_message(now, self, r);
                        }
                    }
                    self.nslps[i].1 = Some(app);
                }
                None => self.events.push_back(match u {
                    Upcall::Status(s) => GistEvent::Status(s),
                    Upcall::Notify(n) => GistEvent::Notify(n),
                    Upcall::Recv(r) => GistEvent::Recv(r),
                }),
            }
        }
    }

    /// Ask the NSLP for `msg.nslpid` the Routing-State-Check of a Query (B.2); without a
    /// plug-in, accept and report the message as an event.
    fn routing_state_check(&mut self, now: Instant, msg: RecvMessage) -> RoutingDecision {
        let Some(i) = self.nslp_slot(msg.nslpid) else {
            self.events.push_back(GistEvent::Recv(msg));
            return RoutingDecision::ACCEPT;
        };
        let Some(mut app) = self.nslps[i].1.take() else {
            // Re-entered from inside this NSLP's own callback: decline rather than recurse.
            return RoutingDecision::Decline;
        };
        let d = app.recv_message(now, self, msg);
        self.nslps[i].1 = Some(app);
        d
    }
}

impl Engine for GistEngine {
    type Event = GistEvent;

    fn handle_datagram(&mut self, now: Instant, dgram: Received<'_>) {
        self.now = self.now.max(now);
        match dgram.transport {
            Transport::Udp { .. } => self.on_datagram(now, &dgram),
            Transport::Raw(_) => self.drop_msg("not_udp"),
        }
        self.dispatch_upcalls(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.now = self.now.max(now);
        while let Some((_, key)) = self.timers.expire(now) {
            match key {
                TimerKey::Mrs(idx) => self.on_mrs_timer(now, idx),
                TimerKey::Ma(idx) => self.on_ma_timer(now, idx),
            }
        }
        self.dispatch_upcalls(now);
        // The plug-in NSLPs' own timers (refreshes, retransmissions): their deadlines are part
        // of this engine's, so the driver wakes the engine for them.
        for i in 0..self.nslps.len() {
            let due = self.nslps[i]
                .1
                .as_ref()
                .and_then(|a| a.poll_timeout())
                .is_some_and(|t| t <= now);
            if let Some(mut app) = self.nslps[i].1.take_if(|_| due) {
                app.handle_timeout(now, self);
                self.nslps[i].1 = Some(app);
                self.dispatch_upcalls(now);
            }
        }
    }

    fn handle_route_change(&mut self, _now: Instant, change: RouteChange) {
        // Route changes are found by refresh (RFC 5971 §7.1.2): a refresh Query that another
        // node answers moves the state. The FIB only picks source addresses.
        match change {
            RouteChange::Add(r) => {
                self.fib.insert(r.prefix, r.ifindex);
            }
            RouteChange::Remove(p) => {
                self.fib.remove(&p);
            }
            _ => {}
        }
    }

    fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    fn poll_event(&mut self) -> Option<GistEvent> {
        self.events.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let nslps = self
            .nslps
            .iter()
            .filter_map(|(_, a)| a.as_ref().and_then(|a| a.poll_timeout()));
        // Upcalls an API call made from outside the engine (a MessageStatus for a message that
        // failed at once: an unknown SII-Handle, a full queue) are due now: `handle_timeout`
        // delivers them. Inside an input they are delivered before it returns.
        let pending = (!self.upcalls.is_empty()).then_some(self.now);
        nslps
            .chain(self.timers.next_deadline())
            .chain(pending)
            .min()
    }

    /// Q-mode messages (C flag: Queries and stateless Data) on the GIST port, for an NSLPID
    /// this node serves (RFC 5971 §4.3.1, §5.3.2; the router alert value is per NSLPID).
    fn wants_router_alert(&self, dgram: &Received<'_>) -> bool {
        let Transport::Udp {
            dst_port: GIST_PORT,
            ..
        } = dgram.transport
        else {
            return false;
        };
        let p = dgram.payload;
        if p.len() < 12 || p[..4] != crate::wire::MAGIC.to_be_bytes() {
            return false;
        }
        let Ok(h) = crate::wire::CommonHeader::parse(&p[4..]) else {
            return false;
        };
        h.c_flag
            && matches!(h.kind(), Some(MsgType::Query) | Some(MsgType::Data))
            && self.served.contains(&h.nslpid)
    }
}

#[cfg(test)]
mod size_tests {
    use super::state::{MaId, PeerId, QuerySide, RespondSide, RoutingState, StoredKey};

    /// Bytes per session are a published figure (docs/BENCHMARKS.md, issue #21 part 5): keep
    /// the slab slot and the boxed querying half small. Sizes round to 8 bytes, so each bound
    /// is one step; a field that pushes a block over it costs every session 8 bytes.
    #[test]
    fn routing_state_stays_compact() {
        assert!(size_of::<super::MrsKey>() <= 96);
        assert!(size_of::<StoredKey>() <= 48);
        assert!(size_of::<RoutingState>() <= 96);
        assert!(size_of::<Option<RespondSide>>() <= 24);
        assert!(size_of::<QuerySide>() <= 56);
        // The ids' niche: an optional peer or MA is 4 bytes.
        assert_eq!(size_of::<Option<PeerId>>(), 4);
        assert_eq!(size_of::<Option<MaId>>(), 4);
    }

    /// Slab ids give back the index they were made from, at both ends of the range.
    #[test]
    fn slab_ids_round_trip() {
        for i in [0, 1, 7, u32::MAX as usize - 1] {
            assert_eq!(PeerId::new(i).index(), i);
            assert_eq!(MaId::new(i).index(), i);
        }
    }
}
