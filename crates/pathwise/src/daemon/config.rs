//! `node.toml`: what `pathwise daemon` runs. Parsing is strict (unknown fields are errors) and
//! every error names the file, the line and the field, so nothing starts half-configured.
//!
//! ```toml
//! [daemon]
//! socket = "/run/pathwise/pathwise.sock"   # management socket (CLI verbs)
//! metrics = "127.0.0.1:9464"               # optional: Prometheus text on http://…/metrics
//! log = "info"                              # error | warn | info | debug | trace
//!
//! [rsvp]                                    # present: RSVP runs
//! refresh = "30s"                           # R (RFC 2205 §3.7)
//! keep_multiplier = 3                       # K
//! local_repair_delay = "2s"                 # W (RFC 2205 §3.6)
//! traffic_control = "htb"                   # "htb" (Linux tc) or "memory" (admission only)
//! timer_wheel = { slot_width = "10ms", slots = 256, levels = 3, fuzzy = false }
//! refresh_reduction = true                  # RFC 2961 with capable neighbours (default off)
//!
//! [[rsvp.interface]]
//! name = "eth0"
//! bandwidth = "10Mbit"
//! reservable = "8Mbit"                      # default: all of it
//! integrity = { mode = "require", key_file = "/etc/pathwise/eth0.keys" }   # RFC 2747
//! hello = { interval = "5ms", failure_multiplier = 3.5 }   # RFC 3209 §5 neighbour liveness
//! ```
//!
//! The integrity section is described in [`integrity`]; the RSVP-TE keys of `[rsvp]` (`mpls`,
//! `labels`, `explicit_null`) and `[[rsvp.lsp]]` in [`te`]; the `[gist]` section in [`gist`]. At
//! least one of `[rsvp]` and `[gist]` must be present.

pub mod gist;
pub mod integrity;
pub mod te;

pub use gist::GistSection;
pub use integrity::IntegritySection;
use pathwise_core::units::{Bandwidth, TimeSpan};
use serde::Deserialize;
use std::path::{Path, PathBuf};
pub use te::{LspSection, MplsKind};
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Process-wide settings.
    #[serde(default)]
    pub daemon: DaemonSection,
    /// RSVP, if enabled.
    pub rsvp: Option<RsvpSection>,
    /// GIST, if enabled.
    pub gist: Option<GistSection>,
    /// The file and its text, to locate errors found after parsing.
    #[serde(skip)]
    source: (String, String),
}

/// `[daemon]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonSection {
    /// Management socket path.
    #[serde(default = "default_socket")]
    pub socket: PathBuf,
    /// Address to serve Prometheus metrics on (opt-in).
    pub metrics: Option<Spanned<String>>,
    /// Log level.
    #[serde(default = "default_log")]
    pub log: String,
}

impl Default for DaemonSection {
    fn default() -> Self {
        DaemonSection {
            socket: default_socket(),
            metrics: None,
            log: default_log(),
        }
    }
}

/// The default management socket.
pub fn default_socket() -> PathBuf {
    PathBuf::from("/run/pathwise/pathwise.sock")
}

fn default_log() -> String {
    "info".into()
}

/// How reservations reach the data plane.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum TrafficControlKind {
    /// HTB classes and u32 filters through `tc`.
    #[default]
    Htb,
    /// Admission control only (no data-plane effect).
    Memory,
}

/// `[rsvp]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RsvpSection {
    /// Refresh period R.
    #[serde(default = "default_refresh")]
    pub refresh: TimeSpan,
    /// K.
    #[serde(default = "default_k")]
    pub keep_multiplier: u32,
    /// W.
    #[serde(default = "default_w")]
    pub local_repair_delay: TimeSpan,
    /// The data plane.
    #[serde(default)]
    pub traffic_control: TrafficControlKind,
    /// Timer wheel layout.
    #[serde(default)]
    pub timer_wheel: WheelSection,
    /// Interfaces RSVP runs on.
    #[serde(default, rename = "interface")]
    pub interfaces: Vec<InterfaceSection>,
    /// Where label bindings go (RSVP-TE); absent: memory.
    pub mpls: Option<Spanned<MplsKind>>,
    /// The labels this node allocates, `[first, last]`.
    pub labels: Option<Spanned<Vec<u32>>>,
    /// As an LSP egress, advertise explicit null rather than implicit null.
    #[serde(default)]
    pub explicit_null: bool,
    /// Refresh reduction (RFC 2961) with neighbours that can do it.
    #[serde(default)]
    pub refresh_reduction: bool,
    /// LSPs this node heads from the start.
    #[serde(default, rename = "lsp")]
    pub lsps: Vec<LspSection>,
}

impl RsvpSection {
    /// Where label bindings go.
    pub fn mpls_kind(&self) -> MplsKind {
        self.mpls
            .as_ref()
            .map_or(MplsKind::Memory, |m| *m.get_ref())
    }

    /// The label range for the engine.
    pub fn label_range(&self) -> (u32, u32) {
        match self.labels.as_ref().map(|l| l.get_ref().as_slice()) {
            Some(&[first, last]) => (first, last),
            _ => pathwise_rsvp::Config::default().label_range,
        }
    }
}

fn default_refresh() -> TimeSpan {
    TimeSpan(std::time::Duration::from_secs(30))
}
fn default_k() -> u32 {
    3
}
fn default_w() -> TimeSpan {
    TimeSpan(std::time::Duration::from_secs(2))
}

/// `timer_wheel = { … }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WheelSection {
    /// Finest slot width.
    #[serde(default = "default_slot")]
    pub slot_width: TimeSpan,
    /// Slots per level.
    #[serde(default = "default_slots")]
    pub slots: usize,
    /// Levels.
    #[serde(default = "default_levels")]
    pub levels: usize,
    /// Fuzzy firing (seed 001 §III.B).
    #[serde(default)]
    pub fuzzy: bool,
}

impl Default for WheelSection {
    fn default() -> Self {
        WheelSection {
            slot_width: default_slot(),
            slots: default_slots(),
            levels: default_levels(),
            fuzzy: false,
        }
    }
}
fn default_slot() -> TimeSpan {
    TimeSpan(std::time::Duration::from_millis(10))
}
fn default_slots() -> usize {
    256
}
fn default_levels() -> usize {
    3
}

/// `[[rsvp.interface]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterfaceSection {
    /// Kernel interface name.
    pub name: Spanned<String>,
    /// Link bandwidth.
    pub bandwidth: Bandwidth,
    /// What reservations may take (default: all of `bandwidth`).
    pub reservable: Option<Spanned<Bandwidth>>,
    /// Message integrity (RFC 2747); absent means off.
    pub integrity: Option<IntegritySection>,
    /// Hello (RFC 3209 §5); absent means no Hellos on this interface.
    pub hello: Option<HelloSection>,
}

/// `hello = { … }` of an interface.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HelloSection {
    /// Time between HELLO REQUESTs to each neighbour.
    #[serde(default = "default_hello_interval")]
    pub interval: TimeSpan,
    /// Intervals of silence after which a neighbour has failed.
    #[serde(default = "default_hello_multiplier")]
    pub failure_multiplier: f64,
}

fn default_hello_interval() -> TimeSpan {
    TimeSpan(pathwise_rsvp::HelloConfig::default().interval)
}

fn default_hello_multiplier() -> f64 {
    pathwise_rsvp::HelloConfig::default().failure_multiplier
}

impl HelloSection {
    /// The engine's setting.
    pub fn config(&self) -> pathwise_rsvp::HelloConfig {
        pathwise_rsvp::HelloConfig {
            interval: self.interval.0,
            failure_multiplier: self.failure_multiplier,
        }
    }
}

/// A configuration error, located.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {field}: {message}")]
pub struct ConfigError {
    /// The file.
    pub file: String,
    /// 1-based line (0: the file as a whole).
    pub line: usize,
    /// The field, as a dotted path.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

impl NodeConfig {
    /// Read and check `path`.
    pub fn load(path: &Path) -> Result<NodeConfig, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: file.clone(),
            line: 0,
            field: "-".into(),
            message: e.to_string(),
        })?;
        let cfg = Self::parse(&file, &text)?;
        let inline = cfg.rsvp.iter().flat_map(|r| &r.interfaces).any(|i| {
            i.integrity
                .as_ref()
                .is_some_and(IntegritySection::has_inline_keys)
        });
        if inline {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path).map_or(0, |m| m.permissions().mode() & 0o7777);
            if mode & 0o077 != 0 {
                return Err(ConfigError {
                    file,
                    line: 0,
                    field: "rsvp.interface.integrity.keys".into(),
                    message: format!(
                        "the file holds keys but has mode {mode:04o}: it must not be \
                         accessible by group or others (chmod 600), or move the keys to a \
                         key_file"
                    ),
                });
            }
        }
        Ok(cfg)
    }

    /// Parse and check the text of `file`.
    pub fn parse(file: &str, text: &str) -> Result<NodeConfig, ConfigError> {
        let cx = Source { file, text };
        let mut cfg: NodeConfig = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(0, |s| line_of(text, s.start));
            cx.line(line, "-", e.message().to_string())
        })?;
        if let Some(r) = &cfg.rsvp {
            let mut seen = std::collections::BTreeSet::new();
            for (n, i) in r.interfaces.iter().enumerate() {
                let field = |f: &str| format!("rsvp.interface[{n}].{f}");
                if !seen.insert(i.name.get_ref().clone()) {
                    return Err(cx.at(
                        i.name.span(),
                        &field("name"),
                        format!("interface {:?} listed twice", i.name.get_ref()),
                    ));
                }
                if let Some(h) = &i.hello
                    && (h.interval.0.is_zero()
                        || !(h.failure_multiplier.is_finite() && h.failure_multiplier >= 1.0))
                {
                    return Err(cx.at(
                        i.name.span(),
                        &field("hello"),
                        "needs a non-zero interval and a failure_multiplier of at least 1".into(),
                    ));
                }
                if let Some(integrity) = &i.integrity {
                    integrity.check(&cx, &field("integrity"))?;
                }
                if let Some(res) = &i.reservable
                    && res.get_ref().0 > i.bandwidth.0
                {
                    return Err(cx.at(
                        res.span(),
                        &field("reservable"),
                        format!(
                            "{} is more than the interface's bandwidth {}",
                            res.get_ref(),
                            i.bandwidth
                        ),
                    ));
                }
            }
            te::check(&cx, r.labels.as_ref(), &r.lsps)?;
            if r.timer_wheel.slots < 2
                || r.timer_wheel.levels < 1
                || r.timer_wheel.slot_width.0.is_zero()
            {
                return Err(cx.line(
                    0,
                    "rsvp.timer_wheel",
                    "needs slots ≥ 2, levels ≥ 1 and a non-zero slot width".into(),
                ));
            }
        }
        if let Some(g) = &cfg.gist {
            g.check(&cx)?;
        }
        if let Some(m) = &cfg.daemon.metrics
            && m.get_ref().parse::<std::net::SocketAddr>().is_err()
        {
            return Err(cx.at(
                m.span(),
                "daemon.metrics",
                format!("{:?} is not an address:port", m.get_ref()),
            ));
        }
        if !matches!(
            cfg.daemon.log.as_str(),
            "error" | "warn" | "info" | "debug" | "trace"
        ) {
            return Err(cx.line(
                0,
                "daemon.log",
                format!("{:?}: error, warn, info, debug or trace", cfg.daemon.log),
            ));
        }
        cfg.source = (file.to_string(), text.to_string());
        Ok(cfg)
    }

    /// The integrity policy of the `n`th RSVP interface (off when it has no integrity
    /// section); reads its key files.
    pub fn integrity_policy(
        &self,
        n: usize,
        iface: &InterfaceSection,
    ) -> Result<pathwise_auth::Policy, ConfigError> {
        let Some(section) = &iface.integrity else {
            return Ok(pathwise_auth::Policy::default());
        };
        section.policy(&self.source(), &format!("rsvp.interface[{n}].integrity"))
    }

    /// An error about the value at `span`, found after parsing (e.g. against the running
    /// system).
    pub fn error_at(
        &self,
        span: std::ops::Range<usize>,
        field: &str,
        message: String,
    ) -> ConfigError {
        self.source().at(span, field, message)
    }

    fn source(&self) -> Source<'_> {
        Source {
            file: &self.source.0,
            text: &self.source.1,
        }
    }
}

/// The file being checked, to locate errors in it.
pub(crate) struct Source<'a> {
    /// Its name.
    pub file: &'a str,
    /// Its text.
    pub text: &'a str,
}

impl Source<'_> {
    /// An error at 1-based `line` (0: the file as a whole).
    pub fn line(&self, line: usize, field: &str, message: String) -> ConfigError {
        ConfigError {
            file: self.file.into(),
            line,
            field: field.into(),
            message,
        }
    }

    /// An error about the value at `span`.
    pub fn at(&self, span: std::ops::Range<usize>, field: &str, message: String) -> ConfigError {
        self.line(line_of(self.text, span.start), field, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[daemon]
socket = "/tmp/pw.sock"
metrics = "127.0.0.1:9464"

[rsvp]
refresh = "5s"
traffic_control = "memory"

[[rsvp.interface]]
name = "veth1"
bandwidth = "10Mbit"
reservable = "8Mbit"
"#;

    #[test]
    fn parses_a_node_config() {
        let c = NodeConfig::parse("node.toml", GOOD).unwrap();
        let r = c.rsvp.unwrap();
        assert_eq!(r.refresh.0, std::time::Duration::from_secs(5));
        assert_eq!(r.keep_multiplier, 3);
        assert_eq!(r.traffic_control, TrafficControlKind::Memory);
        assert_eq!(
            r.interfaces[0].reservable.as_ref().unwrap().get_ref().0,
            8_000_000
        );
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let bad = GOOD.replace("reservable = \"8Mbit\"", "reservable = \"80Mbit\"");
        let e = NodeConfig::parse("node.toml", &bad).unwrap_err();
        assert_eq!(
            (e.file.as_str(), e.line, e.field.as_str()),
            ("node.toml", 13, "rsvp.interface[0].reservable")
        );
        let e = NodeConfig::parse("node.toml", &GOOD.replace("refresh", "refrsh")).unwrap_err();
        assert_eq!(e.line, 7);
        assert!(e.message.contains("refrsh"), "{e}");
        let e =
            NodeConfig::parse("node.toml", &GOOD.replace("\"10Mbit\"", "\"fast\"")).unwrap_err();
        assert_eq!(e.line, 12);
        assert!(e.to_string().starts_with("node.toml:12:"), "{e}");
        let e = NodeConfig::parse("node.toml", &GOOD.replace("127.0.0.1:9464", "localhost"))
            .unwrap_err();
        assert_eq!(e.field, "daemon.metrics");
    }

    #[test]
    fn hello_settings() {
        let with = GOOD.replace(
            "reservable = \"8Mbit\"",
            "reservable = \"8Mbit\"\nhello = { interval = \"100ms\" }",
        );
        let c = NodeConfig::parse("node.toml", &with).unwrap();
        let h = c.rsvp.unwrap().interfaces[0]
            .hello
            .as_ref()
            .unwrap()
            .config();
        assert_eq!(h.interval, std::time::Duration::from_millis(100));
        assert_eq!(h.failure_multiplier, 3.5);
        for bad in ["interval = \"0s\"", "failure_multiplier = 0.5"] {
            let text = GOOD.replace(
                "reservable = \"8Mbit\"",
                &format!("reservable = \"8Mbit\"\nhello = {{ {bad} }}"),
            );
            let e = NodeConfig::parse("node.toml", &text).unwrap_err();
            assert_eq!(e.field, "rsvp.interface[0].hello", "{bad}");
        }
    }
}
