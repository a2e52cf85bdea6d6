//! Source and external networks in one longest-prefix-match table (seed §4.5.2, §3.2.3).
//!
//! Following the seed's routing abstraction, a prefix maps to the routers that are its exits: the
//! router a source network is attached to (AS distance 0), or the border routers an external
//! network is known at (with their AS distance). Each prefix is stored once, however many exits
//! it has; the exits of all prefixes sit in flat arrays.
//!
//! The table is split into shards (IPv4 by first octet, IPv6 by the first 16 bits; shorter
//! prefixes in one extra shard per family), each behind an `Arc`. A shard holds its prefixes
//! sorted (exact match, iteration), their exits, and a lookup index ([`super::lpm`]: DIR-24-8
//! for IPv4, flattened ranges for IPv6). A change copies only the shards it touches and rebuilds
//! their index when the batch is sealed ([`PrefixTable::seal`]), so adding a prefix to a table
//! of a million costs one shard's worth of work, and snapshots share every untouched shard.

use super::lpm::{Block, Dir24, MAX_LEAVES, Octet, Ranges};
use super::routers::RouterIdx;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
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

/// Where an address's most specific prefix sits: a shard slot (see [`PrefixTable::slots`])
/// and `leaf + 1` in that shard, 0 when no prefix contains the address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hit {
    pub slot: u32,
    pub leaf: u32,
}

impl Hit {
    pub const NONE: Hit = Hit { slot: 0, leaf: 0 };

    /// Whether [`leaf`](Self::leaf) names a level-1 run of a DIR-24-8 shard ([`RUN`]).
    #[inline(always)]
    pub fn is_run(self) -> bool {
        self.leaf & RUN != 0
    }
}

/// Set in [`Hit::leaf`] by [`PrefixTable::runs_v4_block`]: the rest is the index of the
/// address's level-1 run in a DIR-24-8 shard, not `leaf + 1` (leaves stay below
/// [`MAX_LEAVES`], so the bit is free).
pub(crate) const RUN: u32 = 1 << 31;

/// The slot of the IPv6 prefixes shorter than /16; the IPv4 shards are slots 0–256.
const SLOT_V6_SHORT: u32 = 257;
/// The slot of the first IPv6 shard (`v6[0]`).
const SLOT_V6: u32 = 258;

enum ShardRef<'a> {
    V4(&'a Shard<u32>),
    V6(&'a Shard<u128>),
}

/// One prefix of a shard and where its exits sit (12 bytes for IPv4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Leaf<A> {
    addr: A,
    start: u32,
    exits: u16,
    len: u8,
}

/// The lookup index of a shard.
#[derive(Clone, Debug)]
enum Index {
    Dir24(Dir24),
    Octet(Octet),
    Ranges(Ranges),
}

#[derive(Clone, Debug)]
struct Shard<A> {
    /// Sorted by (address, length).
    leaves: Vec<Leaf<A>>,
    exits: Vec<Exit>,
    /// Exits no leaf points at any more (compacted away by `seal`).
    dead: usize,
    /// Shared between copies of the shard until `seal` rebuilds it.
    index: Arc<Index>,
    /// Changed since the index was built.
    dirty: bool,
}

impl<A: Copy + Ord> Shard<A> {
    fn new() -> Self {
        Shard {
            leaves: Vec::new(),
            exits: Vec::new(),
            dead: 0,
            index: Arc::new(Index::Ranges(Ranges::default())),
            dirty: true,
        }
    }

    fn find(&self, addr: A, len: u8) -> Result<usize, usize> {
        self.leaves
            .binary_search_by(|l| (l.addr, l.len).cmp(&(addr, len)))
    }

    fn exits_of(&self, l: &Leaf<A>) -> &[Exit] {
        let start = l.start as usize;
        self.exits
            .get(start..start + usize::from(l.exits))
            .unwrap_or(&[])
    }

    #[inline]
    fn leaf_exits(&self, leaf_plus_one: u32) -> Option<(&Leaf<A>, &[Exit])> {
        let l = self.leaves.get(leaf_plus_one.checked_sub(1)? as usize)?;
        Some((l, self.exits_of(l)))
    }

    /// Replace the exits of `(addr, len)` (remove it when `exits` is empty). Returns whether the
    /// prefix was there before.
    fn set(&mut self, addr: A, len: u8, exits: &[Exit]) -> bool {
        let at = self.find(addr, len);
        if let Ok(i) = at {
            self.dead += usize::from(self.leaves[i].exits);
        }
        let leaf = Leaf {
            addr,
            len,
            start: self.exits.len() as u32,
            exits: exits.len() as u16,
        };
        match (at, exits.is_empty()) {
            (Ok(i), true) => {
                self.leaves.remove(i);
            }
            (Ok(i), false) => self.leaves[i] = leaf,
            (Err(i), false) => self.leaves.insert(i, leaf),
            (Err(_), true) => return false,
        }
        self.exits.extend_from_slice(exits);
        self.dirty = true;
        at.is_ok()
    }

    /// Drop dead exits and rebuild the index with `build`.
    fn seal(&mut self, build: impl FnOnce(&[(A, u8)]) -> Index) {
        if self.dead > 0 {
            let mut exits = Vec::with_capacity(self.exits.len() - self.dead);
            for l in &mut self.leaves {
                let start = l.start as usize;
                let ex = self
                    .exits
                    .get(start..start + usize::from(l.exits))
                    .unwrap_or(&[]);
                l.start = exits.len() as u32;
                exits.extend_from_slice(ex);
            }
            self.exits = exits;
            self.dead = 0;
        }
        // Grown by pushes while building; a sealed shard is only ever copied, not grown.
        self.leaves.shrink_to_fit();
        self.exits.shrink_to_fit();
        let keys: Vec<(A, u8)> = self.leaves.iter().map(|l| (l.addr, l.len)).collect();
        self.index = Arc::new(build(&keys));
        self.dirty = false;
    }

    fn heap_bytes(&self) -> usize {
        self.leaves.capacity() * std::mem::size_of::<Leaf<A>>()
            + self.exits.capacity() * std::mem::size_of::<Exit>()
            + match &*self.index {
                Index::Dir24(d) => d.heap_bytes(),
                Index::Octet(_) => 4 * 256,
                Index::Ranges(r) => r.heap_bytes(),
            }
    }
}

impl Shard<u32> {
    /// `leaf + 1` of the most specific prefix of this IPv4 shard containing `a`, or 0.
    #[inline(always)]
    fn index_lookup4(&self, a: u32) -> u32 {
        match &*self.index {
            Index::Dir24(d) => d.lookup(a),
            Index::Octet(o) => o.lookup(a),
            Index::Ranges(r) => r.lookup(u128::from(a) << 96),
        }
    }
}

impl Shard<u128> {
    /// `leaf + 1` of the most specific prefix of this IPv6 shard containing `a`, or 0.
    #[inline]
    fn index_lookup6(&self, a: u128) -> u32 {
        match &*self.index {
            Index::Ranges(r) => r.lookup(a),
            Index::Dir24(_) | Index::Octet(_) => 0,
        }
    }
}

/// The shard of an IPv4 prefix: its first octet, or 256 for the prefixes shorter than /8.
fn shard4(p: &Ipv4Net) -> usize {
    if p.prefix_len() >= 8 {
        usize::from(p.network().octets()[0])
    } else {
        256
    }
}

/// The shard key of an IPv6 prefix: its first 16 bits, or `None` for those shorter than /16.
fn shard6(p: &Ipv6Net) -> Option<u16> {
    (p.prefix_len() >= 16).then(|| p.network().segments()[0])
}

type Slot<A> = Option<Arc<Shard<A>>>;

/// The prefix table.
#[derive(Clone, Debug)]
pub(crate) struct PrefixTable {
    /// 256 first-octet shards, then the short-prefix shard.
    v4: Vec<Slot<u32>>,
    /// Sorted first-16-bit keys of the IPv6 shards, and the shards in the same order.
    v6_keys: Vec<u16>,
    v6: Vec<Arc<Shard<u128>>>,
    v6_short: Slot<u128>,
    prefixes: usize,
}

impl Default for PrefixTable {
    fn default() -> Self {
        PrefixTable {
            v4: vec![None; 257],
            v6_keys: Vec::new(),
            v6: Vec::new(),
            v6_short: None,
            prefixes: 0,
        }
    }
}

impl PrefixTable {
    /// A table from `(prefix, exits)` pairs with distinct, truncated prefixes.
    pub fn from_entries(entries: impl IntoIterator<Item = (IpNet, Vec<Exit>)>) -> PrefixTable {
        let mut t = PrefixTable::default();
        for (p, exits) in entries {
            t.set(p, &exits);
        }
        t.seal();
        t
    }

    /// Number of prefixes.
    pub fn len(&self) -> usize {
        self.prefixes
    }

    /// The exits of the most specific IPv4 prefix containing `addr`.
    #[inline]
    pub fn exits_v4(&self, addr: Ipv4Addr) -> Option<&[Exit]> {
        self.leaf_v4(u32::from(addr)).map(|(_, _, e)| e)
    }

    /// [`exits_v4`](Self::exits_v4) for several addresses at once (`out[i]` for `addrs[i]`):
    /// first every index read, then every prefix and its exits, so that the cache misses of
    /// different addresses overlap instead of queueing one behind the other (tests: ranking
    /// reads [`hits_v4_block`](Self::hits_v4_block) and the keys of `snapshot/costs.rs`).
    #[cfg(test)]
    pub fn exits_v4_block<'s>(&'s self, addrs: &[Ipv4Addr], out: &mut [Option<&'s [Exit]>]) {
        const N: usize = 32;
        let mut hits = [Hit::NONE; N];
        for (addrs, out) in addrs.chunks(N).zip(out.chunks_mut(N)) {
            let hits = &mut hits[..addrs.len()];
            self.hits_v4_block(addrs, hits);
            for (o, &h) in out.iter_mut().zip(hits.iter()) {
                *o = self.hit_exits(h);
            }
        }
    }

    /// Where the most specific prefix containing each of `addrs` sits (`out[i]` for
    /// `addrs[i]`; [`Hit::NONE`] when no prefix contains it): index reads only, the prefixes
    /// and their exits are not touched.
    #[inline(always)]
    pub fn hits_v4_block(&self, addrs: &[Ipv4Addr], out: &mut [Hit]) {
        self.v4_block(addrs, out, |d, b, a| d.lookup_in(b, a));
    }

    /// [`hits_v4_block`](Self::hits_v4_block) for ranking: in a first octet indexed by
    /// DIR-24-8, the hit is the address's level-1 run ([`RUN`] set), found from the block alone
    /// — the run's value is not read, so the match is not known yet (the run may hold no
    /// prefix, or a level-2 chunk): a caller that finds no key for the run looks the address up
    /// again with [`hit`](Self::hit).
    #[inline(always)]
    pub fn runs_v4_block(&self, addrs: &[Ipv4Addr], out: &mut [Hit]) {
        self.v4_block(addrs, out, |d, b, a| RUN | d.run_of(b, a));
    }

    /// The block walk both share: every level-1 block of a group of addresses first
    /// (independent reads, their misses overlap), then `in_dir24` on each address's block in
    /// a DIR-24-8 first octet, the other indexes' lookup elsewhere, and the short prefixes'
    /// shard when the first octet has no match.
    #[inline(always)]
    fn v4_block(
        &self,
        addrs: &[Ipv4Addr],
        out: &mut [Hit],
        in_dir24: impl Fn(&Dir24, Block, u32) -> u32,
    ) {
        const N: usize = 32;
        let mut blocks = [Block::default(); N];
        for (addrs, out) in addrs.chunks(N).zip(out.chunks_mut(N)) {
            for (b, &a) in blocks.iter_mut().zip(addrs) {
                let a = u32::from(a);
                if let Some(Index::Dir24(d)) = self
                    .v4
                    .get((a >> 24) as usize)
                    .and_then(|s| s.as_deref())
                    .map(|s| &*s.index)
                {
                    *b = d.block(a);
                }
            }
            for ((h, &a), &b) in out.iter_mut().zip(addrs).zip(&blocks) {
                let a = u32::from(a);
                let octet = a >> 24;
                let long = self.v4.get(octet as usize).and_then(Option::as_deref);
                let leaf = long.map_or(0, |s| match &*s.index {
                    Index::Dir24(d) => in_dir24(d, b, a),
                    _ => s.index_lookup4(a),
                });
                *h = if leaf != 0 {
                    Hit { slot: octet, leaf }
                } else {
                    let short = self.v4.get(256).and_then(Option::as_deref);
                    Hit {
                        slot: 256,
                        leaf: short.map_or(0, |s| s.index_lookup4(a)),
                    }
                };
            }
        }
    }

    /// Number of level-1 runs of shard `slot` (0 unless it is indexed by DIR-24-8).
    pub fn slot_runs(&self, slot: u32) -> usize {
        match self.slot(slot) {
            Some(ShardRef::V4(s)) => match &*s.index {
                Index::Dir24(d) => d.runs(),
                _ => 0,
            },
            _ => 0,
        }
    }

    /// The level-1 blocks of shard `slot` when it is indexed by DIR-24-8.
    pub fn slot_blocks(&self, slot: u32) -> Option<&[Block]> {
        match self.slot(slot)? {
            ShardRef::V4(s) => match &*s.index {
                Index::Dir24(d) => Some(d.blocks()),
                _ => None,
            },
            ShardRef::V6(_) => None,
        }
    }

    /// For every level-1 run of shard `slot` (none unless it is indexed by DIR-24-8), `leaf +
    /// 1` of the prefix covering the whole run, or 0 (see [`Dir24::run_leaves`]).
    pub fn slot_run_leaves(&self, slot: u32) -> Vec<u32> {
        match self.slot(slot) {
            Some(ShardRef::V4(s)) => match &*s.index {
                Index::Dir24(d) => d.run_leaves().collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// [`hits_v4_block`](Self::hits_v4_block) for one IPv6 address.
    #[inline]
    pub fn hit_v6(&self, addr: Ipv6Addr) -> Hit {
        let a = u128::from(addr);
        let key = (a >> 112) as u16;
        if let Ok(i) = self.v6_keys.binary_search(&key) {
            let leaf = self.v6.get(i).map_or(0, |s| s.index_lookup6(a));
            if leaf != 0 {
                return Hit {
                    slot: SLOT_V6 + i as u32,
                    leaf,
                };
            }
        }
        Hit {
            slot: SLOT_V6_SHORT,
            leaf: self.v6_short.as_ref().map_or(0, |s| s.index_lookup6(a)),
        }
    }

    /// [`hits_v4_block`](Self::hits_v4_block) for one address of either family.
    #[inline(always)]
    pub fn hit(&self, addr: IpAddr) -> Hit {
        match addr {
            IpAddr::V4(a) => {
                let mut h = [Hit::NONE];
                self.hits_v4_block(&[a], &mut h);
                h[0]
            }
            IpAddr::V6(a) => self.hit_v6(a),
        }
    }

    /// The exits of the prefix at `hit`.
    #[inline]
    pub fn hit_exits(&self, hit: Hit) -> Option<&[Exit]> {
        match self.slot(hit.slot)? {
            ShardRef::V4(s) => s.leaf_exits(hit.leaf).map(|(_, e)| e),
            ShardRef::V6(s) => s.leaf_exits(hit.leaf).map(|(_, e)| e),
        }
    }

    /// Number of shard slots ([`Hit::slot`] is below it): the 257 IPv4 ones, the short IPv6
    /// one, then one per IPv6 shard.
    pub fn slots(&self) -> usize {
        SLOT_V6 as usize + self.v6.len()
    }

    fn slot(&self, slot: u32) -> Option<ShardRef<'_>> {
        if slot < SLOT_V6_SHORT {
            self.v4.get(slot as usize)?.as_deref().map(ShardRef::V4)
        } else if slot == SLOT_V6_SHORT {
            self.v6_short.as_deref().map(ShardRef::V6)
        } else {
            self.v6
                .get((slot - SLOT_V6) as usize)
                .map(|s| ShardRef::V6(s))
        }
    }

    /// Number of prefixes in shard `slot`.
    pub fn slot_len(&self, slot: u32) -> usize {
        match self.slot(slot) {
            Some(ShardRef::V4(s)) => s.leaves.len(),
            Some(ShardRef::V6(s)) => s.leaves.len(),
            None => 0,
        }
    }

    /// The exits of every prefix of shard `slot`, in leaf order (`leaf - 1` of a [`Hit`]).
    pub fn slot_exits(&self, slot: u32) -> Vec<&[Exit]> {
        match self.slot(slot) {
            Some(ShardRef::V4(s)) => s.leaves.iter().map(|l| s.exits_of(l)).collect(),
            Some(ShardRef::V6(s)) => s.leaves.iter().map(|l| s.exits_of(l)).collect(),
            None => Vec::new(),
        }
    }

    /// The slot in `self` of the shard at `slot` in `older`, when both tables hold that very
    /// shard (unchanged since: a change copies a shard before writing to it).
    pub fn same_shard(&self, older: &PrefixTable, slot: u32) -> Option<u32> {
        let new_slot = if slot < SLOT_V6 {
            slot
        } else {
            let key = *older.v6_keys.get((slot - SLOT_V6) as usize)?;
            SLOT_V6 + self.v6_keys.binary_search(&key).ok()? as u32
        };
        let same = match (older.slot(slot)?, self.slot(new_slot)?) {
            (ShardRef::V4(a), ShardRef::V4(b)) => std::ptr::eq(a, b),
            (ShardRef::V6(a), ShardRef::V6(b)) => std::ptr::eq(a, b),
            _ => false,
        };
        same.then_some(new_slot)
    }

    /// The exits of the most specific IPv6 prefix containing `addr`.
    #[inline]
    pub fn exits_v6(&self, addr: Ipv6Addr) -> Option<&[Exit]> {
        self.leaf_v6(u128::from(addr)).map(|(_, _, e)| e)
    }

    /// The exits of the most specific prefix containing `addr`.
    #[inline]
    pub fn exits(&self, addr: IpAddr) -> Option<&[Exit]> {
        match addr {
            IpAddr::V4(a) => self.exits_v4(a),
            IpAddr::V6(a) => self.exits_v6(a),
        }
    }

    #[inline]
    fn leaf_v4(&self, a: u32) -> Option<(u32, u8, &[Exit])> {
        let long = self.v4.get((a >> 24) as usize).and_then(Option::as_ref);
        Self::in_shard4(long, a).or_else(|| Self::in_shard4(self.v4.get(256)?.as_ref(), a))
    }

    #[inline]
    fn in_shard4(shard: Option<&Arc<Shard<u32>>>, a: u32) -> Option<(u32, u8, &[Exit])> {
        let s = shard?;
        s.leaf_exits(s.index_lookup4(a))
            .map(|(l, e)| (l.addr, l.len, e))
    }

    #[inline]
    fn leaf_v6(&self, a: u128) -> Option<(u128, u8, &[Exit])> {
        let key = (a >> 112) as u16;
        let long = self
            .v6_keys
            .binary_search(&key)
            .ok()
            .and_then(|i| self.v6.get(i));
        Self::in_shard6(long, a).or_else(|| Self::in_shard6(self.v6_short.as_ref(), a))
    }

    #[inline]
    fn in_shard6(shard: Option<&Arc<Shard<u128>>>, a: u128) -> Option<(u128, u8, &[Exit])> {
        let s = shard?;
        s.leaf_exits(s.index_lookup6(a))
            .map(|(l, e)| (l.addr, l.len, e))
    }

    /// The most specific prefix containing `addr`, and its exits.
    pub fn lookup(&self, addr: IpAddr) -> Option<(IpNet, &[Exit])> {
        match addr {
            IpAddr::V4(a) => {
                let (p, len, e) = self.leaf_v4(u32::from(a))?;
                Some((IpNet::V4(Ipv4Net::new(p.into(), len).ok()?), e))
            }
            IpAddr::V6(a) => {
                let (p, len, e) = self.leaf_v6(u128::from(a))?;
                Some((IpNet::V6(Ipv6Net::new(p.into(), len).ok()?), e))
            }
        }
    }

    /// The exits of exactly `prefix`.
    pub fn get(&self, prefix: &IpNet) -> Option<&[Exit]> {
        match prefix.trunc() {
            IpNet::V4(p) => {
                let s = self.v4.get(shard4(&p))?.as_ref()?;
                let i = s.find(u32::from(p.network()), p.prefix_len()).ok()?;
                Some(s.exits_of(s.leaves.get(i)?))
            }
            IpNet::V6(p) => {
                let s = self.shard6(&p)?;
                let i = s.find(u128::from(p.network()), p.prefix_len()).ok()?;
                Some(s.exits_of(s.leaves.get(i)?))
            }
        }
    }

    fn shard6(&self, p: &Ipv6Net) -> Option<&Arc<Shard<u128>>> {
        match shard6(p) {
            None => self.v6_short.as_ref(),
            Some(k) => self.v6_keys.binary_search(&k).ok().map(|i| &self.v6[i]),
        }
    }

    /// Replace the exits of `prefix` (truncated); an empty list removes it. Copies the shard
    /// when another snapshot shares it. Lookups see the change after [`seal`](Self::seal).
    pub fn set(&mut self, prefix: IpNet, exits: &[Exit]) {
        let existed = self.get(&prefix).is_some();
        if !existed && exits.is_empty() {
            return;
        }
        match prefix.trunc() {
            IpNet::V4(p) => {
                let slot = match self.v4.get_mut(shard4(&p)) {
                    Some(s) => s,
                    None => return,
                };
                Arc::make_mut(slot.get_or_insert_with(|| Arc::new(Shard::new()))).set(
                    u32::from(p.network()),
                    p.prefix_len(),
                    exits,
                );
            }
            IpNet::V6(p) => {
                let shard = match shard6(&p) {
                    None => self.v6_short.get_or_insert_with(|| Arc::new(Shard::new())),
                    Some(k) => {
                        let i = match self.v6_keys.binary_search(&k) {
                            Ok(i) => i,
                            Err(i) => {
                                self.v6_keys.insert(i, k);
                                self.v6.insert(i, Arc::new(Shard::new()));
                                i
                            }
                        };
                        &mut self.v6[i]
                    }
                };
                Arc::make_mut(shard).set(u128::from(p.network()), p.prefix_len(), exits);
            }
        }
        match (existed, exits.is_empty()) {
            (false, false) => self.prefixes += 1,
            (true, true) => self.prefixes -= 1,
            _ => {}
        }
    }

    /// Rebuild the lookup index of every shard changed since the last seal; drop emptied shards.
    pub fn seal(&mut self) {
        for (k, slot) in self.v4.iter_mut().enumerate() {
            let Some(shard) = slot else { continue };
            if !shard.dirty {
                continue;
            }
            if shard.leaves.is_empty() {
                *slot = None;
                continue;
            }
            Arc::make_mut(shard).seal(|keys| {
                if k == 256 {
                    Index::Octet(Octet::build(keys))
                } else if keys.len() <= 16 {
                    // A first octet with a handful of prefixes: skip the 256 KiB level 1.
                    // IPv4 in the top 32 bits, so that lengths count from the top as for IPv6.
                    let wide: Vec<(u128, u8)> = keys
                        .iter()
                        .map(|&(a, l)| (u128::from(a) << 96, l))
                        .collect();
                    Index::Ranges(Ranges::build(&wide))
                } else {
                    Index::Dir24(Dir24::build(keys))
                }
            });
        }
        if let Some(s) = &mut self.v6_short
            && s.dirty
        {
            if s.leaves.is_empty() {
                self.v6_short = None;
            } else {
                Arc::make_mut(s).seal(|keys| Index::Ranges(Ranges::build(keys)));
            }
        }
        let mut i = 0;
        while i < self.v6.len() {
            let s = &mut self.v6[i];
            if s.dirty {
                if s.leaves.is_empty() {
                    self.v6.remove(i);
                    self.v6_keys.remove(i);
                    continue;
                }
                Arc::make_mut(s).seal(|keys| Index::Ranges(Ranges::build(keys)));
            }
            i += 1;
        }
    }

    /// Every prefix and its exits, IPv4 first.
    pub fn iter(&self) -> impl Iterator<Item = (IpNet, &[Exit])> {
        let v4 = self.v4.iter().flatten().flat_map(|s| {
            s.leaves.iter().filter_map(move |l| {
                let p = Ipv4Net::new(l.addr.into(), l.len).ok()?;
                Some((IpNet::V4(p), s.exits_of(l)))
            })
        });
        let v6 = self.v6.iter().chain(self.v6_short.iter()).flat_map(|s| {
            s.leaves.iter().filter_map(move |l| {
                let p = Ipv6Net::new(l.addr.into(), l.len).ok()?;
                Some((IpNet::V6(p), s.exits_of(l)))
            })
        });
        v4.chain(v6)
    }

    /// Heap bytes held by the table (shared shards counted in full).
    pub fn heap_bytes(&self) -> usize {
        self.v4
            .iter()
            .flatten()
            .map(|s| s.heap_bytes())
            .sum::<usize>()
            + self
                .v6
                .iter()
                .chain(self.v6_short.iter())
                .map(|s| s.heap_bytes())
                .sum::<usize>()
            + self.v6_keys.capacity() * 2
            + self.v6.capacity() * 8
    }

    /// Whether `self` and `other` share the shard holding `prefix` (tests: unchanged shards are
    /// not copied).
    #[cfg(test)]
    pub fn shares_shard_with(&self, other: &PrefixTable, prefix: &IpNet) -> bool {
        match prefix.trunc() {
            IpNet::V4(p) => match (
                self.v4.get(shard4(&p)).and_then(Option::as_ref),
                other.v4.get(shard4(&p)).and_then(Option::as_ref),
            ) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            },
            IpNet::V6(p) => match (self.shard6(&p), other.shard6(&p)) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            },
        }
    }
}

/// The number of leaves one shard can hold is bounded by the index encoding; a first octet holds
/// at most 2²⁵ distinct prefixes (/8–/32), far below it.
const _: () = assert!(MAX_LEAVES > 1 << 25);
