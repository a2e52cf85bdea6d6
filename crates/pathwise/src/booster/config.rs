//! The gateway's TOML configuration (`pathwise booster gateway --config FILE`): read once at
//! start-up by the CLI, then turned into the first policy snapshot. Where the seed selected
//! boosters by one IP address (seed §2.2), policies here name prefixes and whole chains.
//!
//! ```toml
//! tun = "pwb0"                        # TUN device: attached if it exists, else created
//! listen = "192.168.77.1:7000"        # UDP address of this gateway
//! peer = "192.168.77.2:7000"          # UDP address of the other gateway: the only source
//!                                     # whose datagrams are accepted
//! socket = "/run/pathwise/booster.sock"   # management socket (mode 0600: this user, root)
//! # socket_group = "pathwise"         # mode 0660: this group's members may use it too
//! # metrics = "127.0.0.1:9466"        # serve metrics on http://…/metrics (OpenMetrics)
//! psk = "<64 hex digits>"             # pre-shared key for `encrypt` (or psk_file = "...")
//! # sender_id = 1                     # nonce sender id; default: 1 on the lower address, else 2
//! # mtu = 1400                        # link MTU given to boosters
//! # batch = 32                        # packets per read/send batch
//! # tun_offload = true                # IFF_VNET_HDR: TSO/USO super-segments from the device
//! # tun_coalesce = true               # write TCP segments and UDP runs back coalesced (GRO)
//! # udp_gso = true                    # send runs of datagrams with UDP_SEGMENT
//! # udp_gro = true                    # receive coalesced datagrams with UDP_GRO
//! # queues = 1                        # lanes: TUN queues (IFF_MULTI_QUEUE), each with its own
//! #                                   # threads and socket on listen port + lane, sending to
//! #                                   # peer port + lane; both gateways need the same number
//! #                                   # (docs/booster-wire.md, "Lanes"); 1..=16
//! # chain_grace_ms = 2000             # a chain change is sent this long after it is made, and
//! #                                   # the previous chain still accepted for twice as long:
//! #                                   # apply each change to both gateways within it
//! # meta_policy = ["compression before encryption", "at most one compression"]
//!
//! [[policy]]                          # traffic to dst (from src) is sent through chain;
//! name = "default"                    # traffic from dst (to src) is accepted from the peer
//! dst = "10.77.2.0/24"                # only through chain (mirrored; docs/booster-wire.md)
//! chain = ["lz4", "encrypt"]          # optional: src = "10.77.1.0/24"
//!
//! [adaptive]                          # optional (seed §7)
//! enabled = true
//! policy = "default"
//! # compress = "lz4"                  # compression booster to insert ("zstd:3", ...)
//! # compress_on = 0.80                # compressible below this sampled ratio,
//! # compress_off = 0.95               # incompressible above this one
//! # fec = "fec:4:1"                   # FEC to insert on loss above fec_on, remove below fec_off
//! # compress_when = "compressible"    # or "congested": compress only while the link is
//! #                                   # congested (seed §7, Feldmeier), judged from:
//! # congestion_delay_on_ms = 5        #   queueing delay (delay probes) at or above this, or
//! # congestion_loss_on = 0.005        #   loss the peer reports at or above this: congested;
//! # congestion_delay_off_ms = 1       #   both below these: clear,
//! # congestion_loss_off = 0.001
//! # congestion_hold_ms = 3000         #   and compression removed once clear this long
//! # probe_interval_ms = 100           # one delay probe this often (control type 2)
//! ```

use crate::config::ConfigError;
use crate::config::check::{Document, toml_error};
use anyhow::{Context as _, bail};
use pathwise_booster::adaptive::AdaptiveConfig;
use pathwise_booster::policy::{MetaPolicy, Policy, PolicySnapshot};
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Default management socket.
pub const DEFAULT_SOCKET: &str = "/run/pathwise/booster.sock";

fn default_socket() -> PathBuf {
    PathBuf::from(DEFAULT_SOCKET)
}
fn default_mtu() -> usize {
    1400
}
fn default_batch() -> usize {
    32
}
fn default_true() -> bool {
    true
}
fn default_queues() -> usize {
    1
}
fn default_chain_grace_ms() -> u64 {
    pathwise_booster::admission::DEFAULT_GRACE.as_millis() as u64
}

/// A parsed configuration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// TUN device name.
    pub tun: String,
    /// Local UDP address.
    pub listen: SocketAddr,
    /// Peer gateway's UDP address.
    pub peer: SocketAddr,
    /// Management socket path.
    #[serde(default = "default_socket")]
    pub socket: PathBuf,
    /// Address to serve metrics on over HTTP (opt-in; [`crate::metrics`]).
    #[serde(default)]
    pub metrics: Option<SocketAddr>,
    /// A group whose members may use the management socket too.
    #[serde(default)]
    pub socket_group: Option<String>,
    /// Pre-shared key, 64 hex digits.
    #[serde(default)]
    pub psk: Option<String>,
    /// File holding the pre-shared key (64 hex digits).
    #[serde(default)]
    pub psk_file: Option<PathBuf>,
    /// Nonce sender id; derived from the address order when absent.
    #[serde(default)]
    pub sender_id: Option<u32>,
    /// Link MTU handed to boosters.
    #[serde(default = "default_mtu")]
    pub mtu: usize,
    /// Packets per batch.
    #[serde(default = "default_batch")]
    pub batch: usize,
    /// Open the TUN device with `IFF_VNET_HDR` and offer TSO/USO (split here).
    #[serde(default = "default_true")]
    pub tun_offload: bool,
    /// Coalesce in-order TCP segments, and runs of UDP datagrams where the device takes USO,
    /// written to the TUN device (needs `tun_offload`).
    #[serde(default = "default_true")]
    pub tun_coalesce: bool,
    /// Send runs of equal-sized datagrams with UDP GSO (`UDP_SEGMENT`).
    #[serde(default = "default_true")]
    pub udp_gso: bool,
    /// Receive coalesced datagrams with UDP GRO (`UDP_GRO`).
    #[serde(default = "default_true")]
    pub udp_gro: bool,
    /// Lanes: TUN queues, each with its own threads and UDP socket (1: one queue, no
    /// `IFF_MULTI_QUEUE`, the gateway as it was before lanes).
    #[serde(default = "default_queues")]
    pub queues: usize,
    /// Grace period of a chain change, in milliseconds
    /// ([`pathwise_booster::admission`]).
    #[serde(default = "default_chain_grace_ms")]
    pub chain_grace_ms: u64,
    /// Meta-policy rules; the default set when absent.
    #[serde(default)]
    pub meta_policy: Option<MetaPolicy>,
    /// Policies.
    #[serde(default)]
    pub policy: Vec<Policy>,
    /// Adaptive policy.
    #[serde(default)]
    pub adaptive: AdaptiveConfig,
}

impl GatewayConfig {
    /// Read and check a configuration file; the first error, with its file, line and field.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        Self::load_all(path).map_err(|errs| match errs.into_iter().next() {
            Some(e) => anyhow::Error::new(e),
            None => anyhow::anyhow!("{}: invalid configuration", path.display()),
        })
    }

    /// Read and check a configuration file; every error found: the first TOML error (parsing
    /// stops there), else every setting and every policy that is wrong. Reads `psk_file`.
    pub fn load_all(path: &Path) -> Result<Self, Vec<ConfigError>> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            vec![ConfigError {
                file: file.clone(),
                line: 0,
                field: "-".into(),
                message: e.to_string(),
            }]
        })?;
        let cfg: GatewayConfig =
            toml::from_str(&text).map_err(|e| vec![toml_error(&file, &text, &e)])?;
        let doc = Document::parse(&text);
        // `pathwise_booster::policy::Policy` takes unknown keys (management requests are
        // lenient); in the file a misspelt key must not be ignored.
        let mut unknown = Vec::new();
        for i in 0..cfg.policy.len() {
            for (key, _) in doc.keys_of(&format!("policy[{i}]")) {
                if !["name", "dst", "src", "chain"].contains(&key.as_str()) {
                    unknown.push((
                        format!("policy[{i}].{key}"),
                        format!(
                            "unknown field `{key}`, expected one of `name`, `dst`, `src`, `chain`"
                        ),
                    ));
                }
            }
        }
        let errs: Vec<ConfigError> = unknown
            .into_iter()
            .chain(cfg.problems())
            .map(|(field, message)| ConfigError {
                file: file.clone(),
                line: doc.line_of_field(&field),
                field,
                message,
            })
            .collect();
        if errs.is_empty() { Ok(cfg) } else { Err(errs) }
    }

    #[cfg(test)]
    fn check(&self) -> anyhow::Result<()> {
        match self.problems().into_iter().next() {
            Some((field, message)) => bail!("{field}: {message}"),
            None => Ok(()),
        }
    }

    /// What is wrong, as (field, message) pairs: each setting, the key, each policy on its
    /// own, then the policies together.
    fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut problem = |field: &str, message: String| out.push((field.to_string(), message));
        if self.tun.is_empty() || self.tun.len() > 15 {
            problem(
                "tun",
                format!("interface names are 1 to 15 characters, got {:?}", self.tun),
            );
        }
        if !(1..=256).contains(&self.batch) {
            problem("batch", format!("must be 1..=256, got {}", self.batch));
        }
        if !(576..=9000).contains(&self.mtu) {
            problem("mtu", format!("must be 576..=9000, got {}", self.mtu));
        }
        if self.chain_grace_ms > 600_000 {
            problem(
                "chain_grace_ms",
                format!(
                    "must be at most 600000 (10 minutes), got {}",
                    self.chain_grace_ms
                ),
            );
        }
        let max = usize::from(pathwise_booster::boosters::MAX_LANES);
        if !(1..=max).contains(&self.queues) {
            problem("queues", format!("must be 1..={max}, got {}", self.queues));
        } else if self.queues > 1 {
            for (field, addr) in [("listen", self.listen), ("peer", self.peer)] {
                if addr.port() == 0 {
                    problem(
                        field,
                        format!(
                            "with queues = {} the port must be set (lane i uses port + i)",
                            self.queues
                        ),
                    );
                } else if usize::from(addr.port()) + self.queues - 1 > usize::from(u16::MAX) {
                    problem(
                        field,
                        format!(
                            "lane {} would use port {}: with queues = {} the port must be at most {}",
                            self.queues - 1,
                            usize::from(addr.port()) + self.queues - 1,
                            self.queues,
                            usize::from(u16::MAX) + 1 - self.queues
                        ),
                    );
                }
            }
        }
        if let Err(e) = self.sender_id() {
            problem("sender_id", e.to_string());
        }
        if let Err(e) = self.socket_group() {
            problem("socket_group", e);
        }
        if let Err(e) = self.key() {
            let field = if self.psk.is_some() {
                "psk"
            } else {
                "psk_file"
            };
            problem(field, format!("{e:#}"));
        }
        // A configured key that is wrong is reported above; the chains are checked as if it
        // were right.
        let has_key = self.psk.is_some() || self.psk_file.is_some();
        let meta = self.meta_policy.clone().unwrap_or_default();
        let mut each_fine = true;
        for (i, p) in self.policy.iter().enumerate() {
            if let Err(e) = PolicySnapshot::build(1, vec![p.clone()], meta.clone(), has_key) {
                problem(&format!("policy[{i}].chain"), e.to_string());
                each_fine = false;
            }
        }
        if each_fine && let Err(e) = self.snapshot(has_key) {
            use pathwise_booster::policy::PolicyError;
            let at = |name: &str| self.policy.iter().rposition(|p| p.name == name);
            let field = match &e.downcast_ref::<PolicyError>() {
                Some(PolicyError::DuplicateName(n)) => at(n).map(|i| format!("policy[{i}].name")),
                Some(PolicyError::DuplicateMatch(_, n)) => {
                    at(n).map(|i| format!("policy[{i}].dst"))
                }
                _ => None,
            };
            problem(field.as_deref().unwrap_or("policy"), e.to_string());
        }
        out
    }

    /// The group allowed on the management socket, looked up.
    pub fn socket_group(&self) -> Result<Option<crate::mgmt::SocketGroup>, String> {
        self.socket_group
            .as_deref()
            .map(crate::mgmt::SocketGroup::lookup)
            .transpose()
    }

    /// The pre-shared key, if configured.
    pub fn key(&self) -> anyhow::Result<Option<[u8; 32]>> {
        let text = match (&self.psk, &self.psk_file) {
            (Some(_), Some(_)) => bail!("set psk or psk_file, not both"),
            (Some(k), None) => k.clone(),
            (None, Some(f)) => std::fs::read_to_string(f)
                .with_context(|| format!("reading psk_file {}", f.display()))?,
            (None, None) => return Ok(None),
        };
        parse_key(text.trim()).map(Some)
    }

    /// The nonce sender id (lane 0's; lane `l` sends as this id with `l` in the top byte, so
    /// with more than one queue a configured id must fit in 24 bits).
    pub fn sender_id(&self) -> anyhow::Result<u32> {
        if let Some(id) = self.sender_id {
            let max = pathwise_booster::boosters::MAX_LANE_BASE_ID;
            if self.queues > 1 && id > max {
                bail!(
                    "must be at most {max} with queues = {}: lane l sends as the id with l in its \
                     top byte (docs/booster-wire.md, \"Lanes\")",
                    self.queues
                );
            }
            return Ok(id);
        }
        if self.listen.ip().is_unspecified() {
            bail!(
                "listen has an unspecified address: set sender_id (1 on one gateway, 2 on the other)"
            );
        }
        Ok(if self.listen < self.peer { 1 } else { 2 })
    }

    /// Lane `lane`'s UDP address: the listen port plus the lane (validated to fit).
    pub fn lane_listen(&self, lane: usize) -> SocketAddr {
        lane_addr(self.listen, lane)
    }

    /// The peer's UDP address on lane `lane`: its port plus the lane.
    pub fn lane_peer(&self, lane: usize) -> SocketAddr {
        lane_addr(self.peer, lane)
    }

    /// The initial policy snapshot.
    pub fn snapshot(&self, has_key: bool) -> anyhow::Result<PolicySnapshot> {
        let meta = self.meta_policy.clone().unwrap_or_default();
        Ok(PolicySnapshot::build(
            1,
            self.policy.clone(),
            meta,
            has_key,
        )?)
    }
}

/// What `--check` reports, for `--help`.
pub const CHECK_HELP: &str = "\
--check reports the errors of a gateway configuration, one per line as FILE:LINE: FIELD: \
MESSAGE (line 0: a default, or the file as a whole), and exits 1 if there is any:
  - a TOML syntax error, a value of the wrong type or an unknown key: the first one (parsing \
stops there);
  - then every setting that is wrong (socket_group must exist), the pre-shared key \
(psk_file is read), every policy \
whose chain breaks the meta-policy, and the policies together (names and prefixes).
The TUN device and the sockets are not checked (they need the running gateway, with \
CAP_NET_ADMIN to create the TUN device).";

/// `pathwise booster gateway --check FILE`.
pub fn check(path: &Path) -> crate::config::check::CheckReport {
    let mut report = crate::config::check::CheckReport {
        file: path.display().to_string(),
        ..Default::default()
    };
    match GatewayConfig::load_all(path) {
        Ok(cfg) => {
            report.summary = format!(
                "tun {}, {} <-> {}{}, {} policies{}",
                cfg.tun,
                cfg.listen,
                cfg.peer,
                if cfg.queues > 1 {
                    format!(" ({} lanes on consecutive ports)", cfg.queues)
                } else {
                    String::new()
                },
                cfg.policy.len(),
                if cfg.adaptive.enabled {
                    ", adaptive"
                } else {
                    ""
                }
            );
            report.skipped.push(
                "the TUN device, the UDP socket and the management socket: they need the \
                 running gateway (creating the TUN device needs CAP_NET_ADMIN)"
                    .into(),
            );
        }
        Err(errors) => report.errors = errors,
    }
    report
}

/// `addr` with its port moved up by `lane` (saturating: configurations whose ports do not fit
/// are refused before a gateway starts).
fn lane_addr(addr: SocketAddr, lane: usize) -> SocketAddr {
    let port = u16::try_from(lane)
        .ok()
        .and_then(|l| addr.port().checked_add(l))
        .unwrap_or(u16::MAX);
    SocketAddr::new(addr.ip(), port)
}

/// Parse 64 hex digits.
pub fn parse_key(hex: &str) -> anyhow::Result<[u8; 32]> {
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("the pre-shared key must be 64 hex digits (32 bytes)");
    }
    let mut key = [0u8; 32];
    for (i, k) in key.iter_mut().enumerate() {
        *k = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)?;
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example_and_refuses_bad_chains() {
        let text = r#"
            tun = "pwb0"
            listen = "192.168.77.1:7000"
            peer = "192.168.77.2:7000"
            psk = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
            metrics = "127.0.0.1:9466"
            [[policy]]
            name = "default"
            dst = "10.77.2.0/24"
            chain = ["lz4", "encrypt"]
            [adaptive]
            enabled = true
        "#;
        let cfg: GatewayConfig = toml::from_str(text).unwrap();
        cfg.check().unwrap();
        assert_eq!(cfg.sender_id().unwrap(), 1);
        assert_eq!(cfg.key().unwrap().unwrap()[31], 0x1f);
        assert_eq!(cfg.metrics, Some("127.0.0.1:9466".parse().unwrap()));
        let bad: GatewayConfig =
            toml::from_str(&text.replace(r#"["lz4", "encrypt"]"#, r#"["encrypt", "lz4"]"#))
                .unwrap();
        let e = bad.check().unwrap_err().to_string();
        assert!(e.contains("compression before encryption"), "{e}");
    }

    #[test]
    fn queues_are_checked_with_the_ports_and_sender_id_they_need() {
        let base = "tun = \"pwb0\"\nlisten = \"192.168.77.1:7000\"\npeer = \"192.168.77.2:7100\"\n";
        let cfg =
            |extra: &str| -> GatewayConfig { toml::from_str(&format!("{base}{extra}")).unwrap() };
        let one = cfg("");
        assert_eq!(one.queues, 1);
        one.check().unwrap();
        let two = cfg("queues = 2");
        two.check().unwrap();
        assert_eq!(two.lane_listen(1), "192.168.77.1:7001".parse().unwrap());
        assert_eq!(two.lane_peer(1), "192.168.77.2:7101".parse().unwrap());
        assert_eq!(two.lane_peer(0), two.peer);
        for (extra, field, says) in [
            ("queues = 0", "queues", "1..=16"),
            ("queues = 17", "queues", "1..=16"),
            (
                "queues = 16\nsender_id = 16777216",
                "sender_id",
                "at most 16777215",
            ),
        ] {
            let e = cfg(extra).check().unwrap_err().to_string();
            assert!(e.starts_with(field) && e.contains(says), "{extra}: {e}");
        }
        // Any id without lanes, as before; the largest that leaves room for the lane with.
        cfg("sender_id = 4294967295").check().unwrap();
        cfg("queues = 16\nsender_id = 16777215").check().unwrap();
        let high: GatewayConfig = toml::from_str(
            "tun = \"pwb0\"\nlisten = \"192.168.77.1:65535\"\npeer = \"192.168.77.2:0\"\nqueues = 2\n",
        )
        .unwrap();
        let all: Vec<String> = high
            .problems()
            .into_iter()
            .map(|(f, m)| format!("{f}: {m}"))
            .collect();
        assert!(
            all.iter()
                .any(|e| e.starts_with("listen") && e.contains("port 65536")),
            "{all:?}"
        );
        assert!(
            all.iter()
                .any(|e| e.starts_with("peer") && e.contains("port must be set")),
            "{all:?}"
        );
    }
}
