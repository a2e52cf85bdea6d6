//! Hash tables keyed by a randomly seeded hasher.
//!
//! Session tables are indexed by values a remote peer chooses (addresses, ports, session ids), so
//! a fixed hash function would let a peer flood one bucket. [`KeyedState`] draws its keys from the
//! engine's seeded generator: unpredictable on a real node (seeded from the OS), reproducible in
//! simulation (seeded from the run's seed).

use crate::rng::SeededRng;
use core::hash::BuildHasher;
use rand::Rng;
use std::collections::{HashMap, HashSet};

/// A hash builder with secret keys (aHash, keyed per table).
#[derive(Clone, Debug)]
pub struct KeyedState(ahash::RandomState);

impl KeyedState {
    /// A builder keyed from `rng`.
    pub fn from_rng(rng: &mut SeededRng) -> Self {
        KeyedState(ahash::RandomState::with_seeds(
            rng.random(),
            rng.random(),
            rng.random(),
            rng.random(),
        ))
    }

    /// A builder keyed from a `u64` seed (for tables built outside an engine).
    pub fn from_seed(seed: u64) -> Self {
        Self::from_rng(&mut crate::rng::seeded(seed))
    }
}

impl BuildHasher for KeyedState {
    type Hasher = ahash::AHasher;
    fn build_hasher(&self) -> Self::Hasher {
        self.0.build_hasher()
    }
}

/// A hash map with a keyed hasher.
pub type KeyedMap<K, V> = HashMap<K, V, KeyedState>;
/// A hash set with a keyed hasher.
pub type KeyedSet<K> = HashSet<K, KeyedState>;

/// An empty [`KeyedMap`] keyed from `rng`.
pub fn keyed_map<K, V>(rng: &mut SeededRng) -> KeyedMap<K, V> {
    HashMap::with_hasher(KeyedState::from_rng(rng))
}

/// An empty [`KeyedSet`] keyed from `rng`.
pub fn keyed_set<K>(rng: &mut SeededRng) -> KeyedSet<K> {
    HashSet::with_hasher(KeyedState::from_rng(rng))
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::hash::BuildHasher;

    #[test]
    fn same_seed_same_hash_different_seed_different_hash() {
        let a = KeyedState::from_seed(1);
        let b = KeyedState::from_seed(1);
        let c = KeyedState::from_seed(2);
        assert_eq!(a.hash_one(42u64), b.hash_one(42u64));
        assert_ne!(a.hash_one(42u64), c.hash_one(42u64));
    }

    #[test]
    fn map_works() {
        let mut m: KeyedMap<u32, &str> = keyed_map(&mut crate::rng::seeded(7));
        m.insert(1, "one");
        assert_eq!(m.get(&1), Some(&"one"));
    }
}
