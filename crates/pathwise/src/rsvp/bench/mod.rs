//! RSVP's benchmarks: the engine at a transit node ([`engine`], `pathwise bench rsvp`), the
//! daemons on the namespace chain ([`chain`]), setup with and without integrity
//! ([`integrity`]), and refresh reduction in simulation (`bench rsvp-refresh`, in
//! [`crate::rsvp::te_sim`]).

pub mod chain;
pub mod engine;
pub mod integrity;

use crate::bench::print_report;

/// RSVP's `pathwise bench …` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Bench {
    /// Path and Resv processing cost at a transit node holding N sessions, and bytes of state
    /// per session.
    Rsvp {
        /// What to run.
        #[command(flatten)]
        options: engine::RsvpBenchOptions,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
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
    /// RSVP daemons on a five-node network-namespace chain (root): setup latency (median, p99,
    /// per hop), then R2's memory and CPU while holding many reservations.
    RsvpChain {
        /// Sessions set up one after the other for the latency figures.
        #[arg(long, default_value_t = 200)]
        sessions: usize,
        /// Reservations held for the memory and CPU figures.
        #[arg(long, default_value_t = 10_000)]
        hold: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
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
            json,
        } => {
            let report = chain::run(sessions, hold)?;
            print_report(json, &report, chain::render)
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
        Bench::Rsvp { options, json } => {
            print_report(json, &engine::rsvp(options), engine::render_rsvp)
        }
    }
}
