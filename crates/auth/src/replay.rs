//! Receive-side replay protection (RFC 2747 §4.2).

use core::hash::Hash;
use pathwise_core::table::{KeyedMap, KeyedState};
use std::net::IpAddr;

/// How many sequence numbers below the largest seen a [`ReplayWindow`] still tracks.
pub const REPLAY_WINDOW: u64 = 64;

/// What a [`ReplayWindow`] says about a received sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReplayOutcome {
    /// New: larger than any seen, or inside the window and not seen before.
    Accepted,
    /// Inside the window and already seen: a replay (or a duplicate).
    Replayed,
    /// Below the window: too old to tell, so rejected.
    TooOld,
}

/// The receive state for one (sender, key id) pair.
///
/// RFC 2747 §4.2: a message is accepted if its sequence number is larger than any accepted so
/// far, or if it lies within a window of recent numbers below the largest and has not been
/// seen; anything else is rejected. This tolerates reordering by up to [`REPLAY_WINDOW`] − 1
/// positions (a 64-bit bitmap, as in IPsec's anti-replay window) and rejects every replay.
///
/// The first number from a sender is always accepted; RFC 2747 §4.3's challenge/response exists
/// to establish that starting point safely and is the caller's business.
///
/// Record a number only after the message's digest has verified, or a forger could advance the
/// window and block genuine traffic: use [`ReplayWindow::check`] before and
/// [`ReplayWindow::record`] after verification.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplayWindow {
    /// The largest number accepted so far.
    highest: Option<u64>,
    /// Bit `i` set: `highest - i` has been accepted (bit 0 is `highest` itself).
    seen: u64,
}

impl ReplayWindow {
    /// A window that has seen nothing.
    pub const fn new() -> Self {
        ReplayWindow {
            highest: None,
            seen: 0,
        }
    }

    /// The largest number accepted so far.
    pub const fn highest(&self) -> Option<u64> {
        self.highest
    }

    /// What [`record`](Self::record) would answer for `seq`, without changing anything.
    pub fn check(&self, seq: u64) -> ReplayOutcome {
        let Some(highest) = self.highest else {
            return ReplayOutcome::Accepted;
        };
        if seq > highest {
            return ReplayOutcome::Accepted;
        }
        let behind = highest - seq;
        if behind >= REPLAY_WINDOW {
            ReplayOutcome::TooOld
        } else if self.seen & (1u64 << behind) != 0 {
            ReplayOutcome::Replayed
        } else {
            ReplayOutcome::Accepted
        }
    }

    /// Checks `seq` and, if accepted, remembers it.
    pub fn record(&mut self, seq: u64) -> ReplayOutcome {
        let outcome = self.check(seq);
        if outcome != ReplayOutcome::Accepted {
            return outcome;
        }
        match self.highest {
            Some(highest) if seq <= highest => {
                self.seen |= 1u64 << (highest - seq);
            }
            Some(highest) => {
                let shift = seq - highest;
                self.seen = if shift >= REPLAY_WINDOW {
                    1
                } else {
                    (self.seen << shift) | 1
                };
                self.highest = Some(seq);
            }
            None => {
                self.seen = 1;
                self.highest = Some(seq);
            }
        }
        outcome
    }
}

/// Replay windows keyed by (sender, key id), in a [`KeyedMap`] so that a peer choosing sender
/// addresses cannot flood one hash bucket.
///
/// Entries are created only by [`record`](Self::record), which the caller must call only after
/// the digest verified, so only holders of a key can add entries.
#[derive(Clone, Debug)]
pub struct ReplayTable<A = IpAddr> {
    windows: KeyedMap<(A, u64), ReplayWindow>,
}

impl<A: Eq + Hash + Clone> ReplayTable<A> {
    /// An empty table hashing with `state` (for example [`KeyedState::from_rng`]).
    pub fn new(state: KeyedState) -> Self {
        ReplayTable {
            windows: KeyedMap::with_hasher(state),
        }
    }

    /// What [`record`](Self::record) would answer, without changing anything.
    pub fn check(&self, sender: &A, key_id: u64, seq: u64) -> ReplayOutcome {
        self.windows
            .get(&(sender.clone(), key_id))
            .map_or(ReplayOutcome::Accepted, |w| w.check(seq))
    }

    /// Checks `seq` from `sender` under `key_id` and, if accepted, remembers it.
    pub fn record(&mut self, sender: &A, key_id: u64, seq: u64) -> ReplayOutcome {
        self.windows
            .entry((sender.clone(), key_id))
            .or_default()
            .record(seq)
    }

    /// The window for (`sender`, `key_id`), if any.
    pub fn window(&self, sender: &A, key_id: u64) -> Option<&ReplayWindow> {
        self.windows.get(&(sender.clone(), key_id))
    }

    /// Forgets the state for (`sender`, `key_id`) (for example after a challenge/response resync
    /// or when the key is removed).
    pub fn forget(&mut self, sender: &A, key_id: u64) -> Option<ReplayWindow> {
        self.windows.remove(&(sender.clone(), key_id))
    }

    /// Forgets every window for key `key_id` (after the key is retired).
    pub fn forget_key(&mut self, key_id: u64) {
        self.windows.retain(|(_, id), _| *id != key_id);
    }

    /// Forgets every window of `sender`.
    pub fn forget_sender(&mut self, sender: &A) {
        self.windows.retain(|(a, _), _| a != sender);
    }

    /// Number of (sender, key id) pairs tracked.
    pub fn len(&self) -> usize {
        self.windows.len()
    }

    /// Whether no pair is tracked.
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn basic_outcomes() {
        let mut w = ReplayWindow::new();
        assert_eq!(w.record(100), ReplayOutcome::Accepted);
        assert_eq!(w.record(100), ReplayOutcome::Replayed);
        assert_eq!(w.record(99), ReplayOutcome::Accepted);
        assert_eq!(w.record(99), ReplayOutcome::Replayed);
        assert_eq!(w.record(100 - (REPLAY_WINDOW - 1)), ReplayOutcome::Accepted);
        assert_eq!(w.record(100 - REPLAY_WINDOW), ReplayOutcome::TooOld);
        assert_eq!(w.record(1000), ReplayOutcome::Accepted);
        assert_eq!(w.record(100), ReplayOutcome::TooOld);
        assert_eq!(w.record(999), ReplayOutcome::Accepted);
        assert_eq!(w.highest(), Some(1000));
    }

    #[test]
    fn check_does_not_mutate() {
        let mut w = ReplayWindow::new();
        assert_eq!(w.check(5), ReplayOutcome::Accepted);
        assert_eq!(w.check(5), ReplayOutcome::Accepted);
        assert_eq!(w.record(5), ReplayOutcome::Accepted);
        assert_eq!(w.check(5), ReplayOutcome::Replayed);
    }

    #[test]
    fn extremes_do_not_overflow() {
        let mut w = ReplayWindow::new();
        assert_eq!(w.record(0), ReplayOutcome::Accepted);
        assert_eq!(w.record(u64::MAX), ReplayOutcome::Accepted);
        assert_eq!(w.record(u64::MAX), ReplayOutcome::Replayed);
        assert_eq!(w.record(0), ReplayOutcome::TooOld);
        assert_eq!(w.record(u64::MAX - 63), ReplayOutcome::Accepted);
    }

    #[test]
    fn table_separates_senders_and_keys() {
        let mut t: ReplayTable = ReplayTable::new(KeyedState::from_seed(1));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(t.record(&a, 1, 7), ReplayOutcome::Accepted);
        assert_eq!(t.record(&a, 1, 7), ReplayOutcome::Replayed);
        assert_eq!(t.check(&b, 1, 7), ReplayOutcome::Accepted);
        assert_eq!(t.record(&b, 1, 7), ReplayOutcome::Accepted);
        assert_eq!(t.record(&a, 2, 7), ReplayOutcome::Accepted);
        assert_eq!(t.len(), 3);
        t.forget_key(1);
        assert_eq!(t.len(), 1);
        assert_eq!(t.record(&a, 1, 7), ReplayOutcome::Accepted);
        assert!(t.forget(&a, 2).is_some());
        assert!(t.window(&a, 2).is_none());
    }

    proptest! {
        #[test]
        fn never_accepts_the_same_number_twice(seqs in proptest::collection::vec(0u64..300, 0..500)) {
            let mut w = ReplayWindow::new();
            let mut accepted = HashSet::new();
            for s in seqs {
                if w.record(s) == ReplayOutcome::Accepted {
                    prop_assert!(accepted.insert(s), "accepted {} twice", s);
                }
            }
        }

        #[test]
        fn accepts_any_strictly_increasing_sequence(
            start in any::<u64>(),
            steps in proptest::collection::vec(1u64..1_000_000, 0..200),
        ) {
            let mut w = ReplayWindow::new();
            let mut s = start;
            prop_assert_eq!(w.record(s), ReplayOutcome::Accepted);
            for step in steps {
                let Some(n) = s.checked_add(step) else { break };
                s = n;
                prop_assert_eq!(w.record(s), ReplayOutcome::Accepted);
            }
        }

        #[test]
        fn accepts_reorderings_within_the_window(
            base in 0u64..(u64::MAX / 2),
            keys in proptest::collection::vec(any::<u32>(), 1..(REPLAY_WINDOW as usize)),
        ) {
            // A permutation of `n <= REPLAY_WINDOW - 1` consecutive numbers: every number is at
            // most n - 1 < REPLAY_WINDOW below the largest seen, so all must be accepted once,
            // and every replay afterwards rejected.
            let n = keys.len() as u64;
            let mut order: Vec<(u32, u64)> = keys.into_iter().zip(base..base + n).collect();
            order.sort();
            let mut w = ReplayWindow::new();
            for &(_, s) in &order {
                prop_assert_eq!(w.record(s), ReplayOutcome::Accepted);
            }
            for &(_, s) in &order {
                prop_assert_eq!(w.record(s), ReplayOutcome::Replayed);
            }
        }

        #[test]
        fn check_agrees_with_record(seqs in proptest::collection::vec(0u64..200, 0..300)) {
            let mut w = ReplayWindow::new();
            for s in seqs {
                let predicted = w.check(s);
                prop_assert_eq!(w.record(s), predicted);
            }
        }
    }
}
