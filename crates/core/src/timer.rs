//! Timers. PLACEHOLDER IMPLEMENTATION (BTreeMap) — the public API below is fixed; the hierarchical
//! wheel replaces the internals.

use crate::time::{Duration, Instant};
use std::collections::BTreeMap;

/// How a [`TimerWheel`] is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WheelConfig {
    /// Time covered by one slot of the finest level.
    pub slot_width: Duration,
    /// Slots per level.
    pub slots: usize,
    /// Number of levels; level k slots are `slots^k` times wider than level 0's.
    pub levels: usize,
    /// Fuzzy mode (seed 001 §III.B): all timers of a slot fire together, in FIFO order.
    pub fuzzy: bool,
}

impl Default for WheelConfig {
    fn default() -> Self {
        WheelConfig {
            slot_width: Duration::from_millis(10),
            slots: 256,
            levels: 3,
            fuzzy: false,
        }
    }
}

/// Names one scheduled timer, for cancelling it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerHandle {
    idx: u32,
    generation: u32,
}

/// A set of timers carrying values of type `T`.
#[derive(Debug)]
pub struct TimerWheel<T> {
    cfg: WheelConfig,
    next_id: u32,
    by_deadline: BTreeMap<(Instant, u32), T>,
    deadlines: std::collections::HashMap<u32, Instant>,
}

impl<T> TimerWheel<T> {
    /// An empty wheel whose time starts at `now`.
    pub fn new(cfg: WheelConfig, now: Instant) -> Self {
        let _ = now;
        TimerWheel {
            cfg,
            next_id: 0,
            by_deadline: BTreeMap::new(),
            deadlines: Default::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> WheelConfig {
        self.cfg
    }

    /// Number of pending timers.
    pub fn len(&self) -> usize {
        self.by_deadline.len()
    }

    /// Whether no timer is pending.
    pub fn is_empty(&self) -> bool {
        self.by_deadline.is_empty()
    }

    /// Schedule `value` to fire at `deadline` (a deadline in the past fires at the next `expire`).
    pub fn insert(&mut self, deadline: Instant, value: T) -> TimerHandle {
        let idx = self.next_id;
        self.next_id += 1;
        self.by_deadline.insert((deadline, idx), value);
        self.deadlines.insert(idx, deadline);
        TimerHandle { idx, generation: 0 }
    }

    /// Cancel a pending timer, returning its value; `None` if it already fired or was cancelled.
    pub fn cancel(&mut self, handle: TimerHandle) -> Option<T> {
        let d = self.deadlines.remove(&handle.idx)?;
        self.by_deadline.remove(&(d, handle.idx))
    }

    /// The deadline of a pending timer.
    pub fn deadline(&self, handle: TimerHandle) -> Option<Instant> {
        self.deadlines.get(&handle.idx).copied()
    }

    /// When [`TimerWheel::expire`] will next have something to return: the earliest deadline in
    /// precise mode; in fuzzy mode, the end of the earliest non-empty slot.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.by_deadline.keys().next().map(|(d, _)| *d)
    }

    /// Remove and return one timer that is due at `now`, with its deadline; `None` when no more
    /// are due. Call repeatedly until `None`.
    pub fn expire(&mut self, now: Instant) -> Option<(Instant, T)> {
        let (&(d, idx), _) = self.by_deadline.iter().next()?;
        if d > now {
            return None;
        }
        self.deadlines.remove(&idx);
        self.by_deadline.remove(&(d, idx)).map(|v| (d, v))
    }
}
