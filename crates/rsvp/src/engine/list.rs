//! Intrusive singly linked lists over arena ids.
//!
//! A session lists its PSBs, RSBs and OutISBs, and each OIatPSB sits on two lists (its PSB's and
//! its OutISB's: the N:M relation as two 1:N relations, seed 001 §III.A). Each list costs its owner
//! one 4-byte head and each member one 4-byte link, instead of a vector per owner. Lists are short
//! (a handful of senders per session), so unlinking walks.

use pathwise_core::arena::{Arena, Id};

/// The ids on a list, front to back.
pub fn iter<T>(
    arena: &Arena<T>,
    head: Option<Id<T>>,
    next: fn(&T) -> Option<Id<T>>,
) -> impl Iterator<Item = Id<T>> + '_ {
    std::iter::successors(head, move |&id| next(&arena[id]))
}

/// Put `id` at the front.
pub fn push<T>(
    arena: &mut Arena<T>,
    head: &mut Option<Id<T>>,
    id: Id<T>,
    next: fn(&mut T) -> &mut Option<Id<T>>,
) {
    *next(&mut arena[id]) = head.replace(id);
}

/// Take `id` off the list (no-op if absent).
pub fn unlink<T>(
    arena: &mut Arena<T>,
    head: &mut Option<Id<T>>,
    id: Id<T>,
    next: fn(&mut T) -> &mut Option<Id<T>>,
) {
    if *head == Some(id) {
        *head = next(&mut arena[id]).take();
        return;
    }
    let mut cur = *head;
    while let Some(c) = cur {
        let n = *next(&mut arena[c]);
        if n == Some(id) {
            let after = next(&mut arena[id]).take();
            *next(&mut arena[c]) = after;
            return;
        }
        cur = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Node(u32, Option<Id<Node>>);

    #[test]
    fn push_iter_unlink() {
        let mut a = Arena::new();
        let mut head = None;
        let ids: Vec<_> = (0..4).map(|i| a.insert(Node(i, None))).collect();
        for &id in &ids {
            push(&mut a, &mut head, id, |n| &mut n.1);
        }
        let order =
            |a: &Arena<Node>, head| iter(a, head, |n| n.1).map(|id| a[id].0).collect::<Vec<_>>();
        assert_eq!(order(&a, head), vec![3, 2, 1, 0]);
        unlink(&mut a, &mut head, ids[1], |n| &mut n.1);
        assert_eq!(order(&a, head), vec![3, 2, 0]);
        unlink(&mut a, &mut head, ids[3], |n| &mut n.1);
        assert_eq!(order(&a, head), vec![2, 0]);
        unlink(&mut a, &mut head, ids[1], |n| &mut n.1);
        assert_eq!(order(&a, head), vec![2, 0]);
        unlink(&mut a, &mut head, ids[0], |n| &mut n.1);
        unlink(&mut a, &mut head, ids[2], |n| &mut n.1);
        assert_eq!(head, None);
    }
}
