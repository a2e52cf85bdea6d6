//! Prometheus text exposition (format 0.0.4) for the services' counters: one writer so every
//! service names and types its series the same way (`pathwise_<service>_<name>`, counters with
//! `_total`).

use std::fmt::Write as _;

/// A metrics page being written for one service.
#[derive(Debug)]
pub struct Metrics<'a> {
    out: &'a mut String,
    service: &'static str,
}

impl<'a> Metrics<'a> {
    /// Write `service`'s series to `out`.
    pub fn new(out: &'a mut String, service: &'static str) -> Self {
        Metrics { out, service }
    }

    /// One gauge per `(name, value)`.
    pub fn gauges<V: std::fmt::Display>(
        &mut self,
        gauges: impl IntoIterator<Item = (&'static str, V)>,
    ) {
        for (name, v) in gauges {
            let s = self.service;
            let _ = writeln!(
                self.out,
                "# TYPE pathwise_{s}_{name} gauge\npathwise_{s}_{name} {v}"
            );
        }
    }

    /// One counter (`…_total`) per `(name, value)`.
    pub fn counters(&mut self, counters: impl IntoIterator<Item = (&'static str, u64)>) {
        for (name, v) in counters {
            let s = self.service;
            let _ = writeln!(
                self.out,
                "# TYPE pathwise_{s}_{name}_total counter\npathwise_{s}_{name}_total {v}"
            );
        }
    }

    /// One counter `name` (`…_total`) with one sample per label set: `labels` is the rendered
    /// label list without braces, e.g. `event="sent"`.
    pub fn labelled<L: std::fmt::Display>(
        &mut self,
        name: &str,
        samples: impl IntoIterator<Item = (L, u64)>,
    ) {
        let s = self.service;
        let _ = writeln!(self.out, "# TYPE pathwise_{s}_{name}_total counter");
        for (labels, n) in samples {
            let _ = writeln!(self.out, "pathwise_{s}_{name}_total{{{labels}}} {n}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_are_named_and_typed_per_service() {
        let mut out = String::new();
        let mut m = Metrics::new(&mut out, "rsvp");
        m.gauges([("sessions", 3)]);
        m.counters([("path_timeouts", 1)]);
        m.labelled("drops", [("reason=\"bad_checksum\"", 2)]);
        assert_eq!(
            out,
            "# TYPE pathwise_rsvp_sessions gauge\npathwise_rsvp_sessions 3\n\
             # TYPE pathwise_rsvp_path_timeouts_total counter\npathwise_rsvp_path_timeouts_total 1\n\
             # TYPE pathwise_rsvp_drops_total counter\n\
             pathwise_rsvp_drops_total{reason=\"bad_checksum\"} 2\n"
        );
    }
}
