//! `pathwise sim campaign gist`: per seed, GIST with the Ping NSLP on every node of a random
//! network; sessions ping periodically over D-mode (UDP) or C-mode (messaging associations
//! over the simulator's stream adapter) under the faults [`crate::sim::faults`] draws, checked
//! by [`crate::sim::invariants`]. Teardown is GIST's own: the pings stop and soft state lapses.

use crate::gist::sim::ping_node_with;
use crate::sim::faults::{FaultPlan, Probe, is_udp_to, random_network, v4};
use crate::sim::invariants::{self as inv, Checks, Invariant, Violation};
use crate::sim::{Activity, Budget, Phases, SeedRun, Stage, Workload, run_plan};
use pathwise_core::io::{Transmit, Transport};
use pathwise_core::rand::Rng;
use pathwise_core::rng::SeededRng;
use pathwise_core::time::{Duration, Instant};
use pathwise_gist::nslp::ping::PingNslp;
use pathwise_gist::sim_stream::{SEGMENT_PORT, StreamAdapter};
use pathwise_gist::sim_stream::{Segment, SegmentKind, StreamState, StreamView};
use pathwise_gist::wire::SessionId;
use pathwise_gist::{Config, QueryingState};
use pathwise_sim::{NodeId, NodeSetup, Sim, SimConfig};
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::net::IpAddr;

type Node = Probe<StreamAdapter>;

/// GIST timers short enough for many refreshes and lifetimes in a run. Validity asked for by
/// a peer (or a mutated message) is capped at `max_state_lifetime`.
fn short_timers(c: &mut Config) {
    c.refresh_period = Duration::from_secs(5);
    c.rs_validity = Duration::from_secs(15);
    c.state_lifetime = Duration::from_secs(15);
    c.max_state_lifetime = Duration::from_secs(30);
    c.ma_hold_time = Duration::from_secs(10);
    c.ma_idle_timeout = Duration::from_secs(10);
    c.secret_rotation = Duration::from_secs(20);
}

/// One pinging application.
#[derive(Clone, Debug)]
struct Pinger {
    from: NodeId,
    src: IpAddr,
    dst: IpAddr,
    reliable: bool,
    period: Duration,
    session: Option<SessionId>,
    next_at: Instant,
}

impl Pinger {
    fn ping(&mut self, sim: &mut Sim<Node>) {
        let (src, dst, reliable, session) = (self.src, self.dst, self.reliable, self.session);
        let sid = sim
            .with_engine(self.from, |p, now| {
                p.inner
                    .with_nslp::<PingNslp, _>(now, |ping, g| match session {
                        Some(sid) => ping
                            .ping_session_with(g, now, sid, src, dst, reliable)
                            .map(|_| sid),
                        None => {
                            let sid = g.new_session_id();
                            ping.ping_session_with(g, now, sid, src, dst, reliable)
                                .map(|_| sid)
                        }
                    })
            })
            .flatten()
            .and_then(Result::ok);
        if self.session.is_none() {
            self.session = sid;
        }
        self.next_at = sim.now() + self.period;
    }
}

#[derive(Debug, Default)]
struct GistWorkload {
    pingers: Vec<Pinger>,
    torn_down: bool,
}

impl Workload for GistWorkload {
    type Engine = Node;

    fn react(&mut self, sim: &mut Sim<Node>) {
        sim.drain_events();
        if self.torn_down {
            return;
        }
        for p in &mut self.pingers {
            if p.next_at <= sim.now() && sim.is_up(p.from) {
                p.ping(sim);
            }
        }
    }

    fn restarted(&mut self, sim: &mut Sim<Node>, node: NodeId) {
        for p in self.pingers.iter_mut().filter(|p| p.from == node) {
            // The application starts again, in a new session.
            p.session = None;
            p.ping(sim);
        }
    }

    fn check(&self, sim: &Sim<Node>, stage: Stage, checks: &mut Checks) -> Result<(), Violation> {
        let now = sim.now();
        let topo = sim.topology();
        for n in topo.node_ids() {
            let Some(p) = sim.engine(n) else { continue };
            let g = p.inner.inner();
            let name = sim.name(n);
            let fail = |i: Invariant, d: String| Violation::new(i, now, name, d);
            let c = g.counters();
            checks.count(Invariant::CountersAddUp);
            // Messages also arrive over messaging associations, so only the lower bound.
            inv::counters_add_up(p.handed, c.rx.iter().sum(), c.total_drops(), true)
                .map_err(|d| fail(Invariant::CountersAddUp, format!("{d}: {c:?}")))?;
            let st = p.inner.stats();
            checks.count(Invariant::SegmentsCounted);
            inv::segments_counted(st.received, st.accepted, st.drops.total())
                .map_err(|d| fail(Invariant::SegmentsCounted, format!("{d}: {st:?}")))?;
            for v in p.inner.streams() {
                let Some((b, w)) = other_end(sim, n, &v) else {
                    continue;
                };
                if inv::stream_integrity(&end(&v), &end(&w)).map_err(|d| {
                    Violation::new(
                        Invariant::StreamIntegrity,
                        now,
                        format!("{name} -> {}", sim.name(b)),
                        format!("{d}; here {v:?}, there {w:?}"),
                    )
                })? {
                    checks.count(Invariant::StreamIntegrity);
                }
            }
            if stage == Stage::Settled {
                for key in g.routing_keys() {
                    let Some(v) = g.routing_state(&key) else {
                        continue;
                    };
                    let Some((state, Some(peer))) = v.downstream else {
                        continue;
                    };
                    if state == QueryingState::AwaitingResponse {
                        continue;
                    }
                    let Some(b) = topo.owner(peer) else { continue };
                    let b_up = sim
                        .engine(b)
                        .and_then(|q| q.inner.inner().routing_state(&key))
                        .and_then(|w| w.upstream)
                        .and_then(|(_, a)| a)
                        .and_then(|a| topo.owner(a));
                    checks.count(Invariant::GistSymmetry);
                    inv::gist_symmetry(&name, &sim.name(b), b_up.map(|x| sim.name(x)).as_ref())
                        .map_err(|d| {
                            Violation::new(
                                Invariant::GistSymmetry,
                                now,
                                format!("{name} -> {}", sim.name(b)),
                                format!(
                                    "session {:?} ({}), flow {:?}: {d}; here {v:?}, there {:?}",
                                    key.session_id,
                                    if self
                                        .pingers
                                        .iter()
                                        .any(|p| p.session == Some(key.session_id))
                                    {
                                        "a pinger's"
                                    } else {
                                        "no pinger's"
                                    },
                                    key.mri,
                                    sim.engine(b)
                                        .and_then(|q| q.inner.inner().routing_state(&key)),
                                ),
                            )
                        })?;
                }
            }
            if stage == Stage::Quiescent {
                let s = g.state_stats();
                checks.count(Invariant::NoStateLeft);
                inv::no_state_left(&[
                    ("routing states", s.routing_states),
                    ("peers", s.peers),
                    ("messaging associations", s.mas),
                    ("timers", s.timers),
                    ("streams", p.inner.connections()),
                ])
                .map_err(|d| fail(Invariant::NoStateLeft, d))?;
            }
        }
        Ok(())
    }

    fn activity(&self, sim: &Sim<Node>, out: &mut Activity) {
        for n in sim.topology().node_ids() {
            let Some(p) = sim.engine(n) else { continue };
            let g = p.inner.inner();
            let (s, c) = (g.state_stats(), g.counters());
            out.add("hostile messages injected", p.injected);
            out.add(
                "downstream states established at settle",
                s.downstream_established as u64,
            );
            out.add("messaging associations at settle", s.mas as u64);
            out.add("handshake failures", c.handshake_failures);
            out.add("peer changes", c.peer_changes);
            out.add("upstream expiries", c.upstream_expiries);
            out.add("messages dropped by engines", c.total_drops());
            let st = p.inner.stats();
            let i = p.injections;
            out.add("hostile: replayed copies", i.replayed);
            out.add(
                "hostile: altered copies",
                i.truncated + i.extended + i.mutated,
            );
            out.add("hostile: blind forged segments", i.forged);
            out.add("stream segments received", st.received);
            out.add("stream segments retransmitted", st.retransmitted);
            out.add("stream drops: bad checksum", st.drops.bad_checksum);
            out.add("stream drops: out of window", st.drops.out_of_window);
            out.add("stream drops: duplicate", st.drops.duplicate);
            out.add("stream drops: bad ack", st.drops.bad_ack);
            out.add("stream drops: no connection", st.drops.no_connection);
            out.add("stream drops: malformed", st.drops.malformed);
            out.add(
                "stream drops: challenged (RST, SYN)",
                st.drops.rst_challenged + st.drops.syn_challenged,
            );
            out.add("stream resets accepted", st.resets_accepted);
        }
    }

    fn teardown(&mut self, _sim: &mut Sim<Node>) {
        self.torn_down = true;
    }
}

/// The far end of an established stream `v` of node `n`, if that node has one back.
fn other_end(sim: &Sim<Node>, n: NodeId, v: &StreamView) -> Option<(NodeId, StreamView)> {
    if v.state != StreamState::Established {
        return None;
    }
    let topo = sim.topology();
    let b = topo.owner(v.peer)?;
    let w = sim.engine(b)?.inner.streams().find(|w| {
        w.transport == v.transport
            && w.state == StreamState::Established
            && topo.owner(w.peer) == Some(n)
    })?;
    Some((b, w))
}

fn end(v: &StreamView) -> inv::StreamEnd {
    inv::StreamEnd {
        iss: v.iss,
        irs: v.irs,
        snd_una: v.snd_una,
        rcv_nxt: v.rcv_nxt,
        acked: v.acked_digest,
        delivered: v.delivered_digest,
    }
}

/// Hostile nodes inject everything they hear and send, GIST messages and the stream adapter's
/// segments alike: the adapter checks segments as TCP does (checksum, windows, resets), so a
/// replayed or corrupted segment is dropped and counted (before it did, one injected segment
/// could desynchronise a stream for good: seeds 2485318213037367, 2485318213037969,
/// 2485318213038127, 2485318213038158 and 2485318213038223; docs/CAMPAIGNS.md).
fn vet(_: &Transmit) -> bool {
    true
}

/// A blind segment: a valid checksum, guessed sequence and acknowledgment numbers, any kind,
/// from one address the node has seen to another (spoofed: the node is neither end).
fn forge_segment(rng: &mut SeededRng, seen: &VecDeque<Transmit>) -> Option<Transmit> {
    let addrs: Vec<IpAddr> = seen
        .iter()
        .flat_map(|t| [t.src, Some(t.dst)])
        .flatten()
        .filter(|a| !a.is_multicast())
        .collect();
    if addrs.is_empty() {
        return None;
    }
    let src = addrs[rng.random_range(0..addrs.len())];
    let dst = addrs[rng.random_range(0..addrs.len())];
    if src == dst {
        return None;
    }
    let kind = SegmentKind::random(rng);
    let data: Vec<u8> = if kind == SegmentKind::Data {
        (0..rng.random_range(1..=64))
            .map(|_| rng.random())
            .collect()
    } else {
        Vec::new()
    };
    let transport = if rng.random_bool(0.5) {
        pathwise_gist::MaTransport::Tcp
    } else {
        pathwise_gist::MaTransport::Tls
    };
    let payload = Segment {
        kind,
        transport,
        seq: rng.random(),
        ack: rng.random(),
        payload: &data,
    }
    .emit();
    Some(Transmit {
        src: Some(src),
        dst,
        ifindex: None,
        transport: Transport::Udp {
            src_port: SEGMENT_PORT,
            dst_port: SEGMENT_PORT,
        },
        router_alert: None,
        ttl: 64,
        payload,
    })
}

/// Run one seed of the GIST campaign.
pub fn run_seed(seed: u64, budget: Budget) -> SeedRun {
    let mut rng = pathwise_core::rng::seeded(seed);
    let topo = random_network(&mut rng);
    let original = topo.clone();
    let lifetime = Duration::from_secs(15);
    let phases = Phases {
        faults: Duration::from_secs(60),
        settle: Duration::from_secs(45),
        quiesce: Duration::from_secs(120),
        step: Duration::from_millis(250),
        check_every: 4,
    };
    let plan = FaultPlan::draw(&mut rng, &topo, phases.faults, lifetime);
    let hostile = plan.hostile.clone();
    let fault_end = Instant::ZERO + phases.faults;
    let mut sim = Sim::new(topo, SimConfig::seeded(seed), move |setup: &NodeSetup| {
        let p = Probe::new(ping_node_with(setup, short_timers), |d| {
            !is_udp_to(d, SEGMENT_PORT)
        });
        Some(if hostile.contains(&setup.id) {
            p.hostile(setup, Instant::ZERO, fault_end, vet)
                .forging(forge_segment)
        } else {
            p
        })
    });
    let topo = sim.topology();
    let nodes: Vec<NodeId> = topo.node_ids().collect();
    let mut drawn = format!(
        "{} ({} nodes, {} links);",
        topo.name(),
        nodes.len(),
        topo.links().len()
    );
    let mut w = GistWorkload::default();
    for _ in 0..rng.random_range(1..=5) {
        let (from, to) = (
            nodes[rng.random_range(0..nodes.len())],
            nodes[rng.random_range(0..nodes.len())],
        );
        if from == to {
            continue;
        }
        let reliable = rng.random_bool(0.5);
        let _ = write!(
            drawn,
            " {}->{} {};",
            topo.node(from).name,
            topo.node(to).name,
            if reliable { "C-mode" } else { "D-mode" }
        );
        w.pingers.push(Pinger {
            from,
            src: v4(topo, from),
            dst: v4(topo, to),
            reliable,
            period: Duration::from_millis(rng.random_range(1000..=4000)),
            session: None,
            next_at: Instant::from_millis(rng.random_range(1..=2000)),
        });
    }
    run_plan(
        &mut sim,
        &mut w,
        &plan,
        &original,
        phases,
        budget,
        drawn,
        |_, _| {},
    )
}
