//! The protocol booster gateway (seed 003 in user space): configuration, the TUN device, the
//! datapath threads and management. The packet work itself is `pathwise-booster`'s; this module
//! only feeds it packets, time and policy snapshots.
//!
//! - [`config`]: the TOML file; [`tun`]: the device; [`udp`]: socket batches with GSO/GRO; [`gateway`]: threads, batching, snapshot
//!   swaps; [`manage`]: the management verbs; [`reload`]: SIGHUP (policies read again);
//! - [`netns`]: the two-gateway test bed in network namespaces (tests and benchmarks);
//!   [`load`]: the sequenced UDP load the benchmarks send across it;
//! - [`cli`]: `pathwise booster …` and the arguments of `pathwise bench booster`;
//! - [`bench`]: `pathwise bench booster`, the seed's experiments (Fig. 6, Table 1) and more;
//!   [`cpu`]: its in-memory per-packet and per-byte CPU figures.

pub mod bench;
pub mod cli;
pub mod config;
pub mod cpu;
pub mod gateway;
pub mod load;
pub mod manage;
pub mod netns;
pub mod reload;
pub mod tun;
pub mod udp;
