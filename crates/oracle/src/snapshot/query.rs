//! Reading a snapshot: locating addresses, path metrics, ranking.

use super::TopologySnapshot;
use super::costs::{EntryBuilder, KeyLine, RowCosts, ShardKeys, Through, line_of};
use super::paths::{PathEntry, compute_row};
use super::prefixes::{Exit, Hit, PrefixTable, RUN};
use super::routers::RouterIdx;
use super::terms::{Shape, Term};
use crate::rank::{PathMetrics, order_key, sort_order};
use ipnet::IpNet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Addresses located together before their costs are computed.
const BLOCK: usize = 64;

/// What the prefix table says about an address (console `show`).
#[derive(Clone, Debug, PartialEq)]
pub struct Located {
    /// The most specific prefix containing the address.
    pub prefix: IpNet,
    /// Its exits.
    pub exits: Vec<ExitInfo>,
}

/// One exit of a prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitInfo {
    /// The exit router.
    pub router: IpAddr,
    /// The NIC the network hangs off.
    pub nic: u8,
    /// Whether it is a source network (attached to `router`) rather than an external one.
    pub source: bool,
    /// AS number of the network.
    pub as_number: u32,
    /// AS distance from the exit.
    pub as_distance: u16,
}

/// A path-cache row with its ranking terms and its per-prefix sort keys.
pub(crate) struct RowView<'a> {
    paths: &'a [PathEntry],
    terms: &'a [Term],
    shape: Shape,
    costs: Option<&'a RowCosts>,
}

/// An address type ranking locates in blocks. A trait rather than a closure so that the lookup
/// is inlined into the `#[target_feature]` copies of the key loop (a closure is compiled on its
/// own, without the feature).
trait Candidate: Copy {
    /// Hits for ranking: for an IPv4 address in a DIR-24-8 shard, its level-1 run
    /// ([`PrefixTable::runs_v4_block`]).
    fn locate(table: &PrefixTable, addrs: &[Self], out: &mut [Hit]);
    /// The exact hit (a leaf, never a run).
    fn exact(table: &PrefixTable, addr: Self) -> Hit;
    /// The address as a `u32` if it is IPv4.
    fn v4_bits(self) -> Option<u32>;
    /// The row's keys of the address's shard and its level-1 block's entry in them
    /// ([`ShardKeys::blocks`]), where the address's first octet has entries (IPv4 in a
    /// DIR-24-8 shard, keys in budget).
    #[inline(always)]
    fn entry<'r>(
        _snapshot: &'r TopologySnapshot,
        _row: &RowView<'r>,
        _addr: Self,
    ) -> Option<(&'r ShardKeys, &'r u16)> {
        None
    }
}

impl Candidate for Ipv4Addr {
    #[inline(always)]
    fn locate(table: &PrefixTable, addrs: &[Self], out: &mut [Hit]) {
        table.runs_v4_block(addrs, out);
    }

    #[inline(always)]
    fn entry<'r>(
        snapshot: &'r TopologySnapshot,
        row: &RowView<'r>,
        addr: Self,
    ) -> Option<(&'r ShardKeys, &'r u16)> {
        let a = u32::from(addr);
        let slot = a >> 24;
        // Keys built already: straight to the entry (a shard that is not DIR-24-8 has none),
        // without the prefix table's pointers to the shard's index.
        let keys = match row.costs.and_then(|c| c.built(slot)) {
            Some(keys) => keys,
            None => {
                // Only a DIR-24-8 shard has entries (keys are not built for the others here:
                // ranking builds a shard's keys only for a candidate it matches).
                snapshot.prefixes.slot_blocks(slot)?;
                snapshot.shard_keys(row, slot)?
            }
        };
        Some((keys, keys.blocks.get(line_of(a))?))
    }

    #[inline]
    fn exact(table: &PrefixTable, addr: Self) -> Hit {
        table.hit(IpAddr::V4(addr))
    }

    #[inline(always)]
    fn v4_bits(self) -> Option<u32> {
        Some(u32::from(self))
    }
}

impl Candidate for Ipv6Addr {
    #[inline(always)]
    fn locate(table: &PrefixTable, addrs: &[Self], out: &mut [Hit]) {
        for (o, &a) in out.iter_mut().zip(addrs) {
            *o = table.hit_v6(a);
        }
    }

    #[inline]
    fn exact(table: &PrefixTable, addr: Self) -> Hit {
        table.hit_v6(addr)
    }

    #[inline(always)]
    fn v4_bits(self) -> Option<u32> {
        None
    }
}

impl Candidate for IpAddr {
    #[inline(always)]
    fn locate(table: &PrefixTable, addrs: &[Self], out: &mut [Hit]) {
        for (o, &a) in out.iter_mut().zip(addrs) {
            *o = match a {
                IpAddr::V4(a) => {
                    let mut h = [Hit::NONE];
                    table.runs_v4_block(&[a], &mut h);
                    h[0]
                }
                IpAddr::V6(a) => table.hit_v6(a),
            };
        }
    }

    #[inline]
    fn exact(table: &PrefixTable, addr: Self) -> Hit {
        table.hit(addr)
    }

    #[inline(always)]
    fn v4_bits(self) -> Option<u32> {
        match self {
            IpAddr::V4(a) => Some(u32::from(a)),
            IpAddr::V6(_) => None,
        }
    }

    #[inline(always)]
    fn entry<'r>(
        snapshot: &'r TopologySnapshot,
        row: &RowView<'r>,
        addr: Self,
    ) -> Option<(&'r ShardKeys, &'r u16)> {
        match addr {
            IpAddr::V4(a) => Ipv4Addr::entry(snapshot, row, a),
            IpAddr::V6(_) => None,
        }
    }
}

/// Reusable buffers for [`TopologySnapshot::rank_with`], so ranking allocates nothing once warm.
#[derive(Clone, Debug, Default)]
pub struct RankScratch {
    keys: Vec<u64>,
    order: Vec<u64>,
    addrs: Vec<IpAddr>,
}

impl TopologySnapshot {
    /// The prefix entry covering `addr`.
    pub fn locate(&self, addr: IpAddr) -> Option<Located> {
        let (prefix, exits) = self.prefixes.lookup(addr)?;
        let exits = exits
            .iter()
            .filter_map(|e| {
                Some(ExitInfo {
                    router: self.routers.get(e.router)?.address,
                    nic: e.nic,
                    source: e.source,
                    as_number: e.as_number,
                    as_distance: e.as_distance,
                })
            })
            .collect();
        Some(Located { prefix, exits })
    }

    /// One router's definition, by address (console `show router`).
    pub fn router(&self, address: IpAddr) -> Option<crate::model::RouterConfig> {
        let idx = self.routers.index_of(&address)?;
        self.routers.get(idx).map(|r| r.to_config())
    }

    /// Whether a router with this address exists.
    pub fn has_router(&self, address: IpAddr) -> bool {
        self.routers.index_of(&address).is_some()
    }

    /// Whether `router` is an exit of exactly `prefix` as an external network (what an
    /// [`Update::RemoveExternalNetwork`](crate::Update::RemoveExternalNetwork) needs).
    pub fn has_external_network(&self, prefix: &ipnet::IpNet, router: IpAddr) -> bool {
        let Some(r) = self.routers.index_of(&router) else {
            return false;
        };
        self.prefixes
            .get(prefix)
            .is_some_and(|ex| ex.iter().any(|e| e.router == r && !e.source))
    }

    /// The addresses of all routers, in slot order.
    pub fn router_addresses(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.routers.iter().map(|(_, r)| r.address)
    }

    /// The router a query from `source` comes in at: the most specific prefix containing
    /// `source` must be a source network (the lowest router address wins if several routers
    /// share it).
    pub fn source_router(&self, source: IpAddr) -> Option<IpAddr> {
        self.source_idx(source)
            .and_then(|r| self.routers.get(r))
            .map(|r| r.address)
    }

    pub(crate) fn source_idx(&self, source: IpAddr) -> Option<RouterIdx> {
        let exits = self.prefixes.exits(source)?;
        exits
            .iter()
            .filter(|e| e.source)
            .min_by_key(|e| self.graph.rank.get(e.router as usize).copied())
            .map(|e| e.router)
    }

    /// The path-cache row for a query from `source`.
    #[inline]
    pub(crate) fn source_row(&self, source: IpAddr) -> Option<&[PathEntry]> {
        self.paths.row(self.source_idx(source)?)
    }

    /// The path-cache row and its ranking terms for a query from `source`.
    #[inline]
    pub(crate) fn source_view(&self, source: IpAddr) -> Option<RowView<'_>> {
        let router = self.source_idx(source)?;
        let index = *self.paths.row_of.get(router as usize)? as usize;
        let paths = self.paths.rows.get(index)?;
        let terms = self.terms.row(
            index,
            paths,
            &self.graph.rank,
            &self.ranking,
            self.settings.local_as,
        )?;
        Some(RowView {
            paths,
            terms,
            shape: Shape::of(&self.ranking),
            costs: self.costs.row(index, &self.prefixes),
        })
    }

    /// Metrics towards `addr` from the router owning `row`: the §3.2.3 routing abstraction
    /// picks, among the prefix's reachable exits, the one with the lowest internal weight (ties:
    /// lower AS distance, then lower router address, then the source network over an external
    /// route announced for the same prefix at the same router — explicit, so that the choice does
    /// not depend on the order in which builds and live updates stored the exits).
    #[inline]
    pub(crate) fn metrics_in_row(&self, row: &[PathEntry], addr: IpAddr) -> Option<PathMetrics> {
        self.metrics_of_exits(row, self.prefixes.exits(addr)?)
    }

    /// The cost of the best exit among `exits` (the §3.2.3 choice of
    /// [`metrics_in_row`](Self::metrics_in_row)) from precomputed terms.
    #[inline]
    fn cost_of_exits(&self, view: &RowView<'_>, exits: &[Exit]) -> Option<f64> {
        let mut best: Option<(ExitKey, &Exit, &Term)> = None;
        for e in exits {
            let Some(t) = view.terms.get(e.router as usize).filter(|t| t.reachable()) else {
                continue;
            };
            let key = exit_key(t.weight, e, t.rank);
            if best.is_none_or(|(k, _, _)| key < k) {
                best = Some((key, e, t));
            }
        }
        let (_, e, t) = best?;
        match view.shape {
            Shape::PerCandidate => self
                .metrics_of_exits(view.paths, std::slice::from_ref(e))
                .map(|m| self.ranking.cost(&m)),
            shape => Some(t.cost(shape, e.as_distance)),
        }
    }

    /// [`metrics_in_row`](Self::metrics_in_row) for the exits of the matching prefix.
    #[inline]
    pub(crate) fn metrics_of_exits(
        &self,
        row: &[PathEntry],
        exits: &[Exit],
    ) -> Option<PathMetrics> {
        let mut best: Option<(ExitKey, &Exit, &PathEntry)> = None;
        for e in exits {
            let Some(p) = row.get(e.router as usize).filter(|p| p.reachable()) else {
                continue;
            };
            let rank = self
                .graph
                .rank
                .get(e.router as usize)
                .copied()
                .unwrap_or(u32::MAX);
            let key = exit_key(p.weight, e, rank);
            if best.is_none_or(|(k, _, _)| key < k) {
                best = Some((key, e, p));
            }
        }
        let (_, e, p) = best?;
        Some(PathMetrics {
            bandwidth: f64::from(p.bandwidth),
            latency: f64::from(p.latency),
            hops: u32::from(p.hops),
            weight: u64::from(p.weight),
            as_number: e.as_number,
            as_distance: e.as_distance,
            congestion: f64::from(p.congestion) / 10_000.0,
            external: !e.source,
        })
    }

    /// Path metrics from a query source to a candidate, or `None` when the oracle cannot place
    /// one of them.
    pub fn metrics(&self, source: IpAddr, candidate: IpAddr) -> Option<PathMetrics> {
        self.metrics_in_row(self.source_row(source)?, candidate)
    }

    /// [`metrics`](Self::metrics) from one source to each of `candidates` (the source located
    /// once), in order.
    pub fn metrics_to_each(
        &self,
        source: IpAddr,
        candidates: &[IpAddr],
    ) -> Vec<Option<PathMetrics>> {
        match self.source_row(source) {
            Some(row) => candidates
                .iter()
                .map(|&c| self.metrics_in_row(row, c))
                .collect(),
            None => vec![None; candidates.len()],
        }
    }

    /// The ranking cost of `candidate` for a query from `source`.
    pub fn cost(&self, source: IpAddr, candidate: IpAddr) -> Option<f64> {
        self.metrics(source, candidate)
            .map(|m| self.ranking.cost(&m))
    }

    /// Metrics of the internal path between two routers (by address), from the cache, or
    /// computed on the spot for a router without a cache row.
    pub fn path(&self, from: IpAddr, to: IpAddr) -> Option<PathMetrics> {
        let (f, t) = (self.routers.index_of(&from)?, self.routers.index_of(&to)?);
        let p = match self.paths.row(f) {
            Some(row) => *row.get(t as usize)?,
            None => *compute_row(&self.graph, self.settings.routing, f).get(t as usize)?,
        };
        p.reachable().then(|| PathMetrics {
            bandwidth: f64::from(p.bandwidth),
            latency: f64::from(p.latency),
            hops: u32::from(p.hops),
            weight: u64::from(p.weight),
            as_number: self.settings.local_as,
            as_distance: 0,
            congestion: f64::from(p.congestion) / 10_000.0,
            external: false,
        })
    }

    /// Sort keys for `addrs` (one per address, in order) into `keys`, which
    /// must be at least as long; returns how many addresses were placed.
    ///
    /// Works in blocks of [`BLOCK`] addresses: all longest-prefix matches of a block first, then
    /// all keys, so that the table's cache misses of one block overlap instead of waiting on
    /// each other.
    #[allow(unsafe_code)]
    pub(crate) fn keys_v4(
        &self,
        row: Option<&RowView<'_>>,
        addrs: &[Ipv4Addr],
        keys: &mut [u64],
    ) -> usize {
        // The level-1 lookup counts bits; the baseline x86-64 target has no POPCNT instruction
        // and counts them in software unless the CPU is known to have it.
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has POPCNT (checked just above), the only feature the callee
            // enables.
            return unsafe { self.keys_v4_popcnt(row, addrs, keys) };
        }
        self.keys_v4_portable(row, addrs, keys)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn keys_v4_popcnt(
        &self,
        row: Option<&RowView<'_>>,
        addrs: &[Ipv4Addr],
        keys: &mut [u64],
    ) -> usize {
        self.keys_v4_portable(row, addrs, keys)
    }

    #[inline(always)]
    fn keys_v4_portable(
        &self,
        row: Option<&RowView<'_>>,
        addrs: &[Ipv4Addr],
        keys: &mut [u64],
    ) -> usize {
        self.keys_in_blocks(row, addrs, keys)
    }

    /// [`keys_v4`](Self::keys_v4) for IPv6 candidates.
    #[inline]
    pub(crate) fn keys_v6(
        &self,
        row: Option<&RowView<'_>>,
        addrs: &[Ipv6Addr],
        keys: &mut [u64],
    ) -> usize {
        self.keys_in_blocks(row, addrs, keys)
    }

    /// [`keys_v4`](Self::keys_v4) for candidates of either family.
    #[allow(unsafe_code)]
    pub(crate) fn keys_ip(
        &self,
        row: Option<&RowView<'_>>,
        addrs: &[IpAddr],
        keys: &mut [u64],
    ) -> usize {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("popcnt") {
            // SAFETY: as in `keys_v4`.
            return unsafe { self.keys_ip_popcnt(row, addrs, keys) };
        }
        self.keys_ip_portable(row, addrs, keys)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn keys_ip_popcnt(
        &self,
        row: Option<&RowView<'_>>,
        addrs: &[IpAddr],
        keys: &mut [u64],
    ) -> usize {
        self.keys_ip_portable(row, addrs, keys)
    }

    #[inline(always)]
    fn keys_ip_portable(
        &self,
        row: Option<&RowView<'_>>,
        addrs: &[IpAddr],
        keys: &mut [u64],
    ) -> usize {
        self.keys_in_blocks(row, addrs, keys)
    }

    /// The key loop. An IPv4 candidate whose first octet has block entries
    /// ([`ShardKeys::blocks`]) reads its block's entry, which is its key's id for a block of
    /// one key, and otherwise the block's [`KeyLine`]; a block of candidates first finds and
    /// prefetches every entry, then reads them and prefetches the keys or lines they name, then
    /// reads those lines and prefetches their keys, then reads the keys, so that the misses of
    /// one step overlap (a key read right after its entry stalled the loop: 17% of its samples,
    /// docs/BENCHMARKS.md). The others
    /// ([`keys_located`](Self::keys_located)): IPv6, an entry or line that names no key, a
    /// shard without entries.
    #[inline(always)]
    fn keys_in_blocks<A: Candidate>(
        &self,
        row: Option<&RowView<'_>>,
        addrs: &[A],
        keys: &mut [u64],
    ) -> usize {
        const NONE: u64 = u64::MAX;
        let Some(row) = row else {
            for k in keys.iter_mut().take(addrs.len()) {
                *k = NONE;
            }
            return 0;
        };
        let mut placed = 0;
        for (block, keys) in addrs.chunks(BLOCK).zip(keys.chunks_mut(BLOCK)) {
            let mut entries: [Option<(&ShardKeys, &u16)>; BLOCK] = [None; BLOCK];
            for (e, &a) in entries.iter_mut().zip(block) {
                *e = A::entry(self, row, a);
                if let Some((_, entry)) = e {
                    prefetch(*entry);
                }
            }
            // Where each candidate's key sits, once its entry or line says.
            let mut at: [Option<&u64>; BLOCK] = [None; BLOCK];
            // Candidates of blocks of several keys: their shard's keys and line.
            let mut lines: [Option<(&ShardKeys, &KeyLine)>; BLOCK] = [None; BLOCK];
            for ((a, e), l) in at.iter_mut().zip(entries).zip(&mut lines) {
                match e.map(|(sk, &entry)| (sk, sk.through_entry(entry))) {
                    Some((_, Through::Key(key))) => {
                        prefetch(key);
                        *a = Some(key);
                    }
                    Some((sk, Through::Line(line))) => {
                        prefetch(line);
                        *l = Some((sk, line));
                    }
                    Some((_, Through::Lookup)) | None => {}
                }
            }
            for ((a, l), &addr) in at.iter_mut().zip(lines).zip(block) {
                let Some((sk, line)) = l else { continue };
                *a = addr.v4_bits().and_then(|x| sk.key_in_line(line, x));
                if let Some(key) = a {
                    prefetch(*key);
                }
            }
            // Candidates neither resolves, by position in the block.
            let mut rest = [0u8; BLOCK];
            let mut n_rest = 0;
            for (i, (k, a)) in keys.iter_mut().zip(at).enumerate() {
                match a {
                    Some(&key) if key != NONE => {
                        *k = key;
                        placed += 1;
                    }
                    _ => {
                        if let Some(r) = rest.get_mut(n_rest) {
                            *r = i as u8;
                            n_rest += 1;
                        }
                    }
                }
            }
            if n_rest == block.len() {
                placed += self.keys_located(row, block, keys);
            } else if let Some(&first) = block.first()
                && n_rest > 0
            {
                // Together, so that their lookups overlap too (a source network's blocks are
                // mostly of more key runs than a line holds: a fifth of the seed's candidates).
                let rest = &rest[..n_rest];
                let mut addrs = [first; BLOCK];
                for (a, &i) in addrs.iter_mut().zip(rest) {
                    *a = block.get(usize::from(i)).copied().unwrap_or(first);
                }
                let mut found = [NONE; BLOCK];
                placed += self.keys_located(row, &addrs[..n_rest], &mut found[..n_rest]);
                for (&i, &key) in rest.iter().zip(&found) {
                    if let Some(k) = keys.get_mut(usize::from(i)) {
                        *k = key;
                    }
                }
            }
        }
        placed
    }

    /// Keys located through the prefix table (the level-1 block, then the run's or the
    /// prefix's key), software-pipelined over blocks of [`BLOCK`] addresses: locate a block
    /// (its level-1 reads overlap), find where each of its keys sits and prefetch it, locate
    /// the next block while those keys arrive, then read them.
    #[inline(always)]
    fn keys_located<A: Candidate>(
        &self,
        row: &RowView<'_>,
        addrs: &[A],
        keys: &mut [u64],
    ) -> usize {
        const NONE: u64 = u64::MAX;
        debug_assert_eq!(order_key(None), NONE);
        let mut placed = 0;
        let mut hits = [Hit::NONE; BLOCK];
        let mut next = [Hit::NONE; BLOCK];
        let mut blocks = addrs.chunks(BLOCK).zip(keys.chunks_mut(BLOCK)).peekable();
        if let Some((first, _)) = blocks.peek() {
            A::locate(&self.prefixes, first, &mut hits[..first.len()]);
        }
        while let Some((block, keys)) = blocks.next() {
            let hits_now = &hits[..block.len()];
            let mut at: [Option<&u64>; BLOCK] = [None; BLOCK];
            for (a, &hit) in at.iter_mut().zip(hits_now) {
                *a = self.key_ref(row, hit);
                if let Some(k) = a {
                    prefetch(k);
                }
            }
            if let Some((upcoming, _)) = blocks.peek() {
                A::locate(&self.prefixes, upcoming, &mut next[..upcoming.len()]);
            }
            for (((k, &hit), &addr), a) in keys.iter_mut().zip(hits_now).zip(block).zip(at) {
                let mut key = match a {
                    Some(&k) => k,
                    None if hit.leaf == 0 => NONE,
                    // Keys over their budget: computed from the exits (a leaf), or none (a run).
                    None => self.key_of(row, hit),
                };
                if key == NONE && hit.is_run() {
                    // A run with no key of its own (no prefix covers all of it, or the keys
                    // are over their budget): the whole lookup.
                    let hit = A::exact(&self.prefixes, addr);
                    if hit.leaf != 0 {
                        key = self.key_of(row, hit);
                    }
                }
                placed += usize::from(key != NONE);
                *k = key;
            }
            std::mem::swap(&mut hits, &mut next);
        }
        placed
    }

    /// The keys of shard `slot` from `row`, built on first use; `None` over the budget.
    #[inline(always)]
    fn shard_keys<'r>(&self, row: &RowView<'r>, slot: u32) -> Option<&'r ShardKeys> {
        self.costs.keys(
            row.costs?,
            slot,
            || {
                // 8-byte words, at most: a key per prefix and per run, a 2-byte entry and a
                // line per level-1 block, and the distinct keys (no more than the runs).
                let (leaves, runs) = (self.prefixes.slot_len(slot), self.prefixes.slot_runs(slot));
                let blocks = self.prefixes.slot_blocks(slot).map_or(0, <[_]>::len);
                leaves + 2 * runs + (blocks * (2 + std::mem::size_of::<KeyLine>())).div_ceil(8)
            },
            || self.slot_keys(row, slot),
        )
    }

    /// Where the key of the prefix or level-1 run at `hit` sits in `row`'s keys (built for the
    /// shard on first use), or `None`: no match, or no keys (over their budget).
    #[inline(always)]
    fn key_ref<'r>(&self, row: &'r RowView<'_>, hit: Hit) -> Option<&'r u64> {
        if hit.leaf == 0 {
            return None;
        }
        let keys = self.shard_keys(row, hit.slot)?;
        if hit.is_run() {
            keys.runs.get((hit.leaf & !RUN) as usize)
        } else {
            keys.leaves.get(hit.leaf as usize - 1)
        }
    }

    /// The sort key of the prefix at `hit` (a match, or a level-1 run) from `row`: read from
    /// the row's keys, built for the prefix's shard on first use; computed from the exits when
    /// the keys are over their budget (`u64::MAX` for a run then: the caller looks it up).
    #[inline(always)]
    fn key_of(&self, row: &RowView<'_>, hit: Hit) -> u64 {
        let keys = self.shard_keys(row, hit.slot);
        if hit.is_run() {
            return keys
                .and_then(|k| k.runs.get((hit.leaf & !RUN) as usize))
                .copied()
                .unwrap_or(u64::MAX);
        }
        match keys.and_then(|k| k.leaves.get(hit.leaf as usize - 1)) {
            Some(&k) => k,
            None => order_key(
                self.prefixes
                    .hit_exits(hit)
                    .and_then(|e| self.cost_of_exits(row, e)),
            ),
        }
    }

    /// The sort key of every prefix of shard `slot` from `row`, in leaf order, and of every
    /// level-1 run of a DIR-24-8 shard.
    #[cold]
    #[inline(never)]
    pub(crate) fn slot_keys(&self, row: &RowView<'_>, slot: u32) -> ShardKeys {
        let leaves: Vec<u64> = self
            .prefixes
            .slot_exits(slot)
            .into_iter()
            .map(|e| order_key(self.cost_of_exits(row, e)))
            .collect();
        let runs: Vec<u64> = self
            .prefixes
            .slot_run_leaves(slot)
            .into_iter()
            .map(|leaf| {
                leaf.checked_sub(1)
                    .and_then(|i| leaves.get(i as usize))
                    .copied()
                    .unwrap_or(u64::MAX)
            })
            .collect();
        let mut entries = EntryBuilder::default();
        for b in self.prefixes.slot_blocks(slot).unwrap_or(&[]) {
            let first = b.base() as usize;
            let n = b.starts().count_ones() as usize;
            entries.push(runs.get(first..first + n).map(|keys| (b.starts(), keys)));
        }
        entries.finish(leaves, runs)
    }

    /// Rank `candidates` in place for a query from `source`: lower cost first, ties in input
    /// order, candidates the oracle cannot place last in input order. Returns how many were
    /// placed. Always a permutation of the input.
    pub fn rank(&self, source: IpAddr, candidates: &mut [IpAddr]) -> usize {
        self.rank_with(source, candidates, &mut RankScratch::default())
    }

    /// [`rank`](Self::rank) with caller-held buffers.
    pub fn rank_with(
        &self,
        source: IpAddr,
        candidates: &mut [IpAddr],
        scratch: &mut RankScratch,
    ) -> usize {
        scratch.keys.clear();
        scratch.keys.resize(candidates.len(), 0);
        scratch.order.clear();
        scratch.order.resize(candidates.len(), 0);
        let row = self.source_view(source);
        let placed = self.keys_ip(row.as_ref(), candidates, &mut scratch.keys);
        sort_order(&scratch.keys, &mut scratch.order);
        scratch.addrs.clear();
        scratch.addrs.extend_from_slice(candidates);
        for (slot, &i) in candidates.iter_mut().zip(&scratch.order) {
            if let Some(a) = scratch.addrs.get(i as usize) {
                *slot = *a;
            }
        }
        placed
    }
}

/// The order in which the §3.2.3 routing abstraction prefers a prefix's exits, lowest first:
/// internal weight, AS distance, router rank (its address order), then a source network over an
/// external route for the same prefix at the same router.
type ExitKey = (u32, u16, u32, bool);

/// [`ExitKey`] of exit `e` reached with internal `weight` at router `rank`.
#[inline]
fn exit_key(weight: u32, e: &Exit, rank: u32) -> ExitKey {
    (weight, e.as_distance, rank, !e.source)
}

/// Ask the CPU to bring `r`'s cache line in, without waiting for it.
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 CPU has (it is in the target's
    // baseline); a prefetch is a hint that reads nothing the program sees and cannot fault, and
    // the pointer comes from a live reference anyway.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((r as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}
