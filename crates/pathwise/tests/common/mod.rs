//! Helpers shared by the integration tests.

#![allow(dead_code, unreachable_pub)] // each test binary uses a different subset

pub mod bgp;
pub mod booster;
pub mod flood;
pub mod netns;
pub mod rsvp;
