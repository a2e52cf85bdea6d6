//! The load clients of seed §4.9.1 (Fig. 17): `ping`, `multi` and `flood`.
//!
//! - **ping** sends one query, waits for its reply or a timeout, waits `delay`, and so on; it
//!   prints a line per query like the ping utility.
//! - **multi** runs that loop on N threads, each with its own socket; with synchronized start all
//!   threads begin together, with synchronized stop all end when the first reaches its count
//!   (so slow threads do not speed up at the end). The seed's regulated clients: the delay is
//!   applied after every reply or timeout.
//! - **flood** pushes queries from one thread as fast as the sockets take them, in `sendmmsg`
//!   batches spread over several client sockets (flows, so that `SO_REUSEPORT` spreads them
//!   over the server's workers), and counts the replies itself (the seed needed tcpdump for
//!   that): each query's send time is kept by identification, so replies still give RTTs. `--window N` bounds the
//!   queries in flight (a closed loop that keeps the server busy without overflowing its
//!   queue); without it the flood is unbounded.
//!
//! Every client reports queries and replies per second, loss, and RTT (min, average, standard
//! deviation, median, 99th percentile, max). Queries carry `size` candidate addresses — random
//! ones, or drawn from the prefixes of a configuration so that the oracle can place them all
//! (the seed's server "knew every IP address", §6.2) — and optionally an IPv4/IPv6 source
//! extension so that a client on loopback is ranked as if it sat in a source network.

use anyhow::Context as _;
use ipnet::IpNet;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{
    ControlMessage, MsgFlags, MultiHeaders, SockaddrStorage, recvmmsg, sendmmsg,
};
use pathwise_core::rand::Rng;
use pathwise_core::rng::{SeededRng, seeded};
use pathwise_oracle::OracleConfig;
use pathwise_oracle::proxidor::{self, HEADER_LEN, Header, MAX_IPV4, MAX_IPV6, Rcode};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::io::{ErrorKind, IoSlice, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Where candidate addresses come from.
#[derive(Clone, Debug, Default)]
pub struct CandidatePool {
    internal: Vec<IpNet>,
    external: Vec<IpNet>,
}

impl CandidatePool {
    /// Uniformly random IPv4 unicast addresses (1.0.0.0–223.255.255.255).
    pub fn random() -> Self {
        CandidatePool::default()
    }

    /// Addresses inside the networks of `cfg`: one in five from a source network (inside the
    /// AS), the rest from external networks, as the library benchmarks draw them.
    pub fn from_config(cfg: &OracleConfig) -> Self {
        let mut external: Vec<IpNet> = cfg.external_networks.iter().map(|n| n.prefix).collect();
        external.dedup();
        CandidatePool {
            internal: cfg.source_networks.iter().map(|n| n.prefix).collect(),
            external,
        }
    }

    /// Whether addresses are uniformly random.
    pub fn is_random(&self) -> bool {
        self.internal.is_empty() && self.external.is_empty()
    }

    /// One candidate.
    pub fn draw(&self, rng: &mut SeededRng) -> IpAddr {
        let pick = |nets: &[IpNet], rng: &mut SeededRng| {
            if nets.is_empty() {
                return None;
            }
            nets.get(rng.random_range(0..nets.len()))
                .map(|n| inside(n, rng))
        };
        let internal = !self.internal.is_empty()
            && (self.external.is_empty() || rng.random_range(0..5u32) == 0);
        let from = if internal {
            pick(&self.internal, rng)
        } else {
            pick(&self.external, rng)
        };
        from.unwrap_or_else(|| {
            IpAddr::V4(Ipv4Addr::from(rng.random_range(1u32 << 24..224u32 << 24)))
        })
    }
}

/// A random address inside `net`.
fn inside(net: &IpNet, rng: &mut SeededRng) -> IpAddr {
    match net {
        IpNet::V4(n) => {
            let host = if n.prefix_len() == 0 {
                rng.random::<u32>()
            } else {
                rng.random::<u32>() & (u32::MAX >> n.prefix_len())
            };
            IpAddr::V4(Ipv4Addr::from(u32::from(n.network()) | host))
        }
        IpNet::V6(n) => {
            let host = if n.prefix_len() == 0 {
                rng.random::<u128>()
            } else {
                rng.random::<u128>() & (u128::MAX >> n.prefix_len())
            };
            IpAddr::V6(Ipv6Addr::from(u128::from(n.network()) | host))
        }
    }
}

/// What the queries carry.
#[derive(Clone, Debug)]
pub struct QueryOptions {
    /// Candidate addresses per query.
    pub size: usize,
    /// Source extension: rank as if the client were at this address.
    pub source: Option<IpAddr>,
    /// Where candidates come from.
    pub pool: Arc<CandidatePool>,
    /// RNG seed (threads add their index).
    pub seed: u64,
}

impl QueryOptions {
    fn check(&self) -> anyhow::Result<()> {
        let limit = if self
            .pool
            .internal
            .iter()
            .chain(&self.pool.external)
            .any(|n| matches!(n, IpNet::V6(_)))
        {
            MAX_IPV6
        } else {
            MAX_IPV4
        };
        if self.size == 0 || self.size > limit {
            anyhow::bail!(
                "--size {}: a query carries 1 to {limit} addresses (one 1500-byte datagram; \
                 docs/proxidor.md)",
                self.size
            );
        }
        Ok(())
    }
}

/// A set of prepared queries; the identification is rewritten before each send, so sending
/// allocates nothing.
#[derive(Clone, Debug)]
pub struct Queries {
    payloads: Vec<Vec<u8>>,
    next: usize,
}

/// Distinct queries a client prepares (per thread of `multi`: this over the threads, up to 16).
/// Enough different candidates that the server's lookups do not all stay in its caches, as
/// with real clients (each query is a new random list): 1,024 queries × 100 IPs touch about
/// 100,000 prefixes.
pub const DISTINCT_QUERIES: usize = 1024;

/// Offset of the identification in the fixed header.
const ID_AT: usize = 4;

impl Queries {
    /// `n` distinct queries per `opts`.
    pub fn new(opts: &QueryOptions, n: usize, seed: u64) -> Self {
        let mut rng = seeded(seed);
        let payloads = (0..n.max(1))
            .map(|_| {
                let candidates: Vec<IpAddr> =
                    (0..opts.size).map(|_| opts.pool.draw(&mut rng)).collect();
                let mut m = proxidor::query(0, &candidates);
                match opts.source {
                    Some(IpAddr::V4(a)) => m.source_v4 = Some((a, 32)),
                    Some(IpAddr::V6(a)) => m.source_v6 = Some((a, 128)),
                    None => {}
                }
                let mut out = Vec::with_capacity(m.buffer_len());
                m.emit(&mut out);
                out
            })
            .collect();
        Queries { payloads, next: 0 }
    }

    /// The next query, carrying identification `id`.
    pub fn next(&mut self, id: u32) -> &[u8] {
        let i = self.next % self.payloads.len();
        self.next = self.next.wrapping_add(1);
        self.set_id(i, id);
        self.payloads.get(i).map_or(&[][..], Vec::as_slice)
    }

    fn set_id(&mut self, i: usize, id: u32) {
        if let Some(b) = self
            .payloads
            .get_mut(i)
            .and_then(|p| p.get_mut(ID_AT..ID_AT + 4))
        {
            b.copy_from_slice(&id.to_be_bytes());
        }
    }

    /// Bytes of one query.
    pub fn query_len(&self) -> usize {
        self.payloads.first().map_or(0, Vec::len)
    }
}

/// What a datagram from the server is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyInfo {
    /// QR: a Proxidor reply. An echo server returns the query itself, QR clear; the benchmark
    /// measures one, so both count as replies.
    pub response: bool,
    /// Identification.
    pub id: u32,
    /// Rcode.
    pub rcode: Rcode,
    /// TTL.
    pub ttl: u16,
}

/// Read a reply's fixed header; `None` if the datagram is shorter than one.
pub fn reply_info(buf: &[u8]) -> Option<ReplyInfo> {
    let h = Header::parse(&mut pathwise_core::wire::Reader::new(
        buf.get(..HEADER_LEN)?,
    ))
    .ok()?;
    Some(ReplyInfo {
        response: h.response,
        id: h.id,
        rcode: h.rcode,
        ttl: h.ttl,
    })
}

/// RTT statistics, milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RttStats {
    /// Samples.
    pub samples: usize,
    /// Minimum.
    pub min_ms: f64,
    /// Mean.
    pub avg_ms: f64,
    /// Standard deviation (population).
    pub stddev_ms: f64,
    /// Median.
    pub median_ms: f64,
    /// 99th percentile (nearest rank).
    pub p99_ms: f64,
    /// Maximum.
    pub max_ms: f64,
}

impl RttStats {
    /// Statistics of `ns` (sorted in place); `None` without samples.
    pub fn from_ns(ns: &mut [u64]) -> Option<RttStats> {
        if ns.is_empty() {
            return None;
        }
        ns.sort_unstable();
        let n = ns.len() as f64;
        let ms = |v: u64| v as f64 / 1e6;
        let avg = ns.iter().map(|&v| ms(v)).sum::<f64>() / n;
        let var = ns.iter().map(|&v| (ms(v) - avg).powi(2)).sum::<f64>() / n;
        let rank = |q: f64| {
            let i = ((q * n).ceil() as usize).clamp(1, ns.len()) - 1;
            ms(ns.get(i).copied().unwrap_or(0))
        };
        Some(RttStats {
            samples: ns.len(),
            min_ms: ms(ns.first().copied().unwrap_or(0)),
            avg_ms: avg,
            stddev_ms: var.sqrt(),
            median_ms: rank(0.5),
            p99_ms: rank(0.99),
            max_ms: ms(ns.last().copied().unwrap_or(0)),
        })
    }

    fn line(&self) -> String {
        format!(
            "{:.3}/{:.3}/{:.3}/{:.3}/{:.3}/{:.3}",
            self.min_ms, self.avg_ms, self.stddev_ms, self.median_ms, self.p99_ms, self.max_ms
        )
    }
}

/// One client thread's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadReport {
    /// Thread index.
    pub thread: usize,
    /// Queries sent.
    pub sent: u64,
    /// Replies received in time.
    pub replies: u64,
    /// Queries without a reply in time.
    pub lost: u64,
    /// Replies per second over the thread's run.
    pub replies_per_s: f64,
    /// RTTs of the replies.
    pub rtt: Option<RttStats>,
}

/// What a client run measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientReport {
    /// `ping`, `multi` or `flood`.
    pub mode: String,
    /// The server.
    pub server: String,
    /// Candidate addresses per query.
    pub ips_per_query: usize,
    /// Bytes per query.
    pub query_bytes: usize,
    /// Client threads.
    pub threads: usize,
    /// Seconds from the first query to the last reply (or the end of sending).
    pub elapsed_s: f64,
    /// Queries sent.
    pub sent: u64,
    /// Replies received in time (including error replies).
    pub replies: u64,
    /// Of the replies, those with an error Rcode.
    pub errors: u64,
    /// Replies that came after their query timed out (counted as lost).
    pub late: u64,
    /// Datagrams too short to be replies.
    pub bad: u64,
    /// Queries the kernel reported unreachable (ICMP port unreachable: no server).
    pub unreachable: u64,
    /// Queries without a reply in time.
    pub lost: u64,
    /// `lost / sent`, percent.
    pub loss_pct: f64,
    /// Queries sent per second.
    pub queries_per_s: f64,
    /// Replies per second.
    pub replies_per_s: f64,
    /// RTTs of the replies.
    pub rtt: Option<RttStats>,
    /// Per thread (multi).
    pub per_thread: Vec<ThreadReport>,
}

impl ClientReport {
    /// As text: ping-style statistics, plus a table per thread for `multi`.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "--- {} oracle {} statistics ({} thread(s), {} IPs per query, {} B) ---",
            self.server, self.mode, self.threads, self.ips_per_query, self.query_bytes
        );
        let _ = writeln!(
            s,
            "{} queries sent, {} replies ({} errors), {:.2}% loss ({} late, {} unreachable, {} bad), {:.2} s",
            self.sent,
            self.replies,
            self.errors,
            self.loss_pct,
            self.late,
            self.unreachable,
            self.bad,
            self.elapsed_s
        );
        let _ = writeln!(
            s,
            "{:.0} queries/s, {:.0} replies/s",
            self.queries_per_s, self.replies_per_s
        );
        match &self.rtt {
            Some(r) => {
                let _ = writeln!(
                    s,
                    "rtt min/avg/stddev/median/p99/max = {} ms ({} samples)",
                    r.line(),
                    r.samples
                );
            }
            None => {
                let _ = writeln!(s, "rtt: no replies");
            }
        }
        if self.per_thread.len() > 1 {
            let _ = writeln!(
                s,
                "{:>6} {:>10} {:>10} {:>8} {:>11}  rtt min/avg/stddev/median/p99/max ms",
                "thread", "sent", "replies", "lost", "replies/s"
            );
            for t in &self.per_thread {
                let _ = writeln!(
                    s,
                    "{:>6} {:>10} {:>10} {:>8} {:>11.0}  {}",
                    t.thread,
                    t.sent,
                    t.replies,
                    t.lost,
                    t.replies_per_s,
                    t.rtt
                        .as_ref()
                        .map_or_else(|| "-".to_owned(), RttStats::line)
                );
            }
        }
        s
    }
}

/// When a client stops (whichever comes first; neither means: until `stop` is set).
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    /// Queries to send (per thread for `multi`).
    pub count: Option<u64>,
    /// How long to send.
    pub duration: Option<Duration>,
}

/// A client socket connected to `server`.
fn connect(server: SocketAddr) -> anyhow::Result<UdpSocket> {
    let any: SocketAddr = match server {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let s = UdpSocket::bind(any).context("binding a client socket")?;
    s.connect(server)
        .with_context(|| format!("connecting to {server}"))?;
    let sock = socket2::SockRef::from(&s);
    let _ = sock.set_recv_buffer_size(4 << 20);
    let _ = sock.set_send_buffer_size(4 << 20);
    Ok(s)
}

/// One query of a closed-loop client, as `ping` prints it.
#[derive(Clone, Copy, Debug)]
pub struct PingEvent {
    /// Sequence number, from 1.
    pub seq: u64,
    /// Reply bytes (0 on timeout).
    pub bytes: usize,
    /// The reply's header, if one came.
    pub reply: Option<ReplyInfo>,
    /// RTT, if a reply came.
    pub rtt: Option<Duration>,
    /// The kernel reported the server unreachable.
    pub unreachable: bool,
}

/// Options of the closed-loop clients (`ping`, `multi`).
#[derive(Clone, Debug)]
pub struct ClosedLoopOptions {
    /// The server.
    pub server: SocketAddr,
    /// Client threads (1 for ping).
    pub threads: usize,
    /// When to stop.
    pub limits: Limits,
    /// Wait after each reply or timeout.
    pub delay: Duration,
    /// How long to wait for a reply.
    pub timeout: Duration,
    /// All threads start together.
    pub sync_start: bool,
    /// All threads stop when the first reaches its count.
    pub sync_stop: bool,
    /// The queries.
    pub query: QueryOptions,
}

#[derive(Debug, Default)]
struct ThreadResult {
    sent: u64,
    replies: u64,
    errors: u64,
    late: u64,
    bad: u64,
    unreachable: u64,
    rtts: Vec<u64>,
    elapsed: Duration,
}

/// `ping` (one thread, `on_event` per query) and `multi` (N threads).
pub fn closed_loop(
    opts: &ClosedLoopOptions,
    stop: &AtomicBool,
    on_event: &(dyn Fn(&PingEvent) + Sync),
) -> anyhow::Result<ClientReport> {
    opts.query.check()?;
    let threads = opts.threads.max(1);
    let barrier = opts.sync_start.then(|| Barrier::new(threads + 1));
    let all_stop = AtomicBool::new(false);
    let sockets: Vec<UdpSocket> = (0..threads)
        .map(|_| connect(opts.server))
        .collect::<anyhow::Result<_>>()?;
    let query_bytes = Queries::new(&opts.query, 1, opts.query.seed).query_len();
    let (results, elapsed) = std::thread::scope(|scope| {
        let handles: Vec<_> = sockets
            .into_iter()
            .enumerate()
            .map(|(i, sock)| {
                let (barrier, all_stop) = (barrier.as_ref(), &all_stop);
                scope.spawn(move || {
                    let mut queries = Queries::new(
                        &opts.query,
                        DISTINCT_QUERIES / threads.min(16),
                        opts.query.seed.wrapping_add(i as u64),
                    );
                    if let Some(b) = barrier {
                        b.wait();
                    }
                    closed_loop_thread(opts, i, &sock, &mut queries, stop, all_stop, on_event)
                })
            })
            .collect();
        // Synchronized start: nobody sends before every thread has its socket and queries.
        let t = Instant::now();
        if let Some(b) = &barrier {
            b.wait();
        }
        let t = if barrier.is_some() { Instant::now() } else { t };
        let results: Vec<anyhow::Result<ThreadResult>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a client thread panicked")))
            })
            .collect();
        (results, t.elapsed())
    });
    let results: Vec<ThreadResult> = results.into_iter().collect::<anyhow::Result<_>>()?;
    let mode = if opts.threads > 1 { "multi" } else { "ping" };
    Ok(summarize(
        mode,
        opts.server,
        &opts.query,
        query_bytes,
        threads,
        elapsed,
        results,
    ))
}

fn closed_loop_thread(
    opts: &ClosedLoopOptions,
    thread: usize,
    sock: &UdpSocket,
    queries: &mut Queries,
    stop: &AtomicBool,
    all_stop: &AtomicBool,
    on_event: &(dyn Fn(&PingEvent) + Sync),
) -> anyhow::Result<ThreadResult> {
    let mut r = ThreadResult::default();
    let mut buf = vec![0u8; 2048];
    let start = Instant::now();
    let mut seq: u32 = 0;
    loop {
        if stop.load(Relaxed) || (opts.sync_stop && all_stop.load(Relaxed)) {
            break;
        }
        if opts.limits.count.is_some_and(|c| r.sent >= c) {
            all_stop.store(true, Relaxed);
            break;
        }
        if opts.limits.duration.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
        seq = seq.wrapping_add(1);
        // Thread in the top byte: replies can never be taken for another thread's.
        let id = (thread as u32) << 24 | (seq & 0x00ff_ffff);
        let t0 = Instant::now();
        r.sent += 1;
        let mut event = PingEvent {
            seq: u64::from(seq),
            bytes: 0,
            reply: None,
            rtt: None,
            unreachable: false,
        };
        match sock.send(queries.next(id)) {
            Ok(_) => {
                let deadline = t0 + opts.timeout;
                loop {
                    let now = Instant::now();
                    if now >= deadline {
                        break;
                    }
                    sock.set_read_timeout(Some(deadline - now))?;
                    match sock.recv(&mut buf) {
                        Ok(n) => match reply_info(buf.get(..n).unwrap_or(&[])) {
                            Some(info) if info.id == id => {
                                let rtt = t0.elapsed();
                                r.replies += 1;
                                r.errors += u64::from(info.rcode != Rcode::NoError);
                                r.rtts.push(rtt.as_nanos() as u64);
                                event.bytes = n;
                                event.reply = Some(info);
                                event.rtt = Some(rtt);
                                break;
                            }
                            Some(_) => r.late += 1,
                            None => r.bad += 1,
                        },
                        Err(e)
                            if matches!(
                                e.kind(),
                                ErrorKind::WouldBlock
                                    | ErrorKind::TimedOut
                                    | ErrorKind::Interrupted
                            ) => {}
                        Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                            r.unreachable += 1;
                            event.unreachable = true;
                            break;
                        }
                        Err(e) => return Err(e).context("receiving a reply"),
                    }
                }
            }
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                r.unreachable += 1;
                event.unreachable = true;
            }
            Err(e) => return Err(e).context("sending a query"),
        }
        on_event(&event);
        if !opts.delay.is_zero() {
            sleep_unless(opts.delay, stop);
        }
    }
    r.elapsed = start.elapsed();
    Ok(r)
}

/// Sleep `d`, waking early when `stop` is set.
fn sleep_unless(d: Duration, stop: &AtomicBool) {
    let end = Instant::now() + d;
    loop {
        let now = Instant::now();
        if now >= end || stop.load(Relaxed) {
            return;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}

fn summarize(
    mode: &str,
    server: SocketAddr,
    query: &QueryOptions,
    query_bytes: usize,
    threads: usize,
    elapsed: Duration,
    mut results: Vec<ThreadResult>,
) -> ClientReport {
    let per_thread = results
        .iter_mut()
        .enumerate()
        .map(|(i, t)| ThreadReport {
            thread: i,
            sent: t.sent,
            replies: t.replies,
            lost: t.sent.saturating_sub(t.replies),
            replies_per_s: per_s(t.replies, t.elapsed),
            rtt: RttStats::from_ns(&mut t.rtts.clone()),
        })
        .collect();
    let sum = |f: fn(&ThreadResult) -> u64| results.iter().map(f).sum::<u64>();
    let (sent, replies) = (sum(|t| t.sent), sum(|t| t.replies));
    let mut all: Vec<u64> = results
        .iter()
        .flat_map(|t| t.rtts.iter().copied())
        .collect();
    let lost = sent.saturating_sub(replies);
    ClientReport {
        mode: mode.to_owned(),
        server: server.to_string(),
        ips_per_query: query.size,
        query_bytes,
        threads,
        elapsed_s: elapsed.as_secs_f64(),
        sent,
        replies,
        errors: sum(|t| t.errors),
        late: sum(|t| t.late),
        bad: sum(|t| t.bad),
        unreachable: sum(|t| t.unreachable),
        lost,
        loss_pct: if sent > 0 {
            100.0 * lost as f64 / sent as f64
        } else {
            0.0
        },
        queries_per_s: per_s(sent, elapsed),
        replies_per_s: per_s(replies, elapsed),
        rtt: RttStats::from_ns(&mut all),
        per_thread: if threads > 1 { per_thread } else { Vec::new() },
    }
}

fn per_s(n: u64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        n as f64 / d.as_secs_f64()
    }
}

/// Options of `flood`.
#[derive(Clone, Debug)]
pub struct FloodOptions {
    /// The server.
    pub server: SocketAddr,
    /// When to stop sending.
    pub limits: Limits,
    /// Most queries in flight (0: no limit, a pure flood).
    pub window: usize,
    /// After sending stops, how long to wait for the last replies; with a window, how long a
    /// full window may go without any reply before its queries are given up as lost.
    pub timeout: Duration,
    /// Queries per `sendmmsg`.
    pub batch: usize,
    /// Client sockets (flows) to spread the queries over.
    pub sockets: usize,
    /// The queries.
    pub query: QueryOptions,
}

/// Queries remembered for RTTs; a window is capped to this.
const RING: usize = 1 << 16;
/// Largest flood batch.
const FLOOD_BATCH: usize = 64;

#[derive(Clone, Copy)]
struct Slot {
    id: u32,
    sent: Option<Instant>,
}

/// Flood the server from one thread and count its replies. Queries go out round-robin over
/// `sockets` client sockets: `SO_REUSEPORT` picks a server worker by flow, so one socket would
/// load one worker only (the seed's 750 client threads were 750 flows).
pub fn flood(opts: &FloodOptions, stop: &AtomicBool) -> anyhow::Result<ClientReport> {
    opts.query.check()?;
    let socks: Vec<UdpSocket> = (0..opts.sockets.clamp(1, 256))
        .map(|_| connect(opts.server))
        .collect::<anyhow::Result<_>>()?;
    let batch = opts.batch.clamp(1, FLOOD_BATCH);
    let window = opts.window.min(RING);
    let mut queries = Queries::new(&opts.query, DISTINCT_QUERIES, opts.query.seed);
    let mut ring = vec![Slot { id: 0, sent: None }; RING];
    let mut tx_headers = MultiHeaders::<SockaddrStorage>::preallocate(FLOOD_BATCH, None);
    let mut rx_headers = MultiHeaders::<SockaddrStorage>::preallocate(FLOOD_BATCH, None);
    let mut rx = vec![0u8; 2048 * FLOOD_BATCH];
    let mut r = ThreadResult::default();
    let mut next_id: u32 = seeded(opts.query.seed).random();
    let mut inflight = 0usize;
    let mut turn = 0usize;
    let start = Instant::now();
    let mut last_progress = start;
    let mut last_event = start;
    let mut sending_done: Option<Instant> = None;
    let mut fds: Vec<PollFd<'_>> = socks
        .iter()
        .map(|s| PollFd::new(s.as_fd(), PollFlags::POLLIN))
        .collect();
    loop {
        let now = Instant::now();
        if sending_done.is_none()
            && (stop.load(Relaxed)
                || opts.limits.count.is_some_and(|c| r.sent >= c)
                || opts.limits.duration.is_some_and(|d| now - start >= d))
        {
            sending_done = Some(now);
            last_event = last_event.max(now);
        }
        let room = match (sending_done, window) {
            (Some(_), _) => 0,
            (None, 0) => batch,
            (None, w) => w.saturating_sub(inflight).min(batch),
        };
        let room = opts
            .limits
            .count
            .map_or(room, |c| room.min(c.saturating_sub(r.sent) as usize));
        if room > 0 {
            let fd = socks[turn % socks.len()].as_raw_fd();
            turn = turn.wrapping_add(1);
            let ids: [u32; FLOOD_BATCH] = std::array::from_fn(|k| next_id.wrapping_add(k as u32));
            // The next `room` prepared queries, in turn (more of them than a batch holds, so
            // the entries of a batch are distinct).
            let first = queries.next;
            let count = queries.payloads.len();
            let slot = |k: usize| (first + k) % count;
            for (k, &id) in ids.iter().enumerate().take(room) {
                queries.set_id(slot(k), id);
            }
            let iovs: [[IoSlice<'_>; 1]; FLOOD_BATCH] = std::array::from_fn(|k| {
                [IoSlice::new(
                    queries
                        .payloads
                        .get(slot(k))
                        .filter(|_| k < room)
                        .map_or(&[][..], Vec::as_slice),
                )]
            });
            let addrs: [Option<SockaddrStorage>; FLOOD_BATCH] = [None; FLOOD_BATCH];
            let cmsgs: [ControlMessage<'_>; 0] = [];
            let t = Instant::now();
            match sendmmsg(
                fd,
                &mut tx_headers,
                &iovs[..room],
                &addrs[..room],
                cmsgs,
                MsgFlags::empty(),
            ) {
                Ok(res) => {
                    let sent = res.count().min(room);
                    for &id in ids.iter().take(sent) {
                        if let Some(s) = ring.get_mut(id as usize % RING) {
                            *s = Slot { id, sent: Some(t) };
                        }
                    }
                    next_id = next_id.wrapping_add(sent as u32);
                    queries.next = slot(sent);
                    r.sent += sent as u64;
                    inflight += sent;
                }
                Err(nix::errno::Errno::ECONNREFUSED) => r.unreachable += 1,
                Err(
                    nix::errno::Errno::EINTR
                    | nix::errno::Errno::EAGAIN
                    | nix::errno::Errno::ENOBUFS,
                ) => {}
                Err(e) => return Err(e).context("sending queries"),
            }
        }
        // Nothing to send (window full, or done): wait for any socket to have a reply.
        let can_send = sending_done.is_none() && (window == 0 || inflight < window);
        if !can_send {
            match poll(&mut fds, PollTimeout::from(10u8)) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e).context("waiting for replies"),
            }
        }
        let mut got = 0;
        for sock in &socks {
            let (n, lens) = {
                let mut chunks = rx.chunks_mut(2048);
                let mut iovs: [[IoSliceMut<'_>; 1]; FLOOD_BATCH] =
                    std::array::from_fn(|_| [IoSliceMut::new(chunks.next().unwrap_or(&mut []))]);
                let mut lens = [0usize; FLOOD_BATCH];
                let n = match recvmmsg(
                    sock.as_raw_fd(),
                    &mut rx_headers,
                    &mut iovs[..],
                    MsgFlags::MSG_DONTWAIT,
                    None,
                ) {
                    Ok(res) => {
                        let mut n = 0;
                        for (i, m) in res.enumerate().take(FLOOD_BATCH) {
                            lens[i] = m.bytes;
                            n = i + 1;
                        }
                        n
                    }
                    Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => 0,
                    Err(nix::errno::Errno::ECONNREFUSED) => {
                        r.unreachable += 1;
                        0
                    }
                    Err(e) => return Err(e).context("receiving replies"),
                };
                (n, lens)
            };
            let now = Instant::now();
            for (i, chunk) in rx.chunks(2048).enumerate().take(n) {
                let Some(info) = reply_info(chunk.get(..lens[i]).unwrap_or(&[])) else {
                    r.bad += 1;
                    continue;
                };
                r.replies += 1;
                r.errors += u64::from(info.rcode != Rcode::NoError);
                if let Some(s) = ring
                    .get_mut(info.id as usize % RING)
                    .filter(|s| s.id == info.id)
                    && let Some(t) = s.sent.take()
                {
                    r.rtts.push((now - t).as_nanos() as u64);
                }
                inflight = inflight.saturating_sub(1);
            }
            got += n;
        }
        let now = Instant::now();
        if got > 0 {
            last_progress = now;
            last_event = last_event.max(now);
        }
        match sending_done {
            Some(done) => {
                if r.replies >= r.sent || now - done >= opts.timeout {
                    break;
                }
            }
            None => {
                // A full window that gets no reply for a whole timeout: give its queries up.
                if window > 0 && inflight >= window && now - last_progress >= opts.timeout {
                    inflight = 0;
                    last_progress = now;
                }
            }
        }
    }
    r.elapsed = last_event - start;
    Ok(summarize(
        "flood",
        opts.server,
        &opts.query,
        queries.query_len(),
        1,
        r.elapsed,
        vec![r],
    ))
}
