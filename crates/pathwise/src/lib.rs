//! pathwise: the binary's library half — the glue that puts the protocol engines on their drivers
//! (the simulator, Linux sockets), the daemon and gateways, the demo, the management channel and
//! the benchmarks. `main.rs` is only the command line.
#![warn(missing_docs)]

pub mod bench;
pub mod booster;
pub mod chain;
pub mod cli;
pub mod daemon;
pub mod demo;
pub mod gist_chain;
pub mod gist_sim;
pub mod mgmt;
pub mod netns;
pub mod oracle;
pub mod rsvp_chain;
pub mod rsvp_sim;
pub mod rsvp_te_sim;
