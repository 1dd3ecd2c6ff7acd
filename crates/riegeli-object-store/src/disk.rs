//! The local chunk cache: byte ranges of objects kept in a directory shared
//! by every process of the machine ([`FetchConfig::cache_dir`](crate::FetchConfig::cache_dir)).
//!
//! Layout, under `<dir>/riegeli-cache-v1/`:
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
//! A piece is visible once its log record is: the record is appended (one
//! `write` of an `O_APPEND` file) after the bytes are written, and names their
//! hash, so no reader takes a piece that is being written, torn or damaged: a
//! piece whose bytes do not hash as its record says (a crash, a full disk, a
//! truncated file, a flipped bit) is forgotten and fetched again, never
//! returned. One file per fetched range with a rename (the usual way) would
//! be hundreds of thousands of files for an object of 1 KiB chunks read at
//! random, an `open` per chunk read; here a segment costs two descriptors,
//! and a cached chunk one `pread`.
//!
//! Pieces do not cross 64 KiB boundaries (a read hashes at most 64 KiB more
//! than it needs). Eviction is by segment, least recently used first (a
//! segment's data file has its modification time set when it is used, at
//! most every few seconds per process): each process counts what it wrote
//! and lists the directory again once that passes a sixteenth of the bound,
//! removing the oldest segments (log first) down to 90% of the bound. A
//! process still reading a removed segment reads its open (unlinked) files
//! on, with every piece still checked; what it appends there is lost.

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use riegeli_records::PerProcess;

/// Bytes of one segment of an object.
const SEGMENT: u64 = 64 << 20;

/// No piece crosses a multiple of this.
const PIECE: u64 = 64 << 10;

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
        let root = dir.join("riegeli-cache-v1");
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
    data: File,
    log: File,
    /// Log bytes read so far.
    log_read: u64,
    /// Pieces by (start, end): their hash.
    pieces: BTreeMap<(u64, u64), u64>,
    touched: Option<Instant>,
}

/// The bytes of a found piece (from its start), and where it began.
type Found = (u64, Bytes);

impl CachedObject {
    /// Object `url` as `version` in `cache`.
    pub(crate) fn new(cache: Arc<DiskCache>, url: &str, version: &Version) -> Self {
        let key = key(&[url.as_bytes(), &version.size.to_le_bytes(), version.tag.as_bytes()]);
        Self { cache, key, segments: Mutex::default() }
    }

    fn path(&self, segment: u64, ext: &str) -> PathBuf {
        self.cache.root.join("data").join(format!("{}.{segment}.{ext}", self.key))
    }

    /// Runs `f` on segment `index`, opened (and made) if needed.
    fn with_segment<T>(&self, index: u64, f: impl FnOnce(&mut Segment) -> T) -> io::Result<T> {
        let mut segments = self.segments.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let segment = match segments.entry(index) {
            std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::hash_map::Entry::Vacant(entry) => {
                let data = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(self.path(index, "data"))?;
                let log = OpenOptions::new().read(true).append(true).create(true).open(self.path(index, "log"))?;
                entry.insert(Segment { data, log, log_read: 0, pieces: BTreeMap::new(), touched: None })
            }
        };
        Ok(f(segment))
    }

    /// What the cache holds of `range`: runs of verified bytes, in order,
    /// each within `range`. Pieces that fail their hash are forgotten (and
    /// counted in the second value).
    pub(crate) fn lookup(&self, range: Range<u64>) -> (Vec<Found>, u64) {
        let mut found: Vec<Found> = Vec::new();
        let mut damaged = 0;
        let mut cursor = range.start;
        while cursor < range.end {
            let index = cursor / SEGMENT;
            let seg_end = range.end.min((index + 1) * SEGMENT);
            let got = self.with_segment(index, |segment| {
                let mut got = segment.find(cursor, seg_end, &mut damaged);
                if !covers(&got, cursor..seg_end) {
                    // Something missing: what other processes added since.
                    segment.refresh();
                    got = segment.find(cursor, seg_end, &mut damaged);
                }
                if !got.is_empty() {
                    segment.touch();
                }
                got
            });
            found.extend(got.unwrap_or_default());
            cursor = seg_end;
        }
        (found, damaged)
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

    /// Keeps `bytes`, which begin at `start`.
    pub(crate) fn store(&self, start: u64, bytes: &[Bytes]) {
        let mut pos = start;
        let mut written = 0;
        let mut flat = Vec::new();
        for part in bytes {
            flat.extend_from_slice(part);
        }
        let mut rest = &flat[..];
        while !rest.is_empty() {
            let until_boundary = PIECE - pos % PIECE;
            let n = rest.len().min(usize::try_from(until_boundary).unwrap_or(usize::MAX));
            let (piece, after) = rest.split_at(n);
            let ok = self.with_segment(pos / SEGMENT, |segment| segment.append(pos, piece)).is_ok_and(|r| r.is_ok());
            if !ok {
                return;
            }
            written += n as u64;
            pos += n as u64;
            rest = after;
        }
        self.cache.wrote(written);
    }
}

/// Whether runs `found` cover `range` without a gap.
fn covers(found: &[Found], range: Range<u64>) -> bool {
    let mut at = range.start;
    for (start, bytes) in found {
        if *start != at {
            return false;
        }
        at += bytes.len() as u64;
    }
    at >= range.end
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
            if riegeli_hash::hash(&record[..24]) != check || len == 0 || len > PIECE {
                continue;
            }
            let Some(end) = start.checked_add(len) else { continue };
            self.pieces.insert((start, end), hash);
        }
        self.log_read += whole as u64;
    }

    /// Verified runs of bytes within `cursor..end` from the pieces known.
    fn find(&mut self, mut cursor: u64, end: u64, damaged: &mut u64) -> Vec<Found> {
        let mut found = Vec::new();
        while cursor < end {
            let block = cursor - cursor % PIECE;
            // The piece covering `cursor` that reaches furthest.
            let best = self
                .pieces
                .range((block, 0)..=(cursor, u64::MAX))
                .filter(|((_, e), _)| *e > cursor)
                .max_by_key(|((_, e), _)| *e)
                .map(|(&k, &h)| (k, h));
            let Some(((start, piece_end), hash)) = best else {
                // Nothing here: on to the next piece that begins later.
                match self.pieces.range((cursor, 0)..).next().filter(|((s, _), _)| *s < end) {
                    Some(((s, _), _)) => {
                        cursor = *s;
                        continue;
                    }
                    None => break,
                }
            };
            match self.read_piece(start, piece_end, hash) {
                Some(bytes) => {
                    let from = usize::try_from(cursor - start).unwrap_or(usize::MAX);
                    let to = usize::try_from(piece_end.min(end) - start).unwrap_or(usize::MAX);
                    found.push((cursor, bytes.slice(from..to)));
                    cursor = piece_end.min(end);
                }
                None => {
                    *damaged += 1;
                    self.pieces.remove(&(start, piece_end));
                }
            }
        }
        found
    }

    /// The bytes of a piece, if they hash as its record says.
    fn read_piece(&self, start: u64, end: u64, hash: u64) -> Option<Bytes> {
        let len = usize::try_from(end - start).ok()?;
        let mut buf = vec![0u8; len];
        read_exact_at(&self.data, &mut buf, start % SEGMENT).ok()?;
        (riegeli_hash::hash(&buf) == hash).then(|| Bytes::from(buf))
    }

    /// Writes a piece and then its record.
    fn append(&mut self, start: u64, piece: &[u8]) -> io::Result<()> {
        let end = start + piece.len() as u64;
        let hash = riegeli_hash::hash(piece);
        if self.pieces.get(&(start, end)) == Some(&hash) {
            return Ok(());
        }
        write_all_at(&self.data, piece, start % SEGMENT)?;
        let mut record = [0u8; RECORD];
        record[..8].copy_from_slice(&start.to_le_bytes());
        record[8..16].copy_from_slice(&(piece.len() as u64).to_le_bytes());
        record[16..24].copy_from_slice(&hash.to_le_bytes());
        let check = riegeli_hash::hash(&record[..24]);
        record[24..].copy_from_slice(&check.to_le_bytes());
        (&self.log).write_all(&record)?;
        self.pieces.insert((start, end), hash);
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

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(unix)]
fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = std::os::windows::fs::FileExt::seek_read(file, &mut buf[filled..], offset + filled as u64)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        filled += n;
    }
    Ok(())
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
fn read_exact_at(_: &File, _: &mut [u8], _: u64) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

#[cfg(not(any(unix, windows)))]
fn write_all_at(_: &File, _: &[u8], _: u64) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}
