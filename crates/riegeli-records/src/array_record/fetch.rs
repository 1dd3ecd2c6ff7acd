//! Fetching and decoding the chunks of a [`Plan`](super::plan::Plan) for an
//! [`ArrayRecordReader`](super::ArrayRecordReader): serially on the calling
//! thread, or as tasks on the decode stream when the options give threads
//! and the plan is worth them ([`batch`]).

use std::io::{Read, Seek};

use riegeli_codec::{DecodedRecords, FieldProjection, RecordBuffers};

use super::batch::{self, MIN_TASK_BYTES, Started};
use super::options::ArrayRecordReaderOptions;
use super::plan::{ChunkIndex, Offloaded, Step};
use super::prefetch::Prefetcher;
use crate::decode::ChunkDecoder;
use crate::error::Result;
use crate::indexed::{ChunkEntry, Reading, read_entry};
use crate::options::ChunkReadOptions;
use crate::pool::Plug;
use crate::positional::SharedFile;
use crate::source::Source;
use crate::stream::{DecodeStream, Piece, Workers};

/// Plans decode serially below this estimated decoded size (from the index),
/// where handing work to another thread costs more than it saves.
pub(crate) const MIN_PARALLEL_BYTES: u64 = 128 << 10;

/// The most idle buffers of decoded records a reader keeps (their bytes are
/// bounded by its `readahead_buffer_size`).
const MAX_SPARE_BUFFERS: usize = 4096;

/// What reads and decodes an ArrayRecord reader's chunks.
pub(crate) struct Fetcher<R> {
    source: Source<R>,
    /// Decodes on the calling thread.
    decoder: ChunkDecoder,
    projection: FieldProjection,
    /// Decodes on worker threads, made by the first plan worth it (its
    /// threads are joined on drop).
    pub(super) stream: Option<DecodeStream>,
    /// What the stream's workers are made with: their file, for a source
    /// that offers one (a file where the platform allows, an object), which
    /// they read their chunks from themselves, told which chunks are about to
    /// be read; and the buffers every decoder of the reader (the calling
    /// thread's, the stream's) decodes into, where records' buffers go when
    /// dropped.
    pub(super) workers: Workers,
}

impl<R: Read + Seek> Fetcher<R> {
    /// A fetcher of chunks from `source` (and `file`, the same bytes read at
    /// offsets, if it offers them), decoding the fields of `projection`.
    pub(crate) fn new(source: Source<R>, file: Option<SharedFile>, options: &ArrayRecordReaderOptions) -> Self {
        let projection = options.field_projection.clone();
        // Whole batches of chunks are let go of at once (a window read ahead
        // by `read_next`, a range collected): their buffers wait here for the
        // next, up to what a window holds.
        let spare = usize::try_from(options.readahead_buffer_size).unwrap_or(usize::MAX);
        let buffers = RecordBuffers::new(MAX_SPARE_BUFFERS, spare);
        Self {
            source,
            decoder: ChunkDecoder::with_buffers(&options.chunks, projection.clone(), &buffers),
            projection,
            workers: Workers { file, plug: Plug::default(), buffers: Some(buffers) },
            stream: None,
        }
    }

    /// Tells the source that the chunk of `entry` is read next, by itself
    /// (the batch reads announce theirs a window at a time).
    pub(crate) fn announce_one(&self, options: &ChunkReadOptions, entry: &ChunkEntry) {
        if let Some(file) = &self.workers.file {
            file.will_need(std::slice::from_ref(&(entry.offset..entry.limit)), options.verify_hashes);
        }
    }

    /// Reads the chunk of `entry` by itself (`Alone`), or after the one before
    /// it (`InOrder`), checked against its entry, and decodes its first
    /// `further` records on the calling thread (its first `needed` if that
    /// fails); a chunk found damaged in bytes fetched over a network (the file
    /// says so by fetching them again, see [`ReadAt::refetch`](crate::ReadAt::refetch))
    /// is read once more.
    pub(crate) fn read_decode(
        &mut self,
        options: &ChunkReadOptions,
        entry: &ChunkEntry,
        reading: Reading,
        needed: u64,
        further: u64,
    ) -> Result<DecodedRecords> {
        let attempt = |this: &mut Self| {
            let chunk = read_entry(&mut this.source, options, entry, reading)?.gather();
            match this.decoder.data_records_prefix(&chunk, options.verify_hashes, further) {
                Err(_) if further > needed => this.decoder.data_records_prefix(&chunk, options.verify_hashes, needed),
                decoded => decoded,
            }
        };
        match attempt(self) {
            Err(e)
                if e.is_corruption()
                    && self.workers.file.as_ref().is_some_and(|file| file.refetch(entry.offset..entry.limit)) =>
            {
                self.source.release_buffers()?;
                attempt(self)
            }
            decoded => decoded,
        }
    }

    /// Reads and decodes the chunks of `steps` (ascending), handing each
    /// chunk's records to `sink` with its position in `steps`, in order. A
    /// plan worth it (more than one chunk, at least [`MIN_PARALLEL_BYTES`] of
    /// records, more than one thread in the options) is decoded on the
    /// decode stream's threads and the calling thread, the stream started if
    /// it is not yet; at most `readahead_buffer_size` raw bytes are read ahead.
    ///
    /// Errors are those serial reading would return: the first in file
    /// order, whether reading or decoding failed.
    pub(crate) fn run(
        &mut self,
        options: &ArrayRecordReaderOptions,
        index: &ChunkIndex,
        steps: &[Step],
        sink: &mut dyn FnMut(usize, DecodedRecords),
    ) -> Result<()> {
        // (The prefetcher holds a handle of its own: the loop below reads through `self`.)
        let file = self.workers.file.clone();
        let mut prefetcher = Prefetcher::new(file.as_deref(), index, steps, options);
        if let Some(stream) = stream_for(&mut self.stream, &self.workers, &self.projection, options, index, steps) {
            let window = options.readahead_buffer_size;
            if self.workers.file.is_some() {
                let mut read = read_where_decoded(&mut prefetcher);
                return batch::run(stream, &mut read, index, steps, window, sink);
            }
            // The calling thread only reads: data hashes are checked where
            // the chunks are decoded.
            let read_options = ChunkReadOptions { verify_hashes: false, ..options.chunks.clone() };
            let mut next = 0;
            let mut read = |step: Step| {
                next += 1;
                let (entry, after) = prefetcher.entries(next - 1)?;
                let reading = Reading::before(&entry, after.as_ref());
                read_entry(&mut self.source, &read_options, &entry, reading)
                    .map(|chunk| Piece::Read(chunk, step.needed))
            };
            return batch::run(stream, &mut read, index, steps, window, sink);
        }
        for (i, step) in steps.iter().enumerate() {
            let (entry, after) = prefetcher.entries(i)?;
            let reading = Reading::before(&entry, after.as_ref());
            sink(i, self.read_decode(&options.chunks, &entry, reading, step.needed, step.needed)?);
        }
        Ok(())
    }

    /// Hands the chunks of `steps` to the decoding threads without waiting,
    /// to be collected by [`finish`](Self::finish): only when the threads read
    /// their chunks themselves and the plan is worth them (`None` otherwise,
    /// or when handing them out failed).
    pub(crate) fn start(
        &mut self,
        options: &ArrayRecordReaderOptions,
        index: &ChunkIndex,
        steps: &[Step],
    ) -> Option<Started> {
        self.workers.file.as_ref()?;
        let stream = stream_for(&mut self.stream, &self.workers, &self.projection, options, index, steps)?;
        let mut prefetcher = Prefetcher::new(self.workers.file.as_deref(), index, steps, options);
        batch::start(stream, &mut read_where_decoded(&mut prefetcher), index, steps).ok()
    }

    /// Waits for what [`start`](Self::start) handed out and hands each
    /// chunk's records to `sink`, as [`run`](Self::run) does; `None` if that
    /// was lost (in a child forked since, with the parent's threads).
    pub(crate) fn finish(
        &mut self,
        started: Started,
        sink: &mut dyn FnMut(usize, DecodedRecords),
    ) -> Option<Result<()>> {
        let stream = self.stream.as_mut()?;
        if stream.renew_if_forked() {
            return None;
        }
        Some(batch::finish(stream, started, sink))
    }

    /// The index `at` stands for, read from the file's footer again (see
    /// [`load::reload`](super::load::reload)).
    pub(crate) fn reload_index(
        &mut self,
        options: &ChunkReadOptions,
        at: Offloaded,
        num_records: u64,
    ) -> Result<ChunkIndex> {
        let index = super::load::reload(&mut self.source, options, at, num_records)?;
        self.source.release_buffers()?;
        Ok(index)
    }

    /// Tells the source which chunks `steps` reads first (a window of
    /// `readahead_buffer_size`, as [`run`](Self::run) does before its first
    /// chunk), without reading them: an object's are fetched meanwhile.
    pub(crate) fn announce(&self, options: &ArrayRecordReaderOptions, index: &ChunkIndex, steps: &[Step]) {
        Prefetcher::new(self.workers.file.as_deref(), index, steps, options).before(0);
    }

    /// Drops what [`start`](Self::start) handed out.
    pub(crate) fn abandon(&mut self) {
        if let Some(stream) = &mut self.stream {
            stream.abandon();
        }
    }
}

/// The decode stream (made if it is not yet), if decoding `steps` on it is
/// worth it: more than one thread, more than one chunk, and at least
/// [`MIN_PARALLEL_BYTES`] of records.
fn stream_for<'a>(
    stream: &'a mut Option<DecodeStream>,
    workers: &Workers,
    projection: &FieldProjection,
    options: &ArrayRecordReaderOptions,
    index: &ChunkIndex,
    steps: &[Step],
) -> Option<&'a mut DecodeStream> {
    let threads = options.effective_parallelism();
    if threads <= 1 || steps.len() <= 1 || index.decoded_size(steps, MIN_TASK_BYTES) < MIN_PARALLEL_BYTES {
        return None;
    }
    Some(stream.get_or_insert_with(|| {
        DecodeStream::new("array-record-decode", threads - 1, &options.chunks, projection.clone(), workers.clone())
    }))
}

/// The `read` of a batch whose threads read their chunks themselves: each
/// chunk is left to be read where it is decoded, after telling the
/// prefetcher it is next.
fn read_where_decoded<'a>(prefetcher: &'a mut Prefetcher<'_>) -> impl FnMut(Step) -> Result<Piece> + 'a {
    let mut next = 0;
    move |step| {
        next += 1;
        Ok(Piece::At(prefetcher.entries(next - 1)?.0, step.needed))
    }
}
