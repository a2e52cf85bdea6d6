//! The command line: one module per command group, each with its clap arguments and its `run`.
//! `main.rs` only parses and dispatches.

pub mod bench;
pub mod booster;
pub mod daemon;
pub mod demo;
pub mod gist;
pub mod gist_attack;
pub mod oracle;
pub mod rsvp;

use clap::{Parser, Subcommand};

/// Path-aware network control services: RSVP, GIST, a locality oracle and protocol boosters.
#[derive(Debug, Parser)]
#[command(name = "pathwise", version, about)]
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
    Demo(demo::Args),
    /// Protocol boosters: run a gateway, and show, insert, remove boosters and read counters
    /// on a running one.
    Booster {
        /// What to do.
        #[command(subcommand)]
        what: booster::Booster,
    },
    /// Locality oracle (Proxidor v0.2): serve, manage a running server (show, set, reload,
    /// dump, create, delete), query it (ping, multi, flood), generate a database.
    Oracle {
        /// What to do.
        #[command(subcommand)]
        what: oracle::Oracle,
    },
    /// Run the services a node configuration enables (RSVP, GIST) until SIGINT/SIGTERM.
    Daemon(daemon::Args),
    /// RSVP on a running daemon: senders, reservations, state.
    Rsvp(rsvp::Args),
    /// GIST on a running daemon: ping along a path, routing state, associations, counters.
    Gist(gist::Args),
    /// Benchmarks that print a table (and JSON with --json).
    Bench {
        /// Which benchmark.
        #[command(subcommand)]
        which: bench::Bench,
    },
}

impl Cli {
    /// Run the parsed command.
    pub fn run(self) -> anyhow::Result<()> {
        match self.command {
            Command::Demo(a) => demo::run(a),
            Command::Daemon(a) => daemon::run(a),
            Command::Rsvp(a) => rsvp::run(a),
            Command::Gist(a) => gist::run(a),
            Command::Bench { which } => bench::run(which),
            Command::Oracle { what } => oracle::run(what),
            Command::Booster { what } => booster::run(what),
        }
    }
}

/// How a client command reaches a running daemon.
#[derive(Debug, clap::Args)]
pub struct DaemonArgs {
    /// The daemon's management socket.
    #[arg(long, global = true, default_value_os_t = crate::daemon::config::default_socket())]
    pub socket: std::path::PathBuf,
    /// Print JSON.
    #[arg(long, global = true)]
    pub json: bool,
}
