//! GIST engine cost per message at 100,000 sessions, and bytes of state per session.
//!
//! Two engines joined back to back: A (querying node, 10.0.0.1) and B (responding node,
//! 10.0.0.2, hash cookies), NSLPID 42 served without a plug-in (upcalls become events, drained
//! inside the timed section). 100,000 sessions are set up through the full handshake first.
//! Then, round robin over the sessions, each iteration prepares its input untimed and times one
//! engine input plus draining its outputs:
//!
//! - `query`: B handles a refresh Query (Routing-State-Check, hash cookie, Response);
//! - `response`: A handles the Response to a refresh it started (cookie check, peer, Confirm);
//! - `confirm`: B handles the Confirm (cookie verification, state refresh);
//! - `data`: B handles a D-mode Data message for an established session (delivery upcall);
//! - `send`: A's SendMessage for an established session (a D-mode Data out).
//!
//! `cargo bench -p pathwise-gist --bench engine`. It also prints the state held per session:
//! each engine's own estimate (`state_stats().bytes`: table and slab capacities, boxed halves,
//! queues, timer-wheel nodes; allocator bookkeeping excluded) and, as an upper bound for both
//! engines together, the growth of the process's resident set while the sessions were set up
//! (`/proc/self/statm`; it also counts the benchmark's own list of session IDs, 16 bytes each).

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration as StdDuration;

use criterion::{Criterion, criterion_group, criterion_main};
use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Transmit, Transport};
use pathwise_core::time::{Duration, Instant};
use pathwise_gist::nslp::{Direction, GistApi, SendMessage};
use pathwise_gist::wire::{Body, Data, GIST_PORT, Message, Mri, PathCoupledMri, SessionId};
use pathwise_gist::{Config, GistEngine};

const SESSIONS: usize = 100_000;
const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

fn engine(addr: IpAddr, seed: u64) -> GistEngine {
    let cfg = Config {
        seed,
        nslpids: vec![42],
        expected_sessions: SESSIONS,
        ..Config::default()
    };
    GistEngine::on_one_link(cfg, addr)
}

fn deliver(e: &mut GistEngine, now: Instant, t: &Transmit) {
    e.handle_datagram(now, t.received_on(IfIndex(1), A));
}

fn drain(e: &mut GistEngine) -> Option<Transmit> {
    while e.poll_event().is_some() {}
    let first = e.poll_transmit();
    while e.poll_transmit().is_some() {}
    first
}

struct Bed {
    a: GistEngine,
    b: GistEngine,
    sids: Vec<SessionId>,
    now: Instant,
    next: usize,
}

fn mri(i: usize) -> Mri {
    let i = i as u32;
    let dst = IpAddr::V4(Ipv4Addr::from(0x0a80_0000 | (i & 0xffff)));
    let mut m = PathCoupledMri::flow(A, dst);
    m.source_port = Some((i >> 16) as u16 + 1);
    m.protocol = Some(17);
    Mri::PathCoupled(m)
}

impl Bed {
    fn new() -> Self {
        let mut a = engine(A, 1);
        let mut b = engine(B, 2);
        let mut sids = Vec::with_capacity(SESSIONS);
        let now = Instant::from_secs(1);
        for i in 0..SESSIONS {
            let sid = a.new_session_id();
            sids.push(sid);
            a.send_message(now, SendMessage::new(42, sid, mri(i), vec![0; 16]))
                .unwrap();
            let q = drain(&mut a).unwrap();
            deliver(&mut b, now, &q);
            let r = drain(&mut b).unwrap();
            deliver(&mut a, now, &r);
            let c = drain(&mut a).unwrap();
            deliver(&mut b, now, &c);
            drain(&mut b);
        }
        Bed {
            a,
            b,
            sids,
            now,
            next: 0,
        }
    }

    fn pick(&mut self) -> usize {
        self.next = (self.next + 7919) % SESSIONS;
        self.now += Duration::from_micros(1);
        self.next
    }

    /// A refresh Query from A for session `i`.
    fn refresh_query(&mut self, i: usize) -> Transmit {
        let sid = self.sids[i];
        self.a
            .invalidate_routing_state(self.now, 42, sid, &mri(i), Direction::Downstream, true);
        drain(&mut self.a).expect("refresh Query")
    }
}

fn timed(f: impl FnOnce()) -> StdDuration {
    let t = std::time::Instant::now();
    f();
    t.elapsed()
}

/// Resident set size in bytes (Linux), if readable.
fn rss() -> Option<usize> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn bench(c: &mut Criterion) {
    let before = rss();
    let mut bed = Bed::new();
    if let (Some(a), Some(b)) = (before, rss()) {
        eprintln!(
            "resident set growth for {SESSIONS} sessions on both engines: {} bytes, {} B per session",
            b.saturating_sub(a),
            b.saturating_sub(a) / SESSIONS
        );
    }
    let (sa, sb) = (bed.a.state_stats(), bed.b.state_stats());
    eprintln!(
        "state per session at {SESSIONS} sessions: querying node {} B, responding node {} B ({} / {} bytes in all)",
        sa.bytes / SESSIONS,
        sb.bytes / SESSIONS,
        sa.bytes,
        sb.bytes
    );
    let mut g = c.benchmark_group("gist_engine_100k");
    g.sample_size(20)
        .measurement_time(std::time::Duration::from_secs(2))
        .warm_up_time(std::time::Duration::from_millis(300));
    g.bench_function("query", |bch| {
        bch.iter_custom(|iters| {
            let mut total = StdDuration::ZERO;
            for _ in 0..iters {
                let i = bed.pick();
                let q = bed.refresh_query(i);
                let now = bed.now;
                let b = &mut bed.b;
                total += timed(|| {
                    deliver(b, now, &q);
                    black_box(drain(b));
                });
                // Complete the handshake untimed, so every session stays established.
                let r = drain_after(&mut bed.b, &mut bed.a, now, &q);
                let _ = r;
            }
            total
        })
    });
    g.bench_function("response", |bch| {
        bch.iter_custom(|iters| {
            let mut total = StdDuration::ZERO;
            for _ in 0..iters {
                let i = bed.pick();
                let q = bed.refresh_query(i);
                let now = bed.now;
                deliver(&mut bed.b, now, &q);
                let r = drain(&mut bed.b).unwrap();
                let a = &mut bed.a;
                let mut confirm = None;
                total += timed(|| {
                    deliver(a, now, &r);
                    confirm = drain(a);
                });
                if let Some(c) = confirm {
                    deliver(&mut bed.b, now, &c);
                    drain(&mut bed.b);
                }
            }
            total
        })
    });
    g.bench_function("confirm", |bch| {
        bch.iter_custom(|iters| {
            let mut total = StdDuration::ZERO;
            for _ in 0..iters {
                let i = bed.pick();
                let q = bed.refresh_query(i);
                let now = bed.now;
                deliver(&mut bed.b, now, &q);
                let r = drain(&mut bed.b).unwrap();
                deliver(&mut bed.a, now, &r);
                let c = drain(&mut bed.a).unwrap();
                let b = &mut bed.b;
                total += timed(|| {
                    deliver(b, now, &c);
                    black_box(drain(b));
                });
            }
            total
        })
    });
    let data: Vec<Transmit> = (0..SESSIONS)
        .map(|i| {
            let m = Message {
                gist_hops: 32,
                nslpid: 42,
                c_flag: false,
                s_flag: true,
                r_flag: false,
                e_flag: false,
                body: Body::Data(Data {
                    mri: mri(i),
                    session_id: bed.sids[i],
                    nslp_data: vec![0; 16],
                    ..Data::default()
                }),
            };
            Transmit {
                src: Some(A),
                dst: B,
                ifindex: None,
                transport: Transport::Udp {
                    src_port: GIST_PORT,
                    dst_port: GIST_PORT,
                },
                router_alert: None,
                ttl: 64,
                payload: m.to_datagram(),
            }
        })
        .collect();
    g.bench_function("data", |bch| {
        bch.iter_custom(|iters| {
            let mut total = StdDuration::ZERO;
            for _ in 0..iters {
                let i = bed.pick();
                let now = bed.now;
                let b = &mut bed.b;
                let d = &data[i];
                total += timed(|| {
                    deliver(b, now, d);
                    black_box(drain(b));
                });
            }
            total
        })
    });
    g.bench_function("send", |bch| {
        bch.iter_custom(|iters| {
            let mut total = StdDuration::ZERO;
            for _ in 0..iters {
                let i = bed.pick();
                let now = bed.now;
                let msg = SendMessage::new(42, bed.sids[i], mri(i), vec![0; 16]);
                let a = &mut bed.a;
                total += timed(|| {
                    black_box(a.send_message(now, msg).unwrap());
                    black_box(drain(a));
                });
            }
            total
        })
    });
    g.finish();
    assert_eq!(
        bed.b.state_stats().upstream_established,
        SESSIONS,
        "every session still established"
    );
}

/// After B answered a Query (already drained), run the rest of the handshake so the session
/// stays established: re-deliver the Query for the Response, then the Confirm.
fn drain_after(b: &mut GistEngine, a: &mut GistEngine, now: Instant, q: &Transmit) -> Option<()> {
    deliver(b, now, q);
    let r = drain(b)?;
    deliver(a, now, &r);
    let c = drain(a)?;
    deliver(b, now, &c);
    drain(b);
    Some(())
}

criterion_group!(benches, bench);
criterion_main!(benches);
