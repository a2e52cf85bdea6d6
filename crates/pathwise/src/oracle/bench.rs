//! `pathwise bench oracle`: the server measured on loopback (seed 002 §6).
//!
//! - Replies/s and RTT against IPs per query (10 … 363) and worker threads, with the seed network
//!   loaded. The load is one [`flood`](super::clients::flood) client thread with a bounded
//!   window of queries in flight, spread over 16 client sockets so that `SO_REUSEPORT` spreads
//!   them over the workers (a closed loop: it keeps the workers busy without overflowing their
//!   queues, so loss stays near zero; the RTT under load is then about window / throughput).
//! - In the same run and with the same client, a plain UDP echo server on the same socket path
//!   (same `SO_REUSEPORT` workers, batches and packet sizes); the ratio oracle/echo says how much
//!   of the socket path's limit the oracle keeps. All servers of the series run at once and each
//!   run visits them in turn, so that load swings on a shared machine hit them alike.
//! - Server CPU time per reply (the workers' `schedstat`), which does not depend on how much of
//!   a shared machine the server got, and the share of time the workers waited for a CPU.
//! - RTT without load: one query in flight.
//! - Network size (seed Fig. 28): 100 IPs per query against a 10-router and a 10,000-router
//!   network carrying the same 67,000 routes × 3 exits.
//!
//! Servers and client share the machine (and its cores): the figures are for loopback on this
//! machine, not for a server with cores of its own.

use super::clients::{CandidatePool, ClientReport, FloodOptions, Limits, QueryOptions, flood};
use super::server::{CpuTime, Service, UdpOptions, UdpServer};
use crate::bench::plot::{Axis, Figure, Legend, Series};
use pathwise_oracle::generate::{SyntheticSpec, seed_network, synthetic};
use pathwise_oracle::model::CacheScope;
use pathwise_oracle::{OracleConfig, SharedSnapshot, TopologySnapshot};
use serde::Serialize;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Runs per point; medians are reported.
    pub runs: usize,
    /// Seconds per run.
    pub seconds: f64,
    /// IPs per query.
    pub sizes: Vec<usize>,
    /// Worker threads.
    pub workers: Vec<usize>,
    /// Queries in flight.
    pub window: usize,
    /// Datagrams per `recvmmsg` in the servers.
    pub batch: usize,
    /// Also compare a 10-router and a 10,000-router network.
    pub network_size: bool,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            runs: 3,
            seconds: 3.0,
            sizes: vec![10, 50, 100, 200, 300, 363],
            workers: vec![1, 2],
            window: 64,
            batch: 32,
            network_size: true,
        }
    }
}

/// One run's figures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Figures {
    /// Replies per second.
    pub replies_per_s: f64,
    /// Loss, percent.
    pub loss_pct: f64,
    /// Minimum RTT, ms.
    pub rtt_min_ms: f64,
    /// Mean RTT, ms.
    pub rtt_avg_ms: f64,
    /// RTT standard deviation, ms.
    pub rtt_stddev_ms: f64,
    /// Median RTT, ms.
    pub rtt_median_ms: f64,
    /// 99th-percentile RTT, ms.
    pub rtt_p99_ms: f64,
    /// Server workers' CPU time per reply, µs (from `schedstat`).
    pub server_cpu_us: f64,
    /// Of the time the workers were runnable, the share they waited for a CPU, percent.
    pub server_wait_pct: f64,
    /// The client thread's CPU time per reply, µs.
    pub client_cpu_us: f64,
    /// Datagrams per `recvmmsg` call that returned any (= replies per `sendmmsg`).
    pub server_batch: f64,
    /// Bytes per reply the server sent.
    pub reply_bytes: f64,
    /// Times per reply the workers went to sleep (voluntary context switches).
    pub server_sleeps: f64,
    /// Times per reply the workers were preempted (involuntary context switches).
    pub server_preempted: f64,
}

impl From<&ClientReport> for Figures {
    fn from(r: &ClientReport) -> Self {
        let rtt = r.rtt.clone();
        Figures {
            server_cpu_us: f64::NAN,
            server_wait_pct: f64::NAN,
            client_cpu_us: f64::NAN,
            server_batch: f64::NAN,
            reply_bytes: f64::NAN,
            server_sleeps: f64::NAN,
            server_preempted: f64::NAN,
            replies_per_s: r.replies_per_s,
            loss_pct: r.loss_pct,
            rtt_min_ms: rtt.as_ref().map_or(f64::NAN, |x| x.min_ms),
            rtt_avg_ms: rtt.as_ref().map_or(f64::NAN, |x| x.avg_ms),
            rtt_stddev_ms: rtt.as_ref().map_or(f64::NAN, |x| x.stddev_ms),
            rtt_median_ms: rtt.as_ref().map_or(f64::NAN, |x| x.median_ms),
            rtt_p99_ms: rtt.as_ref().map_or(f64::NAN, |x| x.p99_ms),
        }
    }
}

/// Runs of one point and their per-figure medians.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// Every run.
    pub runs: Vec<Figures>,
    /// Median of each figure over the runs.
    pub median: Figures,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| !x.is_nan());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl Point {
    fn new(runs: Vec<Figures>) -> Point {
        let m = |f: fn(&Figures) -> f64| median(runs.iter().map(f).collect());
        let median = Figures {
            replies_per_s: m(|f| f.replies_per_s),
            loss_pct: m(|f| f.loss_pct),
            rtt_min_ms: m(|f| f.rtt_min_ms),
            rtt_avg_ms: m(|f| f.rtt_avg_ms),
            rtt_stddev_ms: m(|f| f.rtt_stddev_ms),
            rtt_median_ms: m(|f| f.rtt_median_ms),
            rtt_p99_ms: m(|f| f.rtt_p99_ms),
            server_cpu_us: m(|f| f.server_cpu_us),
            server_wait_pct: m(|f| f.server_wait_pct),
            client_cpu_us: m(|f| f.client_cpu_us),
            server_batch: m(|f| f.server_batch),
            reply_bytes: m(|f| f.reply_bytes),
            server_sleeps: m(|f| f.server_sleeps),
            server_preempted: m(|f| f.server_preempted),
        };
        Point { runs, median }
    }
}

/// Oracle and echo at one (workers, IPs per query).
#[derive(Clone, Debug, Serialize)]
pub struct SizeRow {
    /// Server worker threads.
    pub workers: usize,
    /// IPs per query.
    pub ips: usize,
    /// Bytes per query.
    pub query_bytes: usize,
    /// The oracle under load.
    pub oracle: Point,
    /// The echo server under the same load.
    pub echo: Point,
    /// Median oracle replies/s over median echo replies/s.
    pub ratio: f64,
}

/// The oracle with one query in flight.
#[derive(Clone, Debug, Serialize)]
pub struct IdleRow {
    /// IPs per query.
    pub ips: usize,
    /// Figures.
    pub oracle: Point,
}

/// One network of the size comparison.
#[derive(Clone, Debug, Serialize)]
pub struct NetworkRow {
    /// Name.
    pub network: String,
    /// Routers.
    pub routers: usize,
    /// Prefixes.
    pub prefixes: usize,
    /// Seconds to generate and build it.
    pub build_s: f64,
    /// Server workers.
    pub workers: usize,
    /// IPs per query.
    pub ips: usize,
    /// Figures.
    pub oracle: Point,
}

/// The machine, as the report records it.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// `nproc`.
    pub nproc: usize,
    /// CPU model.
    pub cpu: String,
    /// Memory, kB.
    pub mem_kb: u64,
    /// 1-minute load average at the start.
    pub load_start: f64,
    /// 1-minute load average at the end.
    pub load_end: f64,
}

/// Everything `pathwise bench oracle` measured.
#[derive(Clone, Debug, Serialize)]
pub struct OracleBenchReport {
    /// The machine.
    pub machine: Machine,
    /// Runs per point.
    pub runs: usize,
    /// Seconds per run.
    pub seconds: f64,
    /// Queries in flight under load.
    pub window: usize,
    /// Server batch size.
    pub batch: usize,
    /// The seed network: routers, prefixes, build seconds.
    pub seed_network: (usize, usize, f64),
    /// Oracle vs echo, by workers and IPs per query.
    pub rows: Vec<SizeRow>,
    /// One query in flight (one worker).
    pub idle: Vec<IdleRow>,
    /// Network size.
    pub networks: Vec<NetworkRow>,
    /// Wall-clock seconds the whole benchmark took.
    pub total_s: f64,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn load_avg() -> f64 {
    read("/proc/loadavg")
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(f64::NAN)
}

fn machine() -> Machine {
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or_else(|| "unknown".to_owned(), |s| s.trim().to_owned());
    let mem_kb = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Machine {
        nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu,
        mem_kb,
        load_start: load_avg(),
        load_end: f64::NAN,
    }
}

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn start(service: Service, workers: usize, batch: usize) -> anyhow::Result<UdpServer> {
    UdpServer::start(
        &UdpOptions {
            address: LOOPBACK,
            port: 0,
            workers,
            batch,
            ..UdpOptions::default()
        },
        service,
    )
}

/// Load `server` for `seconds`; the client's report and the figures, with the CPU time both
/// sides used.
fn load(
    server: &UdpServer,
    query: &QueryOptions,
    seconds: f64,
    window: usize,
) -> anyhow::Result<(ClientReport, Figures)> {
    let stop = AtomicBool::new(false);
    let (s0, c0) = (server.cpu(), CpuTime::this_thread());
    let (w0, n0) = (server.switches(), server.counters().report());
    let report = flood(
        &FloodOptions {
            server: server.local_addr(),
            limits: Limits {
                count: None,
                duration: Some(Duration::from_secs_f64(seconds)),
            },
            window,
            timeout: Duration::from_millis(500),
            batch: 32,
            sockets: 16,
            query: query.clone(),
        },
        &stop,
    )?;
    let server_cpu = server.cpu().since(s0);
    let client_cpu = CpuTime::this_thread().zip(c0).map(|(c1, c0)| c1.since(c0));
    let switches = server.switches().since(w0);
    let n1 = server.counters().report();
    let mut f = Figures::from(&report);
    let per_reply = |ns: u64| {
        if report.replies == 0 || ns == 0 {
            f64::NAN
        } else {
            ns as f64 / 1e3 / report.replies as f64
        }
    };
    f.server_cpu_us = per_reply(server_cpu.run_ns);
    let busy = server_cpu.run_ns + server_cpu.wait_ns;
    f.server_wait_pct = if busy == 0 {
        f64::NAN
    } else {
        100.0 * server_cpu.wait_ns as f64 / busy as f64
    };
    f.client_cpu_us = client_cpu.map_or(f64::NAN, |c| per_reply(c.run_ns));
    let ratio = |a: u64, b: u64| {
        if b == 0 {
            f64::NAN
        } else {
            a as f64 / b as f64
        }
    };
    f.server_batch = ratio(n1.received - n0.received, n1.batches - n0.batches);
    f.reply_bytes = ratio(n1.bytes_out - n0.bytes_out, n1.sent - n0.sent);
    f.server_sleeps = ratio(switches.voluntary, report.replies);
    f.server_preempted = ratio(switches.involuntary, report.replies);
    Ok((report, f))
}

fn built(cfg: &OracleConfig) -> anyhow::Result<Arc<SharedSnapshot>> {
    Ok(Arc::new(SharedSnapshot::new(TopologySnapshot::build(cfg)?)))
}

/// Run the benchmark; `progress` gets a line per measured point.
pub fn run(opts: &BenchOptions, progress: &dyn Fn(&str)) -> anyhow::Result<OracleBenchReport> {
    let t_all = Instant::now();
    let mut machine = machine();
    let runs = opts.runs.max(1);
    let t = Instant::now();
    let seed_cfg = seed_network(1);
    let seed = built(&seed_cfg)?;
    let seed_info = {
        let s = seed.load();
        (
            s.router_count(),
            s.prefix_count(),
            t.elapsed().as_secs_f64(),
        )
    };
    let pool = Arc::new(CandidatePool::from_config(&seed_cfg));
    drop(seed_cfg);
    let source = IpAddr::V4(Ipv4Addr::new(130, 149, 221, 10));
    let query = |size: usize, pool: &Arc<CandidatePool>, source: IpAddr| QueryOptions {
        size,
        source: Some(source),
        pool: pool.clone(),
        seed: 7,
    };
    let warmup = (opts.seconds / 10.0).clamp(0.1, 0.5);

    // Every server of the series runs at once (an idle one costs nothing); each run visits
    // them in turn, so that the shared machine's load swings hit all of them alike.
    let servers: Vec<(usize, UdpServer, UdpServer)> = opts
        .workers
        .iter()
        .map(|&w| {
            Ok((
                w,
                start(Service::Oracle(seed.clone()), w, opts.batch)?,
                start(Service::Echo, w, opts.batch)?,
            ))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut rows = Vec::new();
    for &size in &opts.sizes {
        let q = query(size, &pool, source);
        let mut figures: Vec<(Vec<Figures>, Vec<Figures>)> =
            vec![(Vec::new(), Vec::new()); servers.len()];
        let mut query_bytes = 0;
        for (_, oracle, echo) in &servers {
            load(oracle, &q, warmup, opts.window)?;
            load(echo, &q, warmup, opts.window)?;
        }
        for _ in 0..runs {
            for ((_, oracle, echo), (o, e)) in servers.iter().zip(figures.iter_mut()) {
                let (r, f) = load(oracle, &q, opts.seconds, opts.window)?;
                query_bytes = r.query_bytes;
                o.push(f);
                e.push(load(echo, &q, opts.seconds, opts.window)?.1);
            }
        }
        for ((w, _, _), (o, e)) in servers.iter().zip(figures) {
            let (o, e) = (Point::new(o), Point::new(e));
            let ratio = o.median.replies_per_s / e.median.replies_per_s;
            progress(&format!(
                "workers {w}, {size:>3} IPs: oracle {:>8.0} replies/s ({:.1} µs CPU/reply, avg rtt {:.3} ms), echo {:>8.0} replies/s ({:.1} µs), ratio {ratio:.2}",
                o.median.replies_per_s,
                o.median.server_cpu_us,
                o.median.rtt_avg_ms,
                e.median.replies_per_s,
                e.median.server_cpu_us
            ));
            rows.push(SizeRow {
                workers: *w,
                ips: size,
                query_bytes,
                oracle: o,
                echo: e,
                ratio,
            });
        }
    }
    drop(servers);
    rows.sort_by_key(|r| r.workers);

    let mut idle = Vec::new();
    {
        let oracle = start(Service::Oracle(seed.clone()), 1, opts.batch)?;
        let secs = (opts.seconds / 3.0).max(0.5);
        for &size in &opts.sizes {
            let q = query(size, &pool, source);
            let runs: Vec<Figures> = (0..runs)
                .map(|_| load(&oracle, &q, secs, 1).map(|(_, f)| f))
                .collect::<anyhow::Result<_>>()?;
            let p = Point::new(runs);
            progress(&format!(
                "one query in flight, {size:>3} IPs: rtt min {:.3} / avg {:.3} / median {:.3} ms",
                p.median.rtt_min_ms, p.median.rtt_avg_ms, p.median.rtt_median_ms
            ));
            idle.push(IdleRow {
                ips: size,
                oracle: p,
            });
        }
    }
    drop(seed);

    let mut networks = Vec::new();
    if opts.network_size {
        let w = opts.workers.iter().copied().max().unwrap_or(1);
        let mut small = SyntheticSpec::new(10, 67_000, 3);
        small.source_networks = 10;
        let mut big = SyntheticSpec::new(10_000, 67_000, 3);
        big.source_networks = 1_000;
        big.cache = CacheScope::SourceRouters;
        for (name, spec) in [
            ("10 routers (seed Fig. 19 size)", small),
            ("10,000 routers, 1,000 cached rows", big),
        ] {
            let t = Instant::now();
            let cfg = synthetic(&spec);
            let shared = built(&cfg)?;
            let build_s = t.elapsed().as_secs_f64();
            let (routers, prefixes) = {
                let s = shared.load();
                (s.router_count(), s.prefix_count())
            };
            let pool = Arc::new(CandidatePool::from_config(&cfg));
            drop(cfg);
            let q = query(100, &pool, IpAddr::V4(Ipv4Addr::new(100, 64, 0, 7)));
            let server = start(Service::Oracle(shared), w, opts.batch)?;
            load(&server, &q, warmup, opts.window)?;
            let runs: Vec<Figures> = (0..runs)
                .map(|_| load(&server, &q, opts.seconds, opts.window).map(|(_, f)| f))
                .collect::<anyhow::Result<_>>()?;
            let p = Point::new(runs);
            progress(&format!(
                "{name}: {:.0} replies/s ({:.1} µs CPU/reply, avg rtt {:.3} ms), built in {build_s:.1} s",
                p.median.replies_per_s, p.median.server_cpu_us, p.median.rtt_avg_ms
            ));
            networks.push(NetworkRow {
                network: name.to_owned(),
                routers,
                prefixes,
                build_s,
                workers: w,
                ips: 100,
                oracle: p,
            });
        }
    }
    machine.load_end = load_avg();
    Ok(OracleBenchReport {
        machine,
        runs,
        seconds: opts.seconds,
        window: opts.window,
        batch: opts.batch,
        seed_network: seed_info,
        rows,
        idle,
        networks,
        total_s: t_all.elapsed().as_secs_f64(),
    })
}

fn runs_of(p: &Point, f: fn(&Figures) -> f64, prec: usize) -> String {
    p.runs
        .iter()
        .map(|r| format!("{:.prec$}", f(r)))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// The report as Markdown tables (what docs/BENCHMARKS.md records).
pub fn render(r: &OracleBenchReport) -> String {
    let mut s = String::new();
    let m = &r.machine;
    let _ = writeln!(
        s,
        "machine: {} CPUs ({}), {:.1} GiB; load average {:.1} at start, {:.1} at end",
        m.nproc,
        m.cpu,
        m.mem_kb as f64 / (1 << 20) as f64,
        m.load_start,
        m.load_end
    );
    let _ = writeln!(
        s,
        "seed network: {} routers, {} prefixes, built in {:.2} s; {} runs × {} s per point, {} queries in flight, server batch {}; took {:.0} s\n",
        r.seed_network.0,
        r.seed_network.1,
        r.seed_network.2,
        r.runs,
        r.seconds,
        r.window,
        r.batch,
        r.total_s
    );
    let _ = writeln!(
        s,
        "| workers | IPs | query B | oracle replies/s (runs) | median | echo replies/s (runs) | median | oracle/echo | loss % |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---|---:|---|---:|---:|---:|");
    for row in &r.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.0} | {} | {:.0} | {:.2} | {:.2} |",
            row.workers,
            row.ips,
            row.query_bytes,
            runs_of(&row.oracle, |f| f.replies_per_s, 0),
            row.oracle.median.replies_per_s,
            runs_of(&row.echo, |f| f.replies_per_s, 0),
            row.echo.median.replies_per_s,
            row.ratio,
            row.oracle.median.loss_pct
        );
    }
    let _ = writeln!(
        s,
        "\nCPU per reply and RTT under load (medians of the runs):\n"
    );
    let _ = writeln!(
        s,
        "| workers | IPs | oracle server CPU µs/reply (runs) | median | echo server CPU µs/reply | client CPU µs/reply | workers waiting for a CPU % | oracle RTT avg / median / p99 ms |"
    );
    let _ = writeln!(s, "|---:|---:|---|---:|---:|---:|---:|---|");
    for row in &r.rows {
        let o = &row.oracle.median;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.0} | {:.3} / {:.3} / {:.3} |",
            row.workers,
            row.ips,
            runs_of(&row.oracle, |f| f.server_cpu_us, 1),
            o.server_cpu_us,
            row.echo.median.server_cpu_us,
            o.client_cpu_us,
            o.server_wait_pct,
            o.rtt_avg_ms,
            o.rtt_median_ms,
            o.rtt_p99_ms
        );
    }
    let _ = writeln!(
        s,
        "\nThe workers' socket path under load (medians of the runs): datagrams per `recvmmsg` call (each batch's replies go out in one `sendmmsg`), and per reply the times a worker went to sleep waiting for datagrams and was preempted:\n"
    );
    let _ = writeln!(
        s,
        "| workers | IPs | query B | oracle reply B | echo reply B | oracle datagrams/batch | echo datagrams/batch | oracle sleeps/reply | echo sleeps/reply | oracle preempted/reply | echo preempted/reply |"
    );
    let _ = writeln!(
        s,
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for row in &r.rows {
        let (o, e) = (&row.oracle.median, &row.echo.median);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.0} | {:.0} | {:.1} | {:.1} | {:.3} | {:.3} | {:.3} | {:.3} |",
            row.workers,
            row.ips,
            row.query_bytes,
            o.reply_bytes,
            e.reply_bytes,
            o.server_batch,
            e.server_batch,
            o.server_sleeps,
            e.server_sleeps,
            o.server_preempted,
            e.server_preempted
        );
    }
    if !r.idle.is_empty() {
        let _ = writeln!(s, "\nOne query in flight, one worker:\n");
        let _ = writeln!(
            s,
            "| IPs | RTT avg (runs) ms | median of runs: min / avg / stddev / median / p99 ms |"
        );
        let _ = writeln!(s, "|---:|---|---|");
        for row in &r.idle {
            let o = &row.oracle.median;
            let _ = writeln!(
                s,
                "| {} | {} | {:.3} / {:.3} / {:.3} / {:.3} / {:.3} |",
                row.ips,
                runs_of(&row.oracle, |f| f.rtt_avg_ms, 3),
                o.rtt_min_ms,
                o.rtt_avg_ms,
                o.rtt_stddev_ms,
                o.rtt_median_ms,
                o.rtt_p99_ms
            );
        }
    }
    if !r.networks.is_empty() {
        let _ = writeln!(s, "\nNetwork size (100 IPs per query):\n");
        let _ = writeln!(
            s,
            "| network | routers | prefixes | build s | workers | replies/s (runs) | median | server CPU µs/reply (runs) | median | RTT avg ms |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---|---:|---|---:|---:|");
        for n in &r.networks {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.1} | {} | {} | {:.0} | {} | {:.1} | {:.3} |",
                n.network,
                n.routers,
                n.prefixes,
                n.build_s,
                n.workers,
                runs_of(&n.oracle, |f| f.replies_per_s, 0),
                n.oracle.median.replies_per_s,
                runs_of(&n.oracle, |f| f.server_cpu_us, 1),
                n.oracle.median.server_cpu_us,
                n.oracle.median.rtt_avg_ms
            );
        }
    }
    s
}

/// `--plot`: the seed's figures from this run. Replies/s (Fig. 24), mean RTT under load (Fig.
/// 25) and its standard deviation (Fig. 26) against IPs per query, one series per worker count
/// (the echo server beside the oracle for replies/s, one query in flight beside it for RTT);
/// replies/s against worker threads (Figs. 22–23) when more than one count ran; and the
/// network-size comparison (Fig. 28) when it ran. The seed printed no numbers for these
/// figures, so there is no reference series.
pub fn figures(r: &OracleBenchReport) -> Vec<Figure> {
    let mut workers: Vec<usize> = r.rows.iter().map(|row| row.workers).collect();
    workers.dedup();
    let mut sizes: Vec<usize> = r.rows.iter().map(|row| row.ips).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let by_size = |w: usize, f: &dyn Fn(&SizeRow) -> f64| -> Vec<(f64, f64)> {
        let mut pts: Vec<(f64, f64)> = r
            .rows
            .iter()
            .filter(|row| row.workers == w)
            .map(|row| (row.ips as f64, f(row)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        pts
    };
    let plural = |w: usize| if w == 1 { "" } else { "s" };
    let mut figs = Vec::new();
    if !r.rows.is_empty() {
        let mut replies = Figure::new(
            format!(
                "Oracle on loopback: replies/s against query size, {} in flight (seed 002 Fig. 24)",
                r.window
            ),
            Axis::linear("IPs per query"),
            Axis::linear("replies per second (median)"),
        )
        .legend(Legend::UpperRight);
        for &w in &workers {
            replies = replies.with(Series::measured(
                format!("oracle, {w} worker{}", plural(w)),
                by_size(w, &|row| row.oracle.median.replies_per_s),
            ));
        }
        for &w in &workers {
            replies = replies.with(Series::measured(
                format!("UDP echo, {w} worker{}", plural(w)),
                by_size(w, &|row| row.echo.median.replies_per_s),
            ));
        }
        figs.push(replies);
        let mut rtt = Figure::new(
            "Oracle on loopback: mean RTT against query size (seed 002 Fig. 25)",
            Axis::linear("IPs per query"),
            Axis::linear("mean RTT, ms (median of runs)"),
        );
        for &w in &workers {
            rtt = rtt.with(Series::measured(
                format!("{} in flight, {w} worker{}", r.window, plural(w)),
                by_size(w, &|row| row.oracle.median.rtt_avg_ms),
            ));
        }
        if !r.idle.is_empty() {
            rtt = rtt.with(Series::measured(
                "one in flight, 1 worker",
                r.idle
                    .iter()
                    .map(|i| (i.ips as f64, i.oracle.median.rtt_avg_ms))
                    .collect(),
            ));
        }
        figs.push(rtt);
        let mut sd = Figure::new(
            "Oracle on loopback: RTT standard deviation against query size (seed 002 Fig. 26)",
            Axis::linear("IPs per query"),
            Axis::linear("RTT standard deviation, ms"),
        );
        for &w in &workers {
            sd = sd.with(Series::measured(
                format!("{} in flight, {w} worker{}", r.window, plural(w)),
                by_size(w, &|row| row.oracle.median.rtt_stddev_ms),
            ));
        }
        figs.push(sd);
    }
    if workers.len() > 1 {
        let mut threads = Figure::new(
            "Oracle on loopback: replies/s against worker threads (seed 002 Figs. 22-23)",
            Axis::linear("worker threads"),
            Axis::linear("replies per second (median)"),
        )
        .legend(Legend::UpperRight);
        for &size in &sizes {
            let pts = r
                .rows
                .iter()
                .filter(|row| row.ips == size)
                .map(|row| (row.workers as f64, row.oracle.median.replies_per_s))
                .collect();
            threads = threads.with(Series::measured(format!("{size} IPs per query"), pts));
        }
        figs.push(threads);
    }
    if !r.networks.is_empty() {
        let names = r.networks.iter().map(|n| n.network.clone()).collect();
        let pts = r
            .networks
            .iter()
            .enumerate()
            .map(|(i, n)| (i as f64, n.oracle.median.replies_per_s))
            .collect();
        let w = r.networks[0].workers;
        figs.push(
            Figure::new(
                "Oracle: network size must not matter (seed 002 Fig. 28), 100 IPs per query",
                Axis::categories("network", names),
                Axis::linear("replies per second (median)"),
            )
            .with(Series::measured(format!("{w} worker{}", plural(w)), pts)),
        );
    }
    figs
}
