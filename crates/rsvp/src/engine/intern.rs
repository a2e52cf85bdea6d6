//! Interning of values many state blocks share. Thousands of sessions crossing the same hops
//! carry byte-identical ADSPECs, ask for the same few flowspecs and name the same neighbours;
//! each block holds a 4-byte reference to one shared, reference-counted copy instead of its own
//! (bytes per session is a figure we publish).

use pathwise_core::arena::{Arena, Id};
use pathwise_core::rng::SeededRng;
use pathwise_core::table::{KeyedMap, keyed_map};

/// A value that can be interned: its wire encoding is its identity.
pub trait Encode {
    /// Append the value's encoding.
    fn encode(&self, out: &mut Vec<u8>);
}

/// One shared value (the contents are private to the interner).
#[derive(Debug)]
pub struct Entry<V> {
    value: V,
    key: Box<[u8]>,
    refs: u32,
}

/// A counted reference to an interned `V`.
pub type Interned<V> = Id<Entry<V>>;

/// Reference-counted shared values.
#[derive(Debug)]
pub struct Interner<V> {
    entries: Arena<Entry<V>>,
    index: KeyedMap<Box<[u8]>, Interned<V>>,
    scratch: Vec<u8>,
}

impl<V: Encode> Interner<V> {
    /// An empty interner whose index is keyed from `rng`.
    pub fn new(rng: &mut SeededRng) -> Self {
        Interner {
            entries: Arena::new(),
            index: keyed_map(rng),
            scratch: Vec::new(),
        }
    }

    /// A new reference to the shared copy of `value`.
    pub fn acquire(&mut self, value: V) -> Interned<V> {
        self.scratch.clear();
        value.encode(&mut self.scratch);
        if let Some(&id) = self.index.get(self.scratch.as_slice()) {
            self.entries[id].refs += 1;
            return id;
        }
        let key: Box<[u8]> = self.scratch.as_slice().into();
        let id = self.entries.insert(Entry {
            value,
            key: key.clone(),
            refs: 1,
        });
        self.index.insert(key, id);
        id
    }

    /// Another reference to an interned value.
    pub fn share(&mut self, id: Interned<V>) -> Interned<V> {
        self.entries[id].refs += 1;
        id
    }

    /// Drop one reference; the value goes with the last.
    pub fn release(&mut self, id: Interned<V>) {
        let e = &mut self.entries[id];
        e.refs -= 1;
        if e.refs == 0 {
            let e = self.entries.remove(id);
            self.index.remove(&e.key);
        }
    }

    /// Point `slot` at `value`, releasing what it held; no work if it already holds it.
    pub fn replace(&mut self, slot: &mut Interned<V>, value: V)
    where
        V: PartialEq,
    {
        if *self.get(*slot) != value {
            let new = self.acquire(value);
            self.release(std::mem::replace(slot, new));
        }
    }

    /// The shared value.
    pub fn get(&self, id: Interned<V>) -> &V {
        &self.entries[id].value
    }

    /// Distinct values held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Heap bytes, approximately.
    pub fn heap_bytes(&self) -> usize {
        self.entries.heap_bytes()
            + self
                .entries
                .iter()
                .map(|(_, e)| 2 * e.key.len())
                .sum::<usize>()
            + self.index.capacity() * (std::mem::size_of::<(Box<[u8]>, Interned<V>)>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Encode for &str {
        fn encode(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(self.as_bytes());
        }
    }

    #[test]
    fn shares_equal_values_and_frees_with_last_reference() {
        let mut i = Interner::new(&mut pathwise_core::rng::seeded(1));
        let a = i.acquire("x");
        let b = i.acquire("x");
        let c = i.acquire("y");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(i.len(), 2);
        let mut slot = i.share(c);
        i.replace(&mut slot, "x");
        assert_eq!(*i.get(slot), "x");
        i.release(a);
        i.release(b);
        assert_eq!(*i.get(slot), "x");
        i.release(slot);
        i.release(c);
        assert!(i.is_empty());
    }

    impl Encode for u8 {
        fn encode(&self, out: &mut Vec<u8>) {
            out.push(*self);
        }
    }

    proptest::proptest! {
        /// Against a reference map of value → reference count, through random acquires,
        /// shares and releases: the same value always gets the same reference, a value lives
        /// exactly as long as it has a reference, and the last release empties the table.
        #[test]
        fn interner_agrees_with_a_reference_count_map(
            ops in proptest::collection::vec((0u8..3, 0u8..8, 0usize..64), 0..400)
        ) {
            use std::collections::BTreeMap;
            let mut i = Interner::new(&mut pathwise_core::rng::seeded(3));
            let mut held: Vec<(u8, Interned<u8>)> = Vec::new();
            let mut model: BTreeMap<u8, u32> = BTreeMap::new();
            for (op, value, pick) in ops {
                match op {
                    0 => {
                        let id = i.acquire(value);
                        if let Some(&(_, other)) = held.iter().find(|(v, _)| *v == value) {
                            proptest::prop_assert_eq!(id, other);
                        }
                        held.push((value, id));
                        *model.entry(value).or_default() += 1;
                    }
                    1 if !held.is_empty() => {
                        let (v, id) = held[pick % held.len()];
                        held.push((v, i.share(id)));
                        *model.entry(v).or_default() += 1;
                    }
                    _ if !held.is_empty() => {
                        let (v, id) = held.swap_remove(pick % held.len());
                        i.release(id);
                        let n = model.get_mut(&v).expect("held");
                        *n -= 1;
                        if *n == 0 {
                            model.remove(&v);
                        }
                    }
                    _ => {}
                }
                proptest::prop_assert_eq!(i.len(), model.len());
                for &(v, id) in &held {
                    proptest::prop_assert_eq!(*i.get(id), v);
                }
            }
            for (_, id) in held.drain(..) {
                i.release(id);
            }
            proptest::prop_assert!(i.is_empty());
            proptest::prop_assert_eq!(i.index.len(), 0);
        }
    }
}
