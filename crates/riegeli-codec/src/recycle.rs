//! Buffers that find their way home: a bounded list of idle buffers
//! ([`Recycler`]) that a buffer ([`Homing`]) returns to when it is dropped,
//! on whatever thread that happens.
//!
//! Decoded records are [`Bytes`] slices of a buffer their decoder owned; the
//! decoder takes its next buffer from its recycler, so a reader that lets go
//! of a chunk's records before the next chunk is decoded cycles through the
//! same allocation instead of faulting in fresh pages each chunk, whichever
//! thread decoded the chunk and whichever dropped its records. The readers'
//! file buffers and the writers' chunk buffers use the same mechanism.
//!
//! The list is never waited for: a buffer coming back while another thread
//! holds it is freed, and a buffer asked for then is allocated. (In a child
//! forked while a thread of the parent held the list, it stays locked forever.)

use std::sync::{Arc, Mutex, MutexGuard, TryLockError, Weak};

use bytes::Bytes;

/// What a [`Recycler`] keeps: a buffer (or buffers that go together) whose
/// allocation is worth reusing; its default holds no allocation.
pub trait Reusable: Send + Default {
    /// The bytes of capacity it holds.
    fn bytes(&self) -> usize;
}

impl<T: Send> Reusable for Vec<T> {
    fn bytes(&self) -> usize {
        self.capacity().saturating_mul(size_of::<T>())
    }
}

/// Idle buffers of one owner (a decoder, a file source, a writer), at most
/// `max_buffers` of them holding at most `max_bytes` in all.
#[derive(Debug)]
pub struct Recycler<B> {
    idle: Mutex<Idle<B>>,
    max_buffers: usize,
    max_bytes: usize,
}

/// The idle buffers and the bytes they hold.
#[derive(Debug)]
struct Idle<B> {
    buffers: Vec<B>,
    bytes: usize,
}

impl<B> Idle<B> {
    const fn new() -> Self {
        Self { buffers: Vec::new(), bytes: 0 }
    }
}

impl<B: Reusable> Idle<B> {
    fn remove(&mut self, i: usize) -> B {
        let buffer = self.buffers.swap_remove(i);
        self.bytes = self.bytes.saturating_sub(buffer.bytes());
        buffer
    }
}

impl<B: Reusable> Recycler<B> {
    /// A recycler keeping at most `max_buffers` idle buffers of at most
    /// `max_bytes` bytes (of capacity) in all.
    pub fn new(max_buffers: usize, max_bytes: usize) -> Arc<Self> {
        Arc::new(Self { idle: Mutex::new(Idle::new()), max_buffers, max_bytes })
    }

    /// The idle buffers, unless another thread holds them.
    fn try_idle(&self) -> Option<MutexGuard<'_, Idle<B>>> {
        match self.idle.try_lock() {
            Ok(idle) => Some(idle),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// The most recently returned idle buffer that `fits`, if any (and if no
    /// other thread holds the list).
    pub fn take_if(&self, fits: impl Fn(&B) -> bool) -> Option<B> {
        let mut idle = self.try_idle()?;
        let i = idle.buffers.iter().rposition(fits)?;
        Some(idle.remove(i))
    }

    /// The most recently returned idle buffer, if any (and if no other thread
    /// holds the list). Its contents are stale: clear it before use.
    pub fn take(&self) -> Option<B> {
        let mut idle = self.try_idle()?;
        let i = idle.buffers.len().checked_sub(1)?;
        Some(idle.remove(i))
    }

    /// Keeps `buffer` for reuse, or frees it if the list is full, would hold
    /// more than its bytes, or is held by another thread. Buffers without
    /// capacity are not kept.
    pub fn give(&self, buffer: B) {
        let bytes = buffer.bytes();
        if bytes == 0 {
            return;
        }
        let Some(mut idle) = self.try_idle() else { return };
        if idle.buffers.len() < self.max_buffers && idle.bytes.saturating_add(bytes) <= self.max_bytes {
            idle.bytes += bytes;
            idle.buffers.push(buffer);
        }
    }

    /// How many idle buffers it holds (0 while another thread holds them).
    pub fn idle(&self) -> usize {
        self.try_idle().map_or(0, |idle| idle.buffers.len())
    }
}

/// How much a default recycler keeps idle: a decoder's buffers for chunks of
/// up to this decoded size are reused, larger ones are freed.
const DEFAULT_MAX_IDLE_BYTES: usize = 64 << 20;

/// One idle buffer of at most 64 MiB: a decoder's, reused chunk after chunk.
impl<B> Default for Recycler<B> {
    fn default() -> Self {
        Self { idle: Mutex::new(Idle::new()), max_buffers: 1, max_bytes: DEFAULT_MAX_IDLE_BYTES }
    }
}

/// A buffer that goes back to its [`Recycler`] when dropped (if the
/// recycler still exists), on whatever thread that happens.
#[derive(Debug)]
pub struct Homing<B: Reusable> {
    buffer: B,
    home: Weak<Recycler<B>>,
}

impl<B: Reusable> Homing<B> {
    /// `buffer`, returning to `home` when dropped.
    pub fn new(buffer: B, home: &Arc<Recycler<B>>) -> Self {
        Self { buffer, home: Arc::downgrade(home) }
    }

    /// `buffer` without a home: freed when dropped.
    pub fn stray(buffer: B) -> Self {
        Self { buffer, home: Weak::new() }
    }
}

impl Homing<Vec<u8>> {
    /// The buffer as [`Bytes`] (without copying), going home when the last
    /// slice of it is dropped.
    pub fn into_bytes(self) -> Bytes {
        Bytes::from_owner(self)
    }
}

impl<B: Reusable> std::ops::Deref for Homing<B> {
    type Target = B;
    fn deref(&self) -> &B {
        &self.buffer
    }
}

impl AsRef<[u8]> for Homing<Vec<u8>> {
    fn as_ref(&self) -> &[u8] {
        &self.buffer
    }
}

impl<B: Reusable> Drop for Homing<B> {
    fn drop(&mut self) {
        if let Some(home) = self.home.upgrade() {
            home.give(std::mem::take(&mut self.buffer));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_goes_home_when_its_last_slice_drops_on_any_thread() {
        let home = Recycler::<Vec<u8>>::new(4, 1 << 20);
        let mut buffer = Vec::with_capacity(1000);
        buffer.extend_from_slice(b"hello world");
        let address = buffer.as_ptr();
        let bytes = Homing::new(buffer, &home).into_bytes();
        let hello = bytes.slice(0..5);
        drop(bytes);
        assert_eq!(home.idle(), 0, "a slice is alive");
        std::thread::spawn(move || assert_eq!(hello, &b"hello"[..])).join().unwrap();
        let back = home.take().unwrap();
        assert_eq!(back.as_ptr(), address, "the same allocation");
        assert_eq!(back.capacity(), 1000);
    }

    #[test]
    fn the_idle_list_is_bounded_by_count_and_bytes() {
        let home = Recycler::<Vec<u64>>::new(3, 1 << 10);
        for _ in 0..5 {
            home.give(Vec::with_capacity(8));
        }
        assert_eq!(home.idle(), 3);
        let home = Recycler::<Vec<u64>>::new(10, 1 << 10);
        for _ in 0..5 {
            home.give(Vec::with_capacity(50)); // 400 bytes each
        }
        assert_eq!(home.idle(), 2);
        home.give(Vec::new());
        assert_eq!(home.idle(), 2, "empty buffers are not kept");
        assert!(home.take_if(|b| b.capacity() >= 51).is_none());
        assert!(home.take_if(|b| b.capacity() >= 50).is_some());
    }

    #[test]
    fn a_buffer_whose_home_is_gone_is_freed() {
        let home = Recycler::<Vec<u8>>::new(4, 1 << 20);
        let bytes = Homing::new(vec![1, 2, 3], &home).into_bytes();
        drop(home);
        assert_eq!(bytes, &[1u8, 2, 3][..]);
        drop(Homing::stray(vec![0u8; 10]).into_bytes());
    }
}
