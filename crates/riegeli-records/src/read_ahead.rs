//! Read-ahead for [`RecordReader`](crate::RecordReader) with `parallelism > 0`:
//! raw chunks are read (framing and header checks) on the calling thread, and
//! data chunks are hash-checked and decoded on persistent background threads
//! while the caller consumes records (other chunks are hash-checked on the
//! calling thread as they are read). A caller that would wait for a chunk decodes
//! one itself: the chunk it wants if no worker has taken it yet, else the last
//! one queued. Results are handed back strictly in file order.
//!
//! The queue holds the results of consecutive `read_chunk` calls, exactly as a
//! serial reader would have made them: reading ahead stops at the first result
//! that is not a chunk (the end of the file, damage, an I/O error), which is
//! queued too and returned in its turn, so nothing is read past damage and the
//! source is then where a serial reader's would be.

use std::collections::VecDeque;
use std::io::Read;

use riegeli_codec::{ChunkType, CompressionType, FieldProjection};

use riegeli_framing::is_possible_chunk_boundary;

use crate::chunk_reader::{Pending, RawChunk, ReadError, Resume, read_chunk, verify_hash};
use crate::error::Error;
use crate::options::ChunkReadOptions;
use crate::options::RecordReaderOptions;
use crate::pool::{Panicked, Plug};
use crate::skipped_region::SkippedRegion;
use crate::source::Source;
use crate::stream::{ChunkDecodeFn, DecodeStream, DecodeWorker, Decoded, Piece, Workers};

/// A chunk as the reader gets it: read, and if a worker decoded it, its
/// hash check and records (or [`Panicked`]). A chunk without them has its
/// hash checked already, unless a worker was to check it and its outcome was
/// lost (a fork): the reader's own decoding checks it then.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) chunk: RawChunk,
    pub(crate) decoded: Option<Result<Decoded, Panicked>>,
}

impl Fetched {
    /// A chunk to be decoded on the calling thread.
    pub(crate) fn serial(chunk: RawChunk) -> Self {
        Self { chunk, decoded: None }
    }
}

/// A chunk read ahead, and whether its decoding went to the stream.
#[derive(Debug)]
struct Queued {
    chunk: RawChunk,
    on_stream: bool,
}

/// One result of `read_chunk`, in file order.
#[derive(Debug)]
enum Item {
    Chunk(Queued),
    /// The end of the file (`Ok`), or damage or an I/O error; nothing is read after it.
    End(Result<(), ReadError>),
}

/// Whether a chunk's hash check and decoding go to a worker: simple and
/// transposed chunks of at least `min_size` decoded bytes (the chunk at 0 is
/// checked as the file signature, never decoded). An uncompressed simple
/// chunk goes only if its hash is to be checked: its decoding alone only
/// splits the data (records are slices of it), and handing that over would
/// cost more than it saves.
///
/// Nor does a chunk of more than [`MAX_AHEAD_BYTES`] of data: decoding it
/// ahead would hold its data and its records beside the records of the
/// chunk the caller is reading, while decoded in its turn (after those
/// records are given back) it holds at most one chunk's records and one
/// chunk's data. So reading ahead holds at most two chunks' records and
/// `MAX_AHEAD_BYTES` of data, whatever the chunks' size.
fn worth_a_worker(chunk: &RawChunk, min_size: u64, check_hash: bool) -> bool {
    if chunk.begin == 0 || chunk.header.decoded_data_size() < min_size || chunk.data.len() as u64 > MAX_AHEAD_BYTES {
        return false;
    }
    match ChunkType::from_byte(chunk.header.chunk_type()) {
        Some(ChunkType::Simple) => {
            check_hash || chunk.data.first().is_some_and(|&byte| byte != CompressionType::None.to_byte())
        }
        Some(ChunkType::Transposed) => true,
        _ => false,
    }
}

/// Largest data of a chunk without records (padding, unknown types) that
/// reading ahead goes past; this bounds what such chunks hold in the queue.
const MAX_SMALL_CHUNK: usize = 64 << 10;

/// Whether reading ahead stops after this chunk: the caller decodes it and
/// it has records, or it is large.
fn holds_back(queued: &Queued) -> bool {
    !queued.on_stream && (queued.chunk.header.num_records() > 0 || queued.chunk.data.len() > MAX_SMALL_CHUNK)
}

/// Bytes read ahead (raw chunks, and what those on the workers decode to)
/// past which no more chunks are read ahead, unless none is: a file of huge
/// chunks holds one chunk ahead, not `parallelism + 1`.
pub(crate) const MAX_AHEAD_BYTES: u64 = 64 << 20;

/// What a queued chunk holds while it waits: its raw data, and its records
/// if a worker decodes it.
fn held_bytes(queued: &Queued) -> u64 {
    let decoded = if queued.on_stream { queued.chunk.header.decoded_data_size() } else { 0 };
    (queued.chunk.data.len() as u64).saturating_add(decoded)
}

/// Moves past the damage `pending` describes, where reading ahead may have
/// gone already: chunks read ahead past damage that resumes at a chunk end
/// (found by a decoding thread) leave the source past them too, where a serial
/// reader's is at the first of them, and nothing is left to skip.
pub(crate) fn skip_damage_ahead<R: Read>(
    ahead: Option<&mut ReadAhead>,
    source: &mut Source<R>,
    pending: Pending,
) -> Result<SkippedRegion, Error> {
    if let Some(ahead) = ahead
        && let Some(next) = ahead.front_begin()
    {
        if let Resume::At(pos) = pending.resume
            && pos <= next
        {
            // As `skip_damage` with the source at `next`.
            let end = if is_possible_chunk_boundary(pos) { pos } else { next };
            return Ok(SkippedRegion::new(pending.begin, end, pending.message));
        }
        // Not reached: damage that does not resume at a chunk end is met
        // while reading, which stops reading ahead.
        ahead.discard();
    }
    pending.skip(source)
}

/// The read-ahead state of a parallel [`RecordReader`](crate::RecordReader)
/// (and of a [`ChunkReader`](crate::ChunkReader) with decoding threads).
pub(crate) struct ReadAhead {
    parallelism: usize,
    /// Consecutive `read_chunk` results not yet taken, in file order.
    queue: VecDeque<Item>,
    /// [`held_bytes`] of the queued chunks.
    queued_bytes: u64,
    /// How many chunks in `queue` are on the stream.
    on_stream: usize,
    /// Decodes the chunks worth a thread; its threads start with the first.
    stream: DecodeStream,
    /// Chunks beginning here or later are not read ahead (the end of a byte range).
    stop: u64,
}

impl std::fmt::Debug for ReadAhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadAhead")
            .field("parallelism", &self.parallelism)
            .field("queued", &self.queue.len())
            .field("on_stream", &self.on_stream)
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl ReadAhead {
    /// Read-ahead decoding on `parallelism` threads (at least one), within
    /// the limits of `options`, its decoding workers running in what `plug`
    /// makes of them (see [`DecodeStream::new`]).
    pub(crate) fn with_plug(
        parallelism: usize,
        options: &ChunkReadOptions,
        projection: FieldProjection,
        plug: Plug<DecodeWorker>,
    ) -> Self {
        let parallelism = parallelism.max(1);
        // Chunks come to the threads unchecked: they check the hashes if asked.
        let workers = Workers { plug, ..Workers::default() };
        let stream = DecodeStream::new("riegeli-decode", parallelism, options, projection, workers);
        Self { parallelism, queue: VecDeque::new(), queued_bytes: 0, on_stream: 0, stream, stop: u64::MAX }
    }

    /// Reads ahead no chunk that begins at `pos` or later (it is read only
    /// when asked for).
    pub(crate) fn stop_at(&mut self, pos: u64) {
        self.stop = pos;
    }

    /// Where the first queued chunk begins, if a chunk is queued. (If a final
    /// item or nothing is queued, the source is where the next read begins.)
    pub(crate) fn front_begin(&self) -> Option<u64> {
        match self.queue.front() {
            Some(Item::Chunk(queued)) => Some(queued.chunk.begin),
            _ => None,
        }
    }

    /// The next `read_chunk` result, reading ahead and handing data chunks
    /// to the decode stream; a chunk handed over comes with its outcome.
    pub(crate) fn fetch<R: Read>(
        &mut self,
        source: &mut Source<R>,
        options: &RecordReaderOptions,
    ) -> Result<Option<Fetched>, ReadError> {
        // Topped up here, before a chunk is handed out, not after: the chunk
        // handed out last is gone by now (the caller consumed it), so reading
        // ahead holds at most `parallelism + 1` chunks, not one more. While the
        // caller consumes a chunk, one chunk per worker is on the stream; a
        // worker done before the caller is back waits for it (which cost nothing
        // measurable: `riegeli cat` 0.97x the wall time, 15.5 MiB peak, not 18.3).
        self.top_up(source, options);
        match self.queue.pop_front() {
            Some(Item::Chunk(queued)) => {
                if queued.on_stream {
                    self.on_stream -= 1;
                }
                self.queued_bytes = self.queued_bytes.saturating_sub(held_bytes(&queued));
                let decoded = if queued.on_stream { self.take_decoded() } else { None };
                Ok(Some(Fetched { chunk: queued.chunk, decoded }))
            }
            Some(Item::End(result)) => result.map(|()| None),
            // `top_up` queues at least one item when the queue is empty.
            None => read_chunk(source, &options.chunks).map(|chunk| chunk.map(Fetched::serial)),
        }
    }

    /// The outcome of the oldest chunk on the stream (`None` if it was lost).
    fn take_decoded(&mut self) -> Option<Result<Decoded, Panicked>> {
        match self.stream.next()? {
            Ok(mut decoded) => decoded.pop().map(Ok),
            Err(panicked) => Some(Err(panicked)),
        }
    }

    /// Reads chunks until `parallelism + 1` of them are being decoded, or
    /// the reading has to stop (the end, damage, an I/O error), or a chunk
    /// with records is to be decoded by the caller (then reading ahead would
    /// only hold buffers: it resumes when a chunk goes to a worker again).
    fn top_up<R: Read>(&mut self, source: &mut Source<R>, options: &RecordReaderOptions) {
        // Non-data chunks (padding, unknown types) do not count against the
        // decoding window; this bounds how many of them wait in the queue.
        let max_queued = 4 * (self.parallelism + 1);
        // Hashes are checked after reading: by the worker that decodes the
        // chunk, or here if none does.
        let unchecked = ChunkReadOptions { verify_hashes: false, ..options.chunks.clone() };
        while self.on_stream <= self.parallelism
            && source.pos() < self.stop
            && self.queue.len() < max_queued
            && (self.queue.is_empty() || self.queued_bytes < MAX_AHEAD_BYTES)
            && !self.queue.back().is_some_and(|item| match item {
                Item::Chunk(queued) => holds_back(queued),
                Item::End(_) => true,
            })
        {
            let read = read_chunk(source, &unchecked).and_then(|chunk| match chunk {
                Some(chunk)
                    if worth_a_worker(&chunk, options.parallel_min_chunk_size, options.chunks.verify_hashes) =>
                {
                    self.stream.submit(smallvec::smallvec![Piece::Scanned(chunk.clone())]);
                    Ok(Some(Queued { chunk, on_stream: true }))
                }
                Some(mut chunk) => match verify_hash(&mut chunk, &options.chunks) {
                    Ok(()) => Ok(Some(Queued { chunk, on_stream: false })),
                    Err(damage) => Err(ReadError::Damage(damage)),
                },
                None => Ok(None),
            });
            match read {
                Ok(Some(queued)) => {
                    self.on_stream += usize::from(queued.on_stream);
                    self.queued_bytes = self.queued_bytes.saturating_add(held_bytes(&queued));
                    self.queue.push_back(Item::Chunk(queued));
                }
                Ok(None) => self.queue.push_back(Item::End(Ok(()))),
                Err(e) => self.queue.push_back(Item::End(Err(e))),
            }
        }
    }

    /// Forgets everything queued; chunks being decoded finish in the
    /// background and are dropped. The threads stay.
    pub(crate) fn discard(&mut self) {
        self.queue.clear();
        self.queued_bytes = 0;
        self.on_stream = 0;
        self.stream.abandon();
    }

    /// Decodes the transposed chunks handed to the workers from now on with
    /// `decode` (`None`: into records).
    pub(crate) fn set_chunk_decode(&mut self, decode: Option<ChunkDecodeFn>) {
        self.stream.set_chunk_decode(decode);
    }

    /// Decodes later chunks with `projection`. Chunks already handed to the
    /// workers are taken back: the caller decodes them.
    pub(crate) fn set_projection(&mut self, projection: FieldProjection) {
        self.stream.set_projection(projection);
        self.stream.abandon();
        for item in &mut self.queue {
            if let Item::Chunk(queued) = item {
                queued.on_stream = false;
            }
        }
        self.on_stream = 0;
        self.queued_bytes =
            self.queue.iter().map(|item| if let Item::Chunk(q) = item { held_bytes(q) } else { 0 }).sum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use riegeli_framing::ChunkHeader;

    use crate::{RecordWriter, RecordWriterOptions};

    use crate::stream::tests::plug;

    fn file() -> Vec<u8> {
        file_with("zstd:1,chunk_size:4k")
    }

    fn file_with(options: &str) -> Vec<u8> {
        let options: RecordWriterOptions = options.parse().unwrap();
        let mut writer = RecordWriter::new(Vec::new(), options).unwrap();
        for i in 0..2000u32 {
            writer.write_record(format!("record {i} ").repeat(5).as_bytes()).unwrap();
        }
        writer.close().unwrap()
    }

    #[test]
    fn dropping_joins_the_workers() {
        let file = file();
        let options = RecordReaderOptions { parallel_min_chunk_size: 0, ..Default::default() };
        let mut source = Source::new(&file[..], 0);
        let (plug, watch) = plug();
        let mut ahead = ReadAhead::with_plug(3, &options.chunks, FieldProjection::all(), plug);
        let mut decoded = 0;
        for _ in 0..4 {
            let fetched = ahead.fetch(&mut source, &options).unwrap().unwrap();
            decoded += usize::from(matches!(fetched.decoded, Some(Ok(Decoded { result: Ok(Some(_)), .. }))));
        }
        assert!(decoded > 0);
        assert!(ahead.on_stream > 0, "chunks in flight when the reader drops");
        assert!(watch.alive());
        // Dropped with jobs in flight: every worker has exited when drop returns.
        drop(ahead);
        assert!(!watch.alive(), "a decoder thread outlived its reader");
    }

    #[test]
    fn decoding_window_is_bounded() {
        let file = file();
        let options = RecordReaderOptions { parallel_min_chunk_size: 0, ..Default::default() };
        let mut source = Source::new(&file[..], 0);
        let mut ahead = ReadAhead::with_plug(2, &options.chunks, FieldProjection::all(), Plug::default());
        let mut fetched = 0;
        while let Some(chunk) = ahead.fetch(&mut source, &options).unwrap() {
            // With a decoded chunk handed out, `parallelism + 1` in all: one per
            // worker left on the stream, none read ahead beyond them.
            let bound = if chunk.decoded.is_some() { 2 } else { 3 };
            assert!(ahead.on_stream <= bound, "{ahead:?}");
            if chunk.chunk.header.num_records() > 0 {
                assert!(matches!(chunk.decoded, Some(Ok(Decoded { result: Ok(Some(_)), .. }))));
            }
            fetched += 1;
        }
        assert!(fetched > 10);
        assert!(ahead.queue.is_empty());
    }

    #[test]
    fn huge_chunks_are_read_ahead_one_at_a_time() {
        // 24 MiB records of zeros, one per chunk: a few KiB raw, 24 MiB decoded each.
        let options: RecordWriterOptions = "zstd:1".parse().unwrap();
        let mut writer = RecordWriter::new(Vec::new(), options).unwrap();
        let record = vec![0u8; 24 << 20];
        for _ in 0..6 {
            writer.write_record(&record).unwrap();
            writer.flush().unwrap();
        }
        let file = writer.close().unwrap();
        let options = RecordReaderOptions::default();
        let mut source = Source::new(&file[..], 0);
        let mut ahead = ReadAhead::with_plug(4, &options.chunks, FieldProjection::all(), Plug::default());
        let mut records = 0;
        while let Some(fetched) = ahead.fetch(&mut source, &options).unwrap() {
            // 64 MiB ahead at most: two such chunks being decoded, then the third waits.
            assert!(ahead.on_stream <= 3 && ahead.queued_bytes <= (64 << 20) + (24 << 20) + (1 << 20), "{ahead:?}");
            if let Some(decoded) = fetched.decoded {
                assert!(matches!(decoded, Ok(Decoded { result: Ok(Some(_)), .. })));
                records += 1;
            }
        }
        assert_eq!(records, 6);
    }

    #[test]
    fn chunks_under_the_size_limit_stay_on_the_calling_thread() {
        // 4 KiB zstd chunks: under the default 64 KiB limit, over a 1 KiB one.
        let file = file_with("zstd:1,chunk_size:4k");
        for (min, dispatched) in [(RecordReaderOptions::default().parallel_min_chunk_size, false), (1 << 10, true)] {
            let options = RecordReaderOptions { parallel_min_chunk_size: min, ..Default::default() };
            let mut source = Source::new(&file[..], 0);
            let mut ahead = ReadAhead::with_plug(2, &options.chunks, FieldProjection::all(), Plug::default());
            let mut handed_over = 0;
            while let Some(fetched) = ahead.fetch(&mut source, &options).unwrap() {
                handed_over += usize::from(fetched.decoded.is_some());
            }
            assert_eq!(handed_over > 0, dispatched, "limit {min}: {handed_over} chunks handed over");
            assert_eq!(ahead.stream.threads() > 0, dispatched, "limit {min}");
        }
    }

    #[test]
    fn uncompressed_simple_chunks_go_to_workers_only_for_their_hashes() {
        let file = file_with("uncompressed,chunk_size:4k");
        // Hashes checked: each data chunk goes to a worker, which checks its hash and splits it.
        let options = RecordReaderOptions { parallel_min_chunk_size: 0, ..Default::default() };
        let mut source = Source::new(&file[..], 0);
        let mut ahead = ReadAhead::with_plug(2, &options.chunks, FieldProjection::all(), Plug::default());
        let mut handed_over = 0;
        while let Some(fetched) = ahead.fetch(&mut source, &options).unwrap() {
            if fetched.chunk.header.num_records() > 0 {
                assert!(!fetched.chunk.hash_verified, "hashed on the reading thread");
                let decoded = fetched.decoded.expect("a data chunk decoded by the caller");
                assert!(matches!(decoded, Ok(Decoded { hash: Ok(()), result: Ok(Some(_)), .. })));
                handed_over += 1;
            } else {
                assert!(fetched.chunk.hash_verified, "a chunk without records left unchecked");
            }
        }
        assert!(handed_over > 10);

        // Hashes not checked: splitting alone stays with the caller.
        let mut options = options;
        options.chunks.verify_hashes = false;
        let mut source = Source::new(&file[..], 0);
        let mut ahead = ReadAhead::with_plug(2, &options.chunks, FieldProjection::all(), Plug::default());
        let mut with_records = 0;
        while let Some(fetched) = ahead.fetch(&mut source, &options).unwrap() {
            assert!(fetched.decoded.is_none());
            if fetched.chunk.header.num_records() > 0 {
                with_records += 1;
                // Nothing is read past a chunk the caller decodes.
                assert!(ahead.queue.is_empty(), "{ahead:?}");
                assert_eq!(source.pos(), fetched.chunk.end);
            }
        }
        assert!(with_records > 10);
        assert_eq!(ahead.stream.threads(), 0, "threads started for nothing");
    }

    #[test]
    fn a_panicking_decoder_is_reported_and_the_worker_goes_on() {
        /// Decoding a chunk header saying this size panics (a size no chunk of the file has).
        const PANIC_ON_DECODED_SIZE: u64 = 0xdead_beef;
        let file = file();
        let options = RecordReaderOptions { parallel_min_chunk_size: 0, ..Default::default() };
        let mut source = Source::new(&file[..], 0);
        let (plug, watch) = plug();
        watch.panic_on(Some(PANIC_ON_DECODED_SIZE));
        let mut ahead = ReadAhead::with_plug(1, &options.chunks, FieldProjection::all(), plug);
        let chunk = loop {
            let fetched = ahead.fetch(&mut source, &options).unwrap().unwrap();
            if fetched.decoded.is_some() {
                break fetched.chunk;
            }
        };
        ahead.discard();
        let h = chunk.header;
        let mut poisoned = chunk.clone();
        poisoned.header =
            ChunkHeader::new(h.chunk_type(), h.data_size(), h.data_hash(), h.num_records(), PANIC_ON_DECODED_SIZE)
                .unwrap();
        let stream = &mut ahead.stream;
        stream.submit(smallvec::smallvec![Piece::Scanned(poisoned)]);
        stream.submit(smallvec::smallvec![Piece::Scanned(chunk)]);
        assert!(matches!(stream.next(), Some(Err(Panicked))));
        let good = stream.next().unwrap().unwrap();
        assert!(matches!(good.as_slice(), [Decoded { hash: Ok(()), result: Ok(Some(_)), .. }]));
        assert!(stream.next().is_none());
    }
}
