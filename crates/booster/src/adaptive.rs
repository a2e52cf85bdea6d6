//! The adaptive policy: insert and remove boosters automatically from what the gateway observes
//! (seed §7: "automating insertion and deletion of boosters under control of a policy module
//! (e.g., a 'compressibility detector') is underway"; §3.1 suggests reacting to locally observed
//! packet loss).
//!
//! Two detectors with hysteresis, evaluated once per interval:
//! - *compressibility*: the gateway LZ4-compresses a sample of outgoing packets
//!   ([`crate::pipeline::Sender::sample_compressibility`]); when the compressed/original ratio
//!   falls below `compress_on` the compression booster is inserted, above `compress_off` it is
//!   removed again;
//! - *loss*: the peer reports what it received ([`crate::control::Control::LossReport`]); loss
//!   above `fec_on` inserts the FEC booster, below `fec_off` removes it.
//!
//! It only removes boosters it inserted itself, and an insertion the meta-policy refuses is
//! reported and not retried until the detector changes its mind. Driven by the gateway:
//! `observe_*` as data arrives, then `poll(now, &snapshot)` which returns at most one
//! [`Action`]; the gateway applies it like a management command. No clock is read here.

use crate::booster::BoosterSpec;
use crate::policy::PolicySnapshot;
use pathwise_core::time::{Duration, Instant};
use serde::{Deserialize, Serialize};

/// Thresholds and targets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdaptiveConfig {
    /// Whether the adaptive policy runs at all.
    pub enabled: bool,
    /// The policy whose chain it edits.
    pub policy: String,
    /// Compression booster to insert (none: never insert compression).
    pub compress: Option<BoosterSpec>,
    /// Insert compression when the sampled ratio (compressed/original) is below this.
    pub compress_on: f64,
    /// Remove it again when the ratio is above this.
    pub compress_off: f64,
    /// FEC booster to insert (none: never insert FEC).
    pub fec: Option<BoosterSpec>,
    /// Insert FEC when the reported loss fraction is above this.
    pub fec_on: f64,
    /// Remove it when loss is below this.
    pub fec_off: f64,
    /// Evaluation interval in milliseconds.
    pub interval_ms: u64,
    /// Compress one outgoing packet in this many to measure compressibility.
    pub sample_every: u32,
    /// Judge compressibility only from at least this many sampled bytes; an interval with fewer
    /// carries its sample over to the next, so that the few acknowledgements at the end of a
    /// transfer do not undo what the transfer showed.
    pub min_sample_bytes: u64,
    /// Judge loss only from reports covering at least this many packets (carried over
    /// likewise): with fewer, one lost packet is already more than `fec_on`.
    pub min_loss_packets: u64,
}

impl Default for AdaptiveConfig {
    fn default() -> Self {
        AdaptiveConfig {
            enabled: false,
            policy: "default".into(),
            compress: Some(BoosterSpec::Lz4),
            compress_on: 0.80,
            compress_off: 0.95,
            fec: Some(BoosterSpec::Fec { k: 4, m: 1 }),
            fec_on: 0.01,
            fec_off: 0.002,
            interval_ms: 1000,
            sample_every: 8,
            min_sample_bytes: 16 * 1024,
            min_loss_packets: 100,
        }
    }
}

/// A change the adaptive policy wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Insert this booster into the configured policy (position chosen by the meta-policy).
    Insert(BoosterSpec),
    /// Remove it.
    Remove(BoosterSpec),
}

/// What the detectors last saw (shown by `booster show`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AdaptiveState {
    /// Last sampled compression ratio (compressed / original).
    pub ratio: Option<f64>,
    /// Last reported loss fraction.
    pub loss: Option<f64>,
    /// Whether compression was inserted by the adaptive policy and is still there.
    pub compress_inserted: bool,
    /// Whether FEC was inserted by the adaptive policy and is still there.
    pub fec_inserted: bool,
    /// Last refusal (meta-policy or otherwise).
    pub last_error: Option<String>,
}

/// The adaptive controller.
#[derive(Debug)]
pub struct Adaptive {
    cfg: AdaptiveConfig,
    state: AdaptiveState,
    sampled: (u64, u64),
    reported: (u64, u64),
    next_eval: Option<Instant>,
    refused: Option<Action>,
}

impl Adaptive {
    /// A controller with `cfg`.
    pub fn new(cfg: AdaptiveConfig) -> Self {
        Adaptive {
            cfg,
            state: AdaptiveState::default(),
            sampled: (0, 0),
            reported: (0, 0),
            next_eval: None,
            refused: None,
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &AdaptiveConfig {
        &self.cfg
    }

    /// What it saw and did.
    pub fn state(&self) -> &AdaptiveState {
        &self.state
    }

    /// Add sampled bytes and their compressed size.
    pub fn observe_compressibility(&mut self, original: u64, compressed: u64) {
        self.sampled.0 += original;
        self.sampled.1 += compressed;
    }

    /// Add a peer's loss report.
    pub fn observe_loss(&mut self, received: u32, expected: u32) {
        self.reported.0 += u64::from(received);
        self.reported.1 += u64::from(expected);
    }

    /// Record that applying `action` failed (it will not be retried until the detector flips).
    pub fn refused(&mut self, action: Action, why: String) {
        self.refused = Some(action);
        self.state.last_error = Some(why);
    }

    /// When to call [`Adaptive::poll`] next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.cfg
            .enabled
            .then_some(self.next_eval.unwrap_or(Instant::ZERO))
    }

    /// Evaluate if the interval has passed; at most one action.
    pub fn poll(&mut self, now: Instant, snap: &PolicySnapshot) -> Option<Action> {
        if !self.cfg.enabled || self.next_eval.is_some_and(|t| now < t) {
            return None;
        }
        self.next_eval = now.checked_add(Duration::from_millis(self.cfg.interval_ms.max(1)));
        let chain = snap
            .policies()
            .iter()
            .find(|p| p.name == self.cfg.policy)
            .map(|p| p.chain.clone())?;
        let has = |spec: BoosterSpec| chain.iter().any(|s| s.id() == spec.id());
        // Forget our insertions that someone else removed.
        if let Some(c) = self.cfg.compress {
            self.state.compress_inserted &= has(c);
        }
        if let Some(f) = self.cfg.fec {
            self.state.fec_inserted &= has(f);
        }
        if self.sampled.0 >= self.cfg.min_sample_bytes.max(1) {
            let (orig, comp) = std::mem::take(&mut self.sampled);
            self.state.ratio = Some(comp as f64 / orig as f64);
        }
        if self.reported.1 >= self.cfg.min_loss_packets.max(1) {
            let (recv, exp) = std::mem::take(&mut self.reported);
            self.state.loss = Some(1.0 - recv.min(exp) as f64 / exp as f64);
        }
        let mut want = Vec::new();
        if let (Some(c), Some(r)) = (self.cfg.compress, self.state.ratio) {
            if r < self.cfg.compress_on && !has(c) {
                want.push(Action::Insert(c));
            } else if r > self.cfg.compress_off && self.state.compress_inserted {
                want.push(Action::Remove(c));
            }
        }
        if let (Some(f), Some(l)) = (self.cfg.fec, self.state.loss) {
            if l > self.cfg.fec_on && !has(f) {
                want.push(Action::Insert(f));
            } else if l < self.cfg.fec_off && self.state.fec_inserted {
                want.push(Action::Remove(f));
            }
        }
        if self.refused.is_some_and(|r| !want.contains(&r)) {
            self.refused = None;
        }
        let action = want.into_iter().find(|a| Some(*a) != self.refused)?;
        match action {
            Action::Insert(s) | Action::Remove(s) => {
                let inserted = matches!(action, Action::Insert(_));
                if Some(s) == self.cfg.compress {
                    self.state.compress_inserted = inserted;
                } else {
                    self.state.fec_inserted = inserted;
                }
            }
        }
        Some(action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{MetaPolicy, Policy};

    fn snap(chain: &[&str]) -> PolicySnapshot {
        PolicySnapshot::build(
            1,
            vec![Policy {
                name: "default".into(),
                dst: "10.0.0.0/8".parse().unwrap(),
                src: None,
                chain: chain.iter().map(|s| s.parse().unwrap()).collect(),
            }],
            MetaPolicy::default(),
            true,
        )
        .unwrap()
    }

    #[test]
    fn compressibility_inserts_then_removes_with_hysteresis() {
        let mut a = Adaptive::new(AdaptiveConfig {
            enabled: true,
            ..AdaptiveConfig::default()
        });
        let t = |s| Instant::from_secs(s);
        a.observe_compressibility(100_000, 30_000);
        assert_eq!(
            a.poll(t(1), &snap(&["encrypt"])),
            Some(Action::Insert(BoosterSpec::Lz4))
        );
        // Same interval: nothing.
        assert_eq!(a.poll(t(1), &snap(&["lz4", "encrypt"])), None);
        // Ratio between the thresholds: keep.
        a.observe_compressibility(100_000, 90_000);
        assert_eq!(a.poll(t(2), &snap(&["lz4", "encrypt"])), None);
        a.observe_compressibility(100_000, 100_000);
        assert_eq!(
            a.poll(t(3), &snap(&["lz4", "encrypt"])),
            Some(Action::Remove(BoosterSpec::Lz4))
        );
    }

    #[test]
    fn loss_inserts_fec_and_never_removes_what_it_did_not_insert() {
        let mut a = Adaptive::new(AdaptiveConfig {
            enabled: true,
            compress: None,
            ..AdaptiveConfig::default()
        });
        let fec = BoosterSpec::Fec { k: 4, m: 1 };
        a.observe_loss(95, 100);
        assert_eq!(
            a.poll(Instant::from_secs(1), &snap(&[])),
            Some(Action::Insert(fec))
        );
        a.observe_loss(1000, 1000);
        assert_eq!(
            a.poll(Instant::from_secs(2), &snap(&["fec:4:1"])),
            Some(Action::Remove(fec))
        );
        // An operator's FEC stays.
        a.observe_loss(1000, 1000);
        assert_eq!(a.poll(Instant::from_secs(3), &snap(&["fec:8:2"])), None);
    }

    #[test]
    fn too_little_evidence_carries_over_instead_of_undoing_a_decision() {
        let mut a = Adaptive::new(AdaptiveConfig {
            enabled: true,
            fec: Some(BoosterSpec::Fec { k: 4, m: 2 }),
            ..AdaptiveConfig::default()
        });
        let t = |s| Instant::from_secs(s);
        a.observe_compressibility(100_000, 30_000);
        a.observe_loss(950, 1000);
        assert_eq!(
            a.poll(t(1), &snap(&["encrypt"])),
            Some(Action::Insert(BoosterSpec::Lz4))
        );
        assert_eq!(
            a.poll(t(2), &snap(&["lz4", "encrypt"])),
            Some(Action::Insert(BoosterSpec::Fec { k: 4, m: 2 }))
        );
        // The end of the transfer: a few incompressible acknowledgements, none lost.
        a.observe_compressibility(600, 600);
        a.observe_loss(3, 3);
        let chain = snap(&["lz4", "encrypt", "fec:4:2"]);
        assert_eq!(a.poll(t(3), &chain), None);
        assert_eq!(a.state().ratio, Some(0.3));
        assert!(a.state().loss.is_some_and(|l| (l - 0.05).abs() < 1e-9));
        // Enough of it, carried over with what came before, does decide.
        a.observe_compressibility(100_000, 100_000);
        a.observe_loss(1000, 1000);
        assert_eq!(a.poll(t(4), &chain), Some(Action::Remove(BoosterSpec::Lz4)));
        assert!(a.state().ratio.is_some_and(|r| r > 0.99));
        assert!(a.state().loss.is_some_and(|l| l < 0.002));
    }
}
