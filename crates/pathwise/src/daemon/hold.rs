//! Receive hold-off: interrupt moderation for the daemon's loop (`[daemon] receive_hold`).
//!
//! Each wake-up of the loop costs a `poll(2)`, a task switch and a `recvmmsg` that ends on
//! EAGAIN, whatever it reads; at a busy transit most of its CPU is that per-wake-up cost, not
//! the engines' (docs/BENCHMARKS.md, "Where R2's time goes at 100,000 flows": waking up 14 %,
//! syscall bookkeeping 15 %, the engine 19 %). Datagrams arriving spread out make one wake-up
//! each. A NIC moderates its interrupts the same way, and Linux's NAPI polls instead of taking
//! one per packet: when datagrams come faster than a few per hold time, the loop waits the hold
//! time before polling again, so the next wake-up reads what arrived meanwhile in one batch.
//!
//! The rate is judged over windows of [`WINDOW`]: a window that saw at least [`PER_HOLD`]
//! datagrams per hold time makes the next window hold; a quiet one does not, so a lone
//! message (a new session's Path at an idle node) is never held up, and per-hop setup time off
//! load is unchanged. Under load a message may wait up to the hold time at each hop, and a timer
//! may fire up to the hold time late: a held wake-up does not end at the engines' next deadline,
//! because at scale some timer is always due within microseconds (100,000 RSVP flows refresh
//! about 6,700 times a second), which would end every hold at once. What those timers pace is
//! far coarser: refreshes spread over [0.5R, 1.5R] (RFC 2205 §3.7), retransmissions from
//! Rf = 500 ms (RFC 2961 §6.2) and GIST's from T1 = 500 ms (RFC 5971 §4.4.1), Hellos every
//! 5 ms with a neighbour lost only after 3.5 intervals (RFC 3209 §5.3); the default hold of
//! 1 ms, at most [`crate::config::MAX_RECEIVE_HOLD`], stays inside all of them.

use std::time::{Duration, Instant};

/// How long a rate is judged over.
pub const WINDOW: Duration = Duration::from_millis(100);
/// Datagrams expected per hold time for the loop to hold: fewer, and holding would save
/// little and only add delay.
pub const PER_HOLD: u32 = 4;

/// The loop's hold-off state.
#[derive(Debug)]
pub struct ReceiveHold {
    /// The hold time; zero: never hold.
    hold: Duration,
    /// The current window: when it began and the datagrams read in it.
    since: Instant,
    count: u64,
    /// Whether the last full window was busy.
    busy: bool,
}

impl ReceiveHold {
    /// A hold of `hold` (zero: off), starting quiet at `now`.
    pub fn new(hold: Duration, now: Instant) -> Self {
        ReceiveHold {
            hold,
            since: now,
            count: 0,
            busy: false,
        }
    }

    /// A wake-up at `now` read `datagrams`.
    pub fn note(&mut self, now: Instant, datagrams: usize) {
        if self.hold.is_zero() {
            return;
        }
        self.count += datagrams as u64;
        let elapsed = now.saturating_duration_since(self.since);
        if elapsed >= WINDOW {
            // Busy when count / elapsed ≥ PER_HOLD / hold, in integers.
            self.busy = u128::from(self.count) * self.hold.as_nanos()
                >= u128::from(PER_HOLD) * elapsed.as_nanos();
            self.since = now;
            self.count = 0;
        }
    }

    /// How long to wait before polling again: the hold time while busy; `None`: poll at once.
    pub fn wait(&self) -> Option<Duration> {
        (self.busy && !self.hold.is_zero()).then_some(self.hold)
    }

    /// A new hold time (a configuration reload); the rate is judged again from now.
    pub fn set(&mut self, hold: Duration) {
        self.hold = hold;
        self.busy = false;
        self.count = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Feed one datagram every `gap` for `span`, starting at `t0`; the last instant fed.
    fn feed(h: &mut ReceiveHold, t0: Instant, gap: Duration, span: Duration) -> Instant {
        let mut t = t0;
        while t < t0 + span {
            h.note(t, 1);
            t += gap;
        }
        t
    }

    #[test]
    fn a_quiet_loop_never_holds() {
        let t0 = Instant::now();
        let mut h = ReceiveHold::new(MS, t0);
        // One datagram per ms: 1 per hold time, below PER_HOLD.
        feed(&mut h, t0, MS, 10 * WINDOW);
        assert_eq!(h.wait(), None);
    }

    #[test]
    fn a_busy_loop_holds_and_stops_when_the_load_goes() {
        let t0 = Instant::now();
        let mut h = ReceiveHold::new(MS, t0);
        // 10 datagrams per ms: 10 per hold time.
        let t = feed(&mut h, t0, MS / 10, 2 * WINDOW);
        assert_eq!(h.wait(), Some(MS));
        // The load stops: the first wake-up a window later finds it quiet.
        h.note(t + 3 * WINDOW, 1);
        assert_eq!(h.wait(), None);
        // A reload's new hold time starts quiet.
        let t = feed(&mut h, t + 3 * WINDOW, MS / 10, 2 * WINDOW);
        assert_eq!(h.wait(), Some(MS));
        h.set(2 * MS);
        assert_eq!(h.wait(), None);
        feed(&mut h, t, MS / 10, 2 * WINDOW);
        assert_eq!(h.wait(), Some(2 * MS));
    }

    #[test]
    fn the_threshold_is_per_hold_datagrams_per_hold_time() {
        let t0 = Instant::now();
        // Exactly 4 per ms holds; just under does not.
        let mut at = ReceiveHold::new(MS, t0);
        feed(&mut at, t0, MS / 4, WINDOW + MS);
        assert!(at.wait().is_some());
        let mut under = ReceiveHold::new(MS, t0);
        feed(&mut under, t0, MS * 10 / 39, WINDOW + MS);
        assert!(under.wait().is_none());
    }

    #[test]
    fn a_zero_hold_is_off() {
        let t0 = Instant::now();
        let mut h = ReceiveHold::new(Duration::ZERO, t0);
        feed(&mut h, t0, Duration::from_micros(1), 2 * WINDOW);
        assert_eq!(h.wait(), None);
    }
}
