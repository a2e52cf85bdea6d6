//! The RSVP service's counters as `rsvp show counters` (JSON) and Prometheus metrics show them:
//! the engine's [`Counters`] and [`StateStats`] plus what only the daemon counts (socket and
//! data-plane errors). Both views are written from the same lists, and those lists destructure
//! the engine's counter structs field by field, so a counter the engine gains does not compile
//! here until it is shown.

use crate::metrics::{Snapshot, Unit};
use pathwise_net::ip::DropReason as SocketDrop;
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
    /// Datagrams the raw sockets dropped before the engine saw them, by reason (indexed as
    /// [`SocketDrop::ALL`]).
    pub socket_drops: [u64; SocketDrop::ALL.len()],
    /// Datagrams the kernel dropped for want of receive buffer.
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

/// Counters of the engine that are single numbers: name, help text, value.
fn engine_totals(c: &Counters) -> [(&'static str, &'static str, u64); 9] {
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
        (
            "path_timeouts",
            "Path states timed out (RFC 2205 section 3.7).",
            path_timeouts,
        ),
        (
            "resv_timeouts",
            "Reservation states timed out (RFC 2205 section 3.7).",
            resv_timeouts,
        ),
        (
            "admission_failures",
            "Reservations refused by admission control.",
            admission_failures,
        ),
        (
            "local_repairs",
            "Local repairs after a route change (RFC 2205 section 3.6).",
            local_repairs,
        ),
        (
            "preemptions",
            "Reservations or LSPs preempted.",
            preemptions,
        ),
        (
            "lsp_setup_timeouts",
            "LSPs not set up in time.",
            lsp_setup_timeouts,
        ),
        (
            "label_allocation_failures",
            "Label requests that found no free label.",
            label_allocation_failures,
        ),
        (
            "skipped_objects",
            "Unknown objects skipped as their class allows (RFC 2205 section 3.10).",
            skipped_objects,
        ),
        (
            "unsent",
            "Messages the engine could not build or route.",
            unsent,
        ),
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

fn refresh_events(r: &RefreshCounters) -> [(&'static str, u64); 12] {
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
        capability_lost,
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
        ("capability_lost", capability_lost),
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

/// Every drop reason with its count for the metrics: the engine's that happened, the watched
/// ones at zero, the raw sockets' by reason and the kernel's.
fn drops(c: &Counters, d: &DaemonCounts) -> Vec<(String, u64)> {
    let mut all: Vec<(String, u64)> = c.drops.iter().map(|(r, n)| (r.to_string(), *n)).collect();
    for r in watched_drop_reasons() {
        if !c.drops.contains_key(r) {
            all.push((r.to_string(), 0));
        }
    }
    for (r, n) in SocketDrop::ALL.iter().zip(d.socket_drops) {
        all.push((crate::metrics::ip_drop_reason(*r), n));
    }
    all.push((
        crate::metrics::KERNEL_RECEIVE_BUFFER.to_string(),
        d.kernel_drops,
    ));
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
    for (k, _, n) in engine_totals(c) {
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
        "socket_drops": socket_drops.iter().sum::<u64>(),
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

/// The counters as metric families (`pathwise_rsvp_*`, see [`crate::metrics`]).
pub fn snapshot(c: &Counters, st: &StateStats, d: &DaemonCounts) -> Snapshot {
    let mut m = Snapshot::new("rsvp");
    m.counters(
        "messages",
        "RSVP messages sent and received, by message type.",
        ["direction", "type"],
        MSG_TYPES.iter().flat_map(|&t| {
            [("received", c.received(t)), ("sent", c.sent(t))]
                .map(|(dir, n)| ([dir.to_string(), format!("{t:?}")], n))
        }),
    );
    m.counters(
        "drops",
        "Datagrams and messages dropped, by reason: by the engine, by the raw sockets, by the kernel for want of receive buffer.",
        ["reason"],
        drops(c, d).into_iter().map(|(r, n)| ([r], n)),
    );
    let event = |(what, n): (&str, u64)| ([what.to_string()], n);
    m.counters(
        "hello",
        "Hello events (RFC 3209 section 5), by event.",
        ["event"],
        hello_events(&c.hello).map(event),
    );
    m.counters(
        "refresh_reduction",
        "Refresh-reduction events (RFC 2961), by event.",
        ["event"],
        refresh_events(&c.refresh).map(event),
    );
    m.counters(
        "integrity",
        "Message-integrity events (RFC 2747), by event.",
        ["event"],
        integrity_events(&c.integrity).map(event),
    );
    m.gauge("sessions", "Sessions with state.", st.sessions)
        .gauge("path_states", "Path state blocks.", st.psbs)
        .gauge("resv_states", "Reservation state blocks.", st.rsbs)
        .gauge(
            "reservations",
            "Reservations installed on outgoing interfaces.",
            st.out_isbs,
        )
        .gauge_in(
            "state",
            Unit::Bytes,
            "Estimated heap held by the engine's state.",
            d.state_bytes,
        )
        .gauge("lsps", "RSVP-TE LSPs known.", d.lsps)
        .gauge("labels_in_use", "MPLS labels allocated.", d.labels_in_use)
        .gauge(
            "receiver_requests",
            "Reservation requests of local receivers kept, installed or waiting for path state.",
            d.receiver_requests,
        );
    for (name, help, n) in engine_totals(c) {
        m.counter(name, help, n);
    }
    m.counter(
        "send_errors",
        "Datagrams the raw sockets would not send.",
        d.send_errors,
    )
    .counter(
        "dataplane_errors",
        "Label changes the kernel refused.",
        d.dataplane_errors,
    );
    m
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
                capability_lost: n(),
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
        let snap = snapshot(&c, &st, &d);
        crate::metrics::tests::assert_well_formed(&snap);
        let text = snap.openmetrics();
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
        // Messages: one family labelled by direction and type; events: one per kind.
        for (dir, n) in [
            ("received", c.received(MsgType::Path)),
            ("sent", c.sent(MsgType::Path)),
        ] {
            assert!(text.contains(&format!(
                "pathwise_rsvp_messages_total{{direction=\"{dir}\",type=\"Path\"}} {n}\n"
            )));
        }
        let messages = snap.family("messages").unwrap();
        assert_eq!(messages.samples.len(), 2 * MSG_TYPES.len());
        assert!(text.contains(&format!(
            "pathwise_rsvp_hello_total{{event=\"neighbor_failures\"}} {}\n",
            c.hello.neighbor_failures
        )));
        assert!(
            text.contains("# UNIT pathwise_rsvp_state_bytes bytes\n"),
            "{text}"
        );
    }

    #[test]
    fn every_drop_reason_is_shown_and_watched_ones_from_zero() {
        let (c, _) = distinct();
        let st = StateStats::default();
        let d = DaemonCounts {
            socket_drops: std::array::from_fn(|i| 10 * i as u64),
            kernel_drops: 5,
            ..DaemonCounts::default()
        };
        let text = snapshot(&c, &st, &d).openmetrics();
        // One family for every drop, whoever dropped it.
        assert_eq!(
            text.matches("# TYPE pathwise_rsvp_drops counter").count(),
            1
        );
        assert!(text.contains("pathwise_rsvp_drops_total{reason=\"kernel_receive_buffer\"} 5\n"));
        assert!(text.contains("pathwise_rsvp_drops_total{reason=\"oversize\"} 0\n"));
        assert!(text.contains("pathwise_rsvp_drops_total{reason=\"ip_bad_options\"} 50\n"));
        assert_eq!(counters_json(&c, &st, &d)["socket_drops"], json!(360));
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
        let text = snapshot(&empty, &st, &d).openmetrics();
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
