//! `pathwise bench rsvp-scale` (issue #21 part 7): KOM's tables in KOM's shape (seed 001 §V,
//! Tables I, II, IV) on the five-node namespace chain H1 – R1 – R2 – R3 – H2.
//!
//! For each number of flows N and each shard count, on a fresh chain with `pathwise daemon` on
//! the three routers only (R = `--refresh`, traffic control in memory, 10 Gbit/s reservable so
//! admission never refuses), `pathwise loadgen rsvp` plays the receivers at H2 and the senders
//! at H1 with KOM's churn (seed 001 §IV): the senders ramp up to N flows at `--ramp-rate`, then
//! create and delete at random intervals up to 2 · lifetime / N, so the average flow lifetime
//! is `--lifetime` (n · max / 2, seed 001 §V.A). Once R2 holds N − 10 path states and at least
//! 1.5 R has passed since the first flow (every flow refreshed at least once), the benchmark
//! reads the routers' CPU (utime + stime from /proc/PID/stat, on-CPU time of every thread from
//! /proc/PID/task/TID/schedstat) and RSS across `--window`, sampling R2's path and reservation
//! states; then the senders stop and tear down. A row says whether N was held reliably (R2's
//! path states stayed in [N − 10 − slack, N + slack] — a new flow's Path may pass an old one's
//! PathTear, in another shard — and its reservations within the slack of them
//! throughout); larger N for that shard count are not tried after one that was not held.
//! With `--integrity`, the runs are repeated with RFC 2747 integrity required between the
//! routers (R1 – R2 – R3, one key; the hosts' links stay plain, as the generator signs
//! nothing), to show what integrity costs a sharded router.

use crate::mgmt::Client;
use crate::netns::Lab;
use crate::netns::chain::{H1, H2, NODES, R1, R2, R3, socket};
use crate::rsvp::bench::chain::{proc_usage, thread_cpu_ns};
use serde::Serialize;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// H1's address: the senders.
const SENDER: &str = "10.91.1.1";
/// H2's address: the receivers.
const RECEIVER: &str = "10.91.4.2";
/// What may be in flight at a router besides the churn band: creations and deletions whose
/// messages are on their way, reservations on their way back (per 1,000 flows created a
/// second, plus a floor).
const SLACK_FLOOR: u64 = 30;

/// `pathwise bench rsvp-scale`.
#[derive(Debug, clap::Args)]
pub struct RsvpScaleArgs {
    /// Flows N, one run each (comma-separated), smallest first.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    flows: Vec<u64>,
    /// RSVP shards of every router's daemon (`[daemon] threads`), one run each per N.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Average flow lifetime once N flows exist (the churn's bound is 2 · lifetime / N).
    #[arg(long, default_value = "240s", value_parser = crate::gist::cli::duration)]
    lifetime: Duration,
    /// Refresh period R of the hosts and the routers.
    #[arg(long, default_value = "30s", value_parser = crate::gist::cli::duration)]
    refresh: Duration,
    /// Flows created per second while ramping up to N.
    #[arg(long, default_value_t = 2000)]
    ramp_rate: u32,
    /// How long the routers' CPU is read once N flows are held.
    #[arg(long, default_value = "60s", value_parser = crate::gist::cli::duration)]
    window: Duration,
    /// The most one run may wait for R2 to hold N flows (ramp-up and settling).
    #[arg(long, default_value = "10min", value_parser = crate::gist::cli::duration)]
    limit: Duration,
    /// RFC 2747 integrity between the routers, one run each per N and shard count: `off` or
    /// an algorithm (hmac-md5, hmac-sha1, hmac-ripemd160, hmac-sha256, hmac-sha384,
    /// hmac-sha512).
    #[arg(long, value_delimiter = ',', default_value = "off")]
    integrity: Vec<IntegrityChoice>,
    /// The routers' `[daemon] receive_hold` (crate::daemon::hold), one run each per N, shard
    /// count and integrity setting ("0s": off).
    #[arg(long, value_delimiter = ',', default_value = "1ms")]
    receive_hold: Vec<pathwise_core::units::TimeSpan>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// `--integrity`: off, or required with an algorithm.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntegrityChoice(Option<pathwise_auth::Algorithm>);

impl std::str::FromStr for IntegrityChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "off" {
            return Ok(IntegrityChoice(None));
        }
        s.parse()
            .map(|a| IntegrityChoice(Some(a)))
            .map_err(|e: pathwise_auth::UnknownAlgorithm| format!("{e}, or off"))
    }
}

impl std::fmt::Display for IntegrityChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            None => f.write_str("off"),
            Some(a) => f.write_str(a.name()),
        }
    }
}

/// One row: N flows with `threads` shards per router.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleRow {
    /// Target flows N.
    pub flows: u64,
    /// Shards per router daemon.
    pub threads: usize,
    /// RFC 2747 integrity between the routers: `off` or the algorithm.
    pub integrity: String,
    /// The routers' receive hold-off (`[daemon] receive_hold`).
    pub receive_hold: String,
    /// Whether R2 held N flows (path states in [N − 10 − slack, N + slack], reservations
    /// within the slack of them) throughout the window.
    pub held: bool,
    /// Why not, when not.
    pub note: Option<String>,
    /// Fewest and most path states at R2 during the window.
    pub r2_path_states: [u64; 2],
    /// Fewest and most reservation states at R2 during the window.
    pub r2_resv_states: [u64; 2],
    /// The average lifetime the churn implies (n · max / 2), s.
    pub implied_lifetime_s: f64,
    /// Mean lifetime of the flows the churn deleted, as the senders measured it, s.
    pub avg_lifetime_s: Option<f64>,
    /// Seconds from the first flow to the start of the window.
    pub ramp_s: f64,
    /// The window, s.
    pub window_s: f64,
    /// R2's CPU (utime + stime) over the window, % of one core.
    pub r2_cpu_percent: f64,
    /// R2's on-CPU time per thread over the window (schedstat), % of one core.
    pub r2_threads_cpu_percent: Vec<(String, f64)>,
    /// R1's and R3's CPU over the window, % of one core.
    pub r1_r3_cpu_percent: [f64; 2],
    /// R2's resident memory before the first flow, KiB.
    pub r2_rss_idle_kib: u64,
    /// R2's resident memory at the end of the window, KiB.
    pub r2_rss_kib: u64,
    /// (RSS − idle) / path states at the end, bytes.
    pub r2_bytes_per_flow: Option<f64>,
    /// RSVP messages R2 received and sent per second over the window.
    pub r2_messages_per_s: f64,
    /// R2's CPU per message, µs.
    pub r2_cpu_us_per_message: Option<f64>,
    /// Datagrams R2's kernel dropped for a full receive buffer by the end of the window.
    pub r2_kernel_drops: u64,
    /// Flows created and deleted per second by the senders over their run.
    pub setups_per_s: f64,
    /// Flows deleted per second.
    pub teardowns_per_s: f64,
    /// The senders' generator CPU from ramp-up's end to stop, % of one core.
    pub sender_cpu_percent: Option<f64>,
}

/// The benchmark's report.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleReport {
    /// Refresh period R, s.
    pub refresh_s: f64,
    /// Average flow lifetime asked for, s.
    pub lifetime_s: f64,
    /// One row per (N, shards) run.
    pub rows: Vec<ScaleRow>,
    /// Per shard count (and integrity setting), the most flows held reliably (seed 001
    /// Table IV).
    pub most_held: Vec<MostHeld>,
    /// Load average when the benchmark ended (the machine may be shared).
    pub load_average: String,
}

/// The most flows held with one configuration.
#[derive(Debug, Clone, Serialize)]
pub struct MostHeld {
    /// Shards per router daemon.
    pub threads: usize,
    /// Integrity between the routers.
    pub integrity: String,
    /// The routers' receive hold-off.
    pub receive_hold: String,
    /// The largest N held (0: none).
    pub flows: u64,
}

/// Run `pathwise bench rsvp-scale` and print its report.
pub fn run(a: RsvpScaleArgs) -> anyhow::Result<()> {
    if let Some(why) = crate::netns::unavailable(&[]) {
        anyhow::bail!("rsvp-scale needs network namespaces: {why}");
    }
    anyhow::ensure!(!a.flows.is_empty(), "--flows: at least one N");
    anyhow::ensure!(
        a.flows.iter().all(|&n| (11..=1_000_000).contains(&n)),
        "--flows: each N from 11 to 1,000,000 (the churn band is [N − 10, N])"
    );
    anyhow::ensure!(
        a.threads.iter().all(|&t| (1..=64).contains(&t)),
        "--threads: 1 to 64"
    );
    anyhow::ensure!(a.ramp_rate > 0, "--ramp-rate: more than 0");
    anyhow::ensure!(
        a.refresh >= Duration::from_secs(1) && !a.window.is_zero(),
        "--refresh: at least 1s; --window: more than 0"
    );
    let bin = std::env::current_exe()?;
    let mut flows = a.flows.clone();
    flows.sort_unstable();
    let mut rows = Vec::new();
    let mut most_held = Vec::new();
    for &integrity in &a.integrity {
        for &hold in &a.receive_hold {
            for &threads in &a.threads {
                let mut most = 0;
                for &n in &flows {
                    let row = one(&bin, &a, n, threads, integrity, hold)?;
                    eprintln!("{}", render_row(&row));
                    let held = row.held;
                    rows.push(row);
                    if !held {
                        break;
                    }
                    most = most.max(n);
                }
                most_held.push(MostHeld {
                    threads,
                    integrity: integrity.to_string(),
                    receive_hold: hold.to_string(),
                    flows: most,
                });
            }
        }
    }
    let report = ScaleReport {
        refresh_s: a.refresh.as_secs_f64(),
        lifetime_s: a.lifetime.as_secs_f64(),
        rows,
        most_held,
        load_average: std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
            .to_string(),
    };
    crate::bench::print_report(a.json, &report, render)
}

/// The chain with daemons on the routers only: the hosts are the generator's.
fn chain(
    bin: &Path,
    refresh: Duration,
    threads: usize,
    integrity: IntegrityChoice,
    hold: pathwise_core::units::TimeSpan,
) -> anyhow::Result<Lab> {
    let mut lab = crate::netns::chain::topology(false)?;
    let secured = match integrity.0 {
        Some(alg) => crate::rsvp::chain::integrity_section(&lab, alg)?,
        None => String::new(),
    };
    let mut configs: [Option<String>; 5] = Default::default();
    for i in [R1, R2, R3] {
        let mut cfg = format!("[daemon]\nsocket = {:?}\n", socket(&lab, i));
        // Always written: the daemon's default is one shard per core.
        cfg += &format!("threads = {threads}\nreceive_hold = \"{hold}\"\n");
        cfg += &format!(
            "\n[rsvp]\nrefresh = \"{}ms\"\ntraffic_control = \"memory\"\n",
            refresh.as_millis()
        );
        for ifname in ["w0", "e0"] {
            cfg += &format!(
                "\n[[rsvp.interface]]\nname = \"{ifname}\"\nbandwidth = \"10Gbit\"\nreservable = \"10Gbit\"\n"
            );
            // Between routers only: R1's west and R3's east face the generator's hosts.
            let to_host = (i == R1 && ifname == "w0") || (i == R3 && ifname == "e0");
            if !to_host {
                cfg += &secured;
            }
        }
        configs[i] = Some(cfg);
    }
    crate::netns::chain::start_daemons(&mut lab, bin, &configs)?;
    Ok(lab)
}

/// R2's counters on a connection of its own (the daemon closes one idle for 30 s).
fn counters(lab: &Lab, i: usize) -> anyhow::Result<Value> {
    Client::connect(&socket(lab, i), "pathwise daemon")?.request("rsvp.show.counters", json!({}))
}

fn states(c: &Value) -> (u64, u64) {
    let n = |k: &str| c[k].as_u64().unwrap_or(0);
    (n("path_states"), n("resv_states"))
}

fn messages(c: &Value) -> u64 {
    let sum = |k: &str| {
        c[k].as_object()
            .map_or(0, |m| m.values().filter_map(Value::as_u64).sum::<u64>())
    };
    sum("messages_in") + sum("messages_out")
}

/// The JSON report at the end of a generator's log (progress lines come before it).
fn generator_report(lab: &Lab, tag: &str) -> Option<Value> {
    let log = lab.log(tag);
    let start = log
        .find("\n{")
        .map(|i| i + 1)
        .or_else(|| log.starts_with('{').then_some(0))?;
    serde_json::from_str(&log[start..]).ok()
}

fn pid(lab: &Lab, i: usize) -> anyhow::Result<u32> {
    lab.pid(NODES[i])
        .ok_or_else(|| anyhow::anyhow!("no daemon at {}", NODES[i]))
}

fn one(
    bin: &Path,
    a: &RsvpScaleArgs,
    n: u64,
    threads: usize,
    integrity: IntegrityChoice,
    hold: pathwise_core::units::TimeSpan,
) -> anyhow::Result<ScaleRow> {
    let mut lab = chain(bin, a.refresh, threads, integrity, hold)?;
    let bin_s = bin.to_string_lossy().into_owned();
    let refresh = format!("{}ms", a.refresh.as_millis());
    // Seed 001 §V.A: lifetime = n · max / 2.
    let max_us = (2.0 * a.lifetime.as_secs_f64() / n as f64 * 1e6).max(1.0);
    let ramp_us = (2.0 / f64::from(a.ramp_rate) * 1e6).max(1.0);
    let slack = SLACK_FLOOR + 2 * (2.0 * 1e6 / max_us) as u64;
    let (r1, r2, r3) = (pid(&lab, R1)?, pid(&lab, R2)?, pid(&lab, R3)?);
    let (r2_rss_idle_kib, _) = proc_usage(r2)?;
    lab.spawn(
        "receiver",
        H2,
        &[
            &bin_s,
            "loadgen",
            "rsvp",
            "--role",
            "receiver",
            "--refresh",
            &refresh,
            "--json",
        ],
    )?;
    let flows = n.to_string();
    let max = format!("{max_us:.0}us");
    let ramp = format!("{ramp_us:.0}us");
    lab.spawn(
        "sender",
        H1,
        &[
            &bin_s,
            "loadgen",
            "rsvp",
            "--role",
            "sender",
            "--src",
            SENDER,
            "--dest",
            RECEIVER,
            "--flows",
            &flows,
            "--max-interval",
            &max,
            "--ramp-interval",
            &ramp,
            "--refresh",
            &refresh,
            "--teardown-limit",
            "300s",
            "--progress",
            "10s",
            "--json",
        ],
    )?;
    let started = Instant::now();
    // Ramp-up: R2 holds N − 10 flows; then every flow has been refreshed at least once.
    let settle = a.refresh.mul_f64(1.5);
    let mut note = None;
    loop {
        let (psb, rsb) = states(&counters(&lab, R2)?);
        if psb + 10 + slack >= n && rsb + slack >= psb && started.elapsed() >= settle {
            break;
        }
        if started.elapsed() > a.limit {
            note = Some(format!(
                "not reached within {:?}: R2 held {psb} path states, {rsb} reservations",
                a.limit
            ));
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let ramp_s = started.elapsed().as_secs_f64();
    let c0 = counters(&lab, R2)?;
    let (t0, th0) = (
        [proc_usage(r1)?.1, proc_usage(r2)?.1, proc_usage(r3)?.1],
        thread_cpu_ns(r2),
    );
    let w0 = Instant::now();
    let (mut lo, mut hi) = ([u64::MAX; 2], [0u64; 2]);
    let mut held = note.is_none();
    // Also when N was not reached: what the routers spend holding what they could.
    while w0.elapsed() < a.window {
        let (psb, rsb) = states(&counters(&lab, R2)?);
        lo = [lo[0].min(psb), lo[1].min(rsb)];
        hi = [hi[0].max(psb), hi[1].max(rsb)];
        if psb > n + slack || psb + 10 + slack < n || rsb + slack < psb {
            held = false;
        }
        std::thread::sleep(Duration::from_millis(1000).min(a.window));
    }
    let wall_s = w0.elapsed().as_secs_f64();
    let c1 = counters(&lab, R2)?;
    let (r2_rss_kib, _) = proc_usage(r2)?;
    let t1 = [proc_usage(r1)?.1, proc_usage(r2)?.1, proc_usage(r3)?.1];
    let th1 = thread_cpu_ns(r2);
    // USER_HZ is 100 on Linux.
    let pct = |k: usize| t1[k].saturating_sub(t0[k]) as f64 / 100.0 / wall_s.max(1e-9) * 100.0;
    let r2_threads_cpu_percent = th1
        .iter()
        .map(|(tid, name, ns)| {
            let before = th0
                .iter()
                .find(|(t, ..)| t == tid)
                .map_or(0, |(_, _, ns)| *ns);
            let p = ns.saturating_sub(before) as f64 / 1e9 / wall_s.max(1e-9) * 100.0;
            (name.clone(), p)
        })
        .collect::<Vec<_>>();
    let msgs = messages(&c1).saturating_sub(messages(&c0)) as f64;
    let (psb_end, _) = states(&c1);
    if !held && note.is_none() {
        note = Some(format!(
            "R2's states left the band during the window (path {}–{}, reservations {}–{})",
            lo[0], hi[0], lo[1], hi[1]
        ));
    }
    // The senders stop and tear every flow down; then the receivers.
    let _ = lab.terminate("sender", Duration::from_secs(330));
    let tx = generator_report(&lab, "sender").unwrap_or(Value::Null);
    let _ = lab.terminate("receiver", Duration::from_secs(30));
    let f = |k: &str| tx[k].as_f64();
    let r2_cpu_percent = pct(1);
    Ok(ScaleRow {
        flows: n,
        threads,
        integrity: integrity.to_string(),
        receive_hold: hold.to_string(),
        held,
        note,
        r2_path_states: [if lo[0] == u64::MAX { 0 } else { lo[0] }, hi[0]],
        r2_resv_states: [if lo[1] == u64::MAX { 0 } else { lo[1] }, hi[1]],
        implied_lifetime_s: max_us * 1e-6 * n as f64 / 2.0,
        avg_lifetime_s: f("avg_lifetime_s"),
        ramp_s,
        window_s: wall_s,
        r2_cpu_percent,
        r2_threads_cpu_percent,
        r1_r3_cpu_percent: [pct(0), pct(2)],
        r2_rss_idle_kib,
        r2_rss_kib,
        r2_bytes_per_flow: (psb_end > 0)
            .then(|| r2_rss_kib.saturating_sub(r2_rss_idle_kib) as f64 * 1024.0 / psb_end as f64),
        r2_messages_per_s: msgs / wall_s.max(1e-9),
        r2_cpu_us_per_message: (msgs > 0.0).then(|| r2_cpu_percent / 100.0 * wall_s * 1e6 / msgs),
        r2_kernel_drops: c1["kernel_drops"].as_u64().unwrap_or(0),
        setups_per_s: f("setups_per_s").unwrap_or(0.0),
        teardowns_per_s: f("teardowns_per_s").unwrap_or(0.0),
        sender_cpu_percent: f("steady_cpu_percent"),
    })
}

fn render_row(r: &ScaleRow) -> String {
    format!(
        "{:>9} {:>6} {:>11} {:>6} {:>5} {:>17} {:>8.1} {:>8} {:>7.2} {:>7.2} {:>10} {:>8} {:>9.0} {:>7}  {}",
        r.flows,
        r.threads,
        r.integrity,
        r.receive_hold,
        if r.held { "yes" } else { "no" },
        format!("{}–{}", r.r2_path_states[0], r.r2_path_states[1]),
        r.implied_lifetime_s,
        r.avg_lifetime_s.map_or("-".into(), |l| format!("{l:.1}")),
        r.r2_cpu_percent,
        r.r1_r3_cpu_percent[0].max(r.r1_r3_cpu_percent[1]),
        r.r2_rss_kib,
        r.r2_bytes_per_flow
            .map_or("-".into(), |b| format!("{b:.0}")),
        r.r2_messages_per_s,
        r.r2_cpu_us_per_message
            .map_or("-".into(), |u| format!("{u:.1}")),
        r.note.as_deref().unwrap_or(""),
    )
}

/// The report as a table (seed 001 Tables I, II and IV in one).
pub fn render(r: &ScaleReport) -> String {
    let mut s = format!(
        "RSVP at scale on the namespace chain: R = {} s, lifetime {} s, load average {}\n",
        r.refresh_s, r.lifetime_s, r.load_average
    );
    s += &format!(
        "{:>9} {:>6} {:>11} {:>6} {:>5} {:>17} {:>8} {:>8} {:>7} {:>7} {:>10} {:>8} {:>9} {:>7}\n",
        "flows",
        "shards",
        "integrity",
        "hold",
        "held",
        "R2 path states",
        "life(n)",
        "life",
        "R2 %CPU",
        "R1/R3",
        "R2 RSS KiB",
        "B/flow",
        "R2 msg/s",
        "us/msg"
    );
    for row in &r.rows {
        s += &render_row(row);
        s += "\n";
        if row.threads > 1 {
            let per: Vec<String> = row
                .r2_threads_cpu_percent
                .iter()
                .filter(|(_, p)| *p >= 0.05)
                .map(|(name, p)| format!("{name} {p:.1}%"))
                .collect();
            s += &format!("{:>16} R2 threads: {}\n", "", per.join(", "));
        }
    }
    for m in &r.most_held {
        s += &format!(
            "most flows held with {} shard(s), integrity {}, receive hold {}: {}\n",
            m.threads, m.integrity, m.receive_hold, m.flows
        );
    }
    s
}
