//! Typed arenas: state blocks live in a slab and refer to each other by [`Id`], a 32-bit index
//! typed by what it indexes (a PSB id cannot be used as an RSB id) with a niche, so
//! `Option<Id<T>>` is four bytes. Engines build their relations (lists, N:M links) out of these
//! ids instead of pointers or boxes: compact, and trivially safe to drop.

use core::fmt;
use core::marker::PhantomData;
use core::num::NonZeroU32;
use core::ops::{Index, IndexMut};
use slab::Slab;

/// The index of a `T` in an [`Arena<T>`].
pub struct Id<T> {
    raw: NonZeroU32,
    _t: PhantomData<fn() -> T>,
}

impl<T> Id<T> {
    fn new(index: usize) -> Self {
        let raw = u32::try_from(index + 1)
            .ok()
            .and_then(NonZeroU32::new)
            .expect("arena holds at most u32::MAX - 1 values");
        Id {
            raw,
            _t: PhantomData,
        }
    }

    /// The slot number.
    pub fn index(self) -> usize {
        self.raw.get() as usize - 1
    }
}

impl<T> Clone for Id<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Id<T> {}
impl<T> PartialEq for Id<T> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}
impl<T> Eq for Id<T> {}
impl<T> PartialOrd for Id<T> {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Id<T> {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.raw.cmp(&other.raw)
    }
}
impl<T> core::hash::Hash for Id<T> {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.raw.hash(state);
    }
}
impl<T> fmt::Debug for Id<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.index())
    }
}

/// A slab of `T` addressed by [`Id<T>`].
#[derive(Debug, Clone)]
pub struct Arena<T> {
    slab: Slab<T>,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena { slab: Slab::new() }
    }
}

impl<T> Arena<T> {
    /// An empty arena.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty arena with room for `n` values.
    pub fn with_capacity(n: usize) -> Self {
        Arena {
            slab: Slab::with_capacity(n),
        }
    }

    /// Make room for `additional` more values.
    pub fn reserve(&mut self, additional: usize) {
        self.slab.reserve(additional);
    }

    /// Store a value.
    ///
    /// # Panics
    /// If the arena already holds `u32::MAX - 1` values.
    pub fn insert(&mut self, value: T) -> Id<T> {
        Id::new(self.slab.insert(value))
    }

    /// Remove and return a value. Panics if `id` is not present (a stale id is a bug in the
    /// engine, not bad input).
    pub fn remove(&mut self, id: Id<T>) -> T {
        self.slab.remove(id.index())
    }

    /// The value, if present.
    pub fn get(&self, id: Id<T>) -> Option<&T> {
        self.slab.get(id.index())
    }

    /// The value, if present.
    pub fn get_mut(&mut self, id: Id<T>) -> Option<&mut T> {
        self.slab.get_mut(id.index())
    }

    /// The id of the value in slot `index`, if that slot holds one (for ids that crossed an
    /// API boundary as plain numbers).
    pub fn id_at(&self, index: usize) -> Option<Id<T>> {
        self.slab.contains(index).then(|| Id::new(index))
    }

    /// Whether `id` is present.
    pub fn contains(&self, id: Id<T>) -> bool {
        self.slab.contains(id.index())
    }

    /// Values held.
    pub fn len(&self) -> usize {
        self.slab.len()
    }

    /// Whether the arena is empty.
    pub fn is_empty(&self) -> bool {
        self.slab.is_empty()
    }

    /// Slots allocated.
    pub fn capacity(&self) -> usize {
        self.slab.capacity()
    }

    /// Heap bytes of the slot array.
    pub fn heap_bytes(&self) -> usize {
        self.slab.capacity() * core::mem::size_of::<slab_entry::Entry<T>>()
    }

    /// All values with their ids.
    pub fn iter(&self) -> impl Iterator<Item = (Id<T>, &T)> {
        self.slab.iter().map(|(i, v)| (Id::new(i), v))
    }
}

/// The size of one slab slot (the `slab` crate's private entry type has this layout).
mod slab_entry {
    #[allow(dead_code)]
    pub enum Entry<T> {
        Vacant(usize),
        Occupied(T),
    }
}

impl<T> Index<Id<T>> for Arena<T> {
    type Output = T;
    fn index(&self, id: Id<T>) -> &T {
        &self.slab[id.index()]
    }
}

impl<T> IndexMut<Id<T>> for Arena<T> {
    fn index_mut(&mut self, id: Id<T>) -> &mut T {
        &mut self.slab[id.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_typed_small_and_reused() {
        assert_eq!(core::mem::size_of::<Option<Id<String>>>(), 4);
        let mut a: Arena<&str> = Arena::new();
        let x = a.insert("x");
        let y = a.insert("y");
        assert_eq!((a[x], a[y]), ("x", "y"));
        assert_eq!(a.remove(x), "x");
        assert!(!a.contains(x));
        assert_eq!(a.get(x), None);
        let z = a.insert("z");
        assert_eq!(z, x, "slots are reused");
        assert_eq!(a.len(), 2);
        assert_eq!(
            a.iter().map(|(_, v)| *v).collect::<Vec<_>>(),
            vec!["z", "y"]
        );
    }
}
