//! [`ChunkReader`]: a file read chunk by chunk, for inspection tools: the
//! [`ChunkStream`] of [`RecordReader`](crate::RecordReader) with decoding
//! optional; with [`read_decoded`](ChunkReader::read_decoded), each chunk
//! with its records, hash-checked and decoded on the stream's threads if
//! asked.

use std::io::Read;

use riegeli_codec::DecodedRecords;

use crate::chunk_reader::{Chunk, Pending, RawChunk, ReadError, verify_hash};
use crate::chunk_stream::ChunkStream;
use crate::error::Error;
use crate::options::{ChunkReadOptions, RecordReaderOptions};
use crate::read_ahead::Fetched;
use crate::skipped_region::SkippedRegion;
use crate::source::Source;

/// A chunk and its records (`None` for chunks without records), or why they
/// could not be decoded; see [`ChunkReader::read_decoded`].
pub type DecodedChunk<'a> = (Chunk, Result<Option<&'a DecodedRecords>, Error>);

/// The records of a chunk, or why they could not be decoded.
type Records = Result<Option<DecodedRecords>, Error>;

/// A chunk read and hash-checked, with its records if a thread decoded them.
type Checked = (RawChunk, Option<Records>);

/// Reads a file chunk by chunk (for inspection tools: `describe`, `verify`,
/// physical concatenation). Verifies block headers, chunk header hashes and
/// data hashes; [`read_chunk`](Self::read_chunk) does not decode chunk data,
/// [`read_decoded`](Self::read_decoded) does.
#[derive(Debug)]
pub struct ChunkReader<R> {
    /// The chunks; with decoding threads, read ahead, checked and decoded on them.
    chunks: ChunkStream<R>,
    pending: Option<Pending>,
    /// The records `read_decoded` returned last (dropped at the next call,
    /// when their buffers go back to the decoder that made them).
    lent: Option<DecodedRecords>,
}

impl<R: Read> ChunkReader<R> {
    /// A chunk reader of the file whose bytes `src` yields from the
    /// beginning. Its [`read_decoded`](Self::read_decoded) checks data hashes
    /// and decodes records on `parallelism` background threads (0: on the
    /// calling thread) while the caller handles earlier chunks. Reading goes
    /// ahead of the caller by a few chunks (at most 64 MiB), never past
    /// damage; chunks, errors and skipped regions are those of a reader
    /// without threads.
    pub fn new(src: R, options: ChunkReadOptions, parallelism: usize) -> Self {
        let options = RecordReaderOptions { chunks: options, parallelism, ..RecordReaderOptions::default() };
        Self { chunks: ChunkStream::new(Source::new(src, 0), options), pending: None, lent: None }
    }

    /// The position of the next chunk.
    pub fn pos(&self) -> u64 {
        self.chunks.pos()
    }

    /// Reads the next chunk, or `None` at the end of the file. After an error
    /// (other than I/O), [`recover`](Self::recover) skips the damaged region.
    pub fn read_chunk(&mut self) -> Result<Option<Chunk>, Error> {
        Ok(self.read_checked()?.map(|(raw, _)| raw))
    }

    /// Reads the next chunk with its records, or `None` at the end of the
    /// file. A chunk that does not decode is returned with the decoding error
    /// (reading goes on with the next chunk); errors of the chunk itself (its
    /// framing, header or data hash) are errors of this call, after which
    /// [`recover`](Self::recover) skips the damaged region, as for
    /// [`read_chunk`](Self::read_chunk).
    /// The records are lent until the next call; their buffers are then
    /// decoded into again.
    pub fn read_decoded(&mut self) -> Result<Option<DecodedChunk<'_>>, Error> {
        self.lent = None;
        let Some((raw, decoded)) = self.read_checked()? else { return Ok(None) };
        let records = match decoded {
            Some(records) => records,
            None => self.chunks.decode(&raw),
        };
        let records = match records {
            Ok(Some(records)) => Ok(Some(&*self.lent.insert(records))),
            Ok(None) => Ok(None),
            Err(e) => Err(e),
        };
        Ok(Some((raw, records)))
    }

    /// The next chunk, hash-checked, with its records if a thread decoded them.
    fn read_checked(&mut self) -> Result<Option<Checked>, Error> {
        let damage = match self.chunks.next() {
            Ok(None) => return Ok(None),
            Ok(Some(Fetched { chunk, decoded: Some(Ok(decoded)) })) => match decoded.hash {
                Ok(()) => return Ok(Some((chunk, Some(decoded.result)))),
                Err(damage) => damage,
            },
            // Its outcome was lost (a fork), or its thread panicked: checked
            // (if a thread was to check it) and decoded here.
            Ok(Some(Fetched { mut chunk, decoded: _ })) => match verify_hash(&mut chunk, &self.chunks.options().chunks)
            {
                Ok(()) => return Ok(Some((chunk, None))),
                Err(damage) => damage,
            },
            Err(ReadError::Io(e)) => return Err(e),
            Err(ReadError::Damage(damage)) => damage,
        };
        let (error, pending) = damage.into_pending();
        self.pending = Some(pending);
        Err(error)
    }

    /// Skips the damage the last error reported; returns the skipped region.
    pub fn recover(&mut self) -> Result<Option<SkippedRegion>, Error> {
        let Some(pending) = self.pending.take() else { return Ok(None) };
        self.chunks.skip(pending).map(Some)
    }
}
