//! The in-process half of `pathwise bench qos`: the same reservations across seed 004's
//! R0 – R1 – R2 in the simulator, once over RSVP and once over GIST with the QoS NSLP, each
//! with full refresh and with reduced refresh. What crosses the links, what the transit R1's
//! engine spends and what it holds are measured in the same way for both protocols.
//!
//! - bytes: every datagram every node sends, by [`on_wire_len`] (IP header with Router Alert
//!   where carried, UDP header for GIST, the payload: RSVP message or GIST message with its
//!   NSLP data); no link-layer framing;
//! - CPU: thread CPU time inside R1's engine calls (inputs and outputs; the simulator's own
//!   work is outside), during the counted window, less the clock's own cost per call;
//! - memory: the counting allocator's live bytes with R1's engine (and its in-memory traffic
//!   control) in place, less the same after R1 is crashed and restarted empty.

use super::meter::{Metered, Sent, clock_overhead_ns};
use crate::bench::alloc;
use crate::rsvp::sim::{node_config, sim_engine_config};
use pathwise_core::tc::{MemoryTrafficControl, SharedTrafficControl};
use pathwise_core::time::{Duration, Instant};
use pathwise_gist::sim_stream::StreamAdapter;
use pathwise_gist::{GistEngine, InterfaceConfig};
use pathwise_qos_nslp::wire::qspec::Tmod;
use pathwise_qos_nslp::{QosConfig, QosNslp, ReserveRequest};
use pathwise_rsvp::wire::{
    FilterSpec, FlowDescriptor, FlowSpec, SenderTspec, Session, StyleKind, TokenBucket,
};
use pathwise_rsvp::{Config, RsvpEngine};
use pathwise_sim::{Direction, NodeId, NodeSetup, Sim, SimConfig, testbeds};
use std::net::IpAddr;

/// The protocols and refresh modes compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// RSVP, every Path and Resv refreshed in full (RFC 2205 §3.7).
    RsvpFull,
    /// RSVP with refresh reduction: Summary Refresh of Message_Ids, acknowledged trigger
    /// messages, bundling (RFC 2961 §5).
    RsvpSummary,
    /// QoS NSLP, every refresh a full RESERVE with its QSPEC (what RFC 5974 §3.2.5 abbreviates).
    QosFull,
    /// QoS NSLP, refreshes as RSN-only RESERVEs (RFC 5974 §3.2.5).
    QosRsnOnly,
    /// QoS NSLP, RSN-only refreshes folded into SESSION-ID-LIST summaries per next peer
    /// (RFC 5974 §3.2.6).
    QosSummary,
}

impl Mode {
    /// Every mode, RSVP first.
    pub const ALL: [Mode; 5] = [
        Mode::RsvpFull,
        Mode::RsvpSummary,
        Mode::QosFull,
        Mode::QosRsnOnly,
        Mode::QosSummary,
    ];

    /// How the table names it.
    pub fn label(self) -> &'static str {
        match self {
            Mode::RsvpFull => "RSVP full refresh",
            Mode::RsvpSummary => "RSVP RFC 2961 Srefresh",
            Mode::QosFull => "QoS NSLP full refresh",
            Mode::QosRsnOnly => "QoS NSLP RSN-only",
            Mode::QosSummary => "QoS NSLP RSN + SID list",
        }
    }
}

/// One protocol in one refresh mode, holding `sessions` reservations R0 → R2.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ModeRun {
    /// Protocol and refresh mode.
    pub mode: Mode,
    /// Reservations installed at the transit R1 at the end of the window.
    pub reservations_at_transit: usize,
    /// Datagrams sent by all three nodes during the window (both links, both directions).
    pub window: Sent,
    /// Datagrams per reservation per refresh period.
    pub datagrams_per_session_period: f64,
    /// Bytes on the wire per reservation per refresh period (all links, both directions).
    pub bytes_per_session_period: f64,
    /// R1's engine time per reservation per refresh period, nanoseconds.
    pub transit_cpu_ns_per_session_period: f64,
    /// R1's heap per reservation, bytes (zero when the counting allocator is not installed,
    /// as in the test suite).
    pub transit_bytes_per_reservation: f64,
    /// The link counters' bytes for the window (the simulator's own IP accounting), a check
    /// on `window.bytes`.
    pub link_bytes: u64,
}

/// What one run measures.
#[derive(Clone, Copy, Debug)]
pub struct SimParams {
    /// Reservations.
    pub sessions: usize,
    /// Refresh period R of both protocols.
    pub refresh: Duration,
    /// Periods counted, after two to settle.
    pub periods: u32,
}

/// 1 kbit/s per reservation, as `bench rsvp-refresh`: 10,000 fit a 100 Mbit/s link.
const RATE_BPS: f32 = 1000.0;

fn token_bucket() -> TokenBucket {
    TokenBucket {
        rate: RATE_BPS / 8.0,
        bucket: 1500.0,
        peak: f32::INFINITY,
        min_policed: 64,
        max_packet: 1500,
    }
}

fn tmod() -> Tmod {
    Tmod {
        rate: RATE_BPS / 8.0,
        bucket_size: 1500.0,
        peak_rate: f32::INFINITY,
        min_policed_unit: 64,
        max_packet_size: 1500,
    }
}

/// The flow of reservation `i`: UDP from R0's loopback port 6000 to R2's loopback, port
/// 1024 + i — the same flows for both protocols.
fn dest_port(i: usize) -> u16 {
    debug_assert!(i < MAX_SESSIONS);
    1024u16.wrapping_add(i as u16)
}

/// Reservations a run can hold: one destination port each, 1024 to 65535.
pub const MAX_SESSIONS: usize = 65536 - 1024;

/// Run one mode and measure it.
pub fn run_mode(mode: Mode, p: SimParams) -> ModeRun {
    match mode {
        Mode::RsvpFull => run_rsvp(false, mode, p),
        Mode::RsvpSummary => run_rsvp(true, mode, p),
        Mode::QosFull => run_qos(false, false, mode, p),
        Mode::QosRsnOnly => run_qos(true, false, mode, p),
        Mode::QosSummary => run_qos(true, true, mode, p),
    }
}

/// The counted window and what it yields, common to both protocols.
struct Window {
    start: Instant,
    end: Instant,
}

impl Window {
    fn of(p: SimParams) -> Window {
        let start = Instant::ZERO + p.refresh * 2;
        Window {
            start,
            end: start + p.refresh * p.periods,
        }
    }
}

fn sent_total<E: pathwise_core::engine::Engine>(sim: &Sim<Metered<E>>) -> Sent {
    sim.topology()
        .node_ids()
        .filter_map(|n| sim.engine(n))
        .fold(Sent::default(), |a, e| Sent {
            datagrams: a.datagrams + e.sent().datagrams,
            bytes: a.bytes + e.sent().bytes,
        })
}

fn link_bytes<E: pathwise_core::engine::Engine>(sim: &Sim<E>) -> u64 {
    sim.topology()
        .link_ids()
        .flat_map(|l| [Direction::AToB, Direction::BToA].map(|d| sim.link_stats(l, d).sent_bytes))
        .sum()
}

/// Run to the window, count through it, then take R1's memory; `held` counts R1's
/// reservations.
fn measure<E: pathwise_core::engine::Engine>(
    mut sim: Sim<Metered<E>>,
    mode: Mode,
    p: SimParams,
    held: impl FnOnce(&mut E, Instant) -> usize,
) -> ModeRun {
    let r1 = node(&sim, "R1");
    let w = Window::of(p);
    sim.run_until(w.start);
    let (sent0, links0) = (sent_total(&sim), link_bytes(&sim));
    let overhead = clock_overhead_ns();
    let busy0 = sim.engine(r1).map_or(0.0, |e| e.busy_ns(overhead));
    sim.run_until(w.end);
    let (sent1, links1) = (sent_total(&sim), link_bytes(&sim));
    let busy1 = sim.engine(r1).map_or(0.0, |e| e.busy_ns(overhead));
    let reservations = sim
        .with_engine(r1, |e, now| held(&mut e.inner, now))
        .unwrap_or(0);
    let memory = transit_memory(&mut sim, r1);
    let per = (p.sessions.max(1) as f64) * f64::from(p.periods.max(1));
    let window = Sent {
        datagrams: sent1.datagrams - sent0.datagrams,
        bytes: sent1.bytes - sent0.bytes,
    };
    ModeRun {
        mode,
        reservations_at_transit: reservations,
        window,
        datagrams_per_session_period: window.datagrams as f64 / per,
        bytes_per_session_period: window.bytes as f64 / per,
        transit_cpu_ns_per_session_period: (busy1 - busy0) / per,
        transit_bytes_per_reservation: memory as f64 / p.sessions.max(1) as f64,
        link_bytes: links1 - links0,
    }
}

/// R1's heap: live bytes now, less live bytes once it is crashed (its engine dropped) and
/// restarted (a fresh, empty engine built).
fn transit_memory<E: pathwise_core::engine::Engine>(sim: &mut Sim<E>, r1: NodeId) -> usize {
    let holding = alloc::allocated();
    sim.crash(r1);
    sim.restart(r1);
    holding.saturating_sub(alloc::allocated())
}

fn node<E: pathwise_core::engine::Engine>(sim: &Sim<E>, name: &str) -> NodeId {
    sim.node(name)
        .unwrap_or_else(|| panic!("seed004-r0-r2 has {name}"))
}

fn loopback<E: pathwise_core::engine::Engine>(sim: &Sim<E>, n: NodeId) -> IpAddr {
    IpAddr::V4(sim.topology().node(n).loopback_v4.addr())
}

fn run_rsvp(refresh_reduction: bool, mode: Mode, p: SimParams) -> ModeRun {
    // Tables not presized (`expected_sessions` 0), like the QoS NSLP's: a restarted R1 then
    // starts from empty tables, and the memory figure includes the tables' growth.
    let base = Config {
        refresh_reduction,
        ..sim_engine_config(p.refresh)
    };
    let sim = Sim::new(
        testbeds::seed004_r0_r2(),
        SimConfig::seeded(2961),
        move |setup: &NodeSetup| {
            let cfg = node_config(setup, &base, &|_, _| Default::default());
            Some(Metered::new(
                RsvpEngine::with_memory_tc(cfg, Instant::ZERO),
                setup.name == "R1",
            ))
        },
    );
    let mut sim = sim;
    let (r0, r2) = (node(&sim, "R0"), node(&sim, "R2"));
    let (src, dst) = (loopback(&sim, r0), loopback(&sim, r2));
    let IpAddr::V4(src4) = src else {
        unreachable!("loopback_v4 is IPv4")
    };
    let sessions = p.sessions;
    let session = move |i: usize| Session {
        dest: dst,
        protocol_id: 17,
        flags: 0,
        dst_port: dest_port(i),
        extended_tunnel_id: None,
    };
    let filter = FilterSpec::V4 {
        src: src4,
        src_port: 6000,
    };
    // The receiver asks first (the engine keeps the request until path state comes), then
    // the sender's Paths go out.
    sim.schedule_call(
        Instant::from_millis(1),
        r2,
        move |e: &mut Metered<RsvpEngine>, now| {
            for i in 0..sessions {
                let flows = vec![FlowDescriptor {
                    flowspec: Some(FlowSpec::ControlledLoad(token_bucket())),
                    filters: vec![filter].into(),
                    te: Vec::new(),
                }];
                e.inner
                    .reserve(now, session(i), StyleKind::Ff, flows, false)
                    .expect("reservation request");
            }
        },
    );
    sim.schedule_call(
        Instant::from_millis(2),
        r0,
        move |e: &mut Metered<RsvpEngine>, now| {
            for i in 0..sessions {
                e.inner
                    .register_sender(now, session(i), filter, SenderTspec(token_bucket()))
                    .expect("local sender");
            }
        },
    );
    measure(sim, mode, p, |e: &mut RsvpEngine, _| {
        e.state_stats().out_isbs
    })
}

type Tc = SharedTrafficControl<MemoryTrafficControl>;
type Qos = QosNslp<Tc>;

/// GIST with the QoS NSLP on a simulated node, admitting through in-memory traffic control.
fn qos_node(setup: &NodeSetup, qos: &QosConfig) -> StreamAdapter {
    let cfg = pathwise_gist::Config {
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
        ..pathwise_gist::Config::default()
    };
    let tc = setup.memory_tc();
    let qcfg = QosConfig {
        seed: setup.seed ^ 0x9e37,
        ..qos.clone()
    };
    let mut e = GistEngine::new(cfg, Instant::ZERO);
    e.register(Box::new(QosNslp::new(qcfg, SharedTrafficControl::new(tc))));
    StreamAdapter::new(e)
}

fn run_qos(reduced_refresh: bool, summary_refresh: bool, mode: Mode, p: SimParams) -> ModeRun {
    let qos = QosConfig {
        refresh_period: p.refresh,
        reduced_refresh,
        summary_refresh,
        ..QosConfig::default()
    };
    let mut sim = Sim::new(
        testbeds::seed004_r0_r2(),
        SimConfig::seeded(5974),
        move |setup: &NodeSetup| Some(Metered::new(qos_node(setup, &qos), setup.name == "R1")),
    );
    let (r0, r2) = (node(&sim, "R0"), node(&sim, "R2"));
    let (src, dst) = (loopback(&sim, r0), loopback(&sim, r2));
    let sessions = p.sessions;
    sim.schedule_call(
        Instant::from_millis(1),
        r0,
        move |e: &mut Metered<StreamAdapter>, now| {
            e.inner.with_nslp::<Qos, _>(now, |q, g| {
                for i in 0..sessions {
                    let req = ReserveRequest {
                        protocol: Some(17),
                        source_port: Some(6000),
                        dest_port: Some(dest_port(i)),
                        ..ReserveRequest::new(src, dst, tmod())
                    };
                    q.reserve(g, now, &req).expect("reservation started");
                }
            });
        },
    );
    measure(sim, mode, p, |e: &mut StreamAdapter, now| {
        e.with_nslp::<Qos, _>(now, |q, _| q.traffic_control().lock().len())
            .unwrap_or(0)
    })
}
