//! `ArrayRecordReader`: random access to the records of an ArrayRecord file.

use std::io::{Read, Seek};
use std::ops::Range;
use std::path::Path;

use bytes::Bytes;
use riegeli_codec::DecodedRecords;

use super::batch::Started;
use super::fetch::Fetcher;
#[cfg(doc)]
use super::load::IndexSource;
use super::load::{IndexInfo, load};
use super::options::ArrayRecordReaderOptions;
use super::plan::{ChunkId, ChunkIndex, Plan, Selection, not_indexed};
use super::sequential::Sequential;
use crate::error::Result;
use crate::hints::ReadHints;
use crate::indexed::Reading;
use crate::positional::PositionalFile;
use crate::source::Source;

/// Reads by index copy the records they want out of a chunk when these are
/// less than 1/`COPY_BELOW` of its decoded data, rather than keeping the whole
/// chunk alive through slices of it.
const COPY_BELOW: usize = 4;

/// Reads an ArrayRecord file (google/array_record): any record by its index,
/// ranges and lists of indices, and batches decoded on several threads.
///
/// [`new`](Self::new) reads the postscript (the chunk at `size - 65536`;
/// when its data is damaged, each of its three copies is tried) and the
/// footer, and checks the index more strictly than C++ does: every chunk but
/// the last holds the same number of records, the counts add up, offsets
/// increase and lie before the footer, no entry counts more than
/// [`max_num_records`](crate::ChunkReadOptions::max_num_records); each
/// chunk's header must agree with its footer entry when it is read. Every
/// other allocation sized by the file is bounded by the
/// [`ChunkReadOptions`](crate::ChunkReadOptions) limits, as for
/// [`RecordReader`](crate::RecordReader). If the postscript or footer is missing
/// or damaged (a file cut short by an interrupted copy, or a plain
/// Riegeli/records file), opening fails with an error saying so, as
/// array_record's reader does, unless
/// [`scan_fallback`](ArrayRecordReaderOptions::scan_fallback) asks to read the
/// file as plain Riegeli/records instead: one sequential scan of the chunk
/// headers builds the index ([`index`](Self::index) says
/// [`IndexSource::Scanned`] and [`fallback_reason`](IndexInfo::fallback_reason)
/// says why); damaged regions met by the scan are skipped and listed in
/// [`skipped_regions`](IndexInfo::skipped_regions), and so is a footer that no
/// postscript follows (a file cut short after its footer).
///
/// Records are [`Bytes`] slices of the decoded chunk, without copying; a
/// record keeps its chunk's decoded buffer alive. Reads by index list copy
/// the records they take from a chunk instead when these are under a quarter
/// of its decoded data, so that a batch of scattered indices does not keep
/// every chunk it touched alive. Each read decodes every
/// chunk it needs once; [`read`](Self::read) keeps the last chunk decoded,
/// so reading indices in order decodes each chunk once too.
///
/// The batch reads ([`read_batch`](Self::read_batch),
/// [`read_batch_each`](Self::read_batch_each)) decode on
/// [`parallelism`](ArrayRecordReaderOptions::parallelism) background threads
/// and the calling thread, which the reader starts on the first batch
/// touching at least 128 KiB of decoded data (smaller batches are read
/// serially: handing them to another thread costs more than it saves) and
/// joins when it is dropped. The calling thread reads the raw chunks, hands them out in
/// tasks of consecutive chunks and decodes too; records come back in the
/// order asked, and an error is the one the serial read would return. A
/// reader of a file opened with [`open`](Self::open) leaves the reading to the decoding threads
/// too (positional reads, on Unix and Windows): use these for files.
///
/// ```
/// use std::io::Cursor;
/// use riegeli_records::{ArrayRecordReader, ArrayRecordWriter, IndexSource};
///
/// let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:10".parse()?)?;
/// for i in 0..100 {
///     writer.write_record(format!("record {i}").as_bytes())?;
/// }
/// let mut reader = ArrayRecordReader::new(Cursor::new(writer.close()?))?;
/// assert_eq!(reader.index().index_source, IndexSource::Footer);
/// assert_eq!(reader.num_records(), 100);
/// assert_eq!(reader.read(42)?, &b"record 42"[..]);
/// assert_eq!(reader.read_batch(98..100)?, [&b"record 98"[..], b"record 99"]);
/// let batch = reader.read_batch(&[7, 3, 77, 3])?;
/// assert_eq!(batch, [&b"record 7"[..], b"record 3", b"record 77", b"record 3"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ArrayRecordReader<R> {
    options: ArrayRecordReaderOptions,
    index: ChunkIndex,
    /// How the index was found, and the footer's writer options.
    info: IndexInfo,
    /// Reads and decodes chunks, on the calling thread or the decode stream.
    fetcher: Fetcher<R>,
    /// The chunk [`read`](Self::read) decoded last.
    cached: Option<(ChunkId, DecodedRecords)>,
    sequential: Sequential,
    /// The records [`read_next`](Self::read_next) asks for next, being
    /// decoded on the decode stream's threads meanwhile.
    ahead: Option<Ahead>,
}

/// A read-ahead of [`ArrayRecordReader::read_next`]: the plan of a range of
/// records, handed to the decoding threads.
struct Ahead {
    plan: Plan,
    range: Range<u64>,
    started: Started,
}

impl<R> std::fmt::Debug for ArrayRecordReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayRecordReader")
            .field("num_records", &self.index.num_records())
            .field("num_chunks", &self.index.num_chunks())
            .field("index_heap_bytes", &self.index.heap_bytes())
            .field("index_source", &self.info.index_source)
            .finish_non_exhaustive()
    }
}

impl<R: Read + Seek + ReadHints> ArrayRecordReader<R> {
    /// Opens an ArrayRecord file with default options.
    pub fn new(src: R) -> Result<Self> {
        Self::with_options(src, ArrayRecordReaderOptions::default())
    }

    /// Opens an ArrayRecord file: reads the postscript and the footer. If
    /// they are missing or damaged, fails (an error that
    /// [`is_corruption`](crate::Error::is_corruption)), or with
    /// [`scan_fallback`](ArrayRecordReaderOptions::scan_fallback) scans the
    /// file instead, failing then only on I/O errors and on files that are not
    /// Riegeli/records files at all.
    ///
    /// A source that offers a view for reads at offsets
    /// ([`ReadHints::positional`]) lets the decoding threads of the parallel
    /// reads read their chunks themselves, and is told which chunks a read
    /// is about to read.
    pub fn with_options(src: R, options: ArrayRecordReaderOptions) -> Result<Self> {
        let read_at = src.positional();
        let mut source = Source::new(src, 0);
        let loaded = load(&mut source, &options)?;
        source.release_buffers()?;
        Ok(Self {
            fetcher: Fetcher::new(source, read_at, &options),
            info: IndexInfo {
                index_source: loaded.index_source,
                num_chunks: loaded.index.num_chunks(),
                writer_options: loaded.writer_options,
                fallback_reason: loaded.fallback_reason,
                footer_without_postscript: loaded.footer_without_postscript,
                skipped_regions: loaded.skipped,
            },
            index: loaded.index,
            cached: None,
            sequential: Sequential::default(),
            ahead: None,
            options,
        })
    }

    /// The number of records.
    pub fn num_records(&self) -> u64 {
        self.index.num_records()
    }

    /// How the index was found (footer or scan, and what a scan skipped),
    /// and the writer options the footer stores.
    pub fn index(&self) -> &IndexInfo {
        &self.info
    }

    /// Reads record `index`.
    ///
    /// The chunk holding it is decoded only as far as that record (simple
    /// chunks: see [`SimpleChunkDecoder::decode_prefix`](riegeli_codec::SimpleChunkDecoder::decode_prefix)),
    /// and kept for the next call. A later record of the same chunk past
    /// those decoded decodes all of it (reading a chunk in order decodes it
    /// twice, not once per record); that read fails only if decoding as far
    /// as its record fails, as a batch read of it would.
    ///
    /// Only the chunk's bytes are read from the source (the room the index
    /// gives it, as C++ reads it), not a whole block around a small chunk,
    /// unless it is the chunk after the one read before: then reading goes on
    /// by blocks, which serve the next chunks too. Batch reads likewise read a
    /// chunk alone when the next one they want lies more than a block away.
    pub fn read(&mut self, index: u64) -> Result<Bytes> {
        let (id, j) = self.index.locate(index)?;
        let cached = self.cached.as_ref().filter(|(cached, _)| *cached == id).map(|(_, records)| records.len());
        if cached.is_none_or(|decoded| j >= decoded) {
            self.with_index(|this| this.decode_chunk(id, j, cached.is_some()))?;
        }
        // A chunk's record count is checked against the index when it is decoded.
        self.cached.as_ref().and_then(|(_, records)| records.get(j)).ok_or_else(not_indexed)
    }

    /// Decodes chunk `id` as far as its record `j` (all of it if it was
    /// decoded `before` as far as an earlier record) into the cache.
    fn decode_chunk(&mut self, id: ChunkId, j: usize, before: bool) -> Result<()> {
        // After the chunk before it, reading goes on by blocks; a chunk by itself
        // (a random read) is read alone, only its bytes.
        let in_order = self.cached.as_ref().is_some_and(|(last, _)| last.next() == id);
        let reading = if in_order { Reading::InOrder } else { Reading::Alone };
        self.cached = None;
        let entry = self.index.entry(id)?;
        let needed = j as u64 + 1;
        let further = if before { u64::MAX } else { needed };
        self.fetcher.announce_one(&self.options.chunks, &entry);
        let records = self.fetcher.read_decode(&self.options.chunks, &entry, reading, needed, further)?;
        self.cached = Some((id, records));
        Ok(())
    }

    /// Runs `f` with the index in memory: an offloaded one
    /// ([`offload_index`](ArrayRecordReaderOptions::offload_index)) is read
    /// from the footer for it, and dropped after.
    fn with_index<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let Some(at) = self.index.offloaded_at() else { return f(self) };
        let num_records = self.index.num_records();
        let index = self.fetcher.reload_index(&self.options.chunks, at, num_records)?;
        let offloaded = std::mem::replace(&mut self.index, index);
        let result = f(self);
        self.index = offloaded;
        result
    }

    /// Reads the records `selection` names (a range, a list of indices in
    /// any order with repeats, or all), decoding each chunk once; returns
    /// them in the order asked. Chunks are decoded on
    /// [`parallelism`](ArrayRecordReaderOptions::parallelism) threads (and the calling one) when
    /// the batch is worth it (more than one chunk, at least 128 KiB of
    /// records), else on the calling thread. Every index is checked before
    /// anything is read.
    pub fn read_batch<'a>(&mut self, selection: impl Into<Selection<'a>>) -> Result<Vec<Bytes>> {
        let selection = selection.into();
        self.with_index(|this| {
            let plan = Plan::new(&this.index, &selection)?;
            match selection {
                Selection::All | Selection::Range(_) => this.collect_in_order(&plan),
                Selection::Indices(_) => this.collect(&plan),
            }
        })
    }

    /// [`read_batch`](Self::read_batch), handing the records of each chunk,
    /// with their positions in the selection, to `each` as soon as that
    /// chunk is decoded (chunks in file order, records in the order asked
    /// within each), while the threads decode the next ones, instead of
    /// collecting them: for a caller that turns records into objects of its
    /// own (Python `bytes`), so that its work overlaps the decoding. On an
    /// error, `each` has seen the records before it. The records share their
    /// chunk's buffer: keeping one keeps the chunk.
    pub fn read_batch_each<'a>(
        &mut self,
        selection: impl Into<Selection<'a>>,
        mut each: impl FnMut(&[(usize, Bytes)]),
    ) -> Result<()> {
        let selection = selection.into();
        self.with_index(|this| {
            let plan = Plan::new(&this.index, &selection)?;
            let mut records = Vec::new();
            this.plan_each(&plan, &mut |decoded, picks| {
                records.clear();
                records.extend(picks.iter().filter_map(|&(p, j)| Some((p, decoded.get(j)?))));
                each(&records);
            })
        })
    }

    /// The index of the record [`read_next`](Self::read_next) returns.
    pub fn record_index(&self) -> u64 {
        self.sequential.index()
    }

    /// Makes [`record_index`](Self::record_index) `index`, or
    /// [`num_records`](Self::num_records) if `index` is past the end.
    pub fn seek_record(&mut self, index: u64) {
        self.sequential.seek(index.min(self.index.num_records()));
    }

    /// Reads the record at [`record_index`](Self::record_index) and moves on;
    /// `None` at the end. While reading goes on in order, records are decoded
    /// ahead, on [`parallelism`](ArrayRecordReaderOptions::parallelism)
    /// threads, in batches that grow up to
    /// [`readahead_buffer_size`](ArrayRecordReaderOptions::readahead_buffer_size)
    /// bytes of records; a jump starts over from one record, and
    /// `readahead_buffer_size` 0 reads one record at a time. When the
    /// threads read their chunks themselves (a reader opened with
    /// [`open`](ArrayRecordReader::open), or on an object), the
    /// next batch is decoded on them while the caller consumes this one.
    ///
    /// ```
    /// # use std::io::Cursor;
    /// # use riegeli_records::{ArrayRecordReader, ArrayRecordWriter};
    /// let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:2".parse()?)?;
    /// for i in 0..5 {
    ///     writer.write_record(format!("record {i}").as_bytes())?;
    /// }
    /// let mut reader = ArrayRecordReader::new(Cursor::new(writer.close()?))?;
    /// reader.seek_record(3);
    /// assert_eq!(reader.read_next()?.as_deref(), Some(&b"record 3"[..]));
    /// assert_eq!(reader.read_next()?.as_deref(), Some(&b"record 4"[..]));
    /// assert_eq!(reader.read_next()?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_next(&mut self) -> Result<Option<Bytes>> {
        let mut sequential = std::mem::take(&mut self.sequential);
        let (num_records, readahead) = (self.index.num_records(), self.options.readahead_buffer_size);
        let mut fetched = false;
        let next = sequential.next(num_records, readahead, |range| {
            fetched = true;
            if range.end - range.start == 1 {
                return Ok(vec![self.read(range.start)?]);
            }
            self.with_index(|this| {
                if let Some(records) = this.take_ahead(&range) {
                    return records;
                }
                this.collect_in_order(&Plan::range(&this.index, range)?)
            })
        });
        if fetched
            && next.is_ok()
            && let Some(range) = sequential.upcoming(num_records, readahead)
        {
            // Best effort: an offloaded index that fails to load now fails the read that needs it.
            let _ = self.with_index(|this| {
                this.start_ahead(range);
                Ok(())
            });
        }
        self.sequential = sequential;
        next
    }

    /// Hands the chunks of `range` to the decoding threads, to be collected
    /// by [`take_ahead`](Self::take_ahead) when `read_next` gets there: only
    /// when the threads read their chunks themselves (a file, an object), so
    /// that the caller goes on at once, and the range is worth a parallel batch.
    fn start_ahead(&mut self, range: Range<u64>) {
        self.cancel_ahead();
        let Ok(plan) = Plan::range(&self.index, range.clone()) else { return };
        if let Some(started) = self.fetcher.start(&self.options, &self.index, plan.steps()) {
            self.ahead = Some(Ahead { plan, range, started });
        }
    }

    /// The records of `range` if [`start_ahead`](Self::start_ahead) started
    /// exactly that range (waiting for its chunks, and decoding queued ones
    /// here meanwhile); `None` otherwise (a read-ahead of another range is
    /// dropped).
    fn take_ahead(&mut self, range: &Range<u64>) -> Option<Result<Vec<Bytes>>> {
        let ahead = self.ahead.take()?;
        if ahead.range != *range {
            self.fetcher.abandon();
            return None;
        }
        let mut out = Vec::with_capacity(ahead.plan.len().min(1 << 16));
        let (index, plan) = (&self.index, &ahead.plan);
        let mut picks = Vec::new();
        let result = self.fetcher.finish(ahead.started, &mut |i, records| {
            plan.picks(index, i, &mut picks);
            out.extend(picks.iter().filter_map(|&(_, j)| records.get(j)));
        })?;
        Some(result.map(|()| out))
    }

    /// Forgets the read-ahead of `read_next`, if any, before the decode
    /// stream does anything else: its tasks are abandoned.
    fn cancel_ahead(&mut self) {
        if self.ahead.take().is_some() {
            self.fetcher.abandon();
        }
    }

    /// [`read_next`](Self::read_next) if that record is decoded already: no
    /// I/O and no decoding (`None` otherwise, and the cursor stays).
    pub fn read_next_decoded(&mut self) -> Option<Bytes> {
        self.sequential.next_decoded()
    }

    /// Decodes the chunks holding the records `plan` selects, in file order,
    /// handing each chunk's records to `each` with the (position in the
    /// selection, index in the chunk) of those asked for.
    fn plan_each(&mut self, plan: &Plan, each: &mut ChunkRun<'_>) -> Result<()> {
        self.cancel_ahead();
        let index = &self.index;
        let mut picks = Vec::new();
        self.fetcher.run(&self.options, index, plan.steps(), &mut |i, records| {
            plan.picks(index, i, &mut picks);
            each(&records, &picks);
        })
    }

    /// The records `plan` selects, in the order asked, sharing their chunks'
    /// buffers: for plans of whole chunks in order (a range).
    fn collect_in_order(&mut self, plan: &Plan) -> Result<Vec<Bytes>> {
        // Counts are checked against the limits, but reserve little up front anyway.
        let mut out = Vec::with_capacity(plan.len().min(1 << 16));
        self.plan_each(plan, &mut |records, picks| out.extend(picks.iter().filter_map(|&(_, j)| records.get(j))))?;
        Ok(out)
    }

    /// The records `plan` selects, in the order asked: slices of their
    /// chunks, or copied out of a chunk of which they are a small part.
    fn collect(&mut self, plan: &Plan) -> Result<Vec<Bytes>> {
        let mut out = vec![Bytes::new(); plan.len()];
        self.plan_each(plan, &mut |records, picks| place(&mut out, records, picks))?;
        Ok(out)
    }

    /// Plans a batch read of `indices` (as [`read_batch`](Self::read_batch)
    /// with [`Selection::Indices`]) and starts it without waiting: handed to
    /// the decoding threads when they read their chunks themselves and the
    /// plan is worth them, else only announced to the source
    /// ([`ReadAt::will_need`](crate::ReadAt::will_need): an object's chunks
    /// are fetched meanwhile). [`finish_batch`](Self::finish_batch) collects
    /// it; until then the reader must not read anything else. Several
    /// readers' batches started before any is finished proceed concurrently
    /// (the multi-file reads of [`ArrayRecordShards`](super::ArrayRecordShards)).
    /// Every index is checked before anything is read.
    pub(super) fn start_batch(&mut self, indices: &[u64]) -> Result<StartedBatch> {
        self.cancel_ahead();
        self.with_index(|this| {
            let plan = Plan::new(&this.index, &Selection::Indices(indices))?;
            let started = this.fetcher.start(&this.options, &this.index, plan.steps());
            if started.is_none() {
                this.fetcher.announce(&this.options, &this.index, plan.steps());
            }
            Ok(StartedBatch { plan, started })
        })
    }

    /// The records of a batch [`start_batch`](Self::start_batch) started, in
    /// the order asked: waits for the decoding threads, or reads the batch
    /// now (also when its threads were lost: in a child forked since).
    pub(super) fn finish_batch(&mut self, batch: StartedBatch) -> Result<Vec<Bytes>> {
        let StartedBatch { plan, started } = batch;
        self.with_index(|this| {
            let Some(started) = started else { return this.collect(&plan) };
            let mut out = vec![Bytes::new(); plan.len()];
            let (index, mut picks) = (&this.index, Vec::new());
            let finished = this.fetcher.finish(started, &mut |i, records| {
                plan.picks(index, i, &mut picks);
                place(&mut out, &records, &picks);
            });
            match finished {
                Some(result) => result.map(|()| out),
                None => this.collect(&plan),
            }
        })
    }
}

/// A batch read [`ArrayRecordReader::start_batch`] started.
pub(super) struct StartedBatch {
    plan: Plan,
    /// `None`: left to [`ArrayRecordReader::finish_batch`] to read.
    started: Option<Started>,
}

/// Puts the records of one chunk that a plan picks (position in the
/// selection, index in the chunk) at their positions in `out`: slices of the
/// chunk, or copied out of it when they are a small part of it.
fn place(out: &mut [Bytes], records: &DecodedRecords, picks: &[(usize, usize)]) {
    let wanted: usize = picks.iter().filter_map(|&(_, j)| records.get_slice(j)).map(<[u8]>::len).sum();
    if wanted.saturating_mul(COPY_BELOW) >= records.decoded_data_size() {
        for &(p, j) in picks {
            if let (Some(slot), Some(record)) = (out.get_mut(p), records.get(j)) {
                *slot = record;
            }
        }
        return;
    }
    // A small part of the chunk: copied, so that the batch does not
    // keep every chunk it touched alive (and the allocator can reuse
    // their buffers for the next chunks instead of faulting in new pages).
    let mut buffer = Vec::with_capacity(wanted);
    let mut spans = Vec::with_capacity(picks.len());
    for &(p, j) in picks {
        if let Some(record) = records.get_slice(j) {
            let begin = buffer.len();
            buffer.extend_from_slice(record);
            spans.push((p, begin, buffer.len()));
        }
    }
    let buffer = Bytes::from(buffer);
    for (p, begin, end) in spans {
        if let Some(slot) = out.get_mut(p) {
            *slot = buffer.slice(begin..end);
        }
    }
}

/// What a batch read does with one chunk's records: the chunk's records, and
/// the (position in the selection, index in the chunk) of those asked for.
type ChunkRun<'a> = dyn FnMut(&DecodedRecords, &[(usize, usize)]) + 'a;

impl ArrayRecordReader<PositionalFile> {
    /// Opens the ArrayRecord file at `path`: [`with_options`](Self::with_options)
    /// on positional reads of it (no file position shared with other handles
    /// or a forked process), so that the parallel reads' decoding threads
    /// read their chunks themselves, from the same handle (on Unix and
    /// Windows; on other platforms the calling thread reads every chunk). For
    /// a file opened already, give [`with_options`](Self::with_options) a
    /// [`PositionalFile`] made `From` it.
    pub fn open(path: impl AsRef<Path>, options: ArrayRecordReaderOptions) -> Result<Self> {
        Self::with_options(PositionalFile::from(std::fs::File::open(path)?), options)
    }
}

#[cfg(all(test, feature = "zstd"))]
mod tests {
    use std::io::Cursor;
    use std::sync::Arc;

    use crate::positional::ReadAt;

    use super::*;
    use crate::ArrayRecordWriter;
    use crate::ErrorKind;
    use crate::stream::DecodeStream;

    /// `num_records` records of 1000 bytes in chunks of 10.
    fn file(num_records: u32) -> Vec<u8> {
        let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:10,zstd:1".parse().unwrap()).unwrap();
        for i in 0..num_records {
            writer.write_record(format!("{i:0>1000}").as_bytes()).unwrap();
        }
        writer.close().unwrap()
    }

    fn open(file: &[u8], parallelism: usize) -> ArrayRecordReader<Cursor<&[u8]>> {
        // `parallelism` threads, the calling one included.
        let options = ArrayRecordReaderOptions { parallelism: parallelism.saturating_sub(1), ..Default::default() };
        ArrayRecordReader::with_options(Cursor::new(file), options).unwrap()
    }

    #[test]
    fn a_footer_index_holds_under_two_bytes_a_record_at_group_size_1() {
        // 20,000 records of 1 KiB that do not compress: a chunk each.
        let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:1,uncompressed".parse().unwrap()).unwrap();
        let mut state = 1u64;
        for _ in 0..20_000 {
            let record: Vec<u8> = (0..1024)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (state >> 56) as u8
                })
                .collect();
            writer.write_record(&record).unwrap();
        }
        let file = writer.close().unwrap();
        let mut reader = ArrayRecordReader::new(Cursor::new(&file[..])).unwrap();
        let per_record = reader.index.heap_bytes() as f64 / 20_000.0;
        assert!(per_record < 2.0, "{per_record} bytes per record");
        // Every record still reads, at the right place.
        for i in [0, 1, 1023, 1024, 19_999] {
            assert_eq!(reader.read(i).unwrap().len(), 1024);
        }
        let all = reader.read_batch(Selection::All).unwrap();
        assert_eq!(all.len(), 20_000);
        assert_eq!(reader.read(12_345).unwrap(), all[12_345]);
    }

    #[test]
    fn an_offloaded_index_reads_what_an_index_in_memory_reads_and_keeps_nothing() {
        let file = file(95);
        let offloaded: ArrayRecordReaderOptions =
            "index_storage_option:offloaded,footer_prefetch_bytes:0".parse().unwrap();
        assert!(offloaded.offload_index);
        for parallelism in [0, 2] {
            let options = ArrayRecordReaderOptions { parallelism, ..offloaded.clone() };
            let mut reader = ArrayRecordReader::with_options(Cursor::new(&file[..]), options).unwrap();
            let mut memory = open(&file, parallelism + 1);
            assert_eq!(reader.index.heap_bytes(), 0);
            assert_eq!((reader.num_records(), reader.index().num_chunks), (95, 10));
            for i in [0, 9, 10, 11, 94, 10, 3] {
                assert_eq!(reader.read(i).unwrap(), memory.read(i).unwrap(), "record {i}");
            }
            let indices = [94, 0, 47, 47, 12];
            assert_eq!(reader.read_batch(&indices[..]).unwrap(), memory.read_batch(&indices[..]).unwrap());
            assert_eq!(reader.read_batch(5..93).unwrap(), memory.read_batch(5..93).unwrap());
            let all = memory.read_batch(Selection::All).unwrap();
            assert_eq!(reader.read_batch(Selection::All).unwrap(), all);
            let mut seen = Vec::new();
            reader.read_batch_each(&indices[..], |records| seen.extend_from_slice(records)).unwrap();
            seen.sort_by_key(|&(p, _)| p);
            assert_eq!(seen.into_iter().map(|(_, r)| r).collect::<Vec<_>>(), memory.read_batch(&indices[..]).unwrap());
            reader.seek_record(7);
            let rest: Vec<Bytes> = std::iter::from_fn(|| reader.read_next().unwrap()).collect();
            assert_eq!(rest, all[7..]);
            // Nothing stays: the index was read for each read and dropped after it.
            assert_eq!(reader.index.heap_bytes(), 0);
            assert!(reader.index.offloaded_at().is_some());
        }
        // A record index past the end is refused without reading the footer.
        let mut reader = ArrayRecordReader::with_options(Cursor::new(&file[..]), offloaded.clone()).unwrap();
        assert!(matches!(reader.read(95).unwrap_err().kind(), ErrorKind::InvalidArgument(_)));
    }

    #[test]
    fn an_offloaded_footer_that_changed_since_the_open_is_an_error_not_other_records() {
        let a = file(95);
        let options: ArrayRecordReaderOptions =
            "index_storage_option:offloaded,footer_prefetch_bytes:0".parse().unwrap();
        // The footer of the file the reader opened changes under it.
        let shared = Arc::new(std::sync::Mutex::new(a.clone()));
        struct Swapped(Arc<std::sync::Mutex<Vec<u8>>>, u64);
        impl std::io::Read for Swapped {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let data = self.0.lock().unwrap();
                let start = (self.1 as usize).min(data.len());
                let n = buf.len().min(data.len() - start);
                buf[..n].copy_from_slice(&data[start..start + n]);
                self.1 += n as u64;
                Ok(n)
            }
        }
        impl std::io::Seek for Swapped {
            fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
                let len = self.0.lock().unwrap().len() as u64;
                self.1 = match to {
                    std::io::SeekFrom::Start(p) => p,
                    std::io::SeekFrom::End(d) => len.saturating_add_signed(d),
                    std::io::SeekFrom::Current(d) => self.1.saturating_add_signed(d),
                };
                Ok(self.1)
            }
        }
        impl crate::ReadHints for Swapped {}
        let mut reader = ArrayRecordReader::with_options(Swapped(Arc::clone(&shared), 0), options).unwrap();
        assert_eq!(reader.read(3).unwrap(), format!("{:0>1000}", 3).as_bytes());
        let at = reader.index.offloaded_at().unwrap().footer_offset as usize;
        shared.lock().unwrap()[at + 50] ^= 1;
        let e = reader.read(90).unwrap_err();
        assert!(e.is_corruption(), "{e}");
    }

    #[test]
    fn the_reader_stays_send_and_sync_with_its_pool() {
        fn check<T: Send + Sync>() {}
        check::<ArrayRecordReader<Cursor<Vec<u8>>>>();
    }

    /// The file's bytes, offering reads at offsets as a file opened with `open` does.
    #[derive(Clone)]
    struct Mem(Cursor<Arc<[u8]>>);

    impl std::io::Read for Mem {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.0.read(buf)
        }
    }

    impl Seek for Mem {
        fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
            self.0.seek(to)
        }
    }

    impl ReadHints for Mem {
        fn positional(&self) -> Option<Arc<dyn ReadAt>> {
            Some(Arc::new(self.clone()))
        }
    }

    impl ReadAt for Mem {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
            let bytes = self.0.get_ref();
            let at = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
            let n = buf.len().min(bytes.len() - at);
            buf[..n].copy_from_slice(&bytes[at..at + n]);
            Ok(n)
        }

        fn size(&self) -> std::io::Result<u64> {
            Ok(self.0.get_ref().len() as u64)
        }
    }

    /// [`open`] on a source offering reads at offsets ([`Mem`]).
    fn open_offering(file: &[u8], parallelism: usize) -> ArrayRecordReader<Mem> {
        let options = ArrayRecordReaderOptions { parallelism: parallelism.saturating_sub(1), ..Default::default() };
        ArrayRecordReader::with_options(Mem(Cursor::new(Arc::from(file))), options).unwrap()
    }

    #[test]
    fn reading_in_order_decodes_the_next_records_ahead_and_other_reads_drop_them() {
        let bytes = file(3000);
        let want = open(&bytes, 0).read_batch(Selection::All).unwrap();
        let mut reader = open_offering(&bytes, 2);
        let mut got = Vec::new();
        // Where the read-aheads started began.
        let mut aheads = std::collections::BTreeSet::new();
        while let Some(record) = reader.read_next().unwrap() {
            got.push(record);
            if let Some(ahead) = &reader.ahead {
                aheads.insert(ahead.range.start);
            }
            // Batch reads and jumps between: the read-ahead is dropped, not mixed in.
            match got.len() {
                700 => assert_eq!(reader.read_batch(&[2999, 5]).unwrap(), [want[2999].clone(), want[5].clone()]),
                1500 => assert_eq!(reader.read_batch(0..300).unwrap(), want[..300]),
                2000 => {
                    reader.seek_record(100);
                    assert_eq!(reader.read_next().unwrap().as_ref(), Some(&want[100]));
                    reader.seek_record(2000);
                }
                _ => {}
            }
        }
        assert!(got == want, "{} records", got.len());
        assert!(aheads.len() > 3, "{} read-aheads started", aheads.len());
        // Without positional reads (the caller would read every chunk), nothing is read ahead.
        let mut cursor = open(&bytes, 2);
        let mut got = Vec::new();
        while let Some(record) = cursor.read_next().unwrap() {
            got.push(record);
            assert!(cursor.ahead.is_none());
        }
        assert!(got == want);
    }

    #[test]
    fn records_kept_while_reading_in_order_stay_intact() {
        let bytes = file(3000);
        let want = open(&bytes, 0).read_batch(Selection::All).unwrap();
        let mut reader = open_offering(&bytes, 2);
        let mut kept = Vec::new();
        for (i, want) in want.iter().enumerate() {
            let record = reader.read_next().unwrap().unwrap();
            assert_eq!(record, want, "record {i}");
            // Some records are kept: their chunks' buffers must stay as they are.
            if i % 450 == 0 {
                kept.push((i, record));
            }
        }
        assert_eq!(reader.read_next().unwrap(), None);
        // (That the buffers of records dropped are decoded into again is the
        // decoders' business: see riegeli-codec's tests.)
        assert!(kept.iter().all(|(i, record)| *record == want[*i]));
    }

    #[test]
    fn a_batch_decodes_into_the_buffers_of_the_batch_before() {
        // 100 chunks of 10 compressed records: each decoded into a buffer of its own.
        let file = file(1000);
        for parallelism in [1, 3] {
            let mut reader = open(&file, parallelism);
            let first = reader.read_batch(Selection::All).unwrap();
            assert_eq!(reader.fetcher.workers.buffers.as_ref().unwrap().idle(), 0, "parallelism {parallelism}");
            drop(first);
            // Let go of at once, whichever thread decoded them, they wait for the next batch...
            let idle = reader.fetcher.workers.buffers.as_ref().unwrap().idle();
            assert!(idle >= 90, "parallelism {parallelism}: {idle} buffers idle");
            // ... which decodes into them.
            let second = reader.read_batch(Selection::All).unwrap();
            let left = reader.fetcher.workers.buffers.as_ref().unwrap().idle();
            assert!(left + 90 <= idle, "parallelism {parallelism}: {left} of {idle} buffers still idle");
            assert!(second == open(&file, 1).read_batch(Selection::All).unwrap());
        }
    }

    #[test]
    fn small_batches_stay_serial_and_large_ones_start_the_pool() {
        let file = file(1000);
        let mut reader = open(&file, 3);
        // 100 records: 100 KB decoded, under MIN_PARALLEL_BYTES.
        assert_eq!(reader.read_batch(0..100).unwrap().len(), 100);
        assert_eq!(reader.read_batch(&[5, 999, 5]).unwrap().len(), 3);
        assert!(reader.fetcher.stream.is_none());
        assert_eq!(reader.read_batch(Selection::All).unwrap().len(), 1000);
        assert_eq!(reader.fetcher.stream.as_mut().map(DecodeStream::threads), Some(2));
        // Reads with one thread never start it.
        let mut single = open(&file, 1);
        assert_eq!(single.read_batch(Selection::All).unwrap().len(), 1000);
        assert!(single.fetcher.stream.is_none());
    }

    #[test]
    fn dropping_the_reader_joins_its_workers() {
        let file = file(500);
        let mut reader = open(&file, 4);
        let (plug, watch) = crate::stream::tests::plug();
        reader.fetcher.workers.plug = plug;
        assert_eq!(reader.read_batch(Selection::All).unwrap().len(), 500);
        let stream = reader.fetcher.stream.as_mut().unwrap();
        assert_eq!(stream.threads(), 3);
        // Every thread's worker exists until its thread ends.
        assert!(watch.alive());
        drop(reader);
        assert!(!watch.alive(), "a worker thread outlived the reader");

        // The next batches go to the same threads.
        let mut reader = open(&file, 2);
        let (plug, watch) = crate::stream::tests::plug();
        reader.fetcher.workers.plug = plug;
        let all = reader.read_batch(Selection::All).unwrap();
        assert_eq!(reader.read_batch(Selection::All).unwrap(), all);
        assert_eq!(reader.read_batch(0..400).unwrap(), all[..400]);
        assert_eq!(watch.dropped(), 0, "the threads were replaced");
        drop(reader);
        assert!(watch.dropped() > 0);
    }

    #[test]
    fn records_come_back_in_order_across_tasks() {
        let file = file(2000);
        let mut reader = open(&file, 3);
        let all = reader.read_batch(Selection::All).unwrap();
        for (i, record) in all.iter().enumerate() {
            assert_eq!(record, format!("{i:0>1000}").as_bytes());
        }
        let indices: Vec<u64> = (0..2000).rev().step_by(7).collect();
        for (record, i) in reader.read_batch(&indices).unwrap().iter().zip(&indices) {
            assert_eq!(record, format!("{i:0>1000}").as_bytes());
        }
    }

    #[test]
    fn a_panicking_decoding_thread_fails_the_batch_as_internal() {
        // Chunks of 10 records of 1041 bytes; one record of 1042 gives its chunk a size of its own.
        let records: Vec<Vec<u8>> = (0..1000u32)
            .map(|i| format!("{i:>width$}", width = if i == 517 { 1042 } else { 1041 }).into_bytes())
            .collect();
        let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:10,zstd:1".parse().unwrap()).unwrap();
        for record in &records {
            writer.write_record(record).unwrap();
        }
        let file = writer.close().unwrap();
        for threads in [2, 3] {
            let mut reader = open(&file, threads);
            let (plug, watch) = crate::stream::tests::plug();
            reader.fetcher.workers.plug = plug;
            watch.panic_on(Some(10 * 1041 + 1));
            let error = reader.read_batch(Selection::All).unwrap_err();
            assert!(matches!(error.kind(), ErrorKind::Internal(_)), "{error}");
            assert!(!error.is_corruption());
            // Enough chunks to go to the threads (a small batch is decoded serially).
            let indices: Vec<u64> = (400..700).rev().collect();
            let error = reader.read_batch(&indices).unwrap_err();
            assert!(matches!(error.kind(), ErrorKind::Internal(_)), "{error}");
            watch.panic_on(None);
            // The threads go on: the next batches read whole.
            let all = reader.read_batch(Selection::All).unwrap();
            assert!(all.iter().map(|r| &r[..]).eq(records.iter().map(|r| &r[..])));
            assert_eq!(reader.read_batch(&[999, 517, 3]).unwrap(), [&records[999][..], &records[517], &records[3]]);
        }
    }
}
