//! The Ping load client inside the daemon (seed 000 §4.1.5): open N sessions one after another
//! at an initial rate (each session's first ping sets up routing state hop by hop: its RTT is
//! the session's setup time), then ping across them round robin at a steady rate for a
//! duration (the NSLP refreshes of the thesis), recording every RTT.
//!
//! It runs in the daemon's event loop: `gist.load.start` answers at once with the run's id, and
//! `gist.load.result` answers `{"done": false, …progress}` until the run ends, so the management
//! socket (one client at a time) is never held for the run's length.

use crate::loadgen::churn::{Churn, ChurnOp};
use pathwise_gist::nslp::TransferAttributes;
use pathwise_gist::wire::SessionId;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
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
    /// Churn (seed 001 §IV, as `pathwise loadgen rsvp`): once every session is open, end the
    /// oldest and open new ones at random intervals up to this bound, µs, so the count stays in
    /// [n − 10, n].
    #[serde(default)]
    pub churn_max_interval_us: Option<u64>,
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
    /// Sessions open (their first ping sent), oldest first, with when each was opened.
    pub(super) sessions: VecDeque<(SessionId, Instant)>,
    /// The churn of the steady phase, when asked for.
    churn: Option<ChurnRun>,
    /// The `now` of the last [`LoadRun::due`]: when the sessions it opens were opened.
    last_due: Instant,
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

/// The churn of a load run's steady phase.
#[derive(Debug)]
struct ChurnRun {
    max: Duration,
    schedule: Option<Churn>,
    rng: pathwise_core::rng::SeededRng,
    opened: u64,
    ended: u64,
    lifetime_sum: Duration,
    min_count: u64,
    max_count: u64,
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
            sessions: VecDeque::new(),
            last_due: now,
            churn: match a.churn_max_interval_us {
                None => None,
                Some(0) => return Err("churn: the interval bound must be positive".into()),
                Some(us) => Some(ChurnRun {
                    max: Duration::from_micros(us.min(3_600_000_000)),
                    schedule: None,
                    rng: pathwise_core::rng::seeded(pathwise_core::rand::random()),
                    opened: 0,
                    ended: 0,
                    lifetime_sum: Duration::ZERO,
                    min_count: u64::MAX,
                    max_count: 0,
                }),
            },
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
        self.last_due = now;
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
            if let Some(c) = &mut self.churn
                && now < from + self.steady_for
            {
                let t = |i: Instant| {
                    pathwise_core::time::Instant::from_nanos(
                        u64::try_from((i - self.started).as_nanos()).unwrap_or(u64::MAX),
                    )
                };
                let schedule = c.schedule.get_or_insert_with(|| {
                    Churn::steady(u64::from(self.target), c.max, t(from), &mut c.rng)
                });
                while let Some(op) = schedule.poll(t(now), &mut c.rng) {
                    match op {
                        ChurnOp::Create => {
                            out.push(Next::Open);
                            c.opened += 1;
                        }
                        // The oldest session ends: no more pings in it, and its state
                        // along the path times out.
                        ChurnOp::Delete => match self.sessions.pop_front() {
                            Some((_, at)) => {
                                c.ended += 1;
                                c.lifetime_sum += now.saturating_duration_since(at);
                            }
                            None => schedule.lost(),
                        },
                    }
                    c.min_count = c.min_count.min(schedule.count());
                    c.max_count = c.max_count.max(schedule.count());
                }
            }
            if now < from + self.steady_for
                && self.sessions.is_empty()
                && out.iter().any(|n| matches!(n, Next::Open))
            {
                // A late wake-up ended every open session but opened new ones, which are not
                // in `sessions` until sent: go on at the next call.
                break;
            }
            if now >= from + self.steady_for || self.sessions.is_empty() {
                // Done sending: wait for the last replies.
                if self.outstanding.is_empty() || now >= from + self.steady_for + GRACE {
                    self.finished = Some(now);
                } else {
                    self.next_send = from + self.steady_for + GRACE;
                }
                break;
            }
            let sid = self.sessions[self.cursor % self.sessions.len()].0;
            self.cursor += 1;
            out.push(Next::Again(sid));
            self.next_send += self.steady;
        }
        out
    }

    /// A ping went out in session `sid` with `seq`.
    pub fn sent(&mut self, sid: SessionId, seq: u32, open: bool) {
        if open {
            self.sessions.push_back((sid, self.last_due));
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
                if let Some(c) = &self.churn {
                    // The churn runs for the steady phase only: not the grace period
                    // waiting for the last replies after it.
                    let churn_end = end.min(from + self.steady_for);
                    let secs = churn_end
                        .saturating_duration_since(from)
                        .as_secs_f64()
                        .max(1e-9);
                    v["churn"] = json!({
                        "churn_s": secs,
                        "max_interval_ms": c.max.as_secs_f64() * 1e3,
                        // Seed 001 §V.A: n · max / 2.
                        "implied_lifetime_s": c.max.as_secs_f64() * f64::from(self.target) / 2.0,
                        "avg_lifetime_s": (c.ended > 0)
                            .then(|| c.lifetime_sum.as_secs_f64() / c.ended as f64),
                        "sessions_opened": c.opened,
                        "sessions_ended": c.ended,
                        "setups_per_s": c.opened as f64 / secs,
                        "teardowns_per_s": c.ended as f64 / secs,
                        "min_sessions": (c.min_count != u64::MAX).then_some(c.min_count),
                        "max_sessions": c.max_count,
                    });
                }
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
            churn_max_interval_us: None,
        }
    }

    /// Send what `r` has due at `t`, new sessions numbered from `next_id` on.
    fn send_due(r: &mut LoadRun, t: Instant, seq: &mut u32, next_id: &mut u32) {
        for n in r.due(t) {
            *seq += 1;
            match n {
                Next::Open => {
                    *next_id += 1;
                    let mut id = [0; 16];
                    id[..4].copy_from_slice(&next_id.to_be_bytes());
                    r.sent(SessionId(id), *seq, true);
                }
                Next::Again(s) => r.sent(s, *seq, false),
            }
        }
    }

    #[test]
    fn churn_keeps_the_sessions_in_the_band_after_opening() {
        let mut a = args(50);
        a.initial_rate = 1000.0;
        a.duration_ms = 10_000;
        a.churn_max_interval_us = Some(20_000);
        let t0 = Instant::now();
        let mut r = LoadRun::new(1, &a, TransferAttributes::default(), t0).unwrap();
        let (mut seq, mut next_id) = (0, 0u32);
        let mut t = t0;
        while !r.done() && t < t0 + Duration::from_secs(20) {
            send_due(&mut r, t, &mut seq, &mut next_id);
            if r.steady_from.is_some_and(|f| t > f) && !r.done() {
                assert!(
                    (40..=50).contains(&r.sessions.len()),
                    "{}",
                    r.sessions.len()
                );
            }
            // Every ping is answered at once but those of the last 100 ms: the run then
            // waits the grace period for them, which is not churn time.
            if r.steady_from
                .is_none_or(|f| t < f + Duration::from_millis(9_900))
            {
                let keys: Vec<_> = r.outstanding.keys().copied().collect();
                for (s, q) in keys {
                    r.reply(s, q, Duration::from_millis(1));
                }
            }
            t += Duration::from_millis(1);
        }
        assert!(r.done());
        let v = r.report();
        assert!(v["lost"].as_u64().unwrap() > 0, "{v}");
        let c = &v["churn"];
        assert!((c["churn_s"].as_f64().unwrap() - 10.0).abs() < 0.01, "{c}");
        let opened = c["sessions_opened"].as_f64().unwrap();
        assert!(
            (c["setups_per_s"].as_f64().unwrap() - opened / c["churn_s"].as_f64().unwrap()).abs()
                < 1e-6,
            "{c}"
        );
        assert!(
            (80.0..120.0).contains(&c["setups_per_s"].as_f64().unwrap()),
            "{c}"
        );
        assert!(
            (80.0..120.0).contains(&c["teardowns_per_s"].as_f64().unwrap()),
            "{c}"
        );
        // 10 s of churn at one creation and one deletion per 10 ms on average.
        let ended = c["sessions_ended"].as_u64().unwrap();
        assert!((800..1200).contains(&ended), "{c}");
        assert!(c["min_sessions"].as_u64().unwrap() >= 40, "{c}");
        assert_eq!(c["max_sessions"], 50);
        // Seed 001 §V.A: n · max / 2 = 0.5 s.
        assert_eq!(c["implied_lifetime_s"], 0.5);
        let life = c["avg_lifetime_s"].as_f64().unwrap();
        assert!((0.4..0.6).contains(&life), "{c}");
    }

    #[test]
    fn a_late_wake_up_does_not_end_the_churn_early() {
        let mut a = args(20);
        a.initial_rate = 1000.0;
        a.duration_ms = 5_000;
        a.churn_max_interval_us = Some(20_000);
        let t0 = Instant::now();
        let mut r = LoadRun::new(1, &a, TransferAttributes::default(), t0).unwrap();
        let (mut seq, mut next_id) = (0, 0u32);
        let mut t = t0;
        while !r.done() && t < t0 + Duration::from_secs(20) {
            send_due(&mut r, t, &mut seq, &mut next_id);
            let keys: Vec<_> = r.outstanding.keys().copied().collect();
            for (s, q) in keys {
                r.reply(s, q, Duration::from_millis(1));
            }
            // Woken a second late each time: about 50 creations and 50 deletions at once,
            // more than the 20 sessions open.
            t += if r.steady_from.is_some() {
                Duration::from_secs(1)
            } else {
                Duration::from_millis(1)
            };
        }
        assert!(r.done());
        let v = r.report();
        let c = &v["churn"];
        assert!((c["churn_s"].as_f64().unwrap() - 5.0).abs() < 0.01, "{v}");
        assert!(c["sessions_opened"].as_u64().unwrap() > 150, "{v}");
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
