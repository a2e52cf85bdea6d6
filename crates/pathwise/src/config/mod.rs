//! `node.toml`: what `pathwise daemon` runs. Parsing is strict (unknown fields are errors) and
//! every error names the file, the line and the field, so nothing starts half-configured.
//!
//! ```toml
//! [daemon]
//! socket = "/run/pathwise/pathwise.sock"   # management socket (CLI verbs): mode 0600, for
//!                                          # the daemon's user and root only
//! socket_group = "pathwise"                # optional: mode 0660 and this group, whose
//!                                          # members may use it too (the daemon must be one)
//! metrics = "127.0.0.1:9464"               # optional: OpenMetrics on http://…/metrics
//! log = "info"                              # error | warn | info | debug | trace
//! threads = 2                               # optional: RSVP shards (default: one per core,
//!                                           # crate::rsvp::shard)
//! receive_hold = "1ms"                      # optional: under load, wait this long between
//!                                           # wake-ups to read batches (crate::daemon::hold;
//!                                           # "0s": off)
//!
//! [rsvp]                                    # present: RSVP runs
//! [gist]                                    # present: GIST runs
//! [qos_nslp]                                # present: the QoS NSLP runs (needs both above)
//! ```
//!
//! The `[rsvp]` section is described in [`crate::rsvp::config`] (its integrity keys in
//! [`crate::rsvp::config::integrity`], the RSVP-TE keys and `[[rsvp.lsp]]` in
//! [`crate::rsvp::config::te`]); the `[gist]` section in [`crate::gist::config`]; `[qos_nslp]` in [`crate::qos::config`]. At least one
//! of `[rsvp]` and `[gist]` must be present. This module loads the file, holds `[daemon]` and
//! locates errors; each service checks its own section.

pub mod check;

use crate::gist::config::GistSection;
use crate::rsvp::config::{IntegritySection, InterfaceSection, RsvpSection};
use serde::Deserialize;
use std::path::{Path, PathBuf};
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
    /// The QoS NSLP, if enabled (over GIST, sharing RSVP's traffic control).
    pub qos_nslp: Option<crate::qos::config::QosSection>,
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
    /// A group whose members may use the management socket too.
    pub socket_group: Option<Spanned<String>>,
    /// Address to serve metrics on over HTTP (opt-in; [`crate::metrics`], docs/metrics.md).
    pub metrics: Option<Spanned<String>>,
    /// Log level.
    #[serde(default = "default_log")]
    pub log: String,
    /// RSVP shards: engine threads, sessions spread over them by a hash of the SESSION
    /// ([`crate::rsvp::shard`]). Absent: one per core ([`NodeConfig::rsvp_shards`]); 1 runs
    /// one engine on the daemon's loop.
    pub threads: Option<Spanned<usize>>,
    /// Receive hold-off: while datagrams arrive faster than a few per this time, the loop
    /// waits this long before polling again ([`crate::daemon::hold`]); zero: never.
    #[serde(default = "default_receive_hold")]
    pub receive_hold: Spanned<pathwise_core::units::TimeSpan>,
}

impl Default for DaemonSection {
    fn default() -> Self {
        DaemonSection {
            socket: default_socket(),
            socket_group: None,
            metrics: None,
            log: default_log(),
            threads: None,
            receive_hold: default_receive_hold(),
        }
    }
}

/// The longest `receive_hold`: one Hello interval at its default (RFC 3209 §5.3: 5 ms, a
/// neighbour lost after 3.5 intervals without one), the finest timer the daemon keeps.
pub const MAX_RECEIVE_HOLD: std::time::Duration = std::time::Duration::from_millis(5);

fn default_receive_hold() -> Spanned<pathwise_core::units::TimeSpan> {
    let hold = pathwise_core::units::TimeSpan(std::time::Duration::from_millis(1));
    Spanned::new(0..0, hold)
}

/// The default management socket.
pub fn default_socket() -> PathBuf {
    PathBuf::from("/run/pathwise/pathwise.sock")
}

fn default_log() -> String {
    "info".into()
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

/// The first of a check's errors (a failed check has at least one).
fn first(errs: Vec<ConfigError>) -> ConfigError {
    errs.into_iter().next().unwrap_or_else(|| ConfigError {
        file: "-".into(),
        line: 0,
        field: "-".into(),
        message: "invalid configuration".into(),
    })
}

pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

impl NodeConfig {
    /// The number of RSVP shards: `[daemon] threads`, or by default one per core the process
    /// may run on, at most [`crate::rsvp::shard::MAX_SHARDS`] and at most one per label of
    /// `rsvp.labels` (each shard allocates from a range of its own).
    pub fn rsvp_shards(&self) -> usize {
        if let Some(t) = &self.daemon.threads {
            return *t.get_ref();
        }
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let labels = self
            .rsvp
            .as_ref()
            .map_or(u64::MAX, RsvpSection::label_count);
        cores
            .min(crate::rsvp::shard::MAX_SHARDS)
            .min(usize::try_from(labels).unwrap_or(usize::MAX))
            .max(1)
    }

    /// Read and check `path`; the first error found.
    pub fn load(path: &Path) -> Result<NodeConfig, ConfigError> {
        Self::load_all(path).map_err(first)
    }

    /// Read and check `path`; every error found (see [`check`] for what "every" can mean).
    pub fn load_all(path: &Path) -> Result<NodeConfig, Vec<ConfigError>> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            vec![ConfigError {
                file: file.clone(),
                line: 0,
                field: "-".into(),
                message: e.to_string(),
            }]
        })?;
        let cfg = Self::parse_all(&file, &text)?;
        let inline = cfg.rsvp.iter().flat_map(|r| &r.interfaces).any(|i| {
            i.integrity
                .as_ref()
                .is_some_and(IntegritySection::has_inline_keys)
        });
        if inline {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path).map_or(0, |m| m.permissions().mode() & 0o7777);
            if mode & 0o077 != 0 {
                return Err(vec![ConfigError {
                    file,
                    line: 0,
                    field: "rsvp.interface.integrity.keys".into(),
                    message: format!(
                        "the file holds keys but has mode {mode:04o}: it must not be \
                         accessible by group or others (chmod 600), or move the keys to a \
                         key_file"
                    ),
                }]);
            }
        }
        Ok(cfg)
    }

    /// Parse and check the text of `file`; the first error found.
    pub fn parse(file: &str, text: &str) -> Result<NodeConfig, ConfigError> {
        Self::parse_all(file, text).map_err(first)
    }

    /// Parse and check the text of `file`; every error found. Each section is deserialized on
    /// its own, so a bad value in `[rsvp]` does not hide one in `[gist]`.
    pub fn parse_all(file: &str, text: &str) -> Result<NodeConfig, Vec<ConfigError>> {
        use serde::de::IntoDeserializer as _;
        use toml::de::{DeTable, ValueDeserializer};
        let cx = Source { file, text };
        let (root, syntax) = DeTable::parse_recoverable(text);
        if !syntax.is_empty() {
            return Err(syntax
                .iter()
                .map(|e| check::toml_error(file, text, e))
                .collect());
        }
        let mut errs = Vec::new();
        let mut cfg = NodeConfig {
            daemon: DaemonSection::default(),
            rsvp: None,
            gist: None,
            qos_nslp: None,
            source: (file.to_string(), text.to_string()),
        };
        for (key, value) in root.into_inner() {
            let de: ValueDeserializer<'_> = value.into_deserializer();
            let parsed = match key.get_ref().as_ref() {
                "daemon" => DaemonSection::deserialize(de).map(|d| cfg.daemon = d),
                "rsvp" => RsvpSection::deserialize(de).map(|r| cfg.rsvp = Some(r)),
                "gist" => GistSection::deserialize(de).map(|g| cfg.gist = Some(g)),
                "qos_nslp" => {
                    crate::qos::config::QosSection::deserialize(de).map(|q| cfg.qos_nslp = Some(q))
                }
                other => {
                    errs.push(cx.at(
                        key.span(),
                        other,
                        format!(
                            "unknown section `{other}`, expected `daemon`, `rsvp`, `gist` or \
                             `qos_nslp`"
                        ),
                    ));
                    continue;
                }
            };
            if let Err(e) = parsed {
                errs.push(check::toml_error(file, text, &e));
            }
        }
        if let Some(r) = &cfg.rsvp {
            r.check(&cx, &mut errs);
        }
        if let Some(g) = &cfg.gist {
            g.check(&cx, &mut errs);
        }
        if let Some(q) = &cfg.qos_nslp {
            q.check(&cx, cfg.gist.is_some(), cfg.rsvp.is_some(), &mut errs);
        }
        crate::rsvp::shard::check_config(&cx, &cfg, &mut errs);
        if let Some(m) = &cfg.daemon.metrics
            && m.get_ref().parse::<std::net::SocketAddr>().is_err()
        {
            errs.push(cx.at(
                m.span(),
                "daemon.metrics",
                format!("{:?} is not an address:port", m.get_ref()),
            ));
        }
        if cfg.daemon.receive_hold.get_ref().0 > MAX_RECEIVE_HOLD {
            errs.push(cx.at(
                cfg.daemon.receive_hold.span(),
                "daemon.receive_hold",
                format!(
                    "{}: at most {} (a held message waits this long at each hop)",
                    cfg.daemon.receive_hold.get_ref(),
                    pathwise_core::units::TimeSpan(MAX_RECEIVE_HOLD)
                ),
            ));
        }
        if !matches!(
            cfg.daemon.log.as_str(),
            "error" | "warn" | "info" | "debug" | "trace"
        ) {
            errs.push(cx.line(
                check::Document::parse(text).line_of_field("daemon.log"),
                "daemon.log",
                format!("{:?}: error, warn, info, debug or trace", cfg.daemon.log),
            ));
        }
        if errs.is_empty() { Ok(cfg) } else { Err(errs) }
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

    /// The group allowed on the management socket (`[daemon] socket_group`), looked up in the
    /// system's group database: an unknown group is an error at its line.
    pub fn socket_group(&self) -> Result<Option<crate::mgmt::SocketGroup>, ConfigError> {
        let Some(name) = &self.daemon.socket_group else {
            return Ok(None);
        };
        crate::mgmt::SocketGroup::lookup(name.get_ref())
            .map(Some)
            .map_err(|e| self.error_at(name.span(), "daemon.socket_group", e))
    }

    /// The text of the file, as loaded.
    pub fn text(&self) -> &str {
        &self.source.1
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

/// The most sessions a protocol's `expected_sessions` may make room for: about 4 GB of tables at
/// the RSVP engine's 255 B per reservation (docs/BENCHMARKS.md), taken at start-up.
pub const MAX_EXPECTED_SESSIONS: u64 = 1 << 24;

/// Check `expected_sessions` of a section (`field` names it): the room its engine's tables
/// get at start-up, so a node that knows its load neither grows them while it runs nor keeps
/// the room a doubling leaves spare. Absent: 0, grow as needed.
pub(crate) fn check_expected_sessions(
    value: Option<&Spanned<u64>>,
    cx: &Source<'_>,
    field: &str,
    errs: &mut Vec<ConfigError>,
) {
    if let Some(v) = value
        && *v.get_ref() > MAX_EXPECTED_SESSIONS
    {
        errs.push(cx.at(
            v.span(),
            field,
            format!(
                "{} is more than {MAX_EXPECTED_SESSIONS}: the tables are made at start-up",
                v.get_ref()
            ),
        ));
    }
}

/// The engine's `expected_sessions` from a checked section's.
pub fn expected_sessions(value: Option<&Spanned<u64>>) -> usize {
    value.map_or(0, |v| {
        usize::try_from((*v.get_ref()).min(MAX_EXPECTED_SESSIONS)).unwrap_or(0)
    })
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
    use crate::rsvp::config::TrafficControlKind;

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

    /// `expected_sessions` sizes RSVP's and GIST's engines at start-up; absent, they grow; more
    /// than the limit is refused where it is written.
    #[test]
    fn expected_sessions_size_the_engines_within_a_limit() {
        let with = |rsvp: &str, gist: &str| {
            GOOD.replace(
                "traffic_control = \"memory\"",
                &format!("traffic_control = \"memory\"\n{rsvp}"),
            ) + &format!("\n[gist]\ninterfaces = [\"veth1\"]\n{gist}\n")
        };
        let c = NodeConfig::parse(
            "node.toml",
            &with("expected_sessions = 1000000", "expected_sessions = 300000"),
        )
        .unwrap();
        let r = c.rsvp.as_ref().unwrap();
        let g = c.gist.as_ref().unwrap();
        assert_eq!(expected_sessions(r.expected_sessions.as_ref()), 1_000_000);
        assert_eq!(expected_sessions(g.expected_sessions.as_ref()), 300_000);
        let c = NodeConfig::parse("node.toml", &with("", "")).unwrap();
        assert_eq!(
            expected_sessions(c.rsvp.unwrap().expected_sessions.as_ref()),
            0
        );
        let e =
            NodeConfig::parse("node.toml", &with("", "expected_sessions = 100000000")).unwrap_err();
        assert_eq!(
            (e.line, e.field.as_str()),
            (18, "gist.expected_sessions"),
            "{e}"
        );
        assert!(e.message.contains("16777216"), "{e}");
        let e = NodeConfig::parse("node.toml", &with("expected_sessions = -1", "")).unwrap_err();
        assert_eq!(
            (e.line, e.field.as_str()),
            (9, "rsvp.expected_sessions"),
            "{e}"
        );
    }

    #[test]
    fn receive_hold_is_a_duration_of_at_most_5ms() {
        let with = |line: &str| GOOD.replace("metrics = ", &format!("{line}\nmetrics = "));
        let hold = |text: &str| {
            NodeConfig::parse("node.toml", text).map(|c| c.daemon.receive_hold.into_inner().0)
        };
        use std::time::Duration;
        assert_eq!(hold(GOOD).unwrap(), Duration::from_millis(1), "the default");
        assert_eq!(
            hold(&with("receive_hold = \"250us\"")).unwrap(),
            Duration::from_micros(250)
        );
        assert_eq!(
            hold(&with("receive_hold = \"0s\"")).unwrap(),
            Duration::ZERO
        );
        let e = hold(&with("receive_hold = \"6ms\"")).unwrap_err();
        assert_eq!(
            (e.line, e.field.as_str()),
            (4, "daemon.receive_hold"),
            "{e}"
        );
        assert!(e.message.contains("at most 5ms"), "{e}");
        let e = hold(&with("receive_hold = 1")).unwrap_err();
        assert_eq!(e.line, 4, "{e}");
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
    fn socket_group_is_looked_up_and_an_unknown_one_is_located() {
        let with = |g: &str| GOOD.replace("[rsvp]", &format!("socket_group = \"{g}\"\n\n[rsvp]"));
        let root = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(0))
            .unwrap()
            .unwrap()
            .name;
        let c = NodeConfig::parse("node.toml", &with(&root)).unwrap();
        assert_eq!(c.socket_group().unwrap().unwrap().gid, 0);
        let c = NodeConfig::parse("node.toml", &with("pathwise-no-such-group")).unwrap();
        let e = c.socket_group().unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (6, "daemon.socket_group"));
        assert!(e.message.contains("no group"), "{e}");
        assert!(
            NodeConfig::parse("node.toml", GOOD)
                .unwrap()
                .socket_group()
                .unwrap()
                .is_none()
        );
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
