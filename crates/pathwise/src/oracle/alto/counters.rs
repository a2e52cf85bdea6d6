//! What the ALTO server counts: requests by resource, refusals by reason (the §8.5.2 codes and
//! the HTTP-level refusals), update streams and the events they sent.

use pathwise_oracle::alto::{ErrorCode, Resource};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// HTTP-level refusals, besides the ALTO error codes.
pub const HTTP_REFUSALS: [&str; 7] = [
    "unsupported_media_type",
    "not_acceptable",
    "unauthorized",
    "not_found",
    "stream_control_unknown",
    "bad_connection",
    "method_not_allowed",
];

/// A refusal, as counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// An ALTO error (400 with an `application/alto-error+json` body).
    Alto(ErrorCode),
    /// 415: the request body is not of the resource's input media type.
    UnsupportedMediaType,
    /// 406: the client's `Accept` excludes the response's media type.
    NotAcceptable,
    /// 401: no or wrong credentials.
    Unauthorized,
    /// 404: no such resource.
    NotFound,
    /// 404 on a stream control URI that names no open stream (RFC 8895 §7.1: counted to see
    /// guessing).
    StreamControlUnknown,
    /// A connection that failed before a request (TLS handshake, I/O).
    BadConnection,
    /// 405: a resource asked with the wrong method.
    MethodNotAllowed,
}

/// The counters, shared by the server's tasks.
#[derive(Debug, Default)]
pub struct AltoCounters {
    requests: [AtomicU64; Resource::NAMES.len()],
    alto_errors: [AtomicU64; 4],
    refusals: [AtomicU64; HTTP_REFUSALS.len()],
    streams_opened: AtomicU64,
    streams_open: AtomicU64,
    full_replacements: AtomicU64,
    merge_patches: AtomicU64,
    control_events: AtomicU64,
    map_builds: AtomicU64,
}

impl AltoCounters {
    /// A request to `resource`.
    pub fn request(&self, resource: Resource) {
        if let Some(i) = Resource::NAMES.iter().position(|n| *n == resource.name()) {
            self.requests[i].fetch_add(1, Relaxed);
        }
    }

    /// A refusal.
    pub fn refused(&self, r: Refusal) {
        let slot = match r {
            Refusal::Alto(code) => {
                if let Some(i) = ErrorCode::ALL.iter().position(|c| *c == code) {
                    self.alto_errors[i].fetch_add(1, Relaxed);
                }
                return;
            }
            Refusal::UnsupportedMediaType => 0,
            Refusal::NotAcceptable => 1,
            Refusal::Unauthorized => 2,
            Refusal::NotFound => 3,
            Refusal::StreamControlUnknown => 4,
            Refusal::BadConnection => 5,
            Refusal::MethodNotAllowed => 6,
        };
        self.refusals[slot].fetch_add(1, Relaxed);
    }

    /// An update stream opened (`true`) or closed.
    pub fn stream(&self, opened: bool) {
        if opened {
            self.streams_opened.fetch_add(1, Relaxed);
            self.streams_open.fetch_add(1, Relaxed);
        } else {
            self.streams_open.fetch_sub(1, Relaxed);
        }
    }

    /// An update stream event sent: a full replacement, a merge patch or a control message.
    pub fn event(&self, kind: EventKind) {
        match kind {
            EventKind::Full => &self.full_replacements,
            EventKind::MergePatch => &self.merge_patches,
            EventKind::Control => &self.control_events,
        }
        .fetch_add(1, Relaxed);
    }

    /// The maps were computed for a new snapshot.
    pub fn map_build(&self) {
        self.map_builds.fetch_add(1, Relaxed);
    }

    /// A copy for `show counters` and the metrics page.
    pub fn report(&self) -> AltoReport {
        let by = |names: &[&str], a: &[AtomicU64]| -> BTreeMap<String, u64> {
            names
                .iter()
                .zip(a)
                .map(|(n, v)| ((*n).to_owned(), v.load(Relaxed)))
                .collect()
        };
        let mut refused = by(&HTTP_REFUSALS, &self.refusals);
        for (c, v) in ErrorCode::ALL.iter().zip(&self.alto_errors) {
            refused.insert(c.as_str().to_owned(), v.load(Relaxed));
        }
        AltoReport {
            requests: by(&Resource::NAMES, &self.requests),
            refused,
            streams_opened: self.streams_opened.load(Relaxed),
            streams_open: self.streams_open.load(Relaxed),
            full_replacements: self.full_replacements.load(Relaxed),
            merge_patches: self.merge_patches.load(Relaxed),
            control_events: self.control_events.load(Relaxed),
            map_builds: self.map_builds.load(Relaxed),
        }
    }
}

/// What an update stream sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A full replacement of a resource.
    Full,
    /// A JSON merge patch.
    MergePatch,
    /// A control update message (RFC 8895 §5.3).
    Control,
}

/// The ALTO server's counters at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AltoReport {
    /// Requests by resource.
    pub requests: BTreeMap<String, u64>,
    /// Refusals by reason: the §8.5.2 codes (`E_SYNTAX`, …) and HTTP-level ones.
    pub refused: BTreeMap<String, u64>,
    /// Update streams opened.
    pub streams_opened: u64,
    /// Update streams open now.
    pub streams_open: u64,
    /// Full replacements sent on update streams.
    pub full_replacements: u64,
    /// Merge patches sent on update streams.
    pub merge_patches: u64,
    /// Control update messages sent.
    pub control_events: u64,
    /// Times the maps were computed for a new snapshot.
    pub map_builds: u64,
}

impl AltoReport {
    /// The `show counters` lines.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let total: u64 = self.requests.values().sum();
        let _ = writeln!(s, "alto requests {total}");
        for (k, v) in self.requests.iter().filter(|(_, v)| **v > 0) {
            let _ = writeln!(s, "  resource {k:<19} {v}");
        }
        let refused: u64 = self.refused.values().sum();
        let _ = writeln!(s, "alto refused {refused}");
        for (k, v) in self.refused.iter().filter(|(_, v)| **v > 0) {
            let _ = writeln!(s, "  reason {k:<21} {v}");
        }
        let _ = writeln!(
            s,
            "alto update streams {} opened, {} open; sent {} full, {} merge patches, {} control; \
             maps built {}",
            self.streams_opened,
            self.streams_open,
            self.full_replacements,
            self.merge_patches,
            self.control_events,
            self.map_builds
        );
        s
    }

    /// Its metric families (`pathwise_oracle_alto_*`).
    pub fn add_to(&self, m: &mut crate::metrics::Snapshot) {
        m.counters(
            "alto_requests",
            "ALTO requests, by resource.",
            ["resource"],
            self.requests.iter().map(|(r, n)| ([r.clone()], *n)),
        )
        .counters(
            "alto_refusals",
            "ALTO requests refused, by reason (RFC 7285 error code or HTTP refusal).",
            ["reason"],
            self.refused.iter().map(|(r, n)| ([r.clone()], *n)),
        )
        .counter(
            "alto_streams_opened",
            "ALTO update streams (RFC 8895) opened.",
            self.streams_opened,
        )
        .gauge(
            "alto_streams_open",
            "ALTO update streams open now.",
            self.streams_open,
        )
        .counters(
            "alto_stream_events",
            "ALTO update stream events sent, by kind.",
            ["kind"],
            [
                (["full".to_string()], self.full_replacements),
                (["merge_patch".to_string()], self.merge_patches),
                (["control".to_string()], self.control_events),
            ],
        )
        .counter(
            "alto_map_builds",
            "Times the ALTO maps were computed for a new database.",
            self.map_builds,
        );
    }
}
