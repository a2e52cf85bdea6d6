//! RSVP simulation helpers: flowspecs, sessions, senders and what is installed.

use pathwise::rsvp::sim::Scenario;
use pathwise_core::time::Instant;
use pathwise_rsvp::wire::{FilterSpec, FlowSpec, SenderTspec, Session, TokenBucket};
use pathwise_sim::NodeId;
use std::net::IpAddr;

pub fn tb(kbps: f32) -> TokenBucket {
    TokenBucket {
        rate: kbps * 125.0,
        bucket: 4000.0,
        peak: f32::INFINITY,
        min_policed: 64,
        max_packet: 1500,
    }
}

pub fn cl(kbps: f32) -> FlowSpec {
    FlowSpec::ControlledLoad(tb(kbps))
}

pub fn filter(addr: IpAddr, port: u16) -> FilterSpec {
    FilterSpec::ip(addr, port)
}

pub fn udp(dest: IpAddr, port: u16) -> Session {
    Session::ip(dest, 17, port)
}

pub fn node(sc: &Scenario, name: &str) -> NodeId {
    sc.sim
        .node(name)
        .unwrap_or_else(|| panic!("no node {name}"))
}

pub fn v4(sc: &Scenario, n: NodeId) -> IpAddr {
    sc.sim.topology().loopbacks(n)[0]
}

pub fn register(
    sc: &mut Scenario,
    at: Instant,
    n: NodeId,
    session: Session,
    sender: FilterSpec,
    kbps: f32,
) {
    sc.sim.schedule_call(at, n, move |e, now| {
        e.register_sender(now, session, sender, SenderTspec(tb(kbps)))
            .unwrap()
    });
}

/// Register `n`'s IPv4 address, port `port`, as a sender.
pub fn register_v4(
    sc: &mut Scenario,
    at: Instant,
    n: NodeId,
    session: Session,
    port: u16,
    kbps: f32,
) {
    let sender = filter(v4(sc, n), port);
    register(sc, at, n, session, sender, kbps);
}

/// Reserved rate (kbit/s) installed for `session` on `n`, summed over its interfaces.
pub fn installed_kbps(sc: &Scenario, n: NodeId, session: &Session) -> f64 {
    sc.sim
        .engine(n)
        .and_then(|e| e.session(session))
        .map_or(0.0, |s| {
            s.installed
                .iter()
                .map(|i| f64::from(i.flowspec.reserved_rate()) / 125.0)
                .sum()
        })
}
