//! A counting global allocator, so benchmarks can report bytes of state measured rather than
//! estimated, and how many allocations a message costs. `main.rs` installs it; elsewhere
//! [`allocated`] and [`allocations`] read zero.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);
/// Calls that asked the system for memory (`alloc`, `realloc`): what "zero allocation" counts.
static CALLS: AtomicUsize = AtomicUsize::new(0);

/// Wraps the system allocator and keeps the number of live heap bytes.
#[derive(Debug)]
pub struct Counting;

// SAFETY: every call is forwarded unchanged to `System`; only a counter is kept beside it.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        CALLS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        CALLS.fetch_add(1, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Live heap bytes (zero unless [`Counting`] is the global allocator).
pub fn allocated() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Allocation calls so far, by every thread (zero unless [`Counting`] is the global allocator).
pub fn allocations() -> usize {
    CALLS.load(Ordering::Relaxed)
}
