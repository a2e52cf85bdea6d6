//! Link parameters and the per-direction transmission model.
//!
//! Each direction of a point-to-point link is a FIFO server: a packet waits until the previous
//! one has been serialized (`len * 8 / bandwidth`), then propagates for `delay`. Loss,
//! duplication and reordering are drawn from the simulator's single seeded generator, and only
//! when their probability is non-zero, so a lossless link consumes no randomness.

use crate::stats::{DropReason, LinkStats};
use pathwise_core::rand::Rng;
use pathwise_core::rng::SeededRng;
use pathwise_core::time::{Duration, Instant};

/// The behaviour of one direction of a link.
///
/// Built with [`LinkParams::default`] and the chained setters:
/// `LinkParams::default().delay(Duration::from_micros(50)).bandwidth(1_000_000_000)`.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkParams {
    /// Propagation delay.
    pub delay: Duration,
    /// Bandwidth in bit/s; serialization takes `len * 8 / bandwidth_bps`. `0` means infinitely fast.
    pub bandwidth_bps: u64,
    /// Probability that a packet is lost on the wire (after it has used the link).
    pub loss: f64,
    /// Probability that a packet arrives twice.
    pub duplicate: f64,
    /// Probability that a packet is held back by an extra delay, so later packets overtake it.
    pub reorder: f64,
    /// The extra delay of a reordered packet is uniform in `0..=reorder_jitter`.
    pub reorder_jitter: Duration,
    /// Largest IP packet (headers included) the link carries; larger packets are dropped.
    pub mtu: u32,
    /// Routing cost (at least 1).
    pub cost: u32,
    /// Drop-tail limit on the bytes waiting for the link; `None` is unbounded.
    pub queue_bytes: Option<u64>,
}

impl Default for LinkParams {
    /// 1 ms, 100 Mbit/s, MTU 1500, cost 1, no loss, duplication or reordering, unbounded queue.
    fn default() -> Self {
        LinkParams {
            delay: Duration::from_millis(1),
            bandwidth_bps: 100_000_000,
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_jitter: Duration::ZERO,
            mtu: 1500,
            cost: 1,
            queue_bytes: None,
        }
    }
}

impl LinkParams {
    /// Set the propagation delay.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
    /// Set the bandwidth in bit/s (`0` = infinitely fast).
    pub fn bandwidth(mut self, bps: u64) -> Self {
        self.bandwidth_bps = bps;
        self
    }
    /// Set the loss probability.
    pub fn loss(mut self, p: f64) -> Self {
        self.loss = p;
        self
    }
    /// Set the duplication probability.
    pub fn duplicate(mut self, p: f64) -> Self {
        self.duplicate = p;
        self
    }
    /// Set the reordering probability and the maximum extra delay of a reordered packet.
    pub fn reorder(mut self, p: f64, jitter: Duration) -> Self {
        self.reorder = p;
        self.reorder_jitter = jitter;
        self
    }
    /// Set the MTU.
    pub fn mtu(mut self, mtu: u32) -> Self {
        self.mtu = mtu;
        self
    }
    /// Set the routing cost.
    pub fn cost(mut self, cost: u32) -> Self {
        self.cost = cost;
        self
    }
    /// Set the drop-tail queue limit in bytes.
    pub fn queue_bytes(mut self, limit: Option<u64>) -> Self {
        self.queue_bytes = limit;
        self
    }

    /// Time to put `len` bytes on the wire, rounded up to the nanosecond.
    pub fn serialization(&self, len: usize) -> Duration {
        if self.bandwidth_bps == 0 {
            return Duration::ZERO;
        }
        let bits = len as u128 * 8 * 1_000_000_000;
        let nanos = bits.div_ceil(u128::from(self.bandwidth_bps));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        for (name, p) in [
            ("loss", self.loss),
            ("duplicate", self.duplicate),
            ("reorder", self.reorder),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{name}: probability {p} is not within 0..=1"));
            }
        }
        if self.cost == 0 {
            return Err("cost: must be at least 1".into());
        }
        if self.mtu < 68 {
            return Err(format!("mtu: {} is below the IPv4 minimum of 68", self.mtu));
        }
        Ok(())
    }
}

/// Which way a packet crosses a link: from its `a` end to its `b` end or back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// From end `a` to end `b`.
    AToB,
    /// From end `b` to end `a`.
    BToA,
}

impl Direction {
    /// 0 for [`Direction::AToB`], 1 for [`Direction::BToA`].
    pub fn index(self) -> usize {
        match self {
            Direction::AToB => 0,
            Direction::BToA => 1,
        }
    }

    pub(crate) fn from_index(i: usize) -> Self {
        if i == 0 {
            Direction::AToB
        } else {
            Direction::BToA
        }
    }
}

/// The runtime state of one link direction.
#[derive(Clone, Debug, Default)]
pub(crate) struct DirState {
    /// When the transmitter finishes the last queued packet.
    pub busy_until: Instant,
    pub stats: LinkStats,
}

/// What happens to one packet handed to a link direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Delivery {
    /// When it arrives at the far end.
    pub arrival: Instant,
    /// Whether a second copy arrives too (at the same instant, right after the first).
    pub duplicate: bool,
}

impl DirState {
    /// Queue, serialize and propagate a packet of `len` bytes sent at `now`.
    pub fn transmit(
        &mut self,
        params: &LinkParams,
        now: Instant,
        len: usize,
        rng: &mut SeededRng,
    ) -> Result<Delivery, DropReason> {
        if len > params.mtu as usize {
            return Err(DropReason::MtuExceeded);
        }
        let start = self.busy_until.max(now);
        if let Some(limit) = params.queue_bytes {
            // Bytes still waiting = the time the transmitter stays busy, at line rate.
            let backlog_ns = (start - now).as_nanos();
            let backlog = backlog_ns * u128::from(params.bandwidth_bps) / 8_000_000_000;
            if backlog + len as u128 > u128::from(limit) {
                return Err(DropReason::QueueFull);
            }
        }
        self.busy_until = start + params.serialization(len);
        self.stats.sent += 1;
        self.stats.sent_bytes += len as u64;
        if params.loss > 0.0 && rng.random::<f64>() < params.loss {
            return Err(DropReason::Loss);
        }
        let mut arrival = self.busy_until + params.delay;
        if params.reorder > 0.0 && rng.random::<f64>() < params.reorder {
            let max = u64::try_from(params.reorder_jitter.as_nanos()).unwrap_or(u64::MAX);
            arrival += Duration::from_nanos(rng.random_range(0..=max));
            self.stats.reordered += 1;
        }
        let duplicate = params.duplicate > 0.0 && rng.random::<f64>() < params.duplicate;
        if duplicate {
            self.stats.duplicated += 1;
        }
        Ok(Delivery { arrival, duplicate })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_is_exact_and_fifo() {
        let p = LinkParams::default()
            .bandwidth(1_000_000)
            .delay(Duration::from_millis(1));
        assert_eq!(p.serialization(125), Duration::from_millis(1));
        assert_eq!(p.serialization(1), Duration::from_micros(8));
        let mut d = DirState::default();
        let mut rng = pathwise_core::rng::seeded(1);
        let a = d.transmit(&p, Instant::ZERO, 125, &mut rng).unwrap();
        let b = d.transmit(&p, Instant::ZERO, 125, &mut rng).unwrap();
        assert_eq!(a.arrival, Instant::from_millis(2));
        assert_eq!(b.arrival, Instant::from_millis(3));
        // Once the link has drained, a new packet starts at once.
        let c = d
            .transmit(&p, Instant::from_millis(10), 125, &mut rng)
            .unwrap();
        assert_eq!(c.arrival, Instant::from_millis(12));
    }

    #[test]
    fn drop_tail_queue_and_mtu() {
        let p = LinkParams::default()
            .bandwidth(8_000)
            .queue_bytes(Some(1_500))
            .mtu(1_000);
        let mut d = DirState::default();
        let mut rng = pathwise_core::rng::seeded(1);
        assert_eq!(
            d.transmit(&p, Instant::ZERO, 1_001, &mut rng),
            Err(DropReason::MtuExceeded)
        );
        assert!(d.transmit(&p, Instant::ZERO, 1_000, &mut rng).is_ok());
        assert_eq!(
            d.transmit(&p, Instant::ZERO, 1_000, &mut rng),
            Err(DropReason::QueueFull)
        );
        assert!(d.transmit(&p, Instant::ZERO, 500, &mut rng).is_ok());
    }
}
