//! The steady state allocates nothing of its own (issue #21 part 2, "zero allocation per
//! message in steady state"): two engines back to back, as `pathwise bench gist-engine` runs
//! them, exchange one NSLP message per session every 30 s while their routing state is
//! refreshed (Query, Response, Confirm: RFC 5971 §4.4.1, §6.2 Rule 8). A driver that hands
//! sent payloads back (`GistEngine::recycle`) and an application that hands delivered NSLP
//! data back (`GistEngine::recycle_nslp_data`) see no heap allocation at all; one that hands
//! nothing back sees exactly one per datagram sent and one per NSLP message delivered, the
//! buffers it keeps. Counted by this test binary's own global allocator, per thread, so the
//! harness's other threads do not count.

use pathwise_core::engine::Engine;
use pathwise_core::io::{IfIndex, Transmit};
use pathwise_core::time::Instant;
use pathwise_gist::nslp::{GistApi, SendMessage};
use pathwise_gist::wire::{Mri, PathCoupledMri, SessionId};
use pathwise_gist::{Config, GistEngine, GistEvent};
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};

#[path = "../../core/tests/support/per_thread_alloc.rs"]
mod per_thread_alloc;

const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
const SESSIONS: usize = 64;
const NSLPID: u16 = 42;

fn engine(addr: IpAddr, seed: u64) -> GistEngine {
    let cfg = Config {
        seed,
        nslpids: vec![NSLPID],
        expected_sessions: SESSIONS,
        ..Config::default()
    };
    GistEngine::on_one_link(cfg, addr)
}

/// Session `i`'s flow, A towards 10.128.0.i.
fn mri(i: usize) -> Mri {
    let dst = IpAddr::V4(Ipv4Addr::from(0x0a80_0000 | i as u32));
    let mut m = PathCoupledMri::flow(A, dst);
    m.protocol = Some(17);
    Mri::PathCoupled(m)
}

/// Two engines and the datagrams between them (`true`: towards B).
struct Net {
    a: GistEngine,
    b: GistEngine,
    wire: VecDeque<(bool, Transmit)>,
    /// Hand sent payloads and delivered NSLP data back to the engines.
    recycle: bool,
    datagrams: usize,
    /// NSLP messages delivered with their data.
    delivered: usize,
}

impl Net {
    fn new(recycle: bool) -> Self {
        Net {
            a: engine(A, 1),
            b: engine(B, 2),
            // Room for a round's datagrams, made before anything is counted.
            wire: VecDeque::with_capacity(4 * SESSIONS),
            recycle,
            datagrams: 0,
            delivered: 0,
        }
    }

    fn side(&mut self, to_b: bool) -> &mut GistEngine {
        if to_b { &mut self.b } else { &mut self.a }
    }

    /// Take what `A` (`from_a`) or `B` sends and reports.
    fn outputs(&mut self, from_a: bool) {
        let recycle = self.recycle;
        let e = if from_a { &mut self.a } else { &mut self.b };
        let mut delivered = 0;
        while let Some(ev) = e.poll_event() {
            // A Query's Routing-State-Check (B.2) carries no NSLP data on a refresh.
            if let GistEvent::Recv(r) = ev
                && !r.nslp_data.is_empty()
            {
                delivered += 1;
                if recycle {
                    e.recycle_nslp_data(r.nslp_data);
                }
            }
        }
        while let Some(t) = e.poll_transmit() {
            self.wire.push_back((from_a, t));
        }
        self.delivered += delivered;
    }

    /// Deliver everything on the wire and what it leads to.
    fn exchange(&mut self, now: Instant) {
        while let Some((to_b, t)) = self.wire.pop_front() {
            self.datagrams += 1;
            let from = if to_b { A } else { B };
            self.side(to_b)
                .handle_datagram(now, t.received_on(IfIndex(1), from));
            if self.recycle {
                self.side(!to_b).recycle(t.payload);
            }
            self.outputs(!to_b);
        }
    }

    /// Both engines' timers up to `until`, each output delivered.
    fn run_timers(&mut self, until: Instant) {
        loop {
            let due = [self.a.poll_timeout(), self.b.poll_timeout()]
                .into_iter()
                .flatten()
                .filter(|&t| t <= until)
                .min();
            let Some(due) = due else { return };
            for from_a in [true, false] {
                self.side(!from_a).handle_timeout(due);
                self.outputs(from_a);
            }
            self.exchange(due);
        }
    }

    /// Round `k` at 1 + 30 k s: timers, then one NSLP message per session from A (made
    /// before counting: they are the application's). Allocations counted.
    fn round(&mut self, k: u64, sids: &[SessionId]) -> usize {
        let now = Instant::from_secs(1 + 30 * k);
        let mut msgs: Vec<SendMessage> = sids
            .iter()
            .enumerate()
            .map(|(i, sid)| SendMessage::new(NSLPID, *sid, mri(i), vec![k as u8; 16]))
            .collect();
        let before = per_thread_alloc::calls();
        self.run_timers(now);
        for m in msgs.drain(..) {
            self.a.send_message(now, m).expect("SendMessage");
            self.outputs(true);
            self.exchange(now);
        }
        per_thread_alloc::calls() - before
    }

    fn established(&self) -> (usize, usize) {
        let (a, b) = (self.a.state_stats(), self.b.state_stats());
        (a.downstream_established, b.upstream_established)
    }
}

/// Every session set up through the full handshake (its first NSLP message piggybacked on
/// the Query), then `warm` rounds, then `counted` rounds: (allocations, datagrams, NSLP
/// messages delivered, refresh handshakes) over the counted rounds.
fn steady_state(recycle: bool, warm: u64, counted: u64) -> (usize, usize, usize, u64) {
    let mut net = Net::new(recycle);
    let sids: Vec<SessionId> = (0..SESSIONS).map(|_| net.a.new_session_id()).collect();
    let now = Instant::from_secs(1);
    for (i, sid) in sids.iter().enumerate() {
        let m = SendMessage::new(NSLPID, *sid, mri(i), vec![0; 16]);
        net.a.send_message(now, m).expect("SendMessage");
        net.outputs(true);
        net.exchange(now);
    }
    assert_eq!(net.established(), (SESSIONS, SESSIONS), "set up");
    for k in 1..=warm {
        net.round(k, &sids);
    }
    let refreshes = net.a.counters().refreshes;
    let (datagrams, delivered) = (net.datagrams, net.delivered);
    let mut allocs = 0;
    for k in warm + 1..=warm + counted {
        allocs += net.round(k, &sids);
    }
    assert_eq!(net.established(), (SESSIONS, SESSIONS), "kept");
    (
        allocs,
        net.datagrams - datagrams,
        net.delivered - delivered,
        net.a.counters().refreshes - refreshes,
    )
}

/// Seven rounds (a refresh period and a half: every session's first refresh, 135–180 s
/// after setup, falls in them) warm the engines up; the next seven, holding every session's
/// second refresh, are counted.
const WARM: u64 = 7;
const COUNTED: u64 = 7;

#[test]
fn recycling_driver_and_application_allocate_nothing_in_steady_state() {
    let (allocs, datagrams, delivered, refreshes) = steady_state(true, WARM, COUNTED);
    let per_round = COUNTED as usize * SESSIONS;
    assert_eq!(delivered, per_round, "every NSLP message delivered");
    assert_eq!(
        refreshes, SESSIONS as u64,
        "one refresh handshake per session"
    );
    // A Data message per session per round, and a Query, Response and Confirm per refresh.
    assert_eq!(datagrams, per_round + 3 * SESSIONS);
    assert_eq!(
        allocs, 0,
        "{allocs} allocations for {datagrams} datagrams ({delivered} NSLP messages)"
    );
}

#[test]
fn without_recycling_each_datagram_and_nslp_message_costs_one_allocation() {
    let (allocs, datagrams, delivered, refreshes) = steady_state(false, WARM, COUNTED);
    assert_eq!(refreshes, SESSIONS as u64);
    // The payload the driver keeps, and the NSLP data the application keeps: nothing else.
    assert_eq!(
        allocs,
        datagrams + delivered,
        "{allocs} allocations for {datagrams} datagrams ({delivered} NSLP messages)"
    );
}
