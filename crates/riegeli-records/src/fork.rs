//! Forked processes: what a process shares with its threads, rebuilt in a
//! child forked from it rather than waited on there.
//!
//! `fork()` copies the memory of a process but only the thread that called
//! it. Whatever the other threads were doing is frozen in the child: a lock
//! one of them held stays locked, a channel or a queue waits for threads that
//! do not exist, and a handle that would join them joins forever. So a value
//! that threads share (a worker pool, the write-behind thread, the runtime and
//! the connections of object storage) is tied to the process that made it:
//!
//! - [`ProcessBound`] holds a value for the process that made it. In any
//!   other process (a child forked since) it gives nothing, and dropping it
//!   there leaks the value: its `Drop` could lock, flush or join what the
//!   parent's threads held.
//! - [`PerProcess`] holds one value per process, made on first use in each;
//!   the values of the processes it was inherited from are never touched, and
//!   leaked.
//!
//! A fork is detected by comparing the process id with the one recorded:
//! once per call that uses such a value, never per record. The id is asked
//! of the system ([`std::process::id`], a system call of a fraction of a
//! microsecond), unless the program said that it reports every fork
//! ([`track_forks`], which the Python package calls at import and from
//! `os.register_at_fork`): then it is read from memory.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Whether every fork is reported by a call of [`track_forks`] in the child.
static TRACKED: AtomicBool = AtomicBool::new(false);
/// The id of the running process, while [`TRACKED`].
static PID: AtomicU32 = AtomicU32::new(0);

/// Records the id of the running process, and promises that from now on this
/// is called again in the child of every fork before anything else of this
/// crate runs there (from an `os.register_at_fork(after_in_child=...)`
/// handler, say: CPython runs those in every forked child that runs Python
/// code again). Process ids are then read from memory, not asked of the
/// system at each check.
pub fn track_forks() {
    PID.store(std::process::id(), Ordering::Relaxed);
    TRACKED.store(true, Ordering::Relaxed);
}

/// The id of the running process.
fn current() -> u32 {
    if TRACKED.load(Ordering::Relaxed) { PID.load(Ordering::Relaxed) } else { std::process::id() }
}

/// A value belonging to the process that made it: unavailable in a child
/// forked since, where it is neither used nor dropped (it is leaked). What
/// [`PerProcess`] is for a value every process makes its own of, this is for
/// one that only its owner may use, and that `&mut` access renews in a child
/// (the write-behind thread's link).
pub(crate) struct ProcessBound<T> {
    owner: u32,
    /// `None` only once taken by `into_inner`.
    value: Option<T>,
}

impl<T> ProcessBound<T> {
    /// `value`, belonging to the running process.
    pub(crate) fn new(value: T) -> Self {
        Self { owner: current(), value: Some(value) }
    }

    /// Whether this value belongs to another process: this one was forked
    /// from it (or from one of its children) since the value was made.
    pub(crate) fn is_inherited(&self) -> bool {
        self.owner != current()
    }

    /// The value, if it belongs to the running process.
    pub(crate) fn get_mut(&mut self) -> Option<&mut T> {
        if self.is_inherited() { None } else { self.value.as_mut() }
    }

    /// The value, made anew by `make` (for the running process, which it
    /// then belongs to) if it belonged to another one, whose value is leaked;
    /// and whether it was. One process id check.
    pub(crate) fn get_or_renew(&mut self, make: impl FnOnce() -> T) -> (&mut T, bool) {
        let pid = current();
        let renewed = self.owner != pid;
        if renewed {
            std::mem::forget(self.value.take());
            self.owner = pid;
        }
        (self.value.get_or_insert_with(make), renewed)
    }

    /// The value, if it belongs to the running process (else it is leaked).
    pub(crate) fn into_inner(mut self) -> Option<T> {
        if self.is_inherited() {
            std::mem::forget(self.value.take());
            return None;
        }
        self.value.take()
    }
}

impl<T> Drop for ProcessBound<T> {
    fn drop(&mut self) {
        if self.is_inherited() {
            std::mem::forget(self.value.take());
        }
    }
}

impl<T> std::fmt::Debug for ProcessBound<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessBound").field("owner", &self.owner).finish_non_exhaustive()
    }
}

/// One value per process: made on first use in each process, shared by that
/// process's threads. A child forked from a process that had one makes its
/// own; the inherited ones are never touched there (nor dropped: they are
/// leaked).
///
/// It takes no lock on the way to the value of the running process: a
/// thread that waits is one of the running process, waiting for another of
/// its threads making the value. (The one exception: a child forked while
/// its parent was recording that it too has a value, the few instructions
/// of one allocation, would wait for that.)
///
/// ```
/// use riegeli_records::PerProcess;
///
/// static NAME: PerProcess<String> = PerProcess::new();
/// let name = NAME.get_or_init(|| format!("process {}", std::process::id()));
/// // The same value on every later call in this process; a forked child makes its own.
/// assert!(std::ptr::eq(name, NAME.get_or_init(|| unreachable!())));
/// ```
pub struct PerProcess<T> {
    head: OnceLock<Box<Node<T>>>,
}

/// The value of one process, and the link to the next process's.
struct Node<T> {
    pid: u32,
    value: OnceLock<T>,
    next: OnceLock<Box<Node<T>>>,
}

impl<T> Node<T> {
    fn new(pid: u32) -> Box<Self> {
        Box::new(Self { pid, value: OnceLock::new(), next: OnceLock::new() })
    }
}

impl<T> From<T> for PerProcess<T> {
    /// `value` as the running process's.
    fn from(value: T) -> Self {
        let per_process = Self::new();
        per_process.get_or_init(|| value);
        per_process
    }
}

impl<T> Default for PerProcess<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> PerProcess<T> {
    /// No value yet, in any process.
    pub const fn new() -> Self {
        Self { head: OnceLock::new() }
    }

    /// The node of the running process, if it has one.
    fn find(&self) -> Option<&Node<T>> {
        let pid = current();
        let mut node = self.head.get()?;
        while node.pid != pid {
            node = node.next.get()?;
        }
        Some(node)
    }

    /// The node of the running process, made if it has none.
    fn node(&self) -> &Node<T> {
        let pid = current();
        let mut link = &self.head;
        loop {
            let node = link.get_or_init(|| Node::new(pid));
            if node.pid == pid {
                return node;
            }
            link = &node.next;
        }
    }

    /// The running process's value, if it has made one.
    pub fn get(&self) -> Option<&T> {
        self.find()?.value.get()
    }

    /// The running process's value, made by `make` if it has none yet.
    pub fn get_or_init(&self, make: impl FnOnce() -> T) -> &T {
        self.node().value.get_or_init(make)
    }
}

impl<T> Drop for PerProcess<T> {
    fn drop(&mut self) {
        let pid = current();
        let mut next = self.head.take();
        while let Some(mut node) = next {
            next = node.next.take();
            if node.pid != pid {
                // Another process's: its drop could wait for what its threads held.
                std::mem::forget(node.value.take());
            }
        }
    }
}

impl<T> std::fmt::Debug for PerProcess<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerProcess").field("here", &self.get().is_some()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_of_other_processes_are_neither_given_nor_dropped() {
        /// Counts its drops.
        struct Counted(std::sync::Arc<std::sync::atomic::AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let drops = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = || Counted(std::sync::Arc::clone(&drops));

        // As a child forked since would see them: made by another process.
        let mut bound = ProcessBound::new(counted());
        bound.owner = current().wrapping_add(1);
        assert!(bound.is_inherited());
        assert!(bound.get_mut().is_none());
        drop(bound);
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 0, "an inherited value was dropped");
        let mut bound = ProcessBound { owner: current().wrapping_add(1), value: Some(counted()) };
        let (_, renewed) = bound.get_or_renew(counted);
        assert!(renewed && !bound.is_inherited());
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 0, "an inherited value was dropped");
        drop(bound);
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 1, "the renewed value is dropped");
        let bound = ProcessBound { owner: current().wrapping_add(1), value: Some(counted()) };
        assert!(bound.into_inner().is_none());
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 1, "an inherited value was dropped");
        drop(ProcessBound::new(counted()).into_inner());
        drop(ProcessBound::new(counted()));
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 3);

        // A PerProcess made by another process: this one makes its own value.
        let per = PerProcess::new();
        let other = Node::new(current().wrapping_add(1));
        let _ = other.value.set(counted());
        let _ = per.head.set(other);
        assert!(per.get().is_none());
        let mine = per.get_or_init(counted);
        assert!(std::ptr::eq(mine, per.get_or_init(|| unreachable!())));
        drop(per);
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 4, "only this process's value is dropped");
        let per = PerProcess::new();
        per.get_or_init(counted);
        assert!(per.get().is_some());
        drop(per);
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 5);
    }
}
