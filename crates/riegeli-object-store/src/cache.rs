//! The range cache of one object: fetched and pending ranges by where they
//! begin, the requests that fill them (several in flight, on the runtime of
//! the process), and reads served from them, which start the read-ahead's
//! windows and drop what was read. One per process ([`Object::shared`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use object_store::ObjectStore;
use object_store::path::Path;
use riegeli_records::PerProcess;

use crate::config::{FetchConfig, add};
use crate::disk::{CachedObject, DiskCache, HeldRange, Version};
use crate::fetch::Requests;
use crate::store::{Got, GotPieces, Pieces, runtime, store_for};
use crate::windows::{next_window, on_miss};

/// One object, and how each process reads it.
pub(crate) struct Object {
    location: Path,
    pub(crate) url: String,
    pub(crate) size: u64,
    config: FetchConfig,
    /// The store given to [`ObjectSource::with_store`](crate::ObjectSource::with_store), or `None` for one
    /// opened from the URL (opened again in a forked child).
    pub(crate) given_store: Option<Arc<dyn ObjectStore>>,
    /// Where reading stops ([`Shared::limit`], `u64::MAX`: nowhere), for the
    /// cache of a forked child.
    ahead_limit: AtomicU64,
    /// The version opened (size and ETag or version), if the server gave one:
    /// a range answered for another is refused, and it keys the local cache.
    pub(crate) version: Option<Version>,
    /// The cache and requests of each process.
    pub(crate) shared: PerProcess<Result<Arc<Shared>, String>>,
}

impl Object {
    /// Object `location` (named `url` in errors), `size` bytes long, fetched
    /// as `config` says; its cache is to be made.
    pub(crate) fn new(location: Path, url: &str, size: u64, config: FetchConfig) -> Self {
        Self {
            location,
            url: url.to_owned(),
            size,
            config,
            given_store: None,
            version: None,
            ahead_limit: AtomicU64::new(u64::MAX),
            shared: PerProcess::new(),
        }
    }

    /// The cache of the running process: made, with a store of its own, in a
    /// child forked since the object was opened.
    pub(crate) fn shared(&self) -> io::Result<&Arc<Shared>> {
        let shared = self.shared.get_or_init(|| {
            let store = match &self.given_store {
                Some(store) => Arc::clone(store),
                None => store_for(&self.url).map_err(|e| e.to_string())?.0,
            };
            let limit = self.ahead_limit.load(Ordering::Relaxed);
            let cache = Cache { ahead_limit: (limit != u64::MAX).then_some(limit), ..Cache::default() };
            let requests = Requests::new(store, self.location.clone(), &self.config, crate::FetchStats::default());
            Ok(Arc::new(Shared::new(Arc::new(requests), self, cache)))
        });
        shared.as_ref().map_err(|e| io::Error::other(format!("{}: {e}", self.url)))
    }
}

/// The cache of one object in one process, and its requests.
pub(crate) struct Shared {
    url: String,
    size: u64,
    config: FetchConfig,
    cache: Mutex<Cache>,
    /// Signalled when a fetch completes.
    fetched: Condvar,
    /// Prefetched chunks the local chunk cache holds, by where their next read
    /// begins (their start, then where a short read of one stopped): where they
    /// end, whether their reader checks their hashes, and their segment's file
    /// (see [`prefetch`](Self::prefetch)). Read from there by the threads that
    /// read them ([`read_held`](Self::read_held)), without a slot or the
    /// cache's lock: one lookup in this map per chunk. A read elsewhere in such
    /// a chunk is read as any range is.
    held: Mutex<HashMap<u64, Held>>,
    /// The ETag (or version) every answer must have.
    tag: Option<String>,
    /// The object in the local chunk cache, if there is one.
    disk: Option<Arc<CachedObject>>,
    /// Every request of the object goes through it (hedged, retried, counted).
    pub(crate) requests: Arc<Requests>,
}

impl Shared {
    /// A cache of `object` holding `cache`, fetching through `requests`.
    pub(crate) fn new(requests: Arc<Requests>, object: &Object, cache: Cache) -> Self {
        let disk = match (&object.config.cache_dir, &object.version) {
            (Some(dir), Some(version)) => DiskCache::open(dir, object.config.cache_max_bytes)
                .ok()
                .map(|disk| Arc::new(CachedObject::new(disk, &object.url, version))),
            _ => None,
        };
        Self {
            url: object.url.clone(),
            size: object.size,
            config: object.config.clone(),
            cache: Mutex::new(cache),
            fetched: Condvar::new(),
            held: Mutex::default(),
            tag: object.version.as_ref().map(|v| v.tag.clone()),
            disk,
            requests,
        }
    }

    /// The object in the local chunk cache, if there is one.
    pub(crate) fn disk(&self) -> Option<&Arc<CachedObject>> {
        self.disk.as_ref()
    }
}

/// A prefetched chunk the local chunk cache holds: where it ends, whether
/// its reader checks its hashes, and its segment's file.
#[derive(Debug, Clone)]
struct Held {
    end: u64,
    checked: bool,
    range: HeldRange,
}

/// Prefetched chunks kept in [`Shared::held`] at most: more are forgotten
/// (they are only a shortcut; a chunk prefetched but never read, by a batch
/// given up, stays there until then).
const MAX_HELD: usize = 1 << 16;

/// Fetched and pending ranges, by where they begin; they never overlap.
#[derive(Default)]
pub(crate) struct Cache {
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
    part_ends: BTreeSet<u64>,
    /// Where sequential read-ahead stops (the end of a byte range being
    /// read, see [`Shared::limit`]).
    ahead_limit: Option<u64>,
}

impl Cache {
    /// A cache holding the object's tail, `pieces` from `start` to the
    /// object's end at `size`.
    pub(crate) fn with_tail(start: u64, size: u64, pieces: Pieces) -> Self {
        if pieces.len() == 0 {
            return Self::default();
        }
        let mut cache = Self { bytes: pieces.len(), ..Self::default() };
        cache.slots.insert(start, Slot { end: size, state: SlotState::Ready(pieces), ahead: false, read: Vec::new() });
        cache
    }
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

enum SlotState {
    Pending,
    Ready(Pieces),
    Failed(String),
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

impl Shared {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reading stops about `end` (`u64::MAX`: nowhere): a sequential read's
    /// read-ahead fetches nothing past it (reads past it still get their
    /// bytes, fetched as they come), for a reader of one byte range, which
    /// would otherwise fetch up to [`FetchConfig::sequential_window`] ×
    /// [`FetchConfig::sequential_depth`] bytes of the next ranges. `object`
    /// keeps it for the cache of a forked child.
    pub(crate) fn limit(&self, object: &Object, end: u64) {
        object.ahead_limit.store(end, Ordering::Relaxed);
        self.lock().ahead_limit = (end != u64::MAX).then_some(end);
    }

    /// Asks now for the read-ahead's windows from `pos` (whole windows, as far
    /// as the depth reaches, and not past the [limit](Self::limit)), for a
    /// reader about to read in order from there: its first read then waits for
    /// one round trip, not two (its own bytes, then the windows after them).
    pub(crate) fn start_read_ahead(self: &Arc<Self>, pos: u64) {
        let mut cache = self.lock();
        self.read_ahead(&mut cache, pos);
    }

    /// Starts fetching `ranges` (chunks; in any order, overlapping, adjacent
    /// and already fetched bytes asked for once); those the local chunk cache
    /// holds are read from there by the thread that reads each. `checked`:
    /// their reader checks each chunk's hashes and asks for a
    /// [`refetch`](Self::refetch) of one that fails (see
    /// `riegeli_records::ReadAt::will_need`), so a held chunk is read from the
    /// cache with one `pread` and no hash of the cache's own.
    pub(crate) fn prefetch(self: &Arc<Self>, ranges: &[Range<u64>], checked: bool) {
        let mut sorted: Vec<Range<u64>> = ranges.iter().filter(|r| r.start < r.end).cloned().collect();
        sorted.sort_unstable_by_key(|r| r.start);
        // What the local chunk cache holds is read there by the thread that reads it
        // (see [`read_held`](Self::read_held)), not here: only the others are fetched.
        let held: Vec<Option<HeldRange>> = match &self.disk {
            Some(disk) => disk.holds_each(&sorted),
            None => vec![None; sorted.len()],
        };
        let mut fetched: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
        {
            let mut parts = None;
            for (range, found) in sorted.into_iter().zip(held) {
                let Some(found) = found else {
                    fetched.push(range);
                    continue;
                };
                let parts = parts.get_or_insert_with(|| {
                    let mut parts = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    if parts.len() >= MAX_HELD {
                        parts.clear();
                    }
                    parts
                });
                // Unchecked bytes only for a chunk that every reader asking for it checks.
                let entry = parts.entry(range.start).or_insert(Held { end: range.end, checked, range: found });
                entry.checked &= checked;
                entry.end = entry.end.max(range.end);
            }
        }
        if fetched.is_empty() {
            return;
        }
        let mut cache = self.lock();
        // Where each part ends, for reads of what is fetched (those of held
        // parts end at their `held` entry's end).
        cache.part_ends.extend(fetched.iter().map(|r| r.end));
        let mut runs: Vec<Range<u64>> = Vec::new();
        for range in fetched {
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
    /// in requests of at most `piece` bytes (`ahead`: for a sequential read):
    /// what the local chunk cache holds of it is taken from there.
    pub(crate) fn ensure(self: &Arc<Self>, cache: &mut Cache, range: Range<u64>, piece: u64, ahead: bool) {
        let end = range.end.min(self.size);
        let mut cursor = range.start;
        while cursor < end {
            if let Some((_, slot)) = cache.slots.range(..=cursor).next_back().filter(|(_, slot)| slot.end > cursor) {
                cursor = slot.end;
                continue;
            }
            let next_slot = cache.slots.range(cursor..).next().map_or(u64::MAX, |(&start, _)| start);
            let gap_end = end.min(next_slot);
            let mut at = cursor;
            if let Some(disk) = &self.disk {
                let (found, damaged) = disk.lookup(cursor..gap_end);
                add(&self.requests.counters.cache_damaged, damaged);
                for (start, bytes) in found {
                    if start > at {
                        add(&self.requests.counters.cache_misses, 1);
                        self.spawn_pieces(cache, at..start, piece, ahead);
                    }
                    let len = bytes.len() as u64;
                    add(&self.requests.counters.cache_hits, 1);
                    add(&self.requests.counters.cache_bytes, len);
                    let mut pieces = Pieces::default();
                    pieces.push(bytes);
                    let state = SlotState::Ready(pieces);
                    cache.slots.insert(start, Slot { end: start + len, state, ahead, read: Vec::new() });
                    cache.bytes += len;
                    at = start + len;
                }
                if at < gap_end {
                    add(&self.requests.counters.cache_misses, 1);
                }
            }
            self.spawn_pieces(cache, at..gap_end, piece, ahead);
            cursor = gap_end;
        }
    }

    /// Fetches `range` from the server in requests of at most `piece` bytes.
    fn spawn_pieces(self: &Arc<Self>, cache: &mut Cache, range: Range<u64>, piece: u64, ahead: bool) {
        let mut cursor = range.start;
        while cursor < range.end {
            let stop = range.end.min(cursor.saturating_add(piece.max(1)));
            self.spawn(cache, cursor..stop, ahead);
            cursor = stop;
        }
    }

    /// A chunk in `range` failed its checks: what this process holds of the
    /// range, here and in the local chunk cache, is forgotten, and the range
    /// fetched again from the server (once: a second failure is damage).
    /// Returns whether it was.
    pub(crate) fn refetch(self: &Arc<Self>, range: Range<u64>) -> bool {
        let end = range.end.min(self.size);
        if range.start >= end {
            return false;
        }
        let mut cache = self.lock();
        let overlapping: Vec<u64> = cache
            .slots
            .range(..end)
            .filter(|(_, slot)| slot.end > range.start && !matches!(slot.state, SlotState::Pending))
            .map(|(&start, _)| start)
            .collect();
        for start in overlapping {
            if let Some(slot) = cache.slots.remove(&start) {
                cache.bytes -= slot.end - start;
            }
        }
        if let Some(disk) = &self.disk {
            // The cache held the chunk: its copy was damaged (it was read from
            // there, unless this process dropped it meanwhile).
            if disk.holds_each(std::slice::from_ref(&(range.start..end))).iter().all(Option::is_some) {
                add(&self.requests.counters.cache_damaged, 1);
            }
            disk.forget(range.start..end);
            let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            held.retain(|&next, part| part.end <= range.start || next >= end);
        }
        add(&self.requests.counters.refetches, 1);
        let mut cursor = range.start;
        while cursor < end {
            if let Some((_, slot)) = cache.slots.range(..=cursor).next_back().filter(|(_, slot)| slot.end > cursor) {
                cursor = slot.end;
                continue;
            }
            let next_slot = cache.slots.range(cursor..).next().map_or(u64::MAX, |(&start, _)| start);
            let stop = end.min(next_slot);
            self.spawn_pieces(&mut cache, cursor..stop, self.config.max_request, false);
            cursor = stop;
        }
        true
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

    /// Keeps `pieces`, fetched from `start`, in the local chunk cache (on a
    /// thread for blocking work).
    fn keep(&self, start: u64, pieces: &Pieces) {
        if let Some(disk) = &self.disk {
            disk.store_later(start, pieces.parts().to_vec());
        }
    }

    /// Takes the answer of a GET started before the object's size was known
    /// (see [`FetchConfig::read_from_start`]) as the pending slot of `range`
    /// (the part of the range asked for that is neither past the object's end
    /// nor in its tail). A failed or short answer is asked for again as any
    /// fetch is; an answer with nothing wanted is only counted.
    pub(crate) fn adopt(
        self: &Arc<Self>,
        range: Range<u64>,
        answer: tokio::task::JoinHandle<GotPieces>,
    ) -> io::Result<()> {
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
            // (Made through `shared.requests`, which counted it.)
            let got = answer.await.ok().and_then(Result::ok);
            if !wanted {
                return;
            }
            let state = match got {
                Some(Got { range: got, mut pieces, tag, .. })
                    if got.start == range.start
                        && pieces.len() >= range.end - range.start
                        && (shared.tag.is_none() || tag == shared.tag) =>
                {
                    pieces.truncate(range.end - range.start);
                    shared.keep(range.start, &pieces);
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

    /// A GET of `range` through the one hedged, retried path
    /// ([`Requests::get`]), as the state of its slot; an answer for another
    /// version of the object is an error. What it fetched is kept in the local
    /// chunk cache.
    async fn get(&self, range: Range<u64>) -> SlotState {
        match self.requests.get(range.clone(), self.tag.as_deref()).await {
            Ok(pieces) => {
                self.keep(range.start, &pieces);
                SlotState::Ready(pieces)
            }
            Err(message) => SlotState::Failed(message),
        }
    }

    /// Keeps the read-ahead's windows from `pos` on fetched or being fetched
    /// (see [`next_window`]).
    pub(crate) fn read_ahead(self: &Arc<Self>, cache: &mut Cache, pos: u64) {
        let mut covered = covered_end(cache, pos);
        while let Some(window) = next_window(&self.config, self.size, cache.ahead_limit, cache.run_start, pos, covered)
        {
            let len = window.end - window.start;
            self.ensure(cache, window.clone(), len, true);
            covered = covered_end(cache, window.start);
        }
    }

    /// Reads at `pos` into `buf` from the local chunk cache, if a prefetched
    /// chunk it holds is next read at `pos` (see [`prefetch`](Self::prefetch)):
    /// on the reading thread, without the cache's lock (the decoding threads
    /// read their chunks at once). A chunk whose reader checks its hashes is
    /// read with one `pread`, its bytes checked there; any other, by its
    /// pieces, each checked as any are. `None`: not such a chunk, or its bytes
    /// were found damaged or gone (it is then read as any other range is,
    /// fetched again).
    fn read_held(&self, disk: &CachedObject, pos: u64, buf: &mut [u8]) -> Option<usize> {
        let held = || self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Taken out: read to its end, what is read of it again is read as any range is.
        let part = held().remove(&pos)?;
        let end = part.end.min(self.size);
        let wanted = buf.len().min(usize::try_from(end.saturating_sub(pos)).unwrap_or(usize::MAX));
        if wanted == 0 {
            return None;
        }
        let n = if part.checked {
            part.range.read_unchecked(pos, &mut buf[..wanted])?
        } else {
            let (found, damaged) = disk.lookup(pos..end);
            add(&self.requests.counters.cache_damaged, damaged);
            let (_, bytes) = found.first().filter(|(at, _)| *at == pos)?;
            let n = wanted.min(bytes.len());
            buf[..n].copy_from_slice(&bytes[..n]);
            n
        };
        add(&self.requests.counters.cache_hits, 1);
        add(&self.requests.counters.cache_bytes, n as u64);
        let next = pos + n as u64;
        if next < end {
            held().insert(next, part);
        }
        Some(n)
    }

    /// Reads at `pos` into `buf`: from the cache, waiting for a pending
    /// fetch, or fetching first.
    pub(crate) fn read_at(self: &Arc<Self>, pos: u64, buf: &mut [u8]) -> io::Result<usize> {
        if pos >= self.size || buf.is_empty() {
            return Ok(0);
        }
        if let Some(disk) = &self.disk
            && let Some(n) = self.read_held(disk, pos, buf)
        {
            return Ok(n);
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
                let (own, first) = on_miss(&self.config, pos, buf.len() as u64, cache.ahead_limit);
                let len = own.end - own.start;
                self.ensure(&mut cache, own, len, false);
                if let Some(first) = first {
                    let len = first.end - first.start;
                    self.ensure(&mut cache, first, len, true);
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
