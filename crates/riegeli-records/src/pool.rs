//! The one worker pool of riegeli-records: read-ahead decoding, ArrayRecord
//! batch reads and parallel chunk encoding all run their jobs here.
//!
//! - **Threads** are persistent and each owns its state (a chunk decoder, an
//!   encoder with its scratch), made by the client's factory; the caller owns
//!   one more, made when it first runs a job itself.
//! - **Jobs** go into one FIFO ([`WorkQueue`]) and get consecutive tickets;
//!   results come back through one channel and are handed out **in ticket
//!   order** by one reorder buffer ([`Pool::wait`]).
//! - **The caller helps**: waiting for a ticket whose job no thread has taken
//!   yet, it takes the job back and runs it itself; with [`Help::Always`] it
//!   also runs another queued job rather than sleep while threads work on the
//!   one it wants ([`wait`](Pool::wait): the newest, as far as possible from
//!   the threads; [`step`](Pool::step): the oldest, wanted soonest).
//! - **Spawning**: threads that cannot be started are left out; with none,
//!   the caller runs every job (on [`wait`](Pool::wait)).
//! - **Panics**: a job that panics (a bug) yields [`Panicked`] for its ticket
//!   and its thread's state is rebuilt; the pool never hangs on it. Clients
//!   report it as an internal error, never as corruption.
//! - **Abandoning**: [`abandon`](Pool::abandon) drops the queued jobs and
//!   forgets the results of those running, without waiting for them.
//! - **Drop** closes the queue and joins every thread (each finishes at most
//!   its current job).
//! - **Fork**: in a child forked since the threads started, none of them
//!   exists and the queue may stay locked by one of them forever. The pool
//!   leaves all that alone (leaked, never dropped: see [`ProcessBound`]) and
//!   starts threads of the child's own on its next call there; every ticket
//!   not handed out is abandoned, its job lost with the parent's queue
//!   ([`renew_if_forked`](Pool::renew_if_forked)). One process id check per call.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};

use crate::fork::ProcessBound;
use crate::sync::mpsc::{Receiver, Sender, channel};
use crate::sync::thread::{self, JoinHandle};
use crate::work_queue::WorkQueue;

/// The cores this process may use, asked once: `available_parallelism` reads
/// the cgroup's CPU quota from files on Linux (tens of microseconds), too much
/// for a read of one record to pay each time.
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
}

/// The state a thread keeps from job to job, and what it does with a job.
pub(crate) trait Worker: Send + 'static {
    /// What a job carries.
    type Job: Send + 'static;
    /// What a job yields.
    type Output: Send + 'static;
    /// Runs one job.
    fn run(&mut self, job: Self::Job) -> Self::Output;
}

/// A worker behind a pointer, as a client runs it when it lets tests plug in
/// a worker of their own (see [`Plug`]): one dynamic call per job. `Sync`, so
/// that a pool keeping one for the caller stays `Sync` (as readers are).
pub(crate) type Plugged<W> = Box<dyn Worker<Job = <W as Worker>::Job, Output = <W as Worker>::Output> + Sync>;

impl<J: Send + 'static, O: Send + 'static> Worker for Box<dyn Worker<Job = J, Output = O> + Sync> {
    type Job = J;
    type Output = O;
    fn run(&mut self, job: J) -> O {
        (**self).run(job)
    }
}

/// What a client's worker runs in: the worker as it is ([`Plug::default`],
/// production), or a worker a test wraps around it, which sees every job
/// and the end of its thread (to make a chosen job panic, count jobs, see
/// the thread end). Faults come into the pool this way, never through
/// branches of the production worker.
pub(crate) struct Plug<W: Worker>(Arc<dyn Fn(W) -> Plugged<W> + Send + Sync>);

impl<W: Worker> Plug<W> {
    /// Runs each worker inside the one `wrap` makes of it.
    pub(crate) fn new(wrap: impl Fn(W) -> Plugged<W> + Send + Sync + 'static) -> Self {
        Self(Arc::new(wrap))
    }

    /// `worker` as the pool is to run it.
    pub(crate) fn wrap(&self, worker: W) -> Plugged<W> {
        (self.0)(worker)
    }
}

impl<W: Worker + Sync> Default for Plug<W> {
    fn default() -> Self {
        Self::new(|worker| Box::new(worker))
    }
}

impl<W: Worker> Clone for Plug<W> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

/// A job panicked (a bug): its output is lost and its worker state rebuilt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Panicked;

/// What a job yields, or [`Panicked`].
pub(crate) type Outcome<W> = Result<<W as Worker>::Output, Panicked>;

/// When the caller runs queued jobs itself while it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Help {
    /// Only the job it waits for, if no thread has taken it yet.
    WantedOnly,
    /// Also the newest queued job, rather than sleep while a thread works on
    /// the one it waits for.
    Always,
}

/// Makes a worker state: for each thread, for the caller, and again after a panic.
type Factory<W> = Arc<dyn Fn() -> W + Send + Sync>;

/// Worker threads running jobs of one kind; see the module docs.
pub(crate) struct Pool<W: Worker> {
    /// The threads and what they share with the caller, of the process that
    /// started them (see [`renew_if_forked`](Self::renew_if_forked)).
    crew: ProcessBound<Crew<W>>,
    book: Book<W>,
}

/// The threads of a pool, and the queue and channel they share with the caller.
struct Crew<W: Worker> {
    queue: Arc<WorkQueue<(u64, W::Job)>>,
    /// In a mutex only to keep the pool `Sync`; reached through `get_mut`, never locked.
    results: Mutex<Receiver<(u64, Outcome<W>)>>,
    threads: Vec<JoinHandle<()>>,
}

/// The caller's side of a pool: tickets, outcomes, its own worker state.
struct Book<W: Worker> {
    /// The name and number of the threads asked for (started again in a forked child).
    name: String,
    wanted: usize,
    factory: Factory<W>,
    /// The caller's own state, for the jobs it runs itself.
    caller: Option<W>,
    help: Help,
    /// The ticket of the next job submitted.
    next_ticket: u64,
    /// Tickets below this were handed out or abandoned.
    floor: u64,
    /// `ready[i]` is the outcome of ticket `floor + i`, once it has arrived.
    ready: VecDeque<Option<Outcome<W>>>,
    /// Jobs submitted whose outcome has not arrived (queued or running).
    in_flight: usize,
}

impl<W: Worker> std::fmt::Debug for Pool<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("threads", &self.book.wanted)
            .field("in_flight", &self.book.in_flight)
            .field("next_ticket", &self.book.next_ticket)
            .finish_non_exhaustive()
    }
}

impl<W: Worker> Crew<W> {
    /// Starts up to `book.wanted` threads named `name-i`, each with a state
    /// from the factory. Threads that cannot be spawned are left out.
    fn start(book: &Book<W>) -> Self {
        let queue = Arc::new(WorkQueue::new());
        let (done, results) = channel();
        let threads = (0..book.wanted)
            .map_while(|i| {
                let queue = Arc::clone(&queue);
                let done = done.clone();
                let factory = Arc::clone(&book.factory);
                thread::Builder::new()
                    .name(format!("{}-{i}", book.name))
                    .spawn(move || work(&queue, &done, &factory))
                    .ok()
            })
            .collect();
        Self { queue, results: Mutex::new(results), threads }
    }

    fn results(&mut self) -> &mut Receiver<(u64, Outcome<W>)> {
        self.results.get_mut().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<W: Worker> Drop for Crew<W> {
    fn drop(&mut self) {
        // Threads end after their current job once the queue is closed.
        self.queue.close();
        for thread in self.threads.drain(..) {
            // `work` catches every panic of a job: a thread cannot have panicked.
            let _ = thread.join();
        }
    }
}

impl<W: Worker> Pool<W> {
    /// Starts up to `threads` threads named `name-i`, each with a state from
    /// `factory`. Threads that cannot be spawned are left out.
    pub(crate) fn new(name: &str, threads: usize, help: Help, factory: impl Fn() -> W + Send + Sync + 'static) -> Self {
        let book = Book {
            name: name.to_owned(),
            wanted: threads,
            factory: Arc::new(factory),
            caller: None,
            help,
            next_ticket: 0,
            floor: 0,
            ready: VecDeque::new(),
            in_flight: 0,
        };
        Self { crew: ProcessBound::new(Crew::start(&book)), book }
    }

    /// The crew of this process. In a child forked since the pool was made,
    /// the parent's crew is left alone (its threads do not exist here, and
    /// its queue may be locked by one of them forever): new threads start,
    /// and every ticket not handed out yet is abandoned (its job is lost with
    /// the parent's queue), as [`abandon`](Self::abandon) would.
    fn crew(&mut self) -> (&mut Crew<W>, &mut Book<W>, bool) {
        let book = &mut self.book;
        let (crew, renewed) = self.crew.get_or_renew(|| Crew::start(book));
        if renewed {
            book.ready.clear();
            book.floor = book.next_ticket;
            book.in_flight = 0;
        }
        (crew, book, renewed)
    }

    /// Whether this process is a child forked since the pool was made (or
    /// last renewed): then its threads are started anew and every ticket not
    /// handed out is abandoned (see [`crew`](Self::crew)). Clients with work
    /// in flight between their calls ask this first, to redo that work.
    pub(crate) fn renew_if_forked(&mut self) -> bool {
        self.crew().2
    }

    /// The number of threads running (those that could be started).
    pub(crate) fn threads(&mut self) -> usize {
        self.crew().0.threads.len()
    }

    /// Jobs submitted whose outcome has not been handed out or abandoned.
    pub(crate) fn pending(&self) -> usize {
        usize::try_from(self.book.next_ticket - self.book.floor).unwrap_or(usize::MAX)
    }

    /// Jobs queued that no thread has taken yet.
    pub(crate) fn queued(&mut self) -> usize {
        self.crew().0.queue.len()
    }

    /// Queues a job; returns its ticket.
    pub(crate) fn submit(&mut self, job: W::Job) -> u64 {
        let (crew, book, _) = self.crew();
        let ticket = book.next_ticket;
        book.next_ticket += 1;
        book.in_flight += 1;
        book.ready.push_back(None);
        crew.queue.push((ticket, job));
        ticket
    }

    /// Jobs submitted whose outcome has not arrived yet (queued or running).
    pub(crate) fn in_flight(&self) -> usize {
        self.book.in_flight
    }

    /// Makes progress on the jobs in flight: runs the oldest queued job here
    /// (with [`Help::Always`]: the one whose outcome is wanted soonest), or
    /// else waits for one outcome to arrive. Does nothing if no job is in flight.
    pub(crate) fn step(&mut self) {
        let (crew, book, _) = self.crew();
        if book.in_flight == 0 {
            return;
        }
        let queued = if book.help == Help::Always { crew.queue.pop_front() } else { None };
        if let Some(entry) = queued {
            book.run_queued(entry);
        } else if !book.receive(crew)
            && let Some(entry) = crew.queue.pop_front()
        {
            // No thread is left (none could be started): the caller runs the jobs.
            book.run_queued(entry);
        }
    }

    /// The outcome of `ticket`, waiting for it; older tickets not handed out
    /// yet are abandoned. Runs the job here if no thread has taken it, and
    /// (with [`Help::Always`]) the newest queued job rather than sleep.
    /// `None` if `ticket` was abandoned or never submitted.
    pub(crate) fn wait(&mut self, ticket: u64) -> Option<Outcome<W>> {
        let (crew, book, _) = self.crew();
        if ticket < book.floor || ticket >= book.next_ticket {
            return None;
        }
        while book.floor < ticket {
            book.floor += 1;
            book.ready.pop_front();
        }
        loop {
            if let Some(outcome) = book.pop_ready() {
                return Some(outcome);
            }
            let mine = crew.queue.take(|(t, _)| *t == ticket);
            let other = match (&mine, book.help) {
                (None, Help::Always) => crew.queue.pop_back(),
                _ => None,
            };
            if let Some(entry) = mine.or(other) {
                book.run_queued(entry);
            } else if !book.receive(crew) {
                // Every thread is gone with the job (they end only when the
                // pool drops, and catch every panic): cannot happen.
                return Some(Err(Panicked));
            }
        }
    }

    /// Files the outcomes that have arrived, without waiting; returns the
    /// oldest ticket's if it is among them.
    pub(crate) fn try_next(&mut self) -> Option<Outcome<W>> {
        let (crew, book, _) = self.crew();
        while let Ok((ticket, outcome)) = crew.results().try_recv() {
            book.in_flight -= 1;
            book.file(ticket, outcome);
        }
        book.pop_ready()
    }

    /// Drops the queued jobs and forgets every ticket not yet handed out: the
    /// jobs still running finish in the background and their outcomes are
    /// dropped when they arrive.
    pub(crate) fn abandon(&mut self) {
        let (crew, book, _) = self.crew();
        let dropped = crew.queue.clear();
        book.in_flight -= dropped.len();
        drop(dropped);
        book.ready.clear();
        book.floor = book.next_ticket;
    }
}

impl<W: Worker> Book<W> {
    /// Runs a job on the calling thread, catching a panic as a thread does.
    fn run_here(&mut self, job: W::Job) -> Outcome<W> {
        let factory = &self.factory;
        let state = self.caller.get_or_insert_with(|| factory());
        run(state, job, factory)
    }

    /// Runs a job taken back from the queue here, and files its outcome.
    fn run_queued(&mut self, (ticket, job): (u64, W::Job)) {
        self.in_flight -= 1;
        let outcome = self.run_here(job);
        self.file(ticket, outcome);
    }

    /// Waits for one outcome from the threads and files it; false if no
    /// thread is left to send one.
    fn receive(&mut self, crew: &mut Crew<W>) -> bool {
        match crew.results().recv() {
            Ok((ticket, outcome)) => {
                self.in_flight -= 1;
                self.file(ticket, outcome);
                true
            }
            Err(_) => false,
        }
    }

    /// The oldest ticket's outcome, if it has arrived; the ticket is then handed out.
    fn pop_ready(&mut self) -> Option<Outcome<W>> {
        let outcome = self.ready.front_mut().and_then(Option::take)?;
        self.ready.pop_front();
        self.floor += 1;
        Some(outcome)
    }

    /// Files an outcome in its ticket's slot (dropped if abandoned).
    fn file(&mut self, ticket: u64, outcome: Outcome<W>) {
        let Some(slot) = ticket.checked_sub(self.floor).and_then(|i| usize::try_from(i).ok()) else { return };
        if let Some(entry) = self.ready.get_mut(slot) {
            *entry = Some(outcome);
        }
    }
}

/// Runs a job on `state`; a panic rebuilds the state and yields [`Panicked`].
fn run<W: Worker>(state: &mut W, job: W::Job, factory: &Factory<W>) -> Outcome<W> {
    match catch_unwind(AssertUnwindSafe(|| state.run(job))) {
        Ok(output) => Ok(output),
        Err(_) => {
            *state = factory();
            Err(Panicked)
        }
    }
}

/// A thread: runs queued jobs until the pool drops.
fn work<W: Worker>(queue: &WorkQueue<(u64, W::Job)>, done: &Sender<(u64, Outcome<W>)>, factory: &Factory<W>) {
    let mut state = factory();
    while let Some((ticket, job)) = queue.wait_pop() {
        let outcome = run(&mut state, job, factory);
        if done.send((ticket, outcome)).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Squares numbers; panics on 13. Holds a token of the test while it exists.
    struct Squarer(#[allow(dead_code, reason = "held for its drop")] Arc<()>);

    impl Worker for Squarer {
        type Job = u64;
        type Output = (u64, std::thread::ThreadId);
        fn run(&mut self, job: u64) -> Self::Output {
            assert_ne!(job, 13, "an injected bug");
            (job * job, std::thread::current().id())
        }
    }

    fn pool(threads: usize, help: Help) -> (Pool<Squarer>, Arc<AtomicUsize>) {
        let (pool, made, _) = watched_pool(threads, help);
        (pool, made)
    }

    /// A pool, the number of worker states it made, and the token they hold.
    fn watched_pool(threads: usize, help: Help) -> (Pool<Squarer>, Arc<AtomicUsize>, std::sync::Weak<()>) {
        let made = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&made);
        let token = Arc::new(());
        let alive = Arc::downgrade(&token);
        let pool = Pool::new("test", threads, help, move || {
            counter.fetch_add(1, Ordering::SeqCst);
            Squarer(Arc::clone(&token))
        });
        (pool, made, alive)
    }

    #[test]
    fn outcomes_come_in_ticket_order_and_panics_are_typed() {
        for threads in [0, 1, 3] {
            for help in [Help::WantedOnly, Help::Always] {
                let (mut pool, made) = pool(threads, help);
                let tickets: Vec<u64> = (0..40).map(|i| pool.submit(i)).collect();
                for (i, ticket) in tickets.into_iter().enumerate() {
                    let outcome = pool.wait(ticket).unwrap();
                    if i == 13 {
                        assert_eq!(outcome.map(|o| o.0), Err(Panicked));
                    } else {
                        assert_eq!(outcome.map(|o| o.0), Ok((i * i) as u64), "{threads} threads, {help:?}");
                    }
                }
                assert_eq!(pool.pending(), 0);
                // The state that panicked was rebuilt, and work goes on.
                let ticket = pool.submit(4);
                assert_eq!(pool.wait(ticket).unwrap().map(|o| o.0), Ok(16));
                if threads == 0 {
                    // The caller's state, and the one that replaced it after the panic.
                    assert_eq!(made.load(Ordering::SeqCst), 2, "the state was not rebuilt");
                }
            }
        }
    }

    #[test]
    fn with_no_thread_the_caller_runs_everything() {
        let (mut pool, _) = pool(0, Help::WantedOnly);
        assert_eq!(pool.threads(), 0);
        let a = pool.submit(2);
        let b = pool.submit(3);
        let here = std::thread::current().id();
        assert_eq!(pool.wait(a), Some(Ok((4, here))));
        assert_eq!(pool.wait(b), Some(Ok((9, here))));
    }

    #[test]
    fn abandoned_tickets_are_skipped_without_waiting() {
        let (mut pool, _) = pool(2, Help::WantedOnly);
        for i in 0..10 {
            pool.submit(i);
        }
        pool.abandon();
        assert_eq!(pool.pending(), 0);
        let ticket = pool.submit(5);
        assert_eq!(ticket, 10);
        assert_eq!(pool.wait(3), None, "abandoned");
        assert_eq!(pool.wait(ticket).unwrap().map(|o| o.0), Ok(25));
        // Waiting for a later ticket skips the earlier ones.
        let first = pool.submit(6);
        let second = pool.submit(7);
        assert_eq!(pool.wait(second).unwrap().map(|o| o.0), Ok(49));
        assert_eq!(pool.wait(first), None, "skipped by waiting for a later one");
        assert_eq!(pool.pending(), 0);
        // try_next hands out nothing when nothing is pending.
        assert!(pool.try_next().is_none());
    }

    #[test]
    fn stepping_and_running_here_keep_the_order() {
        for (threads, help) in [(0, Help::WantedOnly), (1, Help::WantedOnly), (2, Help::Always)] {
            let (mut pool, _) = pool(threads, help);
            let mut expected = Vec::new();
            for i in (0..30u64).filter(|&i| i != 13) {
                pool.submit(i);
                expected.push(i * i);
                if pool.in_flight() > 2 {
                    pool.step();
                }
            }
            let mut got = Vec::new();
            while pool.pending() > 0 {
                match pool.try_next() {
                    Some(outcome) => got.push(outcome.unwrap().0),
                    None => pool.step(),
                }
            }
            assert_eq!(got, expected, "{threads} threads, {help:?}");
            assert_eq!(pool.in_flight(), 0);
        }
    }

    #[test]
    fn dropping_joins_the_threads() {
        let (mut pool, _, alive) = watched_pool(3, Help::Always);
        for i in 0..100 {
            pool.submit(i);
        }
        // Each thread's state holds the token until its thread ends.
        assert!(alive.upgrade().is_some());
        drop(pool);
        assert!(alive.upgrade().is_none(), "a thread outlived its pool");
    }
}
