//! One admission control per node: RSVP and the QoS NSLP reserve through one shared
//! traffic-control instance, so what one takes on an interface the other cannot.

use super::common::*;
use pathwise_core::engine::Engine;
use pathwise_core::io::{IPPROTO_RSVP, Received, Transmit, Transport};
use pathwise_core::route::RouteChange;
use pathwise_core::tc::SharedTrafficControl;
use pathwise_core::time::Instant;
use pathwise_gist::GistEvent;
use pathwise_gist::sim_stream::StreamAdapter;
use pathwise_qos_nslp::wire::{ErrorClass, code};
use pathwise_qos_nslp::{QosEvent, ReserveRequest};
use pathwise_rsvp::wire::{
    FilterSpec, FlowDescriptor, FlowSpec, SenderTspec, Session, StyleKind, TokenBucket,
};
use pathwise_rsvp::{InterfaceConfig, RsvpEngine};
use pathwise_sim::{NodeSetup, Sim, SimConfig, testbeds};
use std::net::IpAddr;

/// A node running RSVP and GIST with the QoS NSLP over one traffic control.
struct Dual {
    rsvp: RsvpEngine<Tc>,
    gist: StreamAdapter,
}

#[derive(Debug)]
enum DualEvent {
    #[allow(dead_code)]
    Rsvp(pathwise_rsvp::Event),
    #[allow(dead_code)]
    Gist(GistEvent),
}

impl Engine for Dual {
    type Event = DualEvent;

    fn handle_datagram(&mut self, now: Instant, dgram: Received<'_>) {
        match dgram.transport {
            Transport::Raw(IPPROTO_RSVP) => self.rsvp.handle_datagram(now, dgram),
            _ => self.gist.handle_datagram(now, dgram),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.rsvp.poll_timeout().is_some_and(|t| t <= now) {
            self.rsvp.handle_timeout(now);
        }
        if self.gist.poll_timeout().is_some_and(|t| t <= now) {
            self.gist.handle_timeout(now);
        }
    }

    fn handle_route_change(&mut self, now: Instant, change: RouteChange) {
        self.rsvp.handle_route_change(now, change.clone());
        self.gist.handle_route_change(now, change);
    }

    fn poll_transmit(&mut self) -> Option<Transmit> {
        self.rsvp
            .poll_transmit()
            .or_else(|| self.gist.poll_transmit())
    }

    fn poll_event(&mut self) -> Option<DualEvent> {
        self.rsvp
            .poll_event()
            .map(DualEvent::Rsvp)
            .or_else(|| self.gist.poll_event().map(DualEvent::Gist))
    }

    fn poll_timeout(&self) -> Option<Instant> {
        [self.rsvp.poll_timeout(), self.gist.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
    }

    fn wants_router_alert(&self, dgram: &Received<'_>) -> bool {
        self.rsvp.wants_router_alert(dgram) || self.gist.wants_router_alert(dgram)
    }
}

/// 8 Mbit/s reservable on every interface.
const BUDGET_BPS: u64 = 8_000_000;

fn dual(setup: &NodeSetup) -> Dual {
    let mut m = traffic_control(setup);
    for i in &setup.interfaces {
        m.add_interface(
            i.ifindex,
            pathwise_core::tc::TcInterface {
                reservable: BUDGET_BPS as f64 / 8.0,
                bandwidth: i.bandwidth_bps as f64 / 8.0,
                latency_us: 100,
                mtu: i.mtu,
            },
        );
    }
    // The one instance both engines admit through.
    let tc = SharedTrafficControl::new(m);
    let cfg = pathwise_rsvp::Config {
        seed: setup.seed,
        interfaces: setup
            .interfaces
            .iter()
            .map(|i| InterfaceConfig {
                ifindex: i.ifindex,
                addrs: i.addrs.iter().map(|n| n.addr()).collect(),
                bandwidth_bps: i.bandwidth_bps,
                reservable_bps: BUDGET_BPS,
                mtu: i.mtu,
                latency: i.latency,
                integrity: pathwise_auth::Policy::default(),
                hello: None,
            })
            .collect(),
        local_addrs: setup.loopbacks().iter().map(|n| n.addr()).collect(),
        ..pathwise_rsvp::Config::default()
    };
    Dual {
        rsvp: RsvpEngine::new(cfg, tc.clone(), Instant::ZERO),
        gist: node_with(setup, tc, &|_| {}, &|_| {}),
    }
}

fn lo_of(sim: &Sim<Dual>, name: &str) -> IpAddr {
    IpAddr::V4(
        sim.topology()
            .node(sim.node(name).unwrap())
            .loopback_v4
            .addr(),
    )
}

fn bucket(mbit: f32) -> TokenBucket {
    TokenBucket {
        rate: mbit * 125_000.0,
        bucket: 15_000.0,
        peak: f32::INFINITY,
        min_policed: 64,
        max_packet: 1500,
    }
}

/// An RSVP reservation of `mbit` for N1 -> N6 (sender at N1, fixed-filter receiver at N6).
fn rsvp_reserve(sim: &mut Sim<Dual>, mbit: f32) {
    let (src, dst) = (lo_of(sim, "N1"), lo_of(sim, "N6"));
    let IpAddr::V4(src4) = src else {
        unreachable!()
    };
    let session = Session {
        dest: dst,
        protocol_id: 17,
        flags: 0,
        dst_port: 5001,
        extended_tunnel_id: None,
    };
    let sender = FilterSpec::V4 {
        src: src4,
        src_port: 0,
    };
    let n1 = sim.node("N1").unwrap();
    sim.with_engine(n1, |e, now| {
        e.rsvp
            .register_sender(now, session, sender, SenderTspec(bucket(mbit)))
            .unwrap()
    });
    let n6 = sim.node("N6").unwrap();
    sim.with_engine(n6, |e, now| {
        let flows = vec![FlowDescriptor {
            flowspec: Some(FlowSpec::ControlledLoad(bucket(mbit))),
            filters: vec![sender].into(),
            te: Vec::new(),
        }];
        e.rsvp
            .reserve(now, session, StyleKind::Ff, flows, false)
            .unwrap()
    });
}

/// A QoS NSLP reservation of `mbit` for N2 -> N6; the events of its QNI afterwards.
fn qos_reserve(sim: &mut Sim<Dual>, mbit: f32) -> Vec<QosEvent> {
    let req = ReserveRequest::new(lo_of(sim, "N2"), lo_of(sim, "N6"), tmod(mbit));
    let n2 = sim.node("N2").unwrap();
    sim.with_engine(n2, |e, now| {
        e.gist
            .with_nslp::<Qos, _>(now, |q, g| q.reserve(g, now, &req))
            .unwrap()
            .unwrap()
    });
    sim.run_for(pathwise_core::time::Duration::from_secs(1));
    sim.with_engine(n2, |e, now| {
        e.gist
            .with_nslp::<Qos, _>(now, |q, _| std::iter::from_fn(|| q.poll_event()).collect())
            .unwrap()
    })
    .unwrap()
}

/// What N3's shared traffic control holds towards N4: reservations, bytes/s.
fn n3_towards_n4(sim: &mut Sim<Dual>) -> (usize, f64) {
    let (n3, n4) = (sim.node("N3").unwrap(), sim.node("N4").unwrap());
    let n4_lo = IpAddr::V4(sim.topology().node(n4).loopback_v4.addr());
    let ifx = sim.route_to(n3, n4_lo).unwrap().ifindex;
    sim.with_engine(n3, |e, now| {
        e.gist
            .with_nslp::<Qos, _>(now, |q, _| {
                let tc = q.traffic_control().lock();
                (tc.len(), tc.reserved(ifx))
            })
            .unwrap()
    })
    .unwrap()
}

#[test]
fn rsvp_and_qos_nslp_share_one_budget_per_interface() {
    let mut sim: Sim<Dual> = Sim::new(testbeds::gist_thesis(), SimConfig::seeded(7), |s| {
        Some(dual(s))
    });
    // RSVP takes 6 of N3's 8 Mbit/s towards N4.
    rsvp_reserve(&mut sim, 6.0);
    sim.run_for(pathwise_core::time::Duration::from_secs(1));
    assert_eq!(
        n3_towards_n4(&mut sim),
        (1, 750_000.0),
        "RSVP's reservation at N3"
    );

    // 4 Mbit/s more over the same link does not fit: the QoS NSLP is refused at N3, with
    // RFC 5975 §4.2.3's Reservation Failure, and nothing of it stays anywhere.
    let ev = qos_reserve(&mut sim, 4.0);
    let failed = ev.iter().find_map(|e| match e {
        QosEvent::Failed { info, .. } => Some((info.class, info.code)),
        _ => None,
    });
    assert_eq!(
        failed,
        Some((
            ErrorClass::TransientFailure,
            code::transient::RESERVATION_FAILURE
        )),
        "{ev:?}"
    );
    assert_eq!(n3_towards_n4(&mut sim), (1, 750_000.0), "only RSVP's at N3");

    // 2 Mbit/s fits in what RSVP left: admitted by the same budget, now full.
    let ev = qos_reserve(&mut sim, 2.0);
    assert!(
        ev.iter().any(|e| matches!(e, QosEvent::Reserved { .. })),
        "{ev:?}"
    );
    assert_eq!(
        n3_towards_n4(&mut sim),
        (2, 1_000_000.0),
        "RSVP's and the QoS NSLP's"
    );
}
