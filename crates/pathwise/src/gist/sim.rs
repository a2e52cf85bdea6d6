//! GIST nodes with the Ping NSLP on the simulator (C-mode carried by the simulator's stream
//! adapter), configured from what the simulator says about each node.

use pathwise_core::time::{Duration, Instant};
use pathwise_gist::nslp::NslpEvent;
use pathwise_gist::nslp::ping::{PingConfig, PingEvent, PingNslp};
use pathwise_gist::sim_stream::StreamAdapter;
use pathwise_gist::{Config, GistEngine, GistEvent, InterfaceConfig};
use pathwise_sim::{NodeSetup, Sim, SimConfig, Topology};
use serde::Serialize;
use std::net::IpAddr;

/// A GIST node running the Ping NSLP, recording its router id in pings.
pub fn ping_node(setup: &NodeSetup) -> StreamAdapter {
    ping_node_with(setup, |_| {})
}

/// [`ping_node`] with its GIST configuration changed by `tweak`.
pub fn ping_node_with(setup: &NodeSetup, tweak: impl FnOnce(&mut Config)) -> StreamAdapter {
    let mut cfg = Config {
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
    };
    tweak(&mut cfg);
    let ping = PingConfig {
        record_addr: Some(IpAddr::V4(setup.router_id())),
        seed: setup.seed ^ 0x5a5a,
        ..PingConfig::default()
    };
    let mut e = GistEngine::new(cfg, Instant::ZERO);
    e.register(Box::new(PingNslp::new(ping)));
    StreamAdapter::new(e)
}

/// The result of one GIST ping.
#[derive(Debug, Clone, Serialize)]
pub struct PingReport {
    /// Testbed name.
    pub testbed: String,
    /// Pinging node.
    pub from: String,
    /// Pinged node.
    pub to: String,
    /// The NSIS-aware nodes the ping recorded, in order (the destination last).
    pub path: Vec<String>,
    /// Round-trip time, milliseconds (handshakes included on a first ping).
    pub rtt_ms: f64,
    /// Round-trip time of a second ping over the routing state the first set up.
    pub rtt_established_ms: Option<f64>,
}

/// Ping from `from` to `to` (their IPv4 loopbacks) on `topology`, twice: the first sets up
/// GIST routing state hop by hop, the second uses it.
pub fn ping(topology: Topology, seed: u64, from: &str, to: &str) -> anyhow::Result<PingReport> {
    let mut sim: Sim<StreamAdapter> =
        Sim::new(topology, SimConfig::seeded(seed), |s| Some(ping_node(s)));
    let node = |sim: &Sim<StreamAdapter>, name: &str| {
        sim.node(name)
            .ok_or_else(|| anyhow::anyhow!("no node {name}"))
    };
    let (a, b) = (node(&sim, from)?, node(&sim, to)?);
    let lo = |sim: &Sim<StreamAdapter>, n| sim.topology().loopbacks(n)[0];
    let (src, dst) = (lo(&sim, a), lo(&sim, b));
    let sid = sim
        .with_engine(a, |e, now| {
            e.with_nslp::<PingNslp, _>(now, |p, g| p.ping(g, now, src, dst))
        })
        .flatten()
        .ok_or_else(|| anyhow::anyhow!("no ping NSLP at {from}"))?
        .map_err(|e| anyhow::anyhow!("ping not sent: {e:?}"))?;
    sim.run_for(Duration::from_secs(1));
    let _ = sim.with_engine(a, |e, now| {
        e.with_nslp::<PingNslp, _>(now, |p, g| p.ping_session(g, now, sid, src, dst))
    });
    sim.run_for(Duration::from_secs(1));
    let replies: Vec<(Vec<IpAddr>, Duration)> = sim
        .events_where(move |r| r.node == a)
        .filter_map(|r| match &r.event {
            GistEvent::Nslp(NslpEvent::Ping(PingEvent::Reply { path, rtt, .. })) => {
                Some((path.iter().map(|h| h.addr).collect(), *rtt))
            }
            _ => None,
        })
        .collect();
    let (path, rtt) = replies
        .first()
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no ping reply reached {from}"))?;
    let topo = sim.topology();
    let name = |addr: IpAddr| {
        topo.owner(addr)
            .map_or_else(|| addr.to_string(), |n| sim.name(n).to_string())
    };
    Ok(PingReport {
        testbed: topo.name().to_string(),
        from: from.into(),
        to: to.into(),
        path: path.into_iter().map(name).collect(),
        rtt_ms: rtt.as_secs_f64() * 1e3,
        rtt_established_ms: replies.get(1).map(|(_, r)| r.as_secs_f64() * 1e3),
    })
}
