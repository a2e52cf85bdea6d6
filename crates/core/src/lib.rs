//! pathwise-core: what every pathwise engine shares.
//!
//! Nothing here reads a clock, opens a socket or spawns a thread. Time is a plain [`time::Instant`]
//! handed in by whoever drives an engine (a unit test, `pathwise-sim`, or `pathwise-net`);
//! randomness comes from a seeded generator ([`rng::SeededRng`]) so a simulation replays exactly.
//!
//! - [`time`]: the time type engines take as an argument.
//! - [`arena`]: typed slabs and 32-bit ids for compact engine state.
//! - [`timer`]: the hierarchical timer wheel (Varghese & Lauck) with the KOM engine's fuzzy mode.
//! - [`table`]: hash tables keyed by a randomly seeded hasher (no hash flooding).
//! - [`wire`]: bounds-checked byte reader/writer and TLV helpers shared by the protocol codecs.
//! - [`units`]: bandwidths and durations as written in configuration files.
//! - [`route`], [`fib`]: routes as drivers report them, and the longest-prefix-match table engines keep.
//! - [`tc`]: the admission and traffic-control interface RSVP and the QoS NSLP share.
//! - [`mpls`]: labels, the label-forwarding table and the dataplane trait label-switching engines use.
//! - [`replay`]: anti-replay windows over sequence numbers (RSVP integrity, booster encryption).
//! - [`spare`]: sent payloads kept for the next message (no allocation per message in steady
//!   state; the RSVP and GIST engines).
//! - [`io`], [`engine`]: the datagram vocabulary and the sans-IO engine contract drivers rely on.
#![warn(missing_docs)]

pub mod arena;
pub mod engine;
pub mod fib;
pub mod fuzz_seeds;
pub mod io;
pub mod mpls;
pub mod replay;
pub mod rng;
pub mod route;
pub mod spare;
pub mod table;
pub mod tc;
pub mod time;
pub mod timer;
pub mod units;
pub mod wire;

pub use rand;
