//! The QoS NSLP on the GIST thesis testbed (seed 000 Fig. 4.2), simulated: every node runs
//! GIST with the QoS NSLP plug-in, admitting through in-memory traffic control built from
//! the simulated links.

mod common;
mod rerouting;
mod reservations;
mod shared_budget;
