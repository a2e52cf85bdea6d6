//! The NSLP API in process vs over IPC (seed 000 §4.3.2: the thesis's plug-in API was 1.6×
//! cheaper than its unix-socket IPC).
//!
//! Node B (10.0.0.2) runs the Ping NSLP either as a plug-in (`inprocess`) or in another thread
//! over a unix socket pair through `ipc::IpcServer` / `ipc::IpcGist` (`ipc`), exactly as
//! `pathwise gist nslp-ping` runs it in another process. A ping session from A is set up first;
//! each iteration then hands B the same D-mode Data message (a ping request for that session)
//! and runs until B has sent the reply: one RecvMessage upcall and one SendMessage per message.
//! Over IPC that is a Recv frame out and a (pipelined, unanswered) Send frame in, and the
//! benchmark thread polls the server the way the daemon's loop does. The `_batch32` variants
//! hand B 32 such messages at once and run until all 32 replies are out: under load, upcalls
//! and SendMessages share wake-ups, reads and writes.
//!
//! `cargo bench -p pathwise-gist --bench ipc`. Besides criterion's wall time per message it
//! prints the CPU time per message of the whole process (both threads: on-CPU nanoseconds from
//! `/proc/self/task/*/schedstat` over 100,000 messages), the thesis's measure.

use criterion::{Criterion, criterion_group, criterion_main};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Transmit};
use pathwise_core::time::{Duration, Instant};
use pathwise_gist::ipc::{IpcGist, IpcServer};
use pathwise_gist::nslp::ping::{NSLPID, PingConfig, PingNslp};
use pathwise_gist::{Config, GistEngine};
use std::net::{IpAddr, Ipv4Addr};

const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

fn engine(addr: IpAddr, seed: u64) -> GistEngine {
    let cfg = Config {
        seed,
        ..Config::default()
    };
    GistEngine::on_one_link(cfg, addr)
}

fn deliver(e: &mut GistEngine, now: Instant, t: &Transmit) {
    e.handle_datagram(now, t.received_on(IfIndex(1), A));
}

/// B, with its Ping NSLP in process or over IPC.
struct NodeB {
    b: GistEngine,
    ipc: Option<IpcServer>,
    client: Option<std::thread::JoinHandle<()>>,
}

impl NodeB {
    fn new(over_ipc: bool) -> Self {
        let mut b = engine(B, 2);
        b.register(Box::new(PingNslp::new(PingConfig::default())));
        if !over_ipc {
            return NodeB {
                b,
                ipc: None,
                client: None,
            };
        }
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let client = std::thread::spawn(move || {
            let mut gist = IpcGist::register(theirs, NSLPID).unwrap();
            let mut ping = PingNslp::new(PingConfig::default());
            let _ = gist.serve(&mut ping);
        });
        let mut ipc = IpcServer::unbound();
        ipc.adopt(ours).unwrap();
        while ipc.registered().is_empty() {
            ipc.poll(&mut b, Instant::ZERO);
        }
        NodeB {
            b,
            ipc: Some(ipc),
            client: Some(client),
        }
    }

    /// Hand B `t` and run until it transmits; the transmit.
    fn input(&mut self, now: Instant, t: &Transmit) -> Transmit {
        self.input_batch(now, t, 1)
    }

    /// Hand B `t` `n` times and run until it has transmitted `n` times; the last transmit.
    fn input_batch(&mut self, now: Instant, t: &Transmit, n: usize) -> Transmit {
        for _ in 0..n {
            deliver(&mut self.b, now, t);
        }
        let mut left = n;
        loop {
            if let Some(ipc) = &mut self.ipc {
                ipc.flush();
                ipc.poll(&mut self.b, now);
            }
            while let Some(out) = self.b.poll_transmit() {
                left -= 1;
                if left == 0 {
                    while self.b.poll_event().is_some() {}
                    return out;
                }
            }
            let Some(ipc) = &self.ipc else {
                panic!("no answer in process");
            };
            // Sleep until the client writes, as the daemon's loop does.
            let mut fds: Vec<PollFd<'_>> = ipc
                .fds()
                .into_iter()
                .map(|(fd, _)| PollFd::new(fd, PollFlags::POLLIN))
                .collect();
            let _ = poll(&mut fds, PollTimeout::from(100u16));
        }
    }
}

impl Drop for NodeB {
    fn drop(&mut self) {
        self.ipc = None; // the client sees the end of the connection
        if let Some(c) = self.client.take() {
            let _ = c.join();
        }
    }
}

/// A ping session A → B set up, and the Data message of a further ping in it.
fn setup(node: &mut NodeB) -> Transmit {
    let mut a = engine(A, 1);
    a.register(Box::new(PingNslp::new(PingConfig::default())));
    let now = Instant::from_millis(1);
    let sid = a
        .with_nslp::<PingNslp, _>(now, |p, g| p.ping(g, now, A, B))
        .unwrap()
        .unwrap();
    // Query → Response (the first ping's reply rides it) → Confirm.
    let q = a.poll_transmit().unwrap();
    let r = node.input(now, &q);
    deliver(&mut a, now, &r);
    while let Some(t) = a.poll_transmit() {
        deliver(&mut node.b, now, &t);
        while node.b.poll_transmit().is_some() {}
    }
    a.with_nslp::<PingNslp, _>(now, |p, g| p.ping_session(g, now, sid, A, B))
        .unwrap()
        .unwrap();
    let data = a.poll_transmit().unwrap();
    // It must be a Data message B answers.
    let _ = node.input(now, &data);
    data
}

/// On-CPU nanoseconds of the whole process (every thread), from each thread's schedstat.
fn cpu_ns() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("nslp_api");
    for (name, over_ipc, batch) in [
        ("inprocess", false, 1),
        ("ipc", true, 1),
        ("inprocess_batch32", false, 32),
        ("ipc_batch32", true, 32),
    ] {
        let mut node = NodeB::new(over_ipc);
        let data = setup(&mut node);
        let mut now = Instant::from_millis(2);
        g.throughput(criterion::Throughput::Elements(batch as u64));
        g.bench_function(name, |bch| {
            bch.iter(|| {
                now += Duration::from_micros(1);
                node.input_batch(now, &data, batch)
            })
        });
        const N: u64 = 100_000;
        let (t0, c0) = (std::time::Instant::now(), cpu_ns());
        for _ in 0..N / batch as u64 {
            now += Duration::from_micros(1);
            node.input_batch(now, &data, batch);
        }
        let (wall, cpu) = (t0.elapsed().as_nanos() as u64 / N, (cpu_ns() - c0) / N);
        println!("{name}: {wall} ns wall, {cpu} ns CPU (both threads) per message");
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
