//! `pathwise bench oracle-bgp`: the BMP feed at full-table scale, end to end on loopback.
//!
//! An in-process oracle server with the BMP listener; one TCP session per exit router (from
//! 127.0.0.N, mapped with `--bmp-router`), each streaming a full table (Peer Up, then route
//! monitoring UPDATEs packing many prefixes, as routers do). Measured, per run:
//!
//! - load: from the first byte sent to the snapshot holding every (prefix, exit) — prefix
//!   changes applied per second;
//! - churn: each exit re-announces a share of its table with a different AS path (about half of
//!   them move the best) — prefix changes per second, from the first byte to the last change
//!   served;
//! - update to answer: one route monitoring message that changes a prefix's best exit, from the
//!   write to a reader seeing it in the served snapshot (median and p99);
//! - memory: the served snapshot's prefix table, and the process heap (snapshot + the exits'
//!   Adj-RIBs-In) after the load.

use crate::oracle::bmp::{BmpOptions, BmpRouter};
use crate::oracle::server::UdpOptions;
use crate::oracle::{OracleServer, ServeOptions};
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use pathwise_oracle::bgp::wire::{self, Peer};
use pathwise_oracle::model::{
    LinkConfig, NicConfig, OracleConfig, RouterConfig, SourceNetwork, State,
};
use pathwise_oracle::{SharedSnapshot, TopologySnapshot};
use serde::Serialize;
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// `pathwise bench oracle-bgp` arguments.
#[derive(Debug, clap::Args)]
pub struct BgpBenchArgs {
    /// IPv4 prefixes in the table.
    #[arg(long, default_value_t = 1_000_000)]
    v4: usize,
    /// IPv6 prefixes in the table.
    #[arg(long, default_value_t = 200_000)]
    v6: usize,
    /// Exit routers, each with the whole table from one BGP peer.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=16))]
    exits: u8,
    /// Prefixes re-announced per exit in the churn phase.
    #[arg(long, default_value_t = 100_000)]
    churn: usize,
    /// Single-prefix updates timed for the update-to-answer latency.
    #[arg(long, default_value_t = 200)]
    probes: usize,
    /// Runs; medians are reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// One run.
#[derive(Clone, Debug, Serialize)]
pub struct BgpRun {
    /// Seconds to load every exit's table.
    pub load_s: f64,
    /// Prefix changes applied per second while loading.
    pub load_changes_per_s: f64,
    /// Seconds for the churn phase.
    pub churn_s: f64,
    /// Prefix changes (announcements received) per second in the churn phase.
    pub churn_changes_per_s: f64,
    /// Update-to-answer latency, median, ms.
    pub latency_median_ms: f64,
    /// Update-to-answer latency, 99th percentile, ms.
    pub latency_p99_ms: f64,
    /// Heap bytes of the served snapshot's prefix table.
    pub snapshot_prefix_bytes: usize,
    /// Process heap after the load (snapshot, RIBs, everything else), bytes.
    pub heap_bytes: usize,
    /// Process heap before the server started, bytes.
    pub heap_before_bytes: usize,
}

/// The report.
#[derive(Clone, Debug, Serialize)]
pub struct BgpReport {
    /// IPv4 prefixes.
    pub v4: usize,
    /// IPv6 prefixes.
    pub v6: usize,
    /// Exits.
    pub exits: u8,
    /// Prefixes re-announced per exit in the churn phase.
    pub churn: usize,
    /// Every run.
    pub runs: Vec<BgpRun>,
    /// Medians over the runs.
    pub median: BgpRun,
}

fn exit_addr(i: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 255, 0, 1 + i))
}

fn database(exits: u8) -> OracleConfig {
    let link = Some(LinkConfig {
        bandwidth: 1000.0,
        latency: 1.0,
        weight: 10,
        congestion: 0.0,
    });
    let core = IpAddr::V4(Ipv4Addr::new(10, 255, 1, 1));
    let mut core_nics = Vec::new();
    let mut routers = Vec::new();
    for i in 0..exits {
        let (c, e) = (
            IpAddr::V4(Ipv4Addr::new(10, 254, i, 1)),
            IpAddr::V4(Ipv4Addr::new(10, 254, i, 2)),
        );
        core_nics.push(NicConfig {
            index: i,
            local: c,
            peer: e,
            state: State::Up,
            link,
        });
        routers.push(RouterConfig {
            address: exit_addr(i),
            nic_count: 4,
            state: State::Up,
            nics: vec![NicConfig {
                index: 0,
                local: e,
                peer: c,
                state: State::Up,
                link,
            }],
            routes: Vec::new(),
        });
    }
    routers.push(RouterConfig {
        address: core,
        nic_count: 32,
        state: State::Up,
        nics: core_nics,
        routes: Vec::new(),
    });
    OracleConfig {
        routers,
        source_networks: vec![SourceNetwork {
            prefix: "100.64.0.0/24".parse().expect("prefix"),
            router: core,
            nic: 31,
        }],
        ..OracleConfig::default()
    }
}

/// The table: distinct IPv4 /24s spread over first octets 1–223 and IPv6 /48s under 2001::/16.
fn table(v4: usize, v6: usize) -> Vec<IpNet> {
    let span = 223u64 << 16;
    let mut out = Vec::with_capacity(v4 + v6);
    for i in 0..v4 as u64 {
        // 40,503 = 3·23·587 is coprime with span = 223·2¹⁶: a permutation, so all distinct.
        let k = (i * 40_503) % span + (1 << 16);
        let a = Ipv4Addr::from((k as u32) << 8);
        out.push(IpNet::V4(Ipv4Net::new(a, 24).expect("/24")));
    }
    for i in 0..v6 as u64 {
        let k = (i * 40_503) % (1 << 32);
        let a = Ipv6Addr::from((0x2001u128 << 112) | (u128::from(k) << 80));
        out.push(IpNet::V6(Ipv6Net::new(a, 48).expect("/48")));
    }
    out
}

/// Route monitoring messages announcing `prefixes` with `path`, 500 prefixes per UPDATE (IPv4
/// in the NLRI, IPv6 in MP_REACH_NLRI: both under 4,096 bytes).
fn stream(peer: &Peer, prefixes: &[IpNet], path: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    let (v4, v6): (Vec<IpNet>, Vec<IpNet>) =
        prefixes.iter().partition(|p| matches!(p, IpNet::V4(_)));
    for chunk in v4.chunks(500).chain(v6.chunks(180)) {
        out.extend(wire::route_monitoring(
            peer,
            &wire::update(chunk, path, &[]),
        ));
    }
    out
}

fn connect_from(source: Ipv4Addr, to: SocketAddr) -> anyhow::Result<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.bind(&SocketAddr::new(IpAddr::V4(source), 0).into())?;
    s.connect(&to.into())?;
    let s: TcpStream = s.into();
    s.set_nodelay(true)?;
    Ok(s)
}

/// Poll `done` every `every` until it holds.
fn wait(
    what: &str,
    limit: Duration,
    every: Duration,
    mut done: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while !done() {
        anyhow::ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(every);
    }
    Ok(())
}

/// How often the load and churn phases look at the feed (it takes the RIB's lock).
const POLL: Duration = Duration::from_millis(5);

fn exits_of(snap: &TopologySnapshot, addr: IpAddr) -> usize {
    snap.locate(addr).map_or(0, |l| l.exits.len())
}

fn one_run(a: &BgpBenchArgs, prefixes: &[IpNet], dir: &std::path::Path) -> anyhow::Result<BgpRun> {
    let heap_before = crate::bench::alloc::allocated();
    let cfg = database(a.exits);
    let config = dir.join("oracle.toml");
    std::fs::write(&config, pathwise_oracle::config::to_toml_string(&cfg)?)?;
    let snap = TopologySnapshot::build(&cfg)?;
    let mut server = OracleServer::start_with(
        &ServeOptions {
            config,
            udp: UdpOptions {
                address: IpAddr::V4(Ipv4Addr::LOCALHOST),
                port: 0,
                workers: 1,
                ..UdpOptions::default()
            },
            socket: dir.join("oracle.sock"),
            metrics: None,
            socket_group: None,
            alto: None,
        },
        snap,
    )?;
    let routers = (0..a.exits)
        .map(|i| BmpRouter {
            source: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1 + i)),
            router: exit_addr(i),
        })
        .collect();
    let bmp = server.start_bmp(&BmpOptions {
        listen: "127.0.0.1:0".parse()?,
        routers,
        interval: crate::oracle::bmp::DEFAULT_INTERVAL,
    })?;
    let shared: std::sync::Arc<SharedSnapshot> = server.shared().clone();
    let peers: Vec<Peer> = (0..a.exits)
        .map(|i| {
            Peer::global(
                IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1 + i)),
                64_600 + u32::from(i),
            )
        })
        .collect();
    // Each exit's table: its peer's AS, then 1 + i more ASes.
    let loads: Vec<Vec<u8>> = (0..a.exits)
        .map(|i| {
            let p = &peers[usize::from(i)];
            let path: Vec<u32> = std::iter::once(p.asn)
                .chain((0..=u32::from(i)).map(|k| 65_000 + k))
                .collect();
            let mut s = wire::peer_up(p, IpAddr::V4(Ipv4Addr::new(10, 254, i, 2)), 64_500);
            s.extend(stream(p, prefixes, &path));
            s
        })
        .collect();
    let mut conns: Vec<TcpStream> = (0..a.exits)
        .map(|i| connect_from(Ipv4Addr::new(127, 0, 0, 1 + i), bmp))
        .collect::<anyhow::Result<_>>()?;
    let total = prefixes.len() * usize::from(a.exits);
    let feed = server.bmp().expect("BMP runs").clone();
    // Load.
    eprintln!("  loading {total} (prefix, exit) routes");
    let t = Instant::now();
    std::thread::scope(|s| {
        for (c, bytes) in conns.iter_mut().zip(&loads) {
            s.spawn(move || c.write_all(bytes));
        }
    });
    drop(loads);
    let last = *prefixes.last().expect("a table");
    wait("the full table", Duration::from_secs(600), POLL, || {
        let v = feed.view();
        v.updates_applied as usize >= total
            && v.pending == 0
            && exits_of(&shared.load(), last.network()) == usize::from(a.exits)
    })?;
    let load_s = t.elapsed().as_secs_f64();
    let heap = crate::bench::alloc::allocated();
    let snapshot_prefix_bytes = shared.load().prefix_table_bytes();
    // Churn: each exit re-announces a share of its table one AS shorter or longer.
    let n = a.churn.min(prefixes.len());
    let churns: Vec<Vec<u8>> = (0..a.exits)
        .map(|i| {
            let p = &peers[usize::from(i)];
            let path: Vec<u32> = std::iter::once(p.asn)
                .chain((0..(u32::from(a.exits) - u32::from(i))).map(|k| 65_100 + k))
                .collect();
            let start = usize::from(i) * n / usize::from(a.exits);
            stream(p, &prefixes[start..start + n], &path)
        })
        .collect();
    eprintln!("  loaded in {load_s:.2} s; churn");
    let announced_before = feed.view().announced;
    let t = Instant::now();
    std::thread::scope(|s| {
        for (c, bytes) in conns.iter_mut().zip(&churns) {
            s.spawn(move || c.write_all(bytes));
        }
    });
    let want = announced_before + (n * usize::from(a.exits)) as u64;
    wait("the churn", Duration::from_secs(600), POLL, || {
        let v = feed.view();
        v.announced >= want && v.pending == 0
    })?;
    let churn_s = t.elapsed().as_secs_f64();
    eprintln!("  churn in {churn_s:.2} s; {} probes", a.probes);
    // Update to answer: flip one prefix between exit 0 at distance 1 and 60.
    let probe_peer = &peers[0];
    let mut lat = Vec::with_capacity(a.probes);
    for k in 0..a.probes {
        let prefix = prefixes[k * 7919 % prefixes.len()];
        let addr = prefix.network();
        let long = k % 2 == 0;
        let path: Vec<u32> = if long {
            vec![probe_peer.asn; 60]
        } else {
            vec![probe_peer.asn]
        };
        let msg = wire::route_monitoring(probe_peer, &wire::update(&[prefix], &path, &[]));
        let want_distance = if long { 60 } else { 1 };
        let exit0 = exit_addr(0);
        let t = Instant::now();
        conns[0].write_all(&msg)?;
        // The served snapshot is read without locks: poll it closely.
        wait(
            "a probe",
            Duration::from_secs(30),
            Duration::from_micros(100),
            || {
                shared.load().locate(addr).is_some_and(|l| {
                    l.exits
                        .iter()
                        .any(|e| e.router == exit0 && e.as_distance == want_distance)
                })
            },
        )?;
        lat.push(t.elapsed().as_secs_f64() * 1e3);
    }
    lat.sort_by(f64::total_cmp);
    let pick = |q: f64| lat[((lat.len() - 1) as f64 * q).round() as usize];
    drop(conns);
    drop(server);
    Ok(BgpRun {
        load_s,
        load_changes_per_s: total as f64 / load_s,
        churn_s,
        churn_changes_per_s: (n * usize::from(a.exits)) as f64 / churn_s,
        latency_median_ms: pick(0.5),
        latency_p99_ms: pick(0.99),
        snapshot_prefix_bytes,
        heap_bytes: heap,
        heap_before_bytes: heap_before,
    })
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Run `pathwise bench oracle-bgp`.
pub fn run(a: BgpBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(a.v4 + a.v6 > 0, "--v4 and --v6 cannot both be 0");
    anyhow::ensure!(a.probes > 0, "--probes must be at least 1");
    let dir = std::env::temp_dir().join(format!("pathwise-bench-bgp-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let prefixes = table(a.v4, a.v6);
    let mut runs = Vec::new();
    for r in 0..a.runs.max(1) {
        eprintln!("run {}/{}", r + 1, a.runs.max(1));
        let result = one_run(&a, &prefixes, &dir);
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        runs.push(result?);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let m = |f: fn(&BgpRun) -> f64| median(&mut runs.iter().map(f).collect::<Vec<_>>());
    let mu = |f: fn(&BgpRun) -> usize| {
        let mut v: Vec<usize> = runs.iter().map(f).collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    let median = BgpRun {
        load_s: m(|r| r.load_s),
        load_changes_per_s: m(|r| r.load_changes_per_s),
        churn_s: m(|r| r.churn_s),
        churn_changes_per_s: m(|r| r.churn_changes_per_s),
        latency_median_ms: m(|r| r.latency_median_ms),
        latency_p99_ms: m(|r| r.latency_p99_ms),
        snapshot_prefix_bytes: mu(|r| r.snapshot_prefix_bytes),
        heap_bytes: mu(|r| r.heap_bytes),
        heap_before_bytes: mu(|r| r.heap_before_bytes),
    };
    let report = BgpReport {
        v4: a.v4,
        v6: a.v6,
        exits: a.exits,
        churn: a.churn,
        runs,
        median,
    };
    crate::bench::print_report(a.json, &report, render)
}

fn mib(b: usize) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

/// The report as a table.
pub fn render(r: &BgpReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "BMP feed: {} IPv4 + {} IPv6 prefixes x {} exits, churn {} per exit; medians of {} runs",
        r.v4,
        r.v6,
        r.exits,
        r.churn,
        r.runs.len()
    );
    let m = &r.median;
    let _ = writeln!(
        o,
        "  load        {:>8.2} s   {:>12.0} prefix changes/s",
        m.load_s, m.load_changes_per_s
    );
    let _ = writeln!(
        o,
        "  churn       {:>8.2} s   {:>12.0} prefix changes/s",
        m.churn_s, m.churn_changes_per_s
    );
    let _ = writeln!(
        o,
        "  update to answer: median {:.2} ms, p99 {:.2} ms",
        m.latency_median_ms, m.latency_p99_ms
    );
    let _ = writeln!(
        o,
        "  memory: snapshot prefix table {:.1} MiB; process heap {:.1} MiB after the load ({:.1} MiB before the server)",
        mib(m.snapshot_prefix_bytes),
        mib(m.heap_bytes),
        mib(m.heap_before_bytes)
    );
    o
}
