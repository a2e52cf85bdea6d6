//! Timers: a hierarchical timer wheel (Varghese & Lauck, "Hashed and Hierarchical Timing Wheels",
//! SOSP 1987, scheme 7) with the KOM RSVP engine's fuzzy mode (seed 001 §III.B).
//!
//! # Layout
//!
//! Time is cut into ticks of [`WheelConfig::slot_width`]. There are `levels` arrays of `slots`
//! slots; a slot of level `k` covers `slots^k` ticks. A timer goes to the lowest level whose
//! current rotation (the span of one slot of level `k + 1`) holds its deadline, so level 0 holds
//! the timers of the current level-1 slot tick by tick, level 1 those of the current level-2 slot,
//! and so on. When the wheel's time enters a slot of level `k ≥ 1`, that slot is emptied into the
//! levels below (cascading); each timer cascades at most `levels - 1` times in its life.
//! Deadlines past the current top-level rotation (the horizon, `slots^levels` ticks, aligned)
//! wait in an overflow heap and move into the wheel when its time enters their rotation — the
//! seed's "additional sorted list" for "the rare event that timers exceed this time horizon".
//!
//! Every slot is an intrusive doubly-linked list threaded through one arena of nodes (indices,
//! not boxes), so insert and cancel are O(1): a node knows the list it is on. A bitmap per level
//! (with a summary word per 64 slots) finds the next occupied slot without visiting empty ones,
//! so 100,000 slots cost nothing when most are empty.
//!
//! # Precise and fuzzy firing
//!
//! - Precise (`fuzzy = false`): when the wheel's time reaches a level-0 slot, its timers are sorted
//!   by (deadline, insertion) into a run that [`TimerWheel::expire`] pops while the earliest
//!   deadline is `<= now`. Only the slot being fired is ever sorted — inserting never compares
//!   deadlines — so the seed's per-slot sorted lists (O(log n) access) are unnecessary. Timers
//!   inserted behind the wheel's time go to a small heap merged with that run.
//! - Fuzzy (`fuzzy = true`, seed §III.B): "the timers within each time slot are stored in a simple
//!   FIFO list instead of being sorted"; a level-0 slot fires as a whole once `now` reaches the
//!   slot's end, in insertion order, with no comparison per timer (the ended slot moves whole
//!   into a FIFO that `expire` pops). A timer therefore fires late by less than one slot width and
//!   never early. The seed found the gain "hardly visible" on top of a good wheel, but that firing
//!   a whole slot per wake-up cut system calls (its §V.C); we keep both and measure
//!   (docs/BENCHMARKS.md).
//!
//! # Time
//!
//! The wheel has its own time (the tick it has advanced to), moved only by `expire`. Deadlines
//! before it — in the past, or before a slot already being fired — fire at the next `expire` whose
//! `now` has reached them. A `now` earlier than a previous one is allowed: nothing moves backwards
//! and nothing fires before its time (precise: deadline `<= now`; fuzzy: slot end `<= now`).
//!
//! # Memory
//!
//! One node per pending timer: `24 + size_of::<Option<T>>()` bytes (deadline, two links, list id,
//! generation, value), rounded up to `T`'s alignment if it exceeds four — 28 bytes for an arena
//! id (whose `Option` is four bytes), 32 for `T = u32`, 40 for `T = u64`. While a timer waits in the
//! slot being fired it takes 24 more bytes there (precise) or 8 (fuzzy), and 24 in the overflow
//! heap. Fixed cost: 8 bytes per slot per level (the list ends) plus the bitmaps.
//! [`TimerWheel::heap_bytes`] adds it up.

use crate::time::{Duration, Instant};
use core::fmt;
use core::num::NonZeroU32;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

mod bitmap;
mod list;

use bitmap::Bitmap;
use list::{Ends, NIL, Node, push_back, unlink};

/// How a [`TimerWheel`] is laid out.
///
/// Values the wheel cannot use are clamped rather than rejected: `slot_width` to at least 1 ns,
/// `slots` to `2..=2^20`, `levels` to at least 1 and at most the number needed to cover every
/// representable instant. [`TimerWheel::config`] still reports the values given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WheelConfig {
    /// Time covered by one slot of the finest level.
    pub slot_width: Duration,
    /// Slots per level.
    pub slots: usize,
    /// Number of levels; level k slots are `slots^k` times wider than level 0's.
    pub levels: usize,
    /// Fuzzy mode (seed 001 §III.B): all timers of a slot fire together, in FIFO order.
    pub fuzzy: bool,
}

impl Default for WheelConfig {
    fn default() -> Self {
        WheelConfig {
            slot_width: Duration::from_millis(10),
            slots: 256,
            levels: 3,
            fuzzy: false,
        }
    }
}

/// Names one scheduled timer, for cancelling it.
///
/// A handle goes stale when its timer fires or is cancelled; a stale handle never reaches another
/// timer, because the arena slot it points to carries a generation that changes on every reuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerHandle {
    idx: u32,
    /// Never zero (node generations start at 1 and skip 0 when they wrap), so an
    /// `Option<TimerHandle>` — one per session in the engines — is 8 bytes, not 12.
    generation: NonZeroU32,
}

/// `Node::loc` values above every wheel-slot index; a slot index is `level * slots + slot`.
const LOC_VACANT: u32 = u32::MAX;
/// Fuzzy mode: its slot has ended; waits in the `firing` FIFO.
const LOC_FIRING: u32 = u32::MAX - 1;
/// Precise mode: due (slot reached, or deadline before the wheel's time), in `sorted` or `late`.
const LOC_DUE: u32 = u32::MAX - 2;
/// Beyond the horizon: in the `overflow` heap.
const LOC_OVERFLOW: u32 = u32::MAX - 3;
/// Allocated, not yet placed (never seen outside `insert`).
const LOC_UNPLACED: u32 = u32::MAX - 4;
/// Keeps `levels * slots` far below the `LOC_*` values and the slot arrays a sane size.
const MAX_SLOTS: usize = 1 << 20;
/// `next_deadline` walks a coarse slot up to this many timers to find its earliest one; a longer
/// slot is cascaded early (precise) or answered with a lower bound (fuzzy), so no single call
/// walks a crowded slot.
const SCAN_LIMIT: usize = 64;

/// An entry of the due queues or the `overflow` heap. Deleted lazily: a cancelled timer's entry
/// stays until it reaches the top or the queue is compacted, and is recognised by
/// `generation`/`loc`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Queued {
    /// Deadline (precise mode), or deadline tick (fuzzy overflow, which keeps FIFO per tick).
    key: u64,
    /// Insertion order, to break ties.
    seq: u64,
    idx: u32,
    generation: u32,
}

/// The next thing the wheel's time must stop at.
#[derive(Clone, Copy, Debug)]
enum Event {
    /// Level-0 slot `index`, holding tick `tick`.
    Slot { tick: u64, index: usize },
    /// Slot `index` of `level ≥ 1`, starting at tick `start`, must cascade.
    Cascade {
        level: usize,
        index: usize,
        start: u64,
    },
    /// The wheel is empty; the earliest overflow timer's rotation starts at `start`.
    Overflow { start: u64 },
}

/// A set of timers carrying values of type `T`.
///
/// Insert and cancel are O(1); firing costs O(1) per timer plus at most `levels - 1` cascades
/// per timer, and in precise mode O(log m) for a slot of m timers. [`TimerWheel::next_deadline`]
/// is a cached field read.
pub struct TimerWheel<T> {
    cfg: WheelConfig,
    /// Slot width in nanoseconds, at least 1.
    width: u64,
    slots: u64,
    /// `Some(log2(slots))` when `slots` is a power of two: shifts instead of divisions.
    shift: Option<u32>,
    levels: usize,
    /// `units[k] = slots^k`, ticks per slot of level k.
    units: Vec<u64>,
    /// `slots^levels`, ticks per top-level rotation; `None` when it exceeds every tick, in which
    /// case nothing overflows.
    rotation: Option<u64>,
    nodes: Vec<Node<T>>,
    free: u32,
    len: usize,
    /// Each slot's list, `level * slots + slot`.
    lists: Vec<Ends>,
    occupied: Vec<Bitmap>,
    /// The wheel's time, in ticks: every timer in a slot has a deadline tick `>= cur`.
    cur: u64,
    /// `cur / slots^k` for `k` in `0..=levels`.
    cur_q: Vec<u64>,
    /// Fuzzy mode: timers whose slot has ended, in slot order and within a slot in insertion
    /// order, as (node, generation); cancelled ones stay until popped.
    firing: VecDeque<(u32, u32)>,
    /// Fuzzy mode: a lower bound of the slot ends in `firing` (`u64::MAX` when empty).
    firing_report: u64,
    firing_stale: usize,
    /// Precise mode: the last slot reached, sorted by (deadline, insertion), latest first so the
    /// earliest pops off the end.
    sorted: Vec<Queued>,
    /// Precise mode: timers inserted with a deadline tick before `cur` (too late for `sorted`).
    late: BinaryHeap<Reverse<Queued>>,
    /// Cancelled entries still in `sorted` and `late`.
    due_stale: usize,
    overflow: BinaryHeap<Reverse<Queued>>,
    overflow_stale: usize,
    /// Node indices of the slot being cascaded or sorted.
    scratch: Vec<u32>,
    /// The back half of a two-ended slot walk.
    tail_scratch: Vec<u32>,
    seq: u64,
    /// What `next_deadline` returns, kept current by every `&mut` method.
    next: Option<u64>,
}

impl<T> fmt::Debug for TimerWheel<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerWheel")
            .field("cfg", &self.cfg)
            .field("len", &self.len)
            .field("cur_tick", &self.cur)
            .field("next", &self.next_deadline())
            .finish_non_exhaustive()
    }
}

impl<T> TimerWheel<T> {
    /// An empty wheel whose time starts at `now`.
    pub fn new(cfg: WheelConfig, now: Instant) -> Self {
        let width = u64::try_from(cfg.slot_width.as_nanos())
            .unwrap_or(u64::MAX)
            .max(1);
        let slots_usize = cfg.slots.clamp(2, MAX_SLOTS);
        let slots = slots_usize as u64;
        // Levels past the one whose rotation covers every tick would never be used.
        let max_tick = u64::MAX / width;
        let mut useful = 1;
        let mut span = slots;
        while span <= max_tick {
            useful += 1;
            match span.checked_mul(slots) {
                Some(s) => span = s,
                None => break,
            }
        }
        let levels = cfg.levels.clamp(1, useful);
        let units: Vec<u64> = (0..levels)
            .map(|k| slots.saturating_pow(k as u32))
            .collect();
        let rotation = slots.checked_pow(levels as u32);
        let mut wheel = TimerWheel {
            cfg,
            width,
            slots,
            shift: slots.is_power_of_two().then(|| slots.trailing_zeros()),
            levels,
            units,
            rotation,
            nodes: Vec::new(),
            free: NIL,
            len: 0,
            lists: vec![Ends::EMPTY; levels * slots_usize],
            occupied: (0..levels).map(|_| Bitmap::new(slots_usize)).collect(),
            cur: now.as_nanos() / width,
            cur_q: vec![0; levels + 1],
            firing: VecDeque::new(),
            firing_report: u64::MAX,
            firing_stale: 0,
            sorted: Vec::new(),
            late: BinaryHeap::new(),
            due_stale: 0,
            overflow: BinaryHeap::new(),
            overflow_stale: 0,
            scratch: Vec::new(),
            tail_scratch: Vec::new(),
            seq: 0,
            next: None,
        };
        wheel.compute_cur_q();
        wheel
    }

    /// Make room for `additional` more pending timers up front, so an engine told how many
    /// sessions to expect does not grow (and double) its timer arena while they arrive.
    pub fn reserve(&mut self, additional: usize) {
        self.nodes.reserve_exact(additional);
    }

    /// The configuration.
    pub fn config(&self) -> WheelConfig {
        self.cfg
    }

    /// Number of pending timers.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no timer is pending.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Schedule `value` to fire at `deadline` (a deadline in the past fires at the next `expire`).
    pub fn insert(&mut self, deadline: Instant, value: T) -> TimerHandle {
        let d = deadline.as_nanos();
        let handle = self.alloc(d, value);
        self.place(handle.idx);
        let report = self.report(d);
        self.next = Some(self.next.map_or(report, |n| n.min(report)));
        handle
    }

    /// Cancel a pending timer, returning its value; `None` if it already fired or was cancelled.
    pub fn cancel(&mut self, handle: TimerHandle) -> Option<T> {
        let node = self.live_node(handle)?;
        let (loc, d) = (node.loc, node.deadline());
        let slot_lists = self.lists.len() as u32;
        match loc {
            l if l < slot_lists => self.unlink_slot(l as usize, handle.idx),
            LOC_FIRING => self.firing_stale += 1,
            LOC_DUE => self.due_stale += 1,
            _ => self.overflow_stale += 1,
        }
        let value = self.release(handle.idx);
        if self.len == 0 {
            // Everything left in the heaps is stale.
            self.sorted.clear();
            self.late.clear();
            self.overflow.clear();
            self.firing.clear();
            self.firing_report = u64::MAX;
            self.due_stale = 0;
            self.overflow_stale = 0;
            self.firing_stale = 0;
            self.next = None;
        } else {
            self.compact_heaps();
            // A cancelled firing timer leaves the lower bound `firing_report` valid.
            if loc != LOC_FIRING && self.next == Some(self.report(d)) {
                self.refresh_next();
            }
        }
        value
    }

    /// Move a pending timer to a new deadline, keeping its value. Returns the timer's new handle
    /// (the old one goes stale, and it counts as inserted now for tie order), or `None` if
    /// `handle` is stale.
    pub fn reschedule(&mut self, handle: TimerHandle, deadline: Instant) -> Option<TimerHandle> {
        let value = self.cancel(handle)?;
        Some(self.insert(deadline, value))
    }

    /// The deadline of a pending timer.
    pub fn deadline(&self, handle: TimerHandle) -> Option<Instant> {
        self.live_node(handle)
            .map(|n| Instant::from_nanos(n.deadline()))
    }

    /// The value of a pending timer.
    pub fn get(&self, handle: TimerHandle) -> Option<&T> {
        self.live_node(handle)?.value.as_ref()
    }

    /// The value of a pending timer, mutably.
    pub fn get_mut(&mut self, handle: TimerHandle) -> Option<&mut T> {
        self.live_node(handle)?;
        self.nodes[handle.idx as usize].value.as_mut()
    }

    /// When [`TimerWheel::expire`] will next have something to return: the earliest deadline in
    /// precise mode; in fuzzy mode, the end of the earliest non-empty slot.
    ///
    /// A cached value, kept current by every change. In fuzzy mode it may be earlier than that
    /// slot end (never later) when the earliest timers sit in a crowded coarse slot or in a slot
    /// that has already fired; an `expire` at that time then returns nothing or fires at once.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.next.map(Instant::from_nanos)
    }

    /// Remove and return one timer that is due at `now`, with its deadline; `None` when no more
    /// are due. Call repeatedly until `None`.
    pub fn expire(&mut self, now: Instant) -> Option<(Instant, T)> {
        let out = if self.cfg.fuzzy {
            self.expire_fuzzy(now.as_nanos())
        } else {
            self.expire_precise(now.as_nanos())
        };
        self.compact_heaps();
        self.refresh_next();
        out.map(|(d, v)| (Instant::from_nanos(d), v))
    }

    /// An estimate of the heap memory the wheel holds, in bytes (not counting heap memory owned
    /// by the values themselves). Per pending timer it is [`Self::BYTES_PER_TIMER`] (one arena
    /// node, see the module docs), plus a queue entry while the timer waits in a fired slot or the
    /// overflow heap; arrays grow by doubling, so capacity can be up to twice what is in use.
    pub fn heap_bytes(&self) -> usize {
        let queued = self.sorted.capacity() + self.late.capacity() + self.overflow.capacity();
        self.nodes.capacity() * size_of::<Node<T>>()
            + (self.scratch.capacity() + self.tail_scratch.capacity()) * size_of::<u32>()
            + self.firing.capacity() * size_of::<(u32, u32)>()
            + self.lists.capacity() * size_of::<Ends>()
            + self.occupied.iter().map(Bitmap::heap_bytes).sum::<usize>()
            + self.occupied.capacity() * size_of::<Bitmap>()
            + (self.units.capacity() + self.cur_q.capacity()) * size_of::<u64>()
            + queued * size_of::<Reverse<Queued>>()
    }

    /// Bytes of arena per pending timer for this `T` (the node size).
    pub const BYTES_PER_TIMER: usize = size_of::<Node<T>>();

    // ---- arena ----

    fn live_node(&self, h: TimerHandle) -> Option<&Node<T>> {
        self.nodes
            .get(h.idx as usize)
            .filter(|n| n.generation == h.generation.get() && n.loc != LOC_VACANT)
    }

    fn alloc(&mut self, deadline: u64, value: T) -> TimerHandle {
        self.len += 1;
        if self.free != NIL {
            let idx = self.free;
            let n = &mut self.nodes[idx as usize];
            self.free = n.next;
            n.set_deadline(deadline);
            n.value = Some(value);
            n.loc = LOC_UNPLACED;
            return TimerHandle {
                idx,
                generation: NonZeroU32::new(n.generation).unwrap_or(NonZeroU32::MIN),
            };
        }
        // 2^32 - 1 nodes would take over 128 GiB; memory runs out long before this can fail.
        let idx = u32::try_from(self.nodes.len())
            .ok()
            .filter(|&i| i != NIL)
            .expect("timer wheel: more than 2^32 - 2 pending timers");
        self.nodes.push(Node::new(deadline, LOC_UNPLACED, value));
        TimerHandle {
            idx,
            generation: NonZeroU32::MIN,
        }
    }

    /// Frees a node that is on no list, returning its value.
    fn release(&mut self, idx: u32) -> Option<T> {
        let n = &mut self.nodes[idx as usize];
        n.loc = LOC_VACANT;
        // A new generation, so handles and heap entries naming this node go stale.
        n.generation = n.generation.checked_add(1).unwrap_or(1);
        n.next = self.free;
        self.free = idx;
        self.len -= 1;
        n.value.take()
    }

    fn is_live(nodes: &[Node<T>], q: &Queued, loc: u32) -> bool {
        nodes
            .get(q.idx as usize)
            .is_some_and(|n| n.generation == q.generation && n.loc == loc)
    }

    // ---- geometry ----

    fn div_slots(&self, q: u64) -> u64 {
        match self.shift {
            Some(s) => q >> s,
            None => q / self.slots,
        }
    }

    fn compute_cur_q(&mut self) {
        let mut q = self.cur;
        self.cur_q[0] = q;
        for k in 1..=self.levels {
            q = self.div_slots(q);
            self.cur_q[k] = q;
        }
    }

    /// Index of the slot holding the wheel's time at `level`.
    fn cur_index(&self, level: usize) -> usize {
        (self.cur_q[level] - self.cur_q[level + 1] * self.slots) as usize
    }

    /// End of the slot holding `tick`, saturating at the last instant.
    fn slot_end(&self, tick: u64) -> u64 {
        tick.checked_add(1)
            .and_then(|t| t.checked_mul(self.width))
            .unwrap_or(u64::MAX)
    }

    /// What `next_deadline` reports for a timer due at `deadline`.
    fn report(&self, deadline: u64) -> u64 {
        if self.cfg.fuzzy {
            self.slot_end(deadline / self.width)
        } else {
            deadline
        }
    }

    /// Fuzzy mode: the last tick whose slot has ended by `now` (a slot ending past the last
    /// instant ends at it).
    fn fuzzy_fire_max(&self, now: u64) -> Option<u64> {
        let now_tick = now / self.width;
        if now == u64::MAX {
            Some(now_tick)
        } else {
            now_tick.checked_sub(1)
        }
    }

    // ---- placement ----

    /// Puts a node (on no list) where its deadline belongs relative to the wheel's time.
    fn place(&mut self, idx: u32) {
        let d = self.nodes[idx as usize].deadline();
        let tick = d / self.width;
        if tick < self.cur {
            self.place_past(idx, tick);
            return;
        }
        // Lowest level k whose current rotation (one slot of level k + 1) holds the tick.
        let mut q = tick;
        for k in 0..self.levels {
            let up = self.div_slots(q);
            if up == self.cur_q[k + 1] {
                let slot = (q - up * self.slots) as usize;
                let list = k * self.slots as usize + slot;
                self.nodes[idx as usize].loc = list as u32;
                push_back(&mut self.nodes, &mut self.lists[list], idx);
                self.occupied[k].set(slot);
                return;
            }
            q = up;
        }
        let key = if self.cfg.fuzzy { tick } else { d };
        self.push_queued(idx, key, LOC_OVERFLOW);
    }

    fn place_past(&mut self, idx: u32, tick: u64) {
        if self.cfg.fuzzy {
            let node = &mut self.nodes[idx as usize];
            node.loc = LOC_FIRING;
            self.firing.push_back((idx, node.generation));
            self.firing_report = self.firing_report.min(self.slot_end(tick));
        } else {
            let d = self.nodes[idx as usize].deadline();
            self.push_queued(idx, d, LOC_DUE);
        }
    }

    fn push_queued(&mut self, idx: u32, key: u64, loc: u32) {
        let n = &mut self.nodes[idx as usize];
        n.loc = loc;
        let q = Reverse(Queued {
            key,
            seq: self.seq,
            idx,
            generation: n.generation,
        });
        self.seq += 1;
        if loc == LOC_DUE {
            self.late.push(q);
        } else {
            self.overflow.push(q);
        }
    }

    fn unlink_slot(&mut self, list: usize, idx: u32) {
        unlink(&mut self.nodes, &mut self.lists[list], idx);
        if self.lists[list].is_empty() {
            let slots = self.slots as usize;
            self.occupied[list / slots].clear(list % slots);
        }
    }

    /// Empties a slot's list into `scratch`, in list order. Walks from both ends at once: the
    /// two pointer chases are independent, so their cache misses overlap (a slot's nodes are
    /// scattered over the arena, and this walk is most of the cost of cascading and sorting).
    fn take_slot(&mut self, level: usize, index: usize) {
        let list = level * self.slots as usize + index;
        let ends = core::mem::replace(&mut self.lists[list], Ends::EMPTY);
        self.occupied[level].clear(index);
        self.scratch.clear();
        if ends.is_empty() {
            return;
        }
        let (mut front, mut back) = (ends.head, ends.tail);
        let mut tail_part = core::mem::take(&mut self.tail_scratch);
        tail_part.clear();
        loop {
            self.scratch.push(front);
            if front == back {
                break;
            }
            tail_part.push(back);
            let next = self.nodes[front as usize].next;
            if next == back {
                break;
            }
            front = next;
            back = self.nodes[back as usize].prev;
        }
        self.scratch.extend(tail_part.iter().rev());
        self.tail_scratch = tail_part;
    }

    /// Cascades a slot of `level ≥ 1` into the levels below (the wheel's time has entered it).
    fn cascade(&mut self, level: usize, index: usize) {
        self.take_slot(level, index);
        let nodes = core::mem::take(&mut self.scratch);
        for &n in &nodes {
            self.place(n);
        }
        self.scratch = nodes;
    }

    // ---- moving the wheel's time ----

    /// Moves the wheel's time forward to `tick`. No timer may be due before `tick` (callers only
    /// move to the next event or across empty time); slots of level ≥ 1 that hold `tick` cascade
    /// here (top down, so each lands in the level below), and overflow timers of a newly entered
    /// rotation come in.
    fn set_cur(&mut self, tick: u64) {
        if tick <= self.cur {
            return;
        }
        let old_rotation = self.cur_q[self.levels];
        self.cur = tick;
        self.compute_cur_q();
        for k in (1..self.levels).rev() {
            let i = self.cur_index(k);
            if self.occupied[k].get(i) {
                self.cascade(k, i);
            }
        }
        if self.cur_q[self.levels] != old_rotation {
            self.migrate_overflow();
        }
    }

    /// Moves the wheel's time to a cascade or overflow event's start.
    fn enter(&mut self, start: u64) {
        if start > self.cur {
            self.set_cur(start);
        } else {
            // Not reachable while the overflow heap only holds later rotations; guards the
            // event loops against spinning if it ever did not.
            self.migrate_overflow();
        }
    }

    fn migrate_overflow(&mut self) {
        while let Some(q) = self.overflow_peek_live() {
            let tick = if self.cfg.fuzzy {
                q.key
            } else {
                q.key / self.width
            };
            let rotation = self.rotation.map_or(0, |r| tick / r);
            if rotation > self.cur_q[self.levels] {
                break;
            }
            self.overflow.pop();
            self.place(q.idx);
        }
    }

    /// The earliest live due entry, and whether it is in `sorted` (else in `late`).
    fn due_peek_live(&mut self) -> Option<(Queued, bool)> {
        while let Some(q) = self.sorted.last() {
            if Self::is_live(&self.nodes, q, LOC_DUE) {
                break;
            }
            self.sorted.pop();
            self.due_stale = self.due_stale.saturating_sub(1);
        }
        while let Some(Reverse(q)) = self.late.peek() {
            if Self::is_live(&self.nodes, q, LOC_DUE) {
                break;
            }
            self.late.pop();
            self.due_stale = self.due_stale.saturating_sub(1);
        }
        match (self.sorted.last(), self.late.peek()) {
            (Some(s), Some(Reverse(l))) if l < s => Some((*l, false)),
            (Some(s), _) => Some((*s, true)),
            (None, Some(Reverse(l))) => Some((*l, false)),
            (None, None) => None,
        }
    }

    fn overflow_peek_live(&mut self) -> Option<Queued> {
        while let Some(&Reverse(q)) = self.overflow.peek() {
            if Self::is_live(&self.nodes, &q, LOC_OVERFLOW) {
                return Some(q);
            }
            self.overflow.pop();
            self.overflow_stale = self.overflow_stale.saturating_sub(1);
        }
        None
    }

    /// Rebuilds a heap when most of it is cancelled entries, so they cannot pile up.
    fn compact_heaps(&mut self) {
        let nodes = &self.nodes;
        if self.due_stale > 32 && self.due_stale * 2 > self.sorted.len() + self.late.len() {
            self.sorted.retain(|q| Self::is_live(nodes, q, LOC_DUE));
            self.late
                .retain(|Reverse(q)| Self::is_live(nodes, q, LOC_DUE));
            self.due_stale = 0;
        }
        if self.overflow_stale > 32 && self.overflow_stale * 2 > self.overflow.len() {
            self.overflow
                .retain(|Reverse(q)| Self::is_live(nodes, q, LOC_OVERFLOW));
            self.overflow_stale = 0;
        }
        if self.firing_stale > 32 && self.firing_stale * 2 > self.firing.len() {
            self.firing.retain(|&(idx, generation)| {
                let node = &nodes[idx as usize];
                node.generation == generation && node.loc == LOC_FIRING
            });
            self.firing_stale = 0;
        }
    }

    /// The earliest slot that needs attention: a level-0 slot of the current level-1 slot, else
    /// the first occupied slot after the current one on the lowest level that has one, else the
    /// overflow heap. Earlier levels' candidates always come first in time because levels nest.
    fn earliest_event(&mut self) -> Option<Event> {
        let slots = self.slots;
        if let Some(j) = self.occupied[0].first_from(self.cur_index(0)) {
            let tick = (self.cur_q[1].saturating_mul(slots)).saturating_add(j as u64);
            return Some(Event::Slot { tick, index: j });
        }
        for k in 1..self.levels {
            // The slot holding the wheel's time is always empty above level 0 (cascaded on entry).
            if let Some(j) = self.occupied[k].first_from(self.cur_index(k) + 1) {
                let q = (self.cur_q[k + 1].saturating_mul(slots)).saturating_add(j as u64);
                return Some(Event::Cascade {
                    level: k,
                    index: j,
                    start: q.saturating_mul(self.units[k]),
                });
            }
        }
        let q = self.overflow_peek_live()?;
        let tick = if self.cfg.fuzzy {
            q.key
        } else {
            q.key / self.width
        };
        let start = self.rotation.map_or(tick, |r| tick / r * r);
        Some(Event::Overflow { start })
    }

    /// Precise mode: the slot's timers are sorted (the one place anything is) into `sorted`, and
    /// the wheel's time moves past the slot.
    fn load_slot(&mut self, tick: u64, index: usize) {
        // Only called with nothing due; anything left over would keep its place in `late`.
        for q in self.sorted.drain(..) {
            self.late.push(Reverse(q));
        }
        self.take_slot(0, index);
        let mut seq = self.seq;
        self.sorted.extend(self.scratch.iter().map(|&n| {
            let node = &mut self.nodes[n as usize];
            node.loc = LOC_DUE;
            seq += 1;
            Queued {
                key: node.deadline(),
                seq: seq - 1,
                idx: n,
                generation: node.generation,
            }
        }));
        self.seq = seq;
        self.sorted.sort_unstable_by(|a, b| b.cmp(a));
        self.set_cur(tick.saturating_add(1));
    }

    fn expire_precise(&mut self, now: u64) -> Option<(u64, T)> {
        let now_tick = now / self.width;
        loop {
            if let Some((q, in_sorted)) = self.due_peek_live() {
                if q.key > now {
                    return None;
                }
                if in_sorted {
                    self.sorted.pop();
                } else {
                    self.late.pop();
                }
                return self.release(q.idx).map(|v| (q.key, v));
            }
            match self.earliest_event() {
                Some(Event::Slot { tick, index }) if tick <= now_tick => {
                    self.load_slot(tick, index)
                }
                Some(Event::Cascade { start, .. } | Event::Overflow { start })
                    if start <= now_tick =>
                {
                    self.enter(start)
                }
                _ => {
                    // Nothing until after `now`: skip the empty time so inserts land low.
                    self.set_cur(now_tick);
                    return None;
                }
            }
        }
    }

    /// The first live entry of `firing`, dropping cancelled ones.
    fn firing_front_live(&mut self) -> Option<u32> {
        while let Some(&(idx, generation)) = self.firing.front() {
            let node = &self.nodes[idx as usize];
            if node.generation == generation && node.loc == LOC_FIRING {
                return Some(idx);
            }
            self.firing.pop_front();
            self.firing_stale = self.firing_stale.saturating_sub(1);
        }
        self.firing_report = u64::MAX;
        None
    }

    fn expire_fuzzy(&mut self, now: u64) -> Option<(u64, T)> {
        let now_tick = now / self.width;
        let fire_max = self.fuzzy_fire_max(now);
        let ended = |tick: u64| fire_max.is_some_and(|m| tick <= m);
        loop {
            if let Some(idx) = self.firing_front_live() {
                // The check only fails if `now` went backwards.
                let d = self.nodes[idx as usize].deadline();
                if !ended(d / self.width) {
                    return None;
                }
                self.firing.pop_front();
                return self.release(idx).map(|v| (d, v));
            }
            match self.earliest_event() {
                Some(Event::Slot { tick, index }) if ended(tick) => {
                    // Seed §III.B: the slot has ended, so all of it fires, front to back, with no
                    // comparison per timer. Taking it whole (rather than popping the list one
                    // timer per call) lets `take_slot` overlap the cache misses of its nodes.
                    self.take_slot(0, index);
                    for &n in &self.scratch {
                        let node = &mut self.nodes[n as usize];
                        node.loc = LOC_FIRING;
                        self.firing.push_back((n, node.generation));
                    }
                    self.firing_report = self.firing_report.min(self.slot_end(tick));
                    self.set_cur(tick.saturating_add(1));
                }
                Some(Event::Cascade { start, .. } | Event::Overflow { start })
                    if start <= now_tick =>
                {
                    self.enter(start)
                }
                _ => {
                    self.set_cur(now_tick);
                    return None;
                }
            }
        }
    }

    /// Recomputes the cached `next` after the earliest timer may have gone.
    fn refresh_next(&mut self) {
        self.next = if self.cfg.fuzzy {
            self.next_fuzzy()
        } else {
            self.next_precise()
        };
    }

    fn next_precise(&mut self) -> Option<u64> {
        loop {
            if let Some((q, _)) = self.due_peek_live() {
                return Some(q.key);
            }
            match self.earliest_event()? {
                // Sorting the next slot now is work `expire` would do anyway when it is reached;
                // timers inserted before it meanwhile go to `late` and stay exact.
                Event::Slot { tick, index } => self.load_slot(tick, index),
                Event::Cascade {
                    level,
                    index,
                    start,
                } => match self.scan_min(level, index) {
                    Some(min) => return Some(min),
                    None => self.set_cur(start),
                },
                Event::Overflow { .. } => return self.overflow_peek_live().map(|q| q.key),
            }
        }
    }

    fn next_fuzzy(&mut self) -> Option<u64> {
        if self.firing_front_live().is_some() {
            return Some(self.firing_report);
        }
        let tick = match self.earliest_event()? {
            Event::Slot { tick, .. } => tick,
            // Cascading early would move the wheel's time past `now`, and timers inserted before
            // it would then fire early; a crowded coarse slot is answered by its first slot's end.
            Event::Cascade {
                level,
                index,
                start,
            } => self
                .scan_min(level, index)
                .map_or(start, |min| min / self.width),
            Event::Overflow { .. } => self.overflow_peek_live()?.key,
        };
        Some(self.slot_end(tick))
    }

    /// The earliest deadline in a slot of at most [`SCAN_LIMIT`] timers; `None` if it holds more.
    fn scan_min(&self, level: usize, index: usize) -> Option<u64> {
        let mut n = self.lists[level * self.slots as usize + index].head;
        let mut min = u64::MAX;
        for _ in 0..SCAN_LIMIT {
            let node = self.nodes.get(n as usize)?;
            min = min.min(node.deadline());
            n = node.next;
            if n == NIL {
                return Some(min);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const MS: u64 = 1_000_000;

    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    fn cfg(slots: usize, levels: usize, fuzzy: bool) -> WheelConfig {
        WheelConfig {
            slot_width: Duration::from_millis(1),
            slots,
            levels,
            fuzzy,
        }
    }

    fn drain<T>(w: &mut TimerWheel<T>, now: Instant) -> Vec<(Instant, T)> {
        std::iter::from_fn(|| w.expire(now)).collect()
    }

    /// An engine keeps an `Option<TimerHandle>` per session: it must stay two words of 4.
    #[test]
    fn an_optional_handle_is_eight_bytes_and_a_wrapped_generation_still_goes_stale() {
        assert_eq!(size_of::<Option<TimerHandle>>(), 8);
        let mut w = TimerWheel::new(cfg(8, 2, false), ms(0));
        let h = w.insert(ms(5), 1u32);
        // The node's generation about to wrap: the next ones skip 0 (a handle cannot hold it).
        w.nodes[h.idx as usize].generation = u32::MAX;
        let h = TimerHandle {
            idx: h.idx,
            generation: NonZeroU32::MAX,
        };
        assert_eq!(w.cancel(h), Some(1));
        let h2 = w.insert(ms(5), 2);
        assert_eq!(h2.idx, h.idx);
        assert_eq!(h2.generation.get(), 1);
        assert_eq!(w.cancel(h), None, "the old handle is stale");
        assert_eq!(w.cancel(h2), Some(2));
    }

    #[test]
    fn precise_fires_in_deadline_order_with_ties_in_insertion_order() {
        let mut w = TimerWheel::new(cfg(8, 2, false), Instant::ZERO);
        // Same slot (1 ms wide), inserted out of order; two ties at 3.5 ms.
        let times = [3_700_000, 3_500_000, 3_100_000, 3_500_000, 3_000_000];
        for (i, &t) in times.iter().enumerate() {
            w.insert(Instant::from_nanos(t), i);
        }
        assert_eq!(w.next_deadline(), Some(Instant::from_nanos(3_000_000)));
        assert!(drain(&mut w, Instant::from_nanos(2_999_999)).is_empty());
        let fired: Vec<_> = drain(&mut w, Instant::from_nanos(3_500_000))
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        assert_eq!(fired, vec![4, 2, 1, 3]);
        assert_eq!(w.next_deadline(), Some(Instant::from_nanos(3_700_000)));
        assert_eq!(
            drain(&mut w, ms(10)),
            vec![(Instant::from_nanos(3_700_000), 0)]
        );
        assert!(w.is_empty());
        assert_eq!(w.next_deadline(), None);
    }

    #[test]
    fn fuzzy_fires_whole_slot_after_its_end_in_fifo_order() {
        let mut w = TimerWheel::new(cfg(8, 2, true), Instant::ZERO);
        for (i, t) in [3_900_000, 3_100_000, 3_500_000].into_iter().enumerate() {
            w.insert(Instant::from_nanos(t), i);
        }
        // The slot [3 ms, 4 ms) ends at 4 ms.
        assert_eq!(w.next_deadline(), Some(ms(4)));
        assert!(drain(&mut w, Instant::from_nanos(3_999_999)).is_empty());
        let fired: Vec<_> = drain(&mut w, ms(4)).into_iter().map(|(_, v)| v).collect();
        assert_eq!(fired, vec![0, 1, 2], "insertion order, not deadline order");
        assert_eq!(w.next_deadline(), None);
    }

    #[test]
    fn fuzzy_past_list_is_fifo() {
        let mut w = TimerWheel::new(cfg(8, 2, true), ms(100));
        for (i, t) in [50, 10, 50, 99, 0, 50].into_iter().enumerate() {
            w.insert(ms(t), i);
        }
        let fired: Vec<_> = drain(&mut w, ms(100)).into_iter().map(|x| x.1).collect();
        assert_eq!(fired, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn fuzzy_fires_late_by_less_than_a_slot_never_early() {
        let width = 10 * MS;
        let c = WheelConfig {
            slot_width: Duration::from_nanos(width),
            fuzzy: true,
            ..WheelConfig::default()
        };
        let mut w = TimerWheel::new(c, Instant::ZERO);
        let deadlines: Vec<u64> = (0..500).map(|i| (i * 7_919_993) % (60_000 * MS)).collect();
        for (i, &d) in deadlines.iter().enumerate() {
            w.insert(Instant::from_nanos(d), i);
        }
        let mut now = 0;
        let mut fired = 0;
        while now <= 61_000 * MS {
            while let Some((d, i)) = w.expire(Instant::from_nanos(now)) {
                assert_eq!(d.as_nanos(), deadlines[i]);
                assert!(d.as_nanos() <= now, "early");
                assert!(
                    now - d.as_nanos() < width + 3 * MS,
                    "late by more than a slot"
                );
                fired += 1;
            }
            now += 3 * MS;
        }
        assert_eq!(fired, deadlines.len());
    }

    #[test]
    fn cancel_and_stale_handles() {
        let mut w = TimerWheel::new(WheelConfig::default(), Instant::ZERO);
        let a = w.insert(ms(100), "a");
        let b = w.insert(ms(200), "b");
        assert_eq!(w.len(), 2);
        assert_eq!(w.deadline(a), Some(ms(100)));
        assert_eq!(w.get(b), Some(&"b"));
        assert_eq!(w.cancel(a), Some("a"));
        assert_eq!(w.cancel(a), None);
        assert_eq!(w.deadline(a), None);
        assert_eq!(w.next_deadline(), Some(ms(200)));
        // The freed node is reused; the stale handle must not reach the new timer.
        let c = w.insert(ms(300), "c");
        assert_eq!(c.idx, a.idx);
        assert_ne!(c, a);
        assert_eq!(w.cancel(a), None);
        assert_eq!(w.get(a), None);
        assert_eq!(w.len(), 2);
        assert_eq!(drain(&mut w, ms(250)), vec![(ms(200), "b")]);
        assert_eq!(w.cancel(b), None, "fired handle is stale");
        if let Some(v) = w.get_mut(c) {
            *v = "C";
        }
        let c2 = w.reschedule(c, ms(400)).unwrap();
        assert_eq!(w.cancel(c), None);
        assert_eq!(w.deadline(c2), Some(ms(400)));
        assert_eq!(drain(&mut w, ms(1000)), vec![(ms(400), "C")]);
        assert!(w.is_empty());
    }

    #[test]
    fn cancel_in_every_location() {
        for fuzzy in [false, true] {
            let mut w = TimerWheel::new(cfg(4, 2, fuzzy), Instant::ZERO);
            // Level 0, level 1, overflow (horizon 16 ms), and due/past after expire.
            let h: Vec<_> = [2, 9, 100, 5_000, 4]
                .iter()
                .map(|&t| w.insert(ms(t), t))
                .collect();
            assert_eq!(drain(&mut w, ms(3)), vec![(ms(2), 2)]);
            let late = w.insert(ms(1), 1); // before the wheel's time
            for (i, &t) in [9, 100, 5_000, 4].iter().enumerate() {
                assert_eq!(w.cancel(h[i + 1]), Some(t));
            }
            assert_eq!(w.cancel(late), Some(1));
            assert!(w.is_empty());
            assert_eq!(w.next_deadline(), None);
            assert!(drain(&mut w, Instant::MAX).is_empty());
        }
    }

    #[test]
    fn past_deadlines_fire_at_next_expire() {
        for fuzzy in [false, true] {
            let mut w = TimerWheel::new(cfg(16, 2, fuzzy), ms(1000));
            w.insert(ms(5), 'a');
            w.insert(Instant::ZERO, 'b');
            assert!(w.next_deadline().unwrap() <= ms(1000));
            let fired: Vec<_> = drain(&mut w, ms(1000)).into_iter().map(|x| x.1).collect();
            assert_eq!(fired.len(), 2, "fuzzy={fuzzy}");
            // After the wheel has moved on, a deadline behind it still fires at once.
            w.insert(ms(2000), 'c');
            assert_eq!(drain(&mut w, ms(3000)).len(), 1);
            w.insert(ms(2500), 'd');
            assert_eq!(drain(&mut w, ms(3000)), vec![(ms(2500), 'd')]);
        }
    }

    #[test]
    fn now_going_backwards_neither_panics_nor_fires_early() {
        for fuzzy in [false, true] {
            let mut w = TimerWheel::new(cfg(4, 2, fuzzy), Instant::ZERO);
            for t in [1, 5, 20, 70, 300] {
                w.insert(ms(t), t);
            }
            assert_eq!(drain(&mut w, ms(50)).len(), 3);
            assert!(drain(&mut w, ms(10)).is_empty());
            w.insert(ms(30), 30);
            w.insert(ms(8), 8);
            let back: Vec<_> = drain(&mut w, ms(10)).into_iter().map(|x| x.1).collect();
            if fuzzy {
                // The firing queue is FIFO: 30 ms heads it and is not due at 10 ms.
                assert!(back.is_empty() || back == vec![8]);
            } else {
                assert_eq!(back, vec![8]);
            }
            assert!(drain(&mut w, Instant::ZERO).is_empty());
            let rest: Vec<_> = drain(&mut w, ms(400)).into_iter().map(|x| x.1).collect();
            assert_eq!(rest.len() + back.len(), 4);
            assert!(w.is_empty());
        }
    }

    #[test]
    fn instant_max_deadline_goes_to_overflow_and_fires_at_max() {
        for fuzzy in [false, true] {
            for width in [1, 7, 10 * MS] {
                let c = WheelConfig {
                    slot_width: Duration::from_nanos(width),
                    fuzzy,
                    ..WheelConfig::default()
                };
                let mut w = TimerWheel::new(c, Instant::ZERO);
                let h = w.insert(Instant::MAX, 1);
                w.insert(ms(10), 0);
                assert!(drain(&mut w, ms(100)).len() == 1);
                assert_eq!(w.next_deadline(), Some(Instant::MAX));
                assert_eq!(w.deadline(h), Some(Instant::MAX));
                assert!(drain(&mut w, Instant::from_nanos(u64::MAX - 1)).len() <= 1);
                let all = w.len();
                assert_eq!(drain(&mut w, Instant::MAX).len(), all);
                assert!(w.is_empty(), "fuzzy={fuzzy} width={width}");
                // Expiring at the end of time again is harmless.
                w.insert(Instant::MAX, 2);
                assert_eq!(drain(&mut w, Instant::MAX), vec![(Instant::MAX, 2)]);
            }
        }
    }

    #[test]
    fn overflow_moves_into_wheel_when_horizon_reaches_it() {
        for fuzzy in [false, true] {
            // Horizon: 4 * 4 slots of 1 ms = 16 ms.
            let mut w = TimerWheel::new(cfg(4, 2, fuzzy), Instant::ZERO);
            let deadlines = [17, 1000, 40, 15, 16, 33, 2, 64, 65, 10_000];
            for &d in &deadlines {
                w.insert(ms(d), d);
            }
            assert!(!w.overflow.is_empty());
            let mut sorted = deadlines.to_vec();
            sorted.sort();
            let mut out = Vec::new();
            for now in 0..=10_001 {
                for (t, v) in drain(&mut w, ms(now)) {
                    assert_eq!(t, ms(v));
                    let lateness = now - v;
                    assert!(lateness <= u64::from(fuzzy), "fired at {now} ms: {v}");
                    out.push(v);
                }
            }
            assert_eq!(out, sorted);
        }
    }

    #[test]
    fn cascades_through_levels_exactly() {
        // Non-power-of-two slots exercise the division path.
        for slots in [3, 10, 64] {
            let mut w = TimerWheel::new(cfg(slots, 3, false), Instant::ZERO);
            let deadlines: Vec<u64> = (0..300).map(|i| (i * 37 + i * i) % 5000).collect();
            for (i, &d) in deadlines.iter().enumerate() {
                w.insert(Instant::from_nanos(d * MS + 123), i);
            }
            let mut now = 0;
            let mut seen = 0;
            while let Some(next) = w.next_deadline() {
                assert!(next.as_nanos() >= now);
                now = next.as_nanos();
                let fired = drain(&mut w, next);
                assert!(!fired.is_empty(), "next_deadline must be exact");
                for (t, i) in fired {
                    assert_eq!(t.as_nanos(), deadlines[i] * MS + 123);
                    assert_eq!(t, next);
                    seen += 1;
                }
            }
            assert_eq!(seen, deadlines.len());
        }
    }

    #[test]
    fn next_deadline_stays_exact_when_the_earliest_is_cancelled() {
        let mut w = TimerWheel::new(WheelConfig::default(), Instant::ZERO);
        // 100 timers in one level-1 slot (more than SCAN_LIMIT) and a few in a later one.
        let hs: Vec<_> = (0..100).map(|i| w.insert(ms(3000 + i), i)).collect();
        w.insert(ms(9000), 1000);
        for (i, h) in hs.iter().enumerate() {
            assert_eq!(w.next_deadline(), Some(ms(3000 + i as u64)));
            w.cancel(*h);
        }
        assert_eq!(w.next_deadline(), Some(ms(9000)));
        let fuzzy = WheelConfig {
            fuzzy: true,
            ..WheelConfig::default()
        };
        let mut w = TimerWheel::new(fuzzy, Instant::ZERO);
        w.insert(ms(3005), 0);
        // A sparse coarse slot is scanned: exact slot end.
        assert_eq!(w.next_deadline(), Some(ms(3010)));
        for i in 0..100 {
            w.insert(ms(3020 + i), 0);
        }
        assert!(w.next_deadline().unwrap() <= ms(3010));
    }

    #[test]
    fn many_slots_are_fine() {
        let c = WheelConfig {
            slot_width: Duration::from_micros(100),
            slots: 100_000,
            levels: 2,
            fuzzy: false,
        };
        let mut w = TimerWheel::new(c, Instant::ZERO);
        w.insert(Instant::from_secs(9), 1);
        w.insert(Instant::from_secs(3600), 2);
        assert_eq!(w.next_deadline(), Some(Instant::from_secs(9)));
        // Walking 10 s in 1 ms steps touches 100,000 empty slots; the bitmaps skip them.
        for step in 0..10_000 {
            let fired = drain(&mut w, ms(step));
            assert_eq!(fired.is_empty(), step != 9000);
        }
        assert_eq!(drain(&mut w, Instant::from_secs(3600)).len(), 1);
    }

    #[test]
    fn degenerate_configs_do_not_panic() {
        let odd = [
            (Duration::ZERO, 0, 0),
            (Duration::from_nanos(1), 1, 1),
            (Duration::MAX, usize::MAX, usize::MAX),
            (Duration::from_nanos(3), 2, 200),
            (Duration::from_secs(1), 7, 1),
        ];
        for (slot_width, slots, levels) in odd {
            for fuzzy in [false, true] {
                let c = WheelConfig {
                    slot_width,
                    slots,
                    levels,
                    fuzzy,
                };
                let mut w = TimerWheel::new(c, ms(5));
                assert_eq!(w.config(), c);
                for t in [0, 5, 6, 1_000, u64::MAX / MS] {
                    w.insert(ms(t), t);
                }
                w.insert(Instant::MAX, 0);
                assert!(w.heap_bytes() > 0);
                let mut n = drain(&mut w, ms(1_000)).len();
                n += drain(&mut w, Instant::MAX).len();
                assert_eq!(n, 6, "{c:?}");
            }
        }
    }

    #[test]
    fn memory_per_timer_is_as_documented() {
        assert_eq!(TimerWheel::<crate::arena::Id<()>>::BYTES_PER_TIMER, 28);
        assert_eq!(TimerWheel::<u32>::BYTES_PER_TIMER, 32);
        assert_eq!(TimerWheel::<u64>::BYTES_PER_TIMER, 40);
        let mut w = TimerWheel::new(WheelConfig::default(), Instant::ZERO);
        let empty = w.heap_bytes();
        for i in 0..10_000u64 {
            w.insert(ms(i * 3 % 60_000), i);
        }
        let per_timer = (w.heap_bytes() - empty) / 10_000;
        assert!((40..=80).contains(&per_timer), "{per_timer}");
    }

    // ---- property tests against a reference model ----

    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        /// Deadline relative to the last `now`, in ns (negative: in the past).
        Insert(i64),
        InsertMax,
        /// Another deadline in the slot of the last insert, at this offset into it (mod width).
        InsertSameSlot(u64),
        Cancel(usize),
        Reschedule(usize, i64),
        /// Move `now` by this many ns (negative: backwards) and expire.
        Expire(i64),
        ExpireAtNext,
    }

    fn op(width: u64, horizon: u64) -> impl Strategy<Value = Op> {
        let w = width as i64;
        let h = horizon.min(1 << 40) as i64;
        prop_oneof![
            4 => (-3 * w..20 * w).prop_map(Op::Insert),
            2 => (0..3 * h).prop_map(Op::Insert),
            1 => Just(Op::InsertMax),
            3 => any::<u64>().prop_map(Op::InsertSameSlot),
            2 => any::<usize>().prop_map(Op::Cancel),
            1 => (any::<usize>(), -w..4 * h).prop_map(|(i, d)| Op::Reschedule(i, d)),
            3 => (0..3 * w).prop_map(Op::Expire),
            1 => (0..2 * h).prop_map(Op::Expire),
            1 => (-3 * w..0).prop_map(Op::Expire),
            2 => Just(Op::ExpireAtNext),
        ]
    }

    fn scenario() -> impl Strategy<Value = (WheelConfig, u64, Vec<Op>)> {
        (
            prop::sample::select(vec![2usize, 3, 4, 5, 8, 64]),
            1usize..4,
            prop::sample::select(vec![1u64, 7, 1000]),
            0u64..10_000,
        )
            .prop_flat_map(|(slots, levels, width, start)| {
                let horizon = width.saturating_mul((slots as u64).pow(levels as u32));
                let c = WheelConfig {
                    slot_width: Duration::from_nanos(width),
                    slots,
                    levels,
                    fuzzy: false,
                };
                (
                    Just(c),
                    Just(start),
                    prop::collection::vec(op(width, horizon), 1..200),
                )
            })
    }

    fn offset(now: u64, d: i64) -> u64 {
        now.saturating_add_signed(d)
    }

    /// Runs `ops` against the wheel and a `BTreeMap` model. Precise mode must match the model
    /// exactly; fuzzy mode must fire each timer in `[slot end, ...)`, never early, and leave
    /// nothing behind whose slot has ended.
    fn check(c: WheelConfig, start: u64, ops: &[Op]) -> Result<(), TestCaseError> {
        let width = c.slot_width.as_nanos() as u64;
        let slot_end = |d: u64| {
            (d / width)
                .checked_add(1)
                .and_then(|t| t.checked_mul(width))
        };
        let slot_end = |d: u64| slot_end(d).unwrap_or(u64::MAX);
        let mut w = TimerWheel::new(c, Instant::from_nanos(start));
        // (deadline, seq) -> id, and id -> (handle, deadline, seq).
        let mut model = BTreeMap::<(u64, u64), usize>::new();
        let mut handles: Vec<(TimerHandle, u64, u64)> = Vec::new();
        let mut live = std::collections::HashSet::<usize>::new();
        let mut now = start;
        let mut high = start;
        let mut seq = 0;
        let mut insert = |w: &mut TimerWheel<usize>,
                          model: &mut BTreeMap<(u64, u64), usize>,
                          handles: &mut Vec<(TimerHandle, u64, u64)>,
                          live: &mut std::collections::HashSet<usize>,
                          d: u64| {
            let id = handles.len();
            let h = w.insert(Instant::from_nanos(d), id);
            handles.push((h, d, seq));
            model.insert((d, seq), id);
            live.insert(id);
            seq += 1;
        };
        for op in ops {
            match *op {
                Op::Insert(d) => {
                    insert(&mut w, &mut model, &mut handles, &mut live, offset(now, d))
                }
                Op::InsertMax => insert(&mut w, &mut model, &mut handles, &mut live, u64::MAX),
                Op::InsertSameSlot(off) => {
                    let last = handles.last().map_or(now, |h| h.1);
                    let d = (last - last % width).saturating_add(off % width);
                    insert(&mut w, &mut model, &mut handles, &mut live, d)
                }
                Op::Cancel(i) | Op::Reschedule(i, _) if !handles.is_empty() => {
                    let id = i % handles.len();
                    let (h, d, s) = handles[id];
                    let expected = model.remove(&(d, s));
                    prop_assert_eq!(expected.is_some(), live.remove(&id));
                    prop_assert_eq!(w.cancel(h), expected);
                    prop_assert_eq!(w.deadline(h), None);
                    if let (Op::Reschedule(_, nd), Some(_)) = (op, expected) {
                        insert(
                            &mut w,
                            &mut model,
                            &mut handles,
                            &mut live,
                            offset(now, *nd),
                        );
                    }
                }
                Op::Cancel(_) | Op::Reschedule(..) => {}
                Op::Expire(_) | Op::ExpireAtNext => {
                    now = match *op {
                        Op::Expire(step) => offset(now, step),
                        _ => w.next_deadline().map_or(now, |n| n.as_nanos().max(now)),
                    };
                    high = high.max(now);
                    let fired = drain(&mut w, Instant::from_nanos(now));
                    if c.fuzzy {
                        let mut last_seq_in_tick = BTreeMap::new();
                        for &(d, id) in &fired {
                            let (_, hd, s) = handles[id];
                            prop_assert_eq!(d.as_nanos(), hd);
                            prop_assert!(live.remove(&id), "fired twice or after cancel");
                            prop_assert!(model.remove(&(hd, s)).is_some());
                            prop_assert!(slot_end(hd) <= now, "early: {} > {}", slot_end(hd), now);
                            // FIFO within a slot.
                            let prev = last_seq_in_tick.insert(hd / width, s);
                            prop_assert!(prev.is_none_or(|p| p < s));
                        }
                        if now == high {
                            for &(d, _) in model.keys() {
                                prop_assert!(slot_end(d) > now, "left unfired: {}", d);
                            }
                        }
                    } else {
                        let mut expected = Vec::new();
                        while let Some(entry) = model.first_entry() {
                            if entry.key().0 > now {
                                break;
                            }
                            let ((d, _), id) = entry.remove_entry();
                            live.remove(&id);
                            expected.push((Instant::from_nanos(d), id));
                        }
                        prop_assert_eq!(fired, expected);
                    }
                }
            }
            prop_assert_eq!(w.len(), model.len());
            prop_assert_eq!(w.is_empty(), model.is_empty());
            let next = w.next_deadline().map(Instant::as_nanos);
            if c.fuzzy {
                let earliest = model.keys().map(|&(d, _)| slot_end(d)).min();
                prop_assert_eq!(next.is_some(), earliest.is_some());
                prop_assert!(next <= earliest, "next {:?} after {:?}", next, earliest);
            } else {
                prop_assert_eq!(next, model.keys().next().map(|&(d, _)| d));
            }
            if let Some(&id) = live.iter().next() {
                prop_assert_eq!(
                    w.deadline(handles[id].0),
                    Some(Instant::from_nanos(handles[id].1))
                );
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn precise_matches_model((c, start, ops) in scenario()) {
            check(c, start, &ops)?;
        }

        #[test]
        fn fuzzy_never_early_never_lost((c, start, ops) in scenario()) {
            check(WheelConfig { fuzzy: true, ..c }, start, &ops)?;
        }
    }
}
