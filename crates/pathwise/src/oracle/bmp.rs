//! The BMP listener (`pathwise oracle serve --bmp ADDR`): the ISP's exit routers stream their
//! Adj-RIBs-In to the oracle (RFC 7854), and their routes become the exits' external networks.
//!
//! - The router connects to the station (RFC 7854 §3.2): one thread accepts, one thread per
//!   connection reads and feeds a [`BmpSession`] (sans-IO, `pathwise-oracle`), which changes the
//!   shared [`BgpRib`].
//! - Which exit router a session speaks for: an explicit `--bmp-router SOURCE=ROUTER`, else the
//!   router whose address is the TCP source address, else the router with a NIC of that local
//!   address. The router must be in the database; a session from anyone else is kept open, its
//!   messages read, counted (`unknown_router`) and ignored.
//! - A batcher thread takes the RIB's coalesced changes every [`BmpOptions::interval`] and
//!   applies them with [`SharedSnapshot::update`]: queries keep being answered from the old
//!   snapshot meanwhile. A reload replaces the database wholesale; the batcher then re-sends
//!   every route the RIB holds.
//! - When a session ends (TCP closed, Termination, a broken stream) the routes it brought go
//!   (RFC 7854 §3.3); a Peer Down removes that peer's routes (§4.9).

use pathwise_oracle::bgp::bmp::{MESSAGE_TYPES, frame};
use pathwise_oracle::bgp::{BgpRib, BmpCounters, BmpSession, ExitNic};
use pathwise_oracle::{SharedSnapshot, TopologySnapshot, Update};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{ErrorKind, Read};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the batcher applies accumulated changes (the bound on the update-to-answer
/// latency is this plus the time to build the new snapshot).
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(10);

/// An explicit mapping from a BMP session's TCP source address to an exit router.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BmpRouter {
    /// The session's source address.
    pub source: IpAddr,
    /// The router in the database.
    pub router: IpAddr,
}

impl std::str::FromStr for BmpRouter {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, b) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?}: expected SOURCE=ROUTER, e.g. 192.0.2.1=10.0.0.1"))?;
        Ok(BmpRouter {
            source: a.trim().parse().map_err(|e| format!("{a:?}: {e}"))?,
            router: b.trim().parse().map_err(|e| format!("{b:?}: {e}"))?,
        })
    }
}

/// How to run the BMP listener.
#[derive(Clone, Debug)]
pub struct BmpOptions {
    /// TCP address to listen on.
    pub listen: SocketAddr,
    /// Explicit session → router mappings.
    pub routers: Vec<BmpRouter>,
    /// How often accumulated changes are applied.
    pub interval: Duration,
}

/// Drop reasons, in the order of [`Totals::drops`].
const DROP_REASONS: [&str; 8] = [
    "malformed",
    "peer_type",
    "adj_rib_out",
    "not_update",
    "missing_as_path",
    "unknown_router",
    "broken_stream",
    "update_refused",
];

#[derive(Debug, Default)]
struct Totals {
    messages: [AtomicU64; 7],
    drops: [AtomicU64; 8],
    announced: AtomicU64,
    withdrawn: AtomicU64,
    end_of_rib: AtomicU64,
    own_as_removed: AtomicU64,
    sessions_accepted: AtomicU64,
    sessions_closed: AtomicU64,
    updates_applied: AtomicU64,
    batches: AtomicU64,
    last_batch_latency_us: AtomicU64,
    last_apply_us: AtomicU64,
    bytes: AtomicU64,
    /// Changes taken from the RIB by the batcher and not yet served.
    in_flight: AtomicU64,
}

impl Totals {
    fn add(&self, now: &BmpCounters, before: &BmpCounters) {
        for (i, (a, b)) in now.messages.iter().zip(&before.messages).enumerate() {
            self.messages[i].fetch_add(a - b, Relaxed);
        }
        let (d, e) = (&now.drops, &before.drops);
        for (i, n) in [
            d.malformed - e.malformed,
            d.peer_type - e.peer_type,
            d.adj_rib_out - e.adj_rib_out,
            d.not_update - e.not_update,
            d.missing_as_path - e.missing_as_path,
        ]
        .into_iter()
        .enumerate()
        {
            self.drops[i].fetch_add(n, Relaxed);
        }
        self.announced
            .fetch_add(now.announced - before.announced, Relaxed);
        self.withdrawn
            .fetch_add(now.withdrawn - before.withdrawn, Relaxed);
        self.end_of_rib
            .fetch_add(now.end_of_rib - before.end_of_rib, Relaxed);
        self.own_as_removed
            .fetch_add(now.own_as_removed - before.own_as_removed, Relaxed);
    }

    fn drop(&self, reason: &str, n: u64) {
        if let Some(i) = DROP_REASONS.iter().position(|r| *r == reason) {
            self.drops[i].fetch_add(n, Relaxed);
        }
    }
}

#[derive(Debug)]
struct RibState {
    rib: BgpRib,
    /// When the oldest change not yet applied arrived.
    first_pending: Option<Instant>,
}

#[derive(Clone, Debug)]
struct SessionEntry {
    id: u64,
    remote: SocketAddr,
    exit: Option<IpAddr>,
    since: Instant,
    counters: BmpCounters,
    sys_name: Option<String>,
    sys_descr: Option<String>,
    last_error: Option<String>,
}

/// The BMP feed's state: the RIB, the sessions and the counters. `show bgp` and the metrics
/// read it.
#[derive(Debug)]
pub struct BmpFeed {
    shared: Arc<SharedSnapshot>,
    rib: Mutex<RibState>,
    sessions: Mutex<Vec<SessionEntry>>,
    next_id: AtomicU64,
    totals: Totals,
    routers: Vec<BmpRouter>,
    listen: SocketAddr,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl BmpFeed {
    /// The exit router a session from `source` speaks for, and its NICs.
    fn resolve(&self, source: IpAddr) -> Option<(IpAddr, Vec<ExitNic>)> {
        let source = source.to_canonical();
        let snap = self.shared.load();
        let exit = match self.routers.iter().find(|m| m.source == source) {
            Some(m) => Some(m.router),
            None if snap.has_router(source) => Some(source),
            None => snap.router_addresses().find(|&a| {
                snap.router(a)
                    .is_some_and(|r| r.nics.iter().any(|n| n.local == source))
            }),
        }?;
        let router = snap.router(exit)?;
        let nics = router
            .nics
            .iter()
            .map(|n| ExitNic {
                index: n.index,
                local: n.local,
                peer: n.peer,
            })
            .collect();
        Some((exit, nics))
    }

    fn serve(&self, stream: TcpStream, remote: SocketAddr, stop: &AtomicBool) {
        self.totals.sessions_accepted.fetch_add(1, Relaxed);
        let id = self.next_id.fetch_add(1, Relaxed);
        let resolved = self.resolve(remote.ip());
        lock(&self.sessions).push(SessionEntry {
            id,
            remote,
            exit: resolved.as_ref().map(|r| r.0),
            since: Instant::now(),
            counters: BmpCounters::default(),
            sys_name: None,
            sys_descr: None,
            last_error: None,
        });
        match resolved {
            Some((exit, nics)) => {
                tracing::info!(%remote, %exit, "BMP session up");
                self.feed(stream, id, BmpSession::new(exit, nics), stop);
            }
            None => {
                tracing::warn!(%remote, "BMP session from an unknown router: its messages are ignored");
                self.drain(stream, stop);
            }
        }
        lock(&self.sessions).retain(|s| s.id != id);
        self.totals.sessions_closed.fetch_add(1, Relaxed);
    }

    fn feed(&self, mut stream: TcpStream, id: u64, mut session: BmpSession, stop: &AtomicBool) {
        let mut buf = vec![0u8; 64 * 1024];
        let mut before = BmpCounters::default();
        while let Some(n) = read(&mut stream, &mut buf, stop) {
            self.totals.bytes.fetch_add(n as u64, Relaxed);
            let result = {
                let mut g = lock(&self.rib);
                let r = session.handle_bytes(&buf[..n], &mut g.rib);
                if g.rib.pending() > 0 && g.first_pending.is_none() {
                    g.first_pending = Some(Instant::now());
                }
                r
            };
            let now = *session.counters();
            self.totals.add(&now, &before);
            before = now;
            if let Some(s) = lock(&self.sessions).iter_mut().find(|s| s.id == id) {
                s.counters = now;
                let (name, descr) = session.sys_name();
                s.sys_name = name.map(str::to_owned);
                s.sys_descr = descr.map(str::to_owned);
                s.last_error = session.last_error().map(str::to_owned);
            }
            if let Err(e) = result {
                if !matches!(e, pathwise_oracle::bgp::BmpError::Terminated) {
                    self.totals.drop("broken_stream", 1);
                }
                tracing::info!(exit = %session.exit(), error = %e, "BMP session closed");
                break;
            }
        }
        let mut g = lock(&self.rib);
        session.end(&mut g.rib);
        if g.rib.pending() > 0 && g.first_pending.is_none() {
            g.first_pending = Some(Instant::now());
        }
    }

    /// Read a session nobody may feed: count its messages as dropped.
    fn drain(&self, mut stream: TcpStream, stop: &AtomicBool) {
        let mut buf = vec![0u8; 64 * 1024];
        let mut pending: Vec<u8> = Vec::new();
        while let Some(n) = read(&mut stream, &mut buf, stop) {
            pending.extend_from_slice(&buf[..n]);
            loop {
                match frame(&pending) {
                    Ok(Some(len)) => {
                        pending.drain(..len);
                        self.totals.drop("unknown_router", 1);
                    }
                    Ok(None) => break,
                    Err(_) => {
                        self.totals.drop("broken_stream", 1);
                        return;
                    }
                }
            }
        }
    }

    /// Apply what the RIB accumulated; returns the updates applied.
    fn apply_pending(&self, stores_seen: &mut u64) -> usize {
        let stores = self.shared.stores();
        let (updates, since) = {
            let mut g = lock(&self.rib);
            if stores != *stores_seen {
                // The database was replaced (a reload): what we installed is gone.
                *stores_seen = stores;
                g.rib.resync();
                g.first_pending.get_or_insert_with(Instant::now);
            }
            if g.rib.pending() == 0 {
                return 0;
            }
            let updates = g.rib.take_updates();
            self.totals.in_flight.store(updates.len() as u64, Relaxed);
            (updates, g.first_pending.take())
        };
        if updates.is_empty() {
            return 0;
        }
        let t = Instant::now();
        let total = updates.len();
        let applied = match self.shared.update(&updates) {
            Ok(_) => total,
            Err(e) => {
                // Someone changed the database under us (a router deleted, a network removed
                // by hand): apply what still fits, count the rest.
                let snap = self.shared.load_full();
                let fitting: Vec<Update> = updates.into_iter().filter(|u| fits(&snap, u)).collect();
                let ok = self.shared.update(&fitting).map_or(0, |_| fitting.len());
                tracing::warn!(error = %e, refused = total - ok, "BMP batch refused; applied what fits");
                self.totals.drop("update_refused", (total - ok) as u64);
                ok
            }
        };
        let done = Instant::now();
        self.totals.in_flight.store(0, Relaxed);
        self.totals
            .updates_applied
            .fetch_add(applied as u64, Relaxed);
        self.totals.batches.fetch_add(1, Relaxed);
        self.totals
            .last_apply_us
            .store((done - t).as_micros() as u64, Relaxed);
        if let Some(since) = since {
            self.totals
                .last_batch_latency_us
                .store((done - since).as_micros() as u64, Relaxed);
        }
        applied
    }

    /// What `show bgp` prints.
    pub fn view(&self) -> BgpView {
        let (peers, exits, routes, pending) = {
            let g = lock(&self.rib);
            (
                g.rib.peers(),
                g.rib.prefixes_per_exit(),
                g.rib.routes(),
                g.rib.pending() + self.totals.in_flight.load(Relaxed) as usize,
            )
        };
        let t = &self.totals;
        BgpView {
            listen: self.listen.to_string(),
            sessions: lock(&self.sessions)
                .iter()
                .map(|s| SessionView {
                    remote: s.remote.to_string(),
                    exit: s.exit,
                    sys_name: s.sys_name.clone(),
                    sys_descr: s.sys_descr.clone(),
                    up_s: s.since.elapsed().as_secs_f64(),
                    messages: s.counters.messages.iter().sum(),
                    announced: s.counters.announced,
                    withdrawn: s.counters.withdrawn,
                    last_error: s.last_error.clone(),
                })
                .collect(),
            peers: peers
                .into_iter()
                .map(|p| PeerView {
                    exit: p.exit,
                    address: p.peer.address,
                    distinguisher: p.peer.distinguisher,
                    post_policy: p.peer.post_policy,
                    asn: p.asn,
                    nic: p.nic,
                    routes: p.routes,
                })
                .collect(),
            exits: exits
                .into_iter()
                .map(|(router, prefixes)| ExitPrefixes { router, prefixes })
                .collect(),
            routes,
            pending,
            messages: MESSAGE_TYPES
                .iter()
                .zip(&t.messages)
                .map(|(k, v)| ((*k).to_owned(), v.load(Relaxed)))
                .collect(),
            drops: DROP_REASONS
                .iter()
                .zip(&t.drops)
                .map(|(k, v)| ((*k).to_owned(), v.load(Relaxed)))
                .collect(),
            announced: t.announced.load(Relaxed),
            withdrawn: t.withdrawn.load(Relaxed),
            end_of_rib: t.end_of_rib.load(Relaxed),
            own_as_removed: t.own_as_removed.load(Relaxed),
            sessions_accepted: t.sessions_accepted.load(Relaxed),
            sessions_closed: t.sessions_closed.load(Relaxed),
            updates_applied: t.updates_applied.load(Relaxed),
            batches: t.batches.load(Relaxed),
            last_batch_latency_ms: t.last_batch_latency_us.load(Relaxed) as f64 / 1e3,
            last_apply_ms: t.last_apply_us.load(Relaxed) as f64 / 1e3,
        }
    }

    /// The `bmp_*` metric families.
    pub fn metrics(&self, m: &mut crate::metrics::Snapshot) {
        let t = &self.totals;
        let (routes, prefixes) = {
            let g = lock(&self.rib);
            let p: usize = g.rib.prefixes_per_exit().iter().map(|e| e.1).sum();
            (g.rib.routes(), p)
        };
        m.counters(
            "bmp_messages",
            "BMP messages received, by type (RFC 7854 §4.1).",
            ["type"],
            MESSAGE_TYPES
                .iter()
                .zip(&t.messages)
                .map(|(k, v)| ([(*k).to_owned()], v.load(Relaxed))),
        )
        .counters(
            "bmp_drops",
            "BMP messages (or, for update_refused, snapshot updates) not used, by reason.",
            ["reason"],
            DROP_REASONS
                .iter()
                .zip(&t.drops)
                .map(|(k, v)| ([(*k).to_owned()], v.load(Relaxed))),
        )
        .counter(
            "bmp_prefixes_announced",
            "Prefixes announced in BMP route monitoring messages.",
            t.announced.load(Relaxed),
        )
        .counter(
            "bmp_prefixes_withdrawn",
            "Prefixes withdrawn in BMP route monitoring messages.",
            t.withdrawn.load(Relaxed),
        )
        .counter(
            "bmp_updates_applied",
            "External-network changes applied to the database from BMP.",
            t.updates_applied.load(Relaxed),
        )
        .counter(
            "bmp_batches",
            "Batches of BMP changes applied (each one new snapshot).",
            t.batches.load(Relaxed),
        )
        .gauge(
            "bmp_sessions",
            "BMP sessions open.",
            lock(&self.sessions).len() as u64,
        )
        .gauge(
            "bmp_routes",
            "Routes held in the exits' Adj-RIBs-In, over all BGP peers.",
            routes as u64,
        )
        .gauge(
            "bmp_prefixes",
            "(prefix, exit) pairs with a best route from BMP.",
            prefixes as u64,
        )
        .gauge(
            "bmp_last_batch_latency_seconds",
            "From the first change of the last batch arriving to its snapshot being served.",
            t.last_batch_latency_us.load(Relaxed) as f64 / 1e6,
        );
    }
}

/// Whether `u` applies to `snap` on its own.
fn fits(snap: &TopologySnapshot, u: &Update) -> bool {
    match u {
        Update::AddExternalNetwork(n) => snap.has_router(n.router),
        Update::RemoveExternalNetwork { prefix, router } => {
            snap.has_external_network(prefix, *router)
        }
        _ => false,
    }
}

/// Read what is there; `None` at end of stream, on an error, or when stopping.
fn read(stream: &mut TcpStream, buf: &mut [u8], stop: &AtomicBool) -> Option<usize> {
    loop {
        if stop.load(Relaxed) {
            return None;
        }
        match stream.read(buf) {
            Ok(0) => return None,
            Ok(n) => return Some(n),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// The running listener: the accept thread, one thread per session and the batcher. Dropping
/// it stops them all.
#[derive(Debug)]
pub struct BmpListener {
    feed: Arc<BmpFeed>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    local: SocketAddr,
}

impl BmpListener {
    /// Listen on `opts.listen` and feed `shared`.
    pub fn start(opts: &BmpOptions, shared: Arc<SharedSnapshot>) -> anyhow::Result<BmpListener> {
        use anyhow::Context as _;
        let listener = TcpListener::bind(opts.listen)
            .with_context(|| format!("BMP: listening on {}", opts.listen))?;
        listener.set_nonblocking(true)?;
        let local = listener.local_addr()?;
        let stores = shared.stores();
        let feed = Arc::new(BmpFeed {
            shared,
            rib: Mutex::new(RibState {
                rib: BgpRib::new(),
                first_pending: None,
            }),
            sessions: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            totals: Totals::default(),
            routers: opts.routers.clone(),
            listen: local,
        });
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        let (f, s) = (feed.clone(), stop.clone());
        threads.push(
            std::thread::Builder::new()
                .name("oracle-bmp".into())
                .spawn(move || accept_loop(listener, f, s))?,
        );
        let (f, s, interval) = (feed.clone(), stop.clone(), opts.interval);
        threads.push(
            std::thread::Builder::new()
                .name("oracle-bmp-batch".into())
                .spawn(move || {
                    let mut seen = stores;
                    while !s.load(Relaxed) {
                        std::thread::sleep(interval);
                        f.apply_pending(&mut seen);
                    }
                })?,
        );
        Ok(BmpListener {
            feed,
            stop,
            threads,
            local,
        })
    }

    /// The feed's state.
    pub fn feed(&self) -> &Arc<BmpFeed> {
        &self.feed
    }

    /// The TCP address routers connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

impl Drop for BmpListener {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: TcpListener, feed: Arc<BmpFeed>, stop: Arc<AtomicBool>) {
    let mut sessions: Vec<JoinHandle<()>> = Vec::new();
    while !stop.load(Relaxed) {
        match listener.accept() {
            Ok((stream, remote)) => {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
                let (f, s) = (feed.clone(), stop.clone());
                match std::thread::Builder::new()
                    .name("oracle-bmp-session".into())
                    .spawn(move || f.serve(stream, remote, &s))
                {
                    Ok(h) => sessions.push(h),
                    Err(e) => tracing::warn!(error = %e, "BMP: cannot start a session thread"),
                }
                sessions.retain(|h| !h.is_finished());
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                tracing::warn!(error = %e, "BMP: accept failed");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    for h in sessions {
        let _ = h.join();
    }
}

/// One BMP session, as `show bgp` lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionView {
    /// The router's TCP address.
    pub remote: String,
    /// The exit router it speaks for (`None`: unknown, its messages are ignored).
    pub exit: Option<IpAddr>,
    /// sysName from its Initiation message.
    pub sys_name: Option<String>,
    /// sysDescr from its Initiation message.
    pub sys_descr: Option<String>,
    /// Seconds since it connected.
    pub up_s: f64,
    /// Messages received.
    pub messages: u64,
    /// Prefixes announced.
    pub announced: u64,
    /// Prefixes withdrawn.
    pub withdrawn: u64,
    /// Why its last dropped message was dropped.
    pub last_error: Option<String>,
}

/// One BGP peer of an exit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerView {
    /// The exit router.
    pub exit: IpAddr,
    /// The peer's address.
    pub address: IpAddr,
    /// Its peer distinguisher.
    pub distinguisher: u64,
    /// Post-policy Adj-RIB-In.
    pub post_policy: bool,
    /// Its AS.
    pub asn: u32,
    /// The exit's NIC its routes leave through.
    pub nic: u8,
    /// Routes in its Adj-RIB-In.
    pub routes: usize,
}

/// Prefixes with a best route at one exit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExitPrefixes {
    /// The exit router.
    pub router: IpAddr,
    /// Prefixes.
    pub prefixes: usize,
}

/// `pathwise oracle show bgp`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BgpView {
    /// Where routers connect.
    pub listen: String,
    /// Open sessions.
    pub sessions: Vec<SessionView>,
    /// BGP peers of the exits.
    pub peers: Vec<PeerView>,
    /// Prefixes per exit.
    pub exits: Vec<ExitPrefixes>,
    /// Routes held over all peers.
    pub routes: usize,
    /// Changes not yet served: waiting for the next batch, or in the batch being built.
    pub pending: usize,
    /// Messages by type.
    pub messages: BTreeMap<String, u64>,
    /// Drops by reason.
    pub drops: BTreeMap<String, u64>,
    /// Prefixes announced.
    pub announced: u64,
    /// Prefixes withdrawn.
    pub withdrawn: u64,
    /// End-of-RIB markers.
    pub end_of_rib: u64,
    /// Route monitoring messages whose AS_PATH started with the router's own AS (not
    /// counted; FRR 8.4 does this).
    pub own_as_removed: u64,
    /// Sessions accepted.
    pub sessions_accepted: u64,
    /// Sessions closed.
    pub sessions_closed: u64,
    /// External-network changes applied to the database.
    pub updates_applied: u64,
    /// Batches applied.
    pub batches: u64,
    /// From the first change of the last batch to its snapshot being served, ms.
    pub last_batch_latency_ms: f64,
    /// Time to build and swap the last batch's snapshot, ms.
    pub last_apply_ms: f64,
}

impl BgpView {
    /// As text.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "BMP on {}: {} session(s), {} peer(s), {} routes held",
            self.listen,
            self.sessions.len(),
            self.peers.len(),
            self.routes
        );
        for s in &self.sessions {
            let exit = s.exit.map_or_else(
                || "unknown router (ignored)".to_owned(),
                |e| format!("exit {e}"),
            );
            let _ = writeln!(
                o,
                "  session {} {exit} {}: up {:.0} s, {} messages, {} announced, {} withdrawn",
                s.remote,
                s.sys_name.as_deref().unwrap_or("-"),
                s.up_s,
                s.messages,
                s.announced,
                s.withdrawn
            );
            if let Some(e) = &s.last_error {
                let _ = writeln!(o, "    last dropped: {e}");
            }
        }
        for p in &self.peers {
            let _ = writeln!(
                o,
                "  peer {} AS{} at exit {} (NIC {}, {}): {} routes",
                p.address,
                p.asn,
                p.exit,
                p.nic,
                if p.post_policy {
                    "post-policy"
                } else {
                    "pre-policy"
                },
                p.routes
            );
        }
        for e in &self.exits {
            let _ = writeln!(o, "  exit {}: {} prefixes", e.router, e.prefixes);
        }
        let _ = writeln!(
            o,
            "updates applied {} in {} batches (last: {:.1} ms from update to answer, {:.1} ms to build); {} pending",
            self.updates_applied,
            self.batches,
            self.last_batch_latency_ms,
            self.last_apply_ms,
            self.pending
        );
        let msgs: Vec<String> = self
            .messages
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(
            o,
            "messages: {}",
            if msgs.is_empty() {
                "none".into()
            } else {
                msgs.join(", ")
            }
        );
        let drops: Vec<String> = self
            .drops
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(
            o,
            "drops: {}",
            if drops.is_empty() {
                "none".into()
            } else {
                drops.join(", ")
            }
        );
        o
    }
}
