//! RSVP and RSVP-TE in the binary: everything the RSVP service adds to `pathwise`. The protocol
//! itself is `pathwise-rsvp`'s sans-IO engine; this folder drives it.
//!
//! - [`service`]: the RSVP service the daemon's event loop ([`crate::daemon`]) drives — raw IP
//!   sockets with Router Alert, the kernel's routes, HTB classes, label bindings, management
//!   verbs and metrics; [`config`]: its `[rsvp]` section of `node.toml`; [`counters`]: its
//!   counters as `show counters` and metrics show them;
//! - [`verbs`] and [`te`]: the management verbs (sessions, reservations, LSPs) as the daemon
//!   answers them and the CLI builds them; [`cli`]: `pathwise rsvp …`;
//! - [`sim`] and [`te_sim`]: RSVP engines on the simulator (the demo, the simulation tests,
//!   `bench rsvp-refresh`); [`campaign`]: `pathwise sim campaign rsvp` and `rsvp-te`; [`chain`]: the five-node namespace lab with a daemon on every node;
//! - [`shard`]: `[daemon] threads = N`, sessions spread over N engines (the dispatcher and
//!   shard threads, and the same sharded node on the simulator);
//! - [`bench`]: `pathwise bench rsvp`, `rsvp-refresh`, `rsvp-chain`, `rsvp-integrity`.

pub mod bench;
pub mod campaign;
pub mod chain;
pub mod cli;
pub mod config;
pub mod counters;
pub mod service;
pub mod shard;
pub mod sim;
pub mod te;
pub mod te_sim;
pub mod verbs;
pub mod wait;
