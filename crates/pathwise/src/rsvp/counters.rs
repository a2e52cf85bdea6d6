//! The RSVP service's counters as `rsvp show counters` (JSON) and Prometheus metrics show them:
//! the engine's [`Counters`] and [`StateStats`] plus what only the daemon counts (socket and
//! data-plane errors). Both views are written from the same lists, and those lists destructure
//! the engine's counter structs field by field, so a counter the engine gains does not compile
//! here until it is shown.

use pathwise_rsvp::engine::counters::MSG_TYPES;
use pathwise_rsvp::engine::martian::Martian;
use pathwise_rsvp::engine::refresh::RefreshCounters;
use pathwise_rsvp::engine::{Counters, StateStats};
use pathwise_rsvp::{HelloCounters, engine::integrity::IntegrityCounters};
use serde_json::{Map, Value, json};

/// What the daemon counts beside the engine, and the engine's figures that are not in
/// [`Counters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DaemonCounts {
    /// Datagrams the raw sockets would not send.
    pub send_errors: u64,
    /// Label changes the kernel refused (`mpls = "kernel"`).
    pub dataplane_errors: u64,
    /// Datagrams the raw sockets dropped before the engine saw them, any reason.
    pub socket_drops: u64,
    /// Of those, the ones the kernel dropped for want of receive buffer.
    pub kernel_drops: u64,
    /// The engine's estimate of its state's heap, bytes.
    pub state_bytes: usize,
    /// LSPs the engine knows.
    pub lsps: usize,
    /// Labels allocated.
    pub labels_in_use: usize,
    /// Reservation requests of local receivers the engine keeps, installed or waiting for path
    /// state (RFC 2205 §3.11.1).
    pub receiver_requests: usize,
}

/// Counters of the engine that are single numbers, by name.
fn engine_totals(c: &Counters) -> [(&'static str, u64); 9] {
    let Counters {
        rx: _,
        tx: _,
        drops: _,
        integrity: _,
        hello: _,
        refresh: _,
        skipped_objects,
        unsent,
        path_timeouts,
        resv_timeouts,
        admission_failures,
        local_repairs,
        preemptions,
        lsp_setup_timeouts,
        label_allocation_failures,
    } = *c;
    [
        ("path_timeouts", path_timeouts),
        ("resv_timeouts", resv_timeouts),
        ("admission_failures", admission_failures),
        ("local_repairs", local_repairs),
        ("preemptions", preemptions),
        ("lsp_setup_timeouts", lsp_setup_timeouts),
        ("label_allocation_failures", label_allocation_failures),
        ("skipped_objects", skipped_objects),
        ("unsent", unsent),
    ]
}

fn hello_events(h: &HelloCounters) -> [(&'static str, u64); 4] {
    let HelloCounters {
        sent,
        received,
        neighbor_failures,
        neighbor_restarts,
    } = *h;
    [
        ("sent", sent),
        ("received", received),
        ("neighbor_failures", neighbor_failures),
        ("neighbor_restarts", neighbor_restarts),
    ]
}

fn refresh_events(r: &RefreshCounters) -> [(&'static str, u64); 11] {
    let RefreshCounters {
        identified,
        summarized,
        retransmitted,
        acks_sent,
        acks_received,
        nacks_sent,
        nacks_received,
        bundles_sent,
        bundles_received,
        epoch_changes,
        unforwarded_ids,
    } = *r;
    [
        ("identified", identified),
        ("summarized", summarized),
        ("retransmitted", retransmitted),
        ("acks_sent", acks_sent),
        ("acks_received", acks_received),
        ("nacks_sent", nacks_sent),
        ("nacks_received", nacks_received),
        ("bundles_sent", bundles_sent),
        ("bundles_received", bundles_received),
        ("epoch_changes", epoch_changes),
        ("unforwarded_ids", unforwarded_ids),
    ]
}

fn integrity_events(i: &IntegrityCounters) -> [(&'static str, u64); 7] {
    let IntegrityCounters {
        signed,
        unsigned_no_key,
        verified,
        challenges_sent,
        responses_sent,
        resent,
        handshakes,
    } = *i;
    [
        ("signed", signed),
        ("unsigned_no_key", unsigned_no_key),
        ("verified", verified),
        ("challenges_sent", challenges_sent),
        ("responses_sent", responses_sent),
        ("resent", resent),
        ("handshakes", handshakes),
    ]
}

/// Every kind of martian address the engine refuses (see `engine::martian`).
const MARTIANS: [Martian; 5] = [
    Martian::Unspecified,
    Martian::Loopback,
    Martian::Broadcast,
    Martian::Multicast,
    Martian::Local,
];

/// Drop reasons listed even before the first drop, so alerts on hostile or misconfigured
/// neighbours can watch them from the start: integrity failures (RFC 2747) and martian
/// senders and hops (RFC 2205 §A.2, §A.9).
pub fn watched_drop_reasons() -> impl Iterator<Item = &'static str> {
    pathwise_auth::Reject::ALL.iter().map(|r| r.reason()).chain(
        MARTIANS
            .iter()
            .flat_map(|m| [m.sender_reason(), m.hop_reason()]),
    )
}

/// Every drop reason with its count for the metrics: those that happened, and the watched ones
/// at zero.
fn drops(c: &Counters) -> Vec<(&'static str, u64)> {
    let mut all: Vec<(&'static str, u64)> = c.drops.iter().map(|(r, n)| (*r, *n)).collect();
    for r in watched_drop_reasons() {
        if !c.drops.contains_key(r) {
            all.push((r, 0));
        }
    }
    all.sort_unstable();
    all
}

fn object(pairs: impl IntoIterator<Item = (&'static str, u64)>) -> Value {
    Value::Object(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect(),
    )
}

/// `rsvp.show.counters`.
pub fn counters_json(c: &Counters, st: &StateStats, d: &DaemonCounts) -> Value {
    let name = |t| format!("{t:?}");
    let mut v = Map::new();
    v.insert(
        "messages_in".into(),
        MSG_TYPES
            .iter()
            .map(|&t| (name(t), json!(c.received(t))))
            .collect::<Map<_, _>>()
            .into(),
    );
    v.insert(
        "messages_out".into(),
        MSG_TYPES
            .iter()
            .map(|&t| (name(t), json!(c.sent(t))))
            .collect::<Map<_, _>>()
            .into(),
    );
    // Drops that happened: a person reading `show counters` looks for what went wrong; the
    // watched reasons at zero are for the metrics' alerts.
    v.insert(
        "drops".into(),
        object(c.drops.iter().map(|(r, n)| (*r, *n))),
    );
    for (k, n) in engine_totals(c) {
        v.insert(k.into(), json!(n));
    }
    v.insert(
        "refresh_reduction".into(),
        object(refresh_events(&c.refresh)),
    );
    v.insert("hello".into(), object(hello_events(&c.hello)));
    v.insert("integrity".into(), object(integrity_events(&c.integrity)));
    let DaemonCounts {
        send_errors,
        dataplane_errors,
        socket_drops,
        kernel_drops,
        state_bytes,
        lsps,
        labels_in_use,
        receiver_requests,
    } = *d;
    let StateStats {
        sessions,
        psbs,
        rsbs,
        out_isbs,
        ..
    } = *st;
    let rest = json!({
        "send_errors": send_errors,
        "dataplane_errors": dataplane_errors,
        "socket_drops": socket_drops,
        "kernel_drops": kernel_drops,
        "lsps": lsps,
        "labels_in_use": labels_in_use,
        "receiver_requests": receiver_requests,
        "sessions": sessions,
        "path_states": psbs,
        "resv_states": rsbs,
        "reservations": out_isbs,
        "state_bytes": state_bytes,
    });
    if let Value::Object(rest) = rest {
        v.extend(rest);
    }
    Value::Object(v)
}

/// Prometheus text exposition of the counters.
pub fn write_metrics(out: &mut String, c: &Counters, st: &StateStats, d: &DaemonCounts) {
    let mut m = crate::metrics::Metrics::new(out, "rsvp");
    m.labelled(
        "messages",
        MSG_TYPES.iter().flat_map(|&t| {
            [("in", c.received(t)), ("out", c.sent(t))]
                .map(|(dir, n)| (format!("direction=\"{dir}\",type=\"{t:?}\""), n))
        }),
    );
    m.labelled(
        "drops",
        drops(c)
            .into_iter()
            .map(|(r, n)| (format!("reason=\"{r}\""), n)),
    );
    let event = |(what, n): (&str, u64)| (format!("event=\"{what}\""), n);
    m.labelled("hello", hello_events(&c.hello).map(event));
    m.labelled("refresh_reduction", refresh_events(&c.refresh).map(event));
    m.labelled("integrity", integrity_events(&c.integrity).map(event));
    m.gauges([
        ("sessions", st.sessions),
        ("path_states", st.psbs),
        ("resv_states", st.rsbs),
        ("reservations", st.out_isbs),
        ("state_bytes", d.state_bytes),
        ("lsps", d.lsps),
        ("labels_in_use", d.labels_in_use),
        ("receiver_requests", d.receiver_requests),
    ]);
    m.counters(engine_totals(c));
    m.counters([
        ("send_errors", d.send_errors),
        ("dataplane_errors", d.dataplane_errors),
        ("socket_drops", d.socket_drops),
        ("kernel_drops", d.kernel_drops),
    ]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathwise_rsvp::wire::MsgType;

    /// Counters with every field set, each to a value no other field has (the struct literals
    /// name every field, so a counter the engine gains must be given one here too).
    fn distinct() -> (Counters, Vec<u64>) {
        let mut next = 1000u64;
        let mut n = || {
            next += 1;
            next
        };
        let rx = std::array::from_fn(|_| n());
        let tx = std::array::from_fn(|_| n());
        let c = Counters {
            rx,
            tx,
            drops: [
                ("martian_sender_local", n()),
                ("martian_hop_multicast", n()),
                ("bad_checksum", n()),
                ("a_reason_added_later", n()),
            ]
            .into_iter()
            .collect(),
            skipped_objects: n(),
            unsent: n(),
            path_timeouts: n(),
            resv_timeouts: n(),
            admission_failures: n(),
            local_repairs: n(),
            preemptions: n(),
            lsp_setup_timeouts: n(),
            label_allocation_failures: n(),
            integrity: IntegrityCounters {
                signed: n(),
                unsigned_no_key: n(),
                verified: n(),
                challenges_sent: n(),
                responses_sent: n(),
                resent: n(),
                handshakes: n(),
            },
            hello: HelloCounters {
                sent: n(),
                received: n(),
                neighbor_failures: n(),
                neighbor_restarts: n(),
            },
            refresh: RefreshCounters {
                identified: n(),
                summarized: n(),
                retransmitted: n(),
                acks_sent: n(),
                acks_received: n(),
                nacks_sent: n(),
                nacks_received: n(),
                bundles_sent: n(),
                bundles_received: n(),
                epoch_changes: n(),
                unforwarded_ids: n(),
            },
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
        let st = StateStats::default();
        let d = DaemonCounts::default();
        let mut text = String::new();
        write_metrics(&mut text, &c, &st, &d);
        let samples: Vec<u64> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect();
        let mut shown = Vec::new();
        numbers_in_json(&counters_json(&c, &st, &d), &mut shown);
        for v in values {
            assert_eq!(
                samples.iter().filter(|&&s| s == v).count(),
                1,
                "{v} in\n{text}"
            );
            assert_eq!(shown.iter().filter(|&&s| s == v).count(), 1, "{v}");
        }
        // The new counters under their names.
        for (name, v) in [
            ("skipped_objects", c.skipped_objects),
            ("unsent", c.unsent),
            ("lsp_setup_timeouts", c.lsp_setup_timeouts),
            ("local_repairs", c.local_repairs),
        ] {
            assert!(
                text.contains(&format!("pathwise_rsvp_{name}_total {v}\n")),
                "{name}"
            );
        }
        assert!(text.contains(&format!(
            "pathwise_rsvp_messages_total{{direction=\"in\",type=\"Path\"}} {}\n",
            c.received(MsgType::Path)
        )));
    }

    #[test]
    fn every_drop_reason_is_shown_and_watched_ones_from_zero() {
        let (c, _) = distinct();
        let mut text = String::new();
        let (st, d) = (StateStats::default(), DaemonCounts::default());
        write_metrics(&mut text, &c, &st, &d);
        let json = counters_json(&c, &st, &d);
        for (r, n) in &c.drops {
            assert!(
                text.contains(&format!(
                    "pathwise_rsvp_drops_total{{reason=\"{r}\"}} {n}\n"
                )),
                "{r}"
            );
            assert_eq!(json["drops"][*r], json!(n), "{r}");
        }
        let empty = Counters::default();
        let mut text = String::new();
        write_metrics(&mut text, &empty, &st, &d);
        let json = counters_json(&empty, &st, &d);
        assert_eq!(
            json["drops"],
            json!({}),
            "show counters lists drops that happened"
        );
        let watched: Vec<&str> = watched_drop_reasons().collect();
        // Seven integrity rejections, five martian kinds for senders and for hops.
        assert_eq!(watched.len(), pathwise_auth::Reject::ALL.len() + 10);
        for r in watched {
            assert!(
                text.contains(&format!("pathwise_rsvp_drops_total{{reason=\"{r}\"}} 0\n")),
                "{r}"
            );
        }
    }

    #[test]
    fn every_martian_kind_is_watched() {
        // No wildcard: a kind the engine gains stops this compiling; give it the next index
        // and add it to MARTIANS.
        let index = |m: Martian| match m {
            Martian::Unspecified => 0,
            Martian::Loopback => 1,
            Martian::Broadcast => 2,
            Martian::Multicast => 3,
            Martian::Local => 4,
        };
        for (i, m) in MARTIANS.iter().enumerate() {
            assert_eq!(index(*m), i, "{m:?}");
        }
    }
}
