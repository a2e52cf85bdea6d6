//! KOM's churn rule (seed 001 §IV): "creates sessions … with a randomized time interval in
//! between, until a certain number of sessions n is reached. … When the target number of
//! sessions is reached, the load generator creates and deletes sessions with the same randomized
//! time interval respectively, in a way that the number of sessions is kept in the interval
//! [n − 10, n]", and it "circulates through the flows" (§V.A): the oldest flow goes first.
//!
//! Creation and deletion are two independent processes, each drawing its next interval
//! uniformly from [0, max]; a creation due at n flows and a deletion due at n − 10 are skipped.
//! Each process therefore acts about every max/2, and a flow lives n·max/2 on average — the
//! figure of the seed's tables ("calculated according to the fact that the creation/removal
//! interval is evenly distributed between zero and the maximum interval", §V.A: 2,000 flows at
//! 25 ms → 25 s). Pure and clock-free: the caller passes `now` and applies the [`ChurnOp`]s.

use pathwise_core::rng::SeededRng;
use pathwise_core::time::{Duration, Instant};
use rand::Rng as _;

/// The width of the band the count is kept in after ramp-up (seed 001 §IV: [n − 10, n]).
pub const BAND: u64 = 10;

/// What the schedule asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChurnOp {
    /// Create a flow.
    Create,
    /// Delete the oldest flow.
    Delete,
}

/// The schedule of creations and deletions for a target of `n` flows.
#[derive(Debug)]
pub struct Churn {
    target: u64,
    /// Upper bound of the interval while ramping up.
    ramp_max: Duration,
    /// Upper bound of the interval once `target` was reached.
    max: Duration,
    /// Flows that exist now (as far as the schedule knows: the caller reports each op it applied).
    count: u64,
    next_create: Instant,
    /// `None` until the target is first reached.
    next_delete: Option<Instant>,
    /// Set once the target was first reached.
    ramped: bool,
    /// Stopped: nothing more is created or deleted.
    stopped: bool,
}

impl Churn {
    /// `n` flows, created at intervals drawn from [0, `ramp_max`] until there are `n`, then
    /// kept in [n − 10, n] by creations and deletions at intervals drawn from [0, `max`].
    pub fn new(
        n: u64,
        ramp_max: Duration,
        max: Duration,
        now: Instant,
        rng: &mut SeededRng,
    ) -> Churn {
        let mut c = Churn {
            target: n,
            ramp_max,
            max,
            count: 0,
            next_create: now,
            next_delete: None,
            ramped: false,
            stopped: n == 0,
        };
        c.next_create = now + c.draw(ramp_max, rng);
        c
    }

    /// An interval drawn from [0, bound], at least 1 ns so that time always moves on (a zero
    /// bound would otherwise create and delete forever at one instant).
    /// A schedule already at its target of `n` flows (a client that opened them by other
    /// means): from `now`, only the steady creations and deletions at intervals up to `max`.
    pub fn steady(n: u64, max: Duration, now: Instant, rng: &mut SeededRng) -> Churn {
        let mut c = Churn {
            target: n,
            ramp_max: max,
            max,
            count: n,
            next_create: now,
            next_delete: None,
            ramped: true,
            stopped: n == 0,
        };
        c.next_create = now + c.draw(max, rng);
        c.next_delete = Some(now + c.draw(max, rng));
        c
    }

    fn draw(&self, bound: Duration, rng: &mut SeededRng) -> Duration {
        let ns = u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(rng.random_range(0..=ns).max(1))
    }

    /// Flows that exist.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The target n.
    pub fn target(&self) -> u64 {
        self.target
    }

    /// Whether the target has been reached once (the steady phase began).
    pub fn ramped_up(&self) -> bool {
        self.ramped
    }

    /// The average lifetime the parameters imply (seed 001 §V.A): n · max / 2.
    pub fn implied_lifetime(&self) -> Duration {
        self.max.mul_f64(self.target as f64 / 2.0)
    }

    /// Stop creating and deleting.
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// When the next operation is due.
    pub fn next_due(&self) -> Option<Instant> {
        if self.stopped {
            return None;
        }
        Some(match self.next_delete {
            Some(d) => d.min(self.next_create),
            None => self.next_create,
        })
    }

    /// The next operation due at `now`, if any; the caller applies it at once. A process
    /// whose turn comes at the band's edge skips its turn (and draws its next one).
    pub fn poll(&mut self, now: Instant, rng: &mut SeededRng) -> Option<ChurnOp> {
        while !self.stopped {
            let delete_first = self
                .next_delete
                .is_some_and(|d| d <= now && d < self.next_create);
            if delete_first {
                let at = self.next_delete.unwrap_or(now);
                self.next_delete = Some(at + self.draw(self.max, rng));
                if self.count > self.target.saturating_sub(BAND) {
                    self.count -= 1;
                    return Some(ChurnOp::Delete);
                }
                continue;
            }
            if self.next_create > now {
                return None;
            }
            let at = self.next_create;
            let bound = if self.ramped { self.max } else { self.ramp_max };
            self.next_create = at + self.draw(bound, rng);
            if self.count < self.target {
                self.count += 1;
                if self.count == self.target && !self.ramped {
                    self.ramped = true;
                    self.next_delete = Some(at + self.draw(self.max, rng));
                }
                return Some(ChurnOp::Create);
            }
        }
        None
    }

    /// A flow vanished outside the schedule (e.g. the caller failed to create it): count it gone.
    pub fn lost(&mut self) {
        self.count = self.count.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    /// Run `c` from `start` to `end` in steps of `step`, returning (after ramp-up, the min and
    /// max count, the lifetimes of deleted flows).
    fn run(
        c: &mut Churn,
        rng: &mut SeededRng,
        end: Instant,
        step: Duration,
    ) -> (u64, u64, Vec<Duration>) {
        let mut now = Instant::ZERO;
        let mut born: VecDeque<Instant> = VecDeque::new();
        let (mut lo, mut hi) = (u64::MAX, 0);
        let mut lifetimes = Vec::new();
        while now < end {
            now += step;
            while let Some(op) = c.poll(now, rng) {
                match op {
                    ChurnOp::Create => born.push_back(now),
                    ChurnOp::Delete => {
                        let b = born.pop_front().expect("a flow to delete");
                        lifetimes.push(now.saturating_duration_since(b));
                    }
                }
                assert_eq!(born.len() as u64, c.count());
                if c.ramped_up() {
                    lo = lo.min(c.count());
                    hi = hi.max(c.count());
                }
            }
        }
        (lo, hi, lifetimes)
    }

    #[test]
    fn ramps_up_to_n_then_stays_in_the_band() {
        let mut rng = pathwise_core::rng::seeded(1);
        let max = Duration::from_millis(25);
        let mut c = Churn::new(2000, max, max, Instant::ZERO, &mut rng);
        let (lo, hi, lifetimes) = run(
            &mut c,
            &mut rng,
            Instant::from_secs(300),
            Duration::from_millis(1),
        );
        assert!(c.ramped_up());
        assert_eq!(hi, 2000);
        assert!(lo >= 1990, "count fell to {lo}");
        // Seed 001 Table I: 2000 flows at 25 ms → 25 s average lifetime.
        assert_eq!(c.implied_lifetime(), Duration::from_secs(25));
        let mean = lifetimes.iter().sum::<Duration>().as_secs_f64() / lifetimes.len() as f64;
        assert!((mean - 25.0).abs() < 25.0 * 0.05, "mean lifetime {mean} s");
    }

    #[test]
    fn ramp_interval_only_governs_ramp_up() {
        let mut rng = pathwise_core::rng::seeded(2);
        let mut c = Churn::new(
            1000,
            Duration::from_micros(100),
            Duration::from_millis(10),
            Instant::ZERO,
            &mut rng,
        );
        // 1000 creations at ≤ 100 µs each take at most 0.1 s.
        let mut now = Instant::ZERO;
        while !c.ramped_up() {
            now += Duration::from_micros(50);
            while c.poll(now, &mut rng).is_some() {}
        }
        assert!(now <= Instant::from_millis(101), "ramp-up took {now:?}");
        assert_eq!(c.implied_lifetime(), Duration::from_secs(5));
    }

    #[test]
    fn stop_ends_the_schedule() {
        let mut rng = pathwise_core::rng::seeded(3);
        let mut c = Churn::new(
            10,
            Duration::from_millis(1),
            Duration::from_millis(1),
            Instant::ZERO,
            &mut rng,
        );
        c.stop();
        assert_eq!(c.next_due(), None);
        assert_eq!(c.poll(Instant::from_secs(10), &mut rng), None);
        let mut z = Churn::new(
            0,
            Duration::from_millis(1),
            Duration::from_millis(1),
            Instant::ZERO,
            &mut rng,
        );
        assert_eq!(z.poll(Instant::from_secs(10), &mut rng), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// After ramp-up the count never leaves [n − 10, n], whatever n, interval and step; and
        /// the mean lifetime is what n · max / 2 implies (within the randomness of a run long
        /// enough for many lifetimes).
        #[test]
        fn count_stays_in_band_and_lifetime_matches(
            n in 1u64..400,
            max_us in 100u64..5_000,
            step_us in 1u64..3_000,
            seed in any::<u64>(),
        ) {
            let mut rng = pathwise_core::rng::seeded(seed);
            let max = Duration::from_micros(max_us);
            let mut c = Churn::new(n, max, max, Instant::ZERO, &mut rng);
            let implied = c.implied_lifetime();
            // Ramp-up (about n·max/2) and then some 40 lifetimes.
            let end = Instant::ZERO + implied * 42 + Duration::from_micros(step_us) * 4;
            let (lo, hi, lifetimes) = run(&mut c, &mut rng, end, Duration::from_micros(step_us));
            prop_assert!(c.ramped_up());
            prop_assert!(hi <= n);
            prop_assert!(lo >= n.saturating_sub(BAND), "lo {} n {}", lo, n);
            prop_assume!(n >= 20 && lifetimes.len() >= 200);
            let mean = lifetimes.iter().sum::<Duration>().as_secs_f64() / lifetimes.len() as f64;
            let want = implied.as_secs_f64();
            // The band lets the count drift to n − 10 (mean about n − 5), and a step coarser
            // than the interval batches operations: allow both, and the sampling noise.
            let slack = want * (5.0 / n as f64 + 0.12) + 2.0 * step_us as f64 * 1e-6;
            prop_assert!((mean - want).abs() <= slack, "mean {} want {} slack {}", mean, want, slack);
        }
    }
}
