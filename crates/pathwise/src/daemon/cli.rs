//! `pathwise daemon --config node.toml`.

use std::path::PathBuf;

/// Arguments of `pathwise daemon`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The node's configuration (TOML; see `pathwise::config`).
    #[arg(long, short)]
    config: PathBuf,
}

/// Run the daemon until SIGINT/SIGTERM.
pub fn run(a: Args) -> anyhow::Result<()> {
    crate::daemon::run(&a.config)
}
