//! `pathwise daemon --config node.toml`, and `pathwise daemon --check node.toml`.

use std::path::PathBuf;

/// Arguments of `pathwise daemon`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = CHECK_HELP)]
pub struct Args {
    /// The node's configuration (TOML; see `pathwise::config`).
    #[arg(long, short, required_unless_present = "check", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Check FILE and exit without starting anything (no sockets, no root needed): print
    /// every error found with its file, line and field and exit 1, or a one-line summary.
    #[arg(long, value_name = "FILE", conflicts_with = "config")]
    check: Option<PathBuf>,
}

/// What `--check` reports, for `--help`.
pub const CHECK_HELP: &str = "\
--check reports every error it can find, one per line as FILE:LINE: FIELD: MESSAGE (line 0: \
the file as a whole), and exits 1 if there is any:
  - TOML syntax errors: all of them;
  - a value of the wrong type or an unknown key: the first in each section (parsing a \
section stops there);
  - checks of parsed values (per interface, per LSP, per setting): all of them;
  - the running system, where an unprivileged process can look: interfaces exist, the \
socket group exists, key and certificate files are readable, private and well-formed, the kernel forwards MPLS \
(mpls = \"kernel\").
Checks that need the running service and its privileges (binding sockets, interception, \
traffic control) are listed as not checked.";

/// Run the daemon until SIGINT/SIGTERM, or check its configuration.
pub fn run(a: Args) -> anyhow::Result<()> {
    match (a.check, a.config) {
        (Some(file), _) => crate::daemon::check::check(&file).finish(),
        (None, Some(config)) => crate::daemon::run(&config),
        (None, None) => anyhow::bail!("give --config FILE or --check FILE"),
    }
}
