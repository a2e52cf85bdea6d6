//! `pathwise bench …`.

use clap::Subcommand;

/// The macro-benchmarks.
#[derive(Debug, Subcommand)]
pub enum Bench {
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

/// Run a benchmark and print its report.
pub fn run(b: Bench) -> anyhow::Result<()> {
    match b {
        Bench::Rsvp {
            sessions,
            runs,
            fuzzy,
            presize,
            json,
        } => {
            let report = crate::bench::rsvp(sessions, runs, fuzzy, presize);
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", crate::bench::render_rsvp(&report));
            }
        }
    }
    Ok(())
}
