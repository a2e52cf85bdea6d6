//! The gateway datapath (seed §4.2, in user space on a TUN device): packets the kernel routes
//! into the TUN device are boosted per policy and sent to the peer gateway over UDP; datagrams
//! from the peer are deboosted and written to the TUN device.
//!
//! Three threads: *egress* (TUN → boost → UDP), *ingress* (UDP → deboost → TUN) and the
//! management server ([`crate::mgmt`]); a fourth serves metrics when `metrics` is configured
//! ([`crate::metrics`]). Egress drains up to `batch` packets per wake-up from
//! the non-blocking TUN descriptor and sends the datagrams with one `sendmmsg`; ingress takes
//! up to `batch` datagrams per `recvmmsg`. Packet buffers come from the pipelines' pools and
//! the `mmsghdr` arrays are preallocated, so the steady state allocates nothing per packet.
//!
//! Ingress admits only datagrams from the configured `peer` and only the chains this gateway's
//! own policies allow for the inner packet ([`pathwise_booster::admission`]); everything else
//! is dropped and counted by reason before it reaches the TUN device.
//!
//! Offloads (docs/booster-wire.md, "Offloads"; each can be turned off in the configuration):
//! with `tun_offload` the device hands over TCP/UDP super-segments of up to 64 KiB, which
//! egress splits into packets of the tunnel MTU before the chain ([`offload::split`]), and
//! ingress coalesces in-order TCP segments of a flow, and runs of equal-sized UDP datagrams
//! of a flow where the device takes USO, into one super-segment per write (`tun_coalesce`,
//! [`offload::Coalescer`]); on the socket, runs of equal-sized datagrams go
//! out as one UDP GSO message (`udp_gso`) and come in as one UDP GRO message (`udp_gro`)
//! ([`super::udp`]). The wire is unchanged: every datagram is one boosted packet.
//!
//! Policy changes (management `insert`/`remove`, the adaptive policy) build a new
//! [`PolicySnapshot`] and store it, with the recent ones still in their grace period
//! ([`PolicyEpochs`]), in an [`ArcSwap`]: both threads load it once per batch and never wait
//! for a writer; egress boosts with a change one grace period (`chain_grace_ms`) after it is
//! made, so a peer changed within that time already accepts it (seed §5.3 measured 20–30 ms per insertion through
//! an ioctl; here it is a snapshot build and a pointer swap, timed and reported as `swap_ns`).
//!
//! **Lanes** (`queues = N > 1`; docs/booster-wire.md, "Lanes"). The TUN device is opened with
//! `IFF_MULTI_QUEUE`, one descriptor per queue ([`Tun::open_queues`]), and lane `i` is queue
//! `i`, a UDP socket bound to the listen port + `i` sending to the peer port + `i`, and its own
//! egress and ingress threads with their own [`Sender`] and [`Receiver`] (link sequence
//! numbers, loss meter, FEC groups, coalescer, GSO/GRO state): nothing on the packet path is
//! shared between lanes but the policy store, the counters and the encryption context, whose
//! counter is one atomic and whose replay windows are kept per sender id, each lane sending
//! under its own ([`pathwise_booster::boosters::lane_sender_id`]). Admission on lane `i` takes
//! datagrams only from the peer's port + `i`. The adaptive policy and the delay probes run on
//! lane 0; every lane samples compressibility for it and reports its own loss, which the peer
//! adds up (`peer_loss`).
//!
//! *Per-flow order.* A flow keeps its order as long as it stays on one lane end to end, and
//! the kernel keeps it there: a multi-queue TUN device without a steering program picks the
//! transmit queue of a packet by its *symmetric* flow hash (`tun_automq_select_queue` in
//! `drivers/net/tun.c`): the queue a packet of the same flow, in either direction, was last
//! *written* on if one was written within the last 3 s (its flow table), else the hash scaled
//! to the number of queues. Lane `i` writes what the peer's lane `i` sent, so the answers of a
//! flow leave on the lane its packets came in on, and the peer's device, which recorded that
//! lane for the flow when its lane wrote them, sends on it too. A flow seen first in one
//! direction starts on the queue its hash picks and stays there. The kernel moves a flow only
//! where the two gateways' hashes (seeded per boot: equal when both run on one machine) pick
//! different lanes for it and a gateway sends on the flow with no entry for it (none written
//! in the last 3 s): both ends starting the flow at once, or one direction silent for 3 s
//! while the other goes on. It then moves once, and packets in flight on the old lane may
//! arrive after the first ones on the new lane (the kernel's comment on it: "we may get a very
//! small possibility of OOO during switching, not worth to optimize"). A steering program
//! (`TUNSETSTEERINGEBPF`) hashing the same way on both gateways would close that case; it is
//! not used, since it needs CAP_BPF besides CAP_NET_ADMIN and the case is one reordering per
//! flow at most. Within a lane the order is the one of a queue, a thread and a socket. The
//! namespace test `booster_queues_netns.rs` checks per-flow order with 16 UDP flows at full
//! speed (and fails when flows switch lanes: checked by writing every other batch on the
//! other lane's queue).
//!
//! `plain` mode bypasses the booster framework altogether (no header, no pipeline): the
//! baseline "plain TUN forwarder" the null booster is measured against.

use super::config::GatewayConfig;
use super::tun::Tun;
use super::udp::{GroReceiver, GsoSender, OffloadState};
use arc_swap::ArcSwap;
use pathwise_booster::adaptive::{Action, Adaptive, AdaptiveConfig, AdaptiveState};
use pathwise_booster::admission::PolicyEpochs;
use pathwise_booster::boosters::{BoosterEnv, CryptoContext};
use pathwise_booster::control::Control;
use pathwise_booster::offload::{self, Coalescer, MAX_SUPER, VNET_HDR_LEN};
use pathwise_booster::packet::{MAX_PAYLOAD, Packet};
use pathwise_booster::pipeline::{Receiver, Sender, encode_control};
use pathwise_booster::policy::{PolicyError, PolicySnapshot};
use pathwise_booster::stats::{Counters, DropReason};
use pathwise_core::time::Instant;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Largest batch the datapath arrays hold.
pub const MAX_BATCH: usize = 64;
/// Probe answers kept for the adaptive policy between two of its evaluations.
pub const MAX_ECHOES: usize = 1024;
/// How often the receiver reports loss to the peer.
const LOSS_REPORT_EVERY: Duration = Duration::from_millis(500);

/// The policy table the datapath reads and management writes: the current snapshot and the
/// recent ones still within their grace period ([`PolicyEpochs`]).
#[derive(Debug)]
pub struct PolicyStore {
    current: ArcSwap<PolicyEpochs>,
    writer: Mutex<()>,
    /// Nanoseconds the last update took (build + validate + swap).
    pub last_swap_ns: AtomicU64,
}

impl PolicyStore {
    /// A store holding `epochs`.
    pub fn new(epochs: PolicyEpochs) -> Self {
        PolicyStore {
            current: ArcSwap::from_pointee(epochs),
            writer: Mutex::new(()),
            last_swap_ns: AtomicU64::new(0),
        }
    }

    /// The current snapshot.
    pub fn load(&self) -> Arc<PolicySnapshot> {
        self.current.load().current().clone()
    }

    /// The current snapshot and those within their grace period (wait-free; once per batch on
    /// the datapath).
    pub fn epochs(&self) -> arc_swap::Guard<Arc<PolicyEpochs>> {
        self.current.load()
    }

    /// Build a new snapshot from the current one with `f` and swap it in as of `now`; writers
    /// are serialised, readers never wait. Returns it and how long the build and swap took.
    pub fn update(
        &self,
        now: Instant,
        f: impl FnOnce(&PolicySnapshot) -> Result<PolicySnapshot, PolicyError>,
    ) -> Result<(Arc<PolicySnapshot>, u64), PolicyError> {
        let _w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let t = std::time::Instant::now();
        let epochs = self.current.load();
        let new = Arc::new(f(epochs.current())?);
        self.current
            .store(Arc::new(epochs.switched(now, new.clone())));
        let ns = t.elapsed().as_nanos() as u64;
        self.last_swap_ns.store(ns, Relaxed);
        Ok((new, ns))
    }
}

/// Which offloads the gateway runs with (`booster show`), and why any is off.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Offloads {
    /// The TUN device's `IFF_VNET_HDR` with checksum offload and TSO.
    pub tun_tso: OffloadState,
    /// UDP segmentation from the device (USO; kernels from 6.2).
    pub tun_uso: OffloadState,
    /// Coalescing of TCP segments written to the device.
    pub tun_coalesce: OffloadState,
    /// Coalescing of UDP datagrams written to the device (USO frames: needs `tun_uso`).
    pub tun_coalesce_udp: OffloadState,
    /// UDP GSO on the tunnel socket (may turn off at run time if the kernel refuses a send).
    pub udp_gso: OffloadState,
    /// UDP GRO on the tunnel socket.
    pub udp_gro: OffloadState,
    /// Socket buffer sizes obtained (receive, send), bytes.
    pub socket_buffers: (usize, usize),
}

impl Offloads {
    /// Every offload off, for `why`.
    pub fn all_off(why: &str) -> Self {
        let off = || OffloadState::off(why);
        Offloads {
            tun_tso: off(),
            tun_uso: off(),
            tun_coalesce: off(),
            tun_coalesce_udp: off(),
            udp_gso: off(),
            udp_gro: off(),
            socket_buffers: (0, 0),
        }
    }
}

/// Socket buffer size asked for: a few milliseconds at 10 Gbit/s.
const SOCKET_BUFFER: usize = 8 << 20;

/// Make the socket buffers large (forced past `rmem_max`/`wmem_max` with CAP_NET_ADMIN, else
/// as large as the limits allow); returns what the kernel gave.
fn size_socket_buffers(socket: &UdpSocket) -> (usize, usize) {
    use nix::sys::socket::{getsockopt, setsockopt, sockopt};
    if setsockopt(socket, sockopt::RcvBufForce, &SOCKET_BUFFER).is_err() {
        let _ = setsockopt(socket, sockopt::RcvBuf, &SOCKET_BUFFER);
    }
    if setsockopt(socket, sockopt::SndBufForce, &SOCKET_BUFFER).is_err() {
        let _ = setsockopt(socket, sockopt::SndBuf, &SOCKET_BUFFER);
    }
    (
        getsockopt(socket, sockopt::RcvBuf).unwrap_or(0),
        getsockopt(socket, sockopt::SndBuf).unwrap_or(0),
    )
}

/// Everything the threads and the management server share.
#[derive(Debug)]
pub struct Shared {
    /// Offloads in use.
    pub offloads: Mutex<Offloads>,
    /// Policies.
    pub store: PolicyStore,
    /// Counters of both directions.
    pub counters: Arc<Counters>,
    /// Connections to the management socket refused (their user was not allowed).
    pub management_refused: Arc<std::sync::atomic::AtomicU64>,
    /// What the adaptive policy last saw and did.
    pub adaptive: Mutex<AdaptiveState>,
    /// Its configuration.
    pub adaptive_config: AdaptiveConfig,
    /// Loss reports from the peer not yet given to the adaptive policy (received, expected).
    pub peer_loss: Mutex<(u64, u64)>,
    /// Answers to our delay probes not yet given to the adaptive policy (our send time, the
    /// peer's arrival time; at most [`MAX_ECHOES`]).
    pub peer_delay: Mutex<Vec<(u64, u64)>>,
    /// The configuration the gateway runs.
    pub config: GatewayConfig,
    /// Plain forwarding (no boosters).
    pub plain: bool,
    /// Nonce sender id (lane 0's; lane `l` sends with `l` in the top byte).
    pub sender_id: u32,
    /// Per-lane packet counts, one entry per queue.
    pub lanes: Vec<LaneCounters>,
    /// Compressibility sampled by the lanes other than lane 0 (bytes sampled, their LZ4 size)
    /// since the adaptive policy on lane 0 last took it.
    pub sampled: (AtomicU64, AtomicU64),
    /// Start time.
    pub started: std::time::Instant,
    /// Set to stop the datapath threads.
    pub stop: AtomicBool,
}

impl Shared {
    /// The datapath's clock: time since the gateway started.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(self.started.elapsed().as_nanos() as u64)
    }
}

/// What one lane moved, added once per batch (the totals are in [`Counters`]). Aligned to a
/// cache line so that lanes on different cores do not write the same line.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct LaneCounters {
    /// Packets read from the lane's TUN queue (after splitting super-segments).
    pub tun_in: AtomicU64,
    /// Datagrams sent on the lane's socket.
    pub udp_out: AtomicU64,
    /// Datagrams received on the lane's socket.
    pub udp_in: AtomicU64,
    /// Packets written to the lane's TUN queue.
    pub tun_out: AtomicU64,
}

impl LaneCounters {
    /// The four counts, for `booster show` and the metrics.
    pub fn report(&self) -> [(&'static str, u64); 4] {
        [
            ("tun_in", self.tun_in.load(Relaxed)),
            ("udp_out", self.udp_out.load(Relaxed)),
            ("udp_in", self.udp_in.load(Relaxed)),
            ("tun_out", self.tun_out.load(Relaxed)),
        ]
    }
}

/// Bind lane `lane`'s socket at `addr`, saying which capability a low port needs.
fn bind_lane(addr: SocketAddr, lane: usize) -> anyhow::Result<UdpSocket> {
    let socket = UdpSocket::bind(addr).map_err(|e| {
        let why = match crate::caps::port_need(addr.port(), "listen") {
            Some(n) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                format!(": {} needs {}", n.why, n.cap.name())
            }
            _ => String::new(),
        };
        let which = if lane > 0 {
            format!(" (lane {lane}: the listen port + {lane})")
        } else {
            String::new()
        };
        anyhow::anyhow!("binding {addr}{which}: {e}{why}")
    })?;
    socket.set_read_timeout(Some(Duration::from_millis(100)))?;
    Ok(socket)
}

/// A running gateway: its shared state and threads.
#[derive(Debug)]
pub struct Gateway {
    /// Shared state.
    pub shared: Arc<Shared>,
    threads: Vec<std::thread::JoinHandle<anyhow::Result<()>>>,
    _mgmt: crate::mgmt::ServerHandle,
    _metrics: Option<crate::metrics::http::MetricsServer>,
}

impl Gateway {
    /// Open the device and socket, start the threads and the management server.
    pub fn start(config: GatewayConfig, plain: bool) -> anyhow::Result<Gateway> {
        let key = config.key()?;
        let sender_id = config.sender_id()?;
        let snap = config.snapshot(key.is_some())?;
        let queues = config.queues;
        let max = pathwise_booster::boosters::MAX_LANES;
        let lanes = u8::try_from(queues)
            .ok()
            .filter(|q| (1..=max).contains(q))
            .ok_or_else(|| anyhow::anyhow!("queues must be 1..={max}, got {queues}"))?;
        let tuns = Tun::open_queues(&config.tun, config.tun_offload, queues)
            .map_err(|e| anyhow::anyhow!("opening TUN device {}: {e}", config.tun))?;
        let sockets = (0..queues)
            .map(|i| bind_lane(config.lane_listen(i), i))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let offloads = probe_offloads(&config, &tuns[0], &sockets[0]);
        // The other lanes' sockets get what lane 0's took (GRO and the buffers are per socket;
        // GSO is per message and needs nothing set).
        for s in &sockets[1..] {
            super::udp::enable_gro(s, offloads.udp_gro.on);
            size_socket_buffers(s);
        }
        tracing::info!(?offloads, queues, "offloads");
        let wall_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let crypto = match key {
            Some(k) => Some(Arc::new(
                CryptoContext::new(&k, sender_id, wall_ns)
                    .with_lanes(lanes)
                    .map_err(|e| anyhow::anyhow!("sender_id: {e}"))?,
            )),
            None => None,
        };
        let env = BoosterEnv { crypto };
        let shared = Arc::new(Shared {
            offloads: Mutex::new(offloads),
            store: PolicyStore::new(PolicyEpochs::new(
                Arc::new(snap),
                Duration::from_millis(config.chain_grace_ms),
                &config.adaptive,
            )),
            counters: Arc::new(Counters::default()),
            management_refused: Arc::default(),
            adaptive: Mutex::new(AdaptiveState::default()),
            adaptive_config: config.adaptive.clone(),
            peer_loss: Mutex::new((0, 0)),
            peer_delay: Mutex::default(),
            plain,
            sender_id,
            lanes: (0..queues).map(|_| LaneCounters::default()).collect(),
            sampled: (AtomicU64::new(0), AtomicU64::new(0)),
            started: std::time::Instant::now(),
            stop: AtomicBool::new(false),
            config,
        });
        let group = shared
            .config
            .socket_group()
            .map_err(|e| anyhow::anyhow!("socket_group: {e}"))?;
        let server = crate::mgmt::Server::bind_with(&shared.config.socket, group)?
            .count_refused_in(shared.management_refused.clone());
        let handler_shared = shared.clone();
        let mgmt = server.spawn(move |verb: &str, args: &serde_json::Value| {
            super::manage::handle(&handler_shared, verb, args)
        })?;
        let metrics = match shared.config.metrics {
            Some(addr) => {
                let s = shared.clone();
                let page =
                    crate::metrics::ServiceCollector::live(move || super::manage::metrics(&s));
                let registry = crate::metrics::registry([page]);
                Some(crate::metrics::http::MetricsServer::start(addr, registry)?)
            }
            None => None,
        };
        let mut threads = Vec::with_capacity(2 * queues);
        for (lane, (tun, socket)) in tuns.into_iter().zip(sockets).enumerate() {
            let (s1, s2) = (shared.clone(), shared.clone());
            let (tun2, sock2) = (tun.try_clone()?, socket.try_clone()?);
            let (env1, env2) = (env.clone(), env.clone());
            // One lane keeps the thread names of the gateway before lanes.
            let name = |dir: &str| {
                if queues == 1 {
                    dir.to_string()
                } else {
                    format!("{dir}{lane}")
                }
            };
            threads.push(
                std::thread::Builder::new()
                    .name(name("egress"))
                    .spawn(move || egress(&s1, lane, &tun, &socket, env1))?,
            );
            threads.push(
                std::thread::Builder::new()
                    .name(name("ingress"))
                    .spawn(move || ingress(&s2, lane, &tun2, &sock2, env2))?,
            );
        }
        Ok(Gateway {
            shared,
            threads,
            _mgmt: mgmt,
            _metrics: metrics,
        })
    }

    /// Wait for the datapath threads (they run until [`Shared::stop`] is set or one fails).
    pub fn join(mut self) -> anyhow::Result<()> {
        let mut result = Ok(());
        for t in self.threads.drain(..) {
            let r = t
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("datapath thread panicked")));
            if r.is_err() {
                self.shared.stop.store(true, Relaxed);
                if result.is_ok() {
                    result = r;
                }
            }
        }
        result
    }
}

/// What the device and the socket took of the offloads the configuration asks for.
fn probe_offloads(cfg: &GatewayConfig, tun: &Tun, socket: &UdpSocket) -> Offloads {
    let tun_state = |on: bool| {
        if !cfg.tun_offload {
            OffloadState::off("disabled in the configuration (tun_offload = false)")
        } else if on {
            OffloadState::on()
        } else {
            OffloadState::off(
                tun.offload_error
                    .clone()
                    .unwrap_or_else(|| "the kernel refused it (before 6.2)".into()),
            )
        }
    };
    let tun_coalesce = if !tun.offloads.vnet_hdr {
        tun_state(false)
    } else if cfg.tun_coalesce {
        OffloadState::on()
    } else {
        OffloadState::off("disabled in the configuration (tun_coalesce = false)")
    };
    let tun_coalesce_udp = if !tun_coalesce.on {
        tun_coalesce.clone()
    } else if tun.offloads.uso {
        OffloadState::on()
    } else {
        OffloadState::off("the device has no UDP segmentation offload (tun_uso)")
    };
    Offloads {
        tun_tso: tun_state(tun.offloads.vnet_hdr),
        tun_uso: tun_state(tun.offloads.uso),
        tun_coalesce,
        tun_coalesce_udp,
        udp_gso: super::udp::probe_gso(socket, cfg.udp_gso),
        udp_gro: super::udp::enable_gro(socket, cfg.udp_gro),
        socket_buffers: size_socket_buffers(socket),
    }
}

/// Send every packet in `out` to the peer (GSO where on), count, give the buffers back.
fn send_all(
    shared: &Shared,
    lane: usize,
    socket: &UdpSocket,
    tx: &mut GsoSender,
    out: &mut Vec<Packet>,
    mut recycle: impl FnMut(Packet),
) {
    let counters = &shared.counters;
    let had_gso = tx.gso;
    let sent = tx.send(socket, out);
    counters.udp_out.fetch_add(sent.datagrams, Relaxed);
    counters.udp_out_bytes.fetch_add(sent.bytes, Relaxed);
    if sent.datagrams > 0 {
        shared.lanes[lane]
            .udp_out
            .fetch_add(sent.datagrams, Relaxed);
    }
    for _ in 0..sent.failed {
        counters.count_drop(DropReason::Io);
    }
    if had_gso && !tx.gso {
        let why = tx.gso_error.clone().unwrap_or_default();
        shared
            .offloads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .udp_gso = OffloadState::off(why);
    }
    out.drain(..).for_each(&mut recycle);
}

/// Lane `lane`'s egress: its TUN queue → boost → its socket, to the peer's port of the lane.
fn egress(
    shared: &Shared,
    lane: usize,
    tun: &Tun,
    socket: &UdpSocket,
    env: BoosterEnv,
) -> anyhow::Result<()> {
    let cfg = &shared.config;
    let batch = cfg.batch.min(MAX_BATCH);
    let counters = &shared.counters;
    let lane_counters = &shared.lanes[lane];
    let mut sender = Sender::new(env, cfg.mtu, counters.clone()).on_lane(lane as u8);
    // The adaptive policy (and its probes) runs on lane 0; every lane samples for it.
    let mut adaptive = (lane == 0).then(|| Adaptive::new(shared.adaptive_config.clone()));
    if shared.adaptive_config.enabled {
        sender.sample_compressibility(shared.adaptive_config.sample_every.max(1));
    }
    let gso = shared
        .offloads
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .udp_gso
        .on;
    let mut tx = GsoSender::new(cfg.lane_peer(lane), gso);
    let vnet = tun.offloads.vnet_hdr;
    // With offloads a read is one virtio header and up to 64 KiB of super-segment.
    let mut frame = vec![0u8; if vnet { VNET_HDR_LEN + MAX_SUPER } else { 0 }];
    let mut segments: Vec<Packet> = Vec::with_capacity(64);
    let mut out: Vec<Packet> = Vec::with_capacity(4 * MAX_BATCH);
    while !shared.stop.load(Relaxed) {
        let now = shared.now();
        let wake = [
            sender.poll_timeout(),
            adaptive.as_ref().and_then(Adaptive::poll_timeout),
        ]
        .into_iter()
        .flatten()
        .min();
        let wait_ms = wake.map_or(100, |t| {
            t.saturating_duration_since(now).as_millis().clamp(0, 100) as u16
        });
        if wait_ms > 0 {
            tun.wait_readable(wait_ms)?;
        }
        let now = shared.now();
        let epochs = shared.store.epochs();
        // A change is sent one grace period after it is made, when the peer accepts it.
        let snap = epochs.sending(now);
        let mut read_here = 0u64;
        for _ in 0..batch {
            let read = if vnet {
                tun.read(&mut frame).map(|n| {
                    match offload::split(&frame[..n], sender.pool(), &mut segments) {
                        Ok(k) => {
                            if k > 1 {
                                counters.tun_in_super.fetch_add(1, Relaxed);
                            }
                        }
                        Err(e) => {
                            tracing::debug!(error = %e, "frame from the TUN device");
                            counters.count_drop(DropReason::Offload);
                        }
                    }
                })
            } else {
                let mut p = sender.pool().get();
                let r = tun.read(&mut p.writable_tail()[..MAX_PAYLOAD]);
                match r {
                    Ok(n) => {
                        p.set_len(n);
                        segments.push(p);
                    }
                    Err(_) => sender.recycle(p),
                }
                r.map(|_| ())
            };
            match read {
                Ok(()) => {
                    read_here += segments.len() as u64;
                    for p in segments.drain(..) {
                        if shared.plain {
                            counters.tun_in.fetch_add(1, Relaxed);
                            out.push(p);
                        } else {
                            sender.boost(now, snap, p, &mut out);
                        }
                    }
                }
                Err(e) => {
                    if e.kind() != std::io::ErrorKind::WouldBlock
                        && e.kind() != std::io::ErrorKind::Interrupted
                    {
                        // The device went down or away: count, back off, keep serving.
                        counters.count_drop(DropReason::Io);
                        tracing::warn!(error = %e, "reading the TUN device");
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    break;
                }
            }
        }
        if sender.poll_timeout().is_some_and(|t| t <= now) {
            sender.handle_timeout(now, &mut out);
        }
        drop(epochs);
        match adaptive.as_mut() {
            Some(a) if a.poll_timeout().is_some_and(|t| t <= now) => {
                run_adaptive(shared, socket, &mut sender, a, now);
            }
            Some(_) => {}
            None if shared.adaptive_config.enabled => {
                let (orig, comp) = sender.take_compressibility();
                if orig > 0 {
                    shared.sampled.0.fetch_add(orig, Relaxed);
                    shared.sampled.1.fetch_add(comp, Relaxed);
                }
            }
            None => {}
        }
        if read_here > 0 {
            lane_counters.tun_in.fetch_add(read_here, Relaxed);
        }
        send_all(shared, lane, socket, &mut tx, &mut out, |p| {
            sender.recycle(p)
        });
    }
    Ok(())
}

fn run_adaptive(
    shared: &Shared,
    socket: &UdpSocket,
    sender: &mut Sender,
    adaptive: &mut Adaptive,
    now: Instant,
) {
    // Delay probes ride the data's path through the link's queue (docs/booster-wire.md).
    if let Some(probe) = adaptive.poll_probe(now) {
        let mut buf = Vec::with_capacity(16);
        encode_control(&[probe], &mut buf);
        let _ = socket.send_to(&buf, shared.config.peer);
    }
    for (sent, received) in
        std::mem::take(&mut *shared.peer_delay.lock().unwrap_or_else(|e| e.into_inner()))
    {
        adaptive.observe_delay(now, sent, received);
    }
    let (orig, comp) = sender.take_compressibility();
    // What the other lanes sampled since (lane 0 may carry little of the traffic).
    let others = (
        shared.sampled.0.swap(0, Relaxed),
        shared.sampled.1.swap(0, Relaxed),
    );
    adaptive.observe_compressibility(orig + others.0, comp + others.1);
    let (recv, exp) =
        std::mem::take(&mut *shared.peer_loss.lock().unwrap_or_else(|e| e.into_inner()));
    adaptive.observe_loss(
        recv.min(u64::from(u32::MAX)) as u32,
        exp.min(u64::from(u32::MAX)) as u32,
    );
    let snap = shared.store.load();
    if let Some(action) = adaptive.poll(now, &snap) {
        let policy = adaptive.config().policy.clone();
        let r = shared.store.update(now, |s| match action {
            Action::Insert(spec) => s.with_inserted(&policy, spec, None),
            Action::Remove(spec) => s.with_removed(&policy, spec),
        });
        match r {
            Ok((snap, ns)) => tracing::info!(
                ?action,
                generation = snap.generation(),
                swap_ns = ns,
                "adaptive policy"
            ),
            Err(e) => adaptive.refused(action, e.to_string()),
        }
    }
    *shared.adaptive.lock().unwrap_or_else(|e| e.into_inner()) = adaptive.state().clone();
}

/// Lane `lane`'s ingress: its socket (datagrams from the peer's port of the lane only) →
/// deboost → its TUN queue.
fn ingress(
    shared: &Shared,
    lane: usize,
    tun: &Tun,
    socket: &UdpSocket,
    env: BoosterEnv,
) -> anyhow::Result<()> {
    let cfg = &shared.config;
    let batch = cfg.batch.min(MAX_BATCH);
    let counters = &shared.counters;
    let lane_counters = &shared.lanes[lane];
    let peer = cfg.lane_peer(lane);
    let mut receiver = Receiver::new(env, &[peer], counters.clone());
    let (gro, coalesce, coalesce_udp) = {
        let o = shared.offloads.lock().unwrap_or_else(|e| e.into_inner());
        (o.udp_gro.on, o.tun_coalesce.on, o.tun_coalesce_udp.on)
    };
    let size = if gro {
        super::udp::GRO_BUFFER
    } else {
        MAX_PAYLOAD
    };
    let mut rx = GroReceiver::new(batch, size);
    let vnet = tun.offloads.vnet_hdr;
    let mut coalescer = Coalescer::new(coalesce).with_udp(coalesce_udp);
    let mut out: Vec<Packet> = Vec::with_capacity(4 * MAX_BATCH);
    let mut control = Vec::with_capacity(64);
    let mut echoes = Vec::new();
    let mut next_report = shared.now();
    while !shared.stop.load(Relaxed) {
        let received = match rx.receive(socket) {
            Ok(n) => n,
            Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => 0,
            Err(e) => {
                // ECONNREFUSED reports an ICMP port unreachable for an earlier send (the
                // peer was not up yet; that send was counted): nothing is lost here.
                tracing::debug!(error = %e, "receiving from the peer");
                0
            }
        };
        let now = shared.now();
        let epochs = shared.store.epochs();
        let mut datagrams_here = 0u64;
        for i in 0..received {
            // No source (not an IP socket address) is nobody's: the receiver refuses it.
            let from = rx.got[i].1.unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
            for datagram in rx.datagrams(i) {
                datagrams_here += 1;
                let mut p = receiver.pool().get();
                if p.set_payload(datagram).is_none() {
                    counters.udp_in.fetch_add(1, Relaxed);
                    counters.count_drop(DropReason::TooLarge);
                    receiver.recycle(p);
                    continue;
                }
                if shared.plain {
                    counters.udp_in.fetch_add(1, Relaxed);
                    if from.ip().to_canonical() == peer.ip().to_canonical()
                        && from.port() == peer.port()
                    {
                        out.push(p);
                    } else {
                        counters.count_drop(DropReason::UnknownPeer);
                        receiver.recycle(p);
                    }
                    continue;
                }
                receiver.deboost(now, from, &epochs, p, &mut out, |c| match c {
                    Control::LossReport { received, expected } => {
                        let mut l = shared.peer_loss.lock().unwrap_or_else(|e| e.into_inner());
                        l.0 += u64::from(received);
                        l.1 += u64::from(expected);
                    }
                    // Answer a probe at once with our clock (control.rs, types 2 and 3).
                    Control::Timestamp { sent } => echoes.push(Control::TimestampEcho {
                        sent,
                        received: now.as_nanos(),
                    }),
                    Control::TimestampEcho { sent, received } => {
                        let mut d = shared.peer_delay.lock().unwrap_or_else(|e| e.into_inner());
                        if d.len() < MAX_ECHOES {
                            d.push((sent, received));
                        }
                    }
                    Control::Unknown(_) => {}
                });
            }
        }
        drop(epochs);
        if datagrams_here > 0 {
            lane_counters.udp_in.fetch_add(datagrams_here, Relaxed);
        }
        let mut write = |frame: &[u8], packets: usize| match tun.write(frame) {
            Ok(_) => {
                counters.tun_out.fetch_add(packets as u64, Relaxed);
                lane_counters.tun_out.fetch_add(packets as u64, Relaxed);
                if packets > 1 {
                    counters.tun_out_super.fetch_add(1, Relaxed);
                }
            }
            Err(_) => {
                for _ in 0..packets {
                    counters.count_drop(DropReason::Io);
                }
            }
        };
        for p in out.drain(..) {
            if vnet {
                coalescer.push(p.payload(), &mut write);
            } else {
                write(p.payload(), 1);
            }
            receiver.recycle(p);
        }
        coalescer.flush(&mut write);
        for echo in echoes.drain(..) {
            encode_control(&[echo], &mut control);
            let _ = socket.send_to(&control, peer);
        }
        if !shared.plain && now >= next_report {
            next_report = now.checked_add(LOSS_REPORT_EVERY).unwrap_or(Instant::MAX);
            if let Some(report) = receiver.take_loss_report() {
                // Each lane reports its own link's loss; the peer adds the lanes up.
                encode_control(&[report], &mut control);
                let _ = socket.send_to(&control, peer);
            }
        }
    }
    Ok(())
}
