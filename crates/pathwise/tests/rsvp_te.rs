//! RSVP-TE (RFC 3209) LSPs in simulation: explicit routes strict and loose on the seed testbeds,
//! labels consistent hop by hop, routing problems reported to the head end, make-before-break
//! without a gap, preemption by priority, label exhaustion, and Hello tearing down LSPs of a
//! failed link long before state timeout.

mod common;

use common::rsvp::*;
use pathwise::rsvp::sim::{Scenario, node_config, sim_engine_config};
use pathwise_core::mpls::LabelOp;
use pathwise_core::time::{Duration, Instant};
use pathwise_rsvp::engine::te::{LspRole, LspSpec, LspStatus, LspView};
use pathwise_rsvp::wire::error::error_code;
use pathwise_rsvp::wire::te::{AbstractNode, EroSubobject, ExplicitRoute, RroSubobject};
use pathwise_rsvp::{Config, HelloConfig, RsvpEngine};
use pathwise_sim::{LinkParams, NodeId, NodeSetup, Sim, SimConfig, Topology, testbeds};
use std::net::IpAddr;

const R: Duration = Duration::from_secs(30);

/// A simulation with an RSVP engine on every node; `tweak` adjusts a node's configuration.
fn te_sim(topology: Topology, tweak: impl Fn(&NodeSetup, &mut Config) + 'static) -> Scenario {
    let base = sim_engine_config(R);
    let sim = Sim::new(topology, SimConfig::seeded(9), move |setup: &NodeSetup| {
        let mut cfg = node_config(setup, &base, &|_, _| Default::default());
        tweak(setup, &mut cfg);
        Some(RsvpEngine::with_memory_tc(cfg, Instant::ZERO))
    });
    Scenario::new(sim)
}

fn engine(sc: &Scenario, n: NodeId) -> &RsvpEngine {
    sc.sim.engine(n).unwrap()
}

/// `node`'s IPv4 address on its link to `toward`.
fn ifaddr(sc: &Scenario, node: NodeId, toward: NodeId) -> IpAddr {
    let t = sc.sim.topology();
    let link = t.link(t.find_link(node, toward).unwrap());
    let (_, ifx) = *link.ends.iter().find(|(n, _)| *n == node).unwrap();
    IpAddr::V4(t.interface(node, ifx).unwrap().v4.addr())
}

fn hop(addr: IpAddr, loose: bool) -> EroSubobject {
    let IpAddr::V4(addr) = addr else { panic!() };
    EroSubobject {
        loose,
        node: AbstractNode::Ipv4Prefix {
            addr,
            prefix_len: 32,
        },
    }
}

fn ero(hops: &[(IpAddr, bool)]) -> ExplicitRoute {
    ExplicitRoute {
        subobjects: hops.iter().map(|&(a, l)| hop(a, l)).collect(),
    }
}

fn spec(name: &str, to: IpAddr, route: Option<ExplicitRoute>, mbps: u64) -> LspSpec {
    LspSpec {
        ero: route,
        label_recording: true,
        ..LspSpec::new(name, to, mbps * 1_000_000)
    }
}

fn open(sc: &mut Scenario, at: Instant, n: NodeId, s: LspSpec) {
    sc.sim.schedule_call(at, n, move |e: &mut RsvpEngine, now| {
        e.open_lsp(now, s).unwrap()
    });
}

/// The head-end view of the LSP called `name` at `n` (the newest instance).
fn head(sc: &Scenario, n: NodeId, name: &str) -> LspView {
    engine(sc, n)
        .lsps()
        .into_iter()
        .filter(|v| v.role == LspRole::HeadEnd && v.name == name)
        .max_by_key(|v| {
            v.sender.map(|s| match s {
                pathwise_rsvp::wire::FilterSpec::LspTunnelV4 { lsp_id, .. } => lsp_id,
                _ => 0,
            })
        })
        .unwrap_or_else(|| panic!("no LSP {name} at {}", sc.sim.name(n)))
}

/// Follow a tunnel's traffic by labels from its head end: the ingress binding's label and next
/// hop, then each LSR's LFIB entry, until a hop pops; returns the nodes crossed.
fn follow(sc: &Scenario, head_end: NodeId, v: &LspView) -> Vec<NodeId> {
    let t = sc.sim.topology();
    let ftn = *engine(sc, head_end)
        .lfib()
        .ftn(v.session.dest, v.session.dst_port)
        .expect("ingress binding");
    let mut path = vec![head_end];
    let (mut label, mut node) = (ftn.push, t.owner(ftn.next_hop.addr).unwrap());
    path.push(node);
    while let Some(l) = label {
        let e = engine(sc, node)
            .lfib()
            .get(l)
            .copied()
            .unwrap_or_else(|| panic!("{} has no LFIB entry for label {l}", sc.sim.name(node)));
        label = match e.op {
            LabelOp::Swap(x) => Some(x),
            LabelOp::Pop => None,
        };
        node = t.owner(e.next_hop.addr).unwrap();
        path.push(node);
        assert!(path.len() < 16, "label loop");
    }
    path
}

/// The addresses and labels of a recorded route, top first.
fn recorded(v: &LspView) -> (Vec<IpAddr>, Vec<u32>) {
    let subs = &v.record_route.as_ref().expect("recorded route").subobjects;
    let addrs = subs
        .iter()
        .filter_map(|s| match s {
            RroSubobject::Ipv4 { addr, .. } => Some(IpAddr::V4(*addr)),
            _ => None,
        })
        .collect();
    (addrs, subs.iter().filter_map(|s| s.label()).collect())
}

#[test]
fn strict_explicit_route_on_seed004_binds_consistent_labels() {
    let mut sc = te_sim(testbeds::seed004_r0_r2(), |_, _| {});
    let (r0, r1, r2) = (node(&sc, "R0"), node(&sc, "R1"), node(&sc, "R2"));
    let route = ero(&[(ifaddr(&sc, r1, r0), false), (ifaddr(&sc, r2, r1), false)]);
    let to = v4(&sc, r2);
    open(
        &mut sc,
        Instant::from_millis(1),
        r0,
        spec("r0-r2", to, Some(route), 10),
    );
    sc.run_until(Instant::from_secs(1));
    let v = head(&sc, r0, "r0-r2");
    assert_eq!(v.status, LspStatus::Up);
    assert_eq!(follow(&sc, r0, &v), vec![r0, r1, r2]);
    // R1 swaps nothing: R2, the egress, asked for implicit null, so R1 pops (PHP).
    let r1_view = engine(&sc, r1).lsps().pop().unwrap();
    assert_eq!(r1_view.role, LspRole::Transit);
    assert_eq!(r1_view.out.map(|o| o.0), Some(3));
    let egress = engine(&sc, r2).lsps().pop().unwrap();
    assert_eq!((egress.role, egress.in_label), (LspRole::Egress, Some(3)));
    // The route recorded with labels, as the ERO named the hops.
    let (addrs, labels) = recorded(&v);
    assert_eq!(addrs, vec![ifaddr(&sc, r1, r0), ifaddr(&sc, r2, r1)]);
    assert_eq!(labels, vec![r1_view.in_label.unwrap(), 3]);
    // 10 Mbit/s reserved on both links, refreshes keep it.
    sc.run_until(Instant::from_secs(300));
    assert_eq!(head(&sc, r0, "r0-r2").status, LspStatus::Up);
    let s = v.session;
    assert_eq!(installed_kbps(&sc, r0, &s), 10_000.0);
    assert_eq!(installed_kbps(&sc, r1, &s), 10_000.0);
    for n in [r0, r1, r2] {
        let c = engine(&sc, n).counters();
        assert_eq!(c.total_drops(), 0, "{:?}", c.drops);
    }
}

#[test]
fn loose_hop_is_expanded_from_routes_on_the_gist_testbed() {
    let mut sc = te_sim(testbeds::gist_thesis(), |_, _| {});
    let [n1, n3, n4, n5, n6] = ["N1", "N3", "N4", "N5", "N6"].map(|n| node(&sc, n));
    // Only a loose hop through N5's interface towards N4: N1 and N3 fill in the rest.
    let route = ero(&[(ifaddr(&sc, n5, n4), true)]);
    let to = v4(&sc, n6);
    open(
        &mut sc,
        Instant::from_millis(1),
        n1,
        spec("loose", to, Some(route), 5),
    );
    sc.run_until(Instant::from_secs(1));
    let v = head(&sc, n1, "loose");
    assert_eq!(v.status, LspStatus::Up);
    assert_eq!(follow(&sc, n1, &v), vec![n1, n3, n4, n5, n6]);
    // N3 passed on the loose hop behind the strict hop its routes chose (§4.3.4.3).
    let at_n3 = engine(&sc, n3).lsps().pop().unwrap();
    let out = at_n3.ero.expect("ERO passed on");
    assert_eq!(out.subobjects[0], hop(ifaddr(&sc, n4, n3), false));
    assert_eq!(out.subobjects[1], hop(ifaddr(&sc, n5, n4), true));
    let (addrs, _) = recorded(&v);
    assert_eq!(
        addrs,
        vec![
            ifaddr(&sc, n3, n1),
            ifaddr(&sc, n4, n3),
            ifaddr(&sc, n5, n4),
            ifaddr(&sc, n6, n5)
        ]
    );
    // And with no explicit route at all, routing decides: the same path.
    let to7 = v4(&sc, node(&sc, "N7"));
    open(
        &mut sc,
        Instant::from_secs(1),
        n1,
        spec("routed", to7, None, 5),
    );
    sc.run_until(Instant::from_secs(2));
    let v = head(&sc, n1, "routed");
    assert_eq!(v.status, LspStatus::Up);
    assert_eq!(follow(&sc, n1, &v)[..4], [n1, n3, n4, n5]);
}

#[test]
fn a_strict_hop_that_is_not_adjacent_is_a_routing_problem() {
    let mut sc = te_sim(testbeds::kom_rsvp(), |_, _| {});
    let [n1, n3, n4, n5] = ["N1", "N3", "N4", "N5"].map(|n| node(&sc, n));
    let to = v4(&sc, n5);
    // At the head end: refused at once.
    let bad_first = ero(&[(ifaddr(&sc, n4, n3), false)]);
    // Refused, and nothing kept: the same request is refused again, not taken as known.
    for _ in 0..2 {
        let route = Some(bad_first.clone());
        let err = sc
            .sim
            .with_engine(n1, |e, now| e.open_lsp(now, spec("x", to, route, 1)))
            .unwrap();
        assert_eq!(
            err,
            Err(pathwise_rsvp::engine::ApiError::Route(
                error_code::routing::BAD_STRICT_NODE
            ))
        );
    }
    assert!(engine(&sc, n1).lsps().is_empty());
    // At N3: N5 is two hops away; N3 answers PathErr 24/2 and the head end gives up.
    let route = ero(&[(ifaddr(&sc, n3, n1), false), (ifaddr(&sc, n5, n4), false)]);
    open(
        &mut sc,
        Instant::from_millis(1),
        n1,
        spec("bad", to, Some(route), 1),
    );
    sc.run_until(Instant::from_secs(1));
    let v = head(&sc, n1, "bad");
    let LspStatus::Failed(e) = v.status else {
        panic!("{v:?}")
    };
    assert_eq!(
        (e.code, e.value),
        (
            error_code::ROUTING_PROBLEM,
            error_code::routing::BAD_STRICT_NODE
        )
    );
    assert_eq!(sc.sim.topology().owner(e.node), Some(n3));
    // Nothing is left behind anywhere.
    sc.run_until(Instant::from_secs(2));
    for n in [n1, n3, n4, n5] {
        assert!(engine(&sc, n).sessions().is_empty(), "{}", sc.sim.name(n));
        assert!(engine(&sc, n).lfib().is_empty());
    }
}

/// A – B – C – E – F with a detour B – D – E; B – C – E is the routed path.
fn detour() -> Topology {
    let mut b = Topology::builder();
    let [a, bb, c, d, e, f] = ["A", "B", "C", "D", "E", "F"].map(|n| b.router(n));
    let p = LinkParams::default().bandwidth(10_000_000);
    b.link(a, bb, p.clone());
    b.link(bb, c, p.clone());
    b.link(c, e, p.clone());
    b.link(bb, d, p.clone().cost(5));
    b.link(d, e, p.clone().cost(5));
    b.link(e, f, p);
    b.build().unwrap()
}

#[test]
fn make_before_break_moves_an_lsp_without_a_gap() {
    let mut sc = te_sim(detour(), |_, _| {});
    let [a, b, c, d, e, f] = ["A", "B", "C", "D", "E", "F"].map(|n| node(&sc, n));
    let to = v4(&sc, f);
    let first = spec("mbb", to, None, 4);
    open(&mut sc, Instant::from_millis(1), a, first.clone());
    sc.run_until(Instant::from_secs(1));
    let v = head(&sc, a, "mbb");
    assert_eq!(follow(&sc, a, &v), vec![a, b, c, e, f]);
    let session = v.session;
    // Re-route through D: a new LSP of the same tunnel, shared-explicit.
    let via_d = ero(&[
        (ifaddr(&sc, b, a), false),
        (ifaddr(&sc, d, b), false),
        (ifaddr(&sc, e, d), false),
        (ifaddr(&sc, f, e), false),
    ]);
    let second = LspSpec {
        ero: Some(via_d),
        ..first
    };
    open(&mut sc, Instant::from_secs(1), a, second);
    // Watch every 100 µs: the tunnel always has a labelled path end to end, and for a while
    // both LSPs are bound at B.
    let mut both_at_b = false;
    let mut t = Instant::from_secs(1);
    while t < Instant::from_millis(1300) {
        t += Duration::from_micros(100);
        sc.run_until(t);
        let path = follow(&sc, a, &head(&sc, a, "mbb"));
        assert_eq!(path.last(), Some(&f), "gap at {t:?}: {path:?}");
        both_at_b |= engine(&sc, b).lfib().len() == 2;
        // SE: the shared link A–B carries one reservation, never two.
        assert!(installed_kbps(&sc, a, &session) <= 4_000.0);
        // The LSP count kept as path state changes (counters) agrees with the views at every
        // node while LSPs come and go.
        for n in [a, b, c, d, e, f] {
            let en = engine(&sc, n);
            assert_eq!(en.lsp_count(), en.lsps().len(), "at {t:?}");
        }
    }
    assert!(both_at_b, "the old LSP went before the new one was up");
    let v = head(&sc, a, "mbb");
    assert_eq!(follow(&sc, a, &v), vec![a, b, d, e, f]);
    // The old LSP is gone: C holds nothing, B and E one binding each.
    sc.run_until(Instant::from_secs(2));
    assert!(engine(&sc, c).sessions().is_empty());
    assert!(engine(&sc, c).lfib().is_empty());
    assert_eq!(engine(&sc, c).lsp_count(), 0);
    assert_eq!(engine(&sc, b).lfib().len(), 1);
    assert_eq!(engine(&sc, b).lsp_count(), 1);
    assert_eq!(engine(&sc, a).lsps().len(), 1);
    assert_eq!(installed_kbps(&sc, b, &session), 4_000.0);
}

#[test]
fn a_higher_priority_lsp_preempts_and_a_lower_one_does_not() {
    let mut sc = te_sim(testbeds::seed004_r0_r2(), |_, _| {});
    let (r0, r1, r2) = (node(&sc, "R0"), node(&sc, "R1"), node(&sc, "R2"));
    let to = v4(&sc, r2);
    // Each LSP takes 60 % of what R0's link to R1 can reserve.
    let reservable = {
        let t = sc.sim.topology();
        let link = t.link(t.find_link(r0, r1).unwrap());
        let (_, ifx) = *link.ends.iter().find(|(n, _)| *n == r0).unwrap();
        t.interface(r0, ifx).unwrap().reservable_bps
    };
    let mbps = reservable * 6 / 10 / 1_000_000;
    let with = |name: &str, setup, hold| LspSpec {
        setup_priority: setup,
        hold_priority: hold,
        ..spec(name, to, None, mbps)
    };
    open(&mut sc, Instant::from_millis(1), r0, with("low", 7, 7));
    sc.run_until(Instant::from_secs(1));
    assert_eq!(head(&sc, r0, "low").status, LspStatus::Up);
    open(&mut sc, Instant::from_secs(1), r0, with("high", 2, 2));
    sc.run_until(Instant::from_secs(2));
    assert_eq!(head(&sc, r0, "high").status, LspStatus::Up);
    let LspStatus::Failed(e) = head(&sc, r0, "low").status else {
        panic!()
    };
    assert_eq!(e.code, error_code::SERVICE_PREEMPTED);
    assert!(engine(&sc, r1).counters().preemptions + engine(&sc, r0).counters().preemptions >= 1);
    // A newcomer at the lowest priority cannot push "high" out.
    open(&mut sc, Instant::from_secs(2), r0, with("late", 7, 7));
    sc.run_until(Instant::from_secs(4));
    assert_eq!(head(&sc, r0, "high").status, LspStatus::Up);
    assert_ne!(head(&sc, r0, "late").status, LspStatus::Up);
    // The counters' LSP count agrees with the views, failed head-end LSPs included.
    assert_eq!(engine(&sc, r0).lsp_count(), engine(&sc, r0).lsps().len());
    let high = head(&sc, r0, "high");
    assert_eq!(follow(&sc, r0, &high), vec![r0, r1, r2]);
}

#[test]
fn label_exhaustion_is_reported_to_the_head_end() {
    let mut sc = te_sim(testbeds::seed004_r0_r2(), |s, c| {
        if s.name == "R1" {
            c.label_range = (100, 100);
        }
    });
    let (r0, r2) = (node(&sc, "R0"), node(&sc, "R2"));
    let to = v4(&sc, r2);
    open(
        &mut sc,
        Instant::from_millis(1),
        r0,
        spec("one", to, None, 1),
    );
    open(
        &mut sc,
        Instant::from_millis(100),
        r0,
        spec("two", to, None, 1),
    );
    sc.run_until(Instant::from_secs(1));
    assert_eq!(head(&sc, r0, "one").status, LspStatus::Up);
    let LspStatus::Failed(e) = head(&sc, r0, "two").status else {
        panic!()
    };
    assert_eq!(
        (e.code, e.value),
        (
            error_code::ROUTING_PROBLEM,
            error_code::routing::LABEL_ALLOCATION_FAILURE
        )
    );
}

#[test]
fn hello_tears_down_the_lsps_of_a_failed_link_at_once() {
    let hello = HelloConfig {
        interval: Duration::from_millis(100),
        failure_multiplier: 3.5,
    };
    let mut sc = te_sim(testbeds::seed004_r0_r2(), move |_, c| {
        for i in &mut c.interfaces {
            i.hello = Some(hello);
        }
    });
    let (r0, r1, r2) = (node(&sc, "R0"), node(&sc, "R1"), node(&sc, "R2"));
    let to = v4(&sc, r2);
    open(&mut sc, Instant::from_millis(1), r0, spec("h", to, None, 1));
    sc.run_until(Instant::from_secs(5));
    assert_eq!(head(&sc, r0, "h").status, LspStatus::Up);
    assert_eq!(engine(&sc, r1).lfib().len(), 1);
    let link = sc.sim.link_between(r1, r2).unwrap();
    sc.sim.link_down(link);
    // Within the dead interval R1 drops the LSP and its label; the head end's binding is gone
    // within a second — not after the state lifetime L ≈ 157 s.
    sc.run_until(Instant::from_millis(5_450));
    assert!(engine(&sc, r1).lfib().is_empty());
    sc.run_until(Instant::from_secs(6));
    assert!(engine(&sc, r0).lfib().is_empty());
    assert_ne!(head(&sc, r0, "h").status, LspStatus::Up);
}

#[test]
fn summary_refresh_keeps_10000_lsps_alive_with_far_fewer_bytes() {
    use pathwise::rsvp::te_sim::refresh_load;
    let full = refresh_load(10_000, false, R, 5);
    let reduced = refresh_load(10_000, true, R, 5);
    println!("full refresh: {full:?}\nrefresh reduction: {reduced:?}");
    for load in [&full, &reduced] {
        assert_eq!(load.lsps_up, 10_000);
        assert_eq!(load.timeouts, 0);
        // Issue #21: no message, Bundle sub-messages included, is dropped anywhere.
        assert!(load.drops.is_empty(), "{load:?}");
    }
    // Full refresh: a Path and a Resv per LSP per link per period (R/2..3R/2, mean R).
    assert!(
        full.messages_per_s > 2.0 * 2.0 * 10_000.0 / 30.0 * 0.8,
        "{full:?}"
    );
    // Srefresh lists ~300 identifiers per message.
    assert!(
        reduced.bytes_per_s * 10.0 < full.bytes_per_s,
        "{reduced:?} vs {full:?}"
    );
    assert!(reduced.messages_per_s * 20.0 < full.messages_per_s);
}

/// R0 – R1 – R2 with refresh reduction on the nodes `rr` names.
use pathwise_rsvp::engine::refresh::RefreshCounters;

fn rr_net(rr: &'static [&'static str]) -> (Scenario, NodeId, NodeId, NodeId) {
    let sc = te_sim(testbeds::seed004_r0_r2(), move |s, c| {
        c.refresh_reduction = rr.contains(&s.name.as_str());
    });
    let (r0, r1, r2) = (node(&sc, "R0"), node(&sc, "R1"), node(&sc, "R2"));
    (sc, r0, r1, r2)
}

fn rr_counters(sc: &Scenario, n: NodeId) -> RefreshCounters {
    engine(sc, n).counters().refresh
}

#[test]
fn acknowledged_lsps_are_refreshed_by_summary_and_bundled() {
    let (mut sc, r0, r1, r2) = rr_net(&["R0", "R1", "R2"]);
    let to = v4(&sc, r2);
    for i in 0..20 {
        open(
            &mut sc,
            Instant::from_millis(1),
            r0,
            spec(&format!("l{i}"), to, None, 1),
        );
    }
    // Capability is learnt from a neighbour's first messages (RFC 2961 §2), so the first Paths
    // go plain; from the first refresh on, every Path and Resv is identified and acknowledged
    // hop by hop.
    sc.run_until(Instant::from_secs(100));
    for n in [r0, r1, r2] {
        let c = rr_counters(&sc, n);
        assert!(c.identified > 0 && c.acks_received > 0, "{c:?}");
        assert_eq!(c.retransmitted, 0, "{c:?}");
    }
    // Acks and Resvs to the same neighbour in one go travel in Bundles.
    assert!(rr_counters(&sc, r1).bundles_sent + rr_counters(&sc, r2).bundles_sent > 0);
    assert!(rr_counters(&sc, r0).bundles_received + rr_counters(&sc, r1).bundles_received > 0);
    sc.run_until(Instant::from_secs(600));
    for n in [r0, r1, r2] {
        let e = engine(&sc, n);
        assert_eq!(e.counters().path_timeouts + e.counters().resv_timeouts, 0);
        assert_eq!(e.counters().total_drops(), 0, "{:?}", e.counters().drops);
        assert!(
            e.counters()
                .received(pathwise_rsvp::wire::MsgType::Srefresh)
                > 0
        );
    }
    // After the first refresh only summaries cross: no full Path reaches R1 any more.
    let paths_then = engine(&sc, r1)
        .counters()
        .received(pathwise_rsvp::wire::MsgType::Path);
    sc.run_until(Instant::from_secs(900));
    assert_eq!(
        engine(&sc, r1)
            .counters()
            .received(pathwise_rsvp::wire::MsgType::Path),
        paths_then
    );
    assert_eq!(
        engine(&sc, r0)
            .lsps()
            .iter()
            .filter(|v| v.status == LspStatus::Up)
            .count(),
        20
    );
}

#[test]
fn a_lost_trigger_is_retransmitted_long_before_the_next_refresh() {
    let (mut sc, r0, r1, r2) = rr_net(&["R0", "R1", "R2"]);
    let to = v4(&sc, r2);
    // Learn the neighbours first (capability comes with the first messages), then lose
    // everything R0 sends R1 for a moment.
    open(
        &mut sc,
        Instant::from_millis(1),
        r0,
        spec("first", to, None, 1),
    );
    sc.run_until(Instant::from_secs(1));
    let link = sc.sim.link_between(r0, r1).unwrap();
    let dir = if sc.sim.topology().link(link).ends[0].0 == r0 {
        pathwise_sim::Direction::AToB
    } else {
        pathwise_sim::Direction::BToA
    };
    sc.sim.update_link(link, Some(dir), |p| p.loss = 1.0);
    open(
        &mut sc,
        Instant::from_secs(1),
        r0,
        spec("second", to, None, 1),
    );
    sc.run_until(Instant::from_millis(1200));
    sc.sim.update_link(link, Some(dir), |p| p.loss = 0.0);
    // Rf = 500 ms, then 1 s: the second retransmission gets through, far sooner than R = 30 s.
    sc.run_until(Instant::from_secs(3));
    assert!(rr_counters(&sc, r0).retransmitted >= 1);
    assert_eq!(head(&sc, r0, "second").status, LspStatus::Up);
}

/// R0 – R1 – R2 with one LSP; R1 crashes at `crash_s` and restarts 100 ms later. Returns the
/// whole second by which the LSP is whole again (R0 Up, R1's label back), the second in which
/// R2 first saw R1's new Epoch (if it did by then), and R1's counters.
fn restart_r1(crash_s: u64) -> (u64, Option<u64>, RefreshCounters) {
    let (mut sc, r0, r1, r2) = rr_net(&["R0", "R1", "R2"]);
    let to = v4(&sc, r2);
    open(&mut sc, Instant::from_millis(1), r0, spec("n", to, None, 1));
    sc.run_until(Instant::from_secs(crash_s));
    assert_eq!(head(&sc, r0, "n").status, LspStatus::Up);
    sc.sim.crash(r1);
    sc.run_until(Instant::from_millis(crash_s * 1000 + 100));
    sc.sim.restart(r1);
    assert!(engine(&sc, r1).lfib().is_empty());
    let (mut t, mut epoch_seen) = (crash_s + 1, None);
    while head(&sc, r0, "n").status != LspStatus::Up || engine(&sc, r1).lfib().len() != 1 {
        t += 1;
        assert!(t < crash_s + 300, "not resynchronised");
        sc.run_until(Instant::from_secs(t));
        if epoch_seen.is_none() && rr_counters(&sc, r2).epoch_changes > 0 {
            epoch_seen = Some(t);
        }
    }
    (t, epoch_seen, rr_counters(&sc, r1))
}

#[test]
fn a_restarted_neighbour_is_resynchronised_through_nack() {
    // R1 restarts with nothing. Whichever neighbour's next summary reaches it first is NACKed
    // and answered with the full message (RFC 2961 §5.4), so the LSP is back within one
    // refresh interval of the restart (1.5 R = 45 s, RFC 2205 §3.7, plus the 1 s Srefresh
    // gathering). When R2's summary came first, R1's Resv state could not be rebuilt then (no
    // Path yet); R0's Path, going on from R1 identified with R1's new Epoch, tells R2 of the
    // restart (§4.5) and R2 sends its Resv at once rather than at its next refresh: the LSP is
    // back within a second of that. 1.5 R is the floor: nothing in RFC 2961 tells R0 of R1's
    // restart before its next summary (Hello, RFC 3209 §5, would).
    let mut epoch_rule_used = false;
    for crash_s in (100..160).step_by(6) {
        let (back, epoch_seen, r1c) = restart_r1(crash_s);
        assert!(
            back <= crash_s + 47,
            "crash at {crash_s} s: back at {back} s"
        );
        assert!(r1c.nacks_sent > 0, "{r1c:?}");
        if let Some(seen) = epoch_seen {
            epoch_rule_used = true;
            assert!(
                back <= seen + 1,
                "crash at {crash_s} s: Epoch seen at {seen} s, back at {back} s"
            );
        }
    }
    assert!(epoch_rule_used, "no restart order needed the Epoch rule");
}

#[test]
fn a_neighbour_without_refresh_reduction_gets_plain_rsvp() {
    // R1 does not do refresh reduction: R0 and R2 never send it identifiers, summaries or
    // bundles, and everything works by full refresh.
    let (mut sc, r0, r1, r2) = rr_net(&["R0", "R2"]);
    let to = v4(&sc, r2);
    open(&mut sc, Instant::from_millis(1), r0, spec("p", to, None, 1));
    sc.run_until(Instant::from_secs(300));
    assert_eq!(head(&sc, r0, "p").status, LspStatus::Up);
    for n in [r0, r2] {
        let c = rr_counters(&sc, n);
        assert_eq!(
            (c.identified, c.summarized, c.bundles_sent),
            (0, 0, 0),
            "{c:?}"
        );
    }
    let c = engine(&sc, r1).counters();
    assert_eq!(c.total_drops(), 0, "{:?}", c.drops);
    assert_eq!(c.path_timeouts + c.resv_timeouts, 0);
}

#[test]
fn a_router_without_rsvp_on_the_way_is_reported_and_nothing_is_bound() {
    // R0 – R1 – R2 where R1 forwards but runs no RSVP: R2 sees the Path's TTL drop by more than
    // its Send_TTL says and answers PathErr 24/8; no label is bound anywhere, and the head end
    // keeps trying (the error is not fatal).
    let mut b = Topology::builder();
    let [r0, r1, r2] = ["R0", "R1", "R2"].map(|n| b.router(n));
    b.node_mut(r1).engine = false;
    b.link(r0, r1, LinkParams::default());
    b.link(r1, r2, LinkParams::default());
    let mut sc = te_sim(b.build().unwrap(), |_, _| {});
    let to = v4(&sc, r2);
    open(
        &mut sc,
        Instant::from_millis(1),
        r0,
        spec("bypass", to, None, 1),
    );
    sc.run_until(Instant::from_secs(100));
    let v = head(&sc, r0, "bypass");
    assert_eq!(v.status, LspStatus::Signalling, "{v:?}");
    let errors: Vec<_> = sc
        .log
        .iter()
        .filter(|r| r.node == r0)
        .filter_map(|r| match &r.event {
            pathwise_rsvp::Event::PathError { error, .. } => Some((error.code, error.value)),
            _ => None,
        })
        .collect();
    assert!(
        errors.contains(&(
            error_code::ROUTING_PROBLEM,
            error_code::routing::NON_RSVP_CAPABLE_ROUTER
        )),
        "{errors:?}"
    );
    assert!(engine(&sc, r0).lfib().is_empty() && engine(&sc, r2).lfib().is_empty());
    assert_eq!(engine(&sc, r2).lsps().pop().map(|v| v.in_label), Some(None));
}
