//! pathwise-rsvp: RSVP (RFC 2205) as a sans-IO engine.
#![warn(missing_docs)]

pub mod engine;
pub mod few;
pub mod shard;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod wire;

pub use engine::{
    Config, Event, HelloConfig, HelloCounters, InterfaceConfig, LspRetry, MessageIdSpace,
    RsvpEngine,
};
