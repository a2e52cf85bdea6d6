//! GIST in the binary: everything the GIST service adds to `pathwise`. The protocol itself is
//! `pathwise-gist`'s sans-IO engine (with the NSLP API and the Ping NSLP); this folder drives it.
//!
//! - [`service`]: the GIST service the daemon's event loop ([`crate::daemon`]) drives — UDP port
//!   270 with Router Alert, the kernel's routes, management verbs, metrics; [`ma`]: messaging
//!   associations over TCP, [`tls`] over TLS; [`load`]: the Ping load client run inside the
//!   daemon; [`config`]: its `[gist]` section of `node.toml`;
//! - [`cli`]: `pathwise gist …`; [`nslp_cli`]: `pathwise gist send` and `listen` (any NSLPID
//!   over the IPC NSLP API); [`attack`]: `pathwise gist attack` (test networks only);
//! - [`sim`]: GIST nodes on the simulator (the demo); [`campaign`]: `pathwise sim campaign
//!   gist`; [`chain`]: the five-node namespace lab;
//! - [`bench`]: `pathwise bench gist-chain`, `gist-api`.

pub mod attack;
pub mod bench;
pub mod campaign;
pub mod chain;
pub mod cli;
pub mod config;
pub mod load;
pub mod ma;
pub mod nslp_cli;
pub mod service;
pub mod sim;
pub mod tls;
