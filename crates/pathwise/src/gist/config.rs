//! `[gist]`: GIST (RFC 5971) with the Ping NSLP in `pathwise daemon`.
//!
//! ```toml
//! [gist]
//! interfaces = ["eth0", "eth1"]     # where GIST runs (Queries are intercepted on them)
//! refresh_period = "30s"             # routing state refresh (thesis §4.3.1: 180 s)
//! cookie_mode = "hash"               # "hash" (late state installation) or "random"
//! secret_rotation = "60s"            # hash cookies: how often the secret rotates
//! confirm_wait = "2s"                # random cookies: how long a Query's state waits
//! max_state_lifetime = "15min"       # longest a peer may have state kept without refresh
//!                                    # (its NLI's validity is capped; default: 15 min or
//!                                    # 3 refresh periods, whichever is longer)
//! interception = "auto"             # how Queries in transit are taken off the path (below)
//! nfqueue = 270                      # netfilter queue number of "netfilter" interception
//! ipv4_router_alert = 0              # Router Alert value of NSLPs with none registered or
//! ipv6_router_alert = 65503          #   configured, per family (see below)
//! record_address = "10.0.0.1"        # the address pings record here (default: the flow's)
//! transports = ["udp", "tcp"]        # D-mode always; "tcp": C-mode messaging associations;
//!                                    # "tls": C-mode over TLS (needs [gist.tls])
//! tcp_port = 30000                   # where this node accepts messaging associations
//! ipc_socket = "/run/pathwise/gist.sock"  # NSLPs in their own processes (IPC NSLP API)
//! relay = [42, 1000]                 # NSLPIDs this node relays without understanding them
//! expected_sessions = 1000000        # make the routing state tables' room at start-up
//!                                    # (default: grow as needed; at most 16,777,216)
//!
//! [gist.tls]                         # RFC 5971 §5.7.3: TLS over TCP, its own MA profile
//! certificate = "/etc/pathwise/node.pem"   # PEM chain this node presents (server and client)
//! key = "/etc/pathwise/node.key"           # its PEM private key (PKCS#8, PKCS#1 or SEC1)
//! ca = "/etc/pathwise/ca.pem"              # PEM CA(s) peers' certificates must chain to
//! verify_peer = true                 # default; false: encrypt, accept any certificate
//! port = 30001                       # where this node accepts TLS associations
//!
//! [gist.router_alert]                # NSLPID = Router Alert value, IPv4 and IPv6
//! 42 = 42                            # e.g. NSIS-ka's test NSLP
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
//! Anyone who can use the socket can signal as this node, so it is made like the management
//! sockets (`crate::mgmt::access`): mode 0600, or 0660 in `[daemon] socket_group`, and every
//! client's credentials checked; anyone else is answered `Refused(PermissionDenied)` and
//! counted (`ipc.denied`).
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
//! Router Alert values: RFC 5971 §5.3.2 has the Router Alert Option of a Q-mode message depend on
//! the NSLPID ("The option value depends on the NSLP being signalled for", §5.8.1.1), each
//! family with its registry (RFC 5350 §3). Queries this node sends carry, per NSLPID, the value
//! `[gist.router_alert]` gives it, else its registered values (QoS NSLP 1–32: IPv4 33–64, IPv6
//! 36–67; NATFW 33: IPv4 65, IPv6 68 — `pathwise_gist::RouterAlertValues`), else
//! `ipv4_router_alert` (default 0, "Router shall examine packet", RFC 2113) or
//! `ipv6_router_alert` (default 65503, the first experimental value, RFC 5350 §3.2). The Ping
//! NSLP's NSLPID is experimental, so it uses the defaults.
//!
//! `interception`: Linux's IPv4 `IP_ROUTER_ALERT` only diverts Router Alert value 0, and
//! `IPV6_ROUTER_ALERT` only the one value a socket names, so a router relying on them would
//! never see NSIS-ka's Queries (value 42 for NSLPID 42) or any NSLP's with a registered value.
//! `"netfilter"` queues every UDP datagram to port 270 in transit that carries IP options
//! (IPv4) or a hop-by-hop header (IPv6) — iptables/ip6tables rules in the mangle table's
//! PREROUTING chain, NFQUEUE with `--queue-bypass`, removed when the daemon stops — and the
//! daemon takes off the path the Queries of NSLPs it serves (whatever their value) and lets the
//! rest go on untouched (RFC 5971 §5.3.2.1 allows deciding on the transport header; §5.3.2.3
//! wants what is not GIST forwarded as a normal datagram). It needs the `iptables` package and
//! the kernel's NFQUEUE target. `"socket"` uses the Router Alert socket options (IPv4 value 0,
//! IPv6 `ipv6_router_alert` only). `"auto"` (default) tries netfilter and falls back to the
//! sockets with a warning; `gist show counters` says which is in use.

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
    /// The longest a peer may have this node keep routing state without a refresh: the
    /// Routing State Validity Time of its Confirms is capped at this (RFC 5971 §8.4; the
    /// field allows 49.7 days). Default: 15 minutes or three refresh periods, the longer.
    #[serde(default)]
    pub max_state_lifetime: Option<Spanned<TimeSpan>>,
    /// How Queries in transit are intercepted.
    #[serde(default)]
    pub interception: Interception,
    /// Netfilter queue number (`interception = "netfilter"`).
    #[serde(default = "default_nfqueue")]
    pub nfqueue: u16,
    /// Router Alert value of IPv4 Q-mode messages of NSLPs with none registered or configured.
    #[serde(default)]
    pub ipv4_router_alert: u16,
    /// … of IPv6 ones; also the value `interception = "socket"` intercepts on IPv6.
    #[serde(default = "default_ipv6_ra")]
    pub ipv6_router_alert: u16,
    /// `[gist.router_alert]`: NSLPID → Router Alert value (both families).
    #[serde(default = "no_router_alert")]
    pub router_alert: Spanned<std::collections::BTreeMap<String, u16>>,
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
    /// Sessions to make the engine's tables' room for at start-up (absent: grow as needed).
    pub expected_sessions: Option<Spanned<u64>>,
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

/// `interception`.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Interception {
    /// Netfilter when it can be set up, else the sockets.
    #[default]
    Auto,
    /// Netfilter queueing: every Router Alert value (see the module documentation).
    Netfilter,
    /// Router Alert socket options: IPv4 value 0, IPv6 `ipv6_router_alert`.
    Socket,
}

fn no_router_alert() -> Spanned<std::collections::BTreeMap<String, u16>> {
    Spanned::new(0..0, std::collections::BTreeMap::new())
}

fn default_nfqueue() -> u16 {
    GIST_UDP_PORT
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
    /// The cap on the state lifetime peers may ask for (`max_state_lifetime`).
    pub fn max_state_lifetime(&self) -> std::time::Duration {
        match &self.max_state_lifetime {
            Some(v) => v.get_ref().0,
            None => std::time::Duration::from_secs(900).max(self.refresh_period.get_ref().0 * 3),
        }
    }

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
    pub(crate) fn check(&self, cx: &Source<'_>, errs: &mut Vec<ConfigError>) {
        crate::config::check_expected_sessions(
            self.expected_sessions.as_ref(),
            cx,
            "gist.expected_sessions",
            errs,
        );
        let names = self.interfaces.get_ref();
        if names.is_empty() {
            errs.push(cx.at(
                self.interfaces.span(),
                "gist.interfaces",
                "lists no interface: GIST needs at least one".into(),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for n in names {
            if !seen.insert(n) {
                errs.push(cx.at(
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
                errs.push(cx.line(
                    at(v),
                    field,
                    format!("{:?} is too short: at least {min}ms", v.get_ref().0),
                ));
            }
        }
        if let Some(v) = &self.max_state_lifetime
            && v.get_ref().0 < std::time::Duration::from_secs(1)
        {
            errs.push(cx.line(
                at(v),
                "gist.max_state_lifetime",
                format!("{:?} is too short: at least 1s", v.get_ref().0),
            ));
        }
        if self.refresh_period.get_ref().0 > std::time::Duration::from_secs(24 * 3600) {
            errs.push(cx.line(
                at(&self.refresh_period),
                "gist.refresh_period",
                "more than a day: routing state would outlive any route".into(),
            ));
        }
        let transports = self.transports.get_ref();
        for t in transports {
            if !matches!(t.as_str(), "udp" | "tcp" | "tls") {
                errs.push(cx.at(
                    self.transports.span(),
                    "gist.transports",
                    format!("{t:?}: \"udp\", \"tcp\" or \"tls\""),
                ));
            }
        }
        if transports.iter().any(|t| t == "tls") && self.tls.is_none() {
            errs.push(cx.at(
                self.transports.span(),
                "gist.transports",
                "\"tls\" needs a [gist.tls] section (certificate, key, ca)".into(),
            ));
        }
        if let Some(t) = &self.tls {
            let tls = t.get_ref();
            if tls.verify_peer && tls.ca.is_none() {
                errs.push(cx.at(
                    t.span(),
                    "gist.tls.ca",
                    "verify_peer needs a CA to check peers against (or verify_peer = false)".into(),
                ));
            }
            if tls.port == 0 || tls.port == GIST_UDP_PORT || Some(tls.port) == self.tcp_port() {
                errs.push(cx.at(
                    t.span(),
                    "gist.tls.port",
                    format!("{} cannot be the TLS association port", tls.port),
                ));
            }
        }
        if !transports.iter().any(|t| t == "udp") {
            errs.push(cx.at(
                self.transports.span(),
                "gist.transports",
                "needs \"udp\": Queries always go D-mode (RFC 5971 §4.4.1)".into(),
            ));
        }
        if self.tcp_port == 0 || self.tcp_port == GIST_UDP_PORT {
            errs.push(cx.line(
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
                errs.push(cx.at(self.relay.span(), "gist.relay", why));
            }
        }
        for (field, v) in [
            ("gist.ipv4_router_alert", self.ipv4_router_alert),
            ("gist.ipv6_router_alert", self.ipv6_router_alert),
        ] {
            if v == u16::MAX {
                errs.push(cx.line(0, field, "65535 is reserved (RFC 5350 §3)".into()));
            }
        }
        if let Err(m) = self.router_alert_values() {
            errs.push(cx.at(self.router_alert.span(), "gist.router_alert", m));
        }
    }

    /// The Router Alert values of the engine's Q-mode messages (see the module documentation),
    /// or what is wrong with `[gist.router_alert]`.
    pub fn router_alert_values(&self) -> Result<pathwise_gist::RouterAlertValues, String> {
        let mut configured = std::collections::BTreeMap::new();
        for (k, &v) in self.router_alert.get_ref() {
            let nslpid: u16 = k
                .parse()
                .map_err(|_| format!("{k:?} is not an NSLPID (0 to 65535)"))?;
            if v == u16::MAX {
                return Err(format!("{k} = 65535: the value is reserved (RFC 5350 §3)"));
            }
            configured.insert(nslpid, v);
        }
        Ok(pathwise_gist::RouterAlertValues {
            configured,
            default_v4: self.ipv4_router_alert,
            default_v6: self.ipv6_router_alert,
        })
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
        // Default cap: 15 minutes, or three refresh periods if longer.
        assert_eq!(g.max_state_lifetime().as_secs(), 900);
        let c = NodeConfig::parse(
            "node.toml",
            &format!("{GOOD}max_state_lifetime = \"2min\"\n"),
        )
        .unwrap();
        assert_eq!(c.gist.unwrap().max_state_lifetime().as_secs(), 120);
        let e = NodeConfig::parse(
            "node.toml",
            &format!("{GOOD}max_state_lifetime = \"10ms\"\n"),
        );
        assert!(e.is_err());
        assert_eq!(g.ipv6_router_alert, super::DEFAULT_IPV6_ROUTER_ALERT);
        assert_eq!(g.interception, super::Interception::Auto);
        assert!(g.relay.get_ref().is_empty());
        assert!(c.rsvp.is_none());
        let c = NodeConfig::parse("node.toml", &format!("{GOOD}relay = [42, 1000]\n")).unwrap();
        assert_eq!(c.gist.unwrap().relay.get_ref(), &[42, 1000]);
    }

    #[test]
    fn router_alert_values_per_nslpid() {
        let text = GOOD.replace(
            "cookie_mode = \"random\"",
            "interception = \"netfilter\"\nipv4_router_alert = 7\n[gist.router_alert]\n42 = 42\n33 = 9",
        );
        let c = NodeConfig::parse("node.toml", &text).unwrap();
        let g = c.gist.unwrap();
        assert_eq!(g.interception, super::Interception::Netfilter);
        let v = g.router_alert_values().unwrap();
        // Configured, configured over registered, registered (QoS NSLP), defaults.
        assert_eq!((v.value(42, false), v.value(42, true)), (42, 42));
        assert_eq!(v.value(33, true), 9);
        assert_eq!((v.value(1, false), v.value(1, true)), (33, 36));
        assert_eq!((v.value(32704, false), v.value(32704, true)), (7, 65503));
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
            ("\"30s\"", "\"2days\"", 7, "gist.refresh_period"),
            ("\"random\"", "\"strong\"", 8, "gist.cookie_mode"),
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
            (
                "cookie_mode = \"random\"",
                "ipv4_router_alert = 65535",
                0,
                "gist.ipv4_router_alert",
            ),
            (
                "cookie_mode = \"random\"",
                "[gist.router_alert]\n42 = 42\nping = 7",
                8,
                "gist.router_alert",
            ),
            (
                "cookie_mode = \"random\"",
                "[gist.router_alert]\n42 = 65535",
                8,
                "gist.router_alert",
            ),
            (
                "cookie_mode = \"random\"",
                "interception = \"magic\"",
                8,
                "gist.interception",
            ),
            ("cookie_mode", "cookie_mod", 8, "gist.cookie_mod"),
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
                "gist.tls.verify",
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
            (
                "cookie_mode = \"random\"",
                "relay = [70000]",
                8,
                "gist.relay[0]",
            ),
            ("cookie_mode = \"random\"", "relay = 42", 8, "gist.relay"),
        ] {
            let e = NodeConfig::parse("node.toml", &GOOD.replace(from, to)).unwrap_err();
            assert_eq!((e.line, e.field.as_str()), (line, field), "{to}: {e}");
        }
    }
}
