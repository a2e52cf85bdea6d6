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
//! Policy changes (management `insert`/`remove`, the adaptive policy) build a new
//! [`PolicySnapshot`] and store it, with the recent ones still in their grace period
//! ([`PolicyEpochs`]), in an [`ArcSwap`]: both threads load it once per batch and never wait
//! for a writer; egress boosts with a change one grace period (`chain_grace_ms`) after it is
//! made, so a peer changed within that time already accepts it (seed §5.3 measured 20–30 ms per insertion through
//! an ioctl; here it is a snapshot build and a pointer swap, timed and reported as `swap_ns`).
//!
//! `plain` mode bypasses the booster framework altogether (no header, no pipeline): the
//! baseline "plain TUN forwarder" the null booster is measured against.

use super::config::GatewayConfig;
use super::tun::Tun;
use arc_swap::ArcSwap;
use nix::sys::socket::{MsgFlags, MultiHeaders, SockaddrStorage, recvmmsg, sendmmsg};
use pathwise_booster::adaptive::{Action, Adaptive, AdaptiveConfig, AdaptiveState};
use pathwise_booster::admission::PolicyEpochs;
use pathwise_booster::boosters::{BoosterEnv, CryptoContext};
use pathwise_booster::packet::{MAX_PAYLOAD, Packet};
use pathwise_booster::pipeline::{Receiver, Sender, encode_control};
use pathwise_booster::policy::{PolicyError, PolicySnapshot};
use pathwise_booster::stats::{Counters, DropReason};
use pathwise_core::time::Instant;
use std::io::{IoSlice, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Largest batch the datapath arrays hold.
pub const MAX_BATCH: usize = 64;
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

/// Everything the threads and the management server share.
#[derive(Debug)]
pub struct Shared {
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
    /// The configuration the gateway runs.
    pub config: GatewayConfig,
    /// Plain forwarding (no boosters).
    pub plain: bool,
    /// Nonce sender id.
    pub sender_id: u32,
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
        let tun = Tun::open(&config.tun)
            .map_err(|e| anyhow::anyhow!("opening TUN device {}: {e}", config.tun))?;
        let socket = UdpSocket::bind(config.listen).map_err(|e| {
            let why = match crate::caps::port_need(config.listen.port(), "listen") {
                Some(n) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    format!(": {} needs {}", n.why, n.cap.name())
                }
                _ => String::new(),
            };
            anyhow::anyhow!("binding {}: {e}{why}", config.listen)
        })?;
        socket.set_read_timeout(Some(Duration::from_millis(100)))?;
        let wall_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let env = BoosterEnv {
            crypto: key.map(|k| Arc::new(CryptoContext::new(&k, sender_id, wall_ns))),
        };
        let shared = Arc::new(Shared {
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
            plain,
            sender_id,
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
        let (s1, s2) = (shared.clone(), shared.clone());
        let (tun2, sock2) = (tun.try_clone()?, socket.try_clone()?);
        let env2 = env.clone();
        let egress = std::thread::Builder::new()
            .name("egress".into())
            .spawn(move || egress(&s1, &tun, &socket, env))?;
        let ingress = std::thread::Builder::new()
            .name("ingress".into())
            .spawn(move || ingress(&s2, &tun2, &sock2, env2))?;
        Ok(Gateway {
            shared,
            threads: vec![egress, ingress],
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

/// Send every packet in `out` to `peer` with `sendmmsg`, `MAX_BATCH` at a time, then give the
/// buffers back through `recycle`.
fn send_all(
    socket: &UdpSocket,
    headers: &mut MultiHeaders<SockaddrStorage>,
    peer: &SockaddrStorage,
    out: &mut Vec<Packet>,
    counters: &Counters,
    mut recycle: impl FnMut(Packet),
) {
    let addrs: [Option<SockaddrStorage>; MAX_BATCH] = [Some(*peer); MAX_BATCH];
    let mut start = 0;
    while start < out.len() {
        let n = (out.len() - start).min(MAX_BATCH);
        let mut it = out[start..start + n].iter();
        let iovs: [[IoSlice<'_>; 1]; MAX_BATCH] =
            std::array::from_fn(|_| [IoSlice::new(it.next().map_or(&[][..], |p| p.payload()))]);
        let cmsgs: [nix::sys::socket::ControlMessage<'_>; 0] = [];
        match sendmmsg(
            socket.as_raw_fd(),
            headers,
            &iovs[..n],
            &addrs[..n],
            cmsgs,
            MsgFlags::empty(),
        ) {
            Ok(sent) => {
                let sent = sent.count().min(n);
                counters.udp_out.fetch_add(sent as u64, Relaxed);
                let bytes: usize = out[start..start + sent].iter().map(|p| p.len()).sum();
                counters.udp_out_bytes.fetch_add(bytes as u64, Relaxed);
                for _ in sent..n {
                    counters.count_drop(DropReason::Io);
                }
            }
            Err(_) => {
                for _ in 0..n {
                    counters.count_drop(DropReason::Io);
                }
            }
        }
        start += n;
    }
    out.drain(..).for_each(&mut recycle);
}

fn egress(shared: &Shared, tun: &Tun, socket: &UdpSocket, env: BoosterEnv) -> anyhow::Result<()> {
    let cfg = &shared.config;
    let batch = cfg.batch.min(MAX_BATCH);
    let counters = &shared.counters;
    let mut sender = Sender::new(env, cfg.mtu, counters.clone());
    let mut adaptive = Adaptive::new(shared.adaptive_config.clone());
    if adaptive.config().enabled {
        sender.sample_compressibility(adaptive.config().sample_every.max(1));
    }
    let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(MAX_BATCH, None);
    let peer = SockaddrStorage::from(cfg.peer);
    let mut out: Vec<Packet> = Vec::with_capacity(4 * MAX_BATCH);
    while !shared.stop.load(Relaxed) {
        let now = shared.now();
        let wake = [sender.poll_timeout(), adaptive.poll_timeout()]
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
        for _ in 0..batch {
            let mut p = sender.pool().get();
            match tun.read(&mut p.writable_tail()[..MAX_PAYLOAD]) {
                Ok(n) => {
                    p.set_len(n);
                    if shared.plain {
                        counters.tun_in.fetch_add(1, Relaxed);
                        out.push(p);
                    } else {
                        sender.boost(now, snap, p, &mut out);
                    }
                }
                Err(e) => {
                    sender.recycle(p);
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
        if adaptive.poll_timeout().is_some_and(|t| t <= now) {
            run_adaptive(shared, &mut sender, &mut adaptive, now);
        }
        send_all(socket, &mut headers, &peer, &mut out, counters, |p| {
            sender.recycle(p)
        });
    }
    Ok(())
}

fn run_adaptive(shared: &Shared, sender: &mut Sender, adaptive: &mut Adaptive, now: Instant) {
    let (orig, comp) = sender.take_compressibility();
    adaptive.observe_compressibility(orig, comp);
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

/// The IPv4 or IPv6 socket address in `addr`, if it is one.
fn socket_addr(addr: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(a) = addr.as_sockaddr_in() {
        return Some(SocketAddr::from((a.ip(), a.port())));
    }
    addr.as_sockaddr_in6()
        .map(|a| SocketAddr::from((a.ip(), a.port())))
}

fn ingress(shared: &Shared, tun: &Tun, socket: &UdpSocket, env: BoosterEnv) -> anyhow::Result<()> {
    let cfg = &shared.config;
    let batch = cfg.batch.min(MAX_BATCH);
    let counters = &shared.counters;
    let mut receiver = Receiver::new(env, &[cfg.peer], counters.clone());
    let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(MAX_BATCH, None);
    let mut slots: Vec<Packet> = (0..MAX_BATCH).map(|_| receiver.pool().get()).collect();
    let mut out: Vec<Packet> = Vec::with_capacity(4 * MAX_BATCH);
    let mut control = Vec::with_capacity(64);
    let mut next_report = shared.now();
    while !shared.stop.load(Relaxed) {
        let mut lens = [0usize; MAX_BATCH];
        let mut sources: [Option<SocketAddr>; MAX_BATCH] = [None; MAX_BATCH];
        let received = {
            let mut it = slots.iter_mut();
            let mut iovs: [[IoSliceMut<'_>; 1]; MAX_BATCH] = std::array::from_fn(|_| {
                [IoSliceMut::new(it.next().map_or(&mut [][..], |p| {
                    &mut p.writable_tail()[..MAX_PAYLOAD]
                }))]
            });
            match recvmmsg(
                socket.as_raw_fd(),
                &mut headers,
                &mut iovs[..batch],
                MsgFlags::MSG_WAITFORONE,
                None,
            ) {
                Ok(results) => {
                    let mut n = 0;
                    for (i, r) in results.enumerate() {
                        lens[i] = r.bytes;
                        sources[i] = r.address.as_ref().and_then(socket_addr);
                        n = i + 1;
                    }
                    n
                }
                Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => 0,
                Err(e) => {
                    // ECONNREFUSED reports an ICMP port unreachable for an earlier send (the
                    // peer was not up yet; that send was counted): nothing is lost here.
                    tracing::debug!(error = %e, "receiving from the peer");
                    0
                }
            }
        };
        let now = shared.now();
        let epochs = shared.store.epochs();
        for (i, &len) in lens.iter().enumerate().take(received) {
            let fresh = receiver.pool().get();
            let mut p = std::mem::replace(&mut slots[i], fresh);
            p.set_len(len);
            // No source (not an IP socket address) is nobody's: the receiver refuses it.
            let from = sources[i].unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
            if shared.plain {
                counters.udp_in.fetch_add(1, Relaxed);
                if from.ip().to_canonical() == cfg.peer.ip().to_canonical()
                    && from.port() == cfg.peer.port()
                {
                    out.push(p);
                } else {
                    counters.count_drop(DropReason::UnknownPeer);
                    receiver.recycle(p);
                }
                continue;
            }
            receiver.deboost(now, from, &epochs, p, &mut out, |c| {
                if let pathwise_booster::control::Control::LossReport { received, expected } = c {
                    let mut l = shared.peer_loss.lock().unwrap_or_else(|e| e.into_inner());
                    l.0 += u64::from(received);
                    l.1 += u64::from(expected);
                }
            });
        }
        drop(epochs);
        for p in out.drain(..) {
            match tun.write(p.payload()) {
                Ok(_) => {
                    counters.tun_out.fetch_add(1, Relaxed);
                }
                Err(_) => counters.count_drop(DropReason::Io),
            }
            receiver.recycle(p);
        }
        if !shared.plain && now >= next_report {
            next_report = now.checked_add(LOSS_REPORT_EVERY).unwrap_or(Instant::MAX);
            if let Some(report) = receiver.take_loss_report() {
                encode_control(&[report], &mut control);
                let _ = socket.send_to(&control, shared.config.peer);
            }
        }
    }
    Ok(())
}
