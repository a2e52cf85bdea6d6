//! Bytes of GIST routing state per session, measured with the counting allocator on the engine
//! alone (`pathwise bench gist-engine`).
//!
//! Two engines back to back, as in `crates/gist/benches/engine.rs`: A (querying node,
//! 10.0.0.1) and B (responding node, 10.0.0.2, hash cookies), NSLPID 42 served without a
//! plug-in. N sessions are set up through the full handshake (Query with 16 bytes of NSLP data,
//! Response, Confirm), every output drained. Then B is dropped and the live heap it gave back is
//! the responder's state; A is dropped likewise for the querier's. The baseline is taken before
//! the engines exist, so tables sized up front (`--presize`) count.
//!
//! Between the two, the steady state (issue #21 part 2): seven rounds 30 s apart, in each of
//! which both engines' timers run (one routing-state refresh falls in them: Query, Response,
//! at the default 180 s period) and the NSLP sends one 16-byte message per session, every
//! output delivered to the other engine until both are quiet. The heap allocations made and
//! the messages exchanged are counted over the rounds after the first (the first warms up).
//! The driver hands each payload back to its sender once delivered (`GistEngine::recycle`),
//! and the NSLP hands the data of each message delivered back to its engine
//! (`GistEngine::recycle_nslp_data`), as the daemon does.

use crate::bench::alloc;
use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Transmit};
use pathwise_core::time::Instant;
use pathwise_gist::nslp::{GistApi, SendMessage};
use pathwise_gist::wire::{Mri, PathCoupledMri};
use pathwise_gist::{Config, GistEngine, GistEvent};
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};

const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

/// What one invocation measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    /// Sessions set up.
    pub sessions: usize,
    /// Runs; medians are reported.
    pub runs: usize,
    /// Whether the engines were told the session count up front (`expected_sessions`).
    pub presized: bool,
    /// Querying node: live heap bytes per session (allocator), median.
    pub querier_bytes: f64,
    /// Responding node: live heap bytes per session (allocator), median.
    pub responder_bytes: f64,
    /// The engines' own estimates per session (`state_stats().bytes`), querier and responder.
    pub querier_estimate: f64,
    /// See `querier_estimate`.
    pub responder_estimate: f64,
    /// Wall-clock time per session of the whole handshake across both engines, ns (median).
    pub setup_ns: f64,
    /// Per run: (querier, responder) bytes per session.
    pub runs_bytes: Vec<(f64, f64)>,
    /// Steady state, both engines: GIST messages exchanged per session per round (median).
    pub steady_messages_per_session: f64,
    /// Steady state, both engines: heap allocations per GIST message exchanged (median),
    /// counting what the engines make, not the NSLP's own buffers handed in.
    pub steady_allocations_per_message: f64,
    /// Steady state, both engines: heap allocations over the counted rounds (median): what is
    /// left is the high-water marks (the timer wheel's scratch space, the spare buffers of the
    /// largest burst in flight), each reached once.
    pub steady_allocations: f64,
    /// Steady state: live heap change over the counted rounds, bytes per session (median).
    pub steady_heap_growth: f64,
}

fn engine(addr: IpAddr, seed: u64, expected: usize) -> GistEngine {
    let cfg = Config {
        seed,
        nslpids: vec![42],
        expected_sessions: expected,
        ..Config::default()
    };
    GistEngine::on_one_link(cfg, addr)
}

/// Session `i`'s flow: distinct destinations in 10.128/16, then distinct source ports.
fn mri(i: usize) -> Mri {
    let i = i as u32;
    let dst = IpAddr::V4(Ipv4Addr::from(0x0a80_0000 | (i & 0xffff)));
    let mut m = PathCoupledMri::flow(A, dst);
    m.source_port = Some((i >> 16) as u16 + 1);
    m.protocol = Some(17);
    Mri::PathCoupled(m)
}

/// Drain events and transmits; the first transmit, if any.
fn drain(e: &mut GistEngine) -> Option<Transmit> {
    while e.poll_event().is_some() {}
    let first = e.poll_transmit();
    while e.poll_transmit().is_some() {}
    first
}

/// What one run measured, per session.
struct Run {
    /// (querier, responder) allocator bytes.
    bytes: (f64, f64),
    /// (querier, responder) engine estimates.
    estimate: (f64, f64),
    /// ns per handshake.
    setup_ns: f64,
    /// Steady state: (messages per session per round, allocations per message, heap growth
    /// per session, allocations).
    steady: (f64, f64, f64, f64),
}

/// Datagrams on their way: `true` for A to B. One queue serves the whole steady state, so
/// that what the benchmark itself allocates is not counted as the engines'.
type Wire = std::collections::VecDeque<(bool, Transmit)>;

/// Take `e`'s events (handing NSLP data back) and put what it sends on `wire`, towards B when
/// `to_b`.
fn outputs(e: &mut GistEngine, to_b: bool, wire: &mut Wire) {
    while let Some(ev) = e.poll_event() {
        if let GistEvent::Recv(r) = ev {
            e.recycle_nslp_data(r.nslp_data);
        }
    }
    while let Some(t) = e.poll_transmit() {
        wire.push_back((to_b, t));
    }
}

/// Deliver what is on `wire` and everything it leads to, back and forth, until both engines
/// are quiet. How many datagrams went across.
fn exchange(a: &mut GistEngine, b: &mut GistEngine, now: Instant, wire: &mut Wire) -> usize {
    let mut n = 0;
    while let Some((to_b, t)) = wire.pop_front() {
        n += 1;
        let (to, sender, from) = if to_b {
            (&mut *b, &mut *a, A)
        } else {
            (&mut *a, &mut *b, B)
        };
        to.handle_datagram(now, t.received_on(IfIndex(1), from));
        sender.recycle(t.payload);
        outputs(to, !to_b, wire);
    }
    n
}

/// Both engines' timers up to `until`, each output delivered (see [`exchange`]).
fn run_timers(a: &mut GistEngine, b: &mut GistEngine, until: Instant, wire: &mut Wire) -> usize {
    let mut n = 0;
    loop {
        let due = [a.poll_timeout(), b.poll_timeout()]
            .into_iter()
            .flatten()
            .filter(|&t| t <= until)
            .min();
        let Some(due) = due else { return n };
        for (e, to_b) in [(&mut *a, true), (&mut *b, false)] {
            e.handle_timeout(due);
            outputs(e, to_b, wire);
        }
        n += exchange(a, b, due, wire);
    }
}

/// The steady state after setup (see the module doc): per round, both engines' timers, then
/// one NSLP message per session from A. (messages per session per round, allocations per
/// message, heap growth per session, allocations) over rounds 2..=7.
fn steady(
    a: &mut GistEngine,
    b: &mut GistEngine,
    sids: &[pathwise_gist::wire::SessionId],
) -> anyhow::Result<(f64, f64, f64, f64)> {
    const ROUNDS: u64 = 7;
    let (mut messages, mut allocations) = (0usize, 0usize);
    let mut heap_at_round_2 = 0;
    let mut wire = Wire::new();
    for round in 1..=ROUNDS {
        let now = Instant::from_secs(1 + 30 * round);
        // Before this round's messages are made: they are freed by the end of the round.
        if round == 2 {
            heap_at_round_2 = alloc::allocated();
        }
        // The NSLP's own messages, made before counting: their buffers are the caller's.
        let mut msgs: Vec<SendMessage> = sids
            .iter()
            .enumerate()
            .map(|(i, sid)| SendMessage::new(42, *sid, mri(i), vec![round as u8; 16]))
            .collect();
        let before = alloc::allocations();
        let mut n = run_timers(a, b, now, &mut wire);
        for m in msgs.drain(..) {
            a.send_message(now, m)
                .map_err(|e| anyhow::anyhow!("SendMessage in steady state: {e:?}"))?;
            outputs(a, true, &mut wire);
            n += exchange(a, b, now, &mut wire);
        }
        if round >= 2 {
            allocations += alloc::allocations() - before;
            messages += n;
        }
    }
    let growth = alloc::allocated() as f64 - heap_at_round_2 as f64;
    let (n, rounds) = (sids.len().max(1) as f64, (ROUNDS - 1) as f64);
    Ok((
        messages as f64 / n / rounds,
        allocations as f64 / messages.max(1) as f64,
        growth / n,
        allocations as f64,
    ))
}

fn one_run(sessions: usize, presize: bool) -> anyhow::Result<Run> {
    let expected = if presize { sessions } else { 0 };
    let before = alloc::allocated();
    let mut a = engine(A, 1, expected);
    let mut b = engine(B, 2, expected);
    let now = Instant::from_secs(1);
    let deliver = |e: &mut GistEngine, t: &Transmit, from| {
        e.handle_datagram(now, t.received_on(IfIndex(1), from));
    };
    let mut sids = Vec::with_capacity(sessions);
    let start = std::time::Instant::now();
    for i in 0..sessions {
        let sid = a.new_session_id();
        sids.push(sid);
        a.send_message(now, SendMessage::new(42, sid, mri(i), vec![0; 16]))
            .map_err(|e| anyhow::anyhow!("SendMessage: {e:?}"))?;
        let q = drain(&mut a).ok_or_else(|| anyhow::anyhow!("no Query"))?;
        deliver(&mut b, &q, A);
        let r = drain(&mut b).ok_or_else(|| anyhow::anyhow!("no Response"))?;
        deliver(&mut a, &r, B);
        let c = drain(&mut a).ok_or_else(|| anyhow::anyhow!("no Confirm"))?;
        deliver(&mut b, &c, A);
        drain(&mut b);
    }
    let setup_ns = start.elapsed().as_nanos() as f64 / sessions as f64;
    let (sa, sb) = (a.state_stats(), b.state_stats());
    anyhow::ensure!(
        sa.downstream_established == sessions && sb.upstream_established == sessions,
        "not every session established: querier {}, responder {} of {sessions}",
        sa.downstream_established,
        sb.upstream_established
    );
    let steady = steady(&mut a, &mut b, &sids)?;
    drop(sids);
    let (sa, sb) = (a.state_stats(), b.state_stats());
    anyhow::ensure!(
        sa.downstream_established == sessions && sb.upstream_established == sessions,
        "not every session kept in steady state: querier {}, responder {} of {sessions}",
        sa.downstream_established,
        sb.upstream_established
    );
    let n = sessions as f64;
    let live = alloc::allocated();
    drop(b);
    let after_b = alloc::allocated();
    drop(a);
    let responder = live.saturating_sub(after_b) as f64 / n;
    let querier = after_b.saturating_sub(before) as f64 / n;
    Ok(Run {
        bytes: (querier, responder),
        estimate: (sa.bytes as f64 / n, sb.bytes as f64 / n),
        setup_ns,
        steady,
    })
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Run the benchmark for one session count.
pub fn run(sessions: usize, runs: usize, presize: bool) -> anyhow::Result<Report> {
    anyhow::ensure!(sessions > 0, "--sessions: at least 1");
    anyhow::ensure!(
        sessions <= 1 << 32,
        "--sessions: at most 2^32 (destinations × source ports)"
    );
    let runs = runs.max(1);
    let (mut q, mut r, mut qe, mut re, mut t) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut sm, mut sa, mut sg, mut st) = (vec![], vec![], vec![], vec![]);
    let mut runs_bytes = Vec::new();
    for _ in 0..runs {
        let Run {
            bytes: (qb, rb),
            estimate: (qest, rest),
            setup_ns: ns,
            steady: (msgs, allocs, growth, total),
        } = one_run(sessions, presize)?;
        st.push(total);
        sm.push(msgs);
        sa.push(allocs);
        sg.push(growth);
        q.push(qb);
        r.push(rb);
        qe.push(qest);
        re.push(rest);
        t.push(ns);
        runs_bytes.push((qb, rb));
    }
    Ok(Report {
        sessions,
        runs,
        presized: presize,
        querier_bytes: median(&q),
        responder_bytes: median(&r),
        querier_estimate: median(&qe),
        responder_estimate: median(&re),
        setup_ns: median(&t),
        runs_bytes,
        steady_messages_per_session: median(&sm),
        steady_allocations_per_message: median(&sa),
        steady_allocations: median(&st),
        steady_heap_growth: median(&sg),
    })
}

/// The report as a table.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "GIST engine, {} sessions, {} runs{}",
        r.sessions,
        r.runs,
        if r.presized { ", presized tables" } else { "" }
    );
    let _ = writeln!(
        out,
        "{:<22} {:>18} {:>18}",
        "state per session", "allocator (bytes)", "estimate (bytes)"
    );
    let _ = writeln!(
        out,
        "{:<22} {:>18.0} {:>18.0}",
        "querying node", r.querier_bytes, r.querier_estimate
    );
    let _ = writeln!(
        out,
        "{:<22} {:>18.0} {:>18.0}",
        "responding node", r.responder_bytes, r.responder_estimate
    );
    let runs: Vec<String> = r
        .runs_bytes
        .iter()
        .map(|(q, s)| format!("{q:.0}/{s:.0}"))
        .collect();
    let _ = writeln!(out, "runs (querier/responder): {}", runs.join(" "));
    let _ = writeln!(
        out,
        "handshake, both engines: {:.0} ns per session",
        r.setup_ns
    );
    let _ = writeln!(
        out,
        "steady state, both engines: {:.2} messages per session per 30 s, {:.2} allocations per message ({:.0} in all), heap {:+.1} bytes per session",
        r.steady_messages_per_session,
        r.steady_allocations_per_message,
        r.steady_allocations,
        r.steady_heap_growth
    );
    out
}
