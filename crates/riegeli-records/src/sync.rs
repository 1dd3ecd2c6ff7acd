//! The primitives the threads of `work_queue.rs`, `pool.rs` and
//! `write_behind.rs` synchronize with: std's, or under `cfg(loom)` loom's
//! models of them, so that the model tests (`loom_tests.rs`) check those three
//! modules under every interleaving loom explores:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p riegeli-records --lib --release loom
//! ```
//!
//! Loom models `Mutex`, `Condvar` and threads, but its `mpsc` has no bounded
//! channel and never reports a disconnected channel (a `recv` after the last
//! sender is gone blocks), which the pool and the write-behind thread rely on;
//! under `cfg(loom)`, [`mpsc`] is a channel with std's semantics (bounded or
//! not, disconnection both ways) built on loom's `Mutex` and `Condvar`.

#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard, mpsc};
#[cfg(not(loom))]
pub(crate) use std::thread;

#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread;

/// `std::sync::mpsc` on loom's `Mutex` and `Condvar`: the calls the crate
/// makes, with std's semantics (FIFO; `send` fails once the receiver is gone;
/// `recv` fails once every sender is gone and the queue is empty; a bounded
/// channel's `send` waits for room; no rendezvous channel, bound 0).
#[cfg(loom)]
pub(crate) mod mpsc {
    use std::collections::VecDeque;
    use std::sync::PoisonError;
    pub(crate) use std::sync::mpsc::{RecvError, SendError, TryRecvError};

    use loom::sync::{Arc, Condvar, Mutex, MutexGuard};

    struct State<T> {
        queue: VecDeque<T>,
        senders: usize,
        receiver: bool,
    }

    struct Shared<T> {
        state: Mutex<State<T>>,
        /// Signalled when a message arrives or the last sender goes.
        filled: Condvar,
        /// Signalled when a message leaves or the receiver goes.
        drained: Condvar,
        bound: Option<usize>,
    }

    impl<T> Shared<T> {
        fn lock(&self) -> MutexGuard<'_, State<T>> {
            self.state.lock().unwrap_or_else(PoisonError::into_inner)
        }

        fn send(&self, value: T) -> Result<(), SendError<T>> {
            let mut state = self.lock();
            loop {
                if !state.receiver {
                    return Err(SendError(value));
                }
                if self.bound.is_none_or(|bound| state.queue.len() < bound) {
                    state.queue.push_back(value);
                    drop(state);
                    self.filled.notify_one();
                    return Ok(());
                }
                state = self.drained.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
        }

        fn drop_sender(&self) {
            let mut state = self.lock();
            state.senders -= 1;
            if state.senders == 0 {
                drop(state);
                self.filled.notify_all();
            }
        }
    }

    /// Another sender of the channel `shared`.
    fn add_sender<T>(shared: &Arc<Shared<T>>) -> Arc<Shared<T>> {
        shared.lock().senders += 1;
        Arc::clone(shared)
    }

    fn new<T>(bound: Option<usize>) -> Arc<Shared<T>> {
        Arc::new(Shared {
            state: Mutex::new(State { queue: VecDeque::new(), senders: 1, receiver: true }),
            filled: Condvar::new(),
            drained: Condvar::new(),
            bound,
        })
    }

    /// An unbounded channel.
    pub(crate) fn channel<T>() -> (Sender<T>, Receiver<T>) {
        let shared = new(None);
        (Sender(Arc::clone(&shared)), Receiver(shared))
    }

    /// A channel holding at most `bound` (at least 1) messages.
    pub(crate) fn sync_channel<T>(bound: usize) -> (SyncSender<T>, Receiver<T>) {
        assert!(bound > 0, "the loom model of mpsc has no rendezvous channel");
        let shared = new(Some(bound));
        (SyncSender(Arc::clone(&shared)), Receiver(shared))
    }

    /// The sending half of [`channel`].
    pub(crate) struct Sender<T>(Arc<Shared<T>>);

    impl<T> Sender<T> {
        pub(crate) fn send(&self, value: T) -> Result<(), SendError<T>> {
            self.0.send(value)
        }
    }

    impl<T> Clone for Sender<T> {
        fn clone(&self) -> Self {
            Self(add_sender(&self.0))
        }
    }

    impl<T> Drop for Sender<T> {
        fn drop(&mut self) {
            self.0.drop_sender();
        }
    }

    /// The sending half of [`sync_channel`].
    pub(crate) struct SyncSender<T>(Arc<Shared<T>>);

    impl<T> SyncSender<T> {
        pub(crate) fn send(&self, value: T) -> Result<(), SendError<T>> {
            self.0.send(value)
        }
    }

    impl<T> Clone for SyncSender<T> {
        fn clone(&self) -> Self {
            Self(add_sender(&self.0))
        }
    }

    impl<T> Drop for SyncSender<T> {
        fn drop(&mut self) {
            self.0.drop_sender();
        }
    }

    /// The receiving half of either channel.
    pub(crate) struct Receiver<T>(Arc<Shared<T>>);

    impl<T> Receiver<T> {
        pub(crate) fn recv(&self) -> Result<T, RecvError> {
            let mut state = self.0.lock();
            loop {
                if let Some(value) = state.queue.pop_front() {
                    drop(state);
                    self.0.drained.notify_one();
                    return Ok(value);
                }
                if state.senders == 0 {
                    return Err(RecvError);
                }
                state = self.0.filled.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
        }

        pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
            let mut state = self.0.lock();
            match state.queue.pop_front() {
                Some(value) => {
                    drop(state);
                    self.0.drained.notify_one();
                    Ok(value)
                }
                None if state.senders == 0 => Err(TryRecvError::Disconnected),
                None => Err(TryRecvError::Empty),
            }
        }
    }

    impl<T> Drop for Receiver<T> {
        fn drop(&mut self) {
            let dropped = {
                let mut state = self.0.lock();
                state.receiver = false;
                std::mem::take(&mut state.queue)
            };
            self.0.drained.notify_all();
            drop(dropped);
        }
    }
}
