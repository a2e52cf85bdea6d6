//! `pathwise daemon --check node.toml`: everything the daemon checks before it starts, without
//! starting — no socket bound, no root needed.
//!
//! Beyond the file itself it checks what an unprivileged process can see of the system: the
//! interfaces exist (netlink, read-only), integrity key files and TLS certificate and key files
//! are readable, private and well-formed, and the kernel has MPLS forwarding when `mpls =
//! "kernel"`. What needs the daemon's privileges (binding sockets, Router Alert and netfilter
//! interception, traffic control, MPLS label settings) is reported as not checked.

use crate::config::check::CheckReport;
use crate::config::{ConfigError, NodeConfig};
use crate::rsvp::config::MplsKind;
use std::path::Path;

/// What the daemon needs that a check cannot try.
const NEEDS_THE_DAEMON: &str = "sockets (management, metrics, RSVP and GIST ports, Router \
                                Alert and netfilter interception) and traffic control: they \
                                need the running daemon and its privileges";

/// Check `path` as `pathwise daemon --config path` would before starting.
pub fn check(path: &Path) -> CheckReport {
    let mut report = CheckReport {
        file: path.display().to_string(),
        ..CheckReport::default()
    };
    let cfg = match NodeConfig::load_all(path) {
        Ok(cfg) => cfg,
        Err(errors) => {
            report.errors = errors;
            report.skipped.push(
                "the running system (interfaces, key and certificate files): the file has \
                 errors"
                    .into(),
            );
            return report;
        }
    };
    if cfg.rsvp.is_none() && cfg.gist.is_none() {
        report.errors.push(ConfigError {
            file: report.file.clone(),
            line: 0,
            field: "-".into(),
            message: "no service enabled (add an [rsvp] or a [gist] section)".into(),
        });
    }
    if let Err(e) = cfg.socket_group() {
        report.errors.push(e);
    }
    check_interfaces(&cfg, &mut report);
    if let Some(r) = &cfg.rsvp {
        for (n, i) in r.interfaces.iter().enumerate() {
            if let Err(e) = cfg.integrity_policy(n, i) {
                report.errors.push(e);
            }
        }
        if let (MplsKind::Kernel, Some(m)) = (r.mpls_kind(), &r.mpls) {
            if Path::new("/proc/sys/net/mpls").is_dir() {
                report.skipped.push(
                    "rsvp.mpls: net.mpls.platform_labels and MPLS input on the interfaces \
                     (set by the daemon, with CAP_NET_ADMIN)"
                        .into(),
                );
            } else {
                report.errors.push(
                    cfg.error_at(
                        m.span(),
                        "rsvp.mpls",
                        "MPLS forwarding is not available: this kernel has no MPLS forwarding \
                     (/proc/sys/net/mpls missing: CONFIG_MPLS_ROUTING, modprobe mpls_router)"
                            .into(),
                    ),
                );
            }
        }
    }
    if let Some(t) = cfg.gist.as_ref().and_then(|g| g.tls.as_ref())
        && let Err(e) = crate::gist::tls::TlsContext::load(&cfg, t.get_ref())
    {
        report.errors.push(match e.downcast::<ConfigError>() {
            Ok(located) => located,
            Err(other) => cfg.error_at(t.span(), "gist.tls", format!("{other:#}")),
        });
    }
    report.skipped.push(NEEDS_THE_DAEMON.into());
    report.summary = summary(&cfg);
    report
}

/// The interfaces named in the file exist (the daemon refuses to start otherwise).
fn check_interfaces(cfg: &NodeConfig, report: &mut CheckReport) {
    let kernel = match pathwise_net::interfaces() {
        Ok(k) => k,
        Err(e) => {
            report
                .skipped
                .push(format!("the interfaces exist (cannot list them: {e})"));
            return;
        }
    };
    let exists = |name: &str| kernel.iter().any(|k| k.name == name);
    if let Some(r) = &cfg.rsvp {
        for (n, i) in r.interfaces.iter().enumerate() {
            let name = i.name.get_ref();
            if !exists(name) {
                report.errors.push(cfg.error_at(
                    i.name.span(),
                    &format!("rsvp.interface[{n}].name"),
                    format!("no interface {name:?} on this system"),
                ));
            }
        }
    }
    if let Some(g) = &cfg.gist {
        for name in g.interfaces.get_ref() {
            if !exists(name) {
                report.errors.push(cfg.error_at(
                    g.interfaces.span(),
                    "gist.interfaces",
                    format!("no interface {name:?} on this system"),
                ));
            }
        }
    }
}

fn summary(cfg: &NodeConfig) -> String {
    let mut parts = Vec::new();
    if let Some(r) = &cfg.rsvp {
        parts.push(format!(
            "RSVP on {} interface(s), {} LSP(s)",
            r.interfaces.len(),
            r.lsps.len()
        ));
        if cfg.rsvp_shards() > 1 {
            parts.push(format!("{} RSVP shards", cfg.rsvp_shards()));
        }
    }
    if let Some(g) = &cfg.gist {
        parts.push(format!(
            "GIST on {} interface(s), transports {}",
            g.interfaces.get_ref().len(),
            g.transports.get_ref().join("+")
        ));
    }
    parts.push(format!("management socket {}", cfg.daemon.socket.display()));
    if let Some(g) = &cfg.daemon.socket_group {
        parts.push(format!("socket group {}", g.get_ref()));
    }
    let mut caps: Vec<&str> = crate::daemon::capability_needs(cfg)
        .iter()
        .map(|n| n.cap.name())
        .collect();
    caps.sort_unstable();
    caps.dedup();
    if !caps.is_empty() {
        parts.push(format!("needs {} (or root)", caps.join(", ")));
    }
    parts.join("; ")
}
