//! Admission: which datagrams the receiving gateway lets through to its tunnel device, and
//! which policy snapshot the sending side uses while the two gateways switch chains
//! (docs/booster-wire.md, "Admission").
//!
//! The encapsulation header names the chain a datagram went through, so a receiver can deboost
//! anything it is sent. Deboosting alone would deliver whatever a forger names — an empty chain,
//! `null`, `lz4` — even where the policy encrypts. So the receiver also checks, per datagram:
//!
//! 1. the UDP source is a configured peer gateway ([`crate::pipeline::Receiver`]; else
//!    `unknown_peer`, control messages included);
//! 2. before deboosting, the named chain is one some policy in force accepts
//!    ([`PolicyEpochs::admit_chain`]; else `chain_not_allowed`, or `unencrypted` when every
//!    accepted chain encrypts, or `no_policy` when there is no policy at all), so nothing is
//!    decompressed or decrypted for a chain that cannot be delivered;
//! 3. after deboosting, the inner packet's policy accepts that chain
//!    ([`PolicyEpochs::admit_packet`]): `unencrypted` if the policy encrypts and the chain does
//!    not, `chain_not_allowed` if the chain is not one of the policy's, `no_policy` if no policy
//!    covers the packet. For an encrypted chain this is checked on the decrypted packet, so a
//!    key holder cannot smuggle traffic of one policy under another's chain.
//!
//! **Mirrored matching.** A policy (`src` S, `dst` D) says how *we* send packets S → D. The
//! peer, configured the same way from its side, sends the answers D → S. So a received inner
//! packet from `a` to `b` belongs to the policy whose `dst` holds `a` and whose `src` (if set)
//! holds `b`: [`PolicySnapshot::lookup`]`(b, a)`, the same longest-prefix rules with the
//! addresses swapped. A packet no policy covers is refused; a catch-all policy
//! (`dst = "0.0.0.0/0"` or `"::/0"`) is how a configuration explicitly lets other traffic in.
//!
//! **Accepted chains of a policy.** Its chain, as the header names it (booster ids only:
//! parameters such as `fec:4:1` or a zstd level travel in the boosters' own headers, "passed"
//! marks are per packet). If the adaptive policy edits that policy, also every chain the
//! adaptive policy can make of it — with and without its compression and FEC boosters — since
//! the peer's adaptive policy decides from what the peer observes. When the policy's chain
//! encrypts, only chains that encrypt are accepted, whatever else applies.
//!
//! **Switching without loss** (runtime insert/remove, seed §5.3). Each gateway's policies change
//! independently (one management command per gateway), so for a while the peers disagree. Every
//! snapshot is an *epoch* that starts when it is swapped in. With a grace period `G`:
//!
//! - the receiver accepts the chains of the current epoch and of every epoch replaced less than
//!   `2G` ago;
//! - the sender boosts with the newest epoch that is at least `G` old (the first one, from the
//!   configuration, at once).
//!
//! If the same change reaches gateway A at `a` and gateway B at `b` with `|a − b| < G`, A sends
//! the new chain from `a + G`, when B (changed at `b < a + G`) already accepts it, and sends the
//! old one until `a + G < b + 2G`, while B still accepts it — and the same with A and B swapped:
//! nothing is lost. The one exception is deliberate: once a policy encrypts, the peer's last
//! plaintext packets are refused (`unencrypted`) rather than accepted under the grace period.
//! At most [`MAX_EPOCHS`] epochs are kept; more changes within `2G` shorten the grace of the
//! oldest.
//!
//! Cost per datagram: a scan of the chains the live epochs accept (before deboosting) and one
//! policy lookup per live epoch (after); usually one epoch is live. Nothing is allocated: the
//! accepted chains are precomputed when an epoch starts. Pure code: `now` comes in as an argument.

use crate::adaptive::AdaptiveConfig;
use crate::booster::BoosterSpec;
use crate::pipeline::ip_addresses;
use crate::policy::{Policy, PolicySnapshot, place};
use crate::stats::DropReason;
use crate::wire::{BoosterId, Chain, MAX_CHAIN};
use pathwise_core::time::{Duration, Instant};
use std::sync::Arc;

/// Most chains one policy accepts (its own and the adaptive policy's variants of it).
pub const MAX_ACCEPTED: usize = 8;
/// Most epochs kept for the grace period.
pub const MAX_EPOCHS: usize = 16;
/// Default grace period `G`: a chain change must reach both gateways within it.
pub const DEFAULT_GRACE: Duration = Duration::from_millis(2000);

/// Whether `chain` has the encryption booster.
pub fn encrypts(chain: &Chain) -> bool {
    chain.ids().contains(&BoosterId::ChaCha20Poly1305)
}

/// The header's view of a configured chain: booster ids, no marks.
pub fn wire_chain(specs: &[BoosterSpec]) -> Chain {
    let mut ids = [BoosterId::Null; MAX_CHAIN];
    let n = specs.len().min(MAX_CHAIN);
    for (id, s) in ids.iter_mut().zip(specs) {
        *id = s.id();
    }
    Chain::new(&ids[..n]).unwrap_or_default()
}

/// The chains one policy accepts from the peer.
#[derive(Clone, Copy, Debug)]
struct Accepted {
    chains: [Chain; MAX_ACCEPTED],
    n: usize,
    encrypts: bool,
}

impl Accepted {
    fn of(policy: &Policy, snap: &PolicySnapshot, adaptive: Option<&AdaptiveConfig>) -> Self {
        let own = wire_chain(&policy.chain);
        let mut a = Accepted {
            chains: [Chain::default(); MAX_ACCEPTED],
            n: 0,
            encrypts: encrypts(&own),
        };
        a.push(own);
        if let Some(cfg) = adaptive.filter(|c| c.enabled && c.policy == policy.name) {
            let managed: Vec<BoosterId> = [cfg.compress, cfg.fec]
                .into_iter()
                .flatten()
                .map(|s| s.id())
                .collect();
            let base: Vec<BoosterSpec> = policy
                .chain
                .iter()
                .copied()
                .filter(|s| !managed.contains(&s.id()))
                .collect();
            a.push(wire_chain(&base));
            // Both insertion orders: the adaptive policy inserts whichever it decides first.
            for order in [[cfg.compress, cfg.fec], [cfg.fec, cfg.compress]] {
                let mut c = base.clone();
                for spec in order.into_iter().flatten() {
                    match place(&c, spec, snap.meta(), snap.has_key()) {
                        Some(next) => c = next,
                        None => break,
                    }
                    a.push(wire_chain(&c));
                }
            }
        }
        a
    }

    fn push(&mut self, chain: Chain) {
        // An encrypting policy never accepts plaintext, whatever the adaptive policy could do.
        if (self.encrypts && !encrypts(&chain)) || self.contains(&chain) {
            return;
        }
        if let Some(slot) = self.chains.get_mut(self.n) {
            *slot = chain;
            self.n += 1;
        }
    }

    fn contains(&self, chain: &Chain) -> bool {
        self.chains[..self.n].contains(chain)
    }
}

/// One policy snapshot, from the moment it was swapped in, with what it accepts.
#[derive(Clone, Debug)]
struct Epoch {
    snap: Arc<PolicySnapshot>,
    /// When it was swapped in; `None` for the configuration's snapshot (in force from the start).
    since: Option<Instant>,
    /// Per policy (same index as the snapshot's).
    accepted: Vec<Accepted>,
    /// Every chain any policy accepts, for the check before deboosting.
    any: Vec<Chain>,
    /// Whether some policy accepts a chain without encryption.
    plaintext: bool,
}

impl Epoch {
    fn new(
        snap: Arc<PolicySnapshot>,
        since: Option<Instant>,
        adaptive: Option<&AdaptiveConfig>,
    ) -> Self {
        let accepted: Vec<Accepted> = snap
            .policies()
            .iter()
            .map(|p| Accepted::of(p, &snap, adaptive))
            .collect();
        let mut any: Vec<Chain> = Vec::new();
        for c in accepted.iter().flat_map(|a| &a.chains[..a.n]) {
            if !any.contains(c) {
                any.push(*c);
            }
        }
        let plaintext = any.iter().any(|c| !encrypts(c));
        Epoch {
            snap,
            since,
            accepted,
            any,
            plaintext,
        }
    }
}

/// The current policy snapshot and the recent ones still within their grace period: what the
/// sender boosts with and what the receiver accepts (see the module documentation).
/// Immutable: a change makes a new value ([`PolicyEpochs::switched`]), which the gateway swaps
/// in like a snapshot.
#[derive(Clone, Debug)]
pub struct PolicyEpochs {
    /// Oldest first; the last is the current one. Never empty.
    epochs: Vec<Epoch>,
    grace: Duration,
    adaptive: Option<AdaptiveConfig>,
}

impl PolicyEpochs {
    /// Start with `snap` (in force at once, for sending and receiving), grace period `grace`,
    /// and the adaptive policy's configuration (its variants are accepted when it is enabled).
    pub fn new(snap: Arc<PolicySnapshot>, grace: Duration, adaptive: &AdaptiveConfig) -> Self {
        let adaptive = adaptive.enabled.then(|| adaptive.clone());
        PolicyEpochs {
            epochs: vec![Epoch::new(snap, None, adaptive.as_ref())],
            grace,
            adaptive,
        }
    }

    /// `snap` swapped in at `now`; epochs past their grace are forgotten.
    pub fn switched(&self, now: Instant, snap: Arc<PolicySnapshot>) -> Self {
        let mut epochs: Vec<Epoch> = self
            .epochs
            .iter()
            .enumerate()
            .filter(|&(i, _)| self.live(i, now))
            .map(|(_, e)| e.clone())
            .collect();
        epochs.push(Epoch::new(snap, Some(now), self.adaptive.as_ref()));
        if epochs.len() > MAX_EPOCHS {
            epochs.drain(..epochs.len() - MAX_EPOCHS);
        }
        PolicyEpochs {
            epochs,
            grace: self.grace,
            adaptive: self.adaptive.clone(),
        }
    }

    /// The grace period.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// The current snapshot (what management shows and edits).
    pub fn current(&self) -> &Arc<PolicySnapshot> {
        &self.last().snap
    }

    fn last(&self) -> &Epoch {
        // `epochs` is never empty: `new` makes one and `switched` always pushes one.
        &self.epochs[self.epochs.len() - 1]
    }

    /// The snapshot to boost with at `now`: the newest at least one grace period old.
    pub fn sending(&self, now: Instant) -> &Arc<PolicySnapshot> {
        let due = |e: &&Epoch| {
            e.since
                .is_none_or(|s| s.checked_add(self.grace).is_some_and(|t| t <= now))
        };
        let e = self
            .epochs
            .iter()
            .rev()
            .find(due)
            .unwrap_or(&self.epochs[0]);
        &e.snap
    }

    /// Whether epoch `i` is still accepted at `now`: the current one, or replaced less than two
    /// grace periods ago.
    fn live(&self, i: usize, now: Instant) -> bool {
        match self.epochs.get(i + 1) {
            None => true,
            Some(next) => next.since.is_none_or(|replaced| {
                replaced
                    .checked_add(self.grace.saturating_mul(2))
                    .is_none_or(|until| now < until)
            }),
        }
    }

    fn live_epochs(&self, now: Instant) -> impl Iterator<Item = &Epoch> {
        self.epochs
            .iter()
            .enumerate()
            .rev()
            .filter(move |&(i, _)| self.live(i, now))
            .map(|(_, e)| e)
    }

    /// Before deboosting: may a datagram naming `chain` (marks ignored) be delivered at all?
    pub fn admit_chain(&self, now: Instant, chain: &Chain) -> Result<(), DropReason> {
        let chain = chain.signature();
        let (mut any_policy, mut plaintext) = (false, false);
        for e in self.live_epochs(now) {
            if e.any.contains(&chain) {
                return Ok(());
            }
            any_policy |= !e.accepted.is_empty();
            plaintext |= e.plaintext;
        }
        Err(if !any_policy {
            DropReason::NoPolicy
        } else if !plaintext && !encrypts(&chain) {
            DropReason::Unencrypted
        } else {
            DropReason::ChainNotAllowed
        })
    }

    /// After deboosting: may `packet`, which arrived through `chain`, be delivered?
    pub fn admit_packet(
        &self,
        now: Instant,
        chain: &Chain,
        packet: &[u8],
    ) -> Result<(), DropReason> {
        let chain = chain.signature();
        let (src, dst) = ip_addresses(packet).ok_or(DropReason::NotIp)?;
        // The current epoch first: outside a change it is the only one, so one lookup decides.
        let cur = self.last();
        let mut covered = false;
        if let Some(a) = cur.snap.lookup(dst, src).and_then(|i| cur.accepted.get(i)) {
            if a.contains(&chain) {
                return Ok(());
            }
            // Strict on encryption: the current policy decides, grace or not.
            if a.encrypts && !encrypts(&chain) {
                return Err(DropReason::Unencrypted);
            }
            covered = true;
        }
        for e in self.live_epochs(now).skip(1) {
            if let Some(a) = e.snap.lookup(dst, src).and_then(|i| e.accepted.get(i)) {
                if a.contains(&chain) {
                    return Ok(());
                }
                covered = true;
            }
        }
        Err(if covered {
            DropReason::ChainNotAllowed
        } else {
            DropReason::NoPolicy
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::MetaPolicy;
    use proptest::prelude::*;

    const IDS: [BoosterId; 7] = [
        BoosterId::Null,
        BoosterId::Lz4,
        BoosterId::Zstd,
        BoosterId::DumbLz4,
        BoosterId::ChaCha20Poly1305,
        BoosterId::Fec,
        BoosterId::ZstdStream,
    ];

    fn specs(chain: &[&str]) -> Vec<BoosterSpec> {
        chain.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn policy(name: &str, dst: &str, src: Option<&str>, chain: &[BoosterSpec]) -> Policy {
        Policy {
            name: name.into(),
            dst: dst.parse().unwrap(),
            src: src.map(|s| s.parse().unwrap()),
            chain: chain.to_vec(),
        }
    }

    fn snap(generation: u64, policies: Vec<Policy>) -> Arc<PolicySnapshot> {
        Arc::new(PolicySnapshot::build(generation, policies, MetaPolicy::default(), true).unwrap())
    }

    /// Gateway B's view: it sends to 10.77.1.0/24 (host A's network) through `chain`.
    fn epochs(chain: &[BoosterSpec]) -> PolicyEpochs {
        PolicyEpochs::new(
            snap(1, vec![policy("default", "10.77.1.0/24", None, chain)]),
            DEFAULT_GRACE,
            &AdaptiveConfig::default(),
        )
    }

    fn ipv4(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        p
    }

    /// Host A → host B: what gateway A sends to gateway B.
    fn a_to_b() -> Vec<u8> {
        ipv4([10, 77, 1, 2], [10, 77, 2, 2])
    }

    fn chain(ids: &[BoosterId]) -> Chain {
        Chain::new(ids).unwrap()
    }

    /// Every sequence of up to three known booster ids (400 chains, meta-policy or not: a
    /// forger is not bound by it).
    fn all_chains() -> Vec<Chain> {
        let mut out = vec![chain(&[])];
        let mut layer = vec![Vec::new()];
        for _ in 0..3 {
            layer = layer
                .iter()
                .flat_map(|c: &Vec<BoosterId>| {
                    IDS.iter().map(move |&id| {
                        let mut c = c.clone();
                        c.push(id);
                        c
                    })
                })
                .collect();
            out.extend(layer.iter().map(|c| chain(c)));
        }
        out
    }

    fn expected(policy: &Chain, got: &Chain) -> Result<(), DropReason> {
        if policy == got {
            Ok(())
        } else if encrypts(policy) && !encrypts(got) {
            Err(DropReason::Unencrypted)
        } else {
            Err(DropReason::ChainNotAllowed)
        }
    }

    #[test]
    fn every_chain_against_every_valid_policy_chain() {
        let chains = all_chains();
        assert_eq!(chains.len(), 1 + 7 + 49 + 343);
        let now = Instant::from_secs(10);
        let mut policies = 0;
        for pc in &chains {
            // Policy chains as configuration can write them (the meta-policy holds).
            let pspecs: Vec<BoosterSpec> = pc
                .ids()
                .iter()
                .map(|&id| BoosterSpec::for_id(id).unwrap())
                .collect();
            if MetaPolicy::default().check(&pspecs).is_err() {
                continue;
            }
            policies += 1;
            let e = epochs(&pspecs);
            for got in &chains {
                let want = expected(pc, got);
                assert_eq!(
                    e.admit_packet(now, got, &a_to_b()),
                    want,
                    "policy {pc:?}, datagram {got:?}"
                );
                // Before deboosting, with one policy, the same verdict.
                assert_eq!(
                    e.admit_chain(now, got),
                    want,
                    "policy {pc:?}, datagram {got:?}"
                );
                // "Passed" marks do not change the verdict.
                let mut marked = *got;
                marked.marks = 0xff;
                assert_eq!(e.admit_packet(now, &marked, &a_to_b()), want);
            }
        }
        assert!(policies > 50, "{policies} policy chains checked");
    }

    #[test]
    fn an_encrypting_policy_never_accepts_plaintext_not_even_from_the_adaptive_policy() {
        // An adaptive policy whose "compression" booster is the encryption booster: its variants
        // would drop encrypt, and must not be accepted.
        let adaptive = AdaptiveConfig {
            enabled: true,
            compress: Some(BoosterSpec::Encrypt),
            ..AdaptiveConfig::default()
        };
        let e = PolicyEpochs::new(
            snap(
                1,
                vec![policy(
                    "default",
                    "10.77.1.0/24",
                    None,
                    &specs(&["lz4", "encrypt"]),
                )],
            ),
            DEFAULT_GRACE,
            &adaptive,
        );
        let now = Instant::from_secs(1);
        for c in all_chains().iter().filter(|c| !encrypts(c)) {
            assert_eq!(e.admit_chain(now, c), Err(DropReason::Unencrypted), "{c:?}");
            assert_eq!(
                e.admit_packet(now, c, &a_to_b()),
                Err(DropReason::Unencrypted),
                "{c:?}"
            );
        }
    }

    #[test]
    fn adaptive_variants_are_accepted_for_the_adaptive_policy_only() {
        let adaptive = AdaptiveConfig {
            enabled: true,
            fec: Some("fec:4:2".parse().unwrap()),
            ..AdaptiveConfig::default()
        };
        let e = PolicyEpochs::new(
            snap(
                1,
                vec![
                    policy("default", "10.77.1.0/24", None, &specs(&["encrypt"])),
                    policy("other", "10.9.0.0/16", None, &specs(&["encrypt"])),
                ],
            ),
            DEFAULT_GRACE,
            &adaptive,
        );
        let now = Instant::from_secs(1);
        use BoosterId::*;
        let from_other = ipv4([10, 9, 0, 1], [10, 77, 2, 2]);
        for ids in [
            &[ChaCha20Poly1305][..],
            &[Lz4, ChaCha20Poly1305],
            &[ChaCha20Poly1305, Fec],
            &[Lz4, ChaCha20Poly1305, Fec],
        ] {
            assert_eq!(
                e.admit_packet(now, &chain(ids), &a_to_b()),
                Ok(()),
                "{ids:?}"
            );
            let want = if ids.len() == 1 {
                Ok(())
            } else {
                Err(DropReason::ChainNotAllowed)
            };
            assert_eq!(
                e.admit_packet(now, &chain(ids), &from_other),
                want,
                "{ids:?}"
            );
        }
        for ids in [
            &[Zstd, ChaCha20Poly1305][..],
            &[Fec, ChaCha20Poly1305],
            &[Lz4],
        ] {
            assert!(
                e.admit_packet(now, &chain(ids), &a_to_b()).is_err(),
                "{ids:?}"
            );
        }
        // Disabled: only the configured chain.
        let off = PolicyEpochs::new(
            snap(
                1,
                vec![policy(
                    "default",
                    "10.77.1.0/24",
                    None,
                    &specs(&["encrypt"]),
                )],
            ),
            DEFAULT_GRACE,
            &AdaptiveConfig::default(),
        );
        assert_eq!(
            off.admit_packet(now, &chain(&[Lz4, ChaCha20Poly1305]), &a_to_b()),
            Err(DropReason::ChainNotAllowed)
        );
    }

    #[test]
    fn policies_match_mirrored_and_uncovered_packets_are_refused() {
        let e = PolicyEpochs::new(
            snap(
                1,
                vec![
                    // B sends to A's network from B's: it accepts A's network → B's.
                    policy("a", "10.77.1.0/24", Some("10.77.2.0/24"), &specs(&["lz4"])),
                    policy("v6", "fd00:1::/64", None, &specs(&["null"])),
                ],
            ),
            DEFAULT_GRACE,
            &AdaptiveConfig::default(),
        );
        let now = Instant::from_secs(1);
        let lz4 = chain(&[BoosterId::Lz4]);
        assert_eq!(e.admit_packet(now, &lz4, &a_to_b()), Ok(()));
        // The policy's own direction (B's network → A's) is not what the peer sends.
        assert_eq!(
            e.admit_packet(now, &lz4, &ipv4([10, 77, 2, 2], [10, 77, 1, 2])),
            Err(DropReason::NoPolicy)
        );
        // From A's network but to somewhere else than B's: the source prefix does not hold.
        assert_eq!(
            e.admit_packet(now, &lz4, &ipv4([10, 77, 1, 2], [192, 0, 2, 1])),
            Err(DropReason::NoPolicy)
        );
        let mut v6 = vec![0u8; 40];
        v6[0] = 0x60;
        v6[8..24].copy_from_slice(&"fd00:1::5".parse::<std::net::Ipv6Addr>().unwrap().octets());
        v6[24..40].copy_from_slice(&"fd00:2::5".parse::<std::net::Ipv6Addr>().unwrap().octets());
        assert_eq!(e.admit_packet(now, &chain(&[BoosterId::Null]), &v6), Ok(()));
        assert_eq!(
            e.admit_packet(now, &lz4, &v6),
            Err(DropReason::ChainNotAllowed)
        );
        assert_eq!(
            e.admit_packet(now, &lz4, b"\x00garbage"),
            Err(DropReason::NotIp)
        );
        // A catch-all policy is the explicit way to let other traffic in.
        let all = PolicyEpochs::new(
            snap(1, vec![policy("any", "0.0.0.0/0", None, &[])]),
            DEFAULT_GRACE,
            &AdaptiveConfig::default(),
        );
        assert_eq!(
            all.admit_packet(now, &chain(&[]), &ipv4([192, 0, 2, 9], [198, 51, 100, 1])),
            Ok(())
        );
        // No policy at all: nothing is accepted, and the reason says so.
        let none = PolicyEpochs::new(
            Arc::new(PolicySnapshot::empty(MetaPolicy::default(), true)),
            DEFAULT_GRACE,
            &AdaptiveConfig::default(),
        );
        assert_eq!(
            none.admit_chain(now, &chain(&[])),
            Err(DropReason::NoPolicy)
        );
        assert_eq!(
            none.admit_packet(now, &chain(&[]), &a_to_b()),
            Err(DropReason::NoPolicy)
        );
    }

    #[test]
    fn the_previous_chain_is_accepted_for_two_grace_periods_and_sent_for_one() {
        use BoosterId::*;
        let g = Duration::from_secs(2);
        let old = specs(&["lz4", "encrypt"]);
        let new = specs(&["lz4", "encrypt", "fec:4:1"]);
        let (old_c, new_c) = (wire_chain(&old), wire_chain(&new));
        let s1 = snap(1, vec![policy("default", "10.77.1.0/24", None, &old)]);
        let s2 = snap(2, vec![policy("default", "10.77.1.0/24", None, &new)]);
        let e1 = PolicyEpochs::new(s1.clone(), g, &AdaptiveConfig::default());
        // The configuration's snapshot is sent at once.
        assert!(Arc::ptr_eq(e1.sending(Instant::ZERO), &s1));
        let t = Instant::from_secs(100);
        let e2 = e1.switched(t, s2.clone());
        assert!(Arc::ptr_eq(e2.current(), &s2));
        let at = |ms: u64| t + Duration::from_millis(ms);
        // Sending: the old chain for one grace period, then the new one.
        assert!(Arc::ptr_eq(e2.sending(at(0)), &s1));
        assert!(Arc::ptr_eq(e2.sending(at(1999)), &s1));
        assert!(Arc::ptr_eq(e2.sending(at(2000)), &s2));
        // Receiving: the new chain at once, the old one until two grace periods have passed.
        for ms in [0, 1999, 2000, 3999] {
            assert_eq!(e2.admit_packet(at(ms), &new_c, &a_to_b()), Ok(()), "{ms}");
            assert_eq!(e2.admit_packet(at(ms), &old_c, &a_to_b()), Ok(()), "{ms}");
            assert_eq!(e2.admit_chain(at(ms), &old_c), Ok(()), "{ms}");
        }
        for ms in [4000, 60_000] {
            assert_eq!(e2.admit_packet(at(ms), &new_c, &a_to_b()), Ok(()), "{ms}");
            assert_eq!(
                e2.admit_packet(at(ms), &old_c, &a_to_b()),
                Err(DropReason::ChainNotAllowed),
                "{ms}"
            );
            assert_eq!(
                e2.admit_chain(at(ms), &old_c),
                Err(DropReason::ChainNotAllowed)
            );
        }
        // A later switch forgets epochs past their grace.
        let e3 = e2.switched(at(10_000), s1.clone());
        assert_eq!(e3.epochs.len(), 2);
        assert!(Arc::ptr_eq(e3.sending(at(10_000)), &s2));
        // Inserting encryption: the peer's last plaintext is refused, grace or not.
        let plain = snap(
            1,
            vec![policy("default", "10.77.1.0/24", None, &specs(&["lz4"]))],
        );
        let e4 = PolicyEpochs::new(plain, g, &AdaptiveConfig::default()).switched(t, s1);
        assert_eq!(
            e4.admit_packet(at(1), &chain(&[Lz4]), &a_to_b()),
            Err(DropReason::Unencrypted)
        );
        // Removing it: the peer's last encrypted packets are accepted during the grace.
        let e5 = e4.switched(
            at(5000),
            snap(3, vec![policy("default", "10.77.1.0/24", None, &[])]),
        );
        assert_eq!(e5.admit_packet(at(5001), &old_c, &a_to_b()), Ok(()));
        assert_eq!(e5.admit_packet(at(5001), &chain(&[]), &a_to_b()), Ok(()));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Gateways A and B get the same change at a and b, |a - b| < G, in either order. At
        /// every millisecond, what each sends is accepted by the other.
        #[test]
        fn two_gateways_switching_within_the_grace_period_lose_nothing(
            a_ms in 0u64..500,
            b_ms in 0u64..500,
            which in 0usize..3,
        ) {
            switch_both(a_ms, b_ms, which);
        }
    }

    fn switch_both(a_ms: u64, b_ms: u64, which: usize) {
        let g = Duration::from_millis(500);
        let (old, new) = [
            (specs(&["lz4", "encrypt"]), specs(&["encrypt", "fec:4:1"])),
            (specs(&["lz4"]), specs(&[])),
            (specs(&["encrypt"]), specs(&["lz4", "encrypt", "fec:8:2"])),
        ][which]
            .clone();
        let side = |dst: &str, chain: &[BoosterSpec], generation| {
            snap(generation, vec![policy("default", dst, None, chain)])
        };
        {
            let t0 = Instant::from_secs(50);
            let ga =
                PolicyEpochs::new(side("10.77.2.0/24", &old, 1), g, &AdaptiveConfig::default())
                    .switched(
                        t0 + Duration::from_millis(a_ms),
                        side("10.77.2.0/24", &new, 2),
                    );
            let gb =
                PolicyEpochs::new(side("10.77.1.0/24", &old, 1), g, &AdaptiveConfig::default())
                    .switched(
                        t0 + Duration::from_millis(b_ms),
                        side("10.77.1.0/24", &new, 2),
                    );
            // Before its own switch, a gateway has only the old epoch.
            let ga_before =
                PolicyEpochs::new(side("10.77.2.0/24", &old, 1), g, &AdaptiveConfig::default());
            let gb_before =
                PolicyEpochs::new(side("10.77.1.0/24", &old, 1), g, &AdaptiveConfig::default());
            for ms in 0..3000u64 {
                let now = t0 + Duration::from_millis(ms);
                let a = if ms >= a_ms { &ga } else { &ga_before };
                let b = if ms >= b_ms { &gb } else { &gb_before };
                let a_sends = wire_chain(&a.sending(now).policies()[0].chain);
                let b_sends = wire_chain(&b.sending(now).policies()[0].chain);
                assert_eq!(
                    b.admit_packet(now, &a_sends, &a_to_b()),
                    Ok(()),
                    "{a_ms} {b_ms} at {ms}"
                );
                let b_to_a = ipv4([10, 77, 2, 2], [10, 77, 1, 2]);
                assert_eq!(
                    a.admit_packet(now, &b_sends, &b_to_a),
                    Ok(()),
                    "{a_ms} {b_ms} at {ms}"
                );
            }
        }
    }
}
