//! `pathwise demo` ([`cli`]): RSVP on the KOM testbed (seed 001 Fig. 4), in simulation.
//!
//! Two senders (N1, N2) and two receivers (N5, N6) across the routers N3 and N4 set up four
//! sessions: a fixed-filter unicast flow, a shared-explicit unicast flow, a wildcard-filter
//! multicast conference with both senders and both receivers (the reservations merge at N4 and
//! split towards the senders at N3), and an IPv6 flow. The report gives each node's state and
//! each flow's end-to-end setup latency (sender's registration until its RESV_EVENT).
//! Then a GIST ping crosses the GIST thesis testbed (seed 000 Fig. 4.2) and reports the path of
//! NSIS-aware nodes and the round-trip time. Last, the locality oracle loads the seed 002 test
//! network in memory and ranks a sample query.

pub mod cli;

use crate::rsvp::sim::{Receiver, Scenario, rsvp_sim, sim_engine_config};
use pathwise_core::io::IfIndex;
use pathwise_core::time::{Duration, Instant};
use pathwise_rsvp::Event;
use pathwise_rsvp::wire::{FilterSpec, FlowSpec, SenderTspec, Session, StyleKind, TokenBucket};
use pathwise_sim::{NodeId, SimConfig, testbeds};
use serde::Serialize;
use std::fmt::Write as _;
use std::net::IpAddr;

/// One flow of the demo, as reported.
#[derive(Debug, Serialize)]
pub struct FlowReport {
    /// Short name.
    pub name: &'static str,
    /// Destination address and port of the session.
    pub session: String,
    /// Reservation style.
    pub style: &'static str,
    /// Sending node.
    pub sender: String,
    /// Receiving nodes.
    pub receivers: Vec<String>,
    /// Rate the sender sees reserved, kbit/s (`None`: no reservation reached it).
    pub reserved_kbps: Option<f64>,
    /// Sender registration until the reservation reached the sender, milliseconds.
    pub setup_latency_ms: Option<f64>,
    /// Sender registration until the receiver's confirmation, milliseconds.
    pub confirm_latency_ms: Option<f64>,
}

/// One reservation installed on a node's interface.
#[derive(Debug, Serialize)]
pub struct InstalledReport {
    /// Session destination.
    pub session: String,
    /// Outgoing interface and the node behind it.
    pub interface: String,
    /// Reserved rate, kbit/s.
    pub kbps: f64,
    /// Senders it serves.
    pub senders: Vec<String>,
}

/// One node's state at the end of the run.
#[derive(Debug, Serialize)]
pub struct NodeReport {
    /// Node name.
    pub node: String,
    /// Router or host.
    pub role: &'static str,
    /// Sessions known.
    pub sessions: usize,
    /// Path state blocks.
    pub psbs: usize,
    /// Reservation state blocks.
    pub rsbs: usize,
    /// Reservations installed on outgoing interfaces.
    pub installed: Vec<InstalledReport>,
    /// RSVP messages received.
    pub messages_in: u64,
    /// RSVP messages sent.
    pub messages_out: u64,
    /// Messages dropped.
    pub drops: u64,
}

/// The whole demo result.
#[derive(Debug, Serialize)]
pub struct DemoReport {
    /// Testbed name.
    pub testbed: String,
    /// Simulation seed.
    pub seed: u64,
    /// Virtual time simulated, seconds.
    pub simulated_s: f64,
    /// The flows.
    pub flows: Vec<FlowReport>,
    /// Per-node state.
    pub nodes: Vec<NodeReport>,
    /// A GIST ping across the GIST thesis testbed (seed 000 Fig. 4.2).
    pub gist_ping: crate::gist::sim::PingReport,
    /// The locality oracle ranking a sample query on the seed 002 test network.
    pub oracle: crate::oracle::demo::OracleDemo,
}

struct Flow {
    name: &'static str,
    session: Session,
    style: StyleKind,
    sender: (NodeId, FilterSpec),
    receivers: Vec<NodeId>,
    start: Instant,
}

fn cl(kbps: f32) -> FlowSpec {
    FlowSpec::ControlledLoad(tb(kbps))
}

fn tb(kbps: f32) -> TokenBucket {
    TokenBucket {
        rate: kbps * 125.0,
        bucket: 8000.0,
        peak: f32::INFINITY,
        min_policed: 64,
        max_packet: 1500,
    }
}

fn style_name(s: StyleKind) -> &'static str {
    match s {
        StyleKind::Ff => "FF",
        StyleKind::Se => "SE",
        StyleKind::Wf => "WF",
        StyleKind::Other(_) => "?",
    }
}

/// Run the demo with `seed`.
pub fn run(seed: u64) -> anyhow::Result<DemoReport> {
    let topo = testbeds::kom_rsvp();
    let sim = rsvp_sim(
        topo,
        SimConfig::seeded(seed),
        sim_engine_config(Duration::from_secs(30)),
    );
    let mut sc = Scenario::new(sim);
    let node = |sc: &Scenario, n: &str| sc.sim.node(n).expect("KOM testbed node");
    let (n1, n2, n5, n6) = (
        node(&sc, "N1"),
        node(&sc, "N2"),
        node(&sc, "N5"),
        node(&sc, "N6"),
    );
    let v4 = |sc: &Scenario, n| sc.sim.topology().loopbacks(n)[0];
    let v6 = |sc: &Scenario, n| sc.sim.topology().loopbacks(n)[1];
    let group: IpAddr = "224.5.5.5".parse().expect("group address");
    let udp = |dest, port| Session {
        dest,
        protocol_id: 17,
        flags: 0,
        dst_port: port,
        extended_tunnel_id: None,
    };

    let mut flows = vec![
        Flow {
            name: "voice",
            session: udp(v4(&sc, n5), 5004),
            style: StyleKind::Ff,
            sender: (n1, FilterSpec::ip(v4(&sc, n1), 6004)),
            receivers: vec![n5],
            start: Instant::from_millis(10),
        },
        Flow {
            name: "video",
            session: udp(v4(&sc, n6), 5006),
            style: StyleKind::Se,
            sender: (n2, FilterSpec::ip(v4(&sc, n2), 6006)),
            receivers: vec![n6],
            start: Instant::from_millis(20),
        },
        Flow {
            name: "conference",
            session: udp(group, 7000),
            style: StyleKind::Wf,
            sender: (n1, FilterSpec::ip(v4(&sc, n1), 7001)),
            receivers: vec![n5, n6],
            start: Instant::from_millis(30),
        },
        Flow {
            name: "conference",
            session: udp(group, 7000),
            style: StyleKind::Wf,
            sender: (n2, FilterSpec::ip(v4(&sc, n2), 7002)),
            receivers: vec![n5, n6],
            start: Instant::from_millis(40),
        },
        Flow {
            name: "voice-v6",
            session: udp(v6(&sc, n6), 5008),
            style: StyleKind::Ff,
            sender: (n1, FilterSpec::ip(v6(&sc, n1), 6008)),
            receivers: vec![n6],
            start: Instant::from_millis(50),
        },
    ];
    for n in [n5, n6] {
        sc.sim.join_group(n, group);
    }
    // Rates per receiver, kbit/s: the conference receivers ask for different amounts, so N4
    // merges them (the larger goes upstream).
    let rate = |name: &str, receiver: NodeId| match (name, receiver == n5) {
        ("voice", _) | ("voice-v6", _) => 64.0,
        ("video", _) => 2000.0,
        (_, true) => 500.0,
        (_, false) => 1000.0,
    };
    for f in &flows {
        for &r in &f.receivers {
            if !sc
                .receivers
                .iter()
                .any(|x| x.node == r && x.session == f.session)
            {
                sc.add_receiver(Receiver {
                    node: r,
                    session: f.session,
                    style: f.style,
                    flowspec: cl(rate(f.name, r)),
                    confirm: true,
                });
            }
        }
        let (sn, sender) = f.sender;
        if f.session.dest.is_multicast() {
            sc.sim
                .add_multicast_source(sn, sender.src(), f.session.dest);
        }
        let (session, kbps) = (f.session, rate(f.name, f.receivers[0]));
        sc.sim.schedule_call(f.start, sn, move |e, now| {
            e.register_sender(now, session, sender, SenderTspec(tb(kbps)))
                .expect("sender address is local");
        });
    }
    let end = Instant::from_secs(2);
    sc.run_until(end);

    let topo = sc.sim.topology();
    let name_of = |n: NodeId| sc.sim.name(n).to_string();
    let addr_owner = |a: IpAddr| topo.owner(a).map_or_else(|| a.to_string(), &name_of);
    let ms = |t: Instant, s: Instant| (t - s).as_secs_f64() * 1e3;
    flows.sort_by_key(|f| f.start);
    let flow_reports = flows
        .iter()
        .map(|f| {
            let (sn, sender) = f.sender;
            // Setup latency is to the first reservation reaching the sender; the rate shown is
            // the last one (merging may raise it as more receivers join).
            let resvs: Vec<(Instant, FlowSpec)> = sc
                .log
                .iter()
                .filter_map(|r| match &r.event {
                    Event::ResvState {
                        session,
                        sender: s,
                        flowspec: Some(fs),
                    } if r.node == sn && *session == f.session && *s == sender => {
                        Some((r.time, *fs))
                    }
                    _ => None,
                })
                .collect();
            let first = resvs.first().map(|(t, _)| *t);
            let last = resvs.last().map(|(_, fs)| *fs);
            let confirm =
                sc.log
                    .iter()
                    .filter(|r| r.time >= f.start)
                    .find_map(|r| match &r.event {
                        Event::Confirmed { session, .. }
                            if f.receivers.contains(&r.node) && *session == f.session =>
                        {
                            Some(r.time)
                        }
                        _ => None,
                    });
            FlowReport {
                name: f.name,
                session: format!("{}:{}", f.session.dest, f.session.dst_port),
                style: style_name(f.style),
                sender: name_of(sn),
                receivers: f.receivers.iter().map(|&r| name_of(r)).collect(),
                reserved_kbps: last.map(|fs| f64::from(fs.reserved_rate()) / 125.0),
                setup_latency_ms: first.map(|t| ms(t, f.start)),
                confirm_latency_ms: confirm.map(|t| ms(t, f.start)),
            }
        })
        .collect();
    let nodes = topo
        .node_ids()
        .filter_map(|n| {
            let e = sc.sim.engine(n)?;
            let st = e.state_stats();
            let c = e.counters();
            let mut installed = Vec::new();
            for s in e.sessions() {
                for i in s.installed {
                    let peer = topo
                        .peer(n, i.ifindex)
                        .map_or_else(|| "?".to_string(), |(p, _)| name_of(p));
                    installed.push(InstalledReport {
                        session: format!("{}:{}", s.session.dest, s.session.dst_port),
                        interface: format!("{} -> {}", iface_name(i.ifindex), peer),
                        kbps: f64::from(i.flowspec.reserved_rate()) / 125.0,
                        senders: i.senders.iter().map(|s| addr_owner(s.src())).collect(),
                    });
                }
            }
            installed.sort_by(|a, b| (&a.session, &a.interface).cmp(&(&b.session, &b.interface)));
            Some(NodeReport {
                node: name_of(n),
                role: if topo.node(n).is_router() {
                    "router"
                } else {
                    "host"
                },
                sessions: st.sessions,
                psbs: st.psbs,
                rsbs: st.rsbs,
                installed,
                messages_in: c.rx.iter().sum(),
                messages_out: c.tx.iter().sum(),
                drops: c.total_drops(),
            })
        })
        .collect();
    let gist_ping = crate::gist::sim::ping(testbeds::gist_thesis(), seed, "N1", "N6")?;
    Ok(DemoReport {
        gist_ping,
        oracle: crate::oracle::demo::run(),
        testbed: topo.name().to_string(),
        seed,
        simulated_s: (end - Instant::ZERO).as_secs_f64(),
        flows: flow_reports,
        nodes,
    })
}

fn iface_name(i: IfIndex) -> String {
    format!("eth{}", i.0.saturating_sub(1))
}

/// The report as text tables.
pub fn render(r: &DemoReport) -> String {
    let mut out = String::new();
    let opt =
        |v: Option<f64>, prec: usize| v.map_or_else(|| "-".to_string(), |x| format!("{x:.prec$}"));
    let _ = writeln!(
        out,
        "RSVP on the {} testbed (simulated, seed {}), {:.1} s of virtual time\n",
        r.testbed, r.seed, r.simulated_s
    );
    let _ = writeln!(
        out,
        "{:<11} {:<22} {:<5} {:<6} {:<9} {:>10} {:>10} {:>12}",
        "flow", "session", "style", "sender", "receivers", "kbit/s", "setup ms", "confirm ms"
    );
    for f in &r.flows {
        let _ = writeln!(
            out,
            "{:<11} {:<22} {:<5} {:<6} {:<9} {:>10} {:>10} {:>12}",
            f.name,
            f.session,
            f.style,
            f.sender,
            f.receivers.join(","),
            opt(f.reserved_kbps, 0),
            opt(f.setup_latency_ms, 3),
            opt(f.confirm_latency_ms, 3)
        );
    }
    let _ = writeln!(
        out,
        "\n{:<5} {:<7} {:>8} {:>5} {:>5} {:>7} {:>7} {:>6}",
        "node", "role", "sessions", "PSBs", "RSBs", "msgs in", "msgs out", "drops"
    );
    for n in &r.nodes {
        let _ = writeln!(
            out,
            "{:<5} {:<7} {:>8} {:>5} {:>5} {:>7} {:>7} {:>6}",
            n.node, n.role, n.sessions, n.psbs, n.rsbs, n.messages_in, n.messages_out, n.drops
        );
    }
    let _ = writeln!(out, "\nreservations installed (traffic control):");
    for n in &r.nodes {
        for i in &n.installed {
            let _ = writeln!(
                out,
                "  {:<5} {:<14} {:<22} {:>8.0} kbit/s  for {}",
                n.node,
                i.interface,
                i.session,
                i.kbps,
                i.senders.join(",")
            );
        }
    }
    let g = &r.gist_ping;
    let oracle = crate::oracle::demo::render(&r.oracle);
    let _ = writeln!(
        out,
        "\nGIST ping (Ping NSLP) across the {} testbed, {} -> {}:",
        g.testbed, g.from, g.to
    );
    let _ = writeln!(
        out,
        "  path of NSIS-aware nodes: {} -> {}",
        g.from,
        g.path.join(" -> ")
    );
    let _ = writeln!(
        out,
        "  RTT {:.3} ms with the GIST handshakes{}",
        g.rtt_ms,
        g.rtt_established_ms.map_or(String::new(), |ms| format!(
            ", {ms:.3} ms over established routing state"
        ))
    );
    let _ = write!(out, "\n{oracle}");
    out
}
