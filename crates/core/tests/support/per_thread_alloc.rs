//! A global allocator for one test binary that counts, per thread, the calls that ask the
//! system for memory (`alloc`, `realloc`): what the engines' "zero allocation in steady state"
//! tests count (issue #21). Per thread, so the test harness's other threads do not count.
//! Included by path (`#[path = …] mod per_thread_alloc;`) from the test binaries that use it:
//! a library crate would need its own `unsafe` for this.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct PerThread;

thread_local! {
    static CALLS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    let _ = CALLS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every call is forwarded unchanged to `System`; only a thread-local count is kept.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for PerThread {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: PerThread = PerThread;

/// Allocation calls this thread has made so far.
pub fn calls() -> usize {
    CALLS.with(Cell::get)
}
