//! Longest-prefix-match indexes over one prefix-table shard, rebuilt from the shard's sorted
//! prefixes whenever the shard changes (the shard is copied on write first, so readers of the
//! old snapshot keep the old index).
//!
//! - [`Dir24`]: DIR-24-8 (Gupta, Lin, McKeown, "Routing lookups in hardware at memory access
//!   speeds", INFOCOM 1998) for the IPv4 prefixes /8–/32 of one first octet: a 2¹⁶-entry level 1
//!   indexed by bits 8–23 (stored compressed, see [`Dir24`]) and 256-entry level-2 chunks indexed
//!   by bits 24–31 for the /24s that hold longer prefixes. Two memory reads for a /24 or
//!   shorter, three for longer.
//! - [`Octet`]: the IPv4 prefixes /0–/7, one entry per first octet (one read).
//! - [`Ranges`]: IPv6 (and anything else without a fixed stride): the prefixes flattened into
//!   disjoint address ranges, each with the most specific prefix covering it; a lookup is a
//!   binary search over the range starts (one cache line per step near the end).
//!
//! Every index maps an address to `leaf + 1` (the position of the matching prefix in the shard's
//! sorted prefix list) or 0 when no prefix of the shard contains it.

/// A level-1 entry with this bit set holds a level-2 chunk number, not a leaf.
const CHUNK: u32 = 1 << 31;

/// Most leaves one index can name (the chunk bit is reserved).
pub(crate) const MAX_LEAVES: usize = (CHUNK - 2) as usize;

/// DIR-24-8 for one first octet, its level 1 compressed poptrie-style.
///
/// Level 1 is built as the full 2¹⁶-entry array, then stored as 1,024 blocks of 64 entries: a
/// bitmap marking where a new run of equal entries starts, and where the block's runs begin in
/// one array of run values. A lookup reads one 16-byte block and one value (a popcount between
/// them): a few KiB per first octet instead of 256 KiB, so the tables of a whole BGP table stay
/// in the CPU caches (Asai and Ohara, "Poptrie", SIGCOMM 2015, use the same bitmap-and-popcount
/// step).
#[derive(Clone, Debug)]
pub(crate) struct Dir24 {
    blocks: Box<[Block]>,
    runs: Box<[u32]>,
    l2: Box<[u32]>,
}

/// 64 level-1 entries: 16 bytes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Block {
    /// Bit `i`: entry `i` starts a run (differs from entry `i - 1`); bit 0 is always set.
    starts: u64,
    /// Index in `runs` of the block's first run.
    base: u32,
    /// The value of the first run (also at `runs[base]`), so that a lookup in the first run —
    /// every lookup in a block of one run, most blocks of a sparse first octet — reads no run
    /// value (the padding after `base` holds it for free).
    first: u32,
}

impl Block {
    /// Bit `i`: entry `i` starts a run.
    #[inline(always)]
    pub fn starts(self) -> u64 {
        self.starts
    }

    /// Index of the block's first run among the shard's runs.
    #[inline(always)]
    pub fn base(self) -> u32 {
        self.base
    }
}

impl Dir24 {
    /// Index `leaves` (`(address, length)`, lengths 8–32, host bits clear, all in one first
    /// octet).
    pub fn build(leaves: &[(u32, u8)]) -> Dir24 {
        let mut l1 = vec![0u32; 1 << 16];
        let mut l2: Vec<u32> = Vec::new();
        // Shorter prefixes first, so that longer ones paint over them.
        for (leaf, (addr, len)) in by_length(leaves) {
            let value = leaf + 1;
            let slot = ((addr >> 8) & 0xffff) as usize;
            if len <= 24 {
                let n = 1usize << (24 - u32::from(len.max(8)));
                if let Some(s) = l1.get_mut(slot..slot + n) {
                    s.fill(value);
                }
            } else {
                let Some(e) = l1.get_mut(slot) else { continue };
                let chunk = if *e & CHUNK != 0 {
                    (*e & !CHUNK) as usize
                } else {
                    // Every prefix up to /24 is painted already: the chunk starts as its /24.
                    let c = l2.len() >> 8;
                    l2.extend(std::iter::repeat_n(*e, 256));
                    *e = CHUNK | c as u32;
                    c
                };
                let start = (chunk << 8) | (addr & 0xff) as usize;
                let n = 1usize << (32 - u32::from(len.min(32)));
                if let Some(s) = l2.get_mut(start..start + n) {
                    s.fill(value);
                }
            }
        }
        let mut blocks = Vec::with_capacity(1 << 10);
        let mut runs: Vec<u32> = Vec::new();
        for entries in l1.chunks_exact(64) {
            let mut block = Block {
                starts: 0,
                base: runs.len() as u32,
                first: entries.first().copied().unwrap_or(0),
            };
            let mut prev = None;
            for (i, &e) in entries.iter().enumerate() {
                if prev != Some(e) {
                    block.starts |= 1 << i;
                    runs.push(e);
                    prev = Some(e);
                }
            }
            blocks.push(block);
        }
        Dir24 {
            blocks: blocks.into_boxed_slice(),
            runs: runs.into_boxed_slice(),
            l2: l2.into_boxed_slice(),
        }
    }

    /// `leaf + 1` of the most specific prefix containing `addr`, or 0.
    #[inline(always)]
    pub fn lookup(&self, addr: u32) -> u32 {
        self.lookup_in(self.block(addr), addr)
    }

    /// The level-1 block of `addr` (the first of [`lookup`](Self::lookup)'s reads: a caller
    /// looking up many addresses reads all their blocks first, so that the misses overlap).
    #[inline(always)]
    pub fn block(&self, addr: u32) -> Block {
        let i = (addr >> 8) & 0xffff;
        self.blocks
            .get((i >> 6) as usize)
            .copied()
            .unwrap_or_default()
    }

    /// [`lookup`](Self::lookup) given `addr`'s [`block`](Self::block).
    #[inline(always)]
    pub fn lookup_in(&self, b: Block, addr: u32) -> u32 {
        let i = (addr >> 8) & 0xffff;
        // Runs started at or before entry `i & 63`: at least one, bit 0 being always set.
        let upto = b.starts & (u64::MAX >> (63 - (i & 63)));
        let e = if upto <= 1 {
            b.first
        } else {
            let run = b.base as usize + upto.count_ones() as usize - 1;
            self.runs.get(run).copied().unwrap_or(0)
        };
        if e & CHUNK == 0 {
            e
        } else {
            let j = (((e & !CHUNK) as usize) << 8) | (addr & 0xff) as usize;
            self.l2.get(j).copied().unwrap_or(0)
        }
    }

    /// The level-1 run holding `addr`, given its [`block`](Self::block): an index below
    /// [`runs`](Self::runs) naming one value for all the addresses of the run. Ranking keeps
    /// one sort key per run (`snapshot/costs.rs`), so that a lookup reads the block and that
    /// key, not the run's value and then the prefix's key.
    #[inline(always)]
    pub fn run_of(&self, b: Block, addr: u32) -> u32 {
        let i = (addr >> 8) & 0xffff;
        let upto = b.starts & (u64::MAX >> (63 - (i & 63)));
        // At least one bit: bit 0 of `starts` is always set.
        b.base + upto.count_ones() - 1
    }

    /// The level-1 blocks, in address order (block `i` holds the /24s `i << 6 ..`).
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// Number of level-1 runs.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// For every level-1 run in order, `leaf + 1` of the prefix that covers all of it, or 0
    /// when none does (no prefix, or a run of one /24 split further in a level-2 chunk).
    pub fn run_leaves(&self) -> impl Iterator<Item = u32> + '_ {
        self.runs
            .iter()
            .map(|&e| if e & CHUNK == 0 { e } else { 0 })
    }

    /// Level 1 (blocks and runs) and the level-2 chunks, in bytes.
    pub fn heap_bytes(&self) -> usize {
        self.blocks.len() * std::mem::size_of::<Block>() + 4 * (self.runs.len() + self.l2.len())
    }
}

/// The IPv4 prefixes /0–/7: one entry per first octet.
#[derive(Clone, Debug)]
pub(crate) struct Octet {
    table: Box<[u32; 256]>,
}

impl Octet {
    /// Index `leaves` (`(address, length)`, lengths 0–7, host bits clear).
    pub fn build(leaves: &[(u32, u8)]) -> Octet {
        let mut table = Box::new([0u32; 256]);
        for (leaf, (addr, len)) in by_length(leaves) {
            let start = (addr >> 24) as usize;
            let n = 1usize << (8 - u32::from(len.min(8)));
            if let Some(s) = table.get_mut(start..start + n) {
                s.fill(leaf + 1);
            }
        }
        Octet { table }
    }

    /// `leaf + 1` of the most specific prefix containing `addr`, or 0.
    #[inline(always)]
    pub fn lookup(&self, addr: u32) -> u32 {
        self.table[(addr >> 24) as usize]
    }
}

/// Disjoint address ranges, each with the most specific prefix covering it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ranges {
    starts: Box<[u128]>,
    values: Box<[u32]>,
}

impl Ranges {
    /// Index `leaves` (`(address, length)`, host bits clear), sorted by address then length (so
    /// that a prefix comes before the prefixes it contains).
    pub fn build(leaves: &[(u128, u8)]) -> Ranges {
        let mut starts: Vec<u128> = Vec::with_capacity(2 * leaves.len());
        let mut values: Vec<u32> = Vec::with_capacity(2 * leaves.len());
        let mut emit = |start: u128, value: u32| {
            if starts.last() == Some(&start) {
                if let Some(v) = values.last_mut() {
                    *v = value;
                }
            } else if values.last() != Some(&value) || values.is_empty() {
                starts.push(start);
                values.push(value);
            }
        };
        // The prefixes containing the current position, innermost last: (last address, value).
        let mut open: Vec<(u128, u32)> = Vec::new();
        for (leaf, &(addr, len)) in leaves.iter().enumerate() {
            let value = leaf as u32 + 1;
            while let Some(&(end, _)) = open.last() {
                if end >= addr {
                    break;
                }
                open.pop();
                // `end < addr`, so `end + 1` does not overflow.
                emit(end + 1, open.last().map_or(0, |o| o.1));
            }
            let host = u128::MAX.checked_shr(u32::from(len)).unwrap_or(0);
            open.push((addr | host, value));
            emit(addr, value);
        }
        while let Some((end, _)) = open.pop() {
            if let Some(next) = end.checked_add(1) {
                emit(next, open.last().map_or(0, |o| o.1));
            }
        }
        Ranges {
            starts: starts.into_boxed_slice(),
            values: values.into_boxed_slice(),
        }
    }

    /// `leaf + 1` of the most specific prefix containing `addr`, or 0.
    #[inline]
    pub fn lookup(&self, addr: u128) -> u32 {
        let i = self.starts.partition_point(|&s| s <= addr);
        i.checked_sub(1)
            .and_then(|i| self.values.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.starts.len() * 16 + self.values.len() * 4
    }
}

/// `(leaf, (address, length))` shortest prefixes first.
fn by_length<A: Copy>(leaves: &[(A, u8)]) -> impl Iterator<Item = (u32, (A, u8))> + '_ {
    let mut order: Vec<u32> = (0..leaves.len() as u32).collect();
    order.sort_by_key(|&i| leaves.get(i as usize).map_or(0, |l| l.1));
    order
        .into_iter()
        .filter_map(move |i| leaves.get(i as usize).map(|&l| (i, l)))
}
