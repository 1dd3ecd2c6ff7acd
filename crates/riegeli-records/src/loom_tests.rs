//! Model checks of the crate's threads with loom: the work queue, the pool's
//! reorder buffer and the write-behind hand-off, in small scenarios (two or
//! three threads, two or three jobs or buffers) run under every interleaving
//! loom explores within a preemption bound (3 unless `LOOM_MAX_PREEMPTIONS`
//! says otherwise). A lost wake-up is a deadlock loom reports; the
//! assertions check that no job is lost or run twice, that outcomes come in
//! ticket order, and that the write-behind thread writes every byte in order
//! and reports its first error.
//!
//! Built only with `--cfg loom` (`crate::sync` then switches to loom's
//! primitives):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p riegeli-records --lib --release loom
//! ```

use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex, PoisonError};

use crate::pool::{Help, Pool, Worker};
use crate::sync::thread;
use crate::work_queue::WorkQueue;
use crate::write_behind::WriteBehind;

/// Runs `f` under loom with a preemption bound of 3 unless the environment
/// sets one, and checks that loom explored more than one interleaving.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    let iterations = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&iterations);
    builder.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        f();
    });
    let iterations = iterations.load(Ordering::Relaxed);
    #[allow(clippy::print_stderr, reason = "shown with --nocapture: the size of each model")]
    {
        eprintln!("{iterations} interleavings");
    }
    assert!(iterations > 1, "loom explored a single interleaving");
}

#[test]
fn loom_work_queue_hands_each_job_out_once() {
    model(|| {
        let queue = Arc::new(WorkQueue::new());
        let worker = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || {
                let mut got = Vec::new();
                while let Some(job) = queue.wait_pop() {
                    got.push(job);
                }
                got
            })
        };
        queue.push(0);
        queue.push(1);
        queue.push(2);
        // The caller takes some back, as the pool does, while the worker pops.
        let mut mine: Vec<i32> = queue.take(|&job| job == 1).into_iter().collect();
        mine.extend(queue.pop_back());
        mine.extend(queue.clear());
        queue.close();
        let theirs = worker.join().unwrap();
        assert!(theirs.windows(2).all(|w| w[0] < w[1]), "the worker got {theirs:?} out of order");
        let mut all: Vec<i32> = theirs.into_iter().chain(mine).collect();
        all.sort_unstable();
        assert_eq!(all, [0, 1, 2], "a job lost or handed out twice");
    });
}

#[test]
fn loom_work_queue_close_wakes_every_waiting_worker() {
    model(|| {
        let queue = Arc::new(WorkQueue::<u32>::new());
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let queue = Arc::clone(&queue);
                thread::spawn(move || queue.wait_pop())
            })
            .collect();
        queue.push(7);
        queue.close();
        let got: Vec<Option<u32>> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        // The job went to at most one worker (or was dropped by close); both returned.
        assert!(got.iter().filter(|g| g.is_some()).count() <= 1, "{got:?}");
        assert!(got.iter().all(|g| matches!(g, None | Some(7))), "{got:?}");
    });
}

/// Doubles numbers and counts the jobs it runs.
struct Doubler(Arc<StdMutex<usize>>);

impl Worker for Doubler {
    type Job = u64;
    type Output = u64;
    fn run(&mut self, job: u64) -> u64 {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        job * 2
    }
}

fn doubler_pool(threads: usize, help: Help) -> (Pool<Doubler>, Arc<StdMutex<usize>>) {
    let runs = Arc::new(StdMutex::new(0));
    let counter = Arc::clone(&runs);
    (Pool::new("loom", threads, help, move || Doubler(Arc::clone(&counter))), runs)
}

fn runs(counter: &StdMutex<usize>) -> usize {
    *counter.lock().unwrap_or_else(PoisonError::into_inner)
}

#[test]
fn loom_pool_outcomes_come_in_ticket_order() {
    for help in [Help::WantedOnly, Help::Always] {
        model(move || {
            let (mut pool, counter) = doubler_pool(1, help);
            let tickets: Vec<u64> = (1..=3).map(|job| pool.submit(job * 10)).collect();
            for (ticket, job) in tickets.into_iter().zip(1..=3) {
                assert_eq!(pool.wait(ticket), Some(Ok(job * 20)), "{help:?}");
            }
            assert_eq!(pool.pending(), 0);
            assert_eq!(pool.in_flight(), 0);
            drop(pool);
            assert_eq!(runs(&counter), 3, "a job ran twice or not at all");
        });
    }
}

#[test]
fn loom_pool_two_threads_keep_the_order() {
    model(|| {
        let (mut pool, counter) = doubler_pool(2, Help::WantedOnly);
        let first = pool.submit(1);
        let second = pool.submit(2);
        assert_eq!(pool.wait(first), Some(Ok(2)));
        assert_eq!(pool.wait(second), Some(Ok(4)));
        drop(pool);
        assert_eq!(runs(&counter), 2);
    });
}

#[test]
fn loom_pool_step_and_try_next_keep_the_order() {
    model(|| {
        let (mut pool, counter) = doubler_pool(1, Help::Always);
        pool.submit(1);
        pool.submit(2);
        let mut got = Vec::new();
        while pool.pending() > 0 {
            match pool.try_next() {
                Some(outcome) => got.push(outcome.unwrap()),
                None => pool.step(),
            }
        }
        assert_eq!(got, [2, 4]);
        assert_eq!(pool.in_flight(), 0);
        drop(pool);
        assert_eq!(runs(&counter), 2);
    });
}

#[test]
fn loom_pool_abandon_forgets_old_tickets_and_drop_joins() {
    model(|| {
        let (mut pool, counter) = doubler_pool(1, Help::WantedOnly);
        pool.submit(1);
        pool.submit(2);
        // The thread may be running a job, or have sent its outcome, or not started.
        pool.abandon();
        assert_eq!(pool.pending(), 0);
        let ticket = pool.submit(3);
        assert_eq!(ticket, 2);
        assert_eq!(pool.wait(0), None, "an abandoned ticket");
        // The outcome of an abandoned job that arrives now must not pass for this one.
        assert_eq!(pool.wait(ticket), Some(Ok(6)));
        drop(pool);
        let runs = runs(&counter);
        assert!((1..=3).contains(&runs), "{runs} runs");
    });
}

/// A destination shared with the test that fails every write from the
/// `fail_from`-th call on: the first failure with `StorageFull`, later ones
/// with another kind (so that the error reported tells which it was).
#[derive(Clone)]
struct Dest {
    bytes: Arc<StdMutex<Vec<u8>>>,
    calls: Arc<StdMutex<usize>>,
    fail_from: usize,
}

impl Dest {
    fn new(fail_from: usize) -> Self {
        Self { bytes: Arc::default(), calls: Arc::default(), fail_from }
    }
    fn bytes(&self) -> Vec<u8> {
        self.bytes.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Write for Dest {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        *calls += 1;
        if *calls > self.fail_from {
            return Err(io::Error::other("a later failure"));
        }
        if *calls == self.fail_from {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "the first failure"));
        }
        self.bytes.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn loom_write_behind_delivers_every_byte_in_order() {
    model(|| {
        let dest = Dest::new(usize::MAX);
        // Buffers of 2 bytes: three hand-offs, then a flush, then one more and `into_inner`.
        let mut writer = WriteBehind::with_capacity(2, dest.clone()).unwrap();
        writer.write_all(b"abcde").unwrap();
        writer.flush().unwrap();
        assert_eq!(dest.bytes(), b"abcde", "flush returned before every byte was written");
        writer.write_all(b"f").unwrap();
        writer.into_inner().unwrap();
        assert_eq!(dest.bytes(), b"abcdef");
    });
}

#[test]
fn loom_write_behind_reports_the_first_error() {
    model(|| {
        let dest = Dest::new(2);
        let mut writer = WriteBehind::with_capacity(2, dest.clone()).unwrap();
        // The second buffer fails; the third is not written.
        let error = writer.write_all(b"abcdef").and_then(|()| writer.flush()).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::StorageFull, "not the first error: {error}");
        assert!(writer.write_all(b"g").is_err(), "a write after the failure succeeded");
        assert!(writer.flush().is_err());
        assert!(writer.into_inner().is_err());
        assert_eq!(dest.bytes(), b"ab");
    });
}

#[test]
fn loom_write_behind_drop_flushes_and_joins() {
    model(|| {
        let dest = Dest::new(usize::MAX);
        let mut writer = WriteBehind::with_capacity(2, dest.clone()).unwrap();
        writer.write_all(b"xyz").unwrap();
        drop(writer);
        assert_eq!(dest.bytes(), b"xyz");
    });
}
