//! Load generators (issue #21 part 3): `pathwise loadgen rsvp`, KOM's churn load generator
//! (seed 001 §IV) as end hosts that keep only the state a host needs.
//!
//! - [`churn`]: the churn rule — create until n flows, then create and delete at randomized
//!   intervals so the count stays in [n − 10, n];
//! - [`rsvp`]: the sans-IO RSVP sender and receiver hosts ([`rsvp::RsvpLoad`]), fed time and
//!   datagrams like an engine, for drivers, tests and benchmarks alike;
//! - [`driver`]: the Linux driver (batched raw sockets) and its report;
//! - [`cli`]: `pathwise loadgen rsvp`;
//! - [`scale`]: `pathwise bench rsvp-scale`, the routers of the namespace chain under the
//!   generator's churn at N flows (issue #21 part 7).

pub mod churn;
pub mod cli;
pub mod driver;
pub mod rsvp;
pub mod scale;
