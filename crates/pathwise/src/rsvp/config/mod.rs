//! The `[rsvp]` section of `node.toml` (loaded by [`crate::config`]):
//!
//! ```toml
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

impl RsvpSection {
    /// Check what parsing cannot: interfaces listed once, Hello and integrity settings,
    /// reservable bandwidth, labels and LSPs, the timer wheel.
    pub(crate) fn check(&self, cx: &Source<'_>) -> Result<(), ConfigError> {
        let mut seen = std::collections::BTreeSet::new();
        for (n, i) in self.interfaces.iter().enumerate() {
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
                integrity.check(cx, &field("integrity"))?;
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
        te::check(cx, self.labels.as_ref(), &self.lsps)?;
        if self.timer_wheel.slots < 2
            || self.timer_wheel.levels < 1
            || self.timer_wheel.slot_width.0.is_zero()
        {
            return Err(cx.line(
                0,
                "rsvp.timer_wheel",
                "needs slots ≥ 2, levels ≥ 1 and a non-zero slot width".into(),
            ));
        }

        Ok(())
    }
}
