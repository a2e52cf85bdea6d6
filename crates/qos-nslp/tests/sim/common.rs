//! Shared set-up: GIST + QoS NSLP nodes on a simulated topology.

#![allow(dead_code)]

use pathwise_core::io::IfIndex;
use pathwise_core::tc::{MemoryTrafficControl, SharedTrafficControl};
use pathwise_core::time::{Duration, Instant};
use pathwise_gist::sim_stream::StreamAdapter;
use pathwise_gist::wire::SessionId;
use pathwise_gist::{Config, GistEngine, InterfaceConfig};
use pathwise_qos_nslp::wire::qspec::Tmod;
use pathwise_qos_nslp::{QosConfig, QosEvent, QosNslp, Reservation, ReserveRequest};
use pathwise_sim::{NodeId, NodeSetup, Sim, SimConfig, Topology};
use std::net::IpAddr;

pub type Tc = SharedTrafficControl<MemoryTrafficControl>;
pub type Qos = QosNslp<Tc>;
pub type QosSim = Sim<StreamAdapter>;

/// The GIST configuration of a simulated node.
pub fn gist_config(setup: &NodeSetup) -> Config {
    Config {
        seed: setup.seed,
        interfaces: setup
            .interfaces
            .iter()
            .map(|i| InterfaceConfig {
                ifindex: i.ifindex,
                addrs: i.addrs.iter().map(|n| n.addr()).collect(),
            })
            .collect(),
        local_addrs: setup.loopbacks().iter().map(|n| n.addr()).collect(),
        ..Config::default()
    }
}

/// In-memory traffic control over a node's simulated interfaces (reservable as the topology
/// says, bit/s to bytes/s).
pub fn traffic_control(setup: &NodeSetup) -> MemoryTrafficControl {
    setup.memory_tc()
}

/// A node: GIST with the QoS NSLP over `tc`.
pub fn node_with(
    setup: &NodeSetup,
    tc: Tc,
    gist: &dyn Fn(&mut Config),
    qos: &dyn Fn(&mut QosConfig),
) -> StreamAdapter {
    let mut cfg = gist_config(setup);
    gist(&mut cfg);
    let mut qcfg = QosConfig {
        seed: setup.seed ^ 0x9e37,
        ..QosConfig::default()
    };
    qos(&mut qcfg);
    let mut e = GistEngine::new(cfg, Instant::ZERO);
    e.register(Box::new(QosNslp::new(qcfg, tc)));
    StreamAdapter::new(e)
}

/// Every node runs GIST and the QoS NSLP.
pub fn sim(
    topo: Topology,
    seed: u64,
    gist: impl Fn(&mut Config) + 'static,
    qos: impl Fn(&mut QosConfig) + 'static,
) -> QosSim {
    Sim::new(topo, SimConfig::seeded(seed), move |s| {
        Some(node_with(
            s,
            SharedTrafficControl::new(traffic_control(s)),
            &gist,
            &qos,
        ))
    })
}

/// Short refresh periods, so minutes of soft state pass in a test.
pub fn short(q: &mut QosConfig) {
    q.refresh_period = Duration::from_secs(5);
}

pub fn short_gist(c: &mut Config) {
    c.refresh_period = Duration::from_secs(10);
    c.rs_validity = Duration::from_secs(30);
    c.state_lifetime = Duration::from_secs(60);
}

pub fn id(sim: &QosSim, name: &str) -> NodeId {
    sim.node(name).unwrap_or_else(|| panic!("no node {name}"))
}

/// The IPv4 loopback of a node.
pub fn lo(sim: &QosSim, name: &str) -> IpAddr {
    IpAddr::V4(sim.topology().node(id(sim, name)).loopback_v4.addr())
}

/// 4 Mbit/s, 1500-byte packets.
pub fn tmod(mbit: f32) -> Tmod {
    Tmod {
        rate: mbit * 125_000.0,
        bucket_size: 15_000.0,
        peak_rate: f32::INFINITY,
        min_policed_unit: 64,
        max_packet_size: 1500,
    }
}

/// Run `f` on a node's QoS NSLP.
pub fn with_qos<R>(
    sim: &mut QosSim,
    name: &str,
    f: impl FnOnce(&mut Qos, &mut dyn pathwise_gist::nslp::GistApi, Instant) -> R,
) -> R {
    let n = id(sim, name);
    sim.with_engine(n, |e, now| e.with_nslp::<Qos, _>(now, |q, g| f(q, g, now)))
        .flatten()
        .expect("QoS NSLP registered")
}

/// A sender-initiated reservation from `from` to `to` (loopbacks).
pub fn reserve(sim: &mut QosSim, from: &str, to: &str, mbit: f32) -> SessionId {
    let req = ReserveRequest::new(lo(sim, from), lo(sim, to), tmod(mbit));
    with_qos(sim, from, |q, g, now| q.reserve(g, now, &req)).expect("reservation started")
}

/// Events a node's QoS NSLP reported since last asked.
pub fn events(sim: &mut QosSim, name: &str) -> Vec<QosEvent> {
    with_qos(sim, name, |q, _, _| {
        std::iter::from_fn(|| q.poll_event()).collect()
    })
}

/// A node's state of a session.
pub fn state(sim: &mut QosSim, name: &str, sid: SessionId) -> Option<Reservation> {
    with_qos(sim, name, |q, _, _| q.session(&sid).cloned())
}

/// What a node's traffic control holds: installed reservations, bytes/s reserved on `ifindex`.
pub fn tc_of(sim: &mut QosSim, name: &str, ifindex: u32) -> (usize, f64) {
    with_qos(sim, name, |q, _, _| {
        let tc = q.traffic_control().lock();
        (tc.len(), tc.reserved(IfIndex(ifindex)))
    })
}

/// The interface of `name` towards `peer`.
pub fn ifindex_to(sim: &QosSim, name: &str, peer: &str) -> u32 {
    let (a, b) = (id(sim, name), id(sim, peer));
    sim.route_to(a, IpAddr::V4(sim.topology().node(b).loopback_v4.addr()))
        .map(|r| r.ifindex.0)
        .expect("route")
}

pub fn counters(sim: &mut QosSim, name: &str) -> pathwise_qos_nslp::engine::Counters {
    with_qos(sim, name, |q, _, _| q.counters().clone())
}

pub fn run_secs(sim: &mut QosSim, secs: u64) {
    sim.run_for(Duration::from_secs(secs));
}

/// Nothing of the QoS NSLP left on any node: no session, no timer, no TC reservation.
pub fn assert_clean(sim: &mut QosSim, names: &[&str]) {
    for n in names {
        let (sessions, timers, tc) = with_qos(sim, n, |q, _, _| {
            (q.len(), q.timers(), q.traffic_control().lock().len())
        });
        assert_eq!(
            (sessions, timers, tc),
            (0, 0, 0),
            "{n}: sessions, timers, TC reservations"
        );
    }
}
