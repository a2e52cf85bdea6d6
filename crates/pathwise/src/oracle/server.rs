//! The Proxidor server's datapath: N workers, each with its own UDP socket bound to the same
//! address and port with `SO_REUSEPORT`, so that the kernel spreads queries over them by flow
//! hash and no two workers ever contend for one socket (the seed's workers shared one socket and
//! "only one thread can read a packet from the socket at a time", §6.2).
//!
//! A worker takes up to `batch` datagrams per `recvmmsg`, loads the current snapshot once for
//! the batch ([`SharedSnapshot::load`]: a lock-free read that never waits for a writer), calls
//! [`answer_with`] per datagram into preallocated reply buffers, and sends the replies with one
//! `sendmmsg`. Nothing is allocated per datagram. Every datagram is counted: answered, rejected
//! by Rcode and reason, or dropped by reason ([`super::counters`]).
//!
//! The same loop with [`Service::Echo`] sends each datagram back unchanged: the plain UDP echo
//! server the benchmarks measure the oracle against (same sockets, batches and threads).

use super::counters::{BatchCounts, Counters, ServerDrop, WorkerCounters};
use anyhow::Context as _;
use nix::sys::socket::{
    ControlMessage, MsgFlags, MultiHeaders, SockaddrStorage, recvmmsg, sendmmsg,
};
use pathwise_oracle::SharedSnapshot;
use pathwise_oracle::proxidor::{AnswerScratch, answer_with};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{IoSlice, IoSliceMut};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::Duration;

/// Most datagrams per `recvmmsg` / `sendmmsg`.
pub const MAX_BATCH: usize = 64;
/// Receive buffer per datagram. A query is at most 1,500 bytes (docs/proxidor.md); anything
/// the kernel has to truncate to this size is dropped and counted as `oversize`.
pub const RECV_BUF: usize = 2048;
/// How often an idle worker wakes up to notice that the server is stopping.
const IDLE_WAKE: Duration = Duration::from_millis(100);

/// What the workers answer with.
#[derive(Clone, Debug)]
pub enum Service {
    /// The oracle: [`answer_with`] against the current snapshot.
    Oracle(Arc<SharedSnapshot>),
    /// A plain UDP echo (the benchmarks' baseline).
    Echo,
}

/// Where and how the workers listen.
#[derive(Clone, Debug)]
pub struct UdpOptions {
    /// Address to bind (`0.0.0.0` for every IPv4 address, `::` for IPv6).
    pub address: IpAddr,
    /// UDP port; 0 lets the kernel pick one (tests, benchmarks).
    pub port: u16,
    /// Worker threads, each with its own socket.
    pub workers: usize,
    /// Datagrams per `recvmmsg` (1..=[`MAX_BATCH`]).
    pub batch: usize,
    /// `SO_RCVBUF` and `SO_SNDBUF` to ask for, bytes (the kernel caps them at
    /// `net.core.rmem_max` / `wmem_max`).
    pub socket_buffer: usize,
}

impl Default for UdpOptions {
    fn default() -> Self {
        UdpOptions {
            address: IpAddr::from([0, 0, 0, 0]),
            port: pathwise_oracle::proxidor::PORT,
            workers: 1,
            batch: 32,
            socket_buffer: 4 << 20,
        }
    }
}

/// Time a thread spent on a CPU and runnable but waiting for one, from Linux's
/// `/proc/…/schedstat` (nanoseconds). On a shared machine the CPU time per reply is the figure
/// that does not depend on how much of the machine the server got; the waiting time says how
/// much it did not get.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CpuTime {
    /// On a CPU.
    pub run_ns: u64,
    /// Runnable, waiting for a CPU.
    pub wait_ns: u64,
}

/// A thread's context switches, from `/proc/…/status`: voluntary ones are the times it went to
/// sleep (a worker waiting in `recvmmsg` for the next datagram), involuntary ones the times the
/// scheduler took the CPU away while it could run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Switches {
    /// Went to sleep.
    pub voluntary: u64,
    /// Preempted.
    pub involuntary: u64,
}

impl Switches {
    /// Read a `status` file (`/proc/<pid>/task/<tid>/status`).
    pub fn read(status: &std::path::Path) -> Option<Switches> {
        let text = std::fs::read_to_string(status).ok()?;
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        Some(Switches {
            voluntary: field("voluntary_ctxt_switches:")?,
            involuntary: field("nonvoluntary_ctxt_switches:")?,
        })
    }

    /// `self - earlier`.
    pub fn since(self, earlier: Switches) -> Switches {
        Switches {
            voluntary: self.voluntary.saturating_sub(earlier.voluntary),
            involuntary: self.involuntary.saturating_sub(earlier.involuntary),
        }
    }
}

impl CpuTime {
    /// Read a `schedstat` file (`/proc/thread-self/schedstat` for the calling thread).
    pub fn read(schedstat: &std::path::Path) -> Option<CpuTime> {
        let text = std::fs::read_to_string(schedstat).ok()?;
        let mut f = text.split_whitespace().map(|x| x.parse::<u64>().ok());
        Some(CpuTime {
            run_ns: f.next()??,
            wait_ns: f.next()??,
        })
    }

    /// The calling thread's.
    pub fn this_thread() -> Option<CpuTime> {
        Self::read(std::path::Path::new("/proc/thread-self/schedstat"))
    }

    /// `self - earlier`.
    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            run_ns: self.run_ns.saturating_sub(earlier.run_ns),
            wait_ns: self.wait_ns.saturating_sub(earlier.wait_ns),
        }
    }
}

/// Running workers; dropping the value stops and joins them.
#[derive(Debug)]
pub struct UdpServer {
    local: SocketAddr,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
    threads: Vec<JoinHandle<()>>,
    /// Each worker's `/proc/<pid>/task/<tid>`, when the kernel has a `schedstat` there.
    tasks: Vec<PathBuf>,
}

impl UdpServer {
    /// Bind one socket per worker and start the workers.
    pub fn start(opts: &UdpOptions, service: Service) -> anyhow::Result<UdpServer> {
        let workers = opts.workers.max(1);
        let batch = opts.batch.clamp(1, MAX_BATCH);
        let mut local = SocketAddr::new(opts.address, opts.port);
        if opts.port != 0 {
            probe_port(local)?;
        }
        let mut sockets = Vec::with_capacity(workers);
        for _ in 0..workers {
            let s = bind_reuseport(local, opts.socket_buffer)?;
            // With port 0 the first bind picks the port; the others join it.
            local = s.local_addr()?;
            sockets.push(s);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::new(workers));
        let mut threads = Vec::with_capacity(workers);
        let (task_tx, task_rx) = std::sync::mpsc::channel();
        // The echo workers are named apart so that a profile can tell them from the oracle's.
        let role = match service {
            Service::Oracle(_) => "oracle",
            Service::Echo => "echo",
        };
        for (i, socket) in sockets.into_iter().enumerate() {
            let (stop, counters, service) = (stop.clone(), counters.clone(), service.clone());
            let task_tx = task_tx.clone();
            let t = std::thread::Builder::new()
                .name(format!("{role}-worker-{i}"))
                .spawn(move || {
                    // "/proc/thread-self" links to "<pid>/task/<tid>".
                    if let Ok(task) = std::fs::read_link("/proc/thread-self") {
                        let _ = task_tx.send(Path::new("/proc").join(task));
                    }
                    drop(task_tx);
                    if let Some(c) = counters.worker(i) {
                        worker(&socket, &service, c, &stop, batch);
                    }
                })
                .context("spawning a worker thread")?;
            threads.push(t);
        }
        drop(task_tx);
        let tasks = task_rx
            .iter()
            .filter(|p: &PathBuf| p.join("schedstat").exists())
            .collect();
        Ok(UdpServer {
            local,
            stop,
            counters,
            threads,
            tasks,
        })
    }

    /// CPU time of all workers so far (zero where the kernel keeps no `schedstat`).
    pub fn cpu(&self) -> CpuTime {
        self.tasks
            .iter()
            .filter_map(|p| CpuTime::read(&p.join("schedstat")))
            .fold(CpuTime::default(), |a, b| CpuTime {
                run_ns: a.run_ns + b.run_ns,
                wait_ns: a.wait_ns + b.wait_ns,
            })
    }

    /// Context switches of all workers so far (zero where the kernel does not say).
    pub fn switches(&self) -> Switches {
        self.tasks
            .iter()
            .filter_map(|p| Switches::read(&p.join("status")))
            .fold(Switches::default(), |a, b| Switches {
                voluntary: a.voluntary + b.voluntary,
                involuntary: a.involuntary + b.involuntary,
            })
    }

    /// The bound address (with the port the kernel picked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The workers' counters.
    pub fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.threads.len()
    }
}

impl Drop for UdpServer {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Refuse a port another process already serves. Sockets with `SO_REUSEPORT` share a port
/// silently (the kernel would split queries between two servers), so check first with a socket
/// that does not set it: its bind fails if anything holds the port.
fn probe_port(addr: SocketAddr) -> anyhow::Result<()> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    s.bind(&SockAddr::from(addr)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            anyhow::anyhow!(
                "UDP {addr} is already in use (another oracle server?); stop it or pass --port"
            )
        } else if let Some(n) = crate::caps::port_need(addr.port(), "the Proxidor port")
            && e.kind() == std::io::ErrorKind::PermissionDenied
        {
            anyhow::anyhow!("binding UDP {addr}: {e}: {} needs {}", n.why, n.cap.name())
        } else {
            anyhow::anyhow!("binding UDP {addr}: {e}")
        }
    })
}

fn bind_reuseport(addr: SocketAddr, buffer: usize) -> anyhow::Result<UdpSocket> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .context("creating a UDP socket")?;
    s.set_reuse_port(true).context("setting SO_REUSEPORT")?;
    // Larger queues absorb bursts; the kernel caps the request at rmem_max / wmem_max.
    let _ = s.set_recv_buffer_size(buffer);
    let _ = s.set_send_buffer_size(buffer);
    s.bind(&SockAddr::from(addr))
        .with_context(|| format!("binding UDP {addr}"))?;
    let s: UdpSocket = s.into();
    s.set_read_timeout(Some(IDLE_WAKE))?;
    Ok(s)
}

/// The peer's IP address; IPv4-mapped IPv6 addresses (a dual-stack socket) as IPv4.
fn peer_ip(a: &SockaddrStorage) -> Option<IpAddr> {
    if let Some(v4) = a.as_sockaddr_in() {
        return Some(IpAddr::V4(v4.ip()));
    }
    a.as_sockaddr_in6().map(|v6| {
        let ip = v6.ip();
        ip.to_ipv4_mapped().map_or(IpAddr::V6(ip), IpAddr::V4)
    })
}

/// The UDP port a datagram came from.
fn peer_port(a: &SockaddrStorage) -> Option<u16> {
    a.as_sockaddr_in()
        .map(|v4| v4.port())
        .or_else(|| a.as_sockaddr_in6().map(|v6| v6.port()))
}

/// One worker: receive a batch, answer it against one snapshot, send the replies.
fn worker(
    socket: &UdpSocket,
    service: &Service,
    counters: &WorkerCounters,
    stop: &AtomicBool,
    batch: usize,
) {
    let fd = socket.as_raw_fd();
    let mut rx = vec![0u8; RECV_BUF * MAX_BATCH];
    let mut replies: Vec<Vec<u8>> = (0..MAX_BATCH).map(|_| Vec::with_capacity(1500)).collect();
    let mut rx_headers = MultiHeaders::<SockaddrStorage>::preallocate(MAX_BATCH, None);
    let mut tx_headers = MultiHeaders::<SockaddrStorage>::preallocate(MAX_BATCH, None);
    let mut peers: [Option<SockaddrStorage>; MAX_BATCH] = [None; MAX_BATCH];
    let mut lens = [0usize; MAX_BATCH];
    let mut truncated = [false; MAX_BATCH];
    let mut scratch = AnswerScratch::default();
    let mut dest: [Option<SockaddrStorage>; MAX_BATCH] = [None; MAX_BATCH];
    let mut counts = BatchCounts::default();
    while !stop.load(Relaxed) {
        let n = {
            let mut chunks = rx.chunks_mut(RECV_BUF);
            let mut iovs: [[IoSliceMut<'_>; 1]; MAX_BATCH] =
                std::array::from_fn(|_| [IoSliceMut::new(chunks.next().unwrap_or(&mut []))]);
            match recvmmsg(
                fd,
                &mut rx_headers,
                &mut iovs[..batch],
                MsgFlags::MSG_WAITFORONE,
                None,
            ) {
                Ok(results) => {
                    let mut n = 0;
                    for (i, r) in results.enumerate().take(MAX_BATCH) {
                        lens[i] = r.bytes;
                        peers[i] = r.address;
                        truncated[i] = r.flags.contains(MsgFlags::MSG_TRUNC);
                        n = i + 1;
                    }
                    n
                }
                Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => 0,
                Err(_) => {
                    counters.recv_error();
                    std::thread::sleep(Duration::from_millis(1));
                    0
                }
            }
        };
        if n == 0 {
            continue;
        }
        let mut m = 0;
        {
            // One snapshot per batch: an update swapped in meanwhile serves the next batch.
            let snap = match service {
                Service::Oracle(shared) => Some(shared.load()),
                Service::Echo => None,
            };
            let mut chunks = rx.chunks(RECV_BUF);
            for i in 0..n {
                let Some(chunk) = chunks.next() else { break };
                let query = chunk.get(..lens[i]).unwrap_or(chunk);
                counts.received(query.len());
                if truncated[i] {
                    counts.server_drop(ServerDrop::Oversize);
                    continue;
                }
                let Some(peer) = peers[i].as_ref().and_then(peer_ip) else {
                    counts.server_drop(ServerDrop::BadPeer);
                    continue;
                };
                if peers[i].as_ref().and_then(peer_port) == Some(0) {
                    counts.server_drop(ServerDrop::SourcePortZero);
                    continue;
                }
                let out = &mut replies[m];
                out.clear();
                match &snap {
                    Some(snap) => {
                        let o = answer_with(snap, peer, query, out, &mut scratch);
                        counts.outcome(&o);
                        if matches!(o, pathwise_oracle::Outcome::Dropped(_)) {
                            continue;
                        }
                    }
                    None => {
                        out.extend_from_slice(query);
                        counts.echoed();
                    }
                }
                dest[m] = peers[i];
                m += 1;
            }
        }
        send_replies(fd, &mut tx_headers, &replies[..m], &dest[..m], &mut counts);
        counters.flush(&mut counts);
    }
}

/// Send `replies[i]` to `dest[i]` with `sendmmsg`, retrying the rest after a partial send; a
/// reply the kernel refuses is counted and skipped.
fn send_replies(
    fd: std::os::fd::RawFd,
    headers: &mut MultiHeaders<SockaddrStorage>,
    replies: &[Vec<u8>],
    dest: &[Option<SockaddrStorage>],
    counts: &mut BatchCounts,
) {
    let mut start = 0;
    while start < replies.len() {
        let rest = &replies[start..];
        let mut it = rest.iter();
        let iovs: [[IoSlice<'_>; 1]; MAX_BATCH] =
            std::array::from_fn(|_| [IoSlice::new(it.next().map_or(&[][..], Vec::as_slice))]);
        let k = rest.len().min(MAX_BATCH);
        let cmsgs: [ControlMessage<'_>; 0] = [];
        match sendmmsg(
            fd,
            headers,
            &iovs[..k],
            &dest[start..start + k],
            cmsgs,
            MsgFlags::empty(),
        ) {
            Ok(r) => {
                let sent = r.count().min(k);
                for reply in &rest[..sent] {
                    counts.sent(reply.len());
                }
                start += sent.max(1);
                if sent == 0 {
                    counts.send_error();
                }
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => {
                // The first message failed; skip it and send the rest.
                counts.send_error();
                start += 1;
            }
        }
    }
}
