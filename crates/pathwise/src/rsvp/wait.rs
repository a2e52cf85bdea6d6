//! `rsvp.wait`: a management request answered when this node's state for a session reaches a
//! point — path state from a sender, or a reservation from a next hop — or when its time is up.
//!
//! Scripts, tests and benchmarks used to learn that by asking for every session again and
//! again (`show sessions`, `show events`); each such poll wakes the daemon, serialises its
//! whole state and competes for the CPU with the very messages being waited for. A waiting
//! request instead costs nothing until the engine's state changes: the service looks at its
//! pending waits after each batch of work ([`Waits::answer`], called from the flush that ends
//! every batch), and its poll deadline includes the earliest wait's end ([`Waits::deadline`]).

use crate::daemon::Reply;
use crate::rsvp::verbs::SessionArg;
use pathwise_rsvp::engine::inspect::SessionView;
use pathwise_rsvp::wire::Session;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The longest a request may wait: the daemon's management handler gives up on an answer after
/// ten seconds; a caller that wants longer asks again.
pub const MAX_WAIT: Duration = Duration::from_secs(9);

/// How long a request waits when it does not say.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(5);

/// What to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Until {
    /// Path state from at least one sender (a Path received, or a local sender registered).
    Path,
    /// A reservation request from a next hop (a Resv received from downstream).
    Resv,
}

impl Until {
    /// As the request and the answer spell it.
    pub fn name(self) -> &'static str {
        match self {
            Until::Path => "path",
            Until::Resv => "resv",
        }
    }

    /// Whether `view` (this node's state for the session, if any) has reached this point.
    pub fn reached(self, view: Option<&SessionView>) -> bool {
        let Some(v) = view else { return false };
        match self {
            Until::Path => !v.paths.is_empty(),
            Until::Resv => v.resvs.iter().any(|r| r.nhop.is_some()),
        }
    }
}

/// The arguments of `rsvp.wait`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WaitReq {
    /// The session.
    pub session: SessionArg,
    /// What to wait for.
    pub until: Until,
    /// How long to wait at most, milliseconds (default [`DEFAULT_WAIT`], at most [`MAX_WAIT`]).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

impl WaitReq {
    /// Read the arguments; a clear error for bad ones.
    pub fn parse(args: &Value) -> Result<WaitReq, String> {
        let r: WaitReq = serde_json::from_value(args.clone())
            .map_err(|e| format!("bad arguments for rsvp.wait: {e}"))?;
        if let Some(ms) = r.timeout_ms
            && Duration::from_millis(ms) > MAX_WAIT
        {
            return Err(format!(
                "rsvp.wait: timeout_ms {ms} is above the longest wait, {} ms; ask again to \
                 wait longer",
                MAX_WAIT.as_millis()
            ));
        }
        Ok(r)
    }

    /// As a request's arguments.
    pub fn args(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The session it names, as the engine keys it.
    pub fn key(&self) -> Session {
        self.session.into()
    }

    fn timeout(&self) -> Duration {
        self.timeout_ms.map_or(DEFAULT_WAIT, Duration::from_millis)
    }
}

/// One request waiting.
#[derive(Debug)]
struct Pending {
    req: WaitReq,
    since: Instant,
    deadline: Instant,
    reply: Reply,
}

impl Pending {
    fn reached(self, now: Instant) {
        let _ = self.reply.send(Ok(json!({
            "session": session_text(&self.req.session),
            "reached": self.req.until.name(),
            "waited_ms": now.saturating_duration_since(self.since).as_secs_f64() * 1e3,
        })));
    }

    fn expired(self) {
        let _ = self.reply.send(Err(format!(
            "{EXPIRED}{} state for session {} within {} ms",
            self.req.until.name(),
            session_text(&self.req.session),
            self.req.timeout().as_millis()
        )));
    }
}

/// How the answer to a request whose time ran out begins.
const EXPIRED: &str = "rsvp.wait: no ";

/// Whether `error`, a management error, is a wait that ran out of time (and not a refusal).
pub fn is_expiry(error: &str) -> bool {
    error.starts_with(EXPIRED)
}

fn session_text(s: &SessionArg) -> String {
    format!("{}:{} proto {}", s.dest, s.port, s.protocol)
}

/// The requests waiting at one service (one engine: a daemon's, or a shard's).
#[derive(Debug, Default)]
pub struct Waits {
    pending: Vec<Pending>,
}

impl Waits {
    /// Take a request: answered at once if `reached` already, kept otherwise.
    pub fn add(&mut self, req: WaitReq, reply: Reply, now: Instant, reached: bool) {
        let deadline = now + req.timeout();
        let p = Pending {
            req,
            since: now,
            deadline,
            reply,
        };
        if reached {
            p.reached(now);
        } else {
            self.pending.push(p);
        }
    }

    /// Whether any request waits.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// When the first waiting request runs out of time.
    pub fn deadline(&self) -> Option<Instant> {
        self.pending.iter().map(|p| p.deadline).min()
    }

    /// Answer every request whose point `reached` says has come, and every one whose time is
    /// up; keep the others.
    pub fn answer(&mut self, now: Instant, mut reached: impl FnMut(&WaitReq) -> bool) {
        let mut i = 0;
        while i < self.pending.len() {
            if reached(&self.pending[i].req) {
                self.pending.swap_remove(i).reached(now);
            } else if now >= self.pending[i].deadline {
                self.pending.swap_remove(i).expired();
            } else {
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn req(port: u16, until: &str, timeout_ms: Option<u64>) -> WaitReq {
        WaitReq::parse(&json!({
            "session": { "dest": "10.0.0.2", "port": port },
            "until": until,
            "timeout_ms": timeout_ms,
        }))
        .unwrap()
    }

    #[test]
    fn a_wait_is_answered_when_its_point_comes_and_not_before() {
        let mut w = Waits::default();
        let t0 = Instant::now();
        let (tx, rx) = mpsc::channel();
        w.add(req(1, "path", Some(1000)), tx, t0, false);
        w.answer(t0 + Duration::from_millis(10), |_| false);
        assert!(rx.try_recv().is_err(), "answered before its point came");
        assert_eq!(w.deadline(), Some(t0 + Duration::from_millis(1000)));
        w.answer(t0 + Duration::from_millis(20), |r| r.session.port == 1);
        let v = rx.try_recv().unwrap().unwrap();
        assert_eq!(v["reached"], "path");
        assert_eq!(v["session"], "10.0.0.2:1 proto 17");
        assert!((v["waited_ms"].as_f64().unwrap() - 20.0).abs() < 1e-6);
        assert!(w.is_empty() && w.deadline().is_none());
    }

    #[test]
    fn a_wait_already_reached_is_answered_at_once_and_kept_by_nobody() {
        let mut w = Waits::default();
        let (tx, rx) = mpsc::channel();
        w.add(req(1, "resv", None), tx, Instant::now(), true);
        assert_eq!(rx.try_recv().unwrap().unwrap()["reached"], "resv");
        assert!(w.is_empty());
    }

    #[test]
    fn a_wait_whose_time_is_up_says_what_did_not_come() {
        let mut w = Waits::default();
        let t0 = Instant::now();
        let (tx1, rx1) = mpsc::channel();
        let (tx2, rx2) = mpsc::channel();
        w.add(req(1, "resv", Some(50)), tx1, t0, false);
        w.add(req(2, "path", None), tx2, t0, false);
        w.answer(t0 + Duration::from_millis(50), |_| false);
        let e = rx1.try_recv().unwrap().unwrap_err();
        assert!(e.contains("no resv state") && e.contains("10.0.0.2:1") && e.contains("50 ms"));
        assert!(is_expiry(&e));
        assert!(rx2.try_recv().is_err(), "the other wait still has time");
        assert_eq!(w.deadline(), Some(t0 + DEFAULT_WAIT));
    }

    #[test]
    fn bad_arguments_are_refused_with_why() {
        let too_long = MAX_WAIT.as_millis() as u64 + 1;
        let e = WaitReq::parse(&json!({ "session": { "dest": "10.0.0.2" }, "until": "path",
            "timeout_ms": too_long }))
        .unwrap_err();
        assert!(e.contains("longest wait"), "{e}");
        assert!(!is_expiry(&e), "a refusal is not a wait that ran out");
        let e = WaitReq::parse(&json!({ "session": { "dest": "10.0.0.2" }, "until": "confirm" }))
            .unwrap_err();
        assert!(e.contains("bad arguments for rsvp.wait"), "{e}");
    }

    #[test]
    fn path_and_resv_are_read_from_the_session_view() {
        use pathwise_rsvp::engine::inspect::{PathView, ResvView};
        use pathwise_rsvp::wire::{FilterSpec, FlowSpec, SenderTspec, StyleKind, TokenBucket};
        let bucket = TokenBucket {
            rate: 1000.0,
            bucket: 1000.0,
            peak: f32::INFINITY,
            min_policed: 0,
            max_packet: 1500,
        };
        let sender = FilterSpec::V4 {
            src: "10.0.0.1".parse().unwrap(),
            src_port: 0,
        };
        let mut v = SessionView {
            session: req(1, "path", None).key(),
            paths: Vec::new(),
            resvs: Vec::new(),
            installed: Vec::new(),
        };
        assert!(!Until::Path.reached(None) && !Until::Path.reached(Some(&v)));
        v.paths.push(PathView {
            sender,
            tspec: SenderTspec(bucket),
            phop: None,
            iif: None,
            oifs: Vec::new(),
        });
        assert!(Until::Path.reached(Some(&v)));
        // A local receiver's own request is not a reservation from downstream.
        let resv = |nhop: Option<std::net::IpAddr>| ResvView {
            nhop,
            oi: None,
            style: StyleKind::Ff,
            flowspec: FlowSpec::ControlledLoad(bucket),
            filters: vec![sender],
        };
        v.resvs.push(resv(None));
        assert!(!Until::Resv.reached(Some(&v)));
        v.resvs.push(resv(Some("10.0.1.2".parse().unwrap())));
        assert!(Until::Resv.reached(Some(&v)));
    }
}
