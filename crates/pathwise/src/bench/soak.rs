//! `pathwise bench soak --duration D`: the five-node chain R0–R1–R2–R3–R4 under churn for a
//! bounded wall-clock time, once with RSVP and once with GIST (Ping NSLP, D-mode and C-mode)
//! on every node, both in this process over the simulator. Every virtual 100 ms a new RSVP
//! session (a sender at R0, a wildcard-filter reservation at R4) and a new GIST ping session
//! (R0 to R4) start, and the oldest beyond the working set end (RSVP: the sender withdraws and
//! the receiver releases; GIST: the pings stop and the soft state lapses). Each sample reports
//! the process's resident set (`/proc/self/status` VmRSS), live heap (the counting
//! allocator), CPU time (`getrusage`), the state held per node and the messages delivered; at
//! the end, whether memory — the resident set and the live heap — stayed flat once the working
//! set was reached.
//!
//! The soak's own record of samples must not be what grows: its storage is allocated before
//! the first sample and a [`Sample`] owns no heap, so the live heap measures the engines, the
//! simulator and the churn, and nothing that grows with the number of samples taken.
//!
//! Why the simulator and not the namespace chain: what can leak is protocol state, and it
//! lives in the sans-IO engines the daemon runs unchanged; in virtual time one wall-clock
//! hour covers days of refreshes, timeouts and teardowns instead of one hour's, and the
//! process measured holds those engines and nothing else (the namespace chain would spread
//! them over five daemons and add sockets and the event loop, which hold no per-session
//! state).

use crate::gist::sim::ping_node_with;
use pathwise_core::time::{Duration, Instant};
use pathwise_gist::nslp::ping::PingNslp;
use pathwise_gist::sim_stream::StreamAdapter;
use pathwise_gist::wire::SessionId;
use pathwise_rsvp::RsvpEngine;
use pathwise_rsvp::wire::{
    FilterSpec, FlowDescriptor, FlowSpec, SenderTspec, Session, StyleKind, TokenBucket,
};
use pathwise_sim::{EndSpec, LinkParams, LinkSpec, NodeId, Sim, SimConfig, Topology};
use serde::Serialize;
use std::collections::VecDeque;
use std::net::IpAddr;

/// `pathwise bench soak`.
#[derive(Debug, clap::Args)]
pub struct SoakArgs {
    /// How long to run, wall clock: `30s`, `10m`, `1h` (also `ms`).
    #[arg(long, value_parser = parse_duration)]
    pub duration: std::time::Duration,
    /// How often to sample.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub sample_every: std::time::Duration,
    /// Sessions alive at once, per protocol (the working set).
    #[arg(long, default_value_t = 200)]
    pub sessions: usize,
    /// Simulation seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A duration such as `250ms`, `30s`, `10m` or `1h`.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{s:?}: a number and a unit (ms, s, m, h)"))?;
    let secs = match unit {
        "ms" => return Ok(std::time::Duration::from_millis(n)),
        "s" | "" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("{s:?}: unit {unit:?} is none of ms, s, m, h")),
    };
    Ok(std::time::Duration::from_secs(secs))
}

/// Virtual time between churn steps.
const TICK: Duration = Duration::from_millis(100);
/// GIST sessions still in the working set ping every this many ticks.
const PING_EVERY: u64 = 20;
/// Nodes of the chain.
const NODES: usize = 5;

/// Per node R0..R4, five counts.
pub type PerNode = [[usize; 5]; NODES];

/// One sample. It owns no heap (fixed arrays, no `Vec`), so recording one allocates nothing.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Sample {
    /// Wall-clock seconds since the start.
    pub wall_s: f64,
    /// Virtual seconds simulated (each protocol's chain).
    pub virtual_s: f64,
    /// Resident set, KiB.
    pub rss_kib: u64,
    /// Live heap bytes (0 unless the binary's counting allocator is installed).
    pub heap_bytes: usize,
    /// CPU seconds, user + system, since the start.
    pub cpu_s: f64,
    /// Sessions started so far, per protocol.
    pub sessions_started: u64,
    /// RSVP per node R0..R4: sessions, path states, reservation states, installed
    /// reservations, timers.
    pub rsvp_state: PerNode,
    /// GIST per node: routing states, peers, messaging associations, timers, streams.
    pub gist_state: PerNode,
    /// Datagrams delivered to engines since the previous sample, both chains.
    pub messages: u64,
}

/// The report.
#[derive(Clone, Debug, Serialize)]
pub struct SoakReport {
    /// Wall-clock duration asked for, seconds.
    pub duration_s: f64,
    /// Sessions in the working set, per protocol.
    pub working_set: usize,
    /// The samples.
    pub samples: Vec<Sample>,
    /// Highest RSS over the second quarter of the samples, KiB.
    pub rss_second_quarter_kib: u64,
    /// Highest RSS over the last quarter, KiB.
    pub rss_last_quarter_kib: u64,
    /// Their difference, KiB (negative: it shrank).
    pub rss_growth_kib: i64,
    /// The same as a percentage of the second quarter's.
    pub rss_growth_pct: f64,
    /// Growth allowed for "flat": the larger of 1 MiB and 2 %.
    pub flat_threshold_kib: u64,
    /// Whether RSS stayed flat once the working set was reached (needs 4 samples).
    pub rss_flat: Option<bool>,
    /// Highest live heap over the second quarter of the samples, bytes.
    pub heap_second_quarter_bytes: usize,
    /// Highest live heap over the last quarter, bytes.
    pub heap_last_quarter_bytes: usize,
    /// Their difference, bytes (negative: it shrank).
    pub heap_growth_bytes: i64,
    /// The same as a percentage of the second quarter's.
    pub heap_growth_pct: f64,
    /// Heap growth allowed for "flat": the larger of [`HEAP_FLAT_FLOOR`] bytes and 0.5 %.
    pub heap_flat_threshold_bytes: usize,
    /// Whether the live heap stayed flat (needs 4 samples and the counting allocator).
    pub heap_flat: Option<bool>,
    /// Whether memory stayed flat: RSS and, where it is counted, the live heap.
    pub flat: Option<bool>,
}

/// The smallest heap growth counted as growing, bytes. The live heap is counted to the byte,
/// with none of the page and allocator-arena rounding that makes RSS move in steps, so the rule
/// is tighter than RSS's: a leak of one byte per 100 sessions is 19 KB over the hour's 1.9 M
/// sessions. What may move it legitimately is the high-water mark of a queue (a burst of
/// messages doubling a buffer's capacity), bounded and small next to this.
pub const HEAP_FLAT_FLOOR: usize = 16 * 1024;

/// The five-node chain, with reservable bandwidth for the working set.
fn chain() -> Topology {
    let mut b = Topology::builder();
    b.name("soak-chain");
    let nodes: Vec<NodeId> = (0..5).map(|i| b.router(format!("R{i}"))).collect();
    for w in nodes.windows(2) {
        let params = LinkParams::default()
            .delay(Duration::from_micros(500))
            .bandwidth(10_000_000_000);
        let mut spec = LinkSpec::new(w[0], w[1], params);
        for end in [&mut spec.a_end, &mut spec.b_end] {
            *end = EndSpec {
                reservable_bps: Some(5_000_000_000),
                ..EndSpec::default()
            };
        }
        b.link_spec(spec);
    }
    b.build().expect("a chain is a valid topology")
}

fn loopback(topo: &Topology, n: NodeId) -> IpAddr {
    topo.loopbacks(n)[0]
}

/// RSVP sessions R0 → R4 started and ended in turn.
struct RsvpChurn {
    sim: Sim<RsvpEngine>,
    nodes: Vec<NodeId>,
    active: VecDeque<Session>,
    next_port: u16,
}

impl RsvpChurn {
    fn new(seed: u64) -> Self {
        let sim = crate::rsvp::sim::rsvp_sim(
            chain(),
            SimConfig::seeded(seed),
            crate::rsvp::sim::sim_engine_config(Duration::from_secs(5)),
        );
        let nodes = sim.topology().node_ids().collect();
        RsvpChurn {
            sim,
            nodes,
            active: VecDeque::new(),
            next_port: 1,
        }
    }

    fn step(&mut self, working_set: usize) {
        let (head, tail) = (self.nodes[0], self.nodes[4]);
        let topo = self.sim.topology();
        let (src, dst) = (loopback(topo, head), loopback(topo, tail));
        let IpAddr::V4(src4) = src else {
            unreachable!("simulator loopbacks are IPv4 first")
        };
        let session = Session::ip(dst, 17, self.next_port);
        self.next_port = self.next_port.checked_add(1).unwrap_or(1);
        let bucket = TokenBucket {
            rate: 12_500.0,
            bucket: 1_500.0,
            peak: f32::INFINITY,
            min_policed: 64,
            max_packet: 1_500,
        };
        let filter = FilterSpec::V4 {
            src: src4,
            src_port: 4000,
        };
        self.sim.with_engine(head, |e, now| {
            let _ = e.register_sender(now, session, filter, SenderTspec(bucket));
        });
        let flows = vec![FlowDescriptor {
            flowspec: Some(FlowSpec::ControlledLoad(bucket)),
            filters: Vec::new().into(),
            te: Vec::new(),
        }];
        self.sim.with_engine(tail, |e, now| {
            let _ = e.reserve(now, session, StyleKind::Wf, flows, false);
        });
        self.active.push_back(session);
        while self.active.len() > working_set {
            let old = self.active.pop_front().expect("not empty");
            self.sim.with_engine(head, |e, now| {
                let _ = e.unregister_sender(now, old, filter);
            });
            self.sim.with_engine(tail, |e, now| {
                let _ = e.release(now, old);
            });
        }
        let to = self.sim.now() + TICK;
        self.sim.run_until(to);
        self.sim.drain_events();
    }

    fn state(&self) -> PerNode {
        std::array::from_fn(|i| {
            self.sim.engine(self.nodes[i]).map_or([0; 5], |e| {
                let s = e.state_stats();
                [s.sessions, s.psbs, s.rsbs, s.out_isbs, s.timers]
            })
        })
    }

    fn delivered(&self) -> u64 {
        self.nodes
            .iter()
            .map(|&n| self.sim.node_stats(n).delivered)
            .sum()
    }
}

/// GIST ping sessions R0 → R4, D-mode and C-mode in turn.
struct GistChurn {
    sim: Sim<StreamAdapter>,
    nodes: Vec<NodeId>,
    active: VecDeque<(SessionId, bool, u64)>,
    ticks: u64,
}

impl GistChurn {
    fn new(seed: u64) -> Self {
        let sim = Sim::new(chain(), SimConfig::seeded(seed), |setup| {
            Some(ping_node_with(setup, |c| {
                c.refresh_period = Duration::from_secs(5);
                c.rs_validity = Duration::from_secs(15);
                c.state_lifetime = Duration::from_secs(15);
                c.ma_hold_time = Duration::from_secs(10);
                c.ma_idle_timeout = Duration::from_secs(10);
            }))
        });
        let nodes = sim.topology().node_ids().collect();
        GistChurn {
            sim,
            nodes,
            active: VecDeque::new(),
            ticks: 0,
        }
    }

    fn ping(&mut self, sid: Option<SessionId>, reliable: bool) -> Option<SessionId> {
        let topo = self.sim.topology();
        let (head, src, dst) = (
            self.nodes[0],
            loopback(topo, self.nodes[0]),
            loopback(topo, self.nodes[4]),
        );
        self.sim
            .with_engine(head, |p, now| {
                p.with_nslp::<PingNslp, _>(now, |ping, g| {
                    let sid = sid.unwrap_or_else(|| g.new_session_id());
                    ping.ping_session_with(g, now, sid, src, dst, reliable)
                        .map(|_| sid)
                })
            })
            .flatten()
            .and_then(Result::ok)
    }

    fn step(&mut self, working_set: usize) {
        self.ticks += 1;
        let reliable = self.ticks.is_multiple_of(2);
        if let Some(sid) = self.ping(None, reliable) {
            self.active.push_back((sid, reliable, self.ticks));
        }
        while self.active.len() > working_set {
            self.active.pop_front();
        }
        let due: Vec<(SessionId, bool)> = self
            .active
            .iter()
            .filter(|(_, _, born)| {
                (self.ticks - born).is_multiple_of(PING_EVERY) && *born != self.ticks
            })
            .map(|&(sid, r, _)| (sid, r))
            .collect();
        for (sid, r) in due {
            self.ping(Some(sid), r);
        }
        let to = self.sim.now() + TICK;
        self.sim.run_until(to);
        self.sim.drain_events();
    }

    fn state(&self) -> PerNode {
        std::array::from_fn(|i| {
            self.sim.engine(self.nodes[i]).map_or([0; 5], |p| {
                let s = p.inner().state_stats();
                [s.routing_states, s.peers, s.mas, s.timers, p.connections()]
            })
        })
    }

    fn delivered(&self) -> u64 {
        self.nodes
            .iter()
            .map(|&n| self.sim.node_stats(n).delivered)
            .sum()
    }
}

/// Resident set of this process, KiB (`VmRSS` in `/proc/self/status`; 0 if unreadable).
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// User + system CPU seconds of this process (`getrusage`; 0 if it fails).
pub fn cpu_seconds() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    use nix::sys::time::TimeValLike;
    getrusage(UsageWho::RUSAGE_SELF).map_or(0.0, |u| {
        (u.user_time().num_microseconds() + u.system_time().num_microseconds()) as f64 / 1e6
    })
}

/// Samples a run takes at most: one per `sample_every` up to `duration`, and the last.
fn planned_samples(args: &SoakArgs) -> usize {
    let every = args.sample_every.as_nanos().max(1);
    usize::try_from(args.duration.as_nanos() / every)
        .unwrap_or(usize::MAX)
        .saturating_add(2)
}

/// At most this many samples' storage is reserved up front (about 450 MB); a run asking for
/// more still works, its record then grows the heap as it fills.
const MAX_RESERVED_SAMPLES: usize = 1 << 20;

/// Run the soak; `sample` is told of each sample as it is taken.
pub fn soak(args: &SoakArgs, mut sample: impl FnMut(&Sample)) -> SoakReport {
    let start = std::time::Instant::now();
    let cpu0 = cpu_seconds();
    // Reserved before the engines exist and the first sample: taking a sample then allocates
    // nothing, and the heap it reads is the protocols' (growth of this record, about 500 B a
    // sample with per-node `Vec`s, was the soak's rising heap of issue #18).
    let mut samples = Vec::with_capacity(planned_samples(args).min(MAX_RESERVED_SAMPLES));
    let mut rsvp = RsvpChurn::new(args.seed);
    let mut gist = GistChurn::new(args.seed ^ 0x5eed);
    let mut started = 0u64;
    let mut delivered_before = 0u64;
    let mut next_sample = args.sample_every;
    loop {
        rsvp.step(args.sessions);
        gist.step(args.sessions);
        started += 1;
        let elapsed = start.elapsed();
        let done = elapsed >= args.duration;
        if elapsed >= next_sample || done {
            let delivered = rsvp.delivered() + gist.delivered();
            let s = Sample {
                wall_s: elapsed.as_secs_f64(),
                virtual_s: (rsvp.sim.now() - Instant::ZERO).as_secs_f64(),
                rss_kib: rss_kib(),
                heap_bytes: crate::bench::alloc::allocated(),
                cpu_s: cpu_seconds() - cpu0,
                sessions_started: started,
                rsvp_state: rsvp.state(),
                gist_state: gist.state(),
                messages: delivered - delivered_before,
            };
            delivered_before = delivered;
            sample(&s);
            samples.push(s);
            while next_sample <= elapsed {
                next_sample += args.sample_every;
            }
        }
        if done {
            break;
        }
    }
    verdict(args, samples)
}

/// The highest of `of` over the second quarter of the samples and over the last (`None` with
/// fewer than 4 samples).
fn quarters<T: Ord + Copy + Default>(
    samples: &[Sample],
    of: impl Fn(&Sample) -> T,
) -> Option<(T, T)> {
    let n = samples.len();
    let peak = |r: std::ops::Range<usize>| samples[r].iter().map(&of).max().unwrap_or_default();
    (n >= 4).then(|| (peak(n / 4..n / 2), peak(n - n / 4..n)))
}

fn pct(growth: i64, base: u64) -> f64 {
    if base > 0 {
        growth as f64 * 100.0 / base as f64
    } else {
        0.0
    }
}

/// Compare the second quarter's highest RSS and live heap with the last quarter's.
fn verdict(args: &SoakArgs, samples: Vec<Sample>) -> SoakReport {
    let rss = quarters(&samples, |s| s.rss_kib);
    let (q2, q4) = rss.unwrap_or_default();
    let growth = q4 as i64 - q2 as i64;
    let threshold = (q2 / 50).max(1024);
    let rss_flat = rss.map(|_| growth <= threshold as i64);
    // No counting allocator (every reading 0): no heap verdict.
    let heap = quarters(&samples, |s| s.heap_bytes).filter(|&(h2, _)| h2 > 0);
    let (h2, h4) = heap.unwrap_or_default();
    let heap_growth = h4 as i64 - h2 as i64;
    let heap_threshold = (h2 / 200).max(HEAP_FLAT_FLOOR);
    let heap_flat = heap.map(|_| heap_growth <= heap_threshold as i64);
    SoakReport {
        duration_s: args.duration.as_secs_f64(),
        working_set: args.sessions,
        rss_second_quarter_kib: q2,
        rss_last_quarter_kib: q4,
        rss_growth_kib: growth,
        rss_growth_pct: pct(growth, q2),
        flat_threshold_kib: threshold,
        rss_flat,
        heap_second_quarter_bytes: h2,
        heap_last_quarter_bytes: h4,
        heap_growth_bytes: heap_growth,
        heap_growth_pct: pct(heap_growth, h2 as u64),
        heap_flat_threshold_bytes: heap_threshold,
        heap_flat,
        flat: rss_flat.map(|r| r && heap_flat.unwrap_or(true)),
        samples,
    }
}

fn sample_line(s: &Sample) -> String {
    let sum = |v: &[[usize; 5]], i: usize| v.iter().map(|x| x[i]).sum::<usize>();
    let per_node = |v: &[[usize; 5]], i: usize| {
        v.iter()
            .map(|x| x[i].to_string())
            .collect::<Vec<_>>()
            .join("/")
    };
    format!(
        "{:>8.1} {:>9.0} {:>9} {:>10.1} {:>7.1} {:>9} {:>19} {:>6} {:>19} {:>6} {:>10}",
        s.wall_s,
        s.virtual_s,
        s.rss_kib,
        s.heap_bytes as f64 / 1024.0,
        s.cpu_s,
        s.sessions_started,
        per_node(&s.rsvp_state, 1),
        sum(&s.rsvp_state, 4),
        per_node(&s.gist_state, 0),
        sum(&s.gist_state, 2),
        s.messages
    )
}

const HEADER: &str = "  wall s virtual s   RSS KiB   heap KiB   CPU s   started   RSVP PSBs per node timers GIST routing per node    MAs   messages";

/// The report as a table.
pub fn render(r: &SoakReport) -> String {
    let mut out = format!(
        "soak: five-node chain, RSVP and GIST, {} sessions each in the working set, {:.0} s\n{HEADER}\n",
        r.working_set, r.duration_s
    );
    for s in &r.samples {
        out += &sample_line(s);
        out.push('\n');
    }
    out += &match r.rss_flat {
        Some(flat) => format!(
            "RSS: second quarter peak {} KiB, last quarter peak {} KiB, growth {} KiB ({:+.2} %), threshold {} KiB: {}\n",
            r.rss_second_quarter_kib,
            r.rss_last_quarter_kib,
            r.rss_growth_kib,
            r.rss_growth_pct,
            r.flat_threshold_kib,
            if flat { "flat" } else { "GROWING" }
        ),
        None => "RSS: fewer than 4 samples, no verdict (sample more often)\n".into(),
    };
    out += &match r.heap_flat {
        Some(flat) => format!(
            "heap: second quarter peak {} B, last quarter peak {} B, growth {} B ({:+.2} %), threshold {} B: {}\n",
            r.heap_second_quarter_bytes,
            r.heap_last_quarter_bytes,
            r.heap_growth_bytes,
            r.heap_growth_pct,
            r.heap_flat_threshold_bytes,
            if flat { "flat" } else { "GROWING" }
        ),
        None => "heap: no verdict (fewer than 4 samples, or no counting allocator)\n".into(),
    };
    out
}

/// `pathwise bench soak`.
pub fn run(args: SoakArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        !args.sample_every.is_zero(),
        "--sample-every must be more than 0"
    );
    if !args.json {
        println!("{HEADER}");
    }
    let json = args.json;
    let report = soak(&args, |s| {
        if !json {
            println!("{}", sample_line(s));
        }
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        // The verdict: the lines after the samples.
        for line in render(&report).lines().skip(2 + report.samples.len()) {
            println!("{line}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(
            parse_duration("30s"),
            Ok(std::time::Duration::from_secs(30))
        );
        assert_eq!(
            parse_duration("10m"),
            Ok(std::time::Duration::from_secs(600))
        );
        assert_eq!(
            parse_duration("1h"),
            Ok(std::time::Duration::from_secs(3600))
        );
        assert_eq!(
            parse_duration("250ms"),
            Ok(std::time::Duration::from_millis(250))
        );
        assert!(parse_duration("10x").is_err());
        assert!(parse_duration("s").is_err());
    }

    fn args(duration_s: u64, every_ms: u64) -> SoakArgs {
        SoakArgs {
            duration: std::time::Duration::from_secs(duration_s),
            sample_every: std::time::Duration::from_millis(every_ms),
            sessions: 1,
            seed: 1,
            json: false,
        }
    }

    fn sample(rss_kib: u64, heap_bytes: usize) -> Sample {
        Sample {
            wall_s: 0.0,
            virtual_s: 0.0,
            rss_kib,
            heap_bytes,
            cpu_s: 0.0,
            sessions_started: 0,
            rsvp_state: [[0; 5]; NODES],
            gist_state: [[0; 5]; NODES],
            messages: 0,
        }
    }

    #[test]
    fn verdict_compares_the_second_quarter_with_the_last() {
        let args = args(8, 1000);
        let s = |rss| sample(rss, 0);
        let flat = verdict(
            &args,
            [
                10, 50_000, 100_000, 100_100, 100_200, 100_300, 100_400, 101_000,
            ]
            .map(s)
            .to_vec(),
        );
        assert_eq!(flat.rss_second_quarter_kib, 100_100);
        assert_eq!(flat.rss_last_quarter_kib, 101_000);
        assert_eq!(flat.rss_growth_kib, 900);
        assert_eq!(flat.rss_flat, Some(true));
        assert_eq!(
            flat.heap_flat, None,
            "no counting allocator, no heap verdict"
        );
        assert_eq!(flat.flat, Some(true));
        let growing = verdict(
            &args,
            [
                10, 50_000, 100_000, 100_100, 103_000, 104_000, 105_000, 106_000,
            ]
            .map(s)
            .to_vec(),
        );
        assert_eq!(growing.rss_flat, Some(false));
        assert_eq!(growing.flat, Some(false));
        assert_eq!(verdict(&args, vec![s(1), s(2)]).flat, None);
    }

    /// The lead's one-hour run of issue #18 (/work/soak-1h.json: the live heap at 60 s and
    /// every 5 minutes; RSS flat at 13,312 KiB): the heap verdict flags its growth, which the
    /// RSS verdict let through.
    #[test]
    fn heap_verdict_flags_the_issue_18_run() {
        let heap = [
            2_899_580, 2_903_016, 2_905_880, 2_908_424, 2_912_088, 2_913_832, 2_916_216, 2_921_160,
            2_923_160, 2_925_432, 2_927_160, 2_959_880, 2_962_344,
        ];
        let r = verdict(
            &args(3600, 300_000),
            heap.map(|h| sample(13_312, h)).to_vec(),
        );
        assert_eq!(r.rss_flat, Some(true));
        assert_eq!(r.heap_second_quarter_bytes, 2_913_832);
        assert_eq!(r.heap_last_quarter_bytes, 2_962_344);
        assert_eq!(r.heap_growth_bytes, 48_512);
        assert_eq!(r.heap_flat_threshold_bytes, HEAP_FLAT_FLOOR);
        assert_eq!(r.heap_flat, Some(false));
        assert_eq!(r.flat, Some(false));
        // The same heap give or take 10 KB of in-flight messages: flat.
        let jitter = [0, 9_000, 3_000, 10_000].map(|d| sample(13_312, 2_900_000 + d));
        let r = verdict(&args(3600, 60_000), [jitter, jitter].concat());
        assert_eq!(r.heap_flat, Some(true));
        // A working set ten times larger: 0.5 % of it.
        let big = [0, 9_000, 3_000, 10_000].map(|d| sample(13_312, 29_000_000 + d));
        let r = verdict(&args(3600, 60_000), [big, big].concat());
        assert_eq!(r.heap_flat_threshold_bytes, 29_010_000 / 200);
    }

    /// Issue #18: the soak's record of samples grew the heap it measured (about 500 B a
    /// sample, per-node `Vec`s and the growing `Vec<Sample>`). A sample owns no heap now, and
    /// the record is reserved for every sample a run takes.
    #[test]
    fn recording_samples_allocates_nothing() {
        assert!(!std::mem::needs_drop::<Sample>(), "a Sample owns no heap");
        for (duration_s, every_ms) in [(3, 500), (3600, 60_000), (3600, 1_000), (1, 300)] {
            let a = args(duration_s, every_ms);
            // Samples are taken at every multiple of `sample_every` up to `duration`, and
            // once more when the run ends.
            let taken = (duration_s * 1000 / every_ms) as usize + 1;
            assert!(
                planned_samples(&a) >= taken,
                "{duration_s} s every {every_ms} ms"
            );
        }
    }
}
