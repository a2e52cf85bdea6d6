//! The congestion signal for congestion-aware compression (seed 003 §7: "David Feldmeier has
//! observed that monitoring congestion on a WAN to determine when compression should be applied
//! has desirable properties; compression is then used only when the WAN is congested"; §3.1:
//! "immediately compress network streams based solely on information gathered locally, such as
//! packet loss information").
//!
//! Two observations, both of the link *as the peer sees it*:
//! - *queueing delay*, from delay probes: the gateway sends a timestamp of its own clock
//!   ([`crate::control::Control::Timestamp`]) through the link, the peer answers with it and its
//!   own clock at arrival ([`crate::control::Control::TimestampEcho`]). The difference of the two
//!   clocks is the one-way delay plus an unknown, constant offset between the clocks; the
//!   lowest difference seen recently (the *base*) stands for the empty queue, so the difference
//!   now minus the base is the queue the probe waited in. This is how LEDBAT measures queueing
//!   delay (RFC 6817 §2.4.1, base delay kept as minima of recent periods, which also follows a
//!   slow drift of the peer's clock; the RFC text is not in /work/shared/rfcs). Per interval the
//!   *lowest* sample counts, so one probe delayed by a scheduler hiccup does not read as a queue,
//!   while a standing queue delays every probe;
//! - *loss*, from the peer's loss reports (gaps in the link sequence numbers).
//!
//! [`Congestion`] turns them into one on/off signal with hysteresis: on when the queueing delay
//! or the loss of an interval is at or above its `on` threshold, off only when every measured
//! signal of an interval is below its `off` threshold; in between it keeps its state. An
//! interval with no evidence at all (no probe answered, no report) keeps the state too. No clock
//! is read here: the driver passes its own clock and the peer's timestamps in.

use pathwise_core::time::{Duration, Instant};

/// Periods of the base-delay history (RFC 6817 keeps ten one-minute minima).
pub const BASE_PERIODS: usize = 10;
/// Length of one period of the base-delay history.
pub const BASE_PERIOD: Duration = Duration::from_secs(60);

/// One-way queueing delay from probe/echo pairs.
#[derive(Clone, Debug, Default)]
pub struct DelayMeter {
    /// Lowest clock difference of each recent period, newest first.
    base: [Option<i64>; BASE_PERIODS],
    /// When the newest period began (the prober's clock).
    period_start: Option<Instant>,
    /// Lowest clock difference in the current evaluation interval, and the number of samples.
    interval: (Option<i64>, u64),
}

impl DelayMeter {
    /// A meter with no history.
    pub fn new() -> Self {
        DelayMeter::default()
    }

    /// A probe sent at `sent` (our clock) arrived at `peer_received` (the peer's clock).
    pub fn observe(&mut self, sent: Instant, peer_received: u64) {
        let diff = (i128::from(peer_received) - i128::from(sent.as_nanos()))
            .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        match self.period_start {
            None => self.period_start = Some(sent),
            Some(start) => {
                let age = sent.saturating_duration_since(start);
                if age >= BASE_PERIOD {
                    // Roll as many periods as have passed (at most the whole history).
                    let n = (age.as_nanos() / BASE_PERIOD.as_nanos()).min(BASE_PERIODS as u128)
                        as usize;
                    self.base.rotate_right(n);
                    self.base[..n].fill(None);
                    self.period_start = Some(sent);
                }
            }
        }
        self.base[0] = Some(self.base[0].map_or(diff, |b| b.min(diff)));
        self.interval.0 = Some(self.interval.0.map_or(diff, |m| m.min(diff)));
        self.interval.1 += 1;
    }

    /// The queueing delay of the interval since the last call (lowest sample above the base),
    /// or none if no probe was answered in it. Starts the next interval.
    pub fn take_queueing(&mut self) -> Option<Duration> {
        let (low, _) = std::mem::take(&mut self.interval);
        let low = low?;
        let base = self.base.iter().flatten().min().copied().unwrap_or(low);
        Some(Duration::from_nanos(low.saturating_sub(base).max(0) as u64))
    }

    /// Samples in the current interval.
    pub fn samples(&self) -> u64 {
        self.interval.1
    }
}

/// Thresholds of the congestion signal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// Congested when the queueing delay of an interval is at least this.
    pub delay_on: Duration,
    /// No longer congested (with the loss) when it is below this.
    pub delay_off: Duration,
    /// Congested when the loss of an interval is at least this fraction.
    pub loss_on: f64,
    /// No longer congested (with the delay) when it is below this.
    pub loss_off: f64,
}

/// One evaluation interval's evidence.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Evidence {
    /// Queueing delay, if any probe was answered.
    pub delay: Option<Duration>,
    /// Loss fraction, if the peer reported on enough packets.
    pub loss: Option<f64>,
}

/// The congestion signal with hysteresis.
#[derive(Clone, Debug)]
pub struct Congestion {
    thresholds: Thresholds,
    congested: bool,
    onsets: u64,
}

impl Congestion {
    /// A signal, not congested, with these thresholds.
    pub fn new(thresholds: Thresholds) -> Self {
        Congestion {
            thresholds,
            congested: false,
            onsets: 0,
        }
    }

    /// Whether the link is congested.
    pub fn congested(&self) -> bool {
        self.congested
    }

    /// How many times the signal turned on.
    pub fn onsets(&self) -> u64 {
        self.onsets
    }

    /// Take one interval's evidence; returns whether the link is congested now.
    pub fn update(&mut self, e: Evidence) -> bool {
        let t = &self.thresholds;
        let on = e.delay.is_some_and(|d| d >= t.delay_on) || e.loss.is_some_and(|l| l >= t.loss_on);
        let clear = (e.delay.is_some() || e.loss.is_some())
            && e.delay.is_none_or(|d| d < t.delay_off)
            && e.loss.is_none_or(|l| l < t.loss_off);
        if on && !self.congested {
            self.congested = true;
            self.onsets += 1;
        } else if clear {
            self.congested = false;
        }
        self.congested
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn thresholds() -> Thresholds {
        Thresholds {
            delay_on: ms(20),
            delay_off: ms(5),
            loss_on: 0.005,
            loss_off: 0.001,
        }
    }

    /// Probes every 100 ms over `secs` seconds with a one-way delay of `delay(t)` ms, on a peer
    /// clock `offset` ns ahead; the queueing delay read each second.
    fn run(
        meter: &mut DelayMeter,
        from_s: u64,
        secs: u64,
        offset: i64,
        delay: impl Fn(u64) -> u64,
    ) -> Vec<u64> {
        let mut out = Vec::new();
        for s in from_s..from_s + secs {
            for k in 0..10 {
                let t = s * 1000 + k * 100;
                let sent = Instant::from_millis(t);
                let arrived = (sent.as_nanos() as i64 + offset) as u64 + delay(t) * 1_000_000;
                meter.observe(sent, arrived);
            }
            out.push(meter.take_queueing().unwrap().as_nanos() as u64 / 1_000_000);
        }
        out
    }

    #[test]
    fn queueing_delay_is_the_rise_above_the_base_whatever_the_clock_offset() {
        for offset in [0i64, 5_000_000_000, -3_000_000_000] {
            let mut m = DelayMeter::new();
            // 10 ms of propagation, then a queue of 60 ms (+ jitter up to 9 ms), then empty again.
            let q = run(&mut m, 0, 5, offset, |_| 10);
            assert!(q.iter().all(|&d| d == 0), "{q:?}");
            let q = run(&mut m, 5, 5, offset, |t| 70 + t % 10);
            assert!(q.iter().all(|&d| d == 60), "{q:?}");
            let q = run(&mut m, 10, 5, offset, |_| 10);
            assert!(q.iter().all(|&d| d == 0), "{q:?}");
        }
    }

    #[test]
    fn one_late_probe_is_not_a_queue() {
        let mut m = DelayMeter::new();
        let q = run(&mut m, 0, 10, 0, |t| if t % 1000 == 300 { 200 } else { 10 });
        assert!(q.iter().all(|&d| d == 0), "{q:?}");
    }

    #[test]
    fn the_base_follows_a_drifting_clock_after_its_history() {
        let mut m = DelayMeter::new();
        run(&mut m, 0, 10, 0, |_| 10);
        // The peer's clock jumps 50 ms ahead (or the path got longer) for good: read as a queue
        // at first, forgotten once the history of the lower base has rolled out.
        let late = |_| 60;
        let q = run(&mut m, 10, 5, 0, late);
        assert_eq!(q[0], 50);
        let span = BASE_PERIOD.as_nanos() as u64 / 1_000_000_000 * (BASE_PERIODS as u64 + 1);
        let q = run(&mut m, 15, span, 0, late);
        assert_eq!(*q.last().unwrap(), 0);
    }

    #[test]
    fn no_probe_no_reading() {
        let mut m = DelayMeter::new();
        assert_eq!(m.take_queueing(), None);
        m.observe(Instant::from_secs(1), 5);
        assert_eq!(m.samples(), 1);
        assert_eq!(m.take_queueing(), Some(Duration::ZERO));
        assert_eq!(m.take_queueing(), None);
    }

    #[test]
    fn congestion_has_hysteresis_on_delay_and_loss() {
        let mut c = Congestion::new(thresholds());
        let d = |n| Evidence {
            delay: Some(ms(n)),
            loss: Some(0.0),
        };
        assert!(!c.update(d(10)));
        assert!(c.update(d(25)));
        // Between the thresholds: stays on.
        assert!(c.update(d(10)));
        assert!(c.update(Evidence::default()));
        assert!(!c.update(d(2)));
        // Loss alone turns it on, and the delay being low does not clear it while loss is high.
        assert!(c.update(Evidence {
            delay: Some(ms(1)),
            loss: Some(0.02)
        }));
        assert!(c.update(Evidence {
            delay: Some(ms(1)),
            loss: Some(0.003)
        }));
        assert!(!c.update(Evidence {
            delay: None,
            loss: Some(0.0)
        }));
        assert_eq!(c.onsets(), 2);
    }

    proptest! {
        /// Whatever the series, the signal changes only across the thresholds: it turns on only
        /// on an interval at or above an `on` threshold, off only on one below every `off`.
        #[test]
        fn switches_only_across_thresholds(series in proptest::collection::vec(
            (proptest::option::of(0u64..60), proptest::option::of(0.0f64..0.02)), 0..200)) {
            let t = thresholds();
            let mut c = Congestion::new(t);
            let mut before = false;
            for (d, l) in series {
                let e = Evidence { delay: d.map(ms), loss: l };
                let now = c.update(e);
                if now && !before {
                    prop_assert!(d.is_some_and(|d| ms(d) >= t.delay_on) || l.is_some_and(|l| l >= t.loss_on));
                }
                if !now && before {
                    prop_assert!(d.is_none_or(|d| ms(d) < t.delay_off) && l.is_none_or(|l| l < t.loss_off));
                    prop_assert!(d.is_some() || l.is_some());
                }
                before = now;
            }
        }
    }
}
