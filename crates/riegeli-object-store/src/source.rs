//! [`ObjectSource`]: one object as a `Read + Seek` view with a position of
//! its own (and as a [`ReadAt`] for the decoding threads of parallel reads),
//! reading through the range cache of the process; opening one, and the hints
//! a reader gives it.

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use object_store::path::Path;
use object_store::{GetRange, ObjectStore};
use riegeli_records::{PerProcess, ReadAt, ReadHints};

use crate::cache::{Cache, Object, Shared};
use crate::config::{FetchConfig, FetchStats, add};
use crate::disk::{CachedObject, DiskCache, Version};
use crate::fetch::Requests;
use crate::store::{Got, Pieces, io_error, runtime, store_for, tag_of, wait};
use crate::windows::first_windows;

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

impl ObjectSource {
    /// Opens the object at `url` (see [`is_url`](crate::is_url)), configured from the
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
        // Every request, the opening's too, goes through one hedged path.
        let requests = Arc::new(Requests::new(Arc::clone(&store), location.clone(), &config, FetchStats::default()));
        let disk = config.cache_dir.as_ref().and_then(|dir| DiskCache::open(dir, config.cache_max_bytes).ok());
        let known = disk.as_ref().and_then(|disk| known_version(disk, &requests, url, &config));
        // Opened from the local chunk cache: the object's tail is there.
        if let (Some(disk), Some(version)) = (&disk, &known) {
            let cached = CachedObject::new(Arc::clone(disk), url, version);
            let start = version.size.saturating_sub(suffix);
            let (found, _) = cached.lookup(start..version.size);
            let mut pieces = Pieces::default();
            for (at, bytes) in found {
                if at == start + pieces.len() {
                    pieces.push(bytes);
                }
            }
            if pieces.len() == version.size - start {
                add(&requests.counters.cache_hits, 1);
                add(&requests.counters.cache_bytes, pieces.len());
                let cache = Cache::with_tail(start, version.size, pieces);
                let mut object = Object::new(location, url, version.size, config);
                object.version = Some(version.clone());
                let shared = Arc::new(Shared::new(requests, &object, cache));
                object.given_store = given.then_some(store);
                object.shared = PerProcess::from(Ok(shared));
                return Ok(Self { object: Arc::new(object), pos: 0 });
            }
        }
        // To be read from the start: its first windows are asked for now, with the tail.
        let mut early = Vec::new();
        if config.read_from_start {
            for range in first_windows(&config) {
                let requests = Arc::clone(&requests);
                let asked = GetRange::Bounded(range.clone());
                early.push((range, runtime()?.spawn(async move { requests.attempt(asked).await })));
            }
        }
        let tail_requests = Arc::clone(&requests);
        let tail = wait(async move { tail_requests.attempt(GetRange::Suffix(suffix)).await })?;
        let (size, tag, tail) = match tail {
            Ok(Got { size, tag, range, pieces }) if range.end == size && pieces.len() == range.end - range.start => {
                (size, tag, Some((range.start, pieces)))
            }
            Err(
                e @ (object_store::Error::NotFound { .. }
                | object_store::Error::PermissionDenied { .. }
                | object_store::Error::Unauthenticated { .. }),
            ) => {
                return Err(io_error(&e, &format!("GET {url} (its last {suffix} bytes)")));
            }
            _ => {
                let head_requests = Arc::clone(&requests);
                let meta = wait(async move { head_requests.head().await })?
                    .map_err(|e| io_error(&e, &format!("HEAD {url}")))?;
                (meta.size, tag_of(&meta), None)
            }
        };
        let tail_start = tail.as_ref().map_or(size, |(start, _)| *start);
        let (cache, tail) = match tail {
            Some((start, pieces)) => {
                let parts = pieces.parts().to_vec();
                (Cache::with_tail(start, size, pieces), Some((start, parts)))
            }
            None => (Cache::default(), None),
        };
        let version = tag.map(|tag| Version { size, tag });
        if let (Some(disk), Some(version)) = (&disk, &version) {
            disk.remember(url, version);
        }
        let mut object = Object::new(location, url, size, config);
        object.version = version;
        let shared = Arc::new(Shared::new(requests, &object, cache));
        if let (Some(cached), Some((start, parts))) = (shared.disk(), tail) {
            cached.store(start, &parts);
        }
        for (range, answer) in early {
            shared.adopt(range.start..range.end.min(tail_start), answer)?;
        }
        object.given_store = given.then_some(store);
        object.shared = PerProcess::from(Ok(shared));
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

    /// What this source and its clones fetched so far, in this process:
    /// requests, bytes, the local chunk cache's hits and misses, retries,
    /// hedges.
    pub fn stats(&self) -> FetchStats {
        self.object
            .shared
            .get()
            .and_then(|shared| shared.as_ref().ok())
            .map_or_else(FetchStats::default, |shared| shared.requests.counters.stats())
    }

    /// Starts fetching `ranges` (in any order; overlapping, adjacent and
    /// already fetched bytes are asked for once), so that reads find them
    /// at hand.
    pub fn prefetch(&self, ranges: &[Range<u64>]) {
        if let Ok(shared) = self.shared() {
            shared.prefetch(ranges, false);
        }
    }
}

/// The version of `url` the local chunk cache knows, if the server confirmed
/// it within [`FetchConfig::cache_max_age`], or confirms it now (a HEAD
/// through `requests`); `None` if the cache knows none, the HEAD fails, or the
/// object has no ETag or version (it is then opened as without a cache, by a
/// GET of its tail).
fn known_version(disk: &DiskCache, requests: &Arc<Requests>, url: &str, config: &FetchConfig) -> Option<Version> {
    let (version, checked) = disk.known(url)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let age = now.saturating_sub(Duration::from_millis(checked));
    if !config.cache_max_age.is_zero() && age <= config.cache_max_age {
        return Some(version);
    }
    let requests = Arc::clone(requests);
    let meta = wait(async move { requests.head().await }).ok()?.ok()?;
    let now = Version { size: meta.size, tag: tag_of(&meta)? };
    disk.remember(url, &now);
    Some(now)
}

impl Read for ObjectSource {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.shared()?.read_at(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Reads through the shared cache at any offset: the decoding threads of an
/// [`ArrayRecordReader`](riegeli_records::ArrayRecordReader)'s parallel reads read their chunks this way.
impl ReadAt for ObjectSource {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.shared()?.read_at(offset, buf)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.object.size)
    }

    /// The chunks an [`ArrayRecordReader`](riegeli_records::ArrayRecordReader)'s
    /// read is about to read are fetched concurrently ([`prefetch`](Self::prefetch));
    /// those the local chunk cache holds are read from there, with no hash of
    /// the cache's own if the reader checks theirs (`checked`).
    fn will_need(&self, ranges: &[Range<u64>], checked: bool) {
        if let Ok(shared) = self.shared() {
            shared.prefetch(ranges, checked);
        }
    }

    /// A chunk that failed its checks is fetched again from the server
    /// (whatever this process and the local chunk cache held of it dropped):
    /// a byte flipped in transit is not reported as a damaged file.
    fn refetch(&self, range: Range<u64>) -> bool {
        self.shared().is_ok_and(|shared| shared.refetch(range))
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

/// A reader of a byte range of the object
/// ([`RecordReader::set_byte_range`](riegeli_records::RecordReader::set_byte_range))
/// says where it stops and what it reads: the read-ahead fetches no window
/// past the range's end (the reads that finish the chunk that crosses it get
/// their bytes as they come), and the windows from the range's first chunk
/// to its end are asked for at once, before its first read. Shared with the
/// source's clones.
impl ReadHints for ObjectSource {
    fn will_stop_at(&self, end: u64) {
        if let Ok(shared) = self.shared() {
            shared.limit(&self.object, end);
        }
    }

    fn will_read(&self, range: Range<u64>) {
        if let Ok(shared) = self.shared() {
            shared.limit(&self.object, range.end);
            shared.start_read_ahead(range.start);
        }
    }

    /// A clone of the source: threads read through the shared cache.
    fn positional(&self) -> Option<Arc<dyn ReadAt>> {
        Some(Arc::new(self.clone()))
    }
}
