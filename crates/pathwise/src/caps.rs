//! The Linux capabilities the services need instead of root, and the check that names the
//! missing ones before anything is set up.
//!
//! | capability | needed for |
//! |---|---|
//! | `CAP_NET_RAW` | raw IP sockets: RSVP (IP protocol 46, RFC 2205 §1.1 Router Alert interception), GIST's Router Alert sockets (UDP with IP options, RFC 5971 §5.3.2) |
//! | `CAP_NET_ADMIN` | traffic control (`traffic_control = "htb"`, through `tc`), MPLS routes and `net.mpls` settings (`mpls = "kernel"`), netfilter queueing (`gist.interception = "netfilter"`, through `iptables`), creating a TUN device (booster gateway) |
//! | `CAP_NET_BIND_SERVICE` | ports below 1024: GIST's UDP port 270, and any configured one |
//!
//! Root has them all. A service running as another user gets them as ambient capabilities
//! (systemd `AmbientCapabilities=`, `setpriv --ambient-caps`), which also pass to the `tc` and
//! `iptables` processes the daemon runs. The check reads the effective set
//! (`/proc/self/status`, `CapEff`), so it is right for root in a user namespace too.

use std::fmt::Write as _;

/// A capability a service may need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    /// Bind ports below 1024.
    NetBindService,
    /// Configure interfaces, traffic control, routes, netfilter.
    NetAdmin,
    /// Open raw sockets.
    NetRaw,
}

impl Capability {
    /// The capability's number (`linux/capability.h`).
    pub fn number(self) -> u32 {
        match self {
            Capability::NetBindService => 10,
            Capability::NetAdmin => 12,
            Capability::NetRaw => 13,
        }
    }

    /// `CAP_NET_RAW`.
    pub fn name(self) -> &'static str {
        match self {
            Capability::NetBindService => "CAP_NET_BIND_SERVICE",
            Capability::NetAdmin => "CAP_NET_ADMIN",
            Capability::NetRaw => "CAP_NET_RAW",
        }
    }

    /// `net_raw`, as setpriv and capsh spell it.
    pub fn short_name(self) -> &'static str {
        match self {
            Capability::NetBindService => "net_bind_service",
            Capability::NetAdmin => "net_admin",
            Capability::NetRaw => "net_raw",
        }
    }
}

/// A capability and what it is needed for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need {
    /// The capability.
    pub cap: Capability,
    /// What needs it, in words.
    pub why: String,
}

impl Need {
    /// `cap` for `why`.
    pub fn new(cap: Capability, why: impl Into<String>) -> Need {
        Need {
            cap,
            why: why.into(),
        }
    }
}

/// Binding `port` needs CAP_NET_BIND_SERVICE when it is below 1024 (and not 0, "any").
pub fn port_need(port: u16, what: &str) -> Option<Need> {
    (port != 0 && port < 1024).then(|| {
        Need::new(
            Capability::NetBindService,
            format!("{what} (port {port} is below 1024)"),
        )
    })
}

/// The effective capability set of this process, from `/proc/self/status`.
pub fn effective() -> std::io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    parse_cap_eff(&status).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "no CapEff line in /proc/self/status",
        )
    })
}

fn parse_cap_eff(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

/// The needs `effective` does not cover.
pub fn missing(needs: &[Need], effective: u64) -> Vec<&Need> {
    needs
        .iter()
        .filter(|n| effective & (1u64 << n.cap.number()) == 0)
        .collect()
}

/// The error for `service` lacking `missing`: each capability with what needs it, and how to
/// grant them.
pub fn missing_message(service: &str, missing: &[&Need]) -> String {
    let mut caps: Vec<Capability> = missing.iter().map(|n| n.cap).collect();
    caps.sort_by_key(|c| c.number());
    caps.dedup();
    let mut msg = format!("{service} lacks the capabilities it needs:");
    for n in missing {
        let _ = write!(msg, "\n  {} for {}", n.cap.name(), n.why);
    }
    let names: Vec<&str> = caps.iter().map(|c| c.name()).collect();
    let short: Vec<String> = caps
        .iter()
        .map(|c| format!("+{}", c.short_name()))
        .collect();
    let _ = write!(
        msg,
        "\nrun it as root, or give it these capabilities: systemd AmbientCapabilities={} \
         (contrib/systemd), or setpriv --inh-caps {s} --ambient-caps {s} …",
        names.join(" "),
        s = short.join(",")
    );
    msg
}

/// Fail, naming each missing capability and what needs it, unless this process holds all of
/// `needs`. When the effective set cannot be read, the operations themselves will say.
pub fn require(service: &str, needs: &[Need]) -> anyhow::Result<()> {
    let Ok(eff) = effective() else {
        return Ok(());
    };
    let missing = missing(needs, eff);
    if missing.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("{}", missing_message(service, &missing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_effective_set_is_read_and_missing_capabilities_named() {
        assert_eq!(
            parse_cap_eff("Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t0000000000003000\n"),
            Some(0x3000)
        );
        assert_eq!(parse_cap_eff("Name:\tx\n"), None);
        assert!(effective().is_ok());
        let needs = [
            Need::new(Capability::NetRaw, "the raw RSVP socket"),
            Need::new(Capability::NetAdmin, "traffic_control = \"htb\""),
            Need::new(Capability::NetRaw, "GIST's Router Alert sockets"),
        ];
        // CAP_NET_ADMIN (12) only: both CAP_NET_RAW needs are missing.
        let m = missing(&needs, 1 << 12);
        assert_eq!(m.len(), 2);
        let msg = missing_message("pathwise daemon", &m);
        assert!(msg.contains("CAP_NET_RAW for the raw RSVP socket"), "{msg}");
        assert!(
            msg.contains("AmbientCapabilities=CAP_NET_RAW (contrib"),
            "each capability once: {msg}"
        );
        assert!(msg.contains("--ambient-caps +net_raw "), "{msg}");
        assert!(missing(&needs, 0x3000).is_empty());
        assert!(missing(&needs, u64::MAX).is_empty());
    }

    #[test]
    fn low_ports_need_net_bind_service() {
        assert_eq!(
            port_need(270, "GIST").map(|n| n.cap),
            Some(Capability::NetBindService)
        );
        assert!(port_need(8899, "the oracle").is_none());
        assert!(port_need(0, "any port").is_none());
    }
}
