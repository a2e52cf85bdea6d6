//! `pathwise bench rsvp-integrity`: what RFC 2747 integrity costs in reservation setup time on
//! the five-node namespace chain (root needed) — seed 004 Figs. 2–6 measure the same ratio for
//! 1 to 10,000 sessions.
//!
//! For each run, and within it for integrity off and each algorithm in turn (so the
//! configurations interleave and share the machine's load), a fresh chain is built with
//! `require` on every interface (admission only, no `tc`, R = 30 s), and one session set up
//! unmeasured, so the neighbours' handshakes are done (its time is reported apart). Then for
//! each batch size
//! N: H1 registers N senders, H2 reserves for all N as soon as their Paths have arrived, and
//! the batch's setup time runs from the first registration until H1 holds all N reservations
//! — read from the daemons' counters, polled every 200 µs (plus 0.2 µs per session in the
//! batch, so polling stays a small part of the daemons' work). Batches use fresh ports and stay in
//! place, so a chain holds the sum of its batches. Medians over the runs, and their ratio to
//! integrity off.
//!
//! With `--lsps` the batches are RSVP-TE LSPs (seed 004 measures LSP setup): H1 opens N LSPs to
//! H2 (routed, 500 bit/s each, route recording on), the egress answers on its own, and a batch
//! is set up when H1 holds a reservation for each.

use super::chain::{Stats, clients, poll, request, session, stats};
use crate::mgmt::Client;
use crate::rsvp::chain::{self as rsvp_chain, SENDER};
use pathwise_auth::Algorithm;
use serde::Serialize;
use serde_json::json;
use std::time::{Duration, Instant};

/// One configuration at one batch size.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Sessions set up together.
    pub sessions: usize,
    /// `off` or the algorithm's name.
    pub integrity: String,
    /// Batch setup time, milliseconds, over the runs.
    pub setup_ms: Stats,
    /// Every run's time, milliseconds.
    pub runs_ms: Vec<f64>,
    /// Median setup time / the median with integrity off.
    pub ratio: f64,
}

/// Result of `pathwise bench rsvp-integrity`.
#[derive(Debug, Clone, Serialize)]
pub struct IntegrityReport {
    /// Whether the batches were RSVP-TE LSPs.
    pub lsps: bool,
    /// Runs per cell.
    pub runs: usize,
    /// Every (batch size, configuration).
    pub cells: Vec<Cell>,
    /// The first session on a fresh chain, per configuration (median ms): with integrity it
    /// includes every neighbour's challenge/response handshake.
    pub handshake_ms: Vec<(String, f64)>,
}

fn counter(c: &mut Client, name: &str) -> anyhow::Result<u64> {
    Ok(request(c, "rsvp.show.counters", json!({}))?[name]
        .as_u64()
        .unwrap_or(0))
}

/// Set up `n` sessions on ports from `first`; the time from the first registration until H1
/// holds every reservation (plus the `base` it held before).
fn batch(h1: &mut Client, h2: &mut Client, first: u16, n: usize) -> anyhow::Result<Duration> {
    let (paths0, resv0) = (counter(h2, "path_states")?, counter(h1, "reservations")?);
    // A small rate each, so 10,000 fit in R2's 8 Mbit/s of reservable bandwidth.
    let traffic = json!({ "rate_bps": 500 });
    let t0 = Instant::now();
    for i in 0..n {
        request(
            h1,
            "rsvp.sender.add",
            json!({ "session": session(first + i as u16), "sender": { "src": SENDER }, "traffic": traffic }),
        )?;
    }
    let limit = Duration::from_secs(30 + n as u64 / 50);
    // Polling costs the daemons CPU (the counters walk their state): back off with the batch.
    let every = Duration::from_micros(200 + n as u64 / 5);
    poll(limit, every, "the Paths at H2", || {
        Ok(counter(h2, "path_states")? >= paths0 + n as u64)
    })?;
    for i in 0..n {
        request(
            h2,
            "rsvp.reserve",
            json!({ "session": session(first + i as u16), "style": "ff", "traffic": traffic, "senders": [{ "src": SENDER }] }),
        )?;
    }
    poll(limit, every, "the reservations at H1", || {
        Ok(counter(h1, "reservations")? >= resv0 + n as u64)
    })?;
    Ok(t0.elapsed())
}

/// Open `n` LSPs named from `first`; the time from the first request until H1 holds a
/// reservation for each.
fn lsp_batch(h1: &mut Client, first: u16, n: usize) -> anyhow::Result<Duration> {
    let resv0 = counter(h1, "reservations")?;
    let t0 = Instant::now();
    for i in 0..n {
        request(
            h1,
            "rsvp.lsp.add",
            json!({ "name": format!("b{}", usize::from(first) + i), "to": rsvp_chain::RECEIVER, "bandwidth_bps": 500 }),
        )?;
    }
    let limit = Duration::from_secs(30 + n as u64 / 50);
    let every = Duration::from_micros(200 + n as u64 / 5);
    poll(limit, every, "the LSPs at H1", || {
        Ok(counter(h1, "reservations")? >= resv0 + n as u64)
    })?;
    Ok(t0.elapsed())
}

/// Run the benchmark over batch sizes `sizes` for integrity off and each of `algorithms`;
/// with `lsps`, the batches are RSVP-TE LSPs.
pub fn run(
    sizes: &[usize],
    algorithms: &[Algorithm],
    runs: usize,
    lsps: bool,
) -> anyhow::Result<IntegrityReport> {
    if let Some(why) = crate::netns::unavailable(&[]) {
        anyhow::bail!("rsvp-integrity needs network namespaces: {why}");
    }
    let total: usize = sizes.iter().sum();
    anyhow::ensure!(total < 40_000, "at most 40,000 sessions per chain (ports)");
    let bin = std::env::current_exe()?;
    let configs: Vec<Option<Algorithm>> = std::iter::once(None)
        .chain(algorithms.iter().copied().map(Some))
        .collect();
    // times[config][size] = runs
    let mut times = vec![vec![Vec::new(); sizes.len()]; configs.len()];
    let mut first = vec![Vec::new(); configs.len()];
    for _ in 0..runs.max(1) {
        for (ci, alg) in configs.iter().enumerate() {
            // One shard, as the recorded runs (docs/BENCHMARKS.md).
            let options = rsvp_chain::Options {
                integrity: *alg,
                threads: 1,
                ..rsvp_chain::Options::default()
            };
            let lab = rsvp_chain::build_with(&bin, &options)?;
            let (mut h1, mut h2) = clients(&lab)?;
            // One session first, unmeasured: with integrity, each fresh neighbour's first
            // message waits for the RFC 2747 §4.3 handshake, a one-time cost per neighbour
            // (reported as `handshake_ms`), not a per-session one.
            let batch = |h1: &mut Client, h2: &mut Client, first: u16, n: usize| {
                if lsps {
                    lsp_batch(h1, first, n)
                } else {
                    batch(h1, h2, first, n)
                }
            };
            let warm = batch(&mut h1, &mut h2, 19_999, 1)?;
            first[ci].push(warm.as_secs_f64() * 1e3);
            let mut port = 20_000u16;
            for (si, &n) in sizes.iter().enumerate() {
                let d = batch(&mut h1, &mut h2, port, n).map_err(|e| {
                    let logs: Vec<String> = rsvp_chain::NODES
                        .iter()
                        .map(|node| format!("--- {node}:\n{}", lab.log(node)))
                        .collect();
                    anyhow::anyhow!("batch of {n}: {e}\n{}", logs.join("\n"))
                })?;
                times[ci][si].push(d.as_secs_f64() * 1e3);
                port += n as u16;
            }
        }
    }
    let mut cells = Vec::new();
    for (si, &n) in sizes.iter().enumerate() {
        let base = stats(times[0][si].clone()).median;
        for (ci, alg) in configs.iter().enumerate() {
            let s = stats(times[ci][si].clone());
            cells.push(Cell {
                sessions: n,
                integrity: alg.map_or("off".into(), |a| a.name().into()),
                ratio: s.median / base,
                setup_ms: s,
                runs_ms: times[ci][si].clone(),
            });
        }
    }
    let handshake_ms = configs
        .iter()
        .zip(first)
        .map(|(alg, v)| {
            (
                alg.map_or("off".into(), |a| a.name().into()),
                stats(v).median,
            )
        })
        .collect();
    Ok(IntegrityReport {
        lsps,
        runs: runs.max(1),
        cells,
        handshake_ms,
    })
}

/// The report as a table.
pub fn render(r: &IntegrityReport) -> String {
    let mut out = format!(
        "RSVP{} setup time with and without integrity (require on every link), netns chain \
         H1–R1–R2–R3–H2, median of {} runs:\n",
        if r.lsps { "-TE LSP" } else { "" },
        r.runs
    );
    out += &format!(
        "{:>9}  {:<15} {:>12} {:>8}   runs (ms)\n",
        if r.lsps { "LSPs" } else { "sessions" },
        "integrity",
        "median ms",
        "ratio"
    );
    for (config, ms) in &r.handshake_ms {
        out += &format!("first session on a fresh chain, integrity {config}: {ms:.2} ms\n");
    }
    for c in &r.cells {
        let runs: Vec<String> = c.runs_ms.iter().map(|x| format!("{x:.1}")).collect();
        out += &format!(
            "{:>9}  {:<15} {:>12.2} {:>8.3}   {}\n",
            c.sessions,
            c.integrity,
            c.setup_ms.median,
            c.ratio,
            runs.join(" ")
        );
    }
    out
}
