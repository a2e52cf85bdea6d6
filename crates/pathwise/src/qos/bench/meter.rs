//! What the side-by-side benchmark counts: bytes on the wire per datagram (IP and UDP headers
//! included), and the CPU time and output of one node's engine, measured by wrapping it.
//!
//! CPU is the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`) around each call, not wall time:
//! on a shared, busy machine wall time counts the time the thread waited for a core. Reading
//! that clock is a system call; [`clock_overhead_ns`] measures what one pair of readings adds,
//! and [`Metered::busy_ns`] has it taken off per call.

use pathwise_core::engine::Engine;
use pathwise_core::io::{Received, Transmit, Transport};
use pathwise_core::route::RouteChange;
use pathwise_core::time::Instant;
use std::cell::Cell;
use std::net::IpAddr;

/// Bytes a datagram occupies on the wire above the link layer: the IP header (with the
/// Router Alert option or hop-by-hop header when it carries one), the UDP header when it is
/// UDP, and the payload. Link-layer framing (Ethernet header, FCS, preamble) is not counted.
pub fn on_wire_len(dst: IpAddr, transport: Transport, router_alert: bool, payload: usize) -> usize {
    let ip = match (dst, router_alert) {
        // RFC 791 §3.1: 20 bytes without options; RFC 2113 §2.1: the Router Alert option is
        // 4 bytes (a multiple of 32 bits, so no padding).
        (IpAddr::V4(_), false) => 20,
        (IpAddr::V4(_), true) => 24,
        // RFC 8200 §3: 40 bytes; RFC 2711 §2.1: Router Alert in a hop-by-hop options header,
        // 2 bytes of header + 4 of option + 2 of padding = 8.
        (IpAddr::V6(_), false) => 40,
        (IpAddr::V6(_), true) => 48,
    };
    let l4 = match transport {
        // RSVP rides directly on IP (protocol 46, RFC 2205 §3.1).
        Transport::Raw(_) => 0,
        // RFC 768: 8 bytes. GIST D-mode (RFC 5971 §5.3) is UDP.
        Transport::Udp { .. } => 8,
    };
    ip + l4 + payload
}

/// This thread's CPU time, nanoseconds.
pub fn thread_cpu_ns() -> u128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

/// The CPU time one pair of [`thread_cpu_ns`] readings adds to what it brackets: the median,
/// over 101 samples, of 1,000 empty pairs.
pub fn clock_overhead_ns() -> f64 {
    let mut samples: Vec<f64> = (0..101)
        .map(|_| {
            let mut sum = 0u128;
            for _ in 0..1000 {
                let a = thread_cpu_ns();
                let b = thread_cpu_ns();
                sum += b.saturating_sub(a);
            }
            sum as f64 / 1000.0
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// The bytes of one transmit, by [`on_wire_len`].
pub fn transmit_len(t: &Transmit) -> usize {
    on_wire_len(
        t.dst,
        t.transport,
        t.router_alert.is_some(),
        t.payload.len(),
    )
}

/// Datagrams and bytes an engine sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Sent {
    /// Datagrams.
    pub datagrams: u64,
    /// Their bytes, by [`on_wire_len`].
    pub bytes: u64,
}

/// An engine with a meter: every datagram it sends is counted, and when `timed`, the thread
/// CPU time spent in its calls (inputs and outputs alike) is added up.
#[derive(Debug)]
pub struct Metered<E> {
    /// The engine.
    pub inner: E,
    /// Whether its calls are timed.
    pub timed: bool,
    busy_ns: Cell<u128>,
    calls: Cell<u64>,
    sent: Sent,
}

impl<E> Metered<E> {
    /// Wrap `inner`; time its calls when `timed`.
    pub fn new(inner: E, timed: bool) -> Self {
        Metered {
            inner,
            timed,
            busy_ns: Cell::new(0),
            calls: Cell::new(0),
            sent: Sent::default(),
        }
    }

    /// CPU nanoseconds spent in the engine's calls so far (zero unless timed), less
    /// `overhead_ns` (from [`clock_overhead_ns`]) per call.
    pub fn busy_ns(&self, overhead_ns: f64) -> f64 {
        (self.busy_ns.get() as f64 - overhead_ns * self.calls.get() as f64).max(0.0)
    }

    /// What it sent so far.
    pub fn sent(&self) -> Sent {
        self.sent
    }

    fn time<R>(&self, f: impl FnOnce() -> R) -> R {
        if !self.timed {
            return f();
        }
        let start = thread_cpu_ns();
        let r = f();
        let spent = thread_cpu_ns().saturating_sub(start);
        self.busy_ns.set(self.busy_ns.get() + spent);
        self.calls.set(self.calls.get() + 1);
        r
    }
}

impl<E: Engine> Engine for Metered<E> {
    type Event = E::Event;

    fn handle_datagram(&mut self, now: Instant, dgram: Received<'_>) {
        let start = self.timed.then(thread_cpu_ns);
        self.inner.handle_datagram(now, dgram);
        self.add(start);
    }

    fn handle_timeout(&mut self, now: Instant) {
        let start = self.timed.then(thread_cpu_ns);
        self.inner.handle_timeout(now);
        self.add(start);
    }

    fn handle_route_change(&mut self, now: Instant, change: RouteChange) {
        let start = self.timed.then(thread_cpu_ns);
        self.inner.handle_route_change(now, change);
        self.add(start);
    }

    fn poll_transmit(&mut self) -> Option<Transmit> {
        let start = self.timed.then(thread_cpu_ns);
        let t = self.inner.poll_transmit();
        self.add(start);
        if let Some(t) = &t {
            self.sent.datagrams += 1;
            self.sent.bytes += transmit_len(t) as u64;
        }
        t
    }

    fn poll_event(&mut self) -> Option<Self::Event> {
        let start = self.timed.then(thread_cpu_ns);
        let e = self.inner.poll_event();
        self.add(start);
        e
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.time(|| self.inner.poll_timeout())
    }

    fn wants_router_alert(&self, dgram: &Received<'_>) -> bool {
        self.time(|| self.inner.wants_router_alert(dgram))
    }
}

impl<E> Metered<E> {
    fn add(&mut self, start: Option<u128>) {
        if let Some(s) = start {
            *self.busy_ns.get_mut() += thread_cpu_ns().saturating_sub(s);
            *self.calls.get_mut() += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const UDP: Transport = Transport::Udp {
        src_port: 270,
        dst_port: 270,
    };

    #[test]
    fn thread_clock_advances_with_work() {
        let a = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns() > a);
        assert!(clock_overhead_ns() >= 0.0);
    }

    #[test]
    fn ipv4_headers() {
        let v4 = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(on_wire_len(v4, Transport::Raw(46), false, 100), 120);
        assert_eq!(on_wire_len(v4, Transport::Raw(46), true, 100), 124);
        assert_eq!(on_wire_len(v4, UDP, false, 100), 128);
        assert_eq!(on_wire_len(v4, UDP, true, 100), 132);
    }

    #[test]
    fn ipv6_headers() {
        let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
        assert_eq!(on_wire_len(v6, Transport::Raw(46), false, 0), 40);
        assert_eq!(on_wire_len(v6, Transport::Raw(46), true, 0), 48);
        assert_eq!(on_wire_len(v6, UDP, true, 52), 108);
    }

    #[test]
    fn transmit_counts_router_alert_and_payload() {
        let t = Transmit {
            src: None,
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            ifindex: None,
            transport: UDP,
            router_alert: Some(68),
            ttl: 64,
            payload: vec![0; 77],
        };
        assert_eq!(transmit_len(&t), 24 + 8 + 77);
    }
}
