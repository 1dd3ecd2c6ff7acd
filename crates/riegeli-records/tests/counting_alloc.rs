//! Counting what the heap holds, for the tests and benchmarks that bound memory exactly (the
//! heap alone, without the code paged in or what malloc keeps): the bytes allocated now, and at
//! most since [`measure`] began. Included with `#[path]` by `tests/memory.rs` and by
//! `xtask/bench`'s `arrow_bench`.
//!
//! On Linux with glibc, a binary that includes this module replaces C's `malloc` family (glibc
//! supports replacing it) with glibc's own functions plus counting, so that what C libraries
//! allocate themselves is counted too: zstd's decoding contexts and windows, which a Rust global
//! allocator never sees. Rust's `System` allocator calls the same functions. Elsewhere the
//! binary's global allocator counts, and C allocations go uncounted.
//!
//! Blocks are counted at their usable size (what malloc gave, at least what was asked).

use std::sync::atomic::{AtomicIsize, Ordering};

/// Bytes allocated now, and the most since [`measure`] reset it. Signed: a block that glibc
/// allocated past the counting functions (none of ours does) is still counted when freed.
static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grew(n: usize) {
    let n = n as isize;
    let now = CURRENT.fetch_add(n, Ordering::SeqCst) + n;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

fn shrank(n: usize) {
    CURRENT.fetch_sub(n as isize, Ordering::SeqCst);
}

/// Runs `f` and returns its result and the peak of the bytes allocated
/// meanwhile beyond those allocated before.
pub(crate) fn measure<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CURRENT.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let out = f();
    (out, PEAK.load(Ordering::SeqCst).saturating_sub(base).max(0) as usize)
}

/// glibc's `malloc` family, replaced by counting ones that call glibc's own (its `__libc_`
/// names). Nothing here allocates, so nothing here recurses.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod replaced {
    use std::ffi::{c_int, c_void};

    use super::{grew, shrank};

    unsafe extern "C" {
        fn __libc_malloc(size: usize) -> *mut c_void;
        fn __libc_calloc(count: usize, size: usize) -> *mut c_void;
        fn __libc_realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
        fn __libc_memalign(align: usize, size: usize) -> *mut c_void;
        fn __libc_free(ptr: *mut c_void);
        fn malloc_usable_size(ptr: *mut c_void) -> usize;
    }

    /// `ptr`, its usable size counted if it is a block.
    fn counted(ptr: *mut c_void) -> *mut c_void {
        if !ptr.is_null() {
            // SAFETY: `ptr` is a live block of glibc's malloc.
            grew(unsafe { malloc_usable_size(ptr) });
        }
        ptr
    }

    /// # Safety
    /// C's `malloc`.
    #[unsafe(no_mangle)]
    unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
        // SAFETY: the caller's call, passed on.
        counted(unsafe { __libc_malloc(size) })
    }

    /// # Safety
    /// C's `calloc`.
    #[unsafe(no_mangle)]
    unsafe extern "C" fn calloc(count: usize, size: usize) -> *mut c_void {
        // SAFETY: the caller's call, passed on.
        counted(unsafe { __libc_calloc(count, size) })
    }

    /// Counted as if the new block were allocated before the old one is freed (what a moving
    /// realloc does), so that the peak is not underestimated.
    ///
    /// # Safety
    /// C's `realloc`.
    #[unsafe(no_mangle)]
    unsafe extern "C" fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
        // SAFETY: `ptr` is null or a live block, as the caller guarantees.
        let old = if ptr.is_null() { 0 } else { unsafe { malloc_usable_size(ptr) } };
        grew(size);
        // SAFETY: the caller's call, passed on.
        let new = unsafe { __libc_realloc(ptr, size) };
        shrank(size);
        if !new.is_null() {
            shrank(old);
            // SAFETY: `new` is a live block.
            grew(unsafe { malloc_usable_size(new) });
        } else if size == 0 {
            // `realloc(ptr, 0)` freed `ptr`.
            shrank(old);
        }
        new
    }

    /// # Safety
    /// C's `free`.
    #[unsafe(no_mangle)]
    unsafe extern "C" fn free(ptr: *mut c_void) {
        if !ptr.is_null() {
            // SAFETY: `ptr` is a live block, as the caller guarantees.
            shrank(unsafe { malloc_usable_size(ptr) });
            // SAFETY: the caller's call, passed on.
            unsafe { __libc_free(ptr) };
        }
    }

    /// # Safety
    /// C's `memalign`.
    #[unsafe(no_mangle)]
    unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
        // SAFETY: the caller's call, passed on.
        counted(unsafe { __libc_memalign(align, size) })
    }

    /// # Safety
    /// C's `aligned_alloc`.
    #[unsafe(no_mangle)]
    unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
        // SAFETY: the caller's call, passed on.
        counted(unsafe { __libc_memalign(align, size) })
    }

    /// # Safety
    /// C's `posix_memalign`.
    #[unsafe(no_mangle)]
    unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
        const EINVAL: c_int = 22;
        const ENOMEM: c_int = 12;
        if !align.is_power_of_two() || !align.is_multiple_of(size_of::<*mut c_void>()) {
            return EINVAL;
        }
        // SAFETY: the caller's call, passed on.
        let ptr = counted(unsafe { __libc_memalign(align, size) });
        if ptr.is_null() {
            return ENOMEM;
        }
        // SAFETY: `out` is writable, as the caller guarantees.
        unsafe { out.write(ptr) };
        0
    }
}

/// Elsewhere, the global allocator counts (Rust's allocations alone).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod global {
    use std::alloc::{GlobalAlloc, Layout, System};

    use super::{grew, shrank};

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

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: the caller's guarantees are passed on.
            unsafe { System.dealloc(ptr, layout) };
            shrank(layout.size());
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            grew(new_size);
            // SAFETY: the caller's guarantees are passed on.
            let new = unsafe { System.realloc(ptr, layout, new_size) };
            shrank(if new.is_null() { new_size } else { layout.size() });
            new
        }
    }

    #[global_allocator]
    static ALLOCATOR: Counting = Counting;
}
