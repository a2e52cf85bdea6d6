//! `pathwise bench booster`: the seed's experiments on our gateway, in network namespaces
//! ([`super::netns`]), printed as tables (JSON with `--json`). Needs root, `ip`, `tc`, `ping`,
//! `iperf3`; loss needs nftables (drops on arrival, [`super::netns::Testbed::shape`]); the comparison with wireguard-go needs
//! `wireguard-go` and `wg` (left out with a note without them).
//!
//! - `rtt` — ping round-trip time versus IP packet size 60–1400 bytes for each setup (seed
//!   Fig. 6), over the link shaped to 10 Mbit/s;
//! - `throughput` — iperf3 TCP throughput over the 10 Mbit/s link for each setup with
//!   compressible (text) and incompressible (random) data (seed Table 1);
//! - `fec` — with 1% and 5% random loss on the link, without and with FEC: iperf3 TCP goodput,
//!   and the share of 200 pings answered (loss as an application without retransmission sees it);
//! - `compare` — on the unshaped link, in one run with the setups interleaved: direct veth,
//!   the plain TUN forwarder, the null booster and the encryption booster each with the
//!   offloads on and off and with two lanes (`queues = 2`), and wireguard-go (left out, with a
//!   note, when it is not installed): throughput of one TCP flow and of four in parallel (one
//!   flow stays on one lane), as ratios of median throughputs (and of median RTTs); the load
//!   average and the CPUs are noted.
//!
//! - `adaptive` — congestion-aware compression (seed §7, after Feldmeier) against never and
//!   always compressing, on the 10 Mbit/s link, in phases: light traffic (pings only), a
//!   saturating text transfer, a saturating random-data transfer; per phase the throughput,
//!   the ping RTT under that load, and the gateways' CPU time per packet.
//! - `fec-rate` — issue #19's FEC figure: the unshaped link with 5 % random loss each way
//!   (dropped on arrival, datagram by datagram), gateways with offloads on, `direct`, no FEC
//!   (`none`), `fec:10:3` and `fec:10:3:4` (interleaved 4 deep): our sequenced UDP load
//!   ([`super::load`]: numbered datagrams in paced GSO runs from a thread in host A's namespace,
//!   counted with GRO by a thread in host B's; iperf3's one system call per datagram took
//!   most of a CPU at each end on a small machine) offered at 1 Gbit/s and at 250 Mbit/s of UDP
//!   payload in 1300-byte datagrams (sent and received Mbit/s, residual loss at the receiver,
//!   the link's loss and the packets FEC rebuilt from the gateways' counters, the gateways'
//!   CPU per packet and the load's own) and iperf3 TCP goodput.
//!
//! - `cpu` — per-packet and per-byte CPU of each booster, in memory (no namespace, no root):
//!   [`super::cpu`].
//!
//! Setups: `direct` (routed over the link, no gateway: the seed's "no support installed"),
//! `plain` (TUN forwarder without the framework), `none` (gateway, empty chain: "support
//! installed, no booster"), then one booster each; a `/nooffload` suffix runs the gateways
//! with every offload off (`tun_offload`, `udp_gso`, `udp_gro` = false), a `/Nq` suffix
//! (`/2q`) with `queues = N` lanes on a multi-queue TUN device.

use super::load;
use super::netns::{self, GA, GB, LinkShape, Payload, Testbed};
use crate::bench::plot::{Axis, Figure, Legend, Series};
use anyhow::{Context as _, bail};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How traffic crosses from gateway A to gateway B.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setup {
    /// Kernel routing over the link.
    Direct,
    /// `pathwise booster gateway --plain` (offloads on when true, with this many lanes).
    Plain(bool, usize),
    /// The gateway with this chain (empty: no booster), offloads on when true, with this
    /// many lanes.
    Chain(Vec<String>, bool, usize),
    /// wireguard-go on both gateways.
    WireGuard,
}

impl Setup {
    /// Parse `direct`, `plain`, `none`, `wireguard-go`, or a comma-separated chain; `plain`,
    /// `none` and chains take a `/Nq` suffix (lanes) and then a `/nooffload` one.
    pub fn parse(s: &str) -> Setup {
        let (s, offloads) = match s.strip_suffix(NO_OFFLOAD) {
            Some(s) => (s, false),
            None => (s, true),
        };
        let (s, queues) = match s.rsplit_once('/').and_then(|(head, q)| {
            let n = q.strip_suffix('q')?.parse::<usize>().ok()?;
            Some((head, n))
        }) {
            Some((head, n)) => (head, n.max(1)),
            None => (s, 1),
        };
        match s {
            "direct" => Setup::Direct,
            "plain" => Setup::Plain(offloads, queues),
            "none" => Setup::Chain(Vec::new(), offloads, queues),
            "wireguard-go" => Setup::WireGuard,
            c => Setup::Chain(c.split(',').map(str::to_string).collect(), offloads, queues),
        }
    }

    /// Its name in tables.
    pub fn name(&self) -> String {
        let suffix = |on: bool, q: usize| {
            let lanes = if q > 1 {
                format!("/{q}q")
            } else {
                String::new()
            };
            format!("{lanes}{}", if on { "" } else { NO_OFFLOAD })
        };
        match self {
            Setup::Direct => "direct".into(),
            Setup::Plain(o, q) => format!("plain{}", suffix(*o, *q)),
            Setup::Chain(c, o, q) if c.is_empty() => format!("none{}", suffix(*o, *q)),
            Setup::Chain(c, o, q) => format!("{}{}", c.join(","), suffix(*o, *q)),
            Setup::WireGuard => "wireguard-go".into(),
        }
    }
}

/// Suffix of a setup whose gateways run with every offload off.
pub const NO_OFFLOAD: &str = "/nooffload";
/// The gateway configuration lines that turn every offload off.
const OFFLOADS_OFF: &str = "tun_offload = false\nudp_gso = false\nudp_gro = false";

/// Options of `pathwise bench booster`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Repetitions (medians reported).
    pub runs: usize,
    /// Seconds per iperf3 transfer (and per run of `fec-rate`'s UDP load).
    pub seconds: u32,
    /// Pings per size and run.
    pub pings: u32,
    /// The `pathwise` binary the gateways run as.
    pub binary: PathBuf,
}

/// One measured point.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Setup name.
    pub setup: String,
    /// What varies: packet size, payload kind, loss…
    pub x: String,
    /// Median.
    pub median: f64,
    /// Every run (or every ping).
    pub samples: Vec<f64>,
}

impl Point {
    /// The point of `setup` at `x` from its `samples`, with their median.
    pub(crate) fn of(setup: impl Into<String>, x: impl Into<String>, samples: &[f64]) -> Point {
        Point {
            setup: setup.into(),
            x: x.into(),
            median: median(samples),
            samples: samples.to_vec(),
        }
    }
}

/// A table of points.
#[derive(Debug, Clone, Serialize)]
pub struct Experiment {
    /// Experiment name.
    pub name: String,
    /// Unit of `median`.
    pub unit: String,
    /// Notes (shaping that could not be applied, ratios).
    pub notes: Vec<String>,
    /// Points.
    pub points: Vec<Point>,
}

fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The gateway configuration lines of a setup: offloads off unless `offloads`, and the lanes.
fn gateway_lines(offloads: bool, queues: usize) -> String {
    let mut lines = if offloads {
        String::new()
    } else {
        format!("{OFFLOADS_OFF}\n")
    };
    if queues > 1 {
        let _ = writeln!(lines, "queues = {queues}");
    }
    lines
}

/// Bring `setup` up in `tb` (tearing down the previous one).
pub fn apply(tb: &mut Testbed, bin: &Path, setup: &Setup) -> anyhow::Result<()> {
    tb.stop_gateways();
    tb.kill("wg");
    match setup {
        Setup::Direct => tb.route_direct()?,
        Setup::Plain(o, q) => {
            // A gateway with lanes needs a device made for several queues, one without a
            // device made for one.
            tb.tun_multi_queue(*q > 1)?;
            tb.route_tun(netns::TUN)?;
            tb.start_gateways(bin, &[], true, &gateway_lines(*o, *q))?;
        }
        Setup::Chain(c, o, q) => {
            tb.tun_multi_queue(*q > 1)?;
            tb.route_tun(netns::TUN)?;
            let c: Vec<&str> = c.iter().map(String::as_str).collect();
            tb.start_gateways(bin, &c, false, &gateway_lines(*o, *q))?;
        }
        Setup::WireGuard => wireguard(tb)?,
    }
    // Let routes and ARP settle; a first ping warms the path.
    let _ = netns::ping(tb, 100, 2, "0.1");
    Ok(())
}

fn wireguard(tb: &mut Testbed) -> anyhow::Result<()> {
    let keygen = |dir: &Path, name: &str| -> anyhow::Result<String> {
        let key = netns::run_limited(
            std::process::Command::new("wg").arg("genkey"),
            Duration::from_secs(5),
        )?;
        let path = dir.join(name);
        std::fs::write(&path, &key.stdout)?;
        let mut child = std::process::Command::new("wg")
            .arg("pubkey")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()?;
        std::io::Write::write_all(&mut child.stdin.take().context("wg stdin")?, &key.stdout)?;
        let out = child.wait_with_output()?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let dir = tb.dir.clone();
    let pub_a = keygen(&dir, "wg-a.key")?;
    let pub_b = keygen(&dir, "wg-b.key")?;
    // Distinct names: wireguard-go's control sockets (/var/run/wireguard/NAME.sock) are not
    // per namespace.
    let id = std::process::id() % 100_000;
    let (dev_a, dev_b) = (format!("pwga{id}"), format!("pwgb{id}"));
    for (g, dev, key, peer_pub, endpoint, far) in [
        (
            GA,
            &dev_a,
            "wg-a.key",
            &pub_b,
            "192.168.77.2:51820",
            "10.77.2.0/24",
        ),
        (
            GB,
            &dev_b,
            "wg-b.key",
            &pub_a,
            "192.168.77.1:51820",
            "10.77.1.0/24",
        ),
    ] {
        let dev = dev.as_str();
        tb.spawn("wg", g, &["wireguard-go", "-f", dev])?;
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !tb.exec(g, &["ip", "link", "show", dev])?.status.success() {
            if std::time::Instant::now() > deadline {
                bail!("wireguard-go did not create {dev}: {}", tb.log("wg"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let key = dir.join(key).to_string_lossy().into_owned();
        tb.exec_ok(
            g,
            &[
                "wg",
                "set",
                dev,
                "listen-port",
                "51820",
                "private-key",
                &key,
                "peer",
                peer_pub,
                "endpoint",
                endpoint,
                "allowed-ips",
                far,
            ],
        )?;
        tb.exec_ok(g, &["ip", "link", "set", dev, "up", "mtu", "1400"])?;
        tb.exec_ok(g, &["ip", "route", "replace", far, "dev", dev])?;
    }
    Ok(())
}

fn setups(names: &[&str]) -> Vec<Setup> {
    names.iter().map(|s| Setup::parse(s)).collect()
}

/// Seed Fig. 6: RTT versus packet size.
pub fn rtt(opt: &Options) -> anyhow::Result<Experiment> {
    let mut tb = Testbed::new(LinkShape {
        rate_mbit: Some(10),
        ..LinkShape::default()
    })?;
    let sizes = [60usize, 200, 400, 600, 800, 1000, 1200, 1400];
    let list = setups(&[
        "direct", "plain", "none", "null", "lz4", "dumb", "zstd", "encrypt",
    ]);
    let mut samples: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); sizes.len()]; list.len()];
    for _ in 0..opt.runs {
        for (i, s) in list.iter().enumerate() {
            apply(&mut tb, &opt.binary, s)?;
            for (j, &size) in sizes.iter().enumerate() {
                samples[i][j].extend(netns::ping(&tb, size, opt.pings, "0.05")?);
            }
        }
    }
    let mut points = Vec::new();
    for (i, s) in list.iter().enumerate() {
        for (j, size) in sizes.iter().enumerate() {
            points.push(Point::of(s.name(), size.to_string(), &samples[i][j]));
        }
    }
    let mut notes = tb.notes.clone();
    notes.push("tc tbf limits the rate but adds no serialisation delay to sparse pings".into());
    Ok(Experiment {
        name: "ping RTT vs IP packet size, 10 Mbit/s link (seed Fig. 6)".into(),
        unit: "ms".into(),
        notes,
        points,
    })
}

fn throughput_table(
    tb: &mut Testbed,
    opt: &Options,
    list: &[Setup],
    payloads: &[Payload],
) -> anyhow::Result<Vec<Point>> {
    let mut samples = vec![vec![Vec::new(); payloads.len()]; list.len()];
    for _ in 0..opt.runs {
        for (i, s) in list.iter().enumerate() {
            apply(tb, &opt.binary, s)?;
            for (j, &p) in payloads.iter().enumerate() {
                samples[i][j].push(netns::iperf3(tb, opt.seconds, p)?);
            }
        }
    }
    let mut points = Vec::new();
    for (i, s) in list.iter().enumerate() {
        for (j, p) in payloads.iter().enumerate() {
            let x = match p {
                Payload::Text => "text",
                Payload::Random => "random",
            };
            points.push(Point::of(s.name(), x, &samples[i][j]));
        }
    }
    Ok(points)
}

/// Seed Table 1: throughput over the 10 Mbit/s link.
pub fn throughput(opt: &Options) -> anyhow::Result<Experiment> {
    let mut tb = Testbed::new(LinkShape {
        rate_mbit: Some(10),
        ..LinkShape::default()
    })?;
    let list = setups(&[
        "direct",
        "plain",
        "none",
        "null",
        "lz4",
        "zstd",
        "zstd:9",
        "zstd:19",
        "zstd-stream",
        "dumb",
        "encrypt",
        "lz4,encrypt",
        "zstd-stream,encrypt",
    ]);
    let points = throughput_table(&mut tb, opt, &list, &[Payload::Text, Payload::Random])?;
    Ok(Experiment {
        name: "iperf3 TCP throughput, 10 Mbit/s link (seed Table 1)".into(),
        unit: "Mbit/s".into(),
        notes: tb.notes.clone(),
        points,
    })
}

/// FEC goodput under random loss.
pub fn fec(opt: &Options) -> anyhow::Result<Experiment> {
    let mut points = Vec::new();
    let mut notes = Vec::new();
    for loss in [1.0, 5.0] {
        let mut tb = Testbed::new(LinkShape {
            rate_mbit: Some(10),
            loss_pct: Some(loss),
            ..LinkShape::default()
        })?;
        let list = setups(&["none", "fec:4:1", "fec:8:2", "fec:4:2"]);
        for mut p in throughput_table(&mut tb, opt, &list, &[Payload::Random])? {
            p.x = format!("{loss}% loss, TCP Mbit/s");
            points.push(p);
        }
        // Residual loss as an application without retransmission sees it: the share of
        // 200 pings (each crossing the link twice) answered.
        let mut answered = vec![Vec::new(); list.len()];
        for _ in 0..opt.runs {
            for (i, s) in list.iter().enumerate() {
                apply(&mut tb, &opt.binary, s)?;
                let n = netns::ping(&tb, 500, 200, "0.01")?.len();
                answered[i].push(n as f64 / 2.0);
            }
        }
        for (i, s) in list.iter().enumerate() {
            points.push(Point::of(
                s.name(),
                format!("{loss}% loss, pings answered %"),
                &answered[i],
            ));
        }
        notes.extend(tb.notes.clone());
    }
    Ok(Experiment {
        name: "iperf3 TCP goodput with random loss on the 10 Mbit/s link (each direction)".into(),
        unit: "Mbit/s".into(),
        notes,
        points,
    })
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Parallel TCP flows of the second throughput column of `compare`.
const COMPARE_FLOWS: u32 = 4;
/// Its column name.
const FLOWS_COLUMN: &str = "random, 4 flows";

/// Direct veth, plain TUN forwarder, null and encryption with offloads on and off, and
/// wireguard-go, interleaved in one run on the unshaped link.
pub fn compare(opt: &Options) -> anyhow::Result<Experiment> {
    let load_before = load_average();
    let mut tb = Testbed::new(LinkShape::default())?;
    let mut names = vec![
        "direct",
        "plain",
        "plain/2q",
        "null",
        "null/nooffload",
        "null/2q",
        "encrypt",
        "encrypt/nooffload",
        "encrypt/2q",
    ];
    let mut notes = Vec::new();
    match netns::unavailable(&["wireguard-go", "wg"]) {
        None => names.push("wireguard-go"),
        Some(why) => notes.push(format!(
            "wireguard-go left out: {why} (Debian: apt-get install wireguard-go wireguard-tools)"
        )),
    }
    let list = setups(&names);
    let mut points = throughput_table(&mut tb, opt, &list, &[Payload::Random])?;
    // One TCP flow stays on one lane; four spread over the lanes (by the kernel's flow hash).
    let mut rtt = vec![Vec::new(); list.len()];
    let mut flows = vec![Vec::new(); list.len()];
    for _ in 0..opt.runs {
        for (i, s) in list.iter().enumerate() {
            apply(&mut tb, &opt.binary, s)?;
            rtt[i].extend(netns::ping(&tb, 1000, opt.pings, "0.05")?);
            flows[i].push(netns::iperf3_flows(
                &mut tb,
                opt.seconds,
                Payload::Random,
                COMPARE_FLOWS,
            )?);
        }
    }
    for (i, s) in list.iter().enumerate() {
        points.push(Point::of(s.name(), FLOWS_COLUMN, &flows[i]));
    }
    for (i, s) in list.iter().enumerate() {
        points.push(Point::of(s.name(), "rtt 1000 B (ms)", &rtt[i]));
    }
    let get = |setup: &str, x: &str| {
        points
            .iter()
            .find(|p| p.setup == setup && p.x == x)
            .map_or(f64::NAN, |p| p.median)
    };
    for (a, b) in [
        ("null", "direct"),
        ("encrypt", "direct"),
        ("null", "plain"),
        ("null", "null/nooffload"),
        ("encrypt", "encrypt/nooffload"),
        ("plain/2q", "plain"),
        ("null/2q", "null"),
        ("encrypt/2q", "encrypt"),
        ("encrypt", "wireguard-go"),
        ("encrypt/2q", "wireguard-go"),
    ] {
        if names.contains(&b) {
            notes.push(format!(
                "throughput ratio {a} / {b} = {:.3}",
                get(a, "random") / get(b, "random")
            ));
        }
    }
    for (a, b) in [
        ("plain/2q", "plain"),
        ("null/2q", "null"),
        ("encrypt/2q", "encrypt"),
        ("encrypt/2q", "wireguard-go"),
    ] {
        if names.contains(&b) {
            notes.push(format!(
                "throughput ratio with {COMPARE_FLOWS} flows {a} / {b} = {:.3}",
                get(a, FLOWS_COLUMN) / get(b, FLOWS_COLUMN)
            ));
        }
    }
    for (a, b) in [("null", "plain"), ("encrypt", "wireguard-go")] {
        if names.contains(&b) {
            notes.push(format!(
                "RTT ratio {a} / {b} = {:.3}",
                get(a, "rtt 1000 B (ms)") / get(b, "rtt 1000 B (ms)")
            ));
        }
    }
    notes.push(format!(
        "load average (1, 5, 15 min): {load_before} at the start, {} at the end; {} CPUs \
         (a lane is two threads per gateway: with 2 CPUs shared by both gateways, iperf3 and \
         the kernel, more lanes have no idle core to use)",
        load_average(),
        std::thread::available_parallelism().map_or(0, usize::from)
    ));
    Ok(Experiment {
        name: "unshaped link, interleaved: direct veth, plain TUN forwarder, null and encrypt \
               with offloads on and off (/nooffload) and with two lanes (/2q), wireguard-go \
               (throughput Mbit/s of one TCP flow and of 4, random data)"
            .into(),
        unit: "Mbit/s or ms".into(),
        notes,
        points,
    })
}

/// Offered UDP rates of `fec-rate`, Mbit/s of UDP payload (as iperf3's `-b`): issue #19's
/// gigabit, and a rate the gateways are expected to carry on a small machine, so residual loss
/// after FEC can be told apart from loss to overload.
const FEC_RATE_OFFERED_MBIT: [u32; 2] = [1000, 250];
/// UDP payload per datagram in `fec-rate`: IP packets of 1328 bytes, under the tunnel MTU
/// (1400) with room for the encapsulation and FEC headers.
const FEC_RATE_UDP_LEN: usize = 1300;
/// Random loss on the link in `fec-rate`, percent, in each direction (issue #19).
const FEC_RATE_LOSS_PCT: f64 = 5.0;
/// Datagrams per GSO run of `fec-rate`'s load: 41,600 bytes, 333 µs of a gigabit, so the
/// sender wakes about 3,000 times a second at the top rate and its bursts stay short.
const FEC_RATE_RUN: usize = 32;
/// How long `fec-rate`'s receiver keeps reading after the sender finished: what the gateways
/// still queue arrives well within it.
const FEC_RATE_DRAIN: Duration = Duration::from_millis(500);
/// How far `fec-rate`'s sender may fall behind its schedule and catch up ([`load::Load::max_lag`]):
/// 10 ms, about 30 runs sent back to back after a stall at a gigabit.
const FEC_RATE_MAX_LAG: Duration = Duration::from_millis(10);

/// The load of one `fec-rate` test: `mbit` Mbit/s of UDP payload for `secs` seconds.
fn fec_rate_load(secs: u32, mbit: u32) -> load::Load {
    load::Load {
        payload_mbit: f64::from(mbit),
        len: FEC_RATE_UDP_LEN,
        duration: Duration::from_secs(u64::from(secs)),
        run: FEC_RATE_RUN,
        drain: FEC_RATE_DRAIN,
        max_lag: FEC_RATE_MAX_LAG,
    }
}

/// Datagrams the UDP sockets of namespace `i` dropped for a full receive buffer so far
/// (Linux's `RcvbufErrors` in `/proc/net/snmp`).
fn udp_receive_buffer_errors(tb: &Testbed, i: usize) -> Option<f64> {
    let out = tb.exec(i, &["cat", "/proc/net/snmp"]).ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut udp = text.lines().filter(|l| l.starts_with("Udp: "));
    let (names, values) = (udp.next()?, udp.next()?);
    let at = names.split_whitespace().position(|n| n == "RcvbufErrors")?;
    values.split_whitespace().nth(at)?.parse().ok()
}

/// iperf3's JSON report of a `secs`-second TCP test from host A to host B.
fn iperf3_json(tb: &mut Testbed, secs: u32) -> anyhow::Result<serde_json::Value> {
    if tb.pid("iperf3-server").is_none() {
        tb.spawn(
            "iperf3-server",
            netns::HB,
            &["iperf3", "-s", "-B", netns::HOST_B],
        )?;
        std::thread::sleep(Duration::from_millis(300));
    }
    let t = secs.to_string();
    let argv = ["iperf3", "-c", netns::HOST_B, "-t", &t, "-J"];
    let mut tries = 0;
    loop {
        let out = tb.exec_for(netns::HA, &argv, Duration::from_secs(u64::from(secs) + 30))?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .with_context(|| format!("iperf3 output: {}", String::from_utf8_lossy(&out.stderr)))?;
        match v.get("error").and_then(|e| e.as_str()) {
            // The server can still be closing the previous test.
            Some(e) if e.contains("busy") && tries < 10 => {
                tries += 1;
                std::thread::sleep(Duration::from_secs(1));
            }
            Some(e) => bail!("iperf3: {e}"),
            None => return Ok(v),
        }
    }
}

/// A number in an iperf3 report.
fn report_number(v: &serde_json::Value, path: &[&str]) -> anyhow::Result<f64> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(serde_json::Value::as_f64)
        .with_context(|| format!("iperf3 reported no {}", path.join(".")))
}

/// TCP segment payload over the test bed's tunnel: MTU 1400 less IPv4, TCP and the timestamp
/// option.
const TUNNEL_MSS: f64 = 1348.0;

/// A `secs`-second iperf3 TCP transfer of random data from host A to host B: receiver-side
/// Mbit/s, and the sender's retransmitted segments per 100 sent (bytes over [`TUNNEL_MSS`]).
fn iperf3_tcp(tb: &mut Testbed, secs: u32) -> anyhow::Result<(f64, f64)> {
    let v = iperf3_json(tb, secs)?;
    let n = |path: &[&str]| report_number(&v["end"], path);
    let segments = n(&["sum_sent", "bytes"])? / TUNNEL_MSS;
    Ok((
        n(&["sum_received", "bits_per_second"])? / 1e6,
        100.0 * n(&["sum_sent", "retransmits"])? / segments,
    ))
}

/// A gateway counter from `stats` (`path`: keys into its JSON), if the gateway answers.
fn gateway_counter(tb: &Testbed, g: usize, path: &[&str]) -> Option<f64> {
    let v = tb.manage(g, "stats", serde_json::Value::Null).ok()?;
    path.iter().try_fold(&v, |v, k| v.get(k))?.as_f64()
}

/// Issue #19's FEC figure: on the unshaped link with 5 % random loss each way, FEC 10:3
/// (with and without interleaving) against no FEC, offloads on: our sequenced UDP load
/// ([`load`]) at an offered gigabit (and a lower rate), received Mbit/s and residual loss, and
/// iperf3 TCP goodput.
pub fn fec_rate(opt: &Options) -> anyhow::Result<Experiment> {
    let load_before = load_average();
    let mut tb = Testbed::new(LinkShape {
        loss_pct: Some(FEC_RATE_LOSS_PCT),
        ..LinkShape::default()
    })?;
    let list = setups(&["direct", "none", "fec:10:3", "fec:10:3:4"]);
    const PER_RATE: [&str; 11] = [
        "sent Mbit/s",
        "received Mbit/s",
        "residual loss %",
        "lost before gateway A %",
        "link loss A→B %",
        "FEC rebuilt %",
        "lost after gateway B %",
        "host B socket drops %",
        "gateway CPU µs/pkt",
        "load sender CPU µs/pkt",
        "load receiver CPU µs/pkt",
    ];
    let mut columns: Vec<String> = Vec::new();
    for mbit in FEC_RATE_OFFERED_MBIT {
        columns.extend(PER_RATE.iter().map(|c| format!("UDP {mbit}M: {c}")));
    }
    columns.push("TCP Mbit/s".into());
    columns.push("TCP retransmits %".into());
    let mut samples = vec![vec![Vec::new(); columns.len()]; list.len()];
    // Gateway counters around a test: A's datagrams out and packets in from its tunnel
    // device, B's datagrams in, FEC rebuilds and packets out to its tunnel device, and both
    // gateways' CPU seconds.
    let counters = |tb: &Testbed| -> Option<[f64; 6]> {
        Some([
            gateway_counter(tb, GA, &["udp_out"])?,
            gateway_counter(tb, GA, &["tun_in"])?,
            gateway_counter(tb, GB, &["udp_in"])?,
            gateway_counter(tb, GB, &["boosters", "fec", "recovered"])?,
            gateway_counter(tb, GB, &["tun_out"])?,
            gateways_cpu(tb),
        ])
    };
    // Datagrams the load's sender could not send, the receiver got twice, or could not read
    // a sequence number from: none expected, so only a note when they occur.
    let (mut failed, mut duplicates, mut foreign) = (0, 0, 0);
    let mut receive_buffer = 0;
    for _ in 0..opt.runs {
        for (i, s) in list.iter().enumerate() {
            apply(&mut tb, &opt.binary, s)?;
            for (r, mbit) in FEC_RATE_OFFERED_MBIT.into_iter().enumerate() {
                let col = &mut samples[i][r * PER_RATE.len()..];
                let before = counters(&tb);
                let socket_before = udp_receive_buffer_errors(&tb, netns::HB);
                let u = load::run(&tb, fec_rate_load(opt.seconds, mbit))?;
                let after = counters(&tb);
                let socket_after = udp_receive_buffer_errors(&tb, netns::HB);
                failed += u.sent.failed;
                duplicates += u.received.duplicates;
                foreign += u.received.foreign;
                receive_buffer = u.received.receive_buffer;
                let (sent_packets, received_packets) =
                    (u.sent.datagrams as f64, u.received.unique as f64);
                col[0].push(u.sent_mbit());
                col[1].push(u.received_mbit());
                col[2].push(u.residual_loss_pct());
                col[9].push(u.sender_cpu_us());
                col[10].push(u.receiver_cpu_us());
                // Only with gateways: where the datagrams were lost, and what FEC did.
                if let (Some(b), Some(a)) = (before, after) {
                    let [udp_out, tun_in, udp_in, rebuilt, tun_out, cpu] =
                        std::array::from_fn(|k| a[k] - b[k]);
                    col[3].push(100.0 * (sent_packets - tun_in) / sent_packets);
                    col[4].push(100.0 * (udp_out - udp_in) / udp_out);
                    col[5].push(100.0 * rebuilt / udp_in);
                    col[6].push(100.0 * (tun_out - received_packets) / tun_out);
                    if let (Some(b), Some(a)) = (socket_before, socket_after) {
                        col[7].push(100.0 * (a - b) / tun_out);
                    }
                    col[8].push(cpu * 1e6 / tun_in);
                }
            }
            let (mbit, retransmits) = iperf3_tcp(&mut tb, opt.seconds)?;
            let tcp = columns.len() - 2;
            samples[i][tcp].push(mbit);
            samples[i][tcp + 1].push(retransmits);
        }
    }
    tb.stop_gateways();
    let mut points = Vec::new();
    for (i, s) in list.iter().enumerate() {
        for (j, c) in columns.iter().enumerate() {
            points.push(Point::of(s.name(), c.as_str(), &samples[i][j]));
        }
    }
    let mut notes = tb.notes.clone();
    notes.push(format!(
        "{FEC_RATE_LOSS_PCT} % random loss on arrival at each end of the link (nftables netdev \
         ingress, GSO runs cut to single datagrams), offloads on; UDP: pathwise's sequenced \
         load for {secs} s, from a thread in host A's namespace to one in host B's: datagrams \
         of {FEC_RATE_UDP_LEN} bytes of UDP payload (1328-byte IP packets), each numbered, \
         sent in GSO runs of {FEC_RATE_RUN} (one sendmmsg message with UDP_SEGMENT) paced by \
         sleeping between runs, so the offered rate (Mbit/s of UDP payload, like iperf3's -b) \
         holds on average while a run leaves as one burst (a sender held up catches up by at \
         most {lag} ms of its schedule, else sends less); received with UDP_GRO and recvmmsg \
         into a socket buffer of {asked} KiB (SO_RCVBUFFORCE; read back: {rcvbuf} KiB, the \
         kernel doubles it for its bookkeeping), each number marked \
         in a bitmap, until {drain} ms after the sender finished; sent Mbit/s: payload over \
         the sender's schedule; received Mbit/s: distinct payload over the receiver's first \
         to last arrival; residual loss: 100 × (sent − distinct received) / sent; lost \
         before gateway A: datagrams sent that gateway A did not read from its tunnel device \
         (the device's queue overflowed); link loss: datagrams gateway A sent that gateway B \
         did not receive (the nftables drop, and B's socket buffer); FEC rebuilt: packets \
         gateway B rebuilt per 100 datagrams it received; lost after gateway B: packets B \
         wrote to its tunnel device that the receiver did not receive; host B socket drops: \
         RcvbufErrors in host B's namespace over the packets B wrote to its tunnel device; \
         gateway CPU: both gateways' user + system time over the packets gateway A read \
         from its tunnel device; load CPU: the sender's and the receiver's thread \
         (CLOCK_THREAD_CPUTIME_ID) per datagram sent and per distinct datagram received \
         (softirq work is charged to whichever thread was running); TCP: iperf3 -t {secs}, \
         random data; TCP retransmits: segments the sender retransmitted per 100 sent \
         (bytes / 1348)",
        secs = opt.seconds,
        lag = FEC_RATE_MAX_LAG.as_millis(),
        asked = load::RECEIVE_BUFFER / 1024,
        rcvbuf = receive_buffer / 1024,
        drain = FEC_RATE_DRAIN.as_millis(),
    ));
    if failed + duplicates + foreign > 0 {
        notes.push(format!(
            "the load over all runs: {failed} datagrams the kernel refused to send, \
             {duplicates} received twice, {foreign} without a valid sequence number"
        ));
    }
    notes.push(format!(
        "load average (1, 5, 15 min): {load_before} at the start, {} at the end",
        load_average()
    ));
    Ok(Experiment {
        name: format!(
            "FEC at rate: unshaped link, {FEC_RATE_LOSS_PCT} % random loss each way, FEC 10:3 \
             with and without interleaving (issue #19)"
        ),
        unit: "as named".into(),
        notes,
        points,
    })
}

/// CPU seconds (user + system) a process has used so far, from /proc.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) in parentheses.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    Some(ticks / hz)
}

/// Both gateways' CPU seconds.
fn gateways_cpu(tb: &Testbed) -> f64 {
    [GA, GB]
        .iter()
        .filter_map(|g| tb.pid(&format!("gw{g}")).and_then(cpu_seconds))
        .sum()
}

/// Packets gateway A read from its tunnel device so far.
fn packets_in(tb: &Testbed) -> f64 {
    tb.manage(GA, "stats", serde_json::Value::Null)
        .ok()
        .and_then(|v| v["tun_in"].as_f64())
        .unwrap_or(f64::NAN)
}

/// The adaptive configuration of the congestion-aware mode. The peer accepts every chain the
/// adaptive policy can make without waiting (docs/booster-wire.md, "Admission"), so the grace
/// period before a change is sent is shortened to 500 ms (default 2 s) here.
const CONGESTION_AWARE: &str = "chain_grace_ms = 500\n[adaptive]\nenabled = true\ncompress = \"zstd\"\nfec_on = 2.0\n\
                                compress_when = \"congested\"\ninterval_ms = 300\n";

/// Congestion-aware compression against never and always (seed §7).
pub fn adaptive(opt: &Options) -> anyhow::Result<Experiment> {
    let mut tb = Testbed::new(LinkShape {
        rate_mbit: Some(10),
        ..LinkShape::default()
    })?;
    let modes: [(&str, &[&str], &str); 3] = [
        ("never", &[], ""),
        ("always (zstd)", &["zstd"], ""),
        ("congestion-aware (zstd)", &[], CONGESTION_AWARE),
    ];
    let columns = [
        "idle RTT ms",
        "text Mbit/s",
        "text RTT ms",
        "text µs/pkt",
        "random Mbit/s",
        "random RTT ms",
        "random µs/pkt",
        "switches",
    ];
    let mut samples = vec![vec![Vec::new(); columns.len()]; modes.len()];
    for _ in 0..opt.runs {
        for (i, (_, chain, extra)) in modes.iter().enumerate() {
            tb.stop_gateways();
            tb.route_tun(netns::TUN)?;
            tb.start_gateways(&opt.binary, chain, false, extra)?;
            let _ = netns::ping(&tb, 100, 2, "0.1");
            // Light traffic: pings on the empty link.
            samples[i][0].push(median(&netns::ping(&tb, 1000, 15, "0.2")?));
            for (j, payload) in [(1, Payload::Text), (4, Payload::Random)] {
                // Pings beside the transfer: the delay its queue adds.
                let deadline = opt.seconds.to_string();
                tb.spawn(
                    "ping-load",
                    netns::HA,
                    &[
                        "ping",
                        "-n",
                        "-i",
                        "0.2",
                        "-w",
                        &deadline,
                        "-s",
                        "972",
                        netns::HOST_B,
                    ],
                )?;
                let (cpu, pkts) = (gateways_cpu(&tb), packets_in(&tb));
                samples[i][j].push(netns::iperf3(&mut tb, opt.seconds, payload)?);
                let (cpu, pkts) = (gateways_cpu(&tb) - cpu, packets_in(&tb) - pkts);
                samples[i][j + 2].push(cpu * 1e6 / pkts);
                // ping stops at its deadline, about when iperf3 does.
                let limit = std::time::Instant::now() + Duration::from_secs(5);
                while tb
                    .log("ping-load")
                    .lines()
                    .all(|l| !l.contains("packet loss"))
                    && std::time::Instant::now() < limit
                {
                    std::thread::sleep(Duration::from_millis(100));
                }
                let log = tb.log("ping-load");
                tb.kill("ping-load");
                let rtts: Vec<f64> = log
                    .lines()
                    .filter_map(|l| l.split("time=").nth(1))
                    .filter_map(|t| t.split_whitespace().next()?.parse().ok())
                    .collect();
                samples[i][j + 1].push(median(&rtts));
                // Let the queue drain (and the congestion-aware mode switch off) between phases.
                std::thread::sleep(Duration::from_secs(4));
            }
            let show = tb.manage(GA, "show", serde_json::Value::Null)?;
            let st = &show["adaptive"]["state"];
            let switches = st["compress_inserts"].as_f64().unwrap_or(0.0)
                + st["compress_removals"].as_f64().unwrap_or(0.0);
            samples[i][7].push(switches);
        }
    }
    tb.stop_gateways();
    let mut points = Vec::new();
    for (i, (name, _, _)) in modes.iter().enumerate() {
        for (j, c) in columns.iter().enumerate() {
            points.push(Point::of(*name, *c, &samples[i][j]));
        }
    }
    let mut notes = tb.notes.clone();
    notes.push(
        "phases per run: 15 pings on the idle link, then a text and a random-data iperf3 \
         transfer with 1000-byte pings every 0.2 s beside it, 4 s apart; µs/pkt is both \
         gateways' CPU time (user + system, /proc) over the packets gateway A read from its \
         tunnel device; switches: compression insertions + removals by the adaptive policy; \
         the congestion-aware gateways run with chain_grace_ms = 500"
            .into(),
    );
    Ok(Experiment {
        name: "congestion-aware compression (seed §7) vs never and always, 10 Mbit/s link".into(),
        unit: "as named".into(),
        notes,
        points,
    })
}

/// Run the named experiments (comma-separated; `all` for every one).
pub fn run(which: &str, opt: &Options) -> anyhow::Result<Vec<Experiment>> {
    const NAMES: [&str; 7] = [
        "rtt",
        "throughput",
        "fec",
        "compare",
        "adaptive",
        "fec-rate",
        "cpu",
    ];
    let wanted: Vec<&str> = which.split(',').map(str::trim).collect();
    if let Some(bad) = wanted.iter().find(|w| **w != "all" && !NAMES.contains(w)) {
        bail!(
            "unknown experiment {bad:?} (rtt, throughput, fec, compare, adaptive, fec-rate, cpu, \
             all)"
        );
    }
    let all = wanted.contains(&"all");
    // Every experiment but `cpu` (in memory) runs in namespaces. wireguard-go is optional:
    // `compare` leaves it out with a note when it is missing.
    if (all || wanted.iter().any(|w| *w != "cpu"))
        && let Some(why) = netns::unavailable(&["ping", "iperf3"])
    {
        bail!("cannot run the booster benchmarks here: {why}");
    }
    let mut out = Vec::new();
    for name in NAMES {
        if all || wanted.contains(&name) {
            eprintln!("running {name} …");
            out.push(match name {
                "rtt" => rtt(opt)?,
                "throughput" => throughput(opt)?,
                "fec" => fec(opt)?,
                "adaptive" => adaptive(opt)?,
                "fec-rate" => fec_rate(opt)?,
                "cpu" => super::cpu::cpu(opt)?,
                _ => compare(opt)?,
            });
        }
    }
    Ok(out)
}

/// Render experiments as tables: one row per setup, one column per x.
pub fn render(exps: &[Experiment]) -> String {
    let mut s = String::new();
    for e in exps {
        let _ = writeln!(s, "\n{} — median, {}", e.name, e.unit);
        let mut xs: Vec<&str> = Vec::new();
        let mut rows: Vec<&str> = Vec::new();
        for p in &e.points {
            if !xs.contains(&p.x.as_str()) {
                xs.push(&p.x);
            }
            if !rows.contains(&p.setup.as_str()) {
                rows.push(&p.setup);
            }
        }
        let _ = write!(s, "| setup |");
        for x in &xs {
            let _ = write!(s, " {x} |");
        }
        let _ = write!(s, "\n|---|");
        for _ in &xs {
            let _ = write!(s, "---:|");
        }
        s.push('\n');
        for r in rows {
            let _ = write!(s, "| {r} |");
            for x in &xs {
                let v = e
                    .points
                    .iter()
                    .find(|p| p.setup == r && p.x == *x)
                    .map_or(f64::NAN, |p| p.median);
                let _ = write!(s, " {v:.3} |");
            }
            s.push('\n');
        }
        for n in &e.notes {
            let _ = writeln!(s, "note: {n}");
        }
    }
    s
}

/// Seed 003 Table 1 (netperf over 10 Mbit/s Ethernet, a text file), by our setup name: no
/// support installed = `direct`, support with no booster = `none`, the Lempel-Ziv booster =
/// `lz4`, Dumb-Lempel-Ziv = `dumb`, the Lucifer crypto booster = `encrypt`.
const SEED_TABLE_1: [(&str, f64); 6] = [
    ("direct", 7.21),
    ("none", 7.22),
    ("null", 7.15),
    ("lz4", 9.42),
    ("dumb", 5.22),
    ("encrypt", 0.34),
];

/// `--plot`: seed 003 Fig. 6 (ping RTT against IP packet size, one series per setup) and
/// Table 1 (throughput per setup, text and random data, the seed's figures beside them) from
/// the `rtt` and `throughput` experiments that ran; `fec` and `compare` have no seed figure.
pub fn figures(exps: &[Experiment]) -> Vec<Figure> {
    // Setups in the order they were measured.
    let setups = |e: &Experiment| {
        let mut names: Vec<String> = Vec::new();
        for p in &e.points {
            if !names.contains(&p.setup) {
                names.push(p.setup.clone());
            }
        }
        names
    };
    let mut figs = Vec::new();
    for e in exps {
        if e.name.contains("seed Fig. 6") {
            let mut f = Figure::new(
                "Boosters: ping RTT against IP packet size, 10 Mbit/s link (seed 003 Fig. 6)",
                Axis::linear("IP packet size, bytes"),
                Axis::log("RTT, ms (median, log)"),
            );
            for setup in setups(e) {
                let pts: Vec<(f64, f64)> = e
                    .points
                    .iter()
                    .filter(|p| p.setup == setup && p.median.is_finite() && p.median > 0.0)
                    .filter_map(|p| Some((p.x.parse::<f64>().ok()?, p.median)))
                    .collect();
                if !pts.is_empty() {
                    f = f.with(Series::measured(setup, pts));
                }
            }
            if !f.series.is_empty() {
                figs.push(f);
            }
        } else if e.name.contains("seed Table 1") {
            let names = setups(e);
            let mut f = Figure::new(
                "Boosters: TCP throughput per setup, 10 Mbit/s link (seed 003 Table 1)",
                Axis::categories("setup (chain of boosters)", names.clone()),
                Axis::linear("throughput, Mbit/s (median)"),
            );
            for payload in ["text", "random"] {
                let pts: Vec<(f64, f64)> = e
                    .points
                    .iter()
                    .filter(|p| p.x == payload && p.median.is_finite())
                    .filter_map(|p| {
                        let i = names.iter().position(|n| *n == p.setup)?;
                        Some((i as f64, p.median))
                    })
                    .collect();
                if !pts.is_empty() {
                    f = f.with(Series::measured(format!("iperf3, {payload} data"), pts));
                }
            }
            let seed: Vec<(f64, f64)> = SEED_TABLE_1
                .iter()
                .filter_map(|(setup, mbit)| {
                    let i = names.iter().position(|n| n == setup)?;
                    Some((i as f64, *mbit))
                })
                .collect();
            if !seed.is_empty() {
                f = f.with(Series::reference(
                    "seed 003 Table 1 (netperf, text file; LZ as lz4, Lucifer as encrypt)",
                    seed,
                ));
            }
            if !f.series.is_empty() {
                figs.push(f.legend(Legend::LowerLeft));
            }
        }
    }
    figs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::plot::{render, tests::texts};

    fn point(setup: &str, x: &str, median: f64) -> Point {
        Point {
            setup: setup.into(),
            x: x.into(),
            median,
            samples: vec![median],
        }
    }

    #[test]
    fn setup_names_parse_and_print_with_lanes_and_offloads() {
        for name in [
            "direct",
            "plain",
            "plain/2q",
            "none/nooffload",
            "null/2q",
            "encrypt/4q/nooffload",
            "lz4,encrypt",
            "wireguard-go",
        ] {
            assert_eq!(Setup::parse(name).name(), name);
        }
        assert_eq!(
            Setup::parse("encrypt/2q"),
            Setup::Chain(vec!["encrypt".into()], true, 2)
        );
        assert_eq!(Setup::parse("plain/nooffload"), Setup::Plain(false, 1));
        assert_eq!(
            gateway_lines(false, 2),
            format!("{OFFLOADS_OFF}\nqueues = 2\n")
        );
        assert_eq!(gateway_lines(true, 1), "");
    }

    #[test]
    fn figures_draw_rtt_and_throughput_with_the_seed_table() {
        let rtt = Experiment {
            name: "ping RTT vs IP packet size, 10 Mbit/s link (seed Fig. 6)".into(),
            unit: "ms".into(),
            notes: vec![],
            points: vec![
                point("direct", "60", 0.05),
                point("direct", "1400", 0.07),
                point("lz4", "60", 0.2),
                point("lz4", "1400", f64::NAN), // no reply: left out
            ],
        };
        let tput = Experiment {
            name: "iperf3 TCP throughput, 10 Mbit/s link (seed Table 1)".into(),
            unit: "Mbit/s".into(),
            notes: vec![],
            points: vec![
                point("direct", "text", 9.5),
                point("direct", "random", 9.5),
                point("lz4", "text", 30.0),
                point("lz4", "random", 9.1),
            ],
        };
        let fec = Experiment {
            name: "iperf3 TCP goodput with random loss".into(),
            unit: "Mbit/s".into(),
            notes: vec![],
            points: vec![point("none", "1% loss", 5.0)],
        };
        let figs = figures(&[rtt, tput, fec]);
        assert_eq!(figs.len(), 2, "fec has no seed figure");
        assert_eq!(figs[0].series[1].points, vec![(60.0, 0.2)]);
        assert_eq!(figs[1].x.categories, vec!["direct", "lz4"]);
        let seed = figs[1].series.iter().find(|s| s.reference).unwrap();
        assert_eq!(seed.points, vec![(0.0, 7.21), (1.0, 9.42)]);
        let t = texts(&render(&figs).unwrap().0);
        for want in [
            "direct",
            "lz4",
            "iperf3, text data",
            "IP packet size, bytes",
        ] {
            assert!(t.iter().any(|s| s == want), "{want} missing");
        }
    }
}
