//! `pathwise sim campaign rsvp` and `rsvp-te`: per seed, RSVP engines on a random network
//! with a random workload — unicast sessions with senders and FF, SE or WF receivers, or
//! RSVP-TE LSPs with strict, loose or no explicit routes and random priorities — under the
//! faults [`crate::sim::faults`] draws, checked by [`crate::sim::invariants`].

use crate::rsvp::sim::node_config;
use crate::sim::faults::{FaultPlan, Probe, random_network, v4};
use crate::sim::invariants::{self as inv, Checks, InstalledOn, Invariant, Violation};
use crate::sim::{Activity, Phases, SeedRun, Stage, Workload, run_plan};
use pathwise_auth::Policy;
use pathwise_core::engine::Engine;
use pathwise_core::io::Transmit;
use pathwise_core::rand::Rng;
use pathwise_core::rng::SeededRng;
use pathwise_core::time::{Duration, Instant};
use pathwise_rsvp::engine::te::ero::{host_node, strict_hop};
use pathwise_rsvp::engine::te::{LspSpec, LspStatus};
use pathwise_rsvp::wire::te::{EroSubobject, ExplicitRoute};
use pathwise_rsvp::wire::{
    FilterSpec, FlowDescriptor, FlowSpec, Message, MsgType, SenderTspec, Session, StyleKind,
    TokenBucket,
};
use pathwise_rsvp::{Config, Event, RsvpEngine};
use pathwise_sim::{NodeId, NodeSetup, Sim, SimConfig, Topology};
use std::fmt::Write as _;

/// The refresh period R: short, so a run covers many refreshes and lifetimes.
const REFRESH: Duration = Duration::from_secs(3);
/// Injected messages may carry a refresh period up to this (their state then lives
/// (K + 0.5) · 1.5 · this), so what they set up is gone before the run ends.
const MAX_INJECTED_REFRESH_MS: u32 = 6_000;

type Node = Probe<RsvpEngine>;

/// A sending application.
#[derive(Clone, Debug)]
struct Sender {
    node: NodeId,
    session: Session,
    filter: FilterSpec,
    tspec: SenderTspec,
}

/// A receiving application (RAPI-style: WF reserves at once; FF and SE name each sender the
/// first time path state for it is reported).
#[derive(Clone, Debug)]
struct Receiver {
    node: NodeId,
    session: Session,
    style: StyleKind,
    flowspec: FlowSpec,
    heard: Vec<FilterSpec>,
}

impl Receiver {
    fn reserve(&self, sim: &mut Sim<Node>) {
        let descriptor = |filters| FlowDescriptor {
            flowspec: Some(self.flowspec),
            filters,
            te: Vec::new(),
        };
        let flows = match self.style {
            StyleKind::Ff => self
                .heard
                .iter()
                .map(|s| descriptor(vec![*s].into()))
                .collect(),
            StyleKind::Se => vec![descriptor(self.heard.clone().into())],
            _ => vec![descriptor(Vec::new().into())],
        };
        if self.style != StyleKind::Wf && self.heard.is_empty() {
            return;
        }
        let (session, style) = (self.session, self.style);
        sim.with_engine(self.node, |p, now| {
            // Refusals come back as events; the application carries on.
            let _ = p.inner.reserve(now, session, style, flows, false);
        });
    }
}

/// A head-end LSP.
#[derive(Clone, Debug)]
struct Lsp {
    head: NodeId,
    spec: LspSpec,
}

/// The applications of one run.
#[derive(Debug, Default)]
struct RsvpWorkload {
    senders: Vec<Sender>,
    receivers: Vec<Receiver>,
    lsps: Vec<Lsp>,
    torn_down: bool,
}

fn token_bucket(bytes_per_s: f32) -> TokenBucket {
    TokenBucket {
        rate: bytes_per_s,
        bucket: 4000.0,
        peak: f32::INFINITY,
        min_policed: 64,
        max_packet: 1500,
    }
}

/// A rate between 5 % and 60 % of the smallest interface budget, bytes per second.
fn rate(rng: &mut SeededRng, budget_bps: u64) -> f32 {
    (budget_bps as f64 / 8.0 * rng.random_range(0.05..=0.6)) as f32
}

fn smallest_budget(topo: &Topology) -> u64 {
    topo.nodes()
        .iter()
        .flat_map(|n| n.interfaces.iter().map(|i| i.reservable_bps))
        .filter(|&b| b > 0)
        .min()
        .unwrap_or(1_000_000)
}

impl RsvpWorkload {
    fn draw_sessions(rng: &mut SeededRng, topo: &Topology, out: &mut String) -> Self {
        let nodes: Vec<NodeId> = topo.node_ids().collect();
        let budget = smallest_budget(topo);
        let mut w = RsvpWorkload::default();
        for s in 0..rng.random_range(1..=4u16) {
            let dest = nodes[rng.random_range(0..nodes.len())];
            let session = Session::ip(v4(topo, dest), 17, 5000 + s);
            let style = [StyleKind::Ff, StyleKind::Se, StyleKind::Wf][rng.random_range(0..3)];
            let flowspec = FlowSpec::ControlledLoad(token_bucket(rate(rng, budget)));
            let _ = write!(out, " session {s} to {} {style:?}:", topo.node(dest).name);
            w.receivers.push(Receiver {
                node: dest,
                session,
                style,
                flowspec,
                heard: Vec::new(),
            });
            for k in 0..rng.random_range(1..=3u16) {
                let from = nodes[rng.random_range(0..nodes.len())];
                if from == dest
                    || w.senders
                        .iter()
                        .any(|x| x.node == from && x.session == session)
                {
                    continue;
                }
                let _ = write!(out, " {}", topo.node(from).name);
                let std::net::IpAddr::V4(src) = v4(topo, from) else {
                    unreachable!("loopbacks()[0] is IPv4")
                };
                w.senders.push(Sender {
                    node: from,
                    session,
                    filter: FilterSpec::V4 {
                        src,
                        src_port: 6000 + k,
                    },
                    tspec: SenderTspec(token_bucket(rate(rng, budget))),
                });
            }
        }
        w
    }

    fn draw_lsps(rng: &mut SeededRng, sim: &Sim<Node>, out: &mut String) -> Self {
        let topo = sim.topology();
        let nodes: Vec<NodeId> = topo.node_ids().collect();
        let budget = smallest_budget(topo);
        let mut w = RsvpWorkload::default();
        for i in 0..rng.random_range(1..=4usize) {
            let head = nodes[rng.random_range(0..nodes.len())];
            let tail = nodes[rng.random_range(0..nodes.len())];
            if head == tail {
                continue;
            }
            let to = v4(topo, tail);
            let path = route(sim, head, to);
            let ero = match rng.random_range(0..3) {
                0 => None,
                // Strict: every hop's address on the shortest path as it is now.
                1 => Some(ExplicitRoute {
                    subobjects: path.iter().map(|&(_, a)| strict_hop(a)).collect(),
                }),
                // Loose: a node on the way, then the tail.
                _ => {
                    let mut subobjects = Vec::new();
                    if path.len() > 1 {
                        let (mid, _) = path[rng.random_range(0..path.len() - 1)];
                        subobjects.push(EroSubobject {
                            loose: true,
                            node: host_node(v4(topo, mid)),
                        });
                    }
                    subobjects.push(EroSubobject {
                        loose: true,
                        node: host_node(to),
                    });
                    Some(ExplicitRoute { subobjects })
                }
            };
            let setup_priority = rng.random_range(0..=7);
            let spec = LspSpec {
                name: format!("lsp{i}"),
                to,
                from: None,
                bandwidth_bps: (f64::from(rate(rng, budget)) * 8.0) as u64,
                setup_priority,
                hold_priority: rng.random_range(0..=setup_priority),
                record_route: rng.random_bool(0.5),
                label_recording: false,
                gmpls: None,
                ero,
            };
            let _ = write!(
                out,
                " lsp{i} {}->{} {} prio {}/{};",
                topo.node(head).name,
                topo.node(tail).name,
                match &spec.ero {
                    None => "no ERO".to_string(),
                    Some(e) if e.subobjects.iter().all(|s| !s.loose) => "strict".to_string(),
                    Some(_) => "loose".to_string(),
                },
                spec.setup_priority,
                spec.hold_priority
            );
            w.lsps.push(Lsp { head, spec });
        }
        w
    }

    fn start_node(&mut self, sim: &mut Sim<Node>, node: NodeId) {
        for s in self.senders.iter().filter(|s| s.node == node) {
            let (session, filter, tspec) = (s.session, s.filter, s.tspec);
            sim.with_engine(node, |p, now| {
                let _ = p.inner.register_sender(now, session, filter, tspec);
            });
        }
        for r in self.receivers.iter_mut().filter(|r| r.node == node) {
            r.heard.clear();
            if r.style == StyleKind::Wf {
                r.reserve(sim);
            }
        }
        for l in self.lsps.iter().filter(|l| l.head == node) {
            let spec = l.spec.clone();
            sim.with_engine(node, |p, now| {
                let _ = p.inner.open_lsp(now, spec);
            });
        }
    }
}

/// The hops from `from` towards `to` on the current routes: each next node and the address
/// of its interface on the link.
fn route(sim: &Sim<Node>, from: NodeId, to: std::net::IpAddr) -> Vec<(NodeId, std::net::IpAddr)> {
    let topo = sim.topology();
    let mut hops = Vec::new();
    let mut at = from;
    while topo.owner(to) != Some(at) && hops.len() < topo.nodes().len() {
        let Some(r) = sim.route_to(at, to) else { break };
        let Some((next, iface)) = topo.peer(at, r.ifindex) else {
            break;
        };
        hops.push((next, iface.addr_for(to)));
        at = next;
    }
    hops
}

impl Workload for RsvpWorkload {
    type Engine = Node;

    fn react(&mut self, sim: &mut Sim<Node>) {
        let events = sim.drain_events();
        if self.torn_down {
            return;
        }
        for rec in events {
            let Event::PathState {
                session, sender, ..
            } = rec.event
            else {
                continue;
            };
            for i in 0..self.receivers.len() {
                let r = &mut self.receivers[i];
                if r.node != rec.node
                    || r.session != session
                    || r.style == StyleKind::Wf
                    || r.heard.contains(&sender)
                {
                    continue;
                }
                r.heard.push(sender);
                let r = r.clone();
                r.reserve(sim);
            }
        }
    }

    fn restarted(&mut self, sim: &mut Sim<Node>, node: NodeId) {
        self.start_node(sim, node);
    }

    fn check(&self, sim: &Sim<Node>, stage: Stage, checks: &mut Checks) -> Result<(), Violation> {
        let now = sim.now();
        let topo = sim.topology();
        for n in topo.node_ids() {
            let Some(p) = sim.engine(n) else { continue };
            let e = &p.inner;
            let name = sim.name(n);
            let fail = |i: Invariant, d: String| Violation::new(i, now, name, d);
            let c = e.counters();
            checks.count(Invariant::CountersAddUp);
            inv::counters_add_up(
                p.handed,
                c.rx.iter().sum(),
                c.total_drops(),
                c.received(MsgType::Bundle) > 0,
            )
            .map_err(|d| fail(Invariant::CountersAddUp, format!("{d}: {c:?}")))?;
            let sessions = e.sessions();
            for v in &sessions {
                let installed: Vec<InstalledOn<FilterSpec>> = v
                    .installed
                    .iter()
                    .map(|i| InstalledOn {
                        ifindex: i.ifindex.0,
                        senders: i.senders.clone(),
                    })
                    .collect();
                let paths: Vec<(FilterSpec, Vec<u32>)> = v
                    .paths
                    .iter()
                    .map(|p| (p.sender, p.oifs.iter().flatten().map(|i| i.0).collect()))
                    .collect();
                checks.count(Invariant::ResvHasPath);
                inv::resv_has_path(&installed, &paths).map_err(|d| {
                    fail(
                        Invariant::ResvHasPath,
                        format!("session {:?}: {d}", v.session),
                    )
                })?;
            }
            let tc = e.traffic_control();
            let (mut all_n, mut all_rate, mut all_reserved) = (0, 0.0, 0.0);
            for i in &e.config().interfaces {
                let reserved = tc.reserved(i.ifindex);
                checks.count(Invariant::Admission);
                inv::admission(i.ifindex.0, reserved, i.reservable_bps as f64 / 8.0)
                    .map_err(|d| fail(Invariant::Admission, d))?;
                let on_if: Vec<f64> = sessions
                    .iter()
                    .flat_map(|v| &v.installed)
                    .filter(|x| x.ifindex == i.ifindex)
                    .map(|x| f64::from(x.flowspec.reserved_rate()))
                    .collect();
                let rate: f64 = on_if.iter().sum();
                checks.count(Invariant::ClassesMatchState);
                inv::classes_match_state(i.ifindex.0, (on_if.len(), reserved), (on_if.len(), rate))
                    .map_err(|d| fail(Invariant::ClassesMatchState, d))?;
                all_n += on_if.len();
                all_rate += rate;
                all_reserved += reserved;
            }
            checks.count(Invariant::ClassesMatchState);
            inv::classes_match_state(0, (tc.len(), all_reserved), (all_n, all_rate))
                .map_err(|d| fail(Invariant::ClassesMatchState, format!("all interfaces: {d}")))?;
            if stage == Stage::Settled {
                for v in e.lsps() {
                    let (LspStatus::Up, Some((label, nh))) = (v.status, v.out) else {
                        continue;
                    };
                    let Some(m) = topo.owner(nh.addr) else {
                        continue;
                    };
                    let next_in = sim.engine(m).and_then(|q| {
                        q.inner
                            .lsps()
                            .into_iter()
                            .find(|w| w.session == v.session && w.sender == v.sender)
                            .and_then(|w| w.in_label)
                    });
                    checks.count(Invariant::LabelsHopByHop);
                    inv::labels_hop_by_hop(label, next_in).map_err(|d| {
                        Violation::new(
                            Invariant::LabelsHopByHop,
                            now,
                            format!("{} -> {}", name, sim.name(m)),
                            format!("LSP {} ({:?}): {d}", v.name, v.sender),
                        )
                    })?;
                }
            }
            if stage == Stage::Quiescent {
                let s = e.state_stats();
                checks.count(Invariant::NoStateLeft);
                inv::no_state_left(&[
                    ("sessions", s.sessions),
                    ("path states", s.psbs),
                    ("reservation states", s.rsbs),
                    ("previous hops", s.phops),
                    ("installed reservations", s.out_isbs),
                    ("timers", s.timers + usize::from(e.poll_timeout().is_some())),
                    ("interned values", usize::from(!e.is_idle())),
                    ("traffic-control classes", tc.len()),
                    ("labels", e.labels_in_use()),
                    ("label bindings", e.lfib().len()),
                    ("LSPs", e.lsp_count()),
                    ("receiver requests", e.receiver_requests()),
                ])
                .map_err(|d| fail(Invariant::NoStateLeft, d))?;
            }
        }
        Ok(())
    }

    fn activity(&self, sim: &Sim<Node>, out: &mut Activity) {
        for n in sim.topology().node_ids() {
            let Some(p) = sim.engine(n) else { continue };
            let (e, c) = (&p.inner, p.inner.counters());
            out.add("hostile messages injected", p.injected);
            out.add(
                "reservations installed at settle",
                e.state_stats().out_isbs as u64,
            );
            out.add(
                "LSP hops up at settle (head, transit, egress)",
                e.lsps()
                    .iter()
                    .filter(|v| v.status == LspStatus::Up)
                    .count() as u64,
            );
            out.add("path and resv timeouts", c.path_timeouts + c.resv_timeouts);
            out.add("admission failures", c.admission_failures);
            out.add("local repairs", c.local_repairs);
            out.add("preemptions", c.preemptions);
            out.add("messages dropped by engines", c.total_drops());
        }
    }

    fn teardown(&mut self, sim: &mut Sim<Node>) {
        self.torn_down = true;
        for s in &self.senders {
            let (session, filter) = (s.session, s.filter);
            sim.with_engine(s.node, |p, now| {
                let _ = p.inner.unregister_sender(now, session, filter);
            });
        }
        for r in &self.receivers {
            let session = r.session;
            sim.with_engine(r.node, |p, now| {
                let _ = p.inner.release(now, session);
            });
        }
        for l in &self.lsps {
            let name = l.spec.name.clone();
            sim.with_engine(l.head, |p, now| {
                let _ = p.inner.close_lsp(now, &name);
            });
        }
    }
}

/// Lets an injected message through unless it would hold state for longer than the run can
/// wait (a TIME_VALUES beyond [`MAX_INJECTED_REFRESH_MS`]).
fn vet(t: &Transmit) -> bool {
    match Message::parse_full(&t.payload) {
        Ok(p) => match p.message {
            Message::Path(m) => m.time_values.refresh_ms <= MAX_INJECTED_REFRESH_MS,
            Message::Resv(m) => m.time_values.refresh_ms <= MAX_INJECTED_REFRESH_MS,
            _ => true,
        },
        Err(_) => true,
    }
}

/// Run one seed of the RSVP (`te` false) or RSVP-TE campaign.
pub fn run_seed(seed: u64, te: bool, budget: crate::sim::Budget) -> SeedRun {
    let mut rng = pathwise_core::rng::seeded(seed);
    let topo = random_network(&mut rng);
    let original = topo.clone();
    let base = Config {
        refresh: REFRESH,
        ..Config::default()
    };
    let lifetime = REFRESH.mul_f64((f64::from(base.keep_multiplier) + 0.5) * 1.5);
    let phases = Phases {
        faults: REFRESH * 10 + lifetime,
        settle: lifetime + REFRESH * 3,
        quiesce: lifetime * 2 + REFRESH * 3,
        step: Duration::from_millis(250),
        check_every: 4,
    };
    let plan = FaultPlan::draw(&mut rng, &topo, phases.faults, lifetime);
    let hostile = plan.hostile.clone();
    let fault_end = Instant::ZERO + phases.faults;
    let mut sim = Sim::new(topo, SimConfig::seeded(seed), move |setup: &NodeSetup| {
        let cfg = node_config(setup, &base, &|_, _| Policy::default());
        let p = Probe::new(RsvpEngine::with_memory_tc(cfg, Instant::ZERO), |_| true);
        Some(if hostile.contains(&setup.id) {
            p.hostile(setup, Instant::ZERO, fault_end, vet)
        } else {
            p
        })
    });
    let mut drawn = format!(
        "{} ({} nodes, {} links);",
        sim.topology().name(),
        sim.topology().nodes().len(),
        sim.topology().links().len()
    );
    let mut w = if te {
        RsvpWorkload::draw_lsps(&mut rng, &sim, &mut drawn)
    } else {
        RsvpWorkload::draw_sessions(&mut rng, sim.topology(), &mut drawn)
    };
    run_plan(
        &mut sim,
        &mut w,
        &plan,
        &original,
        phases,
        budget,
        drawn,
        |sim, w| {
            for n in sim.topology().node_ids() {
                w.start_node(sim, n);
            }
        },
    )
}
