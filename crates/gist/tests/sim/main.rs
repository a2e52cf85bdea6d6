//! Simulation tests on the GIST thesis testbed (seed 000 Fig. 4.2: N1,N2 - N3 - N4 - N5 -
//! N6,N7) and variants of it.

mod cmode;
mod common;
mod dos;
mod explicit;
mod relay;
mod resilience;
mod testbed;
mod tls;
