//! The command line. Each service declares its own commands (`rsvp::cli`, `gist::cli`,
//! `oracle::cli`, `booster::cli`, and its benchmarks in `…::bench`); this module only assembles
//! them into one `pathwise` command. `main.rs` only parses and dispatches.

pub mod docs;

use clap::{Parser, Subcommand};

/// `pathwise --version`: the version and the commit it was built from.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("PATHWISE_GIT_COMMIT"),
    ")"
);

/// Path-aware network control services: RSVP, GIST, a locality oracle and protocol boosters.
#[derive(Debug, Parser)]
#[command(name = "pathwise", version = VERSION, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The command groups.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulated demos, no root or config needed: RSVP across the KOM testbed, a GIST ping across
    /// the thesis testbed, the oracle ranking a query on the seed network.
    Demo(crate::demo::cli::Args),
    /// Protocol boosters: run a gateway, and show, insert, remove boosters and read counters
    /// on a running one.
    Booster {
        /// What to do.
        #[command(subcommand)]
        what: crate::booster::cli::Booster,
    },
    /// Locality oracle (Proxidor v0.2): serve, manage a running server (show, set, reload,
    /// dump, create, delete), query it (ping, multi, flood), generate a database.
    Oracle {
        /// What to do.
        #[command(subcommand)]
        what: crate::oracle::cli::Oracle,
    },
    /// Run the services a node configuration enables (RSVP, GIST, the QoS NSLP) until
    /// SIGINT/SIGTERM.
    Daemon(crate::daemon::cli::Args),
    /// RSVP on a running daemon: senders, reservations, state.
    Rsvp(crate::rsvp::cli::Args),
    /// GIST on a running daemon: ping along a path, routing state, associations, counters.
    Gist(crate::gist::cli::Args),
    /// The QoS NSLP on a running daemon: reserve along a path, release, query, show.
    Qos(crate::qos::cli::Args),
    /// Load generators: RSVP end hosts with KOM's session churn (seed 001 §IV).
    Loadgen {
        /// Which generator.
        #[command(subcommand)]
        what: crate::loadgen::cli::Loadgen,
    },
    /// Simulations: fault campaigns over many seeds.
    Sim {
        /// What to do.
        #[command(subcommand)]
        what: crate::sim::SimCommand,
    },
    /// Benchmarks that print a table (and JSON with --json).
    Bench {
        /// Which benchmark.
        #[command(subcommand)]
        which: Bench,
    },
    /// Print a shell completion script, e.g. `pathwise completions bash >
    /// /etc/bash_completion.d/pathwise`.
    Completions(docs::CompletionsArgs),
    /// Write the manual pages (pathwise.1 and one per subcommand) into a directory.
    Man(docs::ManArgs),
}

/// The macro-benchmarks, each declared by its service.
#[derive(Debug, Subcommand)]
pub enum Bench {
    /// RSVP's benchmarks.
    #[command(flatten)]
    Rsvp(crate::rsvp::bench::Bench),
    /// GIST's benchmarks.
    #[command(flatten)]
    Gist(crate::gist::bench::Bench),
    /// RSVP routers at scale on the five-node network-namespace chain (root): `pathwise
    /// loadgen rsvp` churns N flows (KOM's load, seed 001 §IV) through R1–R3; per N and shard
    /// count, R2's average flow lifetime, CPU (/proc, schedstat) and memory, and the most flows
    /// held (seed 001 Tables I, II, IV).
    RsvpScale(crate::loadgen::scale::RsvpScaleArgs),
    /// Protocol boosters on two gateways in network namespaces (root): ping RTT vs size,
    /// iperf3 throughput over a 10 Mbit/s link, FEC under loss, null vs plain TUN and encrypt vs
    /// wireguard-go.
    Booster(crate::booster::cli::BenchArgs),
    /// Locality oracle server on loopback: replies/s and RTT against IPs per query and worker
    /// threads (seed network), a plain UDP echo server in the same run (ratio oracle/echo),
    /// and a 10 vs 10,000 router network.
    Oracle(crate::oracle::cli::BenchArgs),
    /// The oracle's ALTO server on loopback: endpoint-cost requests/s with N endpoints over
    /// HTTP/1.1 keep-alive from C clients, against a trivial handler of the same server in the
    /// same run (ratio ALTO/trivial), seed network.
    Alto(crate::oracle::alto::bench::BenchArgs),
    /// The oracle's BMP feed on loopback with full tables (1M IPv4 + 200k IPv6 prefixes x 4
    /// exits by default): prefix changes applied per second while loading and under churn,
    /// update-to-answer latency (median, p99) and the memory of the full-table snapshot.
    OracleBgp(crate::oracle::bgp_bench::BgpBenchArgs),
    /// Soak: the five-node chain under churn (RSVP and GIST sessions started and ended
    /// continuously, in process over the simulator) for `--duration`, reporting RSS, heap, CPU,
    /// state per node and messages per sample, and whether memory stayed flat.
    Soak(crate::bench::soak::SoakArgs),
    /// The QoS NSLP side by side with RSVP on the same simulated chain R0 - R1 - R2: bytes on
    /// the wire per reservation per refresh period with full and reduced refresh, the transit's
    /// CPU per reservation per refresh period and its heap per reservation.
    Qos(crate::qos::bench::QosBenchArgs),
    /// The QoS NSLP beside RSVP on the five-node network-namespace chain (root), daemons
    /// running [rsvp], [gist] and [qos_nslp]: setup time end to end and per hop (HTB and
    /// admission only), then R2's CPU per reservation per refresh period and memory per
    /// reservation while holding many, with full and reduced refresh.
    QosChain(crate::qos::bench::chain::QosChainArgs),
}

impl Cli {
    /// Run the parsed command.
    pub fn run(self) -> anyhow::Result<()> {
        if !self.serves() {
            end_quietly_on_a_closed_pipe();
        }
        match self.command {
            Command::Demo(a) => crate::demo::cli::run(a),
            Command::Daemon(a) => crate::daemon::cli::run(a),
            Command::Rsvp(a) => crate::rsvp::cli::run(a),
            Command::Gist(a) => crate::gist::cli::run(a),
            Command::Qos(a) => crate::qos::cli::run(a),
            Command::Oracle { what } => crate::oracle::cli::run(what),
            Command::Booster { what } => crate::booster::cli::run(what),
            Command::Completions(a) => docs::completions(a),
            Command::Man(a) => docs::man(a),
            Command::Loadgen { what } => crate::loadgen::cli::run(what),
            Command::Sim { what } => crate::sim::run(what),
            Command::Bench { which } => match which {
                Bench::Rsvp(b) => crate::rsvp::bench::run(b),
                Bench::Gist(b) => crate::gist::bench::run(b),
                Bench::RsvpScale(a) => crate::loadgen::scale::run(a),
                Bench::Booster(a) => crate::booster::cli::run_bench(a),
                Bench::Oracle(a) => crate::oracle::cli::run_bench(a),
                Bench::Alto(a) => crate::oracle::alto::bench::run_cli(a),
                Bench::OracleBgp(a) => crate::oracle::bgp_bench::run(a),
                Bench::Soak(a) => crate::bench::soak::run(a),
                Bench::Qos(a) => crate::qos::bench::run(a),
                Bench::QosChain(a) => crate::qos::bench::chain::run(a),
            },
        }
    }
}

impl Cli {
    /// Whether the command runs a service (a daemon, a server, a gateway) or drives daemons it
    /// started over their sockets (benchmarks, load generators): such a process must learn
    /// from a write's error that a peer has gone, not be killed by it.
    fn serves(&self) -> bool {
        use crate::booster::cli::Booster;
        use crate::oracle::cli::Oracle;
        matches!(
            self.command,
            Command::Daemon(_)
                | Command::Bench { .. }
                | Command::Loadgen { .. }
                | Command::Oracle {
                    what: Oracle::Serve(_)
                }
                | Command::Booster {
                    what: Booster::Gateway { .. }
                }
        )
    }
}

/// `pathwise … | head`: when the reader of standard output goes away, end as a Unix filter
/// does (killed by SIGPIPE, silently) instead of panicking in `print!` with EPIPE. Rust
/// starts every program with SIGPIPE ignored so that writes return errors; that stays so for
/// the services (`Cli::serves`), whose socket writes must not kill them.
fn end_quietly_on_a_closed_pipe() {
    // SAFETY: restoring a signal's default disposition, before any thread is started; no
    // handler runs.
    #[allow(unsafe_code)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// How a client command reaches a running daemon.
#[derive(Debug, clap::Args)]
pub struct DaemonArgs {
    /// The daemon's management socket.
    #[arg(long, global = true, default_value_os_t = crate::config::default_socket())]
    pub socket: std::path::PathBuf,
    /// Print JSON.
    #[arg(long, global = true)]
    pub json: bool,
}
