//! [`Few`]: a list that almost always holds exactly one value, the size of that value.
//!
//! A Path's outgoing interfaces, an FF reservation's filters and a Resv's flow descriptors are
//! one item in all but multicast, shared-explicit and multi-sender FF sessions. A `Vec` puts
//! that one item on the heap (an allocation per parsed Resv, twice: the descriptor list and
//! its filter list); `SmallVec<[T; 1]>` keeps it inline but adds a length and a capacity word
//! (32 bytes for a FILTER_SPEC, 24 for an interface). `Few` keeps one value inline and any
//! other count (none, or several) in a box, so where `T` has a spare bit pattern (all three
//! do) it costs no more than the value itself and a pointer's alignment. It reads as a slice.

use core::ops::{Deref, DerefMut};

/// None, one or several `T`, the one inline.
#[derive(Clone)]
pub enum Few<T> {
    /// Exactly one.
    One(T),
    /// Any other count (an empty box allocates nothing).
    Other(Box<[T]>),
}

impl<T> Default for Few<T> {
    fn default() -> Self {
        Few::Other(Box::default())
    }
}

impl<T> Few<T> {
    /// Heap bytes held: none for one value.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Few::One(_) => 0,
            Few::Other(v) => core::mem::size_of_val::<[T]>(v),
        }
    }

    /// Add a value at the end.
    pub fn push(&mut self, value: T) {
        *self = match core::mem::take(self) {
            Few::Other(v) if v.is_empty() => Few::One(value),
            Few::One(first) => Few::Other(Box::new([first, value])),
            Few::Other(v) => {
                let mut v = v.into_vec();
                v.push(value);
                Few::Other(v.into_boxed_slice())
            }
        };
    }

    /// Keep only the values `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool)
    where
        T: Clone,
    {
        if !self.iter().all(&mut keep) {
            *self = self.iter().filter(|v| keep(v)).cloned().collect();
        }
    }
}

impl<T> Deref for Few<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Few::One(v) => core::slice::from_ref(v),
            Few::Other(v) => v,
        }
    }
}

impl<T> DerefMut for Few<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            Few::One(v) => core::slice::from_mut(v),
            Few::Other(v) => v,
        }
    }
}

impl<T> From<Vec<T>> for Few<T> {
    fn from(v: Vec<T>) -> Self {
        if v.len() == 1 {
            v.into_iter().collect()
        } else {
            Few::Other(v.into_boxed_slice())
        }
    }
}

impl<T> From<Few<T>> for Vec<T> {
    fn from(f: Few<T>) -> Self {
        match f {
            Few::One(v) => vec![v],
            Few::Other(v) => v.into_vec(),
        }
    }
}

impl<T> IntoIterator for Few<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;
    fn into_iter(self) -> IntoIter<T> {
        match self {
            Few::One(v) => IntoIter::One(Some(v)),
            Few::Other(v) => IntoIter::Other(v.into_vec().into_iter()),
        }
    }
}

impl<'a, T> IntoIterator for &'a Few<T> {
    type Item = &'a T;
    type IntoIter = core::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut Few<T> {
    type Item = &'a mut T;
    type IntoIter = core::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

/// The values of a [`Few`], by value.
#[derive(Debug)]
pub enum IntoIter<T> {
    /// The one value, until taken.
    One(Option<T>),
    /// Any other count.
    Other(std::vec::IntoIter<T>),
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        match self {
            IntoIter::One(v) => v.take(),
            IntoIter::Other(v) => v.next(),
        }
    }
}

impl<T> FromIterator<T> for Few<T> {
    /// One value stays inline; the box is made only for several.
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut it = iter.into_iter();
        let Some(first) = it.next() else {
            return Few::default();
        };
        match it.next() {
            None => Few::One(first),
            Some(second) => {
                let mut v = vec![first, second];
                v.extend(it);
                Few::Other(v.into_boxed_slice())
            }
        }
    }
}

impl<T: PartialEq> PartialEq<[T]> for Few<T> {
    fn eq(&self, other: &[T]) -> bool {
        **self == *other
    }
}

impl<T: PartialEq> PartialEq<Vec<T>> for Few<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        **self == **other
    }
}

impl<T: Eq> Eq for Few<T> {}

impl<T: core::hash::Hash> core::hash::Hash for Few<T> {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        (**self).hash(state);
    }
}

impl<T: PartialEq> PartialEq for Few<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: core::fmt::Debug> core::fmt::Debug for Few<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{FilterSpec, FlowDescriptor};
    use pathwise_core::io::IfIndex;
    use proptest::prelude::*;

    #[test]
    fn as_small_as_the_value() {
        use core::mem::size_of;
        assert_eq!(size_of::<Few<FilterSpec>>(), 24);
        assert_eq!(size_of::<Few<Option<IfIndex>>>(), 16);
        assert_eq!(
            size_of::<Few<FlowDescriptor>>(),
            size_of::<FlowDescriptor>()
        );
    }

    proptest! {
        /// Whatever the count, it reads back as the values collected, and equal lists compare
        /// equal.
        #[test]
        fn reads_back_what_was_collected(v in proptest::collection::vec(any::<u32>(), 0..5)) {
            let f: Few<u32> = v.iter().copied().collect();
            prop_assert_eq!(&*f, v.as_slice());
            prop_assert_eq!(matches!(f, Few::One(_)), v.len() == 1);
            prop_assert_eq!(f.clone(), v.iter().copied().collect::<Few<u32>>());
            let mut odd = f.clone();
            odd.retain(|x| x % 2 == 1);
            let want: Vec<u32> = v.iter().copied().filter(|x| x % 2 == 1).collect();
            prop_assert_eq!(&*odd, want.as_slice());
            prop_assert_eq!(matches!(odd, Few::One(_)), want.len() == 1);
            let mut pushed = Few::default();
            for x in &v {
                pushed.push(*x);
            }
            prop_assert_eq!(&pushed, &f);
            prop_assert_eq!(matches!(pushed, Few::One(_)), v.len() == 1);
            prop_assert_eq!(Few::from(v.clone()), f.clone());
            prop_assert_eq!(Vec::from(f.clone()), v.clone());
            prop_assert_eq!(f.into_iter().collect::<Vec<_>>(), v);
        }
    }
}
