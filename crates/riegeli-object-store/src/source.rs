//! [`ObjectSource`]: one object as a `Read + Seek` view with a position of
//! its own (and as a [`ReadAt`] for the decoding threads of parallel reads),
//! reading through the range cache of the process; opening one, and the hints
//! a reader gives it.

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use object_store::path::Path;
use object_store::{GetRange, ObjectStore, ObjectStoreExt};
use riegeli_records::{PerProcess, ReadAt, ReadHints};

use crate::cache::{Cache, Object, Shared};
use crate::config::{FetchConfig, FetchStats};
use crate::store::{get_pieces, io_error, runtime, store_for, wait};
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
        let tail_start = tail.as_ref().map_or(size, |(start, _)| *start);
        let (cache, requests, fetched) = match tail.filter(|(_, pieces)| pieces.len() > 0) {
            Some((start, pieces)) => {
                let fetched = pieces.len();
                (Cache::with_tail(start, size, pieces), 1, fetched)
            }
            None => (Cache::default(), 0, 0),
        };
        let mut object = Object::new(location, url, size, config);
        let shared = Arc::new(Shared::new(Arc::clone(&store), &object, cache, requests, fetched));
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
    /// read is about to read are fetched concurrently ([`prefetch`](Self::prefetch)).
    fn will_need(&self, ranges: &[Range<u64>]) {
        self.prefetch(ranges);
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
