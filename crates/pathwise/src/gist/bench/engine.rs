//! Bytes of GIST routing state per session, measured with the counting allocator on the engine
//! alone (`pathwise bench gist-engine`).
//!
//! Two engines back to back, as in `crates/gist/benches/engine.rs`: A (querying node,
//! 10.0.0.1) and B (responding node, 10.0.0.2, hash cookies), NSLPID 42 served without a
//! plug-in. N sessions are set up through the full handshake (Query with 16 bytes of NSLP data,
//! Response, Confirm), every output drained. Then B is dropped and the live heap it gave back is
//! the responder's state; A is dropped likewise for the querier's. The baseline is taken before
//! the engines exist, so tables sized up front (`--presize`) count.

use crate::bench::alloc;
use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Transmit};
use pathwise_core::time::Instant;
use pathwise_gist::nslp::{GistApi, SendMessage};
use pathwise_gist::wire::{Mri, PathCoupledMri};
use pathwise_gist::{Config, GistEngine};
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
    let start = std::time::Instant::now();
    for i in 0..sessions {
        let sid = a.new_session_id();
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
    let mut runs_bytes = Vec::new();
    for _ in 0..runs {
        let Run {
            bytes: (qb, rb),
            estimate: (qest, rest),
            setup_ns: ns,
        } = one_run(sessions, presize)?;
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
    out
}
