//! `ArrayRecordReader`: random access to the records of an ArrayRecord file.

use std::io::{Read, Seek};
use std::ops::Range;
use std::path::Path;

use bytes::Bytes;
use riegeli_codec::{DecodedRecords, FieldProjection};

use super::batch::{MIN_TASK_BYTES, Started};
#[cfg(doc)]
use super::load::IndexSource;
use super::load::{IndexInfo, load};
use super::options::ArrayRecordReaderOptions;
use super::prefetch::{PrefetchHook, Prefetcher, estimated_decoded_size};
use super::sequential::Sequential;
use crate::decode::ChunkDecoder;
use crate::error::{Error, ErrorKind, Result};
use crate::indexed::{ChunkEntry, Reading, read_entry};
use crate::options::ChunkReadOptions;
use crate::positional::{PositionalFile, ReadAt, SharedFile};
use crate::source::Source;
use crate::stream::{DecodeStream, Piece};

/// Parallel reads decode serially below this estimated decoded size (from the
/// index), where handing work to another thread costs more than it saves.
const MIN_PARALLEL_BYTES: u64 = 128 << 10;

/// Reads by index copy the records they want out of a chunk when these are
/// less than 1/`COPY_BELOW` of its decoded data, rather than keeping the whole
/// chunk alive through slices of it.
const COPY_BELOW: usize = 4;

/// The records a batch read ([`ArrayRecordReader::read_batch`]) reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection<'a> {
    /// Every record, in order.
    All,
    /// The records with indices in a range, in order (an empty range reads
    /// nothing; one past the end is an error).
    Range(Range<u64>),
    /// The records with the given indices, in the order given, repeats allowed.
    Indices(&'a [u64]),
}

impl From<Range<u64>> for Selection<'_> {
    fn from(range: Range<u64>) -> Self {
        Self::Range(range)
    }
}

impl<'a> From<&'a [u64]> for Selection<'a> {
    fn from(indices: &'a [u64]) -> Self {
        Self::Indices(indices)
    }
}

impl<'a, const N: usize> From<&'a [u64; N]> for Selection<'a> {
    fn from(indices: &'a [u64; N]) -> Self {
        Self::Indices(indices)
    }
}

impl<'a> From<&'a Vec<u64>> for Selection<'a> {
    fn from(indices: &'a Vec<u64>) -> Self {
        Self::Indices(indices)
    }
}

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
/// [`ChunkReadOptions`] limits, as for
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
    source: Source<R>,
    options: ArrayRecordReaderOptions,
    chunks: Vec<ChunkEntry>,
    num_records: u64,
    index: IndexInfo,
    projection: FieldProjection,
    decoder: ChunkDecoder,
    /// The chunk [`read`](Self::read) decoded last.
    cached: Option<(usize, DecodedRecords)>,
    parallel: Parallel,
    sequential: Sequential,
    /// The records [`read_next`](Self::read_next) asks for next, being
    /// decoded on the pool's threads meanwhile.
    ahead: Option<Ahead>,
    prefetch: Option<PrefetchHook>,
}

/// A read-ahead of [`ArrayRecordReader::read_next`]: a range of records
/// whose chunks were handed to the pool.
struct Ahead {
    range: Range<u64>,
    ks: Vec<usize>,
    started: Started,
}

/// The state of the parallel reads.
#[derive(Default)]
struct Parallel {
    /// Decodes on worker threads, made by the first parallel read that is
    /// worth it (its threads are joined on drop).
    stream: Option<DecodeStream>,
    /// For a reader opened on a `File` (where the platform allows): the file,
    /// which the decoding threads read their chunks from themselves.
    file: Option<SharedFile>,
}

impl<R> std::fmt::Debug for ArrayRecordReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayRecordReader")
            .field("num_records", &self.num_records)
            .field("num_chunks", &self.chunks.len())
            .field("index_source", &self.index.index_source)
            .finish_non_exhaustive()
    }
}

impl<R: Read + Seek> ArrayRecordReader<R> {
    /// Opens an ArrayRecord file with default options.
    pub fn new(src: R) -> Result<Self> {
        Self::with_options(src, ArrayRecordReaderOptions::default())
    }

    /// Opens an ArrayRecord file: reads the postscript and the footer. If
    /// they are missing or damaged, fails (an error that
    /// [`is_corruption`](Error::is_corruption)), or with
    /// [`scan_fallback`](ArrayRecordReaderOptions::scan_fallback) scans the
    /// file instead, failing then only on I/O errors and on files that are not
    /// Riegeli/records files at all.
    pub fn with_options(src: R, options: ArrayRecordReaderOptions) -> Result<Self> {
        let mut source = Source::new(src, 0);
        let loaded = load(&mut source, &options)?;
        let num_chunks = loaded.chunks.len();
        Ok(Self {
            source,
            chunks: loaded.chunks,
            num_records: loaded.num_records,
            index: IndexInfo {
                index_source: loaded.index_source,
                num_chunks,
                writer_options: loaded.writer_options,
                fallback_reason: loaded.fallback_reason,
                footer_without_postscript: loaded.footer_without_postscript,
                skipped_regions: loaded.skipped,
            },
            projection: options.field_projection.clone(),
            decoder: ChunkDecoder::with_projection(&options.chunks, options.field_projection.clone()),
            cached: None,
            parallel: Parallel::default(),
            sequential: Sequential::default(),
            ahead: None,
            prefetch: None,
            options,
        })
    }

    /// Reads only the given fields of transposed chunks from now on (simple
    /// chunks are read whole).
    #[cfg(test)]
    pub(crate) fn set_field_projection(&mut self, projection: FieldProjection) {
        self.decoder = ChunkDecoder::with_projection(&self.options.chunks, projection.clone());
        self.projection = projection;
        self.cached = None;
        self.sequential.clear();
        // What the threads decode ahead has the old projection; later jobs get the new one.
        self.cancel_ahead();
        if let Some(stream) = &mut self.parallel.stream {
            stream.set_projection(self.projection.clone());
        }
    }

    /// The number of records.
    pub fn num_records(&self) -> u64 {
        self.num_records
    }

    /// How the index was found (footer or scan, and what a scan skipped),
    /// and the writer options the footer stores.
    pub fn index(&self) -> &IndexInfo {
        &self.index
    }

    /// The chunk holding record `index`, and the record's index within it.
    fn locate(&self, index: u64) -> Result<(usize, usize)> {
        if index >= self.num_records {
            return Err(ErrorKind::InvalidArgument(format!(
                "record index {index} out of range: the file has {} records",
                self.num_records
            ))
            .into());
        }
        let k = self.chunks.partition_point(|c| c.first_record + c.num_records <= index);
        let chunk = self.chunks.get(k).ok_or_else(not_indexed)?;
        Ok((k, (index - chunk.first_record) as usize))
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
        let (k, j) = self.locate(index)?;
        let cached = self.cached.as_ref().filter(|(cached, _)| *cached == k).map(|(_, records)| records.len());
        if cached.is_none_or(|decoded| j >= decoded) {
            // After the chunk before it, reading goes on by blocks; a chunk by itself
            // (a random read) is read alone, only its bytes.
            let in_order = self.cached.as_ref().is_some_and(|(last, _)| last + 1 == k);
            let reading = if in_order { Reading::InOrder } else { Reading::Alone };
            self.cached = None;
            let entry = self.chunks.get(k).ok_or_else(not_indexed)?;
            if let Some(hook) = &mut self.prefetch {
                hook(std::slice::from_ref(&(entry.offset..entry.limit)));
            }
            let chunk = read_entry(&mut self.source, &self.options.chunks, entry, reading)?.gather();
            let verify = self.options.chunks.verify_hashes;
            let needed = j as u64 + 1;
            let further = if cached.is_some() { u64::MAX } else { needed };
            let records = match self.decoder.data_records_prefix(&chunk, verify, further) {
                Err(_) if further > needed => self.decoder.data_records_prefix(&chunk, verify, needed)?,
                result => result?,
            };
            self.cached = Some((k, records));
        }
        // A chunk's record count is checked against the index when it is decoded.
        self.cached.as_ref().and_then(|(_, records)| records.get(j)).ok_or_else(not_indexed)
    }

    /// Reads the records `selection` names (a range, a list of indices in
    /// any order with repeats, or all), decoding each chunk once; returns
    /// them in the order asked. Chunks are decoded on
    /// [`parallelism`](ArrayRecordReaderOptions::parallelism) threads (and the calling one) when
    /// the batch is worth it (more than one chunk, at least 128 KiB of
    /// records), else on the calling thread. Every index is checked before
    /// anything is read.
    pub fn read_batch<'a>(&mut self, selection: impl Into<Selection<'a>>) -> Result<Vec<Bytes>> {
        match selection.into() {
            Selection::All => self.range_impl(0..self.num_records),
            Selection::Range(range) => self.range_impl(range),
            Selection::Indices(indices) => self.indices_impl(indices),
        }
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
        let mut records = Vec::new();
        self.selection_each(selection.into(), &mut |decoded, run| {
            records.clear();
            records.extend(run.iter().filter_map(|&(p, j)| Some((p, decoded.get(j)?))));
            each(&records);
        })
    }

    /// Lets the decoding threads of the parallel reads read their chunks
    /// themselves, at offsets of `shared` (which must hold the same bytes as
    /// the reader's source), instead of the calling thread reading them all:
    /// what [`open`](ArrayRecordReader::open) does with a duplicate
    /// of the file handle, and a source in object storage does with its cache.
    pub fn set_read_at(&mut self, shared: std::sync::Arc<dyn ReadAt>) {
        self.parallel.file = Some(shared);
        // Workers read through the source they were started with.
        self.ahead = None;
        self.parallel.stream = None;
    }

    /// Installs `hook`, told the byte ranges of the data chunks a read is
    /// about to read, in file order, before it reads them: up to
    /// [`readahead_buffer_size`](ArrayRecordReaderOptions::readahead_buffer_size)
    /// bytes of chunks at a time, the next ones once half of those are read.
    /// A source with latency (object storage) fetches them concurrently,
    /// each chunk's exact range, so that the reads then find them at hand.
    /// (Readers of local files opened with [`open`](ArrayRecordReader::open)
    /// read chunks on the decoding threads and do not call it.)
    pub fn set_prefetch(&mut self, hook: impl FnMut(&[Range<u64>]) + Send + Sync + 'static) {
        self.prefetch = Some(Box::new(hook));
    }

    /// The index of the record [`read_next`](Self::read_next) returns.
    pub fn record_index(&self) -> u64 {
        self.sequential.index()
    }

    /// Makes [`record_index`](Self::record_index) `index`, or
    /// [`num_records`](Self::num_records) if `index` is past the end.
    pub fn seek_record(&mut self, index: u64) {
        self.sequential.seek(index.min(self.num_records));
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
        let (num_records, readahead) = (self.num_records, self.options.readahead_buffer_size);
        let mut fetched = false;
        let next = sequential.next(num_records, readahead, |range| {
            fetched = true;
            if range.end - range.start == 1 {
                return Ok(vec![self.read(range.start)?]);
            }
            if let Some(records) = self.take_ahead(&range) {
                return records;
            }
            self.range_impl(range)
        });
        if fetched
            && next.is_ok()
            && let Some(range) = sequential.upcoming(num_records, readahead)
        {
            self.start_ahead(range);
        }
        self.sequential = sequential;
        next
    }

    /// Hands the chunks of `range` to the pool's threads, to be collected by
    /// [`take_ahead`](Self::take_ahead) when `read_next` gets there: only
    /// when the threads read their chunks themselves (a file, an object), so
    /// that the caller goes on at once, and the range is worth a parallel batch.
    fn start_ahead(&mut self, range: Range<u64>) {
        self.cancel_ahead();
        if self.parallel.file.is_none() {
            return;
        }
        let Ok((ks, needed)) = self.range_plan(&range) else { return };
        let (projection, options, chunks) = (&self.projection, &self.options, &self.chunks);
        let Some(stream) = self.parallel.stream_for(options, projection, chunks, &ks) else { return };
        let mut prefetcher = Prefetcher::new(self.prefetch.as_mut(), chunks, &ks, options.readahead_buffer_size);
        let started =
            super::batch::start(stream, &mut read_where_decoded(chunks, &mut prefetcher), chunks, &ks, &needed);
        if let Ok(started) = started {
            self.ahead = Some(Ahead { range, ks, started });
        }
    }

    /// The records of `range` if [`start_ahead`](Self::start_ahead) started
    /// exactly that range (waiting for its chunks, and decoding queued ones
    /// here meanwhile); `None` otherwise (a read-ahead of another range is
    /// dropped).
    fn take_ahead(&mut self, range: &Range<u64>) -> Option<Result<Vec<Bytes>>> {
        let ahead = self.ahead.take()?;
        let stream = self.parallel.stream.as_mut()?;
        // In a child forked since, the read-ahead was lost with the parent's threads.
        if stream.renew_if_forked() {
            return None;
        }
        if ahead.range != *range {
            stream.abandon();
            return None;
        }
        let mut out = Vec::with_capacity(usize::try_from(range.end - range.start).unwrap_or(0).min(1 << 16));
        let chunks = &self.chunks;
        let result = super::batch::finish(stream, ahead.started, &mut |i, records| {
            if let Some(entry) = ahead.ks.get(i).and_then(|&k| chunks.get(k)) {
                let (from, to) = span_in(entry, range);
                out.extend((from..to).filter_map(|j| records.get(j)));
            }
        });
        Some(result.map(|()| out))
    }

    /// Forgets the read-ahead of `read_next`, if any, before the pool does
    /// anything else: its tasks are abandoned.
    fn cancel_ahead(&mut self) {
        if self.ahead.take().is_some()
            && let Some(stream) = &mut self.parallel.stream
        {
            stream.abandon();
        }
    }

    /// The chunks holding the records of `range` (not empty), and how many
    /// of each one's first records are needed: of the last, only those up
    /// to the range's end.
    fn range_plan(&self, range: &Range<u64>) -> Result<(Vec<usize>, Vec<u64>)> {
        let (first, _) = self.locate(range.start)?;
        let (last, _) = self.locate(range.end - 1)?;
        let ks: Vec<usize> = (first..=last).collect();
        let needed: Vec<u64> = ks
            .iter()
            .map(|&k| self.chunks.get(k).map_or(u64::MAX, |entry| range.end.saturating_sub(entry.first_record)))
            .collect();
        Ok((ks, needed))
    }

    /// [`read_next`](Self::read_next) if that record is decoded already: no
    /// I/O and no decoding (`None` otherwise, and the cursor stays).
    pub fn read_next_decoded(&mut self) -> Option<Bytes> {
        self.sequential.next_decoded()
    }

    /// Decodes the chunks holding `selection`, in file order, handing each
    /// chunk's records to `each` with the (position in the selection, index
    /// in the chunk) of those asked for.
    fn selection_each(&mut self, selection: Selection<'_>, each: &mut ChunkRun<'_>) -> Result<()> {
        match selection {
            Selection::All => self.range_each(0..self.num_records, each),
            Selection::Range(range) => self.range_each(range, each),
            Selection::Indices(indices) => self.indices_each(indices, each),
        }
    }

    /// The records of a range, in order.
    fn range_impl(&mut self, range: Range<u64>) -> Result<Vec<Bytes>> {
        // Counts are checked against the limits, but reserve little up front anyway.
        let mut out =
            Vec::with_capacity(usize::try_from(range.end.saturating_sub(range.start)).unwrap_or(0).min(1 << 16));
        self.range_each(range, &mut |records, run| out.extend(run.iter().filter_map(|&(_, j)| records.get(j))))?;
        Ok(out)
    }

    /// Decodes the chunks of `range`, handing each chunk's records to `each`
    /// with the (position in the range, index in the chunk) of those in it.
    fn range_each(&mut self, range: Range<u64>, each: &mut ChunkRun<'_>) -> Result<()> {
        self.cancel_ahead();
        if range.start >= range.end {
            return Ok(());
        }
        let (ks, needed) = self.range_plan(&range)?;
        let chunks = &self.chunks;
        let mut run = Vec::new();
        let mut sink = |i: usize, records: DecodedRecords| {
            let Some(entry) = ks.get(i).and_then(|&k| chunks.get(k)) else { return };
            let (from, to) = span_in(entry, &range);
            // Position in the range of record `j` of the chunk (`from..to` are in the range).
            let position = |j: usize| (entry.first_record + j as u64 - range.start) as usize;
            run.clear();
            run.extend((from..to).map(|j| (position(j), j)));
            each(&records, &run);
        };
        Self::decode_chunks(
            &mut self.source,
            &mut self.decoder,
            &self.options,
            &self.projection,
            chunks,
            &ks,
            &needed,
            &mut self.parallel,
            self.prefetch.as_mut(),
            &mut sink,
        )
    }

    /// The records of `indices`, in the order asked.
    fn indices_impl(&mut self, indices: &[u64]) -> Result<Vec<Bytes>> {
        let mut out = vec![Bytes::new(); indices.len()];
        self.indices_each(indices, &mut |records, run| {
            let wanted: usize = run.iter().filter_map(|&(_, j)| records.get_slice(j)).map(<[u8]>::len).sum();
            if wanted.saturating_mul(COPY_BELOW) >= records.decoded_data_size() {
                for &(p, j) in run {
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
            let mut spans = Vec::with_capacity(run.len());
            for &(p, j) in run {
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
        })?;
        Ok(out)
    }

    /// Decodes the chunks holding `indices`, in file order, handing each
    /// chunk's records to `each` with the (position in `indices`, index in
    /// the chunk) of those asked for.
    fn indices_each(&mut self, indices: &[u64], each: &mut ChunkRun<'_>) -> Result<()> {
        self.cancel_ahead();
        let mut located = Vec::with_capacity(indices.len());
        for &index in indices {
            let (k, j) = self.locate(index)?;
            located.push((k, j));
        }
        // Positions in `indices`, grouped by chunk in file order.
        let mut order: Vec<usize> = (0..indices.len()).collect();
        order.sort_unstable_by_key(|&p| located.get(p).map_or(0, |l| l.0));
        let mut ks: Vec<usize> = order.iter().filter_map(|&p| located.get(p).map(|l| l.0)).collect();
        ks.dedup();
        // Per chunk, how many of its first records hold those asked for.
        let mut needed = vec![0u64; ks.len()];
        let mut i = 0;
        for &(k, j) in order.iter().filter_map(|&p| located.get(p)) {
            while ks.get(i).is_some_and(|&ki| ki != k) {
                i += 1;
            }
            if let Some(n) = needed.get_mut(i) {
                *n = (*n).max(j as u64 + 1);
            }
        }
        let mut cursor = 0usize;
        let mut run = Vec::new();
        let mut sink = |i: usize, records: DecodedRecords| {
            let Some(&k) = ks.get(i) else { return };
            // The positions in `indices` of this chunk's records, and their indices in it.
            run.clear();
            while let Some((p, &(pk, j))) = order.get(cursor).and_then(|&p| Some((p, located.get(p)?)))
                && pk == k
            {
                run.push((p, j));
                cursor += 1;
            }
            each(&records, &run);
        };
        Self::decode_chunks(
            &mut self.source,
            &mut self.decoder,
            &self.options,
            &self.projection,
            &self.chunks,
            &ks,
            &needed,
            &mut self.parallel,
            self.prefetch.as_mut(),
            &mut sink,
        )
    }

    /// Reads and decodes chunks `ks` (ascending), handing each chunk's records
    /// to `sink` with its position in `ks`, in order; `needed[i]` is how many
    /// of chunk `ks[i]`'s first records are needed (simple chunks are decoded
    /// no further). With `parallel` (the
    /// parallel reads), a batch worth it is decoded on the pool's threads and
    /// the calling thread; the pool is started if it is not yet.
    ///
    /// Errors are those the serial reading would return: the first in file
    /// order, whether reading or decoding failed.
    #[allow(clippy::too_many_arguments, reason = "disjoint borrows of the reader's fields")]
    fn decode_chunks(
        source: &mut Source<R>,
        decoder: &mut ChunkDecoder,
        options: &ArrayRecordReaderOptions,
        projection: &FieldProjection,
        chunks: &[ChunkEntry],
        ks: &[usize],
        needed: &[u64],
        parallel: &mut Parallel,
        prefetch: Option<&mut PrefetchHook>,
        sink: &mut dyn FnMut(usize, DecodedRecords),
    ) -> Result<()> {
        let mut prefetcher = Prefetcher::new(prefetch, chunks, ks, options.readahead_buffer_size);
        if let positional = parallel.file.is_some()
            && let Some(stream) = parallel.stream_for(options, projection, chunks, ks)
        {
            let window = options.readahead_buffer_size;
            if positional {
                let mut read = read_where_decoded(chunks, &mut prefetcher);
                return super::batch::run(stream, &mut read, chunks, ks, needed, window, sink);
            }
            // The calling thread only reads: data hashes are checked where
            // the chunks are decoded.
            let read_options = ChunkReadOptions { verify_hashes: false, ..options.chunks.clone() };
            let mut next = 0;
            let mut read = |k: usize, wanted: u64| {
                prefetcher.before(next);
                next += 1;
                let entry = chunks.get(k).ok_or_else(not_indexed)?;
                let reading = Reading::before(entry, ks.get(next).and_then(|&n| chunks.get(n)));
                read_entry(source, &read_options, entry, reading).map(|chunk| Piece::Read(chunk, wanted))
            };
            return super::batch::run(stream, &mut read, chunks, ks, needed, window, sink);
        }
        for (i, &k) in ks.iter().enumerate() {
            prefetcher.before(i);
            let entry = chunks.get(k).ok_or_else(not_indexed)?;
            let reading = Reading::before(entry, ks.get(i + 1).and_then(|&n| chunks.get(n)));
            let chunk = read_entry(source, &options.chunks, entry, reading)?.gather();
            let wanted = needed.get(i).copied().unwrap_or(u64::MAX);
            sink(i, decoder.data_records_prefix(&chunk, options.chunks.verify_hashes, wanted)?);
        }
        Ok(())
    }
}

impl Parallel {
    /// The decode stream (made if it is not yet), if a parallel read of
    /// chunks `ks` is worth it: more than one thread, more than one chunk,
    /// and at least [`MIN_PARALLEL_BYTES`] of records.
    fn stream_for(
        &mut self,
        options: &ArrayRecordReaderOptions,
        projection: &FieldProjection,
        chunks: &[ChunkEntry],
        ks: &[usize],
    ) -> Option<&mut DecodeStream> {
        let threads = options.effective_parallelism();
        if threads <= 1 || ks.len() <= 1 || estimated_decoded_size(chunks, ks, MIN_TASK_BYTES) < MIN_PARALLEL_BYTES {
            return None;
        }
        let file = &self.file;
        Some(self.stream.get_or_insert_with(|| {
            DecodeStream::new("array-record-decode", threads - 1, &options.chunks, file.clone(), projection.clone())
        }))
    }
}

/// The `read` of a parallel batch whose threads read their chunks themselves:
/// each chunk is left to be read where it is decoded, after telling the
/// prefetcher it is next.
fn read_where_decoded<'a>(
    chunks: &'a [ChunkEntry],
    prefetcher: &'a mut Prefetcher<'_>,
) -> impl FnMut(usize, u64) -> Result<Piece> + 'a {
    let mut next = 0;
    move |k, wanted| {
        prefetcher.before(next);
        next += 1;
        chunks.get(k).map(|entry| Piece::At(*entry, wanted)).ok_or_else(not_indexed)
    }
}

/// The indices within the chunk of `entry` of its records in `range`.
fn span_in(entry: &ChunkEntry, range: &Range<u64>) -> (usize, usize) {
    let from = range.start.saturating_sub(entry.first_record) as usize;
    let to = range.end.saturating_sub(entry.first_record).min(entry.num_records) as usize;
    (from, to)
}

/// What a batch read does with one chunk's records: the chunk's records, and
/// the (position in the selection, index in the chunk) of those asked for.
type ChunkRun<'a> = dyn FnMut(&DecodedRecords, &[(usize, usize)]) + 'a;

impl ArrayRecordReader<PositionalFile> {
    /// Opens the ArrayRecord file at `path`: [`with_options`](Self::with_options)
    /// on positional reads of it (no file position shared with other handles
    /// or a forked process), and then the parallel reads' decoding threads
    /// read their chunks themselves, from the same handle (on Unix and
    /// Windows; on other platforms the calling thread reads every chunk, as
    /// for any `R`). For a file opened already, give a
    /// [`PositionalFile`] to [`with_options`](Self::with_options) and its
    /// [`shared`](PositionalFile::shared) handle to [`set_read_at`](Self::set_read_at).
    pub fn open(path: impl AsRef<Path>, options: ArrayRecordReaderOptions) -> Result<Self> {
        let file = PositionalFile::open(path)?;
        let shared = file.shared();
        let mut reader = Self::with_options(file, options)?;
        reader.parallel.file = shared;
        Ok(reader)
    }
}

/// An index lookup that cannot fail: the index was checked when it was built.
fn not_indexed() -> Error {
    Error::internal("a chunk or record missing from the checked index")
}

#[cfg(all(test, feature = "zstd"))]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::ArrayRecordWriter;

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
    fn the_reader_stays_send_and_sync_with_its_pool() {
        fn check<T: Send + Sync>() {}
        check::<ArrayRecordReader<Cursor<Vec<u8>>>>();
    }

    /// The file's bytes, read at offsets as a file opened with `open` is.
    struct Mem(Vec<u8>);

    impl ReadAt for Mem {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
            let at = usize::try_from(offset).unwrap_or(usize::MAX).min(self.0.len());
            let n = buf.len().min(self.0.len() - at);
            buf[..n].copy_from_slice(&self.0[at..at + n]);
            Ok(n)
        }

        fn size(&self) -> std::io::Result<u64> {
            Ok(self.0.len() as u64)
        }
    }

    #[test]
    fn reading_in_order_decodes_the_next_records_ahead_and_other_reads_drop_them() {
        let bytes = file(3000);
        let want = open(&bytes, 0).read_batch(Selection::All).unwrap();
        let mut reader = open(&bytes, 2);
        reader.set_read_at(std::sync::Arc::new(Mem(bytes.clone())));
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
        let mut reader = open(&bytes, 2);
        reader.set_read_at(std::sync::Arc::new(Mem(bytes.clone())));
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
    fn small_batches_stay_serial_and_large_ones_start_the_pool() {
        let file = file(1000);
        let mut reader = open(&file, 3);
        // 100 records: 100 KB decoded, under MIN_PARALLEL_BYTES.
        assert_eq!(reader.read_batch(0..100).unwrap().len(), 100);
        assert_eq!(reader.read_batch(&[5, 999, 5]).unwrap().len(), 3);
        assert!(reader.parallel.stream.is_none());
        assert_eq!(reader.read_batch(Selection::All).unwrap().len(), 1000);
        assert_eq!(reader.parallel.stream.as_mut().map(DecodeStream::threads), Some(2));
        // Reads with one thread never start it.
        let mut single = open(&file, 1);
        assert_eq!(single.read_batch(Selection::All).unwrap().len(), 1000);
        assert!(single.parallel.stream.is_none());
    }

    #[test]
    fn dropping_the_reader_joins_its_workers() {
        let file = file(500);
        let mut reader = open(&file, 4);
        assert_eq!(reader.read_batch(Selection::All).unwrap().len(), 500);
        let stream = reader.parallel.stream.as_mut().unwrap();
        assert_eq!(stream.threads(), 3);
        // Every thread holds the pool's liveness token until it ends.
        let liveness = stream.alive().unwrap();
        drop(reader);
        assert!(liveness.upgrade().is_none(), "a worker thread outlived the reader");

        // A new projection goes to the same threads with the next jobs.
        let mut reader = open(&file, 2);
        let all = reader.read_batch(Selection::All).unwrap();
        let liveness = reader.parallel.stream.as_ref().unwrap().alive().unwrap();
        reader.set_field_projection(FieldProjection::all());
        assert_eq!(reader.read_batch(Selection::All).unwrap(), all);
        assert!(liveness.upgrade().is_some());
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
            {
                let _hook = crate::decode::tests::panic_on_decoded(10 * 1041 + 1);
                let error = reader.read_batch(Selection::All).unwrap_err();
                assert!(matches!(error.kind(), ErrorKind::Internal(_)), "{error}");
                assert!(!error.is_corruption());
                // Enough chunks to go to the threads (a small batch is decoded serially).
                let indices: Vec<u64> = (400..700).rev().collect();
                let error = reader.read_batch(&indices).unwrap_err();
                assert!(matches!(error.kind(), ErrorKind::Internal(_)), "{error}");
            }
            // The threads go on: the next batches read whole.
            let all = reader.read_batch(Selection::All).unwrap();
            assert!(all.iter().map(|r| &r[..]).eq(records.iter().map(|r| &r[..])));
            assert_eq!(reader.read_batch(&[999, 517, 3]).unwrap(), [&records[999][..], &records[517], &records[3]]);
        }
    }
}
