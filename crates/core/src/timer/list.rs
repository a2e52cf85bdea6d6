//! The node arena's intrusive lists: every wheel slot is a doubly-linked list threaded through
//! [`Node::next`]/[`Node::prev`] by arena index, so a timer is unlinked in O(1) from wherever it
//! is, with no allocation per timer.

/// End of a list, or no free node.
pub(super) const NIL: u32 = u32::MAX;

/// One timer, or a free arena entry (`loc == LOC_VACANT`, `next` = next free entry).
///
/// Every field is four-byte aligned (the deadline is kept as two halves), so a node is not
/// padded to a multiple of eight: 28 bytes for a value with a four-byte niche (an arena id,
/// as the RSVP engine keeps one per session) where a `u64` deadline made it 32.
pub(super) struct Node<T> {
    /// Nanoseconds since the driver's epoch, low and high halves ([`Node::deadline`]).
    deadline: [u32; 2],
    pub(super) next: u32,
    pub(super) prev: u32,
    /// Which list or queue holds the node: a slot index, or one of the wheel's `LOC_*` values.
    pub(super) loc: u32,
    /// Bumped when the node is freed, so stale handles and queue entries do not match it.
    pub(super) generation: u32,
    pub(super) value: Option<T>,
}

impl<T> Node<T> {
    /// A node on no list.
    pub(super) fn new(deadline: u64, loc: u32, value: T) -> Self {
        let mut n = Node {
            deadline: [0; 2],
            next: NIL,
            prev: NIL,
            loc,
            generation: 1,
            value: Some(value),
        };
        n.set_deadline(deadline);
        n
    }

    /// When the timer is due, nanoseconds since the driver's epoch.
    pub(super) fn deadline(&self) -> u64 {
        u64::from(self.deadline[0]) | (u64::from(self.deadline[1]) << 32)
    }

    pub(super) fn set_deadline(&mut self, deadline: u64) {
        // Truncation intended: the two halves.
        self.deadline = [deadline as u32, (deadline >> 32) as u32];
    }
}

/// One list's ends. Kept outside the nodes so appending touches only the old tail node, not
/// the head too (each is a likely cache miss in a big arena).
#[derive(Clone, Copy)]
pub(super) struct Ends {
    pub(super) head: u32,
    pub(super) tail: u32,
}

impl Ends {
    pub(super) const EMPTY: Ends = Ends {
        head: NIL,
        tail: NIL,
    };

    pub(super) fn is_empty(self) -> bool {
        self.head == NIL
    }
}

/// Appends `idx` to the list.
pub(super) fn push_back<T>(nodes: &mut [Node<T>], ends: &mut Ends, idx: u32) {
    let node = &mut nodes[idx as usize];
    node.next = NIL;
    node.prev = ends.tail;
    match ends.tail {
        NIL => ends.head = idx,
        tail => nodes[tail as usize].next = idx,
    }
    ends.tail = idx;
}

/// Removes `idx` from the list.
pub(super) fn unlink<T>(nodes: &mut [Node<T>], ends: &mut Ends, idx: u32) {
    let (prev, next) = {
        let node = &nodes[idx as usize];
        (node.prev, node.next)
    };
    match prev {
        NIL => ends.head = next,
        p => nodes[p as usize].next = next,
    }
    match next {
        NIL => ends.tail = prev,
        n => nodes[n as usize].prev = prev,
    }
}
