//! The gateway's TOML configuration (`pathwise booster gateway --config FILE`): read once at
//! start-up by the CLI, then turned into the first policy snapshot. Where the seed selected
//! boosters by one IP address (seed §2.2), policies here name prefixes and whole chains.
//!
//! ```toml
//! tun = "pwb0"                        # TUN device: attached if it exists, else created
//! listen = "192.168.77.1:7000"        # UDP address of this gateway
//! peer = "192.168.77.2:7000"          # UDP address of the other gateway: the only source
//!                                     # whose datagrams are accepted
//! socket = "/run/pathwise/booster.sock"   # management socket
//! psk = "<64 hex digits>"             # pre-shared key for `encrypt` (or psk_file = "...")
//! # sender_id = 1                     # nonce sender id; default: 1 on the lower address, else 2
//! # mtu = 1400                        # link MTU given to boosters
//! # batch = 32                        # packets per read/send batch
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
//! ```

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
    /// Read and check a configuration file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let cfg: GatewayConfig =
            toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        cfg.check()?;
        Ok(cfg)
    }

    fn check(&self) -> anyhow::Result<()> {
        if self.tun.is_empty() || self.tun.len() > 15 {
            bail!(
                "tun: interface names are 1 to 15 characters, got {:?}",
                self.tun
            );
        }
        if !(1..=256).contains(&self.batch) {
            bail!("batch must be 1..=256, got {}", self.batch);
        }
        if !(576..=9000).contains(&self.mtu) {
            bail!("mtu must be 576..=9000, got {}", self.mtu);
        }
        if self.chain_grace_ms > 600_000 {
            bail!(
                "chain_grace_ms must be at most 600000 (10 minutes), got {}",
                self.chain_grace_ms
            );
        }
        self.sender_id()?;
        self.snapshot(self.key()?.is_some())?;
        Ok(())
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

    /// The nonce sender id.
    pub fn sender_id(&self) -> anyhow::Result<u32> {
        if let Some(id) = self.sender_id {
            return Ok(id);
        }
        if self.listen.ip().is_unspecified() {
            bail!(
                "listen has an unspecified address: set sender_id (1 on one gateway, 2 on the other)"
            );
        }
        Ok(if self.listen < self.peer { 1 } else { 2 })
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
        let bad: GatewayConfig =
            toml::from_str(&text.replace(r#"["lz4", "encrypt"]"#, r#"["encrypt", "lz4"]"#))
                .unwrap();
        let e = bad.check().unwrap_err().to_string();
        assert!(e.contains("compression before encryption"), "{e}");
    }
}
