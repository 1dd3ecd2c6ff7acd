//! `RecordReader`: sequential and random-access reading of records.

use std::cmp::Ordering;
use std::io::{Read, Seek};

use bytes::Bytes;
use riegeli_codec::{ChunkType, DecodedRecords, FieldProjection};
use riegeli_framing::{BLOCK_HEADER_SIZE, BLOCK_SIZE, BlockHeader, block_begin, parse_chunk_header};

use crate::chunk_reader::{Chunk, Damage, Pending, RawChunk, ReadError, Resume};
use crate::chunk_stream::ChunkStream;
use crate::decode::{ChunkDecoder, check_signature, parse_metadata};
use crate::error::{Corruption, Error, ErrorKind, Result};
use crate::hints::ReadHints;
use crate::metadata::RecordsMetadata;
use crate::options::RecordReaderOptions;
use crate::position::RecordPosition;
use crate::read_ahead::Fetched;
use crate::skipped_region::SkippedRegion;
use crate::source::Source;
use crate::stream::{ChunkDecodeFn, Made};
use crate::trailer::{Disposition, TrailerDetector};

/// The recovery callback: called with each skipped region; returns whether to keep reading.
type RecoveryFn = Box<dyn FnMut(&SkippedRegion) -> bool + Send>;

/// The caller's decoder of transposed chunks (see
/// [`RecordReader::decode_next_chunk_with`]): whether it took the chunk.
type DirectFn<'a> = dyn FnMut(&RawChunk, &RecordReaderOptions, Option<Made>) -> bool + 'a;

#[derive(Debug, Clone)]
enum MetadataState {
    /// No chunk after the signature has been read yet.
    Unknown,
    /// The file has no metadata chunk.
    Absent,
    /// The metadata chunk.
    Present(RawChunk),
}

/// Which chunk [`RecordReader::locate_chunk`] looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    /// The first chunk holding the record with this numeric position, or beginning after it.
    Containing,
    /// The chunk whose bytes include this position.
    Before,
    /// The first chunk beginning at or after this position.
    AtOrAfter,
}

/// Reads records from a Riegeli/records file.
///
/// With `R: Read` it reads sequentially from any byte stream (a file, stdin,
/// memory); with `R: Read + Seek` it can also [`seek`](Self::seek) to record
/// positions, [`seek_back`](Self::seek_back) and [`search`](Self::search).
///
/// Records are returned as [`Bytes`] slices of the decoded chunk, without
/// copying. Memory use is bounded by about one chunk plus a 64 KiB read-ahead
/// (the reader may read up to 64 KiB past the chunk it needs), and the raw
/// buffers the reader keeps for reuse once records no longer hold them: as
/// many as were in use at once, at most 8 and 32 MiB.
///
/// With [`RecordReaderOptions::parallelism`] `n` above 0, chunks are
/// decoded ahead on `n` background threads while the caller consumes records:
/// the reader reads raw chunks (framing, hashes) on the calling thread, keeps
/// up to `n + 1` of them being decoded, and returns records strictly in file
/// order. Records, positions, errors and recovery are exactly those of serial
/// reading; reading ahead stops at damage, and seeking discards what was read
/// ahead. Memory use grows to about `n + 2` decoded and `n + 1` raw chunks.
/// The threads are started by the first chunk they can decode and joined
/// when the reader is dropped; should a decoder panic on a thread (a bug),
/// the read returns an [`ErrorKind::Internal`] error (not corruption:
/// recovery does not skip it), and the next read decodes that chunk again on
/// the calling thread.
///
/// Damaged regions are reported as errors. With
/// [`set_recovery`](Self::set_recovery) they are skipped instead and reported
/// to a callback; after an error, [`recover`](Self::recover) skips the damage
/// and continues. The loss is what the format promises and no more: a chunk
/// whose data hash fails loses that chunk only; a damaged chunk header loses
/// data up to the chunk the next valid block header points to; a truncated
/// file yields every complete chunk.
///
/// ```
/// use riegeli_records::{CompressorOptions, RecordReader, RecordWriter, RecordWriterOptions};
///
/// let mut writer = RecordWriter::new(Vec::new(), RecordWriterOptions { compression: CompressorOptions::uncompressed(), ..Default::default() })?;
/// writer.write_record(b"hello")?;
/// writer.write_record(b"world")?;
/// let file = writer.close()?;
///
/// let mut reader = RecordReader::new(std::io::Cursor::new(file));
/// assert_eq!(reader.read_record()?.as_deref(), Some(&b"hello"[..]));
/// let second = reader.pos();
/// assert_eq!(reader.read_record()?.as_deref(), Some(&b"world"[..]));
/// assert_eq!(reader.read_record()?, None);
/// reader.seek(second)?;
/// assert_eq!(reader.read_record()?.as_deref(), Some(&b"world"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RecordReader<R> {
    /// The file's chunks in order (read ahead and decoded on threads with
    /// `parallelism > 0`), and the options.
    chunks: ChunkStream<R>,
    records: DecodedRecords,
    /// Where the chunk of `records` begins (meaningful when `records` is non-empty).
    chunk_begin: u64,
    index: usize,
    metadata: MetadataState,
    /// A chunk read ahead (by `read_serialized_metadata`, or while checking
    /// for an ArrayRecord trailer) that holds records.
    peeked: Option<Fetched>,
    /// Damage met while reading ahead for an ArrayRecord trailer, reported
    /// when reading reaches it.
    peeked_damage: Option<Damage>,
    recovery: Option<RecoveryFn>,
    /// Damage reported as an error, for `recover()`.
    pending: Option<Pending>,
    /// Recognises an ArrayRecord footer and postscript, to skip them.
    trailer: TrailerDetector,
    last_pos: Option<RecordPosition>,
    /// Reading ends before the first chunk beginning at or after this
    /// (see [`set_byte_range`](Self::set_byte_range)).
    range_end: u64,
    /// Where an ArrayRecord footer begins that was skipped at the end of the
    /// file, no postscript following it.
    footer_without_postscript: Option<u64>,
}

impl<R> std::fmt::Debug for RecordReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordReader")
            .field("pos", &self.chunks.pos())
            .field("chunk_begin", &self.chunk_begin)
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl<R: Read> RecordReader<R> {
    /// A reader of the file whose bytes `src` yields from the beginning, with default options.
    pub fn new(src: R) -> Self {
        Self::with_options(src, RecordReaderOptions::default())
    }

    /// A reader with the given options.
    pub fn with_options(src: R, options: RecordReaderOptions) -> Self {
        Self::at_position(src, 0, options)
    }

    /// A reader of a stream that starts at file position `pos` (which must be a
    /// chunk boundary, e.g. from an earlier [`pos`](Self::pos)`.chunk_begin()`).
    pub fn at_position(src: R, pos: u64, options: RecordReaderOptions) -> Self {
        Self {
            chunks: ChunkStream::new(Source::new(src, pos), options),
            records: DecodedRecords::default(),
            chunk_begin: pos,
            index: 0,
            metadata: if pos == 0 { MetadataState::Unknown } else { MetadataState::Absent },
            peeked: None,
            peeked_damage: None,
            recovery: None,
            pending: None,
            trailer: TrailerDetector::default(),
            last_pos: None,
            range_end: u64::MAX,
            footer_without_postscript: None,
        }
    }

    /// Skips damaged regions instead of failing, calling `callback` with each;
    /// the callback returns `false` to stop reading (the read then returns the error).
    pub fn set_recovery(&mut self, callback: impl FnMut(&SkippedRegion) -> bool + Send + 'static) {
        self.recovery = Some(Box::new(callback));
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        self.chunks.source().get_ref()
    }

    /// Gives the transposed chunks read ahead from now on to `decode` on the
    /// decoding threads, in place of decoding their records there, for
    /// [`decode_next_chunk_with`](Self::decode_next_chunk_with) to take what
    /// it made; `None` stops that. A reader that reads nothing ahead
    /// ([`RecordReaderOptions::parallelism`] 0) starts reading ahead on
    /// `parallelism` threads if that is above 0 (and then keeps them).
    /// Records read with [`read_record`](Self::read_record) from a chunk that
    /// `decode` took are decoded on the calling thread.
    pub fn set_chunk_decode(&mut self, decode: Option<ChunkDecodeFn>, parallelism: usize) {
        self.chunks.set_chunk_decode(decode, parallelism);
    }

    /// Reads the next record, or `None` at the end of the file.
    pub fn read_record(&mut self) -> Result<Option<Bytes>> {
        loop {
            if let Some(record) = self.records.get(self.index) {
                self.last_pos = RecordPosition::new(self.chunk_begin, self.index as u64);
                self.index += 1;
                return Ok(Some(record));
            }
            if !self.advance_chunk(None)? {
                self.last_pos = None;
                return Ok(None);
            }
        }
    }

    /// Reads the next chunk with records and offers it to `decode` first,
    /// for a caller that decodes transposed chunks itself (into columns, say)
    /// rather than into serialized records. Returns the number of records
    /// left to [`read_record`](Self::read_record) in the current chunk, or
    /// `None` at the end of the file.
    ///
    /// If records of the current chunk are left, nothing is read: their
    /// number is returned. Otherwise the next chunk with records is read as
    /// `read_record` reads it; a transposed chunk whose data hash holds (if
    /// hashes are verified) goes to `decode` with the reader's options (the
    /// decode limits and the field projection to apply). If `decode` returns
    /// `true` it took the chunk: the reader moves past it (its records
    /// counting as read, [`last_pos`](Self::last_pos) the last one's) and
    /// returns `Some(0)`. If it returns `false` (a damaged chunk, or one it
    /// does not handle) the chunk is decoded as usual, into the records
    /// counted: damage is then an error, or skipped and reported under
    /// [`set_recovery`](Self::set_recovery), exactly as for `read_record`.
    /// Other chunks never go to `decode`.
    ///
    /// With a function set by [`set_chunk_decode`](Self::set_chunk_decode),
    /// transposed chunks read ahead are given to it on the decoding threads
    /// instead of being decoded into records, and what it made comes to
    /// `decode` as its third argument (`None` for a chunk it was not given,
    /// or did not take: `decode` then makes what it needs itself).
    ///
    /// With [`RecordReaderOptions::parallelism`] above 0, chunks are still
    /// decoded ahead on the threads, whether `decode` takes them or not.
    ///
    /// ```
    /// use riegeli_records::{RecordReader, RecordWriter};
    ///
    /// let mut writer = RecordWriter::new(Vec::new(), "transpose".parse()?)?;
    /// writer.write_record(&[0x08, 0x01])?;
    /// let file = writer.close()?;
    /// let mut reader = RecordReader::new(std::io::Cursor::new(file));
    /// let mut taken = 0;
    /// let left = reader.decode_next_chunk_with(|chunk, _options, _made| {
    ///     taken += chunk.header.num_records();
    ///     true
    /// })?;
    /// assert_eq!((left, taken), (Some(0), 1));
    /// assert_eq!(reader.decode_next_chunk_with(|_, _, _| true)?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn decode_next_chunk_with(
        &mut self,
        mut decode: impl FnMut(&Chunk, &RecordReaderOptions, Option<Made>) -> bool,
    ) -> Result<Option<usize>> {
        if self.index < self.records.len() {
            return Ok(Some(self.records.len() - self.index));
        }
        if !self.advance_chunk(Some(&mut decode))? {
            self.last_pos = None;
            return Ok(None);
        }
        Ok(Some(self.records.len() - self.index))
    }

    /// Reads the next record, borrowed from the reader until the next call
    /// (C++'s `ReadRecord(absl::string_view&)`), or `None` at the end of the
    /// file: [`read_record`](Self::read_record) without the reference count
    /// that a `Bytes` takes and drops, the cost of a record when records are
    /// small.
    pub fn read_record_ref(&mut self) -> Result<Option<&[u8]>> {
        while self.index >= self.records.len() {
            if !self.advance_chunk(None)? {
                self.last_pos = None;
                return Ok(None);
            }
        }
        let index = self.index;
        self.last_pos = RecordPosition::new(self.chunk_begin, index as u64);
        self.index += 1;
        Ok(self.records.get_slice(index))
    }

    /// The position of the next record (or of the end of the file).
    pub fn pos(&self) -> RecordPosition {
        if self.index < self.records.len() {
            return RecordPosition::new(self.chunk_begin, self.index as u64).unwrap_or_default();
        }
        RecordPosition::new(self.next_chunk_pos(), 0).unwrap_or_default()
    }

    /// Where the next chunk not yet interpreted begins.
    fn next_chunk_pos(&self) -> u64 {
        match (&self.peeked, &self.peeked_damage) {
            (Some(fetched), _) => fetched.chunk.begin,
            (None, Some(damage)) => damage.begin,
            (None, None) => self.chunks.pos(),
        }
    }

    /// Reads the next chunk.
    fn fetch(&mut self) -> std::result::Result<Option<Fetched>, ReadError> {
        self.chunks.next()
    }

    /// The position of the record last read, until the next seek.
    pub fn last_pos(&self) -> Option<RecordPosition> {
        self.last_pos
    }

    /// Where an ArrayRecord footer begins that reading skipped at the end of
    /// the file with no postscript after it: the file is an ArrayRecord file
    /// cut short after its footer (its last 64 KiB, the postscript, lost), which
    /// array_record's reader refuses. Known once reading has reached the end;
    /// `None` for other files, and with
    /// [`read_array_record_trailer`](crate::RecordReaderOptions::read_array_record_trailer)
    /// (the footer's records are then read as records).
    pub fn footer_without_postscript(&self) -> Option<u64> {
        self.footer_without_postscript
    }

    /// Checks that the file begins like a Riegeli/records file (valid file
    /// signature). Reads the first chunk if nothing has been read yet.
    pub fn check_file_format(&mut self) -> Result<()> {
        if self.next_chunk_pos() == 0 && self.peeked.is_none() && self.records.is_empty() {
            match self.fetch() {
                Ok(Some(Fetched { chunk, .. })) => {
                    check_signature(&chunk)?;
                    self.chunk_begin = chunk.end;
                }
                Ok(None) => return Err(Error::corrupt(0, Corruption::MissingSignature)),
                Err(ReadError::Io(e)) => return Err(e),
                Err(ReadError::Damage(d)) => return Err(d.error),
            }
        }
        Ok(())
    }

    /// Reads the file metadata, if the file has a metadata chunk.
    ///
    /// Best called before reading records; afterwards it returns the metadata
    /// if the metadata chunk has been passed.
    pub fn read_metadata(&mut self) -> Result<Option<RecordsMetadata>> {
        let Some(serialized) = self.read_serialized_metadata()? else { return Ok(None) };
        let pos = match &self.metadata {
            MetadataState::Present(chunk) => chunk.begin,
            _ => 0,
        };
        parse_metadata(serialized, pos).map(Some)
    }

    /// Reads the file metadata in serialized form (a `RecordsMetadata` message,
    /// extensions included), if the file has a metadata chunk.
    pub fn read_serialized_metadata(&mut self) -> Result<Option<Bytes>> {
        while matches!(self.metadata, MetadataState::Unknown) && self.records.len() == self.index {
            if self.peeked.is_some() {
                self.metadata = MetadataState::Absent;
                break;
            }
            let fetched = match self.fetch() {
                Ok(Some(fetched)) => fetched,
                Ok(None) => {
                    self.metadata = MetadataState::Absent;
                    break;
                }
                Err(ReadError::Io(e)) => return Err(e),
                Err(ReadError::Damage(d)) => {
                    let (error, pending) = d.into_pending();
                    self.pending = Some(pending);
                    return Err(error);
                }
            };
            match ChunkType::from_byte(fetched.chunk.header.chunk_type()) {
                Some(ChunkType::FileSignature | ChunkType::FileMetadata) => {
                    let begin = fetched.chunk.begin;
                    if let Err(failure) = self.install(fetched, None) {
                        self.handle_failure(failure)?;
                    }
                    self.chunk_begin = begin;
                }
                _ => {
                    self.metadata = MetadataState::Absent;
                    self.peeked = Some(fetched);
                }
            }
        }
        match &self.metadata {
            MetadataState::Present(chunk) => self.chunks.metadata(chunk).map(Some),
            _ => Ok(None),
        }
    }

    /// Skips the damage that the last error reported and returns the skipped
    /// region, or `None` if there is nothing to recover from.
    pub fn recover(&mut self) -> Result<Option<SkippedRegion>> {
        match self.pending.take() {
            Some(pending) => self.skip(pending).map(Some),
            None => Ok(None),
        }
    }

    /// Loads the next chunk with records, or has `direct` take it (see
    /// [`decode_next_chunk_with`](Self::decode_next_chunk_with)). Returns
    /// `false` at the end of the file.
    fn advance_chunk(&mut self, mut direct: Option<&mut DirectFn<'_>>) -> Result<bool> {
        loop {
            // Let go of the records read (their buffers go back to their
            // decoder, to decode the next chunk into) before reading on.
            self.records = DecodedRecords::default();
            self.index = 0;
            if let Some(damage) = self.peeked_damage.take() {
                if damage.begin >= self.range_end {
                    self.peeked_damage = Some(damage);
                    return Ok(false);
                }
                self.handle_damage(damage)?;
                continue;
            }
            if self.peeked.is_none() && self.next_chunk_pos() >= self.range_end {
                // The next range's first chunk: not even read (reading stays at the end).
                self.chunk_begin = self.next_chunk_pos();
                return Ok(false);
            }
            let fetched = match self.peeked.take() {
                Some(fetched) => fetched,
                None => match self.fetch() {
                    Ok(Some(fetched)) => fetched,
                    Ok(None) => {
                        self.chunk_begin = self.chunks.pos();
                        return Ok(false);
                    }
                    Err(ReadError::Io(e)) => return Err(e),
                    Err(ReadError::Damage(damage)) => {
                        self.peeked_damage = Some(damage);
                        continue;
                    }
                },
            };
            if fetched.chunk.begin >= self.range_end {
                // The next range's first chunk: kept, so that reading stays at the end.
                self.chunk_begin = fetched.chunk.begin;
                self.peeked = Some(fetched);
                return Ok(false);
            }
            self.chunk_begin = fetched.chunk.begin;
            let header = fetched.chunk.header;
            match self.install(fetched, direct.as_deref_mut()) {
                Ok(true) => {
                    // Taken by `direct`: a transposed chunk, which the
                    // trailer detector keeps (and which ends a held chunk).
                    let _ = self.trailer.feed(
                        self.chunk_begin,
                        &header,
                        || None::<DecodedRecords>,
                        || None::<DecodedRecords>,
                    );
                    self.last_pos = RecordPosition::new(self.chunk_begin, header.num_records().saturating_sub(1));
                    return Ok(true);
                }
                Ok(false) if !self.records.is_empty() => {
                    if self.keeps_records(&header)? {
                        return Ok(true);
                    }
                    self.drop_records();
                }
                Ok(false) => {}
                Err(failure) => self.handle_failure(failure)?,
            }
        }
    }

    /// Whether the records just installed from the chunk at `chunk_begin` are
    /// records, rather than an ArrayRecord footer or postscript to skip. A
    /// possible footer is decided by the data chunk after it, read ahead.
    fn keeps_records(&mut self, header: &riegeli_framing::ChunkHeader) -> Result<bool> {
        if self.chunks.options().read_array_record_trailer {
            return Ok(true);
        }
        let records = &self.records;
        let step = self.trailer.feed(self.chunk_begin, header, || Some(records), || None::<DecodedRecords>);
        match step.this {
            Disposition::Keep => Ok(true),
            Disposition::Drop => Ok(false),
            Disposition::Hold => Ok(!self.postscript_follows()?),
        }
    }

    /// Forgets the records of the current chunk (an ArrayRecord trailer).
    fn drop_records(&mut self) {
        self.records = DecodedRecords::default();
        self.index = 0;
    }

    /// After a chunk that looks like an ArrayRecord footer: reads ahead to
    /// the next data chunk and tells whether it is the postscript naming that
    /// footer (both are then dropped). If it is not, it is kept for the next
    /// read, as is damage met on the way; at the end of the file the footer
    /// (its postscript lost) is dropped.
    fn postscript_follows(&mut self) -> Result<bool> {
        let footer = self.chunk_begin;
        loop {
            let fetched = match self.fetch() {
                Ok(Some(fetched)) => fetched,
                Ok(None) => {
                    let dropped = self.trailer.finish(|| None::<DecodedRecords>);
                    if dropped {
                        self.footer_without_postscript = Some(footer);
                    }
                    return Ok(dropped);
                }
                Err(ReadError::Io(e)) => {
                    self.trailer.interrupt();
                    return Err(e);
                }
                Err(ReadError::Damage(damage)) => {
                    // Damage to the end of the file ends it after the footer.
                    let dropped = damage.resume == Resume::Eof && self.trailer.finish(|| None::<DecodedRecords>);
                    if dropped {
                        self.footer_without_postscript = Some(footer);
                    }
                    self.trailer.interrupt();
                    self.peeked_damage = Some(damage);
                    return Ok(dropped);
                }
            };
            let chunk = &fetched.chunk;
            if !chunk.holds_records() {
                if matches!(chunk.chunk_type(), Some(ChunkType::Padding) | None) {
                    continue;
                }
                self.trailer.interrupt();
                self.peeked = Some(fetched);
                return Ok(false);
            }
            // Decoded here even if a worker decodes it too: this is rare (a
            // chunk that looks like a footer) and the chunk is small if it is
            // a postscript.
            let options = &self.chunks.options().chunks;
            let decode = || ChunkDecoder::new(options).checked_decode(chunk, options.verify_hashes).ok().flatten();
            let step = self.trailer.feed(chunk.begin, &chunk.header, decode, || None::<DecodedRecords>);
            if !step.release_held {
                return Ok(true);
            }
            // Not the postscript: the chunk is read again in its turn.
            self.trailer.interrupt();
            self.peeked = Some(fetched);
            return Ok(false);
        }
    }

    /// Interprets a chunk: records, metadata, signature or padding; a
    /// transposed chunk with records goes to `direct` first, if given, once
    /// its data hash is known to hold. Returns whether `direct` took it.
    fn install(&mut self, fetched: Fetched, direct: Option<&mut DirectFn<'_>>) -> std::result::Result<bool, Failure> {
        let Fetched { mut chunk, mut decoded } = fetched;
        let damage = |error: Error, chunk: &RawChunk| {
            Failure::Damage(Damage { error, begin: chunk.begin, resume: Resume::At(chunk.end) })
        };
        if chunk.begin == 0 {
            return check_signature(&chunk).map(|()| false).map_err(|error| damage(error, &chunk));
        }
        match chunk.chunk_type() {
            Some(ChunkType::FileMetadata) => {
                if matches!(self.metadata, MetadataState::Unknown) {
                    self.metadata = MetadataState::Present(chunk);
                }
                return Ok(false);
            }
            Some(ChunkType::FileSignature | ChunkType::Padding) => return Ok(false),
            _ => {}
        }
        if matches!(self.metadata, MetadataState::Unknown) {
            self.metadata = MetadataState::Absent;
        }
        // Made of the chunk on a decoding thread, in place of its records.
        let made = match &mut decoded {
            Some(Ok(decoded)) => decoded.made.take(),
            _ => None,
        };
        let records_decoded = made.is_none();
        if let Some(direct) = direct
            && chunk.is_transposed_data()
        {
            // Only a chunk whose hash holds: damage takes the usual way below.
            let hash_holds = match &decoded {
                Some(Ok(decoded)) => decoded.hash.is_ok(),
                Some(Err(_)) => false,
                None if chunk.hash_verified || !self.chunks.options().chunks.verify_hashes => true,
                None => {
                    let holds = riegeli_framing::verify_data_hash(&chunk.header, chunk.begin, &chunk.data).is_ok();
                    chunk.hash_verified = holds;
                    holds
                }
            };
            if hash_holds && direct(&chunk, self.chunks.options(), made) {
                return Ok(true);
            }
        }
        let decoded = match decoded {
            // Not taken after all: its records are decoded here.
            Some(Ok(decoded)) if !records_decoded => {
                decoded.hash.map_err(Failure::Damage)?;
                self.chunks.decode(&chunk)
            }
            Some(Ok(decoded)) => {
                decoded.hash.map_err(Failure::Damage)?;
                decoded.result
            }
            Some(Err(_)) => return Err(Failure::Panicked(Box::new(Fetched::serial(chunk)))),
            None => self.chunks.decode(&chunk),
        };
        match decoded {
            Ok(Some(records)) => {
                self.records = records;
                Ok(false)
            }
            Ok(None) if chunk.header.num_records() == 0 => Ok(false),
            Ok(None) => {
                let chunk_type = chunk.header.chunk_type();
                Err(damage(Error::corrupt(chunk.begin, Corruption::UnknownChunkType { chunk_type }), &chunk))
            }
            Err(e) => Err(damage(e, &chunk)),
        }
    }

    /// Handles a chunk [`install`](Self::install) could not interpret:
    /// damage goes to [`handle_damage`](Self::handle_damage); a chunk whose
    /// decoding thread panicked is kept to be decoded here by the next read,
    /// and the read fails with an internal error.
    fn handle_failure(&mut self, failure: Failure) -> Result<()> {
        match failure {
            Failure::Damage(damage) => self.handle_damage(damage),
            Failure::Panicked(chunk) => {
                self.peeked = Some(*chunk);
                Err(Error::internal("a chunk decoding thread panicked; the next read decodes the chunk again"))
            }
        }
    }

    /// Skips damage through the recovery callback, or records it for `recover()` and fails.
    fn handle_damage(&mut self, damage: Damage) -> Result<()> {
        self.trailer.interrupt();
        let (error, pending) = damage.into_pending();
        if self.recovery.is_none() {
            self.pending = Some(pending);
            return Err(error);
        }
        let region = self.skip(pending)?;
        let keep_going = self.recovery.as_mut().is_none_or(|callback| callback(&region));
        if keep_going { Ok(()) } else { Err(error) }
    }

    /// Moves past damage; returns the region skipped.
    fn skip(&mut self, pending: Pending) -> Result<SkippedRegion> {
        self.records = DecodedRecords::default();
        self.index = 0;
        self.peeked = None;
        self.peeked_damage = None;
        let region = self.chunks.skip(pending)?;
        self.chunk_begin = region.end;
        Ok(region)
    }
}

/// Why [`RecordReader::install`] could not interpret a chunk.
enum Failure {
    /// The chunk is damaged.
    Damage(Damage),
    /// Its decoding thread panicked (a bug): the chunk, to decode again here.
    Panicked(Box<Fetched>),
}

impl<R: Read + Seek> RecordReader<R> {
    /// The size of the file in bytes.
    pub fn size(&mut self) -> Result<u64> {
        Ok(self.chunks.size()?)
    }

    /// Fails if file position `pos` is past the end of the file (C++ `Seek` fails there,
    /// with this message); the size is asked only if `pos` is past the bytes buffered.
    fn check_within_file(&mut self, pos: u64) -> Result<()> {
        let source = self.chunks.source();
        if pos <= source.pos().saturating_add(source.buffered().len() as u64) {
            return Ok(());
        }
        let size = self.size()?;
        if pos > size {
            let message = format!("Position {pos} exceeds file size: {size}");
            return Err(Error::new(ErrorKind::InvalidArgument(message)));
        }
        Ok(())
    }

    /// Moves to chunk boundary `pos` without reading.
    fn jump_to(&mut self, pos: u64) -> Result<()> {
        self.records = DecodedRecords::default();
        self.index = 0;
        self.peeked = None;
        self.peeked_damage = None;
        self.pending = None;
        self.trailer = TrailerDetector::default();
        self.chunk_begin = pos;
        self.chunks.seek(pos)?;
        if pos > 0 && matches!(self.metadata, MetadataState::Unknown) {
            self.metadata = MetadataState::Absent;
        }
        Ok(())
    }

    /// Reads only the given fields of transposed chunks (other chunks are read
    /// whole) from the next record on, as
    /// [`RecordReaderOptions::field_projection`] does from the start: if the
    /// current chunk has records left, it is read and decoded again.
    pub fn set_field_projection(&mut self, projection: FieldProjection) -> Result<()> {
        // Chunks already handed to the workers are decoded again, here.
        if let Some(peeked) = &mut self.peeked {
            peeked.decoded = None;
        }
        self.chunks.set_projection(projection);
        if self.index >= self.records.len() {
            return Ok(());
        }
        let (begin, index) = (self.chunk_begin, self.index);
        self.jump_to(begin)?;
        if self.advance_chunk(None)? && self.chunk_begin == begin {
            self.index = index.min(self.records.len());
        }
        Ok(())
    }

    /// Restricts reading to the records of the chunks that begin in `range`
    /// (byte offsets of the file), and moves to the first of them: the first
    /// chunk boundary at or after `range.start` is found from the block header
    /// of its 64 KiB block (and the chunk headers from there), without reading
    /// the file from its beginning; reading ends before the first chunk that
    /// begins at or after `range.end`.
    ///
    /// So the ranges of any partition of `0..file size` read every record of
    /// the file exactly once between them (an ArrayRecord trailer is still
    /// recognised where it straddles two ranges), which is how a file is split
    /// among workers (see [`byte_ranges`](crate::byte_ranges)). Positions are
    /// those of the whole file; seeking stays possible, and reading still
    /// stops at `range.end`.
    ///
    /// ```
    /// # use std::io::Cursor;
    /// # use riegeli_records::{RecordReader, RecordWriter, byte_ranges};
    /// let mut writer = RecordWriter::new(Vec::new(), "uncompressed,chunk_size:1k".parse()?)?;
    /// for i in 0..1000 {
    ///     writer.write_record(format!("record {i}").as_bytes())?;
    /// }
    /// let file = writer.close()?;
    /// let mut all = Vec::new();
    /// for range in byte_ranges(file.len() as u64, 4096) {
    ///     let mut reader = RecordReader::new(Cursor::new(&file));
    ///     reader.set_byte_range(range)?;
    ///     while let Some(record) = reader.read_record()? {
    ///         all.push(record);
    ///     }
    /// }
    /// assert_eq!(all.len(), 1000);
    /// assert_eq!(all[999], &b"record 999"[..]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// The source is told so ([`ReadHints`]): that reading stops about
    /// `range.end` before the first chunk is looked for, then that the bytes
    /// from that chunk (past what the reader holds of them) to `range.end`
    /// are read in order. A source that fetches
    /// ahead (an object in object storage) fetches them, and nothing past them.
    pub fn set_byte_range(&mut self, range: std::ops::Range<u64>) -> Result<()>
    where
        R: ReadHints,
    {
        self.chunks.source().get_ref().will_stop_at(range.end);
        let first = self.locate_chunk(range.start, Which::AtOrAfter)?;
        self.jump_to(first)?;
        self.last_pos = None;
        self.range_end = range.end;
        self.chunks.stop_at(range.end);
        // The source is read next past what the reader holds of it (the block where the
        // first chunk was looked for).
        let source = self.chunks.source();
        let next = source.pos().saturating_add(source.buffered().len() as u64);
        source.get_ref().will_read(next..range.end.max(next));
        Ok(())
    }

    /// Seeks to a record position obtained from [`pos`](Self::pos) or
    /// [`last_pos`](Self::last_pos) for the same file. A chunk beginning past the end of the
    /// file is an [`ErrorKind::InvalidArgument`] error
    /// (C++'s message: `Position P exceeds file size: S`).
    pub fn seek(&mut self, pos: RecordPosition) -> Result<()> {
        self.last_pos = None;
        if !self.records.is_empty() && pos.chunk_begin() == self.chunk_begin {
            self.index = usize::try_from(pos.record_index()).unwrap_or(usize::MAX).min(self.records.len());
            return Ok(());
        }
        self.check_within_file(pos.chunk_begin())?;
        self.jump_to(pos.chunk_begin())?;
        if pos.record_index() == 0 {
            return Ok(());
        }
        let begin = pos.chunk_begin();
        if self.advance_chunk(None)? && self.chunk_begin == begin {
            self.index = usize::try_from(pos.record_index()).unwrap_or(usize::MAX).min(self.records.len());
        }
        Ok(())
    }

    /// Seeks to the record with numeric position `pos` (`chunk_begin + record_index`),
    /// or the next record if `pos` falls between records. Any `pos` from 0 to the
    /// file size is allowed; a larger one is an
    /// [`ErrorKind::InvalidArgument`] error, as in C++.
    pub fn seek_numeric(&mut self, pos: u64) -> Result<()> {
        self.last_pos = None;
        if !self.records.is_empty() && pos >= self.chunk_begin && pos < self.next_chunk_pos() {
            self.index = usize::try_from(pos - self.chunk_begin).unwrap_or(usize::MAX).min(self.records.len());
            return Ok(());
        }
        self.check_within_file(pos)?;
        let chunk = self.locate_chunk(pos, Which::Containing)?;
        self.jump_to(chunk)?;
        if chunk >= pos {
            return Ok(());
        }
        if self.advance_chunk(None)? && self.chunk_begin == chunk {
            self.index = usize::try_from(pos - chunk).unwrap_or(usize::MAX).min(self.records.len());
        }
        Ok(())
    }

    /// Moves back to the previous record, so that the next read returns it
    /// again. Returns `false` if there is no previous record.
    pub fn seek_back(&mut self) -> Result<bool> {
        self.last_pos = None;
        if self.index > 0 && !self.records.is_empty() {
            self.index -= 1;
            return Ok(true);
        }
        let mut pos = self.pos().chunk_begin();
        while pos > 0 {
            let chunk = self.locate_chunk(pos - 1, Which::Before)?;
            self.jump_to(chunk)?;
            if self.load_chunk_here()? {
                self.index = self.records.len() - 1;
                return Ok(true);
            }
            pos = chunk;
        }
        self.jump_to(0)?;
        Ok(false)
    }

    /// Loads the chunk at the current position; `true` if it has records.
    fn load_chunk_here(&mut self) -> Result<bool> {
        let begin = self.chunks.pos();
        let chunk = match self.chunks.read_here() {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return Ok(false),
            Err(ReadError::Io(e)) => return Err(e),
            Err(ReadError::Damage(damage)) => {
                self.handle_damage(damage)?;
                return Ok(false);
            }
        };
        let (header, end) = (chunk.header, chunk.end);
        if let Err(failure) = self.install(Fetched::serial(chunk), None) {
            self.handle_failure(failure)?;
            return Ok(false);
        }
        self.chunk_begin = begin;
        if self.records.is_empty() {
            return Ok(false);
        }
        // Judged on its own: a postscript naming an earlier chunk is dropped,
        // a possible footer is judged by the chunk after it.
        self.trailer = TrailerDetector::default();
        let keep = self.keeps_records(&header);
        if self.peeked.is_some() || self.peeked_damage.is_some() || self.chunks.pos() != end {
            // Back to the end of this chunk, whatever was read ahead.
            self.peeked = None;
            self.peeked_damage = None;
            self.chunks.seek(end)?;
        }
        if !keep? {
            self.drop_records();
            return Ok(false);
        }
        Ok(true)
    }

    /// Finds a chunk by position using block headers, then chunk headers
    /// within one block: never a scan of the whole file.
    fn locate_chunk(&mut self, target: u64, which: Which) -> Result<u64> {
        // The source moves: what was read ahead is forgotten.
        let source = self.chunks.source_mut();
        let mut block = block_begin(target);
        let mut chunk = loop {
            if block == 0 {
                break 0;
            }
            source.seek(block)?;
            source.fill(BLOCK_HEADER_SIZE as usize)?;
            match BlockHeader::parse(source.buffered(), block) {
                Ok((header, _)) if header.previous_chunk == 0 => break block,
                Ok((header, _)) => {
                    let next = header.chunk_end(block);
                    // No chunk begins between the block's beginning and `next`: a
                    // boundary at or after `target` is found without the header
                    // of the chunk that straddles the block.
                    break if next > target && which != Which::AtOrAfter { header.chunk_begin(block) } else { next };
                }
                // Past the end of the file, or a damaged block header: try the block before.
                Err(_) => block -= BLOCK_SIZE,
            }
        };
        loop {
            if chunk >= target {
                return Ok(chunk);
            }
            source.seek(chunk)?;
            let have = source.fill(64)?;
            if have == 0 {
                return Ok(chunk);
            }
            let header = match parse_chunk_header(source.buffered(), chunk) {
                Ok((header, _)) => header,
                Err(e) if e.is_incomplete() => {
                    return Err(Error::corrupt(chunk, Corruption::Truncated { end: chunk + have as u64 }));
                }
                Err(e) => return Err(e.into()),
            };
            let end = header.chunk_end(chunk)?;
            let found = match which {
                Which::Containing => chunk.saturating_add(header.num_records()) > target,
                Which::Before => end > target,
                Which::AtOrAfter => false,
            };
            if found {
                return Ok(chunk);
            }
            chunk = end;
        }
    }

    /// Binary search over the records, as C++ `RecordReader::Search(test)`
    /// and Python's `search`: bisects byte positions, reading O(log size)
    /// chunks.
    ///
    /// `test` is given the reader positioned at a record to judge, and may
    /// read it (and the records after it: [`read_record`](Self::read_record),
    /// [`pos`](Self::pos), ...) before it answers: `Some(Less)` if the record
    /// is before the desired position, `Some(Equal)` if it is desired,
    /// `Some(Greater)` if it is after, `None` if it cannot tell (the record is
    /// skipped). Records must be ordered: all `Less` before all
    /// `Equal`/`Greater`. An error `test` returns ends the search with that
    /// error. `test` is not called twice for one record; where it leaves the
    /// reader does not matter (the search puts it back where it needs it).
    ///
    /// Returns `Some(Equal)` positioned at an equal record; `Some(Greater)`
    /// positioned at the earliest greater record if none is equal;
    /// `Some(Less)` positioned at the end if every ordered record is less;
    /// `None` positioned at the end if no record is ordered.
    ///
    /// Python's `search_for_record` is `test` reading the record first:
    ///
    /// ```
    /// # use std::io::Cursor;
    /// use riegeli_records::{RecordReader, RecordWriter};
    ///
    /// let mut writer = RecordWriter::new(Vec::new(), "uncompressed".parse()?)?;
    /// for key in [b"apple", b"grape", b"peach"] {
    ///     writer.write_record(key)?;
    /// }
    /// let mut reader = RecordReader::new(Cursor::new(writer.close()?));
    /// let found = reader.search(|r| Ok(r.read_record()?.map(|record| record[..].cmp(b"grape"))))?;
    /// assert_eq!(found, Some(std::cmp::Ordering::Equal));
    /// assert_eq!(reader.read_record()?.as_deref(), Some(&b"grape"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn search(&mut self, mut test: impl FnMut(&mut Self) -> Result<Option<Ordering>>) -> Result<Option<Ordering>> {
        self.bisect(|this, chunk, i| {
            this.index = i;
            this.last_pos = None;
            let verdict = test(this)?;
            // Back to the chunk if `test` moved elsewhere (reading past its end).
            if this.records.is_empty() || this.chunk_begin != chunk {
                this.jump_to(chunk)?;
                if !this.load_chunk_here()? || this.records.len() <= i {
                    return Err(Error::internal("a chunk read again during a search changed"));
                }
            }
            Ok(verdict)
        })
    }

    /// The bisection of [`search`](Self::search): `judge(self, chunk, i)` tells
    /// where record `i` of the chunk at `chunk` (loaded, with the source at
    /// its end) is; it must leave that chunk loaded.
    fn bisect(
        &mut self,
        mut judge: impl FnMut(&mut Self, u64, usize) -> Result<Option<Ordering>>,
    ) -> Result<Option<Ordering>> {
        self.last_pos = None;
        let size = self.size()?;
        let mut low = 0u64;
        let mut high = size;
        let mut greater: Option<(u64, usize, Ordering)> = None;
        let mut less: Option<(u64, usize)> = None;
        'bisect: while low < high {
            let middle = low + (high - low) / 2;
            let first = self.locate_chunk(middle, Which::Before)?.max(low);
            let mut chunk = first;
            loop {
                if chunk >= high {
                    // Everything in [first, high) is unordered: look before it.
                    high = first;
                    continue 'bisect;
                }
                self.jump_to(chunk)?;
                if !self.load_chunk_here()? {
                    let next = self.chunks.pos();
                    if next <= chunk {
                        high = first;
                        continue 'bisect;
                    }
                    chunk = next;
                    continue;
                }
                let next = self.chunks.pos();
                let mut verdict = None;
                for i in 0..self.records.len() {
                    if let Some(ordering) = judge(self, chunk, i)? {
                        verdict = Some((i, ordering));
                        break;
                    }
                }
                match verdict {
                    Some((i, Ordering::Less)) => {
                        less = Some((chunk, i + 1));
                        low = next;
                    }
                    Some((i, ordering)) => {
                        greater = Some((chunk, i, ordering));
                        if ordering == Ordering::Equal {
                            break 'bisect;
                        }
                        // The chunks in [first, chunk) are unordered: no
                        // need to judge them again.
                        high = first;
                    }
                    None => {
                        chunk = next;
                        continue;
                    }
                }
                continue 'bisect;
            }
        }
        let mut result = greater;
        if result.is_none_or(|(_, _, o)| o != Ordering::Equal)
            && let Some((chunk, start)) = less
        {
            self.jump_to(chunk)?;
            if self.load_chunk_here()? {
                // Binary search over the records after the last known less
                // one; each record is judged once.
                let (mut lo, mut hi) = (start, self.records.len());
                let mut found: Option<(usize, Ordering)> = None;
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    let mut judged = None;
                    for i in mid..hi {
                        if let Some(ordering) = judge(self, chunk, i)? {
                            judged = Some((i, ordering));
                            break;
                        }
                    }
                    match judged {
                        Some((i, Ordering::Less)) => lo = i + 1,
                        Some((i, ordering)) => {
                            found = Some((i, ordering));
                            if ordering == Ordering::Equal {
                                break;
                            }
                            hi = mid;
                        }
                        None => hi = mid,
                    }
                }
                if let Some((i, ordering)) = found {
                    result = Some((chunk, i, ordering));
                }
            }
        }
        match result {
            Some((chunk, index, ordering)) => {
                self.seek(RecordPosition::new(chunk, index as u64).unwrap_or_default())?;
                Ok(Some(ordering))
            }
            None => {
                self.jump_to(size)?;
                Ok(less.map(|_| Ordering::Less))
            }
        }
    }
}

/// The remaining records, as [`read_record`](RecordReader::read_record) reads
/// them (iterate over `&mut reader` or `reader.by_ref()` to keep the reader).
impl<R: Read> Iterator for RecordReader<R> {
    type Item = Result<Bytes>;

    fn next(&mut self) -> Option<Result<Bytes>> {
        self.read_record().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RecordWriter, RecordWriterOptions};

    #[test]
    fn a_panicking_decoding_thread_is_an_internal_error_and_the_chunk_is_read_again() {
        // Records of 1039 bytes, one of 1040: the chunk holding it has a size of its own.
        let records: Vec<Vec<u8>> = (0..600u32)
            .map(|i| format!("{i:>width$}", width = if i == 300 { 1040 } else { 1039 }).into_bytes())
            .collect();
        let options: RecordWriterOptions = "zstd:1,chunk_size:64k".parse().unwrap();
        let mut writer = RecordWriter::new(Vec::new(), options).unwrap();
        for record in &records {
            writer.write_record(record).unwrap();
        }
        let file = writer.close().unwrap();
        let sizes = crate::decode::tests::data_chunk_sizes(&file);
        let size = sizes.into_iter().find(|size| size % 1039 == 1).unwrap();
        let options = RecordReaderOptions { parallelism: 1, parallel_min_chunk_size: 0, ..Default::default() };
        let mut reader = RecordReader::with_options(&file[..], options.clone());
        // Its decoding thread panics on that chunk (the reader decodes it right).
        let (plug, watch) = crate::stream::tests::plug();
        watch.panic_on(Some(size));
        reader.chunks = ChunkStream::with_plug(Source::new(&file[..], 0), options, plug);
        let mut got = Vec::new();
        let error = loop {
            match reader.read_record() {
                Ok(Some(record)) => got.push(record),
                Ok(None) => panic!("no chunk panicked"),
                Err(e) => break e,
            }
        };
        assert!(matches!(error.kind(), ErrorKind::Internal(_)), "{error}");
        assert!(!error.is_corruption());
        // The chunk whose decoding panicked is decoded again by the next read.
        while let Some(record) = reader.read_record().unwrap() {
            got.push(record);
        }
        assert!(got.iter().map(|r| &r[..]).eq(records.iter().map(|r| &r[..])));
    }
}
