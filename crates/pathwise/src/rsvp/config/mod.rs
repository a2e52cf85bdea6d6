//! The `[rsvp]` section of `node.toml` (loaded by [`crate::config`]):
//!
//! ```toml
//! [rsvp]                                    # present: RSVP runs
//! refresh = "30s"                           # R (RFC 2205 §3.7)
//! keep_multiplier = 3                       # K
//! local_repair_delay = "2s"                 # W (RFC 2205 §3.6)
//! traffic_control = "htb"                   # "htb" (Linux HTB over rtnetlink), "htb-tc" (the
//!                                           # same through the tc command, for debugging) or
//!                                           # "memory" (admission only)
//! timer_wheel = { slot_width = "10ms", slots = 256, levels = 3, fuzzy = false }
//! refresh_reduction = true                  # RFC 2961 with capable neighbours (default off)
//! expected_sessions = 1000000               # make the tables' room at start-up (default: grow
//!                                           # as needed; at most 16,777,216, split over shards)
//! lsp_setup_timeout = "60s"                 # a head-end LSP without a label by then is given
//!                                           # up (default: the state lifetime L, RFC 2205 §3.7)
//! lsp_retry = { first = "5s", max = "300s", attempts = 10 }  # back-off after a setup timeout,
//!                                           # doubling from first to max; attempts: give up
//!                                           # after that many timeouts (default: never)
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
//! `labels`, `explicit_null`) and `[[rsvp.lsp]]` in [`te`].

pub mod integrity;
pub mod te;

use crate::config::{ConfigError, Source};
pub use integrity::IntegritySection;
use pathwise_core::units::{Bandwidth, TimeSpan};
use serde::Deserialize;
pub use te::{LspSection, MplsKind};
use toml::Spanned;

/// How reservations reach the data plane.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum TrafficControlKind {
    /// HTB classes and u32 filters, installed over rtnetlink.
    #[default]
    Htb,
    /// The same HTB classes and filters installed by running iproute2's `tc`, one process per
    /// operation (about 2.4 ms each): for debugging, and to compare with `htb`.
    #[serde(rename = "htb-tc")]
    #[value(name = "htb-tc")]
    HtbTc,
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
    /// Sessions to make the engine's tables' room for at start-up (absent: grow as needed).
    pub expected_sessions: Option<Spanned<u64>>,
    /// LSPs this node heads from the start.
    #[serde(default, rename = "lsp")]
    pub lsps: Vec<LspSection>,
    /// How long a head-end LSP may wait for its label; absent: the engine's default.
    pub lsp_setup_timeout: Option<Spanned<TimeSpan>>,
    /// Back-off between attempts to set up an LSP whose setup timed out.
    pub lsp_retry: Option<Spanned<LspRetrySection>>,
}

/// `lsp_retry = { first, max, attempts }`: every key optional, the engine's defaults otherwise.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LspRetrySection {
    /// Wait after the first timeout.
    pub first: Option<TimeSpan>,
    /// The longest wait.
    pub max: Option<TimeSpan>,
    /// Timeouts after which the head end stops trying (absent: never stops).
    pub attempts: Option<u32>,
}

impl LspRetrySection {
    /// The engine's setting.
    pub fn retry(&self) -> pathwise_rsvp::LspRetry {
        let d = pathwise_rsvp::LspRetry::default();
        pathwise_rsvp::LspRetry {
            first: self.first.map_or(d.first, |t| t.0),
            max: self.max.map_or(d.max, |t| t.0),
            attempts: self.attempts.or(d.attempts),
        }
    }
}

impl RsvpSection {
    /// Where label bindings go.
    pub fn mpls_kind(&self) -> MplsKind {
        self.mpls
            .as_ref()
            .map_or(MplsKind::Memory, |m| *m.get_ref())
    }

    /// The LSP setup timeout for the engine (`None`: its default, the state lifetime L).
    pub fn lsp_setup_timeout(&self) -> Option<std::time::Duration> {
        self.lsp_setup_timeout.as_ref().map(|t| t.get_ref().0)
    }

    /// The LSP retry back-off for the engine.
    pub fn lsp_retry(&self) -> pathwise_rsvp::LspRetry {
        self.lsp_retry
            .as_ref()
            .map_or_else(pathwise_rsvp::LspRetry::default, |r| r.get_ref().retry())
    }

    /// How many labels the range holds as the engine uses it (from 16 up, RFC 3032 §2.1),
    /// as shards cut it ([`crate::rsvp::shard`]).
    pub fn label_count(&self) -> u64 {
        let (first, last) = self.label_range();
        u64::from(last.saturating_sub(first.max(16))) + 1
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

impl RsvpSection {
    /// Check what parsing cannot: interfaces listed once, Hello and integrity settings,
    /// reservable bandwidth, labels and LSPs, the timer wheel.
    pub(crate) fn check(&self, cx: &Source<'_>, errs: &mut Vec<ConfigError>) {
        let mut seen = std::collections::BTreeSet::new();
        for (n, i) in self.interfaces.iter().enumerate() {
            let field = |f: &str| format!("rsvp.interface[{n}].{f}");
            if !seen.insert(i.name.get_ref().clone()) {
                errs.push(cx.at(
                    i.name.span(),
                    &field("name"),
                    format!("interface {:?} listed twice", i.name.get_ref()),
                ));
            }
            if let Some(h) = &i.hello
                && (h.interval.0.is_zero()
                    || !(h.failure_multiplier.is_finite() && h.failure_multiplier >= 1.0))
            {
                errs.push(cx.at(
                    i.name.span(),
                    &field("hello"),
                    "needs a non-zero interval and a failure_multiplier of at least 1".into(),
                ));
            }
            if let Some(integrity) = &i.integrity {
                errs.extend(integrity.check(cx, &field("integrity")).err());
            }
            if let Some(res) = &i.reservable
                && res.get_ref().0 > i.bandwidth.0
            {
                errs.push(cx.at(
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
        te::check(cx, self.labels.as_ref(), &self.lsps, errs);
        crate::config::check_expected_sessions(
            self.expected_sessions.as_ref(),
            cx,
            "rsvp.expected_sessions",
            errs,
        );
        errs.extend(self.check_lsp_setup(cx).err());
        if self.timer_wheel.slots < 2
            || self.timer_wheel.levels < 1
            || self.timer_wheel.slot_width.0.is_zero()
        {
            errs.push(cx.line(
                0,
                "rsvp.timer_wheel",
                "needs slots ≥ 2, levels ≥ 1 and a non-zero slot width".into(),
            ));
        }
    }

    /// The LSP setup timeout and retry back-off: a zero timeout would give every LSP up
    /// before its Path could travel, a zero first wait would retry in a busy loop, and a
    /// limit of 0 attempts means nothing the engine can do (it stops after the first timeout
    /// with a limit of 1).
    fn check_lsp_setup(&self, cx: &Source<'_>) -> Result<(), ConfigError> {
        if let Some(t) = &self.lsp_setup_timeout
            && t.get_ref().0.is_zero()
        {
            return Err(cx.at(
                t.span(),
                "rsvp.lsp_setup_timeout",
                "must be more than zero".into(),
            ));
        }
        let Some(r) = &self.lsp_retry else {
            return Ok(());
        };
        let retry = r.get_ref().retry();
        let problem = if retry.first.is_zero() {
            Some(("first", "must be more than zero".to_string()))
        } else if retry.max < retry.first {
            Some((
                "max",
                format!(
                    "{} is less than first = {}",
                    TimeSpan(retry.max),
                    TimeSpan(retry.first)
                ),
            ))
        } else if retry.attempts == Some(0) {
            Some((
                "attempts",
                "must be at least 1 (leave it out to keep trying)".to_string(),
            ))
        } else {
            None
        };
        match problem {
            Some((key, message)) => Err(cx.at(r.span(), &format!("rsvp.lsp_retry.{key}"), message)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::NodeConfig;
    use std::time::Duration;

    /// `[rsvp]` with `keys` on line 3.
    fn node(keys: &str) -> String {
        format!("[rsvp]\ntraffic_control = \"memory\"\n{keys}\n")
    }

    #[test]
    fn traffic_control_values() {
        use super::TrafficControlKind as K;
        for (value, kind) in [("htb", K::Htb), ("htb-tc", K::HtbTc), ("memory", K::Memory)] {
            let text = format!("[rsvp]\ntraffic_control = \"{value}\"\n");
            let r = NodeConfig::parse("node.toml", &text).unwrap().rsvp.unwrap();
            assert_eq!(r.traffic_control, kind, "{value}");
        }
        let text = "[rsvp]\ntraffic_control = \"tc\"\n";
        assert!(NodeConfig::parse("node.toml", text).is_err());
    }

    #[test]
    fn lsp_setup_keys_default_to_the_engines() {
        let c = NodeConfig::parse("node.toml", &node("")).unwrap();
        let r = c.rsvp.unwrap();
        assert_eq!(r.lsp_setup_timeout(), None);
        assert_eq!(r.lsp_retry(), pathwise_rsvp::LspRetry::default());
    }

    #[test]
    fn lsp_setup_keys_parse() {
        let text = node(
            "lsp_setup_timeout = \"45s\"\n\
             lsp_retry = { first = \"2s\", max = \"1min\", attempts = 4 }",
        );
        let r = NodeConfig::parse("node.toml", &text).unwrap().rsvp.unwrap();
        assert_eq!(r.lsp_setup_timeout(), Some(Duration::from_secs(45)));
        assert_eq!(
            r.lsp_retry(),
            pathwise_rsvp::LspRetry {
                first: Duration::from_secs(2),
                max: Duration::from_secs(60),
                attempts: Some(4),
            }
        );
        // Keys left out keep the engine's defaults.
        let text = node("lsp_retry = { max = \"10min\" }");
        let r = NodeConfig::parse("node.toml", &text).unwrap().rsvp.unwrap();
        let d = pathwise_rsvp::LspRetry::default();
        assert_eq!(
            r.lsp_retry(),
            pathwise_rsvp::LspRetry {
                max: Duration::from_secs(600),
                ..d
            }
        );
    }

    #[test]
    fn lsp_setup_key_errors_name_file_line_and_field() {
        for (keys, line, field, says) in [
            (
                "lsp_setup_timeout = \"0s\"",
                3,
                "rsvp.lsp_setup_timeout",
                "more than zero",
            ),
            (
                "lsp_retry = { first = \"0s\" }",
                3,
                "rsvp.lsp_retry.first",
                "more than zero",
            ),
            (
                "lsp_retry = { first = \"10s\", max = \"5s\" }",
                3,
                "rsvp.lsp_retry.max",
                "less than first = 10s",
            ),
            (
                "lsp_retry = { attempts = 0 }",
                3,
                "rsvp.lsp_retry.attempts",
                "at least 1",
            ),
            // Strict parsing: a misspelt key, a duration without a unit, a negative count.
            (
                "lsp_retry = { frist = \"1s\" }",
                3,
                "rsvp.lsp_retry.frist",
                "frist",
            ),
            (
                "lsp_setup_timeout = \"90\"",
                3,
                "rsvp.lsp_setup_timeout",
                "unit",
            ),
            (
                "lsp_retry = { attempts = -1 }",
                3,
                "rsvp.lsp_retry.attempts",
                "",
            ),
            (
                "lsp_setup_timout = \"1s\"",
                3,
                "rsvp.lsp_setup_timout",
                "lsp_setup_timout",
            ),
        ] {
            let e = NodeConfig::parse("node.toml", &node(keys)).unwrap_err();
            assert_eq!(
                (e.file.as_str(), e.line, e.field.as_str()),
                ("node.toml", line, field),
                "{keys}: {e}"
            );
            assert!(e.message.contains(says), "{keys}: {e}");
        }
    }
}
