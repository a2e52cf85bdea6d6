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
//! With `compress_when = "congested"` compression is congestion-aware (seed §7: Feldmeier
//! "observed that monitoring congestion on a WAN to determine when compression should be
//! applied has desirable properties; compression is then used only when the WAN is congested"):
//! the compressibility detector still decides *whether* the traffic is worth compressing, and
//! [`crate::congestion::Congestion`] decides *when* — compression is inserted while the link
//! shows congestion (queueing delay from delay probes, or loss from the peer's reports) and
//! removed once the congestion has cleared for `congestion_hold_ms`. The probes are
//! [`Adaptive::poll_probe`]'s to send; their echoes come back through
//! [`Adaptive::observe_delay`].
//!
//! It only removes boosters it inserted itself, and an insertion the meta-policy refuses is
//! reported and not retried until the detector changes its mind. Driven by the gateway:
//! `observe_*` as data arrives, then `poll(now, &snapshot)` which returns at most one
//! [`Action`]; the gateway applies it like a management command. No clock is read here.

use crate::booster::BoosterSpec;
use crate::congestion::{Congestion, DelayMeter, Evidence, Thresholds};
use crate::control::Control;
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
    /// When compression is inserted: `compressible` (whenever the traffic compresses) or
    /// `congested` (only while the link is congested and the traffic compresses; seed §7).
    pub compress_when: CompressWhen,
    /// Congested when the link's queueing delay over an interval is at least this (ms).
    pub congestion_delay_on_ms: u64,
    /// No longer congested when it is below this (and the loss below `congestion_loss_off`).
    pub congestion_delay_off_ms: u64,
    /// Congested when the loss the peer reports over an interval is at least this fraction.
    pub congestion_loss_on: f64,
    /// No longer congested when it is below this (and the delay below its `off`).
    pub congestion_loss_off: f64,
    /// Compression stays at least this long after the last congested interval (ms).
    pub congestion_hold_ms: u64,
    /// With `compress_when = "congested"`: send a delay probe this often (ms).
    pub probe_interval_ms: u64,
}

/// When the adaptive policy inserts compression.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompressWhen {
    /// Whenever the sampled traffic compresses (below `compress_on`).
    #[default]
    Compressible,
    /// Only while the link is congested, and the traffic compresses.
    Congested,
}

impl Default for AdaptiveConfig {
    fn default() -> Self {
        AdaptiveConfig {
            enabled: false,
            policy: "default".into(),
            compress: Some(BoosterSpec::Lz4),
            compress_on: 0.80,
            compress_off: 0.95,
            fec: Some(BoosterSpec::Fec {
                k: 4,
                m: 1,
                depth: 1,
            }),
            fec_on: 0.01,
            fec_off: 0.002,
            interval_ms: 1000,
            sample_every: 8,
            min_sample_bytes: 16 * 1024,
            min_loss_packets: 100,
            compress_when: CompressWhen::Compressible,
            congestion_delay_on_ms: 5,
            congestion_delay_off_ms: 1,
            congestion_loss_on: 0.005,
            congestion_loss_off: 0.001,
            congestion_hold_ms: 3000,
            probe_interval_ms: 100,
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
    /// Whether the link is congested (`compress_when = "congested"`).
    pub congested: bool,
    /// Queueing delay of the last interval with a probe answered, milliseconds.
    pub queue_delay_ms: Option<f64>,
    /// Loss of the last interval with enough reported packets (the congestion signal's, not
    /// carried over).
    pub congestion_loss: Option<f64>,
    /// Delay probes sent and answers received.
    pub probes: (u64, u64),
    /// Times the congestion signal turned on.
    pub congestion_onsets: u64,
    /// Times the adaptive policy inserted compression.
    pub compress_inserts: u64,
    /// Times it removed compression.
    pub compress_removals: u64,
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
    delay: DelayMeter,
    interval_loss: (u64, u64),
    congestion: Congestion,
    last_congested: Option<Instant>,
    next_probe: Option<Instant>,
}

impl Adaptive {
    /// A controller with `cfg`.
    pub fn new(cfg: AdaptiveConfig) -> Self {
        Adaptive {
            state: AdaptiveState::default(),
            sampled: (0, 0),
            reported: (0, 0),
            next_eval: None,
            refused: None,
            delay: DelayMeter::new(),
            interval_loss: (0, 0),
            congestion: Congestion::new(Thresholds {
                delay_on: Duration::from_millis(cfg.congestion_delay_on_ms),
                delay_off: Duration::from_millis(cfg.congestion_delay_off_ms),
                loss_on: cfg.congestion_loss_on,
                loss_off: cfg.congestion_loss_off,
            }),
            last_congested: None,
            next_probe: None,
            cfg,
        }
    }

    fn congestion_aware(&self) -> bool {
        self.cfg.enabled && self.cfg.compress_when == CompressWhen::Congested
    }

    /// A delay probe to send to the peer now, if one is due (`compress_when = "congested"`).
    pub fn poll_probe(&mut self, now: Instant) -> Option<Control> {
        if !self.congestion_aware() || self.next_probe.is_some_and(|t| now < t) {
            return None;
        }
        self.next_probe = now.checked_add(Duration::from_millis(self.cfg.probe_interval_ms.max(1)));
        self.state.probes.0 += 1;
        Some(Control::Timestamp {
            sent: now.as_nanos(),
        })
    }

    /// The peer answered a probe sent at `sent` (our clock): it arrived at `peer_received`
    /// (the peer's clock). Answers to probes we cannot have sent (from the future) are ignored.
    pub fn observe_delay(&mut self, now: Instant, sent: u64, peer_received: u64) {
        if sent > now.as_nanos() {
            return;
        }
        self.state.probes.1 += 1;
        self.delay.observe(Instant::from_nanos(sent), peer_received);
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
        self.interval_loss.0 += u64::from(received);
        self.interval_loss.1 += u64::from(expected);
    }

    /// Record that applying `action` failed (it will not be retried until the detector flips).
    pub fn refused(&mut self, action: Action, why: String) {
        match action {
            Action::Insert(s) if Some(s) == self.cfg.compress => {
                self.state.compress_inserts = self.state.compress_inserts.saturating_sub(1);
            }
            Action::Remove(s) if Some(s) == self.cfg.compress => {
                self.state.compress_removals = self.state.compress_removals.saturating_sub(1);
            }
            _ => {}
        }
        self.refused = Some(action);
        self.state.last_error = Some(why);
    }

    /// When to call [`Adaptive::poll`] next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let eval = self
            .cfg
            .enabled
            .then_some(self.next_eval.unwrap_or(Instant::ZERO));
        let probe = self
            .congestion_aware()
            .then_some(self.next_probe.unwrap_or(Instant::ZERO));
        eval.into_iter().chain(probe).min()
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
        let congested = self.congestion_aware() && self.judge_congestion(now);
        let mut want = Vec::new();
        match (self.cfg.compress, self.state.ratio, self.cfg.compress_when) {
            (Some(c), Some(r), CompressWhen::Compressible) => {
                if r < self.cfg.compress_on && !has(c) {
                    want.push(Action::Insert(c));
                } else if r > self.cfg.compress_off && self.state.compress_inserted {
                    want.push(Action::Remove(c));
                }
            }
            (Some(c), ratio, CompressWhen::Congested) => {
                let held = self.last_congested.is_some_and(|t| {
                    now.saturating_duration_since(t)
                        < Duration::from_millis(self.cfg.congestion_hold_ms)
                });
                let compressible = ratio.is_some_and(|r| r < self.cfg.compress_on);
                let incompressible = ratio.is_some_and(|r| r > self.cfg.compress_off);
                if congested && compressible && !has(c) {
                    want.push(Action::Insert(c));
                } else if self.state.compress_inserted && (incompressible || (!congested && !held))
                {
                    want.push(Action::Remove(c));
                }
            }
            _ => {}
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
                    if inserted {
                        self.state.compress_inserts += 1;
                    } else {
                        self.state.compress_removals += 1;
                    }
                } else {
                    self.state.fec_inserted = inserted;
                }
            }
        }
        Some(action)
    }

    /// One interval of the congestion signal: this interval's queueing delay and loss (not
    /// carried over: an idle link is not congested).
    fn judge_congestion(&mut self, now: Instant) -> bool {
        let delay = self.delay.take_queueing();
        let (recv, exp) = std::mem::take(&mut self.interval_loss);
        let loss = (exp >= self.cfg.min_loss_packets.max(1))
            .then(|| 1.0 - recv.min(exp) as f64 / exp as f64);
        let congested = self.congestion.update(Evidence { delay, loss });
        if congested {
            self.last_congested = Some(now);
        }
        self.state.congested = congested;
        self.state.congestion_onsets = self.congestion.onsets();
        if let Some(d) = delay {
            self.state.queue_delay_ms = Some(d.as_secs_f64() * 1e3);
        }
        if loss.is_some() {
            self.state.congestion_loss = loss;
        }
        congested
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
        let fec = BoosterSpec::Fec {
            k: 4,
            m: 1,
            depth: 1,
        };
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
            fec: Some(BoosterSpec::Fec {
                k: 4,
                m: 2,
                depth: 1,
            }),
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
            Some(Action::Insert(BoosterSpec::Fec {
                k: 4,
                m: 2,
                depth: 1
            }))
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

    fn congestion_aware() -> Adaptive {
        Adaptive::new(AdaptiveConfig {
            enabled: true,
            fec: None,
            compress_when: CompressWhen::Congested,
            ..AdaptiveConfig::default()
        })
    }

    /// One second: ten probes with `queue_ms` of queue on a 10 ms path (peer clock 1 s ahead),
    /// a loss report and a compressibility sample; then the evaluation.
    fn second(
        a: &mut Adaptive,
        s: u64,
        queue_ms: u64,
        lost: u32,
        ratio: f64,
        chain: &PolicySnapshot,
    ) -> Option<Action> {
        for k in 0..10 {
            let now = Instant::from_millis(s * 1000 + k * 100);
            if let Some(Control::Timestamp { sent }) = a.poll_probe(now) {
                a.observe_delay(
                    now,
                    sent,
                    sent + 1_000_000_000 + (10 + queue_ms) * 1_000_000,
                );
            }
        }
        a.observe_loss(1000 - lost, 1000);
        a.observe_compressibility(100_000, (100_000.0 * ratio) as u64);
        a.poll(Instant::from_secs(s + 1), chain)
    }

    #[test]
    fn congestion_aware_compression_follows_the_queue_with_hysteresis() {
        let mut a = congestion_aware();
        let lz4 = BoosterSpec::Lz4;
        let (off, on) = (snap(&["encrypt"]), snap(&["lz4", "encrypt"]));
        // Compressible but uncongested: nothing.
        for s in 0..3 {
            assert_eq!(second(&mut a, s, 0, 0, 0.3, &off), None);
        }
        assert!(!a.state().congested);
        // A queue builds: compression goes in.
        assert_eq!(
            second(&mut a, 3, 60, 0, 0.3, &off),
            Some(Action::Insert(lz4))
        );
        assert!(a.state().congested);
        // Queue between the thresholds: stays congested, compression stays.
        assert_eq!(second(&mut a, 4, 3, 0, 0.3, &on), None);
        assert!(a.state().congested);
        // Cleared: kept for the hold time (3 s), then removed.
        assert_eq!(second(&mut a, 5, 0, 0, 0.3, &on), None);
        assert!(!a.state().congested);
        assert_eq!(second(&mut a, 6, 0, 0, 0.3, &on), None);
        assert_eq!(second(&mut a, 7, 0, 0, 0.3, &on), Some(Action::Remove(lz4)));
        assert_eq!(second(&mut a, 8, 0, 0, 0.3, &off), None);
        // Loss alone is congestion too.
        assert_eq!(
            second(&mut a, 9, 0, 30, 0.3, &off),
            Some(Action::Insert(lz4))
        );
        let st = a.state();
        assert_eq!((st.compress_inserts, st.compress_removals), (2, 1));
        assert_eq!(st.congestion_onsets, 2);
        assert_eq!(st.probes.0, st.probes.1);
        assert!(st.probes.0 >= 90);
    }

    #[test]
    fn congestion_does_not_compress_what_does_not_compress() {
        let mut a = congestion_aware();
        let lz4 = BoosterSpec::Lz4;
        // The empty link first (the base delay), then a queue and loss.
        assert_eq!(second(&mut a, 0, 0, 0, 1.0, &snap(&["encrypt"])), None);
        for s in 1..3 {
            assert_eq!(second(&mut a, s, 80, 20, 1.0, &snap(&["encrypt"])), None);
        }
        assert!(a.state().congested);
        // Compressible under congestion: in; turning incompressible while congested: out.
        assert_eq!(
            second(&mut a, 3, 80, 0, 0.4, &snap(&["encrypt"])),
            Some(Action::Insert(lz4))
        );
        assert_eq!(
            second(&mut a, 4, 80, 0, 1.0, &snap(&["lz4", "encrypt"])),
            Some(Action::Remove(lz4))
        );
    }

    #[test]
    fn an_idle_link_clears_congestion_and_no_probe_when_compressible_mode() {
        let mut a = congestion_aware();
        assert_eq!(second(&mut a, 0, 0, 0, 1.0, &snap(&[])), None);
        assert_eq!(
            second(&mut a, 1, 80, 0, 0.3, &snap(&[])),
            Some(Action::Insert(BoosterSpec::Lz4))
        );
        // The transfer ends: probes show no queue, and no loss report (idle link, not carried).
        for k in 0..10 {
            let now = Instant::from_millis(2000 + k * 100);
            if let Some(Control::Timestamp { sent }) = a.poll_probe(now) {
                a.observe_delay(now, sent, sent + 1_010_000_000);
            }
        }
        assert_eq!(a.poll(Instant::from_secs(3), &snap(&["lz4"])), None);
        assert!(!a.state().congested);
        // An answer from the future is not ours.
        let before = a.state().probes.1;
        a.observe_delay(Instant::from_secs(3), u64::MAX, 0);
        assert_eq!(a.state().probes.1, before);
        // The default mode sends no probes.
        let mut plain = Adaptive::new(AdaptiveConfig {
            enabled: true,
            ..AdaptiveConfig::default()
        });
        assert_eq!(plain.poll_probe(Instant::from_secs(1)), None);
    }
}
