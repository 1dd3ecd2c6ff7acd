//! [`ArrayRecordShards`]: the records of several ArrayRecord files (shards),
//! each a range of its file, numbered one after the other, read by key.

use std::collections::BTreeMap;
use std::io::{Read, Seek};
use std::ops::Range;
use std::sync::{Mutex, MutexGuard};

use bytes::Bytes;

use super::reader::ArrayRecordReader;
use crate::error::{Error, ErrorKind, Result};
use crate::fork::PerProcess;
use crate::hints::ReadHints;

/// Opens shard `i`'s file (the closure an [`ArrayRecordShards`] is made with).
type ShardOpener<R> = dyn Fn(usize) -> Result<ArrayRecordReader<R>> + Send + Sync;

/// The records of several ArrayRecord files, each the records `[start, end)`
/// of its file, numbered one after the other by *keys* `0..num_records()` (the
/// layout of a data loader's data source over many shards).
///
/// Files are opened on first use by the opener it is made with (which knows
/// what shard `i` is: a path, a URL, options), and again in a process forked
/// since ([`PerProcess`]): a child never touches the parent's readers.
/// Each reader is behind a mutex of its own, so that threads reading
/// different shards do not wait on each other; shards are locked in
/// ascending order.
///
/// A batch of keys ([`read_batch`](Self::read_batch)) decodes each chunk it
/// needs once; the shards it touches are read concurrently: each shard's
/// part is started first ([`ArrayRecordReader`]'s decoding threads when it is
/// worth them, else only announced to the source, so that objects' chunks are
/// fetched meanwhile), then collected.
///
/// ```
/// use std::io::Cursor;
/// use riegeli_records::{ArrayRecordReader, ArrayRecordShards, ArrayRecordWriter};
///
/// let mut files = Vec::new();
/// for f in 0..2 {
///     let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:1".parse()?)?;
///     for i in 0..10 {
///         writer.write_record(format!("file {f} record {i}").as_bytes())?;
///     }
///     files.push(writer.close()?);
/// }
/// // Records 5..10 of the first file, then all of the second.
/// let shards = ArrayRecordShards::new(vec![5..10, 0..10], move |i| {
///     ArrayRecordReader::new(Cursor::new(files[i].clone()))
/// })?;
/// assert_eq!(shards.num_records(), 15);
/// assert_eq!(shards.locate(7)?, (1, 2));
/// assert_eq!(shards.read(0)?, &b"file 0 record 5"[..]);
/// assert_eq!(shards.read_batch(&[14, 4, 5])?, [&b"file 1 record 9"[..], b"file 0 record 9", b"file 1 record 0"]);
/// assert!(shards.read(15).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ArrayRecordShards<R> {
    ranges: Vec<Range<u64>>,
    /// `ends[i]`: the number of records of shards `0..=i`.
    ends: Vec<u64>,
    open: Box<ShardOpener<R>>,
    /// Each shard's reader in the running process, once opened.
    readers: PerProcess<Vec<Mutex<Option<ArrayRecordReader<R>>>>>,
}

impl<R> std::fmt::Debug for ArrayRecordShards<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayRecordShards")
            .field("num_shards", &self.ranges.len())
            .field("len", &self.num_records())
            .finish_non_exhaustive()
    }
}

/// A shard's part of a batch: indices in its file, positions in the batch.
#[derive(Default)]
struct Part {
    indices: Vec<u64>,
    positions: Vec<usize>,
}

/// One shard's reader slot, locked.
type Slot<'a, R> = MutexGuard<'a, Option<ArrayRecordReader<R>>>;

impl<R> ArrayRecordShards<R> {
    /// The number of records (keys) of all shards.
    pub fn num_records(&self) -> u64 {
        self.ends.last().copied().unwrap_or(0)
    }

    /// The shard of `key` and the record's index in that shard's file; a key
    /// past the end is an [`InvalidArgument`](ErrorKind::InvalidArgument) error.
    pub fn locate(&self, key: u64) -> Result<(usize, u64)> {
        let shard = self.ends.partition_point(|&end| end <= key);
        let (Some(range), Some(_)) = (self.ranges.get(shard), self.ends.get(shard)) else {
            return Err(ErrorKind::InvalidArgument(format!(
                "record key {key} out of range: the shards hold {} records",
                self.num_records()
            ))
            .into());
        };
        let before = shard.checked_sub(1).and_then(|s| self.ends.get(s)).copied().unwrap_or(0);
        Ok((shard, key - before + range.start))
    }

    /// Whether shard `shard`'s file is open in this process.
    pub fn is_open(&self, shard: usize) -> bool {
        self.readers
            .get()
            .and_then(|slots| slots.get(shard))
            .is_some_and(|slot| slot.lock().is_ok_and(|reader| reader.is_some()))
    }

    /// Closes every file open in this process (the next read opens its file again).
    pub fn close(&self) {
        for slot in self.readers.get().into_iter().flatten() {
            if let Ok(mut reader) = slot.lock() {
                drop(reader.take());
            }
        }
    }

    /// The reader slots of the running process.
    fn slots(&self) -> &[Mutex<Option<ArrayRecordReader<R>>>] {
        self.readers.get_or_init(|| self.ranges.iter().map(|_| Mutex::new(None)).collect())
    }

    /// Shard `shard`'s slot, locked.
    fn lock(&self, shard: usize) -> Result<Slot<'_, R>> {
        self.slots()
            .get(shard)
            .ok_or_else(|| Error::internal("a shard without a slot"))?
            .lock()
            .map_err(|_| Error::internal("a shard's reader was poisoned by a panic"))
    }
}

impl<R: Read + Seek + ReadHints + Send> ArrayRecordShards<R> {
    /// Shards of the records `ranges[i]` of each file `i`, opened by `open(i)`
    /// on first use (in each process). Fails if a range ends before it starts
    /// or the total overflows; that a file holds its range is checked when it
    /// is opened.
    pub fn new(
        ranges: Vec<Range<u64>>,
        open: impl Fn(usize) -> Result<ArrayRecordReader<R>> + Send + Sync + 'static,
    ) -> Result<Self> {
        let mut ends = Vec::with_capacity(ranges.len());
        let mut total = 0u64;
        for (i, range) in ranges.iter().enumerate() {
            let count = range.end.checked_sub(range.start).ok_or_else(|| {
                Error::from(ErrorKind::InvalidArgument(format!(
                    "shard {i}: records [{}, {}) end before they start",
                    range.start, range.end
                )))
            })?;
            total = total
                .checked_add(count)
                .ok_or_else(|| Error::from(ErrorKind::InvalidArgument("the shards hold over 2^64 records".into())))?;
            ends.push(total);
        }
        Ok(Self { ranges, ends, open: Box::new(open), readers: PerProcess::new() })
    }

    /// Opens shard `shard`'s file, checking that it holds the shard's records.
    fn open_shard(&self, shard: usize) -> Result<ArrayRecordReader<R>> {
        let reader = (self.open)(shard)?;
        let range = self.ranges.get(shard).ok_or_else(|| Error::internal("a shard without a range"))?;
        if reader.num_records() < range.end {
            return Err(ErrorKind::InvalidArgument(format!(
                "shard {shard}: records [{}, {}) asked for, but its file has {} records",
                range.start,
                range.end,
                reader.num_records()
            ))
            .into());
        }
        Ok(reader)
    }

    /// Runs `f` on shard `shard`'s reader (opened if it is not yet), with the
    /// shard locked.
    fn with_reader<T>(&self, shard: usize, f: impl FnOnce(&mut ArrayRecordReader<R>) -> T) -> Result<T> {
        let mut slot = self.lock(shard)?;
        if slot.is_none() {
            *slot = Some(self.open_shard(shard)?);
        }
        slot.as_mut().map(f).ok_or_else(|| Error::internal("a shard's reader vanished"))
    }

    /// The record of `key` ([`ArrayRecordReader::read`]: its chunk stays
    /// decoded for the next key of the same shard).
    pub fn read(&self, key: u64) -> Result<Bytes> {
        let (shard, index) = self.locate(key)?;
        self.with_reader(shard, |reader| reader.read(index))?
    }

    /// The records of `keys` (any order, repeats allowed), in the order given;
    /// every key is checked before anything is read. Each shard's records are
    /// one batch read of its file (each chunk decoded once); the shards'
    /// batches are all started before any is collected, so that they proceed
    /// concurrently (files not open yet are opened concurrently too).
    pub fn read_batch(&self, keys: &[u64]) -> Result<Vec<Bytes>> {
        let mut parts: BTreeMap<usize, Part> = BTreeMap::new();
        for (position, &key) in keys.iter().enumerate() {
            let (shard, index) = self.locate(key)?;
            let part = parts.entry(shard).or_default();
            part.indices.push(index);
            part.positions.push(position);
        }
        // In ascending order: two batches never wait on each other.
        let mut slots = Vec::with_capacity(parts.len());
        for (&shard, part) in &parts {
            slots.push((shard, self.lock(shard)?, part));
        }
        self.open_missing(&mut slots)?;
        let mut started = Vec::with_capacity(slots.len());
        let mut failure = None;
        for (_, slot, part) in &mut slots {
            let Some(reader) = slot.as_mut() else { continue };
            match reader.start_batch(&part.indices) {
                Ok(batch) => started.push(batch),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        let mut out = vec![Bytes::new(); keys.len()];
        // Every batch started is finished, also after a failure (each reader is left
        // with nothing in flight); the first error is returned.
        for ((_, slot, part), batch) in slots.iter_mut().zip(started) {
            let Some(reader) = slot.as_mut() else { continue };
            match reader.finish_batch(batch) {
                Ok(records) if failure.is_none() => {
                    for (&position, record) in part.positions.iter().zip(records) {
                        if let Some(out) = out.get_mut(position) {
                            *out = record;
                        }
                    }
                }
                Ok(_) => {}
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        failure.map_or(Ok(out), Err)
    }

    /// Opens the shards of `slots` not open yet: on threads of their own when
    /// several are (opening reads the file's index: a request or two each).
    fn open_missing(&self, slots: &mut [(usize, Slot<'_, R>, &Part)]) -> Result<()> {
        let missing: Vec<usize> =
            slots.iter().filter(|(_, slot, _)| slot.is_none()).map(|(shard, ..)| *shard).collect();
        let opened: Vec<Result<ArrayRecordReader<R>>> = match missing[..] {
            [] => return Ok(()),
            [shard] => vec![self.open_shard(shard)],
            _ => std::thread::scope(|scope| {
                let handles: Vec<_> =
                    missing.iter().map(|&shard| scope.spawn(move || self.open_shard(shard))).collect();
                handles
                    .into_iter()
                    .map(|handle| handle.join().unwrap_or_else(|_| Err(Error::internal("opening a shard panicked"))))
                    .collect()
            }),
        };
        let mut opened = missing.into_iter().zip(opened);
        let mut failure = None;
        for (shard, slot, _) in slots.iter_mut().filter(|(_, slot, _)| slot.is_none()) {
            match opened.next() {
                Some((s, Ok(reader))) if s == *shard => **slot = Some(reader),
                Some((_, Err(e))) => failure = failure.or(Some(e)),
                _ => return Err(Error::internal("shards opened out of order")),
            }
        }
        failure.map_or(Ok(()), Err)
    }
}

#[cfg(all(test, feature = "zstd"))]
mod tests {
    use std::io::Cursor;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::{ArrayRecordReaderOptions, ArrayRecordWriter, PositionalFile};

    /// `count` records `"f{file} r{i}"` padded to `size` bytes, in chunks of `group`.
    fn file(file: usize, count: u64, group: u64, size: usize) -> Vec<u8> {
        let options = format!("group_size:{group},zstd:1").parse().unwrap();
        let mut writer = ArrayRecordWriter::new(Vec::new(), options).unwrap();
        for i in 0..count {
            writer.write_record(record(file, i, size).as_bytes()).unwrap();
        }
        writer.close().unwrap()
    }

    fn record(file: usize, i: u64, size: usize) -> String {
        format!("{:<size$}", format!("f{file} r{i}"))
    }

    /// Shards over in-memory files, counting the files opened.
    fn make(files: Vec<Vec<u8>>, ranges: Vec<Range<u64>>) -> (ArrayRecordShards<Cursor<Vec<u8>>>, Arc<AtomicUsize>) {
        let opened = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&opened);
        let shards = ArrayRecordShards::new(ranges, move |i| {
            count.fetch_add(1, Ordering::Relaxed);
            let file = files.get(i).ok_or_else(|| Error::from(ErrorKind::InvalidArgument(format!("no file {i}"))))?;
            ArrayRecordReader::new(Cursor::new(file.clone()))
        })
        .unwrap();
        (shards, opened)
    }

    #[test]
    fn keys_number_the_ranges_one_after_the_other() {
        let files = vec![file(0, 100, 3, 10), file(1, 50, 1, 10), file(2, 50, 1, 10), file(3, 1, 1, 10)];
        // An empty range is skipped.
        let (shards, opened) = make(files, vec![10..20, 7..7, 0..50, 0..1]);
        assert_eq!(shards.num_records(), 61);
        assert_eq!(opened.load(Ordering::Relaxed), 0, "nothing opened before use");
        let mut want = Vec::new();
        want.extend((10..20).map(|i| (0, i)));
        want.extend((0..50).map(|i| (2, i)));
        want.push((3, 0));
        for (key, &(shard, index)) in want.iter().enumerate() {
            assert_eq!(shards.locate(key as u64).unwrap(), (shard, index), "key {key}");
        }
        for key in [61, 62, u64::MAX] {
            let error = shards.locate(key).unwrap_err();
            assert!(matches!(error.kind(), ErrorKind::InvalidArgument(_)), "{error}");
            assert!(shards.read(key).is_err() && shards.read_batch(&[0, key]).is_err());
        }
        assert_eq!(opened.load(Ordering::Relaxed), 0, "bad keys open nothing");
        assert_eq!(shards.read(0).unwrap(), record(0, 10, 10).as_bytes());
        assert_eq!(shards.read(9).unwrap(), record(0, 19, 10).as_bytes());
        assert!(shards.is_open(0) && !shards.is_open(2));
    }

    #[test]
    fn a_batch_spanning_shards_comes_back_in_the_order_asked() {
        let files = vec![file(0, 300, 4, 100), file(1, 200, 1, 100), file(2, 500, 10, 100)];
        let ranges = vec![0..300, 50..150, 100..500];
        let (shards, opened) = make(files, ranges.clone());
        let mut layout = Vec::new();
        for (f, range) in ranges.iter().enumerate() {
            layout.extend(range.clone().map(|i| record(f, i, 100)));
        }
        assert_eq!(shards.num_records(), layout.len() as u64);
        let mut state = 7u64;
        let keys: Vec<u64> = (0..900)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 33) % shards.num_records()
            })
            .chain([0, 0, shards.num_records() - 1])
            .collect();
        let got = shards.read_batch(&keys).unwrap();
        assert_eq!(got.len(), keys.len());
        for (key, record) in keys.iter().zip(&got) {
            assert_eq!(record, layout[*key as usize].as_bytes(), "key {key}");
        }
        assert_eq!(opened.load(Ordering::Relaxed), 3, "each file opened once");
        assert!(shards.read_batch(&[]).unwrap().is_empty());
        // Closed, the files open again on the next read.
        shards.close();
        assert!(!shards.is_open(0));
        let first = [0, 300, 400];
        let want: Vec<&[u8]> = first.iter().map(|&k| layout[k as usize].as_bytes()).collect();
        assert_eq!(shards.read_batch(&first).unwrap(), want);
        assert_eq!(opened.load(Ordering::Relaxed), 6);
    }

    #[test]
    fn shards_read_concurrently_on_their_readers_threads_match_serial_reads() {
        let dir = std::env::temp_dir().join(format!("riegeli-shards-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut paths = Vec::new();
        for f in 0..3 {
            let path = dir.join(format!("shard-{f}"));
            std::fs::write(&path, file(f, 2000, 10, 1000)).unwrap();
            paths.push(path);
        }
        let open = |parallelism| {
            let paths = paths.clone();
            ArrayRecordShards::new(vec![0..2000, 0..2000, 500..1500], move |i| {
                let options = ArrayRecordReaderOptions { parallelism, ..Default::default() };
                ArrayRecordReader::open(&paths[i], options)
            })
            .unwrap()
        };
        let (parallel, serial): (ArrayRecordShards<PositionalFile>, _) = (open(2), open(0));
        // Large parts of every shard: each worth the decoding threads.
        let keys: Vec<u64> = (0..parallel.num_records()).rev().step_by(3).chain(0..400).collect();
        let want = serial.read_batch(&keys).unwrap();
        assert_eq!(parallel.read_batch(&keys).unwrap(), want);
        assert_eq!(want[0], record(2, 1499, 1000).as_bytes());
        // And again, the threads kept.
        assert_eq!(parallel.read_batch(&keys).unwrap(), want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_ranges_and_files_are_errors() {
        let backwards = Range { start: 5, end: 4 };
        let error = ArrayRecordShards::<Cursor<Vec<u8>>>::new(vec![0..1, backwards], |_| unreachable!()).unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::InvalidArgument(_)), "{error}");
        assert!(ArrayRecordShards::<Cursor<Vec<u8>>>::new(vec![0..u64::MAX, 0..2], |_| unreachable!()).is_err());
        // A range past the file's end is refused when the file is opened.
        let (shards, _) = make(vec![file(0, 10, 1, 10), file(1, 10, 1, 10)], vec![0..10, 5..11]);
        assert_eq!(shards.read(9).unwrap(), record(0, 9, 10).as_bytes());
        let error = shards.read(10).unwrap_err();
        assert!(error.to_string().contains("has 10 records"), "{error}");
        assert!(shards.read_batch(&[0, 10]).is_err());
        // A file that cannot be opened: the error, every time.
        let (shards, opened) = make(vec![file(0, 10, 1, 10)], vec![0..10, 0..3]);
        assert!(shards.read_batch(&[11, 0]).is_err() && shards.read(12).is_err());
        // The shard opened beside the failing one stays open.
        assert_eq!(shards.read_batch(&[0]).unwrap(), [record(0, 0, 10).as_bytes()]);
        assert_eq!(opened.load(Ordering::Relaxed), 3);
    }
}
