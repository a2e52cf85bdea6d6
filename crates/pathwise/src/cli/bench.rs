//! `pathwise bench …`.

use clap::Subcommand;

/// The macro-benchmarks.
#[derive(Debug, Subcommand)]
pub enum Bench {
    /// Path and Resv processing cost at a transit node holding N sessions, and bytes of state
    /// per session.
    Rsvp {
        /// What to run.
        #[command(flatten)]
        options: crate::bench::RsvpBenchOptions,
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
        #[arg(long, value_enum, default_value_t = crate::bench::gist_api::ApiChoice::Both)]
        api: crate::bench::gist_api::ApiChoice,
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
    /// Protocol boosters on two gateways in network namespaces (root): ping RTT vs size,
    /// iperf3 throughput over a 10 Mbit/s link, FEC under loss, null vs plain TUN and encrypt vs
    /// wireguard-go.
    Booster(BoosterArgs),
    /// Locality oracle server on loopback: replies/s and RTT against IPs per query and worker
    /// threads (seed network), a plain UDP echo server in the same run (ratio oracle/echo),
    /// and a 10 vs 10,000 router network.
    Oracle(crate::cli::oracle::BenchArgs),
}

/// `pathwise bench booster` arguments.
#[derive(Debug, clap::Args)]
pub struct BoosterArgs {
    /// Experiment: rtt (seed Fig. 6), throughput (seed Table 1), fec, compare (null vs plain
    /// TUN forwarder, encrypt vs wireguard-go), or all.
    #[arg(default_value = "all")]
    experiment: String,
    /// Repetitions; medians are reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seconds per iperf3 transfer.
    #[arg(long, default_value_t = 5)]
    seconds: u32,
    /// Pings per packet size and run.
    #[arg(long, default_value_t = 20)]
    pings: u32,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

fn run_booster(a: BoosterArgs) -> anyhow::Result<()> {
    let opt = crate::booster::bench::Options {
        runs: a.runs.max(1),
        seconds: a.seconds.max(1),
        pings: a.pings.max(1),
        binary: std::env::current_exe()?,
    };
    let exps = crate::booster::bench::run(&a.experiment, &opt)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&exps)?);
    } else {
        print!("{}", crate::booster::bench::render(&exps));
    }
    Ok(())
}

/// Print a report as JSON or as its table.
fn print_report<T: serde::Serialize>(
    json: bool,
    report: &T,
    render: impl Fn(&T) -> String,
) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print!("{}", render(report));
    }
    Ok(())
}

/// Run a benchmark and print its report.
pub fn run(b: Bench) -> anyhow::Result<()> {
    match b {
        Bench::RsvpChain {
            sessions,
            hold,
            json,
        } => {
            let report = crate::bench::rsvp_chain::run(sessions, hold)?;
            print_report(json, &report, crate::bench::rsvp_chain::render)?
        }
        Bench::GistChain {
            sessions,
            rate,
            runs,
            json,
        } => {
            let report = crate::bench::gist_chain::run(sessions, rate, runs)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", crate::bench::gist_chain::render(&report));
            }
        }
        Bench::GistApi {
            sessions,
            setup_rate,
            nslp_refresh,
            window,
            runs,
            api,
            json,
        } => {
            let report = crate::bench::gist_api::run(&crate::bench::gist_api::Params {
                sessions,
                setup_rate,
                nslp_refresh_s: nslp_refresh,
                window_s: window,
                runs,
                api,
            })?;
            print_report(json, &report, crate::bench::gist_api::render)?
        }
        Bench::RsvpIntegrity {
            sessions,
            algorithms,
            runs,
            lsps,
            json,
        } => {
            let report = crate::bench::rsvp_integrity::run(&sessions, &algorithms, runs, lsps)?;
            print_report(json, &report, crate::bench::rsvp_integrity::render)?
        }
        Bench::RsvpRefresh {
            lsps,
            refresh,
            periods,
            json,
        } => {
            let r = pathwise_core::time::Duration::from_secs(refresh);
            let report = crate::rsvp_te_sim::refresh_report(lsps, r, periods);
            print_report(json, &report, crate::rsvp_te_sim::render_refresh)?
        }
        Bench::Booster(a) => return run_booster(a),
        Bench::Oracle(a) => return crate::cli::oracle::run_bench(a),
        Bench::Rsvp { options, json } => print_report(
            json,
            &crate::bench::rsvp(options),
            crate::bench::render_rsvp,
        )?,
    }
    Ok(())
}
