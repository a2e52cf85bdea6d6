//! Integration tests of the simulator, driving a toy engine (`toy.rs`).

mod toy;

mod config;
mod determinism;
mod faults;
mod forwarding;
mod links;
mod multicast;
mod routing;
mod timers;
