//! The local chunk cache: byte ranges of objects kept in a directory shared
//! by every process of the machine ([`FetchConfig::cache_dir`](crate::FetchConfig::cache_dir)).
//!
//! Layout, under `<dir>/riegeli-cache-v2/`:
//! - `meta/<url key>`: what the cache knows of a URL (its size, its ETag or
//!   version, when that was last checked with the server), written to a
//!   temporary file and renamed into place.
//! - `data/<object key>.<segment>.data` and `.log`: the bytes of one 64 MiB
//!   segment of one version of an object (the object key hashes the URL, the
//!   size and the ETag or version, so that a changed object is a new key and
//!   never read from the old one's bytes), written at their offsets in a
//!   sparse file, and the pieces held, one 32-byte record each (start, length,
//!   the piece's hash, the record's own hash), appended to the log.
//!
//! A piece is at most 4 KiB and crosses no multiple of 4 KiB: a fetched range
//! is written with one `pwrite`, then the records of its pieces with one
//! append. A read checks the hash of every piece it takes a byte of, and no
//! more: a 1 KiB chunk costs a `pread` and a hash of 4 KiB or two (with
//! pieces of 64 KiB it was 64 KiB, and the shuffled epochs of small records
//! ran at a fifth of the local file's rate). Which pieces hold a range is
//! looked up under a lock; they are read and hashed outside it. A chunk whose
//! reader checks its own hashes (and asks for it again when they fail) is
//! read with one `pread` and no piece hash ([`HeldRange::read_unchecked`]):
//! hashing it twice held the shuffled cached epochs at 0.56× the local file's
//! rate.
//!
//! A piece is visible once its log record is: the records are appended (one
//! `write` of an `O_APPEND` file) after the bytes are written, and name their
//! hashes, so no reader takes a piece that is being written, torn or damaged:
//! a piece whose bytes do not hash as its record says (a crash, a full disk, a
//! truncated file, a flipped bit) is forgotten and fetched again, never
//! returned. One file per fetched range with a rename (the usual way) would
//! be hundreds of thousands of files for an object of 1 KiB chunks read at
//! random, an `open` per chunk read; here a segment costs two descriptors,
//! and a cached chunk one `pread`.
//!
//! Eviction is by segment, least recently used first (a
//! segment's data file has its modification time set when it is used, at
//! most every few seconds per process): each process counts what it wrote
//! and lists the directory again once that passes a sixteenth of the bound,
//! removing the oldest segments (log first) down to 90% of the bound. A
//! process still reading a removed segment reads its open (unlinked) files
//! on, with every piece still checked; what it appends there is lost.
//!
//! What a process fetched is written to the cache on a thread for blocking
//! work, not waited for by the read ([`CachedObject::store_later`]); a
//! process about to exit waits for those writes ([`finish_cache_writes`]), as
//! the CLI and the Python package do, or a short process (a `cat` of one
//! object) would leave the last ranges it fetched out of the cache.
//!
//! The directory's name says the format (`v2`: pieces of 4 KiB; `v1` had
//! pieces of 64 KiB): a cache of another format is never read.

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use riegeli_records::PerProcess;

/// The writes [`CachedObject::store_later`] started in this process and that
/// have not ended, and a signal when one ends. Per process: a forked child
/// has none of its parent's threads, so none of its writes.
static WRITES: PerProcess<(Mutex<usize>, Condvar)> = PerProcess::new();

/// One write of the cache counted in [`WRITES`] from its start until it drops.
struct Writing;

impl Writing {
    fn start() -> Self {
        let (count, _) = WRITES.get_or_init(Default::default);
        *count.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        Self
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        let (count, ended) = WRITES.get_or_init(Default::default);
        *count.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
        ended.notify_all();
    }
}

/// How long a process about to exit waits for its cache writes (the CLI's and
/// the Python package's [`finish_cache_writes`]).
pub const CACHE_WRITES_AT_EXIT: Duration = Duration::from_secs(10);

/// Waits, at most `within`, until what this process fetched has been written
/// to the local chunk cache ([`FetchConfig::cache_dir`](crate::FetchConfig::cache_dir)):
/// a read keeps what it fetched there on a thread of its own, not waited for,
/// and a process that exits meanwhile leaves it out (its next run fetches it
/// again). For a process about to exit, after its reads; the CLI calls it
/// before it exits and the Python package at interpreter exit. Returns whether
/// every write ended (`true` at once without a cache). A write started while it
/// waits is waited for too.
pub fn finish_cache_writes(within: Duration) -> bool {
    let (count, ended) = WRITES.get_or_init(Default::default);
    let count = count.lock().unwrap_or_else(PoisonError::into_inner);
    let (count, _) =
        ended.wait_timeout_while(count, within, |count| *count > 0).unwrap_or_else(PoisonError::into_inner);
    *count == 0
}

/// Bytes of one segment of an object.
const SEGMENT: u64 = 64 << 20;

/// No piece crosses a multiple of this (its hash is checked whenever a byte
/// of it is read from the cache).
const UNIT: u64 = 4 << 10;

/// Bytes of a log record.
const RECORD: usize = 32;

/// How often a process marks a segment it reads as used.
const TOUCH_EVERY: Duration = Duration::from_secs(5);

/// What identifies one version of an object: its size and its ETag (or
/// version); an object without either is not cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Version {
    pub(crate) size: u64,
    pub(crate) tag: String,
}

/// The cache directory, as one process uses it.
pub(crate) struct DiskCache {
    root: PathBuf,
    max_bytes: u64,
    /// Bytes this process wrote since it last listed the directory.
    written: AtomicU64,
    /// Bytes the directory held when last listed, plus what this process wrote since.
    estimate: AtomicU64,
    evicting: Mutex<()>,
}

/// A key of 16 hex digits for `parts`.
fn key(parts: &[&[u8]]) -> String {
    let mut hasher = riegeli_hash::Hasher::new();
    for part in parts {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    format!("{:016x}", hasher.finish())
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Writes `bytes` to `path` through a temporary file renamed into place.
fn write_renamed(path: &Path, bytes: &[u8]) -> io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp-{}-{n}", std::process::id()));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

impl DiskCache {
    /// The cache at `dir` (made if missing), bounded to `max_bytes`: one per
    /// process and directory.
    pub(crate) fn open(dir: &Path, max_bytes: u64) -> io::Result<Arc<Self>> {
        static OPENED: PerProcess<Mutex<HashMap<PathBuf, Arc<DiskCache>>>> = PerProcess::new();
        let opened = OPENED.get_or_init(Mutex::default);
        let mut opened = opened.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(cache) = opened.get(dir).filter(|cache| cache.max_bytes == max_bytes) {
            return Ok(Arc::clone(cache));
        }
        let root = dir.join("riegeli-cache-v2");
        std::fs::create_dir_all(root.join("meta"))?;
        std::fs::create_dir_all(root.join("data"))?;
        let cache = Arc::new(Self {
            root,
            max_bytes,
            written: AtomicU64::new(0),
            estimate: AtomicU64::new(0),
            evicting: Mutex::new(()),
        });
        cache.estimate.store(cache.listed_bytes(), Ordering::Relaxed);
        opened.insert(dir.to_owned(), Arc::clone(&cache));
        Ok(cache)
    }

    fn meta_path(&self, url: &str) -> PathBuf {
        self.root.join("meta").join(key(&[url.as_bytes()]))
    }

    /// What the cache knows of `url`: its version, and when (ms since the
    /// epoch) the server last confirmed it. A damaged record is none.
    pub(crate) fn known(&self, url: &str) -> Option<(Version, u64)> {
        let text = std::fs::read_to_string(self.meta_path(url)).ok()?;
        let (body, check) = text.rsplit_once('\n')?;
        if key(&[body.as_bytes()]) != check {
            return None;
        }
        let mut lines = body.splitn(4, '\n');
        let (Some(stored_url), Some(size), Some(checked), Some(tag)) =
            (lines.next(), lines.next(), lines.next(), lines.next())
        else {
            return None;
        };
        (stored_url == url).then_some(())?;
        Some((Version { size: size.parse().ok()?, tag: tag.to_owned() }, checked.parse().ok()?))
    }

    /// Records that the server says `url` is `version`, now.
    pub(crate) fn remember(&self, url: &str, version: &Version) {
        if url.contains('\n') {
            return;
        }
        let body = format!("{url}\n{}\n{}\n{}", version.size, now_ms(), version.tag);
        let text = format!("{body}\n{}", key(&[body.as_bytes()]));
        let _ = write_renamed(&self.meta_path(url), text.as_bytes());
    }

    /// Bytes held in the data directory (allocated blocks where the platform
    /// says, else lengths).
    fn listed_bytes(&self) -> u64 {
        self.segments().iter().map(|s| s.bytes).sum()
    }

    /// Every segment in the directory.
    fn segments(&self) -> Vec<Listed> {
        let mut segments: HashMap<String, Listed> = HashMap::new();
        let Ok(entries) = std::fs::read_dir(self.root.join("data")) else { return Vec::new() };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some((stem, ext)) = name.rsplit_once('.') else { continue };
            let Ok(meta) = entry.metadata() else { continue };
            if ext.starts_with("tmp-") {
                // A crashed writer's: removed after an hour.
                if meta.modified().ok().and_then(|m| m.elapsed().ok()).is_some_and(|age| age.as_secs() > 3600) {
                    let _ = std::fs::remove_file(entry.path());
                }
                continue;
            }
            let listed = segments.entry(stem.to_owned()).or_insert_with(|| Listed {
                stem: stem.to_owned(),
                bytes: 0,
                used: SystemTime::UNIX_EPOCH,
            });
            listed.bytes += allocated(&meta);
            if ext == "data" {
                listed.used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            }
        }
        segments.into_values().collect()
    }

    /// Counts `bytes` written; past the bound, evicts.
    fn wrote(&self, bytes: u64) {
        let written = self.written.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let estimate = self.estimate.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if estimate > self.max_bytes || written > self.max_bytes / 16 {
            self.evict();
        }
    }

    /// Lists the directory; past the bound, removes the least recently used
    /// segments down to 90% of it.
    pub(crate) fn evict(&self) {
        let Ok(_one) = self.evicting.try_lock() else { return };
        self.written.store(0, Ordering::Relaxed);
        let mut segments = self.segments();
        let mut total: u64 = segments.iter().map(|s| s.bytes).sum();
        if total > self.max_bytes {
            segments.sort_by_key(|s| s.used);
            let target = self.max_bytes / 10 * 9;
            for segment in segments {
                if total <= target {
                    break;
                }
                let data = self.root.join("data");
                let _ = std::fs::remove_file(data.join(format!("{}.log", segment.stem)));
                let _ = std::fs::remove_file(data.join(format!("{}.data", segment.stem)));
                total -= segment.bytes;
            }
        }
        self.estimate.store(total, Ordering::Relaxed);
    }
}

/// A segment found by listing the directory.
struct Listed {
    stem: String,
    bytes: u64,
    used: SystemTime,
}

#[cfg(unix)]
fn allocated(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::blocks(meta).saturating_mul(512)
}

#[cfg(not(unix))]
fn allocated(meta: &std::fs::Metadata) -> u64 {
    meta.len()
}

/// One version of one object in the cache, as one process reads it.
pub(crate) struct CachedObject {
    cache: Arc<DiskCache>,
    key: String,
    segments: Mutex<HashMap<u64, Segment>>,
}

/// A segment's files and the pieces its log held when last read.
struct Segment {
    /// Read and written at offsets, outside the lock of the segments.
    data: Arc<File>,
    log: File,
    /// Log bytes read so far.
    log_read: u64,
    /// Pieces by (start, end): their hash.
    pieces: BTreeMap<(u64, u64), u64>,
    touched: Option<Instant>,
}

/// The bytes of a found piece (from its start), and where it began.
type Found = (u64, Bytes);

/// A range [`CachedObject::holds_each`] found held: the file of its segment.
#[derive(Debug, Clone)]
pub(crate) struct HeldRange {
    data: Arc<File>,
    /// Where the segment begins in the object.
    base: u64,
}

impl HeldRange {
    /// Reads `buf.len()` bytes at `pos` (in the held range) with no check of
    /// the pieces' hashes, for a reader that checks the hashes of what it
    /// reads and asks for it again when they fail
    /// ([`Shared::refetch`](crate::cache::Shared::refetch) then forgets the
    /// pieces): one `pread` into `buf`, no lock. `None` if the file ended
    /// first (truncated: the pieces are then read and checked one by one).
    pub(crate) fn read_unchecked(&self, pos: u64, buf: &mut [u8]) -> Option<usize> {
        let read = read_at_most(&self.data, buf, pos.checked_sub(self.base)?).ok()?;
        (read == buf.len()).then_some(read)
    }
}

impl CachedObject {
    /// Object `url` as `version` in `cache`.
    pub(crate) fn new(cache: Arc<DiskCache>, url: &str, version: &Version) -> Self {
        let key = key(&[url.as_bytes(), &version.size.to_le_bytes(), version.tag.as_bytes()]);
        Self { cache, key, segments: Mutex::default() }
    }

    fn path(&self, segment: u64, ext: &str) -> PathBuf {
        self.cache.root.join("data").join(format!("{}.{segment}.{ext}", self.key))
    }

    /// Segment `index` in `segments`, opened (and made) if needed.
    fn segment<'a>(&self, segments: &'a mut HashMap<u64, Segment>, index: u64) -> io::Result<&'a mut Segment> {
        Ok(match segments.entry(index) {
            std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::hash_map::Entry::Vacant(entry) => {
                let data = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(self.path(index, "data"))?;
                let log = OpenOptions::new().read(true).append(true).create(true).open(self.path(index, "log"))?;
                let data = Arc::new(data);
                entry.insert(Segment { data, log, log_read: 0, pieces: BTreeMap::new(), touched: None })
            }
        })
    }

    /// Runs `f` on segment `index`, opened (and made) if needed.
    fn with_segment<T>(&self, index: u64, f: impl FnOnce(&mut Segment) -> T) -> io::Result<T> {
        let mut segments = self.segments.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(f(self.segment(&mut segments, index)?))
    }

    /// What the cache holds of `range`: runs of verified bytes, in order,
    /// each within `range`. Pieces that fail their hash are forgotten (and
    /// counted in the second value).
    ///
    /// Which pieces hold the range is looked up under the lock of the
    /// segments; they are read (adjacent ones in one `pread`) and hashed
    /// outside it, so that threads reading different chunks do not wait for
    /// each other's reads. A piece is at most a [`UNIT`]: a read of a small
    /// chunk reads and hashes a few KiB, not a whole fetched range.
    pub(crate) fn lookup(&self, range: Range<u64>) -> (Vec<Found>, u64) {
        let mut found: Vec<Found> = Vec::new();
        let mut damaged = 0;
        let mut cursor = range.start;
        while cursor < range.end {
            let index = cursor / SEGMENT;
            let seg_end = range.end.min((index + 1) * SEGMENT);
            let planned = self.with_segment(index, |segment| {
                let mut plan = segment.plan(cursor, seg_end);
                if !plan_covers(&plan, cursor..seg_end) {
                    // Something missing: what other processes added since.
                    segment.refresh();
                    plan = segment.plan(cursor, seg_end);
                }
                if !plan.is_empty() {
                    segment.touch();
                }
                (Arc::clone(&segment.data), plan)
            });
            if let Ok((data, plan)) = planned {
                let bad = read_plan(&data, &plan, cursor..seg_end, &mut found);
                if !bad.is_empty() {
                    damaged += bad.len() as u64;
                    let _ = self.with_segment(index, |segment| {
                        for piece in bad {
                            if segment.pieces.get(&piece.bounds) == Some(&piece.hash) {
                                segment.pieces.remove(&piece.bounds);
                            }
                        }
                    });
                }
            }
            cursor = seg_end;
        }
        (found, damaged)
    }

    /// Which of `ranges` the pieces known (to this process, or appended to the
    /// log since) hold all of, by their records: a cheap test (no data is
    /// read, one lock for all, each segment's log read at most once), which
    /// [`lookup`](Self::lookup) confirms or not. Each range held and within
    /// one segment comes with that segment's file, for a reader that checks
    /// what it reads ([`HeldRange::read_unchecked`]); one across segments is
    /// reported as not held.
    pub(crate) fn holds_each(&self, ranges: &[Range<u64>]) -> Vec<Option<HeldRange>> {
        let mut segments = self.segments.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut refreshed: Vec<u64> = Vec::new();
        let mut used: Vec<u64> = Vec::new();
        let mut holds = |range: &Range<u64>| {
            let index = range.start / SEGMENT;
            if range.start >= range.end || range.end > (index + 1) * SEGMENT {
                return None;
            }
            let segment = self.segment(&mut segments, index).ok()?;
            if !segment.covers(range.start, range.end) {
                if refreshed.contains(&index) {
                    return None;
                }
                refreshed.push(index);
                segment.refresh();
                if !segment.covers(range.start, range.end) {
                    return None;
                }
            }
            if !used.contains(&index) {
                used.push(index);
            }
            Some(HeldRange { data: Arc::clone(&segment.data), base: index * SEGMENT })
        };
        let held = ranges.iter().map(&mut holds).collect();
        // About to be read (by `lookup` or `read_unchecked`): used.
        for index in used {
            if let Some(segment) = segments.get_mut(&index) {
                segment.touch();
            }
        }
        held
    }

    /// Forgets the pieces that hold bytes of `range` (in this process: they
    /// are fetched again, and the new pieces' records replace theirs).
    pub(crate) fn forget(&self, range: Range<u64>) {
        let mut segments = self.segments.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (&index, segment) in segments.iter_mut() {
            if index * SEGMENT >= range.end || (index + 1) * SEGMENT <= range.start {
                continue;
            }
            segment.pieces.retain(|&(start, end), _| end <= range.start || start >= range.end);
        }
    }

    /// Stores `parts`, fetched from `start`, on a thread for blocking work of
    /// the runtime of this crate, not waited for ([`finish_cache_writes`]
    /// waits for them).
    pub(crate) fn store_later(self: &Arc<Self>, start: u64, parts: Vec<Bytes>) {
        let object = Arc::clone(self);
        let writing = Writing::start();
        // (Dropped unrun with the runtime, the closure still drops `writing`.)
        drop(tokio::task::spawn_blocking(move || {
            object.store(start, &parts);
            drop(writing);
        }));
    }

    /// Keeps `bytes`, which begin at `start`: in each segment, one write of
    /// the bytes, then one append of the records of their pieces.
    pub(crate) fn store(&self, start: u64, bytes: &[Bytes]) {
        let mut flat = Vec::new();
        for part in bytes {
            flat.extend_from_slice(part);
        }
        let mut pos = start;
        let mut rest = &flat[..];
        while !rest.is_empty() {
            let until_segment_end = SEGMENT - pos % SEGMENT;
            let n = rest.len().min(usize::try_from(until_segment_end).unwrap_or(usize::MAX));
            let (span, after) = rest.split_at(n);
            let ok = self.with_segment(pos / SEGMENT, |segment| segment.append(pos, span)).is_ok_and(|r| r.is_ok());
            if !ok {
                return;
            }
            self.cache.wrote(n as u64);
            pos += n as u64;
            rest = after;
        }
    }
}

/// A piece to read: its bounds and hash (the key and value of
/// [`Segment::pieces`]), and where the bytes wanted of it begin.
#[derive(Debug, Clone, Copy)]
struct Planned {
    bounds: (u64, u64),
    hash: u64,
    from: u64,
}

/// Whether the pieces of `plan` cover `range` without a gap.
fn plan_covers(plan: &[Planned], range: Range<u64>) -> bool {
    let mut at = range.start;
    for piece in plan {
        if piece.from != at {
            return false;
        }
        at = piece.bounds.1;
    }
    at >= range.end
}

/// Reads the pieces of `plan` from `data` (each run of pieces without a gap
/// in one `pread`), pushing what of `range` those that hash as their records
/// say hold onto `found` (runs of adjacent good pieces as one slice); returns
/// the pieces that did not (or could not be read: a truncated file).
fn read_plan(data: &File, plan: &[Planned], range: Range<u64>, found: &mut Vec<Found>) -> Vec<Planned> {
    let mut bad = Vec::new();
    let mut i = 0;
    while i < plan.len() {
        let mut j = i + 1;
        while j < plan.len() && plan[j].bounds.0 <= plan[j - 1].bounds.1 {
            j += 1;
        }
        let run = &plan[i..j];
        i = j;
        let run_start = run.iter().map(|p| p.bounds.0).min().unwrap_or(0);
        let run_end = run.iter().map(|p| p.bounds.1).max().unwrap_or(0);
        let Ok(len) = usize::try_from(run_end - run_start) else {
            bad.extend_from_slice(run);
            continue;
        };
        let mut buf = vec![0u8; len];
        // A truncated file: the pieces past its end are bad, not those before.
        let Ok(read) = read_at_most(data, &mut buf, run_start % SEGMENT) else {
            bad.extend_from_slice(run);
            continue;
        };
        let buf = Bytes::from(buf);
        let offset = |at: u64| (at - run_start) as usize;
        // The good bytes of the run so far, not yet pushed: (from, to).
        let mut good: Option<(u64, u64)> = None;
        for &piece in run {
            let (start, end) = piece.bounds;
            let ok = offset(end) <= read && riegeli_hash::hash(&buf[offset(start)..offset(end)]) == piece.hash;
            let (from, to) = (piece.from.max(range.start), end.min(range.end));
            match good {
                Some((_, at)) if ok && at == from => good = good.map(|(f, _)| (f, to)),
                _ => {
                    if let Some((f, t)) = good.take() {
                        found.push((f, buf.slice(offset(f)..offset(t))));
                    }
                    if ok {
                        good = Some((from, to));
                    }
                }
            }
            if !ok {
                bad.push(piece);
            }
        }
        if let Some((f, t)) = good {
            found.push((f, buf.slice(offset(f)..offset(t))));
        }
    }
    bad
}

impl Segment {
    /// Reads the log records appended since the last read.
    fn refresh(&mut self) {
        let Ok(len) = self.log.metadata().map(|m| m.len()) else { return };
        if len <= self.log_read {
            return;
        }
        let mut new = Vec::new();
        let mut log = &self.log;
        if std::io::Seek::seek(&mut log, std::io::SeekFrom::Start(self.log_read)).is_err()
            || log.take(len - self.log_read).read_to_end(&mut new).is_err()
        {
            return;
        }
        // Whole records only: one being appended is read next time.
        let whole = new.len() / RECORD * RECORD;
        for record in new[..whole].chunks_exact(RECORD) {
            let field = |i: usize| u64::from_le_bytes(record[i * 8..i * 8 + 8].try_into().unwrap_or_default());
            let (start, len, hash, check) = (field(0), field(1), field(2), field(3));
            if riegeli_hash::hash(&record[..24]) != check || len == 0 || len > UNIT {
                continue;
            }
            let Some(end) = start.checked_add(len) else { continue };
            self.pieces.insert((start, end), hash);
        }
        self.log_read += whole as u64;
    }

    /// Whether the pieces known hold all of `cursor..end` (as [`plan`](Self::plan)
    /// would find them, without a gap).
    fn covers(&self, mut cursor: u64, end: u64) -> bool {
        while cursor < end {
            let unit = cursor - cursor % UNIT;
            let reach = self.pieces.range((unit, 0)..=(cursor, u64::MAX)).map(|((_, e), _)| *e).max();
            match reach {
                Some(e) if e > cursor => cursor = e,
                _ => return false,
            }
        }
        true
    }

    /// The pieces known that hold `cursor..end`, in order: from each position,
    /// the piece that holds it and reaches furthest; gaps skipped.
    fn plan(&self, mut cursor: u64, end: u64) -> Vec<Planned> {
        let mut plan = Vec::new();
        while cursor < end {
            let unit = cursor - cursor % UNIT;
            let best = self
                .pieces
                .range((unit, 0)..=(cursor, u64::MAX))
                .filter(|((_, e), _)| *e > cursor)
                .max_by_key(|((_, e), _)| *e)
                .map(|(&bounds, &hash)| Planned { bounds, hash, from: cursor });
            match best {
                Some(piece) => {
                    plan.push(piece);
                    cursor = piece.bounds.1;
                }
                // Nothing here: on to the next piece that begins later.
                None => match self.pieces.range((cursor, 0)..).next().filter(|((s, _), _)| *s < end) {
                    Some(((s, _), _)) => cursor = *s,
                    None => break,
                },
            }
        }
        plan
    }

    /// Writes `span` (within the segment) at `start`, and then, in one
    /// append, the records of its pieces (at most a [`UNIT`] each, none
    /// crossing a multiple of it), but for those already known.
    fn append(&mut self, start: u64, span: &[u8]) -> io::Result<()> {
        let mut records = Vec::new();
        let mut pieces = Vec::new();
        let (mut pos, mut rest) = (start, span);
        while !rest.is_empty() {
            let n = rest.len().min(usize::try_from(UNIT - pos % UNIT).unwrap_or(usize::MAX));
            let (piece, after) = rest.split_at(n);
            let bounds = (pos, pos + n as u64);
            let hash = riegeli_hash::hash(piece);
            if self.pieces.get(&bounds) != Some(&hash) {
                let mut record = [0u8; RECORD];
                record[..8].copy_from_slice(&pos.to_le_bytes());
                record[8..16].copy_from_slice(&(n as u64).to_le_bytes());
                record[16..24].copy_from_slice(&hash.to_le_bytes());
                let check = riegeli_hash::hash(&record[..24]);
                record[24..].copy_from_slice(&check.to_le_bytes());
                records.extend_from_slice(&record);
                pieces.push((bounds, hash));
            }
            pos += n as u64;
            rest = after;
        }
        if pieces.is_empty() {
            return Ok(());
        }
        write_all_at(&self.data, span, start % SEGMENT)?;
        (&self.log).write_all(&records)?;
        self.pieces.extend(pieces);
        self.touched = Some(Instant::now());
        Ok(())
    }

    /// Marks the segment as used (for eviction), at most every few seconds.
    fn touch(&mut self) {
        if self.touched.is_some_and(|t| t.elapsed() < TOUCH_EVERY) {
            return;
        }
        self.touched = Some(Instant::now());
        let _ = self.data.set_modified(SystemTime::now());
    }
}

/// Reads into `buf` from `offset` until it is full or the file ends; returns
/// how many bytes were read.
#[cfg(any(unix, windows))]
fn read_at_most(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        #[cfg(unix)]
        let n = std::os::unix::fs::FileExt::read_at(file, &mut buf[filled..], offset + filled as u64);
        #[cfg(windows)]
        let n = std::os::windows::fs::FileExt::seek_read(file, &mut buf[filled..], offset + filled as u64);
        match n {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(unix)]
fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
}

#[cfg(windows)]
fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        done += std::os::windows::fs::FileExt::seek_write(file, &buf[done..], offset + done as u64)?;
    }
    Ok(())
}

#[cfg(not(any(unix, windows)))]
fn read_at_most(_: &File, _: &mut [u8], _: u64) -> io::Result<usize> {
    Err(io::ErrorKind::Unsupported.into())
}

#[cfg(not(any(unix, windows)))]
fn write_all_at(_: &File, _: &[u8], _: u64) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("riegeli-disk-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// The runs of `found`, as (start, bytes).
    fn runs(found: &[Found]) -> Vec<(u64, Vec<u8>)> {
        found.iter().map(|(at, bytes)| (*at, bytes.to_vec())).collect()
    }

    #[test]
    fn a_damaged_unit_is_dropped_alone_and_reads_take_only_what_they_ask_for() {
        let dir = dir("unit");
        let cache = DiskCache::open(&dir, 1 << 30).unwrap();
        let version = Version { size: 1 << 20, tag: "v1".to_owned() };
        let bytes: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let object = CachedObject::new(Arc::clone(&cache), "s3://b/o", &version);
        // From 100 to 20,100: pieces 100..4096, 4096..8192, ..., 16384..20100.
        object.store(100, &[Bytes::copy_from_slice(&bytes[..7000]), Bytes::copy_from_slice(&bytes[7000..])]);
        assert_eq!(object.lookup(100..20_100), (vec![(100, Bytes::from(bytes.clone()))], 0));
        assert_eq!(runs(&object.lookup(5000..5010).0), [(5000, bytes[4900..4910].to_vec())]);
        assert_eq!(runs(&object.lookup(0..200).0), [(100, bytes[..100].to_vec())]);
        // A byte flipped in the second unit (4096..8192), seen by another process.
        let data = object.path(0, "data");
        let mut file = std::fs::read(&data).unwrap();
        file[6000] ^= 1;
        std::fs::write(&data, file).unwrap();
        let other = CachedObject::new(Arc::clone(&cache), "s3://b/o", &version);
        // A read in another unit finds its bytes; one in the damaged unit does not.
        assert_eq!(runs(&other.lookup(9000..9100).0), [(9000, bytes[8900..9000].to_vec())]);
        assert_eq!(other.lookup(6100..6200), (Vec::new(), 1));
        let (found, damaged) = other.lookup(100..20_100);
        assert_eq!(damaged, 0, "forgotten when found damaged");
        assert_eq!(runs(&found), [(100, bytes[..3996].to_vec()), (8192, bytes[8092..].to_vec())]);
        // Fetched again and kept: whole again, for this process and a third.
        other.store(4096, &[Bytes::copy_from_slice(&bytes[3996..8092])]);
        assert_eq!(runs(&other.lookup(100..20_100).0), [(100, bytes.clone())]);
        let third = CachedObject::new(Arc::clone(&cache), "s3://b/o", &version);
        assert_eq!(third.lookup(100..20_100), (vec![(100, Bytes::from(bytes.clone()))], 0));
        // A truncated data file: the units past its end are dropped, the others kept.
        std::fs::OpenOptions::new().write(true).open(&data).unwrap().set_len(10_000).unwrap();
        let fourth = CachedObject::new(Arc::clone(&cache), "s3://b/o", &version);
        let (found, damaged) = fourth.lookup(100..20_100);
        assert_eq!(runs(&found), [(100, bytes[..8092].to_vec())]);
        assert_eq!(damaged, 3, "8192..12288 (short), 12288..16384, 16384..20100");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
