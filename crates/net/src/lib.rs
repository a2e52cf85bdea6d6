//! pathwise-net: the Linux adapters that drive pathwise's sans-IO engines on real networks.
//!
//! Everything here is synchronous and non-blocking, and exposes its file descriptor
//! ([`AsFd`](std::os::fd::AsFd)), so a driver polls it with `poll`/`epoll` or wraps it in
//! tokio's `AsyncFd`; no runtime is required. Both types are `Send`.
//!
//! - [`RawSocket`]: raw IPv4 or IPv6 for one protocol (RSVP = 46), speaking the engines'
//!   vocabulary: it sends [`Transmit`](pathwise_core::io::Transmit)s (source, TTL, Router Alert,
//!   outgoing interface) and hands out [`Received`](pathwise_core::io::Received) datagrams
//!   (arrival interface, TTL, Router Alert) that borrow its batch buffer. With
//!   [`RawConfig::intercept_router_alert`] it takes *transit* packets carrying Router Alert out of
//!   the kernel's forwarding path, which is how RSVP Path is processed hop by hop.
//! - [`FibMirror`]: the kernel's links, addresses and main-table unicast routes over rtnetlink,
//!   as [`NetEvent`]s; route changes are exactly the engines'
//!   [`RouteChange`](pathwise_core::route::RouteChange)s. Plus one-shot [`interfaces`] and
//!   [`ifindex_by_name`].
//! - [`ip`]: the header builders and parsers (pure, never panic; usable by fuzz targets).
//! - [`tc`]: RSVP reservations as Linux traffic control (HTB classes and u32 filters).
//! - [`LinuxMpls`] ([`mpls`]): label bindings into the kernel's MPLS forwarding over rtnetlink,
//!   the Linux [`LabelDataplane`](pathwise_core::mpls::LabelDataplane).
//!
//! # Driving an engine
//!
//! ```no_run
//! use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
//! use pathwise_core::engine::Engine;
//! use pathwise_core::time::Instant;
//! use pathwise_net::{Family, FibMirror, NetEvent, RawConfig, RawSocket};
//!
//! fn run<E: Engine>(engine: &mut E, now: impl Fn() -> Instant) -> std::io::Result<()> {
//!     let mut fib = FibMirror::open()?;
//!     let mut raw = RawSocket::open(RawConfig::rsvp(Family::V4))?;
//!     let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
//!     epoll.add(&fib, EpollEvent::new(EpollFlags::EPOLLIN, 0))?;
//!     epoll.add(&raw, EpollEvent::new(EpollFlags::EPOLLIN, 1))?;
//!     let mut out = Vec::new();
//!     loop {
//!         for ev in fib.drain()? {
//!             if let NetEvent::Route(change) = ev {
//!                 engine.handle_route_change(now(), change);
//!             }
//!         }
//!         loop {
//!             let mut any = false;
//!             for dgram in raw.recv_batch()? {
//!                 any = true;
//!                 engine.handle_datagram(now(), dgram);
//!             }
//!             if !any {
//!                 break;
//!             }
//!         }
//!         if engine.poll_timeout().is_some_and(|t| t <= now()) {
//!             engine.handle_timeout(now());
//!         }
//!         out.clear();
//!         out.extend(std::iter::from_fn(|| engine.poll_transmit()));
//!         let mut sent = 0;
//!         while sent < out.len() {
//!             match raw.send_batch(&out[sent..]) {
//!                 Ok(n) => sent += n,
//!                 Err(_) => sent += 1, // count it and skip the offending datagram
//!             }
//!         }
//!         let wait = engine
//!             .poll_timeout()
//!             .map_or(u16::MAX, |t| t.saturating_duration_since(now()).as_millis().min(60_000) as u16);
//!         epoll.wait(&mut [EpollEvent::empty(); 2], wait)?;
//!     }
//! }
//! ```
//!
//! # IPv4 and IPv6, precisely
//!
//! | | IPv4 | IPv6 |
//! |---|---|---|
//! | send: source | any address, also non-local, written into our own header (`IP_HDRINCL`); `None` = kernel picks | `IPV6_PKTINFO`; non-local sources allowed by `IPV6_FREEBIND` set on open |
//! | send: TTL / hop limit | header | `IPV6_HOPLIMIT` cmsg (unicast and multicast) |
//! | send: Router Alert | option `94 04` + the transmit's value in our header | hop-by-hop header `IPV6_HOPOPTS` cmsg with the transmit's value |
//! | send: out of `ifindex` | `IP_PKTINFO` cmsg (`ipi_ifindex`), unicast and multicast | `IPV6_PKTINFO` (`ipi6_ifindex`), and scope id for link-local / link-scope multicast |
//! | send: traffic class | header TOS ([`RawOptions::traffic_class`]) | `IPV6_TCLASS` |
//! | receive | kernel hands the IP header: src, dst, TTL and options parsed here; ifindex from `IP_PKTINFO` | payload only: src from the address, dst and ifindex from `IPV6_PKTINFO`, hop limit from `IPV6_HOPLIMIT`, Router Alert from `IPV6_HOPOPTS` |
//! | intercept transit RA | `IP_ROUTER_ALERT` on the same socket (the kernel matches the protocol) | a second `IPPROTO_RAW` socket with `IPV6_ROUTER_ALERT` (the kernel allows it on no other) and `IPV6_ROUTER_ALERT_ISOLATE`; it gets whole packets, parsed here; the two sockets sit behind one epoll descriptor |
//!
//! Limits: IPv4 datagrams are not fragmented by the kernel with `IP_HDRINCL` (header + payload
//! above the outgoing MTU fails with `EMSGSIZE`); IPv6 ones are fragmented at the source as
//! usual. Intercepted IPv6 transit *fragments* are dropped ([`DropReason::Fragment`]); IPv4
//! ones are reassembled by the kernel first. The IPv6 interceptor takes every transit packet
//! whose Router Alert value matches, whatever its upper protocol; those not of this socket's
//! protocol are dropped ([`DropReason::WrongProtocol`]) and are therefore not forwarded.
//!
//! # What the daemon must know
//!
//! - Privileges: [`RawSocket::open`] needs `CAP_NET_RAW`; [`FibMirror`] none. Interception
//!   needs nothing more, but only works where the kernel forwards: `net.ipv4.ip_forward=1`,
//!   `net.ipv6.conf.all.forwarding=1`.
//! - Every raw socket of a protocol receives its own copy of each matching packet, and every
//!   intercepting socket its own copy of each RA transit packet (none is forwarded while one
//!   exists). Open one [`RawSocket`] per family per node and dispatch to shards in user space.
//! - Re-sending Path with the original sender's source address (RFC 2205 §3.1.3) works out of
//!   the box; with asymmetric routes a downstream router with strict `rp_filter` may drop it:
//!   use loose (`2`) or off (`0`).
//! - Sending link-scope multicast (e.g. `ff02::1`) out of an interface whose IPv6 is not up yet
//!   fails (`ENETUNREACH`); `send_batch` errors are per datagram, not fatal.
//! - A [`RawSocket`]'s descriptor is level-triggered: call
//!   [`RawSocket::recv_batch`] until it returns nothing (with `AsyncFd`, clear readiness then).
//! - Link state: [`NetEvent::Link`]'s `up` is `IFF_UP && IFF_RUNNING`. A link set
//!   administratively down loses all its routes (the mirror emits the `Remove`s the kernel does
//!   not send for IPv4); a carrier loss keeps them.
#![warn(missing_docs)]

mod cmsg;
mod fib;
pub mod ip;
mod mirror;
pub mod mpls;
pub mod nfqueue;
mod raw;
mod sys;
pub mod tc;
pub mod udp_ra;

pub use fib::{FibMirror, InterfaceInfo, NetEvent, ifindex_by_name, interfaces};
pub use ip::DropReason;
pub use mpls::LinuxMpls;
pub use nfqueue::{InterceptRules, NfQueue, TransitQueue, TransitStats, Verdict};
pub use raw::{Family, RawConfig, RawOptions, RawSocket, RawStats};
pub use udp_ra::RaUdpSocket;

#[cfg(test)]
mod tests {
    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn handles_can_move_between_threads() {
        send_sync::<super::RawSocket>();
        send_sync::<super::FibMirror>();
        send_sync::<super::LinuxMpls>();
    }
}
