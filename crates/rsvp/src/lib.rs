//! pathwise-rsvp: RSVP (RFC 2205) as a sans-IO engine.
#![warn(missing_docs)]

pub mod wire;
