//! Sending sequence numbers (RFC 2747 §3.2).

/// The 64-bit sequence numbers one sending key puts in its INTEGRITY objects.
///
/// RFC 2747 §3.2 requires the numbers to be strictly increasing for the key's lifetime, including
/// across a restart of the sender, and suggests a timestamp-based scheme: with a real-time clock
/// of one-second resolution, the high 32 bits hold the low 32 bits of the time in seconds and the
/// low 32 bits hold a message counter that restarts every second (the wording as corrected by
/// RFC 2747 erratum 4313). This type implements it as
///
/// ```text
/// next = max(last + 1, now_secs << 32)
/// ```
///
/// so the counter simply carries into the time field if more than 2³² messages are sent in one
/// second, and a clock that steps backwards never makes a number repeat. After a restart with no
/// saved state ([`SequenceNumbers::new`]) the first number is `now_secs << 32`, which is larger
/// than every number sent before as long as the restart took at least a second and the sender
/// never ran more than 2³² messages per second ahead of its clock. If the last number was saved,
/// [`SequenceNumbers::resume`] removes even those conditions.
///
/// `now_secs` is wall-clock seconds since the Unix epoch; values of 2³² and above (year 2106)
/// are clamped to `u32::MAX` so the shift cannot overflow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SequenceNumbers {
    last: Option<u64>,
}

impl SequenceNumbers {
    /// A fresh sequence (no number sent yet under this key, or nothing remembered).
    pub const fn new() -> Self {
        SequenceNumbers { last: None }
    }

    /// A sequence continuing after `last`, the last number sent (for example saved to disk
    /// before a restart).
    pub const fn resume(last: u64) -> Self {
        SequenceNumbers { last: Some(last) }
    }

    /// The last number handed out, if any (what to persist).
    pub const fn last(&self) -> Option<u64> {
        self.last
    }

    /// The floor the clock imposes at `now_secs`: `now_secs << 32`.
    pub const fn time_floor(now_secs: u64) -> u64 {
        let secs = if now_secs > u32::MAX as u64 {
            u32::MAX as u64
        } else {
            now_secs
        };
        secs << 32
    }

    /// The next sequence number at `now_secs`, or `None` once the 64-bit space is exhausted
    /// (the key must then be retired; this cannot happen before the year 2106).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self, now_secs: u64) -> Option<u64> {
        let floor = Self::time_floor(now_secs);
        let n = match self.last {
            None => floor,
            Some(last) => last.checked_add(1)?.max(floor),
        };
        self.last = Some(n);
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn time_based_and_counting_within_a_second() {
        let mut s = SequenceNumbers::new();
        assert_eq!(s.next(1000), Some(1000 << 32));
        assert_eq!(s.next(1000), Some((1000 << 32) + 1));
        assert_eq!(s.next(1000), Some((1000 << 32) + 2));
        assert_eq!(s.next(1001), Some(1001 << 32));
        // Clock steps back: still increasing.
        assert_eq!(s.next(900), Some((1001 << 32) + 1));
        assert_eq!(s.last(), Some((1001 << 32) + 1));
    }

    #[test]
    fn survives_restart_without_saved_state() {
        let mut before = SequenceNumbers::new();
        let mut sent = Vec::new();
        for i in 0..10_000u64 {
            sent.push(before.next(5_000 + i / 1000).unwrap());
        }
        let last_before = *sent.last().unwrap();
        // Restart one second after the last send, with nothing remembered.
        let mut after = SequenceNumbers::new();
        let first_after = after.next(5_000 + 10_000 / 1000 + 1).unwrap();
        assert!(first_after > last_before);
        assert!(sent.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn survives_restart_with_saved_state_even_if_clock_is_behind() {
        let mut s = SequenceNumbers::new();
        let _ = s.next(2_000);
        let saved = s.next(2_000).unwrap();
        let mut resumed = SequenceNumbers::resume(saved);
        assert_eq!(resumed.next(1_999), Some(saved + 1));
    }

    #[test]
    fn exhaustion_is_reported_not_wrapped() {
        let mut s = SequenceNumbers::resume(u64::MAX);
        assert_eq!(s.next(0), None);
        let mut t = SequenceNumbers::new();
        assert_eq!(t.next(u64::MAX), Some(u64::from(u32::MAX) << 32));
    }

    proptest! {
        #[test]
        fn strictly_increasing_for_any_clock(times in proptest::collection::vec(any::<u64>(), 1..200)) {
            let mut s = SequenceNumbers::new();
            let mut prev: Option<u64> = None;
            for t in times {
                let n = s.next(t).unwrap();
                if let Some(p) = prev { prop_assert!(n > p); }
                prop_assert!(n >= SequenceNumbers::time_floor(t));
                prev = Some(n);
            }
        }
    }
}
