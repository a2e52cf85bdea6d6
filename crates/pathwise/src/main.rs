//! The `pathwise` command.

use anyhow::Result;
use clap::{Parser, Subcommand};

#[global_allocator]
static ALLOC: pathwise::bench::alloc::Counting = pathwise::bench::alloc::Counting;

/// Path-aware network control services: RSVP, and more to come.
#[derive(Debug, Parser)]
#[command(name = "pathwise", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run RSVP across the KOM testbed in simulation and show the reservations (no root, no
    /// config needed).
    Demo {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Simulation seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Benchmarks that print a table (and JSON with --json).
    Bench {
        #[command(subcommand)]
        which: Bench,
    },
}

#[derive(Debug, Subcommand)]
enum Bench {
    /// Path and Resv processing cost at a transit node holding N sessions, and bytes of state
    /// per session.
    Rsvp {
        /// Sessions at the transit node.
        #[arg(long, default_value_t = 100_000)]
        sessions: usize,
        /// Repetitions; medians are reported.
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Use the fuzzy timer wheel (seed 001 §III.B).
        #[arg(long)]
        fuzzy: bool,
        /// Tell the engine the session count up front (`expected_sessions`), so its tables are
        /// sized once instead of grown.
        #[arg(long)]
        presize: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Demo { json, seed } => {
            let report = pathwise::demo::run(seed);
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", pathwise::demo::render(&report));
            }
        }
        Command::Bench {
            which:
                Bench::Rsvp {
                    sessions,
                    runs,
                    fuzzy,
                    presize,
                    json,
                },
        } => {
            let report = pathwise::bench::rsvp(sessions, runs, fuzzy, presize);
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", pathwise::bench::render_rsvp(&report));
            }
        }
    }
    Ok(())
}
