//! GIST's benchmarks on the five-node namespace chain: setup, RTT and CPU per session over
//! UDP, TCP and TLS ([`chain`]), the NSLP API in process against IPC ([`api`]), the responder's
//! CPU and memory against the sessions it holds ([`scale`]), and the cost of taking Q-mode
//! packets off the path ([`interception`]).

pub mod api;
pub mod chain;
pub mod engine;
pub mod interception;
pub mod scale;

use crate::bench::{plot_target, plot_to, print_report};
use std::path::PathBuf;

/// GIST's `pathwise bench …` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Bench {
    /// Bytes of routing state per session on the GIST engine alone (counting allocator):
    /// a querying and a responding engine back to back, N sessions through the full handshake;
    /// and the steady state after it (refreshes and NSLP messages): allocations per message.
    GistEngine {
        /// Sessions; several (comma-separated) run one after another, a report each.
        #[arg(long, value_delimiter = ',', default_value = "100000")]
        sessions: Vec<usize>,
        /// Repetitions; medians are reported.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Tell the engines the session count up front (`expected_sessions`).
        #[arg(long)]
        presize: bool,
        /// Print JSON instead of a table (an array with several session counts).
        #[arg(long)]
        json: bool,
    },
    /// GIST daemons on the five-node network-namespace chain (root): the load client over UDP,
    /// TCP and TLS — session setup time (per hop), RTTs, daemons' CPU time per session.
    GistChain {
        /// Sessions per run (thousands, so that R2's CPU per session is well above the
        /// clock's resolution and the daemon's idle cost).
        #[arg(long, default_value_t = 5000)]
        sessions: u32,
        /// Sessions opened per second (and pings per second after).
        #[arg(long, default_value_t = 500.0)]
        rate: f64,
        /// Rounds (each transport once per round, alternating); medians are reported.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Draw setup time, RTT and the daemons' CPU per session for each transport into this
        /// SVG file.
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
    },
    /// What intercepting Queries in transit costs a router (root): R2's daemon CPU per Query it
    /// takes off the path and per Query it lets pass, with netfilter queueing against the
    /// Router Alert socket option, on the five-node network-namespace chain.
    GistInterception {
        /// Queries per second sent from H1 towards H2.
        #[arg(long, default_value_t = 2000)]
        rate: u32,
        /// Seconds per flood.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Rounds (each mechanism once per round, alternating); medians are reported.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The NSLP API, plug-in against IPC, at the responder (seed 000 §4.3.2, Fig. 4.4): H2's
    /// CPU (daemon, plus the NSLP process over IPC) while the load client keeps N flows alive
    /// on the five-node network-namespace chain (root); UDP, GIST refresh 180 s.
    GistApi {
        /// Load levels: concurrent flows (sessions).
        #[arg(long, value_delimiter = ',', default_value = "1000,2500,5000")]
        sessions: Vec<u32>,
        /// Sessions opened per second before the measured steady phase.
        #[arg(long, default_value_t = 500.0)]
        setup_rate: f64,
        /// Seconds between two pings of one flow (the NSLP refresh; the thesis's 30 s).
        #[arg(long, default_value_t = 30.0)]
        nslp_refresh: f64,
        /// Seconds of the steady phase over which CPU is measured.
        #[arg(long, default_value_t = 30.0)]
        window: f64,
        /// Rounds (every load level with each API per round, alternating); medians reported.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Which NSLP API.
        #[arg(long, value_enum, default_value_t = api::ApiChoice::Both)]
        api: api::ApiChoice,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Draw H2's CPU against the flows, plug-in vs IPC, and their ratio (seed 000 Fig.
        /// 4.4) into this SVG file.
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
    },
    /// The responder's CPU and memory against the sessions it holds, towards a million (issue
    /// #21; seed 000 §4.4's curve): per N a fresh five-node namespace chain (root), the load
    /// client in H1 opening N sessions to H2 and refreshing each every NSLP refresh; stops
    /// after the first N not held.
    GistScale {
        /// Sessions N, one run each (comma-separated), smallest first.
        #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
        sessions: Vec<u32>,
        /// Sessions opened per second.
        #[arg(long, default_value_t = 5000.0)]
        setup_rate: f64,
        /// Seconds between two pings of one session (the NSLP refresh; the thesis's 30 s).
        #[arg(long, default_value_t = 30.0)]
        nslp_refresh: f64,
        /// Seconds of the steady phase over which CPU is measured.
        #[arg(long, default_value_t = 30.0)]
        window: f64,
        /// The daemons' `[daemon] receive_hold` ("0s": off).
        #[arg(long, default_value = "1ms")]
        receive_hold: pathwise_core::units::TimeSpan,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// Run a benchmark and print its report.
pub fn run(b: Bench) -> anyhow::Result<()> {
    match b {
        Bench::GistEngine {
            sessions,
            runs,
            presize,
            json,
        } => {
            let mut reports = Vec::new();
            for &n in &sessions {
                let r = engine::run(n, runs, presize)?;
                if !json {
                    print!("{}", engine::render(&r));
                }
                reports.push(r);
            }
            if json {
                print_report(true, &reports, |_| String::new())?;
            }
            Ok(())
        }
        Bench::GistChain {
            sessions,
            rate,
            runs,
            json,
            plot,
        } => {
            plot_target(plot.as_deref())?;
            let report = chain::run(sessions, rate, runs)?;
            print_report(json, &report, chain::render)?;
            plot_to(plot.as_deref(), &chain::figures(&report))
        }
        Bench::GistInterception {
            rate,
            seconds,
            runs,
            json,
        } => {
            let report = interception::run(&interception::Params {
                rate,
                seconds,
                runs,
            })?;
            print_report(json, &report, interception::render)
        }
        Bench::GistApi {
            sessions,
            setup_rate,
            nslp_refresh,
            window,
            runs,
            api,
            json,
            plot,
        } => {
            plot_target(plot.as_deref())?;
            let report = api::run(&api::Params {
                sessions,
                setup_rate,
                nslp_refresh_s: nslp_refresh,
                window_s: window,
                runs,
                api,
                gist_on_routers: true,
                log: "debug",
                receive_hold: None,
            })?;
            print_report(json, &report, api::render)?;
            plot_to(plot.as_deref(), &api::figures(&report))
        }
        Bench::GistScale {
            sessions,
            setup_rate,
            nslp_refresh,
            window,
            receive_hold,
            json,
        } => {
            let mut p = scale::params(sessions, setup_rate, nslp_refresh, window);
            p.receive_hold = Some(receive_hold);
            let report = scale::run(&p)?;
            print_report(json, &report, scale::render)
        }
    }
}
