//! One table of refresh-reduction records found two ways: by the state a record is about and
//! by the Message_Identifier that names it (RFC 2961 §4.5 out-of-order checks and refresh
//! digests go by state; acknowledgements, §4.6, and summary refreshes, §5.3, by identifier).
//!
//! Records live in one vector of slots; two hash tables hold only 4-byte slot numbers, hashed by
//! the key read from the slot. A record costs its own size plus about ten bytes of index,
//! against a hash map per key holding copies of the keys and values (what this replaces: about
//! 776 bytes per reservation at a transit node, issue #21).

use hashbrown::HashTable;
use pathwise_core::table::KeyedState;
use std::hash::{BuildHasher, Hash};

/// What a record is found by.
pub(super) trait Record {
    /// The state it is about (unique in a table).
    type State: Copy + Eq + Hash;
    /// The identifier that names it, when it has one (unique among records that have one).
    type Id: Copy + Eq + Hash;
    /// The state.
    fn state(&self) -> Self::State;
    /// The identifier.
    fn id(&self) -> Option<Self::Id>;
}

/// Records indexed by state and by identifier.
#[derive(Debug)]
pub(super) struct Records<R> {
    /// Slot `i` holds a record or is free.
    slots: Vec<Option<R>>,
    /// Free slots, reused last freed first.
    free: Vec<u32>,
    by_state: HashTable<u32>,
    by_id: HashTable<u32>,
    hasher: KeyedState,
}

impl<R: Record> Records<R> {
    /// An empty table with room for `n` records.
    pub(super) fn with_capacity(n: usize, hasher: KeyedState) -> Self {
        Records {
            slots: Vec::with_capacity(n),
            free: Vec::new(),
            by_state: HashTable::with_capacity(n),
            by_id: HashTable::with_capacity(n),
            hasher,
        }
    }

    /// Records held.
    pub(super) fn len(&self) -> usize {
        self.by_state.len()
    }

    /// The slot of the record about `state`.
    pub(super) fn find_state(&self, state: &R::State) -> Option<u32> {
        let slots = &self.slots;
        self.by_state
            .find(self.hasher.hash_one(state), |&i| {
                slots[i as usize].as_ref().map(Record::state).as_ref() == Some(state)
            })
            .copied()
    }

    /// The slot of the record named by `id`.
    pub(super) fn find_id(&self, id: &R::Id) -> Option<u32> {
        let slots = &self.slots;
        self.by_id
            .find(self.hasher.hash_one(id), |&i| {
                slots[i as usize].as_ref().and_then(Record::id).as_ref() == Some(id)
            })
            .copied()
    }

    /// The record in `slot`. Panics on a free slot (a slot number that outlived its record is
    /// a bug here, not bad input).
    pub(super) fn get(&self, slot: u32) -> &R {
        self.slots[slot as usize].as_ref().expect("live slot")
    }

    /// The record in `slot`, to change anything but its state and identifier (those are what
    /// it is indexed by: change them through [`Records::remove`] and [`Records::insert`]).
    pub(super) fn get_mut(&mut self, slot: u32) -> &mut R {
        self.slots[slot as usize].as_mut().expect("live slot")
    }

    /// The record about `state`.
    pub(super) fn get_state(&self, state: &R::State) -> Option<&R> {
        self.find_state(state).map(|s| self.get(s))
    }

    /// Store a record. A record about the same state is replaced, and an identifier another
    /// record holds is taken from it by `take_id` (the identifier now names this one); both
    /// old records' slots are reused.
    pub(super) fn insert(&mut self, rec: R, take_id: fn(&mut R)) -> u32 {
        if let Some(old) = self.find_state(&rec.state()) {
            self.remove(old);
        }
        if let Some(other) = rec.id().and_then(|id| self.find_id(&id)) {
            let mut r = self.remove(other);
            take_id(&mut r);
            debug_assert!(r.id() != rec.id(), "take_id must clear the identifier");
            self.insert(r, |_| {});
        }
        let (state_hash, id_hash) = (
            self.hasher.hash_one(rec.state()),
            rec.id().map(|id| self.hasher.hash_one(id)),
        );
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(rec);
                s
            }
            None => {
                self.slots.push(Some(rec));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 records")
            }
        };
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.by_state.insert_unique(state_hash, slot, |&i| {
            hasher.hash_one(slots[i as usize].as_ref().expect("indexed").state())
        });
        if let Some(h) = id_hash {
            self.by_id.insert_unique(h, slot, |&i| {
                hasher.hash_one(
                    slots[i as usize]
                        .as_ref()
                        .and_then(Record::id)
                        .expect("indexed by id"),
                )
            });
        }
        slot
    }

    /// Take the record out of `slot`.
    pub(super) fn remove(&mut self, slot: u32) -> R {
        let rec = self.slots[slot as usize].take().expect("live slot");
        if let Ok(e) = self
            .by_state
            .find_entry(self.hasher.hash_one(rec.state()), |&i| i == slot)
        {
            e.remove();
        }
        if let Some(id) = rec.id()
            && let Ok(e) = self
                .by_id
                .find_entry(self.hasher.hash_one(id), |&i| i == slot)
        {
            e.remove();
        }
        if slot as usize + 1 == self.slots.len() {
            self.slots.pop();
        } else {
            self.free.push(slot);
        }
        rec
    }

    /// Take out the record about `state`, if there is one.
    pub(super) fn remove_state(&mut self, state: &R::State) -> Option<R> {
        self.find_state(state).map(|s| self.remove(s))
    }

    /// Every record.
    pub(super) fn iter(&self) -> impl Iterator<Item = &R> {
        self.slots.iter().flatten()
    }

    /// Change every record in place. What keys a record (its state and identifier) must not
    /// change: the indexes are not updated.
    pub(super) fn for_each_mut(&mut self, mut f: impl FnMut(&mut R)) {
        self.slots.iter_mut().flatten().for_each(&mut f);
    }

    /// Heap bytes: the slot vector, the free list and both index tables (one control byte per
    /// bucket beside the 4-byte slot number).
    pub(super) fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Option<R>>()
            + self.free.capacity() * 4
            + (self.by_state.capacity() + self.by_id.capacity()) * 5
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Rec {
        state: u8,
        id: Option<u8>,
        payload: u32,
    }

    impl Record for Rec {
        type State = u8;
        type Id = u8;
        fn state(&self) -> u8 {
            self.state
        }
        fn id(&self) -> Option<u8> {
            self.id
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u8, Option<u8>, u32),
        RemoveState(u8),
        RemoveById(u8),
        Touch(u8, u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few states and identifiers, so replacement, identifier theft and slot reuse happen.
        prop_oneof![
            3 => (0u8..12, proptest::option::of(0u8..12), any::<u32>())
                .prop_map(|(s, i, p)| Op::Insert(s, i, p)),
            2 => (0u8..12).prop_map(Op::RemoveState),
            1 => (0u8..12).prop_map(Op::RemoveById),
            1 => (0u8..12, any::<u32>()).prop_map(|(s, p)| Op::Touch(s, p)),
        ]
    }

    proptest! {
        /// Against a plain map of state → record: every record is found by its state and by its
        /// identifier, nothing else is, after any mix of inserts (replacing, taking another
        /// record's identifier), removals (reusing slots) and changes in place.
        #[test]
        fn records_agree_with_a_reference_map(ops in proptest::collection::vec(op(), 0..200)) {
            let mut t: Records<Rec> = Records::with_capacity(
                0,
                KeyedState::from_rng(&mut pathwise_core::rng::seeded(7)),
            );
            let mut model: HashMap<u8, Rec> = HashMap::new();
            for op in ops {
                match op {
                    Op::Insert(state, id, payload) => {
                        let rec = Rec { state, id, payload };
                        t.insert(rec, |r| r.id = None);
                        if let Some(id) = id {
                            for r in model.values_mut() {
                                if r.id == Some(id) && r.state != state {
                                    r.id = None;
                                }
                            }
                        }
                        model.insert(state, rec);
                    }
                    Op::RemoveState(s) => {
                        prop_assert_eq!(t.remove_state(&s), model.remove(&s));
                    }
                    Op::RemoveById(i) => {
                        let slot = t.find_id(&i);
                        let want = model.values().find(|r| r.id == Some(i)).map(|r| r.state);
                        prop_assert_eq!(slot.map(|s| t.get(s).state), want);
                        if let Some(slot) = slot {
                            let r = t.remove(slot);
                            model.remove(&r.state);
                        }
                    }
                    Op::Touch(s, p) => {
                        if let Some(slot) = t.find_state(&s) {
                            t.get_mut(slot).payload = p;
                            model.get_mut(&s).unwrap().payload = p;
                        }
                    }
                }
                prop_assert_eq!(t.len(), model.len());
                prop_assert_eq!(t.iter().count(), model.len());
                for s in 0..12u8 {
                    prop_assert_eq!(t.get_state(&s), model.get(&s));
                }
                for i in 0..12u8 {
                    let want = model.values().find(|r| r.id == Some(i));
                    prop_assert_eq!(t.find_id(&i).map(|s| t.get(s)), want);
                }
            }
        }
    }
}
