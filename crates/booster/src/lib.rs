//! pathwise-booster: protocol boosters (seed 003, Mallet, Chung & Smith, "Operating System
//! Support for Protocol Boosters") as pure code — no sockets, no threads, no clock.
//!
//! A protocol booster is a packet transform inserted into and removed from a live datapath on
//! demand (seed §1.1): compression for a slow link, encryption for an insecure one, forward
//! error correction for a lossy one. The seed put them in the FreeBSD IP stack; we run them in a
//! user-space gateway on a TUN device (crates/pathwise, `pathwise booster gateway`), and this
//! crate is everything that gateway does to a packet:
//!
//! - [`booster`]: the [`Booster`] interface (seed §4.2.4) and booster specs and classes;
//! - [`boosters`]: null, LZ4, zstd, dumb LZ4, ChaCha20-Poly1305, Reed-Solomon FEC;
//! - [`wire`]: the encapsulation header naming the chain (docs/booster-wire.md);
//! - [`policy`]: prefix → chain policies, meta-policy rules, immutable snapshots;
//! - [`pipeline`]: [`pipeline::Sender`] and [`pipeline::Receiver`], which run chains;
//! - [`admission`]: which peers and chains the receiver accepts for which traffic, and the
//!   grace period that lets the two gateways switch chains without loss;
//! - [`adaptive`]: automatic insertion and removal from observed compressibility and loss;
//!   [`congestion`]: the queueing-delay and loss signal of congestion-aware compression;
//! - [`control`]: gateway-to-gateway loss reports; [`stats`]: counters and drop reasons;
//! - [`offload`]: the TUN `virtio_net_hdr`, splitting super-segments, coalescing (GRO);
//! - [`gro`]: the socket's `UDP_GRO` control message, and cutting a coalesced message into datagrams;
//! - [`packet`]: buffers with headroom and the pool that makes the datapath allocation-free;
//! - [`vectors`]: sample chains, packets and keys for tests and fuzz seeds;
//! - [`loopback`]: a sender and a receiver back to back in memory, for CPU benchmarks.
//!
//! How it is driven: the gateway owns a `Sender` on its tunnel-reading thread and a `Receiver`
//! on its socket-reading thread, passes `now` and the policies in force in (the sender the
//! [`policy::PolicySnapshot`] [`admission::PolicyEpochs::sending`] picks, the receiver the
//! datagram's UDP source and the whole [`admission::PolicyEpochs`]), and sends or writes what
//! comes out. Management builds new snapshots and swaps them in; the
//! datapath picks them up on its next packet (seed §5.3: insertion cost 20–30 ms in the kernel;
//! here a snapshot build and a pointer swap).
#![warn(missing_docs)]

pub mod adaptive;
pub mod admission;
pub mod booster;
pub mod boosters;
pub mod congestion;
pub mod control;
pub mod gro;
pub mod loopback;
pub mod offload;
pub mod packet;
pub mod pipeline;
pub mod policy;
pub mod stats;
pub mod vectors;
pub mod wire;

pub use admission::PolicyEpochs;
pub use booster::{Booster, BoosterSpec, Class};
pub use packet::{Packet, PacketPool};
pub use pipeline::{Receiver, Sender};
pub use policy::{MetaPolicy, Policy, PolicyError, PolicySnapshot, Rule};
pub use stats::{Counters, DropReason, StatsReport};
pub use wire::{BoosterId, Chain, Header};
