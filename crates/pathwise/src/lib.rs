//! pathwise: the binary's library half — the glue that puts the protocol engines on their drivers
//! (the simulator, Linux sockets). `main.rs` is only the command line.
//!
//! One folder per service, each holding everything that service adds to the binary — its
//! daemon side, its command-line verbs, its benchmarks, its simulation and namespace labs:
//! [`rsvp`], [`gist`], [`oracle`], [`booster`]. The machinery they share has folders of its
//! own: [`daemon`] (the event loop that drives the RSVP and GIST services), [`config`] (loading
//! and checking `node.toml`), [`mgmt`] (the management socket), [`metrics`] (what every
//! service serves over HTTP for Prometheus), [`netns`] (network-namespace labs and the five-node chain), [`sim`] (fault
//! campaigns: the runner, invariants and faults the services' campaigns share), [`bench`] (what
//! the benchmarks share), [`demo`] and [`cli`] (which only assembles the services' commands);
//! [`caps`] names the Linux capabilities each service needs instead of root.
//! [`build_info`] says which version and commit this is.
#![warn(missing_docs)]

pub mod bench;
pub mod booster;
pub mod caps;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod demo;
pub mod gist;
pub mod loadgen;
pub mod metrics;
pub mod mgmt;
pub mod netns;
pub mod oracle;
pub mod qos;
pub mod rsvp;
pub mod sim;

/// What this binary is: its version and the git commit it was built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildInfo {
    /// The package version (`Cargo.toml`).
    pub version: &'static str,
    /// `git rev-parse --short HEAD` at build time; "unknown" when built outside a git
    /// checkout (or `PATHWISE_GIT_COMMIT` when set at build time, e.g. by a packager).
    pub commit: &'static str,
}

/// This build's version and commit (for `--version` and metrics).
pub fn build_info() -> BuildInfo {
    BuildInfo {
        version: env!("CARGO_PKG_VERSION"),
        commit: env!("PATHWISE_GIT_COMMIT"),
    }
}
