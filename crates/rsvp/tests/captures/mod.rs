//! Test vectors from other implementations' captures.
pub mod kom;
