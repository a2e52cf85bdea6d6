//! pathwise-oracle: the locality oracle of seed 002 (the P2P-Oracle server) as pure code.
//!
//! An ISP's oracle ranks candidate peer addresses for a client by network cost. This crate holds
//! everything but the sockets: the topology database, the ranking, the Proxidor v0.2 codec and
//! the per-datagram answer function. The `pathwise` binary drives it (server, console, clients).
//!
//! How it is used:
//!
//! 1. Load a configuration: [`config::from_toml_str`] / [`config::load_file`] (TOML), or
//!    [`config::seed::import_file`] for the seed's own files (Fig. 10–11); or generate one with
//!    [`generate::seed_network`] / [`generate::synthetic`].
//! 2. [`TopologySnapshot::build`] compiles it into an immutable snapshot: routers and directed
//!    links, routes (explicit or shortest paths), the router-pair path cache, and one
//!    longest-prefix-match table of source and external networks with their exits (§3.2.3).
//! 3. Serve: put the snapshot in a [`SharedSnapshot`] (arc-swap); each worker calls
//!    [`proxidor::answer`] per datagram with the current snapshot. Readers never wait.
//! 4. Update live: [`TopologySnapshot::apply`] turns a batch of [`Update`]s into a new snapshot
//!    (only what changed is rebuilt); [`SharedSnapshot::update`] swaps it in.
//! 5. Dump: [`TopologySnapshot::to_config`] and [`config::to_toml_string`].
//!
//! Nothing here reads a clock, opens a socket or spawns a thread.
#![warn(missing_docs)]

pub mod alto;
pub mod bgp;
pub mod config;
pub mod generate;
pub mod model;
pub mod proxidor;
pub mod rank;
mod shared;
pub mod snapshot;

pub use model::OracleConfig;
pub use proxidor::{Outcome, answer};
pub use rank::{CostExpr, PathMetrics, Ranking};
pub use shared::SharedSnapshot;
pub use snapshot::{
    BuildError, MAX_LINK_WEIGHT, MAX_ROUTERS, RankScratch, TopologySnapshot, Update, UpdateReport,
};
