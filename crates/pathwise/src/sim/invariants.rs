//! What a fault campaign checks, as small pure functions over what the engines show, so each
//! can be tested on a hand-built violating state; what it counts ([`Checks`]); and what it
//! reports when one fails ([`Violation`]).

use pathwise_core::time::Instant;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// One invariant a campaign checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Invariant {
    /// After teardown or timeout, no state, timer, class or label is left anywhere.
    NoStateLeft,
    /// Every installed reservation serves senders whose path state leaves by its interface.
    ResvHasPath,
    /// Admission never exceeds an interface's reservable bandwidth.
    Admission,
    /// The traffic-control classes are the installed reservations, rate for rate.
    ClassesMatchState,
    /// For an LSP that is up, a node's out label is its next hop's in label.
    LabelsHopByHop,
    /// Once stable, when A's downstream peer for a session is B, B's upstream peer is A.
    GistSymmetry,
    /// Every datagram handed to an engine is counted as received or as dropped by reason.
    CountersAddUp,
    /// Every stream segment a node receives is accepted or dropped and counted by reason.
    SegmentsCounted,
    /// What one end of a stream delivered is exactly what the other end sent: no injected,
    /// replayed or corrupted segment got in.
    StreamIntegrity,
    /// The seed reached quiescence within its step, virtual-time and wall-clock budgets.
    Watchdog,
    /// While a session's state lasts, a node's own RSN never goes back, nor the RSN it holds
    /// from one peer within one epoch (QoS NSLP, RFC 5974 §5.3.1).
    RsnMonotonic,
}

impl Invariant {
    /// Every invariant, in report order.
    pub const ALL: [Invariant; 11] = [
        Invariant::NoStateLeft,
        Invariant::ResvHasPath,
        Invariant::Admission,
        Invariant::ClassesMatchState,
        Invariant::LabelsHopByHop,
        Invariant::GistSymmetry,
        Invariant::CountersAddUp,
        Invariant::SegmentsCounted,
        Invariant::StreamIntegrity,
        Invariant::Watchdog,
        Invariant::RsnMonotonic,
    ];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::NoStateLeft => "no-state-left",
            Invariant::ResvHasPath => "resv-has-path",
            Invariant::Admission => "admission",
            Invariant::ClassesMatchState => "classes-match-state",
            Invariant::LabelsHopByHop => "labels-hop-by-hop",
            Invariant::GistSymmetry => "gist-symmetry",
            Invariant::CountersAddUp => "counters-add-up",
            Invariant::SegmentsCounted => "segments-counted",
            Invariant::StreamIntegrity => "stream-integrity",
            Invariant::Watchdog => "watchdog",
            Invariant::RsnMonotonic => "rsn-monotonic",
        }
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How many times each invariant was checked (one check: one node, or one pair of nodes, at
/// one instant).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Checks(pub BTreeMap<Invariant, u64>);

impl Checks {
    /// Count one check of `inv`.
    pub fn count(&mut self, inv: Invariant) {
        *self.0.entry(inv).or_insert(0) += 1;
    }

    /// Checks of `inv` so far.
    pub fn get(&self, inv: Invariant) -> u64 {
        self.0.get(&inv).copied().unwrap_or(0)
    }

    /// Add another run's counts.
    pub fn add(&mut self, other: &Checks) {
        for (k, v) in &other.0 {
            *self.0.entry(*k).or_insert(0) += v;
        }
    }
}

/// A failed check: what, when (virtual time), where, and the evidence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    /// The invariant.
    pub invariant: Invariant,
    /// Virtual time, seconds.
    pub time_s: f64,
    /// The node (or nodes) it was seen on.
    pub node: String,
    /// What was wrong.
    pub detail: String,
}

impl Violation {
    /// A violation of `invariant` seen at `now` on `node`.
    pub fn new(
        invariant: Invariant,
        now: Instant,
        node: impl Into<String>,
        detail: String,
    ) -> Self {
        Violation {
            invariant,
            time_s: now.as_nanos() as f64 / 1e9,
            node: node.into(),
            detail,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} violated at t={:.6} s on {}: {}",
            self.invariant, self.time_s, self.node, self.detail
        )
    }
}

/// Whether a check passed; the error says what was wrong.
pub type Verdict = Result<(), String>;

/// Nothing may be left: each `(what, how many)` must be zero.
pub fn no_state_left(left: &[(&str, usize)]) -> Verdict {
    let nonzero: Vec<String> = left
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(what, n)| format!("{n} {what}"))
        .collect();
    if nonzero.is_empty() {
        Ok(())
    } else {
        Err(format!("left behind: {}", nonzero.join(", ")))
    }
}

/// One installed reservation: the interface it is on and the senders it serves.
#[derive(Clone, Debug, PartialEq)]
pub struct InstalledOn<S> {
    /// The interface.
    pub ifindex: u32,
    /// The senders it serves.
    pub senders: Vec<S>,
}

/// Every installed reservation serves at least one sender, and each sender it serves has path
/// state leaving by the reservation's interface (`paths`: sender and its outgoing interfaces).
pub fn resv_has_path<S: PartialEq + fmt::Debug>(
    installed: &[InstalledOn<S>],
    paths: &[(S, Vec<u32>)],
) -> Verdict {
    for i in installed {
        if i.senders.is_empty() {
            return Err(format!(
                "reservation on ifindex {} serves no sender",
                i.ifindex
            ));
        }
        for s in &i.senders {
            let ok = paths
                .iter()
                .any(|(p, oifs)| p == s && oifs.contains(&i.ifindex));
            if !ok {
                return Err(format!(
                    "reservation on ifindex {} serves {s:?}, which has no path state out of it",
                    i.ifindex
                ));
            }
        }
    }
    Ok(())
}

/// Reserved bandwidth within the interface's budget (both bytes per second).
pub fn admission(ifindex: u32, reserved: f64, reservable: f64) -> Verdict {
    // The same rounding slack the admission control allows itself.
    if reserved > reservable * (1.0 + 1e-6) {
        Err(format!(
            "ifindex {ifindex}: {reserved} B/s reserved, budget {reservable} B/s"
        ))
    } else {
        Ok(())
    }
}

/// The traffic-control classes on an interface (count, bytes per second) match the installed
/// reservations on it.
pub fn classes_match_state(ifindex: u32, classes: (usize, f64), state: (usize, f64)) -> Verdict {
    let close = (classes.1 - state.1).abs() <= 1e-3 * classes.1.abs().max(state.1.abs()) + 1.0;
    if classes.0 == state.0 && close {
        Ok(())
    } else {
        Err(format!(
            "ifindex {ifindex}: {} classes for {} B/s, {} reservations for {} B/s",
            classes.0, classes.1, state.0, state.1
        ))
    }
}

/// The label a node sends with (`out`) is the one its next hop bound (`next_in`). A next hop
/// that binds a reserved label (0–15: explicit or implicit null) may show none.
pub fn labels_hop_by_hop(out: u32, next_in: Option<u32>) -> Verdict {
    match next_in {
        Some(l) if l == out => Ok(()),
        None if out < 16 => Ok(()),
        _ => Err(format!(
            "sends with label {out}, next hop's in label is {next_in:?}"
        )),
    }
}

/// A's downstream peer for a session is B (`a_down`), so B's upstream peer must be A
/// (`b_up`, as the node it resolves to).
pub fn gist_symmetry<N: PartialEq + fmt::Debug>(a: &N, b: &N, b_up: Option<&N>) -> Verdict {
    if b_up == Some(a) {
        Ok(())
    } else {
        Err(format!(
            "{a:?}'s downstream peer is {b:?}, whose upstream peer is {b_up:?}"
        ))
    }
}

/// Datagrams handed to the engine (`handed`) are each received (`received`, counted once the
/// message parsed) or dropped by reason (`dropped`); none vanishes uncounted. A message can be
/// both (received, then dropped in processing), so this is `handed ≤ received + dropped`;
/// and unless messages also come another way (`more_inputs`: bundles of several messages in
/// one datagram, streams), nothing is received that was not handed to it.
pub fn counters_add_up(handed: u64, received: u64, dropped: u64, more_inputs: bool) -> Verdict {
    if handed > received + dropped {
        return Err(format!(
            "{handed} datagrams handed to the engine, {received} received + {dropped} dropped: {} unaccounted for",
            handed - received - dropped
        ));
    }
    if !more_inputs && received > handed {
        return Err(format!(
            "{received} messages received from {handed} datagrams"
        ));
    }
    Ok(())
}

/// Segments received (`received`) are each accepted or dropped by reason (`dropped`).
pub fn segments_counted(received: u64, accepted: u64, dropped: u64) -> Verdict {
    if received == accepted + dropped {
        Ok(())
    } else {
        Err(format!(
            "{received} segments received, {accepted} accepted + {dropped} dropped"
        ))
    }
}

/// One end of a stream as [`stream_integrity`] compares it: its sequence numbers and the
/// digests of the data acknowledged by the peer and delivered to the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamEnd {
    /// Own initial sequence number.
    pub iss: u32,
    /// The peer's, as this end knows it.
    pub irs: u32,
    /// Oldest own sequence number unacknowledged.
    pub snd_una: u32,
    /// Next sequence number expected from the peer.
    pub rcv_nxt: u32,
    /// Digest of what the peer acknowledged.
    pub acked: u32,
    /// Digest of what was delivered.
    pub delivered: u32,
}

/// `a` and `b` are the two ends of one established stream (each knows the other's initial
/// number; otherwise they are different incarnations and nothing is compared, `Ok(false)`).
/// Whenever `b` has delivered exactly what `a` has seen acknowledged, the digests agree, and
/// `b` never expects anything `a` has not sent. `Ok(true)` when something was compared.
pub fn stream_integrity(a: &StreamEnd, b: &StreamEnd) -> Result<bool, String> {
    if a.iss != b.irs || b.iss != a.irs {
        return Ok(false);
    }
    if b.rcv_nxt == a.snd_una && b.delivered != a.acked {
        return Err(format!(
            "after {} segments, delivered digest {:#010x}, sent {:#010x}",
            b.rcv_nxt.wrapping_sub(b.irs).wrapping_sub(1),
            b.delivered,
            a.acked
        ));
    }
    if b.rcv_nxt.wrapping_sub(a.snd_una) >= 1 << 31 {
        return Err(format!(
            "expects {} but the sender has {} acknowledged",
            b.rcv_nxt, a.snd_una
        ));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_state_left_names_what_is_left() {
        assert!(no_state_left(&[("sessions", 0), ("timers", 0)]).is_ok());
        let e = no_state_left(&[("sessions", 0), ("timers", 2), ("classes", 1)]).unwrap_err();
        assert_eq!(e, "left behind: 2 timers, 1 classes");
    }

    #[test]
    fn resv_without_path_state_is_caught() {
        let paths = vec![("s1", vec![1, 2]), ("s2", vec![2])];
        let ok = [InstalledOn {
            ifindex: 2,
            senders: vec!["s1", "s2"],
        }];
        assert!(resv_has_path(&ok, &paths).is_ok());
        // s2's path state does not leave by interface 1.
        let wrong_if = [InstalledOn {
            ifindex: 1,
            senders: vec!["s2"],
        }];
        assert!(resv_has_path(&wrong_if, &paths).is_err());
        // A sender with no path state at all.
        let gone = [InstalledOn {
            ifindex: 2,
            senders: vec!["s3"],
        }];
        assert!(resv_has_path(&gone, &paths).is_err());
        // A reservation serving nobody.
        let orphan = [InstalledOn::<&str> {
            ifindex: 2,
            senders: vec![],
        }];
        assert!(resv_has_path(&orphan, &paths).is_err());
    }

    #[test]
    fn over_budget_is_caught() {
        assert!(admission(1, 125_000.0, 125_000.0).is_ok());
        assert!(admission(1, 125_001.0, 125_000.0).is_err());
        assert!(admission(1, 1.0, 0.0).is_err());
    }

    #[test]
    fn classes_out_of_step_with_state_are_caught() {
        assert!(classes_match_state(1, (2, 250.0), (2, 250.0)).is_ok());
        assert!(classes_match_state(1, (2, 250.0), (1, 250.0)).is_err());
        assert!(classes_match_state(1, (1, 250.0), (1, 125.0)).is_err());
        // A class left with nothing installed.
        assert!(classes_match_state(1, (1, 125.0), (0, 0.0)).is_err());
    }

    #[test]
    fn label_mismatch_is_caught() {
        assert!(labels_hop_by_hop(1000, Some(1000)).is_ok());
        assert!(labels_hop_by_hop(3, None).is_ok(), "implicit null");
        assert!(labels_hop_by_hop(1000, Some(1001)).is_err());
        assert!(labels_hop_by_hop(1000, None).is_err());
    }

    #[test]
    fn asymmetric_peers_are_caught() {
        assert!(gist_symmetry(&"A", &"B", Some(&"A")).is_ok());
        assert!(gist_symmetry(&"A", &"B", Some(&"C")).is_err());
        assert!(gist_symmetry(&"A", &"B", None).is_err());
    }

    #[test]
    fn uncounted_datagrams_are_caught() {
        assert!(counters_add_up(10, 8, 2, false).is_ok());
        assert!(
            counters_add_up(10, 10, 3, false).is_ok(),
            "received, then dropped"
        );
        assert!(counters_add_up(10, 7, 2, false).is_err(), "one vanished");
        assert!(
            counters_add_up(10, 11, 0, false).is_err(),
            "one counted twice"
        );
        assert!(counters_add_up(10, 11, 0, true).is_ok(), "a bundle of two");
    }

    #[test]
    fn uncounted_segments_are_caught() {
        assert!(segments_counted(10, 7, 3).is_ok());
        assert!(segments_counted(10, 7, 2).is_err());
    }

    #[test]
    fn a_stream_delivering_what_was_not_sent_is_caught() {
        let a = StreamEnd {
            iss: 100,
            irs: 500,
            snd_una: 104,
            rcv_nxt: 501,
            acked: 0xabcd,
            delivered: 0,
        };
        let mut b = StreamEnd {
            iss: 500,
            irs: 100,
            snd_una: 501,
            rcv_nxt: 104,
            acked: 0,
            delivered: 0xabcd,
        };
        assert_eq!(stream_integrity(&a, &b), Ok(true));
        b.delivered = 0xabce;
        assert!(stream_integrity(&a, &b).is_err(), "an injected segment");
        b.rcv_nxt = 105;
        assert_eq!(stream_integrity(&a, &b), Ok(true), "not yet acknowledged");
        b.rcv_nxt = 103;
        assert!(
            stream_integrity(&a, &b).is_err(),
            "acknowledged, not delivered"
        );
        b.irs = 7;
        assert_eq!(stream_integrity(&a, &b), Ok(false), "another incarnation");
    }

    #[test]
    fn checks_add_up_across_runs() {
        let mut a = Checks::default();
        a.count(Invariant::Admission);
        let mut b = Checks::default();
        b.count(Invariant::Admission);
        b.count(Invariant::NoStateLeft);
        a.add(&b);
        assert_eq!(a.get(Invariant::Admission), 2);
        assert_eq!(a.get(Invariant::NoStateLeft), 1);
        assert_eq!(a.get(Invariant::GistSymmetry), 0);
    }
}
