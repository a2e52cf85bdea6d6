//! Source and external networks in one longest-prefix-match table (seed §4.5.2, §3.2.3).
//!
//! Following the seed's routing abstraction, a prefix maps to the routers that are its exits: the
//! router a source network is attached to (AS distance 0), or the border routers an external
//! network is known at (with their AS distance). Each prefix is stored once, however many exits
//! it has; the exits of all prefixes sit in flat arrays.
//!
//! The table is split into shards (IPv4 by first octet, IPv6 by the first 16 bits; shorter
//! prefixes in one extra shard per family), each a [`Fib`] behind an `Arc`. A change copies only
//! the shards it touches, so adding a prefix to a table of a million costs a few thousand
//! entries of copying, and snapshots share every untouched shard.

use super::routers::RouterIdx;
use ipnet::IpNet;
use pathwise_core::fib::Fib;
use std::net::IpAddr;
use std::sync::Arc;

/// One exit of a prefix: 12 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Exit {
    pub router: RouterIdx,
    pub as_number: u32,
    pub as_distance: u16,
    pub nic: u8,
    /// A source network (attached to the router) rather than an external one.
    pub source: bool,
}

/// Where a prefix's exits sit in its shard's exit array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: u32,
    len: u16,
}

#[derive(Clone, Debug, Default)]
struct Shard {
    fib: Fib<Span>,
    exits: Vec<Exit>,
    /// Exits no span points at any more (compacted away when they outnumber the live ones).
    dead: usize,
}

impl Shard {
    fn exits_of(&self, s: Span) -> &[Exit] {
        let start = s.start as usize;
        self.exits
            .get(start..start + usize::from(s.len))
            .unwrap_or(&[])
    }

    /// Replace the exits of `prefix` (remove it when `exits` is empty).
    fn set(&mut self, prefix: IpNet, exits: &[Exit]) {
        let old = self.fib.get(&prefix).copied();
        if let Some(s) = old {
            self.dead += usize::from(s.len);
        }
        if exits.is_empty() {
            self.fib.remove(&prefix);
        } else {
            let span = Span {
                start: self.exits.len() as u32,
                len: exits.len() as u16,
            };
            self.exits.extend_from_slice(exits);
            self.fib.insert(prefix, span);
        }
        let live = self.exits.len() - self.dead;
        if self.dead > 64 && self.dead > live {
            self.compact();
        }
    }

    fn compact(&mut self) {
        let mut fib = Fib::new();
        let mut exits = Vec::with_capacity(self.exits.len() - self.dead);
        for (p, s) in self.fib.iter() {
            let start = exits.len() as u32;
            exits.extend_from_slice(self.exits_of(*s));
            fib.insert(p, Span { start, len: s.len });
        }
        exits.shrink_to_fit();
        *self = Shard {
            fib,
            exits,
            dead: 0,
        };
    }
}

/// Which shard a prefix lives in: `(family, key)`; `key` is `None` for the short-prefix shard.
fn shard_key(p: &IpNet) -> (bool, Option<u16>) {
    match p {
        IpNet::V4(n) => (
            false,
            (n.prefix_len() >= 8).then(|| u16::from(n.network().octets()[0])),
        ),
        IpNet::V6(n) => (
            true,
            (n.prefix_len() >= 16).then(|| n.network().segments()[0]),
        ),
    }
}

/// The prefix table.
#[derive(Clone, Debug, Default)]
pub(crate) struct PrefixTable {
    /// 256 first-octet shards, then the short-prefix shard.
    v4: Vec<Option<Arc<Shard>>>,
    /// Sorted by the first 16 bits.
    v6: Vec<(u16, Arc<Shard>)>,
    v6_short: Option<Arc<Shard>>,
    prefixes: usize,
}

impl PrefixTable {
    /// A table from `(prefix, exits)` pairs with distinct, truncated prefixes.
    pub fn from_entries(entries: impl IntoIterator<Item = (IpNet, Vec<Exit>)>) -> PrefixTable {
        let mut t = PrefixTable::default();
        let mut v4: Vec<Option<Shard>> = vec![None; 257];
        let mut v6: std::collections::BTreeMap<Option<u16>, Shard> = Default::default();
        for (p, exits) in entries {
            if exits.is_empty() {
                continue;
            }
            let shard = match shard_key(&p) {
                (false, k) => v4[k.map_or(256, usize::from)].get_or_insert_with(Shard::default),
                (true, k) => v6.entry(k).or_default(),
            };
            if shard.fib.get(&p).is_none() {
                t.prefixes += 1;
            }
            shard.set(p, &exits);
        }
        t.v4 = v4
            .into_iter()
            .map(|s| {
                s.map(|mut s| {
                    s.compact();
                    Arc::new(s)
                })
            })
            .collect();
        for (k, mut s) in v6 {
            s.compact();
            match k {
                Some(k) => t.v6.push((k, Arc::new(s))),
                None => t.v6_short = Some(Arc::new(s)),
            }
        }
        t
    }

    /// Number of prefixes.
    pub fn len(&self) -> usize {
        self.prefixes
    }

    /// The most specific prefix containing `addr`, and its exits.
    #[inline]
    pub fn lookup(&self, addr: IpAddr) -> Option<(IpNet, &[Exit])> {
        let (long, short) = match addr {
            IpAddr::V4(a) => (self.v4.get(usize::from(a.octets()[0])), self.v4.get(256)),
            IpAddr::V6(a) => {
                let key = a.segments()[0];
                let long = self
                    .v6
                    .binary_search_by_key(&key, |(k, _)| *k)
                    .ok()
                    .and_then(|i| self.v6.get(i))
                    .map(|(_, s)| s);
                return Self::lpm(long, addr).or_else(|| Self::lpm(self.v6_short.as_ref(), addr));
            }
        };
        Self::lpm(long.and_then(Option::as_ref), addr)
            .or_else(|| Self::lpm(short.and_then(Option::as_ref), addr))
    }

    #[inline]
    fn lpm(shard: Option<&Arc<Shard>>, addr: IpAddr) -> Option<(IpNet, &[Exit])> {
        let shard = shard?;
        let (p, span) = shard.fib.lookup(addr)?;
        Some((p, shard.exits_of(*span)))
    }

    /// The exits of exactly `prefix`.
    pub fn get(&self, prefix: &IpNet) -> Option<&[Exit]> {
        let shard = self.shard(prefix)?;
        shard.fib.get(prefix).map(|s| shard.exits_of(*s))
    }

    fn shard(&self, p: &IpNet) -> Option<&Arc<Shard>> {
        match shard_key(p) {
            (false, k) => self.v4.get(k.map_or(256, usize::from))?.as_ref(),
            (true, None) => self.v6_short.as_ref(),
            (true, Some(k)) => self
                .v6
                .binary_search_by_key(&k, |(k, _)| *k)
                .ok()
                .map(|i| &self.v6[i].1),
        }
    }

    fn shard_mut(&mut self, p: &IpNet) -> &mut Shard {
        let slot: &mut Option<Arc<Shard>> = match shard_key(p) {
            (false, k) => {
                if self.v4.len() < 257 {
                    self.v4.resize(257, None);
                }
                &mut self.v4[k.map_or(256, usize::from)]
            }
            (true, None) => &mut self.v6_short,
            (true, Some(k)) => {
                let i = match self.v6.binary_search_by_key(&k, |(k, _)| *k) {
                    Ok(i) => i,
                    Err(i) => {
                        self.v6.insert(i, (k, Arc::default()));
                        i
                    }
                };
                return Arc::make_mut(&mut self.v6[i].1);
            }
        };
        Arc::make_mut(slot.get_or_insert_with(Arc::default))
    }

    /// Replace the exits of `prefix` (truncated); an empty list removes it. Copies the shard
    /// when another snapshot shares it.
    pub fn set(&mut self, prefix: IpNet, exits: &[Exit]) {
        let existed = self.get(&prefix).is_some();
        if !existed && exits.is_empty() {
            return;
        }
        self.shard_mut(&prefix).set(prefix, exits);
        match (existed, exits.is_empty()) {
            (false, false) => self.prefixes += 1,
            (true, true) => self.prefixes -= 1,
            _ => {}
        }
    }

    /// Every prefix and its exits, IPv4 first.
    pub fn iter(&self) -> impl Iterator<Item = (IpNet, &[Exit])> {
        let v4 = self.v4.iter().flatten();
        let v6 = self.v6.iter().map(|(_, s)| s).chain(self.v6_short.iter());
        v4.chain(v6)
            .flat_map(|s| s.fib.iter().map(move |(p, span)| (p, s.exits_of(*span))))
    }

    /// Whether `self` and `other` share the shard holding `prefix` (tests: unchanged shards are
    /// not copied).
    #[cfg(test)]
    pub fn shares_shard_with(&self, other: &PrefixTable, prefix: &IpNet) -> bool {
        match (self.shard(prefix), other.shard(prefix)) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}
