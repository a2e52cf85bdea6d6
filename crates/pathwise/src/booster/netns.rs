//! The two-gateway test bed in Linux network namespaces, for the real-network tests
//! (`tests/booster_netns.rs`) and `pathwise bench booster`.
//!
//! ```text
//!  host A            gateway A                     gateway B            host B
//!  10.77.1.2 ── 10.77.1.1 [pwb0] 192.168.77.1 ══ 192.168.77.2 [pwb0] 10.77.2.1 ── 10.77.2.2
//!                                 link: rate (tbf, or netem with delay), loss on arrival (nftables)
//! ```
//!
//! Four namespaces (a [`Lab`]: `pw-<pid>-<n>-{ha,ga,gb,hb}`), joined by veth pairs created
//! directly inside them (nothing is added to the caller's namespace), private addresses only. Each
//! gateway namespace forwards IP and has a persistent TUN device `pwb0` (MTU 1400) with a route
//! to the far host network through it; [`Testbed::route_direct`] routes over the link instead
//! (the "no gateway" baseline). Dropping the [`Testbed`] kills every process it started and
//! deletes the namespaces, which removes their devices. Every command runs with a time limit.

use crate::netns::Lab;
use anyhow::{Context as _, bail};
use std::io::Write as _;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Host A.
pub const HA: usize = 0;
/// Gateway A.
pub const GA: usize = 1;
/// Gateway B.
pub const GB: usize = 2;
/// Host B.
pub const HB: usize = 3;
/// Host B's address, the target of pings and iperf3.
pub const HOST_B: &str = "10.77.2.2";
/// The TUN device name in each gateway namespace.
pub const TUN: &str = "pwb0";
/// Pre-shared key used by the test bed's gateways.
pub const PSK: &str = "5057b00573b00573b00573b00573b00573b00573b00573b00573b00573b00573";

/// Why the test bed cannot run here, if it cannot (not root, a tool or TUN missing).
pub fn unavailable(tools: &[&str]) -> Option<String> {
    let mut all = vec!["tc"];
    all.extend_from_slice(tools);
    crate::netns::unavailable(&all)
        .or_else(|| (!Path::new("/dev/net/tun").exists()).then(|| "/dev/net/tun is missing".into()))
}

pub use crate::netns::run_limited;

/// Shaping of the gateway-to-gateway link (both directions).
#[derive(Debug, Clone, Copy, Default)]
pub struct LinkShape {
    /// Rate limit in Mbit/s (tc tbf); none: veth speed.
    pub rate_mbit: Option<u32>,
    /// Random loss in percent: each IP packet arriving over the link, datagram by datagram,
    /// unseen by the sender ([`Testbed::shape`]).
    pub loss_pct: Option<f64>,
    /// One-way delay in ms (needs sch_netem; skipped with a note when the kernel lacks it).
    pub delay_ms: Option<u32>,
}

/// The four namespaces of the test bed ([`Lab`]: commands, processes, logs, removal on drop)
/// and what the booster tests add to them.
#[derive(Debug)]
pub struct Testbed {
    lab: Lab,
    /// Notes about shaping that could not be applied.
    pub notes: Vec<String>,
    /// Whether the gateways' TUN devices are made with `multi_queue` ([`Testbed::tun_multi_queue`]).
    multi_queue: bool,
}

impl Deref for Testbed {
    type Target = Lab;
    fn deref(&self) -> &Lab {
        &self.lab
    }
}

impl DerefMut for Testbed {
    fn deref_mut(&mut self) -> &mut Lab {
        &mut self.lab
    }
}

impl Testbed {
    /// Build the namespaces, links, addresses, TUN devices and routes through them.
    pub fn new(shape: LinkShape) -> anyhow::Result<Testbed> {
        let mut tb = Testbed {
            lab: Lab::new(&["ha", "ga", "gb", "hb"])?,
            notes: Vec::new(),
            multi_queue: false,
        };
        tb.link((HA, "ha0", "10.77.1.2/24"), (GA, "ga0", "10.77.1.1/24"))?;
        tb.link(
            (GA, "gl0", "192.168.77.1/24"),
            (GB, "gl1", "192.168.77.2/24"),
        )?;
        tb.link((GB, "gb0", "10.77.2.1/24"), (HB, "hb0", "10.77.2.2/24"))?;
        tb.exec_ok(HA, &["ip", "route", "add", "default", "via", "10.77.1.1"])?;
        tb.exec_ok(HB, &["ip", "route", "add", "default", "via", "10.77.2.1"])?;
        for g in [GA, GB] {
            tb.forward(g)?;
            tb.add_tun(g)?;
        }
        tb.route_tun(TUN)?;
        tb.shape(shape)?;
        Ok(tb)
    }

    /// Make the persistent TUN device of gateway namespace `g`.
    fn add_tun(&self, g: usize) -> anyhow::Result<()> {
        let mut argv = vec!["ip", "tuntap", "add", "dev", TUN, "mode", "tun"];
        if self.multi_queue {
            argv.push("multi_queue");
        }
        self.exec_ok(g, &argv)?;
        // The lab tunnels IPv4 only. Without this the kernel sends IPv6 router and
        // multicast listener solicitations into the TUN device; no policy covers them, so
        // the peer refuses them (counted) and the tests could not expect zero drops.
        let disable_ipv6 = format!("net.ipv6.conf.{TUN}.disable_ipv6=1");
        let _ = self.exec(g, &["sysctl", "-q", "-w", &disable_ipv6]);
        self.exec_ok(g, &["ip", "link", "set", TUN, "up", "mtu", "1400"])?;
        Ok(())
    }

    /// Make both gateways' TUN devices again with `multi_queue` if `on` (what a gateway with
    /// `queues` above 1 needs; the kernel refuses to attach more than one queue to a device
    /// made without it, and a single-queue gateway to one made with it), and route through
    /// them. Stops the gateways; nothing happens if the devices are already so.
    pub fn tun_multi_queue(&mut self, on: bool) -> anyhow::Result<()> {
        if self.multi_queue == on {
            return Ok(());
        }
        self.stop_gateways();
        for g in [GA, GB] {
            // `ip tuntap del` attaches to the device to delete it, so it must name the
            // multi-queue flag the device has.
            let mut del = vec!["ip", "tuntap", "del", "dev", TUN, "mode", "tun"];
            if self.multi_queue {
                del.push("multi_queue");
            }
            self.exec_ok(g, &del)?;
        }
        self.multi_queue = on;
        for g in [GA, GB] {
            self.add_tun(g)?;
        }
        self.route_tun(TUN)
    }

    /// Route between the host networks through device `dev` in both gateways.
    pub fn route_tun(&self, dev: &str) -> anyhow::Result<()> {
        self.exec_ok(GA, &["ip", "route", "replace", "10.77.2.0/24", "dev", dev])?;
        self.exec_ok(GB, &["ip", "route", "replace", "10.77.1.0/24", "dev", dev])?;
        Ok(())
    }

    /// Route between the host networks straight over the link (no gateway software).
    pub fn route_direct(&self) -> anyhow::Result<()> {
        self.exec_ok(
            GA,
            &[
                "ip",
                "route",
                "replace",
                "10.77.2.0/24",
                "via",
                "192.168.77.2",
            ],
        )?;
        self.exec_ok(
            GB,
            &[
                "ip",
                "route",
                "replace",
                "10.77.1.0/24",
                "via",
                "192.168.77.1",
            ],
        )?;
        Ok(())
    }

    /// Apply `shape` to both ends of the link, replacing earlier shaping.
    ///
    /// Rate and delay shape each end's egress (netem when delay is asked and the kernel has
    /// it, else tbf). Loss is applied where a lossy wire loses packets: on arrival, in an
    /// nftables `netdev` ingress hook of the receiving end, datagram by datagram. Two things
    /// a drop on the sender's side got wrong, and which made the gateway see less loss with
    /// its offloads on (issue #19): a drop in the sender's postrouting hook fails its
    /// `sendmmsg` with `EPERM`, and the sender, as sendmmsg(2) advises, sends that message
    /// again, so the loss never happened; and a UDP GSO message crosses a veth as one
    /// buffer, so any drop before the receiver's UDP layer (netem, nftables) loses the whole
    /// run of datagrams at once where a wire loses one. So with loss each end also gets
    /// `gso_max_segs 1`, which makes the kernel cut GSO messages into datagrams before the
    /// device (as for a NIC without UDP segmentation offload); the gateways' own offloads
    /// stay on.
    pub fn shape(&mut self, shape: LinkShape) -> anyhow::Result<()> {
        for (g, dev) in [(GA, "gl0"), (GB, "gl1")] {
            let _ = self.exec(g, &["tc", "qdisc", "del", "dev", dev, "root"]);
            let _ = self.exec(g, &["nft", "delete", "table", "netdev", "pwloss"]);
            let mut netem_ok = false;
            if let Some(d) = shape.delay_ms {
                let delay = format!("{d}ms");
                let mut argv = vec![
                    "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", "delay",
                    &delay,
                ];
                let rate = shape.rate_mbit.map(|r| format!("{r}mbit"));
                if let Some(r) = &rate {
                    argv.extend(["rate", r.as_str()]);
                }
                netem_ok = self.exec(g, &argv)?.status.success();
                if !netem_ok && g == GA {
                    self.notes
                        .push("delay not applied: this kernel has no sch_netem".into());
                }
            }
            if !netem_ok && let Some(r) = shape.rate_mbit {
                let rate = format!("{r}mbit");
                self.exec_ok(
                    g,
                    &[
                        "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", &rate, "burst",
                        "32kbit", "latency", "100ms",
                    ],
                )?;
            }
            // GSO_MAX_SEGS, the kernel's default, when the link is not lossy.
            let segs = if shape.loss_pct.is_some() {
                "1"
            } else {
                "65535"
            };
            self.exec_ok(g, &["ip", "link", "set", "dev", dev, "gso_max_segs", segs])?;
            if let Some(l) = shape.loss_pct {
                let per_mille = ((l * 10.0).round() as u32).to_string();
                let script = format!(
                    "table netdev pwloss {{\n  chain arrive {{\n    type filter hook ingress device \"{dev}\" priority 0;\n    meta protocol {{ ip, ip6 }} numgen random mod 1000 < {per_mille} drop\n  }}\n}}\n"
                );
                let path = self.dir.join(format!("loss-{g}.nft"));
                std::fs::File::create(&path)?.write_all(script.as_bytes())?;
                let p = path.to_string_lossy().into_owned();
                self.exec_ok(g, &["nft", "-f", &p]).context(
                    "loss needs nftables with the netdev family (apt-get install nftables)",
                )?;
            }
        }
        Ok(())
    }

    /// Run `f` on a thread inside namespace `g` and return what it returns: sockets it opens
    /// stay in that namespace after it ends (tests use this to send and receive on the link
    /// without a helper process).
    pub fn in_namespace<T: Send + 'static>(
        &self,
        g: usize,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        self.spawn_in_namespace(g, f)?
            .join()
            .map_err(|_| anyhow::anyhow!("thread in the namespace panicked"))?
    }

    /// Start `f` on a thread inside namespace `g` and return at once: the thread's result is
    /// `f`'s, or why it could not enter the namespace. For work that runs while the caller
    /// does something else (the benchmark's load, [`super::load`]); only that thread moves
    /// into the namespace.
    pub fn spawn_in_namespace<T: Send + 'static>(
        &self,
        g: usize,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> anyhow::Result<std::thread::JoinHandle<anyhow::Result<T>>> {
        let path = Path::new("/var/run/netns").join(&self.ns[g]);
        let ns =
            std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
        Ok(std::thread::spawn(move || {
            nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET)
                .map(|()| f())
                .map_err(|e| anyhow::anyhow!("entering the namespace: {e}"))
        }))
    }

    /// Send `datagrams` to gateway A's UDP port from inside gateway B's namespace with gateway
    /// B's own source address and port (192.168.77.2:7000, which B's gateway holds), `gap`
    /// apart: a raw socket writes the UDP header itself. This is what an attacker on the link
    /// can do.
    pub fn inject(&self, datagrams: Vec<Vec<u8>>, gap: std::time::Duration) -> anyhow::Result<()> {
        self.inject_on(7000, datagrams, gap)
    }

    /// [`Testbed::inject`] to gateway A's UDP port `port` from gateway B's address and the same
    /// port: what gateway B's lane `port - 7000` sends to gateway A's (docs/booster-wire.md,
    /// "Lanes").
    pub fn inject_on(
        &self,
        port: u16,
        datagrams: Vec<Vec<u8>>,
        gap: std::time::Duration,
    ) -> anyhow::Result<()> {
        use nix::sys::socket::{
            AddressFamily, MsgFlags, SockFlag, SockProtocol, SockType, SockaddrIn, sendto, socket,
        };
        use std::os::fd::AsRawFd;
        self.in_namespace(GB, move || -> anyhow::Result<()> {
            let fd = socket(
                AddressFamily::Inet,
                SockType::Raw,
                SockFlag::empty(),
                SockProtocol::Udp,
            )?;
            let to = SockaddrIn::new(192, 168, 77, 1, port);
            for d in datagrams {
                // Source port and destination `port`, length, checksum 0 (none, allowed over
                // IPv4).
                let mut udp = [port.to_be_bytes(), port.to_be_bytes()].concat();
                udp.extend_from_slice(&((8 + d.len()) as u16).to_be_bytes());
                udp.extend_from_slice(&[0, 0]);
                udp.extend_from_slice(&d);
                sendto(fd.as_raw_fd(), &udp, &to, MsgFlags::empty())?;
                if !gap.is_zero() {
                    std::thread::sleep(gap);
                }
            }
            Ok(())
        })?
    }

    /// Write a gateway configuration for side `g` (GA or GB) with `chain` toward the far host
    /// network; returns the path. `extra` is TOML: its top-level keys (the lines before its
    /// first table header) go before the policy table, the rest after it.
    pub fn gateway_config(&self, g: usize, chain: &[&str], extra: &str) -> anyhow::Result<PathBuf> {
        let (listen, peer, far) = if g == GA {
            ("192.168.77.1:7000", "192.168.77.2:7000", "10.77.2.0/24")
        } else {
            ("192.168.77.2:7000", "192.168.77.1:7000", "10.77.1.0/24")
        };
        let chain: Vec<String> = chain.iter().map(|c| format!("{c:?}")).collect();
        let split = extra
            .lines()
            .position(|l| l.trim_start().starts_with('['))
            .unwrap_or(extra.lines().count());
        let top: Vec<&str> = extra.lines().take(split).collect();
        let tables: Vec<&str> = extra.lines().skip(split).collect();
        let text = format!(
            "tun = \"{TUN}\"\nlisten = \"{listen}\"\npeer = \"{peer}\"\nsocket = \"{}\"\npsk = \"{PSK}\"\n{}\n\n[[policy]]\nname = \"default\"\ndst = \"{far}\"\nchain = [{}]\n{}\n",
            self.socket(g).display(),
            top.join("\n"),
            chain.join(", "),
            tables.join("\n")
        );
        let path = self.dir.join(format!("gw-{g}.toml"));
        std::fs::write(&path, text)?;
        Ok(path)
    }

    /// Management socket of gateway `g`.
    pub fn socket(&self, g: usize) -> PathBuf {
        self.dir.join(format!("gw-{g}.sock"))
    }

    /// Start both gateways (binary `bin`) with `chain` on each side; waits until both answer
    /// on their management sockets.
    pub fn start_gateways(
        &mut self,
        bin: &Path,
        chain: &[&str],
        plain: bool,
        extra: &str,
    ) -> anyhow::Result<()> {
        self.stop_gateways();
        for g in [GA, GB] {
            let cfg = self.gateway_config(g, chain, extra)?;
            let bin = bin.to_string_lossy().into_owned();
            let cfg = cfg.to_string_lossy().into_owned();
            let mut argv = vec![bin.as_str(), "booster", "gateway", "--config", cfg.as_str()];
            if plain {
                argv.push("--plain");
            }
            self.spawn(&format!("gw{g}"), g, &argv)?;
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for g in [GA, GB] {
            while crate::mgmt::request(
                &self.socket(g),
                "booster gateway",
                "show",
                serde_json::Value::Null,
            )
            .is_err()
            {
                if Instant::now() > deadline {
                    bail!(
                        "gateway {g} did not come up: {}",
                        self.log(&format!("gw{g}"))
                    );
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }

    /// Stop both gateways.
    pub fn stop_gateways(&mut self) {
        self.kill(&format!("gw{GA}"));
        self.kill(&format!("gw{GB}"));
        for g in [GA, GB] {
            let _ = std::fs::remove_file(self.socket(g));
        }
    }

    /// A management request to gateway `g`.
    pub fn manage(
        &self,
        g: usize,
        verb: &str,
        args: serde_json::Value,
    ) -> anyhow::Result<serde_json::Value> {
        crate::mgmt::request(&self.socket(g), "booster gateway", verb, args)
    }
}

/// Round-trip times in ms of `count` pings of IP packets of `size` bytes from host A to host B.
pub fn ping(tb: &Testbed, size: usize, count: u32, interval: &str) -> anyhow::Result<Vec<f64>> {
    let payload = size.saturating_sub(28).to_string();
    let count_s = count.to_string();
    let out = tb.exec_for(
        HA,
        &[
            "ping", "-n", "-c", &count_s, "-i", interval, "-W", "2", "-s", &payload, HOST_B,
        ],
        Duration::from_secs(30 + u64::from(count)),
    )?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .filter_map(|t| t.split_whitespace().next()?.parse().ok())
        .collect())
}

/// What an iperf3 client sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// iperf3's default random bytes.
    Random,
    /// Text (English-like prose; the adaptive netns test sampled a per-packet LZ4 ratio of 0.56).
    Text,
}

/// Throughput of a `secs`-second TCP transfer from host A to host B, in Mbit/s (receiver side).
pub fn iperf3(tb: &mut Testbed, secs: u32, payload: Payload) -> anyhow::Result<f64> {
    iperf3_flows(tb, secs, payload, 1)
}

/// Throughput of `flows` parallel TCP connections (`iperf3 -P`) from host A to host B for
/// `secs` seconds, in Mbit/s summed (receiver side). Several flows are what spreads over the
/// lanes of a multi-queue gateway: one flow stays on one lane.
pub fn iperf3_flows(
    tb: &mut Testbed,
    secs: u32,
    payload: Payload,
    flows: u32,
) -> anyhow::Result<f64> {
    if tb.pid("iperf3-server").is_none() {
        tb.spawn("iperf3-server", HB, &["iperf3", "-s", "-B", HOST_B])?;
        std::thread::sleep(Duration::from_millis(300));
    }
    let t = secs.to_string();
    let text_file = tb.dir.join("text.txt");
    if payload == Payload::Text && !text_file.exists() {
        // Enough for 64 Mbit/s for the whole transfer; iperf3 stops early at the end of file.
        write_text(&text_file, secs.max(1) as usize * (8 << 20))?;
    }
    let f = text_file.to_string_lossy().into_owned();
    let parallel = flows.max(1).to_string();
    let mut argv = vec!["iperf3", "-c", HOST_B, "-t", &t, "-J"];
    if payload == Payload::Text {
        argv.extend(["-F", &f]);
    }
    if flows > 1 {
        argv.extend(["-P", &parallel]);
    }
    let mut tries = 0;
    let v: serde_json::Value = loop {
        let out = tb.exec_for(HA, &argv, Duration::from_secs(u64::from(secs) + 30))?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .with_context(|| format!("iperf3 output: {}", String::from_utf8_lossy(&out.stderr)))?;
        match v.get("error").and_then(|e| e.as_str()) {
            // On a lossy link the server can still be closing the previous test.
            Some(e) if e.contains("busy") && tries < 10 => {
                tries += 1;
                std::thread::sleep(Duration::from_secs(1));
            }
            Some(e) => bail!("iperf3: {e}"),
            None => break v,
        }
    };
    v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .map(|b| b / 1e6)
        .context("iperf3 reported no throughput")
}

/// Write `bytes` of English-like text (varied sentences, so each packet compresses on its own
/// about as well as prose does).
pub fn write_text(path: &Path, bytes: usize) -> anyhow::Result<()> {
    const WORDS: &[&str] = &[
        "the",
        "protocol",
        "booster",
        "is",
        "inserted",
        "into",
        "graph",
        "when",
        "a",
        "link",
        "needs",
        "compression",
        "encryption",
        "or",
        "error",
        "correction",
        "and",
        "removed",
        "again",
        "packets",
        "flow",
        "between",
        "two",
        "gateways",
        "over",
        "slow",
        "lossy",
        "insecure",
        "networks",
        "policy",
        "decides",
        "which",
        "chain",
        "applies",
        "to",
        "each",
        "destination",
        "prefix",
        "of",
        "traffic",
        "measured",
        "throughput",
        "delay",
        "kernel",
    ];
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut x: u32 = 0x9e37_79b9;
    let mut written = 0;
    while written < bytes {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let w = WORDS[x as usize % WORDS.len()];
        f.write_all(w.as_bytes())?;
        let sep: &[u8] = if x.is_multiple_of(11) { b".\n" } else { b" " };
        f.write_all(sep)?;
        written += w.len() + sep.len();
    }
    f.flush()?;
    Ok(())
}
