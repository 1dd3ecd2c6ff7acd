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

/// Idle buffers of one owner (a decoder, a file source, a writer), at most
/// `max_buffers` of them holding at most `max_bytes` in all.
#[derive(Debug)]
pub struct Recycler<T> {
    idle: Mutex<Vec<Vec<T>>>,
    max_buffers: usize,
    max_bytes: usize,
}

impl<T> Recycler<T> {
    /// A recycler keeping at most `max_buffers` idle buffers of at most
    /// `max_bytes` bytes (of capacity) in all.
    pub fn new(max_buffers: usize, max_bytes: usize) -> Arc<Self> {
        Arc::new(Self { idle: Mutex::new(Vec::new()), max_buffers, max_bytes })
    }

    /// The idle buffers, unless another thread holds them.
    fn try_idle(&self) -> Option<MutexGuard<'_, Vec<Vec<T>>>> {
        match self.idle.try_lock() {
            Ok(idle) => Some(idle),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// An idle buffer that `fits`, if there is one (the largest otherwise
    /// would not fit either: buffers are tried newest first).
    pub fn take_if(&self, fits: impl Fn(&Vec<T>) -> bool) -> Option<Vec<T>> {
        let mut idle = self.try_idle()?;
        let i = idle.iter().rposition(fits)?;
        Some(idle.swap_remove(i))
    }

    /// The most recently returned idle buffer, if any.
    pub fn take(&self) -> Option<Vec<T>> {
        self.try_idle()?.pop()
    }

    /// Keeps `buffer` for a later [`take`](Self::take), unless the bounds are
    /// reached (then it is freed). Buffers without capacity are not kept.
    pub fn give(&self, buffer: Vec<T>) {
        let bytes = buffer.capacity().saturating_mul(size_of::<T>());
        if bytes == 0 {
            return;
        }
        let Some(mut idle) = self.try_idle() else { return };
        let held = idle.iter().map(|b| b.capacity().saturating_mul(size_of::<T>())).fold(0, usize::saturating_add);
        if idle.len() < self.max_buffers && held.saturating_add(bytes) <= self.max_bytes {
            idle.push(buffer);
        }
    }

    /// How many buffers are idle (for tests).
    pub fn idle(&self) -> usize {
        self.try_idle().map_or(0, |idle| idle.len())
    }
}

/// The most a [default](Recycler::default) recycler holds idle.
const DEFAULT_MAX_IDLE_BYTES: usize = 64 << 20;

impl<T> Default for Recycler<T> {
    /// Keeps one idle buffer of at most 64 MiB: what a
    /// decoder needs, whose reader lets go of one chunk's records before it
    /// asks for the next (the buffer of a larger chunk is freed rather than
    /// held between chunks).
    fn default() -> Self {
        Self { idle: Mutex::new(Vec::new()), max_buffers: 1, max_bytes: DEFAULT_MAX_IDLE_BYTES }
    }
}

/// A buffer that goes back to its [`Recycler`] (if that still exists) when dropped.
#[derive(Debug)]
pub struct Homing<T> {
    buffer: Vec<T>,
    home: Weak<Recycler<T>>,
}

impl<T> Homing<T> {
    /// `buffer`, to go back to `home` when dropped.
    pub fn new(buffer: Vec<T>, home: &Arc<Recycler<T>>) -> Self {
        Self { buffer, home: Arc::downgrade(home) }
    }

    /// A buffer without a home (freed when dropped).
    pub fn stray(buffer: Vec<T>) -> Self {
        Self { buffer, home: Weak::new() }
    }
}

impl Homing<u8> {
    /// The buffer as [`Bytes`]: it goes home when the last slice drops.
    pub fn into_bytes(self) -> Bytes {
        Bytes::from_owner(self)
    }
}

impl<T> std::ops::Deref for Homing<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.buffer
    }
}

impl AsRef<[u8]> for Homing<u8> {
    fn as_ref(&self) -> &[u8] {
        &self.buffer
    }
}

impl<T> Drop for Homing<T> {
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
        let home = Recycler::<u8>::new(4, 1 << 20);
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
        let home = Recycler::<u64>::new(3, 1 << 10);
        for _ in 0..5 {
            home.give(Vec::with_capacity(8));
        }
        assert_eq!(home.idle(), 3);
        let home = Recycler::<u64>::new(10, 1 << 10);
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
        let home = Recycler::<u8>::new(4, 1 << 20);
        let bytes = Homing::new(vec![1, 2, 3], &home).into_bytes();
        drop(home);
        assert_eq!(bytes, &[1u8, 2, 3][..]);
        drop(Homing::stray(vec![0u8; 10]).into_bytes());
    }
}
