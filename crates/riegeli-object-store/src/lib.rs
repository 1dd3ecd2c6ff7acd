//! Riegeli/records and ArrayRecord files in object storage: S3, GCS, Azure
//! Blob Storage and plain HTTP(S) servers with range requests, through the
//! `object_store` crate, fetching only the bytes a read needs.
//!
//! [`ObjectSource`] is a `Read + Seek` view of one object, which
//! [`RecordReader`] and [`ArrayRecordReader`] read like a file. Behind it, a
//! cache of byte ranges fetched by ranged GETs on a runtime of this crate's
//! own, several in flight:
//! - a read that continues the previous one fetches large ranges ahead
//!   ([`FetchConfig::sequential_window`] × [`FetchConfig::sequential_depth`]),
//!   so that a sequential read does not wait on each request's latency;
//! - any other read fetches [`FetchConfig::min_fetch`] bytes (a chunk header
//!   and what follows);
//! - an [`ArrayRecordReader`] opened by [`open_array_record`] tells the source
//!   the exact byte range of every chunk a read is about to read (its
//!   prefetch hook): they are fetched concurrently, adjacent chunks in one
//!   request. Opening one makes two requests: one for the object's size and
//!   last 64 KiB (a suffix range), one for the footer. Nothing else.
//!
//! A source may be used in a process forked from the one that opened it (a
//! data loader's workers): each process fetches through a cache, requests,
//! connections and a runtime of its own, made on its first read there; the
//! parent's, whose requests ran on threads the child does not have (and whose
//! locks one of them may have held at the fork), are never touched there.
//! [`Location`] reads local files at positions of its own
//! ([`PositionalFile`]), so that processes never move each other's.
//!
//! Credentials, regions and endpoints come from the environment as
//! `object_store`'s `from_env` builders read them (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT`, `AWS_ALLOW_HTTP`,
//! `GOOGLE_SERVICE_ACCOUNT`, `AZURE_STORAGE_ACCOUNT_NAME`, ...). Failed
//! requests are retried as `object_store` retries them; an error names the
//! URL and the byte range.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use bytes::Bytes;
use futures_util::StreamExt;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, ObjectStoreScheme};
use riegeli_records::{
    ArrayRecordReader, ArrayRecordReaderOptions, PerProcess, PositionalFile, ReadAt, RecordReader, RecordReaderOptions,
};
use url::Url;

/// Whether `location` names an object (`s3://`, `s3a://`, `gs://`, `az://`,
/// `abfs(s)://`, `adl://`, `azure://`, `http(s)://`) rather than a local path.
pub fn is_url(location: &str) -> bool {
    let Some((scheme, _)) = location.split_once("://") else { return false };
    matches!(
        scheme.to_ascii_lowercase().as_str(),
        "s3" | "s3a" | "gs" | "az" | "adl" | "azure" | "abfs" | "abfss" | "http" | "https"
    )
}

/// How an [`ObjectSource`] fetches.
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
        }
    }
}

/// Requests and bytes an [`ObjectSource`] (with its clones) fetched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchStats {
    /// Ranged GETs made (retries inside `object_store` not counted).
    pub requests: u64,
    /// Bytes they returned.
    pub bytes: u64,
}

/// A `Read + Seek` view of one object, reading through a shared cache of
/// fetched ranges. Clones share the cache (and the statistics) and have
/// positions of their own.
///
/// In a child forked from the process that opened it (a data loader's
/// worker), a source and its clones fetch through a cache, requests and
/// connections of that process's own, on its own runtime, with a store
/// opened again from the URL (one opened by [`with_store`](Self::with_store)
/// keeps the store given); the parent's, whose requests were running on
/// threads the child does not have, are never touched there.
#[derive(Clone)]
pub struct ObjectSource {
    object: Arc<Object>,
    pos: u64,
}

impl fmt::Debug for ObjectSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectSource")
            .field("url", &self.object.url)
            .field("size", &self.object.size)
            .field("pos", &self.pos)
            .finish_non_exhaustive()
    }
}

/// One object, and how each process reads it.
struct Object {
    location: Path,
    url: String,
    size: u64,
    config: FetchConfig,
    /// The store given to [`ObjectSource::with_store`], or `None` for one
    /// opened from the URL (opened again in a forked child).
    given_store: Option<Arc<dyn ObjectStore>>,
    /// [`ObjectSource::limit_read_ahead`]'s limit (`u64::MAX`: none), for the
    /// cache of a forked child.
    ahead_limit: AtomicU64,
    /// The cache and requests of each process.
    shared: PerProcess<Result<Arc<Shared>, String>>,
}

impl Object {
    /// The cache of the running process: made, with a store of its own, in a
    /// child forked since the object was opened.
    fn shared(&self) -> io::Result<&Arc<Shared>> {
        let shared = self.shared.get_or_init(|| {
            let store = match &self.given_store {
                Some(store) => Arc::clone(store),
                None => store_for(&self.url).map_err(|e| e.to_string())?.0,
            };
            let limit = self.ahead_limit.load(Ordering::Relaxed);
            let cache = Cache { ahead_limit: (limit != u64::MAX).then_some(limit), ..Cache::default() };
            Ok(Arc::new(Shared::new(store, self, cache, 0, 0)))
        });
        shared.as_ref().map_err(|e| io::Error::other(format!("{}: {e}", self.url)))
    }
}

struct Shared {
    store: Arc<dyn ObjectStore>,
    location: Path,
    url: String,
    size: u64,
    config: FetchConfig,
    cache: Mutex<Cache>,
    /// Signalled when a fetch completes.
    fetched: Condvar,
    permits: Arc<tokio::sync::Semaphore>,
    requests: AtomicU64,
    bytes: AtomicU64,
}

impl Shared {
    /// A cache of `object` holding `cache`, fetching through `store`.
    fn new(store: Arc<dyn ObjectStore>, object: &Object, cache: Cache, requests: u64, bytes: u64) -> Self {
        Self {
            store,
            location: object.location.clone(),
            url: object.url.clone(),
            size: object.size,
            config: object.config.clone(),
            cache: Mutex::new(cache),
            fetched: Condvar::new(),
            permits: Arc::new(tokio::sync::Semaphore::new(object.config.max_in_flight.max(1))),
            requests: AtomicU64::new(requests),
            bytes: AtomicU64::new(bytes),
        }
    }
}

/// Fetched and pending ranges, by where they begin; they never overlap.
#[derive(Default)]
struct Cache {
    slots: BTreeMap<u64, Slot>,
    /// Bytes of the slots.
    bytes: u64,
    /// Where the last read ended: a read there is sequential.
    last_end: Option<u64>,
    /// Where the run of sequential reads that the last read continued began:
    /// its read-ahead windows grow with it (see [`Shared::read_ahead`]).
    run_start: u64,
    /// Where prefetched ranges (chunks) end: a read does not cross one, so
    /// that the reader of one chunk of a coalesced range does not take (and
    /// count as read) the bytes of the next, which another thread reads.
    part_ends: std::collections::BTreeSet<u64>,
    /// Where sequential read-ahead stops (the end of a byte range being
    /// read, see [`ObjectSource::limit_read_ahead`]).
    ahead_limit: Option<u64>,
}

struct Slot {
    end: u64,
    state: SlotState,
    /// Fetched by a sequential read's read-ahead (reading it keeps the
    /// read-ahead going; reading a prefetched range does not).
    ahead: bool,
    /// The parts read from it so far (merged, in order): once all of it was
    /// read it is dropped. The threads of a parallel read read their own
    /// chunks of a coalesced range, and may read past them (buffering).
    read: Vec<Range<u64>>,
}

impl Slot {
    /// Records that `range` was read; returns whether all of the slot was.
    fn mark_read(&mut self, start: u64, range: Range<u64>) -> bool {
        self.read.push(range);
        self.read.sort_unstable_by_key(|r| r.start);
        let mut merged: Vec<Range<u64>> = Vec::with_capacity(self.read.len());
        for r in self.read.drain(..) {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        self.read = merged;
        self.read.first().is_some_and(|r| r.start <= start && r.end >= self.end)
    }
}

/// A fetched range as the pieces its response body arrived in: gathering
/// them into one buffer would cost a copy (and a fresh buffer's page faults)
/// of every byte fetched.
#[derive(Default)]
struct Pieces {
    parts: Vec<Bytes>,
    /// Where each part ends, from the start of the range.
    ends: Vec<u64>,
}

impl Pieces {
    fn push(&mut self, part: Bytes) {
        if !part.is_empty() {
            self.ends.push(self.len() + part.len() as u64);
            self.parts.push(part);
        }
    }

    /// Keeps the first `len` bytes (fewer held: all of them).
    fn truncate(&mut self, len: u64) {
        let keep = self.ends.partition_point(|&end| end < len) + 1;
        self.parts.truncate(keep);
        self.ends.truncate(keep);
        if let (Some(part), Some(end)) = (self.parts.last_mut(), self.ends.last_mut())
            && *end > len
        {
            part.truncate(part.len() - (*end - len) as usize);
            *end = len;
        }
    }

    /// Bytes held.
    fn len(&self) -> u64 {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Copies the bytes from `offset` on into `buf`, as many as fit; returns
    /// how many.
    fn copy_at(&self, offset: u64, buf: &mut [u8]) -> usize {
        let mut copied = 0;
        let first = self.ends.partition_point(|&end| end <= offset);
        for (part, &end) in self.parts.iter().zip(&self.ends).skip(first) {
            let Some(rest) = buf.get_mut(copied..).filter(|rest| !rest.is_empty()) else { break };
            // The first part holds `offset`; the next ones are read from their start.
            let skip = if copied == 0 { part.len() - (end - offset) as usize } else { 0 };
            let from = part.get(skip..).unwrap_or_default();
            let n = from.len().min(rest.len());
            rest[..n].copy_from_slice(&from[..n]);
            copied += n;
        }
        copied
    }
}

enum SlotState {
    Pending,
    Ready(Pieces),
    Failed(String),
}

/// The runtime the requests of every source run on: one per process. A child
/// forked from a process that had one has none of its threads (and its locks
/// may be held forever by one of them): it starts its own, and the parent's
/// is never touched there (see [`PerProcess`]).
fn runtime() -> io::Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: PerProcess<Result<tokio::runtime::Runtime, String>> = PerProcess::new();
    let runtime = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("riegeli-object-store")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the object store runtime: {e}"))
    });
    runtime.as_ref().map_err(|e| io::Error::other(e.clone()))
}

/// Runs `future` on the runtime and waits for it on this thread (which may
/// itself be a thread of another runtime: nothing here blocks on it).
fn wait<T: Send + 'static>(future: impl std::future::Future<Output = T> + Send + 'static) -> io::Result<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime()?.spawn(async move {
        let _ = tx.send(future.await);
    });
    rx.recv().map_err(|_| io::Error::other("an object store request was cancelled"))
}

/// What [`get_pieces`] returns.
type GotPieces = object_store::Result<(u64, Range<u64>, Pieces)>;

/// One GET of `range` of `location`: the object's size, the range the answer
/// holds (object_store checks that it is the range asked for), and its body
/// as the pieces it arrived in. A body longer than that range is an error,
/// read no further: a server cannot make a read hold more than it asked for.
async fn get_pieces(store: &dyn ObjectStore, location: &Path, range: GetRange) -> GotPieces {
    let result = store.get_opts(location, GetOptions::new().with_range(Some(range))).await?;
    let (size, range) = (result.meta.size, result.range.clone());
    let expected = range.end.saturating_sub(range.start);
    let mut body = result.into_stream();
    let mut pieces = Pieces::default();
    while let Some(piece) = body.next().await {
        pieces.push(piece?);
        if pieces.len() > expected {
            return Err(object_store::Error::Generic {
                store: "riegeli-object-store",
                source: format!("the server sent more than the {expected} bytes of {range:?}").into(),
            });
        }
    }
    Ok((size, range, pieces))
}

/// An `object_store` error as an `io::Error` naming the URL and the bytes.
fn io_error(error: &object_store::Error, what: &str) -> io::Error {
    let kind = match error {
        object_store::Error::NotFound { .. } => io::ErrorKind::NotFound,
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
            io::ErrorKind::PermissionDenied
        }
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, format!("{what}: {error}"))
}

/// The store and path of `url`, configured from the environment.
fn store_for(url: &str) -> io::Result<(Arc<dyn ObjectStore>, Path)> {
    let invalid = |e: &dyn fmt::Display| io::Error::new(io::ErrorKind::InvalidInput, format!("{url}: {e}"));
    let parsed = Url::parse(url).map_err(|e| invalid(&e))?;
    let (scheme, path) = ObjectStoreScheme::parse(&parsed).map_err(|e| invalid(&e))?;
    let store: Arc<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::AmazonS3 => {
            Arc::new(object_store::aws::AmazonS3Builder::from_env().with_url(url).build().map_err(|e| invalid(&e))?)
        }
        ObjectStoreScheme::GoogleCloudStorage => Arc::new(
            object_store::gcp::GoogleCloudStorageBuilder::from_env().with_url(url).build().map_err(|e| invalid(&e))?,
        ),
        ObjectStoreScheme::MicrosoftAzure => Arc::new(
            object_store::azure::MicrosoftAzureBuilder::from_env().with_url(url).build().map_err(|e| invalid(&e))?,
        ),
        ObjectStoreScheme::Http => {
            let origin = &parsed[..url::Position::BeforePath];
            // An `http://` URL says plain HTTP is wanted.
            let client = object_store::ClientOptions::new().with_allow_http(parsed.scheme() == "http");
            Arc::new(
                object_store::http::HttpBuilder::new()
                    .with_url(origin)
                    .with_client_options(client)
                    .build()
                    .map_err(|e| invalid(&e))?,
            )
        }
        _ => return Err(invalid(&"not an object store URL (s3://, gs://, az://, http(s)://)")),
    };
    Ok((store, path))
}

impl ObjectSource {
    /// Opens the object at `url` (see [`is_url`]), configured from the
    /// environment (see [`with_store`](Self::with_store)).
    pub fn open(url: &str) -> io::Result<Self> {
        Self::open_with(url, FetchConfig::default())
    }

    /// Opens the object at `url` as [`open`](Self::open) does, fetching as
    /// `config` says.
    pub fn open_with(url: &str, config: FetchConfig) -> io::Result<Self> {
        let (store, path) = store_for(url)?;
        Self::opened(store, false, path, url, config)
    }

    /// Opens object `location` of `store`; `url` names it in errors.
    ///
    /// One request learns the object's size and fetches its last
    /// [`min_fetch`](FetchConfig::min_fetch) bytes (where ArrayRecord's
    /// postscript is, and what a format check reads), which stay cached: a
    /// GET of a suffix range. Where the store cannot serve one (Azure, an
    /// empty object, a server that ignores the range), a HEAD asks for the
    /// size instead.
    ///
    /// With [`read_from_start`](FetchConfig::read_from_start), the first
    /// windows of a sequential read are asked for at the same time.
    ///
    /// In a forked child, the source reads through `store` too: give a store
    /// that works there (one holding connections of the parent's runtime may
    /// not; sources opened by URL open their store again there).
    pub fn with_store(store: Arc<dyn ObjectStore>, location: Path, url: &str, config: FetchConfig) -> io::Result<Self> {
        Self::opened(store, true, location, url, config)
    }

    /// [`with_store`](Self::with_store); `given`: the store was given (else
    /// it was opened from the URL, and is opened again in a forked child).
    fn opened(
        store: Arc<dyn ObjectStore>,
        given: bool,
        location: Path,
        url: &str,
        config: FetchConfig,
    ) -> io::Result<Self> {
        let suffix = config.min_fetch.max(1);
        // To be read from the start: its first windows are asked for now, with the tail.
        let mut early = Vec::new();
        if config.read_from_start {
            for range in first_windows(&config) {
                let (store, location) = (Arc::clone(&store), location.clone());
                let asked = GetRange::Bounded(range.clone());
                early
                    .push((range, runtime()?.spawn(async move { get_pieces(store.as_ref(), &location, asked).await })));
            }
        }
        let (tail_store, tail_location) = (Arc::clone(&store), location.clone());
        let tail =
            wait(async move { get_pieces(tail_store.as_ref(), &tail_location, GetRange::Suffix(suffix)).await })?;
        let (size, tail) = match tail {
            Ok((size, range, pieces)) if range.end == size && pieces.len() == range.end - range.start => {
                (size, Some((range.start, pieces)))
            }
            Err(
                e @ (object_store::Error::NotFound { .. }
                | object_store::Error::PermissionDenied { .. }
                | object_store::Error::Unauthenticated { .. }),
            ) => {
                return Err(io_error(&e, &format!("GET {url} (its last {suffix} bytes)")));
            }
            _ => {
                let (head_store, head_location) = (Arc::clone(&store), location.clone());
                let meta = wait(async move { head_store.head(&head_location).await })?
                    .map_err(|e| io_error(&e, &format!("HEAD {url}")))?;
                (meta.size, None)
            }
        };
        let mut cache = Cache::default();
        let (mut requests, mut fetched) = (0, 0);
        let tail_start = tail.as_ref().map_or(size, |(start, _)| *start);
        if let Some((start, pieces)) = tail.filter(|(_, pieces)| pieces.len() > 0) {
            (requests, fetched) = (1, pieces.len());
            cache.bytes = fetched;
            cache
                .slots
                .insert(start, Slot { end: size, state: SlotState::Ready(pieces), ahead: false, read: Vec::new() });
        }
        let mut object = Object {
            location,
            url: url.to_owned(),
            size,
            config,
            given_store: None,
            ahead_limit: AtomicU64::new(u64::MAX),
            shared: PerProcess::new(),
        };
        let shared = Arc::new(Shared::new(Arc::clone(&store), &object, cache, requests, fetched));
        for (range, answer) in early {
            shared.adopt(range.start..range.end.min(tail_start), answer)?;
        }
        object.given_store = given.then_some(store);
        object.shared = PerProcess::with(Ok(shared));
        Ok(Self { object: Arc::new(object), pos: 0 })
    }

    /// The cache of the running process (see [`Object::shared`]).
    fn shared(&self) -> io::Result<&Arc<Shared>> {
        self.object.shared()
    }

    /// The object's size.
    pub fn size(&self) -> u64 {
        self.object.size
    }

    /// The object's URL.
    pub fn url(&self) -> &str {
        &self.object.url
    }

    /// Requests and bytes fetched so far, by this source and its clones (in
    /// this process).
    pub fn stats(&self) -> FetchStats {
        self.object.shared.get().and_then(|shared| shared.as_ref().ok()).map_or_else(FetchStats::default, |shared| {
            FetchStats {
                requests: shared.requests.load(Ordering::Relaxed),
                bytes: shared.bytes.load(Ordering::Relaxed),
            }
        })
    }

    /// Starts fetching `ranges` (in any order; overlapping, adjacent and
    /// already fetched bytes are asked for once), so that reads find them
    /// at hand.
    pub fn prefetch(&self, ranges: &[Range<u64>]) {
        if let Ok(shared) = self.shared() {
            shared.prefetch(ranges);
        }
    }

    /// Tells the source that reading stops about `end`: a sequential read's
    /// read-ahead fetches nothing past it (reads past it still get their
    /// bytes, fetched as they come). For a reader of one byte range of the
    /// object, as workers read the ranges of a split
    /// ([`RecordReader::set_byte_range`]),
    /// which would otherwise fetch up to
    /// [`sequential_window`](FetchConfig::sequential_window) ×
    /// [`sequential_depth`](FetchConfig::sequential_depth) bytes of the next
    /// ranges. Shared with the source's clones.
    pub fn limit_read_ahead(&self, end: u64) {
        self.object.ahead_limit.store(end, Ordering::Relaxed);
        if let Ok(shared) = self.shared() {
            shared.lock().ahead_limit = Some(end);
        }
    }

    /// Asks now for the read-ahead's windows from where this source reads
    /// next (whole windows, as far as the depth reaches, and not past the
    /// [limit](Self::limit_read_ahead)), for a reader about to read in order
    /// from there: a reader of a byte range once
    /// [`RecordReader::set_byte_range`] found its first chunk. Its first read
    /// then waits for one round trip, not two (its own bytes, then the windows
    /// after them).
    pub fn start_read_ahead(&self) {
        if let Ok(shared) = self.shared() {
            let mut cache = shared.lock();
            shared.read_ahead(&mut cache, self.pos);
        }
    }

    /// A hook for [`ArrayRecordReader::set_prefetch`]: the chunks a read is
    /// about to read are fetched concurrently.
    pub fn prefetcher(&self) -> impl FnMut(&[Range<u64>]) + Send + Sync + 'static {
        let source = self.clone();
        move |ranges| source.prefetch(ranges)
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn prefetch(self: &Arc<Self>, ranges: &[Range<u64>]) {
        let mut sorted: Vec<Range<u64>> = ranges.iter().filter(|r| r.start < r.end).cloned().collect();
        sorted.sort_unstable_by_key(|r| r.start);
        let mut cache = self.lock();
        cache.part_ends.extend(sorted.iter().map(|r| r.end));
        let mut runs: Vec<Range<u64>> = Vec::new();
        for range in sorted {
            match runs.last_mut() {
                Some(current) if range.start <= current.end => current.end = current.end.max(range.end),
                _ => runs.push(range),
            }
        }
        for run in runs {
            // Ranges come from an index in the file: fetched ahead only up to the
            // cache's bound (past it, reads fetch what they need when they need it).
            let room = self.config.max_cached.saturating_sub(cache.bytes);
            if room == 0 {
                break;
            }
            let end = run.end.min(run.start.saturating_add(room));
            self.ensure(&mut cache, run.start..end, self.config.max_request, false);
        }
    }

    /// Fetches what `range` holds that is neither fetched nor being fetched,
    /// in requests of at most `piece` bytes (`ahead`: for a sequential read).
    fn ensure(self: &Arc<Self>, cache: &mut Cache, range: Range<u64>, piece: u64, ahead: bool) {
        let end = range.end.min(self.size);
        let mut cursor = range.start;
        while cursor < end {
            if let Some((_, slot)) = cache.slots.range(..=cursor).next_back().filter(|(_, slot)| slot.end > cursor) {
                cursor = slot.end;
                continue;
            }
            let next_slot = cache.slots.range(cursor..).next().map_or(u64::MAX, |(&start, _)| start);
            let stop = end.min(next_slot).min(cursor.saturating_add(piece.max(1)));
            self.spawn(cache, cursor..stop, ahead);
            cursor = stop;
        }
    }

    /// Starts one ranged GET into a new pending slot.
    fn spawn(self: &Arc<Self>, cache: &mut Cache, range: Range<u64>, ahead: bool) {
        cache.slots.insert(range.start, Slot { end: range.end, state: SlotState::Pending, ahead, read: Vec::new() });
        cache.bytes += range.end - range.start;
        let shared = Arc::clone(self);
        let Ok(runtime) = runtime() else {
            if let Some(slot) = cache.slots.get_mut(&range.start) {
                slot.state = SlotState::Failed("cannot start the object store runtime".to_owned());
            }
            return;
        };
        runtime.spawn(async move {
            let state = shared.get(range.clone()).await;
            shared.complete(&range, state);
        });
    }

    /// Takes the answer of a GET started before the object's size was known
    /// (see [`FetchConfig::read_from_start`]) as the pending slot of `range`
    /// (the part of the range asked for that is neither past the object's end
    /// nor in its tail). A failed or short answer is asked for again as any
    /// fetch is; an answer with nothing wanted is only counted.
    fn adopt(self: &Arc<Self>, range: Range<u64>, answer: tokio::task::JoinHandle<GotPieces>) -> io::Result<()> {
        let wanted = range.start < range.end;
        if wanted {
            let mut cache = self.lock();
            cache
                .slots
                .insert(range.start, Slot { end: range.end, state: SlotState::Pending, ahead: true, read: Vec::new() });
            cache.bytes += range.end - range.start;
        }
        let shared = Arc::clone(self);
        runtime()?.spawn(async move {
            let got = answer.await.ok();
            shared.requests.fetch_add(u64::from(got.is_some()), Ordering::Relaxed);
            let got = got.and_then(Result::ok);
            if let Some((_, _, pieces)) = &got {
                shared.bytes.fetch_add(pieces.len(), Ordering::Relaxed);
            }
            if !wanted {
                return;
            }
            let state = match got {
                Some((_, got, mut pieces)) if got.start == range.start && pieces.len() >= range.end - range.start => {
                    pieces.truncate(range.end - range.start);
                    SlotState::Ready(pieces)
                }
                _ => shared.get(range.clone()).await,
            };
            shared.complete(&range, state);
        });
        Ok(())
    }

    /// Sets the state of the slot of `range`, fetched, and wakes the readers
    /// waiting for it.
    fn complete(&self, range: &Range<u64>, state: SlotState) {
        let mut cache = self.lock();
        if let Some(slot) = cache.slots.get_mut(&range.start) {
            slot.state = state;
        }
        drop(cache);
        self.fetched.notify_all();
    }

    /// One ranged GET (a short answer is asked again, twice).
    async fn get(&self, range: Range<u64>) -> SlotState {
        let Ok(_permit) = self.permits.acquire().await else {
            return SlotState::Failed("the fetch queue was closed".to_owned());
        };
        let mut last = String::new();
        for _ in 0..3 {
            self.requests.fetch_add(1, Ordering::Relaxed);
            let asked = GetRange::Bounded(range.clone());
            match get_pieces(self.store.as_ref(), &self.location, asked).await {
                Ok((_, _, pieces)) => {
                    self.bytes.fetch_add(pieces.len(), Ordering::Relaxed);
                    if pieces.len() == range.end - range.start {
                        return SlotState::Ready(pieces);
                    }
                    last = format!("{} bytes returned", pieces.len());
                }
                Err(e) => return SlotState::Failed(e.to_string()),
            }
        }
        SlotState::Failed(last)
    }

    /// Keeps `sequential_depth` windows of `sequential_window` bytes from
    /// `pos` on fetched or being fetched, asking for whole windows only.
    ///
    /// The first windows of a run of sequential reads are smaller: each is
    /// as long as the run so far, from an eighth of a window up to a whole
    /// one. Requests in flight share the connection's bandwidth, so eight
    /// whole windows asked for at once would all arrive together, the reader
    /// idle until then and the windows after them asked for only then; small
    /// first windows arrive first, and reading them keeps the rest coming.
    /// A reader with a limit (a byte range) asks for whole windows at once.
    fn read_ahead(self: &Arc<Self>, cache: &mut Cache, pos: u64) {
        let window = self.config.sequential_window.max(1);
        let reach = window.saturating_mul(self.config.sequential_depth.max(1) - 1);
        let stop = self.size.min(cache.ahead_limit.unwrap_or(u64::MAX));
        let mut cursor = covered_end(cache, pos);
        while cursor < stop && cursor - pos <= reach {
            // (A reader that said where it stops reads one range of an object split
            // among many: whole windows from the start, fewer requests for its range.)
            let run = if cache.ahead_limit.is_some() { window } else { cursor - cache.run_start.min(cursor) };
            let size = window_after(&self.config, run);
            self.ensure(cache, cursor..cursor.saturating_add(size).min(stop), size, true);
            cursor = covered_end(cache, cursor);
        }
    }

    /// Reads at `pos` into `buf`: from the cache, waiting for a pending
    /// fetch, or fetching first.
    fn read_at(self: &Arc<Self>, pos: u64, buf: &mut [u8]) -> io::Result<usize> {
        if pos >= self.size || buf.is_empty() {
            return Ok(0);
        }
        let mut cache = self.lock();
        let covering = |cache: &Cache| {
            cache.slots.range(..=pos).next_back().filter(|(_, slot)| slot.end > pos).map(|(_, s)| s.ahead)
        };
        // A read that continues the last one, past what was fetched or in what
        // its read-ahead fetched (not in prefetched chunks), keeps the windows
        // ahead of it requested.
        if cache.last_end != Some(pos) {
            cache.run_start = pos;
        } else if covering(&cache).is_none_or(|ahead| ahead) {
            self.read_ahead(&mut cache, pos);
        }
        loop {
            let found = cache.slots.range(..=pos).next_back().filter(|(_, slot)| slot.end > pos);
            let Some((&start, slot)) = found else {
                let mut want = (buf.len() as u64).max(self.config.min_fetch);
                // Past the end of a byte range, reading finishes the chunk that crosses it:
                // in pieces larger than a minimal fetch, but no window ahead.
                if cache.ahead_limit.is_some_and(|limit| pos >= limit) {
                    want = want.max(self.config.sequential_window / 8);
                }
                self.ensure(&mut cache, pos..pos.saturating_add(want), want, false);
                // A read from the very start of an object is most often the first of a
                // sequential read: the read-ahead's first window is asked for with it, so that
                // reading on does not wait for another round trip. (At most an eighth of a
                // window is fetched in vain; a reader that said where it stops reads a range.)
                if pos == 0 && cache.ahead_limit.is_none() {
                    let first = window_after(&self.config, want);
                    self.ensure(&mut cache, want..want.saturating_add(first), first, true);
                }
                continue;
            };
            let end = slot.end;
            match &slot.state {
                SlotState::Pending => {
                    cache = self.fetched.wait(cache).unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                SlotState::Failed(message) => {
                    let error = io::Error::other(format!("GET {} bytes {start}..{end}: {message}", self.url));
                    cache.slots.remove(&start);
                    cache.bytes -= end - start;
                    return Err(error);
                }
                SlotState::Ready(pieces) => {
                    let offset = pos - start;
                    let part_end = cache.part_ends.range(pos + 1..).next().map_or(u64::MAX, |&e| e);
                    let wanted = buf.len().min(usize::try_from(part_end - pos).unwrap_or(usize::MAX));
                    let n = buf.get_mut(..wanted).map_or(0, |buf| pieces.copy_at(offset, buf));
                    let read_end = pos + n as u64;
                    cache.last_end = Some(read_end);
                    let all_read = cache.slots.get_mut(&start).is_some_and(|slot| slot.mark_read(start, pos..read_end));
                    // Every byte was read: not needed again, but for the object's tail,
                    // which every ArrayRecord reader (and the trailer detection before it)
                    // reads first: it stays until evicted.
                    if all_read && end < self.size {
                        cache.slots.remove(&start);
                        cache.bytes -= end - start;
                        let ends: Vec<u64> = cache.part_ends.range(start + 1..=end).copied().collect();
                        for e in ends {
                            cache.part_ends.remove(&e);
                        }
                    }
                    if cache.bytes > self.config.max_cached {
                        evict_behind(&mut cache, read_end);
                    }
                    return Ok(n);
                }
            }
        }
    }
}

/// The read-ahead window that follows a run of sequential reads `run` bytes
/// long: as long as the run, from an eighth of a window up to a whole one.
fn window_after(config: &FetchConfig, run: u64) -> u64 {
    let window = config.sequential_window.max(1);
    run.clamp((window / 8).max(1), window)
}

/// The most ranges [`first_windows`] asks for.
const MOST_FIRST_WINDOWS: usize = 64;

/// The ranges a sequential read from the start of an object asks for first:
/// what its first read fetches ([`FetchConfig::min_fetch`]), then the
/// read-ahead's windows as they grow (see [`Shared::read_ahead`]), then whole
/// windows, half the read-ahead's depth of them (at least one). At most
/// [`FetchConfig::max_in_flight`] ranges, and never more than
/// [`MOST_FIRST_WINDOWS`] (a configuration that bounds neither the depth nor
/// the requests in flight, with tiny windows, would ask for billions).
///
/// The windows past the growing ones keep the connection busy while the
/// requests that follow them, made once the opening's answer came, make
/// their round trip: with only the growing windows asked for, nothing
/// arrived for most of a round trip (20 ms on the bench, of a read of about
/// 120 ms).
fn first_windows(config: &FetchConfig) -> Vec<Range<u64>> {
    let window = config.sequential_window.max(1);
    let whole = (config.sequential_depth / 2).max(1);
    let most = config.max_in_flight.clamp(1, MOST_FIRST_WINDOWS);
    let mut cursor = config.min_fetch.max(1);
    let mut ranges = Vec::new();
    ranges.push(0..cursor);
    let mut wholes = 0;
    while cursor < u64::MAX && wholes < whole && ranges.len() < most {
        let size = window_after(config, cursor);
        let end = cursor.saturating_add(size);
        ranges.push(cursor..end);
        wholes += u64::from(size == window);
        cursor = end;
    }
    ranges
}

/// Where the fetched or pending ranges that run on from `pos` without a gap end.
fn covered_end(cache: &Cache, pos: u64) -> u64 {
    let mut cursor = pos;
    while let Some((_, slot)) = cache.slots.range(..=cursor).next_back().filter(|(_, slot)| slot.end > cursor) {
        cursor = slot.end;
    }
    cursor
}

/// Drops fetched ranges that end at or before `pos`.
fn evict_behind(cache: &mut Cache, pos: u64) {
    let behind: Vec<u64> = cache
        .slots
        .iter()
        .filter(|(_, slot)| slot.end <= pos && matches!(slot.state, SlotState::Ready(_)))
        .map(|(&start, _)| start)
        .collect();
    for start in behind {
        if let Some(slot) = cache.slots.remove(&start) {
            cache.bytes -= slot.end - start;
        }
    }
    cache.part_ends = cache.part_ends.split_off(&(pos + 1));
}

impl Read for ObjectSource {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.shared()?.read_at(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Reads through the shared cache at any offset: the decoding threads of an
/// [`ArrayRecordReader`]'s parallel reads read their chunks this way.
impl ReadAt for ObjectSource {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.shared()?.read_at(offset, buf)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.object.size)
    }
}

impl Seek for ObjectSource {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let target = match pos {
            SeekFrom::Start(pos) => Some(pos),
            SeekFrom::End(delta) => self.object.size.checked_add_signed(delta),
            SeekFrom::Current(delta) => self.pos.checked_add_signed(delta),
        };
        self.pos = target.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.pos)
    }
}

/// A local file or an object: what a reader given a path or a URL reads.
///
/// Both are read at positions of their own: a file by positional reads
/// ([`PositionalFile`]), so that processes forked from the one that opened
/// it read it independently, an object through the cache of the process
/// that reads it ([`ObjectSource`]).
#[derive(Debug)]
pub enum Location {
    /// A local file.
    File(PositionalFile),
    /// An object in object storage.
    Object(ObjectSource),
}

impl Location {
    /// For an object, [`ObjectSource::limit_read_ahead`]; nothing for a file.
    pub fn limit_read_ahead(&self, end: u64) {
        if let Self::Object(source) = self {
            source.limit_read_ahead(end);
        }
    }

    /// For an object, [`ObjectSource::start_read_ahead`]; nothing for a file.
    pub fn start_read_ahead(&self) {
        if let Self::Object(source) = self {
            source.start_read_ahead();
        }
    }

    /// Opens `location`: an object if it is a URL (see [`is_url`]), else a
    /// local file.
    pub fn open(location: &str) -> io::Result<Self> {
        if is_url(location) {
            return ObjectSource::open(location).map(Self::Object);
        }
        let file = std::fs::File::open(location)?;
        if file.metadata()?.is_dir() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{location}: is a directory")));
        }
        Ok(Self::File(PositionalFile::new(file)))
    }

    /// A source reading the same bytes at offsets for several threads: the
    /// file (where the platform reads at offsets, see
    /// [`PositionalFile::shared`]), a clone of an object's source.
    pub fn read_at(&self) -> Option<Arc<dyn ReadAt>> {
        match self {
            Self::File(file) => file.shared(),
            Self::Object(object) => Some(Arc::new(object.clone())),
        }
    }
}

impl Read for Location {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::File(file) => file.read(buf),
            Self::Object(object) => object.read(buf),
        }
    }
}

impl Seek for Location {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        match self {
            Self::File(file) => file.seek(pos),
            Self::Object(object) => object.seek(pos),
        }
    }
}

/// A [`RecordReader`] of `location` (a path or a URL).
pub fn open_records(location: &str, options: RecordReaderOptions) -> io::Result<RecordReader<Location>> {
    Ok(RecordReader::with_options(Location::open(location)?, options))
}

/// An [`ArrayRecordReader`] of `location` (a path or a URL), see
/// [`array_record_reader`].
pub fn open_array_record(
    location: &str,
    options: ArrayRecordReaderOptions,
) -> riegeli_records::Result<ArrayRecordReader<Location>> {
    array_record_reader(Location::open(location)?, options)
}

/// An [`ArrayRecordReader`] of `source` whose decoding threads read their
/// chunks themselves (a file by positional reads on Unix, an object from its
/// cache) and, for an object, whose reads fetch the chunks they need
/// concurrently (its prefetch hook is the source's).
pub fn array_record_reader(
    source: Location,
    options: ArrayRecordReaderOptions,
) -> riegeli_records::Result<ArrayRecordReader<Location>> {
    let shared = source.read_at();
    let hook = match &source {
        Location::Object(object) => Some(object.prefetcher()),
        Location::File(_) => None,
    };
    let mut reader = ArrayRecordReader::with_options(source, options)?;
    if let Some(shared) = shared {
        reader.set_read_at(shared);
    }
    if let Some(hook) = hook {
        reader.set_prefetch(hook);
    }
    Ok(reader)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_copy_across_their_parts() {
        let flat: Vec<u8> = (0..200u8).collect();
        let mut pieces = Pieces::default();
        let mut at = 0;
        for len in [1, 0, 7, 50, 2, 140] {
            pieces.push(Bytes::copy_from_slice(&flat[at..at + len]));
            at += len;
        }
        assert_eq!(pieces.len(), 200);
        for offset in 0..=200u64 {
            for len in [0, 1, 3, 49, 200] {
                let mut buf = vec![0u8; len];
                let n = pieces.copy_at(offset, &mut buf);
                let want = &flat[offset as usize..(offset as usize + len).min(200)];
                assert_eq!(&buf[..n], want, "offset {offset}, len {len}");
            }
        }
        for keep in [0u64, 1, 2, 8, 9, 58, 59, 60, 61, 199, 200, 300] {
            let mut short = Pieces { parts: pieces.parts.clone(), ends: pieces.ends.clone() };
            short.truncate(keep);
            let kept = keep.min(200) as usize;
            assert_eq!(short.len(), kept as u64, "keep {keep}");
            let mut buf = vec![0u8; 256];
            assert_eq!(short.copy_at(0, &mut buf), kept, "keep {keep}");
            assert_eq!(&buf[..kept], &flat[..kept], "keep {keep}");
        }
    }

    #[test]
    fn first_windows_run_on_from_the_start_to_whole_windows_whatever_the_config() {
        let (k, m) = (64u64 << 10, 1u64 << 20);
        let ranges = first_windows(&FetchConfig::default());
        let whole = 8 * (k + m);
        assert_eq!(
            ranges,
            [
                0..k,
                k..k + m,
                k + m..2 * (k + m),
                2 * (k + m)..4 * (k + m),
                4 * (k + m)..8 * (k + m),
                whole..whole + 8 * m,
                whole + 8 * m..whole + 16 * m,
                whole + 16 * m..whole + 24 * m,
                whole + 24 * m..whole + 32 * m,
            ]
        );
        // Half the depth in whole windows, at least one; no more requests than may be in flight.
        for (depth, wholes) in [(0, 1), (1, 1), (2, 1), (3, 1), (6, 3), (16, 8)] {
            let config = FetchConfig { sequential_depth: depth, max_in_flight: 64, ..FetchConfig::default() };
            let ranges = first_windows(&config);
            assert_eq!(ranges.iter().filter(|r| r.end - r.start == 8 * m).count(), wholes, "depth {depth}");
            assert_eq!(ranges.len(), 5 + wholes, "depth {depth}");
        }
        let extremes = [(1, 1, 8, 16), (0, 0, 8, 16), (u64::MAX, u64::MAX, u64::MAX, usize::MAX), (1, u64::MAX, 8, 16)];
        for (min_fetch, sequential_window, sequential_depth, max_in_flight) in extremes.into_iter().chain([
            (1 << 30, 8 << 20, 8, 16),
            (1, 1 << 20, u64::MAX, 3),
            (1, 1, u64::MAX, 0),
            (1, 1, u64::MAX, usize::MAX),
        ]) {
            let config =
                FetchConfig { min_fetch, sequential_window, sequential_depth, max_in_flight, ..FetchConfig::default() };
            let ranges = first_windows(&config);
            assert!(ranges.len() <= max_in_flight.clamp(1, MOST_FIRST_WINDOWS) && ranges[0].start == 0, "{ranges:?}");
            assert!(ranges.iter().all(|r| r.start < r.end), "{ranges:?}");
            assert!(ranges.windows(2).all(|w| w[0].end == w[1].start), "{ranges:?}");
        }
    }
}
