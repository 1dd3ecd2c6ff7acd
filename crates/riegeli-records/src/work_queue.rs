//! `WorkQueue`: the job queue of the decoding threads (of `RecordReader`'s
//! read-ahead and of `ArrayRecordReader`'s parallel batches). Workers wait
//! for jobs; the thread that queued them may take some back to run itself.

use std::collections::VecDeque;
use std::sync::PoisonError;

use crate::sync::{Condvar, Mutex, MutexGuard};

struct State<T> {
    jobs: VecDeque<T>,
    /// Set by [`WorkQueue::close`]: waiting workers return.
    closed: bool,
}

/// A FIFO of jobs shared by worker threads.
pub(crate) struct WorkQueue<T> {
    state: Mutex<State<T>>,
    /// Signalled when a job is queued or the queue closes.
    wake: Condvar,
}

impl<T> WorkQueue<T> {
    pub(crate) fn new() -> Self {
        Self { state: Mutex::new(State { jobs: VecDeque::new(), closed: false }), wake: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Nothing panics while holding the lock; if it did, the queue is still whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a job and wakes a worker.
    pub(crate) fn push(&self, job: T) {
        self.lock().jobs.push_back(job);
        self.wake.notify_one();
    }

    /// The oldest job, waiting for one; `None` once the queue is closed.
    pub(crate) fn wait_pop(&self) -> Option<T> {
        let mut state = self.lock();
        loop {
            if state.closed {
                return None;
            }
            if let Some(job) = state.jobs.pop_front() {
                return Some(job);
            }
            state = self.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The oldest job, if any (without waiting).
    pub(crate) fn pop_front(&self) -> Option<T> {
        self.lock().jobs.pop_front()
    }

    /// The newest job, if any.
    pub(crate) fn pop_back(&self) -> Option<T> {
        self.lock().jobs.pop_back()
    }

    /// The oldest job that `wanted` accepts, if any.
    pub(crate) fn take(&self, wanted: impl FnMut(&T) -> bool) -> Option<T> {
        let mut state = self.lock();
        let i = state.jobs.iter().position(wanted)?;
        state.jobs.remove(i)
    }

    /// The number of queued jobs.
    pub(crate) fn len(&self) -> usize {
        self.lock().jobs.len()
    }

    /// Removes every queued job and returns them (to be dropped outside the lock).
    pub(crate) fn clear(&self) -> VecDeque<T> {
        std::mem::take(&mut self.lock().jobs)
    }

    /// Drops the queued jobs and makes every worker's `wait_pop` return `None`.
    pub(crate) fn close(&self) {
        let dropped = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::take(&mut state.jobs)
        };
        self.wake.notify_all();
        drop(dropped);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn jobs_come_out_in_order_and_close_ends_the_waiting() {
        let queue = Arc::new(WorkQueue::new());
        for i in 0..6 {
            queue.push(i);
        }
        assert_eq!(queue.len(), 6);
        assert_eq!(queue.take(|&j| j == 3), Some(3));
        assert_eq!(queue.take(|&j| j == 3), None);
        assert_eq!(queue.pop_back(), Some(5));
        assert_eq!(queue.pop_front(), Some(0));
        assert_eq!(queue.wait_pop(), Some(1));
        assert_eq!(queue.clear(), [2, 4]);
        let waiting = {
            let queue = Arc::clone(&queue);
            std::thread::spawn(move || (queue.wait_pop(), queue.wait_pop()))
        };
        queue.push(7);
        // The worker gets 7, then waits until the queue closes.
        while queue.len() > 0 {
            std::thread::yield_now();
        }
        queue.close();
        assert_eq!(waiting.join().unwrap(), (Some(7), None));
        queue.push(8);
        assert_eq!(queue.wait_pop(), None, "a closed queue hands out nothing");
    }
}
