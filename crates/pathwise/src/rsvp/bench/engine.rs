//! `pathwise bench rsvp`: the cost of Path and Resv processing at a transit node holding N sessions (seed 001
//! §V–VI measured a whole daemon; this isolates the engine), and the bytes of state per session;
//! with `--lsps`, the sessions are RSVP-TE LSPs (explicit route, label binding, route recording)
//! at a transit LSR.

use crate::bench::alloc;
use crate::bench::plot::{Axis, Figure, Legend, Series};
use pathwise_core::engine::Engine;
use pathwise_core::io::{IPPROTO_RSVP, IfIndex, Received, Transport};
use pathwise_core::route::{Route, RouteChange};
use pathwise_core::time::{Duration, Instant};
use pathwise_rsvp::wire::te;
use pathwise_rsvp::wire::{
    Adspec, FilterSpec, FlowDescriptor, FlowSpec, Message, Path, Resv, RsvpHop, SenderDescriptor,
    SenderTspec, Session, Style, StyleKind, TimeValues, TokenBucket,
};
use pathwise_rsvp::{Config, InterfaceConfig, RsvpEngine};
use serde::Serialize;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};

/// One measured phase.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// What was fed to the engine.
    pub name: &'static str,
    /// Median over the runs, nanoseconds per message.
    pub median_ns: f64,
    /// All runs, nanoseconds per message.
    pub runs_ns: Vec<f64>,
    /// Heap allocations per message (counting allocator; the median over runs, which agree
    /// unless a table grew in one of them). In the refresh phases this is the steady state's
    /// cost that issue #21 asks to bring to zero.
    pub allocations_per_msg: f64,
}

/// Result of `pathwise bench rsvp`.
#[derive(Debug, Clone, Serialize)]
pub struct RsvpBenchReport {
    /// Sessions at the transit node.
    pub sessions: usize,
    /// Runs per phase.
    pub runs: usize,
    /// Timer wheel mode.
    pub fuzzy_timers: bool,
    /// Whether the engine was told the session count up front (`Config::expected_sessions`).
    pub presized: bool,
    /// Whether the sessions are RSVP-TE LSPs.
    pub lsps: bool,
    /// Per-phase costs.
    pub phases: Vec<Phase>,
    /// Heap bytes per session measured by the counting allocator (median of runs).
    pub bytes_per_session: f64,
    /// The engine's own estimate of its state, bytes per session.
    pub estimated_bytes_per_session: f64,
    /// The same phases with RFC 2747 integrity required on both interfaces, run alternately
    /// with the plain ones (`--integrity ALG`).
    pub integrity: Option<IntegrityPhases>,
}

/// The phases again with every input verified and every output signed.
#[derive(Debug, Clone, Serialize)]
pub struct IntegrityPhases {
    /// The algorithm.
    pub algorithm: String,
    /// Per-phase costs with integrity.
    pub phases: Vec<Phase>,
    /// Median with integrity / median without, per phase.
    pub ratios: Vec<f64>,
    /// Bytes the INTEGRITY object adds to each message.
    pub bytes_added: usize,
}

/// Unix time the benchmark engines start at (any fixed value: keys are valid at all times).
const BENCH_WALL_CLOCK: u64 = 1_800_000_000;

const UPSTREAM: IfIndex = IfIndex(1);
const DOWNSTREAM: IfIndex = IfIndex(2);
const PHOP: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
const NHOP: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);

fn transit_engine(
    fuzzy: bool,
    expected_sessions: usize,
    integrity: Option<&pathwise_auth::Policy>,
) -> RsvpEngine {
    let iface = |ifindex, addr: [u8; 4]| InterfaceConfig {
        ifindex,
        addrs: vec![IpAddr::V4(Ipv4Addr::from(addr))],
        bandwidth_bps: 100_000_000_000,
        reservable_bps: 100_000_000_000,
        mtu: 1500,
        latency: Duration::from_micros(100),
        integrity: integrity.cloned().unwrap_or_default(),
        hello: None,
    };
    let mut cfg = Config {
        interfaces: vec![
            iface(UPSTREAM, [10, 0, 1, 2]),
            iface(DOWNSTREAM, [10, 0, 2, 1]),
        ],
        expected_sessions,
        wall_clock_at_zero: BENCH_WALL_CLOCK,
        ..Config::default()
    };
    // The KOM "tuned" engine's wheel: 10 ms slots (seed 001 §V.B).
    cfg.wheel.slot_width = Duration::from_millis(10);
    cfg.wheel.fuzzy = fuzzy;
    let mut e = RsvpEngine::with_memory_tc(cfg, Instant::ZERO);
    // The link to the next hop, for strict explicit-route hops.
    e.handle_route_change(
        Instant::ZERO,
        RouteChange::Add(Route {
            prefix: "10.0.2.0/24".parse().expect("prefix"),
            next_hop: None,
            ifindex: DOWNSTREAM,
            metric: 0,
        }),
    );
    e.handle_route_change(
        Instant::ZERO,
        RouteChange::Add(Route {
            prefix: "20.0.0.0/8".parse().expect("prefix"),
            next_hop: Some(IpAddr::V4(NHOP)),
            ifindex: DOWNSTREAM,
            metric: 1,
        }),
    );
    e
}

/// Session `i`: like the KOM experiments (seed 001 §IV), many sessions share a few destination
/// hosts and differ in their ports — here 256 destination hosts, and one sender address per
/// session. As an LSP: the same end points, the port as tunnel id, the sender as head end.
fn session(i: usize, lsp: bool) -> (Session, FilterSpec) {
    let i = i as u32;
    let dest = Ipv4Addr::from(0x1400_0000 | (i % 256));
    let port = 1024 + (i / 256) as u16;
    let src = Ipv4Addr::from(0x1e00_0000 | (i & 0x00ff_ffff));
    if lsp {
        return (
            Session::lsp_tunnel(IpAddr::V4(dest), port, IpAddr::V4(src)),
            FilterSpec::LspTunnelV4 { src, lsp_id: 1 },
        );
    }
    (
        Session {
            dest: IpAddr::V4(dest),
            protocol_id: 17,
            flags: 0,
            dst_port: port,
            extended_tunnel_id: None,
        },
        FilterSpec::V4 {
            src,
            src_port: 6000,
        },
    )
}

/// An explicit route or recorded route hop.
fn v4_hop(a: Ipv4Addr) -> te::EroSubobject {
    te::EroSubobject {
        loose: false,
        node: te::AbstractNode::Ipv4Prefix {
            addr: a,
            prefix_len: 32,
        },
    }
}

fn recorded(a: Ipv4Addr) -> te::RecordRoute {
    te::RecordRoute {
        subobjects: vec![te::RroSubobject::Ipv4 {
            addr: a,
            prefix_len: 32,
            flags: 0,
        }],
    }
}

fn tspec() -> TokenBucket {
    TokenBucket {
        rate: 1250.0,
        bucket: 1500.0,
        peak: f32::INFINITY,
        min_policed: 64,
        max_packet: 1500,
    }
}

fn encode(msg: &Message, ttl: u8) -> Vec<u8> {
    let mut v = Vec::with_capacity(msg.buffer_len());
    msg.emit(ttl, &mut v);
    v
}

fn path_bytes(i: usize, lsp: bool) -> Vec<u8> {
    let (s, f) = session(i, lsp);
    encode(
        &Message::Path(Path {
            integrity: None,
            session: s,
            hop: RsvpHop::new(IpAddr::V4(PHOP), 7),
            time_values: TimeValues { refresh_ms: 30_000 },
            // RFC 3209 §4.3: this node's upstream address, then the next hop, both strict.
            explicit_route: lsp.then(|| te::ExplicitRoute {
                subobjects: vec![v4_hop(Ipv4Addr::new(10, 0, 1, 2)), v4_hop(NHOP)],
            }),
            label_request: lsp.then_some(te::LabelRequest {
                l3pid: 0x0800,
                range: None,
            }),
            session_attribute: lsp.then(|| te::SessionAttribute {
                affinities: None,
                setup_priority: 7,
                holding_priority: 0,
                flags: te::SessionAttribute::SE_STYLE_DESIRED,
                name: format!("lsp{i}").into_bytes(),
            }),
            policy: Vec::new(),
            sender: SenderDescriptor {
                template: f,
                tspec: SenderTspec(tspec()),
                adspec: Some(Adspec::new_at_sender(true, true)),
                record_route: lsp.then(|| recorded(PHOP)),
            },
            forward: Vec::new(),
        }),
        63,
    )
}

fn resv_bytes(i: usize, lsp: bool) -> Vec<u8> {
    let (s, f) = session(i, lsp);
    encode(
        &Message::Resv(Resv {
            integrity: None,
            session: s,
            hop: RsvpHop::new(IpAddr::V4(NHOP), DOWNSTREAM.0),
            time_values: TimeValues { refresh_ms: 30_000 },
            confirm: None,
            scope: None,
            policy: Vec::new(),
            style: Style {
                flags: 0,
                kind: StyleKind::Ff,
            },
            flows: vec![FlowDescriptor {
                flowspec: Some(FlowSpec::ControlledLoad(tspec())),
                filters: vec![f].into(),
                // The next hop's label and the route it recorded.
                te: if lsp {
                    vec![pathwise_rsvp::wire::FilterTe {
                        label: Some(te::Label {
                            label: 16 + (i as u32 % 1_000_000),
                        }),
                        record_route: Some(recorded(NHOP)),
                        generalized_label: None,
                    }]
                } else {
                    Vec::new()
                },
            }]
            .into(),
            forward: Vec::new(),
        }),
        64,
    )
}

/// Feed `msgs` as datagrams from `from` and drain what the engine sends: ns and heap
/// allocations per message fed.
fn feed(
    e: &mut RsvpEngine,
    msgs: &[Vec<u8>],
    from: Ipv4Addr,
    ifindex: IfIndex,
    ttl: u8,
    now: Instant,
) -> Cost {
    let (calls, start) = (alloc::allocations(), std::time::Instant::now());
    for m in msgs {
        e.handle_datagram(
            now,
            Received {
                src: IpAddr::V4(from),
                dst: IpAddr::V4(Ipv4Addr::new(20, 0, 0, 1)),
                ifindex,
                transport: Transport::Raw(IPPROTO_RSVP),
                router_alert: Some(0),
                ttl,
                payload: m,
            },
        );
        drain(e);
    }
    Cost::since(calls, start, msgs.len())
}

/// The engine's own refreshes: timers run to `until`; ns and heap allocations per message
/// sent, and how many were sent.
fn refresh_timers(e: &mut RsvpEngine, until: Instant) -> (Cost, usize) {
    let (calls, start) = (alloc::allocations(), std::time::Instant::now());
    let mut sent = 0;
    while let Some(due) = e.poll_timeout().filter(|&t| t <= until) {
        e.handle_timeout(due);
        sent += drain(e);
    }
    (Cost::since(calls, start, sent), sent)
}

/// Take what the engine sends and hand the payloads back, as the daemon does once they are
/// sent (`RsvpService::flush`); how many.
fn drain(e: &mut RsvpEngine) -> usize {
    let mut sent = 0;
    while let Some(t) = e.poll_transmit() {
        e.recycle(t.payload);
        sent += 1;
    }
    sent
}

/// What a phase cost per message.
#[derive(Clone, Copy, Debug)]
struct Cost {
    ns: f64,
    allocations: f64,
}

impl Cost {
    fn since(calls: usize, start: std::time::Instant, msgs: usize) -> Cost {
        let n = msgs.max(1) as f64;
        Cost {
            ns: start.elapsed().as_nanos() as f64 / n,
            allocations: alloc::allocations().saturating_sub(calls) as f64 / n,
        }
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The four phases' inputs: new Paths, new Resvs, refresh Paths, refresh Resvs; and whether
/// they are LSPs.
struct Inputs([Vec<Vec<u8>>; 4], bool);

impl Inputs {
    fn new(sessions: usize, lsps: bool) -> Inputs {
        let paths: Vec<Vec<u8>> = (0..sessions).map(|i| path_bytes(i, lsps)).collect();
        let resvs: Vec<Vec<u8>> = (0..sessions).map(|i| resv_bytes(i, lsps)).collect();
        Inputs([paths.clone(), resvs.clone(), paths, resvs], lsps)
    }

    /// Every message signed with `key`, sequence numbers increasing phase after phase (the
    /// engine trusts a neighbour's first number: the benchmark policy has no handshake).
    fn signed(&self, key: &pathwise_auth::Key) -> Inputs {
        let mut seq = BENCH_WALL_CLOCK << 32;
        let mut phases = self.0.clone();
        for phase in &mut phases {
            for m in phase.iter_mut() {
                seq += 1;
                pathwise_rsvp::wire::integrity::sign(m, key, seq, 0);
            }
        }
        Inputs(phases, self.1)
    }
}

/// One run: the phases on a fresh engine. Per-phase costs, heap bytes and the engine's
/// estimate per session.
fn one_run(
    inputs: &Inputs,
    fuzzy: bool,
    presize: bool,
    policy: Option<&pathwise_auth::Policy>,
) -> ([Cost; PHASES.len()], f64, f64) {
    let sessions = inputs.0[0].len();
    // The baseline is taken before the engine exists, so tables sized up front count.
    let before = alloc::allocated();
    let mut e = transit_engine(fuzzy, if presize { sessions } else { 0 }, policy);
    let t = Instant::from_secs(1);
    let p0 = feed(&mut e, &inputs.0[0], PHOP, UPSTREAM, 63, t);
    let p1 = feed(&mut e, &inputs.0[1], NHOP, DOWNSTREAM, 64, t);
    let bytes = alloc::allocated().saturating_sub(before) as f64 / sessions.max(1) as f64;
    let estimated = e.state_bytes() as f64 / sessions.max(1) as f64;
    let t = Instant::from_secs(20);
    let p2 = feed(&mut e, &inputs.0[2], PHOP, UPSTREAM, 63, t);
    let p3 = feed(&mut e, &inputs.0[3], NHOP, DOWNSTREAM, 64, t);
    // Refreshes received at 20 s keep every state; by 47 s each session's own refresh, due
    // within 1.5 R = 45 s of its last (RFC 2205 §3.7), has gone out at least once: Path
    // downstream, Resv upstream.
    let (p4, sent) = refresh_timers(&mut e, Instant::from_secs(47));
    assert!(
        sent >= 2 * sessions,
        "{sent} refreshes sent for {sessions} sessions"
    );
    assert_eq!(
        e.state_stats().out_isbs,
        sessions,
        "every reservation installed"
    );
    if inputs.1 {
        assert_eq!(e.lfib().len(), sessions, "every LSP has its label");
    }
    if policy.is_some() {
        let c = e.counters();
        assert_eq!(c.total_drops(), 0, "{:?}", c.drops);
        assert_eq!(c.integrity.verified, 4 * sessions as u64);
    }
    ([p0, p1, p2, p3, p4], bytes, estimated)
}

const PHASES: [&str; 5] = [
    "Path (new session)",
    "Resv (new reservation)",
    "Path (refresh)",
    "Resv (refresh)",
    "refresh sent (timer)",
];

fn phases(samples: Vec<Vec<Cost>>) -> Vec<Phase> {
    PHASES
        .iter()
        .zip(samples)
        .map(|(n, s)| {
            let ns: Vec<f64> = s.iter().map(|c| c.ns).collect();
            let allocations: Vec<f64> = s.iter().map(|c| c.allocations).collect();
            Phase {
                name: n,
                median_ns: median(&ns),
                runs_ns: ns,
                allocations_per_msg: median(&allocations),
            }
        })
        .collect()
}

/// What `pathwise bench rsvp` runs.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct RsvpBenchOptions {
    /// Repetitions; medians are reported.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Use the fuzzy timer wheel (seed 001 §III.B).
    #[arg(long)]
    pub fuzzy: bool,
    /// Tell the engine the session count up front (`expected_sessions`), so its tables are
    /// sized once instead of grown.
    #[arg(long)]
    pub presize: bool,
    /// Also run every phase with RFC 2747 integrity required on both interfaces under this
    /// algorithm (hmac-md5, hmac-sha1, hmac-ripemd160, hmac-sha256, hmac-sha384,
    /// hmac-sha512), alternating with the plain runs, and report the cost ratio.
    #[arg(long)]
    pub integrity: Option<pathwise_auth::Algorithm>,
    /// The sessions are RSVP-TE LSPs: Paths with an explicit route, label request, session
    /// attribute and recorded route; Resvs with a label (the transit LSR binds its own and
    /// installs the swap).
    #[arg(long)]
    pub lsps: bool,
}

/// Run the RSVP engine benchmark; with `integrity`, every run is repeated with that
/// algorithm required on both interfaces, alternating, for the cost ratio.
pub fn rsvp(sessions: usize, o: RsvpBenchOptions) -> RsvpBenchReport {
    let RsvpBenchOptions {
        runs,
        fuzzy,
        presize,
        integrity,
        lsps,
    } = o;
    let plain = Inputs::new(sessions, lsps);
    let secured = integrity.map(|alg| {
        let key = pathwise_auth::Key::new(1, alg, b"pathwise bench key").expect("key");
        let mut chain = pathwise_auth::KeyChain::new();
        chain.insert(key.clone()).expect("one key");
        let policy = pathwise_auth::Policy {
            challenge: false,
            ..pathwise_auth::Policy::new(pathwise_auth::Mode::Require, chain)
        };
        (plain.signed(&key), policy, alg)
    });
    let mut samples: Vec<Vec<Cost>> = vec![Vec::new(); PHASES.len()];
    let mut signed_samples: Vec<Vec<Cost>> = vec![Vec::new(); PHASES.len()];
    let mut bytes = Vec::new();
    let mut estimated = Vec::new();
    for _ in 0..runs.max(1) {
        let (ns, b, est) = one_run(&plain, fuzzy, presize, None);
        for (s, x) in samples.iter_mut().zip(ns) {
            s.push(x);
        }
        bytes.push(b);
        estimated.push(est);
        if let Some((inputs, policy, _)) = &secured {
            let (ns, _, _) = one_run(inputs, fuzzy, presize, Some(policy));
            for (s, x) in signed_samples.iter_mut().zip(ns) {
                s.push(x);
            }
        }
    }
    let phases_plain = phases(samples);
    let integrity = secured.map(|(_, _, alg)| {
        let signed = phases(signed_samples);
        IntegrityPhases {
            algorithm: alg.name().to_string(),
            ratios: signed
                .iter()
                .zip(&phases_plain)
                .map(|(s, p)| s.median_ns / p.median_ns)
                .collect(),
            phases: signed,
            bytes_added: pathwise_rsvp::wire::integrity::overhead(alg.digest_len()),
        }
    });
    RsvpBenchReport {
        sessions,
        runs: runs.max(1),
        fuzzy_timers: fuzzy,
        presized: presize,
        lsps,
        phases: phases_plain,
        bytes_per_session: median(&bytes),
        estimated_bytes_per_session: median(&estimated),
        integrity,
    }
}

/// The report as a table.
pub fn render_rsvp(r: &RsvpBenchReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "RSVP engine at a transit {}, {} {}, {} runs, {} timers{}",
        if r.lsps { "LSR" } else { "node" },
        r.sessions,
        if r.lsps { "LSPs" } else { "sessions" },
        r.runs,
        if r.fuzzy_timers { "fuzzy" } else { "precise" },
        if r.presized { ", presized tables" } else { "" }
    );
    let _ = writeln!(
        out,
        "{:<24} {:>12} {:>11}   runs (ns/msg)",
        "input", "median ns/msg", "allocs/msg"
    );
    for p in &r.phases {
        let runs: Vec<String> = p.runs_ns.iter().map(|x| format!("{x:.0}")).collect();
        let _ = writeln!(
            out,
            "{:<24} {:>12.0} {:>11.2}   {}",
            p.name,
            p.median_ns,
            p.allocations_per_msg,
            runs.join(" ")
        );
    }
    let _ = writeln!(
        out,
        "state per session: {:.0} bytes (allocator), {:.0} bytes (engine estimate)",
        r.bytes_per_session, r.estimated_bytes_per_session
    );
    if let Some(i) = &r.integrity {
        let _ = writeln!(
            out,
            "with integrity required ({}, +{} bytes per message), runs alternating:",
            i.algorithm, i.bytes_added
        );
        for (p, ratio) in i.phases.iter().zip(&i.ratios) {
            let runs: Vec<String> = p.runs_ns.iter().map(|x| format!("{x:.0}")).collect();
            let _ = writeln!(
                out,
                "{:<24} {:>12.0}   ratio {:.3}   {}",
                p.name,
                p.median_ns,
                ratio,
                runs.join(" ")
            );
        }
    }
    out
}

/// `--plot`: cost per message and bytes of state per session against the session count, one
/// point per report (seed 001 Tables I and II give the KOM daemon's memory per flow; its CPU
/// figures are whole-daemon load, drawn by `bench rsvp-chain --plot`).
pub fn figures(reports: &[RsvpBenchReport]) -> Vec<Figure> {
    let Some(first) = reports.first() else {
        return Vec::new();
    };
    let what = if first.lsps { "LSPs" } else { "sessions" };
    let x = |r: &RsvpBenchReport| r.sessions as f64;
    let mut cost = Figure::new(
        format!(
            "RSVP engine at a transit {}: cost per message ({} timers{})",
            if first.lsps { "LSR" } else { "node" },
            if first.fuzzy_timers {
                "fuzzy"
            } else {
                "precise"
            },
            if first.presized { ", presized" } else { "" }
        ),
        Axis::log(format!("{what} held (log)")),
        Axis::linear("ns per message (median)"),
    );
    for (i, p) in first.phases.iter().enumerate() {
        let pts = reports
            .iter()
            .map(|r| (x(r), r.phases[i].median_ns))
            .collect();
        cost = cost.with(Series::measured(p.name, pts));
    }
    if let Some(integrity) = &first.integrity {
        for (i, p) in integrity.phases.iter().enumerate() {
            let pts = reports
                .iter()
                .filter_map(|r| Some((x(r), r.integrity.as_ref()?.phases[i].median_ns)))
                .collect();
            let name = format!("{}, {} required", p.name, integrity.algorithm);
            cost = cost.with(Series::measured(name, pts));
        }
    }
    let largest = reports.iter().map(x).fold(0.0, f64::max);
    let kom: Vec<(f64, f64)> = super::KOM_TUNED
        .iter()
        .filter(|k| k.flows > 0 && k.flows as f64 <= largest.max(2500.0))
        .map(|k| (k.flows as f64, k.bytes_per_flow()))
        .collect();
    let bytes = Figure::new(
        format!(
            "RSVP engine at a transit node: state per {}",
            &what[..what.len() - 1]
        ),
        Axis::log(format!("{what} held (log)")),
        Axis::linear(format!("bytes per {}", &what[..what.len() - 1])),
    )
    .with(Series::measured(
        "counting allocator",
        reports
            .iter()
            .map(|r| (x(r), r.bytes_per_session))
            .collect(),
    ))
    .with(Series::measured(
        "engine estimate",
        reports
            .iter()
            .map(|r| (x(r), r.estimated_bytes_per_session))
            .collect(),
    ))
    .with(Series::reference(
        "tuned KOM rsvpd, (memory - idle) / flows, seed 001 Table II",
        kom,
    ))
    .legend(Legend::LowerRight);
    vec![cost, bytes]
}
