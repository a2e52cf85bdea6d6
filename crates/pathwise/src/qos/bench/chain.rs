//! `pathwise bench qos-chain`: the namespace-chain half of `bench qos` (root needed). The
//! five-node chain H1 – R1 – R2 – R3 – H2 of `bench rsvp-chain`, every node a `pathwise
//! daemon` running `[rsvp]`, `[gist]` and `[qos_nslp]` together (one admission budget per
//! interface; R2 → R3 10 Mbit/s, 80 % reservable, the other links 1 Gbit/s).
//!
//! - Setup time: on one chain per traffic control ("htb": classes installed with `tc` at
//!   every hop; "memory": admission only, the signaling alone), N reservations one after the
//!   other, the two protocols alternating: RSVP as `bench rsvp-chain` sets one up
//!   (`rsvp::bench::chain::setup_one`: sender at H1, `rsvp.wait` for the Path at H2,
//!   reservation, `rsvp.wait` for the Resv at H1), then a sender-initiated QoS NSLP reservation (`qos.reserve` at H1,
//!   answered when the QNR's RESPONSE is back).
//! - Holding: on a fresh chain per protocol and refresh mode, with in-memory traffic control
//!   (so the cost of thousands of HTB classes is not what is measured), `hold` reservations
//!   are installed, then R2's daemon is read from /proc: resident memory, and user + system
//!   CPU over a window of whole refresh periods.

use super::median;
use super::sim::Mode;
use crate::gist::chain as gist_chain;
use crate::mgmt::Client;
use crate::netns::Lab;
use crate::rsvp::bench::chain::{self as rsvp_chain_bench, Stats, cpu_over, poll, request, stats};
use crate::rsvp::chain as rsvp_chain;
use anyhow::Context as _;
use serde::Serialize;
use serde_json::json;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

/// What `pathwise bench qos-chain` runs.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct QosChainArgs {
    /// Reservations set up one after the other per protocol and traffic control, for the
    /// setup times (at most 240: both protocols' fit R2's reservable 8 Mbit/s at 16 kbit/s).
    #[arg(long, default_value_t = 200)]
    pub sessions: usize,
    /// Reservations R2 holds for the CPU and memory figures, per protocol and refresh mode
    /// (at most 15,000 at 500 bit/s each).
    #[arg(long, default_value_t = 10_000)]
    pub hold: usize,
    /// Refresh period R of both protocols, seconds (GIST's routing state: 180 s).
    #[arg(long, default_value_t = 30)]
    pub refresh: u64,
    /// Refresh periods in R2's CPU window (the default 6 × 30 s spans one of GIST's 180 s
    /// routing-state refreshes of every session).
    #[arg(long, default_value_t = 6)]
    pub periods: u32,
    /// Repetitions, each on fresh chains; setup times pool the runs' samples, the holding
    /// figures are medians.
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// GIST's routing-state refresh period on the chain: the thesis's 180 s (§4.3.1), as in the
/// in-process half.
const GIST_REFRESH: &str = "180s";
/// The most `--sessions`.
const MAX_SESSIONS: usize = 240;
/// The most `--hold`.
const MAX_HOLD: usize = 15_000;
/// Rate of each setup-time reservation, bit/s.
const SETUP_RATE: u64 = 16_000;
/// Rate of each held reservation, bit/s (as `bench rsvp-chain`).
const HOLD_RATE: u64 = 500;
/// QoS NSLP reservations started per `qos.reserve` request while filling R2.
const BATCH: usize = 100;
/// The holding modes: each protocol with full and with reduced refresh.
pub const HOLD_MODES: [Mode; 4] = [
    Mode::RsvpFull,
    Mode::RsvpSummary,
    Mode::QosFull,
    Mode::QosSummary,
];

/// Setup times of one protocol over one traffic control.
#[derive(Clone, Debug, Serialize)]
pub struct Setup {
    /// "rsvp" or "qos-nslp".
    pub protocol: &'static str,
    /// "htb" or "memory".
    pub traffic_control: &'static str,
    /// Reservations set up (over all runs).
    pub samples: usize,
    /// From the first request at H1 until the reservation is confirmed at H1, ms.
    pub end_to_end_ms: Stats,
    /// The end-to-end median over the eight hops crossed (four each way), ms.
    pub per_hop_ms: f64,
    /// RSVP only: the Path leg (H1 → H2), ms.
    pub path_ms: Option<Stats>,
    /// RSVP only: the Resv leg (H2 → H1), ms.
    pub resv_ms: Option<Stats>,
}

/// R2 holding reservations of one protocol in one refresh mode.
#[derive(Clone, Debug, Serialize)]
pub struct Holding {
    /// Protocol and refresh mode.
    pub mode: Mode,
    /// Reservations requested.
    pub hold: usize,
    /// Reservations R2 held at the end of the CPU window, per run.
    pub held_at_end: Vec<usize>,
    /// R2's daemon resident memory with no reservation, KiB, per run.
    pub r2_rss_idle_kib: Vec<u64>,
    /// R2's daemon resident memory holding them, KiB, per run.
    pub r2_rss_held_kib: Vec<u64>,
    /// CPU window, seconds, per run.
    pub window_s: Vec<f64>,
    /// R2's daemon CPU (user + system) in the window, seconds, per run.
    pub r2_cpu_s: Vec<f64>,
    /// Median: R2's CPU per reservation per refresh period, nanoseconds.
    pub cpu_ns_per_reservation_period: f64,
    /// Median: R2's CPU, percent of one core.
    pub cpu_percent: f64,
    /// Median: resident memory held per reservation, bytes.
    pub rss_bytes_per_reservation: f64,
    /// Median: time to install the reservations until R2 held them all, seconds.
    pub install_s: f64,
}

/// Result of `pathwise bench qos-chain`.
#[derive(Clone, Debug, Serialize)]
pub struct QosChainReport {
    /// Setup-time reservations per protocol, traffic control and run.
    pub sessions: usize,
    /// Reservations held.
    pub hold: usize,
    /// Refresh period R of both protocols, seconds.
    pub refresh_s: u64,
    /// GIST's routing-state refresh period, as configured.
    pub gist_refresh: &'static str,
    /// Refresh periods in the CPU window.
    pub periods: u32,
    /// Runs.
    pub runs: usize,
    /// Per protocol and traffic control.
    pub setup: Vec<Setup>,
    /// Per protocol and refresh mode.
    pub holding: Vec<Holding>,
}

/// The chain with every service: traffic control `tc`, refresh period `refresh_s` for both
/// protocols, and reduced refresh (RFC 2961 for RSVP; RSN-only RESERVEs and SESSION-ID-LIST
/// summaries for the QoS NSLP, RFC 5974 §3.2.5, §3.2.6) on or off for both.
fn build(bin: &Path, tc: &str, refresh_s: u64, reduced: bool) -> anyhow::Result<Lab> {
    let refresh = format!("{refresh_s}s");
    let rsvp = rsvp_chain::Options {
        tc,
        refresh: &refresh,
        refresh_reduction: reduced,
        ..rsvp_chain::Options::default()
    };
    let sections: Vec<String> = (0..5)
        .map(|i| {
            format!(
                "\n[qos_nslp]\nrefresh_period = {refresh:?}\nreduced_refresh = {reduced}\n\
                 summary_refresh = {reduced}\n\n{}",
                rsvp_chain::rsvp_section(&rsvp, i, "")
            )
        })
        .collect();
    let o = gist_chain::Options {
        refresh: GIST_REFRESH,
        // The QoS NSLP's Router Alert values are taken off the path through netfilter.
        extra: "interception = \"netfilter\"\n".into(),
        node_extra: std::array::from_fn(|i| sections[i].as_str()),
        // Logging every message would be part of what is measured.
        log: "warn",
        ..gist_chain::Options::default()
    };
    gist_chain::build(bin, &o)
}

fn qos_reserve(
    h1: &mut Client,
    dport: u16,
    rate_bps: u64,
    count: Option<usize>,
) -> anyhow::Result<serde_json::Value> {
    let mut args = json!({
        "destination": rsvp_chain::RECEIVER,
        "rate_bps": rate_bps,
        "protocol": 17,
        "dport": dport,
    });
    if let Some(n) = count {
        args["count"] = json!(n);
    }
    request(h1, "qos.reserve", args.clone()).with_context(|| format!("qos.reserve {args} at H1"))
}

/// Setup times on one chain: `n` of each protocol, alternating. (RSVP: end to end, Path leg,
/// Resv leg; QoS NSLP: end to end.)
fn setup_times(bin: &Path, tc: &str, refresh_s: u64, n: usize) -> anyhow::Result<[Vec<f64>; 4]> {
    let lab = build(bin, tc, refresh_s, false)?;
    let (mut h1, mut h2) = rsvp_chain_bench::clients(&lab)?;
    let mut out: [Vec<f64>; 4] = Default::default();
    for i in 0..n {
        let (e2e, path, resv) =
            rsvp_chain_bench::setup_one(&mut h1, &mut h2, 10_000 + i as u16, SETUP_RATE)
                .with_context(|| format!("RSVP reservation {i} over {tc}"))?;
        out[0].push(e2e);
        out[1].push(path);
        out[2].push(resv);
        let t0 = Instant::now();
        let v = qos_reserve(&mut h1, 30_000 + i as u16, SETUP_RATE, None)?;
        anyhow::ensure!(
            v["outcome"] == "reserved",
            "QoS NSLP reservation {i} over {tc}: {v}"
        );
        out[3].push(t0.elapsed().as_secs_f64() * 1e3);
    }
    Ok(out)
}

/// Reservations R2 holds now: RSVP's, or the QoS NSLP's on a traffic-control class. (A
/// connection of its own each time: the daemon serves one management connection at a time.)
fn held_at_r2(lab: &Lab, mode: Mode) -> anyhow::Result<usize> {
    let r2 = &mut Client::connect(&gist_chain::socket(lab, gist_chain::R2), "pathwise daemon")?;
    let n = if is_rsvp(mode) {
        request(r2, "rsvp.show.counters", json!({}))?["reservations"].as_u64()
    } else {
        request(r2, "gist.show.counters", json!({}))?["qos_nslp"]["reservations"].as_u64()
    };
    Ok(n.unwrap_or(0) as usize)
}

fn is_rsvp(mode: Mode) -> bool {
    matches!(mode, Mode::RsvpFull | Mode::RsvpSummary)
}

/// One holding measurement on a fresh chain (RSS in KiB, times in seconds).
struct HoldRun {
    idle_kib: u64,
    held_kib: u64,
    window_s: f64,
    cpu_s: f64,
    held_at_end: usize,
    install_s: f64,
}

fn hold(bin: &Path, mode: Mode, n: usize, refresh_s: u64, periods: u32) -> anyhow::Result<HoldRun> {
    let reduced = matches!(
        mode,
        Mode::RsvpSummary | Mode::QosRsnOnly | Mode::QosSummary
    );
    let lab = build(bin, "memory", refresh_s, reduced)?;
    let pid = lab
        .pid(gist_chain::NODES[gist_chain::R2])
        .ok_or_else(|| anyhow::anyhow!("no R2 daemon"))?;
    let (idle_kib, _) = rsvp_chain_bench::proc_usage(pid)?;
    let t0 = Instant::now();
    if is_rsvp(mode) {
        rsvp_chain_bench::install(&lab, n, 20_000)?;
    } else {
        let (mut h1, _) = rsvp_chain_bench::clients(&lab)?;
        for first in (0..n).step_by(BATCH) {
            let count = BATCH.min(n - first);
            let v = qos_reserve(&mut h1, 20_000 + first as u16, HOLD_RATE, Some(count))?;
            anyhow::ensure!(
                v["outcome"] == "reserved" || v["outcome"] == "pending",
                "QoS NSLP reservations {first}..{}: {}",
                first + count,
                json!({ "outcome": v["outcome"], "reserved": v["reserved"], "failed": v["failed"],
                        "refused": v["refused"], "error": v["error"] })
            );
        }
        poll(
            Duration::from_secs(120),
            Duration::from_millis(200),
            "every QoS NSLP reservation at R2",
            || Ok(held_at_r2(&lab, mode)? >= n),
        )?;
    }
    let install_s = t0.elapsed().as_secs_f64();
    let w = cpu_over(pid, Duration::from_secs(refresh_s * u64::from(periods)))?;
    Ok(HoldRun {
        idle_kib,
        held_kib: w.rss_kib,
        window_s: w.wall_s,
        cpu_s: w.cpu_s,
        held_at_end: held_at_r2(&lab, mode)?,
        install_s,
    })
}

/// Run the benchmark.
pub fn run_report(a: QosChainArgs) -> anyhow::Result<QosChainReport> {
    anyhow::ensure!(
        (1..=MAX_SESSIONS).contains(&a.sessions),
        "--sessions: 1 to {MAX_SESSIONS} (both protocols' reservations share R2's 8 Mbit/s at {} kbit/s each)",
        SETUP_RATE / 1000
    );
    anyhow::ensure!(
        (1..=MAX_HOLD).contains(&a.hold),
        "--hold: 1 to {MAX_HOLD} reservations (R2 admits 8 Mbit/s towards R3, {HOLD_RATE} bit/s each)"
    );
    anyhow::ensure!(
        a.refresh >= 1 && a.periods >= 1,
        "--refresh and --periods: at least 1"
    );
    if let Some(why) = crate::netns::unavailable(&["tc", "iptables"]) {
        anyhow::bail!("bench qos-chain needs network namespaces: {why}");
    }
    let bin = std::env::current_exe()?;
    let runs = a.runs.max(1);
    let tcs = ["htb", "memory"];
    let mut samples: Vec<[Vec<f64>; 4]> = vec![Default::default(); tcs.len()];
    let mut held: Vec<Vec<HoldRun>> = HOLD_MODES.iter().map(|_| Vec::new()).collect();
    for _ in 0..runs {
        for (tc, acc) in tcs.iter().zip(samples.iter_mut()) {
            let s = setup_times(&bin, tc, a.refresh, a.sessions)?;
            for (all, new) in acc.iter_mut().zip(s) {
                all.extend(new);
            }
        }
        for (mode, acc) in HOLD_MODES.iter().zip(held.iter_mut()) {
            acc.push(hold(&bin, *mode, a.hold, a.refresh, a.periods)?);
        }
    }
    let mut setup = Vec::new();
    for (tc, [e2e, path, resv, qos]) in tcs.into_iter().zip(samples) {
        let e2e = stats(e2e);
        setup.push(Setup {
            protocol: "rsvp",
            traffic_control: tc,
            samples: path.len(),
            per_hop_ms: e2e.median / 8.0,
            end_to_end_ms: e2e,
            path_ms: Some(stats(path)),
            resv_ms: Some(stats(resv)),
        });
        let samples = qos.len();
        let qos = stats(qos);
        setup.push(Setup {
            protocol: "qos-nslp",
            traffic_control: tc,
            samples,
            per_hop_ms: qos.median / 8.0,
            end_to_end_ms: qos,
            path_ms: None,
            resv_ms: None,
        });
    }
    let holding = HOLD_MODES
        .iter()
        .zip(held)
        .map(|(&mode, rs)| {
            let per = |f: &dyn Fn(&HoldRun) -> f64| median(&rs.iter().map(f).collect::<Vec<_>>());
            let r = a.refresh as f64;
            Holding {
                mode,
                hold: a.hold,
                cpu_ns_per_reservation_period: per(&|h| {
                    h.cpu_s * 1e9 / (h.window_s / r) / a.hold as f64
                }),
                cpu_percent: per(&|h| h.cpu_s / h.window_s * 100.0),
                rss_bytes_per_reservation: per(&|h| {
                    (h.held_kib as f64 - h.idle_kib as f64) * 1024.0 / a.hold as f64
                }),
                install_s: per(&|h| h.install_s),
                held_at_end: rs.iter().map(|h| h.held_at_end).collect(),
                r2_rss_idle_kib: rs.iter().map(|h| h.idle_kib).collect(),
                r2_rss_held_kib: rs.iter().map(|h| h.held_kib).collect(),
                window_s: rs.iter().map(|h| h.window_s).collect(),
                r2_cpu_s: rs.iter().map(|h| h.cpu_s).collect(),
            }
        })
        .collect();
    Ok(QosChainReport {
        sessions: a.sessions,
        hold: a.hold,
        refresh_s: a.refresh,
        gist_refresh: GIST_REFRESH,
        periods: a.periods,
        runs,
        setup,
        holding,
    })
}

/// The report as tables.
pub fn render(r: &QosChainReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "QoS NSLP and RSVP on the netns chain H1-R1-R2-R3-H2 (daemons with [rsvp], [gist], \
         [qos_nslp]), {} reservations of each one after another, {} run(s), ms:",
        r.sessions, r.runs
    );
    let _ = writeln!(
        out,
        "{:<10} {:<7} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "protocol", "tc", "median", "p99", "min", "max", "per hop"
    );
    for s in &r.setup {
        let e = &s.end_to_end_ms;
        let _ = writeln!(
            out,
            "{:<10} {:<7} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            s.protocol, s.traffic_control, e.median, e.p99, e.min, e.max, s.per_hop_ms
        );
        for (leg, st) in [("Path leg", &s.path_ms), ("Resv leg", &s.resv_ms)] {
            if let Some(st) = st {
                let _ = writeln!(
                    out,
                    "  {leg:<15} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
                    st.median, st.p99, st.min, st.max
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "R2 holding {} reservations (in-memory traffic control), R = {} s, CPU over {} periods \
         (GIST refresh {}), medians:",
        r.hold, r.refresh_s, r.periods, r.gist_refresh
    );
    let _ = writeln!(
        out,
        "{:<26} {:>10} {:>16} {:>8} {:>12} {:>12} {:>10}",
        "protocol, refresh", "held", "CPU ns/res/R", "CPU %", "RSS B/res", "RSS KiB", "install s"
    );
    for h in &r.holding {
        let _ = writeln!(
            out,
            "{:<26} {:>10} {:>16.0} {:>8.2} {:>12.0} {:>12} {:>10.1}",
            h.mode.label(),
            h.held_at_end
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("/"),
            h.cpu_ns_per_reservation_period,
            h.cpu_percent,
            h.rss_bytes_per_reservation,
            h.r2_rss_held_kib
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("/"),
            h.install_s
        );
    }
    out
}

/// Run `pathwise bench qos-chain` and print its report.
pub fn run(a: QosChainArgs) -> anyhow::Result<()> {
    crate::bench::print_report(a.json, &run_report(a)?, render)
}
