//! A global allocator that counts: the system's, with the bytes it holds now and at most
//! since [`measure`] began, for the tests and benchmarks that bound memory exactly (the
//! heap alone, without the code paged in or what malloc keeps). Included with `#[path]` by
//! `tests/memory.rs` and by `xtask/bench`'s `arrow_bench`; a binary that includes it makes it
//! its global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes allocated now, and the most since [`measure`] reset it.
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = CURRENT.fetch_add(n, Ordering::SeqCst) + n;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

fn shrank(n: usize) {
    CURRENT.fetch_sub(n, Ordering::SeqCst);
}

/// `System`, counting the bytes it hands out.
pub(crate) struct Counting;

// SAFETY: every call goes to `System` with the caller's arguments; the
// counters are only updated beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees are passed on.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees are passed on.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's guarantees are passed on.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Counted as if the new block were allocated before the old one is
        // freed (what a moving realloc does), so that the peak is not underestimated.
        grew(new_size);
        // SAFETY: the caller's guarantees are passed on.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if new.is_null() {
            shrank(new_size);
        } else {
            shrank(layout.size());
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result and the peak of the bytes allocated
/// meanwhile beyond those allocated before.
pub(crate) fn measure<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CURRENT.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let out = f();
    (out, PEAK.load(Ordering::SeqCst).saturating_sub(base))
}
