//! `pathwise bench rsvp-chain`: RSVP over the five-node namespace chain (root needed).
//!
//! Setup latency: for each new session the benchmark registers the sender at H1, waits until
//! H2 has the Path, asks H2 to reserve, and waits until the reservation has reached H1 — through
//! the daemons' management sockets, each wait one `rsvp.wait` request the daemon answers when
//! its state changes (nothing polls the daemons while the messages cross the chain). The Path
//! and the Resv each cross four hops. Meanwhile it captures RSVP at the three routers with
//! kernel timestamps ([`capture`]): how long each router held each session's first Path and
//! first Resv, the per-hop figures, which neither the management requests nor the hosts'
//! processing is in. Then, on a fresh chain, it installs `hold` reservations and
//! reads R2's daemon: resident memory, and CPU over one minute of steady refreshes (R = 30 s).

use super::capture::{self, Capture, NodeRecords, Transit};
use super::{KOM_BASIC, KOM_TUNED, KomRow};
use crate::bench::plot::{Axis, Figure, Series};
use crate::mgmt::Client;
use crate::rsvp::chain::{self as rsvp_chain, H1, H2, NODES, R1, R2, R3, RECEIVER, SENDER};
use crate::rsvp::config::TrafficControlKind;
use crate::rsvp::wait::{Until, WaitReq};
use pathwise_rsvp::wire::{MsgType, Session};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

/// Latency statistics, milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    /// Median.
    pub median: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
}

/// The `q` quantile of `sorted` (nearest rank), 0 when it is empty.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted
        .get(((sorted.len() as f64 - 1.0) * q).round() as usize)
        .copied()
        .unwrap_or(0.0)
}

pub(crate) fn stats(mut v: Vec<f64>) -> Stats {
    v.sort_by(f64::total_cmp);
    let at = |q| quantile(&v, q);
    Stats {
        median: at(0.5),
        p99: at(0.99),
        min: at(0.0),
        max: at(1.0),
    }
}

/// Result of `pathwise bench rsvp-chain`.
#[derive(Debug, Clone, Serialize)]
pub struct ChainReport {
    /// Traffic control used for the latency runs ("htb": classes over rtnetlink; "htb-tc":
    /// with the `tc` command).
    pub traffic_control: String,
    /// Sessions set up one after the other.
    pub sessions: usize,
    /// Sender registration at H1 until the reservation reached H1.
    pub end_to_end_ms: Stats,
    /// Path leg (H1 → H2, four hops).
    pub path_ms: Stats,
    /// Resv leg (H2 → H1, four hops).
    pub resv_ms: Stats,
    /// Median per-hop share of the end-to-end time (eight hops), the benchmark's polling
    /// included; `per_hop` has each router's own time.
    pub per_hop_ms: f64,
    /// End to end again with admission only (no `tc` commands): the signaling alone.
    pub end_to_end_signaling_only_ms: Stats,
    /// R2 holding reservations: one entry per count, each on a fresh chain.
    pub holding: Vec<Holding>,
    /// The latency runs of the other traffic controls asked for (`--traffic-control`).
    pub compared: Vec<Compared>,
    /// Per transit hop, from kernel packet timestamps at R1, R2 and R3: one entry per latency
    /// run, in the order run (`traffic_control`, then "memory", then `compared`).
    pub per_hop: Vec<PerHop>,
}

/// Quantiles over sessions, microseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Quantiles {
    /// Median.
    pub median: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
}

impl Quantiles {
    /// Of `durations`; `None` when there are none.
    pub fn of(durations: impl IntoIterator<Item = Duration>) -> Option<Quantiles> {
        let mut v: Vec<f64> = durations
            .into_iter()
            .map(|d| d.as_secs_f64() * 1e6)
            .collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Quantiles {
            median: quantile(&v, 0.5),
            p90: quantile(&v, 0.9),
            p99: quantile(&v, 0.99),
        })
    }
}

/// How long one router held the sessions' first Path and first Resv: from the kernel's
/// timestamp of the message arriving on one interface to that of the router's message leaving
/// on the other (AF_PACKET, SO_TIMESTAMPNS; [`capture`]).
#[derive(Debug, Clone, Serialize)]
pub struct HopTimes {
    /// "r1", "r2", "r3", or "all" (the three routers' sessions pooled).
    pub hop: String,
    /// Path: arrived from upstream until sent downstream, µs.
    pub path_us: Option<Quantiles>,
    /// Resv (the HTB class installed on the way): arrived from downstream until sent
    /// upstream, µs.
    pub resv_us: Option<Quantiles>,
    /// Path plus Resv of the same session: what the hop adds to a setup, µs.
    pub setup_us: Option<Quantiles>,
    /// Sessions timed on both legs.
    pub sessions: usize,
    /// Sessions whose first Path or first Resv arrived and never left (not counted as zero).
    pub missing: usize,
}

/// The per-hop times of one latency run.
#[derive(Debug, Clone, Serialize)]
pub struct PerHop {
    /// The run's traffic control ("htb", "htb-tc", "memory").
    pub traffic_control: String,
    /// R1, R2, R3, then all three pooled.
    pub hops: Vec<HopTimes>,
    /// Captured RSVP frames that were not a message with a SESSION (Hello, malformed), all
    /// routers.
    pub unparsed: usize,
    /// Frames that came without a kernel timestamp (dropped), all routers.
    pub untimed: usize,
    /// Frames the capture sockets' buffers had no room for (dropped by the kernel), all
    /// routers.
    pub capture_drops: u64,
}

impl PerHop {
    /// From the routers' records of a run with traffic control `traffic_control`.
    pub fn of(traffic_control: &str, routers: &[NodeRecords]) -> PerHop {
        let mut all = Durations::default();
        let mut hops = Vec::new();
        for r in routers {
            let d = Durations::of(&r.records);
            all.path.extend_from_slice(&d.path);
            all.resv.extend_from_slice(&d.resv);
            all.setup.extend_from_slice(&d.setup);
            all.missing += d.missing;
            hops.push(d.times(&r.node));
        }
        hops.push(all.times("all"));
        PerHop {
            traffic_control: traffic_control.into(),
            hops,
            unparsed: routers.iter().map(|r| r.unparsed).sum(),
            untimed: routers.iter().map(|r| r.untimed).sum(),
            capture_drops: routers.iter().map(|r| r.dropped).sum(),
        }
    }
}

/// One router's (or several pooled) per-session durations, before the quantiles.
#[derive(Debug, Default)]
struct Durations {
    path: Vec<Duration>,
    resv: Vec<Duration>,
    setup: Vec<Duration>,
    missing: usize,
}

impl Durations {
    fn of(records: &[capture::Record]) -> Durations {
        let path = capture::transit_times(records, MsgType::Path);
        let resv = capture::transit_times(records, MsgType::Resv);
        let forwarded =
            |t: &BTreeMap<_, Transit>| t.values().filter_map(|t| t.forwarded()).collect();
        let never_left = |t: &BTreeMap<Session, Transit>| {
            t.iter()
                .filter(|(_, t)| t.forwarded().is_none())
                .map(|(s, _)| *s)
                .collect::<BTreeSet<_>>()
        };
        Durations {
            path: forwarded(&path),
            resv: forwarded(&resv),
            setup: capture::setup_times(&path, &resv).into_values().collect(),
            missing: never_left(&path).union(&never_left(&resv)).count(),
        }
    }

    fn times(self, hop: &str) -> HopTimes {
        HopTimes {
            hop: hop.into(),
            sessions: self.setup.len(),
            path_us: Quantiles::of(self.path),
            resv_us: Quantiles::of(self.resv),
            setup_us: Quantiles::of(self.setup),
            missing: self.missing,
        }
    }
}

/// Setup latency with another traffic control, on a fresh chain.
#[derive(Debug, Clone, Serialize)]
pub struct Compared {
    /// "htb" or "htb-tc".
    pub traffic_control: String,
    /// Sender registration at H1 until the reservation reached H1.
    pub end_to_end_ms: Stats,
    /// Median per-hop share of the end-to-end time (eight hops).
    pub per_hop_ms: f64,
}

/// The `traffic_control` value of `kind` in node.toml.
fn kind_name(kind: TrafficControlKind) -> &'static str {
    match kind {
        TrafficControlKind::Htb => "htb",
        TrafficControlKind::HtbTc => "htb-tc",
        TrafficControlKind::Memory => "memory",
    }
}

/// R2's daemon holding a number of reservations.
#[derive(Debug, Clone, Serialize)]
pub struct Holding {
    /// Reservations held.
    pub held: usize,
    /// R2's daemon resident memory before, KiB.
    pub r2_rss_idle_kib: u64,
    /// R2's daemon resident memory with the reservations held, KiB.
    pub r2_rss_held_kib: u64,
    /// R2's daemon CPU while holding them (one minute of refreshes), percent of one core.
    pub r2_cpu_percent: f64,
    /// RSVP shards in each daemon (`[daemon] threads`).
    pub threads: usize,
    /// RSVP messages R2 received and sent per second in that minute.
    pub r2_messages_per_s: f64,
    /// R2's on-CPU time per message received or sent, microseconds (all its threads).
    pub r2_cpu_us_per_message: f64,
    /// R2's on-CPU time per thread (`/proc/PID/task/*/schedstat`), per message received or
    /// sent, microseconds: the daemon's loop (the dispatcher when sharded) and each shard.
    pub r2_threads_us_per_message: Vec<(String, f64)>,
}

pub(crate) fn request(c: &mut Client, verb: &str, args: Value) -> anyhow::Result<Value> {
    c.request(verb, args)
}

pub(crate) fn session(port: u16) -> Value {
    json!({ "dest": RECEIVER, "port": port, "protocol": 17 })
}

fn sessions_with_path(h2: &mut Client) -> anyhow::Result<Vec<String>> {
    let v = request(h2, "rsvp.show.sessions", json!({}))?;
    Ok(v.as_array()
        .map(|a| {
            a.iter()
                .filter(|s| s["paths"].as_array().is_some_and(|p| !p.is_empty()))
                .filter_map(|s| s["session"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

/// Until the daemon behind `client` has `until` state for the session of `port`: it answers
/// when its state changes (`rsvp.wait`), so nothing polls the daemons while the messages cross
/// the chain and competes with them for the CPU.
fn wait(client: &mut Client, port: u16, until: Until) -> anyhow::Result<()> {
    let req = WaitReq {
        session: serde_json::from_value(session(port))?,
        until,
        timeout_ms: Some(5_000),
    };
    request(client, "rsvp.wait", req.args()).map(drop)
}

pub(crate) fn poll(
    limit: Duration,
    every: Duration,
    what: &str,
    mut f: impl FnMut() -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while !f()? {
        if Instant::now() > deadline {
            anyhow::bail!("timed out waiting for {what}");
        }
        std::thread::sleep(every);
    }
    Ok(())
}

pub(crate) fn clients(lab: &crate::netns::Lab) -> anyhow::Result<(Client, Client)> {
    let c = |i| Client::connect(&rsvp_chain::socket(lab, i), "pathwise daemon");
    Ok((c(H1)?, c(H2)?))
}

/// Set up one session (`port`, `rate_bps`) from H1 to H2 and wait for it: the sender
/// registered at H1 until the reservation reached H1 (end to end), the Path leg (until H2
/// holds the Path) and the Resv leg, milliseconds.
pub(crate) fn setup_one(
    h1: &mut Client,
    h2: &mut Client,
    port: u16,
    rate_bps: u64,
) -> anyhow::Result<(f64, f64, f64)> {
    let traffic = json!({ "rate_bps": rate_bps });
    let t0 = Instant::now();
    request(
        h1,
        "rsvp.sender.add",
        json!({ "session": session(port), "sender": { "src": SENDER }, "traffic": traffic }),
    )?;
    wait(h2, port, Until::Path)?;
    let t1 = Instant::now();
    request(
        h2,
        "rsvp.reserve",
        json!({ "session": session(port), "style": "ff", "traffic": traffic, "senders": [{ "src": SENDER }] }),
    )?;
    wait(h1, port, Until::Resv)?;
    let t2 = Instant::now();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    Ok((ms(t2 - t0), ms(t1 - t0), ms(t2 - t1)))
}

/// Sessions set up one after another, with what the routers' packet captures saw meanwhile.
#[derive(Debug)]
pub struct TimedSetups {
    /// Each session's sender registration at H1 until its reservation reached H1, ms.
    pub end_to_end_ms: Vec<f64>,
    /// Each session's Path leg (until H2 held the Path), ms.
    pub path_ms: Vec<f64>,
    /// Each session's Resv leg, ms.
    pub resv_ms: Vec<f64>,
    /// R1's, R2's and R3's RSVP messages with their kernel timestamps.
    pub routers: Vec<NodeRecords>,
}

/// Set up `n` sessions H1 → H2 one after another on the chain `lab` (ports 10,000 up, 32
/// kbit/s each: 200 fit in R2's 8 Mbit/s of reservable bandwidth), capturing RSVP at the
/// routers all the while.
pub fn timed_setups(lab: &crate::netns::Lab, n: usize) -> anyhow::Result<TimedSetups> {
    let (mut h1, mut h2) = clients(lab)?;
    let routers = [R1, R2, R3].map(|i| (NODES[i], lab.ns[i].as_str()));
    // Every router's upstream (w0) and downstream (e0) interface (crate::netns::chain).
    let capture = Capture::start(&routers, &["w0", "e0"])?;
    let mut t = TimedSetups {
        end_to_end_ms: Vec::new(),
        path_ms: Vec::new(),
        resv_ms: Vec::new(),
        routers: Vec::new(),
    };
    for i in 0..n {
        let (e, p, r) = setup_one(&mut h1, &mut h2, 10_000 + i as u16, 32_000)?;
        t.end_to_end_ms.push(e);
        t.path_ms.push(p);
        t.resv_ms.push(r);
    }
    t.routers = capture.stop()?;
    Ok(t)
}

fn latency(bin: &Path, tc: &str, n: usize, threads: usize) -> anyhow::Result<TimedSetups> {
    let lab = build(bin, tc, threads)?;
    timed_setups(&lab, n)
}

/// RSS (KiB) and CPU ticks (user + system) of a process.
pub(crate) fn proc_usage(pid: u32) -> anyhow::Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    // utime and stime are fields 14 and 15 overall: 12th and 13th after the state field.
    let ticks = f.get(10).copied().unwrap_or(0) + f.get(11).copied().unwrap_or(0);
    Ok((rss, ticks))
}

/// Install `n` reservations H1 → H2 (500 bit/s each, ports `first_port` up, senders first,
/// then the reservations) and wait until R2 holds them all.
pub(crate) fn install(lab: &crate::netns::Lab, n: usize, first_port: u16) -> anyhow::Result<()> {
    let (mut h1, mut h2) = clients(lab)?;
    // 10 Mbit/s R2 → R3, 80% reservable: a small rate each, so every one is admitted.
    let traffic = json!({ "rate_bps": 500 });
    let port = |i: usize| first_port + i as u16;
    for i in 0..n {
        request(
            &mut h1,
            "rsvp.sender.add",
            json!({ "session": session(port(i)), "sender": { "src": SENDER }, "traffic": traffic }),
        )?;
    }
    poll(
        Duration::from_secs(120),
        Duration::from_millis(200),
        "every Path at H2",
        || Ok(sessions_with_path(&mut h2)?.len() >= n),
    )?;
    for i in 0..n {
        request(
            &mut h2,
            "rsvp.reserve",
            json!({ "session": session(port(i)), "style": "ff", "traffic": traffic, "senders": [{ "src": SENDER }] }),
        )?;
    }
    let mut r2 = Client::connect(&rsvp_chain::socket(lab, R2), "pathwise daemon")?;
    poll(
        Duration::from_secs(120),
        Duration::from_millis(200),
        "every reservation at R2",
        || {
            Ok(
                request(&mut r2, "rsvp.show.counters", json!({}))?["reservations"].as_u64()
                    >= Some(n as u64),
            )
        },
    )
}

/// A process's CPU over a window of wall time.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuWindow {
    /// Resident memory at the end, KiB.
    pub rss_kib: u64,
    /// User + system CPU time spent in the window, seconds (10 ms ticks).
    pub cpu_s: f64,
    /// The window's wall time, seconds.
    pub wall_s: f64,
}

/// Read `pid`'s CPU time (/proc/PID/stat utime + stime) across `window` of wall time.
pub(crate) fn cpu_over(pid: u32, window: Duration) -> anyhow::Result<CpuWindow> {
    let (_, t0) = proc_usage(pid)?;
    let start = Instant::now();
    std::thread::sleep(window);
    let (rss_kib, t1) = proc_usage(pid)?;
    let hz = 100.0; // USER_HZ on Linux
    Ok(CpuWindow {
        rss_kib,
        cpu_s: t1.saturating_sub(t0) as f64 / hz,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

fn hold(bin: &Path, n: usize, threads: usize) -> anyhow::Result<Holding> {
    let lab = build(bin, "memory", threads)?;
    let pid = lab
        .pid("r2")
        .ok_or_else(|| anyhow::anyhow!("no R2 daemon"))?;
    let (idle, _) = proc_usage(pid)?;
    install(&lab, n, 20_000)?;
    // A connection of its own each time: the daemon closes one idle for 30 s.
    let messages = || -> anyhow::Result<u64> {
        let mut r2 = Client::connect(&rsvp_chain::socket(&lab, R2), "pathwise daemon")?;
        let c = request(&mut r2, "rsvp.show.counters", json!({}))?;
        let sum = |k: &str| {
            c[k].as_object()
                .map_or(0, |m| m.values().filter_map(Value::as_u64).sum::<u64>())
        };
        Ok(sum("messages_in") + sum("messages_out"))
    };
    let (m0, t0) = (messages()?, thread_cpu_ns(pid));
    let w = cpu_over(pid, Duration::from_secs(60))?;
    let (m1, t1) = (messages()?, thread_cpu_ns(pid));
    let msgs = m1.saturating_sub(m0).max(1) as f64;
    let r2_threads_us_per_message = t1
        .iter()
        .map(|(tid, name, ns)| {
            let before = t0
                .iter()
                .find(|(t, ..)| t == tid)
                .map_or(0, |(_, _, ns)| *ns);
            (
                name.clone(),
                ns.saturating_sub(before) as f64 / 1000.0 / msgs,
            )
        })
        .collect::<Vec<_>>();
    Ok(Holding {
        held: n,
        r2_rss_idle_kib: idle,
        r2_rss_held_kib: w.rss_kib,
        r2_cpu_percent: w.cpu_s / w.wall_s * 100.0,
        threads,
        r2_messages_per_s: msgs / w.wall_s,
        r2_cpu_us_per_message: r2_threads_us_per_message.iter().map(|(_, us)| us).sum(),
        r2_threads_us_per_message,
    })
}

/// The chain with traffic control `tc`, R = 30 s and `threads` RSVP shards per daemon.
fn build(bin: &Path, tc: &str, threads: usize) -> anyhow::Result<crate::netns::Lab> {
    rsvp_chain::build_with(
        bin,
        &rsvp_chain::Options {
            tc,
            refresh: "30s",
            threads,
            ..Default::default()
        },
    )
}

/// Each thread of `pid`: its id, name and on-CPU time so far, nanoseconds (the first field of
/// `/proc/PID/task/TID/schedstat`).
pub(crate) fn thread_cpu_ns(pid: u32) -> Vec<(String, String, u64)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut v: Vec<(String, String, u64)> = tasks
        .flatten()
        .filter_map(|t| {
            let tid = t.file_name().to_string_lossy().into_owned();
            let read = |f: &str| std::fs::read_to_string(t.path().join(f)).ok();
            let ns = read("schedstat")?.split_whitespace().next()?.parse().ok()?;
            Some((tid, read("comm")?.trim().to_string(), ns))
        })
        .collect();
    v.sort();
    v
}

/// Run the benchmark.
pub fn run(
    sessions: usize,
    held: &[usize],
    kinds: &[TrafficControlKind],
    threads: usize,
) -> anyhow::Result<ChainReport> {
    if let Some(why) = crate::netns::unavailable(&["tc"]) {
        anyhow::bail!("rsvp-chain needs network namespaces: {why}");
    }
    let bin = std::env::current_exe()?;
    let (first, rest) = kinds
        .split_first()
        .unwrap_or((&TrafficControlKind::Htb, &[]));
    let main = latency(&bin, kind_name(*first), sessions, threads)?;
    let e2e = stats(main.end_to_end_ms);
    let per_hop_ms = e2e.median / 8.0;
    let signaling_only = latency(&bin, "memory", sessions, threads)?;
    let mut per_hop = vec![
        PerHop::of(kind_name(*first), &main.routers),
        PerHop::of("memory", &signaling_only.routers),
    ];
    let mut compared = Vec::new();
    for &kind in rest {
        let run = latency(&bin, kind_name(kind), sessions, threads)?;
        per_hop.push(PerHop::of(kind_name(kind), &run.routers));
        let e2e = stats(run.end_to_end_ms);
        compared.push(Compared {
            traffic_control: kind_name(kind).into(),
            per_hop_ms: e2e.median / 8.0,
            end_to_end_ms: e2e,
        });
    }
    let holding = held
        .iter()
        .map(|&n| hold(&bin, n, threads))
        .collect::<anyhow::Result<_>>()?;
    Ok(ChainReport {
        traffic_control: kind_name(*first).into(),
        sessions,
        end_to_end_ms: e2e,
        path_ms: stats(main.path_ms),
        resv_ms: stats(main.resv_ms),
        per_hop_ms,
        end_to_end_signaling_only_ms: stats(signaling_only.end_to_end_ms),
        holding,
        compared,
        per_hop,
    })
}

/// The report as text.
pub fn render(r: &ChainReport) -> String {
    let s = |x: &Stats| {
        format!(
            "median {:.2}  p99 {:.2}  min {:.2}  max {:.2}",
            x.median, x.p99, x.min, x.max
        )
    };
    let mut out = format!(
        "RSVP over the netns chain H1–R1–R2–R3–H2, {} sessions one after another, ms:\n",
        r.sessions
    );
    out += &format!(
        "  end to end ({}) {}\n",
        r.traffic_control,
        s(&r.end_to_end_ms)
    );
    out += &format!(
        "    Path leg     {}\n    Resv leg     {}\n",
        s(&r.path_ms),
        s(&r.resv_ms)
    );
    out += &format!("    per hop (median / 8)  {:.2}\n", r.per_hop_ms);
    out += &format!(
        "  end to end, admission only (no traffic control)  {}\n",
        s(&r.end_to_end_signaling_only_ms)
    );
    for c in &r.compared {
        out += &format!(
            "  end to end ({}) {}\n    per hop (median / 8)  {:.2}\n",
            c.traffic_control,
            s(&c.end_to_end_ms),
            c.per_hop_ms
        );
    }
    out += &render_per_hop(&r.per_hop);
    for h in &r.holding {
        out += &format!(
            "R2 holding {} reservations ({} shard(s)): RSS {} KiB (idle {} KiB), CPU {:.2}% of a core over 60 s of refreshes (R = 30 s); {:.0} messages/s in and out, {:.2} us of CPU each ({})\n",
            h.held,
            h.threads,
            h.r2_rss_held_kib,
            h.r2_rss_idle_kib,
            h.r2_cpu_percent,
            h.r2_messages_per_s,
            h.r2_cpu_us_per_message,
            h.r2_threads_us_per_message
                .iter()
                .filter(|(_, us)| *us > 0.0)
                .map(|(name, us)| format!("{name} {us:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out
}

/// The per-hop table: one block per latency run.
fn render_per_hop(runs: &[PerHop]) -> String {
    if runs.is_empty() {
        return String::new();
    }
    let q = |x: &Option<Quantiles>| {
        x.map_or_else(
            || "-".to_string(),
            |x| format!("{:.0} / {:.0} / {:.0}", x.median, x.p90, x.p99),
        )
    };
    let mut out = String::from(
        "  per transit hop, us (median / p90 / p99 over sessions): kernel timestamps of each \
         session's first Path and first Resv\n  arriving at and leaving R1, R2, R3 (AF_PACKET, \
         SO_TIMESTAMPNS), departure - arrival; no polling, no host in it\n",
    );
    out += &format!(
        "    {:<8} {:<4} {:>20} {:>20} {:>22} {:>6} {:>8}\n",
        "tc", "hop", "Path", "Resv", "setup (Path + Resv)", "timed", "missing"
    );
    for run in runs {
        for h in &run.hops {
            out += &format!(
                "    {:<8} {:<4} {:>20} {:>20} {:>22} {:>6} {:>8}\n",
                run.traffic_control,
                h.hop,
                q(&h.path_us),
                q(&h.resv_us),
                q(&h.setup_us),
                h.sessions,
                h.missing
            );
        }
        if run.unparsed + run.untimed > 0 || run.capture_drops > 0 {
            out += &format!(
                "    {:<8} {} RSVP frames not a message with a SESSION, {} without a timestamp, \
                 {} frames dropped by the capture sockets\n",
                run.traffic_control, run.unparsed, run.untimed, run.capture_drops
            );
        }
    }
    out
}

/// `--plot`: R2's CPU and memory against the reservations it holds, with the KOM daemon's
/// (seed 001 Tables I and II) drawn beside them as references. The KOM load generator also
/// removed and re-created flows all the time (average lifetimes 25–625 s); ours only refreshes.
pub fn figures(r: &ChainReport) -> Vec<Figure> {
    if r.holding.is_empty() {
        return Vec::new();
    }
    let largest = r.holding.iter().map(|h| h.held).max().unwrap_or(0) as f64;
    // The seed's rows up to the measured range, so our curve is not squeezed against theirs.
    let upto = |rows: &[KomRow]| -> Vec<KomRow> {
        rows.iter()
            .copied()
            .filter(|k| f64::from(k.flows) <= largest.max(2500.0))
            .collect()
    };
    let (basic, tuned) = (upto(&KOM_BASIC), upto(&KOM_TUNED));
    let pts =
        |f: &dyn Fn(&Holding) -> f64| r.holding.iter().map(|h| (h.held as f64, f(h))).collect();
    let kom = |rows: &[KomRow], f: &dyn Fn(&KomRow) -> f64| -> Vec<(f64, f64)> {
        rows.iter().map(|k| (f64::from(k.flows), f(k))).collect()
    };
    let cpu = Figure::new(
        "RSVP daemon at R2 (five-node chain): CPU against reservations held",
        Axis::linear("reservations (flows) held"),
        Axis::linear("CPU, % of one core"),
    )
    .with(Series::measured(
        "pathwise R2, 60 s of refreshes (R = 30 s)",
        pts(&|h| h.r2_cpu_percent),
    ))
    .with(Series::reference(
        "KOM rsvpd, seed 001 Table I",
        kom(&basic, &|k| k.cpu_percent),
    ))
    .with(Series::reference(
        "tuned KOM rsvpd, seed 001 Table II",
        kom(&tuned, &|k| k.cpu_percent),
    ));
    let memory = Figure::new(
        "RSVP daemon at R2 (five-node chain): memory against reservations held",
        Axis::linear("reservations (flows) held"),
        Axis::linear("resident memory, KiB"),
    )
    .with(Series::measured(
        "pathwise R2, resident set (VmRSS)",
        pts(&|h| h.r2_rss_held_kib as f64),
    ))
    .with(Series::reference(
        "KOM rsvpd, seed 001 Table I",
        kom(&basic, &|k| f64::from(k.memory_kib)),
    ))
    .with(Series::reference(
        "tuned KOM rsvpd, seed 001 Table II",
        kom(&tuned, &|k| f64::from(k.memory_kib)),
    ));
    vec![cpu, memory]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_hop_pools_the_routers_and_counts_what_never_left() {
        use capture::{Direction, Record};
        let session = |port| Session::ip(RECEIVER.parse().unwrap(), 17, port);
        let rec = |us: u64, direction, msg_type, port| Record {
            at: Duration::from_micros(us),
            interface: "w0".into(),
            direction,
            msg_type,
            session: session(port),
        };
        let (a, d) = (Direction::Arrived, Direction::Departed);
        let (p, r) = (MsgType::Path, MsgType::Resv);
        let node = |name: &str, records| NodeRecords {
            node: name.into(),
            records,
            unparsed: 1,
            untimed: 0,
            dropped: 0,
        };
        let routers = [
            node(
                "r1",
                vec![
                    rec(0, a, p, 1),
                    rec(40, d, p, 1),
                    rec(100, a, r, 1),
                    rec(160, d, r, 1),
                    rec(1_000, a, p, 2),
                    rec(1_060, d, p, 2),
                    rec(1_100, a, r, 2),
                    rec(1_180, d, r, 2),
                ],
            ),
            // R2 forwarded the Path of session 1 but kept its Resv.
            node(
                "r2",
                vec![rec(50, a, p, 1), rec(80, d, p, 1), rec(90, a, r, 1)],
            ),
        ];
        let h = PerHop::of("htb", &routers);
        let rows: Vec<_> = h
            .hops
            .iter()
            .map(|x| (x.hop.as_str(), x.sessions, x.missing))
            .collect();
        assert_eq!(rows, [("r1", 2, 0), ("r2", 0, 1), ("all", 2, 1)]);
        let r1 = &h.hops[0];
        let median = |q: Option<Quantiles>| q.map(|q| q.median);
        // Nearest rank of two: the median is the upper one.
        assert_eq!(median(r1.path_us), Some(60.0));
        assert_eq!(median(r1.resv_us), Some(80.0));
        assert_eq!(median(r1.setup_us), Some(140.0));
        assert_eq!(median(h.hops[1].path_us), Some(30.0));
        assert!(h.hops[1].resv_us.is_none() && h.hops[1].setup_us.is_none());
        assert_eq!(
            h.hops[2].path_us.map(|q| (q.median, q.p99)),
            Some((40.0, 60.0))
        );
        assert_eq!(h.unparsed, 2);
        let text = render_per_hop(&[h]);
        assert!(text.contains("60 / 60 / 60"), "{text}");
        assert!(text.contains("2 RSVP frames"), "{text}");
    }

    #[test]
    fn figures_put_the_kom_tables_beside_the_measured_range() {
        let s = stats(vec![1.0]);
        let r = ChainReport {
            traffic_control: "htb".into(),
            sessions: 1,
            end_to_end_ms: s.clone(),
            path_ms: s.clone(),
            resv_ms: s.clone(),
            per_hop_ms: 0.1,
            end_to_end_signaling_only_ms: s,
            holding: [2500, 10_000]
                .into_iter()
                .map(|n| Holding {
                    held: n,
                    r2_rss_idle_kib: 8000,
                    r2_rss_held_kib: 8000 + n as u64 / 2,
                    r2_cpu_percent: n as f64 / 10_000.0,
                    threads: 1,
                    r2_messages_per_s: 0.0,
                    r2_cpu_us_per_message: 0.0,
                    r2_threads_us_per_message: Vec::new(),
                })
                .collect(),
            compared: Vec::new(),
            per_hop: Vec::new(),
        };
        let figs = figures(&r);
        assert_eq!(figs.len(), 2);
        assert_eq!(
            figs[0].series[0].points,
            vec![(2500.0, 0.25), (10_000.0, 1.0)]
        );
        // Table I stops at 5,500 flows; Table II is cut at the largest count measured.
        let tuned = &figs[0].series[2];
        assert!(tuned.reference);
        assert_eq!(tuned.points.last(), Some(&(10_000.0, 14.75)));
        assert_eq!(figs[1].series[1].points.last(), Some(&(5500.0, 12848.0)));
        crate::bench::plot::render(&figs).unwrap();
    }
}
