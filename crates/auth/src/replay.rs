//! Receive-side replay protection (RFC 2747 §4.2).

use core::hash::Hash;
pub use pathwise_core::replay::ReplayOutcome;
use pathwise_core::replay::SlidingWindow;
use pathwise_core::table::{KeyedMap, KeyedState};
use std::net::IpAddr;

/// The default reordering tolerance: how many sequence numbers below the largest seen a
/// window still accepts once each ([`crate::Policy::window`]). RFC 2747 §4.2 leaves it to the
/// administrator ("packets reordered within a 32 message window", its example); this default
/// is sized for a neighbour whose shards sign concurrently (a sharded pathwise daemon draws its
/// numbers from one sequence, but its shards' sends interleave on the wire).
pub const REPLAY_WINDOW: u64 = 256;

/// The largest reordering tolerance a policy may set.
pub const MAX_REPLAY_WINDOW: u64 = ReplayWindow::MAX_SPAN;

/// The receive state for one (sender, key id) pair: the shared anti-replay window
/// ([`pathwise_core::replay`]), 17 words, telling apart [`MAX_REPLAY_WINDOW`] numbers below the
/// largest seen. Its first number is always accepted; RFC 2747 §4.3's challenge/response
/// exists to establish that starting point safely and is the caller's business.
pub type ReplayWindow = SlidingWindow<17>;

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
    pub fn check(&self, sender: &A, key_id: u64, seq: u64, span: u64) -> ReplayOutcome {
        self.windows
            .get(&(sender.clone(), key_id))
            .map_or(ReplayOutcome::Accepted, |w| w.check(seq, span))
    }

    /// Checks `seq` from `sender` under `key_id`, accepting numbers up to `span` below the
    /// largest seen once each, and, if accepted, remembers it.
    pub fn record(&mut self, sender: &A, key_id: u64, seq: u64, span: u64) -> ReplayOutcome {
        self.windows
            .entry((sender.clone(), key_id))
            .or_default()
            .record(seq, span)
    }

    /// The window for (`sender`, `key_id`), if any.
    pub fn window(&self, sender: &A, key_id: u64) -> Option<&ReplayWindow> {
        self.windows.get(&(sender.clone(), key_id))
    }

    /// Start the window of (`sender`, `key_id`) afresh at `seq`, every number below it
    /// counted as seen ([`SlidingWindow::starting_at`]): a challenge/response resync.
    pub fn start_at(&mut self, sender: &A, key_id: u64, seq: u64) {
        self.windows
            .insert((sender.clone(), key_id), ReplayWindow::starting_at(seq));
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
        let top = 1000;
        assert_eq!(w.record(top, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert_eq!(w.record(top, REPLAY_WINDOW), ReplayOutcome::Replayed);
        assert_eq!(w.record(top - 1, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert_eq!(w.record(top - 1, REPLAY_WINDOW), ReplayOutcome::Replayed);
        let edge = top - (REPLAY_WINDOW - 1);
        assert_eq!(w.record(edge, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert_eq!(w.record(edge - 1, REPLAY_WINDOW), ReplayOutcome::TooOld);
        // A policy's own tolerance, up to the largest.
        assert_eq!(w.record(top - 2, 2), ReplayOutcome::TooOld);
        assert_eq!(
            w.record(edge - 1, MAX_REPLAY_WINDOW),
            ReplayOutcome::Accepted
        );
        assert_eq!(w.record(10_000, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert_eq!(w.record(top, REPLAY_WINDOW), ReplayOutcome::TooOld);
        assert_eq!(w.record(9_999, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert_eq!(w.highest(), Some(10_000));
    }

    #[test]
    fn check_does_not_mutate() {
        let mut w = ReplayWindow::new();
        assert_eq!(w.check(5, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert_eq!(w.check(5, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert_eq!(w.record(5, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert_eq!(w.check(5, REPLAY_WINDOW), ReplayOutcome::Replayed);
    }

    #[test]
    fn extremes_do_not_overflow() {
        let mut w = ReplayWindow::new();
        assert_eq!(w.record(0, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert_eq!(w.record(u64::MAX, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert_eq!(w.record(u64::MAX, REPLAY_WINDOW), ReplayOutcome::Replayed);
        assert_eq!(w.record(0, REPLAY_WINDOW), ReplayOutcome::TooOld);
        assert_eq!(
            w.record(u64::MAX - 63, REPLAY_WINDOW),
            ReplayOutcome::Accepted
        );
    }

    #[test]
    fn table_separates_senders_and_keys() {
        let mut t: ReplayTable = ReplayTable::new(KeyedState::from_seed(1));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(t.record(&a, 1, 7, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert_eq!(t.record(&a, 1, 7, REPLAY_WINDOW), ReplayOutcome::Replayed);
        assert_eq!(t.check(&b, 1, 7, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert_eq!(t.record(&b, 1, 7, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert_eq!(t.record(&a, 2, 7, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert_eq!(t.len(), 3);
        t.forget_key(1);
        assert_eq!(t.len(), 1);
        assert_eq!(t.record(&a, 1, 7, REPLAY_WINDOW), ReplayOutcome::Accepted);
        assert!(t.forget(&a, 2).is_some());
        assert!(t.window(&a, 2).is_none());
    }

    proptest! {
        #[test]
        fn never_accepts_the_same_number_twice(seqs in proptest::collection::vec(0u64..300, 0..500)) {
            let mut w = ReplayWindow::new();
            let mut accepted = HashSet::new();
            for s in seqs {
                if w.record(s, REPLAY_WINDOW) == ReplayOutcome::Accepted {
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
            prop_assert_eq!(w.record(s, REPLAY_WINDOW), ReplayOutcome::Accepted);
            for step in steps {
                let Some(n) = s.checked_add(step) else { break };
                s = n;
                prop_assert_eq!(w.record(s, REPLAY_WINDOW), ReplayOutcome::Accepted);
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
                prop_assert_eq!(w.record(s, REPLAY_WINDOW), ReplayOutcome::Accepted);
            }
            for &(_, s) in &order {
                prop_assert_eq!(w.record(s, REPLAY_WINDOW), ReplayOutcome::Replayed);
            }
        }

        #[test]
        fn check_agrees_with_record(seqs in proptest::collection::vec(0u64..200, 0..300)) {
            let mut w = ReplayWindow::new();
            for s in seqs {
                let predicted = w.check(s, REPLAY_WINDOW);
                prop_assert_eq!(w.record(s, REPLAY_WINDOW), predicted);
            }
        }
    }
}
