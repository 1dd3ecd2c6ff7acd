//! How an object is fetched (`FetchConfig`) and what was fetched (`FetchStats`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How an [`ObjectSource`](crate::ObjectSource) fetches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchConfig {
    /// Bytes fetched by a read that does not continue the previous one
    /// (default 64 KiB).
    pub min_fetch: u64,
    /// Bytes per request of a sequential read (default 8 MiB).
    pub sequential_window: u64,
    /// Requests a sequential read keeps ahead of itself (default 8: with 20 ms
    /// of latency on loopback, 8 windows read 12-29% faster than 4, in
    /// `cargo xtask bench objects --depth N`).
    pub sequential_depth: u64,
    /// The largest request a prefetch makes; longer runs of adjacent chunks
    /// are split (default 8 MiB).
    pub max_request: u64,
    /// Requests in flight at most, per source and its clones (default 16).
    pub max_in_flight: usize,
    /// Fetched bytes kept for reads to come: past this, ranges the reader
    /// has moved beyond are dropped (default 256 MiB).
    pub max_cached: u64,
    /// The object is to be read from its start (default `false`): opening
    /// asks for what a sequential read from the start asks for first (the
    /// first read's [`min_fetch`](Self::min_fetch) bytes, read-ahead windows
    /// growing up to a whole one, then whole windows, half the
    /// [`sequential_depth`](Self::sequential_depth) of them: 40 MiB in 9
    /// requests by default) at the same time as the object's tail, before its
    /// size is known. Reading then waits for no further round trip, and the
    /// connection stays busy while the requests that follow make theirs. Those
    /// bytes are fetched in vain if the start is never read, and for an
    /// object smaller than them, the requests past its end are answered with
    /// nothing.
    pub read_from_start: bool,
    /// The local chunk cache, a directory shared by every process of the
    /// machine (default: the `RIEGELI_CACHE_DIR` environment variable, unset:
    /// no cache). Every range fetched is kept there, and read from there
    /// again, by this process and the others, keyed by the object's URL,
    /// size and ETag (or version), so that a changed object is never read
    /// from an old copy; every piece carries a hash of its own, and one that
    /// fails it is dropped and fetched again (see the README's "Local chunk
    /// cache").
    pub cache_dir: Option<PathBuf>,
    /// The cache's size bound: past it, the least recently used 64 MiB
    /// segments of objects are removed (default 10 GiB, or
    /// `RIEGELI_CACHE_MAX_BYTES`).
    pub cache_max_bytes: u64,
    /// How long the cache trusts what the server last said of an object (its
    /// size and ETag) without asking again (default 0, or
    /// `RIEGELI_CACHE_MAX_AGE` in seconds). With 0, opening an object the
    /// cache holds costs one HEAD request (no body), which sees a changed
    /// object; with more, opening one checked that recently costs no request
    /// at all, and a change within that time is not seen by readers opening
    /// the object then (they read the version they knew, consistently).
    pub cache_max_age: Duration,
    /// How long a request may take at most, hedged or not, before it is
    /// tried again; also how long a response body may go without a byte at
    /// most (default 10 s). A request is hedged well before (see
    /// [`FetchStats::hedges`]).
    pub request_timeout: Duration,
    /// Tries of a request that fails or times out (default 4, backing off
    /// 100 ms, 200 ms, 400 ms between them): a dead server is reported after
    /// at most `max_attempts` × `request_timeout` and the backoff.
    pub max_attempts: u32,
}

/// `name`, a number, from the environment.
fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.trim().parse().ok()
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            min_fetch: 64 << 10,
            sequential_window: 8 << 20,
            sequential_depth: 8,
            max_request: 8 << 20,
            max_in_flight: 16,
            max_cached: 256 << 20,
            read_from_start: false,
            cache_dir: std::env::var_os("RIEGELI_CACHE_DIR").filter(|dir| !dir.is_empty()).map(PathBuf::from),
            cache_max_bytes: env_number("RIEGELI_CACHE_MAX_BYTES").unwrap_or(10 << 30),
            cache_max_age: Duration::from_secs(env_number("RIEGELI_CACHE_MAX_AGE").unwrap_or(0)),
            request_timeout: Duration::from_secs(10),
            max_attempts: 4,
        }
    }
}

/// What an [`ObjectSource`](crate::ObjectSource) (with its clones) fetched,
/// in this process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchStats {
    /// Requests made: ranged GETs and HEADs, hedges and retries included
    /// (retries inside `object_store` not counted).
    pub requests: u64,
    /// Bytes they returned.
    pub bytes: u64,
    /// Ranges read from the local chunk cache rather than fetched.
    pub cache_hits: u64,
    /// Bytes read from the local chunk cache.
    pub cache_bytes: u64,
    /// Ranges the cache did not hold (fetched, and then kept there); 0
    /// without a cache.
    pub cache_misses: u64,
    /// Cached pieces dropped because they failed their hash (fetched again).
    pub cache_damaged: u64,
    /// Requests tried again after a failure, a timeout or a short answer.
    pub retries: u64,
    /// Duplicate requests made for a request slower than the recent ones.
    pub hedges: u64,
    /// Ranges fetched again because a chunk in them failed its checks
    /// ([`ReadAt::refetch`](riegeli_records::ReadAt::refetch)).
    pub refetches: u64,
}

/// The counters behind [`FetchStats`], shared by a source's clones in a process.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) requests: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) cache_hits: AtomicU64,
    pub(crate) cache_bytes: AtomicU64,
    pub(crate) cache_misses: AtomicU64,
    pub(crate) cache_damaged: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) hedges: AtomicU64,
    pub(crate) refetches: AtomicU64,
}

/// Adds `n` to `counter`.
pub(crate) fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    /// Counters starting from `stats`.
    pub(crate) fn from_stats(stats: FetchStats) -> Self {
        let counters = Self::default();
        add(&counters.requests, stats.requests);
        add(&counters.bytes, stats.bytes);
        add(&counters.cache_hits, stats.cache_hits);
        add(&counters.cache_bytes, stats.cache_bytes);
        add(&counters.cache_misses, stats.cache_misses);
        counters
    }

    /// What they count now.
    pub(crate) fn stats(&self) -> FetchStats {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        FetchStats {
            requests: get(&self.requests),
            bytes: get(&self.bytes),
            cache_hits: get(&self.cache_hits),
            cache_bytes: get(&self.cache_bytes),
            cache_misses: get(&self.cache_misses),
            cache_damaged: get(&self.cache_damaged),
            retries: get(&self.retries),
            hedges: get(&self.hedges),
            refetches: get(&self.refetches),
        }
    }
}

/// How an [`ObjectSink`](crate::ObjectSink) uploads an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadConfig {
    /// Bytes per part of the multipart upload (default 8 MiB). S3 and GCS
    /// take at most 10,000 parts, each but the last at least 5 MiB: the
    /// default allows objects of up to 80 GB. An object smaller than one part
    /// is written by one PUT at close.
    pub part_size: usize,
    /// Parts uploading at once at most (default 4): a writer that gets
    /// further ahead waits for the oldest. The memory held is about
    /// `(max_in_flight + 1) × part_size`.
    pub max_in_flight: usize,
}

impl Default for UploadConfig {
    fn default() -> Self {
        Self { part_size: 8 << 20, max_in_flight: 4 }
    }
}

/// Requests and bytes an [`ObjectSink`](crate::ObjectSink) uploaded (the
/// names of [`FetchStats`]'s, for writers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UploadStats {
    /// Requests made: starting a multipart upload, each part, completing or
    /// aborting it, or the one PUT of a small object (retries inside
    /// `object_store` not counted).
    pub requests: u64,
    /// Bytes of parts (or of the one PUT) the server accepted.
    pub bytes: u64,
}
