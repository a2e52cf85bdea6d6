//! Anti-replay windows over 64-bit sequence numbers: RSVP's INTEGRITY (RFC 2747 §4.2,
//! `pathwise-auth`) and the booster's encryption (`pathwise-booster`) keep one per sender.
//!
//! RFC 2747 §4.2: a number is valid if "(a) it is greater than the maximum sequence number
//! received or (b) it is a past sequence number lying within the reordering window and not
//! recorded in the list"; numbers "below the lower end of the list or marked seen in the list
//! are discarded". The list is a ring of 64-bit words indexed by `seq / 64` (RFC 6479): moving
//! the window forward clears the words it passes over and never shifts the others, so a
//! message costs a few word operations whatever the window's size. A window of `WORDS` words
//! tells apart the [`SlidingWindow::MAX_SPAN`] numbers below the largest seen (one word is
//! the part being cleared); the caller picks its reordering tolerance, `span`, up to that.

/// What a window says about a received sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReplayOutcome {
    /// New: larger than any seen, or inside the window and not seen before.
    Accepted,
    /// Inside the window and already seen: a replay (or a duplicate).
    Replayed,
    /// Below the window: too old to tell, so rejected.
    TooOld,
}

/// The receive state for one sender: the largest number accepted and which of the numbers
/// below it were seen, in a ring of `WORDS` 64-bit words.
///
/// Record a number only after the message authenticated, or a forger could move the window
/// and block genuine traffic: [`Self::check`] before, [`Self::record`] after verification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlidingWindow<const WORDS: usize> {
    highest: Option<u64>,
    bits: [u64; WORDS],
}

impl<const WORDS: usize> Default for SlidingWindow<WORDS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const WORDS: usize> SlidingWindow<WORDS> {
    /// The most numbers below the largest seen that the window can tell apart.
    pub const MAX_SPAN: u64 = {
        assert!(WORDS >= 2, "a window needs at least two words");
        (WORDS as u64 - 1) * 64
    };

    /// A window that has seen nothing: its first number is accepted.
    pub const fn new() -> Self {
        SlidingWindow {
            highest: None,
            bits: [0; WORDS],
        }
    }

    /// A window whose largest number is `seq` and which counts every number below it as
    /// seen: what a resynchronisation establishes (RFC 2747 §4.3, the Integrity Response's
    /// number saved "as the latest sequence number received"), so that no message signed
    /// before it — perhaps captured and replayed — is accepted after it.
    pub fn starting_at(seq: u64) -> Self {
        let mut bits = [!0u64; WORDS];
        let (i, bit) = Self::slot(seq);
        // Numbers above `seq` in its word are not seen yet.
        bits[i] = bit | (bit - 1);
        SlidingWindow {
            highest: Some(seq),
            bits,
        }
    }

    /// The largest number accepted so far.
    pub const fn highest(&self) -> Option<u64> {
        self.highest
    }

    fn slot(seq: u64) -> (usize, u64) {
        ((seq / 64 % WORDS as u64) as usize, 1u64 << (seq % 64))
    }

    /// What [`Self::record`] would answer for `seq` with a reordering tolerance of `span`
    /// numbers below the largest seen (1 ..= [`Self::MAX_SPAN`]; clamped), changing nothing.
    pub fn check(&self, seq: u64, span: u64) -> ReplayOutcome {
        let Some(highest) = self.highest else {
            return ReplayOutcome::Accepted;
        };
        if seq > highest {
            return ReplayOutcome::Accepted;
        }
        if highest - seq >= span.clamp(1, Self::MAX_SPAN) {
            return ReplayOutcome::TooOld;
        }
        let (i, bit) = Self::slot(seq);
        if self.bits[i] & bit != 0 {
            ReplayOutcome::Replayed
        } else {
            ReplayOutcome::Accepted
        }
    }

    /// Checks `seq` as [`Self::check`] and, if accepted, remembers it.
    pub fn record(&mut self, seq: u64, span: u64) -> ReplayOutcome {
        let outcome = self.check(seq, span);
        if outcome != ReplayOutcome::Accepted {
            return outcome;
        }
        match self.highest {
            Some(highest) if seq <= highest => {}
            old => {
                // A new largest: clear the words between the old largest and it, which hold
                // numbers now below the window (a new window's are clear already).
                if let Some(highest) = old {
                    let (old, new) = (highest / 64, seq / 64);
                    for k in 1..=(new - old).min(WORDS as u64) {
                        self.bits[((old + k) % WORDS as u64) as usize] = 0;
                    }
                }
                self.highest = Some(seq);
            }
        }
        let (i, bit) = Self::slot(seq);
        self.bits[i] |= bit;
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    type W = SlidingWindow<4>;

    #[test]
    fn outcomes_at_the_edges() {
        let mut w = W::new();
        assert_eq!(W::MAX_SPAN, 192);
        assert_eq!(w.record(1000, 64), ReplayOutcome::Accepted);
        assert_eq!(w.record(1000, 64), ReplayOutcome::Replayed);
        assert_eq!(w.record(1000 - 63, 64), ReplayOutcome::Accepted);
        assert_eq!(w.record(1000 - 64, 64), ReplayOutcome::TooOld);
        assert_eq!(w.record(1000 - 64, 65), ReplayOutcome::Accepted);
        assert_eq!(
            w.record(1000 - 191, 1 << 20),
            ReplayOutcome::Accepted,
            "clamped"
        );
        assert_eq!(w.record(1000 - 192, 1 << 20), ReplayOutcome::TooOld);
        assert_eq!(w.record(u64::MAX, 64), ReplayOutcome::Accepted);
        assert_eq!(w.record(u64::MAX, 64), ReplayOutcome::Replayed);
        assert_eq!(w.record(1000, 64), ReplayOutcome::TooOld);
        assert_eq!(w.highest(), Some(u64::MAX));
    }

    #[test]
    fn a_window_started_at_a_number_counts_everything_below_as_seen() {
        for seq in [500u64, 511, 512, 0, u64::MAX] {
            let mut w = W::starting_at(seq);
            assert_eq!(w.check(seq, 192), ReplayOutcome::Replayed);
            for below in 1..192u64.min(seq.saturating_add(1)) {
                assert_ne!(
                    w.check(seq - below, 192),
                    ReplayOutcome::Accepted,
                    "{seq} - {below}"
                );
            }
            if seq < u64::MAX {
                // What comes after is new, also out of order within the window.
                assert_eq!(w.record(seq + 3, 192), ReplayOutcome::Accepted);
                assert_eq!(w.record(seq + 1, 192), ReplayOutcome::Accepted);
                assert_eq!(w.record(seq + 2, 192), ReplayOutcome::Accepted);
                assert_eq!(w.record(seq + 2, 192), ReplayOutcome::Replayed);
                assert_eq!(w.record(seq + 100, 192), ReplayOutcome::Accepted);
                assert_eq!(w.record(seq + 50, 192), ReplayOutcome::Accepted);
            }
        }
    }

    proptest! {
        /// The ring answers as the rule it implements, on a model that remembers every
        /// number: accepted when above the largest seen, or within `span` below it and not
        /// seen; a replay when seen within `span`; too old below.
        #[test]
        fn the_ring_answers_as_the_rule(
            start in 0u64..(u64::MAX / 2),
            steps in proptest::collection::vec((0u64..400, any::<bool>()), 0..400),
            span in 1u64..=192,
        ) {
            let mut w = W::new();
            let mut seen: BTreeSet<u64> = BTreeSet::new();
            let mut at = start;
            for (d, back) in steps {
                let seq = if back { at.saturating_sub(d) } else { at + d };
                let want = match seen.last() {
                    None => ReplayOutcome::Accepted,
                    Some(&h) if seq > h => ReplayOutcome::Accepted,
                    Some(&h) if h - seq >= span => ReplayOutcome::TooOld,
                    Some(_) if seen.contains(&seq) => ReplayOutcome::Replayed,
                    Some(_) => ReplayOutcome::Accepted,
                };
                prop_assert_eq!(w.check(seq, span), want);
                prop_assert_eq!(w.record(seq, span), want);
                if want == ReplayOutcome::Accepted {
                    seen.insert(seq);
                }
                at = at.max(seq);
            }
        }
    }
}
