//! External networks from BGP: the exit routers' routes, streamed over BMP (RFC 7854) or read
//! from MRT dumps (RFC 6396), become the oracle's external networks (seed 002 §3.2.3: they
//! "come already aggregated to the Oracle via BGP updates").
//!
//! - [`rib`]: per exit router, per BGP peer, an Adj-RIB-In (prefix → AS distance, origin AS);
//!   the best route per (prefix, exit) is the shortest AS path over that exit's peers; every
//!   change where the best moves becomes an [`Update`](crate::Update), coalesced until the
//!   driver takes a batch.
//! - [`bmp`]: one BMP session, sans-IO: stream framing (RFC 7854 §4.1), parsing with
//!   `bgpkit-parser`, and route monitoring / peer up / peer down / termination turned into RIB
//!   changes; every message counted by type, every drop by reason.
//! - [`mrt`]: TABLE_DUMP_V2 RIB dumps and BGP4MP updates (RFC 6396 §4.3, §4.4) into a RIB.
//! - [`wire`]: a BMP / BGP UPDATE writer for tests, benchmarks and fuzz seeds.
//!
//! Nothing here reads a clock, opens a socket or spawns a thread: the `pathwise` binary's BMP
//! listener feeds bytes in and applies the batches with
//! [`SharedSnapshot::update`](crate::SharedSnapshot::update).

pub mod bmp;
pub mod mrt;
pub mod rib;
pub mod wire;

pub use bmp::{BmpCounters, BmpDrops, BmpError, BmpSession, ExitNic};
pub use rib::{BgpRib, PeerKey, PeerSummary, Route};
