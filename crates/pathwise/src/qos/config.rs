//! `[qos_nslp]`: the QoS NSLP (RFC 5974) in `pathwise daemon`.
//!
//! ```toml
//! [qos_nslp]                  # present: the QoS NSLP runs (needs [gist] and [rsvp])
//! refresh_period = "30s"      # R, sent in REFRESH-PERIOD (RFC 5974 §5.3.4)
//! max_refresh_period = "5min" # a peer's R is taken as at most this (§5.3.4: local significance)
//! reduced_refresh = true      # RSN-only refreshes once the peer has the QSPEC (§3.2.5)
//! summary_refresh = true      # fold refreshes to one peer into SESSION-ID-LISTs (§3.2.6)
//! ```
//!
//! The QoS NSLP rides the `[gist]` service (its messages are GIST NSLP data) and admits
//! reservations through the `[rsvp]` service's traffic control (`traffic_control = "htb"` or
//! `"memory"` and its interfaces' `reservable` bandwidth): one budget per interface for both
//! protocols (issue 17).

use crate::config::{ConfigError, Source, line_of};
use pathwise_core::units::TimeSpan;
use serde::Deserialize;
use toml::Spanned;

/// `[qos_nslp]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QosSection {
    /// The refresh period R.
    #[serde(default = "default_refresh")]
    pub refresh_period: Spanned<TimeSpan>,
    /// The longest refresh period taken from a peer's REFRESH-PERIOD.
    #[serde(default = "default_max_refresh")]
    pub max_refresh_period: Spanned<TimeSpan>,
    /// Reduced refreshes.
    #[serde(default = "yes")]
    pub reduced_refresh: bool,
    /// Summary refreshes.
    #[serde(default = "yes")]
    pub summary_refresh: bool,
}

fn default_refresh() -> Spanned<TimeSpan> {
    Spanned::new(0..0, TimeSpan(std::time::Duration::from_secs(30)))
}

fn default_max_refresh() -> Spanned<TimeSpan> {
    Spanned::new(0..0, TimeSpan(std::time::Duration::from_secs(300)))
}

fn yes() -> bool {
    true
}

impl QosSection {
    /// The engine configuration (seeded at random: the daemon is not a simulation).
    pub fn engine_config(&self) -> pathwise_qos_nslp::QosConfig {
        pathwise_qos_nslp::QosConfig {
            refresh_period: self.refresh_period.get_ref().0,
            max_refresh_period: self.max_refresh_period.get_ref().0,
            reduced_refresh: self.reduced_refresh,
            summary_refresh: self.summary_refresh,
            seed: pathwise_core::rand::random(),
            ..pathwise_qos_nslp::QosConfig::default()
        }
    }

    pub(crate) fn check(
        &self,
        cx: &Source<'_>,
        has_gist: bool,
        has_rsvp: bool,
        errs: &mut Vec<ConfigError>,
    ) {
        let r = self.refresh_period.get_ref().0;
        if r < std::time::Duration::from_millis(100) {
            errs.push(cx.line(
                line_of(cx.text, self.refresh_period.span().start),
                "qos_nslp.refresh_period",
                format!("{r:?} is too short: at least 100ms"),
            ));
        }
        let max = self.max_refresh_period.get_ref().0;
        if max < r {
            errs.push(cx.line(
                line_of(cx.text, self.max_refresh_period.span().start),
                "qos_nslp.max_refresh_period",
                format!("{max:?} is shorter than refresh_period ({r:?})"),
            ));
        }
        if !has_gist {
            errs.push(cx.line(
                0,
                "qos_nslp",
                "the QoS NSLP runs over GIST: add a [gist] section".into(),
            ));
        }
        if !has_rsvp {
            errs.push(
                cx.line(
                    0,
                    "qos_nslp",
                    "the QoS NSLP admits through RSVP's traffic control (one budget per interface \
                 for both): add an [rsvp] section with the interfaces"
                        .into(),
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::NodeConfig;

    const BASE: &str = "[gist]\ninterfaces = [\"eth0\"]\n\n[rsvp]\n\n[[rsvp.interface]]\nname = \"eth0\"\nbandwidth = \"10Mbit\"\n";

    #[test]
    fn qos_nslp_section_parses_with_defaults() {
        let c = NodeConfig::parse("node.toml", &format!("{BASE}\n[qos_nslp]\n")).unwrap();
        let q = c.qos_nslp.unwrap().engine_config();
        assert_eq!(q.refresh_period, std::time::Duration::from_secs(30));
        assert!(q.reduced_refresh && q.summary_refresh);
        let c = NodeConfig::parse(
            "node.toml",
            &format!("{BASE}\n[qos_nslp]\nrefresh_period = \"5s\"\nsummary_refresh = false\n"),
        )
        .unwrap();
        let q = c.qos_nslp.unwrap().engine_config();
        assert_eq!(q.refresh_period, std::time::Duration::from_secs(5));
        assert!(!q.summary_refresh);
        assert_eq!(q.max_refresh_period, std::time::Duration::from_secs(300));
        let c = NodeConfig::parse(
            "node.toml",
            &format!("{BASE}\n[qos_nslp]\nmax_refresh_period = \"90s\"\n"),
        )
        .unwrap();
        let q = c.qos_nslp.unwrap().engine_config();
        assert_eq!(q.max_refresh_period, std::time::Duration::from_secs(90));
    }

    #[test]
    fn qos_nslp_needs_gist_and_rsvp_and_knows_its_keys() {
        let e = NodeConfig::parse("node.toml", "[gist]\ninterfaces = [\"eth0\"]\n[qos_nslp]\n")
            .unwrap_err();
        assert!(e.message.contains("[rsvp]"), "{e:?}");
        let e = NodeConfig::parse(
            "node.toml",
            &format!("{BASE}\n[qos_nslp]\nrefresh = \"5s\"\n"),
        )
        .unwrap_err();
        assert!(e.message.contains("refresh"), "{e:?}");
        let e = NodeConfig::parse(
            "node.toml",
            &format!("{BASE}\n[qos_nslp]\nrefresh_period = \"1ms\"\n"),
        )
        .unwrap_err();
        assert_eq!(e.field, "qos_nslp.refresh_period");
        let e = NodeConfig::parse(
            "node.toml",
            &format!("{BASE}\n[qos_nslp]\nmax_refresh_period = \"10s\"\n"),
        )
        .unwrap_err();
        assert_eq!(e.field, "qos_nslp.max_refresh_period");
    }
}
