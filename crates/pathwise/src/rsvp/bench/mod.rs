//! RSVP's benchmarks: the engine at a transit node ([`engine`], `pathwise bench rsvp`), the
//! daemons on the namespace chain ([`chain`], its per-hop times from packet timestamps in
//! [`capture`]), setup with and without integrity ([`integrity`]), and refresh reduction in
//! simulation (`bench rsvp-refresh`, in [`crate::rsvp::te_sim`]).

pub mod capture;
pub mod chain;
pub mod engine;
pub mod integrity;

use crate::bench::{plot_target, plot_to, print_report};
use crate::rsvp::config::TrafficControlKind;
use std::path::PathBuf;

/// The most reservations `bench rsvp-chain --hold` asks R2 to admit.
const MAX_HOLD: usize = 15_000;

/// One row of the KOM RSVP daemon's performance tables (seed 001).
#[derive(Debug, Clone, Copy)]
pub struct KomRow {
    /// Flows held.
    pub flows: u32,
    /// Highest CPU load observed, percent.
    pub cpu_percent: f64,
    /// Memory, KiB ("K" in the paper).
    pub memory_kib: u32,
    /// Memory with no flow, KiB.
    pub idle_kib: u32,
}

impl KomRow {
    /// Memory per flow above idle, bytes.
    pub fn bytes_per_flow(&self) -> f64 {
        f64::from(self.memory_kib - self.idle_kib) * 1024.0 / f64::from(self.flows.max(1))
    }
}

const fn kom(flows: u32, cpu_percent: f64, memory_kib: u32, idle_kib: u32) -> KomRow {
    KomRow {
        flows,
        cpu_percent,
        memory_kib,
        idle_kib,
    }
}

/// Seed 001 Table I, the KOM rsvpd columns (basic engine, load from two nodes).
pub const KOM_BASIC: [KomRow; 12] = [
    kom(0, 0.00, 2724, 2724),
    kom(500, 1.13, 3620, 2724),
    kom(1000, 3.56, 4544, 2724),
    kom(1500, 5.32, 5472, 2724),
    kom(2000, 7.37, 6388, 2724),
    kom(2500, 9.91, 7308, 2724),
    kom(3000, 13.38, 8236, 2724),
    kom(3500, 16.60, 9160, 2724),
    kom(4000, 20.26, 10084, 2724),
    kom(4500, 23.73, 11008, 2724),
    kom(5000, 27.83, 11928, 2724),
    kom(5500, 32.96, 12848, 2724),
];

/// Seed 001 Table II, the tuned KOM rsvpd columns (load from four nodes), the rows with the
/// 25 ms creation/removal interval.
pub const KOM_TUNED: [KomRow; 10] = [
    kom(0, 0.00, 4724, 4724),
    kom(2500, 4.39, 9324, 4724),
    kom(5000, 8.50, 13940, 4724),
    kom(7500, 11.38, 18560, 4724),
    kom(10000, 14.75, 23168, 4724),
    kom(15000, 20.95, 32396, 4724),
    kom(20000, 27.73, 41632, 4724),
    kom(30000, 40.67, 60096, 4724),
    kom(40000, 55.17, 78556, 4724),
    kom(50000, 67.99, 97012, 4724),
];

/// RSVP's `pathwise bench …` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Bench {
    /// Path and Resv processing cost at a transit node holding N sessions, and bytes of state
    /// per session.
    Rsvp {
        /// Sessions at the transit node; several (comma-separated) run one after another, a
        /// report each.
        #[arg(long, value_delimiter = ',', default_value = "100000")]
        sessions: Vec<usize>,
        /// What to run.
        #[command(flatten)]
        options: engine::RsvpBenchOptions,
        /// Print JSON instead of a table (an array with several session counts).
        #[arg(long)]
        json: bool,
        /// Draw ns per message and bytes per session against the session count into this
        /// SVG file.
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
    },
    /// Keeping RSVP-TE LSPs alive across seed 004's R0 – R1 – R2 in simulation: messages and
    /// bytes per second on the links with full refresh and with refresh reduction (RFC 2961).
    RsvpRefresh {
        /// LSPs.
        #[arg(long, default_value_t = 10_000)]
        lsps: usize,
        /// Refresh period R, seconds.
        #[arg(long, default_value_t = 30)]
        refresh: u64,
        /// Refresh periods counted (after two to settle).
        #[arg(long, default_value_t = 10)]
        periods: u32,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// RSVP daemons on a five-node network-namespace chain (root): setup latency end to end
    /// (median, p99) and per transit hop (how long each router holds a Path and a Resv, from
    /// kernel packet timestamps), then R2's memory and CPU while holding many reservations.
    RsvpChain {
        /// Sessions set up one after the other for the latency figures.
        #[arg(long, default_value_t = 200)]
        sessions: usize,
        /// Reservations held for the memory and CPU figures (at most 15,000); several
        /// (comma-separated) are measured one after another, each on a fresh chain.
        #[arg(long, value_delimiter = ',', default_value = "10000")]
        hold: Vec<usize>,
        /// Skip the memory and CPU figures (the latency runs only).
        #[arg(long)]
        latency_only: bool,
        /// RSVP shards in every daemon of the chain (`[daemon] threads`).
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Traffic control of the latency runs with classes installed: "htb" (over rtnetlink),
        /// "htb-tc" (one `tc` process per operation); several (comma-separated) are measured one
        /// after another, each on a fresh chain. The signaling alone ("memory") is always
        /// measured too.
        #[arg(long, value_enum, value_delimiter = ',', default_value = "htb")]
        traffic_control: Vec<TrafficControlKind>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Draw R2's CPU and memory against the reservations held (with the KOM daemon's,
        /// seed 001 Tables I and II) into this SVG file.
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
    },
    /// RSVP setup time with RFC 2747 integrity required on every link of the five-node
    /// network-namespace chain (root), against integrity off, for batches of sessions (seed
    /// 004 Figs. 2–6).
    RsvpIntegrity {
        /// Batch sizes: sessions set up together.
        #[arg(long, value_delimiter = ',', default_value = "1,10,100,1000,10000")]
        sessions: Vec<usize>,
        /// Algorithms compared with integrity off.
        #[arg(long, value_delimiter = ',', default_value = "hmac-md5,hmac-sha256")]
        algorithms: Vec<pathwise_auth::Algorithm>,
        /// Repetitions (each on fresh chains, configurations interleaved); medians are
        /// reported.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Set up RSVP-TE LSPs (H1 to H2, routed, the egress answering) instead of IP sessions.
        #[arg(long)]
        lsps: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// Run a benchmark and print its report.
pub fn run(b: Bench) -> anyhow::Result<()> {
    match b {
        Bench::RsvpChain {
            sessions,
            hold,
            latency_only,
            threads,
            traffic_control,
            json,
            plot,
        } => {
            anyhow::ensure!(
                !traffic_control.contains(&TrafficControlKind::Memory),
                "--traffic-control: memory (the signaling alone) is always measured; choose htb or htb-tc"
            );
            let hold = if latency_only { Vec::new() } else { hold };
            // R2 → R3 admits 8 Mbit/s (80% of 10), 500 bit/s each: 16,000 fit; keep a margin.
            anyhow::ensure!(
                hold.iter().all(|&n| n <= MAX_HOLD),
                "--hold: at most {MAX_HOLD} reservations (R2 admits 8 Mbit/s towards R3, 500 bit/s each)"
            );
            plot_target(plot.as_deref())?;
            let report = chain::run(sessions, &hold, &traffic_control, threads)?;
            print_report(json, &report, chain::render)?;
            plot_to(plot.as_deref(), &chain::figures(&report))
        }
        Bench::RsvpIntegrity {
            sessions,
            algorithms,
            runs,
            lsps,
            json,
        } => {
            let report = integrity::run(&sessions, &algorithms, runs, lsps)?;
            print_report(json, &report, integrity::render)
        }
        Bench::RsvpRefresh {
            lsps,
            refresh,
            periods,
            json,
        } => {
            let r = pathwise_core::time::Duration::from_secs(refresh);
            let report = crate::rsvp::te_sim::refresh_report(lsps, r, periods);
            print_report(json, &report, crate::rsvp::te_sim::render_refresh)
        }
        Bench::Rsvp {
            sessions,
            options,
            json,
            plot,
        } => {
            plot_target(plot.as_deref())?;
            anyhow::ensure!(
                sessions.iter().all(|&n| n > 0),
                "--sessions: each count must be at least 1"
            );
            let mut reports = Vec::new();
            for &n in &sessions {
                let r = engine::rsvp(n, options);
                if !json {
                    print!("{}", engine::render_rsvp(&r));
                }
                reports.push(r);
            }
            if json {
                match reports.as_slice() {
                    [one] => print_report(true, one, engine::render_rsvp)?,
                    all => print_report(true, &all, |_| String::new())?,
                }
            }
            plot_to(plot.as_deref(), &engine::figures(&reports))
        }
    }
}
