//! The Ping load client inside the daemon (seed 000 §4.1.5): open N sessions one after another
//! at an initial rate (each session's first ping sets up routing state hop by hop: its RTT is
//! the session's setup time), then ping across them round robin at a steady rate for a
//! duration (the NSLP refreshes of the thesis), recording every RTT.
//!
//! It runs in the daemon's event loop: `gist.load.start` answers at once with the run's id, and
//! `gist.load.result` answers `{"done": false, …progress}` until the run ends, so the management
//! socket (one client at a time) is never held for the run's length.

use pathwise_gist::nslp::TransferAttributes;
use pathwise_gist::wire::SessionId;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// How long the run waits for the last replies after its last ping.
const GRACE: Duration = Duration::from_secs(3);

/// Arguments of `gist.load.start`.
#[derive(Debug, Deserialize)]
pub struct LoadArgs {
    /// Destination of the flows.
    pub dest: IpAddr,
    /// Sessions to open.
    pub sessions: u32,
    /// Sessions opened per second.
    pub initial_rate: f64,
    /// Pings per second once every session is open.
    pub steady_rate: f64,
    /// Length of the steady phase, ms.
    pub duration_ms: u64,
    /// "udp", "tcp" or "tls".
    #[serde(default = "udp")]
    pub transport: String,
}

fn udp() -> String {
    "udp".into()
}

/// What a ping of the run is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Setup,
    Steady,
}

/// One load run.
#[derive(Debug)]
pub struct LoadRun {
    /// Its id.
    pub id: u64,
    pub(super) dest: IpAddr,
    pub(super) transfer: TransferAttributes,
    transport: String,
    target: u32,
    /// Sessions whose first ping is due or sent.
    opened: u32,
    initial: Duration,
    steady: Duration,
    steady_for: Duration,
    /// Sessions opened so far (their first ping sent).
    pub(super) sessions: Vec<SessionId>,
    next_send: Instant,
    steady_from: Option<Instant>,
    cursor: usize,
    outstanding: HashMap<(SessionId, u32), Purpose>,
    setup_ms: Vec<f64>,
    rtt_ms: Vec<f64>,
    sent: u64,
    failed: u64,
    started: Instant,
    finished: Option<Instant>,
}

/// What to send next.
#[derive(Debug)]
pub enum Next {
    /// Open a new session with its first ping.
    Open,
    /// Ping again in this session.
    Again(SessionId),
}

impl LoadRun {
    /// A run starting now.
    pub fn new(
        id: u64,
        a: &LoadArgs,
        transfer: TransferAttributes,
        now: Instant,
    ) -> Result<LoadRun, String> {
        if a.sessions == 0 || a.sessions > 1_000_000 {
            return Err("sessions: 1 to 1,000,000".into());
        }
        let interval = |r: f64, what: &str| {
            if r.is_finite() && r > 0.0 && r <= 100_000.0 {
                Ok(Duration::from_secs_f64(1.0 / r))
            } else {
                Err(format!(
                    "{what}: more than 0 and at most 100,000 per second"
                ))
            }
        };
        Ok(LoadRun {
            id,
            dest: a.dest,
            transfer,
            transport: a.transport.clone(),
            target: a.sessions,
            opened: 0,
            initial: interval(a.initial_rate, "initial_rate")?,
            steady: interval(a.steady_rate, "steady_rate")?,
            steady_for: Duration::from_millis(a.duration_ms.min(3_600_000)),
            sessions: Vec::new(),
            next_send: now,
            steady_from: None,
            cursor: 0,
            outstanding: HashMap::new(),
            setup_ms: Vec::new(),
            rtt_ms: Vec::new(),
            sent: 0,
            failed: 0,
            started: now,
            finished: None,
        })
    }

    /// When the run next needs to act.
    pub fn deadline(&self) -> Option<Instant> {
        if self.finished.is_some() {
            return None;
        }
        Some(self.next_send)
    }

    /// The pings due at `now` (at most a burst's worth: a late wake-up does not flood).
    pub fn due(&mut self, now: Instant) -> Vec<Next> {
        let mut out = Vec::new();
        while self.finished.is_none() && self.next_send <= now && out.len() < 1000 {
            if self.opened < self.target {
                out.push(Next::Open);
                self.opened += 1;
                self.next_send += self.initial;
                if self.opened == self.target {
                    self.steady_from = Some(self.next_send);
                }
                continue;
            }
            let from = *self.steady_from.get_or_insert(now);
            if now >= from + self.steady_for || self.sessions.is_empty() {
                // Done sending: wait for the last replies.
                if self.outstanding.is_empty() || now >= from + self.steady_for + GRACE {
                    self.finished = Some(now);
                } else {
                    self.next_send = from + self.steady_for + GRACE;
                }
                break;
            }
            let sid = self.sessions[self.cursor % self.sessions.len()];
            self.cursor += 1;
            out.push(Next::Again(sid));
            self.next_send += self.steady;
        }
        out
    }

    /// A ping went out in session `sid` with `seq`.
    pub fn sent(&mut self, sid: SessionId, seq: u32, open: bool) {
        if open {
            self.sessions.push(sid);
        }
        self.sent += 1;
        let purpose = if open {
            Purpose::Setup
        } else {
            Purpose::Steady
        };
        self.outstanding.insert((sid, seq), purpose);
    }

    /// A ping could not be sent.
    pub fn send_failed(&mut self) {
        self.failed += 1;
    }

    /// A reply: whether it was one of the run's.
    pub fn reply(&mut self, sid: SessionId, seq: u32, rtt: Duration) -> bool {
        match self.outstanding.remove(&(sid, seq)) {
            Some(Purpose::Setup) => self.setup_ms.push(rtt.as_secs_f64() * 1e3),
            Some(Purpose::Steady) => self.rtt_ms.push(rtt.as_secs_f64() * 1e3),
            None => return false,
        }
        true
    }

    /// A ping failed: whether it was one of the run's.
    pub fn failure(&mut self, sid: SessionId, seq: u32) -> bool {
        let ours = self.outstanding.remove(&(sid, seq)).is_some();
        if ours {
            self.failed += 1;
        }
        ours
    }

    /// Whether the run is over.
    pub fn done(&self) -> bool {
        self.finished.is_some()
    }

    /// Progress or the result.
    pub fn report(&self) -> Value {
        let mut v = json!({
            "id": self.id,
            "done": self.done(),
            "destination": self.dest,
            "transport": self.transport,
            "sessions": self.sessions.len(),
            "sent": self.sent,
            "setup_replies": self.setup_ms.len(),
            "steady_replies": self.rtt_ms.len(),
            "failed": self.failed,
        });
        if let Some(end) = self.finished {
            v["lost"] = json!(self.outstanding.len());
            v["elapsed_s"] = json!((end - self.started).as_secs_f64());
            v["setup_ms"] = distribution(&self.setup_ms);
            v["rtt_ms"] = distribution(&self.rtt_ms);
            if let Some(from) = self.steady_from {
                v["setup_phase_s"] = json!((from - self.started).as_secs_f64());
            }
        }
        v
    }
}

/// min / median / p90 / p99 / max / mean of `xs` (nearest rank).
pub fn distribution(xs: &[f64]) -> Value {
    if xs.is_empty() {
        return json!({ "count": 0 });
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    json!({
        "count": v.len(),
        "min": v[0],
        "median": rank(0.5),
        "p90": rank(0.9),
        "p99": rank(0.99),
        "max": v[v.len() - 1],
        "mean": v.iter().sum::<f64>() / v.len() as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(sessions: u32) -> LoadArgs {
        LoadArgs {
            dest: "10.0.0.1".parse().unwrap(),
            sessions,
            initial_rate: 10.0,
            steady_rate: 100.0,
            duration_ms: 1000,
            transport: "udp".into(),
        }
    }

    #[test]
    fn opens_at_the_initial_rate_then_pings_at_the_steady_rate() {
        let t0 = Instant::now();
        let mut r = LoadRun::new(1, &args(3), TransferAttributes::default(), t0).unwrap();
        let mut seq = 0;
        let mut opened = 0;
        let mut again = 0;
        let mut t = t0;
        while !r.done() && t < t0 + Duration::from_secs(10) {
            for n in r.due(t) {
                seq += 1;
                match n {
                    Next::Open => {
                        opened += 1;
                        r.sent(SessionId([opened; 16]), seq, true);
                    }
                    Next::Again(s) => {
                        again += 1;
                        r.sent(s, seq, false);
                    }
                }
            }
            // Everything is answered at once.
            let keys: Vec<_> = r.outstanding.keys().copied().collect();
            for (s, q) in keys {
                assert!(r.reply(s, q, Duration::from_millis(2)));
            }
            t += Duration::from_millis(5);
        }
        assert!(r.done());
        assert_eq!(opened, 3);
        // 1 s at 100/s.
        assert!((99..=101).contains(&again), "{again}");
        let v = r.report();
        assert_eq!(v["setup_ms"]["count"], 3);
        assert_eq!(v["rtt_ms"]["median"], 2.0);
        assert_eq!(v["lost"], 0);
        // The setup phase takes (N - 1) / R1 plus one interval.
        let setup = v["setup_phase_s"].as_f64().unwrap();
        assert!((0.25..=0.35).contains(&setup), "{setup}");
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        let d = distribution(&xs);
        assert_eq!(
            (d["min"].as_f64(), d["median"].as_f64(), d["p90"].as_f64()),
            (Some(1.0), Some(50.0), Some(90.0))
        );
        assert_eq!(
            (d["p99"].as_f64(), d["max"].as_f64()),
            (Some(99.0), Some(100.0))
        );
        assert_eq!(distribution(&[])["count"], 0);
    }

    #[test]
    fn bad_rates_are_refused() {
        let mut a = args(3);
        a.initial_rate = 0.0;
        assert!(LoadRun::new(1, &a, TransferAttributes::default(), Instant::now()).is_err());
        assert!(LoadRun::new(1, &args(0), TransferAttributes::default(), Instant::now()).is_err());
    }
}
