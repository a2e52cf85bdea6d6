//! Hello (RFC 3209 §5) on sharded nodes, in simulation: seed 004's R0 – R1 – R2 with Hello on
//! every interface and sessions spread over three shards per node. Each shard tracks the
//! neighbours it has state with, every shard is handed every Hello, shard 0 answers for the
//! node with the node's one Src_Instance (`rsvp::shard`). The outcomes are the unsharded
//! node's (`tests/rsvp_hello.rs`): no false failure, a lost link found within the dead interval
//! by every shard with state over it, a restarted neighbour found by its new instance.

mod common;

use common::rsvp::{cl, filter, tb};
use pathwise::rsvp::shard::sim::{SessionEngine, ShardedRsvp};
use pathwise::rsvp::sim::{node_config, sim_engine_config};
use pathwise_core::tc::SharedTrafficControl;
use pathwise_core::time::{Duration, Instant};
use pathwise_rsvp::engine::MemoryTrafficControl;
use pathwise_rsvp::wire::{FlowDescriptor, MsgType, SenderTspec, Session, StyleKind};
use pathwise_rsvp::{Config, HelloConfig, HelloCounters};
use pathwise_sim::{NodeId, NodeSetup, Sim, SimConfig, testbeds};

const R: Duration = Duration::from_secs(30);
const HELLO: HelloConfig = HelloConfig {
    interval: Duration::from_millis(100),
    failure_multiplier: 3.5,
};
const SESSIONS: u16 = 12;

type Node = ShardedRsvp<SharedTrafficControl<MemoryTrafficControl>>;

struct Net {
    sim: Sim<Node>,
    r0: NodeId,
    r1: NodeId,
    r2: NodeId,
    sessions: Vec<Session>,
}

impl Net {
    /// R0 – R1 – R2, `shards` shards per node, Hello on every interface; R0 sends on
    /// [`SESSIONS`] sessions to R2, which reserves 100 kbit/s (FF) on each.
    fn new(shards: usize) -> Net {
        let base = sim_engine_config(R);
        let mut sim = Sim::new(
            testbeds::seed004_r0_r2(),
            SimConfig::seeded(3209),
            move |setup: &NodeSetup| {
                let mut cfg: Config = node_config(setup, &base, &|_, _| Default::default());
                for i in &mut cfg.interfaces {
                    i.hello = Some(HELLO);
                }
                Some(ShardedRsvp::with_memory_tc(&cfg, shards, Instant::ZERO))
            },
        );
        let n = |name| sim.node(name).unwrap();
        let (r0, r1, r2) = (n("R0"), n("R1"), n("R2"));
        let (from, to) = (
            sim.topology().loopbacks(r0)[0],
            sim.topology().loopbacks(r2)[0],
        );
        let sessions: Vec<Session> = (0..SESSIONS)
            .map(|k| Session::ip(to, 17, 5000 + k))
            .collect();
        for (k, &s) in sessions.iter().enumerate() {
            let sender = filter(from, 9000 + k as u16);
            let at = Instant::from_millis(1 + k as u64);
            sim.schedule_call(at, r0, move |e: &mut Node, now| {
                e.engine_for(&s)
                    .register_sender(now, s, sender, SenderTspec(tb(100.0)))
                    .unwrap();
            });
            sim.schedule_call(
                at + Duration::from_millis(50),
                r2,
                move |e: &mut Node, now| {
                    let flows = vec![FlowDescriptor::new(Some(cl(100.0)), vec![sender])];
                    e.engine_for(&s)
                        .reserve(now, s, StyleKind::Ff, flows, false)
                        .unwrap();
                },
            );
        }
        Net {
            sim,
            r0,
            r1,
            r2,
            sessions,
        }
    }

    fn node(&self, n: NodeId) -> &Node {
        self.sim.engine(n).unwrap()
    }

    /// Hello counters summed over the node's shards.
    fn hello(&self, n: NodeId) -> HelloCounters {
        self.node(n)
            .shards()
            .iter()
            .map(|s| s.counters().hello)
            .fold(HelloCounters::default(), |a, b| HelloCounters {
                sent: a.sent + b.sent,
                received: a.received + b.received,
                neighbor_failures: a.neighbor_failures + b.neighbor_failures,
                neighbor_restarts: a.neighbor_restarts + b.neighbor_restarts,
            })
    }

    /// Reserved kbit/s at `n` over all sessions.
    fn installed(&mut self, n: NodeId) -> u64 {
        let sessions = self.sessions.clone();
        let e = self.sim.engine_mut(n).unwrap();
        sessions
            .iter()
            .filter_map(|s| e.engine_for(s).session(s))
            .flat_map(|v| v.installed)
            .map(|i| (f64::from(i.flowspec.reserved_rate()) / 125.0).round() as u64)
            .sum()
    }

    /// Shards of `n` that track neighbour state with Hello.
    fn tracking(&self, n: NodeId) -> usize {
        self.node(n)
            .shards()
            .iter()
            .filter(|s| s.hello_neighbors().next().is_some())
            .count()
    }
}

#[test]
fn sharded_nodes_keep_hello_without_false_failures() {
    for shards in [1, 3] {
        let mut net = Net::new(shards);
        net.sim.run_until(Instant::from_secs(30));
        let all = u64::from(SESSIONS) * 100;
        assert_eq!(net.installed(net.r1), all, "{shards} shards");
        assert_eq!(net.installed(net.r0), all, "{shards} shards");
        for n in [net.r0, net.r1, net.r2] {
            let h = net.hello(n);
            assert!(h.received > 200, "{shards} shards: {h:?}");
            assert_eq!((h.neighbor_failures, h.neighbor_restarts), (0, 0), "{h:?}");
            for s in net.node(n).shards() {
                let c = s.counters();
                assert_eq!(c.total_drops(), 0, "{:?}", c.drops);
                assert_eq!(c.sent(MsgType::Hello), c.hello.sent);
            }
            // One Src_Instance per node: every shard sends the node's.
            let mine = net.node(n).shards()[0].hello_instance();
            assert!(
                net.node(n)
                    .shards()
                    .iter()
                    .all(|s| s.hello_instance() == mine)
            );
            // Only shard 0 answers and counts what it receives.
            for s in &net.node(n).shards()[1..] {
                assert_eq!(s.counters().hello.received, 0);
            }
        }
        // The sessions are spread: R1's shards all track neighbours.
        assert_eq!(net.tracking(net.r1), shards, "{shards} shards");
        // Every neighbour R1's shards track is heard with the instance it advertises.
        let r2_instance = net.node(net.r2).shards()[0].hello_instance();
        for s in net.node(net.r1).shards() {
            assert!(
                s.hello_neighbors()
                    .filter(|n| n.addr != net.sim.topology().loopbacks(net.r0)[0])
                    .any(|n| n.instance == r2_instance && n.heard.is_some()),
                "{shards} shards: {:?}",
                s.hello_neighbors().collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn every_shard_finds_a_lost_link_within_the_dead_interval() {
    for shards in [1, 3] {
        let mut net = Net::new(shards);
        net.sim.run_until(Instant::from_secs(10));
        assert_eq!(net.installed(net.r1), u64::from(SESSIONS) * 100);
        let link = net.sim.link_between(net.r1, net.r2).unwrap();
        net.sim.link_down(link);
        let down = Instant::from_secs(10);
        let bound = HELLO.interval.mul_f64(HELLO.failure_multiplier + 1.0);
        net.sim.run_until(down + bound);
        // Each shard of R1 with state over the link found it (one failure counted per shard
        // that had state with R2), and the state went with it.
        assert_eq!(net.hello(net.r1).neighbor_failures, shards as u64);
        assert_eq!(
            net.installed(net.r1),
            0,
            "{shards} shards: R1 still reserves"
        );
        // R0 hears by ResvTear within a round trip, not after L ≈ 157 s.
        net.sim.run_until(down + Duration::from_secs(1));
        assert_eq!(net.installed(net.r0), 0, "{shards} shards");
        for s in net.node(net.r0).shards() {
            assert_eq!(s.counters().resv_timeouts, 0);
        }
        // R2, cut off too, dropped the path state R1 had sent it, in every shard.
        assert!(
            net.node(net.r2)
                .shards()
                .iter()
                .all(|s| s.sessions().is_empty())
        );
    }
}

#[test]
fn every_shard_finds_a_restarted_neighbour_by_its_instance() {
    for shards in [1, 3] {
        let mut net = Net::new(shards);
        net.sim.run_until(Instant::from_secs(10));
        assert_eq!(net.installed(net.r1), u64::from(SESSIONS) * 100);
        let before = net.node(net.r2).shards()[0].hello_instance();
        net.sim.crash(net.r2);
        net.sim.run_until(Instant::from_millis(10_100));
        net.sim.restart(net.r2);
        net.sim.run_until(Instant::from_millis(11_000));
        let after = net.node(net.r2).shards()[0].hello_instance();
        assert_ne!(after, before, "{shards} shards");
        let h = net.hello(net.r1);
        assert_eq!(
            (h.neighbor_restarts, h.neighbor_failures),
            (shards as u64, 0),
            "{shards} shards: {h:?}"
        );
        // The reservations R2 had asked for went, upstream too; every Path went to the new R2
        // at once instead of at R1's next refresh (R = 30 s).
        assert_eq!(net.installed(net.r1), 0);
        assert_eq!(net.installed(net.r0), 0);
        let psbs: usize = net
            .node(net.r2)
            .shards()
            .iter()
            .map(|s| s.state_stats().psbs)
            .sum();
        assert_eq!(psbs, usize::from(SESSIONS), "{shards} shards");
    }
}
