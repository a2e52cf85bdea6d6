//! The QoS NSLP's counters as `qos show` / `gist show counters` (JSON) and the metrics page
//! (`pathwise_qos_nslp_*`) show them. Both views are written from the same list, which
//! destructures the engine's [`Counters`] field by field, so a counter the engine gains does
//! not compile here until it is shown.

use crate::metrics::{Snapshot, Unit};
use pathwise_qos_nslp::engine::Counters;
use pathwise_qos_nslp::wire::MsgType;
use serde_json::{Map, Value, json};

/// The state the engine holds, for the gauges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateCounts {
    /// Sessions with state at this node.
    pub sessions: usize,
    /// Sessions holding a traffic-control reservation on an outgoing interface here.
    pub reservations: usize,
}

impl StateCounts {
    /// What `q` holds now.
    pub fn of<T: pathwise_core::tc::TrafficControl>(q: &pathwise_qos_nslp::QosNslp<T>) -> Self {
        StateCounts {
            sessions: q.len(),
            reservations: q.sessions().filter(|(_, s)| s.tc.is_some()).count(),
        }
    }
}

/// The engine's counters that are single numbers: name, help text, value. The messages and
/// drops are families of their own, and the bytes sent one with its unit.
fn totals(c: &Counters) -> [(&'static str, &'static str, u64); 16] {
    let Counters {
        sent: _,
        received: _,
        dropped: _,
        bytes_sent: _,
        admitted,
        admission_failures,
        full_refreshes: _,
        reduced_refreshes: _,
        summary_refreshes: _,
        summarised_sessions,
        tears_sent,
        torn,
        expired,
        reverse_path_lost,
        route_changes,
        route_change_notifies,
        routing_state_invalidated,
        bound_notifies,
        readmitted,
        readmission_failures,
        retransmissions,
        request_timeouts,
        refresh_periods_capped,
    } = *c;
    [
        (
            "admitted",
            "Reservations admitted by traffic control, new or modified.",
            admitted,
        ),
        (
            "admission_failures",
            "Reservations refused by traffic control or by the QSPEC's constraints.",
            admission_failures,
        ),
        (
            "summarised_sessions",
            "Sessions refreshed inside summary refreshes.",
            summarised_sessions,
        ),
        ("tears_sent", "Tearing RESERVEs sent.", tears_sent),
        ("torn", "Reservations removed by a tearing RESERVE.", torn),
        (
            "expired",
            "Reservations whose state lifetime ran out.",
            expired,
        ),
        (
            "reverse_path_lost",
            "Receiver-initiated reservations given up because their reverse path went.",
            reverse_path_lost,
        ),
        (
            "route_changes",
            "Route changes acted on (RFC 5974 section 5.2.5.2).",
            route_changes,
        ),
        (
            "route_change_notifies",
            "Route Change NOTIFYs sent to an old upstream peer (RFC 5974 section 5.2.5.3).",
            route_change_notifies,
        ),
        (
            "routing_state_invalidated",
            "Routing state GIST was asked to re-check on a Route Change NOTIFY (RFC 5974 section 5.2.5.3).",
            routing_state_invalidated,
        ),
        (
            "bound_notifies",
            "Dependent bound reservations notified because their bound session went (RFC 5974 section 5.4.1).",
            bound_notifies,
        ),
        (
            "readmitted",
            "Reservations moved to the interface the flow leaves by after a route change.",
            readmitted,
        ),
        (
            "readmission_failures",
            "Reservations given up because the flow's new outgoing interface refused them.",
            readmission_failures,
        ),
        (
            "retransmissions",
            "Messages retransmitted for want of a RESPONSE (RFC 5974 section 5.2.4).",
            retransmissions,
        ),
        (
            "request_timeouts",
            "Requests that got no RESPONSE within QOSNSLP_RETRY_MAX.",
            request_timeouts,
        ),
        (
            "refresh_periods_capped",
            "RESERVEs whose REFRESH-PERIOD exceeded max_refresh_period (RFC 5974 section 5.3.4).",
            refresh_periods_capped,
        ),
    ]
}

/// Refreshing RESERVEs sent, by kind: `show counters` names them `<kind>_refreshes`, the
/// metrics label one family by kind (promtool refuses a series named `…summary…` that is not
/// a summary).
fn refreshes(c: &Counters) -> [(&'static str, u64); 3] {
    [
        ("full", c.full_refreshes),
        // RFC 5974 §3.2.5
        ("reduced", c.reduced_refreshes),
        // RFC 5974 §3.2.6
        ("summary", c.summary_refreshes),
    ]
}

/// `qos.show`'s and `gist.show.counters`' `counters`.
pub fn counters_json(c: &Counters, st: &StateCounts) -> Value {
    let by_type = |f: &dyn Fn(MsgType) -> u64| {
        MsgType::ALL
            .iter()
            .map(|&t| (t.name().to_string(), json!(f(t))))
            .collect::<Map<_, _>>()
    };
    let mut v = Map::new();
    v.insert("messages_out".into(), by_type(&|t| c.sent(t)).into());
    v.insert("messages_in".into(), by_type(&|t| c.received(t)).into());
    v.insert("bytes_out".into(), json!(c.bytes_sent));
    for (kind, n) in refreshes(c) {
        v.insert(format!("{kind}_refreshes"), json!(n));
    }
    for (name, _, n) in totals(c) {
        v.insert(name.into(), json!(n));
    }
    v.insert(
        "drops".into(),
        c.dropped
            .iter()
            .map(|(k, n)| (k.to_string(), json!(n)))
            .collect::<Map<_, _>>()
            .into(),
    );
    v.insert("sessions".into(), json!(st.sessions));
    v.insert("reservations".into(), json!(st.reservations));
    Value::Object(v)
}

/// The counters as metric families (`pathwise_qos_nslp_*`, see [`crate::metrics`]).
pub fn snapshot(c: &Counters, st: &StateCounts) -> Snapshot {
    let mut m = Snapshot::new("qos_nslp");
    m.counters(
        "messages",
        "QoS NSLP messages sent and received, by message type.",
        ["direction", "type"],
        MsgType::ALL.iter().flat_map(|&t| {
            [("received", c.received(t)), ("sent", c.sent(t))]
                .map(|(dir, n)| ([dir.to_string(), t.name().to_string()], n))
        }),
    );
    m.counters(
        "drops",
        "Messages the QoS NSLP dropped, by reason.",
        ["reason"],
        c.dropped.iter().map(|(r, n)| ([r.to_string()], *n)),
    );
    m.gauge("sessions", "Sessions with state at this node.", st.sessions)
        .gauge(
            "reservations",
            "Sessions holding a traffic-control reservation on an outgoing interface here.",
            st.reservations,
        );
    m.counters(
        "refreshes",
        "Refreshing RESERVEs sent, by kind: full QSPEC, reduced (RSN only, RFC 5974 section 3.2.5), summary (RFC 5974 section 3.2.6).",
        ["kind"],
        refreshes(c).map(|(k, n)| ([k.to_string()], n)),
    );
    m.counters_in(
        "sent",
        Unit::Bytes,
        "NSLP bytes handed to GIST.",
        [],
        [([], c.bytes_sent)],
    );
    for (name, help, n) in totals(c) {
        m.counter(name, help, n);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counters with every field set, each to a value no other field has (the struct literal
    /// names every field, so a counter the engine gains must be given one here too).
    fn distinct() -> (Counters, Vec<u64>) {
        let mut next = 1000u64;
        let mut n = || {
            next += 1;
            next
        };
        let sent = std::array::from_fn(|_| n());
        let received = std::array::from_fn(|_| n());
        let c = Counters {
            sent,
            received,
            bytes_sent: n(),
            admitted: n(),
            admission_failures: n(),
            full_refreshes: n(),
            reduced_refreshes: n(),
            summary_refreshes: n(),
            summarised_sessions: n(),
            tears_sent: n(),
            torn: n(),
            expired: n(),
            reverse_path_lost: n(),
            route_changes: n(),
            route_change_notifies: n(),
            routing_state_invalidated: n(),
            bound_notifies: n(),
            readmitted: n(),
            readmission_failures: n(),
            retransmissions: n(),
            request_timeouts: n(),
            refresh_periods_capped: n(),
            dropped: [
                ("rsn_out_of_order", n()),
                ("tear_unknown_session", n()),
                ("a_reason_added_later", n()),
            ]
            .into_iter()
            .collect(),
        };
        let all = (1001..=next).collect();
        (c, all)
    }

    fn numbers_in_json(v: &Value, out: &mut Vec<u64>) {
        match v {
            Value::Number(n) => out.extend(n.as_u64()),
            Value::Object(m) => m.values().for_each(|v| numbers_in_json(v, out)),
            Value::Array(a) => a.iter().for_each(|v| numbers_in_json(v, out)),
            _ => {}
        }
    }

    #[test]
    fn every_engine_counter_is_in_the_metrics_and_show_counters() {
        let (c, values) = distinct();
        let st = StateCounts {
            sessions: 7,
            reservations: 5,
        };
        let snap = snapshot(&c, &st);
        crate::metrics::tests::assert_well_formed(&snap);
        let text = snap.openmetrics();
        let samples: Vec<u64> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect();
        let mut shown = Vec::new();
        numbers_in_json(&counters_json(&c, &st), &mut shown);
        for v in values {
            assert_eq!(
                samples.iter().filter(|&&s| s == v).count(),
                1,
                "{v} in\n{text}"
            );
            assert_eq!(shown.iter().filter(|&&s| s == v).count(), 1, "{v}");
        }
        // Messages: one family labelled by direction and type.
        for t in MsgType::ALL {
            for (dir, n) in [("received", c.received(t)), ("sent", c.sent(t))] {
                let line = format!(
                    "pathwise_qos_nslp_messages_total{{direction=\"{dir}\",type=\"{}\"}} {n}\n",
                    t.name()
                );
                assert!(text.contains(&line), "{line} in\n{text}");
            }
        }
        assert_eq!(
            snap.family("messages").unwrap().samples.len(),
            2 * MsgType::ALL.len()
        );
        // Drops: one family, by reason.
        assert_eq!(
            text.matches("# TYPE pathwise_qos_nslp_drops counter")
                .count(),
            1
        );
        for (r, n) in &c.dropped {
            let line = format!("pathwise_qos_nslp_drops_total{{reason=\"{r}\"}} {n}\n");
            assert!(text.contains(&line), "{line}");
        }
        for line in [
            "pathwise_qos_nslp_sessions 7\n".to_string(),
            "pathwise_qos_nslp_reservations 5\n".to_string(),
            format!("pathwise_qos_nslp_sent_bytes_total {}\n", c.bytes_sent),
            format!(
                "pathwise_qos_nslp_reverse_path_lost_total {}\n",
                c.reverse_path_lost
            ),
            "# UNIT pathwise_qos_nslp_sent_bytes bytes\n".to_string(),
            format!(
                "pathwise_qos_nslp_refreshes_total{{kind=\"summary\"}} {}\n",
                c.summary_refreshes
            ),
        ] {
            assert!(text.contains(&line), "{line} in\n{text}");
        }
        let json = counters_json(&c, &st);
        assert_eq!(json["sessions"], json!(7));
        assert_eq!(json["reservations"], json!(5));
        assert_eq!(json["reverse_path_lost"], json!(c.reverse_path_lost));
        assert_eq!(json["reduced_refreshes"], json!(c.reduced_refreshes));
    }
}
