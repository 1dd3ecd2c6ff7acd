//! The requests of one object in one process, all through one path: a
//! request that has not answered within the hedging deadline gets one
//! duplicate, the first answer wins; a ranged GET is tried again after a
//! failure, a timeout or a short answer, backing off; every request and byte
//! is counted. The opening's requests (the tail, the first windows of a
//! sequential read, the HEAD that checks a cached version) go through it as
//! the reads' do.

use std::future::Future;
use std::ops::Range;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::{Either, select};
use object_store::path::Path;
use object_store::{GetRange, ObjectMeta, ObjectStore, ObjectStoreExt};

use crate::config::{Counters, FetchConfig, FetchStats, add};
use crate::hedge::{Latencies, backoff, stall_after};
use crate::store::{Got, GotPieces, Pieces, get_answer, read_body};

/// The requests of one object in one process: its store, the first-byte
/// latencies seen (the hedging deadline), the permits of the requests in
/// flight, and the counters.
pub(crate) struct Requests {
    store: Arc<dyn ObjectStore>,
    location: Path,
    timeout: Duration,
    max_attempts: u32,
    permits: tokio::sync::Semaphore,
    latencies: Mutex<Latencies>,
    /// Woken when a latency is noted: the deadlines of the requests waiting
    /// for an answer move with it (the first requests of an object, made
    /// before any answer was seen, are hedged as soon as the others' answers
    /// say they are late, not after the deadline of an object never seen).
    answered: tokio::sync::Notify,
    /// What [`FetchStats`] says.
    pub(crate) counters: Counters,
}

/// The first of `a` and `b` to succeed, or the error of the last to fail.
async fn first_ok<T, E>(a: impl Future<Output = Result<T, E>>, b: impl Future<Output = Result<T, E>>) -> Result<T, E> {
    match select(pin!(a), pin!(b)).await {
        Either::Left((Ok(done), _)) | Either::Right((Ok(done), _)) => Ok(done),
        Either::Left((Err(_), other)) => other.await,
        Either::Right((Err(_), other)) => other.await,
    }
}

/// Whether trying `error` again cannot help.
fn permanent(error: &object_store::Error) -> bool {
    matches!(
        error,
        object_store::Error::NotFound { .. }
            | object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. }
            | object_store::Error::Precondition { .. }
            | object_store::Error::NotSupported { .. }
            | object_store::Error::InvalidPath { .. }
    )
}

/// An error of ours in `object_store`'s shape.
pub(crate) fn generic(message: String) -> object_store::Error {
    object_store::Error::Generic { store: "riegeli-object-store", source: message.into() }
}

impl Requests {
    /// The requests of object `location` of `store`, as `config` says, their
    /// counters from `stats` on.
    pub(crate) fn new(store: Arc<dyn ObjectStore>, location: Path, config: &FetchConfig, stats: FetchStats) -> Self {
        Self {
            store,
            location,
            timeout: config.request_timeout,
            max_attempts: config.max_attempts.max(1),
            permits: tokio::sync::Semaphore::new(config.max_in_flight.max(1)),
            latencies: Mutex::default(),
            answered: tokio::sync::Notify::new(),
            counters: Counters::from_stats(stats),
        }
    }

    fn hedge_after(&self) -> Duration {
        self.latencies.lock().unwrap_or_else(std::sync::PoisonError::into_inner).hedge_after()
    }

    /// Runs the request `make` makes, counted: if it has not answered within
    /// the hedging deadline (see [`Latencies::hedge_after`], looked at again
    /// whenever another request answers), a duplicate is made and the first
    /// answer taken (the other dropped, which cancels it); none within
    /// [`FetchConfig::request_timeout`] is an error. The latency of each
    /// answer is noted.
    async fn hedged<T, F: Future<Output = object_store::Result<T>>>(
        &self,
        make: impl Fn() -> F,
    ) -> object_store::Result<T> {
        let timed = || async {
            add(&self.counters.requests, 1);
            let start = Instant::now();
            let answer = make().await;
            if answer.is_ok() {
                self.latencies.lock().unwrap_or_else(std::sync::PoisonError::into_inner).record(start.elapsed());
                self.answered.notify_waiters();
            }
            answer
        };
        let started = Instant::now();
        let timeout = self.timeout;
        let no_answer = || generic(format!("no answer within {timeout:?}"));
        let mut first = pin!(timed());
        loop {
            let answered = pin!(self.answered.notified());
            let hedge_at = self.hedge_after().min(timeout);
            let hedge = pin!(tokio::time::sleep_until((started + hedge_at).into()));
            match select(first.as_mut(), select(hedge, answered)).await {
                Either::Left((answer, _)) => return answer,
                // Another request answered: the deadline may have moved.
                Either::Right((Either::Right(((), _)), _)) => {}
                Either::Right((Either::Left(((), _)), _)) if hedge_at >= timeout => return Err(no_answer()),
                Either::Right((Either::Left(((), _)), _)) => {
                    add(&self.counters.hedges, 1);
                    let both = first_ok(first, timed());
                    let left = timeout.saturating_sub(started.elapsed());
                    return tokio::time::timeout(left, both).await.unwrap_or_else(|_| Err(no_answer()));
                }
            }
        }
    }

    /// One try of a GET of `range` (hedged, see [`hedged`](Self::hedged)),
    /// its body read (a body that stalls is an error) and counted.
    pub(crate) async fn attempt(&self, range: GetRange) -> GotPieces {
        let answer = self.hedged(|| get_answer(self.store.as_ref(), &self.location, range.clone())).await?;
        let got = read_body(answer, stall_after(self.hedge_after(), self.timeout)).await;
        if let Ok(got) = &got {
            add(&self.counters.bytes, got.pieces.len());
        }
        got
    }

    /// A HEAD (hedged, see [`hedged`](Self::hedged)).
    pub(crate) async fn head(&self) -> object_store::Result<ObjectMeta> {
        self.hedged(|| self.store.head(&self.location)).await
    }

    /// A GET of `range`, hedged when slow, tried again after a failure, a
    /// timeout or a short answer, backing off ([`FetchConfig::max_attempts`]
    /// tries at most), at most [`FetchConfig::max_in_flight`] at once; an
    /// answer for another version of the object than `tag` is an error.
    pub(crate) async fn get(&self, range: Range<u64>, tag: Option<&str>) -> Result<Pieces, String> {
        let Ok(_permit) = self.permits.acquire().await else {
            return Err("the fetch queue was closed".to_owned());
        };
        let started = Instant::now();
        let mut last = String::new();
        for attempt in 0..self.max_attempts {
            if attempt > 0 {
                add(&self.counters.retries, 1);
                tokio::time::sleep(backoff(attempt)).await;
            }
            match self.attempt(GetRange::Bounded(range.clone())).await {
                Ok(Got { tag: got_tag, pieces, .. }) => {
                    if let (Some(want), Some(got_tag)) = (tag, &got_tag)
                        && want != got_tag
                    {
                        return Err(format!(
                            "the object changed since it was opened (ETag {want}, now {got_tag}): open it again"
                        ));
                    }
                    if pieces.len() == range.end - range.start {
                        return Ok(pieces);
                    }
                    last = format!("{} bytes returned", pieces.len());
                }
                Err(e) if permanent(&e) => return Err(e.to_string()),
                Err(e) => last = e.to_string(),
            }
        }
        Err(format!("{last} ({} tries in {:.1} s)", self.max_attempts, started.elapsed().as_secs_f64()))
    }
}
