//! pathwise: the binary's library half — the glue that puts the protocol engines on their drivers
//! (the simulator, Linux sockets). `main.rs` is only the command line.
//!
//! One folder per service, each holding everything that service adds to the binary — its
//! daemon side, its command-line verbs, its benchmarks, its simulation and namespace labs:
//! [`rsvp`], [`gist`], [`oracle`], [`booster`]. The machinery they share has folders of its
//! own: [`daemon`] (the event loop that drives the RSVP and GIST services), [`config`] (loading
//! and checking `node.toml`), [`mgmt`] (the management socket), [`metrics`] (the Prometheus
//! writer), [`netns`] (network-namespace labs and the five-node chain), [`sim`] (fault
//! campaigns: the runner, invariants and faults the services' campaigns share), [`bench`] (what
//! the benchmarks share), [`demo`] and [`cli`] (which only assembles the services' commands).
#![warn(missing_docs)]

pub mod bench;
pub mod booster;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod demo;
pub mod gist;
pub mod metrics;
pub mod mgmt;
pub mod netns;
pub mod oracle;
pub mod rsvp;
pub mod sim;
