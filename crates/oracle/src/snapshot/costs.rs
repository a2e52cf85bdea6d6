//! The sort key of every prefix as seen from one path-cache row: the §3.2.3 exit choice and the
//! ranking cost of the chosen exit, done once per (row, prefix) instead of once per candidate.
//! Ranking a candidate is then its longest-prefix match and one read of an 8-byte key; the
//! prefix's leaf, its exits and the row's terms are not touched. For a DIR-24-8 shard the keys
//! are also kept per level-1 run, so that the match stops at the level-1 block: the run's key
//! is read in place of the run's value ([`ShardKeys::runs`]).
//!
//! Keys are kept per (row, prefix-table shard) and built on a shard's first use by a query from
//! that row (a row is read only by queries from its source routers, so only the rows in use
//! cost memory: 8 bytes per prefix and per level-1 run each, a 2-byte entry per level-1
//! block and a 16-byte [`KeyLine`] per block of several keys). The whole cache holds at most
//! [`BUDGET`] bytes per snapshot; past it, candidates are costed from their exits as before
//! (same keys, slower).
//!
//! Kept current through copy-on-write updates ([`TopologySnapshot::apply`](super::TopologySnapshot::apply)):
//! a key depends on the prefix's exits (its shard) and on the row's terms (path cache, ranking,
//! router ranks). When the terms start afresh, so does this cache; otherwise the new snapshot
//! keeps the key arrays of every shard it shares with the old one ([`PrefixCosts::carry`]) and
//! rebuilds the others on first use. A reader never waits for another: two readers meeting an
//! empty shard both compute it and one result is kept.

use super::prefixes::PrefixTable;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Most bytes of keys one snapshot holds (all rows together): two rows of a full table of 1.2
/// million prefixes (prefix and run keys and lines, 31 MiB each), or eight rows of the seed
/// network (10 MiB each).
pub(crate) const BUDGET: usize = 80 << 20;

/// Keys for every row of one path cache under one ranking.
#[derive(Debug, Default)]
pub(crate) struct PrefixCosts {
    rows: Box<[OnceLock<RowCosts>]>,
    /// Bytes of keys held (claimed before a shard's keys are built).
    held: AtomicUsize,
    /// Most bytes of keys held ([`BUDGET`]).
    budget: usize,
}

/// One row's keys, per shard slot of the prefix table.
#[derive(Debug)]
pub(crate) struct RowCosts {
    shards: Box<[OnceLock<ShardKeys>]>,
}

/// The keys of one shard from one row.
#[derive(Clone, Debug)]
pub(crate) struct ShardKeys {
    /// One per prefix, in leaf order.
    pub leaves: Arc<[u64]>,
    /// One per level-1 run of a DIR-24-8 shard (none for other shards): the key of the prefix
    /// covering the whole run, or `u64::MAX` where none does (no prefix, or a level-2 chunk;
    /// the caller then looks the address up and reads `leaves`). A lookup reads the run's key
    /// straight from the level-1 block, one memory read instead of the run's value and then
    /// the prefix's key.
    pub runs: Arc<[u64]>,
    /// One entry per level-1 block of a DIR-24-8 shard (none for other shards): the id of the
    /// block's key in [`line_keys`](Self::line_keys) when one key covers the whole block,
    /// [`LINE`] and the index of its [`KeyLine`] when it has a few, or [`NO_ENTRY`]. Ranking an
    /// IPv4 candidate reads its block's entry — two bytes, so a shard's entries are 2 KiB and
    /// those of a whole table stay in the CPU's caches — and, for a block of several keys, its
    /// line, instead of the level-1 block and then the run's key.
    pub blocks: Arc<[u16]>,
    /// The lines of the blocks of several keys.
    pub lines: Arc<[KeyLine]>,
    /// The distinct keys the entries and lines name, by id.
    pub line_keys: Arc<[u64]>,
}

impl ShardKeys {
    fn bytes(&self) -> usize {
        8 * (self.leaves.len() + self.runs.len() + self.line_keys.len())
            + 2 * self.blocks.len()
            + std::mem::size_of::<KeyLine>() * self.lines.len()
    }

    /// What a block's `entry` ([`blocks`](Self::blocks)) gives.
    #[inline(always)]
    pub fn through_entry(&self, entry: u16) -> Through<'_> {
        let found = if entry & LINE == 0 {
            self.line_keys.get(usize::from(entry)).map(Through::Key)
        } else if entry == NO_ENTRY {
            None
        } else {
            self.lines
                .get(usize::from(entry & !LINE))
                .map(Through::Line)
        };
        found.unwrap_or(Through::Lookup)
    }

    /// Where the key of the IPv4 address `addr` in `line`, one of this shard's lines, sits.
    #[inline(always)]
    pub fn key_in_line(&self, line: &KeyLine, addr: u32) -> Option<&u64> {
        self.line_keys.get(usize::from(line.id(addr)?))
    }

    /// The key of the IPv4 address `addr` through the entries and lines, or `None` where its
    /// block has no entry (tests).
    #[cfg(test)]
    pub fn key_through_entries(&self, addr: u32) -> Option<u64> {
        match self.through_entry(*self.blocks.get(line_of(addr))?) {
            Through::Key(key) => Some(*key),
            Through::Line(line) => self.key_in_line(line, addr).copied(),
            Through::Lookup => None,
        }
    }
}

/// What a [`ShardKeys::blocks`] entry says of its block's candidates.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Through<'a> {
    /// One key covers the whole block: where it sits.
    Key(&'a u64),
    /// The block has several keys: read its line.
    Line(&'a KeyLine),
    /// No entry: the prefix table decides.
    Lookup,
}

/// Most key runs one [`KeyLine`] names.
pub(crate) const LINE_RUNS: usize = 8;

/// A [`ShardKeys::blocks`] entry with this bit set names a [`KeyLine`] (its index in
/// [`ShardKeys::lines`] in the low bits); without it, the id of the one key of the whole block.
pub(crate) const LINE: u16 = 0x8000;

/// A [`ShardKeys::blocks`] entry for a block ranking cannot read through the entries (more than
/// [`LINE_RUNS`] key runs, or too many distinct keys): its candidates take the prefix table.
pub(crate) const NO_ENTRY: u16 = u16::MAX;

/// The run keys of one level-1 block of several keys, from one row, in 16 bytes: a bitmap of
/// where the key changes along the block's 64 entries and, per key run, the id of its key in
/// [`ShardKeys::line_keys`]. Runs of the prefix table whose keys are equal are one key run here
/// (a row's keys are few distinct costs, so most blocks are one key or a handful).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(16))]
pub(crate) struct KeyLine {
    starts: u64,
    ids: [u8; LINE_RUNS],
}

impl KeyLine {
    /// The id of the key of the run holding the IPv4 address `addr` (whose level-1 block this
    /// line is).
    #[inline(always)]
    pub fn id(&self, addr: u32) -> Option<u16> {
        let i = (addr >> 8) & 63;
        let upto = self.starts & (u64::MAX >> (63 - i));
        // Bit 0 of a line's `starts` is always set, so `upto` has a bit.
        let run = upto.count_ones().checked_sub(1)?;
        self.ids.get(run as usize).map(|&id| u16::from(id))
    }
}

/// Builds a shard's [`ShardKeys::blocks`], [`ShardKeys::lines`] and
/// [`ShardKeys::line_keys`] one level-1 block at a time.
#[derive(Debug, Default)]
pub(crate) struct EntryBuilder {
    blocks: Vec<u16>,
    lines: Vec<KeyLine>,
    table: Vec<u64>,
    index: std::collections::HashMap<u64, u16>,
}

impl EntryBuilder {
    /// The entry of the next block, whose run-start bitmap is `starts` and whose runs' keys
    /// are `keys` (`None`: the block's runs are unknown).
    pub fn push(&mut self, block: Option<(u64, &[u64])>) {
        let entry = block.map_or(NO_ENTRY, |(starts, keys)| self.entry(starts, keys));
        self.blocks.push(entry);
    }

    fn entry(&mut self, starts: u64, keys: &[u64]) -> u16 {
        if starts & 1 == 0 || keys.len() != starts.count_ones() as usize {
            return NO_ENTRY;
        }
        // The block's key runs: where the key changes, not where the prefix does.
        let mut line = KeyLine::default();
        let mut ids = [0u16; LINE_RUNS];
        let (mut bits, mut runs, mut last) = (starts, 0, None);
        for &k in keys {
            let at = bits.trailing_zeros();
            bits &= bits.wrapping_sub(1);
            if last == Some(k) {
                continue;
            }
            last = Some(k);
            let (Some(slot), Some(id)) = (ids.get_mut(runs), self.id(k)) else {
                return NO_ENTRY;
            };
            *slot = id;
            line.starts |= 1 << at;
            runs += 1;
        }
        if runs == 1 {
            return ids[0];
        }
        for (to, &id) in line.ids.iter_mut().zip(&ids[..runs]) {
            let Ok(id) = u8::try_from(id) else {
                return NO_ENTRY;
            };
            *to = id;
        }
        if self.lines.len() >= usize::from(!LINE) {
            return NO_ENTRY;
        }
        self.lines.push(line);
        LINE | (self.lines.len() - 1) as u16
    }

    /// The id of key `k`, added to the table if new; `None` past `LINE` ids.
    fn id(&mut self, k: u64) -> Option<u16> {
        if let Some(&id) = self.index.get(&k) {
            return Some(id);
        }
        let id = u16::try_from(self.table.len())
            .ok()
            .filter(|&id| id < LINE)?;
        self.index.insert(k, id);
        self.table.push(k);
        Some(id)
    }

    /// The shard's keys: `leaves` and `runs` with the entries, lines and distinct keys built.
    pub fn finish(self, leaves: Vec<u64>, runs: Vec<u64>) -> ShardKeys {
        ShardKeys {
            leaves: leaves.into(),
            runs: runs.into(),
            blocks: self.blocks.into(),
            lines: self.lines.into(),
            line_keys: self.table.into(),
        }
    }
}

/// The level-1 block of the IPv4 address `addr` in its first octet's DIR-24-8 shard.
#[inline(always)]
pub(crate) fn line_of(addr: u32) -> usize {
    ((addr >> 14) & 0x3ff) as usize
}

impl PrefixCosts {
    /// Empty rows for a cache of `rows` rows.
    pub fn new(rows: usize) -> PrefixCosts {
        PrefixCosts::with_budget(rows, BUDGET)
    }

    /// [`new`](Self::new) holding at most `budget` bytes of keys.
    pub fn with_budget(rows: usize, budget: usize) -> PrefixCosts {
        PrefixCosts {
            rows: (0..rows).map(|_| OnceLock::new()).collect(),
            held: AtomicUsize::new(0),
            budget,
        }
    }

    /// Row `index`, with one empty slot per shard of `table` on first use.
    #[inline]
    pub fn row(&self, index: usize, table: &PrefixTable) -> Option<&RowCosts> {
        let slot = self.rows.get(index)?;
        Some(slot.get_or_init(|| RowCosts::empty(table.slots())))
    }

    /// The cache for `table`, the next snapshot's prefix table after an update that left the
    /// terms alone: every key array of a shard `table` shares with `older` (this cache's
    /// table) is kept, the others start empty.
    pub fn carry(&self, older: &PrefixTable, table: &PrefixTable) -> PrefixCosts {
        let mut held = 0;
        let rows = self
            .rows
            .iter()
            .map(|r| {
                let Some(old) = r.get() else {
                    return OnceLock::new();
                };
                let row = RowCosts::empty(table.slots());
                for (slot, keys) in old.shards.iter().enumerate() {
                    let Some(keys) = keys.get() else { continue };
                    let Some(to) = table.same_shard(older, slot as u32) else {
                        continue;
                    };
                    if let Some(cell) = row.shards.get(to as usize)
                        && cell.set(keys.clone()).is_ok()
                    {
                        held += keys.bytes();
                    }
                }
                OnceLock::from(row)
            })
            .collect();
        PrefixCosts {
            rows,
            held: AtomicUsize::new(held),
            budget: self.budget,
        }
    }

    /// The keys of shard `slot` in `row`: built with `build` (at most `len` 8-byte words:
    /// prefixes, runs, lines and their distinct keys) on first use if the budget allows, else
    /// `None`.
    #[inline]
    pub fn keys<'a>(
        &self,
        row: &'a RowCosts,
        slot: u32,
        len: impl FnOnce() -> usize,
        build: impl FnOnce() -> ShardKeys,
    ) -> Option<&'a ShardKeys> {
        let cell = row.shards.get(slot as usize)?;
        if let Some(k) = cell.get() {
            return Some(k);
        }
        // `len` bounds the keys' size (the distinct keys of the lines are not known yet): claim
        // the bound, then give back what the keys did not take.
        let bytes = len() * 8;
        if self.held.load(Ordering::Relaxed) + bytes > self.budget {
            return None;
        }
        if self.held.fetch_add(bytes, Ordering::Relaxed) + bytes > self.budget {
            self.held.fetch_sub(bytes, Ordering::Relaxed);
            return None;
        }
        let keys = build();
        let unused = bytes.saturating_sub(keys.bytes());
        if cell.set(keys).is_err() {
            // Another reader built it meanwhile; either result is the same.
            self.held.fetch_sub(bytes, Ordering::Relaxed);
        } else {
            self.held.fetch_sub(unused, Ordering::Relaxed);
        }
        cell.get()
    }

    /// Bytes held: the keys built so far and the per-row slot tables.
    pub fn heap_bytes(&self) -> usize {
        self.rows.len() * std::mem::size_of::<OnceLock<RowCosts>>()
            + self
                .rows
                .iter()
                .filter_map(OnceLock::get)
                .map(|r| {
                    r.shards.len() * std::mem::size_of::<OnceLock<ShardKeys>>()
                        + r.shards
                            .iter()
                            .filter_map(OnceLock::get)
                            .map(ShardKeys::bytes)
                            .sum::<usize>()
                })
                .sum::<usize>()
    }

    /// Every per-prefix key array built: (row, shard slot, keys) (tests).
    #[cfg(test)]
    pub fn built(&self) -> Vec<(usize, u32, Arc<[u64]>)> {
        self.built_keys()
            .into_iter()
            .map(|(i, s, k)| (i, s, k.leaves))
            .collect()
    }

    /// Every shard's keys built: (row, shard slot, keys) (tests).
    #[cfg(test)]
    pub fn built_keys(&self) -> Vec<(usize, u32, ShardKeys)> {
        let mut out = Vec::new();
        for (index, row) in self.rows.iter().enumerate() {
            let Some(row) = row.get() else { continue };
            for (slot, keys) in row.shards.iter().enumerate() {
                if let Some(k) = keys.get() {
                    out.push((index, slot as u32, k.clone()));
                }
            }
        }
        out
    }

    /// Bytes of keys claimed so far (tests).
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

impl RowCosts {
    /// The keys of shard `slot` if they are built already: one read, no closure, for the
    /// ranking's fast path.
    #[inline(always)]
    pub fn built(&self, slot: u32) -> Option<&ShardKeys> {
        self.shards.get(slot as usize)?.get()
    }

    fn empty(slots: usize) -> RowCosts {
        RowCosts {
            shards: (0..slots).map(|_| OnceLock::new()).collect(),
        }
    }
}
