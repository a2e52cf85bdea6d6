//! Shared set-up: GIST nodes with the Ping NSLP on a simulated topology.

use pathwise_core::time::{Duration, Instant};
use pathwise_gist::nslp::NslpEvent;
use pathwise_gist::nslp::ping::{PingConfig, PingEvent, PingNslp};
use pathwise_gist::sim_stream::StreamAdapter;
use pathwise_gist::wire::{Mri, PathCoupledMri, SessionId};
use pathwise_gist::{Config, GistEngine, GistEvent, InterfaceConfig, MrsKey, RoutingStateView};
use pathwise_sim::{NodeId, NodeSetup, Sim, SimConfig, Topology};
use std::net::IpAddr;

pub type GistSim = Sim<StreamAdapter>;

/// The GIST configuration of a simulated node.
pub fn config(setup: &NodeSetup) -> Config {
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

/// A GIST node; with the Ping NSLP unless `ping` is false.
pub fn node(
    setup: &NodeSetup,
    ping: bool,
    tweak: &dyn Fn(&mut Config, &mut PingConfig),
) -> StreamAdapter {
    let mut cfg = config(setup);
    let mut pcfg = PingConfig {
        record_addr: Some(IpAddr::V4(setup.router_id())),
        seed: setup.seed ^ 0x5a5a,
        ..PingConfig::default()
    };
    tweak(&mut cfg, &mut pcfg);
    let mut e = GistEngine::new(cfg, Instant::ZERO);
    if ping {
        e.register(Box::new(PingNslp::new(pcfg)));
    }
    StreamAdapter::new(e)
}

/// Every node runs GIST and ping, except those in `no_ping` (GIST only) and `no_engine`.
pub fn sim(
    topo: Topology,
    seed: u64,
    no_ping: &'static [&'static str],
    no_engine: &'static [&'static str],
    tweak: impl Fn(&mut Config, &mut PingConfig) + 'static,
) -> GistSim {
    Sim::new(topo, SimConfig::seeded(seed), move |s| {
        if no_engine.contains(&s.name.as_str()) {
            return None;
        }
        Some(node(s, !no_ping.contains(&s.name.as_str()), &tweak))
    })
}

/// The IPv4 loopback (router id) of a node.
pub fn lo(sim: &GistSim, name: &str) -> IpAddr {
    let n = sim.node(name).unwrap_or_else(|| panic!("no node {name}"));
    IpAddr::V4(sim.topology().node(n).loopback_v4.addr())
}

pub fn id(sim: &GistSim, name: &str) -> NodeId {
    sim.node(name).unwrap()
}

/// Send a ping from `from` to `to` (loopbacks) in a new session now.
pub fn ping(sim: &mut GistSim, from: &str, to: &str) -> SessionId {
    let (src, dst) = (lo(sim, from), lo(sim, to));
    let n = id(sim, from);
    sim.with_engine(n, |e, now| {
        e.with_nslp::<PingNslp, _>(now, |p, g| p.ping(g, now, src, dst))
    })
    .flatten()
    .expect("ping registered")
    .expect("ping sent")
}

/// Ping again in session `sid` now.
pub fn ping_again(sim: &mut GistSim, from: &str, to: &str, sid: SessionId) {
    let (src, dst) = (lo(sim, from), lo(sim, to));
    let n = id(sim, from);
    let _ = sim.with_engine(n, |e, now| {
        e.with_nslp::<PingNslp, _>(now, |p, g| p.ping_session(g, now, sid, src, dst))
    });
}

/// Ping replies a node received: (time, session, path router ids, rtt).
pub fn replies(sim: &GistSim, name: &str) -> Vec<(Instant, SessionId, Vec<IpAddr>, Duration)> {
    let n = id(sim, name);
    sim.events_where(move |r| r.node == n)
        .filter_map(|r| match &r.event {
            GistEvent::Nslp(NslpEvent::Ping(PingEvent::Reply {
                session_id,
                path,
                rtt,
                ..
            })) => Some((
                r.time,
                *session_id,
                path.iter().map(|h| h.addr).collect(),
                *rtt,
            )),
            _ => None,
        })
        .collect()
}

/// The routing-state key of a ping session from `from` to `to`.
pub fn key(sim: &GistSim, from: &str, to: &str, sid: SessionId) -> MrsKey {
    MrsKey {
        mri: Mri::PathCoupled(PathCoupledMri::flow(lo(sim, from), lo(sim, to))),
        nslpid: pathwise_gist::nslp::ping::NSLPID,
        session_id: sid,
    }
}

/// A node's view of a routing state.
pub fn mrs(sim: &GistSim, name: &str, key: &MrsKey) -> Option<RoutingStateView> {
    sim.engine(id(sim, name))
        .and_then(|e| e.inner().routing_state(key))
}

/// The node owning `addr`, by name.
pub fn owner(sim: &GistSim, addr: Option<IpAddr>) -> Option<String> {
    addr.and_then(|a| sim.topology().owner(a))
        .map(|n| sim.name(n).to_string())
}

/// Names of the downstream and upstream peers of a node's routing state.
pub fn peers(sim: &GistSim, name: &str, key: &MrsKey) -> (Option<String>, Option<String>) {
    match mrs(sim, name, key) {
        None => (None, None),
        Some(v) => (
            v.downstream.and_then(|(_, p)| owner(sim, p)),
            v.upstream.and_then(|(_, p)| owner(sim, p)),
        ),
    }
}

pub fn run_secs(sim: &mut GistSim, secs: u64) {
    sim.run_for(Duration::from_secs(secs));
}
