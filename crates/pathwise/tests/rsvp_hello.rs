//! RSVP Hello (RFC 3209 §5) in simulation, on seed 004's R0 – R1 – R2 with Hello on every
//! interface: Hellos flow without false alarms, a lost link is found within the dead interval
//! and its state torn down long before the RFC 2205 state timeout, a restarted neighbour is
//! found by its new instance and re-signalled at once, and all of it works with integrity
//! required on every link.

mod common;

use common::rsvp::*;
use pathwise::rsvp::sim::{IntegrityFn, Receiver, Scenario, node_config, sim_engine_config};
use pathwise_auth::{Algorithm, Key, KeyChain, Mode, Policy};
use pathwise_core::time::{Duration, Instant};
use pathwise_rsvp::wire::{FlowDescriptor, MsgType, Session, StyleKind};
use pathwise_rsvp::{Config, HelloConfig, RsvpEngine};
use pathwise_sim::{NodeId, NodeSetup, Sim, SimConfig, testbeds};

/// Refresh period R: with K = 3, state lifetime L = 5.25 R ≈ 157 s.
const R: Duration = Duration::from_secs(30);
const HELLO: HelloConfig = HelloConfig {
    interval: Duration::from_millis(100),
    failure_multiplier: 3.5,
};

struct Net {
    sc: Scenario,
    r0: NodeId,
    r1: NodeId,
    r2: NodeId,
    s: Session,
}

impl Net {
    /// R0 – R1 – R2 with Hello on every interface and `policy` for integrity; R0 sends on a
    /// session to R2, whose receiver reserves 1 Mbit/s (FF) whenever it has path state.
    fn new(policy: Policy) -> Net {
        let base = Config {
            wall_clock_at_zero: 1_800_000_000,
            ..sim_engine_config(R)
        };
        let integrity: Box<IntegrityFn> = Box::new(move |_, _| policy.clone());
        let sim = Sim::new(
            testbeds::seed004_r0_r2(),
            SimConfig::seeded(4),
            move |setup: &NodeSetup| {
                let mut cfg = node_config(setup, &base, &*integrity);
                for i in &mut cfg.interfaces {
                    i.hello = Some(HELLO);
                }
                Some(RsvpEngine::with_memory_tc(cfg, Instant::ZERO))
            },
        );
        let mut sc = Scenario::new(sim);
        let (r0, r1, r2) = (node(&sc, "R0"), node(&sc, "R1"), node(&sc, "R2"));
        let s = udp(v4(&sc, r2), 5000);
        sc.add_receiver(Receiver {
            node: r2,
            session: s,
            style: StyleKind::Ff,
            flowspec: cl(1000.0),
            confirm: false,
        });
        register_v4(&mut sc, Instant::from_millis(1), r0, s, 9000, 1000.0);
        Net { sc, r0, r1, r2, s }
    }

    fn engine(&self, n: NodeId) -> &RsvpEngine {
        self.sc.sim.engine(n).unwrap()
    }

    fn hello(&self, n: NodeId) -> pathwise_rsvp::HelloCounters {
        self.engine(n).counters().hello
    }

    fn installed(&self, n: NodeId) -> f64 {
        installed_kbps(&self.sc, n, &self.s)
    }
}

#[test]
fn hellos_flow_both_ways_without_false_failures() {
    let mut net = Net::new(Policy::default());
    net.sc.run_until(Instant::from_secs(60));
    assert_eq!(net.installed(net.r0), 1000.0);
    assert_eq!(net.installed(net.r1), 1000.0);
    for n in [net.r0, net.r1, net.r2] {
        let h = net.hello(n);
        // About one REQUEST per interval per neighbour, plus the ACKs answering the other side.
        assert!(h.sent > 500 && h.received > 500, "{h:?}");
        assert_eq!((h.neighbor_failures, h.neighbor_restarts), (0, 0), "{h:?}");
        let c = net.engine(n).counters();
        assert_eq!(c.total_drops(), 0, "{:?}", c.drops);
        assert_eq!(c.sent(MsgType::Hello), h.sent);
    }
    // R1 tracks both neighbours (R0 as previous hop, R2 as next hop); the ends track R1.
    assert_eq!(net.engine(net.r1).hello_neighbors().count(), 2);
    assert_eq!(net.engine(net.r0).hello_neighbors().count(), 1);
    assert_eq!(net.engine(net.r2).hello_neighbors().count(), 1);
    // Every tracked neighbour's instance is the one that neighbour advertises.
    let r2_instance = net.engine(net.r2).hello_instance();
    assert!(
        net.engine(net.r1)
            .hello_neighbors()
            .any(|n| n.instance == r2_instance && n.heard.is_some())
    );
}

#[test]
fn link_failure_tears_down_within_the_dead_interval() {
    let mut net = Net::new(Policy::default());
    net.sc.run_until(Instant::from_secs(10));
    assert_eq!(net.installed(net.r0), 1000.0);
    let link = net.sc.sim.link_between(net.r1, net.r2).unwrap();
    net.sc.sim.link_down(link);
    let down = Instant::from_secs(10);
    // Detection within multiplier × interval, plus one interval.
    let bound = HELLO.interval.mul_f64(HELLO.failure_multiplier + 1.0);
    net.sc.run_until(down + bound);
    assert_eq!(net.hello(net.r1).neighbor_failures, 1);
    assert_eq!(net.installed(net.r1), 0.0, "R1 still reserves for R2");
    assert_eq!(
        net.engine(net.r1).hello_neighbors().count(),
        1,
        "R2 forgotten"
    );
    // R0 hears by ResvTear within a round trip — not after L ≈ 157 s.
    net.sc.run_until(down + Duration::from_secs(1));
    assert_eq!(net.installed(net.r0), 0.0);
    assert_eq!(net.engine(net.r0).counters().resv_timeouts, 0);
    // R2, cut off too, dropped the path state R1 had sent it.
    assert_eq!(net.hello(net.r2).neighbor_failures, 1);
    assert!(net.engine(net.r2).sessions().is_empty());
}

#[test]
fn restarted_neighbour_is_found_by_its_instance_and_resignalled() {
    let mut net = Net::new(Policy::default());
    net.sc.run_until(Instant::from_secs(10));
    assert_eq!(net.installed(net.r1), 1000.0);
    let before = net.engine(net.r2).hello_instance();
    net.sc.sim.crash(net.r2);
    net.sc.run_until(Instant::from_millis(10_100));
    net.sc.sim.restart(net.r2);
    net.sc.run_until(Instant::from_millis(11_000));
    assert_ne!(net.engine(net.r2).hello_instance(), before);
    let h = net.hello(net.r1);
    assert_eq!((h.neighbor_restarts, h.neighbor_failures), (1, 0), "{h:?}");
    // The reservation R2 had asked for went with its old instance, upstream too; Path went to
    // the new R2 at once instead of at R1's next refresh (R = 30 s).
    assert_eq!(net.installed(net.r1), 0.0);
    assert_eq!(net.installed(net.r0), 0.0);
    assert_eq!(net.engine(net.r2).state_stats().psbs, 1);
    // The restarted receiver application asks again; the reservation is back end to end.
    let sender = filter(v4(&net.sc, net.r0), 9000);
    let s = net.s;
    net.sc.sim.schedule_call(
        Instant::from_millis(11_000),
        net.r2,
        move |e: &mut RsvpEngine, now| {
            let flows = vec![FlowDescriptor::new(Some(cl(1000.0)), vec![sender])];
            e.reserve(now, s, StyleKind::Ff, flows, false).unwrap();
        },
    );
    net.sc.run_until(Instant::from_millis(11_500));
    assert_eq!(net.installed(net.r1), 1000.0);
    assert_eq!(net.installed(net.r0), 1000.0);
    net.sc.run_until(Instant::from_secs(40));
    let h = net.hello(net.r1);
    assert_eq!((h.neighbor_restarts, h.neighbor_failures), (1, 0), "{h:?}");
}

#[test]
fn hellos_are_signed_and_verified_under_integrity_require() {
    let mut chain = KeyChain::new();
    chain
        .insert(Key::new(1, Algorithm::HmacSha256, b"R0-R1-R2 secret").unwrap())
        .unwrap();
    let mut net = Net::new(Policy::new(Mode::Require, chain));
    net.sc.run_until(Instant::from_secs(60));
    assert_eq!(net.installed(net.r0), 1000.0);
    for n in [net.r0, net.r1, net.r2] {
        let c = net.engine(n).counters();
        assert!(c.hello.received > 500, "{:?}", c.hello);
        assert_eq!(c.hello.neighbor_failures + c.hello.neighbor_restarts, 0);
        assert!(c.integrity.signed >= c.hello.sent, "{:?}", c.integrity);
        assert!(
            c.integrity.verified >= c.hello.received,
            "{:?}",
            c.integrity
        );
        // Only what each neighbour sent before its handshake completed is dropped.
        let awaiting = c
            .drops
            .get("integrity_awaiting_challenge")
            .copied()
            .unwrap_or(0);
        assert_eq!(c.total_drops(), awaiting, "{:?}", c.drops);
        assert!(awaiting <= 4, "{:?}", c.drops);
    }
}
