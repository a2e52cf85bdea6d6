//! Metrics: every service's counters and state on one HTTP page, encoded by `prometheus-client`
//! (OpenMetrics 1.0, or the Prometheus text format 0.0.4 for a client that asks for it; see
//! [`http`]).
//!
//! Series are named `pathwise_<service>_<name>`: counters end in `_total`, a series with a unit
//! ends in it (`_bytes`, `_seconds`) and says so on a `# UNIT` line, every family has a
//! `# HELP` line. What a service drops, it counts in *one* family `pathwise_<service>_drops_total`
//! with a `reason` label; messages are one family with a `type` label (and `direction`, `sent`
//! or `received`, where both happen). Every page carries `pathwise_build_info{version,commit}`.
//!
//! # How a service's figures reach the page
//!
//! One mechanism for every service: the service describes its figures as a [`Snapshot`] (plain
//! values: families, labels, numbers), and a [`ServiceCollector`] — a `prometheus-client`
//! [`Collector`] — hands the newest one to the encoder on each scrape, on the metrics thread.
//! Where the snapshot comes from is the one thing that differs, and it follows from who owns
//! the figures:
//!
//! - the daemon's RSVP and GIST engines are single-threaded and own their state (plain
//!   integers, owned by the event loop's thread; sharing them behind a lock would make a scrape
//!   stall the loop), so the loop takes a snapshot every second and
//!   [`Published::publish`]es it; a scrape reads the last one, never the engines;
//! - the oracle's and the booster gateway's counters are relaxed atomics that any thread may
//!   read, so their collectors take the snapshot at scrape time ([`ServiceCollector::live`]).
//!
//! Going through a snapshot rather than registering `prometheus-client` `Counter`s keeps the
//! counters where they are (plain integers in the sans-IO engines, atomics in the datapaths),
//! keeps `show counters` and the metrics reading the same values, and keeps the engines free
//! of any metrics dependency.

pub mod http;

use arc_swap::ArcSwap;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;
pub use prometheus_client::registry::Unit;
use std::sync::Arc;

/// The prefix of every series.
pub const PREFIX: &str = "pathwise";

/// A sample's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// A count.
    Int(u64),
    /// A measure (seconds, ratios).
    Float(f64),
}

impl Number {
    /// The value as a float.
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Int(v) => v as f64,
            Number::Float(v) => v,
        }
    }
}

impl From<u64> for Number {
    fn from(v: u64) -> Self {
        Number::Int(v)
    }
}

impl From<usize> for Number {
    fn from(v: usize) -> Self {
        Number::Int(v as u64)
    }
}

impl From<f64> for Number {
    fn from(v: f64) -> Self {
        Number::Float(v)
    }
}

/// One sample: its labels (name, value) and its value.
pub type Sample = (Vec<(&'static str, String)>, Number);

/// One metric family of a snapshot.
#[derive(Clone, Debug)]
pub struct Family {
    /// `<service>_<name>`, without the prefix, the unit and `_total`.
    pub name: String,
    /// The `# HELP` text.
    pub help: &'static str,
    /// The unit, appended to the name.
    pub unit: Option<Unit>,
    /// Counter or gauge.
    pub kind: MetricType,
    /// The samples.
    pub samples: Vec<Sample>,
}

/// A service's figures at one moment, as metric families (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    service: &'static str,
    families: Vec<Family>,
}

impl Snapshot {
    /// An empty snapshot of `service` (the second word of its series' names).
    pub fn new(service: &'static str) -> Self {
        Snapshot {
            service,
            families: Vec::new(),
        }
    }

    /// The families, in the order they were added.
    pub fn families(&self) -> &[Family] {
        &self.families
    }

    /// Add `other`'s samples to these (the shards of one service): a sample of the same family
    /// and labels sums, any other is appended.
    pub fn add(&mut self, other: &Snapshot) {
        for f in &other.families {
            let Some(mine) = self.families.iter_mut().find(|m| m.name == f.name) else {
                self.families.push(f.clone());
                continue;
            };
            for (labels, n) in &f.samples {
                match mine.samples.iter_mut().find(|(l, _)| l == labels) {
                    Some((_, m)) => {
                        *m = match (*m, *n) {
                            (Number::Int(a), Number::Int(b)) => Number::Int(a.saturating_add(b)),
                            (a, b) => Number::Float(a.as_f64() + b.as_f64()),
                        }
                    }
                    None => mine.samples.push((labels.clone(), *n)),
                }
            }
        }
    }

    /// The family called `name` (without the service, unit and `_total`).
    pub fn family(&self, name: &str) -> Option<&Family> {
        let full = format!("{}_{name}", self.service);
        self.families.iter().find(|f| f.name == full)
    }

    fn push(
        &mut self,
        name: &str,
        help: &'static str,
        unit: Option<Unit>,
        kind: MetricType,
        samples: Vec<Sample>,
    ) -> &mut Self {
        self.families.push(Family {
            name: format!("{}_{name}", self.service),
            help,
            unit,
            kind,
            samples,
        });
        self
    }

    /// One counter without labels.
    pub fn counter(&mut self, name: &str, help: &'static str, value: u64) -> &mut Self {
        self.push(
            name,
            help,
            None,
            MetricType::Counter,
            vec![(Vec::new(), value.into())],
        )
    }

    /// `management_refused`: connections to the process's management socket refused because
    /// their user was not allowed ([`crate::mgmt::access`]). A family of its own, not a
    /// `drops` reason: `drops` counts datagrams and messages received and not used, and a
    /// refused connection carried neither (docs/metrics.md).
    pub fn management_refused(&mut self, value: u64) -> &mut Self {
        self.counter(
            "management_refused",
            "Connections to the management socket refused: their user is not its owner, root or in its socket group.",
            value,
        )
    }

    /// One gauge without labels.
    pub fn gauge(&mut self, name: &str, help: &'static str, value: impl Into<Number>) -> &mut Self {
        self.push(
            name,
            help,
            None,
            MetricType::Gauge,
            vec![(Vec::new(), value.into())],
        )
    }

    /// One gauge in `unit`.
    pub fn gauge_in(
        &mut self,
        name: &str,
        unit: Unit,
        help: &'static str,
        value: impl Into<Number>,
    ) -> &mut Self {
        self.push(
            name,
            help,
            Some(unit),
            MetricType::Gauge,
            vec![(Vec::new(), value.into())],
        )
    }

    /// A counter family labelled `keys`, one sample per set of label values.
    pub fn counters<const N: usize>(
        &mut self,
        name: &str,
        help: &'static str,
        keys: [&'static str; N],
        samples: impl IntoIterator<Item = ([String; N], u64)>,
    ) -> &mut Self {
        self.labelled(name, help, None, keys, samples)
    }

    /// A counter family in `unit`, labelled `keys`.
    pub fn counters_in<const N: usize>(
        &mut self,
        name: &str,
        unit: Unit,
        help: &'static str,
        keys: [&'static str; N],
        samples: impl IntoIterator<Item = ([String; N], u64)>,
    ) -> &mut Self {
        self.labelled(name, help, Some(unit), keys, samples)
    }

    fn labelled<const N: usize>(
        &mut self,
        name: &str,
        help: &'static str,
        unit: Option<Unit>,
        keys: [&'static str; N],
        samples: impl IntoIterator<Item = ([String; N], u64)>,
    ) -> &mut Self {
        let samples = samples
            .into_iter()
            .map(|(values, n)| (keys.into_iter().zip(values).collect(), n.into()))
            .collect();
        self.push(name, help, unit, MetricType::Counter, samples)
    }

    /// This snapshot alone as OpenMetrics text (no build info): the console's `show metrics`
    /// and the tests.
    pub fn openmetrics(&self) -> String {
        let mut r = Registry::with_prefix(PREFIX);
        let s = Arc::new(self.clone());
        r.register_collector(Box::new(ServiceCollector::live_arc(move || s.clone())));
        encode(&r, http::Format::OpenMetrics)
    }

    fn encode(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        for f in &self.families {
            let mut metric = encoder.encode_descriptor(&f.name, f.help, f.unit.as_ref(), f.kind)?;
            for (labels, value) in &f.samples {
                encode_value(f.kind, *value, metric.encode_family(labels)?)?;
            }
        }
        Ok(())
    }
}

fn encode_value(
    kind: MetricType,
    value: Number,
    encoder: prometheus_client::encoding::MetricEncoder<'_>,
) -> Result<(), std::fmt::Error> {
    match (kind, value) {
        (MetricType::Counter, Number::Int(n)) => ConstCounter::new(n).encode(encoder),
        (MetricType::Counter, Number::Float(x)) => ConstCounter::new(x).encode(encoder),
        (_, Number::Int(n)) => {
            ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX)).encode(encoder)
        }
        (_, Number::Float(x)) => ConstGauge::new(x).encode(encoder),
    }
}

/// The latest snapshot of a service whose owner publishes it (the daemon's engines).
#[derive(Debug)]
pub struct Published(ArcSwap<Snapshot>);

impl Published {
    /// Nothing published yet for `service`: an empty page section.
    pub fn new(service: &'static str) -> Arc<Self> {
        Arc::new(Published(ArcSwap::from_pointee(Snapshot::new(service))))
    }

    /// Replace the snapshot scrapes read.
    pub fn publish(&self, s: Snapshot) {
        self.0.store(Arc::new(s));
    }

    /// The snapshot scrapes read now.
    pub fn load(&self) -> Arc<Snapshot> {
        self.0.load_full()
    }
}

/// A service on the metrics page: a `prometheus-client` [`Collector`] that encodes the
/// service's newest [`Snapshot`] on each scrape.
pub struct ServiceCollector(Box<dyn Fn() -> Arc<Snapshot> + Send + Sync>);

impl std::fmt::Debug for ServiceCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServiceCollector")
    }
}

impl ServiceCollector {
    /// The snapshots its owner publishes.
    pub fn published(p: Arc<Published>) -> Self {
        ServiceCollector(Box::new(move || p.load()))
    }

    /// A snapshot taken by `take` at each scrape (figures any thread may read).
    pub fn live(take: impl Fn() -> Snapshot + Send + Sync + 'static) -> Self {
        ServiceCollector(Box::new(move || Arc::new(take())))
    }

    fn live_arc(take: impl Fn() -> Arc<Snapshot> + Send + Sync + 'static) -> Self {
        ServiceCollector(Box::new(take))
    }
}

impl Collector for ServiceCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        (self.0)().encode(&mut encoder)
    }
}

/// The page of a process running `services`: their collectors and this build's info series.
pub fn registry(services: impl IntoIterator<Item = ServiceCollector>) -> Registry {
    let mut r = Registry::with_prefix(PREFIX);
    let b = crate::build_info();
    r.register(
        "build",
        "The version of pathwise this process runs and the git commit it was built from",
        Info::new([("version", b.version), ("commit", b.commit)]),
    );
    for s in services {
        r.register_collector(Box::new(s));
    }
    r
}

/// The whole page of a process whose services are now `snapshots`, as OpenMetrics text: what a
/// scrape would read (the oracle console's `show metrics`).
pub fn page(snapshots: impl IntoIterator<Item = Snapshot>) -> String {
    let services = snapshots.into_iter().map(|s| {
        let s = Arc::new(s);
        ServiceCollector::live_arc(move || s.clone())
    });
    encode(&registry(services), http::Format::OpenMetrics)
}

/// The page as `format`; empty if a collector failed to write (it writes to a `String`, which
/// cannot fail).
pub fn encode(registry: &Registry, format: http::Format) -> String {
    let mut out = String::new();
    let done = match format {
        http::Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, registry),
        http::Format::Text => {
            prometheus_client::encoding::prometheus_text::encode(&mut out, registry)
        }
    };
    if done.is_err() {
        out.clear();
    }
    out
}

/// The drop reason of a datagram the raw IP layer refused (`pathwise-net`), as the services'
/// `drops` families name it.
pub fn ip_drop_reason(r: pathwise_net::ip::DropReason) -> String {
    match r {
        pathwise_net::ip::DropReason::Truncated => "oversize".into(),
        r => format!("ip_{}", r.name()),
    }
}

/// The drop reason of datagrams the kernel dropped for want of socket receive buffer
/// (`SO_RXQ_OVFL`).
pub const KERNEL_RECEIVE_BUFFER: &str = "kernel_receive_buffer";

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every family of `s` is well formed: unique snake_case names, a help text that needs no
    /// escaping, label names in snake_case, no label set twice.
    pub(crate) fn assert_well_formed(s: &Snapshot) {
        let mut names = std::collections::HashSet::new();
        let snake = |n: &str| {
            !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        };
        for f in s.families() {
            assert!(names.insert(f.name.clone()), "{} twice", f.name);
            assert!(snake(&f.name), "{}", f.name);
            assert!(!f.name.ends_with("_total"), "{}: _total is added", f.name);
            assert!(
                !f.help.is_empty() && !f.help.contains(['\\', '\n', '"']),
                "{}: {:?}",
                f.name,
                f.help
            );
            let mut sets = std::collections::HashSet::new();
            for (labels, _) in &f.samples {
                assert!(labels.iter().all(|(k, _)| snake(k)), "{}", f.name);
                assert!(sets.insert(labels.clone()), "{}: {labels:?} twice", f.name);
            }
        }
    }

    #[test]
    fn families_are_encoded_with_help_type_unit_and_labels() {
        let mut s = Snapshot::new("rsvp");
        s.gauge("sessions", "Sessions.", 3usize)
            .gauge_in("state", Unit::Bytes, "State.", 640usize)
            .counter("path_timeouts", "Path timeouts.", 1)
            .counters(
                "drops",
                "Drops by reason.",
                ["reason"],
                [(["bad_checksum".to_string()], 2)],
            );
        assert_well_formed(&s);
        assert_eq!(
            s.openmetrics(),
            "# HELP pathwise_rsvp_sessions Sessions.\n\
             # TYPE pathwise_rsvp_sessions gauge\n\
             pathwise_rsvp_sessions 3\n\
             # HELP pathwise_rsvp_state_bytes State.\n\
             # TYPE pathwise_rsvp_state_bytes gauge\n\
             # UNIT pathwise_rsvp_state_bytes bytes\n\
             pathwise_rsvp_state_bytes 640\n\
             # HELP pathwise_rsvp_path_timeouts Path timeouts.\n\
             # TYPE pathwise_rsvp_path_timeouts counter\n\
             pathwise_rsvp_path_timeouts_total 1\n\
             # HELP pathwise_rsvp_drops Drops by reason.\n\
             # TYPE pathwise_rsvp_drops counter\n\
             pathwise_rsvp_drops_total{reason=\"bad_checksum\"} 2\n\
             # EOF\n"
        );
    }

    #[test]
    fn the_page_carries_the_build_info_in_both_formats() {
        let p = Published::new("gist");
        let mut s = Snapshot::new("gist");
        s.counter("wakeups", "Wake-ups.", 7);
        p.publish(s);
        let r = registry([ServiceCollector::published(p)]);
        let b = crate::build_info();
        let om = encode(&r, http::Format::OpenMetrics);
        assert!(om.starts_with("# HELP pathwise_build The version"), "{om}");
        assert!(om.contains("# TYPE pathwise_build info\n"), "{om}");
        let info = format!(
            "pathwise_build_info{{version=\"{}\",commit=\"{}\"}} 1\n",
            b.version, b.commit
        );
        assert!(om.contains(&info), "{om}");
        assert!(om.contains("pathwise_gist_wakeups_total 7\n"), "{om}");
        assert!(om.ends_with("# EOF\n"), "{om}");
        let text = encode(&r, http::Format::Text);
        assert!(
            text.contains("# TYPE pathwise_build_info gauge\n"),
            "{text}"
        );
        assert!(text.contains(&info), "{text}");
        assert!(
            text.contains(
                "# TYPE pathwise_gist_wakeups_total counter\npathwise_gist_wakeups_total 7\n"
            ),
            "{text}"
        );
        assert!(!text.contains("# EOF"), "{text}");
    }

    #[test]
    fn a_published_snapshot_replaces_the_previous_one() {
        let p = Published::new("rsvp");
        let r = registry([ServiceCollector::published(p.clone())]);
        assert!(!encode(&r, http::Format::OpenMetrics).contains("pathwise_rsvp"));
        for n in [1, 2] {
            let mut s = Snapshot::new("rsvp");
            s.gauge("sessions", "Sessions.", n as usize);
            p.publish(s);
            let page = encode(&r, http::Format::OpenMetrics);
            assert!(
                page.contains(&format!("pathwise_rsvp_sessions {n}\n")),
                "{page}"
            );
            let samples = page
                .lines()
                .filter(|l| l.starts_with("pathwise_rsvp_sessions "));
            assert_eq!(samples.count(), 1, "{page}");
        }
    }
}
