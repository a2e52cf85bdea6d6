//! `[gist]`: GIST (RFC 5971) with the Ping NSLP in `pathwise daemon`.
//!
//! ```toml
//! [gist]
//! interfaces = ["eth0", "eth1"]     # where GIST runs (Queries are intercepted on them)
//! refresh_period = "30s"             # routing state refresh (thesis §4.3.1: 180 s)
//! cookie_mode = "hash"               # "hash" (late state installation) or "random"
//! secret_rotation = "60s"            # hash cookies: how often the secret rotates
//! confirm_wait = "2s"                # random cookies: how long a Query's state waits
//! ipv6_router_alert = 65503          # RFC 2711 value of IPv6 Queries (see below)
//! record_address = "10.0.0.1"        # the address pings record here (default: the flow's)
//! transports = ["udp", "tcp"]        # D-mode always; "tcp": C-mode messaging associations;
//!                                    # "tls": C-mode over TLS (needs [gist.tls])
//! tcp_port = 30000                   # where this node accepts messaging associations
//! ipc_socket = "/run/pathwise/gist.sock"  # NSLPs in their own processes (IPC NSLP API)
//! relay = [42, 1000]                 # NSLPIDs this node relays without understanding them
//!
//! [gist.tls]                         # RFC 5971 §5.7.3: TLS over TCP, its own MA profile
//! certificate = "/etc/pathwise/node.pem"   # PEM chain this node presents (server and client)
//! key = "/etc/pathwise/node.key"           # its PEM private key (PKCS#8, PKCS#1 or SEC1)
//! ca = "/etc/pathwise/ca.pem"              # PEM CA(s) peers' certificates must chain to
//! verify_peer = true                 # default; false: encrypt, accept any certificate
//! port = 30001                       # where this node accepts TLS associations
//! ```
//!
//! With `verify_peer` both ends must present a certificate chaining to `ca`; names in it are
//! not checked (GIST peers are addresses). A peer that fails is refused and counted
//! (`gist show ma`: `tls.handshake_failures`). Secure transfer never falls back to TCP or
//! D-mode.
//!
//! `ipc_socket`: a unix socket on which NSLP programs register an NSLPID and use the NSLP API
//! out of process (seed 000 §3.7; `pathwise_gist::ipc`, `pathwise gist nslp-ping`). A client
//! registering an NSLPID served in process (the Ping NSLP) takes its place until it goes.
//! Anyone who can open the socket can signal as this node: keep its directory private.
//!
//! `relay`: for each NSLPID listed, the node runs the relay NSLP (`pathwise_gist::nslp::relay`):
//! it peers with every Query of that NSLPID, so it appears on the NSLP's path with routing state
//! hop by hop, and passes each NSLP message on unchanged in the direction it travels (RFC 5971
//! §3.5, §4.3.2). Not 0 (GIST's own messages, §5.6), not listed twice, and not the Ping NSLP's
//! NSLPID (32704), which this node serves in process. An IPC client registering a relayed
//! NSLPID takes the relay's place until it goes.
//!
//! D-mode runs over UDP port 270 for IPv4 and IPv6; Queries carry the IP Router Alert option
//! and GIST-aware forwarders take them off the forwarding path.
//!
//! `ipv6_router_alert`: RFC 5971 gives every NSLPID its own Router Alert value (the IANA "IPv6
//! Router Alert Option Values" registry holds 36–67 for the QoS NSLP and 68 for the NATFW NSLP).
//! The Ping NSLP uses an experimental NSLPID, so its default is the first value of the
//! registry's experimental range, 65503. Every node of a path must use the same value: Linux
//! only hands a transit IPv6 packet to a socket listening for its exact value. IPv4 Router
//! Alert has no per-protocol value on Linux (every Router Alert packet is intercepted); it is
//! sent as 0.

use crate::config::Source;
use crate::config::{ConfigError, line_of};
use pathwise_core::units::TimeSpan;
use serde::Deserialize;
use std::net::IpAddr;
use toml::Spanned;

/// `[gist]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GistSection {
    /// Kernel interfaces GIST runs on.
    pub interfaces: Spanned<Vec<String>>,
    /// Refresh period of routing state.
    #[serde(default = "default_refresh")]
    pub refresh_period: Spanned<TimeSpan>,
    /// Responder cookie mode.
    #[serde(default)]
    pub cookie_mode: CookieModeName,
    /// Hash cookies: secret rotation period.
    #[serde(default = "default_rotation")]
    pub secret_rotation: Spanned<TimeSpan>,
    /// Random cookies: how long per-Query state waits for the Confirm.
    #[serde(default = "default_confirm_wait")]
    pub confirm_wait: Spanned<TimeSpan>,
    /// Router Alert value of IPv6 Queries.
    #[serde(default = "default_ipv6_ra")]
    pub ipv6_router_alert: u16,
    /// The address this node records in pings.
    pub record_address: Option<IpAddr>,
    /// How GIST may carry messages: "udp" (D-mode, always on) and "tcp" (C-mode: messaging
    /// associations, negotiated in Stack-Proposal / Stack-Configuration-Data).
    #[serde(default = "default_transports")]
    pub transports: Spanned<Vec<String>>,
    /// TCP port of messaging associations.
    #[serde(default = "default_tcp_port")]
    pub tcp_port: u16,
    /// Unix socket of the IPC NSLP API; absent: NSLPs only in process.
    pub ipc_socket: Option<std::path::PathBuf>,
    /// NSLPIDs relayed by the relay NSLP.
    #[serde(default = "no_relay")]
    pub relay: Spanned<Vec<u16>>,
    /// `[gist.tls]`: certificates for C-mode over TLS.
    pub tls: Option<Spanned<TlsSection>>,
}

/// `[gist.tls]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    /// PEM certificate chain of this node.
    pub certificate: Spanned<String>,
    /// PEM private key of this node.
    pub key: Spanned<String>,
    /// PEM CA certificates peers must chain to.
    pub ca: Option<Spanned<String>>,
    /// Check peers' certificates against `ca` (default true).
    #[serde(default = "yes")]
    pub verify_peer: bool,
    /// Port TLS associations are accepted on.
    #[serde(default = "default_tls_port")]
    pub port: u16,
}

fn yes() -> bool {
    true
}
fn default_tls_port() -> u16 {
    30001
}

fn no_relay() -> Spanned<Vec<u16>> {
    Spanned::new(0..0, Vec::new())
}

fn default_transports() -> Spanned<Vec<String>> {
    Spanned::new(0..0, vec!["udp".into(), "tcp".into()])
}
fn default_tcp_port() -> u16 {
    30000
}

/// `cookie_mode`.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum CookieModeName {
    /// Keyed hash over a rotating secret: no state before a valid Confirm.
    #[default]
    Hash,
    /// Random cookie kept per Query (the thesis's comparison mode).
    Random,
}

impl From<CookieModeName> for pathwise_gist::CookieMode {
    fn from(m: CookieModeName) -> Self {
        match m {
            CookieModeName::Hash => pathwise_gist::CookieMode::Hash,
            CookieModeName::Random => pathwise_gist::CookieMode::Random,
        }
    }
}

const GIST_UDP_PORT: u16 = pathwise_gist::wire::GIST_PORT;

/// The default IPv6 Router Alert value (see the module documentation).
pub const DEFAULT_IPV6_ROUTER_ALERT: u16 = 65503;

fn default_refresh() -> Spanned<TimeSpan> {
    Spanned::new(0..0, TimeSpan(std::time::Duration::from_secs(180)))
}
fn default_rotation() -> Spanned<TimeSpan> {
    Spanned::new(0..0, TimeSpan(std::time::Duration::from_secs(60)))
}
fn default_confirm_wait() -> Spanned<TimeSpan> {
    Spanned::new(0..0, TimeSpan(std::time::Duration::from_secs(2)))
}
fn default_ipv6_ra() -> u16 {
    DEFAULT_IPV6_ROUTER_ALERT
}

impl GistSection {
    /// The TCP port messaging associations are accepted on, if C-mode is on.
    pub fn tcp_port(&self) -> Option<u16> {
        self.transports
            .get_ref()
            .iter()
            .any(|t| t == "tcp")
            .then_some(self.tcp_port)
    }

    /// The port TLS messaging associations are accepted on, if TLS is on.
    pub fn tls_port(&self) -> Option<u16> {
        let on = self.transports.get_ref().iter().any(|t| t == "tls");
        self.tls.as_ref().filter(|_| on).map(|t| t.get_ref().port)
    }

    /// Check what can be checked without the running system.
    pub(crate) fn check(&self, cx: &Source<'_>) -> Result<(), ConfigError> {
        let names = self.interfaces.get_ref();
        if names.is_empty() {
            return Err(cx.at(
                self.interfaces.span(),
                "gist.interfaces",
                "lists no interface: GIST needs at least one".into(),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for n in names {
            if !seen.insert(n) {
                return Err(cx.at(
                    self.interfaces.span(),
                    "gist.interfaces",
                    format!("interface {n:?} listed twice"),
                ));
            }
        }
        let at = |s: &Spanned<TimeSpan>| line_of(cx.text, s.span().start);
        for (field, v, min) in [
            ("gist.refresh_period", &self.refresh_period, 10),
            ("gist.secret_rotation", &self.secret_rotation, 10),
            ("gist.confirm_wait", &self.confirm_wait, 10),
        ] {
            if v.get_ref().0 < std::time::Duration::from_millis(min) {
                return Err(cx.line(
                    at(v),
                    field,
                    format!("{:?} is too short: at least {min}ms", v.get_ref().0),
                ));
            }
        }
        if self.refresh_period.get_ref().0 > std::time::Duration::from_secs(24 * 3600) {
            return Err(cx.line(
                at(&self.refresh_period),
                "gist.refresh_period",
                "more than a day: routing state would outlive any route".into(),
            ));
        }
        let transports = self.transports.get_ref();
        for t in transports {
            if !matches!(t.as_str(), "udp" | "tcp" | "tls") {
                return Err(cx.at(
                    self.transports.span(),
                    "gist.transports",
                    format!("{t:?}: \"udp\", \"tcp\" or \"tls\""),
                ));
            }
        }
        if transports.iter().any(|t| t == "tls") && self.tls.is_none() {
            return Err(cx.at(
                self.transports.span(),
                "gist.transports",
                "\"tls\" needs a [gist.tls] section (certificate, key, ca)".into(),
            ));
        }
        if let Some(t) = &self.tls {
            let tls = t.get_ref();
            if tls.verify_peer && tls.ca.is_none() {
                return Err(cx.at(
                    t.span(),
                    "gist.tls.ca",
                    "verify_peer needs a CA to check peers against (or verify_peer = false)".into(),
                ));
            }
            if tls.port == 0 || tls.port == GIST_UDP_PORT || Some(tls.port) == self.tcp_port() {
                return Err(cx.at(
                    t.span(),
                    "gist.tls.port",
                    format!("{} cannot be the TLS association port", tls.port),
                ));
            }
        }
        if !transports.iter().any(|t| t == "udp") {
            return Err(cx.at(
                self.transports.span(),
                "gist.transports",
                "needs \"udp\": Queries always go D-mode (RFC 5971 §4.4.1)".into(),
            ));
        }
        if self.tcp_port == 0 || self.tcp_port == GIST_UDP_PORT {
            return Err(cx.line(
                0,
                "gist.tcp_port",
                format!("{} cannot be the messaging association port", self.tcp_port),
            ));
        }
        let mut relayed = std::collections::BTreeSet::new();
        for &n in self.relay.get_ref() {
            let why = if n == 0 {
                Some("0 is GIST's own (RFC 5971 §5.6), not an NSLP's".to_string())
            } else if n == pathwise_gist::nslp::ping::NSLPID {
                Some(format!(
                    "{n} is the Ping NSLP's, which this node serves in process"
                ))
            } else if !relayed.insert(n) {
                Some(format!("{n} listed twice"))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(cx.at(self.relay.span(), "gist.relay", why));
            }
        }
        if self.ipv6_router_alert == u16::MAX {
            return Err(cx.line(
                0,
                "gist.ipv6_router_alert",
                "65535 is reserved (RFC 2711)".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::NodeConfig;

    const GOOD: &str = r#"
[daemon]
socket = "/tmp/pw.sock"

[gist]
interfaces = ["w0", "e0"]
refresh_period = "30s"
cookie_mode = "random"
"#;

    #[test]
    fn parses_a_gist_section() {
        let c = NodeConfig::parse("node.toml", GOOD).unwrap();
        let g = c.gist.unwrap();
        assert_eq!(g.interfaces.get_ref(), &["w0", "e0"]);
        assert_eq!(
            g.refresh_period.get_ref().0,
            std::time::Duration::from_secs(30)
        );
        assert_eq!(g.cookie_mode, super::CookieModeName::Random);
        assert_eq!(g.secret_rotation.get_ref().0.as_secs(), 60);
        assert_eq!(g.ipv6_router_alert, super::DEFAULT_IPV6_ROUTER_ALERT);
        assert!(g.relay.get_ref().is_empty());
        assert!(c.rsvp.is_none());
        let c = NodeConfig::parse("node.toml", &format!("{GOOD}relay = [42, 1000]\n")).unwrap();
        assert_eq!(c.gist.unwrap().relay.get_ref(), &[42, 1000]);
    }

    #[test]
    fn errors_name_line_and_field() {
        for (from, to, line, field) in [
            (
                "interfaces = [\"w0\", \"e0\"]",
                "interfaces = []",
                6,
                "gist.interfaces",
            ),
            (
                "interfaces = [\"w0\", \"e0\"]",
                "interfaces = [\"w0\", \"w0\"]",
                6,
                "gist.interfaces",
            ),
            ("\"30s\"", "\"0s\"", 7, "gist.refresh_period"),
            ("\"30s\"", "\"2days\"", 7, "-"),
            ("\"random\"", "\"strong\"", 8, "-"),
            (
                "cookie_mode = \"random\"",
                "secret_rotation = \"1ms\"",
                8,
                "gist.secret_rotation",
            ),
            (
                "cookie_mode = \"random\"",
                "ipv6_router_alert = 65535",
                0,
                "gist.ipv6_router_alert",
            ),
            ("cookie_mode", "cookie_mod", 8, "-"),
            (
                "cookie_mode = \"random\"",
                "transports = [\"tcp\"]",
                8,
                "gist.transports",
            ),
            (
                "cookie_mode = \"random\"",
                "transports = [\"udp\", \"sctp\"]",
                8,
                "gist.transports",
            ),
            (
                "cookie_mode = \"random\"",
                "transports = [\"udp\", \"tls\"]",
                8,
                "gist.transports",
            ),
            (
                "cookie_mode = \"random\"",
                "[gist.tls]\ncertificate = \"a.pem\"\nkey = \"a.key\"",
                8,
                "gist.tls.ca",
            ),
            (
                "cookie_mode = \"random\"",
                "[gist.tls]\ncertificate = \"a.pem\"\nkey = \"a.key\"\nverify = false",
                11,
                "-",
            ),
            (
                "cookie_mode = \"random\"",
                "relay = [42, 1000, 42]",
                8,
                "gist.relay",
            ),
            ("cookie_mode = \"random\"", "relay = [0]", 8, "gist.relay"),
            (
                "cookie_mode = \"random\"",
                "relay = [32704]",
                8,
                "gist.relay",
            ),
            ("cookie_mode = \"random\"", "relay = [70000]", 8, "-"),
            ("cookie_mode = \"random\"", "relay = 42", 8, "-"),
        ] {
            let e = NodeConfig::parse("node.toml", &GOOD.replace(from, to)).unwrap_err();
            assert_eq!((e.line, e.field.as_str()), (line, field), "{to}: {e}");
        }
    }
}
