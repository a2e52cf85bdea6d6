//! Sharded RSVP nodes in simulation (issue #21): a node of N shards ([`ShardedRsvp`], the
//! daemon's routing of datagrams to the unchanged engine) sends the same messages, on the same
//! hops at the same instants, as one engine, for the same inputs — setup, admission failures
//! on a shared link, teardown — and holds the same state after many refresh periods.
//!
//! Documented differences: the order of messages several shards send at the same instant
//! (each shard drains its own queue), and, once refreshes begin (0.5 R at the earliest, RFC
//! 2205 §3.7), their timing, which each engine draws from its own random generator. So the
//! messages are compared as a sorted list up to 0.5 R, and the state after that.

mod common;

use common::rsvp::{filter, tb};
use pathwise::rsvp::shard::sim::{SessionEngine, sharded_sim};
use pathwise::rsvp::sim::{rsvp_sim, sim_engine_config};
use pathwise_core::engine::Engine;
use pathwise_core::time::{Duration, Instant};
use pathwise_rsvp::wire::{FilterSpec, FlowDescriptor, FlowSpec, SenderTspec, Session, StyleKind};
use pathwise_rsvp::{Config, Event};
use pathwise_sim::{NodeId, Sim, SimConfig, testbeds};

const R: Duration = Duration::from_secs(30);
const SESSIONS: u16 = 40;

/// One session of the workload: who sends, who receives, what is asked for.
#[derive(Clone, Copy, Debug)]
struct Flow {
    session: Session,
    sender_node: NodeId,
    sender: FilterSpec,
    receiver_node: NodeId,
    style: StyleKind,
    kbps: f32,
}

/// The workload on the KOM testbed: senders on N1 and N2, receivers on N5 and N6, 4 Mbit/s
/// each so that the 100 Mbit/s N3–N4 link refuses some; half released at 5 s, the senders of
/// a quarter withdrawn at 6 s, everything else torn down at 9 s.
fn workload<E: Engine + SessionEngine + 'static>(sim: &mut Sim<E>) -> Vec<Flow> {
    workload_with(sim, 4000.0, true)
}

/// [`workload`] at `kbps` per flow, with or without its releases and withdrawals.
fn workload_with<E: Engine + SessionEngine + 'static>(
    sim: &mut Sim<E>,
    kbps: f32,
    churn: bool,
) -> Vec<Flow> {
    let n = |name| sim.node(name).unwrap();
    let (n1, n2, n5, n6) = (n("N1"), n("N2"), n("N5"), n("N6"));
    let lo = |sim: &Sim<E>, node| sim.topology().loopbacks(node)[0];
    let flows: Vec<Flow> = (0..SESSIONS)
        .map(|k| {
            let (sender_node, receiver_node) = match k % 3 {
                0 => (n1, n5),
                1 => (n2, n6),
                _ => (n1, n6),
            };
            Flow {
                session: Session::ip(lo(sim, receiver_node), 17, 5000 + k),
                sender_node,
                sender: filter(lo(sim, sender_node), 6000 + k),
                receiver_node,
                style: if k % 2 == 0 {
                    StyleKind::Wf
                } else {
                    StyleKind::Ff
                },
                kbps,
            }
        })
        .collect();
    for (k, f) in flows.iter().enumerate() {
        let f = *f;
        let at = Instant::from_millis(1 + k as u64 * 7);
        sim.schedule_call(at, f.sender_node, move |e, now| {
            e.engine_for(&f.session)
                .register_sender(now, f.session, f.sender, SenderTspec(tb(f.kbps)))
                .unwrap();
        });
        // Receivers reserve once the Path has had time to arrive (WF and FF alike).
        sim.schedule_call(
            at + Duration::from_millis(50),
            f.receiver_node,
            move |e, now| {
                let filters = if f.style == StyleKind::Ff {
                    vec![f.sender]
                } else {
                    Vec::new()
                };
                let flows = vec![FlowDescriptor {
                    flowspec: Some(FlowSpec::ControlledLoad(tb(f.kbps))),
                    filters: filters.into(),
                    te: Vec::new(),
                }];
                e.engine_for(&f.session)
                    .reserve(now, f.session, f.style, flows, k % 4 == 0)
                    .unwrap();
            },
        );
        let release = |sim: &mut Sim<E>, at: Instant| {
            sim.schedule_call(at, f.receiver_node, move |e, now| {
                let _ = e.engine_for(&f.session).release(now, f.session);
            });
        };
        let withdraw = |sim: &mut Sim<E>, at: Instant| {
            sim.schedule_call(at, f.sender_node, move |e, now| {
                let _ = e
                    .engine_for(&f.session)
                    .unregister_sender(now, f.session, f.sender);
            });
        };
        match k % 4 {
            _ if !churn => {}
            0 | 1 => release(sim, Instant::from_secs(5)),
            2 => withdraw(sim, Instant::from_secs(6)),
            _ => {}
        }
    }
    flows
}

/// Tear down everything that is left.
fn teardown<E: Engine + SessionEngine + 'static>(sim: &mut Sim<E>, flows: &[Flow], at: Instant) {
    for f in flows.iter().copied() {
        sim.schedule_call(at, f.receiver_node, move |e, now| {
            let _ = e.engine_for(&f.session).release(now, f.session);
        });
        sim.schedule_call(at, f.sender_node, move |e, now| {
            let _ = e
                .engine_for(&f.session)
                .unregister_sender(now, f.session, f.sender);
        });
    }
}

type Wire = (u64, String, u32, String, String, String, u8, Vec<u8>);

/// Every message on every hop up to `until`, sorted (time, hop, bytes).
fn wire<E: Engine>(sim: &Sim<E>, until: Instant) -> Vec<Wire> {
    let mut v: Vec<Wire> = sim
        .captures()
        .iter()
        .filter(|c| c.record.time < until)
        .map(|c| {
            let r = &c.record;
            (
                r.time.as_nanos(),
                sim.name(r.from).to_string(),
                r.from_ifindex.0,
                r.to.map_or_else(String::new, |t| sim.name(t).to_string()),
                format!("{}>{}", r.src, r.dst),
                format!("{:?}", r.outcome),
                r.ttl,
                c.payload.clone(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Every upcall up to `until`, sorted (time, node, event).
fn upcalls(
    log: &[(Instant, NodeId, Event)],
    sim_names: &dyn Fn(NodeId) -> String,
    until: Instant,
) -> Vec<(u64, String, String)> {
    let mut v: Vec<_> = log
        .iter()
        .filter(|(t, ..)| *t < until)
        .map(|(t, n, e)| (t.as_nanos(), sim_names(*n), format!("{e:?}")))
        .collect();
    v.sort();
    v
}

fn drain_log<E: Engine<Event = Event>>(sim: &mut Sim<E>, log: &mut Vec<(Instant, NodeId, Event)>) {
    log.extend(
        sim.drain_events()
            .into_iter()
            .map(|r| (r.time, r.node, r.event)),
    );
}

/// The reservations installed on every node, per session, in kbit/s.
fn installed<E: Engine + SessionEngine>(
    sim: &mut Sim<E>,
    flows: &[Flow],
) -> Vec<(String, u16, u64)> {
    let nodes: Vec<NodeId> = sim.topology().node_ids().collect();
    let mut v = Vec::new();
    for n in nodes {
        let name = sim.name(n).to_string();
        for f in flows {
            let kbps = sim
                .engine_mut(n)
                .and_then(|e| e.engine_for(&f.session).session(&f.session))
                .map_or(0, |s| {
                    s.installed
                        .iter()
                        .map(|i| (f64::from(i.flowspec.reserved_rate()) / 125.0) as u64)
                        .sum()
                });
            v.push((name.clone(), f.session.dst_port, kbps));
        }
    }
    v
}

struct Run {
    early_wire: Vec<Wire>,
    early_upcalls: Vec<(u64, String, String)>,
    steady: Vec<(String, u16, u64)>,
    idle_at_end: bool,
    admission_failures: usize,
}

fn run<E: Engine<Event = Event> + SessionEngine + 'static>(
    mut sim: Sim<E>,
    idle: impl Fn(&E) -> bool,
) -> Run {
    let flows = workload(&mut sim);
    let mut log = Vec::new();
    let half_r = Instant::ZERO + R / 2;
    sim.run_until(half_r);
    drain_log(&mut sim, &mut log);
    let names = |n: NodeId| format!("{n:?}");
    let early_wire = wire(&sim, half_r);
    let early_upcalls = upcalls(&log, &names, half_r);
    let admission_failures = log
        .iter()
        .filter(|(_, _, e)| matches!(e, Event::ResvError { .. }))
        .count();
    // Many refresh periods later the same reservations stand.
    sim.run_until(Instant::from_secs(200));
    let steady = installed(&mut sim, &flows);
    teardown(&mut sim, &flows, Instant::from_secs(201));
    sim.run_until(Instant::from_secs(210));
    let nodes: Vec<NodeId> = sim.topology().node_ids().collect();
    let idle_at_end = nodes.iter().all(|&n| sim.engine(n).is_none_or(&idle));
    Run {
        early_wire,
        early_upcalls,
        steady,
        idle_at_end,
        admission_failures,
    }
}

fn base() -> Config {
    sim_engine_config(R)
}

#[test]
fn sharded_and_unsharded_nodes_send_the_same_messages_for_the_same_inputs() {
    let topo = testbeds::kom_rsvp;
    let one = run(
        rsvp_sim(topo(), SimConfig::seeded(11).with_capture(), base()),
        |e| e.is_idle() && e.traffic_control().is_empty(),
    );
    assert!(
        one.admission_failures > 0,
        "the workload must hit admission control"
    );
    assert!(one.steady.iter().any(|(_, _, k)| *k > 0));
    assert!(one.idle_at_end);
    for shards in [2, 3] {
        let sharded = run(
            sharded_sim(
                topo(),
                SimConfig::seeded(11).with_capture(),
                base(),
                shards,
                Box::new(|_, _| Default::default()),
            ),
            |e| e.is_idle() && e.shards()[0].traffic_control().lock().is_empty(),
        );
        assert_eq!(
            sharded.early_wire.len(),
            one.early_wire.len(),
            "{shards} shards"
        );
        assert!(
            sharded.early_wire == one.early_wire,
            "{shards} shards: messages differ"
        );
        assert_eq!(sharded.early_upcalls, one.early_upcalls, "{shards} shards");
        assert_eq!(sharded.steady, one.steady, "{shards} shards");
        assert!(
            sharded.idle_at_end,
            "{shards} shards: state left after teardown"
        );
    }
}

/// RSVP-TE through sharded transit and tail nodes (seed 004's R0 – R1 – R2, R0 unsharded as
/// head ends must be for now): every LSP comes up, and the labels the sharded transit hands out
/// are all different and each inside its shard's slice of the range (RFC 3209 §4.1: a label
/// names one LSP at the node that allocated it).
#[test]
fn lsps_through_sharded_nodes_get_distinct_labels_from_each_shards_range() {
    use pathwise::rsvp::shard::label_ranges;
    use pathwise::rsvp::shard::sim::sharded_sim_with;
    use pathwise_rsvp::engine::te::{LspRole, LspSpec, LspStatus};
    const LSPS: usize = 60;
    let mut sim = sharded_sim_with(
        testbeds::seed004_r0_r2(),
        SimConfig::seeded(3209),
        base(),
        |setup| if setup.name == "R0" { 1 } else { 3 },
        Box::new(|_, _| Default::default()),
    );
    let (r0, r2) = (sim.node("R0").unwrap(), sim.node("R2").unwrap());
    let to = sim.topology().loopbacks(r2)[0];
    sim.schedule_call(Instant::from_millis(1), r0, move |e, now| {
        for i in 0..LSPS {
            let spec = LspSpec::new(format!("lsp{i}"), to, 1000);
            e.engine_for(&Session::ip(to, 0, 0))
                .open_lsp(now, spec)
                .expect("LSP opens");
        }
    });
    sim.run_until(Instant::from_secs(5));
    let up = sim.engine(r0).unwrap().shards()[0]
        .lsps()
        .iter()
        .filter(|v| v.role == LspRole::HeadEnd && v.status == LspStatus::Up)
        .count();
    assert_eq!(up, LSPS);
    let ranges = label_ranges(Config::default().label_range, 3);
    // R1 swaps; R2, the egress, advertises implicit null and allocates none.
    for name in ["R1"] {
        let node = sim.engine(sim.node(name).unwrap()).unwrap();
        let mut all = Vec::new();
        for (i, shard) in node.shards().iter().enumerate() {
            let labels: Vec<u32> = shard.lfib().entries().map(|e| e.in_label).collect();
            assert!(!labels.is_empty(), "{name} shard {i} holds no LSP");
            let (first, last) = ranges[i];
            assert!(
                labels.iter().all(|l| (first..=last).contains(l)),
                "{name} shard {i}: {labels:?} outside {first}..={last}"
            );
            all.extend(labels);
        }
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(
            (all.len(), n),
            (LSPS, LSPS),
            "{name}: labels in use once each"
        );
    }
}

/// LSPs headed by a sharded node (RFC 3209 head end, `rsvp lsp add` on a daemon with
/// `threads > 1`): each is opened on the shard its name picks, which gives it a Tunnel ID of a
/// session it holds, so its Resv comes back to it through the dispatcher. All come up, every
/// shard heads some, a re-route (make-before-break, same session) stays on its shard, and
/// closing them by name leaves no state or label anywhere.
#[test]
fn lsps_headed_by_a_sharded_node_come_up_and_go_away_on_their_shards() {
    use pathwise::rsvp::shard::sim::sharded_sim;
    use pathwise_rsvp::engine::te::{LspRole, LspSpec, LspStatus};
    const LSPS: usize = 45;
    let mut sim = sharded_sim(
        testbeds::seed004_r0_r2(),
        SimConfig::seeded(4661),
        base(),
        3,
        Box::new(|_, _| Default::default()),
    );
    let (r0, r2) = (sim.node("R0").unwrap(), sim.node("R2").unwrap());
    let to = sim.topology().loopbacks(r2)[0];
    sim.schedule_call(Instant::from_millis(1), r0, move |e, now| {
        for i in 0..LSPS {
            let name = format!("lsp{i}");
            e.head_of(&name)
                .open_lsp(now, LspSpec::new(name, to, 1000))
                .expect("LSP opens");
        }
    });
    sim.run_until(Instant::from_secs(5));
    let heads = |sim: &Sim<_>| -> Vec<(usize, String, Session, LspStatus)> {
        let node: &pathwise::rsvp::shard::sim::ShardedRsvp<_> = sim.engine(r0).unwrap();
        node.shards()
            .iter()
            .enumerate()
            .flat_map(|(i, shard)| {
                shard
                    .lsps()
                    .into_iter()
                    .filter(|v| v.role == LspRole::HeadEnd)
                    .map(move |v| (i, v.name, v.session, v.status))
            })
            .collect()
    };
    let up = heads(&sim);
    assert_eq!(up.len(), LSPS);
    let map = sim.engine(r0).unwrap().map().clone();
    for (i, name, session, status) in &up {
        assert_eq!(*status, LspStatus::Up, "{name}");
        assert_eq!(map.of_lsp(name), *i, "{name} headed by its name's shard");
        assert_eq!(
            map.of_session(session),
            *i,
            "{name}'s session held where it is headed"
        );
    }
    for shard in 0..3 {
        assert!(up.iter().any(|h| h.0 == shard), "shard {shard} heads none");
    }
    // Re-route one: a new LSP ID in the same session, on the same shard.
    let (_, name, session, _) = up[0].clone();
    let renamed = name.clone();
    sim.schedule_call(Instant::from_secs(5), r0, move |e, now| {
        e.head_of(&renamed)
            .open_lsp(now, LspSpec::new(renamed.clone(), to, 2000))
            .expect("LSP re-routes");
    });
    sim.run_until(Instant::from_secs(10));
    let after = heads(&sim);
    let moved = after.iter().find(|h| h.1 == name).unwrap();
    assert_eq!((moved.2, moved.3), (session, LspStatus::Up));
    // Closed by name, each at its shard: nothing left on any node.
    sim.schedule_call(Instant::from_secs(10), r0, move |e, now| {
        for i in 0..LSPS {
            let name = format!("lsp{i}");
            e.head_of(&name).close_lsp(now, &name).expect("LSP closes");
        }
    });
    sim.run_until(Instant::from_secs(15));
    assert!(heads(&sim).is_empty());
    for node in ["R0", "R1", "R2"] {
        let e = sim.engine(sim.node(node).unwrap()).unwrap();
        assert!(e.is_idle(), "{node} keeps state");
        for shard in e.shards() {
            assert_eq!(shard.labels_in_use(), 0, "{node} keeps labels");
        }
    }
}

/// What refresh reduction did at every node of a run.
#[derive(Debug, Default)]
struct RrTotals {
    drops: std::collections::BTreeMap<&'static str, u64>,
    summarized: u64,
    acks_received: u64,
    nacks_sent: u64,
    epoch_changes: u64,
    /// Neighbours seen to drop the capable flag (RFC 2961 §2): none, every node sets it.
    capability_lost: u64,
    timeouts: u64,
    /// RFC 2747 handshakes completed (challenges answered).
    handshakes: u64,
    /// Messages verified.
    verified: u64,
}

struct RrRun {
    /// The reservations installed everywhere, every 40 s from 40 s to 280 s.
    samples: Vec<Vec<(String, u16, u64)>>,
    totals: RrTotals,
    lost: u64,
    idle_at_end: bool,
}

/// The workload with refresh reduction on every node, over links losing `loss` of their
/// packets: every 40 s for 280 s (more than nine refresh periods) the reservations installed
/// are sampled; then everything is torn down and left to time out (a teardown may be lost).
fn rr_run<E: Engine<Event = Event> + SessionEngine + 'static>(
    mut sim: Sim<E>,
    churn: bool,
    idle: impl Fn(&E) -> bool,
    counters: impl Fn(&E) -> Vec<pathwise_rsvp::engine::Counters>,
) -> RrRun {
    let flows = workload_with(&mut sim, if churn { 4000.0 } else { 500.0 }, churn);
    let mut samples = Vec::new();
    for k in 1..=7 {
        sim.run_until(Instant::from_secs(40 * k));
        let _ = sim.drain_events();
        samples.push(installed(&mut sim, &flows));
    }
    let mut totals = RrTotals::default();
    let nodes: Vec<NodeId> = sim.topology().node_ids().collect();
    for &n in &nodes {
        for c in sim.engine(n).map(&counters).unwrap_or_default() {
            for (reason, k) in &c.drops {
                *totals.drops.entry(*reason).or_insert(0) += k;
            }
            totals.summarized += c.refresh.summarized;
            totals.acks_received += c.refresh.acks_received;
            totals.nacks_sent += c.refresh.nacks_sent;
            totals.epoch_changes += c.refresh.epoch_changes;
            totals.capability_lost += c.refresh.capability_lost;
            totals.timeouts += c.path_timeouts + c.resv_timeouts;
            totals.handshakes += c.integrity.handshakes;
            totals.verified += c.integrity.verified;
        }
    }
    teardown(&mut sim, &flows, Instant::from_secs(281));
    // Lost teardowns leave state to time out: L = (K + 0.5) × 1.5 R (RFC 2205 §3.7).
    sim.run_until(Instant::from_secs(281 + 200));
    let _ = sim.drain_events();
    let idle_at_end = nodes.iter().all(|&n| sim.engine(n).is_none_or(&idle));
    let links: Vec<_> = sim.topology().link_ids().collect();
    let lost = links
        .iter()
        .flat_map(|&l| {
            [pathwise_sim::Direction::AToB, pathwise_sim::Direction::BToA]
                .map(|d| sim.link_stats(l, d))
        })
        .map(|s| s.drops.total())
        .sum();
    RrRun {
        samples,
        totals,
        lost,
        idle_at_end,
    }
}

fn rr_base() -> Config {
    Config {
        refresh_reduction: true,
        ..base()
    }
}

/// Refresh reduction (RFC 2961) on sharded nodes: identified messages are acknowledged by
/// the shard that sent them, Srefreshes refresh the state each shard installed, and one Epoch
/// per node is all neighbours see. Sharded and unsharded nodes hold the same reservations at
/// every sample over nine refresh periods kept by summary refresh, drop nothing, NACK nothing,
/// time nothing out, and leave nothing after teardown. `loss`: links lose that share of their
/// packets (then no flow competes for admission, so which ones get the bandwidth does not
/// depend on which packets were lost, and none is released before the end).
fn sharded_and_unsharded_agree_with_refresh_reduction(loss: f64) {
    let topo = || {
        let text = pathwise_sim::testbeds::KOM_RSVP
            .replace("mtu = 1500", &format!("mtu = 1500\nloss = {loss}"));
        pathwise_sim::Topology::from_toml(&text).expect("testbed parses")
    };
    let churn = loss == 0.0;
    let one = rr_run(
        rsvp_sim(topo(), SimConfig::seeded(2961), rr_base()),
        churn,
        |e| e.is_idle() && e.traffic_control().is_empty(),
        |e| vec![e.counters().clone()],
    );
    assert!(one.samples[0].iter().any(|(_, _, k)| *k > 0));
    if loss > 0.0 {
        // No flow competes: from 120 s every reservation stands at every node on its path.
        for sample in &one.samples[2..] {
            assert_eq!(sample, &one.samples[2]);
        }
    }
    assert!(
        one.totals.summarized > 0,
        "summary refresh in use: {:?}",
        one.totals
    );
    assert!(one.idle_at_end);
    if loss > 0.0 {
        assert!(one.lost > 20, "the links lost only {} packets", one.lost);
    }
    for shards in [2, 3] {
        let sharded = rr_run(
            sharded_sim(
                topo(),
                SimConfig::seeded(2961),
                rr_base(),
                shards,
                Box::new(|_, _| Default::default()),
            ),
            churn,
            |e| {
                e.bad_bundle() == 0
                    && e.is_idle()
                    && e.shards()[0].traffic_control().lock().is_empty()
            },
            |e| e.shards().iter().map(|s| s.counters().clone()).collect(),
        );
        // Over lossy links a lost first Path or Resv, sent before the neighbour was known to
        // be capable (so not retransmitted), waits for the next refresh (up to 1.5 R): the
        // runs lose different packets, so they are compared from 120 s on.
        let from = if loss > 0.0 { 2 } else { 0 };
        for (k, (a, b)) in one
            .samples
            .iter()
            .zip(&sharded.samples)
            .enumerate()
            .skip(from)
        {
            assert_eq!(
                a,
                b,
                "{shards} shards, loss {loss}: sample at {} s",
                40 * (k + 1)
            );
        }
        let t = &sharded.totals;
        assert!(
            t.summarized > 0,
            "{shards} shards: no summary refresh: {t:?}"
        );
        assert!(t.acks_received > 0, "{shards} shards: {t:?}");
        // One Epoch per node (RFC 2961 §4.5): a neighbour taking a shard's Epoch for another
        // would count a restart.
        assert_eq!(t.epoch_changes, 0, "{shards} shards: {t:?}");
        assert_eq!(t.capability_lost, 0, "{shards} shards: {t:?}");
        assert_eq!(t.drops, one.totals.drops, "{shards} shards dropped");
        assert_eq!(t.timeouts, one.totals.timeouts, "{shards} shards: {t:?}");
        // Every Srefresh identifier reached the shard holding its state. With loss a few may
        // have been forgotten by the dispatcher (not named for three refresh periods) and
        // NACKed, which the full refresh that answers a NACK repairs (RFC 2961 §5.4).
        let slack = if loss > 0.0 { 5 } else { 0 };
        assert!(
            t.nacks_sent <= one.totals.nacks_sent + slack,
            "{shards} shards: {t:?}, one engine {:?}",
            one.totals
        );
        assert!(
            sharded.idle_at_end,
            "{shards} shards: state left after teardown"
        );
    }
}

#[test]
fn sharded_nodes_keep_the_same_state_with_refresh_reduction() {
    sharded_and_unsharded_agree_with_refresh_reduction(0.0);
}

#[test]
fn sharded_nodes_keep_the_same_state_with_refresh_reduction_over_lossy_links() {
    sharded_and_unsharded_agree_with_refresh_reduction(0.02);
}

/// A policy requiring RFC 2747 integrity with one HMAC-SHA-256 key and the handshake on
/// (challenges), as a configuration file's `integrity = { mode = "require", … }` gives.
fn require_integrity() -> pathwise_auth::Policy {
    let mut keys = pathwise_auth::KeyChain::new();
    keys.insert(
        pathwise_auth::Key::new(1, pathwise_auth::Algorithm::HmacSha256, b"kom testbed").unwrap(),
    )
    .unwrap();
    pathwise_auth::Policy::new(pathwise_auth::Mode::Require, keys)
}

/// Message integrity (RFC 2747) on sharded nodes, with refresh reduction so that Srefreshes
/// and Acks naming several shards' messages are cut by the dispatcher: every part it hands on
/// is verified and signed again, every shard challenges the neighbours it has no sequence
/// state for and gets its own Integrity Response back, and the shards sign from one sequence
/// per key. Sharded and unsharded nodes, integrity required on every interface, hold the same
/// reservations at every sample from 80 s, and nothing is refused but what waited for a
/// handshake.
#[test]
fn sharded_nodes_with_integrity_keep_the_same_state() {
    let topo = || pathwise_sim::Topology::from_toml(pathwise_sim::testbeds::KOM_RSVP).unwrap();
    let base = || Config {
        wall_clock_at_zero: 1_800_000_000,
        ..rr_base()
    };
    let one = rr_run(
        pathwise::rsvp::sim::rsvp_sim_with(
            topo(),
            SimConfig::seeded(2747),
            base(),
            Box::new(|_, _| require_integrity()),
        ),
        false,
        |e| e.is_idle() && e.traffic_control().is_empty(),
        |e| vec![e.counters().clone()],
    );
    assert!(one.idle_at_end);
    assert!(one.totals.verified > 1000, "{:?}", one.totals);
    assert!(one.totals.summarized > 0, "{:?}", one.totals);
    for shards in [2, 3] {
        let signed_parts = std::rc::Rc::new(std::cell::Cell::new(0));
        let seen = signed_parts.clone();
        let sharded = rr_run(
            sharded_sim(
                topo(),
                SimConfig::seeded(2747),
                base(),
                shards,
                Box::new(|_, _| require_integrity()),
            ),
            false,
            move |e| {
                seen.set(seen.get() + e.signed_parts());
                e.bad_bundle() == 0
                    && e.is_idle()
                    && e.shards()[0].traffic_control().lock().is_empty()
            },
            |e| e.shards().iter().map(|s| s.counters().clone()).collect(),
        );
        for (k, (a, b)) in one.samples.iter().zip(&sharded.samples).enumerate().skip(1) {
            assert_eq!(a, b, "{shards} shards: sample at {} s", 40 * (k + 1));
        }
        let t = &sharded.totals;
        assert!(
            t.summarized > 0 && t.acks_received > 0,
            "{shards} shards: {t:?}"
        );
        assert!(
            t.handshakes >= one.totals.handshakes,
            "{shards} shards: {t:?}"
        );
        assert!(
            signed_parts.get() > 0,
            "{shards} shards: no message was cut"
        );
        // Each shard of a neighbour challenges on its own, and every Challenge makes the
        // challenged node send again what it sent recently (RFC 2747 §4.3): a copy older than
        // what has since arrived is dropped as out of order (RFC 2961 §4.5), as in the
        // unsharded run whenever a resend crosses a newer message.
        let refused = |d: &std::collections::BTreeMap<&'static str, u64>| {
            d.iter()
                .filter(|(r, _)| !matches!(**r, "integrity_awaiting_challenge" | "out_of_order"))
                .map(|(r, k)| (*r, *k))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            refused(&t.drops),
            refused(&one.totals.drops),
            "{shards} shards: {t:?}"
        );
        let stale = t.drops.get("out_of_order").copied().unwrap_or(0);
        assert!(stale <= t.handshakes, "{shards} shards: {t:?}");
        assert_eq!(t.epoch_changes, 0, "{shards} shards: {t:?}");
        assert_eq!(t.capability_lost, 0, "{shards} shards: {t:?}");
        assert_eq!(t.timeouts, one.totals.timeouts, "{shards} shards: {t:?}");
        assert!(
            sharded.idle_at_end,
            "{shards} shards: state left after teardown"
        );
    }
}
