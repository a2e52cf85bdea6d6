//! Policies: which packets get which booster chain, and the meta-policy every chain must obey.
//!
//! The seed's prototype boosted "all packets destined to (or sourced from) a specific IP
//! address" (seed §2.2, Fig. 3) and left sophisticated policy for later (§1.1, §7), including
//! *meta-policies* such as "compression before encryption" because the two do not commute
//! (§1.1). Here a [`Policy`] maps a destination prefix (and optionally a source prefix) to an
//! ordered chain; lookups are longest-prefix matches on the destination
//! ([`pathwise_core::fib::Fib`]), then the most specific matching source. A [`MetaPolicy`] is a
//! list of [`Rule`]s checked whenever a chain is built: a violating chain is refused with an
//! error naming the rule, so it never reaches the datapath.
//!
//! A [`PolicySnapshot`] is immutable. Insertion and removal build a new snapshot from the old
//! one's policies and the driver swaps it in atomically (the gateway uses `arc-swap`); the
//! datapath never waits (ARCHITECTURE.md, "Read-mostly services").

use crate::booster::{BoosterSpec, Class, SpecError};
use crate::wire::MAX_CHAIN;
use ipnet::IpNet;
use pathwise_core::fib::Fib;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;
use thiserror::Error;

/// One policy entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Name used by management commands.
    pub name: String,
    /// Destination prefix.
    pub dst: IpNet,
    /// Source prefix; any source when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<IpNet>,
    /// Boosters in boost order (the far side deboosts in reverse).
    #[serde(default)]
    pub chain: Vec<BoosterSpec>,
}

/// A meta-policy rule over booster classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// If both classes are in a chain, every booster of the first comes before every booster of
    /// the second (seed §1.1: compress, then encrypt).
    Before(Class, Class),
    /// At most one booster of the class in a chain.
    AtMostOne(Class),
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Before(a, b) => write!(f, "{} before {}", a.name(), b.name()),
            Rule::AtMostOne(c) => write!(f, "at most one {}", c.name()),
        }
    }
}

impl FromStr for Rule {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let words: Vec<&str> = s.split_whitespace().collect();
        match words.as_slice() {
            [a, "before", b] => Ok(Rule::Before(a.parse()?, b.parse()?)),
            ["at", "most", "one", c] => Ok(Rule::AtMostOne(c.parse()?)),
            _ => Err(SpecError::BadParameter {
                booster: "meta-policy",
                reason: format!(
                    "rule {s:?} is neither \"CLASS before CLASS\" nor \"at most one CLASS\""
                ),
            }),
        }
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// The declared rules every chain must satisfy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MetaPolicy(pub Vec<Rule>);

impl Default for MetaPolicy {
    /// Compression before encryption (encrypted data does not compress, seed §1.1), and at most
    /// one booster of each kind of transform.
    fn default() -> Self {
        MetaPolicy(vec![
            Rule::Before(Class::Compression, Class::Encryption),
            Rule::AtMostOne(Class::Compression),
            Rule::AtMostOne(Class::Encryption),
            Rule::AtMostOne(Class::Fec),
        ])
    }
}

impl MetaPolicy {
    /// Check a chain; the first violated rule and where.
    pub fn check(&self, chain: &[BoosterSpec]) -> Result<(), (Rule, String)> {
        for &rule in &self.0 {
            match rule {
                Rule::Before(a, b) => {
                    let last_a = chain.iter().rposition(|s| s.class() == a);
                    let first_b = chain.iter().position(|s| s.class() == b);
                    if let (Some(i), Some(j)) = (last_a, first_b)
                        && i > j
                    {
                        return Err((
                            rule,
                            format!(
                                "{} (stage {i}) comes after {} (stage {j})",
                                chain[i], chain[j]
                            ),
                        ));
                    }
                }
                Rule::AtMostOne(c) => {
                    let n = chain.iter().filter(|s| s.class() == c).count();
                    if n > 1 {
                        return Err((rule, format!("{n} {} boosters", c.name())));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A policy change that cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PolicyError {
    /// The chain violates a meta-policy rule.
    #[error("chain [{chain}] of policy {policy:?} violates meta-policy rule \"{rule}\": {detail}")]
    MetaPolicy {
        /// Policy name.
        policy: String,
        /// The chain, comma-separated.
        chain: String,
        /// The rule.
        rule: Rule,
        /// What breaks it.
        detail: String,
    },
    /// Longer than the encapsulation header can name.
    #[error("chain of policy {policy:?} has {len} boosters (at most {MAX_CHAIN})")]
    ChainTooLong {
        /// Policy name.
        policy: String,
        /// Its length.
        len: usize,
    },
    /// Two policies with one name.
    #[error("two policies are named {0:?}")]
    DuplicateName(String),
    /// Two policies for the same source and destination.
    #[error("policies {0:?} and {1:?} match the same source and destination prefixes")]
    DuplicateMatch(String, String),
    /// No policy of that name.
    #[error("no policy named {0:?}")]
    NoSuchPolicy(String),
    /// The booster is not in the chain.
    #[error("policy {policy:?} has no {booster} booster (chain: [{chain}])")]
    NotInChain {
        /// Policy name.
        policy: String,
        /// Booster asked for.
        booster: String,
        /// The chain.
        chain: String,
    },
    /// Position past the end of the chain.
    #[error("position {position} is past the end of policy {policy:?}'s chain of {len}")]
    BadPosition {
        /// Policy name.
        policy: String,
        /// Asked position.
        position: usize,
        /// Chain length.
        len: usize,
    },
    /// Encryption without a key.
    #[error("policy {0:?} uses encrypt but the gateway has no pre-shared key")]
    NoKey(String),
}

/// Format a chain as `a, b, c`.
pub fn chain_text(chain: &[BoosterSpec]) -> String {
    chain
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// An immutable, validated policy table.
#[derive(Debug)]
pub struct PolicySnapshot {
    generation: u64,
    policies: Vec<Policy>,
    meta: MetaPolicy,
    has_key: bool,
    /// Destination prefix → (source prefix, policy index), most specific source first.
    table: Fib<Vec<(Option<IpNet>, usize)>>,
}

impl PolicySnapshot {
    /// Validate `policies` against `meta` and build the lookup table. `has_key`: whether the
    /// gateway can encrypt.
    pub fn build(
        generation: u64,
        policies: Vec<Policy>,
        meta: MetaPolicy,
        has_key: bool,
    ) -> Result<Self, PolicyError> {
        let mut table: Fib<Vec<(Option<IpNet>, usize)>> = Fib::new();
        for (i, p) in policies.iter().enumerate() {
            if policies[..i].iter().any(|q| q.name == p.name) {
                return Err(PolicyError::DuplicateName(p.name.clone()));
            }
            validate_chain(&p.name, &p.chain, &meta, has_key)?;
            let src = p.src.map(|s| s.trunc());
            let dst = p.dst.trunc();
            let mut entries = table.get(&dst).cloned().unwrap_or_default();
            if let Some(&(_, j)) = entries.iter().find(|(s, _)| *s == src) {
                return Err(PolicyError::DuplicateMatch(
                    policies[j].name.clone(),
                    p.name.clone(),
                ));
            }
            entries.push((src, i));
            // Most specific source first; "any source" last.
            entries.sort_by_key(|(s, _)| {
                std::cmp::Reverse(s.map_or(-1, |s| i16::from(s.prefix_len())))
            });
            table.insert(dst, entries);
        }
        Ok(PolicySnapshot {
            generation,
            policies,
            meta,
            has_key,
            table,
        })
    }

    /// An empty table (every packet tunnelled unboosted).
    pub fn empty(meta: MetaPolicy, has_key: bool) -> Self {
        PolicySnapshot {
            generation: 0,
            policies: Vec::new(),
            meta,
            has_key,
            table: Fib::new(),
        }
    }

    /// Monotonic version number.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The policies.
    pub fn policies(&self) -> &[Policy] {
        &self.policies
    }

    /// The meta-policy.
    pub fn meta(&self) -> &MetaPolicy {
        &self.meta
    }

    /// Whether the gateway holds a key (chains may encrypt).
    pub fn has_key(&self) -> bool {
        self.has_key
    }

    /// The policy for a packet from `src` to `dst` (its index in [`Self::policies`]).
    pub fn lookup(&self, src: IpAddr, dst: IpAddr) -> Option<usize> {
        let (_, entries) = self.table.lookup(dst)?;
        entries
            .iter()
            .find(|(s, _)| s.is_none_or(|s| s.contains(&src)))
            .map(|&(_, i)| i)
    }

    fn find(&self, name: &str) -> Result<usize, PolicyError> {
        self.policies
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| PolicyError::NoSuchPolicy(name.to_string()))
    }

    /// A new snapshot with `spec` inserted into policy `name`'s chain at `position` or, when
    /// `None`, at the last position the meta-policy allows.
    pub fn with_inserted(
        &self,
        name: &str,
        spec: BoosterSpec,
        position: Option<usize>,
    ) -> Result<PolicySnapshot, PolicyError> {
        let i = self.find(name)?;
        let chain = &self.policies[i].chain;
        let try_at = |pos: usize| {
            let mut c = chain.clone();
            c.insert(pos, spec);
            validate_chain(name, &c, &self.meta, self.has_key).map(|_| c)
        };
        let new_chain = match position {
            Some(pos) if pos > chain.len() => {
                return Err(PolicyError::BadPosition {
                    policy: name.to_string(),
                    position: pos,
                    len: chain.len(),
                });
            }
            Some(pos) => try_at(pos)?,
            None => match place(chain, spec, &self.meta, self.has_key) {
                Some(c) => c,
                None => try_at(chain.len())?,
            },
        };
        let mut policies = self.policies.clone();
        policies[i].chain = new_chain;
        PolicySnapshot::build(
            self.generation + 1,
            policies,
            self.meta.clone(),
            self.has_key,
        )
    }

    /// A new snapshot with the booster of `spec`'s kind removed from policy `name`'s chain
    /// (parameters are ignored: `fec` removes `fec:8:2`).
    pub fn with_removed(
        &self,
        name: &str,
        spec: BoosterSpec,
    ) -> Result<PolicySnapshot, PolicyError> {
        let i = self.find(name)?;
        let chain = &self.policies[i].chain;
        let pos = chain
            .iter()
            .position(|s| s.id() == spec.id())
            .ok_or_else(|| PolicyError::NotInChain {
                policy: name.to_string(),
                booster: spec.to_string(),
                chain: chain_text(chain),
            })?;
        let mut policies = self.policies.clone();
        policies[i].chain.remove(pos);
        PolicySnapshot::build(
            self.generation + 1,
            policies,
            self.meta.clone(),
            self.has_key,
        )
    }

    /// A new snapshot with policy `p` added, or replacing the one of the same name.
    pub fn with_policy(&self, p: Policy) -> Result<PolicySnapshot, PolicyError> {
        let mut policies = self.policies.clone();
        match policies.iter().position(|q| q.name == p.name) {
            Some(i) => policies[i] = p,
            None => policies.push(p),
        }
        PolicySnapshot::build(
            self.generation + 1,
            policies,
            self.meta.clone(),
            self.has_key,
        )
    }

    /// A new snapshot without policy `name`.
    pub fn without_policy(&self, name: &str) -> Result<PolicySnapshot, PolicyError> {
        let i = self.find(name)?;
        let mut policies = self.policies.clone();
        policies.remove(i);
        PolicySnapshot::build(
            self.generation + 1,
            policies,
            self.meta.clone(),
            self.has_key,
        )
    }
}

/// `chain` with `spec` inserted at the last position the meta-policy allows (where
/// [`PolicySnapshot::with_inserted`] puts it without a position); `None` if there is none.
pub fn place(
    chain: &[BoosterSpec],
    spec: BoosterSpec,
    meta: &MetaPolicy,
    has_key: bool,
) -> Option<Vec<BoosterSpec>> {
    (0..=chain.len()).rev().find_map(|pos| {
        let mut c = chain.to_vec();
        c.insert(pos, spec);
        validate_chain("", &c, meta, has_key).ok().map(|_| c)
    })
}

fn validate_chain(
    name: &str,
    chain: &[BoosterSpec],
    meta: &MetaPolicy,
    has_key: bool,
) -> Result<(), PolicyError> {
    if chain.len() > MAX_CHAIN {
        return Err(PolicyError::ChainTooLong {
            policy: name.to_string(),
            len: chain.len(),
        });
    }
    if !has_key && chain.contains(&BoosterSpec::Encrypt) {
        return Err(PolicyError::NoKey(name.to_string()));
    }
    meta.check(chain)
        .map_err(|(rule, detail)| PolicyError::MetaPolicy {
            policy: name.to_string(),
            chain: chain_text(chain),
            rule,
            detail,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> BoosterSpec {
        s.parse().unwrap()
    }

    fn policy(name: &str, dst: &str, src: Option<&str>, chain: &[&str]) -> Policy {
        Policy {
            name: name.into(),
            dst: dst.parse().unwrap(),
            src: src.map(|s| s.parse().unwrap()),
            chain: chain.iter().map(|s| spec(s)).collect(),
        }
    }

    #[test]
    fn lookup_longest_destination_then_most_specific_source() {
        let snap = PolicySnapshot::build(
            1,
            vec![
                policy("all", "0.0.0.0/0", None, &["null"]),
                policy("net", "10.2.0.0/16", None, &["lz4"]),
                policy(
                    "net-from-a",
                    "10.2.0.0/16",
                    Some("10.1.1.0/24"),
                    &["encrypt"],
                ),
                policy("v6", "fd00::/8", None, &["fec"]),
            ],
            MetaPolicy::default(),
            true,
        )
        .unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(snap.lookup(ip("10.1.1.5"), ip("10.2.3.4")), Some(2));
        assert_eq!(snap.lookup(ip("10.1.9.5"), ip("10.2.3.4")), Some(1));
        assert_eq!(snap.lookup(ip("10.1.9.5"), ip("192.0.2.1")), Some(0));
        assert_eq!(snap.lookup(ip("fd00::1"), ip("fd00::2")), Some(3));
        assert_eq!(snap.lookup(ip("fd00::1"), ip("2001:db8::2")), None);
    }

    #[test]
    fn meta_policy_refuses_encrypt_then_compress_with_a_clear_error() {
        let err = PolicySnapshot::build(
            1,
            vec![policy("p", "10.0.0.0/8", None, &["encrypt", "lz4"])],
            MetaPolicy::default(),
            true,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "chain [encrypt, lz4] of policy \"p\" violates meta-policy rule \
             \"compression before encryption\": lz4 (stage 1) comes after encrypt (stage 0)"
        );
        let two = PolicySnapshot::build(
            1,
            vec![policy("p", "10.0.0.0/8", None, &["lz4", "zstd"])],
            MetaPolicy::default(),
            true,
        );
        assert!(matches!(
            two,
            Err(PolicyError::MetaPolicy {
                rule: Rule::AtMostOne(Class::Compression),
                ..
            })
        ));
    }

    #[test]
    fn insert_finds_a_legal_position_and_remove_by_kind() {
        let snap = PolicySnapshot::build(
            1,
            vec![policy("p", "10.0.0.0/8", None, &["encrypt", "fec:4:1"])],
            MetaPolicy::default(),
            true,
        )
        .unwrap();
        let s2 = snap.with_inserted("p", spec("lz4"), None).unwrap();
        assert_eq!(chain_text(&s2.policies()[0].chain), "lz4, encrypt, fec:4:1");
        assert_eq!(s2.generation(), 2);
        assert!(matches!(
            snap.with_inserted("p", spec("lz4"), Some(1)),
            Err(PolicyError::MetaPolicy { .. })
        ));
        let s3 = s2.with_removed("p", spec("fec")).unwrap();
        assert_eq!(chain_text(&s3.policies()[0].chain), "lz4, encrypt");
        assert!(matches!(
            s3.with_removed("p", spec("fec")),
            Err(PolicyError::NotInChain { .. })
        ));
        assert!(matches!(
            s3.with_removed("q", spec("fec")),
            Err(PolicyError::NoSuchPolicy(_))
        ));
        assert!(matches!(
            PolicySnapshot::build(
                1,
                vec![policy("p", "10.0.0.0/8", None, &["encrypt"])],
                MetaPolicy::default(),
                false
            ),
            Err(PolicyError::NoKey(_))
        ));
    }

    #[test]
    fn rules_parse_and_print() {
        for r in [
            "compression before encryption",
            "at most one fec",
            "fec before encryption",
        ] {
            assert_eq!(r.parse::<Rule>().unwrap().to_string(), r);
        }
        assert!("encryption after compression".parse::<Rule>().is_err());
    }
}
