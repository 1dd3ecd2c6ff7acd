//! Reading whole chunks from a [`Source`], and skipping damaged regions.

use std::io::Read;

use bytes::Bytes;
use riegeli_codec::ChunkType;
use riegeli_framing::{
    BLOCK_HEADER_SIZE, BLOCK_SIZE, BlockHeader, CHUNK_HEADER_SIZE, ChunkHeader, DataPieces, FramingError,
    FramingErrorKind, add_with_overhead, find_block_header, gather_data_in_place, is_possible_chunk_boundary,
    next_block_boundary, parse_chunk, parse_chunk_header,
};

use crate::error::{Corruption, Error};
use crate::options::ChunkReadOptions;
use crate::skipped_region::SkippedRegion;
use crate::source::{Buffers, OWNED_READ, Source};

/// A chunk of a Riegeli/records file, as [`ChunkReader`](crate::ChunkReader)
/// returns it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Chunk {
    /// Where the chunk begins.
    pub begin: u64,
    /// Where the chunk ends (padding included): where the next chunk begins.
    pub end: u64,
    /// The chunk header.
    pub header: ChunkHeader,
    /// The chunk data (block headers removed), data hash verified.
    pub data: Bytes,
    /// Block headers inside the chunk whose hash failed; they were ignored,
    /// as the spec says, since the chunk's own hashes protect it.
    pub damaged_block_headers: Vec<u64>,
    /// Whether the data hash was checked when the chunk was read (false when
    /// read with `verify_hashes` off, e.g. to check it on a decoding thread).
    pub(crate) hash_verified: bool,
}

/// The chunk as this crate reads it (the same type: [`Chunk`] with its
/// hash-check state).
pub(crate) type RawChunk = Chunk;

impl Chunk {
    /// Whether the chunk holds records ([`ChunkType::holds_records`] of its header).
    pub(crate) fn holds_records(&self) -> bool {
        ChunkType::holds_records(self.header.chunk_type(), self.header.num_records())
    }

    /// Whether the chunk is a transposed chunk with records.
    pub(crate) fn is_transposed_data(&self) -> bool {
        self.chunk_type() == Some(ChunkType::Transposed) && self.header.num_records() > 0
    }

    /// The chunk's type, if known.
    pub(crate) fn chunk_type(&self) -> Option<ChunkType> {
        ChunkType::from_byte(self.header.chunk_type())
    }
}

/// A chunk read from the file whose data, if block headers interrupt it, is
/// not gathered yet: [`gather`](Self::gather) copies it out, on whichever
/// thread is going to decode it.
#[derive(Debug)]
pub(crate) struct LazyChunk {
    /// The chunk, but for its data while `framed` holds it.
    chunk: RawChunk,
    /// The chunk's physical bytes (block headers included), when its data has
    /// to be gathered from them.
    framed: Option<(Bytes, Buffers)>,
}

impl LazyChunk {
    pub(crate) fn begin(&self) -> u64 {
        self.chunk.begin
    }
    pub(crate) fn end(&self) -> u64 {
        self.chunk.end
    }
    pub(crate) fn header(&self) -> &ChunkHeader {
        &self.chunk.header
    }

    /// The chunk with its data in one piece.
    pub(crate) fn gather(self) -> RawChunk {
        let Self { mut chunk, framed } = self;
        if let Some((physical, buffers)) = framed {
            let len = usize::try_from(chunk.header.data_size()).unwrap_or(usize::MAX);
            chunk.data = buffers.gather(DataPieces::new(&physical, chunk.begin, &chunk.header), len);
        }
        chunk
    }
}

/// Where reading can resume after damage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resume {
    /// At this chunk boundary (the damaged chunk's header could be trusted).
    At(u64),
    /// At the chunk boundary that the first valid block header at or after this position points to.
    FindFrom(u64),
    /// Nowhere: the file ends in the damaged region.
    Eof,
}

/// A damaged or unreadable chunk: the error, where the damage begins, and where to resume.
#[derive(Debug)]
pub(crate) struct Damage {
    pub(crate) error: Error,
    pub(crate) begin: u64,
    pub(crate) resume: Resume,
}

impl Damage {
    fn new(error: impl Into<Error>, begin: u64, resume: Resume) -> Self {
        Self { error: error.into(), begin, resume }
    }

    fn corrupt(cause: Corruption, begin: u64, resume: Resume) -> Self {
        Self::new(Error::corrupt(begin, cause), begin, resume)
    }

    /// Returns the error, keeping what [`Pending::skip`] needs to move past
    /// the damage later.
    pub(crate) fn into_pending(self) -> (Error, Pending) {
        let pending = Pending { begin: self.begin, resume: self.resume, message: self.error.to_string() };
        (self.error, pending)
    }
}

/// Damage reported as an error, kept for a later `recover()`.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) begin: u64,
    pub(crate) resume: Resume,
    /// The error's message, for the [`SkippedRegion`].
    pub(crate) message: String,
}

impl Pending {
    /// Moves the source past the damage; returns the region skipped.
    pub(crate) fn skip<R: Read>(self, source: &mut Source<R>) -> Result<SkippedRegion, Error> {
        let resumed = skip_damage(source, self.resume)?;
        let end = resumed.unwrap_or(source.pos());
        Ok(SkippedRegion::new(self.begin, end, self.message))
    }
}

/// Either an I/O error (not recoverable) or damage (recoverable).
#[derive(Debug)]
pub(crate) enum ReadError {
    Io(Error),
    Damage(Damage),
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e.into())
    }
}

/// Decides where to resume after a framing error found while reading the chunk at `begin`.
fn resume_after(error: &FramingError, begin: u64, physical: &[u8]) -> Resume {
    match error.kind() {
        FramingErrorKind::BlockHeaderMismatch { field: "previous_chunk", .. } => {
            let block = error.position();
            let offset = usize::try_from(block - begin).unwrap_or(usize::MAX);
            match physical.get(offset..).map(|b| BlockHeader::parse(b, block)) {
                // The chunk the valid block header interrupts begins after the
                // damaged one (e.g. a file torn by a crash, then appended to:
                // the torn chunk claims bytes the appended chunks took over):
                // it is read, not skipped.
                Some(Ok((header, _)))
                    if block
                        .checked_sub(header.previous_chunk)
                        .is_some_and(|interrupted| interrupted > begin && is_possible_chunk_boundary(interrupted)) =>
                {
                    Resume::At(block - header.previous_chunk)
                }
                // As C++: trust the rest of a valid block header if it points into its own block.
                Some(Ok((header, _))) if header.next_chunk <= BLOCK_SIZE => Resume::At(block + header.next_chunk),
                _ => Resume::FindFrom(block.saturating_add(1)),
            }
        }
        _ => Resume::FindFrom(error.position().max(begin).saturating_add(1)),
    }
}

/// Reads the chunk beginning at the source's position.
///
/// Returns `Ok(None)` at a clean end of file (no byte after the last chunk).
pub(crate) fn read_chunk<R: Read>(
    source: &mut Source<R>,
    options: &ChunkReadOptions,
) -> Result<Option<RawChunk>, ReadError> {
    Ok(read_lazy_chunk(source, options)?.map(LazyChunk::gather))
}

/// Checks the data hash of a chunk read with `verify_hashes` off, as
/// [`read_chunk`] would have: a mismatch is damage that reading resumes after.
pub(crate) fn verify_hash(chunk: &mut RawChunk, options: &ChunkReadOptions) -> Result<(), Damage> {
    if options.verify_hashes && !chunk.hash_verified {
        if let Err(e) = riegeli_framing::verify_data_hash(&chunk.header, chunk.begin, &chunk.data) {
            return Err(Damage::new(e, chunk.begin, Resume::At(chunk.end)));
        }
        chunk.hash_verified = true;
    }
    Ok(())
}

/// [`read_chunk`], leaving the data of a chunk that block headers interrupt
/// to be gathered later.
pub(crate) fn read_lazy_chunk<R: Read>(
    source: &mut Source<R>,
    options: &ChunkReadOptions,
) -> Result<Option<LazyChunk>, ReadError> {
    let begin = source.pos();
    let header_span = add_with_overhead(begin, CHUNK_HEADER_SIZE).map_or(usize::MAX, |end| (end - begin) as usize);
    let have = source.fill(header_span)?;
    if have == 0 {
        // The end of the file, wherever it is (also after a skipped region).
        return Ok(None);
    }
    if !is_possible_chunk_boundary(begin) {
        let error = FramingError::from_kind(begin, FramingErrorKind::InvalidChunkBoundary);
        return Err(ReadError::Damage(Damage::new(error, begin, Resume::FindFrom(begin))));
    }
    if have < header_span {
        let truncated = Corruption::Truncated { end: begin + have as u64 };
        return Err(ReadError::Damage(Damage::corrupt(truncated, begin, Resume::Eof)));
    }
    let header = match parse_chunk_header(source.buffered(), begin) {
        Ok((header, _)) => header,
        Err(e) => {
            let resume = resume_after(&e, begin, source.buffered());
            return Err(ReadError::Damage(Damage::new(e, begin, resume)));
        }
    };
    for (limit, requested, max) in [
        ("chunk data_size", header.data_size(), options.max_chunk_data_size),
        ("chunk num_records", header.num_records(), options.max_num_records),
        ("chunk decoded_data_size", header.decoded_data_size(), options.max_decoded_size),
    ] {
        if requested > max {
            let error = Corruption::LimitExceeded { limit, requested, max };
            // Do not trust the size: block headers inside the chunk lead past it.
            return Err(ReadError::Damage(Damage::corrupt(error, begin, Resume::FindFrom(begin + 1))));
        }
    }
    // chunk_end fits (parse_chunk_header checked it), and the limits bound the length
    // except for num_records' padding, which the records limit bounds.
    let end =
        header.chunk_end(begin).map_err(|e| ReadError::Damage(Damage::new(e, begin, Resume::FindFrom(begin + 1))))?;
    let len = usize::try_from(end - begin).unwrap_or(usize::MAX);
    if len >= OWNED_READ && source.buffered().len() < len {
        return read_large_chunk(source, options, begin, header, len);
    }
    let have = source.fill(len)?;
    if have < len {
        let truncated = Corruption::Truncated { end: begin + have as u64 };
        return Err(ReadError::Damage(Damage::corrupt(truncated, begin, Resume::Eof)));
    }
    let view = match parse_chunk(source.buffered(), begin) {
        Ok(view) => view,
        Err(e) => {
            let resume = resume_after(&e, begin, source.buffered());
            return Err(ReadError::Damage(Damage::new(e, begin, resume)));
        }
    };
    if options.verify_hashes
        && let Err(e) = view.verify_data_hash()
    {
        return Err(ReadError::Damage(Damage::new(e, begin, Resume::At(end))));
    }
    let damaged_block_headers = view.damaged_block_headers().to_vec();
    let contiguous = view.contiguous_data().is_some();
    let data_offset = view.data_offset();
    let data_size = header.data_size() as usize;
    let physical = source.take(len);
    let (data, framed) = if contiguous {
        (physical.slice(data_offset..data_offset + data_size), None)
    } else {
        (Bytes::new(), Some((physical, source.buffers())))
    };
    let chunk = RawChunk { begin, end, header, data, damaged_block_headers, hash_verified: options.verify_hashes };
    Ok(Some(LazyChunk { chunk, framed }))
}

/// [`read_lazy_chunk`] for a chunk of [`OWNED_READ`] bytes or more, not yet
/// buffered: read into a buffer of its own, and its data gathered there in
/// place, so that the chunk is held once, not twice or (while a buffer
/// grows) three times. Damage is reported as by `read_lazy_chunk`, with the
/// source where it would be.
fn read_large_chunk<R: Read>(
    source: &mut Source<R>,
    options: &ChunkReadOptions,
    begin: u64,
    header: ChunkHeader,
    len: usize,
) -> Result<Option<LazyChunk>, ReadError> {
    let Some(mut physical) = source.take_owned(len)? else {
        let truncated = Corruption::Truncated { end: begin + source.buffered().len() as u64 };
        return Err(ReadError::Damage(Damage::corrupt(truncated, begin, Resume::Eof)));
    };
    let end = begin + len as u64;
    let damaged_block_headers = match parse_chunk(&physical, begin) {
        Ok(view) => view.damaged_block_headers().to_vec(),
        Err(e) => {
            let resume = resume_after(&e, begin, &physical);
            source.untake(physical);
            return Err(ReadError::Damage(Damage::new(e, begin, resume)));
        }
    };
    gather_data_in_place(&mut physical, begin, &header);
    if options.verify_hashes
        && let Err(e) = riegeli_framing::verify_data_hash(&header, begin, &physical)
    {
        return Err(ReadError::Damage(Damage::new(e, begin, Resume::At(end))));
    }
    let data = Bytes::from(physical);
    let chunk = RawChunk { begin, end, header, data, damaged_block_headers, hash_verified: options.verify_hashes };
    Ok(Some(LazyChunk { chunk, framed: None }))
}

/// Moves the source past a damaged region. Returns where reading resumes, or
/// `None` if the file ends inside the region (the source is then at its end).
pub(crate) fn skip_damage<R: Read>(source: &mut Source<R>, resume: Resume) -> Result<Option<u64>, Error> {
    match resume {
        Resume::At(pos) => Ok(if source.skip_to(pos)? && is_possible_chunk_boundary(pos) { Some(pos) } else { None }),
        Resume::Eof => {
            while source.fill(1)? > 0 {
                let n = source.buffered().len();
                source.consume(n);
            }
            Ok(None)
        }
        Resume::FindFrom(from) => {
            let Ok(mut block) = next_block_boundary(from) else { return Ok(None) };
            loop {
                if !source.skip_to(block)? {
                    return Ok(None);
                }
                if source.fill(BLOCK_HEADER_SIZE as usize)? < BLOCK_HEADER_SIZE as usize {
                    let n = source.buffered().len();
                    source.consume(n);
                    return Ok(None);
                }
                // The buffer holds at least this block's header: framing's search
                // either accepts it or names the next block whose header it needs.
                match find_block_header(source.buffered(), block) {
                    Ok(found) if is_possible_chunk_boundary(found.next_chunk_boundary()) => {
                        let boundary = found.next_chunk_boundary();
                        if boundary > block && !source.skip_to(boundary)? {
                            return Ok(None);
                        }
                        return Ok(Some(boundary));
                    }
                    Ok(found) => match found.block_begin.checked_add(BLOCK_SIZE) {
                        Some(next) => block = next,
                        None => return Ok(None),
                    },
                    Err(e) if e.is_incomplete() && e.position() > block => block = e.position(),
                    Err(_) => return Ok(None),
                }
            }
        }
    }
}

impl Chunk {
    /// The chunk as the decoder takes it.
    pub(crate) fn raw(&self) -> &RawChunk {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RecordWriter, RecordWriterOptions};

    /// A chunk long enough to span block boundaries is read into a buffer of
    /// its own and its data gathered there (nothing left to gather: held
    /// once), with the same data as gathering from the source's buffer; a
    /// shorter one that spans a boundary is gathered from the source's
    /// buffer, on the decoding thread.
    #[test]
    fn long_chunks_are_gathered_in_their_own_buffer() {
        const SHORT: usize = BLOCK_SIZE as usize;
        const LONG: usize = 640 << 10;
        let record = |len: usize, seed: u32| -> Vec<u8> {
            (0..len as u32).map(|i| (i.wrapping_mul(2_654_435_761) ^ seed).to_le_bytes()[1]).collect()
        };
        let options: RecordWriterOptions = "uncompressed,chunk_size:16K".parse().unwrap();
        let mut writer = RecordWriter::new(Vec::new(), options).unwrap();
        // A short chunk spanning the first block boundary, then one of 640 KiB (a
        // typical compressed chunk).
        writer.write_record(&record(SHORT, 1)).unwrap();
        writer.write_record(&record(LONG, 2)).unwrap();
        let file = writer.close().unwrap();

        let mut source = Source::new(std::io::Cursor::new(&file), 0);
        let options = ChunkReadOptions::default();
        let mut lazy = Vec::new();
        while let Some(chunk) = read_lazy_chunk(&mut source, &options).unwrap() {
            lazy.push(chunk);
        }
        let sizes: Vec<(u64, bool)> =
            lazy.iter().map(|c| (c.header().num_records(), c.framed.is_some())).filter(|&(n, _)| n > 0).collect();
        assert_eq!(sizes, [(1, true), (1, false)], "(records, gathered later) of the chunks with records");
        for (chunk, seed) in lazy.into_iter().filter(|c| c.header().num_records() > 0).zip(1..) {
            let data = chunk.gather().data;
            let len = if seed == 1 { SHORT } else { LONG };
            // An uncompressed simple chunk: compression byte, sizes, then the record.
            assert!(data.ends_with(&record(len, seed)), "chunk {seed}");
        }
    }
}
