//! Which shard installed the state a neighbour's Message_Identifier names (RFC 2961 §5.3), for
//! routing the identifiers of its Srefresh messages: learned from the identified Path and Resv
//! messages the dispatcher hands to shards, forgotten when no Srefresh or message has named
//! them for two generations.
//!
//! A cache, not a source of truth: an identifier it does not know goes to shard 0, which
//! answers MESSAGE_ID_NACK when it does not hold the state either (§5.4), and the neighbour
//! sends the full message again (§5.4: "the receiver MUST transmit the matching state via a
//! standard Path or Resv message"), which reaches the owning shard by its SESSION and is
//! learned again. An identifier it maps to a shard that no longer holds the state is NACKed
//! by that shard: only that shard could have held it (one session, one shard).

use hashbrown::HashTable;
use pathwise_core::table::KeyedState;
use pathwise_core::time::{Duration, Instant};
use std::hash::BuildHasher;
use std::net::IpAddr;

/// Slack over three refresh periods before a generation is dropped: a neighbour's Srefresh
/// names an identifier within 1.5 R of the last (RFC 2205 §3.7 jitter), plus the second it
/// gathers identifiers for.
const SLACK: Duration = Duration::from_secs(2);

/// (neighbour, Epoch, Message_Identifier) → shard, under a keyed 64-bit fingerprint: 9 bytes
/// and a control byte per entry. Two fingerprints colliding (2^-64) cost one NACK and a full
/// refresh, as a miss does.
#[derive(Clone, Debug)]
pub(super) struct ListedIds {
    current: HashTable<(u64, u8)>,
    old: HashTable<(u64, u8)>,
    rotated: Instant,
    /// The longest refresh period neighbours announced (TIME_VALUES, RFC 2205 §3.7).
    longest_refresh: Duration,
    hasher: KeyedState,
}

impl ListedIds {
    pub(super) fn new(hasher: KeyedState) -> Self {
        ListedIds {
            current: HashTable::new(),
            old: HashTable::new(),
            rotated: Instant::ZERO,
            longest_refresh: Duration::from_secs(30),
            hasher,
        }
    }

    fn key(&self, nbr: IpAddr, epoch: u32, id: u32) -> u64 {
        self.hasher.hash_one((nbr, epoch & 0x00ff_ffff, id))
    }

    /// Start a new generation when the current one is three refresh periods old: an entry
    /// not named since the one before is dropped.
    fn rotate(&mut self, now: Instant) {
        let period = self.longest_refresh * 3 + SLACK;
        if now.saturating_duration_since(self.rotated) >= period {
            std::mem::swap(&mut self.current, &mut self.old);
            self.current.clear();
            self.rotated = now;
        }
    }

    /// An identified Path or Resv from `nbr` went to `shard`.
    pub(super) fn learn(
        &mut self,
        now: Instant,
        nbr: IpAddr,
        epoch: u32,
        id: u32,
        refresh: Duration,
        shard: usize,
    ) {
        self.longest_refresh = self.longest_refresh.max(refresh);
        self.rotate(now);
        let k = self.key(nbr, epoch, id);
        self.put(k, shard as u8);
    }

    fn put(&mut self, k: u64, shard: u8) {
        match self.current.find_mut(k, |e| e.0 == k) {
            Some(e) => e.1 = shard,
            None => {
                self.current.insert_unique(k, (k, shard), |e| e.0);
            }
        }
    }

    /// The shard that installed the state `nbr`'s identifier names, if known; naming it keeps
    /// it known for another generation.
    pub(super) fn lookup(
        &mut self,
        now: Instant,
        nbr: IpAddr,
        epoch: u32,
        id: u32,
    ) -> Option<usize> {
        self.rotate(now);
        let k = self.key(nbr, epoch, id);
        if let Some(e) = self.current.find(k, |e| e.0 == k) {
            return Some(e.1 as usize);
        }
        let e = self.old.find_entry(k, |e| e.0 == k).ok()?;
        let ((_, shard), _) = e.remove();
        self.put(k, shard);
        Some(shard as usize)
    }

    /// Entries held (both generations).
    pub(super) fn len(&self) -> usize {
        self.current.len() + self.old.len()
    }

    /// Heap bytes of both generations.
    pub(super) fn heap_bytes(&self) -> usize {
        (self.current.capacity() + self.old.capacity()) * (std::mem::size_of::<(u64, u8)>() + 1)
    }
}
